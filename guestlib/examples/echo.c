/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* echo: echo.echo returns its string, echo.reverse reverses it (by
 * character, so UTF-8 stays valid). */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"

static void
echo(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	guest_reply(c, args, len);	/* str in, the same str out */
}

static void
reverse(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *s;
	size_t n, pos = 0, out = 0;
	char *rev;
	uint8_t *res;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0) {
		guest_reply_error(c, "the argument is not a string");
		return;
	}
	if ((rev = malloc(n + 1)) == NULL || (res = malloc(n + 10)) == NULL) {
		free(rev);
		guest_reply_error(c, "out of memory");
		return;
	}
	for (size_t i = 0; i < n;) {
		size_t k = 1;	/* length of the UTF-8 sequence at i */

		while (i + k < n && ((uint8_t)s[i + k] & 0xC0) == 0x80)
			k++;
		memcpy(rev + n - i - k, s + i, k);
		i += k;
	}
	guest_pc_put_str(res, n + 10, &out, rev, n);
	guest_reply(c, res, out);
	free(rev);
	free(res);
}

int
main(int argc, char *argv[])
{
	struct guest *g;
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	if (guest_register(g, "echo.echo", "str->str", echo, NULL) != 0 ||
	    guest_register(g, "echo.reverse", "str->str", reverse, NULL) != 0)
		errx(1, "cannot register methods");
	rc = guest_run(g);
	if (rc == -ECONNABORTED)	/* the hub ended us for breaking a rule */
		fprintf(stderr, "echo: hub ended me: %s\n", guest_goodbye_reason(g));
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
