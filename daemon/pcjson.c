/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A postcard value as JSON (pcjson.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/pcjson.h"
#include "proto/sig.h"

static json_object *
value_of(struct hp_pc_dec *d, uint8_t t)
{
	const uint8_t *b;
	const char *s;
	size_t n;
	uint64_t u;
	int64_t i;
	int v;

	switch (t) {
	case HP_T_STR:
		if (hp_pc_get_str(d, &s, &n) != 0)
			return NULL;
		return json_object_new_string_len(s, (int)n);
	case HP_T_BYTES:
		if (hp_pc_get_bytes(d, &b, &n) != 0)
			return NULL;
		if (hp_utf8_valid(b, n))
			return json_object_new_string_len((const char *)b, (int)n);
		char *hex = malloc(n * 2 + 5);
		json_object *o;

		if (hex == NULL)
			return NULL;
		memcpy(hex, "hex:", 4);
		for (size_t k = 0; k < n; k++)
			snprintf(hex + 4 + k * 2, 3, "%02x", b[k]);
		o = json_object_new_string(hex);
		free(hex);
		return o;
	case HP_T_U64:
		u = hp_pc_get_u64(d);
		return d->err ? NULL : json_object_new_uint64(u);
	case HP_T_I64:
		i = hp_pc_get_i64(d);
		return d->err ? NULL : json_object_new_int64(i);
	case HP_T_BOOL:
		v = hp_pc_get_bool(d);
		return d->err ? NULL : json_object_new_boolean(v);
	default:
		return NULL;	/* unit: JSON null */
	}
}

int
pcjson_value(struct hp_pc_dec *d, uint8_t t, json_object **out)
{
	*out = value_of(d, t);
	return *out == NULL && t != HP_T_UNIT ? -1 : 0;
}
