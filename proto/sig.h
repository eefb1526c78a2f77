/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Method signatures: how hubctl and the host know the shape of a method's
 * arguments and result. A signature is "ARGS->RET", no spaces: ARGS a
 * comma-separated list (maybe empty) of at most 8 types, RET one type. A
 * type is
 *	str bytes u64 i64 f64 bool		scalars
 *	list<T> opt<T> map<K,V> (T1,T2,...)	compounds, K a scalar but f64
 *	unit					the result only
 *	chan<T> rx<T>				an argument only
 * with T any type but unit, chan and rx. Both are a channel id, u64 on the
 * wire: on a chan<T> the callee sends items of type T to the caller (a
 * download), on an rx<T> the caller sends them and the callee reads (an
 * upload). Types nest at most
 * HP_SIG_MAX_DEPTH deep, a signature has at most HP_SIG_MAX_NODES types
 * and HP_SIG_MAX_LEN bytes: a hostile one cannot make a reader recurse or
 * loop without bound. Method errors are always str.
 * Example: "str,bytes->unit", "u64,chan<u64>->u64", "rx<u64>->u64",
 * "->list<opt<str>>",
 * "map<str,u64>->(u64,f64)". */
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
#define HP_T_CHAN	7	/* one child: the item type */
#define HP_T_F64	8	/* 8 bytes, little-endian IEEE 754 */
#define HP_T_LIST	9	/* one child: varint count, the elements */
#define HP_T_OPT	10	/* one child: 0, or 1 and the value */
#define HP_T_TUPLE	11	/* n children: the fields in order */
#define HP_T_MAP	12	/* two children, key and value: varint
				 * count, the pairs */
#define HP_T_RX		13	/* one child: the item type */

#define HP_SIG_MAX_ARGS		8
#define HP_SIG_MAX_LEN		256
#define HP_SIG_MAX_NODES	64
#define HP_SIG_MAX_DEPTH	8	/* compounds within compounds, chan<T>
					 * and rx<T> too */

/* A type as a tree in preorder: a node's first child is the next node, and
 * each child's subtree is size nodes long, so the one after it follows. */
struct hp_sig_node {
	uint8_t		type;		/* HP_T_* */
	uint8_t		n;		/* children: a tuple's fields, 1 or 2 */
	uint8_t		size;		/* nodes in its subtree, itself included */
};

struct hp_sig {
	uint8_t			nargs;
	uint8_t			args[HP_SIG_MAX_ARGS];	/* each argument's node */
	uint8_t			ret;			/* the result's node */
	uint8_t			nnodes;
	struct hp_sig_node	node[HP_SIG_MAX_NODES];
};

/* The type of argument i (HP_T_CHAN or HP_T_RX for a channel). */
static inline uint8_t
hp_sig_arg_type(const struct hp_sig *sig, unsigned i)
{
	return sig->node[sig->args[i]].type;
}

/* Whether a type is a channel: chan<T> or rx<T>. */
static inline int
hp_sig_is_chan(uint8_t type)
{
	return type == HP_T_CHAN || type == HP_T_RX;
}

/* Whether an argument of sig is of type t (HP_T_RX: an upload). */
static inline int
hp_sig_takes(const struct hp_sig *sig, uint8_t t)
{
	for (unsigned i = 0; i < sig->nargs; i++)
		if (hp_sig_arg_type(sig, i) == t)
			return 1;
	return 0;
}

/* Whether an argument of sig is a channel: a stream either way. */
static inline int
hp_sig_takes_chan(const struct hp_sig *sig)
{
	return hp_sig_takes(sig, HP_T_CHAN) || hp_sig_takes(sig, HP_T_RX);
}

/* The node of the item type of argument i, a chan<T> or rx<T>. */
static inline uint8_t
hp_sig_chan_item(const struct hp_sig *sig, unsigned i)
{
	return (uint8_t)(sig->args[i] + 1);
}

/* Node at's i-th child (i below its n). */
uint8_t hp_sig_child(const struct hp_sig *sig, uint8_t at, unsigned i);

/* 0, or -EINVAL with *why (why may be NULL) for a malformed signature. */
int hp_sig_parse(const char *s, struct hp_sig *sig, const char **why);

/* Why s does not parse, and where, as a sentence for people in buf (cut
 * to fit, as snprintf; "" when it parses): 'signature "str,strr->u64":
 * unknown type at byte 5 ("strr->u64")', the signature cut at 64 bytes
 * and what follows the byte at 16, every byte but printable ASCII shown
 * as \xNN (a guest's text: fit for a log line or a terminal). The length
 * it would have. */
size_t hp_sig_explain(const char *s, char *buf, size_t cap);

/* Up to max bytes of s as C writes them in a string (printable ASCII as
 * it is but for '"' and '\\', the rest \xNN; "..." after a cut) in buf
 * (cap bytes, NUL-terminated): text from outside (the environment)
 * safe to show on a terminal. Returns buf. */
char *hp_text_shown(const char *s, size_t max, char *buf, size_t cap);

/* The text of node at's type as a signature writes it ("list<u64>"), or of
 * the whole signature, NUL-terminated in buf, cut to fit; the length it
 * would have, as snprintf. */
size_t hp_sig_type_text(const struct hp_sig *sig, uint8_t at, char *buf, size_t cap);
size_t hp_sig_text(const struct hp_sig *sig, char *buf, size_t cap);

/* Reads one value of node at's type (a channel: its id, a u64) and
 * checks it: strings UTF-8, counts no larger than the input left, bools
 * and options 0 or 1. 0, or the decoder's error. */
int hp_sig_skip(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at);

/* 0 if buf holds exactly the arguments sig describes, else -EBADMSG. */
int hp_sig_check_args(const struct hp_sig *sig, const uint8_t *buf, size_t len);

/* 0 if buf holds exactly a result of sig's type, else -EBADMSG. */
int hp_sig_check_result(const struct hp_sig *sig, const uint8_t *buf, size_t len);

#endif
