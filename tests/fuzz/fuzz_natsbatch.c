/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: hub-nats's batch wire (nats/batch.c), as anyone on NATS may
 * send it. The first byte is the count (Hub-Batch) and whether it is a
 * batch of answers, the rest the body. What parses is built again to
 * the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int opened;
	static natsMsg *v[BR_BATCH_MAX];
	static uint8_t out[1 << 17];
	char count[8];
	uint32_t n = 0;
	size_t pos = 0;
	int answer;

	if (!opened && nats_Open(-1) == NATS_OK)
		opened = 1;
	if (size < 1)
		return 0;
	answer = data[0] & 1;
	snprintf(count, sizeof(count), "%u", (unsigned)(data[0] >> 1) + 1);
	if (br_batch_parse(data + 1, size - 1, count, "hub.call.x", answer, v, &n) != 0)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t k = br_batch_put(v[i], answer, NULL);

		if (k == 0 || pos + k > sizeof(out))
			abort();	/* what parsed must build */
		br_batch_put(v[i], answer, out + pos);
		pos += k;
		natsMsg_Destroy(v[i]);
	}
	/* the same entries again (header order and blanks may differ:
	 * libnats hashes them, and values lose their leading blanks) */
	if (br_batch_parse(out, pos, count, "hub.call.x", answer, v, &n) != 0)
		abort();
	for (uint32_t i = 0; i < n; i++)
		natsMsg_Destroy(v[i]);
	return 0;
}
