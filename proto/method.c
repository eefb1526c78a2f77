/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A method's id from its name (method.h). */
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
