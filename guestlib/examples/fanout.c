/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* fanout: fanout.both calls echo.echo and echo.reverse at once, each from
 * a microthread of its own, and answers with both results ("abc | cba").
 * Its handler blocks in guest_call and guest_mt_join; on microthreads
 * (guest_run_mt) that suspends only the handler, so many calls are in
 * progress at a time and a slow callee holds up nobody else.
 * The legs inherit the call's deadline and trace (libguest 0.7): the
 * same trace, no more time than the caller gave; fanout logs both
 * (hubctl logs fanout) and refuses at once when too little time is left. */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"

#define MAXLEN	1024
#define LEGS_MIN_NS	(1000 * 1000ull)	/* less left: not worth starting */

struct leg {
	struct guest	*g;
	const char	*method;
	const uint8_t	*args;		/* the caller's str, as it came */
	size_t		len;
	uint8_t		res[MAXLEN + 8];
	size_t		res_len;
	int		rc;
};

static void
leg_run(void *arg)
{
	struct leg *l = arg;

	l->rc = guest_call(l->g, l->method, l->args, l->len, l->res,
			   sizeof(l->res), &l->res_len, 5000);
}

static void
both(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct leg legs[2] = {
		{ .g = ctx, .method = "echo.echo", .args = args, .len = len },
		{ .g = ctx, .method = "echo.reverse", .args = args, .len = len },
	};
	struct guest_mt *mt[2];
	const char *s[2];
	size_t n[2], pos, out = 0;
	uint8_t res[2 * MAXLEN + 16];
	char joined[2 * MAXLEN + 4];
	uint64_t deadline = guest_call_deadline(c), now = guest_mt_now_ns();
	const char *trace = guest_call_trace(c);
	int i, spawned = 0;

	/* what the caller gave: a trace to log under, time to keep to */
	if (deadline != 0)
		fprintf(stderr, "fanout.both: trace %.32s, %.3f s left\n",
			trace != NULL ? trace + 3 : "(none)",
			deadline > now ? (double)(deadline - now) / 1e9 : 0.0);
	else if (trace != NULL)
		fprintf(stderr, "fanout.both: trace %.32s, no deadline\n", trace + 3);
	if (deadline != 0 && deadline < now + LEGS_MIN_NS) {
		guest_reply_status(c, -ETIMEDOUT, "too little time left for both calls");
		return;
	}
	/* both calls in flight together, each from a microthread spawned
	 * here: they inherit this call's deadline and trace */
	for (i = 0; i < 2; i++)
		if (guest_mt_spawn(leg_run, &legs[i], &mt[i]) == 0)
			spawned |= 1 << i;
		else
			leg_run(&legs[i]);	/* no microthread: call from here */
	for (i = 0; i < 2; i++)
		if (spawned & (1 << i))
			guest_mt_join(mt[i]);
	for (i = 0; i < 2; i++) {
		pos = 0;
		if (legs[i].rc != 0 ||
		    guest_pc_get_str(legs[i].res, legs[i].res_len, &pos, &s[i], &n[i]) != 0 ||
		    n[i] > MAXLEN) {
			char why[96];

			snprintf(why, sizeof(why), "%s failed: %s", legs[i].method,
				 legs[i].rc != 0 ? strerror(-legs[i].rc) : "bad answer");
			guest_reply_error(c, why);
			return;
		}
	}
	snprintf(joined, sizeof(joined), "%.*s | %.*s", (int)n[0], s[0], (int)n[1], s[1]);
	guest_pc_put_str(res, sizeof(res), &out, joined, strlen(joined));
	guest_reply(c, res, out);
}

int
main(int argc, char *argv[])
{
	struct guest *g;
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	if (guest_register(g, "fanout.both", "str->str", both, g) != 0)
		errx(1, "cannot register fanout.both");
	rc = guest_run_mt(g, NULL);	/* one processor, 64 KiB stacks */
	if (rc == -ECONNABORTED)
		fprintf(stderr, "fanout: hub ended me: %s\n", guest_goodbye_reason(g));
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
