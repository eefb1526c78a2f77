/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest on microthreads, its hub channels as runtime channels:
 * guest_chan_reader hands a hub channel's items to a runtime channel
 * (credit going back as its reader takes them), guest_chan_writer sends
 * a runtime channel's items on a hub channel; each a microthread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"
#include "mt/mt.h"
#include "proto/list.h"

struct lg_item {
	struct lg_item		*next;
	struct guest_bytes	bytes;
};

/* Between a hub channel and a runtime channel: guest_chan_reader's holds
 * what arrived until its microthread hands it on (credit goes back only
 * then); guest_chan_writer's has no queue. */
struct lg_bridge {
	struct guest		*g;
	uint32_t		chan;
	struct guest_mtchan	*ch;
	struct lg_item		*head, **tail;
	struct guest_mt		*waiting;	/* suspended for an item or the end */
	int			ended;
	int			status;		/* how the sender ended it */
	int			*endp;
	struct lg_bridge	*prev, *next;	/* in lg_mt.bridges */
};


static void
bridge_free(struct guest *g, struct lg_bridge *b)
{
	struct lg_item *it;

	while ((it = b->head) != NULL) {
		b->head = it->next;
		free(it->bytes.data);
		free(it);
	}
	HP_LIST_UNLINK(&g->mt->bridges, b);
	free(b);
}

void
lg_mt_bridges_free(struct guest *g)
{
	while (g->mt->bridges != NULL)
		bridge_free(g, g->mt->bridges);
}

static void
bridge_wake(struct lg_bridge *b)
{
	if (b->waiting != NULL) {
		mt_wake(b->waiting);
		b->waiting = NULL;
	}
}

/* on_item, from the service: kept until the microthread hands it on. An
 * item we cannot keep is dropped with its credit (the stream is then
 * incomplete: the end says -ENOMEM). */
static void
reader_item(void *ctx, const uint8_t *item, size_t len)
{
	struct lg_bridge *b = ctx;
	struct lg_item *it = malloc(sizeof(*it));
	void *data = malloc(len > 0 ? len : 1);

	if (it == NULL || data == NULL) {
		free(it);
		free(data);
		lg_chan_consumed(b->g, b->chan, len, 1);
		b->status = -ENOMEM;
		return;
	}
	memcpy(data, item, len);
	*it = (struct lg_item){ NULL, { data, len } };
	*b->tail = it;
	b->tail = &it->next;
	bridge_wake(b);
}

static void
reader_end(void *ctx, int status)
{
	struct lg_bridge *b = ctx;

	b->ended = 1;
	if (b->status == 0)
		b->status = status;
	bridge_wake(b);
}

static void
reader_main(void *arg)
{
	struct lg_bridge *b = arg;
	struct guest *g = b->g;
	struct lg_item *it;
	int stop = 0, gone;

	lg_mt_lock(g);
	for (;;) {
		while (b->head == NULL && !b->ended) {
			b->waiting = mt_self();
			lg_suspend(g, UINT64_MAX);
		}
		if ((it = b->head) == NULL)
			break;
		if ((b->head = it->next) == NULL)
			b->tail = &b->head;
		lg_mt_unlock(g);
		gone = stop || guest_mtchan_send(b->ch, &it->bytes) != 0;
		lg_mt_lock(g);
		/* once the sender ended the channel (b->ended, under the
		 * lock) its id may be another's (guest_chan_open): nothing
		 * more is said on it */
		if (gone) {
			free(it->bytes.data);	/* nobody reads any more */
			if (!stop && !b->ended)
				guest_chan_reset(g, b->chan);
			stop = 1;
		}
		/* taken (or dropped): credit back, all of it once we have
		 * caught up, as the service does when its ring is empty */
		if (!b->ended)
			lg_chan_consumed(g, b->chan, it->bytes.len, b->head == NULL);
		free(it);
	}
	if (b->endp != NULL)
		*b->endp = b->status;
	guest_mtchan_close(b->ch, GUEST_MT_WRITER);
	bridge_free(g, b);
	lg_mt_unlock(g);
}

/* A bridge on chan (0: none yet) and its microthread fn, linked; on
 * success the guest is left locked, for the caller to finish. */
static int
bridge_start(struct guest *g, void (*fn)(void *), uint32_t chan, int *end,
	     struct lg_bridge **bp)
{
	struct lg_bridge *b;
	int rc;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return -ENOMEM;
	if ((rc = guest_mtchan_new(sizeof(struct guest_bytes), 0, &b->ch)) != 0) {
		free(b);
		return rc;
	}
	b->g = g;
	b->chan = chan;
	b->tail = &b->head;
	b->endp = end;
	lg_mt_lock(g);
	/* it needs the lock to start: it runs once the caller is done */
	if ((rc = guest_mt_spawn(fn, b, NULL)) != 0) {
		lg_mt_unlock(g);
		guest_mtchan_close(b->ch, GUEST_MT_WRITER);
		guest_mtchan_close(b->ch, GUEST_MT_READER);
		free(b);
		return rc;
	}
	HP_LIST_PUSH(&g->mt->bridges, b);
	*bp = b;
	return 0;
}

int
guest_chan_reader(struct guest *g, uint32_t *chan, struct guest_mtchan **chp,
		  int *end)
{
	struct lg_bridge *b;
	int64_t id;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (g->mt == NULL)
		return -EPERM;
	/* the microthread first: a channel opened could not be taken back
	 * without telling a sender */
	if ((rc = bridge_start(g, reader_main, 0, end, &b)) != 0)
		return rc;
	if ((id = guest_chan_open(g, reader_item, reader_end, b)) < 0) {
		b->ended = 1;		/* the microthread ends at once */
		b->status = (int)id;
		lg_mt_unlock(g);
		guest_mtchan_close(b->ch, GUEST_MT_READER);
		return (int)id;
	}
	b->chan = (uint32_t)id;
	g->chans.rx[id].deferred = 1;
	*chan = b->chan;
	*chp = b->ch;
	lg_mt_unlock(g);
	return 0;
}

int
guest_chan_accept_reader(struct guest *g, uint32_t chan, struct guest_mtchan **chp,
			 int *end)
{
	struct lg_bridge *b;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (g->mt == NULL)
		return -EPERM;
	if ((rc = bridge_start(g, reader_main, chan, end, &b)) != 0)
		return rc;
	/* held: credit goes back as the reader takes items */
	if ((rc = guest_chan_accept(g, chan, reader_item, reader_end, b)) != 0 ||
	    (!b->ended && (rc = guest_chan_hold(g, chan)) != 0)) {
		b->ended = 1;		/* the microthread ends at once */
		b->status = rc;
		lg_mt_unlock(g);
		guest_mtchan_close(b->ch, GUEST_MT_READER);
		return rc;
	}
	*chp = b->ch;
	lg_mt_unlock(g);
	return 0;
}

static void
writer_main(void *arg)
{
	struct lg_bridge *b = arg;
	struct guest *g = b->g;
	struct guest_bytes it;

	while (guest_mtchan_recv(b->ch, &it) == 0) {
		int rc = guest_chan_send(g, b->chan, it.data, it.len, -1);

		free(it.data);
		if (rc != 0)
			goto out;	/* the receiver or the hub is gone */
	}
	guest_chan_close(g, b->chan);
out:
	guest_mtchan_close(b->ch, GUEST_MT_READER);
	lg_mt_lock(g);
	bridge_free(g, b);
	lg_mt_unlock(g);
}

int
guest_chan_writer(struct guest *g, uint32_t chan, struct guest_mtchan **chp)
{
	struct lg_bridge *b;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (g->mt == NULL)
		return -EPERM;
	if (chan == 0 || ((chan & LG_LANE_CHAN) == 0 && chan >= g->chans.max))
		return -EINVAL;
	if ((rc = bridge_start(g, writer_main, chan, NULL, &b)) != 0)
		return rc;
	*chp = b->ch;
	lg_mt_unlock(g);
	return 0;
}
