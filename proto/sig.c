/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Method signatures (sig.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sig.h"

static const struct {
	const char	*name;
	uint8_t		type;
} types[] = {
	{ "str", HP_T_STR }, { "bytes", HP_T_BYTES }, { "u64", HP_T_U64 },
	{ "i64", HP_T_I64 }, { "bool", HP_T_BOOL }, { "unit", HP_T_UNIT },
};

static int
type_of(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == n && memcmp(types[i].name, s, n) == 0)
			return types[i].type;
	return -1;
}

const char *
hp_sig_type_name(uint8_t t)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == t)
			return types[i].name;
	return t == HP_T_CHAN ? "chan" : "?";
}

int
hp_sig_parse(const char *s, struct hp_sig *sig, const char **why)
{
	const char *arrow, *p, *end;
	int t;

	memset(sig, 0, sizeof(*sig));
	if (s == NULL || strlen(s) > HP_SIG_MAX_LEN) {
		*why = "signature missing or longer than 128 bytes";
		return -EINVAL;
	}
	if ((arrow = strstr(s, "->")) == NULL) {
		*why = "signature has no '->'";
		return -EINVAL;
	}
	if ((t = type_of(arrow + 2, strlen(arrow + 2))) < 0) {
		*why = "unknown result type";
		return -EINVAL;
	}
	sig->ret = (uint8_t)t;
	for (p = s; p < arrow; p = end + 1) {
		const char *comma = memchr(p, ',', (size_t)(arrow - p));
		size_t n;

		end = comma != NULL ? comma : arrow;
		n = (size_t)(end - p);
		if (sig->nargs == HP_SIG_MAX_ARGS) {
			*why = "more than 8 arguments";
			return -EINVAL;
		}
		if (n > 6 && memcmp(p, "chan<", 5) == 0 && p[n - 1] == '>') {
			t = type_of(p + 5, n - 6);
			if (t < 0 || t == HP_T_UNIT) {
				*why = "unknown channel item type";
				return -EINVAL;
			}
			sig->chan_item[sig->nargs] = (uint8_t)t;
			t = HP_T_CHAN;
		} else if ((t = type_of(p, n)) < 0 || t == HP_T_UNIT) {
			*why = "unknown argument type";
			return -EINVAL;
		}
		sig->args[sig->nargs++] = (uint8_t)t;
		if (end == arrow)
			break;
	}
	return 0;
}

int
hp_sig_skip(struct hp_pc_dec *d, uint8_t t)
{
	const uint8_t *b;
	const char *s;
	size_t n;

	switch (t) {
	case HP_T_STR:
		return hp_pc_get_str(d, &s, &n);
	case HP_T_BYTES:
		return hp_pc_get_bytes(d, &b, &n);
	case HP_T_U64:
	case HP_T_CHAN:
		hp_pc_get_u64(d);
		break;
	case HP_T_I64:
		hp_pc_get_i64(d);
		break;
	case HP_T_BOOL:
		hp_pc_get_bool(d);
		break;
	case HP_T_UNIT:
		break;
	default:
		return -EINVAL;
	}
	return d->err;
}

int
hp_sig_check_args(const struct hp_sig *sig, const uint8_t *buf, size_t len)
{
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, buf, len);
	for (unsigned i = 0; i < sig->nargs; i++)
		if (hp_sig_skip(&d, sig->args[i]) != 0)
			return -EBADMSG;
	return hp_pc_remaining(&d) == 0 ? 0 : -EBADMSG;
}

/* text[0..len) as a NUL-terminated number for strtoull/strtoll: no
 * embedded NUL, short enough for any u64 or i64 (leading zeros aside). */
static int
number_text(const char *text, size_t len, char *buf, size_t cap)
{
	if (len == 0 || len >= cap || memchr(text, '\0', len) != NULL)
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return 0;
}

int
hp_sig_encode_text(struct hp_pc_enc *e, uint8_t t, const char *text, size_t len)
{
	char buf[64], *end;

	errno = 0;
	switch (t) {
	case HP_T_STR:
		/* U+0000 is valid UTF-8: carried like any other character */
		if (!hp_utf8_valid((const uint8_t *)text, len))
			return -EINVAL;
		hp_pc_put_str(e, text, len);
		break;
	case HP_T_BYTES:
		hp_pc_put_bytes(e, text, len);
		break;
	case HP_T_U64:
	case HP_T_CHAN: {
		unsigned long long v;

		if (number_text(text, len, buf, sizeof(buf)) != 0 || *buf < '0' || *buf > '9')
			return -EINVAL;
		v = strtoull(buf, &end, 10);
		if (*end != '\0' || errno != 0)
			return -EINVAL;
		hp_pc_put_u64(e, v);
		break;
	}
	case HP_T_I64: {
		long long v;

		if (number_text(text, len, buf, sizeof(buf)) != 0)
			return -EINVAL;
		v = strtoll(buf, &end, 10);
		if (*end != '\0' || errno != 0)
			return -EINVAL;
		hp_pc_put_i64(e, v);
		break;
	}
	case HP_T_BOOL:
		if (len == 4 && memcmp(text, "true", 4) == 0)
			hp_pc_put_bool(e, 1);
		else if (len == 5 && memcmp(text, "false", 5) == 0)
			hp_pc_put_bool(e, 0);
		else
			return -EINVAL;
		break;
	case HP_T_UNIT:
		if (len != 0)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	return e->err;
}
