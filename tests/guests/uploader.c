/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* uploader: a test guest for uploads (rx<T> arguments, daemon/upload.c),
 * as the caller that sends and as the callee that reads, well behaved or
 * not. Built on libguest, with its internals (guestlib/internal.h) to
 * send what libguest would refuse. Methods PREFIX.NAME (--prefix, default
 * "up"); the callees all take "u64,rx<u64>->u64", the u64 their N:
 *   sum N C		reads C, answers the sum of its items at its end
 *			(with --mt: on a microthread, guest_chan_accept_reader)
 *   take N C		answers the sum of the first N items, reading no more
 *   ignore N C		answers 0 at once, never reading C
 *   stop N C		tells the sender to stop after N items; answers how
 *			many came in all once C ends
 *   crash N C		exits after N items
 *   stall N C		neither reads C nor answers
 *   hold N C		reads C but reports nothing taken (guest_chan_hold):
 *			grants no more than the window; answers at its end
 *   evil N C		sends a Data on C, which it receives on
 *   greedy N C		grants so much that C's credit word goes negative
 *   last		"END ITEMS": how the last upload it read ended (its
 *			on_end status) and how many items came
 * The caller:
 *   send M N A MODE	opens a channel to send on, calls M(A, it), sends
 *			1..N and closes it; answers "sent K rc R: ANSWER",
 *			K the items sent, R the first send's error (0: none),
 *			ANSWER "ok SUM" or "err TEXT". MODEs: 0 as said;
 *			1 exits after the items, before the end; 2 sends
 *			past its credit (raw Data, over the lane if the
 *			channel went there); 3 sends a Data after
 *			its Close; 4 cancels the call after N/2 items;
 *			5 ends with a Reset; 10 passes an even id, 11 an
 *			odd id it did not open, 12 an id past max_channels */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/channel.h"
#include "tests/guests/testguest.h"

static struct guest *g;
static int on_mt;
static int last_end = 1;	/* 1: none yet */
static uint64_t last_items;

static int
get_args(const uint8_t *args, size_t len, uint64_t *n, uint64_t *chan)
{
	size_t pos = 0;

	return guest_pc_get_u64(args, len, &pos, n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, chan) != 0 || *chan > UINT32_MAX ? -1 : 0;
}

static void
reply_u64(struct guest_call *c, uint64_t v)
{
	uint8_t out[16];
	size_t n = 0;

	guest_pc_put_u64(out, sizeof(out), &n, v);
	guest_reply(c, out, n);
}

static void
reply_str(struct guest_call *c, const char *s)
{
	uint8_t out[512];
	size_t n = 0;

	guest_pc_put_str(out, sizeof(out), &n, s, strlen(s));
	guest_reply(c, out, n);
}

/* -- the callee ---------------------------------------------------------- */

enum { SUM, TAKE, STOP, CRASH, HOLD };

struct reading {
	struct guest_call	*call;	/* NULL once answered */
	int			kind;
	uint32_t		chan;
	uint64_t		n;
	uint64_t		items;
	uint64_t		sum;
};

static void
r_item(void *ctx, const uint8_t *item, size_t len)
{
	struct reading *r = ctx;
	size_t pos = 0;
	uint64_t v = 0;

	guest_pc_get_u64(item, len, &pos, &v);
	r->items++;
	r->sum += v;
	if (r->kind == CRASH && r->items >= r->n)
		_exit(3);
	if (r->kind == TAKE && r->items == r->n && r->call != NULL) {
		reply_u64(r->call, r->sum);	/* the rest unread */
		r->call = NULL;
	}
	if (r->kind == STOP && r->items == r->n)
		guest_chan_reset(g, r->chan);
}

static void
r_end(void *ctx, int status)
{
	struct reading *r = ctx;

	last_end = status;
	last_items = r->items;
	if (r->call != NULL) {
		if (r->kind == STOP)
			reply_u64(r->call, r->items);
		else if (status != 0)
			guest_reply_error(r->call, "the stream was reset");
		else
			reply_u64(r->call, r->sum);
	}
	free(r);
}

/* On a microthread: the items from a runtime channel, blocking. */
static void
read_mt(struct guest_call *c, uint32_t chan)
{
	struct guest_mtchan *ch;
	struct guest_bytes it;
	uint64_t sum = 0, items = 0, v;
	int end = 0, rc;
	size_t pos;

	if ((rc = guest_chan_accept_reader(g, chan, &ch, &end)) != 0) {
		guest_reply_error(c, "cannot accept");
		return;
	}
	while (guest_mtchan_recv(ch, &it) == 0) {
		pos = 0;
		v = 0;
		guest_pc_get_u64(it.data, it.len, &pos, &v);
		sum += v;
		items++;
		free(it.data);
	}
	guest_mtchan_close(ch, GUEST_MT_READER);
	last_end = end;
	last_items = items;
	if (end != 0)
		guest_reply_error(c, "the stream was reset");
	else
		reply_u64(c, sum);
}

static void
read_kind(struct guest_call *c, const uint8_t *args, size_t len, int kind)
{
	struct reading *r;
	uint64_t n, chan;

	if (get_args(args, len, &n, &chan) != 0) {
		guest_reply_error(c, "bad arguments");
		return;
	}
	if (on_mt && kind == SUM) {
		read_mt(c, (uint32_t)chan);
		return;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	*r = (struct reading){ .call = c, .kind = kind, .chan = (uint32_t)chan, .n = n };
	if (guest_chan_accept(g, (uint32_t)chan, r_item, r_end, r) != 0) {
		free(r);
		guest_reply_error(c, "cannot accept");
		return;
	}
	if (kind == HOLD)
		guest_chan_hold(g, (uint32_t)chan);	/* -ENOTCONN once ended */
}

static void
m_sum(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	read_kind(c, args, len, SUM);
}

static void
m_take(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	read_kind(c, args, len, TAKE);
}

static void
m_stop(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	read_kind(c, args, len, STOP);
}

static void
m_hold(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	read_kind(c, args, len, HOLD);
}

static void
m_crash(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	read_kind(c, args, len, CRASH);
}

static void
m_ignore(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_u64(c, 0);
}

static void
m_stall(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)c;
	(void)args;
	(void)len;
	(void)ctx;	/* never answered */
}

static void
m_evil(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, chan;
	uint8_t item[1] = { 7 };

	(void)ctx;
	if (get_args(args, len, &n, &chan) != 0)
		return;
	(void)c;
	/* Data on a channel hubd sends on: hubd's violation to see */
	lg_send_msg(g, HP_MSG_DATA, (uint32_t)chan, 0, NULL, 0, item, 1, 0, NULL);
}

static void
m_greedy(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, chan;

	(void)ctx;
	(void)c;
	if (get_args(args, len, &n, &chan) != 0 || chan >= g->chans.max)
		return;
	/* r[shm.flow.wrap-rule]: a window past 2^31 reads as negative */
	hp_chan_grant(&g->chans.entries[chan], 0x80000001u);
	hp_endpoint_notify_credit(&g->ep, &g->chans.entries[chan].granted_total);
}

static void
m_last(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char text[64];

	(void)args;
	(void)len;
	(void)ctx;
	snprintf(text, sizeof(text), "%d %llu", last_end, (unsigned long long)last_items);
	reply_str(c, text);
}

/* -- the caller ---------------------------------------------------------- */

struct sending {
	struct guest_call	*call;
	int			done;	/* the answer came */
	int			sent_done;	/* the items are out */
	char			answer[256];
	uint64_t		sent;
	int			rc;
};

static void
s_answer(struct sending *s)
{
	char text[400];

	snprintf(text, sizeof(text), "sent %llu rc %d: %s", (unsigned long long)s->sent,
		 s->rc, s->answer);
	reply_str(s->call, text);
	free(s);
}

static void
s_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct sending *s = ctx;
	const char *e;
	size_t pos = 0, n;
	uint64_t v;

	(void)e;
	(void)n;
	if (status == 0 && guest_pc_get_u64(result, len, &pos, &v) == 0)
		snprintf(s->answer, sizeof(s->answer), "ok %llu", (unsigned long long)v);
	else if (status != 0 && result != NULL)	/* an error's text */
		snprintf(s->answer, sizeof(s->answer), "err %.*s", (int)len, (const char *)result);
	else
		snprintf(s->answer, sizeof(s->answer), "err status %d", status);
	s->done = 1;
	if (s->sent_done)
		s_answer(s);
}

static void
m_send(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct sending *s;
	const char *m;
	char method[128];
	size_t pos = 0, mn, n;
	uint64_t count, carg, mode, chan;
	uint8_t arg[32], item[16];
	uint32_t call_id = 0;
	int64_t id;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &count) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &carg) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &mode) != 0) {
		guest_reply_error(c, "bad arguments");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	s->call = c;
	if ((id = guest_chan_open_send(g)) < 0) {
		free(s);
		guest_reply_error(c, "no channel");
		return;
	}
	chan = (uint64_t)id;
	if (mode == 10)
		chan = 2;
	else if (mode == 11)
		chan = (uint64_t)id + 2 < g->chans.max ? (uint64_t)id + 2 : 1;
	else if (mode == 12)
		chan = g->chans.max + 1;
	n = 0;
	guest_pc_put_u64(arg, sizeof(arg), &n, carg);
	guest_pc_put_u64(arg, sizeof(arg), &n, chan);
	if (guest_call_async(g, method, arg, n, s_done, s, &call_id) != 0) {
		free(s);
		guest_reply_error(c, "cannot call");
		return;
	}
	if (mode >= 10) {
		/* refused by hubd: nothing to send; our own channel was never
		 * passed on (a Close of it would be a violation) */
		s->sent_done = 1;
		if (s->done)
			s_answer(s);
		return;
	}
	for (uint64_t i = 1; i <= count && s->rc == 0; i++) {
		n = 0;
		guest_pc_put_u64(item, sizeof(item), &n, i);
		if (mode == 4 && i == count / 2 + 1)
			guest_cancel(g, call_id);
		s->rc = guest_chan_send(g, (uint32_t)id, item, n, 10000);
		if (s->rc == 0)
			s->sent++;
	}
	if (mode == 1)
		_exit(4);	/* gone mid-upload */
	if (mode == 2) {
		/* past the window: hubd granted it no more than initial_credit;
		 * over a lane (the channel moved there) the callee granted it */
		uint8_t big[1024] = { 0 };
		struct lg_lane *ln = g->chans.rx[id].lane;
		uint32_t z = ln != NULL ? g->chans.rx[id].lane_chan : (uint32_t)id;

		for (int i = 0; i < 1000; i++)
			if (lg_send_on(g, ln, HP_MSG_DATA, z, 0, NULL, 0, big, sizeof(big), 0,
				       NULL) != 0)
				break;
	}
	if (mode == 5)
		guest_chan_reset(g, (uint32_t)id);
	else
		guest_chan_close(g, (uint32_t)id);	/* -ENOTCONN if stopped */
	if (mode == 3) {
		n = 0;
		guest_pc_put_u64(item, sizeof(item), &n, 99);
		lg_send_msg(g, HP_MSG_DATA, (uint32_t)id, 0, NULL, 0, item, n, 0, NULL);
	}
	s->sent_done = 1;
	if (s->done)
		s_answer(s);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "sum", "u64,rx<u64>->u64", m_sum },
		{ "take", "u64,rx<u64>->u64", m_take },
		{ "ignore", "u64,rx<u64>->u64", m_ignore },
		{ "stop", "u64,rx<u64>->u64", m_stop },
		{ "crash", "u64,rx<u64>->u64", m_crash },
		{ "stall", "u64,rx<u64>->u64", m_stall },
		{ "hold", "u64,rx<u64>->u64", m_hold },
		{ "evil", "u64,rx<u64>->u64", m_evil },
		{ "greedy", "u64,rx<u64>->u64", m_greedy },
		{ "last", "->str", m_last },
		{ "send", "str,u64,u64,u64->str", m_send },
	};
	struct guest_rt_config cfg = { 0 };
	const char *why;
	int rc;

	for (int i = 1; i < argc; i++)
		on_mt |= strcmp(argv[i], "--mt") == 0;
	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "up"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = on_mt ? guest_run_mt(g, &cfg) : tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
