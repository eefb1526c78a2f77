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
#include <stdlib.h>
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

/* How many times tg_run's own loop woke from its poll(). */
static unsigned long long tg_polls;

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
		tg_polls++;
		rc = guest_service(g);
	} while (rc == 0);
	return rc == -ESHUTDOWN ? 0 : rc;
}

/* A handler answering tg_polls (u64): a --poll loop that spins counts
 * fast. Register it as PREFIX.polls with signature "->u64". */
static inline void
tg_polls_method(struct guest_call *c, const uint8_t *args, size_t len,
		void *ctx)
{
	uint8_t buf[16];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	guest_pc_put_u64(buf, sizeof(buf), &pos, tg_polls);
	guest_reply(c, buf, pos);
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

/* The name test guests give a call's status, and a reply's ("0",
 * "EALREADY"...). */
static inline const char *
tg_status_name(int rc)
{
	switch (rc) {
	case 0: return "0";
	case -ENOSYS: return "unknown method";
	case -EBADMSG: return "invalid payload";
	case -ECANCELED: return "cancelled";
	case -ETIMEDOUT: return "timeout";
	case -EHOSTUNREACH: return "unreachable";
	case -EREMOTEIO: return "user";
	case -ECONNREFUSED: return "hub";
	case -EINVAL: return "EINVAL";
	case -EILSEQ: return "EILSEQ";
	case -EALREADY: return "EALREADY";
	default: return strerror(-rc);
	}
}

/* PREFIX.fail KIND TEXT answers guest_reply_status with the status KIND
 * names (user, unknown, invalid, cancelled, unreachable, timeout; any
 * other: -EPERM, which it must refuse), or guest_reply_error for KIND
 * "error", and TEXT ("@null": NULL, "@bad":
 * not UTF-8, "@long": 600 "é", over the 1023 bytes sent). Refused, it
 * answers Err User "refused: RC" instead; either way it then answers
 * again, and PREFIX.fail_rc says what the two returned ("0 EALREADY"). */
static char tg_fail_rc_text[64] = "none";

static inline void
tg_fail(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const struct { const char *name; int status; } kinds[] = {
		{ "user", -EREMOTEIO }, { "unknown", -ENOSYS }, { "invalid", -EBADMSG },
		{ "cancelled", -ECANCELED }, { "unreachable", -EHOSTUNREACH },
		{ "timeout", -ETIMEDOUT },
	};
	static char longtext[1201];
	char kind[32], text[256], why[64];
	const char *k, *t, *tp = text;
	size_t kn, tn, pos = 0;
	int status = -EPERM, rc, rc2;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &k, &kn) != 0 || kn >= sizeof(kind) ||
	    guest_pc_get_str(args, len, &pos, &t, &tn) != 0 || tn >= sizeof(text)) {
		guest_reply_error(c, "fail takes a kind and a text");
		return;
	}
	memcpy(kind, k, kn);
	kind[kn] = '\0';
	memcpy(text, t, tn);
	text[tn] = '\0';
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i].name) == 0)
			status = kinds[i].status;
	if (strcmp(text, "@null") == 0) {
		tp = NULL;
	} else if (strcmp(text, "@bad") == 0) {
		tp = "bad \xff text";
	} else if (strcmp(text, "@long") == 0) {
		for (size_t i = 0; i + 2 < sizeof(longtext); i += 2)
			memcpy(longtext + i, "\xc3\xa9", 2);	/* é */
		tp = longtext;
	}
	rc = strcmp(kind, "error") == 0 ? guest_reply_error(c, tp) :
	    guest_reply_status(c, status, tp);
	if (rc != 0) {
		snprintf(why, sizeof(why), "refused: %s", tg_status_name(rc));
		guest_reply_error(c, why);
	}
	rc2 = guest_reply_status(c, -ECANCELED, "second");
	snprintf(tg_fail_rc_text, sizeof(tg_fail_rc_text), "%s %s", tg_status_name(rc),
		 tg_status_name(rc2));
}

static inline void
tg_fail_rc(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[80];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	guest_pc_put_str(res, sizeof(res), &pos, tg_fail_rc_text, strlen(tg_fail_rc_text));
	guest_reply(c, res, pos);
}

/* PREFIX.why2 METHOD A B: how a call of METHOD(A: str, B: str) fails,
 * "KIND: TEXT" (tg_status_name; "KIND" alone for no text, "ok" for none)
 * from guest_call and then " | " the same from guest_call_async. Needs
 * the guest in tg_twice_g. */
struct tg_why {
	struct guest_call	*c;
	char			text[2400];
};

static inline void
tg_why_text(char *text, size_t cap, int rc, const uint8_t *res, size_t len)
{
	if (rc == 0)
		snprintf(text, cap, "ok");
	else if (res == NULL)
		snprintf(text, cap, "%s", tg_status_name(rc));
	else if (res[len] != '\0' || strlen((const char *)res) != len)
		snprintf(text, cap, "%s: text not NUL-terminated", tg_status_name(rc));
	else
		snprintf(text, cap, "%s: %s", tg_status_name(rc), (const char *)res);
}

static inline void
tg_why_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct tg_why *w = ctx;
	uint8_t *res = malloc(sizeof(w->text) + 8);
	size_t n = strlen(w->text), pos = 0;

	snprintf(w->text + n, sizeof(w->text) - n, " | ");
	n = strlen(w->text);
	tg_why_text(w->text + n, sizeof(w->text) - n, status, result, len);
	if (res == NULL) {
		guest_reply_error(w->c, "out of memory");
	} else {
		guest_pc_put_str(res, sizeof(w->text) + 8, &pos, w->text, strlen(w->text));
		guest_reply(w->c, res, pos);
	}
	free(res);
	free(w);
}

static inline void
tg_why2(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *m, *a, *b;
	size_t mn, an, bn, pos = 0, rlen = 0;
	char method[128];
	uint8_t arg[600], res[1100];
	struct tg_why *w;
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &m, &mn) != 0 || mn >= sizeof(method) ||
	    guest_pc_get_str(args, len, &pos, &a, &an) != 0 || an > 250 ||
	    guest_pc_get_str(args, len, &pos, &b, &bn) != 0 || bn > 250 ||
	    (w = malloc(sizeof(*w))) == NULL) {
		guest_reply_error(c, "why2 takes a method and two strings");
		return;
	}
	memcpy(method, m, mn);
	method[mn] = '\0';
	pos = 0;
	guest_pc_put_str(arg, sizeof(arg), &pos, a, an);
	guest_pc_put_str(arg, sizeof(arg), &pos, b, bn);
	rc = guest_call(tg_twice_g, method, arg, pos, res, sizeof(res), &rlen, 10000);
	w->c = c;
	tg_why_text(w->text, sizeof(w->text), rc, rc != 0 && rlen > 0 ? res : NULL, rlen);
	if ((rc = guest_call_async(tg_twice_g, method, arg, pos, tg_why_done, w, NULL)) != 0)
		tg_why_done(w, rc, NULL, 0);
}

#endif
