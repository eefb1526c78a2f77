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

#endif
