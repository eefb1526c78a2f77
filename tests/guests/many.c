/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* many: a test guest that registers --count=N methods "many.mK" (unit ->
 * unit), says on stderr how many the hub took and why it refused the
 * rest, then serves them. */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"

static void
nothing(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	guest_reply(c, NULL, 0);
}

int
main(int argc, char *argv[])
{
	struct guest *g;
	const char *why;
	char name[64];
	long n = 0, ok = 0;
	int rc, first = 0;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--count=", 8) == 0)
			n = strtol(argv[i] + 8, NULL, 10);
	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "many.m%ld", i);
		if ((rc = guest_register(g, name, "->unit", nothing, NULL)) == 0)
			ok++;
		else if (first == 0)
			first = rc;
	}
	fprintf(stderr, "many: the hub took %ld of %ld%s%s\n", ok, n,
		first ? ", then: " : "", first ? strerror(-first) : "");
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
