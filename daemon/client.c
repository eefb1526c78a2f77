/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A control client's answers: its output buffer, grown as answers come
 * and written out by control.c, and the credit marks of a call's stream,
 * each given back to the guest once the client has taken its bytes. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/client.h"
#include "daemon/escape.h"
#include "daemon/hub.h"
#include "daemon/jsonout.h"
#include "daemon/log.h"
#include "proto/clock.h"

#define MARK_SPAN	4096		/* output bytes a credit mark spans at least */

/* Out of memory for this client: it is closed from the loop (never from
 * inside a call's callback, which the host is still running). */
void
client_break(struct client *c)
{
	if (!c->broken)
		log_warnx("control: out of memory for a client's answers, dropped");
	c->broken = 1;
	ev_io_stop(c->h->loop, &c->rw);
	ev_feed_event(c->h->loop, &c->ww, EV_WRITE);
}

/* Room for n more bytes of output; -1 when there is no memory for it. */
static int
out_reserve(struct client *c, size_t n)
{
	size_t cap;
	char *p;

	if (c->outcap - c->outlen >= n)
		return 0;
	if (c->outpos > 0) {	/* what was written goes first */
		memmove(c->out, c->out + c->outpos, client_unsent(c));
		c->outlen -= c->outpos;
		c->outpos = 0;
	}
	/* room, and more than a sliver (or we would move it all again soon) */
	if (c->outcap - c->outlen >= n && c->outlen <= c->outcap / 2)
		return 0;
	cap = c->outcap > 0 ? c->outcap * 2 : 4096;
	while (cap - c->outlen < n)
		cap *= 2;
	if ((p = realloc(c->out, cap)) == NULL)
		return -1;
	c->out = p;
	c->outcap = cap;
	return 0;
}

/* One answer line; written by control.c (write_cb). */
int
client_out_line(struct client *c, const char *s, size_t n)
{
	if (c->broken)
		return -1;
	if (s == NULL || out_reserve(c, n + 1) != 0) {
		client_break(c);
		return -1;
	}
	if (client_unsent(c) == 0)
		c->tx_ns = hp_now_ns();	/* client_timeout counts from here */
	memcpy(c->out + c->outlen, s, n);
	c->out[c->outlen + n] = '\n';
	c->outlen += n + 1;
	c->queued += n + 1;
	ev_io_start(c->h->loop, &c->ww);
	return 0;
}

/* The bytes of an item just queued (output [start, queued)) go back to the
 * guest once written. Marks closer than MARK_SPAN merge into one, so there
 * are at most unsent / MARK_SPAN + 1 of them; merging only gives credit
 * back later, never before its item is written. */
void
client_mark_add(struct client *c, uint64_t start, uint32_t credit)
{
	struct mark *m;

	if (c->broken || credit == 0)
		return;
	if (c->mcount > 0) {
		m = &c->marks[(c->mhead + c->mcount - 1) % c->mcap];
		if (c->queued - m->start < MARK_SPAN) {
			m->end = c->queued;
			m->credit += credit;
			return;
		}
	}
	if (c->mcount == c->mcap) {
		uint32_t cap = c->mcap ? c->mcap * 2 : 64;
		struct mark *n = malloc(cap * sizeof(*n));

		if (n == NULL) {
			client_break(c);
			return;
		}
		for (uint32_t i = 0; i < c->mcount; i++)
			n[i] = c->marks[(c->mhead + i) % c->mcap];
		free(c->marks);
		c->marks = n;
		c->mhead = 0;
		c->mcap = cap;
	}
	m = &c->marks[(c->mhead + c->mcount++) % c->mcap];
	*m = (struct mark){ start, c->queued, credit };
}

/* The marks of the output written by now, taken off: the credit they
 * carry (control.c gives it back to the guest). */
uint64_t
client_marks_written(struct client *c)
{
	uint64_t credit = 0;

	while (c->mcount > 0 && c->marks[c->mhead].end <= c->written) {
		credit += c->marks[c->mhead].credit;
		c->mhead = (c->mhead + 1) % c->mcap;
		c->mcount--;
	}
	return credit;
}

int
client_pass_fds(struct client *c, const int *fds, uint32_t n)
{
	client_drop_fds(c);
	if (n == 0)
		return 0;
	if ((c->fds = calloc(n, sizeof(*c->fds))) == NULL)
		return -1;
	/* our own copies: a guest's domain may go before they are sent */
	for (c->nfds = 0; c->nfds < n; c->nfds++) {
		if ((c->fds[c->nfds] = fcntl(fds[c->nfds], F_DUPFD_CLOEXEC, 3)) < 0) {
			client_drop_fds(c);
			return -1;
		}
	}
	c->fds_sent = 0;
	c->fds_at = c->queued;
	return 0;
}

void
client_drop_fds(struct client *c)
{
	for (uint32_t i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	free(c->fds);
	c->fds = NULL;
	c->nfds = c->fds_sent = 0;
}

void
client_reply(struct client *c, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_OUT_FLAGS);

	client_out_line(c, s, s != NULL ? strlen(s) : 0);
	json_object_put(o);
}

/* An error often quotes the request (a name, a method): bytes that are
 * not UTF-8 there, or a name cut inside a character, would make the
 * answer no JSON a strict parser reads; they are escaped as a log's are. */
void
client_reply_error(struct client *c, const char *msg)
{
	size_t n = strlen(msg);
	char *text = malloc(4 * n + 1);
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(
		text != NULL ? escape_text(text, 4 * n + 1, msg, n, ESCAPE_KEEP_NL) :
		"out of memory"));
	free(text);
	client_reply(c, o);
}
