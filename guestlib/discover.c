/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* guest_wait_method: waiting for a method without polling, on the hub's
 * discovery topic hub.methods (doc/events.md): subscribe first, then ask
 * once what is there (hub.methods), then take events until it comes. */
#include <errno.h>
#include <string.h>

#include "guestlib/internal.h"
#include "proto/builtin.h"
#include "proto/postcard.h"
#include "proto/topic.h"

#define HUB_METHODS_TOPIC	"hub.methods"	/* method, registered|gone, signature */

/* Whether name can be called now, by hub.methods (the callable ones,
 * their guests up): 1, 0, or -errno. */
static int
callable(struct guest *g, const char *name)
{
	uint8_t args[HP_METHOD_NAME_MAX + 8], res[1024];
	struct hp_pc_enc e;
	struct hp_pc_dec d;
	size_t rlen = 0;
	int rc;

	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, name, strlen(name));
	if ((rc = guest_call_with(g, HP_SVC_METHODS, args, e.len, res, sizeof(res), &rlen,
			    10000, &lg_own_call)) != 0)
		return rc;
	hp_pc_dec_init(&d, res, rlen);
	/* list<(str,str)>: a name asked for exactly is there or not */
	return hp_pc_get_seq_len(&d) > 0 && d.err == 0;
}

/* Whether ev says name was registered. */
static int
registered(const struct guest_event *ev, const char *name)
{
	const char *s;
	size_t n, wn = strlen(name);
	struct hp_pc_dec d;

	if (ev->bad)
		return 0;
	hp_pc_dec_init(&d, ev->data, ev->len);
	hp_pc_get_str(&d, &s, &n);
	if (d.err != 0 || n != wn || memcmp(s, name, n) != 0)
		return 0;
	hp_pc_get_str(&d, &s, &n);
	return d.err == 0 && n == strlen("registered") && memcmp(s, "registered", n) == 0;
}

int
guest_wait_method(struct guest *g, const char *name, int timeout_ms)
{
	uint8_t buf[1024];
	struct guest_event ev;
	uint64_t until = timeout_ms < 0 ? UINT64_MAX :
	    hp_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int sub, rc;

	if (name == NULL || hp_method_name_refused(name, strlen(name)) != NULL)
		return -EINVAL;
	if ((sub = guest_subscribe(g, HUB_METHODS_TOPIC, GUEST_DROP_OLDEST, NULL, NULL)) < 0)
		return sub;
	rc = callable(g, name);
	while (rc == 0) {
		uint64_t now = hp_now_ns();
		int ms = until == UINT64_MAX ? -1 : now >= until ? 0 :
		    (int)((until - now + 999999) / 1000000);

		if ((rc = guest_next_event(g, sub, buf, sizeof(buf), &ev, ms)) == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (rc < 0)
			break;
		/* lapped: what we missed may have been it */
		rc = registered(&ev, name) ? 1 : ev.lost > 0 ? callable(g, name) : 0;
	}
	guest_unsubscribe(g, sub);
	return rc > 0 ? 0 : rc;
}
