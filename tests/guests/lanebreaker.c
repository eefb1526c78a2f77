/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* lanebreaker: a test guest that breaks the rules of a direct lane
 * (proto/lane.h) on purpose, to show that the worst it gets is the loss
 * of its lane. Built on libguest, with its internals (guestlib/internal.h)
 * to reach the lane's ring. Methods, PREFIX.NAME (--prefix, default
 * "lb"):
 *   echo S		answers S
 *   sink C		chan<bytes>: answers "sink" (a target for a Request
 *			with a bad channel)
 *   flood C		chan<bytes>: through the hub, closes C and answers
 *			"calm"; over a lane, sends three items of more than
 *			half the window each on C, paying no heed to credit,
 *			and answers "flooded"
 *   stream M		opens a channel and holds it (guest_chan_hold: it takes
 *			no item, so grants nothing), calls M(it) twice (the second over
 *			a lane if hubd offers one): answers "ok ITEMS END
 *			RESULT" (END: the channel's end status) or
 *			"error: <errno>"
 *   badanswer S	answers bytes that are no Response when called over
 *			a lane, S when through the hub
 *   call M S		calls M(S: str) twice (the second over a lane if
 *			hubd offers one) and answers "ok RESULT" or
 *			"error: <errno>"
 *   lanes		how many lanes it has open
 *   polls		how many times its --poll loop woke (u64)
 *   sleep MS		answers after MS ms, serving meanwhile
 *   callsleep M MS	calls M(0) (through the hub: a lane follows), then
 *			M(MS) (over the lane); answers "ok" or
 *			"error: <errno>: <the error's text>"
 *   deaf		stops reading its lanes (they stay open): answers
 *			"deaf N", N the lanes it left
 *   burst M N		N calls of M (a 100-byte str) in flight at once,
 *			then one more waited for: answers "ok RESULT" or
 *			"error: <errno>"
 *   break MODE M	calls M("x") once through the hub (which offers a
 *			lane with M's owner), then breaks the lane's rules
 *			the MODE way and rings the lane's doorbell; answers
 *			"sent", or "error: no lane"
 * MODEs: data (a Data on a channel the peer does not receive on), close
 * (a Close on a channel the peer has not), goodbye, unknown (type 99), slot
 * (a slot index out of range), generation (a live slot, the wrong
 * generation), bounds (offset and length past the slot's end), inline
 * (inline, 40 bytes), response (an answer to a call never made), channels
 * (a call of a method with a chan<T> argument: M's owner's PREFIX.sink),
 * ring (the ring's head moved past its capacity), hush (it closes the
 * pipe it rings the peer on, its bell, and keeps the lane), lie (nothing on the
 * lane: it tells hubd the peer broke a rule), first (it tells hubd the
 * peer hung up, then has the peer report a broken rule: accuse).
 *   accuse ID		reports lane ID closed for a broken rule
 *   churn M N		N rounds: calls M("x") twice (a lane follows), then
 *			reports the lane closed as if its peer had hung up (a
 *			plain CLOSED, its figures forged to show calls):
 *			"ok L", L the lanes it was given
 *   load M N		N calls of M("x"), 64 at a time: "ok=A eERRNO=B ..." once
 *			every one has ended (the bridge's tests)
 *   storm M N		N guest_call_async of M (a 100-byte str) back to back,
 *			none waited for until all are sent, then every answer
 *			waited for (2 min at most): "ok=A eERRNO=B ..." as load,
 *			" wrong=W" for answers that are not the str sent
 *   gate T N		N guest_call_async of T.wait (answered once T.open
 *			lets them through: mtprober's), then one of T.open(N),
 *			then every answer waited for: "ok=A ..." as load
 * With --poll it runs its own poll() loop on guest_fd() and
 * guest_service() instead of guest_run(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/list.h"
#include "proto/clock.h"
#include "proto/doorbell.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/ring.h"
#include "tests/guests/testguest.h"

static const char *prefix;

static void
reply_str(struct guest_call *c, const char *s)
{
	uint8_t buf[256];
	size_t pos = 0;

	guest_pc_put_str(buf, sizeof(buf), &pos, s, strlen(s));
	guest_reply(c, buf, pos);
}

static void
m_echo(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	guest_reply(c, args, len);
}

static void
m_sink(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_str(c, "sink");
}

static void
m_badanswer(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t junk[4] = { 0xff, 0xff, 0xff, 0xff };
	struct guest *g = guest_call_guest(c);

	(void)ctx;
	if (c->lane == NULL) {
		guest_reply(c, args, len);
		return;
	}
	/* no envelope at all: the caller cannot decode it */
	lg_send_on(g, c->lane, HP_MSG_RESPONSE, c->req_id, 0, junk, sizeof(junk),
		   NULL, 0, 0, NULL);
	HP_LIST_UNLINK(&g->active, c);
	c->lane->calls_in--;
	free(c);
}

/* args: two str; into a and b (NUL-terminated, cut to cap). */
static int
two_str(const uint8_t *args, size_t len, char *a, char *b, size_t cap)
{
	const char *s;
	size_t n, pos = 0;

	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0)
		return -1;
	snprintf(a, cap, "%.*s", (int)n, s);
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0)
		return -1;
	snprintf(b, cap, "%.*s", (int)n, s);
	return 0;
}

static int
call_str(struct guest *g, const char *method, const char *s, char *out, size_t cap)
{
	uint8_t arg[256], res[256];
	size_t pos = 0, rlen = 0, n;
	const char *r;
	int rc;

	guest_pc_put_str(arg, sizeof(arg), &pos, s, strlen(s));
	if ((rc = guest_call(g, method, arg, pos, res, sizeof(res), &rlen, 10000)) != 0)
		return rc;
	pos = 0;
	if (guest_pc_get_str(res, rlen, &pos, &r, &n) != 0)
		return -EBADMSG;
	snprintf(out, cap, "%.*s", (int)n, r);
	return 0;
}

/* "ok OUT", or "error: RC" */
static void
reply_result(struct guest_call *c, int rc, const char *out)
{
	char res[200];

	if (rc != 0)
		snprintf(res, sizeof(res), "error: %d", rc);
	else
		snprintf(res, sizeof(res), "ok %s", out);
	reply_str(c, res);
}

/* Over a lane: items past the window on the caller's channel. */
static void
m_flood(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static uint8_t item[1 << 20];
	struct guest *g = guest_call_guest(c);
	uint64_t chan = 0;
	size_t pos = 0, n;

	(void)ctx;
	guest_pc_get_u64(args, len, &pos, &chan);
	if (c->lane == NULL) {
		guest_chan_close(g, (uint32_t)chan);
		reply_str(c, "calm");
		return;
	}
	n = c->lane->chans.credit / 2 + 1;
	if (n > sizeof(item))
		n = sizeof(item);
	for (int i = 0; i < 3; i++)
		hp_endpoint_send(&c->lane->ep, HP_MSG_DATA, (uint32_t)chan & 0xffffu, 0, item, n, 0);
	hp_doorbell_signal(c->lane->bell);
	reply_str(c, "flooded");
}

struct streamed {
	unsigned	items;
	int		end;
	int		ended;
};

static void
stream_item(void *ctx, const uint8_t *item, size_t len)
{
	(void)item;
	(void)len;
	((struct streamed *)ctx)->items++;
}

static void
stream_end(void *ctx, int status)
{
	((struct streamed *)ctx)->end = status;
	((struct streamed *)ctx)->ended = 1;
}

/* M(a channel of ours), once: rc, what came in out. */
static int
stream_once(struct guest *g, const char *method, struct streamed *st, char *out, size_t cap)
{
	uint8_t arg[16], res[256];
	size_t alen = 0, rlen = 0, pos = 0, n;
	const char *r;
	int64_t chan;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((chan = guest_chan_open(g, stream_item, stream_end, st)) < 0)
		return (int)chan;
	guest_chan_hold(g, (uint32_t)chan);
	guest_pc_put_u64(arg, sizeof(arg), &alen, (uint64_t)chan);
	rc = guest_call(g, method, arg, alen, res, sizeof(res), &rlen, 10000);
	/* a call that failed ends its channel as it fails */
	for (int i = 0; rc != 0 && !st->ended && i < 50; i++)
		guest_service_wait(g, 100);
	if (rc == 0 && guest_pc_get_str(res, rlen, &pos, &r, &n) == 0)
		snprintf(out, cap, "%u %d %.*s", st->items, st->end, (int)n, r);
	return rc;
}

static void
m_stream(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static struct streamed st[2];	/* the channels' callbacks write
					 * them: they outlive the call */
	struct guest *g = guest_call_guest(c);
	const char *m;
	char method[128], out[200] = "";
	size_t n, pos = 0;
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &n) != 0 || n >= sizeof(method)) {
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)n, m);
	if ((rc = stream_once(g, method, &st[0], out, sizeof(out))) == 0)
		rc = stream_once(g, method, &st[1], out, sizeof(out));
	reply_result(c, rc, out);
}

static void
m_call(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	char method[128], s[128], out[160];
	int rc;

	(void)ctx;
	if (two_str(args, len, method, s, sizeof(method)) != 0) {
		reply_str(c, "error: arguments");
		return;
	}
	if ((rc = call_str(g, method, s, out, sizeof(out))) == 0)
		rc = call_str(g, method, s, out, sizeof(out));
	reply_result(c, rc, out);
}

static void
m_sleep(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	uint64_t ms = 0, end;
	size_t pos = 0;

	(void)ctx;
	guest_pc_get_u64(args, len, &pos, &ms);
	for (end = hp_now_ns() + ms * 1000000u; hp_now_ns() < end;)
		guest_service_wait(g, 20);
	guest_reply(c, NULL, 0);
}

static void
m_callsleep(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	uint8_t arg[16];
	const char *m;
	char method[128], why[256] = "", res[320];
	size_t n, pos = 0, alen = 0;
	uint64_t ms;
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &n) != 0 || n >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0) {
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)n, m);
	guest_pc_put_u64(arg, sizeof(arg), &alen, 0);
	if ((rc = guest_call(g, method, arg, alen, why, sizeof(why), NULL, 10000)) == 0) {
		alen = 0;
		guest_pc_put_u64(arg, sizeof(arg), &alen, ms);
		rc = guest_call(g, method, arg, alen, why, sizeof(why), NULL, 60000);
	}
	if (rc == 0)
		snprintf(res, sizeof(res), "ok");
	else
		snprintf(res, sizeof(res), "error: %d: %s", rc, why);
	reply_str(c, res);
}

static void
m_deaf(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	char out[32];

	(void)args;
	(void)len;
	(void)ctx;
	/* out of its table and its sleep: never served, never closed */
	snprintf(out, sizeof(out), "deaf %u", g->nlanes);
	for (uint32_t i = 0; i < g->nlanes; i++)
		hp_group_remove(&g->group, &g->lanes[i]->ep);
	g->nlanes = 0;
	hp_idtab_clear(&g->routes);
	reply_str(c, out);
}

static void
burst_done(void *ctx, int status, const uint8_t *res, size_t len)
{
	(void)ctx;
	(void)status;
	(void)res;
	(void)len;
}

static void
m_burst(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	uint8_t arg[128];
	const char *m;
	char method[128], s[101], out[160];
	size_t n, pos = 0, alen = 0;
	uint64_t count;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &n) != 0 || n >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &count) != 0) {
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)n, m);
	memset(s, 'b', 100);
	s[100] = '\0';
	guest_pc_put_str(arg, sizeof(arg), &alen, s, 100);
	for (uint64_t i = 0; i < count && rc == 0; i++)
		rc = guest_call_async(g, method, arg, alen, burst_done, NULL, NULL);
	if (rc == 0)
		rc = call_str(g, method, "last", out, sizeof(out));
	reply_result(c, rc, out);
}

static void
m_lanes(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t buf[16];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	guest_pc_put_u64(buf, sizeof(buf), &pos, guest_call_guest(c)->nlanes);
	guest_reply(c, buf, pos);
}

/* A Request over the lane for method, args as given. */
static void
request(struct lg_lane *ln, struct hp_desc *d, const char *method)
{
	static const uint8_t req[3] = { 0, 1, 'x' };	/* no metadata, str "x" */

	d->msg_type = HP_MSG_REQUEST;
	d->id = 4242;
	d->method_id = hp_method_id(method, strlen(method));
	hp_desc_set_inline(d, req, sizeof(req));
	(void)ln;
}

/* load(METHOD, N): N calls of METHOD("x"), LOAD_WINDOW in flight at a
 * time; answers how they ended, "ok=A" then " eERRNO=B" for each error
 * seen, once all have. */
#define LOAD_WINDOW	64
struct load {
	uint32_t	done;
	uint32_t	ok;
	uint32_t	err[256];
};

static void
load_done(void *ctx, int status, const uint8_t *res, size_t len)
{
	struct load *l = ctx;

	(void)res;
	(void)len;
	l->done++;
	if (status == 0)
		l->ok++;
	else
		l->err[-status < 256 ? -status : 255]++;
}

static void
m_load(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	struct load *l = calloc(1, sizeof(*l));
	uint8_t arg[16];
	const char *m;
	char method[128], out[512];
	size_t n, pos = 0, alen = 0, o;
	uint64_t count, end;
	uint32_t sent = 0;

	(void)ctx;
	if (l == NULL || guest_pc_get_str(args, len, &pos, &m, &n) != 0 || n >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &count) != 0 || count > 100000) {
		free(l);
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)n, m);
	guest_pc_put_str(arg, sizeof(arg), &alen, "x", 1);
	for (end = hp_now_ns() + 120ull * 1000000000; l->done < count && hp_now_ns() < end;) {
		while (sent < count && sent - l->done < LOAD_WINDOW &&
		       guest_call_async(g, method, arg, alen, load_done, l, NULL) == 0)
			sent++;
		if (sent < count && sent - l->done < LOAD_WINDOW)
			break;	/* a call could not start: say so below */
		guest_service_wait(g, 20);
	}
	for (; l->done < sent && hp_now_ns() < end;)
		guest_service_wait(g, 20);
	o = (size_t)snprintf(out, sizeof(out), "ok=%u", l->ok);
	for (int e = 1; e < 256; e++)
		if (l->err[e] != 0 && o < sizeof(out))
			o += (size_t)snprintf(out + o, sizeof(out) - o, " e%d=%u", e, l->err[e]);
	if (l->done < count && o < sizeof(out))
		snprintf(out + o, sizeof(out) - o, " unanswered=%u", (uint32_t)count - l->done);
	reply_str(c, out);
	free(l);	/* every callback has run, or the test fails on unanswered */
}

/* storm(METHOD, N): as load, but every call started at once, back to
 * back: a lane's flow control (or hubd's) is all that holds the caller
 * back. Each answer must be the 100-byte str sent. */
struct storm {
	struct load	l;
	uint32_t	wrong;
	uint8_t		arg[128];
	size_t		alen;
};

static void
storm_done(void *ctx, int status, const uint8_t *res, size_t len)
{
	struct storm *s = ctx;

	if (status == 0 && (len != s->alen || memcmp(res, s->arg, len) != 0))
		s->wrong++;
	load_done(&s->l, status, res, len);
}

static void
m_storm(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	struct storm *s = calloc(1, sizeof(*s));
	const char *m;
	char method[128], out[512], str[100];
	size_t n, pos = 0, o;
	uint64_t count, end;
	uint32_t sent = 0;
	int rc = 0;

	(void)ctx;
	if (s == NULL || guest_pc_get_str(args, len, &pos, &m, &n) != 0 ||
	    n >= sizeof(method) || guest_pc_get_u64(args, len, &pos, &count) != 0 ||
	    count > 1000000) {
		free(s);
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)n, m);
	memset(str, 's', sizeof(str));
	guest_pc_put_str(s->arg, sizeof(s->arg), &s->alen, str, sizeof(str));
	while (sent < count &&
	       (rc = guest_call_async(g, method, s->arg, s->alen, storm_done, s, NULL)) == 0)
		sent++;
	for (end = hp_now_ns() + 120ull * 1000000000; s->l.done < sent && hp_now_ns() < end;)
		guest_service_wait(g, 20);
	o = (size_t)snprintf(out, sizeof(out), "ok=%u", s->l.ok);
	for (int e = 1; e < 256; e++)
		if (s->l.err[e] != 0 && o < sizeof(out))
			o += (size_t)snprintf(out + o, sizeof(out) - o, " e%d=%u", e, s->l.err[e]);
	if (s->wrong != 0 && o < sizeof(out))
		o += (size_t)snprintf(out + o, sizeof(out) - o, " wrong=%u", s->wrong);
	if (sent < count && o < sizeof(out))
		o += (size_t)snprintf(out + o, sizeof(out) - o, " unsent=%u (%d)",
				      (uint32_t)count - sent, rc);
	if (s->l.done < sent && o < sizeof(out))
		snprintf(out + o, sizeof(out) - o, " unanswered=%u", sent - s->l.done);
	reply_str(c, out);
	if (s->l.done == sent)
		free(s);	/* else a late answer's callback would find it gone */
}

/* gate(T, N): calls that wait at their callee until a later call of ours
 * opens the gate: the bound on calls in flight must not hold that one
 * back for good. */
static void
m_gate(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	struct load *l = calloc(1, sizeof(*l));
	uint8_t arg[16];
	const char *t;
	char method[128], out[512];
	size_t n, pos = 0, alen = 0, o;
	uint64_t count, end;
	uint32_t sent = 0;
	int rc = 0;

	(void)ctx;
	if (l == NULL || guest_pc_get_str(args, len, &pos, &t, &n) != 0 || n > 100 ||
	    guest_pc_get_u64(args, len, &pos, &count) != 0 || count > 100000) {
		free(l);
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s.wait", (int)n, t);
	while (sent < count &&
	       (rc = guest_call_async(g, method, NULL, 0, load_done, l, NULL)) == 0)
		sent++;
	snprintf(method, sizeof(method), "%.*s.open", (int)n, t);
	guest_pc_put_u64(arg, sizeof(arg), &alen, count);
	if (rc == 0 && (rc = guest_call_async(g, method, arg, alen, load_done, l, NULL)) == 0)
		sent++;
	for (end = hp_now_ns() + 120ull * 1000000000; l->done < sent && hp_now_ns() < end;)
		guest_service_wait(g, 20);
	o = (size_t)snprintf(out, sizeof(out), "ok=%u", l->ok);
	for (int e = 1; e < 256; e++)
		if (l->err[e] != 0 && o < sizeof(out))
			o += (size_t)snprintf(out + o, sizeof(out) - o, " e%d=%u", e, l->err[e]);
	if (rc != 0 && o < sizeof(out))
		o += (size_t)snprintf(out + o, sizeof(out) - o, " unsent (%d)", rc);
	if (l->done < sent && o < sizeof(out))
		snprintf(out + o, sizeof(out) - o, " unanswered=%u", sent - l->done);
	reply_str(c, out);
	if (l->done == sent)
		free(l);
}

/* A CLOSED report about lane id to hubd, as libguest would send it. */
static int
report(struct guest *g, uint32_t id, int violation, const char *reason)
{
	struct hp_lane_msg lm = { .op = HP_LANE_CLOSED, .lane = id,
				  .violation = (uint32_t)violation };
	uint8_t buf[256];
	int64_t n;

	snprintf(lm.reason, sizeof(lm.reason), "%s", reason);
	if ((n = hp_lane_msg_encode(buf, sizeof(buf), &lm)) < 0)
		return -1;
	return lg_send_msg(g, HP_MSG_LANE, 0, 0, buf, (size_t)n, NULL, 0, 0, NULL);
}

/* Breaks the lane the MODE way: 0, or -1 for a MODE it does not know.
 * "first" plays the race of two reports: ours (the peer hung up) heard
 * first, then the peer's of a broken rule, asked for through hubd
 * (twice: hubd must record it once). */
static int
breach(struct guest *g, struct lg_lane *ln, const char *mode, const char *target)
{
	struct hp_desc d;
	char owner[128], sink[160];
	const char *dot;

	memset(&d, 0, sizeof(d));
	d.msg_type = HP_MSG_REQUEST;
	d.id = 7;
	hp_desc_set_inline(&d, NULL, 0);
	dot = strchr(target, '.');
	snprintf(owner, sizeof(owner), "%.*s", dot != NULL ? (int)(dot - target) : 0, target);
	if (strcmp(mode, "data") == 0 || strcmp(mode, "close") == 0) {
		d.msg_type = mode[0] == 'd' ? HP_MSG_DATA : HP_MSG_CLOSE;
		d.id = 1;
	} else if (strcmp(mode, "goodbye") == 0) {
		d.msg_type = HP_MSG_GOODBYE;
	} else if (strcmp(mode, "unknown") == 0) {
		d.msg_type = 99;
	} else if (strcmp(mode, "slot") == 0) {
		request(ln, &d, target);
		hp_desc_set_slot(&d, 1000, 1, 0, 100);
	} else if (strcmp(mode, "generation") == 0) {
		uint32_t slot, gen;

		request(ln, &d, target);
		if (hp_slot_alloc(&ln->ep.tx_pool, &slot, &gen) != 0)
			return -1;
		hp_desc_set_slot(&d, slot, gen + 7, 0, 100);
	} else if (strcmp(mode, "bounds") == 0) {
		uint32_t slot, gen;

		request(ln, &d, target);
		if (hp_slot_alloc(&ln->ep.tx_pool, &slot, &gen) != 0)
			return -1;
		hp_desc_set_slot(&d, slot, gen, ln->ep.tx_pool.slot_size - 8, 100);
	} else if (strcmp(mode, "inline") == 0) {
		request(ln, &d, target);
		d.payload_len = 40;
	} else if (strcmp(mode, "response") == 0) {
		d.msg_type = HP_MSG_RESPONSE;
		d.id = 12345;
		hp_desc_set_inline(&d, (const uint8_t[]){ 0, 0, 0 }, 3);
	} else if (strcmp(mode, "channels") == 0 || strcmp(mode, "parity") == 0) {
		/* ours (side A: even) but never opened, or the callee's own */
		uint8_t chan = ln->side == HP_LANE_SIDE_A ? 2 : 1;

		if (mode[0] == 'p')
			chan ^= 3;
		snprintf(sink, sizeof(sink), "%s.sink", owner);
		request(ln, &d, sink);
		hp_desc_set_inline(&d, (const uint8_t[]){ 0, chan }, 2);
	} else if (strcmp(mode, "ring") == 0) {
		/* release, as a head store is: the peer checks it */
		hp_store_release_u32(ln->ep.tx.head, ln->ep.tx.mine + ln->ep.tx.size + 5);
		hp_doorbell_signal(ln->bell);
		return 0;
	} else if (strcmp(mode, "hush") == 0) {
		/* the pipe it rings the peer on, closed: the peer's end of it
		 * hangs up for good, the lane stays */
		if (ln->bells[1] < 0)
			return -1;
		close(ln->bells[1]);
		ln->bells[1] = ln->ep.bell_out = -1;
		return 0;
	} else if (strcmp(mode, "lie") == 0) {
		/* our own report, and our end closed as libguest's would be
		 * (or a call of ours could still take the lane the peer
		 * closes on hubd's word, and be cancelled) */
		ln->told = 1;
		ln->closing = 1;
		return report(g, ln->id, 1, "guest lies: the peer did nothing wrong");
	} else if (strcmp(mode, "first") == 0) {
		char why[HP_LANE_REASON_MAX + 1], id[16], out[64];

		snprintf(why, sizeof(why), "guest %s hung up", ln->peer);
		ln->told = 1;
		ln->closing = 1;	/* as "lie" */
		if (report(g, ln->id, 0, why) != 0)
			return -1;
		/* through hubd (the lane routes only target): after our report */
		snprintf(id, sizeof(id), "%u", ln->id);
		snprintf(sink, sizeof(sink), "%s.accuse", owner);
		/* twice: the second is one report too many, recorded nowhere */
		if (call_str(g, sink, id, out, sizeof(out)) != 0)
			return -1;
		return call_str(g, sink, id, out, sizeof(out)) == 0 ? 0 : -1;
	} else {
		return -1;
	}
	if (hp_ring_enqueue(&ln->ep.tx, &d) != 0)
		return -1;
	hp_doorbell_signal(ln->bell);
	return 0;
}

/* churn(M, N): N rounds of a call of M (a lane follows) and one over the
 * lane, whose end it then reports to hubd as if its peer had hung up (a
 * plain CLOSED, no broken rule), its route dropped: "ok L", L the lanes
 * it was given. It keeps its end until the peer, told by hubd, closes
 * the lane: no hang-up of its own that the peer would report first. */
static void
m_churn(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	char target[128], out[160];
	const char *s;
	size_t n, pos = 0;
	uint64_t rounds, lanes = 0;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0 || n >= sizeof(target) ||
	    guest_pc_get_u64(args, len, &pos, &rounds) != 0) {
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(target, sizeof(target), "%.*s", (int)n, s);
	for (uint64_t i = 0; i < rounds && rc == 0; i++) {
		struct lg_lane *ln;
		char why[HP_LANE_REASON_MAX + 1];

		if ((rc = call_str(g, target, "x", out, sizeof(out))) != 0 ||
		    (rc = call_str(g, target, "x", out, sizeof(out))) != 0)
			break;
		if (g->routes.count == 0)
			continue;
		ln = ((struct lg_route *)hp_idtab_next(&g->routes, &(uint32_t){ 0 }))->lane;
		lanes++;
		snprintf(why, sizeof(why), "guest %s hung up", ln->peer);
		ln->told = 1;
		hp_idtab_clear(&g->routes);
		/* its figures say the lane served: no lane it "could not take" */
		hp_lane_figures_write(&ln->map, &(struct hp_lane_tally){ .calls_out = 1 });
		if ((rc = report(g, ln->id, 0, why)) != 0)
			break;
	}
	snprintf(out, sizeof(out), "%llu", (unsigned long long)lanes);
	reply_result(c, rc, out);
}

/* accuse(ID): reports lane ID closed for a broken rule, whatever lanes
 * this guest has (the other half of breach's "first"). */
static void
m_accuse(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *s;
	size_t n, pos = 0;
	char id[16];

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0) {
		reply_str(c, "error: arguments");
		return;
	}
	snprintf(id, sizeof(id), "%.*s", (int)n, s);
	reply_str(c, report(guest_call_guest(c), (uint32_t)strtoul(id, NULL, 10), 1,
			    "lane.channel: told after the peer's close") == 0 ? "sent" : "error");
}

static void
m_break(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	char mode[128], target[128], out[160];
	int rc;

	(void)ctx;
	if (two_str(args, len, mode, target, sizeof(mode)) != 0) {
		reply_str(c, "error: arguments");
		return;
	}
	if ((rc = call_str(g, target, "x", out, sizeof(out))) != 0 || g->nlanes == 0) {
		snprintf(out, sizeof(out), "error: no lane (%d)", rc);
		reply_str(c, out);
		return;
	}
	rc = breach(g, g->lanes[0], mode, target);
	reply_str(c, rc == 0 ? "sent" : "error: mode");
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "echo", "str->str", m_echo },
		{ "sink", "chan<bytes>->str", m_sink },
		{ "flood", "chan<bytes>->str", m_flood },
		{ "stream", "str->str", m_stream },
		{ "badanswer", "str->str", m_badanswer },
		{ "call", "str,str->str", m_call },
		{ "lanes", "->u64", m_lanes },
		{ "polls", "->u64", tg_polls_method },
		{ "deaf", "->str", m_deaf },
		{ "burst", "str,u64->str", m_burst },
		{ "sleep", "u64->unit", m_sleep },
		{ "callsleep", "str,u64->str", m_callsleep },
		{ "break", "str,str->str", m_break },
		{ "accuse", "str->str", m_accuse },
		{ "churn", "str,u64->str", m_churn },
		{ "load", "str,u64->str", m_load },
		{ "storm", "str,u64->str", m_storm },
		{ "gate", "str,u64->str", m_gate },
	};
	struct guest *g;
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0) {
		fprintf(stderr, "lanebreaker: attach: %s\n", why);
		return 1;
	}
	prefix = tg_prefix(argc, argv, "lb");
	tg_register(g, prefix, methods, sizeof(methods) / sizeof(methods[0]));
	rc = tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
