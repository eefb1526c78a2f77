#include <string.h>

#include "proto/checksum.h"

#define FNV_PRIME	0x100000001b3ull

uint64_t
hp_checksum(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);	/* any alignment: a slot payload is at +4 */
		h = (h ^ w) * FNV_PRIME;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * FNV_PRIME;
	return h;
}
