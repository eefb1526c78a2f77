/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A call's chan<T> argument across NATS: the channel id is a number only
 * its own hub knows, so the exporting side opens a channel of its own
 * and puts that id where the caller's was (doc/nats.md, "Streams"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

int
br_chan_arg(const struct hp_sig *sig)
{
	int at = -1;

	for (unsigned i = 0; i < sig->nargs; i++) {
		if (hp_sig_arg_type(sig, i) == HP_T_RX)
			return -2;	/* an upload does not cross NATS (yet) */
		if (hp_sig_arg_type(sig, i) != HP_T_CHAN)
			continue;
		if (at >= 0)
			return -2;
		at = (int)i;
	}
	return at;
}

int
br_chan_find(const struct hp_sig *sig, int arg, const uint8_t *args, size_t len,
	     size_t *off, size_t *n, uint64_t *chan)
{
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, args, len);
	for (int i = 0; i < arg; i++)
		if (hp_sig_skip(&d, sig, sig->args[i]) != 0)
			return -EBADMSG;
	*off = d.pos;
	*chan = hp_pc_get_u64(&d);
	if (d.err != 0)
		return -EBADMSG;
	*n = d.pos - *off;
	return 0;
}

uint8_t *
br_chan_rewrite(const uint8_t *args, size_t len, size_t off, size_t n, uint64_t chan,
		size_t *out_len)
{
	uint8_t id[10], *out;
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, id, sizeof(id));
	hp_pc_put_u64(&e, chan);
	if ((out = malloc(len - n + e.len)) == NULL)
		return NULL;
	memcpy(out, args, off);
	memcpy(out + off, id, e.len);
	memcpy(out + off + e.len, args + off + n, len - off - n);
	*out_len = len - n + e.len;
	return out;
}
