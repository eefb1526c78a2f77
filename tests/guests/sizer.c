/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* sizer: a test guest for the size limits (check_limits). Its payloads
 * are made to an exact size N: "bytes,bytes" values of N bytes in all,
 * the same bytes for the same N, so that a receiver checks them whole.
 * Methods are named PREFIX.x, with PREFIX from --prefix (default
 * "sizer"), so that two can call each other:
 *   hash A B		the XXH3-64 of its argument bytes, as they came
 *   make N		answers a payload of N bytes (its result type
 *			"(bytes,bytes)")
 *   send METHOD N	calls METHOD with a payload of N bytes and no
 *			deadline or trace (so the call's envelope is the
 *			same every time), expecting its hash: answers
 *			"ok intact", "ok CORRUPT" or "error ERRNO: TEXT"
 *   fetch METHOD N	calls METHOD(N), expecting N bytes: answers
 *			"ok N intact" (or CORRUPT) or "error ERRNO: TEXT" */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;

static const struct guest_call_opts bare = {
	.size = sizeof(struct guest_call_opts),
	.flags = GUEST_CALL_DEADLINE | GUEST_CALL_TRACE,	/* none of either */
};

static size_t
varint_len(size_t n)
{
	size_t k = 1;

	for (; n >= 128; n >>= 7)
		k++;
	return k;
}

/* The length of a bytes value that takes want bytes with its length
 * prefix, or (size_t)-1 when none does. */
static size_t
fill_for(size_t want)
{
	for (size_t l = want > 10 ? want - 10 : 0; l < want; l++)
		if (varint_len(l) + l == want)
			return l;
	return (size_t)-1;
}

/* N bytes (N >= 3) of "bytes,bytes": the first takes all but 1 or 2,
 * the second is empty or "z". */
static uint8_t *
payload(size_t n)
{
	size_t first = n - 1, l1 = fill_for(first), pos = 0;
	uint8_t *b, *fill;

	if (l1 == (size_t)-1)
		l1 = fill_for(--first);
	if ((b = malloc(n)) == NULL || (fill = malloc(l1 + 1)) == NULL)
		err(1, "malloc");
	for (size_t i = 0; i < l1; i++)
		fill[i] = (uint8_t)(i * 131 + 7 + (i >> 12));
	guest_pc_put_bytes(b, n, &pos, fill, l1);
	guest_pc_put_bytes(b, n, &pos, (const uint8_t *)"z", n - first - 1);
	free(fill);
	return b;
}

static void
reply_text(struct guest_call *c, const char *s)
{
	uint8_t buf[2048];
	size_t pos = 0;

	guest_pc_put_str(buf, sizeof(buf), &pos, s, strlen(s));
	guest_reply(c, buf, pos);
}

static void
hash(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t buf[16];
	size_t pos = 0;

	(void)ctx;
	guest_pc_put_u64(buf, sizeof(buf), &pos, XXH3_64bits(args, len));
	guest_reply(c, buf, pos);
}

static void
make(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n = 0;
	size_t pos = 0;
	uint8_t *b;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n < 3 || n > (1u << 30)) {
		guest_reply_error(c, "N: 3 to 1 GiB");
		return;
	}
	b = payload(n);
	guest_reply(c, b, n);
	free(b);
}

/* METHOD and N of send and fetch; 0 or -1 (answered). */
static int
method_and_size(struct guest_call *c, const uint8_t *args, size_t len, char *method,
		uint64_t *n)
{
	const char *m;
	size_t mlen, pos = 0;

	if (guest_pc_get_str(args, len, &pos, &m, &mlen) != 0 || mlen > 63 ||
	    guest_pc_get_u64(args, len, &pos, n) != 0 || *n < 3 || *n > (1u << 30)) {
		guest_reply_error(c, "METHOD N: N from 3 to 1 GiB");
		return -1;
	}
	memcpy(method, m, mlen);
	method[mlen] = '\0';
	return 0;
}

static void
send(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char method[64], res[1100], out[1200];
	uint64_t n, h = 0;
	size_t rlen = 0, pos = 0;
	uint8_t *b;
	int rc;

	(void)ctx;
	if (method_and_size(c, args, len, method, &n) != 0)
		return;
	b = payload(n);
	/* no timeout: it would be the call's deadline, a CLOCK_MONOTONIC
	 * time whose varint grows with the machine's uptime (hubctl's -t
	 * bounds the test's wait) */
	rc = guest_call_with(g, method, b, n, res, sizeof(res) - 1, &rlen, -1, &bare);
	if (rc == 0) {
		guest_pc_get_u64((const uint8_t *)res, rlen, &pos, &h);
		snprintf(out, sizeof(out), "ok %s", h == XXH3_64bits(b, n) ? "intact" : "CORRUPT");
	} else
		snprintf(out, sizeof(out), "error %d: %.*s", rc, (int)rlen, res);
	free(b);
	reply_text(c, out);
}

static void
fetch(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	size_t rlen = 0, alen = 0, cap = 1u << 30;
	char method[64], out[1200];
	uint8_t arg[16], *res, *b;
	uint64_t n;
	int rc;

	(void)ctx;
	if (method_and_size(c, args, len, method, &n) != 0)
		return;
	guest_pc_put_u64(arg, sizeof(arg), &alen, n);
	if ((res = malloc(cap)) == NULL)
		err(1, "malloc");
	rc = guest_call_with(g, method, arg, alen, res, cap, &rlen, 60000, &bare);
	if (rc == 0) {
		b = payload(n);
		snprintf(out, sizeof(out), "ok %zu %s", rlen,
			 rlen == n && memcmp(b, res, n) == 0 ? "intact" : "CORRUPT");
		free(b);
	} else
		snprintf(out, sizeof(out), "error %d: %.*s", rc, (int)(rlen < 1024 ? rlen : 1024),
			 (char *)res);
	free(res);
	reply_text(c, out);
}

static const struct tg_method methods[] = {
	{ "hash", "bytes,bytes->u64", hash },
	{ "make", "u64->(bytes,bytes)", make },
	{ "send", "str,u64->str", send },
	{ "fetch", "str,u64->str", fetch },
};

int
main(int argc, char *argv[])
{
	const char *why;
	int rc;

	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "attach: %s", why);
	tg_register(g, tg_prefix(argc, argv, "sizer"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
