/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* prober: a test guest that calls out. Methods are named PREFIX.x, with
 * PREFIX from --prefix (default "prober"), so several can run at once.
 *   route METHOD ARG	calls METHOD(ARG: str), answers its str result or
 *			"error: <kind>"
 *   route_timeout METHOD MS  calls METHOD() with a timeout (sends Cancel)
 *   sporadic METHOD N MS  N calls of METHOD("x"), each after MS ms of
 *			quiet (hubd asleep: the call rings its bell), each
 *			answer checked: answers "ok N" or "error: <kind> at I"
 *   invalid		calls echo.echo with arguments that do not decode
 *   concurrent N	N calls to echo.echo in flight at once, all checked
 *   burst N SIZE	the same with SIZE-byte strings (each its own bytes),
 *			no call timing out: answers N
 *   crowd METHOD N MS	N calls to METHOD(MS: u64) in flight at once (a
 *			queue for a slow handler such as busy), answers N
 *   big N		an N-byte string through echo.echo and back, checked
 *   bigkv N		N bytes through kv.put and kv.get, checked
 *   wait		answers only when cancelled (with Cancelled)
 *   cancels		how many calls were cancelled so far
 *   pull N		receives N bytes from hub.source on a channel it
 *			opens, answers "ok N" if both checksums agree
 *   fds		the file descriptors it was started with
 *   ping N		calls hub.ping with N bytes and no metadata (no
 *			deadline, no trace, no timeout), answers "ok N" or
 *			"error: <kind>[: <message>]"
 *   sinkpair SMALL BIG	into hub.sink: a SMALL-byte item, then a BIG-byte
 *			one (raw bytes, 5 s at most for each send), then
 *			Close; answers "ok" once the sink answered, or
 *			"error: <kind>" (the second send needs the credit the
 *			first took back: a host that grants only in quarters
 *			of the window never returns it)
 *   askcaller ID	calls hub.caller(ID), answers the name or
 *			"error: <kind>: <message>"
 *   describe METHOD TEXT	calls hub.describe(METHOD, TEXT) itself (TEXT
 *			bytes, sent as they are: not UTF-8 too), answers
 *			"ok" or "error: <kind>: <message>"
 *   describe_lib METHOD TEXT  guest_describe(METHOD, TEXT), answers "ok"
 *			or "error: <errno name>"
 *   caller X, caller_after, fail KIND TEXT, fail_rc, why2 METHOD A B
 *			see testguest.h
 *   maybe TEXT		none for "none", else some(TEXT): an opt<str>
 *   negate N		-N, an i64
 *   asmap BYTES		BYTES as they are, as its map<str,u64> result
 *   register NAME SIG	calls hub.register(NAME, SIG) itself, answers "ok"
 *			or "error: <kind>: <message>" (hubd's refusal)
 *   register_lib NAME SIG  guest_register(NAME, SIG) (a method answering
 *			"ok"), answers "ok" or "error: <errno name>"
 *   busy MS		computes for MS ms without looking at the hub (a
 *			plugin doing work: awake, never asleep), then answers
 * With --poll it runs its own poll() loop on guest_fd() and
 * guest_service() instead of guest_run(). With --term-first it attaches
 * only once SIGTERM came (30 s at most), then takes it as though it came
 * during its attach: it registers its methods, stopping, and ends. With
 * --undumpable it makes itself not dumpable (PR_SET_DUMPABLE 0), as a
 * process guarding its memory does: /proc/PID is then root's. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <xxhash.h>

#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;
static uint64_t cancels;
static char start_fds[256];	/* open at exec time, before attaching */

static void
list_fds(void)
{
	size_t n = 0;

	for (int fd = 0; fd < 1024 && n < sizeof(start_fds) - 8; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n += (size_t)snprintf(start_fds + n, sizeof(start_fds) - n, "%s%d",
					      n ? " " : "", fd);
}

static const char *
kind(int rc)
{
	switch (rc) {
	case -ENOSYS: return "unknown method";
	case -EBADMSG: return "invalid payload";
	case -ECANCELED: return "cancelled";
	case -ETIMEDOUT: return "timeout";
	case -EREMOTEIO: return "user";
	case -ECONNREFUSED: return "hub";
	default: return strerror(-rc);
	}
}

static void
reply_str(struct guest_call *c, const char *s, size_t n)
{
	uint8_t *buf = malloc(n + 10);
	size_t pos = 0;

	if (buf == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	guest_pc_put_str(buf, n + 10, &pos, s, n);
	guest_reply(c, buf, pos);
	free(buf);
}

static void
reply_u64(struct guest_call *c, uint64_t v)
{
	uint8_t buf[10];
	size_t pos = 0;

	guest_pc_put_u64(buf, sizeof(buf), &pos, v);
	guest_reply(c, buf, pos);
}

static void
route(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *a, *s;
	size_t mn, an, sn, pos = 0, rlen = 0;
	char method[128], text[160];
	uint8_t arg[4096], res[4096];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_str(args, len, &pos, &a, &an) != 0 || an > 4000) {
		guest_reply_error(c, "route takes a method and a string");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	pos = 0;
	guest_pc_put_str(arg, sizeof(arg), &pos, a, an);
	rc = guest_call(g, method, arg, pos, res, sizeof(res), &rlen, 10000);
	pos = 0;
	if (rc == 0 && guest_pc_get_str(res, rlen, &pos, &s, &sn) == 0) {
		reply_str(c, s, sn);
		return;
	}
	snprintf(text, sizeof(text), "error: %s", rc == 0 ? "result is not a str" : kind(rc));
	reply_str(c, text, strlen(text));
}

static void
sporadic(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t arg[] = { 1, 'x' };
	const char *m, *s;
	size_t mn, sn, pos = 0, rlen;
	uint64_t n, ms, i;
	char method[128], text[160];
	uint8_t res[64];
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 || n > 10000 || ms > 1000) {
		guest_reply_error(c, "sporadic takes a method, a count and ms");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	for (i = 0; i < n && rc == 0; i++) {
		nanosleep(&(struct timespec){ 0, (long)(ms * 1000000) }, NULL);
		rlen = pos = 0;
		rc = guest_call(g, method, arg, sizeof(arg), res, sizeof(res), &rlen, 10000);
		if (rc == 0 && (guest_pc_get_str(res, rlen, &pos, &s, &sn) != 0 || sn != 1 ||
				s[0] != 'x'))
			rc = -EBADMSG;
	}
	if (rc == 0)
		snprintf(text, sizeof(text), "ok %llu", (unsigned long long)n);
	else
		snprintf(text, sizeof(text), "error: %s at %llu",
			 rc == -EBADMSG ? "wrong answer" : kind(rc), (unsigned long long)i - 1);
	reply_str(c, text, strlen(text));
}

/* "KIND: TEXT" for a call's error (the text libguest gives, which must
 * end with a NUL), "ok" for none. */
static void
why_text(char *text, size_t cap, int rc, const uint8_t *res, size_t len)
{
	if (rc == 0)
		snprintf(text, cap, "ok");
	else if (res == NULL)
		snprintf(text, cap, "%s", kind(rc));
	else if (res[len] != '\0' || strlen((const char *)res) != len)
		snprintf(text, cap, "%s: text not NUL-terminated", kind(rc));
	else
		snprintf(text, cap, "%s: %s", kind(rc), (const char *)res);
}

struct why {
	struct guest_call	*c;
	char			text[300];
};

static void
why_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct why *w = ctx;
	size_t n = strlen(w->text);

	snprintf(w->text + n, sizeof(w->text) - n, " | ");
	n = strlen(w->text);
	why_text(w->text + n, sizeof(w->text) - n, status, result, len);
	reply_str(w->c, w->text, strlen(w->text));
	free(w);
}

/* prober.why METHOD ARG: how a call of METHOD with the str ARG fails,
 * "KIND: TEXT" from guest_call and then from guest_call_async. */
static void
why(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *a;
	size_t mn, an, pos = 0, rlen = 0;
	char method[128];
	uint8_t arg[512], res[512];
	struct why *w;
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_str(args, len, &pos, &a, &an) != 0 || an > 400 ||
	    (w = malloc(sizeof(*w))) == NULL) {
		guest_reply_error(c, "why takes a method and a string");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	pos = 0;
	guest_pc_put_str(arg, sizeof(arg), &pos, a, an);
	rc = guest_call(g, method, arg, pos, res, sizeof(res), &rlen, 10000);
	w->c = c;
	why_text(w->text, sizeof(w->text), rc, rc != 0 && rlen > 0 ? res : NULL, rlen);
	if ((rc = guest_call_async(g, method, arg, pos, why_done, w, NULL)) != 0)
		why_done(w, rc, NULL, 0);
}

static void
route_timeout(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m;
	size_t mn, pos = 0;
	uint64_t ms;
	char method[128], text[64];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0) {
		guest_reply_error(c, "route_timeout takes a method and milliseconds");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	rc = guest_call(g, method, NULL, 0, NULL, 0, NULL, (int)ms);
	snprintf(text, sizeof(text), rc == 0 ? "ok" : "error: %s", kind(rc));
	reply_str(c, text, strlen(text));
}

static void
invalid(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t bad[] = { 0x05, 'a' };	/* says 5 bytes, has 1 */
	char text[64];
	int rc;

	(void)args;
	(void)len;
	(void)ctx;
	rc = guest_call(g, "echo.echo", bad, sizeof(bad), NULL, 0, NULL, 10000);
	snprintf(text, sizeof(text), "error: %s", rc == 0 ? "none" : kind(rc));
	reply_str(c, text, strlen(text));
}

/* u64->list<bool>: N values of a byte each, all true (a large answer
 * hubd must not blow up into N JSON objects for hubctl) */
static void
bools(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n;
	size_t pos = 0, out = 0;
	uint8_t *res;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > (64u << 20) ||
	    (res = malloc((size_t)n + 16)) == NULL) {
		guest_reply_error(c, "bools takes a count up to 64 Mi");
		return;
	}
	guest_pc_put_len(res, (size_t)n + 16, &out, (size_t)n);
	memset(res + out, 1, (size_t)n);
	guest_reply(c, res, out + (size_t)n);
	free(res);
}

/* ->u64 answered with a str: hubd shows it as not matching */
static void
badresult(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_str(c, "x", 1);
}

/* prober.asmap BYTES: BYTES as they are, as the map<str,u64> result
 * (one hubd must show as it is, or refuse: a key twice, say). */
static void
asmap(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const uint8_t *b;
	size_t n, pos = 0;

	(void)ctx;
	if (guest_pc_get_bytes(args, len, &pos, &b, &n) != 0) {
		guest_reply_error(c, "asmap takes bytes");
		return;
	}
	guest_reply(c, b, n);
}

struct batch {
	uint64_t	done;
	uint64_t	bad;
	char		first_error[256];	/* the first failed call's text */
};

/* One call of a batch came back: right if its answer matched. */
static void
batch_done(struct batch *b, int status, const uint8_t *result, size_t len, int right)
{
	if (status != 0 && b->bad == 0 && result != NULL)
		snprintf(b->first_error, sizeof(b->first_error), "%.*s", (int)len,
			 (const char *)result);
	if (status != 0 || !right)
		b->bad++;
	b->done++;
}

/* n, or how many of the n calls failed and the first one's error. */
static void
batch_reply(struct guest_call *c, const struct batch *b, uint64_t n)
{
	char why[320];

	if (b->bad == 0 && b->done == n) {
		reply_u64(c, n);
		return;
	}
	snprintf(why, sizeof(why), "%llu of %llu calls failed or came back wrong%s%s",
		 (unsigned long long)(b->bad + n - b->done), (unsigned long long)n,
		 b->first_error[0] != '\0' ? ", the first: " : "", b->first_error);
	guest_reply_error(c, why);
}

struct one {
	struct batch	*b;
	char		text[32];
};

static void
one_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct one *o = ctx;

	batch_done(o->b, status, result, len, tg_str_is(result, len, o->text, strlen(o->text)));
	free(o);
}

static void
concurrent(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct batch b = { 0, 0, "" };
	uint64_t n, issued = 0;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > 100000) {
		guest_reply_error(c, "concurrent takes a count");
		return;
	}
	for (; issued < n; issued++) {
		struct one *o = malloc(sizeof(*o));
		uint8_t arg[48];

		if (o == NULL)
			break;
		o->b = &b;
		snprintf(o->text, sizeof(o->text), "msg-%llu", (unsigned long long)issued);
		pos = 0;
		guest_pc_put_str(arg, sizeof(arg), &pos, o->text, strlen(o->text));
		if (guest_call_async(g, "echo.echo", arg, pos, one_done, o, NULL) != 0) {
			free(o);
			break;
		}
	}
	/* all issued before any is awaited: they are in flight together */
	while (b.done < issued)
		if (guest_service_wait(g, 1000) != 0)
			break;
	batch_reply(c, &b, n);
}

/* One of a burst's calls: its string is made again to check the echo. */
struct burst_one {
	struct batch	*b;
	uint64_t	i, size;
};

static void
burst_fill(char *text, uint64_t i, uint64_t size)
{
	for (uint64_t k = 0; k < size; k++)
		text[k] = (char)('a' + (k * 7 + i * 3 + k / 26) % 26);
}

static void
burst_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct burst_one *o = ctx;
	char *text = malloc(o->size);

	if (text != NULL)
		burst_fill(text, o->i, o->size);
	batch_done(o->b, status, result, len,
		   text != NULL && tg_str_is(result, len, text, o->size));
	free(text);
	free(o);
}

static void
burst(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct batch b = { 0, 0, "" };
	uint64_t n, size, issued = 0;
	size_t pos = 0;
	uint8_t *arg;
	char *text;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > 4096 ||
	    guest_pc_get_u64(args, len, &pos, &size) != 0 || size > (16u << 20)) {
		guest_reply_error(c, "burst takes a count and a size");
		return;
	}
	text = malloc(size + 1);
	arg = malloc(size + 16);
	if (text == NULL || arg == NULL) {
		free(text);
		free(arg);
		guest_reply_error(c, "out of memory");
		return;
	}
	for (; issued < n; issued++) {
		struct burst_one *o = malloc(sizeof(*o));

		if (o == NULL)
			break;
		*o = (struct burst_one){ &b, issued, size };
		burst_fill(text, issued, size);
		pos = 0;
		guest_pc_put_str(arg, size + 16, &pos, text, size);
		if (guest_call_async(g, "echo.echo", arg, pos, burst_done, o, NULL) != 0) {
			free(o);
			break;
		}
	}
	free(text);
	free(arg);
	/* all issued before any is awaited: they are in flight together */
	while (b.done < issued)
		if (guest_service_wait(g, 1000) != 0)
			break;
	batch_reply(c, &b, n);
}

static void
crowd_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	batch_done(ctx, status, result, len, 1);
}

static void
crowd(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct batch b = { 0, 0, "" };
	char method[128];
	const char *m;
	uint64_t n, ms, issued = 0;
	size_t mn, pos = 0;
	uint8_t arg[16];

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &n) != 0 || n > 4096 ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0) {
		guest_reply_error(c, "crowd takes a method, a count and ms");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, ms);
	for (; issued < n; issued++)
		if (guest_call_async(g, method, arg, pos, crowd_done, &b, NULL) != 0)
			break;
	while (b.done < issued)
		if (guest_service_wait(g, 1000) != 0)
			break;
	batch_reply(c, &b, n);
}

static void
big(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n;
	size_t pos = 0, rlen = 0;
	uint8_t *arg, *res;
	char *text;
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > (64u << 20)) {
		guest_reply_error(c, "big takes a size");
		return;
	}
	text = malloc(n + 1);
	arg = malloc(n + 16);
	res = malloc(n + 16);
	if (text == NULL || arg == NULL || res == NULL) {
		guest_reply_error(c, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < n; i++)
		text[i] = (char)('a' + (i * 7 + i / 26) % 26);
	pos = 0;
	guest_pc_put_str(arg, n + 16, &pos, text, n);
	rc = guest_call(g, "echo.echo", arg, pos, res, n + 16, &rlen, 60000);
	if (rc != 0)
		guest_reply_error(c, kind(rc));
	else if (!tg_str_is(res, rlen, text, n))
		guest_reply_error(c, "the echo differs");
	else
		reply_u64(c, n);
out:
	free(text);
	free(arg);
	free(res);
}

/* kv.put of n bytes under "big", kv.get of it compared, kv.delete. */
static void
bigkv(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n;
	size_t pos = 0, rlen = 0, gotn;
	uint8_t *data = NULL, *arg = NULL, *res = NULL;
	const uint8_t *got;
	const char *bad = NULL;
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > (64u << 20)) {
		guest_reply_error(c, "bigkv takes a size");
		return;
	}
	if ((data = malloc(n + 1)) == NULL || (arg = malloc(n + 32)) == NULL ||
	    (res = malloc(n + 32)) == NULL) {
		guest_reply_error(c, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 131 + i / 251);
	pos = 0;
	guest_pc_put_str(arg, n + 32, &pos, "big", 3);
	guest_pc_put_bytes(arg, n + 32, &pos, data, n);
	if ((rc = guest_call(g, "kv.put", arg, pos, NULL, 0, NULL, 60000)) != 0) {
		bad = kind(rc);
		goto out;
	}
	pos = 0;
	guest_pc_put_str(arg, 32, &pos, "big", 3);
	if ((rc = guest_call(g, "kv.get", arg, pos, res, n + 32, &rlen, 60000)) != 0)
		bad = kind(rc);
	else if ((pos = 0, guest_pc_get_bytes(res, rlen, &pos, &got, &gotn)) != 0 || gotn != n ||
		 memcmp(got, data, n) != 0)
		bad = "kv.get answered other bytes";
	pos = 0;
	guest_pc_put_str(arg, 32, &pos, "big", 3);
	guest_call(g, "kv.delete", arg, pos, NULL, 0, NULL, 60000);
out:
	if (bad != NULL)
		guest_reply_error(c, bad);
	else if (data != NULL && res != NULL)
		reply_u64(c, n);
	free(data);
	free(arg);
	free(res);
}

static void
wait_cancel(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	while (!guest_call_cancelled(c))
		if (guest_service_wait(g, 1000) != 0)
			return;
	cancels++;
	guest_reply_cancelled(c);
}

struct pull {
	uint64_t	bytes;
	uint64_t	checksum;
	int		ended;
	int		status;
};

static void
pull_item(void *ctx, const uint8_t *item, size_t len)
{
	struct pull *p = ctx;

	p->checksum = XXH3_64bits_withSeed(item, len, p->checksum);
	p->bytes += len;
}

static void
pull_end(void *ctx, int status)
{
	struct pull *p = ctx;

	p->ended = 1;
	p->status = status;
}

static void
pull(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct pull st = { 0, 0, 0, 0 };
	uint64_t n, host = 0;
	uint8_t arg[32], res[16];
	size_t pos = 0, rlen = 0;
	char text[64];
	int64_t chan;
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0) {
		guest_reply_error(c, "pull takes a byte count");
		return;
	}
	if ((chan = guest_chan_open(g, pull_item, pull_end, &st)) < 0) {
		guest_reply_error(c, "no channel");
		return;
	}
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, n);
	guest_pc_put_u64(arg, sizeof(arg), &pos, (uint64_t)chan);
	/* the items arrive while this call waits; Close comes before the answer */
	rc = guest_call(g, "hub.source", arg, pos, res, sizeof(res), &rlen, 60000);
	pos = 0;
	if (rc != 0 || guest_pc_get_u64(res, rlen, &pos, &host) != 0) {
		snprintf(text, sizeof(text), "error: %s", kind(rc));
	} else if (!st.ended || st.status != 0 || st.bytes != n || host != st.checksum) {
		snprintf(text, sizeof(text), "mismatch: %llu bytes, ended %d",
			 (unsigned long long)st.bytes, st.ended);
	} else {
		snprintf(text, sizeof(text), "ok %llu", (unsigned long long)n);
	}
	reply_str(c, text, strlen(text));
}

static void
fds(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_str(c, start_fds, strlen(start_fds));
}

static int sink_answer = 1;	/* 1 while hub.sink has not answered */

static void
sink_answered(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)ctx;
	(void)result;
	(void)len;
	sink_answer = status;
}

static void
sinkpair(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t small, big;
	uint8_t arg[16], *item;
	size_t pos = 0;
	int64_t chan;
	char text[64];
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &small) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &big) != 0 || small == 0 ||
	    big > (16u << 20) || small > big || (item = calloc(1, big)) == NULL) {
		guest_reply_error(c, "sinkpair takes two sizes");
		return;
	}
	if ((chan = guest_chan_open_send(g)) < 0) {
		free(item);
		guest_reply_error(c, "no channel");
		return;
	}
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, (uint64_t)chan);
	sink_answer = 1;
	rc = guest_call_async(g, "hub.sink", arg, pos, sink_answered, NULL, NULL);
	if (rc == 0)
		rc = guest_chan_send(g, (uint32_t)chan, item, small, 5000);
	if (rc == 0)
		rc = guest_chan_send(g, (uint32_t)chan, item, big, 5000);
	free(item);
	if (rc != 0)
		guest_chan_reset(g, (uint32_t)chan);
	else
		guest_chan_close(g, (uint32_t)chan);
	while (sink_answer == 1 && guest_service_wait(g, 5000) == 0)
		;
	if (rc == 0)
		rc = sink_answer;
	snprintf(text, sizeof(text), rc == 0 ? "ok" : "error: %s", kind(rc));
	reply_str(c, text, strlen(text));
}

static void
busy(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct timespec t0, t;
	uint64_t ms, el;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &ms) != 0 || ms > 60000) {
		guest_reply_error(c, "busy takes ms");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
		el = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000 +
		    (uint64_t)((t.tv_nsec - t0.tv_nsec) / 1000000);
	} while (el < ms);
	guest_reply(c, NULL, 0);
}

static const struct guest_call_opts no_meta = {
	.size = sizeof(no_meta), .flags = GUEST_CALL_DEADLINE | GUEST_CALL_TRACE,
};

static void
ping(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n;
	size_t pos = 0, rlen = 0;
	uint8_t *arg = NULL, *res = NULL;
	char text[256];
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n > (64u << 20) ||
	    (arg = malloc(n + 16)) == NULL || (res = malloc(n + 16)) == NULL) {
		guest_reply_error(c, "ping takes a size");
		goto out;
	}
	memset(res, 'p', n);
	pos = 0;
	guest_pc_put_str(arg, n + 16, &pos, (const char *)res, n);
	/* no deadline, no trace: a Request of the metadata's one byte, so
	 * that tests can aim at max_payload_size (hub.ping always answers) */
	rc = guest_call_with(g, "hub.ping", arg, pos, res, n + 16, &rlen, -1, &no_meta);
	if (rc == 0)
		snprintf(text, sizeof(text), "ok %llu", (unsigned long long)n);
	else if (rc == -EREMOTEIO || rc == -ECONNREFUSED)
		snprintf(text, sizeof(text), "error: %s: %.200s", kind(rc), (char *)res);
	else
		snprintf(text, sizeof(text), "error: %s", kind(rc));
	reply_str(c, text, strlen(text));
out:
	free(arg);
	free(res);
}

static void
askcaller(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t id;
	size_t pos = 0, rlen = 0;
	uint8_t arg[16], res[256];
	const char *s;
	size_t sn;
	char text[300];
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &id) != 0) {
		guest_reply_error(c, "askcaller takes a request id");
		return;
	}
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, id);
	rc = guest_call(g, "hub.caller", arg, pos, res, sizeof(res), &rlen, 10000);
	pos = 0;
	if (rc == 0 && guest_pc_get_str(res, rlen, &pos, &s, &sn) == 0) {
		reply_str(c, s, sn);
		return;
	}
	snprintf(text, sizeof(text), "error: ");
	why_text(text + 7, sizeof(text) - 7, rc, rc != 0 && rlen > 0 ? res : NULL, rlen);
	reply_str(c, text, strlen(text));
}

static void
describe(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m;
	const uint8_t *t;
	size_t mn, tn, pos = 0, rlen = 0;
	uint8_t arg[1024], res[256];
	char text[300];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 ||
	    guest_pc_get_bytes(args, len, &pos, &t, &tn) != 0 || mn + tn > 1000) {
		guest_reply_error(c, "describe takes a method and a text");
		return;
	}
	/* str and bytes travel alike: the text as it is, for hubd to judge */
	pos = 0;
	guest_pc_put_str(arg, sizeof(arg), &pos, m, mn);
	guest_pc_put_bytes(arg, sizeof(arg), &pos, t, tn);
	rc = guest_call(g, "hub.describe", arg, pos, res, sizeof(res), &rlen, 10000);
	snprintf(text, sizeof(text), "error: ");
	why_text(text + 7, sizeof(text) - 7, rc, rc != 0 && rlen > 0 ? res : NULL, rlen);
	reply_str(c, rc == 0 ? "ok" : text, strlen(rc == 0 ? "ok" : text));
}

static void
describe_lib(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *t;
	size_t mn, tn, pos = 0;
	char method[128], txt[512], text[64];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_str(args, len, &pos, &t, &tn) != 0 || tn >= sizeof(txt)) {
		guest_reply_error(c, "describe_lib takes a method and a text");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	memcpy(txt, t, tn);
	txt[tn] = '\0';
	rc = guest_describe(g, method, txt);
	snprintf(text, sizeof(text), "error: %s", rc == -EPERM ? "EPERM" : rc == -ENOENT ?
		 "ENOENT" : rc == -EMSGSIZE ? "EMSGSIZE" : rc == -EILSEQ ? "EILSEQ" :
		 rc == -EINVAL ? "EINVAL" : rc == -ENAMETOOLONG ? "ENAMETOOLONG" : kind(rc));
	reply_str(c, rc == 0 ? "ok" : text, strlen(rc == 0 ? "ok" : text));
}

/* prober.maybe TEXT: none for "none", else some(TEXT) ("" too). */
static void
maybe(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t buf[600];
	const char *t;
	size_t tn, pos = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &t, &tn) != 0 || tn > 512) {
		guest_reply_error(c, "maybe takes a text");
		return;
	}
	pos = 0;
	if (tn == 4 && memcmp(t, "none", 4) == 0) {
		guest_pc_put_opt(buf, sizeof(buf), &pos, 0);
	} else {
		guest_pc_put_opt(buf, sizeof(buf), &pos, 1);
		guest_pc_put_str(buf, sizeof(buf), &pos, t, tn);
	}
	guest_reply(c, buf, pos);
}

/* prober.negate N: -N (i64), for hubctl's i64 arguments. */
static void
negate(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t buf[10];
	size_t pos = 0;
	int64_t v;

	(void)ctx;
	if (guest_pc_get_i64(args, len, &pos, &v) != 0 || v == INT64_MIN) {
		guest_reply_error(c, "negate takes an i64 above its least");
		return;
	}
	pos = 0;
	guest_pc_put_i64(buf, sizeof(buf), &pos, -v);
	guest_reply(c, buf, pos);
}

/* prober.register NAME SIG: hub.register(NAME, SIG) sent as it is, for
 * hubd to judge; prober.register_lib NAME SIG: guest_register, which
 * checks first (a method that answers "ok" when called). */
static void
answer_ok(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_str(c, "ok", 2);
}

static void
register_raw(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *sg;
	size_t mn, sn, pos = 0, rlen = 0;
	uint8_t arg[1024], res[512];
	char text[600];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 ||
	    guest_pc_get_str(args, len, &pos, &sg, &sn) != 0 || mn + sn > 1000) {
		guest_reply_error(c, "register takes a name and a signature");
		return;
	}
	pos = 0;
	guest_pc_put_str(arg, sizeof(arg), &pos, m, mn);
	guest_pc_put_str(arg, sizeof(arg), &pos, sg, sn);
	rc = guest_call(g, "hub.register", arg, pos, res, sizeof(res) - 1, &rlen, 10000);
	snprintf(text, sizeof(text), "error: ");
	why_text(text + 7, sizeof(text) - 7, rc, rc != 0 && rlen > 0 ? res : NULL, rlen);
	reply_str(c, rc == 0 ? "ok" : text, strlen(rc == 0 ? "ok" : text));
}

static void
register_lib(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *sg;
	size_t mn, sn, pos = 0;
	char method[128], sig[512], text[64];
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_str(args, len, &pos, &sg, &sn) != 0 || sn >= sizeof(sig)) {
		guest_reply_error(c, "register_lib takes a name and a signature");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	memcpy(sig, sg, sn);
	sig[sn] = '\0';
	rc = guest_register(g, method, sig, answer_ok, NULL);
	snprintf(text, sizeof(text), "error: %s", rc == -EINVAL ? "EINVAL" : kind(rc));
	reply_str(c, rc == 0 ? "ok" : text, strlen(rc == 0 ? "ok" : text));
}

static void
count_cancels(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	reply_u64(c, cancels);
}

/* --term-first: SIGTERM blocked, then awaited (30 s at most) and taken.
 * It stays blocked all along, so that a test can see it in /proc before
 * it sends it (sigtimedwait would unblock it while it waits). */
static int
term_came(const sigset_t *term)
{
	sigset_t pending;

	if (sigprocmask(SIG_BLOCK, term, NULL) != 0)
		return 0;
	for (int i = 0; i < 3000; i++) {
		if (sigpending(&pending) == 0 && sigismember(&pending, SIGTERM))
			return sigtimedwait(term, NULL, &(struct timespec){ 0, 0 }) == SIGTERM &&
			    sigprocmask(SIG_UNBLOCK, term, NULL) == 0;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "route", "str,str->str", route },
		{ "twice", "u64->str", tg_twice },
		{ "twice_rc", "->str", tg_twice_rc },
		{ "route_timeout", "str,u64->str", route_timeout },
		{ "sporadic", "str,u64,u64->str", sporadic },
		{ "why", "str,str->str", why },
		{ "invalid", "->str", invalid },
		{ "badresult", "->u64", badresult },
		{ "bools", "u64->list<bool>", bools },
		{ "asmap", "bytes->map<str,u64>", asmap },
		{ "concurrent", "u64->u64", concurrent },
		{ "burst", "u64,u64->u64", burst },
		{ "crowd", "str,u64,u64->u64", crowd },
		{ "big", "u64->u64", big },
		{ "bigkv", "u64->u64", bigkv },
		{ "wait", "->unit", wait_cancel },
		{ "cancels", "->u64", count_cancels },
		{ "pull", "u64->str", pull },
		{ "fds", "->str", fds },
		{ "ping", "u64->str", ping },
		{ "busy", "u64->unit", busy },
		{ "sinkpair", "u64,u64->str", sinkpair },
		{ "askcaller", "u64->str", askcaller },
		{ "describe", "str,bytes->str", describe },
		{ "describe_lib", "str,str->str", describe_lib },
		{ "caller", "str->str", tg_caller },
		{ "caller_after", "->str", tg_caller_after_answer },
		{ "fail", "str,str->unit", tg_fail },
		{ "fail_rc", "->str", tg_fail_rc },
		{ "why2", "str,str,str->str", tg_why2 },
		{ "maybe", "str->opt<str>", maybe },
		{ "negate", "i64->i64", negate },
		{ "register", "str,str->str", register_raw },
		{ "register_lib", "str,str->str", register_lib },
	};
	const char *why;
	int rc, term_first = 0;
	sigset_t term;

	for (int i = 1; i < argc; i++) {
		term_first |= strcmp(argv[i], "--term-first") == 0;
		if (strcmp(argv[i], "--undumpable") == 0 && prctl(PR_SET_DUMPABLE, 0) != 0)
			err(1, "PR_SET_DUMPABLE");
	}
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	if (term_first && !term_came(&term))
		errx(1, "no SIGTERM within 30 s");
	list_fds();
	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	if (term_first)
		raise(SIGTERM);		/* libguest's handler: guest_stop */
	tg_twice_g = g;
	tg_register(g, tg_prefix(argc, argv, "prober"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
