/* The host's data path: serving every attached guest's ring, routing calls
 * between guests and control clients, the built-in services, and the
 * channels the host receives on. Nothing here blocks: a message that finds
 * no room waits in the target's backlog, and whoever floods a backlogged
 * target is paused (its own ring fills: backpressure on itself only). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "daemon/control.h"
#include "daemon/hubd.h"
#include "daemon/log.h"
#include "proto/channel.h"
#include "proto/method.h"
#include "proto/services.h"

#define SERVE_BATCH	64	/* messages read from one guest per round */
#define BACKLOG_PAUSE	256	/* a target this backlogged pauses its callers */
#define INBOUND_MAX	1024	/* a guest's calls being routed at once */
/* Messages waiting for a guest that does not read its ring: beyond this it
 * is ended, rather than hold the host's memory (everything sent to it is
 * bounded by its own calls and the callers paused on it). */
#define BACKLOG_MAX	(INBOUND_MAX + 4 * BACKLOG_PAUSE)

static const struct {
	const char	*name;
	const char	*sig;
} services[] = {
	{ HP_SVC_PING, HP_SVC_SIG_PING }, { HP_SVC_LOG, HP_SVC_SIG_LOG },
	{ HP_SVC_PEERS, HP_SVC_SIG_PEERS }, { HP_SVC_REGISTER, HP_SVC_SIG_REGISTER },
	{ HP_SVC_SINK, HP_SVC_SIG_SINK }, { HP_SVC_SOURCE, HP_SVC_SIG_SOURCE },
};

#define SOURCE_ITEM	4096	/* hub.source's item size at most */
/* Methods one guest may register: a bound on what one guest makes the
 * host keep and list (README, security). */
#define HOST_METHODS_PER_GUEST	256

static struct peer *
peer_of(struct hub *h, uint32_t id)
{
	if (id == 0 || id > h->conf.params.max_guests)
		return NULL;
	return &h->peers[id - 1];
}

/* -- the method registry --------------------------------------------------
 * An array, and an index from method id to array slot (open addressing,
 * linear probing, at most half full) rebuilt whenever a method goes.
 * A guest's methods outlive its instance: while it restarts, a call gets
 * "guest X is restarting", and the next instance registering a name takes
 * its entry back; they go when the guest is down for good (host_forget). */

static uint32_t *
index_slot(struct hub *h, uint64_t id)
{
	uint32_t mask = h->mindex_cap - 1, i;

	for (i = (uint32_t)id & mask; h->mindex[i] != 0; i = (i + 1) & mask)
		if (h->methods[h->mindex[i] - 1].id == id)
			break;
	return &h->mindex[i];
}

static void
index_fill(struct hub *h)
{
	memset(h->mindex, 0, h->mindex_cap * sizeof(*h->mindex));
	for (uint32_t i = 0; i < h->nmethods; i++)
		*index_slot(h, h->methods[i].id) = i + 1;
}

static int
index_grow(struct hub *h, uint32_t cap)
{
	uint32_t *idx = calloc(cap, sizeof(*idx));

	if (idx == NULL)
		return -ENOMEM;
	free(h->mindex);
	h->mindex = idx;
	h->mindex_cap = cap;
	index_fill(h);
	return 0;
}

static struct method *
method_by_id(struct hub *h, uint64_t id)
{
	uint32_t i;

	if (h->mindex_cap == 0 || (i = *index_slot(h, id)) == 0)
		return NULL;
	return &h->methods[i - 1];
}

const struct method *
host_method_find(struct hub *h, const char *name)
{
	const struct method *m = method_by_id(h, hp_method_id(name, strlen(name)));

	return m != NULL && strcmp(m->name, name) == 0 ? m : NULL;
}

/* Whether m's owner is the instance that registered it, up and served. */
int
host_method_live(struct hub *h, const struct method *m)
{
	struct peer *q = peer_of(h, m->owner);

	return m->owner == 0 || (q != NULL && q->state == PEER_UP && q->epoch == m->epoch);
}

/* Why a method that is not live cannot be called now. */
static const char *
method_unavailable(struct hub *h, const struct method *m, char *buf, size_t len)
{
	struct peer *q = peer_of(h, m->owner);
	const char *name = q != NULL && q->conf != NULL ? q->conf->name : "?";

	if (q == NULL || q->conf == NULL)
		snprintf(buf, len, "the method's guest is gone");
	else if (q->state == PEER_UP)
		snprintf(buf, len, "guest %s has not registered it since it restarted", name);
	else if (q->state == PEER_STARTING || q->state == PEER_BACKOFF ||
		 (q->state == PEER_ENDING && q->conf->restart != RESTART_NEVER) ||
		 (q->state == PEER_STOPPING && q->life.want_restart))
		snprintf(buf, len, "guest %s is restarting", name);
	else
		snprintf(buf, len, "guest %s is %s", name, supervise_state_name(q->state));
	return buf;
}

/* Whether a guest's entry holds nobody who will come back by itself. */
static int
down_for_good(const struct peer *q)
{
	return q->conf == NULL || q->state == PEER_DOWN || q->state == PEER_FAILED;
}

/* Registers name for owner's instance epoch (owner 0: the host). */
static int
method_add(struct hub *h, const char *name, const char *signature,
	   uint32_t owner, uint32_t epoch, const char **why)
{
	struct peer *p = peer_of(h, owner);
	struct method *m, *old;
	struct hp_sig sig;
	size_t n = strlen(name);
	uint64_t id = hp_method_id(name, n);

	if (n == 0 || n > HP_METHOD_NAME_MAX) {
		*why = HP_SVC_REG_BAD_NAME;
		return -EINVAL;
	}
	if (hp_sig_parse(signature, &sig, why) != 0)
		return -EINVAL;
	if ((old = method_by_id(h, id)) != NULL) {
		if (strcmp(old->name, name) != 0) {
			*why = "the method's id collides with another method's";
			return -EEXIST;
		}
		/* taken, unless by an earlier instance of this guest, or by
		 * one that is down for good */
		if (host_method_live(h, old) ||
		    (old->owner != owner && !down_for_good(peer_of(h, old->owner)))) {
			*why = HP_SVC_REG_TAKEN;
			return -EEXIST;
		}
	}
	if (p != NULL && p->nmethods >= HOST_METHODS_PER_GUEST) {
		*why = HP_SVC_REG_TOO_MANY;
		return -ENOSPC;
	}
	if (old != NULL) {
		m = old;
	} else {
		if (h->nmethods == h->mcap) {
			uint32_t cap = h->mcap ? h->mcap * 2 : 64;

			if ((m = realloc(h->methods, cap * sizeof(*m))) == NULL) {
				*why = "out of memory";
				return -ENOMEM;
			}
			h->methods = m;
			h->mcap = cap;
		}
		if ((h->nmethods + 1) * 2 > h->mindex_cap &&
		    index_grow(h, h->mindex_cap ? h->mindex_cap * 2 : 128) != 0) {
			*why = "out of memory";
			return -ENOMEM;
		}
		m = &h->methods[h->nmethods++];
		memset(m, 0, sizeof(*m));
		memcpy(m->name, name, n);
		m->id = id;
		*index_slot(h, id) = h->nmethods;
	}
	m->sig = sig;
	snprintf(m->signature, sizeof(m->signature), "%s", signature);
	m->owner = owner;
	m->epoch = epoch;
	if (p != NULL)
		p->nmethods++;
	return 0;
}

void
host_forget(struct hub *h, struct peer *p)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < h->nmethods; i++)
		if (h->methods[i].owner != p->id)
			h->methods[kept++] = h->methods[i];
	p->nmethods = 0;
	if (kept == h->nmethods)
		return;
	h->nmethods = kept;
	index_fill(h);		/* indices moved: the same size, filled anew */
}

int
host_init(struct hub *h)
{
	const struct hp_params *p = &h->seg.params;
	const char *why;

	hp_slot_pool_view(&h->host_pool, h->seg.base + hp_geometry_pool_offset(&h->seg.geo, 0),
			  p->slots_per_guest, p->slot_size);
	if ((h->slot_owner = calloc(p->slots_per_guest, 1)) == NULL)
		return -1;
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		if (method_add(h, services[i].name, services[i].sig, 0, 0, &why) != 0)
			return -1;
	return 0;
}

/* -- sending to a guest ------------------------------------------------- */

/* One message into p's ring, staged (published by the round's flush). A
 * host pool slot used for it is noted as p's until p frees it, so that
 * recovery can return it (r[shm.crash.recovery] 4;
 * r[shm.segment.slot-ownership]: the receiver frees into the sender's pool). */
static int
try_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
	 uint64_t method_id, const uint8_t *payload, uint32_t len)
{
	struct hp_outbuf ob;
	int rc;

	if ((rc = hp_endpoint_reserve(&p->ep, len, &ob)) != 0)
		return rc;
	if (len > 0)
		memcpy(ob.buf, payload, len);
	if (ob.slot != HP_SLOT_INLINE)
		h->slot_owner[ob.slot] = (uint8_t)p->id;
	return hp_endpoint_commit(&p->ep, &ob, type, id, method_id, len, HP_SEND_MORE);
}

static void
flush_backlog(struct hub *h, struct peer *p)
{
	struct qmsg *q;
	int rc;

	while ((q = p->bl_head) != NULL) {
		rc = try_send(h, p, q->type, q->id, q->method_id, q->data, q->len);
		if (rc == -EAGAIN)
			break;
		if (rc != 0 && rc != -EMSGSIZE) {
			supervise_kill(p, DEATH_VIOLATION, "shm.ring.capacity");
			return;
		}
		if ((p->bl_head = q->next) == NULL)
			p->bl_tail = &p->bl_head;
		p->bl_count--;
		free(q);
	}
	if (p->bl_count < BACKLOG_PAUSE / 2) {
		/* room again: callers paused on a backlog may go on */
		for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
			h->peers[i].paused = 0;
	}
}

/* Sends to a guest, or queues in order behind what already waits. */
static void
host_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
	  uint64_t method_id, const uint8_t *payload, uint32_t len)
{
	struct qmsg *q;
	int rc;

	if (p->state != PEER_UP)
		return;
	/* staged: the data path's next round publishes it */
	if (!ev_is_active(&h->idle_w))
		ev_idle_start(h->loop, &h->idle_w);
	if (p->bl_head == NULL) {
		rc = try_send(h, p, type, id, method_id, payload, len);
		if (rc == 0)
			return;
		if (rc == -EMSGSIZE) {
			log_warnx("guest %s: dropped a %u-byte message over max_payload_size",
				  p->conf->name, len);
			return;
		}
		if (rc != -EAGAIN) {
			supervise_kill(p, DEATH_VIOLATION, "shm.ring.capacity");
			return;
		}
	}
	if (p->bl_count >= BACKLOG_MAX) {
		supervise_kill(p, DEATH_HUNG, "stopped reading its ring (shm.ring.full)");
		return;
	}
	if ((q = malloc(sizeof(*q) + len)) == NULL) {
		log_warn("guest %s: backlog", p->conf->name);
		return;
	}
	q->next = NULL;
	q->type = type;
	q->id = id;
	q->method_id = method_id;
	q->len = len;
	memcpy(q->data, payload, len);
	*p->bl_tail = q;
	p->bl_tail = &q->next;
	p->bl_count++;
	p->stats.backlogged++;
}

/* A Response payload with empty metadata, Ok(value) or Err(code[, value]). */
static size_t
encode_answer(uint8_t *buf, size_t cap, uint32_t result, uint32_t code,
	      const uint8_t *value, size_t len)
{
	struct hp_response r = { .result = result, .error = code, .value = value,
				 .value_len = len };
	int64_t n = hp_msg_encode_response(buf, cap, &r);

	return n < 0 ? 0 : (size_t)n;
}

static void answer_error(struct hub *h, const struct origin *o, uint32_t code,
			 const char *why);

/* Delivers a complete Response payload to whoever waits for it. */
static void
answer(struct hub *h, const struct origin *o, const uint8_t *payload, size_t len)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct peer *p;
	int rc;

	switch (o->kind) {
	case ORIGIN_PEER:
		p = peer_of(h, o->peer);
		if (p == NULL || p->state != PEER_UP || p->epoch != o->epoch)
			return;		/* the caller died meanwhile */
		/* an answer that cannot be sent must still end the call */
		if (len > h->seg.params.max_payload_size) {
			answer_error(h, o, HP_ERR_USER, "the answer is larger than max_payload_size");
			return;
		}
		p->inbound--;
		host_send(h, p, HP_MSG_RESPONSE, o->req_id, 0, payload, (uint32_t)len);
		return;
	case ORIGIN_CLIENT:
		rc = hp_msg_decode_response(payload, len, &r);
		o->ext->on_done(o->ext, rc, rc == 0 ? &r : NULL);
		return;
	default:
		return;
	}
}

/* Answers with an error the host makes itself, explained in metadata. */
static void
answer_error(struct hub *h, const struct origin *o, uint32_t code, const char *why)
{
	uint8_t buf[512];
	struct hp_meta_entry e = { .key = HP_META_HUB_ERROR,
				   .key_len = strlen(HP_META_HUB_ERROR),
				   .type = HP_META_STRING,
				   .value = (const uint8_t *)why,
				   .value_len = strlen(why) };
	struct hp_response r = { .meta = { .entries = &e, .count = 1, .cap = 1 },
				 .result = HP_RESULT_ERR, .error = code };
	uint8_t err[256];
	struct hp_pc_enc enc;
	int64_t n;

	if (code == HP_ERR_USER) {
		hp_pc_enc_init(&enc, err, sizeof(err));
		hp_pc_put_str(&enc, why, strnlen(why, 200));
		r.value = err;
		r.value_len = enc.len;
	}
	if ((n = hp_msg_encode_response(buf, sizeof(buf), &r)) > 0)
		answer(h, o, buf, (size_t)n);
}

static void
answer_ok(struct hub *h, const struct origin *o, const uint8_t *value, size_t len)
{
	uint8_t stackbuf[256], *buf = stackbuf;
	size_t n;

	if (len + 8 > sizeof(stackbuf) && (buf = malloc(len + 8)) == NULL) {
		answer_error(h, o, HP_ERR_USER, "out of memory");
		return;
	}
	n = encode_answer(buf, len + 8 > sizeof(stackbuf) ? len + 8 : sizeof(stackbuf),
			  HP_RESULT_OK, 0, value, len);
	answer(h, o, buf, n);
	if (buf != stackbuf)
		free(buf);
}

/* -- calls the host makes to a guest ------------------------------------- */

static struct pending *
pend_find(struct peer *p, uint32_t id)
{
	if (p->pend_cap == 0)
		return NULL;
	for (uint32_t i = id & (p->pend_cap - 1);; i = (i + 1) & (p->pend_cap - 1)) {
		if (p->pend[i].id == id)
			return &p->pend[i];
		if (p->pend[i].id == 0)
			return NULL;
	}
}

static int
pend_insert(struct peer *p, uint32_t id, const struct origin *o)
{
	if ((p->pend_count + 1) * 2 > p->pend_cap) {
		struct pending *old = p->pend;
		uint32_t cap = p->pend_cap ? p->pend_cap * 2 : 64;

		if ((p->pend = calloc(cap, sizeof(*p->pend))) == NULL) {
			p->pend = old;
			return -ENOMEM;
		}
		p->pend_cap = cap;
		p->pend_count = 0;
		for (uint32_t i = 0; old != NULL && i < cap / 2; i++)
			if (old[i].id != 0)
				pend_insert(p, old[i].id, &old[i].o);
		free(old);
	}
	for (uint32_t i = id & (p->pend_cap - 1);; i = (i + 1) & (p->pend_cap - 1)) {
		if (p->pend[i].id == 0) {
			p->pend[i].id = id;
			p->pend[i].o = *o;
			p->pend_count++;
			return 0;
		}
	}
}

static void
pend_remove(struct peer *p, struct pending *e)
{
	uint32_t i = (uint32_t)(e - p->pend), mask = p->pend_cap - 1;

	p->pend[i].id = 0;
	p->pend_count--;
	for (uint32_t j = (i + 1) & mask; p->pend[j].id != 0; j = (j + 1) & mask) {
		struct pending moved = p->pend[j];

		p->pend[j].id = 0;
		p->pend_count--;
		pend_insert(p, moved.id, &moved.o);
	}
}

/* Sends a Request to guest p on behalf of o. payload is the whole Request
 * payload (metadata and arguments). r[shm.topology.hub.calls]: the host
 * calls guests as guests call the host; r[shm.topology.hub.communication]:
 * a guest's call to another guest's method is one the host makes. The
 * request id goes to *idp when not NULL. */
static int
call_guest(struct hub *h, struct peer *p, uint64_t method_id,
	   const uint8_t *payload, uint32_t len, const struct origin *o, uint32_t *idp)
{
	uint32_t id;

	/* r[shm.id.request-scope]: ids are ours per guest-host pair */
	do {
		id = p->next_req++;
	} while (id == 0 || pend_find(p, id) != NULL);
	if (pend_insert(p, id, o) != 0)
		return -ENOMEM;
	if (idp != NULL)
		*idp = id;
	p->stats.calls_out++;
	host_send(h, p, HP_MSG_REQUEST, id, method_id, payload, len);
	return 0;
}

/* A guest broke a rule: Goodbye naming it, then kill and recover. */
static void
violation(struct peer *p, const char *rule)
{
	p->stats.violations++;
	supervise_kill(p, DEATH_VIOLATION, rule);
}

/* -- built-in services -------------------------------------------------- */

static void
svc_peers(struct hub *h, const struct origin *o)
{
	char text[255 * 80];
	size_t n = 0;
	uint8_t buf[sizeof(text) + 8];
	struct hp_pc_enc e;

	for (uint32_t i = 0; i < h->conf.params.max_guests && n < sizeof(text) - 80; i++) {
		struct peer *p = &h->peers[i];

		if (p->conf == NULL)
			continue;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%u %s %s\n", p->id,
				      p->conf->name, supervise_state_name(p->state));
	}
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_str(&e, text, n);
	answer_ok(h, o, buf, e.len);
}

static void
svc_register(struct hub *h, struct peer *p, const struct origin *o,
	     const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	const char *name, *sig, *why;
	size_t nlen, slen;
	char nbuf[64], sbuf[HP_SIG_MAX_LEN + 1];

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &name, &nlen);
	hp_pc_get_str(&d, &sig, &slen);
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, "only guests register methods");
		return;
	}
	if (d.err != 0 || nlen >= sizeof(nbuf) || slen >= sizeof(sbuf)) {
		answer_error(h, o, HP_ERR_USER, "name or signature too long");
		return;
	}
	memcpy(nbuf, name, nlen);
	nbuf[nlen] = '\0';
	memcpy(sbuf, sig, slen);
	sbuf[slen] = '\0';
	if (strncmp(nbuf, "hub.", 4) == 0) {
		answer_error(h, o, HP_ERR_USER, "the hub. prefix is the host's");
		return;
	}
	if (method_add(h, nbuf, sbuf, p->id, p->epoch, &why) != 0) {
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	log_info("guest %s: registered %s (%s)", p->conf->name, nbuf, sbuf);
	answer_ok(h, o, NULL, 0);
}

static void
svc_sink(struct hub *h, struct peer *p, const struct origin *o,
	 const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	uint64_t id;
	struct hchan *c;

	hp_pc_dec_init(&d, args, len);
	id = hp_pc_get_u64(&d);
	/* the guest opened it (odd id) and sends on it; we receive */
	if (p == NULL || d.err != 0 || id > UINT32_MAX ||
	    hp_chan_id_check((uint32_t)id, h->seg.params.max_channels, HP_SIDE_GUEST) != 0 ||
	    p->chans[id].open) {
		answer_error(h, o, HP_ERR_USER, "hub.sink needs a channel the guest opened");
		return;
	}
	c = &p->chans[id];
	memset(c, 0, sizeof(*c));
	c->open = 1;
	c->granted = h->seg.params.initial_credit;	/* r[shm.flow.initial] */
	c->item_type = HP_T_BYTES;
	c->checksum = HP_STREAM_HASH_SEED;
	c->o = *o;
	c->o.kind = ORIGIN_SINK;	/* answered on Close */
}

static void
svc_source(struct hub *h, struct peer *p, const struct origin *o,
	   const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	uint64_t bytes, id;
	struct hchan *c;

	hp_pc_dec_init(&d, args, len);
	bytes = hp_pc_get_u64(&d);
	id = hp_pc_get_u64(&d);
	/* the guest opened it (odd id) to receive on: it grants, we send */
	if (p == NULL || d.err != 0 || id > UINT32_MAX ||
	    hp_chan_id_check((uint32_t)id, h->seg.params.max_channels, HP_SIDE_GUEST) != 0 ||
	    p->chans[id].open ||
	    hp_chan_state(&p->view.chans[id]) != HP_CHAN_ACTIVE) {
		answer_error(h, o, HP_ERR_USER, "hub.source needs a channel the guest opened");
		return;
	}
	c = &p->chans[id];
	memset(c, 0, sizeof(*c));
	c->open = c->sending = 1;
	c->to_send = bytes;
	c->checksum = HP_STREAM_HASH_SEED;
	c->o = *o;
	p->sources++;
}

/* A hub.source stream's next item size, or 0 while the guest's credit,
 * from its shared counter, does not allow one; -1 if that counter is corrupt. */
static int64_t
source_next(struct hub *h, struct peer *p, uint32_t id)
{
	struct hchan *c = &p->chans[id];
	uint32_t item = h->seg.params.max_payload_size < SOURCE_ITEM ?
	    h->seg.params.max_payload_size : SOURCE_ITEM;
	uint32_t n = c->to_send < item ? (uint32_t)c->to_send : item;
	/* r[shm.flow.ordering.sender]: acquire; r[shm.flow.wrap-rule] */
	int64_t credit = hp_chan_credit(&p->view.chans[id], c->sent_total);

	if (credit < 0)
		return -1;
	return (uint64_t)credit >= n ? n : 0;
}

/* hub.source streams: as much as the guest's credit, the ring and the
 * host pool allow now; the rest when it grants more (HP_WAIT_CREDIT). */
static int
source_pump(struct hub *h, struct peer *p)
{
	uint8_t out[16];
	struct hp_pc_enc e;
	int sent = 0;

	for (uint32_t id = 1; id < h->seg.params.max_channels && p->sources > 0; id++) {
		struct hchan *c = &p->chans[id];
		struct hp_outbuf ob;
		int64_t n;

		if (!c->open || !c->sending)
			continue;
		while (c->to_send > 0 && p->state == PEER_UP) {
			if ((n = source_next(h, p, id)) < 0) {
				violation(p, "shm.flow.wrap-rule");
				return sent;
			}
			if (n == 0)
				p->stats.credit_waits++;
			if (n == 0 || hp_endpoint_reserve(&p->ep, (uint32_t)n, &ob) != 0)
				break;
			for (uint32_t i = 0; i < n; i++)
				ob.buf[i] = (uint8_t)(c->bytes + i);
			c->checksum = XXH3_64bits_withSeed(ob.buf, (size_t)n, c->checksum);
			if (ob.slot != HP_SLOT_INLINE)
				h->slot_owner[ob.slot] = (uint8_t)p->id;
			hp_endpoint_commit(&p->ep, &ob, HP_MSG_DATA, id, 0, (uint32_t)n,
					   HP_SEND_MORE);
			c->sent_total += (uint32_t)n;
			c->bytes += (uint64_t)n;
			c->to_send -= (uint64_t)n;
			sent++;
		}
		if (c->to_send > 0 || try_send(h, p, HP_MSG_CLOSE, id, 0, NULL, 0) != 0)
			continue;
		c->open = c->sending = 0;
		p->sources--;
		hp_pc_enc_init(&e, out, sizeof(out));
		hp_pc_put_u64(&e, c->checksum);
		answer_ok(h, &c->o, out, e.len);
	}
	return sent;
}

/* Whether a hub.source stream of p could send now. */
static int
source_ready(struct hub *h, struct peer *p)
{
	for (uint32_t id = 1; id < h->seg.params.max_channels && p->sources > 0; id++)
		if (p->chans[id].open && p->chans[id].sending &&
		    (p->chans[id].to_send == 0 || source_next(h, p, id) != 0))
			return 1;
	return 0;
}

/* Runs a host service; p is the calling guest or NULL for a client. */
static void
service(struct hub *h, struct peer *p, const struct method *m,
	const struct origin *o, const uint8_t *args, size_t len)
{
	if (strcmp(m->name, HP_SVC_PING) == 0) {
		answer_ok(h, o, args, len);
	} else if (strcmp(m->name, HP_SVC_LOG) == 0) {
		const char *s;
		size_t n;
		struct hp_pc_dec d;

		hp_pc_dec_init(&d, args, len);
		hp_pc_get_str(&d, &s, &n);
		log_info("guest %s: %.*s", p ? p->conf->name : "(control)",
			 (int)(n > 1000 ? 1000 : n), s);
		answer_ok(h, o, NULL, 0);
	} else if (strcmp(m->name, HP_SVC_PEERS) == 0) {
		svc_peers(h, o);
	} else if (strcmp(m->name, HP_SVC_REGISTER) == 0) {
		svc_register(h, p, o, args, len);
	} else if (strcmp(m->name, HP_SVC_SOURCE) == 0) {
		svc_source(h, p, o, args, len);
	} else {
		svc_sink(h, p, o, args, len);
	}
}

/* -- messages from a guest ---------------------------------------------- */

static void
on_request(struct hub *h, struct peer *p, const struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_request req = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct origin o = { ORIGIN_PEER, p->id, p->epoch, m->desc.id, NULL, 0 };
	struct method *meth = method_by_id(h, m->desc.method_id);
	struct peer *q;
	char why[128];

	p->stats.calls_in++;
	p->inbound++;
	if (meth == NULL) {
		answer_error(h, &o, HP_ERR_UNKNOWN_METHOD, "no such method");
		return;
	}
	if (hp_msg_decode_request(m->payload, m->len, &req) != 0 ||
	    hp_sig_check_args(&meth->sig, req.args, req.args_len) != 0) {
		answer_error(h, &o, HP_ERR_INVALID_PAYLOAD, "arguments do not match the signature");
		return;
	}
	if (meth->owner == 0) {
		service(h, p, meth, &o, req.args, req.args_len);
		return;
	}
	if (!host_method_live(h, meth)) {
		answer_error(h, &o, HP_ERR_USER, method_unavailable(h, meth, why, sizeof(why)));
		return;
	}
	q = peer_of(h, meth->owner);
	for (uint8_t i = 0; i < meth->sig.nargs; i++) {
		if (meth->sig.args[i] == HP_T_CHAN) {
			answer_error(h, &o, HP_ERR_USER,
				     "channel arguments are not routed between guests");
			return;
		}
	}
	if (p->inbound > INBOUND_MAX) {
		answer_error(h, &o, HP_ERR_USER, "too many calls in flight");
		return;
	}
	if (call_guest(h, q, m->desc.method_id, m->payload, m->len, &o, NULL) != 0) {
		answer_error(h, &o, HP_ERR_USER, "out of memory");
		return;
	}
	if (q->bl_count >= BACKLOG_PAUSE)
		p->paused = 1;
}

/* The answer to request req_id came while the client stream it carries,
 * channel chan, is still open: the guest answered without closing it
 * (nothing sent, an error, or simply forgotten). The stream ends with the
 * answer. We receive, so we free the entry (r[shm.flow.channel-id-reuse]);
 * what the guest may still send on it is dropped (on_data, STALE_ENDED). */
static void
stream_over(struct hub *h, struct peer *p, uint32_t req_id, uint32_t chan)
{
	struct hchan *c;

	if (chan >= h->seg.params.max_channels)
		return;
	c = &p->chans[chan];
	/* the call's own stream, not one that took its id since */
	if (!c->open || c->sending || c->o.req_id != req_id ||
	    (c->o.kind != ORIGIN_CLIENT && c->o.kind != ORIGIN_NONE))
		return;
	if (c->o.kind == ORIGIN_CLIENT)
		c->o.ext->chan = 0;
	c->open = 0;
	c->held = c->unreported = 0;
	c->stale = STALE_ENDED;
	hp_chan_free(&p->view.chans[chan]);
}

static void
on_response(struct hub *h, struct peer *p, const struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct pending *e = pend_find(p, m->desc.id);
	struct origin o;

	if (e == NULL) {
		violation(p, "shm.id.request-id");	/* answers nothing we asked */
		return;
	}
	o = e->o;
	pend_remove(p, e);
	if (o.chan != 0)
		stream_over(h, p, m->desc.id, o.chan);
	if (hp_msg_decode_response(m->payload, m->len, &r) != 0) {
		answer_error(h, &o, HP_ERR_INVALID_PAYLOAD, "the guest's answer does not decode");
		violation(p, "shm.payload.encoding");
		return;
	}
	answer(h, &o, m->payload, m->len);
}

static void
on_cancel(struct hub *h, struct peer *p, uint32_t req_id)
{
	/* Find where we routed it and pass the Cancel on (advisory). */
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *q = &h->peers[i];

		for (uint32_t j = 0; j < q->pend_cap; j++) {
			struct pending *e = &q->pend[j];

			if (e->id != 0 && e->o.kind == ORIGIN_PEER && e->o.peer == p->id &&
			    e->o.epoch == p->epoch && e->o.req_id == req_id) {
				host_send(h, q, HP_MSG_CANCEL, e->id, 0, NULL, 0);
				return;
			}
		}
	}
}

static void
chan_end(struct hub *h, struct peer *p, uint32_t id, int reset)
{
	struct hchan *c = &p->chans[id];
	struct origin o = c->o;
	uint8_t buf[16];
	struct hp_pc_enc e;

	if (c->sending) {	/* the receiver gave up on our hub.source */
		c->open = c->sending = 0;
		p->sources--;
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

/* r[shm.flow.ordering.receiver]: what channel id's receiver consumed goes
 * back to the sender in quarters of the window, or all of it at once when
 * nothing more will be consumed soon (a stream being drained, a client
 * that took all it had). */
static void
chan_grant(struct hub *h, struct peer *p, uint32_t id, int all)
{
	struct hchan *c = &p->chans[id];

	if (c->unreported == 0 ||
	    (!all && c->unreported < h->seg.params.initial_credit / 4))
		return;
	hp_chan_grant(&p->view.chans[id], c->unreported);
	c->granted += c->unreported;
	c->unreported = 0;
	hp_endpoint_notify_credit(&p->ep, &p->view.chans[id].granted_total);
}

static void
on_data(struct hub *h, struct peer *p, const struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct hchan *c = &p->chans[id];

	if (!c->open && c->stale != 0) {
		/* a client stream we ended (stream_over): the guest sent this
		 * before it knew, no fault of its. r[shm.flow.reset]: told
		 * once that the channel and its credit word are gone. */
		if (c->stale == STALE_ENDED) {
			c->stale = STALE_RESET;
			host_send(h, p, HP_MSG_RESET, id, 0, NULL, 0);
		}
		return;
	}
	if (!c->open || c->sending) {
		/* r[shm.id.channel-parity]: an even id is one we allocate */
		violation(p, id % 2 == 0 ? "shm.id.channel-parity" :
			  "shm.flow.channel-table-indexing");
		return;
	}
	/* r[shm.flow.remaining-credit]: the sender must not overrun what we
	 * granted (our own count, not the guest-writable shared word). */
	if (!hp_credit_allows(c->granted, c->received, m->len)) {
		violation(p, "shm.flow.remaining-credit");
		return;
	}
	c->received += m->len;
	c->bytes += m->len;
	if (c->o.kind == ORIGIN_CLIENT) {
		/* consumed once the client has taken it (host_call_consumed):
		 * a client that reads slowly holds the guest back, not
		 * hubd's memory */
		c->held += m->len;
		c->o.ext->on_item(c->o.ext, c->item_type, m->payload, m->len);
		return;
	}
	if (c->o.kind == ORIGIN_SINK)
		c->checksum = XXH3_64bits_withSeed(m->payload, m->len, c->checksum);
	/* hub.sink's consumed now; a stream whose client is gone drains
	 * until the guest ends it */
	c->unreported += m->len;
	chan_grant(h, p, id, c->o.kind == ORIGIN_NONE);
}

static void
dispatch(struct hub *h, struct peer *p, const struct hp_msg_in *m)
{
	switch (m->desc.msg_type) {
	case HP_MSG_REQUEST:
		on_request(h, p, m);
		break;
	case HP_MSG_RESPONSE:
		on_response(h, p, m);
		break;
	case HP_MSG_CANCEL:
		on_cancel(h, p, m->desc.id);
		break;
	case HP_MSG_DATA:
		on_data(h, p, m);
		break;
	case HP_MSG_CLOSE:
	case HP_MSG_RESET:
		if (!p->chans[m->desc.id].open && p->chans[m->desc.id].stale != 0) {
			/* its end of a client stream we ended: both sides
			 * have now let go (r[shm.flow.channel-id-reuse]) */
			p->chans[m->desc.id].stale = 0;
			break;
		}
		if (!p->chans[m->desc.id].open) {
			violation(p, "shm.flow.channel-table-indexing");
			break;
		}
		chan_end(h, p, m->desc.id, m->desc.msg_type == HP_MSG_RESET);
		break;
	case HP_MSG_GOODBYE: {
		const char *reason = "";
		size_t n = 0;

		hp_msg_decode_goodbye(m->payload, m->len, &reason, &n);
		log_info("guest %s: goodbye: %.*s", p->conf->name,
			 (int)(n > 200 ? 200 : n), reason);
		break;
	}
	}
}

/* Serves one guest: up to SERVE_BATCH messages. Returns how many. */
static int
serve_peer(struct hub *h, struct peer *p)
{
	struct hp_msg_in m;
	const char *rule;
	int n, rc;

	flush_backlog(h, p);
	for (n = 0; n < SERVE_BATCH && !p->paused && p->state == PEER_UP; n++) {
		rc = hp_endpoint_recv(&p->ep, &m, &rule);
		if (rc == -EAGAIN)
			break;
		if (rc != 0) {
			violation(p, rule);
			break;
		}
		dispatch(h, p, &m);
		hp_endpoint_release(&p->ep, &m);
	}
	if (p->state == PEER_UP && p->sources > 0)
		n += source_pump(h, p);
	if (p->state == PEER_UP) {
		hp_endpoint_notify_consumed(&p->ep);
		if (hp_endpoint_flush(&p->ep) == -EPROTO)
			violation(p, "shm.ring.capacity");
	}
	return n;
}

int
host_poll(struct hub *h)
{
	uint32_t n = h->conf.params.max_guests;
	int work = 0;

	/* start one further each round: nobody is always served first */
	h->poll_start = (h->poll_start + 1) % n;
	for (uint32_t k = 0; k < n; k++) {
		struct peer *p = &h->peers[(h->poll_start + k) % n];

		if (p->state == PEER_UP)
			work += serve_peer(h, p);
	}
	return work;
}

/* Before the loop blocks: announce sleep to every guest, then look once
 * more (endpoint.h); returns nonzero if there is work after all. */
int
host_sleep_prepare(struct hub *h)
{
	int work = 0;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];

		if (p->state != PEER_UP)
			continue;
		hp_endpoint_announce(&p->ep, HP_WAIT_RING_DATA | HP_WAIT_RING_SPACE |
				     HP_WAIT_SLOT | HP_WAIT_CREDIT);
		if ((!p->paused && hp_endpoint_rx_ready(&p->ep)) || p->bl_head != NULL ||
		    source_ready(h, p))
			work = 1;
	}
	return work;
}

void
host_wake(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (h->peers[i].state == PEER_UP)
			hp_endpoint_cancel(&h->peers[i].ep);
}

/* Periodic checks of attached guests: heartbeat (r[shm.crash.heartbeat]),
 * epoch (r[shm.crash.epoch]) and the state word (r[shm.host.poll-peers]). */
void
host_check(struct hub *h, uint64_t now)
{
	uint64_t interval = h->seg.params.heartbeat_interval;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		uint64_t beat;
		uint32_t state;

		if (p->state == PEER_STARTING)	/* attached without ringing? */
			supervise_check_attach(h, p);
		if (p->state != PEER_UP)
			continue;
		state = hp_load_acquire_u32(&p->view.entry->state);
		if (state == HP_PEER_GOODBYE)
			continue;	/* detaching: its exit follows */
		if (state != HP_PEER_ATTACHED) {
			violation(p, "shm.segment.peer-state");
			continue;
		}
		if (hp_load_relaxed_u32(&p->view.entry->epoch) != p->epoch) {
			violation(p, "shm.crash.epoch");
			continue;
		}
		/* r[shm.crash.heartbeat-clock]: its CLOCK_MONOTONIC against ours */
		beat = hp_load_relaxed_u64(&p->view.entry->last_heartbeat);
		if (interval != 0 && now > beat && now - beat > 2 * interval)
			supervise_kill(p, DEATH_HUNG, "heartbeat stale (shm.crash.heartbeat)");
	}
}

/* The Goodbye that ends a guest (r[shm.goodbye.payload]): the rule it broke
 * or why it is ended. Through try_send, so that a slot it takes is noted
 * as the guest's and comes back at recovery. */
void
host_goodbye(struct hub *h, struct peer *p, const char *reason)
{
	uint8_t buf[128];
	int64_t n;

	if (p->state != PEER_UP || (n = hp_msg_encode_goodbye(buf, sizeof(buf), reason)) < 0)
		return;
	try_send(h, p, HP_MSG_GOODBYE, 0, 0, buf, (uint32_t)n);
	hp_endpoint_flush(&p->ep);
}

/* -- attach and recovery ------------------------------------------------- */

int
host_attach(struct hub *h, struct peer *p)
{
	uint32_t features;

	hp_peer_view_host(&h->seg, p->id, &p->view);
	/* acquire: pairs with the guest's release store of guest_features,
	 * made before its CAS to Attached */
	features = hp_load_acquire_u32(&p->view.entry->guest_features);
	/* r[shm.ring.capacity]: it may have put its indices out of range */
	if (hp_endpoint_init_host(&p->ep, &h->seg, &p->view, p->bell, features) != 0)
		return -EPROTO;
	p->bl_head = NULL;
	p->bl_tail = &p->bl_head;
	p->bl_count = 0;
	p->paused = 0;
	p->inbound = 0;
	p->next_req = 1;
	p->chan_cursor = 0;
	p->sources = 0;
	p->nmethods = 0;	/* this instance's registrations */
	memset(p->chans, 0, h->seg.params.max_channels * sizeof(*p->chans));
	return 0;
}

/* Fails every call that involves p (r[shm.crash.recovery] 2); its methods
 * stay, answering "restarting", until host_forget. The segment side is
 * reset by the supervisor. */
void
host_detach(struct hub *h, struct peer *p)
{
	char why[96];
	struct qmsg *q;

	snprintf(why, sizeof(why), "guest %s died", p->conf->name);
	p->stats.bytes_in += p->ep.stats.bytes_received;
	p->stats.bytes_out += p->ep.stats.bytes_sent;
	p->stats.ring_full += p->ep.stats.ring_full;
	p->stats.slot_exhausted += p->ep.stats.slot_exhausted;
	p->stats.wakes += p->ep.stats.wakes;
	memset(&p->ep.stats, 0, sizeof(p->ep.stats));
	/* calls to p: their callers get an error */
	for (uint32_t j = 0; j < p->pend_cap; j++) {
		if (p->pend[j].id == 0)
			continue;
		struct origin o = p->pend[j].o;

		p->pend[j].id = 0;
		answer_error(h, &o, HP_ERR_CANCELLED, why);
	}
	p->pend_count = 0;
	/* calls by p routed elsewhere: their answers have nobody to go to */
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *q2 = &h->peers[i];

		for (uint32_t j = 0; j < q2->pend_cap; j++)
			if (q2->pend[j].id != 0 && q2->pend[j].o.kind == ORIGIN_PEER &&
			    q2->pend[j].o.peer == p->id)
				q2->pend[j].o.kind = ORIGIN_NONE;
	}
	/* streams from p to clients end, streams to p stop */
	for (uint32_t id = 0; id < h->seg.params.max_channels; id++)
		p->chans[id].open = p->chans[id].sending = 0;
	p->sources = 0;
	while ((q = p->bl_head) != NULL) {
		p->bl_head = q->next;
		free(q);
	}
	p->bl_tail = &p->bl_head;
	p->bl_count = 0;
	/* host pool slots p held and never freed (r[shm.crash.recovery] 4) */
	for (uint32_t s = 0; s < h->host_pool.nslots; s++) {
		if (h->slot_owner[s] != p->id)
			continue;
		h->slot_owner[s] = 0;
		hp_slot_free(&h->host_pool, s);	/* -EALREADY if p had freed it */
	}
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		h->peers[i].paused = 0;
}

/* -- calls from control clients ----------------------------------------- */

int
host_call_text(struct hub *h, struct ext_call *c, const char *method,
	       const struct ctl_arg *args, int nargs, const char **why)
{
	const struct method *m = host_method_find(h, method);
	struct origin o = { ORIGIN_CLIENT, 0, 0, 0, c, 0 };
	struct hp_pc_enc e;
	struct peer *p = NULL;
	uint8_t *buf;
	size_t cap = h->seg.params.max_payload_size;
	uint32_t req_id;
	int rc = 0;

	if (m == NULL) {
		*why = "no such method";
		return -ENOENT;
	}
	/* the caller gives every argument but channels, which we open */
	int want = 0, next = 0;

	for (uint8_t i = 0; i < m->sig.nargs; i++)
		want += m->sig.args[i] != HP_T_CHAN;
	if (nargs != want) {
		*why = "wrong number of arguments for the method's signature";
		return -EINVAL;
	}
	if (!host_method_live(h, m)) {
		*why = method_unavailable(h, m, c->why, sizeof(c->why));
		return -EHOSTDOWN;
	}
	p = peer_of(h, m->owner);
	if ((buf = malloc(cap)) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	c->chan = 0;
	c->ret_type = m->sig.ret;
	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_seq_len(&e, 0);		/* no metadata */
	for (uint8_t i = 0; i < m->sig.nargs; i++) {
		if (m->sig.args[i] != HP_T_CHAN) {
			if (hp_sig_encode_text(&e, m->sig.args[i], args[next].s,
					       args[next].len) != 0) {
				*why = "an argument is not of its signature's type";
				rc = -EINVAL;
				goto out;
			}
			next++;
			continue;
		}
		/* a chan<T>: we receive it, the client sees the items */
		int64_t id = p == NULL || c->chan != 0 ? -EINVAL :
		    hp_chan_open(p->view.chans, h->seg.params.max_channels, HP_SIDE_HOST,
				 h->seg.params.initial_credit, &p->chan_cursor);

		if (id < 0) {
			*why = "no channel available";
			rc = -EAGAIN;
			goto out;
		}
		c->chan = (uint32_t)id;
		o.chan = (uint32_t)id;
		p->chans[id] = (struct hchan){ .open = 1, .item_type = m->sig.chan_item[i],
					       .granted = h->seg.params.initial_credit, .o = o };
		hp_pc_put_u64(&e, (uint64_t)id);
	}
	if (e.err != 0) {
		*why = "arguments larger than max_payload_size";
		rc = -EMSGSIZE;
		goto out;
	}
	if (p == NULL) {
		c->peer = 0;
		service(h, NULL, m, &o, buf + 1, e.len - 1);
	} else {
		c->peer = p->id;
		if ((rc = call_guest(h, p, m->id, buf, (uint32_t)e.len, &o, &req_id)) != 0)
			*why = "out of memory";
		else if (c->chan != 0)
			p->chans[c->chan].o.req_id = req_id;	/* for stream_over */
	}
out:
	if (rc != 0 && c->chan != 0) {
		p->chans[c->chan].open = 0;
		hp_chan_free(&p->view.chans[c->chan]);
		c->chan = 0;
	}
	free(buf);
	return rc;
}

void
host_call_consumed(struct hub *h, struct ext_call *x, uint32_t bytes)
{
	struct peer *p = peer_of(h, x->peer);
	struct hchan *c;

	if (p == NULL || p->state != PEER_UP || x->chan == 0 ||
	    x->chan >= h->seg.params.max_channels)
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
	chan_grant(h, p, x->chan, c->held == 0);
}

/* The client went away (closed, or dropped for not reading): its answer
 * has nobody to go to, the guest is told with Cancel (advisory), and its
 * stream is drained: items dropped, credit granted back at once, so that
 * a guest in the middle of sending finishes and ends the stream itself
 * (chan_end), or answers (stream_over). The entry stays Active until then:
 * its credit word stays valid for a sender that has not seen the Cancel. */
void
host_call_abandon(struct hub *h, struct ext_call *x)
{
	struct peer *p = peer_of(h, x->peer);

	if (p == NULL)
		return;
	for (uint32_t j = 0; j < p->pend_cap; j++) {
		struct pending *e = &p->pend[j];

		if (e->id == 0 || e->o.kind != ORIGIN_CLIENT || e->o.ext != x)
			continue;
		e->o.kind = ORIGIN_NONE;
		e->o.ext = NULL;
		host_send(h, p, HP_MSG_CANCEL, e->id, 0, NULL, 0);
	}
	for (uint32_t id = 1; p->chans != NULL && id < h->seg.params.max_channels; id++) {
		struct hchan *c = &p->chans[id];

		if (!c->open || c->sending || c->o.kind != ORIGIN_CLIENT || c->o.ext != x)
			continue;
		c->o.kind = ORIGIN_NONE;
		c->o.ext = NULL;
		c->unreported += c->held;
		c->held = 0;
		if (p->state == PEER_UP)
			chan_grant(h, p, id, 1);
	}
	x->chan = 0;
}
