/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A method's id from its name, and which names can be (method.h). */
#include "proto/method.h"

uint64_t
hp_method_id(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a 64 */

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	return h == 0 ? 1 : h;	/* 0 means "not a Request" */
}

const char *
hp_method_name_refused(const char *name, size_t len)
{
	if (len == 0)
		return HP_METHOD_NAME_EMPTY;
	if (len > HP_METHOD_NAME_MAX)
		return HP_METHOD_NAME_LONG;
	/* ASCII by hand: no locale decides what a name may hold */
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return HP_METHOD_NAME_CHAR;
	}
	for (size_t i = 0; i < len; i++)
		if (name[i] == '.' && (i == 0 || i == len - 1 || name[i + 1] == '.'))
			return HP_METHOD_NAME_PART;
	return NULL;
}
