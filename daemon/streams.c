/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The channels the host is the receiving end of: a control client's
 * chan<T> argument, whose items go to the client, and hub.sink's, which
 * the host hashes. Credit goes back to the guest as items are consumed
 * (r[shm.flow.ordering.receiver]), for a client only as the client takes
 * them. hub.source's sending side is in services.c. Also the check of
 * the channel argument a guest's call to another carries (relay.c's
 * chan<T>, upload.c's rx<T>). */
#include <errno.h>
#include <string.h>

#include "proto/xxh.h"

#include "daemon/answer.h"
#include "daemon/host.h"
#include "daemon/streams.h"
#include "proto/channel.h"

/* What channel id's receiver consumed goes back to the sender in quarters
 * of the window, or all of it at once when nothing more will be consumed
 * soon (a stream being drained, a client that took all it had). */
static void
grant(struct hub *h, struct peer *p, uint32_t id, int all)
{
	struct hchan *c = &p->chans[id];

	if (c->unreported == 0 ||
	    (!all && c->unreported < h->conf.params.initial_credit / 4))
		return;
	hp_chan_grant(&p->view.chans[id], c->unreported);
	c->granted += c->unreported;
	c->unreported = 0;
	hp_endpoint_notify_credit(&p->ep, &p->view.chans[id].granted_total);
}

int
streams_caller_full(struct hub *h, struct peer *p, uint64_t caller)
{
	uint32_t max = h->conf.channels_per_caller, n = 0;

	if (max == 0) {		/* a quarter of the ids hubd opens */
		max = (h->conf.params.max_channels - 1) / 2 / 4;
		max = max > 0 ? max : 1;
	}
	/* held from open until its end or the call's answer: one it told
	 * to stop still counts (r[shm.flow.channel-id-reuse]) */
	for (uint32_t id = 2; id < h->conf.params.max_channels; id += 2)
		n += p->chans[id].open && p->chans[id].caller == caller;
	return n >= max;
}

int64_t
streams_open_client(struct hub *h, struct peer *p, const struct origin *o,
		    uint64_t caller)
{
	int64_t id;

	if (streams_caller_full(h, p, caller))
		return -EUSERS;
	id = hp_chan_open(p->view.chans, h->conf.params.max_channels, HP_SIDE_HOST,
			  h->conf.params.initial_credit, &p->chan_cursor);
	if (id < 0)
		return id;
	p->chans[id] = (struct hchan){ .open = 1,
				       .granted = h->conf.params.initial_credit, .o = *o,
				       .caller = caller };
	p->chans[id].o.chan = (uint32_t)id;
	return id;
}

void
streams_unopen(struct peer *p, uint32_t id)
{
	p->chans[id].open = 0;
	hp_chan_free(&p->view.chans[id]);
}

void
streams_over(struct hub *h, struct peer *p, uint32_t req_id, uint32_t chan)
{
	struct hchan *c;

	if (chan >= h->conf.params.max_channels)
		return;
	c = &p->chans[chan];
	/* the call's own stream, not one that took its id since; a relay's
	 * ends with relay_response */
	if (!c->open || c->sending || c->relay != NULL || c->o.req_id != req_id ||
	    (c->o.kind != ORIGIN_CLIENT && c->o.kind != ORIGIN_NONE))
		return;
	if (c->o.kind == ORIGIN_CLIENT)
		c->o.ext->chan = 0;
	c->open = 0;
	c->held = c->unreported = 0;
	/* told to stop once already: a second Reset would name an id the
	 * guest let go of */
	c->stale = c->stopped ? STALE_RESET : STALE_ENDED;
	hp_chan_free(&p->view.chans[chan]);
}

int
streams_take(struct hub *h, struct peer *p, struct hchan *c, uint32_t len)
{
	/* r[shm.flow.remaining-credit]: the sender must not overrun what we
	 * granted (our own count, not the guest-writable shared word);
	 * r[shm.bytes.what-counts]: len is the Data's payload_len */
	if (!hp_credit_allows(c->granted, c->received, len)) {
		host_fault(h, p, DEATH_VIOLATION, "shm.flow.remaining-credit");
		return -1;
	}
	c->received += len;
	c->bytes += len;
	return 0;
}

void
streams_data(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct hchan *c = &p->chans[id];

	if (!c->open && c->stale != 0 && c->stale != STALE_SENT) {
		/* a client stream we ended (streams_over): the guest sent
		 * this before it knew, no fault of its. r[shm.flow.reset]:
		 * told once that the channel and its credit word are gone. */
		if (c->stale == STALE_ENDED) {
			c->stale = STALE_RESET;
			host_send(h, p, HP_MSG_RESET, id, 0, NULL, 0);
		}
		return;
	}
	if (!c->open || c->sending) {
		/* r[shm.id.channel-parity]: an even id is one we allocate */
		host_fault(h, p, DEATH_VIOLATION, id % 2 == 0 ? "shm.id.channel-parity" :
			   "shm.flow.channel-table-indexing");
		return;
	}
	if (streams_take(h, p, c, m->len) != 0)
		return;
	if (c->o.kind == ORIGIN_CLIENT) {
		/* consumed once the client has taken it (streams_consumed):
		 * a client that reads slowly holds the guest back, not
		 * hubd's memory */
		c->held += m->len;
		c->o.ext->on_item(c->o.ext, m->payload, m->len);
		return;
	}
	if (c->stopped)
		return;		/* sent before it saw our Reset: dropped */
	c->checksum = XXH3_64bits_withSeed(m->payload, m->len, c->checksum);
	/* hub.sink's consumed now. All of it once nothing more is queued:
	 * a sender may be waiting for the last few bytes of the window,
	 * less than the quarter we otherwise wait for. */
	c->unreported += m->len;
	grant(h, p, id, hp_endpoint_rx_ready(&p->ep) == 0);
}

void
streams_end(struct hub *h, struct peer *p, uint32_t id, int reset)
{
	struct hchan *c = &p->chans[id];
	struct origin o = c->o;
	uint8_t buf[16];
	struct hp_pc_enc e;

	if (!c->open && c->stale != 0) {
		/* its end of a client stream we ended, or its stop crossing
		 * the end of a stream we sent: both sides have now let go
		 * (r[shm.flow.channel-id-reuse]) */
		c->stale = 0;
		return;
	}
	if (!c->open) {
		host_fault(h, p, DEATH_VIOLATION, "shm.flow.channel-table-indexing");
		return;
	}
	if (c->sending) {	/* the receiver gave up on our hub.source */
		c->open = c->sending = 0;
		p->sources--;
		/* r[shm.flow.reset]: nothing more follows; a receiver that
		 * waits for the sender's end before freeing the entry
		 * (libguest) may free it now */
		host_send(h, p, HP_MSG_RESET, id, 0, NULL, 0);
		answer_error(h, &o, HP_ERR_USER, "the receiver reset the stream");
		return;
	}
	c->open = 0;
	/* r[shm.flow.channel-id-reuse]: the receiver frees the entry */
	hp_chan_free(&p->view.chans[id]);
	if (o.kind == ORIGIN_CLIENT)
		o.ext->chan = 0;	/* what the client takes now is nobody's credit */
	if (o.kind == ORIGIN_SINK) {
		o.kind = ORIGIN_PEER;
		if (reset) {
			answer_error(h, &o, HP_ERR_USER, "the stream was reset");
			return;
		}
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_u64(&e, c->checksum);
		answer_ok(h, &o, buf, e.len);
	}
	/* A client's stream ends with the call's Response. */
}

void
streams_consumed(struct hub *h, struct peer *p, struct ext_call *x, uint32_t bytes)
{
	struct hchan *c;

	if (x->chan == 0 || x->chan >= h->conf.params.max_channels)
		return;
	c = &p->chans[x->chan];
	if (!c->open || c->o.kind != ORIGIN_CLIENT || c->o.ext != x)
		return;
	if (bytes > c->held)
		bytes = c->held;
	c->held -= bytes;
	c->unreported += bytes;
	/* all of it once the client has taken everything: the guest never
	 * waits on credit we hold back for nobody */
	grant(h, p, x->chan, c->held == 0);
}

void
streams_abandon(struct hub *h, struct peer *p, struct ext_call *x)
{
	for (uint32_t id = 1; p->chans != NULL && id < h->conf.params.max_channels; id++) {
		struct hchan *c = &p->chans[id];

		if (!c->open || c->sending || c->o.kind != ORIGIN_CLIENT || c->o.ext != x)
			continue;
		/* Nobody reads it any more: the sender is told to stop, as a
		 * receiver does (r[shm.flow.reset]), and granted nothing more,
		 * so that it stops within a window even if it never looks at
		 * its ring. What it sent meanwhile is dropped (within credit).
		 * The entry stays Active until its end or the call's answer. */
		c->o.kind = ORIGIN_NONE;
		c->o.ext = NULL;
		c->held = c->unreported = 0;
		c->stopped = 1;
		host_send(h, p, HP_MSG_RESET, id, 0, NULL, 0);
	}
	x->chan = 0;
}

void
streams_reset_all(struct hub *h, struct peer *p)
{
	memset(p->chans, 0, h->conf.params.max_channels * sizeof(*p->chans));
	p->chan_cursor = 0;
	p->sources = 0;
}

const char *
streams_chan_arg(struct hub *h, struct peer *p, const struct method *meth,
		 const struct hp_request *req, uint8_t type, uint64_t *a, size_t *at,
		 size_t *after)
{
	const struct hp_params *prm = &h->conf.params;
	struct hp_pc_dec d;
	uint32_t nchans = 0;

	hp_pc_dec_init(&d, req->args, req->args_len);
	for (uint8_t i = 0; i < meth->sig.nargs; i++) {
		if (!hp_sig_is_chan(hp_sig_arg_type(&meth->sig, i))) {
			hp_sig_skip(&d, &meth->sig, meth->sig.args[i]);
			continue;
		}
		nchans++;
		*at = d.pos;
		*a = hp_pc_get_u64(&d);
		*after = d.pos;
	}
	if (nchans > 1)
		return "only one channel argument is routed between guests";
	/* r[shm.id.channel-parity]: the caller's own (odd) id, opened by it
	 * (Active) and not one hubd uses already on it */
	if (d.err != 0 || *a > UINT32_MAX ||
	    hp_chan_id_check((uint32_t)*a, prm->max_channels, HP_SIDE_GUEST) != 0 ||
	    hp_chan_state(&p->view.chans[*a]) != HP_CHAN_ACTIVE || p->chans[*a].open)
		return type == HP_T_RX ?
		    "the rx<T> argument must be a channel the caller opened "
		    "to send on (odd id, open, not in use)" :
		    "the channel argument must be a channel the caller opened "
		    "to receive on (odd id, open, not in use)";
	return NULL;
}
