/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Method signatures: how hubctl and the host know the shape of a method's
 * arguments and result. A signature is "ARGS->RET": ARGS a comma-separated
 * list (maybe empty) of types, RET one type, with the types
 *	str bytes u64 i64 bool unit, and as an argument chan<T>
 * (T one of the others but unit: a channel id, u64 on the wire, on which the
 * callee sends items of type T). Method errors are always str.
 * Example: "str,bytes->unit", "u64,chan<u64>->u64", "->str". */
#ifndef HP_SIG_H
#define HP_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/postcard.h"

#define HP_T_STR	1
#define HP_T_BYTES	2
#define HP_T_U64	3
#define HP_T_I64	4
#define HP_T_BOOL	5
#define HP_T_UNIT	6
#define HP_T_CHAN	7	/* item type in hp_sig.chan_item[i] */

#define HP_SIG_MAX_ARGS	8
#define HP_SIG_MAX_LEN	128

struct hp_sig {
	uint8_t		nargs;
	uint8_t		args[HP_SIG_MAX_ARGS];
	uint8_t		chan_item[HP_SIG_MAX_ARGS];
	uint8_t		ret;
};

/* 0, or -EINVAL with *why for a malformed signature. */
int hp_sig_parse(const char *s, struct hp_sig *sig, const char **why);

/* The name of type t as a signature writes it ("u64"; "chan" for
 * HP_T_CHAN), "?" for none. */
const char *hp_sig_type_name(uint8_t t);

/* Reads one value of type t (HP_T_CHAN: its channel id, a u64) and checks
 * it; 0, the decoder's error, or -EINVAL for an unknown t. */
int hp_sig_skip(struct hp_pc_dec *d, uint8_t t);

/* 0 if buf holds exactly the arguments sig describes, else -EBADMSG. */
int hp_sig_check_args(const struct hp_sig *sig, const uint8_t *buf, size_t len);

/* Encodes a value of type t from its text form, len bytes at text (str:
 * as is, UTF-8, NUL allowed; bytes: as is; u64/i64: decimal; bool:
 * true/false; unit: empty text). -EINVAL for text that is not a value of
 * that type (a NUL in a number or bool is not), -ENOSPC from the encoder. */
int hp_sig_encode_text(struct hp_pc_enc *e, uint8_t t, const char *text, size_t len);

#endif
