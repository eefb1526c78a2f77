/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* metaguest: a test guest for call metadata, each call's deadline and
 * trace (guest_call_deadline, guest_call_trace, guest_call_with).
 * Methods are named PREFIX.x, PREFIX from --prefix (default "meta");
 * with --mt it serves on microthreads (guest_run_mt).
 *   show		"DEADLINE TRACE": the call's deadline (ns, 0: none)
 *			and traceparent ("-": none)
 *   nested METHOD	calls METHOD() (another's show), answers
 *			"MINE|ITS": its own show, then the answer
 *   spawned METHOD	(--mt) the same, the call made from a microthread
 *			the handler spawns
 *   own METHOD TRACE	calls METHOD() with opts and no timeout: no
 *			deadline, TRACE as it is ("new": a new trace),
 *			answers its answer
 *   late METHOD	calls METHOD() with a deadline already past,
 *			answers "STATUS: TEXT" (errno name, the error's
 *			text) or "ok"
 *   touch		counts a call whose handler ran, answers "touched"
 *   touched		how many touch calls ran (u64) */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;
static uint64_t touched;

static void
reply_text(struct guest_call *c, const char *text)
{
	uint8_t res[1024];
	size_t pos = 0;

	if (guest_pc_put_str(res, sizeof(res), &pos, text, strlen(text)) < 0)
		guest_reply_error(c, "too long");
	else
		guest_reply(c, res, pos);
}

static void
show_of(struct guest_call *c, char *buf, size_t n)
{
	const char *t = guest_call_trace(c);

	snprintf(buf, n, "%" PRIu64 " %s", guest_call_deadline(c), t != NULL ? t : "-");
}

static void
show(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char buf[128];

	(void)args, (void)len, (void)ctx;
	show_of(c, buf, sizeof(buf));
	reply_text(c, buf);
}

/* The str argument at *pos, NUL-terminated into buf; 0 or -1. */
static int
str_arg(const uint8_t *args, size_t len, size_t *pos, char *buf, size_t n)
{
	const char *s;
	size_t sn;

	if (guest_pc_get_str(args, len, pos, &s, &sn) != 0 || sn >= n)
		return -1;
	memcpy(buf, s, sn);
	buf[sn] = '\0';
	return 0;
}

/* Calls method() with opts and timeout_ms, its answer (or the error)
 * into out. */
static void
call_into(const char *method, const struct guest_call_opts *o, int timeout_ms, char *out,
	  size_t n)
{
	uint8_t res[512];
	const char *s;
	size_t rlen = 0, sn, pos = 0;
	int rc = guest_call_with(g, method, NULL, 0, res, sizeof(res), &rlen, timeout_ms, o);

	if (rc != 0)
		snprintf(out, n, "error %d", rc);
	else if (guest_pc_get_str(res, rlen, &pos, &s, &sn) != 0)
		snprintf(out, n, "(not a str)");
	else
		snprintf(out, n, "%.*s", (int)sn, s);
}

static void
nested(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char method[128], mine[128], its[256], out[512];
	size_t pos = 0;

	(void)ctx;
	if (str_arg(args, len, &pos, method, sizeof(method)) != 0) {
		guest_reply_error(c, "nested takes a method");
		return;
	}
	show_of(c, mine, sizeof(mine));
	call_into(method, NULL, 10000, its, sizeof(its));
	snprintf(out, sizeof(out), "%s|%s", mine, its);
	reply_text(c, out);
}

struct spawned {
	const char	*method;
	char		its[256];
};

static void
spawned_main(void *arg)
{
	struct spawned *s = arg;

	call_into(s->method, NULL, 10000, s->its, sizeof(s->its));
}

static void
spawned(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char method[128], mine[128], out[512];
	struct spawned s = { .method = method };
	struct guest_mt *mt;
	size_t pos = 0;

	(void)ctx;
	if (str_arg(args, len, &pos, method, sizeof(method)) != 0) {
		guest_reply_error(c, "spawned takes a method");
		return;
	}
	show_of(c, mine, sizeof(mine));
	if (guest_mt_spawn(spawned_main, &s, &mt) != 0 || guest_mt_join(mt) != 0) {
		guest_reply_error(c, "cannot spawn (not under --mt?)");
		return;
	}
	snprintf(out, sizeof(out), "%s|%s", mine, s.its);
	reply_text(c, out);
}

static void
own(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char method[128], trace[128], its[256];
	struct guest_call_opts o = { .size = sizeof(o),
				     .flags = GUEST_CALL_DEADLINE | GUEST_CALL_TRACE };
	size_t pos = 0;

	(void)ctx;
	if (str_arg(args, len, &pos, method, sizeof(method)) != 0 ||
	    str_arg(args, len, &pos, trace, sizeof(trace)) != 0) {
		guest_reply_error(c, "own takes a method and a trace");
		return;
	}
	if (strcmp(trace, "new") == 0)
		o.flags = GUEST_CALL_DEADLINE | GUEST_CALL_NEW_TRACE;
	else
		o.trace = trace;
	call_into(method, &o, -1, its, sizeof(its));	/* no timeout: no deadline */
	reply_text(c, its);
}

struct late {
	int	done, status;
	char	text[256];
};

static void
late_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct late *l = ctx;

	l->done = 1;
	l->status = status;
	if (status != 0 && result != NULL)
		snprintf(l->text, sizeof(l->text), "%.*s", (int)len, (const char *)result);
}

static void
late(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	/* 1 ns after the clock's start: long past */
	struct guest_call_opts o = { .size = sizeof(o), .flags = GUEST_CALL_DEADLINE,
				     .deadline_ns = 1 };
	struct late l = { 0 };
	char method[128], out[512];
	size_t pos = 0;
	int rc;

	(void)ctx;
	if (str_arg(args, len, &pos, method, sizeof(method)) != 0) {
		guest_reply_error(c, "late takes a method");
		return;
	}
	/* async: no wait of ours that could end first; the answer says */
	if ((rc = guest_call_async_with(g, method, NULL, 0, late_done, &l, NULL, &o)) != 0) {
		snprintf(out, sizeof(out), "cannot call: %d", rc);
		reply_text(c, out);
		return;
	}
	for (int i = 0; i < 1000 && !l.done; i++)
		if (guest_service_wait(g, 10) < 0)
			break;
	if (!l.done)
		snprintf(out, sizeof(out), "no answer");
	else if (l.status == 0)
		snprintf(out, sizeof(out), "ok");
	else
		snprintf(out, sizeof(out), "%s: %s", l.status == -ETIMEDOUT ? "ETIMEDOUT" :
			 strerror(-l.status), l.text);
	reply_text(c, out);
}

static void
touch(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args, (void)len, (void)ctx;
	touched++;
	reply_text(c, "touched");
}

static void
touched_count(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[16];
	size_t pos = 0;

	(void)args, (void)len, (void)ctx;
	guest_pc_put_u64(res, sizeof(res), &pos, touched);
	guest_reply(c, res, pos);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "show", "->str", show },
		{ "nested", "str->str", nested },
		{ "spawned", "str->str", spawned },
		{ "own", "str,str->str", own },
		{ "late", "str->str", late },
		{ "touch", "->str", touch },
		{ "touched", "->u64", touched_count },
	};
	const char *why;
	int rc, mt = 0;

	for (int i = 1; i < argc; i++)
		mt |= strcmp(argv[i], "--mt") == 0;
	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "meta"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = mt ? guest_run_mt(g, NULL) : tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
