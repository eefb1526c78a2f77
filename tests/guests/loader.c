/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* loader: a test guest that keeps calls in flight all the time, to echo
 * (which tests kill over and over) and to kv (which must never fail).
 *   loader.stats	"ECHO_OK ECHO_ERR KV_OK KV_ERR WRONG": answers that
 *			came back, failed, and came back with the wrong bytes
 *   loader.pause	stops issuing calls (to let the hub go quiet)
 * Payloads alternate between inline and slot sizes. */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest.h"
#include "tests/guests/testguest.h"

#define WINDOW	8	/* calls in flight to each of echo and kv */

static struct guest *g;
static int paused;
static unsigned inflight_echo, inflight_kv;
static unsigned long long echo_ok, echo_err, kv_ok, kv_err, wrong, seq;
static char value[200];

struct call {
	int	kv;
	size_t	len;
	char	text[200];
};

static void
done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct call *c = ctx;

	if (c->kv)
		inflight_kv--;
	else
		inflight_echo--;
	if (status != 0) {
		if (c->kv)
			kv_err++;
		else
			echo_err++;
	} else if (!tg_str_is(result, len, c->text, c->len)) {
		wrong++;
	} else if (c->kv) {
		kv_ok++;
	} else {
		echo_ok++;
	}
	free(c);
}

static void
issue(int kv)
{
	struct call *c = malloc(sizeof(*c));
	uint8_t args[256];
	size_t pos = 0;

	if (c == NULL)
		return;
	c->kv = kv;
	if (kv) {	/* kv.get "k" answers value */
		c->len = sizeof(value) - 1;
		memcpy(c->text, value, c->len);
		guest_pc_put_str(args, sizeof(args), &pos, "k", 1);
	} else {	/* short (inline) and long (slot) strings in turn */
		c->len = (size_t)snprintf(c->text, sizeof(c->text), "%s%llu",
					  seq % 2 ? "" : "a long message that needs a slot ", seq);
		seq++;
		guest_pc_put_str(args, sizeof(args), &pos, c->text, c->len);
	}
	if (guest_call_async(g, kv ? "kv.get" : "echo.echo", args, pos, done, c, NULL) != 0) {
		free(c);
		return;
	}
	if (kv)
		inflight_kv++;
	else
		inflight_echo++;
}

static void
stats(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char text[160];
	uint8_t res[170];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	snprintf(text, sizeof(text), "%llu %llu %llu %llu %llu", echo_ok, echo_err,
		 kv_ok, kv_err, wrong);
	guest_pc_put_str(res, sizeof(res), &pos, text, strlen(text));
	guest_reply(c, res, pos);
}

static void
pause_calls(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	paused = 1;
	guest_reply(c, NULL, 0);
}

/* kv and echo start beside us: until they have registered, the hub
 * answers "no such method"; a guest that needs another waits (10 s). */
static int
call_once_there(const char *method, const uint8_t *args, size_t len)
{
	int rc;

	for (int tries = 0; (rc = guest_call(g, method, args, len, NULL, 0, NULL,
					     10000)) == -ENOSYS && tries < 1000; tries++)
		if (guest_service_wait(g, 10) != 0)
			break;
	return rc;
}

int
main(int argc, char *argv[])
{
	const char *why;
	uint8_t args[256];
	size_t pos = 0;
	int rc;

	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	memset(value, 'v', sizeof(value) - 1);
	guest_pc_put_str(args, sizeof(args), &pos, "k", 1);
	guest_pc_put_str(args, sizeof(args), &pos, value, sizeof(value) - 1);
	if (guest_register(g, "loader.stats", "->str", stats, NULL) != 0 ||
	    guest_register(g, "loader.pause", "->unit", pause_calls, NULL) != 0)
		errx(1, "cannot register");
	if ((rc = call_once_there("kv.put", args, pos)) != 0)
		errx(1, "cannot set up: kv.put: %s", strerror(-rc));
	pos = 0;
	guest_pc_put_str(args, sizeof(args), &pos, "up?", 3);
	call_once_there("echo.echo", args, pos);
	for (;;) {
		while (!paused && inflight_kv < WINDOW)
			issue(1);
		/* echo is down between its deaths and restarts: do not spin
		 * on errors, one round per millisecond is plenty */
		while (!paused && inflight_echo < WINDOW)
			issue(0);
		if ((rc = guest_service_wait(g, 1)) != 0)
			break;
	}
	guest_detach(g);
	return rc == -ESHUTDOWN ? 0 : 1;
}
