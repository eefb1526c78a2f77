/* libFuzzer: a control-socket request line, parsed and checked before
 * hubd acts on it. */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct control_req r;
	const char *why;

	if (size > CONTROL_MSG_MAX)
		return 0;
	if (control_parse((const char *)data, size, &r, &why) == 0) {
		if (r.cmd < CTL_PEERS || r.cmd > CTL_START || r.nargs > CTL_ARGS_MAX ||
		    (r.cmd == CTL_CALL && r.method == NULL) ||
		    (r.cmd >= CTL_RESTART && r.name == NULL))
			abort();
		control_req_free(&r);
	}
	return 0;
}
