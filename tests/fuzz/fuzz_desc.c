/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: a received descriptor, any 64 bytes, against a slot pool
 * whose bitmap and generations are fuzzed too. */
#include <stdlib.h>
#include <string.h>

#include "proto/desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *mem;
	const size_t pool_bytes = 64 + 4 * 256;
	struct hp_desc_limits lim = { .max_payload_size = 200, .max_channels = 16 };
	struct hp_slot_pool pool;
	struct hp_desc d;
	const uint8_t *payload;
	const char *rule;
	uint32_t len;

	if (size < sizeof(d))
		return 0;
	if (mem == NULL)
		mem = aligned_alloc(64, pool_bytes);
	memcpy(&d, data, sizeof(d));
	memset(mem, 0, pool_bytes);
	memcpy(mem, data + sizeof(d), size - sizeof(d) < pool_bytes ? size - sizeof(d) : pool_bytes);
	hp_slot_pool_view(&pool, mem, 4, 256);
	if (hp_desc_validate(&d, &lim, &pool, &payload, &len, &rule) == 0) {
		/* what passes lies inside the descriptor or the pool */
		if (!((payload >= d.inline_payload && payload + len <= d.inline_payload + 32) ||
		      (payload >= mem && payload + len <= mem + pool_bytes)))
			abort();
	}
	return 0;
}
