/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: a control-socket request line, parsed and checked before
 * hubd acts on it, and its call arguments encoded by each type. */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/control.h"
#include "daemon/request.h"
#include "proto/sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct control_req r;
	const char *why;

	if (size > CONTROL_MSG_MAX)
		return 0;
	if (request_parse((const char *)data, size, &r, &why) == 0) {
		unsigned needs;

		if (r.cmd <= CTL_NONE || r.cmd >= CTL_NCMDS || r.nargs > CTL_ARGS_MAX)
			abort();
		needs = ctl_commands[r.cmd].needs;
		if (((needs & CTL_NEEDS_METHOD) && r.method == NULL) ||
		    ((needs & CTL_NEEDS_NAME) && r.name == NULL))
			abort();
		/* every argument readable to its length (ASan checks each
		 * byte), NULs and all, and terminated after it */
		for (int i = 0; i < r.nargs; i++) {
			volatile unsigned sum = 0;

			if (r.args[i].s == NULL)
				abort();
			for (size_t k = 0; k < r.args[i].len; k++)
				sum += (unsigned char)r.args[i].s[k];
			if (r.args[i].s[r.args[i].len] != '\0')
				abort();
			/* and encoded by each type as a call would */
			for (uint8_t t = HP_T_STR; t <= HP_T_UNIT; t++) {
				uint8_t buf[256];
				struct hp_pc_enc e;

				hp_pc_enc_init(&e, buf, sizeof(buf));
				hp_sig_encode_text(&e, t, r.args[i].s, r.args[i].len);
			}
		}
		request_free(&r);
	}
	return 0;
}
