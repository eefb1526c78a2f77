#include <string.h>

#include "proto/checksum.h"

#define FNV_PRIME	0x100000001b3ull

/* Four FNV lanes over interleaved words, so the multiplies overlap instead
 * of waiting on each other; folded into one value at the end. */
uint64_t
hp_checksum(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t lane[4] = { h, h ^ 1, h ^ 2, h ^ 3 }, w;
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		for (int k = 0; k < 4; k++) {
			memcpy(&w, b + i + 8 * k, 8);	/* a slot payload is at +4 */
			lane[k] = (lane[k] ^ w) * FNV_PRIME;
		}
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		lane[0] = (lane[0] ^ w) * FNV_PRIME;
	}
	for (; i < n; i++)
		lane[0] = (lane[0] ^ b[i]) * FNV_PRIME;
	for (int k = 1; k < 4; k++)
		lane[0] = (lane[0] ^ lane[k]) * FNV_PRIME;
	return lane[0];
}
