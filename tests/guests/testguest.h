/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What several test guests and the bench guest share: methods named
 * PREFIX.NAME from a table, the --prefix option, the loop (--poll: a
 * plugin's own), and checking that an answer is a given str. Header
 * only, on libguest's API. */
#ifndef HUB_TESTGUEST_H
#define HUB_TESTGUEST_H

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"

struct tg_method {
	const char	*name;
	const char	*sig;
	guest_handler	fn;
};

/* The value after the last "--prefix" in argv, or def. */
static inline const char *
tg_prefix(int argc, char *argv[], const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--prefix") == 0)
			def = argv[i + 1];
	return def;
}

/* Registers each of the n methods as PREFIX.NAME; exits on a failure. */
static inline void
tg_register(struct guest *g, const char *prefix, const struct tg_method *m,
	    size_t n)
{
	char name[128];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s.%s", prefix, m[i].name);
		if (guest_register(g, name, m[i].sig, m[i].fn, NULL) != 0)
			errx(1, "cannot register %s", name);
	}
}

/* Runs the guest's loop until it ends: guest_run, or with "--poll" in
 * argv a plugin's own poll() loop on guest_fd() and guest_service().
 * 0 when it ended well. */
static inline int
tg_run(struct guest *g, int argc, char *argv[])
{
	struct pollfd pfd = { .fd = guest_fd(g), .events = POLLIN };
	int rc, use_poll = 0;

	for (int i = 1; i < argc; i++)
		use_poll |= strcmp(argv[i], "--poll") == 0;
	if (!use_poll)
		return guest_run(g);
	do {
		poll(&pfd, 1, guest_service_timeout_ms(g));
		rc = guest_service(g);
	} while (rc == 0);
	return rc == -ESHUTDOWN ? 0 : rc;
}

/* Whether res[0..len) is the postcard str text[0..n). */
static inline int
tg_str_is(const uint8_t *res, size_t len, const char *text, size_t n)
{
	const char *s;
	size_t sn, pos = 0;

	return guest_pc_get_str(res, len, &pos, &s, &sn) == 0 && sn == n &&
	    memcmp(s, text, n) == 0;
}

/* PREFIX.twice MODE answers its call twice: the first answer "first"
 * (mode 0, 2: Ok; 1: an error), the second an error (0, 2) or Ok (1);
 * mode 2 from a callback, after the handler returned. PREFIX.twice_rc
 * says what the second answer returned ("EALREADY" is right). Each
 * needs the guest in tg_twice_g. */
static struct guest *tg_twice_g;
static char tg_twice_rc_text[64] = "none";

static inline void
tg_twice_second(struct guest_call *c, uint64_t mode)
{
	uint8_t res[16];
	size_t pos = 0;
	int rc, rc2;

	guest_pc_put_str(res, sizeof(res), &pos, "second", 6);
	if (mode == 1)
		rc = guest_reply(c, res, pos);
	else
		rc = guest_reply_error(c, "second");
	rc2 = guest_reply_cancelled(c);
	snprintf(tg_twice_rc_text, sizeof(tg_twice_rc_text), "%s %s",
		 rc == -EALREADY ? "EALREADY" : strerror(-rc),
		 rc2 == -EALREADY ? "EALREADY" : strerror(-rc2));
}

static inline void
tg_twice_answer(struct guest_call *c, uint64_t mode)
{
	uint8_t res[16];
	size_t pos = 0;

	guest_pc_put_str(res, sizeof(res), &pos, "first", 5);
	if (mode == 1)
		guest_reply_error(c, "first");
	else
		guest_reply(c, res, pos);
	tg_twice_second(c, mode);
}

static inline void
tg_twice_later(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)status;
	(void)result;
	(void)len;
	tg_twice_answer(ctx, 2);
}

static inline void
tg_twice(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t empty[1] = { 0 };	/* hub.ping's empty bytes */
	uint64_t mode;
	size_t pos = 0;

	(void)ctx;
	snprintf(tg_twice_rc_text, sizeof(tg_twice_rc_text), "pending");
	if (guest_pc_get_u64(args, len, &pos, &mode) != 0 || mode > 2)
		guest_reply_error(c, "twice takes 0, 1 or 2");
	else if (mode < 2)
		tg_twice_answer(c, mode);
	else if (guest_call_async(tg_twice_g, "hub.ping", empty, sizeof(empty),
				  tg_twice_later, c, NULL) != 0)
		guest_reply_error(c, "hub.ping did not go");
}

static inline void
tg_twice_rc(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[80];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	guest_pc_put_str(res, sizeof(res), &pos, tg_twice_rc_text, strlen(tg_twice_rc_text));
	guest_reply(c, res, pos);
}

/* PREFIX.caller X answers guest_call_caller (X ignored), asked twice: the
 * second must be the first, kept; "error: none" for NULL. What it gives
 * once the call is answered (NULL is right) goes to PREFIX.caller_after. */
static char tg_caller_after[16] = "none";

static inline void
tg_caller(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *who = guest_call_caller(c);
	uint8_t res[128];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	if (who == NULL)
		who = "error: none";
	else if (guest_call_caller(c) != who)
		who = "error: not kept";
	guest_pc_put_str(res, sizeof(res), &pos, who, strlen(who));
	guest_reply(c, res, pos);
	snprintf(tg_caller_after, sizeof(tg_caller_after), "%s",
		 guest_call_caller(c) == NULL ? "NULL" : "not NULL");
}

static inline void
tg_caller_after_answer(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[32];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	guest_pc_put_str(res, sizeof(res), &pos, tg_caller_after, strlen(tg_caller_after));
	guest_reply(c, res, pos);
}

#endif
