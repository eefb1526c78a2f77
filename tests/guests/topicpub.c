/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* topicpub: a publisher for hubctl's topic tests (check_hubctl_topics).
 * It advertises topicpub.kept ("str", retained) and topicpub.pair
 * ("u64,str"); the method of each name publishes its arguments, as they
 * came, as one event of that topic. topicpub.flood(MS) publishes pair
 * events for MS ms without a pause and answers how many (a loop that only
 * publishes, never waiting: libguest keeps its heartbeat). */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "guest.h"

static struct guest *g;
static char kept[] = "topicpub.kept", pair[] = "topicpub.pair";

/* The arguments of a method of the topic's signature (ctx: its name) are
 * an event of it. */
static void
publish(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char why[64];
	int rc;

	if ((rc = guest_publish(g, ctx, args, len)) != 0) {
		snprintf(why, sizeof(why), "guest_publish: %s", strerror(-rc));
		guest_reply_error(c, why);
		return;
	}
	guest_reply(c, NULL, 0);
}

static uint64_t
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void
flood(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t ms, n = 0, end;
	uint8_t ev[32], res[16];
	size_t pos = 0, rlen = 0;
	int rc;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &ms) != 0 || ms > 60000) {
		guest_reply_error(c, "flood takes ms");
		return;
	}
	for (end = now_ms() + ms; now_ms() < end; n++) {
		pos = 0;
		guest_pc_put_u64(ev, sizeof(ev), &pos, n);
		guest_pc_put_str(ev, sizeof(ev), &pos, "x", 1);
		if ((rc = guest_publish(g, pair, ev, pos)) != 0) {
			guest_reply_error(c, strerror(-rc));
			return;
		}
	}
	guest_pc_put_u64(res, sizeof(res), &rlen, n);
	guest_reply(c, res, rlen);
}

int
main(int argc, char *argv[])
{
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	if ((rc = guest_advertise(g, kept, "str", GUEST_TOPIC_RETAIN)) != 0 ||
	    (rc = guest_advertise(g, pair, "u64,str", 0)) != 0)
		errx(1, "guest_advertise: %s", strerror(-rc));
	if (guest_register(g, "topicpub.kept", "str->unit", publish, kept) != 0 ||
	    guest_register(g, "topicpub.pair", "u64,str->unit", publish, pair) != 0 ||
	    guest_register(g, "topicpub.flood", "u64->u64", flood, NULL) != 0)
		errx(1, "cannot register methods");
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
