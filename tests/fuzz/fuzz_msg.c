/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: Request, Response, Goodbye and Lane payloads, and method
 * signatures with arguments checked against them. What decodes must
 * encode back to the same bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/callmeta.h"
#include "proto/lane.h"
#include "proto/msg.h"
#include "proto/sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_request rq = { .meta = { meta, 0, HP_META_MAX_ENTRIES } };
	struct hp_response rs = { .meta = { meta, 0, HP_META_MAX_ENTRIES } };
	static uint8_t out[1 << 17];
	const char *reason, *why;
	struct hp_sig sig;
	size_t n;
	int64_t len;
	char text[HP_SIG_MAX_LEN + 2];

	if (hp_msg_decode_request(data, size, &rq) == 0) {
		/* what decodes encodes, and decodes again to the same */
		static struct hp_meta_entry meta2[HP_META_MAX_ENTRIES];
		struct hp_request again = { .meta = { meta2, 0, HP_META_MAX_ENTRIES } };

		len = hp_msg_encode_request(out, sizeof(out), &rq.meta, rq.args, rq.args_len);
		if (len < 0 || hp_msg_decode_request(out, (size_t)len, &again) != 0 ||
		    again.meta.count != rq.meta.count || again.args_len != rq.args_len ||
		    memcmp(again.args, rq.args, rq.args_len) != 0)
			abort();
		/* a deadline and trace that read back encode to the same */
		struct hp_callmeta cm, cm2;
		struct hp_meta_entry meta3[2];
		struct hp_request mine = { .meta = { meta3, 0, 2 } };
		uint8_t cmbuf[HP_CALLMETA_MAX];
		const char *why;
		int64_t cn;

		if (hp_callmeta_read(&rq.meta, &cm, &why) == 0) {
			if ((cn = hp_callmeta_encode(cmbuf, sizeof(cmbuf), &cm)) < 0 ||
			    hp_msg_decode_request(cmbuf, (size_t)cn, &mine) != 0 ||
			    hp_callmeta_read(&mine.meta, &cm2, &why) != 0 ||
			    memcmp(&cm, &cm2, sizeof(cm)) != 0)
				abort();
		}
	}
	if (hp_msg_decode_response(data, size, &rs) == 0) {
		len = hp_msg_encode_response(out, sizeof(out), &rs);
		if (len < 0 && len != -ENOSPC && len != -EINVAL)
			abort();
	}
	hp_msg_decode_goodbye(data, size, &reason, &n);
	{
		/* a guest's report to hubd (HP_MSG_LANE): what decodes
		 * encodes, and decodes again to the same */
		struct hp_lane_msg lm, again;

		if (hp_lane_msg_decode(data, size, &lm) == 0) {
			len = hp_lane_msg_encode(out, sizeof(out), &lm);
			if (len < 0 || hp_lane_msg_decode(out, (size_t)len, &again) != 0 ||
			    memcmp(&lm, &again, sizeof(lm)) != 0)
				abort();
		}
	}
	/* the first line as a signature, the rest as its arguments */
	n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	memcpy(text, data, n);
	text[n] = '\0';
	if (hp_sig_parse(text, &sig, &why) == 0) {
		/* a signature that parses renders back as it was written */
		char again[HP_SIG_MAX_LEN + 1];

		if (hp_sig_text(&sig, again, sizeof(again)) != strlen(text) ||
		    strcmp(again, text) != 0)
			abort();
		hp_sig_check_args(&sig, data, size);
		hp_sig_check_result(&sig, data, size);
	}
	return 0;
}
