/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's reading of hubd's answers: a key's value as JSON, text, a
 * number or a list, and an answer printed as the JSON it is. */
#include <err.h>
#include <stdio.h>

#include <json-c/json.h>

#include "daemon/jsonout.h"
#include "hubctl/hubctl.h"

json_object *
get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* o[key] as text, "" when it is not there. */
const char *
text(json_object *o, const char *key)
{
	const char *s = json_object_get_string(get(o, key));

	return s != NULL ? s : "";
}

/* s for a terminal: each control character (C0, DEL, C1 in UTF-8)
 * as '?', cut to fit buf. For what a guest said (hub.describe): hubd
 * refuses such text already, but a terminal is not to trust hubd with. */
const char *
printable(char *buf, size_t len, const char *s)
{
	size_t n = 0;

	for (const uint8_t *p = (const uint8_t *)s; *p != '\0' && n + 1 < len; p++) {
		if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
			buf[n++] = '?';
			p++;
		} else {
			buf[n++] = *p < 0x20 || *p == 0x7F ? '?' : (char)*p;
		}
	}
	if (len > 0)
		buf[n] = '\0';
	return buf;
}

uint64_t
u64(json_object *o, const char *key)
{
	return json_object_get_uint64(get(o, key));
}

/* o[key], which must be a list: an answer without it is not one hubctl
 * understands. */
json_object *
list(json_object *o, const char *key)
{
	json_object *v = get(o, key);

	if (!json_object_is_type(v, json_type_array))
		errx(2, "hubd's answer has no \"%s\" list", key);
	return v;
}

uint64_t
json_ns(json_object *v, uint64_t per)
{
	double d = json_object_get_double(v) * (double)per;

	return d > 0 && d < 1.8e19 ? (uint64_t)(d + 0.5) : 0;
}

int
print_json(json_object *a)
{
	printf("%s\n", json_object_to_json_string_ext(a, JSON_OUT_FLAGS));
	json_object_put(a);
	return 0;
}
