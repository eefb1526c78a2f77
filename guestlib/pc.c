/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's helpers on the caller's bytes, no guest involved: postcard
 * values (guest_pc_*). Each encoder writes at buf + *pos within cap and
 * advances *pos; each decoder reads at buf + *pos within len. */
#include <errno.h>

#include "guestlib/guest.h"
#include "guestlib/internal.h"
#include "proto/postcard.h"

static int
put_start(struct hp_pc_enc *e, uint8_t *buf, size_t cap, const size_t *pos)
{
	if (lg_buf_bad(buf, cap))
		return -EINVAL;
	if (*pos > cap)
		return -ENOSPC;
	hp_pc_enc_init(e, buf + *pos, cap - *pos);
	return 0;
}

static int
put_done(struct hp_pc_enc *e, size_t *pos)
{
	if (e->err != 0)
		return -ENOSPC;
	*pos += e->len;
	return (int)e->len;
}

static int
get_start(struct hp_pc_dec *d, const uint8_t *buf, size_t len, const size_t *pos)
{
	if (lg_buf_bad(buf, len))
		return -EINVAL;
	if (*pos > len)
		return -EBADMSG;
	hp_pc_dec_init(d, buf + *pos, len - *pos);
	return 0;
}

static int
get_done(struct hp_pc_dec *d, size_t *pos)
{
	if (d->err != 0)
		return -EBADMSG;
	*pos += d->pos;
	return 0;
}

int
guest_pc_put_str(uint8_t *buf, size_t cap, size_t *pos, const char *s, size_t n)
{
	struct hp_pc_enc e;
	int rc;

	if (lg_buf_bad(s, n))
		return -EINVAL;
	/* what the peer would refuse is never written */
	if (!hp_utf8_valid((const uint8_t *)s, n))
		return -EILSEQ;
	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_str(&e, s, n);
	return put_done(&e, pos);
}

int
guest_pc_put_bytes(uint8_t *buf, size_t cap, size_t *pos, const void *p, size_t n)
{
	struct hp_pc_enc e;
	int rc;

	if (lg_buf_bad(p, n))
		return -EINVAL;
	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_bytes(&e, p, n);
	return put_done(&e, pos);
}

int
guest_pc_put_u64(uint8_t *buf, size_t cap, size_t *pos, uint64_t v)
{
	struct hp_pc_enc e;
	int rc;

	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_u64(&e, v);
	return put_done(&e, pos);
}

int
guest_pc_put_i64(uint8_t *buf, size_t cap, size_t *pos, int64_t v)
{
	struct hp_pc_enc e;
	int rc;

	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_i64(&e, v);
	return put_done(&e, pos);
}

int
guest_pc_put_bool(uint8_t *buf, size_t cap, size_t *pos, int v)
{
	struct hp_pc_enc e;
	int rc;

	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_bool(&e, v != 0);
	return put_done(&e, pos);
}

int
guest_pc_put_f64(uint8_t *buf, size_t cap, size_t *pos, double v)
{
	struct hp_pc_enc e;
	int rc;

	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_f64(&e, v);
	return put_done(&e, pos);
}

int
guest_pc_put_len(uint8_t *buf, size_t cap, size_t *pos, size_t n)
{
	struct hp_pc_enc e;
	int rc;

	if ((rc = put_start(&e, buf, cap, pos)) != 0)
		return rc;
	hp_pc_put_seq_len(&e, n);
	return put_done(&e, pos);
}

int
guest_pc_put_opt(uint8_t *buf, size_t cap, size_t *pos, int present)
{
	return guest_pc_put_bool(buf, cap, pos, present);
}

int
guest_pc_get_str(const uint8_t *buf, size_t len, size_t *pos, const char **s, size_t *n)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	hp_pc_get_str(&d, s, n);
	return get_done(&d, pos);
}

int
guest_pc_get_bytes(const uint8_t *buf, size_t len, size_t *pos, const uint8_t **p,
		   size_t *n)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	hp_pc_get_bytes(&d, p, n);
	return get_done(&d, pos);
}

int
guest_pc_get_u64(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	*v = hp_pc_get_u64(&d);
	return get_done(&d, pos);
}

int
guest_pc_get_i64(const uint8_t *buf, size_t len, size_t *pos, int64_t *v)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	*v = hp_pc_get_i64(&d);
	return get_done(&d, pos);
}

int
guest_pc_get_bool(const uint8_t *buf, size_t len, size_t *pos, int *v)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	*v = hp_pc_get_bool(&d) == 1;
	return get_done(&d, pos);
}

int
guest_pc_get_f64(const uint8_t *buf, size_t len, size_t *pos, double *v)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	*v = hp_pc_get_f64(&d);
	return get_done(&d, pos);
}

int
guest_pc_get_len(const uint8_t *buf, size_t len, size_t *pos, size_t *n)
{
	struct hp_pc_dec d;
	int rc;

	if ((rc = get_start(&d, buf, len, pos)) != 0)
		return rc;
	/* no more elements than bytes left: a loop over them ends */
	*n = hp_pc_get_seq_len(&d);
	return get_done(&d, pos);
}

int
guest_pc_get_opt(const uint8_t *buf, size_t len, size_t *pos, int *present)
{
	return guest_pc_get_bool(buf, len, pos, present);
}
