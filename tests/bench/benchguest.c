/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* benchguest: measures the hub's data path from inside a guest, against
 * the real hubd and its host services. Methods, named PREFIX.x (--prefix):
 *   rtt METHOD N SIZE	N calls of METHOD (hub.ping, or another guest's
 *			PREFIX.echo: routed) with a SIZE-byte argument,
 *			one at a time, each answer checked:
 *			"median_ns=.. p99_ns=.. p999_ns=.."
 *   echo BYTES		its argument back
 *   pipe MS W AT	hub.ping with W calls in flight for MS ms from AT
 *			(wall clock ms since the epoch, 0 now): "per_s=.."
 *   pipeto METHOD MS W AT  the same with METHOD (another guest's
 *			PREFIX.echo), each answer checked, after 100 calls
 *			one at a time (a lane is open by then, if any):
 *			"per_s=.. calls=.. failed=.."
 *   stream BYTES ITEM	BYTES in ITEM-byte items (up to 32 MiB) into
 *			hub.sink, the sink's XXH3 hash checked against ours
 *			after the clock stops:
 *			"items_per_s=.. gb_per_s=.. status=.. send=.. hash_ok=.."
 *   absorb BYTES	a call's bytes argument, copied out of the slot (what
 *			a reader that keeps the data does): its length
 *   g2g PEER BYTES ITEM W  BYTES in ITEM-byte arguments of PEER.absorb
 *			calls (another benchguest), W in flight:
 *			"gb_per_s=.. calls=.. failed=.."
 *   idle METHOD N MS	N 8-byte calls of METHOD with MS ms of silence
 *			before each (every side asleep): "median_ns=.."
 *   nest BYTES		calls hub.ping with its argument from its handler and
 *			answers with the result (a handler that calls out)
 *   flood METHOD MS W	W calls of METHOD (8 bytes) in flight for MS ms:
 *			"per_s=.. calls=.. failed=.."
 *   rss		its memory: "rss_kb=.. hwm_kb=.." (VmRSS, VmHWM)
 * --mt runs it on microthreads (guest_run_mt), --processors P on P. */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>
#include "proto/xxh.h"

#include "proto/clock.h"
#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;

static void
reply_text(struct guest_call *c, const char *text)
{
	uint8_t buf[256];
	size_t pos = 0;

	guest_pc_put_str(buf, sizeof(buf), &pos, text, strlen(text));
	guest_reply(c, buf, pos);
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One call of method with the argument arg[0..len) (postcard bytes), its
 * answer checked: the same bytes back. */
static int
call_echo(const char *method, const uint8_t *arg, size_t len, uint8_t *res, size_t cap)
{
	size_t rlen;
	int rc = guest_call(g, method, arg, len, res, cap, &rlen, 10000);

	if (rc == 0 && (rlen != len || memcmp(res, arg, len) != 0))
		return -EBADMSG;
	return rc;
}

/* A SIZE-byte bytes argument, postcard encoded: *len bytes at *argp. */
static int
echo_arg(uint64_t size, uint8_t **argp, size_t *len)
{
	size_t pos = 0, cap = size + 10;
	uint8_t *a = malloc(cap);

	if (a == NULL)
		return -1;
	guest_pc_put_u64(a, cap, &pos, size);
	for (uint64_t i = 0; i < size; i++)
		a[pos++] = (uint8_t)('a' + i % 26);
	*argp = a;
	*len = pos;
	return 0;
}

static void
rtt(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, size, *t = NULL;
	uint8_t *arg = NULL, *res = NULL;
	size_t pos = 0, alen = 0;
	char method[64], text[160];
	const char *name;
	size_t nlen;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &name, &nlen) != 0 || nlen >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &size) != 0 || n == 0 || n > 10000000 ||
	    size > 1 << 20 || (t = malloc(n * sizeof(*t))) == NULL ||
	    echo_arg(size, &arg, &alen) != 0 || (res = malloc(alen)) == NULL) {
		free(t);
		free(arg);
		guest_reply_error(c, "rtt METHOD N SIZE");
		return;
	}
	memcpy(method, name, nlen);
	method[nlen] = 0;
	/* warmed up first: 2000 calls, or n when fewer (a slow path's
	 * short run, across hub-nats, is not mostly its warm-up) */
	for (uint64_t i = 0; i < (n < 2000 ? n : 2000) && rc == 0; i++)
		rc = call_echo(method, arg, alen, res, alen);
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		uint64_t t0 = hp_now_ns();

		rc = call_echo(method, arg, alen, res, alen);
		t[i] = hp_now_ns() - t0;
	}
	free(arg);
	free(res);
	if (rc != 0) {
		free(t);
		snprintf(text, sizeof(text), "a call failed: %s", strerror(-rc));
		guest_reply_error(c, text);
		return;
	}
	qsort(t, n, sizeof(*t), cmp);
	snprintf(text, sizeof(text), "median_ns=%llu p99_ns=%llu p999_ns=%llu",
		 (unsigned long long)t[n / 2], (unsigned long long)t[n * 99 / 100],
		 (unsigned long long)t[n * 999 / 1000]);
	free(t);
	reply_text(c, text);
}

static void
echo(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	guest_reply(c, args, len);
}

static uint64_t done_calls, failed_calls;
static unsigned inflight;

static void
pipe_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)ctx;
	(void)result;
	(void)len;
	inflight--;
	if (status == 0)
		done_calls++;
	else
		failed_calls++;
}

static const uint8_t pipe_arg[] = { 8, 'p', 'i', 'n', 'g', 'p', 'i', 'n', 'g' };

/* pipeto's: the echo's answer is the argument back */
static void
echo_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	if (status == 0 && (len != sizeof(pipe_arg) || memcmp(result, pipe_arg, len) != 0))
		status = -EBADMSG;
	pipe_done(ctx, status, result, len);
}

/* W calls of method in flight for MS ms from AT (wall clock ms since the
 * epoch; 0 now), answered by fn; what was answered within the window */
static void
pipe_run(struct guest_call *c, const char *method, guest_result_fn fn, uint64_t ms,
	 uint64_t window, uint64_t at)
{
	uint64_t t0, end;
	struct timespec now;
	char text[96];

	/* guests measured together start together: at START_MS (wall
	 * clock, ms since the epoch; 0 now), whenever their call came */
	clock_gettime(CLOCK_REALTIME, &now);
	if (at != 0 && at * 1000000u > (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec) {
		uint64_t ns = at * 1000000u - (uint64_t)now.tv_sec * 1000000000u - (uint64_t)now.tv_nsec;

		if (ns > 10000000000u) {
			guest_reply_error(c, "pipe: START_MS more than 10 s ahead");
			return;
		}
		usleep((useconds_t)(ns / 1000));
	}
	done_calls = failed_calls = 0;
	t0 = hp_now_ns();
	end = t0 + ms * 1000000u;
	while (hp_now_ns() < end) {
		while (inflight < window &&
		       guest_call_async(g, method, pipe_arg, sizeof(pipe_arg), fn, NULL, NULL) == 0)
			inflight++;
		if (guest_service_wait(g, 10) != 0)
			break;
	}
	/* what was answered within the window only */
	end = done_calls;
	while (inflight > 0 && guest_service_wait(g, 1000) == 0)
		;
	snprintf(text, sizeof(text), "per_s=%.0f calls=%llu failed=%llu",
		 (double)end * 1e3 / (double)ms, (unsigned long long)end,
		 (unsigned long long)(failed_calls + inflight));
	reply_text(c, text);
}

static void
pipelined(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t ms, window, at;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 || window == 0 || window > 4096 ||
	    guest_pc_get_u64(args, len, &pos, &at) != 0) {
		guest_reply_error(c, "pipe MS WINDOW START_MS");
		return;
	}
	pipe_run(c, "hub.ping", pipe_done, ms, window, at);
}

static void
pipeto(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t ms, window, at;
	uint8_t res[sizeof(pipe_arg)];
	char method[64], text[96];
	const char *name;
	size_t pos = 0, nlen;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &name, &nlen) != 0 || nlen >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 || window == 0 || window > 4096 ||
	    guest_pc_get_u64(args, len, &pos, &at) != 0) {
		guest_reply_error(c, "pipeto METHOD MS WINDOW START_MS");
		return;
	}
	memcpy(method, name, nlen);
	method[nlen] = 0;
	/* the first call goes through hubd and may open a lane: the window
	 * measures what follows */
	for (int i = 0; i < 100 && rc == 0; i++)
		rc = call_echo(method, pipe_arg, sizeof(pipe_arg), res, sizeof(res));
	if (rc != 0) {
		snprintf(text, sizeof(text), "a call failed: %s", strerror(-rc));
		guest_reply_error(c, text);
		return;
	}
	pipe_run(c, method, echo_done, ms, window, at);
}

struct sink {
	int		done;
	int		status;
	uint64_t	hash;		/* hub.sink's answer */
};

static void
sink_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct sink *s = ctx;
	size_t pos = 0;

	s->done = 1;
	s->status = status;
	if (status == 0 && guest_pc_get_u64(result, len, &pos, &s->hash) != 0)
		s->status = -EBADMSG;
}

static void
stream(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t bytes, item, sent = 0, items = 0, t0, dt, hash = 0;
	int serr = 0;
	struct sink s = { 0, 0, 0 };
	uint8_t arg[16], *buf;
	size_t pos = 0;
	int64_t chan;
	char text[160];

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &bytes) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item) != 0 || item == 0 || item > (32u << 20) ||
	    (buf = calloc(1, item)) == NULL) {
		guest_reply_error(c, "stream BYTES ITEM");
		return;
	}
	for (uint64_t i = 0; i < item; i++)
		buf[i] = (uint8_t)i;
	if ((chan = guest_chan_open_send(g)) < 0) {
		free(buf);
		guest_reply_error(c, "no channel");
		return;
	}
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, (uint64_t)chan);
	guest_call_async(g, "hub.sink", arg, pos, sink_done, &s, NULL);
	/* small items go in batches: one publication per 32 */
	struct iovec batch[32];
	int per = item <= 1024 ? 32 : 1;

	for (int i = 0; i < per; i++)
		batch[i] = (struct iovec){ buf, item };
	t0 = hp_now_ns();
	while (sent < bytes) {
		int k = bytes - sent >= per * item ? per : 1;

		/* -EMSGSIZE for an item over the hub's initial_credit */
		if ((serr = guest_chan_send_batch(g, (uint32_t)chan, batch, k, 10000)) != 0)
			break;
		sent += (uint64_t)k * item;
		items += (uint64_t)k;
	}
	guest_chan_close(g, (uint32_t)chan);
	while (!s.done && guest_service_wait(g, 1000) == 0)
		;
	dt = hp_now_ns() - t0;
	/* hub.sink's hash (doc/protocol.md): XXH3-64 over every item in
	 * order, each seeded with the hash so far; what we sent, every item
	 * the same bytes */
	for (uint64_t i = 0; i < items; i++)
		hash = XXH3_64bits_withSeed(buf, item, hash);
	free(buf);
	snprintf(text, sizeof(text), "items_per_s=%.0f gb_per_s=%.3f status=%d send=%d hash_ok=%d",
		 (double)items * 1e9 / (double)dt, (double)sent / (double)dt, s.status, serr,
		 s.status == 0 && s.hash == hash);
	reply_text(c, text);
}

/* The sender's side of gstream: BYTES in ITEM-byte items on the
 * caller's channel, in batches as stream sends them; answers the items
 * sent. */
static void
produce(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t bytes, item, chan, sent = 0, items = 0;
	struct iovec batch[32];
	uint8_t res[16], *buf;
	size_t pos = 0;
	int per, rc = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &bytes) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item) != 0 || item == 0 || item > (32u << 20) ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0 || (buf = calloc(1, item)) == NULL) {
		guest_reply_error(c, "produce BYTES ITEM CHAN");
		return;
	}
	for (uint64_t i = 0; i < item; i++)
		buf[i] = (uint8_t)i;
	per = item <= 1024 ? 32 : 1;
	for (int i = 0; i < per; i++)
		batch[i] = (struct iovec){ buf, item };
	while (sent < bytes && rc == 0) {
		int k = bytes - sent >= per * item ? per : 1;

		if ((rc = guest_chan_send_batch(g, (uint32_t)chan, batch, k, 10000)) == 0) {
			sent += (uint64_t)k * item;
			items += (uint64_t)k;
		}
	}
	free(buf);
	if (rc != 0) {
		guest_reply_error(c, strerror(-rc));
		return;
	}
	guest_chan_close(g, (uint32_t)chan);
	pos = 0;
	guest_pc_put_u64(res, sizeof(res), &pos, items);
	guest_reply(c, res, pos);
}

struct gstream {
	uint64_t	bytes, items, hash;
	int		ended, end;
};

static void
gstream_item(void *ctx, const uint8_t *item, size_t len)
{
	struct gstream *s = ctx;

	/* read as hub.sink reads: every byte, hashed */
	s->hash = XXH3_64bits_withSeed(item, len, s->hash);
	s->bytes += len;
	s->items++;
}

static void
gstream_end(void *ctx, int status)
{
	struct gstream *s = ctx;

	s->ended = 1;
	s->end = status;
}

/* Guest to guest stream: PEER.produce sends BYTES in ITEM-byte items on
 * a channel of ours (relayed by hubd, or over a lane), each read and
 * hashed as it comes; items_ok when all came, whole and in order. */
static void
gstream(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static struct gstream s;	/* the channel's callbacks write it */
	uint64_t bytes, item, sent = 0, t0, dt, want = 0;
	uint8_t *pattern;
	int hashed = 0;
	uint8_t arg[32], res[16];
	size_t plen, pos = 0, alen = 0, rlen = 0;
	const char *peer;
	char method[96], text[160];
	int64_t chan;
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &peer, &plen) != 0 || plen == 0 || plen > 64 ||
	    guest_pc_get_u64(args, len, &pos, &bytes) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item) != 0) {
		guest_reply_error(c, "gstream PEER BYTES ITEM");
		return;
	}
	snprintf(method, sizeof(method), "%.*s.produce", (int)plen, peer);
	memset(&s, 0, sizeof(s));
	if ((chan = guest_chan_open(g, gstream_item, gstream_end, &s)) < 0) {
		guest_reply_error(c, "no channel");
		return;
	}
	guest_pc_put_u64(arg, sizeof(arg), &alen, bytes);
	guest_pc_put_u64(arg, sizeof(arg), &alen, item);
	guest_pc_put_u64(arg, sizeof(arg), &alen, (uint64_t)chan);
	t0 = hp_now_ns();
	/* items are served while the call waits; its answer comes after
	 * the channel's end */
	rc = guest_call(g, method, arg, alen, res, sizeof(res), &rlen, 120000);
	dt = hp_now_ns() - t0;
	pos = 0;
	if (rc == 0 && guest_pc_get_u64(res, rlen, &pos, &sent) != 0)
		rc = -EBADMSG;
	/* produce's items: byte i of each is i % 256 */
	if ((pattern = malloc(item)) != NULL) {
		hashed = 1;
		for (uint64_t i = 0; i < item; i++)
			pattern[i] = (uint8_t)i;
		for (uint64_t i = 0; i < sent; i++)
			want = XXH3_64bits_withSeed(pattern, item, want);
		free(pattern);
	}
	snprintf(text, sizeof(text), "items_per_s=%.0f gb_per_s=%.3f status=%d items_ok=%d",
		 (double)s.items * 1e9 / (double)dt, (double)s.bytes / (double)dt, rc,
		 rc == 0 && hashed && s.ended && s.end == 0 && s.items == sent &&
		 s.bytes == sent * item && s.hash == want);
	reply_text(c, text);
}

/* The callee's side of gupload (an rx<bytes>): every item read and
 * hashed as gstream reads; answers the hash at the end. */
struct consuming {
	struct guest_call	*call;
	uint64_t		hash;
};

static void
consume_item(void *ctx, const uint8_t *item, size_t len)
{
	struct consuming *s = ctx;

	s->hash = XXH3_64bits_withSeed(item, len, s->hash);
}

static void
consume_end(void *ctx, int status)
{
	struct consuming *s = ctx;
	uint8_t res[16];
	size_t n = 0;

	if (status != 0) {
		guest_reply_error(s->call, "the upload was reset");
	} else {
		guest_pc_put_u64(res, sizeof(res), &n, s->hash);
		guest_reply(s->call, res, n);
	}
	free(s);
}

static void
consume(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct consuming *s;
	uint64_t chan;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &chan) != 0 || chan > UINT32_MAX ||
	    (s = calloc(1, sizeof(*s))) == NULL) {
		guest_reply_error(c, "consume CHAN");
		return;
	}
	s->call = c;
	if (guest_chan_accept(g, (uint32_t)chan, consume_item, consume_end, s) != 0) {
		free(s);
		guest_reply_error(c, "not an upload");
	}
}

/* Guest to guest upload: BYTES in ITEM-byte items sent to PEER.consume
 * (an rx<bytes>: through hubd, or over a lane), in batches as produce
 * sends; the answer, PEER's hash of what it read, checked against ours.
 * Timed from the call to the answer, given from its callback. */
struct uploading {
	struct guest_call	*call;
	uint64_t		t0, bytes, items, hash;
	int			send_rc, sent_all, answered, ok, status;
	uint64_t		dt;
};

static void
upload_report(struct uploading *u)
{
	char text[160];

	snprintf(text, sizeof(text), "items_per_s=%.0f gb_per_s=%.3f status=%d items_ok=%d",
		 (double)u->items * 1e9 / (double)u->dt, (double)u->bytes / (double)u->dt,
		 u->status != 0 ? u->status : u->send_rc, u->ok && u->send_rc == 0);
	reply_text(u->call, text);
	free(u);
}

static void
upload_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct uploading *u = ctx;
	uint64_t theirs = 0;
	size_t pos = 0;

	u->dt = hp_now_ns() - u->t0;
	u->status = status;
	u->ok = status == 0 && guest_pc_get_u64(result, len, &pos, &theirs) == 0 &&
	    theirs == u->hash;
	u->answered = 1;
	if (u->sent_all)
		upload_report(u);
}

static void
gupload(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct uploading *u;
	struct iovec batch[32];
	uint64_t bytes, item;
	uint8_t arg[16], *buf;
	size_t plen, pos = 0, alen = 0;
	const char *peer;
	char method[96];
	int64_t chan;
	int per;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &peer, &plen) != 0 || plen == 0 || plen > 64 ||
	    guest_pc_get_u64(args, len, &pos, &bytes) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item) != 0 || item == 0 ||
	    item > (32u << 20) || (u = calloc(1, sizeof(*u))) == NULL) {
		guest_reply_error(c, "gupload PEER BYTES ITEM");
		return;
	}
	if ((buf = malloc(item)) == NULL || (chan = guest_chan_open_send(g)) < 0) {
		free(buf);
		free(u);
		guest_reply_error(c, "no channel");
		return;
	}
	snprintf(method, sizeof(method), "%.*s.consume", (int)plen, peer);
	u->call = c;
	for (uint64_t i = 0; i < item; i++)
		buf[i] = (uint8_t)i;
	per = item <= 1024 ? 32 : 1;
	for (int i = 0; i < per; i++)
		batch[i] = (struct iovec){ buf, item };
	guest_pc_put_u64(arg, sizeof(arg), &alen, (uint64_t)chan);
	u->t0 = hp_now_ns();
	if (guest_call_async(g, method, arg, alen, upload_done, u, NULL) != 0) {
		free(buf);
		free(u);
		guest_reply_error(c, "cannot call");
		return;
	}
	while (u->bytes < bytes && u->send_rc == 0) {
		int k = bytes - u->bytes >= per * item ? per : 1;

		if ((u->send_rc = guest_chan_send_batch(g, (uint32_t)chan, batch, k, 10000)) == 0) {
			for (int i = 0; i < k; i++)
				u->hash = XXH3_64bits_withSeed(buf, item, u->hash);
			u->bytes += (uint64_t)k * item;
			u->items += (uint64_t)k;
		}
	}
	free(buf);
	if (u->send_rc == 0)
		guest_chan_close(g, (uint32_t)chan);
	u->sent_all = 1;
	if (u->answered)
		upload_report(u);
}

/* The reader's side of g2g: the argument copied out of the slot. */
static void
absorb(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static uint8_t *keep;
	static size_t cap;
	const uint8_t *data;
	size_t n, pos = 0;
	uint8_t res[16];

	(void)ctx;
	if (guest_pc_get_bytes(args, len, &pos, &data, &n) != 0) {
		guest_reply_error(c, "absorb BYTES");
		return;
	}
	if (n > cap) {
		free(keep);
		cap = 0;
		if ((keep = malloc(n)) == NULL) {
			guest_reply_error(c, "out of memory");
			return;
		}
		cap = n;
	}
	memcpy(keep, data, n);
	/* g2g writes byte i as i % 256 */
	if (n > 0 && (keep[0] != 0 || keep[n - 1] != (uint8_t)(n - 1))) {
		guest_reply_error(c, "the bytes came out wrong");
		return;
	}
	pos = 0;
	guest_pc_put_u64(res, sizeof(res), &pos, n);
	guest_reply(c, res, pos);
}

struct g2g {
	unsigned	inflight;
	uint64_t	ok, failed, item;
};

static void
g2g_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct g2g *s = ctx;
	uint64_t n;
	size_t pos = 0;

	s->inflight--;
	if (status == 0 && guest_pc_get_u64(result, len, &pos, &n) == 0 && n == s->item)
		s->ok++;
	else
		s->failed++;
}

/* Guest to guest: calls of another guest's absorb with ITEM-byte
 * arguments, W at a time; hubd hands each slot on without copying. */
static void
g2g(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t bytes, item, window, calls, t0, dt;
	struct g2g s = { 0, 0, 0, 0 };
	const char *peer;
	char method[96], text[128];
	size_t plen, pos = 0, alen = 0;
	uint8_t *arg = NULL, *pattern = NULL;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &peer, &plen) != 0 || plen == 0 || plen > 64 ||
	    guest_pc_get_u64(args, len, &pos, &bytes) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item) != 0 || item == 0 || item > (32u << 20) - 16 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 || window == 0 || window > 64 ||
	    (arg = malloc(item + 16)) == NULL || (pattern = malloc(item)) == NULL) {
		free(arg);
		guest_reply_error(c, "g2g PEER BYTES ITEM WINDOW");
		return;
	}
	snprintf(method, sizeof(method), "%.*s.absorb", (int)plen, peer);
	/* the argument once, postcard bytes: byte i is i % 256 */
	for (uint64_t i = 0; i < item; i++)
		pattern[i] = (uint8_t)i;
	guest_pc_put_bytes(arg, item + 16, &alen, pattern, item);
	free(pattern);
	s.item = item;
	calls = (bytes + item - 1) / item;
	t0 = hp_now_ns();
	for (uint64_t sent = 0; sent < calls && s.failed == 0;) {
		int rc = 0;

		if (hp_now_ns() - t0 > 60000000000ull)
			break;		/* bounded, whatever happens */

		if (s.inflight < window) {
			rc = guest_call_async(g, method, arg, alen, g2g_done, &s, NULL);
			if (rc == 0) {
				s.inflight++;
				sent++;
			}
		}
		if (s.inflight >= window || rc != 0)
			if (guest_service_wait(g, 1000) != 0 || (rc != 0 && rc != -EAGAIN))
				break;
	}
	while (s.inflight > 0 && guest_service_wait(g, 1000) == 0)
		;
	dt = hp_now_ns() - t0;
	free(arg);
	snprintf(text, sizeof(text), "gb_per_s=%.3f calls=%llu failed=%llu",
		 (double)(s.ok * item) / (double)dt, (unsigned long long)s.ok,
		 (unsigned long long)(s.failed + s.inflight));
	reply_text(c, text);
}

static void
idle(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t arg[] = { 8, 'p', 'i', 'n', 'g', 'p', 'i', 'n', 'g' };
	uint64_t n, ms, *t;
	uint8_t res[sizeof(arg)];
	size_t pos = 0, nlen;
	char method[64], text[64];
	const char *name;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &name, &nlen) != 0 || nlen >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 || n == 0 || n > 100000 ||
	    (t = malloc(n * sizeof(*t))) == NULL) {
		guest_reply_error(c, "idle METHOD N MS");
		return;
	}
	memcpy(method, name, nlen);
	method[nlen] = 0;
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		uint64_t t0;

		usleep((useconds_t)(ms * 1000));	/* every side falls asleep */
		t0 = hp_now_ns();
		rc = call_echo(method, arg, sizeof(arg), res, sizeof(res));
		t[i] = hp_now_ns() - t0;
	}
	if (rc != 0) {
		free(t);
		guest_reply_error(c, "a call failed");
		return;
	}
	qsort(t, n, sizeof(*t), cmp);
	snprintf(text, sizeof(text), "median_ns=%llu", (unsigned long long)t[n / 2]);
	free(t);
	reply_text(c, text);
}

static void
nest(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[64];
	size_t rlen = 0;
	int rc;

	(void)ctx;
	if (len > sizeof(res)) {
		guest_reply_error(c, "nest takes up to 64 bytes");
		return;
	}
	/* on microthreads only this handler waits; in a callback the
	 * guest serves the other calls nested inside this one */
	if ((rc = guest_call(g, "hub.ping", args, len, res, sizeof(res), &rlen, 60000)) != 0)
		guest_reply_error(c, strerror(-rc));
	else
		guest_reply(c, res, rlen);
}

static void
flood(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t arg[] = { 8, 'f', 'l', 'o', 'o', 'd', 'i', 'n', 'g' };
	uint64_t ms, window, t0, end, calls;
	const char *name;
	char method[64], text[128];
	size_t pos = 0, nlen;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &name, &nlen) != 0 || nlen >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 || window == 0 ||
	    window > 100000 || ms > 60000) {
		guest_reply_error(c, "flood METHOD MS W");
		return;
	}
	memcpy(method, name, nlen);
	method[nlen] = 0;
	done_calls = failed_calls = 0;
	t0 = hp_now_ns();
	end = t0 + ms * 1000000u;
	while (hp_now_ns() < end) {
		/* the clock too: a send past libguest's bound of calls in
		 * flight waits for an answer, so a window above that bound is
		 * never full and this loop would not end */
		while (inflight < window && hp_now_ns() < end &&
		       guest_call_async(g, method, arg, sizeof(arg), pipe_done, NULL, NULL) == 0)
			inflight++;
		if (guest_service_wait(g, 10) != 0)
			break;
	}
	calls = done_calls;
	while (inflight > 0 && guest_service_wait(g, 1000) == 0)
		;
	snprintf(text, sizeof(text), "per_s=%.0f calls=%llu failed=%llu",
		 (double)calls * 1e3 / (double)ms, (unsigned long long)calls,
		 (unsigned long long)failed_calls);
	reply_text(c, text);
}

static void
rss(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char line[128], text[96];
	unsigned long rss_kb = 0, hwm_kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	(void)args;
	(void)len;
	(void)ctx;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		sscanf(line, "VmRSS: %lu", &rss_kb);
		sscanf(line, "VmHWM: %lu", &hwm_kb);
	}
	if (f != NULL)
		fclose(f);
	snprintf(text, sizeof(text), "rss_kb=%lu hwm_kb=%lu", rss_kb, hwm_kb);
	reply_text(c, text);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "rtt", "str,u64,u64->str", rtt }, { "echo", "bytes->bytes", echo },
		{ "pipe", "u64,u64,u64->str", pipelined },
		{ "pipeto", "str,u64,u64,u64->str", pipeto },
		{ "stream", "u64,u64->str", stream }, { "idle", "str,u64,u64->str", idle },
		{ "absorb", "bytes->u64", absorb }, { "g2g", "str,u64,u64,u64->str", g2g },
		{ "nest", "bytes->bytes", nest }, { "flood", "str,u64,u64->str", flood },
		{ "rss", "->str", rss },
		{ "produce", "u64,u64,chan<bytes>->u64", produce },
		{ "gstream", "str,u64,u64->str", gstream },
		{ "consume", "rx<bytes>->u64", consume },
		{ "gupload", "str,u64,u64->str", gupload },
	};
	struct guest_rt_config cfg = { .processors = 1 };
	const char *why;
	int rc, mt = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mt") == 0)
			mt = 1;
		if (strcmp(argv[i], "--processors") == 0 && i + 1 < argc)
			cfg.processors = (unsigned)atoi(argv[i + 1]);
	}

	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "bench"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = mt ? guest_run_mt(g, &cfg) : guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
