/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A method's id from its name, and which names can be (method.h). */
#include <endian.h>
#include <string.h>

#include <sodium.h>

#include "proto/method.h"

uint64_t
hp_method_id(const char *name, size_t len)
{
	/* SipHash-2-4 under a published key: ids are a function of the name
	 * alone, as before, but a name with another's id takes about 2^64
	 * tries, where FNV-1a, a step each way per byte, took a
	 * meet-in-the-middle. crypto_shorthash needs no sodium_init: it
	 * picks no implementation at run time. */
	static const char key[] = HP_METHOD_ID_KEY;
	unsigned char out[crypto_shorthash_siphash24_BYTES];
	uint64_t h;

	_Static_assert(sizeof(key) - 1 == crypto_shorthash_siphash24_KEYBYTES, "a SipHash key");
	_Static_assert(sizeof(out) == sizeof(h), "a u64");
	crypto_shorthash_siphash24(out, (const unsigned char *)name, len,
				   (const unsigned char *)key);
	memcpy(&h, out, sizeof(h));
	h = le64toh(h);
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
