/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's helpers on the caller's bytes, no guest involved: postcard
 * values (guest_pc_*). */
#include <errno.h>

#include "guestlib/guest.h"
#include "proto/postcard.h"

static int
put_done(struct hp_pc_enc *e, size_t *pos)
{
	if (e->err != 0)
		return -ENOSPC;
	*pos += e->len;
	return (int)e->len;
}

int
guest_pc_put_str(uint8_t *buf, size_t cap, size_t *pos, const char *s, size_t n)
{
	struct hp_pc_enc e;

	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(&e, buf + *pos, cap - *pos);
	hp_pc_put_bytes(&e, s, n);
	return put_done(&e, pos);
}

int
guest_pc_put_bytes(uint8_t *buf, size_t cap, size_t *pos, const void *p, size_t n)
{
	struct hp_pc_enc e;

	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(&e, buf + *pos, cap - *pos);
	hp_pc_put_bytes(&e, p, n);
	return put_done(&e, pos);
}

int
guest_pc_put_u64(uint8_t *buf, size_t cap, size_t *pos, uint64_t v)
{
	struct hp_pc_enc e;

	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(&e, buf + *pos, cap - *pos);
	hp_pc_put_u64(&e, v);
	return put_done(&e, pos);
}

int
guest_pc_get_str(const uint8_t *buf, size_t len, size_t *pos, const char **s, size_t *n)
{
	struct hp_pc_dec d;

	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(&d, buf + *pos, len - *pos);
	if (hp_pc_get_str(&d, s, n) != 0)
		return -EBADMSG;
	*pos += d.pos;
	return 0;
}

int
guest_pc_get_bytes(const uint8_t *buf, size_t len, size_t *pos, const uint8_t **p,
		   size_t *n)
{
	struct hp_pc_dec d;

	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(&d, buf + *pos, len - *pos);
	if (hp_pc_get_bytes(&d, p, n) != 0)
		return -EBADMSG;
	*pos += d.pos;
	return 0;
}

int
guest_pc_get_u64(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	struct hp_pc_dec d;

	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(&d, buf + *pos, len - *pos);
	*v = hp_pc_get_u64(&d);
	if (d.err != 0)
		return -EBADMSG;
	*pos += d.pos;
	return 0;
}
