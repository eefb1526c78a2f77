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

/* m as a br_out (its texts m's; *keys freed by the caller): 0, or -1
 * when it has more header lines than hub-nats ever makes. */
static int
out_of(natsMsg *m, struct br_out *o, const char ***keys)
{
	int nk = 0, nv = 0;

	*o = (struct br_out){ .subject = natsMsg_GetSubject(m), .reply = natsMsg_GetReply(m),
			      .data = natsMsg_GetData(m),
			      .len = (size_t)natsMsg_GetDataLength(m) };
	*keys = NULL;
	if (natsMsgHeader_Keys(m, keys, &nk) != NATS_OK)
		return 0;	/* none */
	for (int i = 0; i < nk; i++) {
		const char **v = NULL;

		if (natsMsgHeader_Values(m, (*keys)[i], &v, &nv) != NATS_OK)
			abort();
		for (int j = 0; j < nv; j++) {
			if (br_out_header(o, (*keys)[i], v[j]) != NATS_OK) {
				free(v);
				return -1;
			}
		}
		free(v);	/* the values are m's */
	}
	return 0;
}

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
		const char **keys;
		struct br_out o;
		size_t k;

		if (out_of(v[i], &o, &keys) != 0) {
			/* not one hub-nats makes: nothing to build again */
			free(keys);
			for (; i < n; i++)
				natsMsg_Destroy(v[i]);
			return 0;
		}
		k = br_batch_put(&o, answer, NULL);
		if (k == 0 || pos + k > sizeof(out))
			abort();	/* what parsed must build */
		br_batch_put(&o, answer, out + pos);
		pos += k;
		free(keys);
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
