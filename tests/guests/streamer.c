/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* streamer: a test guest for channels between guests. Methods are named
 * PREFIX.x, with PREFIX from --prefix (default "streamer"), so that one
 * instance can produce for another. With --shared FILE the producer
 * counts the bytes it has sent in the file's first 8 bytes, where the
 * consumer reads them (the slow receiver's check).
 *   produce N SIZE CHAN	sends N items on CHAN, each SIZE bytes (a
 *			chan<bytes>: postcard length, then byte k of item i
 *			is (i * 7 + k) mod 256, i from 0), closes CHAN,
 *			answers N. A send that fails ends the call with
 *			Err "stopped after I items: ERR" (ERR: ENOTCONN or
 *			the error's number)
 *   produce_open N SIZE CHAN	the same without closing CHAN
 *   produce_late N SIZE CHAN	answers N first, then sends and closes as
 *			produce; last says how many it sent, what the last
 *			send and the close returned: "late: sent I: ERR,
 *			close ERR" (0 or ENOTCONN)
 *   produce_crash N SIZE CHAN	sends N/2 items, then SIGKILLs itself
 *   last		how the last produce ended: "sent I: ERR" or "sent I"
 *   digest BYTES	answers "LEN HASH": the argument's length and its
 *			XXH3-64 in hex (what a caller sent, checked whole)
 *   trickle N CHAN	sends 1..N (u64 items) on CHAN, then holds CHAN open,
 *			serving, until the call is cancelled (its caller went
 *			away: answers Cancelled) or for 60 s (closes CHAN,
 *			answers N): a stream whose reader must see the items
 *			before its end
 *   drip N MS CHAN	sends 1..N on CHAN, one each MS ms, serving between,
 *			then closes CHAN and answers N (Cancelled if its
 *			caller goes): a stream slower than its caller's wait
 *   consume METHOD N SIZE STOP HOW DELAY	opens a channel to receive on,
 *			calls METHOD(N, SIZE, channel) and checks every item
 *			(its size, its index, its bytes); after STOP items
 *			(0: never) resets the channel (HOW 0) or SIGKILLs
 *			itself (HOW 1); sleeps DELAY microseconds in each
 *			item. Answers "items=I bad=B end=E gap=G call=C":
 *			E how the channel ended when the call returned (none,
 *			closed, reset), G the most the producer was ever ahead
 *			of what had been consumed (--shared, else 0), C "ok R"
 *			or "error: KIND[: MESSAGE]"
 *   badchan METHOD CHAN	calls METHOD(1, 1, CHAN) with CHAN as given;
 *			answers "ok R" or "error: KIND[: MESSAGE]"
 *   dupchan METHOD	opens a channel, passes it to METHOD(50, 1000, ch)
 *			and, while that call runs, to a second call of METHOD:
 *			answers the second's outcome, then "; first: " the
 *			first's, as consume's C
 *   hold METHOD N SIZE WINDOW STOP	as consume, on a held channel
 *			(guest_chan_hold) whose items on_item queues: takes
 *			none until no further item fits in WINDOW (the hub's
 *			initial_credit), serves on 20 times 10 ms, then takes
 *			and checks them one at a time, reporting each
 *			(guest_chan_consumed); after STOP items (0: never)
 *			resets the channel and drops its queue. Answers
 *			"items=I bad=B full=F later=L sent=S1,S2 most=M end=E
 *			call=C": F the bytes queued once the window was full,
 *			L after serving on, S1 and S2 what the producer had
 *			sent then (--shared, else 0), M the most ever queued
 *   waits		this guest's credit waits (guest_get_stats) */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "guest.h"
#include "proto/clock.h"
#include "tests/guests/testguest.h"

static struct guest *g;
static uint64_t *shared;	/* [0]: bytes the producer has sent */
static char last[128] = "none";

static uint8_t
pattern(uint64_t item, uint64_t k)
{
	return (uint8_t)(item * 7 + k);
}

static void
reply_str(struct guest_call *c, const char *s)
{
	uint8_t buf[512];
	size_t pos = 0;

	guest_pc_put_str(buf, sizeof(buf), &pos, s, strnlen(s, 400));
	guest_reply(c, buf, pos);
}

static void
reply_u64(struct guest_call *c, uint64_t v)
{
	uint8_t buf[10];
	size_t pos = 0;

	guest_pc_put_u64(buf, sizeof(buf), &pos, v);
	guest_reply(c, buf, pos);
}

enum { PRODUCE, PRODUCE_OPEN, PRODUCE_CRASH, PRODUCE_LATE };

static const char *
chan_rc_name(int rc)
{
	return rc == 0 ? "0" : rc == -ENOTCONN ? "ENOTCONN" : strerror(-rc);
}

static void
produce_as(struct guest_call *c, const uint8_t *args, size_t len, int how)
{
	uint64_t n, size, chan, i;
	size_t pos = 0, ilen;
	uint8_t *item;
	char text[128];
	int rc = 0;

	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &size) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0 || size > (1u << 20) ||
	    chan > UINT32_MAX || (item = malloc(size + 16)) == NULL) {
		guest_reply_error(c, "produce takes a count, a size and a channel");
		return;
	}
	if (shared != NULL)
		__atomic_store_n(&shared[0], 0, __ATOMIC_RELEASE);
	if (how == PRODUCE_LATE)
		reply_u64(c, n);
	for (i = 0; i < n; i++) {
		if (how == PRODUCE_CRASH && i == n / 2)
			kill(getpid(), SIGKILL);
		ilen = 0;
		guest_pc_put_u64(item, size + 16, &ilen, size);
		for (uint64_t k = 0; k < size; k++)
			item[ilen + k] = pattern(i, k);
		ilen += size;
		if ((rc = guest_chan_send(g, (uint32_t)chan, item, ilen, 30000)) != 0)
			break;
		if (shared != NULL)
			__atomic_add_fetch(&shared[0], ilen, __ATOMIC_RELEASE);
		/* a receiver's stop (a Reset on CHAN) is seen when served */
		if ((rc = guest_service(g)) != 0)
			break;
	}
	free(item);
	if (how == PRODUCE_LATE) {
		int end = guest_chan_close(g, (uint32_t)chan);

		snprintf(last, sizeof(last), "late: sent %llu: %s, close %s",
			 (unsigned long long)i, chan_rc_name(rc), chan_rc_name(end));
		return;
	}
	if (rc != 0) {
		snprintf(last, sizeof(last), "sent %llu: %s", (unsigned long long)i,
			 rc == -ENOTCONN ? "ENOTCONN" : strerror(-rc));
		snprintf(text, sizeof(text), "stopped after %llu items: %s",
			 (unsigned long long)i, rc == -ENOTCONN ? "ENOTCONN" : strerror(-rc));
		guest_reply_error(c, text);
		return;
	}
	snprintf(last, sizeof(last), "sent %llu", (unsigned long long)i);
	if (how != PRODUCE_OPEN)
		guest_chan_close(g, (uint32_t)chan);
	reply_u64(c, n);
}

static void
produce(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	produce_as(c, args, len, PRODUCE);
}

static void
produce_open(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	produce_as(c, args, len, PRODUCE_OPEN);
}

static void
produce_crash(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	produce_as(c, args, len, PRODUCE_CRASH);
}

static void
produce_late(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	produce_as(c, args, len, PRODUCE_LATE);
}

static void
digest(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const uint8_t *b;
	size_t pos = 0, n;
	char text[64];

	(void)ctx;
	if (guest_pc_get_bytes(args, len, &pos, &b, &n) != 0) {
		guest_reply_error(c, "digest takes bytes");
		return;
	}
	snprintf(text, sizeof(text), "%zu %016llx", n,
		 (unsigned long long)XXH3_64bits(b, n));
	reply_str(c, text);
}

/* A u64 stream's end: closed and answered n, or reset and answered
 * Cancelled (its caller went) or an error (rc, a send failed). */
static void
end_stream(struct guest_call *c, uint64_t chan, int rc, uint64_t n)
{
	if (rc != 0 || guest_call_cancelled(c)) {
		guest_chan_reset(g, (uint32_t)chan);
		if (guest_call_cancelled(c))
			guest_reply_cancelled(c);
		else
			guest_reply_error(c, "the stream broke");
		return;
	}
	guest_chan_close(g, (uint32_t)chan);
	reply_u64(c, n);
}

static void
drip(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, ms, chan;
	size_t pos = 0, ilen;
	uint8_t item[16];
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 || ms > 60000 ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0 || chan > UINT32_MAX) {
		guest_reply_error(c, "drip takes a count, milliseconds and a channel");
		return;
	}
	for (uint64_t i = 1; i <= n && rc == 0 && !guest_call_cancelled(c); i++) {
		/* serving while it waits: the Cancel is seen */
		for (uint64_t next = hp_now_ns() + ms * 1000000u;
		     rc == 0 && !guest_call_cancelled(c) && hp_now_ns() < next;)
			rc = guest_service_wait(g, 10);
		ilen = 0;
		guest_pc_put_u64(item, sizeof(item), &ilen, i);
		if (rc == 0 && !guest_call_cancelled(c))
			rc = guest_chan_send(g, (uint32_t)chan, item, ilen, 30000);
	}
	end_stream(c, chan, rc, n);
}

static void
trickle(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, chan;
	size_t pos = 0, ilen;
	uint8_t item[16];
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0 || chan > UINT32_MAX) {
		guest_reply_error(c, "trickle takes a count and a channel");
		return;
	}
	for (uint64_t i = 1; i <= n && rc == 0; i++) {
		ilen = 0;
		guest_pc_put_u64(item, sizeof(item), &ilen, i);
		rc = guest_chan_send(g, (uint32_t)chan, item, ilen, 30000);
	}
	/* the stream stays open: the caller's Cancel ends it */
	for (int k = 0; k < 600 && rc == 0 && !guest_call_cancelled(c); k++)
		rc = guest_service_wait(g, 100);
	end_stream(c, chan, rc, n);
}

static void
last_outcome(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_str(c, last);
}

/* -- the receiving side -------------------------------------------------- */

struct recv {
	uint32_t	chan;
	uint64_t	size;
	uint64_t	items;
	uint64_t	bad;
	uint64_t	consumed;	/* payload bytes */
	uint64_t	gap;
	uint64_t	stop;
	uint64_t	how;
	uint64_t	delay_us;
	int		ended;		/* 0 no, 1 Close, 2 Reset */
};

/* The bytes the producer has sent (--shared), else 0. */
static uint64_t
sent_bytes(void)
{
	return shared != NULL ? __atomic_load_n(&shared[0], __ATOMIC_ACQUIRE) : 0;
}

/* An item consumed: checked (its size, its index, its bytes), counted. */
static void
take_item(struct recv *r, const uint8_t *item, size_t len)
{
	const uint8_t *b;
	size_t n, pos = 0;
	uint64_t sent = sent_bytes();

	/* what the producer has sent beyond what we had consumed:
	 * r[shm.flow.remaining-credit] end to end, at most the window */
	if (sent > r->consumed && sent - r->consumed > r->gap)
		r->gap = sent - r->consumed;
	if (guest_pc_get_bytes(item, len, &pos, &b, &n) != 0 || pos != len || n != r->size) {
		r->bad++;
	} else {
		for (size_t k = 0; k < n; k++) {
			if (b[k] != pattern(r->items, k)) {
				r->bad++;
				break;
			}
		}
	}
	r->items++;
	r->consumed += len;
}

static void
on_item(void *ctx, const uint8_t *item, size_t len)
{
	struct recv *r = ctx;

	take_item(r, item, len);
	if (r->delay_us > 0)
		usleep((useconds_t)r->delay_us);
	if (r->stop != 0 && r->items == r->stop) {
		if (r->how == 1)
			kill(getpid(), SIGKILL);
		if (guest_chan_reset(g, r->chan) != 0)
			r->bad++;
	}
}

static void
on_end(void *ctx, int status)
{
	struct recv *r = ctx;

	r->ended = status == 0 ? 1 : 2;
}

/* "ok R" or "error: KIND[: MESSAGE]" for a call's outcome. */
static void
outcome(char *text, size_t cap, int rc, const uint8_t *res, size_t rlen)
{
	size_t pos = 0;
	uint64_t v;

	if (rc == 0 && guest_pc_get_u64(res, rlen, &pos, &v) == 0)
		snprintf(text, cap, "ok %llu", (unsigned long long)v);
	else if (rc == -EREMOTEIO || rc == -ECONNREFUSED)
		snprintf(text, cap, "error: %s: %.*s", rc == -EREMOTEIO ? "user" : "hub",
			 (int)(rlen > 200 ? 200 : rlen), (const char *)res);
	else if (rc == -ECANCELED)
		snprintf(text, cap, "error: cancelled");
	else
		snprintf(text, cap, "error: %s", strerror(-rc));
}

static int
chan_args(uint8_t *arg, size_t cap, uint64_t n, uint64_t size, uint64_t chan)
{
	size_t pos = 0;

	guest_pc_put_u64(arg, cap, &pos, n);
	guest_pc_put_u64(arg, cap, &pos, size);
	guest_pc_put_u64(arg, cap, &pos, chan);
	return (int)pos;
}

static int
method_arg(const uint8_t *args, size_t len, size_t *pos, char *method, size_t cap)
{
	const char *m;
	size_t mn;

	if (guest_pc_get_str(args, len, pos, &m, &mn) != 0 || mn >= cap)
		return -1;
	memcpy(method, m, mn);
	method[mn] = '\0';
	return 0;
}

static void
consume(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const char *const ends[] = { "none", "closed", "reset" };
	char method[128], callres[256], text[512];
	uint8_t arg[64], res[256];
	size_t pos = 0, rlen = 0;
	uint64_t n;
	struct recv *r;
	int64_t chan;
	int rc;

	(void)ctx;
	/* on the heap: should the end ever come after the answer (a bug),
	 * it finds memory that is still ours */
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    method_arg(args, len, &pos, method, sizeof(method)) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &r->size) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &r->stop) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &r->how) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &r->delay_us) != 0) {
		free(r);
		guest_reply_error(c, "consume takes a method, a count, a size, a stop, "
				  "how, and a delay");
		return;
	}
	if ((chan = guest_chan_open(g, on_item, on_end, r)) < 0) {
		free(r);
		guest_reply_error(c, "no channel");
		return;
	}
	r->chan = (uint32_t)chan;
	rc = guest_call(g, method, arg, (size_t)chan_args(arg, sizeof(arg), n, r->size,
			(uint64_t)chan), res, sizeof(res), &rlen, 60000);
	outcome(callres, sizeof(callres), rc, res, rlen);
	snprintf(text, sizeof(text), "items=%llu bad=%llu end=%s gap=%llu call=%s",
		 (unsigned long long)r->items, (unsigned long long)r->bad, ends[r->ended],
		 (unsigned long long)r->gap, callres);
	if (r->ended)
		free(r);
	reply_str(c, text);
}

static void
badchan(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char method[128], text[256];
	uint8_t arg[64], res[256];
	size_t pos = 0, rlen = 0;
	uint64_t chan;
	int rc;

	(void)ctx;
	if (method_arg(args, len, &pos, method, sizeof(method)) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0) {
		guest_reply_error(c, "badchan takes a method and a channel id");
		return;
	}
	rc = guest_call(g, method, arg, (size_t)chan_args(arg, sizeof(arg), 1, 1, chan),
			res, sizeof(res), &rlen, 10000);
	outcome(text, sizeof(text), rc, res, rlen);
	reply_str(c, text);
}

struct first {
	int	done;
	char	text[256];
};

static void
first_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct first *f = ctx;

	outcome(f->text, sizeof(f->text), status, result, len);
	f->done = 1;
}

static void
dupchan(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct recv *r;
	struct first *f;
	char method[128], second[256], text[600];
	uint8_t arg[64], res[256];
	size_t pos = 0, rlen = 0;
	int64_t chan;
	int rc;

	(void)ctx;
	if (method_arg(args, len, &pos, method, sizeof(method)) != 0) {
		guest_reply_error(c, "dupchan takes a method");
		return;
	}
	r = calloc(1, sizeof(*r));
	f = calloc(1, sizeof(*f));
	if (r == NULL || f == NULL || (chan = guest_chan_open(g, on_item, on_end, r)) < 0) {
		free(r);
		free(f);
		guest_reply_error(c, "no channel");
		return;
	}
	r->chan = (uint32_t)chan;
	r->size = 1000;
	/* a slow receiver: the first call is still streaming when the
	 * second asks for the same channel */
	r->delay_us = 2000;
	rc = guest_call_async(g, method, arg, (size_t)chan_args(arg, sizeof(arg), 50, 1000,
			      (uint64_t)chan), first_done, f, NULL);
	if (rc != 0) {
		guest_reply_error(c, "the first call did not start");
		return;
	}
	rc = guest_call(g, method, arg, (size_t)chan_args(arg, sizeof(arg), 1, 1,
			(uint64_t)chan), res, sizeof(res), &rlen, 10000);
	outcome(second, sizeof(second), rc, res, rlen);
	while (!f->done)
		if (guest_service_wait(g, 1000) != 0)
			break;
	snprintf(text, sizeof(text), "%s; first: %s items=%llu bad=%llu", second, f->text,
		 (unsigned long long)r->items, (unsigned long long)r->bad);
	if (r->ended)
		free(r);
	free(f);
	reply_str(c, text);
}

/* -- a receiver with a queue of its own, on a held channel ------------- */

struct qitem {
	struct qitem	*next;
	size_t		len;
	uint8_t		data[];
};

struct holder {
	struct recv	r;		/* the checks, and how the channel ended */
	struct qitem	*head, **tail;
	uint64_t	queued;		/* bytes in the queue */
	uint64_t	most;		/* the most it ever held */
	int		done;		/* the call answered */
	char		call[256];
};

static void
hold_item(void *ctx, const uint8_t *item, size_t len)
{
	struct holder *h = ctx;
	struct qitem *it = malloc(sizeof(*it) + len);

	if (it == NULL) {	/* dropped: taken, as far as credit goes */
		h->r.bad++;
		guest_chan_consumed(g, h->r.chan, len);
		return;
	}
	it->next = NULL;
	it->len = len;
	memcpy(it->data, item, len);
	*h->tail = it;
	h->tail = &it->next;
	h->queued += len;
	if (h->queued > h->most)
		h->most = h->queued;
}

static void
hold_end(void *ctx, int status)
{
	struct holder *h = ctx;

	h->r.ended = status == 0 ? 1 : 2;
}

static void
hold_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct holder *h = ctx;

	outcome(h->call, sizeof(h->call), status, result, len);
	h->done = 1;
}

static void
hold_drop(struct holder *h)
{
	struct qitem *it;

	while ((it = h->head) != NULL) {
		h->head = it->next;
		free(it);
	}
	h->tail = &h->head;
	h->queued = 0;
}

static void
hold(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const char *const ends[] = { "none", "closed", "reset" };
	char method[128], text[512];
	uint8_t arg[64];
	size_t pos = 0, item;
	uint64_t n, window, full, later, sent_full, sent_later, taken = 0;
	struct holder *h;
	struct qitem *it;
	int64_t chan;
	int i, idle = 0;

	(void)ctx;
	if ((h = calloc(1, sizeof(*h))) == NULL ||
	    method_arg(args, len, &pos, method, sizeof(method)) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &h->r.size) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &h->r.stop) != 0) {
		free(h);
		guest_reply_error(c, "hold takes a method, a count, a size, the window "
				  "and a stop");
		return;
	}
	h->tail = &h->head;
	if ((chan = guest_chan_open(g, hold_item, hold_end, h)) < 0 ||
	    guest_chan_hold(g, (uint32_t)chan) != 0) {
		free(h);
		guest_reply_error(c, "no channel");
		return;
	}
	h->r.chan = (uint32_t)chan;
	if (guest_call_async(g, method, arg, (size_t)chan_args(arg, sizeof(arg), n, h->r.size,
			     (uint64_t)chan), hold_done, h, NULL) != 0) {
		guest_reply_error(c, "the call did not start");
		return;
	}
	item = 0;	/* an item's length: the postcard length, then the bytes */
	guest_pc_put_u64(arg, sizeof(arg), &item, h->r.size);
	item += h->r.size;
	/* taking nothing, until no further item fits in the window */
	for (i = 0; i < 1000 && h->queued + item <= window && !h->done; i++)
		guest_service_wait(g, 10);
	full = h->queued;
	sent_full = sent_bytes();
	/* the reader sleeps while the guest serves on: nothing more comes */
	for (i = 0; i < 20; i++)
		guest_service_wait(g, 10);
	later = h->queued;
	sent_later = sent_bytes();
	/* then takes it all, an item at a time, reporting each */
	while (!h->done || h->head != NULL) {
		if ((it = h->head) == NULL) {
			if (guest_service_wait(g, 100) != 0 || ++idle > 300)
				break;	/* the hub is gone, or 30 s of nothing */
			continue;
		}
		idle = 0;
		if ((h->head = it->next) == NULL)
			h->tail = &h->head;
		h->queued -= it->len;
		take_item(&h->r, it->data, it->len);
		/* once the channel ended its id is not ours to report on */
		if (h->r.ended == 0 && guest_chan_consumed(g, h->r.chan, it->len) != 0)
			h->r.bad++;
		free(it);
		if (++taken == h->r.stop) {	/* stop: the rest is dropped */
			if (guest_chan_reset(g, h->r.chan) != 0)
				h->r.bad++;
			hold_drop(h);
		}
		guest_service(g);
	}
	snprintf(text, sizeof(text), "items=%llu bad=%llu full=%llu later=%llu sent=%llu,%llu "
		 "most=%llu end=%s call=%s", (unsigned long long)h->r.items,
		 (unsigned long long)h->r.bad, (unsigned long long)full,
		 (unsigned long long)later, (unsigned long long)sent_full,
		 (unsigned long long)sent_later, (unsigned long long)h->most,
		 ends[h->r.ended], h->done ? h->call : "none");
	hold_drop(h);
	if (h->r.ended && h->done)
		free(h);
	reply_str(c, text);
}

static void
credit_waits(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest_stats st = { .size = sizeof(st) };

	(void)args;
	(void)len;
	(void)ctx;
	guest_get_stats(g, &st);
	reply_u64(c, st.credit_waits);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "produce", "u64,u64,chan<bytes>->u64", produce },
		{ "produce_open", "u64,u64,chan<bytes>->u64", produce_open },
		{ "produce_crash", "u64,u64,chan<bytes>->u64", produce_crash },
		{ "produce_late", "u64,u64,chan<bytes>->u64", produce_late },
		{ "last", "->str", last_outcome },
		{ "trickle", "u64,chan<u64>->u64", trickle },
		{ "drip", "u64,u64,chan<u64>->u64", drip },
		{ "digest", "bytes->str", digest },
		{ "consume", "str,u64,u64,u64,u64,u64->str", consume },
		{ "badchan", "str,u64->str", badchan },
		{ "dupchan", "str->str", dupchan },
		{ "hold", "str,u64,u64,u64,u64->str", hold },
		{ "waits", "->u64", credit_waits },
	};
	const char *why, *path = NULL;
	int rc, fd;

	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--shared") == 0)
			path = argv[i + 1];
	if (path != NULL) {
		if ((fd = open(path, O_RDWR)) < 0)
			err(1, "%s", path);
		shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (shared == MAP_FAILED)
			err(1, "mmap %s", path);
		close(fd);
	}
	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "streamer"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = guest_run(g);
	if (rc != 0)
		fprintf(stderr, "streamer: the loop ended: %s\n", strerror(-rc));
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
