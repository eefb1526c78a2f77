/* libguest: attach from the spawn ticket, serve the rings, call out,
 * stream over channels, keep the heartbeat (guest.h). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestlib/guest.h"
#include "proto/channel.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/segment.h"
#include "proto/services.h"
#include "proto/sig.h"
#include "proto/ticket.h"

#define EXPORT		__attribute__((visibility("default")))
#define ATTACH_RETRY_MS	1000	/* a segment still being created */
#define BATCH		64	/* messages served before flushing */
#define TICK_MAX	64	/* messages per clock read at most (heartbeat) */
#define GOODBYE_MAX	255	/* bytes of the hub's Goodbye reason kept */
#define UNDECODABLE	"(undecodable goodbye)"

struct method {
	uint64_t	id;
	guest_handler	fn;
	void		*ctx;
	struct hp_sig	sig;		/* for its chan<T> arguments */
	uint8_t		chans;		/* whether it has any */
};

struct out_call {
	uint32_t	id;		/* 0: free */
	guest_result_fn	fn;
	void		*ctx;
};

struct guest_call {
	struct guest	*g;
	uint32_t	req_id;
	int		cancelled;
	struct guest_call *next;	/* calls being handled */
};

struct rx_chan {
	guest_item_fn	on_item;
	guest_end_fn	on_end;
	void		*ctx;
	uint32_t	unreported;	/* consumed bytes not yet granted back */
	uint8_t		open;
};

struct tx_chan {
	uint32_t	sent_total;	/* r[shm.flow.remaining-credit]: local */
	uint8_t		open;		/* we send on it (opened it, or sent) */
	uint8_t		ended;		/* Close or Reset went either way: the
					 * id is not ours until given again */
};

struct guest {
	struct hp_segment	seg;
	struct hp_peer_view	view;
	struct hp_endpoint	ep;
	uint32_t		peer_id;
	int			doorbell;
	uint64_t		hb_interval;
	uint64_t		next_hb;
	struct method		*methods;
	uint32_t		nmethods;
	struct out_call		*out;		/* open addressing by id */
	uint32_t		out_cap;	/* power of two */
	uint32_t		out_count;
	uint32_t		next_req;
	struct guest_call	*active;
	struct rx_chan		*rx;		/* by channel id */
	struct tx_chan		*tx;
	uint32_t		chan_cursor;
	int			stop;
	int			dead;		/* 0, or why the loop must end */
	uint32_t		ticks;		/* messages until the next clock read */
	uint32_t		tick_every;	/* messages per clock read, 1..TICK_MAX */
	uint64_t		last_clock;	/* the last clock read */
	int			ended_by_hub;	/* a Goodbye came: goodbye is set */
	char			goodbye[GOODBYE_MAX + 1];
	struct guest_stats	stats;
};

/* A caller's timeout, made a point in time at its first wait: a send or
 * call that never has to wait reads no clock. */
struct timeout {
	int		ms;		/* -1: forever */
	uint64_t	at;		/* 0 until the first wait */
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
heartbeat(struct guest *g, uint64_t now)
{
	if (g->hb_interval == 0 || now < g->next_hb)
		return;
	/* r[shm.crash.heartbeat] r[shm.crash.heartbeat-clock]: our
	 * CLOCK_MONOTONIC, at least once per interval; relaxed: the host
	 * only compares it with its own clock. */
	hp_store_relaxed_u64(&g->view.entry->last_heartbeat, now);
	g->next_hb = now + g->hb_interval / 2;
}

/* Reads the clock and beats if a beat is due. Every clock read goes
 * through here, so the count of messages to the next one starts over. */
static uint64_t
clock_beat(struct guest *g)
{
	uint64_t now = now_ns();

	g->last_clock = now;
	g->ticks = g->tick_every;
	heartbeat(g, now);
	return now;
}

/* The clock read that keeps the heartbeat going while messages flow and
 * nothing waits: once per tick_every messages sent or received. A clock
 * read costs a good part of a round trip, so a fast stream reads it every
 * TICK_MAX messages; tick_every halves while the reads come further apart
 * than an eighth of the interval (slow handlers, big copies) and doubles
 * back while they come close together. */
static void
tick_slow(struct guest *g)
{
	uint64_t prev = g->last_clock, dt;

	if (g->hb_interval == 0) {
		g->ticks = TICK_MAX;
		return;
	}
	dt = clock_beat(g) - prev;
	if (dt > g->hb_interval / 8) {
		while (dt > g->hb_interval / 8 && g->tick_every > 1) {
			g->tick_every /= 2;
			dt /= 2;
		}
	} else if (dt < g->hb_interval / 64 && g->tick_every < TICK_MAX) {
		g->tick_every *= 2;
	}
	g->ticks = g->tick_every;
}

/* One message sent or received: no clock read on the fast path. */
static inline void
tick(struct guest *g)
{
	if (--g->ticks == 0)
		tick_slow(g);
}

/* Milliseconds from now to at, rounded up. */
static int
ms_until(uint64_t at, uint64_t now)
{
	uint64_t ms;

	if (at == UINT64_MAX)
		return -1;
	if (at <= now)
		return 0;
	ms = (at - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* hp_endpoint_wait in rounds that end at the next heartbeat due time,
 * beating between them (r[shm.crash.heartbeat]): a guest waiting on the
 * hub is alive, whatever it waits for and however long. 1 ready, 0 when
 * t ran out, or ready()'s or the wait's error. */
static int
wait_beating(struct guest *g, uint32_t waits, int (*ready)(void *), void *arg,
	     struct timeout *t)
{
	uint64_t now = clock_beat(g), until;
	int rc;

	if (t->at == 0)
		t->at = t->ms < 0 ? UINT64_MAX : now + (uint64_t)t->ms * 1000000u;
	for (;;) {
		until = t->at;
		if (g->hb_interval != 0 && g->next_hb < until)
			until = g->next_hb;
		rc = hp_endpoint_wait(&g->ep, waits, ready, arg, ms_until(until, now));
		if (rc != 0)
			return rc;
		if ((now = clock_beat(g)) >= t->at)
			return 0;
	}
}

EXPORT int
guest_attach(int argc, char *const argv[], struct guest **gp, const char **why)
{
	struct hp_ticket t;
	struct guest *g;
	uint32_t state = HP_PEER_RESERVED;
	const char *dummy;
	int rc, waited = 0;

	if (why == NULL)
		why = &dummy;
	*gp = NULL;
	/* r[shm.spawn.guest-init] 1: the ticket */
	if ((rc = hp_ticket_parse(argc, argv, &t, why)) != 0)
		return rc;
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	g->seg.fd = -1;
	g->doorbell = t.doorbell_fd;
	g->peer_id = t.peer_id;
	/* 2-3: map and validate; a hub still creating it has no magic yet */
	while ((rc = hp_segment_attach(&g->seg, t.hub_path, 0, why)) == -EAGAIN &&
	       waited < ATTACH_RETRY_MS) {
		usleep(10000);
		waited += 10;
	}
	if (rc != 0)
		goto fail;
	/* 4: our entry, through its own offsets (they are authoritative) */
	if ((rc = hp_peer_view_guest(&g->seg, t.peer_id, &g->view, why)) != 0)
		goto fail_unmap;
	if ((rc = hp_endpoint_init_guest(&g->ep, &g->seg, &g->view, g->doorbell)) != 0) {
		*why = "the host's rings are corrupt";
		goto fail_unmap;
	}
	/* 5-6: Reserved -> Attached, or somebody else's entry
	 * (r[shm.guest.attach-failure]: then we do not attach at all) */
	if (!hp_cas_u32(&g->view.entry->state, &state, HP_PEER_ATTACHED)) {
		*why = "the peer entry is not reserved for us (started by hand?)";
		rc = -EBUSY;
		goto fail_unmap;
	}
	/* r[shm.crash.epoch] r[shm.guest.attach]: a new instance */
	hp_fetch_add_u32(&g->view.entry->epoch, 1, memory_order_release);
	g->hb_interval = g->seg.params.heartbeat_interval;
	g->tick_every = TICK_MAX;
	clock_beat(g);
	g->out_cap = 64;
	g->next_req = 1;
	g->chan_cursor = 0;
	if ((g->out = calloc(g->out_cap, sizeof(*g->out))) == NULL ||
	    (g->rx = calloc(g->seg.params.max_channels, sizeof(*g->rx))) == NULL ||
	    (g->tx = calloc(g->seg.params.max_channels, sizeof(*g->tx))) == NULL) {
		*why = "out of memory";
		rc = -ENOMEM;
		guest_detach(g);
		return rc;
	}
	/* 7: tell the host we are here (r[shm.doorbell.signal]) */
	hp_doorbell_signal(g->doorbell);
	*gp = g;
	return 0;

fail_unmap:
	hp_segment_close(&g->seg);
fail:
	free(g);
	return rc;
}

EXPORT unsigned
guest_peer_id(const struct guest *g)
{
	return g->peer_id;
}

EXPORT int
guest_fd(const struct guest *g)
{
	return g->doorbell;
}

EXPORT void
guest_get_stats(const struct guest *g, struct guest_stats *s)
{
	*s = g->stats;
	s->wakes = g->ep.stats.wakes;
	s->sleeps = g->ep.stats.sleeps;
}

/* -- sending ----------------------------------------------------------- */

static int
tx_ready(void *arg)
{
	struct guest *g = arg;

	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return -ESHUTDOWN;
	return hp_endpoint_tx_ready(&g->ep);
}

/* Waits until a send of any size can be attempted again, up to t (NULL:
 * as long as it takes). */
static int
wait_tx(struct guest *g, struct timeout *t)
{
	struct timeout forever = { -1, 0 };
	int rc;

	g->stats.ring_waits++;
	if (hp_endpoint_flush(&g->ep) == -EPROTO)
		return -EPROTO;
	rc = wait_beating(g, HP_WAIT_RING_SPACE | HP_WAIT_SLOT, tx_ready, g,
			  t != NULL ? t : &forever);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc == -ESHUTDOWN || rc == -EPIPE)
		g->dead = rc;
	return rc < 0 ? rc : 0;
}

/* Sends head (a prefix such as a response envelope) + body as one message,
 * waiting for room up to t (NULL: as long as it takes). */
static int
send_msg(struct guest *g, uint8_t type, uint32_t id, uint64_t method,
	 const void *head, size_t hlen, const void *body, size_t blen, int flags,
	 struct timeout *t)
{
	struct hp_outbuf ob;
	size_t len = hlen + blen;
	int rc;

	if (g->dead)
		return g->dead;
	if (len > g->seg.params.max_payload_size)
		return -EMSGSIZE;
	while ((rc = hp_endpoint_reserve(&g->ep, (uint32_t)len, &ob)) == -EAGAIN)
		if ((rc = wait_tx(g, t)) != 0)
			return rc;
	if (rc != 0)
		return rc;
	if (hlen > 0)
		memcpy(ob.buf, head, hlen);
	if (blen > 0)
		memcpy(ob.buf + hlen, body, blen);
	/* a handler may send for long without returning to the loop */
	tick(g);
	return hp_endpoint_commit(&g->ep, &ob, type, id, method, (uint32_t)len, flags);
}

/* -- calls out ------------------------------------------------------- */

static struct out_call *
out_find(struct guest *g, uint32_t id)
{
	for (uint32_t i = id & (g->out_cap - 1);; i = (i + 1) & (g->out_cap - 1)) {
		if (g->out[i].id == id)
			return &g->out[i];
		if (g->out[i].id == 0)
			return NULL;
	}
}

static int
out_grow(struct guest *g)
{
	struct out_call *old = g->out;
	uint32_t cap = g->out_cap;

	if ((g->out = calloc(cap * 2, sizeof(*g->out))) == NULL) {
		g->out = old;
		return -ENOMEM;
	}
	g->out_cap = cap * 2;
	for (uint32_t i = 0; i < cap; i++) {
		if (old[i].id == 0)
			continue;
		uint32_t j = old[i].id & (g->out_cap - 1);

		while (g->out[j].id != 0)
			j = (j + 1) & (g->out_cap - 1);
		g->out[j] = old[i];
	}
	free(old);
	return 0;
}

/* Removes an entry, re-inserting the rest of its cluster (linear probing). */
static void
out_remove(struct guest *g, struct out_call *c)
{
	uint32_t i = (uint32_t)(c - g->out), mask = g->out_cap - 1;

	g->out[i].id = 0;
	g->out_count--;
	for (uint32_t j = (i + 1) & mask; g->out[j].id != 0; j = (j + 1) & mask) {
		struct out_call moved = g->out[j];
		uint32_t k = moved.id & mask;

		g->out[j].id = 0;
		while (g->out[k].id != 0)
			k = (k + 1) & mask;
		g->out[k] = moved;
	}
}

/* guest_call_async, waiting for room to send up to t. */
static int
call_start(struct guest *g, const char *method, const void *args, size_t len,
	   guest_result_fn fn, void *ctx, uint32_t *call_id, struct timeout *t)
{
	static const uint8_t no_meta[1] = { 0 };	/* empty metadata Vec */
	struct out_call *c;
	uint32_t id;
	int rc;

	if (g->dead)
		return g->dead;
	if ((g->out_count + 1) * 2 > g->out_cap && (rc = out_grow(g)) != 0)
		return rc;
	/* r[shm.id.request-id]: u32, never 0, never one still in flight */
	do {
		id = g->next_req++;
	} while (id == 0 || out_find(g, id) != NULL);
	rc = send_msg(g, HP_MSG_REQUEST, id, hp_method_id(method, strlen(method)),
		      no_meta, sizeof(no_meta), args, len, 0, t);
	if (rc != 0)
		return rc;
	for (uint32_t i = id & (g->out_cap - 1);; i = (i + 1) & (g->out_cap - 1)) {
		if (g->out[i].id == 0) {
			c = &g->out[i];
			break;
		}
	}
	c->id = id;
	c->fn = fn;
	c->ctx = ctx;
	g->out_count++;
	g->stats.calls_out++;
	if (call_id != NULL)
		*call_id = id;
	return 0;
}

EXPORT int
guest_call_async(struct guest *g, const char *method, const void *args,
		 size_t len, guest_result_fn fn, void *ctx, uint32_t *call_id)
{
	return call_start(g, method, args, len, fn, ctx, call_id, NULL);
}

EXPORT int
guest_cancel(struct guest *g, uint32_t call_id)
{
	if (out_find(g, call_id) == NULL)
		return -ENOENT;
	return send_msg(g, HP_MSG_CANCEL, call_id, 0, NULL, 0, NULL, 0, 0, NULL);
}

static int
status_of(const struct hp_response *r)
{
	if (r->result == HP_RESULT_OK)
		return 0;
	switch (r->error) {
	case HP_ERR_USER: return -EREMOTEIO;
	case HP_ERR_UNKNOWN_METHOD: return -ENOSYS;
	case HP_ERR_INVALID_PAYLOAD: return -EBADMSG;
	default: return -ECANCELED;
	}
}

struct sync_call {
	int		done;
	int		status;
	uint8_t		*buf;
	size_t		cap;
	size_t		*len;
};

static void
sync_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct sync_call *s = ctx;

	s->done = 1;
	s->status = status;
	if (s->len != NULL)
		*s->len = len;
	if (status != 0 && status != -EREMOTEIO)
		return;
	if (len > s->cap) {
		len = s->cap;	/* an error string is cut, a result refused */
		if (status == 0)
			s->status = -EMSGSIZE;
	}
	if (len > 0)
		memcpy(s->buf, result, len);
}

static int serve(struct guest *g, int *did);
static int wait_rx(struct guest *g, struct timeout *t);

EXPORT int
guest_call(struct guest *g, const char *method, const void *args, size_t len,
	   void *result, size_t cap, size_t *result_len, int timeout_ms)
{
	struct sync_call s = { .buf = result, .cap = cap, .len = result_len };
	/* one timeout for sending and waiting; the clock from the first
	 * wait on: a quick answer needs none */
	struct timeout t = { timeout_ms, 0 };
	uint32_t id;
	int rc, did;

	if ((rc = call_start(g, method, args, len, sync_done, &s, &id, &t)) != 0)
		return rc;
	while (!s.done) {
		if ((rc = serve(g, &did)) < 0)
			break;
		if (s.done || did)
			continue;
		if ((rc = wait_rx(g, &t)) <= 0) {
			if (rc == 0)
				rc = -ETIMEDOUT;
			break;
		}
	}
	if (s.done)
		return s.status;
	/* Gave up: the answer, if it ever comes, is dropped. */
	struct out_call *c = out_find(g, id);

	if (c != NULL) {
		if (rc == -ETIMEDOUT)
			guest_cancel(g, id);
		out_remove(g, c);
	}
	return rc;
}

/* -- calls in ------------------------------------------------------------ */

static int
respond(struct guest_call *c, const struct hp_response *r)
{
	struct guest *g = c->g;
	uint8_t head[16];
	struct hp_response env = *r;
	int64_t n;
	int rc;

	/* The envelope (metadata, result tag, error tag) goes first, the
	 * value bytes follow unchanged: encode the envelope alone. */
	env.value = NULL;
	env.value_len = 0;
	if ((n = hp_msg_encode_response(head, sizeof(head), &env)) < 0)
		rc = (int)n;
	else
		rc = send_msg(g, HP_MSG_RESPONSE, c->req_id, 0, head, (size_t)n,
			      r->value, r->value_len, 0, NULL);
	if (rc == -EMSGSIZE) {
		/* The caller must get an answer: a short error instead. */
		static const char msg[] = "result over max_payload_size";
		uint8_t err[64];
		struct hp_pc_enc e;
		struct hp_response tb = { .result = HP_RESULT_ERR, .error = HP_ERR_USER };

		hp_pc_enc_init(&e, err, sizeof(err));
		hp_pc_put_str(&e, msg, sizeof(msg) - 1);
		/* envelope alone, the error string follows it */
		if ((n = hp_msg_encode_response(head, sizeof(head), &tb)) > 0)
			send_msg(g, HP_MSG_RESPONSE, c->req_id, 0, head, (size_t)n,
				 err, e.len, 0, NULL);
	}
	for (struct guest_call **pp = &g->active; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	free(c);
	return rc;
}

EXPORT int
guest_reply(struct guest_call *c, const void *result, size_t len)
{
	struct hp_response r = { .result = HP_RESULT_OK, .value = result,
				 .value_len = len };

	return respond(c, &r);
}

EXPORT int
guest_reply_error(struct guest_call *c, const char *message)
{
	uint8_t buf[256];
	struct hp_pc_enc e;
	struct hp_response r = { .result = HP_RESULT_ERR, .error = HP_ERR_USER };
	size_t n = strnlen(message, 200);

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_str(&e, message, n);
	r.value = buf;
	r.value_len = e.len;
	return respond(c, &r);
}

EXPORT int
guest_reply_cancelled(struct guest_call *c)
{
	struct hp_response r = { .result = HP_RESULT_ERR, .error = HP_ERR_CANCELLED };

	return respond(c, &r);
}

EXPORT int
guest_call_cancelled(const struct guest_call *c)
{
	return c->cancelled;
}

EXPORT struct guest *
guest_call_guest(const struct guest_call *c)
{
	return c->g;
}

static int
reply_error_code(struct guest *g, uint32_t req_id, uint32_t code)
{
	struct guest_call *c = calloc(1, sizeof(*c));
	struct hp_response r = { .result = HP_RESULT_ERR, .error = code };

	if (c == NULL)
		return -ENOMEM;
	c->g = g;
	c->req_id = req_id;
	return respond(c, &r);
}

/* hub.register's refusal, by the shared error strings (services.h). */
static int
register_error(const uint8_t *res, size_t len)
{
	struct hp_pc_dec d;
	const char *why;
	size_t n;

	hp_pc_dec_init(&d, res, len);
	if (hp_pc_get_str(&d, &why, &n) != 0)
		return -EREMOTEIO;
	if (n == strlen(HP_SVC_REG_TAKEN) && memcmp(why, HP_SVC_REG_TAKEN, n) == 0)
		return -EEXIST;
	if (n == strlen(HP_SVC_REG_TOO_MANY) && memcmp(why, HP_SVC_REG_TOO_MANY, n) == 0)
		return -ENOSPC;
	return -EREMOTEIO;
}

EXPORT int
guest_register(struct guest *g, const char *name, const char *signature,
	       guest_handler fn, void *ctx)
{
	uint8_t args[512], res[128];
	struct hp_pc_enc e;
	struct hp_sig sig;
	struct method *m;
	const char *why;
	size_t n, rlen = 0;
	uint64_t id;
	int rc;

	/* what the host would refuse anyway, without asking it */
	if (name == NULL || fn == NULL || (n = strlen(name)) == 0)
		return -EINVAL;
	if (n > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;
	if (hp_sig_parse(signature, &sig, &why) != 0)
		return -EINVAL;
	id = hp_method_id(name, n);
	for (uint32_t i = 0; i < g->nmethods; i++)
		if (g->methods[i].id == id)
			return -EEXIST;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, name, n);
	hp_pc_put_str(&e, signature, strlen(signature));
	if (e.err != 0)
		return -ENAMETOOLONG;
	/* Known locally first: a call may arrive right after the host agrees. */
	if ((m = realloc(g->methods, (g->nmethods + 1) * sizeof(*m))) == NULL)
		return -ENOMEM;
	g->methods = m;
	m = &g->methods[g->nmethods++];
	*m = (struct method){ .id = id, .fn = fn, .ctx = ctx, .sig = sig };
	for (uint8_t i = 0; i < sig.nargs; i++)
		if (sig.args[i] == HP_T_CHAN)
			m->chans = 1;
	rc = guest_call(g, HP_SVC_REGISTER, args, e.len, res, sizeof(res), &rlen, 10000);
	if (rc != 0) {
		/* a handler run meanwhile may have registered more: find ours */
		for (uint32_t i = 0; i < g->nmethods; i++) {
			if (g->methods[i].id == id) {
				g->methods[i] = g->methods[--g->nmethods];
				break;
			}
		}
		if (rc == -EREMOTEIO)
			rc = register_error(res, rlen < sizeof(res) ? rlen : sizeof(res));
		return rc;
	}
	return 0;
}

/* A request's chan<T> arguments are channels the host has just opened for
 * us to send on (r[shm.id.channel-parity]: even): whatever we knew of an
 * earlier channel with the same id is over. */
static void
note_channels(struct guest *g, const struct hp_sig *sig, const uint8_t *args,
	      size_t len)
{
	struct hp_pc_dec d;
	uint64_t id;

	hp_pc_dec_init(&d, args, len);
	for (uint8_t i = 0; i < sig->nargs; i++) {
		if (sig->args[i] != HP_T_CHAN) {
			if (hp_sig_skip(&d, sig->args[i]) != 0)
				return;		/* the handler will say so */
			continue;
		}
		id = hp_pc_get_u64(&d);
		if (d.err != 0)
			return;
		if (id == 0 || id >= g->seg.params.max_channels || id % 2 != 0 ||
		    g->tx[id].open)
			continue;
		g->tx[id].ended = 0;
	}
}

static int
on_request(struct guest *g, struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_request req = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct guest_call *c;

	for (uint32_t i = 0; i < g->nmethods; i++) {
		if (g->methods[i].id != m->desc.method_id)
			continue;
		if (hp_msg_decode_request(m->payload, m->len, &req) != 0)
			return reply_error_code(g, m->desc.id, HP_ERR_INVALID_PAYLOAD);
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return -ENOMEM;
		c->g = g;
		c->req_id = m->desc.id;
		c->next = g->active;
		g->active = c;
		g->stats.calls_in++;
		if (g->methods[i].chans)
			note_channels(g, &g->methods[i].sig, req.args, req.args_len);
		g->methods[i].fn(c, req.args, req.args_len, g->methods[i].ctx);
		return 0;
	}
	return reply_error_code(g, m->desc.id, HP_ERR_UNKNOWN_METHOD);
}

static int
on_response(struct guest *g, struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct out_call *c = out_find(g, m->desc.id), call;

	if (c == NULL)
		return 0;	/* we gave up on it (timeout) */
	call = *c;
	out_remove(g, c);
	if (hp_msg_decode_response(m->payload, m->len, &r) != 0)
		return -EPROTO;
	call.fn(call.ctx, status_of(&r), r.value, r.value_len);
	return 0;
}

/* Fails every call in flight with status (the loop has ended for good:
 * nothing new can start). */
static void
out_fail_all(struct guest *g, int status)
{
	for (uint32_t i = 0; i < g->out_cap; i++) {
		struct out_call c = g->out[i];

		if (c.id == 0)
			continue;
		/* cleared in place: the table ends up empty, never probed half
		 * way through a cluster by anything that could still succeed */
		g->out[i].id = 0;
		g->out_count--;
		c.fn(c.ctx, status, NULL, 0);
	}
}

/* r[shm.goodbye.payload]: the host ended us and says why (the rule we
 * broke). Kept for guest_goodbye_reason; the loop ends with -ECONNABORTED
 * and so does every call in flight. */
static int
on_goodbye(struct guest *g, struct hp_msg_in *m)
{
	const char *why;
	size_t n;

	if (hp_msg_decode_goodbye(m->payload, m->len, &why, &n) != 0) {
		why = UNDECODABLE;
		n = strlen(why);
	}
	if (n > GOODBYE_MAX) {
		n = GOODBYE_MAX;
		while (n > 0 && ((uint8_t)why[n] & 0xC0) == 0x80)
			n--;		/* whole UTF-8 sequences only */
	}
	memcpy(g->goodbye, why, n);
	g->goodbye[n] = '\0';
	g->ended_by_hub = 1;
	g->dead = -ECONNABORTED;
	out_fail_all(g, -ECONNABORTED);
	return -ECONNABORTED;
}

EXPORT const char *
guest_goodbye_reason(const struct guest *g)
{
	return g->ended_by_hub ? g->goodbye : NULL;
}

static void
on_cancel(struct guest *g, uint32_t id)
{
	for (struct guest_call *c = g->active; c != NULL; c = c->next)
		if (c->req_id == id)
			c->cancelled = 1;
}

/* -- channels ---------------------------------------------------------- */

static struct hp_chan_entry *
chan_entry(struct guest *g, uint32_t id)
{
	return &g->view.chans[id];
}

/* A channel the host gave us to send on that we have not touched yet:
 * even, Active, not ended since it was given. */
static int
chan_given(struct guest *g, uint32_t chan)
{
	return chan % 2 == 0 && !g->tx[chan].ended &&
	    hp_chan_state(chan_entry(g, chan)) == HP_CHAN_ACTIVE;
}

struct credit_wait {
	struct guest	*g;
	uint32_t	chan;
	size_t		len;
};

static int
credit_ready(void *arg)
{
	struct credit_wait *w = arg;
	struct guest *g = w->g;
	uint32_t id = w->chan;
	size_t len = w->len;
	int64_t credit;

	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return -ESHUTDOWN;
	credit = hp_chan_credit(chan_entry(g, id), g->tx[id].sent_total);
	if (credit < 0)
		return -EPROTO;
	return (uint64_t)credit >= len;
}

/* One item: credit first (r[shm.flow.zero-credit]: wait for the receiver's
 * grant), then the message, staged when more follow. */
static int
chan_send_one(struct guest *g, uint32_t chan, const void *item, size_t len,
	      struct timeout *t, int flags)
{
	struct credit_wait w = { g, chan, len };
	int rc;

	if (len > g->seg.params.initial_credit)
		return -EMSGSIZE;	/* could never fit in the window */
	if ((rc = credit_ready(&w)) == 0) {
		g->stats.credit_waits++;
		/* what we staged must reach the receiver for it to grant */
		if (hp_endpoint_flush(&g->ep) == -EPROTO)
			return -EPROTO;
		rc = wait_beating(g, HP_WAIT_CREDIT, credit_ready, &w, t);
		if (rc == 0)
			return -ETIMEDOUT;
	}
	if (rc < 0) {
		if (rc == -EPIPE || rc == -ESHUTDOWN)
			g->dead = rc;
		return rc;
	}
	if ((rc = send_msg(g, HP_MSG_DATA, chan, 0, item, len, NULL, 0, flags, t)) != 0)
		return rc;
	g->tx[chan].sent_total += (uint32_t)len;
	return 0;
}

EXPORT int
guest_chan_send_batch(struct guest *g, uint32_t chan, const struct iovec *items,
		      int n, int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };	/* for the whole batch */
	int rc = 0, i;

	/* r[shm.id.channel-parity]: we send on ids the host gave us (even)
	 * or that we opened (odd); either way the entry must be Active. */
	if (chan == 0 || chan >= g->seg.params.max_channels || n < 0)
		return -EINVAL;
	if (!g->tx[chan].open) {
		if (!chan_given(g, chan))
			return -ENOTCONN;
		g->tx[chan].open = 1;
		g->tx[chan].sent_total = 0;	/* r[shm.flow.initial] */
	}
	/* one publication for the lot (r[shm.ordering.ring-publish]) */
	for (i = 0; i < n && rc == 0; i++)
		rc = chan_send_one(g, chan, items[i].iov_base, items[i].iov_len, &t,
				   i + 1 < n ? HP_SEND_MORE : 0);
	while (rc == 0 && (rc = hp_endpoint_flush(&g->ep)) == -EAGAIN)
		rc = wait_tx(g, &t);
	return rc < 0 ? rc : 0;
}

EXPORT int
guest_chan_send(struct guest *g, uint32_t chan, const void *item, size_t len,
		int timeout_ms)
{
	struct iovec one = { (void *)(uintptr_t)item, len };

	return guest_chan_send_batch(g, chan, &one, 1, timeout_ms);
}

/* Close or Reset of a channel we send on, whether or not anything was
 * sent: the receiver frees the entry only when it sees one
 * (r[shm.flow.channel-id-reuse]). Once only: a second would name a
 * channel the receiver no longer has. */
static int
chan_end(struct guest *g, uint32_t chan, uint8_t type)
{
	int rc;

	if (chan == 0 || chan >= g->seg.params.max_channels ||
	    (!g->tx[chan].open && !chan_given(g, chan)))
		return -ENOTCONN;
	rc = send_msg(g, type, chan, 0, NULL, 0, NULL, 0, 0, NULL);
	g->tx[chan].open = 0;
	g->tx[chan].ended = 1;
	return rc;
}

EXPORT int
guest_chan_close(struct guest *g, uint32_t chan)
{
	return chan_end(g, chan, HP_MSG_CLOSE);
}

EXPORT int
guest_chan_reset(struct guest *g, uint32_t chan)
{
	return chan_end(g, chan, HP_MSG_RESET);
}

EXPORT int64_t
guest_chan_open(struct guest *g, guest_item_fn on_item, guest_end_fn on_end,
		void *ctx)
{
	int64_t id = hp_chan_open(g->view.chans, g->seg.params.max_channels,
				  HP_SIDE_GUEST, g->seg.params.initial_credit,
				  &g->chan_cursor);

	if (id < 0)
		return id;
	g->rx[id] = (struct rx_chan){ on_item, on_end, ctx, 0, 1 };
	return id;
}

EXPORT int64_t
guest_chan_open_send(struct guest *g)
{
	int64_t id = hp_chan_open(g->view.chans, g->seg.params.max_channels,
				  HP_SIDE_GUEST, g->seg.params.initial_credit,
				  &g->chan_cursor);

	if (id < 0)
		return id;
	/* r[shm.flow.initial] */
	g->tx[id] = (struct tx_chan){ .open = 1, .sent_total = 0 };
	return id;
}

static int
on_data(struct guest *g, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct rx_chan *c = &g->rx[id];

	if (!c->open)
		return -EPROTO;	/* data on a channel we do not receive */
	c->on_item(c->ctx, m->payload, m->len);
	/* r[shm.flow.ordering.receiver]: grant back what we consumed, in
	 * chunks so the sender is not woken for every item. */
	c->unreported += m->len;
	/* a quarter of the window at a time: no item can exceed the window,
	 * so the sender is never left waiting on grants held back here */
	if (c->unreported >= g->seg.params.initial_credit / 4) {
		hp_chan_grant(chan_entry(g, id), c->unreported);
		hp_endpoint_notify_credit(&g->ep, &chan_entry(g, id)->granted_total);
		c->unreported = 0;
	}
	return 0;
}

static int
on_chan_end(struct guest *g, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct rx_chan *c = &g->rx[id];

	if (c->open) {
		c->open = 0;
		/* r[shm.flow.channel-id-reuse]: the receiver frees the entry */
		hp_chan_free(chan_entry(g, id));
		if (c->on_end != NULL)
			c->on_end(c->ctx, m->desc.msg_type == HP_MSG_CLOSE ? 0 : -ECONNRESET);
		return 0;
	}
	if (g->tx[id].open || chan_given(g, id)) {
		/* the receiver gave up on our stream; r[shm.flow.reset]: its
		 * credit word is no longer ours to read */
		g->tx[id].open = 0;
		g->tx[id].ended = 1;
		return 0;
	}
	return -EPROTO;
}

/* -- the loop ------------------------------------------------------------ */

static int
dispatch(struct guest *g, struct hp_msg_in *m)
{
	switch (m->desc.msg_type) {
	case HP_MSG_REQUEST:	return on_request(g, m);
	case HP_MSG_RESPONSE:	return on_response(g, m);
	case HP_MSG_CANCEL:	on_cancel(g, m->desc.id); return 0;
	case HP_MSG_DATA:	return on_data(g, m);
	case HP_MSG_CLOSE:
	case HP_MSG_RESET:	return on_chan_end(g, m);
	case HP_MSG_GOODBYE:	return on_goodbye(g, m);	/* the host ended us */
	default:		return -EPROTO;
	}
}

/* Serves what is there now, up to BATCH messages. *did: whether any. */
static int
serve(struct guest *g, int *did)
{
	struct hp_msg_in m;
	const char *rule;
	int rc = 0, n;

	*did = 0;
	if (g->dead)
		return g->dead;
	/* r[shm.goodbye.host]: detach when the host says goodbye */
	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return g->dead = -ESHUTDOWN;
	for (n = 0; n < BATCH; n++) {
		if ((rc = hp_endpoint_recv(&g->ep, &m, &rule)) == -EAGAIN) {
			rc = 0;
			break;
		}
		if (rc != 0)
			return g->dead = -EPROTO;
		*did = 1;
		rc = dispatch(g, &m);
		hp_endpoint_release(&g->ep, &m);
		/* a busy guest beats here, an idle one in wait_rx */
		tick(g);
		if (rc != 0)
			return g->dead = rc;
	}
	hp_endpoint_notify_consumed(&g->ep);
	if (hp_endpoint_flush(&g->ep) == -EPROTO)
		return g->dead = -EPROTO;
	return 0;
}

static int
rx_ready(void *arg)
{
	struct guest *g = arg;

	/* the heartbeat is wait_rx's timeout: no clock read per spin */
	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return 1;
	return hp_endpoint_rx_ready(&g->ep);
}

EXPORT int
guest_service_timeout_ms(const struct guest *g)
{
	uint64_t now = now_ns();

	if (g->hb_interval == 0)
		return -1;
	return g->next_hb <= now ? 0 : (int)((g->next_hb - now + 999999) / 1000000);
}

/* Waits for traffic up to t: 1 there is some, 0 t ran out, or -EPIPE. */
static int
wait_rx(struct guest *g, struct timeout *t)
{
	int rc;

	rc = wait_beating(g, HP_WAIT_RING_DATA, rx_ready, g, t);
	if (rc == -EPIPE)
		g->dead = -EPIPE;
	return rc;
}

EXPORT int
guest_service(struct guest *g)
{
	int did, rc;

	if ((rc = hp_doorbell_drain(g->doorbell)) == -EPIPE)
		return g->dead = -EPIPE;
	clock_beat(g);			/* its loop calls us when one is due */
	do {
		if ((rc = serve(g, &did)) != 0)
			return rc;
	} while (did);
	return 0;
}

EXPORT int
guest_service_wait(struct guest *g, int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };
	int did, rc;

	if ((rc = serve(g, &did)) != 0 || did)
		return rc;
	if ((rc = wait_rx(g, &t)) < 0)
		return rc;
	return serve(g, &did);
}

EXPORT void
guest_stop(struct guest *g)
{
	g->stop = 1;
}

EXPORT int
guest_run(struct guest *g)
{
	int did, rc;

	while (!g->stop) {
		struct timeout forever = { -1, 0 };

		if ((rc = serve(g, &did)) != 0)
			return rc == -ESHUTDOWN ? 0 : rc;
		if (!did && (rc = wait_rx(g, &forever)) < 0)
			return rc;
	}
	return 0;
}

EXPORT void
guest_detach(struct guest *g)
{
	if (g == NULL)
		return;
	if (g->view.entry != NULL) {
		hp_endpoint_flush(&g->ep);
		/* r[shm.guest.detach] r[shm.goodbye.guest]: we are leaving */
		hp_store_release_u32(&g->view.entry->state, HP_PEER_GOODBYE);
		hp_doorbell_signal(g->doorbell);
	}
	for (uint32_t i = 0; i < g->out_cap && g->out != NULL; i++)
		if (g->out[i].id != 0)
			g->out[i].fn(g->out[i].ctx, -EPIPE, NULL, 0);
	while (g->active != NULL) {
		struct guest_call *c = g->active;

		g->active = c->next;
		free(c);
	}
	hp_segment_close(&g->seg);
	close(g->doorbell);
	free(g->methods);
	free(g->out);
	free(g->rx);
	free(g->tx);
	free(g);
}

/* -- postcard helpers ---------------------------------------------------- */

static int
put_done(struct hp_pc_enc *e, size_t *pos)
{
	if (e->err != 0)
		return -ENOSPC;
	*pos += e->len;
	return (int)e->len;
}

EXPORT int
guest_pc_put_str(uint8_t *buf, size_t cap, size_t *pos, const char *s, size_t n)
{
	struct hp_pc_enc e;

	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(&e, buf + *pos, cap - *pos);
	hp_pc_put_bytes(&e, s, n);
	return put_done(&e, pos);
}

EXPORT int
guest_pc_put_bytes(uint8_t *buf, size_t cap, size_t *pos, const void *p, size_t n)
{
	struct hp_pc_enc e;

	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(&e, buf + *pos, cap - *pos);
	hp_pc_put_bytes(&e, p, n);
	return put_done(&e, pos);
}

EXPORT int
guest_pc_put_u64(uint8_t *buf, size_t cap, size_t *pos, uint64_t v)
{
	struct hp_pc_enc e;

	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(&e, buf + *pos, cap - *pos);
	hp_pc_put_u64(&e, v);
	return put_done(&e, pos);
}

EXPORT int
guest_pc_get_str(const uint8_t *buf, size_t len, size_t *pos, const char **s, size_t *n)
{
	struct hp_pc_dec d;

	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(&d, buf + *pos, len - *pos);
	if (hp_pc_get_str(&d, s, n) != 0)
		return -EBADMSG;
	*pos += d.pos;
	return 0;
}

EXPORT int
guest_pc_get_bytes(const uint8_t *buf, size_t len, size_t *pos, const uint8_t **p,
		   size_t *n)
{
	struct hp_pc_dec d;

	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(&d, buf + *pos, len - *pos);
	if (hp_pc_get_bytes(&d, p, n) != 0)
		return -EBADMSG;
	*pos += d.pos;
	return 0;
}

EXPORT int
guest_pc_get_u64(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	struct hp_pc_dec d;

	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(&d, buf + *pos, len - *pos);
	*v = hp_pc_get_u64(&d);
	if (d.err != 0)
		return -EBADMSG;
	*pos += d.pos;
	return 0;
}
