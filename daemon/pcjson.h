/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A postcard value as JSON: how the control socket shows a call's result
 * and its stream's items. A string is a string; bytes are a string when
 * they are UTF-8, else "hex:" and their digits; unit is null. */
#ifndef HUB_PCJSON_H
#define HUB_PCJSON_H

#include <stdint.h>

#include <json-c/json.h>

#include "proto/postcard.h"

/* The value of type t (HP_T_*) at d as JSON, into *out (NULL: JSON
 * null). 0, or -1 if it does not decode. */
int	pcjson_value(struct hp_pc_dec *d, uint8_t t, json_object **out);

#endif
