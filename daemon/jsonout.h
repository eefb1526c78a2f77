/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* How hubd and hubctl write JSON: one line per object, slashes as they are
 * ("/dev/shm/hub", never "\/dev\/shm\/hub"), and fractional numbers with
 * the digits they mean, never a double's noise (1.502, not
 * 1.5024688879999999). */
#ifndef HUB_JSONOUT_H
#define HUB_JSONOUT_H

#include <stdint.h>

#include <json-c/json.h>

#define JSON_OUT_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* A JSON number of v / 10^decimals (decimals <= 9), written exactly with
 * at most that many decimals: json_fixed(1502, 3) is 1.502,
 * json_fixed(1500, 3) is 1.5, json_fixed(2000, 3) is 2.0. */
json_object	*json_fixed(uint64_t v, unsigned decimals);

/* A duration in ns as seconds, to the millisecond. */
json_object	*json_seconds(uint64_t ns);

#endif
