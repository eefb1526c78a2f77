/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: the postcard decoder reads only its input, whatever it is;
 * the first byte picks the sequence of gets. */
#include <stddef.h>
#include <stdint.h>

#include "proto/postcard.h"
#include "proto/sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_pc_dec d;
	const uint8_t *p;
	const char *s;
	size_t n;

	if (size == 0)
		return 0;
	hp_pc_dec_init(&d, data + 1, size - 1);
	for (uint8_t op = data[0]; hp_pc_remaining(&d) > 0 && d.err == 0; op = (uint8_t)(op * 5 + 1)) {
		switch (op % 9) {
		case 0: hp_pc_get_u8(&d); break;
		case 1: hp_pc_get_bool(&d); break;
		case 2: hp_pc_get_u16(&d); break;
		case 3: hp_pc_get_u32(&d); break;
		case 4: hp_pc_get_u64(&d); break;
		case 5: hp_pc_get_i64(&d); break;
		case 6: hp_pc_get_str(&d, &s, &n); break;
		case 7: hp_pc_get_bytes(&d, &p, &n); break;
		default: hp_pc_get_seq_len(&d); break;
		}
	}
	return 0;
}
