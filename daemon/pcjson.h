/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Postcard values and their text: how the control socket shows a call's
 * result and its stream's items as JSON, and encodes a call's arguments
 * from the text a client gives, by the method's signature (proto/sig.h).
 *
 * Out: str a string; bytes a string too, as is when they are UTF-8 and do
 * not start with "base64:", else "base64:" and their standard base64;
 * u64, i64 numbers; f64 a number, or the string "NaN", "Infinity" or
 * "-Infinity"; bool; unit null; list and tuple arrays; opt null or the
 * value; map an object, its keys as their text (below).
 *
 * In, an argument's text: str as is (UTF-8); bytes as is, or decoded
 * from base64 after a "base64:"; u64, i64 decimal; bool true or false;
 * f64 a JSON number, NaN, Infinity or -Infinity; list, opt, tuple and map
 * JSON as above. So what comes out goes back in as the same value. */
#ifndef HUB_PCJSON_H
#define HUB_PCJSON_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "proto/postcard.h"
#include "proto/sig.h"

#define PCJSON_BASE64	"base64:"

/* The value of node at's type at d as JSON, into *out (NULL: JSON null).
 * 0; -1 if it does not decode; -E2BIG if it holds more than
 * PCJSON_VALUES_MAX values (each element, key, field counts); -EEXIST if
 * a map in it has a key twice, or one with a NUL, which JSON's object
 * cannot show. */
#define PCJSON_VALUES_MAX	(1u << 20)
int	pcjson_value(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at,
		     json_object **out);

/* The arguments sig describes, exactly buf's len bytes of them, as a
 * JSON array into *out (an event of a topic, a call's arguments). 0, or
 * -1 when they do not decode to exactly that (*out NULL). */
int	pcjson_args(const struct hp_sig *sig, const uint8_t *buf, size_t len,
		    json_object **out);

/* Encodes a value of node at's type from its text, len bytes at text and a
 * NUL after them. 0; -EINVAL with what is wrong in why ("is not a
 * list<u64>: element 3 is not a u64"); -ENOSPC from the encoder. */
int	pcjson_encode_arg(struct hp_pc_enc *e, const struct hp_sig *sig, uint8_t at,
			  const char *text, size_t len, char *why, size_t cap);

#endif
