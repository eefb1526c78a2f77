/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* sharer: one of several callers of the same guest (tests/e2e/check_share.c).
 * Methods, named PREFIX.x (--prefix, default "sharer"):
 *   echo BYTES		its argument back
 *   back BYTES		calls --back=METHOD with its argument and answers
 *			with the result: a callee that calls its caller back
 *   slow BYTES		its argument back after 1 ms asleep, its ring
 *			unread meanwhile: a callee slower than its callers
 *   park BYTES		never answered (hubd ends the call when the hub
 *			stops): a callee that answers nobody
 *   flood METHOD MS W	answers "started" at once, then keeps W calls of
 *			METHOD (8 bytes) in flight for MS ms (1: one at a
 *			time) and waits for the last answers: nobody waits
 *			on it meanwhile, as on a plugin that calls from
 *			its own loop
 *   result		"calls=.. failed=.." of the last flood once it
 *			ended, else an error "flooding"
 * It serves the calls made to it while it floods (guest_run's
 * callbacks, inside flood's waits). */
#include <stdio.h>
#include <unistd.h>

#include "proto/clock.h"
#include "tests/guests/testguest.h"

static struct guest *g;
static const char *back_method;
static unsigned long long done_calls, failed_calls;
static char first_failure[256];
static unsigned long inflight;
static int flooding;
static char flood_text[384];

static void
echo(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	guest_reply(c, args, len);
}

static void
back(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[256];
	size_t rlen = 0;
	int rc;

	(void)ctx;
	if (back_method == NULL) {
		guest_reply_error(c, "no --back=METHOD");
		return;
	}
	/* a call that does not come back in 20 s fails (a test's wait) */
	rc = guest_call(g, back_method, args, len, res, sizeof(res), &rlen, 20000);
	if (rc != 0)
		guest_reply_error(c, rlen > 0 ? (const char *)res : "the call back failed");
	else
		guest_reply(c, res, rlen);
}

static void
slow(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	usleep(1000);
	guest_reply(c, args, len);
}

static void
park(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)c;
	(void)args;
	(void)len;
	(void)ctx;
}

static void
answered(void *ctx, int status, const uint8_t *result, size_t len)
{
	static const uint8_t want[] = { 8, 'f', 'l', 'o', 'o', 'd', 'i', 'n', 'g' };

	(void)ctx;
	inflight--;
	if (status == 0 && len == sizeof(want) && memcmp(result, want, len) == 0) {
		done_calls++;
		return;
	}
	/* the first failure's why, for the result */
	if (failed_calls++ == 0)
		snprintf(first_failure, sizeof(first_failure), "%d %.*s", status,
			 result != NULL ? (int)(len < 200 ? len : 200) : 0,
			 result != NULL ? (const char *)result : "");
}

static void
flood(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t arg[] = { 8, 'f', 'l', 'o', 'o', 'd', 'i', 'n', 'g' };
	uint64_t ms, window, end;
	static const uint8_t started[] = { 7, 's', 't', 'a', 'r', 't', 'e', 'd' };
	const char *name;
	char method[64];
	size_t pos = 0, nlen;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &name, &nlen) != 0 || nlen >= sizeof(method) ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 || window == 0 ||
	    window > 100000 || ms > 600000 || flooding || inflight > 0) {
		guest_reply_error(c, "flood METHOD MS W, one at a time");
		return;
	}
	memcpy(method, name, nlen);
	method[nlen] = '\0';
	done_calls = failed_calls = 0;
	flooding = 1;
	guest_reply(c, started, sizeof(started));
	end = hp_now_ns() + ms * 1000000u;
	while (hp_now_ns() < end) {
		while (inflight < window && hp_now_ns() < end &&
		       guest_call_async(g, method, arg, sizeof(arg), answered, NULL, NULL) == 0)
			inflight++;
		if (guest_service_wait(g, 10) != 0)
			break;
	}
	while (inflight > 0 && guest_service_wait(g, 1000) == 0)
		;
	snprintf(flood_text, sizeof(flood_text), "calls=%llu failed=%llu%s%s", done_calls,
		 failed_calls + inflight, failed_calls > 0 ? " first: " : "", first_failure);
	flooding = 0;
}

static void
result(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t buf[128];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	if (flooding || flood_text[0] == '\0') {
		guest_reply_error(c, flooding ? "flooding" : "no flood yet");
		return;
	}
	guest_pc_put_str(buf, sizeof(buf), &pos, flood_text, strlen(flood_text));
	guest_reply(c, buf, pos);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "echo", "bytes->bytes", echo },
		{ "back", "bytes->bytes", back },
		{ "slow", "bytes->bytes", slow },
		{ "park", "bytes->bytes", park },
		{ "flood", "str,u64,u64->str", flood },
		{ "result", "->str", result },
	};
	const char *why;
	int rc;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--back=", 7) == 0)
			back_method = argv[i] + 7;
	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "sharer"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
