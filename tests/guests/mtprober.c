/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* mtprober: a test guest on microthreads (guest_run_mt). Methods are
 * PREFIX.x, PREFIX from --prefix (default "mtp"); --processors P runs it
 * on P processors; --describe-until-called calls hub.describe over and
 * over until the first call comes, then runs.
 *   wait		blocks on a runtime channel (a gate) until a token
 *			comes, answers "ok"; callback handlers could not
 *			wait like this and still serve the call that opens it
 *   open N		puts N tokens into the gate, answers "ok N"
 *   openlong N		open, but the waits answer "ok" and 100 more bytes
 *			(in a slot of the pool, not inline in the ring)
 *   open_later MS N	answers at once; N tokens go into the gate MS ms later
 *   open_when K MS N	the same, the MS ms counted from when K waits are in
 *			the gate (a limit's test: what comes after the Kth is
 *			refused, however long the calls took to come)
 *   fanopen N TARGET OPEN  N microthreads each call TARGET.wait at once, then
 *			(if OPEN) TARGET.open N; answers "ok N" once all N
 *			answered "ok", else "error: K of N ok, first: <kind>"
 *   call METHOD ARG	calls METHOD(ARG: str) from its handler, answers the
 *			result or "error: <kind>", "error: user: <text>"
 *   call_timeout METHOD MS  calls METHOD() with a timeout
 *   spin MS YIELD	computes for MS ms, yielding now and then if YIELD,
 *			answers "ok"
 *   crash		dereferences NULL in its handler
 *   exit		answers "ok", then ends its handler's microthread
 *			(guest_mt_exit) instead of returning
 *   caller X, caller_after, fail KIND TEXT, fail_rc, why2 METHOD A B
 *			see testguest.h
 *   big		uses 128 KiB of its stack (more than the default 64 KiB),
 *			written from the top down so that an overflow meets the
 *			guard first; answers "ok" if it fits
 *   huge GIB		a frame of GIB GiB on its stack, its lowest byte written
 *			first: far past the guard (it faults, named)
 *   threads		how many threads the process has (its processors)
 *   onmt		"yes" when its handler runs on a microthread, else "no"
 *   pull N STOP	receives N bytes from hub.source through a runtime
 *			channel (guest_chan_reader), answers "ok N" when the
 *			stream hash agrees with hub.source's; with STOP > 0 it
 *			closes its reader after STOP bytes instead and answers
 *			"stopped: <hub.source's answer>"
 *   push N		sends N bytes to hub.sink through a runtime channel
 *			(guest_chan_writer), answers "ok N" when the hash
 *			agrees with hub.sink's
 *   pullfrom N STOP M	pull, from M(N, channel) instead of hub.source
 *   source N C		chan<bytes>: sends N bytes on C from its handler,
 *			closes it and answers their hash, as hub.source;
 *			a send that fails answers Err User "<kind>"
 *   storm M N		N guest_call_async of M (a 100-byte str) back to back
 *			from its handler's microthread, then every answer
 *			waited for (2 min at most): "ok=A" and " eERRNO=B",
 *			" wrong=W" (answers not the str sent), " unsent=U",
 *			" unanswered=X" for what went otherwise */
#include <dirent.h>
#include <stdatomic.h>
#include <err.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;
static const char *prefix;
static struct guest_mtchan *gate;	/* tokens for wait, buffered */
static atomic_uint in_gate;		/* waits blocked on it now */

static void
reply_text(struct guest_call *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
reply_text(struct guest_call *c, const char *fmt, ...)
{
	char text[256];
	uint8_t res[300];
	size_t pos = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	guest_pc_put_str(res, sizeof(res), &pos, text, strlen(text));
	guest_reply(c, res, pos);
}

static const char *
kind(int rc)
{
	switch (rc) {
	case -ENOSYS: return "unknown method";
	case -ETIMEDOUT: return "timeout";
	case -EREMOTEIO: return "user";
	case -ECONNREFUSED: return "hub";
	case -ECANCELED: return "cancelled";
	default: return strerror(-rc);
	}
}

#define LONG_TAIL	"0123456789012345678901234567890123456789012345678901234567890" \
			"12345678901234567890123456789012345678"

static void
wait_gate(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t token;
	int rc;

	(void)args;
	(void)len;
	(void)ctx;
	atomic_fetch_add(&in_gate, 1);
	rc = guest_mtchan_recv(gate, &token);
	atomic_fetch_sub(&in_gate, 1);
	if (rc != 0)
		guest_reply_error(c, "gate closed");
	else
		reply_text(c, "ok%s", token == 2 ? " " LONG_TAIL : "");
}

/* N tokens into the gate: 1, or 2 for a wait to answer long. */
static void
open_tokens(struct guest_call *c, const uint8_t *args, size_t len, uint8_t token)
{
	uint64_t n, i;
	size_t pos = 0;

	if (guest_pc_get_u64(args, len, &pos, &n) != 0) {
		guest_reply_error(c, "open takes a count");
		return;
	}
	for (i = 0; i < n; i++)
		if (guest_mtchan_send(gate, &token) != 0)
			break;
	reply_text(c, "ok %llu", (unsigned long long)i);
}

static void
open_gate(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	open_tokens(c, args, len, 1);
}

static void
open_long(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	open_tokens(c, args, len, 2);
}

struct later {
	uint64_t	k;	/* waits in the gate before ms counts */
	uint64_t	ms;
	uint64_t	n;
};

static void
later_run(void *arg)
{
	struct later *l = arg;
	uint8_t token = 1;

	/* a minute at most: then the waits are let go all the same */
	for (int i = 0; i < 60000 && atomic_load(&in_gate) < l->k; i++)
		guest_mt_sleep(1000000ull);
	guest_mt_sleep(l->ms * 1000000ull);
	for (uint64_t i = 0; i < l->n; i++)
		if (guest_mtchan_send(gate, &token) != 0)
			break;
	free(l);
}

/* open_later's arguments, after K for open_when (with_k). */
static void
start_later(struct guest_call *c, const uint8_t *args, size_t len, int with_k)
{
	struct later *l = calloc(1, sizeof(*l));
	size_t pos = 0;

	if (l == NULL || (with_k && guest_pc_get_u64(args, len, &pos, &l->k) != 0) ||
	    guest_pc_get_u64(args, len, &pos, &l->ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &l->n) != 0 || l->ms > 60000 ||
	    guest_mt_spawn(later_run, l, NULL) != 0) {
		free(l);
		guest_reply_error(c, with_k ? "open_when takes a count of waits, ms and a count" :
				  "open_later takes ms and a count");
		return;
	}
	reply_text(c, "ok");
}

static void
open_later(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	start_later(c, args, len, 0);
}

static void
open_when(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	start_later(c, args, len, 1);
}

struct caller {
	char		method[80];
	int		rc;
	int		answered_ok;
};

static int
call_str(const char *method, const uint8_t *arg, size_t alen, char *out,
	 size_t cap, int timeout_ms)
{
	uint8_t res[512];
	size_t rlen = 0, pos = 0, n;
	const char *s;
	int rc;

	rc = guest_call(g, method, arg, alen, res, sizeof(res), &rlen, timeout_ms);
	if (rc != 0) {
		snprintf(out, cap, "%.*s", (int)rlen, (const char *)res);	/* its text */
		return rc;
	}
	if (guest_pc_get_str(res, rlen, &pos, &s, &n) != 0)
		return -EBADMSG;
	snprintf(out, cap, "%.*s", (int)n, s);
	return 0;
}

static void
caller_run(void *arg)
{
	struct caller *k = arg;
	char out[64];

	k->rc = call_str(k->method, NULL, 0, out, sizeof(out), 60000);
	k->answered_ok = k->rc == 0 && strncmp(out, "ok", 2) == 0 &&
	    (out[2] == '\0' || out[2] == ' ');
}

static void
exit_mt(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_text(c, "ok");
	guest_mt_exit();
}

static void
fanopen(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, i, ok = 0;
	const char *target;
	size_t pos = 0, tn;
	uint64_t open;
	struct caller *k;
	struct guest_mt **mt;
	uint8_t arg[16];
	char method[80], out[64];
	int rc, first = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_str(args, len, &pos, &target, &tn) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &open) != 0 || n == 0 ||
	    n > 100000 || tn > 60) {
		guest_reply_error(c, "fanopen takes a count, a prefix and a bool");
		return;
	}
	k = calloc(n, sizeof(*k));
	mt = calloc(n, sizeof(*mt));
	if (k == NULL || mt == NULL) {
		free(k);
		free(mt);
		guest_reply_error(c, "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		snprintf(k[i].method, sizeof(k[i].method), "%.*s.wait", (int)tn, target);
		if ((rc = guest_mt_spawn(caller_run, &k[i], &mt[i])) != 0) {
			k[i].rc = rc;
			mt[i] = NULL;
		}
	}
	rc = 0;
	if (open) {
		/* every caller is blocked in its call now (or waits for
		 * ring room): the opening call must get through all the same */
		guest_mt_sleep(50 * 1000000ull);
		pos = 0;
		guest_pc_put_u64(arg, sizeof(arg), &pos, n);
		snprintf(method, sizeof(method), "%.*s.open", (int)tn, target);
		rc = call_str(method, arg, pos, out, sizeof(out), 60000);
	}
	for (i = 0; i < n; i++) {
		if (mt[i] != NULL)
			guest_mt_join(mt[i]);
		ok += k[i].answered_ok;
		if (!k[i].answered_ok && first == 0)
			first = k[i].rc != 0 ? k[i].rc : -EBADMSG;
	}
	if (rc != 0)
		reply_text(c, "error: open: %s", kind(rc));
	else if (ok == n)
		reply_text(c, "ok %llu", (unsigned long long)n);
	else
		reply_text(c, "error: %llu of %llu ok, first: %s", (unsigned long long)ok,
			   (unsigned long long)n, kind(first));
	free(k);
	free(mt);
}

static void
call(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *a;
	size_t mn, an, pos = 0;
	uint8_t arg[300];
	char method[80], out[256];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 ||
	    guest_pc_get_str(args, len, &pos, &a, &an) != 0 || mn > 70 || an > 200) {
		guest_reply_error(c, "call takes a method and a str");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)mn, m);
	pos = 0;
	guest_pc_put_str(arg, sizeof(arg), &pos, a, an);
	if ((rc = call_str(method, arg, pos, out, sizeof(out), 10000)) == -EREMOTEIO)
		reply_text(c, "error: user: %s", out);
	else if (rc != 0)
		reply_text(c, "error: %s", kind(rc));
	else
		reply_text(c, "%s", out);
}

static void
call_timeout(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m;
	size_t mn, pos = 0;
	uint64_t ms;
	char method[80], out[64];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 || mn > 70 || ms > 60000) {
		guest_reply_error(c, "call_timeout takes a method and ms");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)mn, m);
	rc = call_str(method, NULL, 0, out, sizeof(out), (int)ms);
	if (rc != 0)
		reply_text(c, "error: %s", kind(rc));
	else
		reply_text(c, "%s", out);
}

static void
spin(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t ms, yield, end, x = 1;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &yield) != 0 || ms > 60000) {
		guest_reply_error(c, "spin takes ms and a bool");
		return;
	}
	end = guest_mt_now_ns() + ms * 1000000ull;
	while (guest_mt_now_ns() < end) {
		for (int i = 0; i < 100000; i++)	/* about 0.1 ms of work */
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (yield)
			guest_mt_yield();	/* the ring (and the heartbeat) get a turn */
	}
	reply_text(c, "ok%s", x == 0 ? " " : "");	/* x: the work is kept */
}

static void
threads(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	(void)args;
	(void)len;
	(void)ctx;
	while (d != NULL && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	reply_text(c, "%d", n);
}

static void
onmt(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_text(c, "%s", guest_mt_yield() == 0 ? "yes" : "no");
}

static void
crash(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	volatile int *p = NULL;

	(void)c;
	(void)args;
	(void)len;
	(void)ctx;
	*p = 1;
}

/* 128 KiB of locals, touched a page at a time from the top (where the
 * stack is) down: the first write past the stack's end lands in its
 * guard, whatever the optimisation level. */
static __attribute__((noinline)) int
big_frame(void)
{
	volatile char buf[128 * 1024];

	for (size_t i = sizeof(buf); i > 0; i -= 4096)
		buf[i - 1] = (char)i;
	return buf[sizeof(buf) - 1] + buf[4095];
}

static void
big(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	big_frame();
	reply_text(c, "ok");
}

/* A frame far larger than the guard, its lowest byte written first: the
 * write lands well below the stack, past its guard, as a large local
 * array's memset does, where nothing is mapped. */
static __attribute__((noinline)) int
huge_frame(size_t n)
{
	volatile char buf[n];

	buf[0] = 1;
	return buf[0] + buf[n - 1];
}

static void
huge(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t gib = 0;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &gib) != 0 || gib == 0 || gib > 64) {
		guest_reply_error(c, "huge takes GiB, 1 to 64");
		return;
	}
	huge_frame((size_t)gib << 30);
	reply_text(c, "ok");
}

/* A call answered with a stream hash (hub.source, hub.sink), made from
 * a microthread of its own while the handler moves the items. */
struct hashcall {
	const char	*method;
	uint8_t		arg[32];
	size_t		alen;
	uint64_t	hash;
	int		rc;
};

static void
hashcall_run(void *arg)
{
	struct hashcall *h = arg;
	uint8_t res[16];
	size_t rlen = 0, pos = 0;

	h->rc = guest_call(g, h->method, h->arg, h->alen, res, sizeof(res), &rlen, 60000);
	if (h->rc == 0 && guest_pc_get_u64(res, rlen, &pos, &h->hash) != 0)
		h->rc = -EBADMSG;
}

static void
pull_from(struct guest_call *c, uint64_t n, uint64_t stop, const char *method)
{
	struct hashcall src = { .method = method };
	struct guest_mtchan *ch;
	struct guest_mt *mt;
	struct guest_bytes it;
	uint64_t got = 0, h = 0;
	uint32_t chan;
	int rc, end = 1;

	if ((rc = guest_chan_reader(g, &chan, &ch, &end)) != 0) {
		reply_text(c, "error: reader: %s", kind(rc));
		return;
	}
	guest_pc_put_u64(src.arg, sizeof(src.arg), &src.alen, n);
	guest_pc_put_u64(src.arg, sizeof(src.arg), &src.alen, chan);
	/* hub.source answers after its Close: the items are read meanwhile */
	if ((rc = guest_mt_spawn(hashcall_run, &src, &mt)) != 0) {
		guest_mtchan_close(ch, GUEST_MT_READER);
		reply_text(c, "error: spawn: %s", kind(rc));
		return;
	}
	while ((stop == 0 || got < stop) && guest_mtchan_recv(ch, &it) == 0) {
		h = XXH3_64bits_withSeed(it.data, it.len, h);
		got += it.len;
		free(it.data);
	}
	/* early: the sender is told to stop (a Reset) */
	guest_mtchan_close(ch, GUEST_MT_READER);
	guest_mt_join(mt);
	if (stop != 0)
		reply_text(c, "stopped: %s", src.rc == 0 ? "ok" : kind(src.rc));
	else if (src.rc != 0)
		reply_text(c, "error: source: %s", kind(src.rc));
	else if (end != 0 || got != n || src.hash != h)
		reply_text(c, "mismatch: %llu bytes, end %d", (unsigned long long)got, end);
	else
		reply_text(c, "ok %llu", (unsigned long long)n);
}

static void
pull(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, stop;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &stop) != 0) {
		guest_reply_error(c, "pull takes a byte count and where to stop");
		return;
	}
	pull_from(c, n, stop, "hub.source");
}

static void
pullfrom(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char method[128];
	const char *m;
	uint64_t n, stop;
	size_t pos = 0, k;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &stop) != 0 ||
	    guest_pc_get_str(args, len, &pos, &m, &k) != 0 || k >= sizeof(method)) {
		guest_reply_error(c, "pullfrom takes a byte count, where to stop and a method");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)k, m);
	pull_from(c, n, stop, method);
}

/* As hub.source: items of 1..4000 bytes, their hash the answer. */
static void
source(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static uint8_t item[4000];
	uint64_t n, chan, sent = 0, h = 0;
	uint8_t res[16];
	size_t pos = 0;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0) {
		guest_reply_error(c, "source takes a byte count and a channel");
		return;
	}
	while (sent < n && rc == 0) {
		size_t k = 1 + (size_t)((sent * 7919) % sizeof(item));

		if (k > n - sent)
			k = (size_t)(n - sent);
		for (size_t i = 0; i < k; i++)
			item[i] = (uint8_t)((sent + i) % 251);
		h = XXH3_64bits_withSeed(item, k, h);
		rc = guest_chan_send(g, (uint32_t)chan, item, k, 60000);
		sent += k;
	}
	if (rc != 0) {
		guest_reply_error(c, kind(rc));
		return;
	}
	guest_chan_close(g, (uint32_t)chan);
	pos = 0;
	guest_pc_put_u64(res, sizeof(res), &pos, h);
	guest_reply(c, res, pos);
}

/* hub.sink's answer: written by its callback, which with P > 1 runs on
 * another processor while push runs, hence done's release and acquire */
struct sinkwait {
	int		done;
	int		rc;
	uint64_t	hash;
};

static void
sink_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct sinkwait *s = ctx;
	size_t pos = 0;

	s->rc = status;
	if (status == 0 && guest_pc_get_u64(result, len, &pos, &s->hash) != 0)
		s->rc = -EBADMSG;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

static void
push(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct sinkwait sink = { 0, 0, 0 };
	struct guest_mtchan *ch;
	uint64_t n, sent = 0, h = 0;
	uint8_t arg[16];
	size_t pos = 0;
	int64_t chan;
	int rc, done;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > (1ull << 30)) {
		guest_reply_error(c, "push takes a byte count");
		return;
	}
	if ((chan = guest_chan_open_send(g)) < 0) {
		reply_text(c, "error: open: %s", kind((int)chan));
		return;
	}
	/* hub.sink's Request goes out before the first item: hubd must
	 * know the channel by then; its answer comes after our Close */
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, (uint64_t)chan);
	if ((rc = guest_call_async(g, "hub.sink", arg, pos, sink_done, &sink, NULL)) != 0 ||
	    (rc = guest_chan_writer(g, (uint32_t)chan, &ch)) != 0) {
		guest_chan_reset(g, (uint32_t)chan);
		reply_text(c, "error: writer: %s", kind(rc));
		return;
	}
	while (sent < n) {
		/* items of 1..4000 bytes (the writer frees each), hashed
		 * as sent: hub.sink hashes the payloads as they arrive */
		size_t k = 1 + (size_t)((sent * 7919) % 4000);
		struct guest_bytes it;

		if (k > n - sent)
			k = (size_t)(n - sent);
		if ((it.data = malloc(k)) == NULL)
			break;
		it.len = k;
		for (size_t i = 0; i < k; i++)
			((uint8_t *)it.data)[i] = (uint8_t)((sent + i) % 251);
		h = XXH3_64bits_withSeed(it.data, k, h);
		if (guest_mtchan_send(ch, &it) != 0) {
			free(it.data);
			break;
		}
		sent += k;
	}
	guest_mtchan_close(ch, GUEST_MT_WRITER);	/* then Close goes out */
	while (!(done = __atomic_load_n(&sink.done, __ATOMIC_ACQUIRE)) &&
	       guest_service_wait(g, 1000) == 0)
		;
	if (!done || sink.rc != 0)
		reply_text(c, "error: sink: %s", kind(done ? sink.rc : -ETIMEDOUT));
	else if (sent != n || sink.hash != h)
		reply_text(c, "mismatch: %llu bytes", (unsigned long long)sent);
	else
		reply_text(c, "ok %llu", (unsigned long long)n);
}

/* storm: the answers come on the scheduler, maybe on another processor
 * than the handler that waits for them. */
struct storm {
	atomic_uint	done, ok, wrong, err[256];
	uint8_t		arg[128];
	size_t		alen;
};

static void
storm_done(void *ctx, int status, const uint8_t *res, size_t len)
{
	struct storm *s = ctx;

	if (status == 0 && (len != s->alen || memcmp(res, s->arg, len) != 0))
		atomic_fetch_add(&s->wrong, 1);
	else if (status == 0)
		atomic_fetch_add(&s->ok, 1);
	else
		atomic_fetch_add(&s->err[-status < 256 ? -status : 255], 1);
	atomic_fetch_add(&s->done, 1);	/* last: the waiter may free s */
}

static void
storm(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct storm *s = calloc(1, sizeof(*s));
	const char *m;
	char method[128], out[256], str[100];
	size_t n, pos = 0, o;
	uint64_t count, end;
	uint32_t sent = 0;
	int rc = 0;

	(void)ctx;
	if (s == NULL || guest_pc_get_str(args, len, &pos, &m, &n) != 0 ||
	    n >= sizeof(method) || guest_pc_get_u64(args, len, &pos, &count) != 0 ||
	    count > 1000000) {
		free(s);
		reply_text(c, "error: arguments");
		return;
	}
	snprintf(method, sizeof(method), "%.*s", (int)n, m);
	memset(str, 's', sizeof(str));
	guest_pc_put_str(s->arg, sizeof(s->arg), &s->alen, str, sizeof(str));
	while (sent < count &&
	       (rc = guest_call_async(g, method, s->arg, s->alen, storm_done, s, NULL)) == 0)
		sent++;
	for (end = (uint64_t)time(NULL) + 120; atomic_load(&s->done) < sent &&
	     (uint64_t)time(NULL) < end;)
		guest_mt_sleep(1000000);
	o = (size_t)snprintf(out, sizeof(out), "ok=%u", atomic_load(&s->ok));
	for (int e = 1; e < 256; e++)
		if (atomic_load(&s->err[e]) != 0 && o < sizeof(out))
			o += (size_t)snprintf(out + o, sizeof(out) - o, " e%d=%u", e,
					      atomic_load(&s->err[e]));
	if (atomic_load(&s->wrong) != 0 && o < sizeof(out))
		o += (size_t)snprintf(out + o, sizeof(out) - o, " wrong=%u",
				      atomic_load(&s->wrong));
	if (sent < count && o < sizeof(out))
		o += (size_t)snprintf(out + o, sizeof(out) - o, " unsent=%u (%d)",
				      (uint32_t)count - sent, rc);
	if (atomic_load(&s->done) < sent && o < sizeof(out))
		snprintf(out + o, sizeof(out) - o, " unanswered=%u",
			 sent - atomic_load(&s->done));
	reply_text(c, "%s", out);
	if (atomic_load(&s->done) == sent)
		free(s);	/* else a late answer's callback would find it gone */
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "fail", "str,str->unit", tg_fail },
		{ "fail_rc", "->str", tg_fail_rc },
		{ "why2", "str,str,str->str", tg_why2 },
		{ "wait", "->str", wait_gate },
		{ "twice", "u64->str", tg_twice },
		{ "twice_rc", "->str", tg_twice_rc },
		{ "open", "u64->str", open_gate },
		{ "openlong", "u64->str", open_long },
		{ "open_later", "u64,u64->str", open_later },
		{ "open_when", "u64,u64,u64->str", open_when },
		{ "fanopen", "u64,str,bool->str", fanopen },
		{ "call", "str,str->str", call },
		{ "call_timeout", "str,u64->str", call_timeout },
		{ "spin", "u64,bool->str", spin },
		{ "crash", "->str", crash },
		{ "exit", "->str", exit_mt },
		{ "big", "->str", big },
		{ "huge", "u64->str", huge },
		{ "caller", "str->str", tg_caller },
		{ "caller_after", "->str", tg_caller_after_answer },
		{ "threads", "->str", threads },
		{ "pull", "u64,u64->str", pull },
		{ "push", "u64->str", push },
		{ "pullfrom", "u64,u64,str->str", pullfrom },
		{ "onmt", "->str", onmt },
		{ "storm", "str,u64->str", storm },
		/* last: a test that waits for it finds every method there (a
		 * call to a guest still registering waits behind its
		 * hub.register answer) */
		{ "source", "u64,chan<bytes>->u64", source },
	};
	struct guest_rt_config cfg = { 0 };	/* 0: as hubd.conf says */
	const char *why;
	int rc;

	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--processors") == 0)
			cfg.processors = (unsigned)atoi(argv[i + 1]);
	prefix = tg_prefix(argc, argv, "mtp");
	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	tg_twice_g = g;
	if (guest_mtchan_new(1, 1u << 20, &gate) != 0)
		errx(1, "no gate");
	tg_register(g, prefix, methods, sizeof(methods) / sizeof(methods[0]));
	/* --describe-until-called: still setting up (hub.describe, again and
	 * again) when the first call comes; it waits for guest_run_mt */
	for (int i = 1; i < argc; i++) {
		struct guest_stats st = { .size = sizeof(st) };

		for (int n = 0; strcmp(argv[i], "--describe-until-called") == 0 &&
		     st.calls_in == 0 && n < 3000; n++) {
			if (guest_describe(g, "", "setting up") != 0)
				errx(1, "cannot describe");
			usleep(10000);
			guest_get_stats(g, &st);
		}
	}
	rc = guest_run_mt(g, &cfg);
	if (rc == -ECONNABORTED)
		fprintf(stderr, "mtprober: hub ended me: %s\n", guest_goodbye_reason(g));
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
