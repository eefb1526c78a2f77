/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: a control-socket request line, parsed and checked before
 * hubd acts on it, and its call arguments encoded by each type. */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/control.h"
#include "daemon/pcjson.h"
#include "daemon/request.h"
#include "proto/sig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* every kind of type, compounds nested */
	static const char types[] = "str,bytes,u64,i64,bool,f64,list<opt<u64>>,"
	    "map<bytes,(i64,list<f64>)>->unit";
	struct control_req r;
	struct hp_sig sig;
	const char *why;

	if (size > CONTROL_MSG_MAX || hp_sig_parse(types, &sig, &why) != 0)
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
			for (uint8_t a = 0; a < sig.nargs; a++) {
				uint8_t buf[256];
				char what[256];
				struct hp_pc_enc e;

				hp_pc_enc_init(&e, buf, sizeof(buf));
				/* what encodes is a value of the type */
				if (pcjson_encode_arg(&e, &sig, sig.args[a], r.args[i].s,
						      r.args[i].len, what, sizeof(what)) == 0) {
					struct hp_pc_dec d;

					hp_pc_dec_init(&d, buf, e.len);
					if (hp_sig_skip(&d, &sig, sig.args[a]) != 0 ||
					    hp_pc_remaining(&d) != 0)
						abort();
				}
			}
		}
		request_free(&r);
	}
	return 0;
}
