/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* shifty: a test guest whose methods come and go (guest_unregister) and
 * change their signature between runs. Methods are PREFIX.x, PREFIX from
 * --prefix (default "sh"); --alt registers get with its other signature.
 *   get K		(str->bytes) "v1"; with --alt get K N (str,u64->bytes) "v2"
 *   drop M		guest_unregister(M): "ok" or "error -ERRNO"
 *   raw M		hub.unregister(M) called as any method: "ok" or the
 *			host's error text
 *   hold MS		answers "held" after MS ms, serving meanwhile */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;

static void
reply_text(struct guest_call *c, const char *text)
{
	uint8_t res[256];
	size_t pos = 0;

	guest_pc_put_str(res, sizeof(res), &pos, text, strlen(text));
	guest_reply(c, res, pos);
}

static void
get(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t res[16];
	size_t pos = 0;

	(void)args, (void)len;
	guest_pc_put_bytes(res, sizeof(res), &pos, ctx != NULL ? "v2" : "v1", 2);
	guest_reply(c, res, pos);
}

static void
drop(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char name[128], out[64];
	const char *s;
	size_t pos = 0, n;
	int rc;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0 || n >= sizeof(name)) {
		guest_reply_error(c, "drop takes a method");
		return;
	}
	memcpy(name, s, n);
	name[n] = '\0';
	if ((rc = guest_unregister(g, name)) == 0)
		snprintf(out, sizeof(out), "ok");
	else
		snprintf(out, sizeof(out), "error %d", rc);
	reply_text(c, out);
}

static void
raw(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char res[256], out[300];
	size_t rlen = 0;
	int rc;

	(void)ctx;
	rc = guest_call(g, "hub.unregister", args, len, res, sizeof(res) - 1, &rlen, 10000);
	res[rc == 0 || rlen >= sizeof(res) ? 0 : rlen] = '\0';
	snprintf(out, sizeof(out), rc == 0 ? "ok" : "error %d %s", rc, res);
	reply_text(c, out);
}

static void
hold(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t ms = 0, end;
	size_t pos = 0;

	(void)ctx;
	guest_pc_get_u64(args, len, &pos, &ms);
	for (end = guest_mt_now_ns() + ms * 1000000u; guest_mt_now_ns() < end;)
		guest_service_wait(g, 20);
	reply_text(c, "held");
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "drop", "str->str", drop },
		{ "hold", "u64->str", hold },
		{ "raw", "str->str", raw },
	};
	const char *prefix = tg_prefix(argc, argv, "sh"), *why = NULL;
	char name[128];
	int rc, alt = 0;

	for (int i = 1; i < argc; i++)
		alt |= strcmp(argv[i], "--alt") == 0;
	if ((rc = guest_attach(argc, argv, &g, &why)) < 0)
		errx(1, "attach: %s", why != NULL ? why : strerror(-rc));
	tg_register(g, prefix, methods, sizeof(methods) / sizeof(methods[0]));
	snprintf(name, sizeof(name), "%s.get", prefix);
	if (guest_register(g, name, alt ? "str,u64->bytes" : "str->bytes", get, alt ? g : NULL) != 0)
		errx(1, "cannot register %s", name);
	rc = tg_run(g, argc, argv);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
