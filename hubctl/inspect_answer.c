/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The pieces of hubctl inspect's answer that its files all make or read:
 * a broken invariant in a list, an area of a file in a list and the list
 * in file order, and a domain's label for people. */
#include <stdarg.h>
#include <stdio.h>

#include <json-c/json.h>

#include "hubctl/hubctl.h"
#include "hubctl/inspector.h"

/* One broken invariant into a domain's or pool's own list. */
void
inspect_problem(json_object *problems, const char *fmt, ...)
{
	char m[224];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	json_object_array_add(problems, json_object_new_string(m));
}

/* One area of a file, as the answer's "areas" lists them. */
void
inspect_area(json_object *areas, const char *name, int peer, uint64_t off, uint64_t len)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "area", json_object_new_string(name));
	if (peer > 0)
		json_object_object_add(a, "peer_id", json_object_new_int(peer));
	json_object_object_add(a, "offset", json_object_new_uint64(off));
	json_object_object_add(a, "size", json_object_new_uint64(len));
	json_object_array_add(areas, a);
}

/* For json_object_array_sort: areas in file order. */
static int
by_offset(const void *a, const void *b)
{
	uint64_t x = json_object_get_uint64(js_get(*(json_object *const *)a, "offset"));
	uint64_t y = json_object_get_uint64(js_get(*(json_object *const *)b, "offset"));

	return x < y ? -1 : x > y;
}

void
inspect_areas_sort(json_object *areas)
{
	json_object_array_sort(areas, by_offset);
}

/* "guest NAME" for a domain, "segment NAME" for a whole hub's. */
const char *
inspect_domain_label(char *buf, size_t len, json_object *o)
{
	snprintf(buf, len, "%s %s", js_get(o, "peer_id") != NULL ? "guest" : "segment",
		 js_text(o, "name"));
	return buf;
}
