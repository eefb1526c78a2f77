/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Channels passed to calls over a lane: the caller's move from the hub's
 * table to the lane's (and back when the Request does not go), the
 * callee's adopted from a Request and checked as hubd checks a guest,
 * and their end when the call is answered or the lane closes. Both
 * kinds: a chan<T> the caller receives on, and an rx<T> (an upload) it
 * sends on, which the lane's table gets with no credit: the callee
 * grants the window when it accepts, as hubd's upload.c has it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"
#include "proto/channel.h"
#include "proto/postcard.h"

/* Where a call's channel arguments are in its arguments. */
struct chan_args {
	uint8_t		n;
	uint64_t	id[HP_SIG_MAX_ARGS];
	uint8_t		up[HP_SIG_MAX_ARGS];	/* an rx<T> */
	size_t		at[HP_SIG_MAX_ARGS], end[HP_SIG_MAX_ARGS];
};

static int
chan_args_find(const struct hp_sig *sig, const uint8_t *args, size_t len,
	       struct chan_args *ca)
{
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, args, len);
	ca->n = 0;
	for (uint8_t i = 0; i < sig->nargs; i++) {
		if (!hp_sig_is_chan(hp_sig_arg_type(sig, i))) {
			if (hp_sig_skip(&d, sig, sig->args[i]) != 0)
				return -EINVAL;
			continue;
		}
		ca->up[ca->n] = hp_sig_arg_type(sig, i) == HP_T_RX;
		ca->at[ca->n] = d.pos;
		ca->id[ca->n] = hp_pc_get_u64(&d);
		if (d.err != 0)
			return -EINVAL;
		ca->end[ca->n++] = d.pos;
	}
	return 0;
}

/* args with the i-th channel id made ids[i] (malloc'd: NULL when out of
 * memory). */
static uint8_t *
chan_args_rewrite(const uint8_t *args, size_t len, const struct chan_args *ca,
		  const uint32_t *ids, size_t *outlen)
{
	size_t cap = len + (size_t)ca->n * 10, from = 0;
	uint8_t *out = malloc(cap > 0 ? cap : 1);
	struct hp_pc_enc e;

	if (out == NULL)
		return NULL;
	hp_pc_enc_init(&e, out, cap);
	for (uint8_t i = 0; i < ca->n; i++) {
		memcpy(out + e.len, args + from, ca->at[i] - from);
		e.len += ca->at[i] - from;
		hp_pc_put_u64(&e, ids[i]);
		from = ca->end[i];
	}
	memcpy(out + e.len, args + from, len - from);
	*outlen = e.len + len - from;
	return out;
}

int
lg_chan_move(struct guest *g, struct lg_lane *ln, const struct hp_sig *sig,
	     const uint8_t *args, size_t len, struct out_call *c, uint8_t **out,
	     size_t *outlen)
{
	struct lg_chans *hub = &g->chans, *cs = &ln->chans;
	struct chan_args ca;
	uint32_t z[HP_SIG_MAX_ARGS] = { 0 };
	uint8_t i, j;
	int64_t id;

	if (chan_args_find(sig, args, len, &ca) != 0)
		return 1;
	/* only channels we opened to receive on (or, an upload, to send
	 * on, nothing sent yet) and have not passed on: any other the hub
	 * refuses, with its own words */
	for (i = 0; i < ca.n; i++) {
		uint64_t x = ca.id[i];
		struct rx_chan *r = x != 0 && x < hub->max ? &hub->rx[x] : NULL;

		if (r == NULL || (int)(x % 2) != hub->side || r->lane != NULL)
			return 1;
		if (ca.up[i] ? !hub->tx[x].open || hub->tx[x].ended ||
		    hub->tx[x].sent_total != 0 || r->open :
		    !r->open || r->stopping || r->held != 0 || r->unreported != 0)
			return 1;
		for (j = 0; j < i; j++)
			if (ca.id[j] == x)
				return 1;
	}
	for (i = 0; i < ca.n; i++) {
		/* r[shm.flow.channel-activate]; an upload with no credit */
		id = hp_chan_open(cs->entries, cs->max, cs->side, ca.up[i] ? 0 : cs->credit,
				  &cs->cursor);
		if (id >= 0 && (cs->rx[id].open || cs->tx[id].open)) {
			/* one we receive on, Free in the table: the peer wrote it */
			lg_lane_broken(ln, "shm.flow.channel-id-reuse");
			id = -EPROTO;
		}
		if (id < 0)
			break;
		z[i] = (uint32_t)id;
	}
	if (i < ca.n || (*out = chan_args_rewrite(args, len, &ca, z, outlen)) == NULL) {
		while (i-- > 0)
			hp_chan_free(lg_chan_entry(cs, z[i]));
		return 1;	/* through the hub, which has room of its own */
	}
	c->up = 0;
	for (i = 0; i < ca.n; i++) {
		uint32_t x = (uint32_t)ca.id[i];
		struct rx_chan *r = &cs->rx[z[i]];

		if (ca.up[i]) {
			/* r[shm.flow.initial]: we send on it, in the lane's table */
			cs->tx[z[i]] = (struct tx_chan){ .open = 1, .origin = x,
							 .serial = ++g->chan_serial };
			*r = (struct rx_chan){ .open = 0 };
			hub->rx[x].lane = ln;
			hub->rx[x].lane_chan = z[i];
			hp_chan_close(lg_chan_entry(hub, x));
			c->chans[i] = z[i];
			c->serials[i] = cs->tx[z[i]].serial;
			c->up |= (uint8_t)(1u << i);
			continue;
		}
		*r = hub->rx[x];
		r->origin = x;
		r->serial = ++g->chan_serial;
		r->granted = cs->credit;	/* r[shm.flow.channel-activate] */
		r->got = 0;
		hub->rx[x].lane = ln;
		hub->rx[x].lane_chan = z[i];
		/* taken by no other call through the hub meanwhile, and not
		 * reused: hubd relays only Active ones, we open only Free */
		hp_chan_close(lg_chan_entry(hub, x));
		c->chans[i] = z[i];
		c->serials[i] = r->serial;
	}
	c->nchans = ca.n;
	return 0;
}

void
lg_chan_unmove(struct guest *g, struct lg_lane *ln, const struct out_call *c)
{
	struct lg_chans *cs = &ln->chans;

	for (uint8_t i = 0; i < c->nchans; i++) {
		uint32_t z = c->chans[i], x = cs->rx[z].origin;

		if (c->up & (1u << i)) {
			/* ours to send on through the hub again */
			x = cs->tx[z].origin;
			cs->tx[z] = (struct tx_chan){ .open = 0 };
			g->chans.rx[x].lane = NULL;
			g->chans.rx[x].lane_chan = 0;
			hp_chan_free(lg_chan_entry(&g->chans, x));
			hp_chan_activate(lg_chan_entry(&g->chans, x), g->chans.credit);
			hp_chan_free(lg_chan_entry(cs, z));
			continue;
		}
		g->chans.rx[x].lane = NULL;
		g->chans.rx[x].lane_chan = 0;
		/* Closed -> Free -> Active: the odd ids are ours alone */
		hp_chan_free(lg_chan_entry(&g->chans, x));
		hp_chan_activate(lg_chan_entry(&g->chans, x), g->chans.credit);
		cs->rx[z] = (struct rx_chan){ .open = 0 };
		hp_chan_free(lg_chan_entry(cs, z));
	}
}

void
lg_chan_answered(struct guest *g, const struct out_call *c)
{
	struct lg_chans *cs = &c->lane->chans;

	/* an answer ends the call's streams, after their items (as hubd
	 * ends them when the callee answers first): a Close; an upload we
	 * still send on a Reset, as hubd stops the sender of one (the
	 * callee frees its entry) */
	for (uint8_t i = 0; i < c->nchans; i++) {
		uint32_t z = c->chans[i];

		if ((c->up & (1u << i)) && cs->tx[z].open && cs->tx[z].serial == c->serials[i])
			lg_chan_tx_stop(g, cs, z);
		else if (!(c->up & (1u << i)) && cs->rx[z].open &&
			 cs->rx[z].serial == c->serials[i])
			lg_chan_rx_end(g, cs, z, 0);
	}
}

int
lg_chan_adopt(struct guest *g, struct lg_lane *ln, const struct hp_sig *sig,
	      const uint8_t *args, size_t len, struct guest_call *c, uint8_t **out,
	      size_t *outlen)
{
	struct lg_chans *cs = &ln->chans;
	struct chan_args ca;
	uint32_t pub[HP_SIG_MAX_ARGS];
	uint8_t i, j;

	if (chan_args_find(sig, args, len, &ca) != 0)
		return -EINVAL;
	for (i = 0; i < ca.n; i++) {
		uint64_t z = ca.id[i];

		/* r[shm.id.channel-parity]: one the caller opened */
		if (z == 0 || z >= cs->max || (int)(z % 2) == cs->side) {
			g->lane_rule = "shm.id.channel-parity";
			return -EPROTO;
		}
		/* r[shm.flow.channel-activate]: and activated, once per call */
		for (j = 0; j < i && ca.id[j] != z; j++)
			;
		if (j < i || hp_chan_state(lg_chan_entry(cs, (uint32_t)z)) != HP_CHAN_ACTIVE) {
			g->lane_rule = "shm.flow.channel-activate";
			return -EPROTO;
		}
	}
	for (i = 0; i < ca.n; i++) {
		/* a new channel: whatever we knew of the id is over */
		cs->tx[ca.id[i]] = (struct tx_chan){ .open = 0 };
		pub[i] = lg_lane_chan_pub(ln, (uint32_t)ca.id[i]);
		c->chans[i] = (uint32_t)ca.id[i];
		if (ca.up[i]) {
			/* an upload: offered, for the handler to accept; not
			 * ours to send on */
			cs->rx[ca.id[i]] = (struct rx_chan){ .offered = 1 };
			cs->tx[ca.id[i]].ended = 1;
			c->rx[c->nrx++] = (uint32_t)ca.id[i];
		}
	}
	c->nchans = ca.n;
	if ((*out = chan_args_rewrite(args, len, &ca, pub, outlen)) == NULL)
		return -ENOMEM;
	return 0;
}

void
lg_chan_replied(struct guest_call *c)
{
	struct lg_chans *cs = c->lane != NULL ? &c->lane->chans : &c->g->chans;

	/* the answer ends what is still open: over a lane the caller
	 * ends it (lg_chan_answered), through the hub hubd frees it (late
	 * Data gets a Reset). Nothing more goes out on them: a send fails
	 * at once, its item not dropped unseen. Through the hub, only if
	 * the id was not given again since the handler ended it */
	for (uint8_t i = 0; i < c->nchans; i++) {
		struct tx_chan *tx = &cs->tx[c->chans[i]];

		if (c->lane != NULL || tx->serial == c->serials[i]) {
			tx->open = 0;
			tx->ended = 1;
		}
	}
}

void
lg_chan_lane_gone(struct guest *g, struct lg_lane *ln)
{
	struct lg_chans *cs = &ln->chans;

	/* the sender is gone for us: a Reset, as hubd gives a receiver
	 * whose sender died; what we send on goes nowhere */
	for (uint32_t id = 1; id < cs->max; id++) {
		if (cs->rx[id].open)
			lg_chan_rx_end(g, cs, id, -ECONNRESET);
		cs->rx[id].offered = 0;		/* never accepted: nobody's */
		lg_chan_unorigin(g, cs, id);	/* an upload's hub entry */
		cs->tx[id] = (struct tx_chan){ .ended = 1 };
	}
}
