/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* flooder: a guest that calls one method as fast as it can, for ever:
 * --method=M (no arguments: a method of "->unit") with --window=W calls
 * in flight (default 256), each answer or failure followed by another
 * call, from the moment it attaches (a method nobody registered yet
 * fails at once, and is called again). What a busy or hostile caller
 * does to the guest it calls (tests/e2e/check_answers.c). */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"

static long inflight;

static void
answered(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)ctx;
	(void)status;
	(void)result;
	(void)len;
	inflight--;
}

int
main(int argc, char *argv[])
{
	const char *method = NULL, *why;
	struct guest *g;
	long window = 256;

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--method=", 9) == 0)
			method = argv[i] + 9;
		else if (strncmp(argv[i], "--window=", 9) == 0)
			window = strtol(argv[i] + 9, NULL, 10);
	}
	if (method == NULL || window < 1)
		errx(1, "usage: flooder --method=M [--window=W]");
	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	for (;;) {
		while (inflight < window &&
		       guest_call_async(g, method, NULL, 0, answered, NULL, NULL) == 0)
			inflight++;
		if (guest_service_wait(g, 10) != 0)
			break;
	}
	guest_detach(g);
	return 0;
}
