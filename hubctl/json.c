/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's reading of hubd's answers: a key's value as JSON, text for
 * people (escaped: the one place), a number or a list, and an answer
 * printed as the JSON it is. */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/escape.h"
#include "daemon/jsonout.h"
#include "hubctl/hubctl.h"

json_object *
js_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* v's text for people: a string escaped (daemon/escape.h) in v itself,
 * once, so that what a guest said (a method's name, a reason, a note, a
 * line of its output) never reaches a terminal raw; whatever calls it
 * after, -j included, gets the escaped text. It lives as long as v. */
const char *
js_shown(json_object *v)
{
	const char *s = json_object_get_string(v);
	size_t n, cap;
	char *buf;

	if (s == NULL)
		return "";
	if (!json_object_is_type(v, json_type_string))
		return s;	/* json-c's own text of a number, true, ... */
	n = (size_t)json_object_get_string_len(v);	/* NULs too */
	cap = 4 * n + 1;
	if ((buf = malloc(cap)) == NULL)
		err(2, NULL);
	escape_text(buf, cap, s, n, 0);
	if (strlen(buf) != n || memcmp(buf, s, n) != 0)
		json_object_set_string(v, buf);
	free(buf);
	return json_object_get_string(v);
}

/* o[key] as text for people (js_shown), "" when it is not there. */
const char *
js_text(json_object *o, const char *key)
{
	return js_shown(js_get(o, key));
}

uint64_t
js_u64(json_object *o, const char *key)
{
	return json_object_get_uint64(js_get(o, key));
}

int
js_width(json_object *list, const char *key, int least)
{
	int w = least;

	for (size_t i = 0; json_object_is_type(list, json_type_array) &&
	     i < json_object_array_length(list); i++) {
		size_t n = strlen(js_text(json_object_array_get_idx(list, i), key));

		if (n > (size_t)w)
			w = n > 64 ? 64 : (int)n;
	}
	return w;
}

/* o[key], which must be a list: an answer without it is not one hubctl
 * understands. */
json_object *
js_list(json_object *o, const char *key)
{
	json_object *v = js_get(o, key);

	if (!json_object_is_type(v, json_type_array))
		errx(2, "hubd's answer has no \"%s\" list", key);
	return v;
}

uint64_t
js_ns(json_object *v, uint64_t per)
{
	double d = json_object_get_double(v) * (double)per;

	return d > 0 && d < 1.8e19 ? (uint64_t)(d + 0.5) : 0;
}

int
js_print(json_object *a)
{
	printf("%s\n", json_object_to_json_string_ext(a, JSON_OUT_FLAGS));
	json_object_put(a);
	return 0;
}
