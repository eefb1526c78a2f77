/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* topicpub: a publisher for hubctl's topic tests (check_hubctl_topics).
 * It advertises topicpub.kept ("str", retained) and topicpub.pair
 * ("u64,str"); the method of each name publishes its arguments, as they
 * came, as one event of that topic. */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
	    guest_register(g, "topicpub.pair", "u64,str->unit", publish, pair) != 0)
		errx(1, "cannot register methods");
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
