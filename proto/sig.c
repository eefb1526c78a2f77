/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Method signatures (sig.h): parsed into a tree of nodes, rendered back,
 * and values read by it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto/sig.h"

static const struct {
	const char	*name;
	uint8_t		type;
	uint8_t		n;		/* type parameters */
} types[] = {
	{ "str", HP_T_STR, 0 }, { "bytes", HP_T_BYTES, 0 }, { "u64", HP_T_U64, 0 },
	{ "i64", HP_T_I64, 0 }, { "bool", HP_T_BOOL, 0 }, { "unit", HP_T_UNIT, 0 },
	{ "f64", HP_T_F64, 0 }, { "chan", HP_T_CHAN, 1 }, { "list", HP_T_LIST, 1 },
	{ "opt", HP_T_OPT, 1 }, { "map", HP_T_MAP, 2 }, { "rx", HP_T_RX, 1 },
};

struct parser {
	const char	*p;
	struct hp_sig	*sig;
	const char	*why;
};

static int
fail(struct parser *ps, const char *why)
{
	if (ps->why == NULL)
		ps->why = why;
	return -1;
}

/* fail, pointing at the start of what is wrong (a type not allowed
 * where it is) rather than past it */
static int
fail_at(struct parser *ps, const char *start, const char *why)
{
	if (ps->why == NULL)
		ps->p = start;
	return fail(ps, why);
}

static int parse_type(struct parser *ps, unsigned depth);

/* A type inside another: neither unit nor a channel (chan<T>, rx<T>). */
static int
parse_inner(struct parser *ps, unsigned depth)
{
	const char *start = ps->p;
	int at = parse_type(ps, depth);

	if (at < 0)
		return -1;
	if (ps->sig->node[at].type == HP_T_UNIT)
		return fail_at(ps, start, "unit is only a result type");
	if (ps->sig->node[at].type == HP_T_CHAN)
		return fail_at(ps, start, "chan<T> is only an argument type");
	if (ps->sig->node[at].type == HP_T_RX)
		return fail_at(ps, start, "rx<T> is only an argument type");
	return at;
}

static int
parse_type(struct parser *ps, unsigned depth)
{
	struct hp_sig *sig = ps->sig;
	struct hp_sig_node *nd;
	const char *key;
	size_t n = 0, k;
	int at, c;

	if (sig->nnodes == HP_SIG_MAX_NODES)
		return fail(ps, "more than 64 types");
	at = sig->nnodes++;
	nd = &sig->node[at];
	if (*ps->p == '(') {
		if (depth == HP_SIG_MAX_DEPTH)
			return fail(ps, "types nested more than 8 deep");
		nd->type = HP_T_TUPLE;
		do {
			ps->p++;
			if (parse_inner(ps, depth + 1) < 0)
				return -1;
			nd->n++;
		} while (*ps->p == ',');
		if (*ps->p != ')')
			return fail(ps, "a tuple without its ')'");
		ps->p++;
	} else {
		while ((ps->p[n] >= 'a' && ps->p[n] <= 'z') || (ps->p[n] >= '0' && ps->p[n] <= '9'))
			n++;
		for (k = 0; k < sizeof(types) / sizeof(types[0]); k++)
			if (strlen(types[k].name) == n && memcmp(types[k].name, ps->p, n) == 0)
				break;
		if (k == sizeof(types) / sizeof(types[0]))
			return fail(ps, "unknown type");
		if (types[k].n > 0 && depth == HP_SIG_MAX_DEPTH)
			return fail(ps, "types nested more than 8 deep");
		ps->p += n;
		nd->type = types[k].type;
		if (types[k].n > 0) {
			for (unsigned i = 0; i < types[k].n; i++) {
				if (*ps->p != (i == 0 ? '<' : ','))
					return fail(ps, i == 0 ? "a type without its '<'" :
						    "a map without its value type");
				key = ++ps->p;
				if ((c = parse_inner(ps, depth + 1)) < 0)
					return -1;
				if (nd->type == HP_T_MAP && i == 0 &&
				    (sig->node[c].n > 0 || sig->node[c].type == HP_T_F64))
					return fail_at(ps, key, "a map key that is not str, "
						       "bytes, u64, i64 or bool");
				nd->n++;
			}
			if (*ps->p != '>')
				return fail(ps, "a type without its '>'");
			ps->p++;
		}
	}
	nd->size = (uint8_t)(sig->nnodes - at);
	return at;
}

/* hp_sig_parse, and where it stopped (*stop: an offset into s; SIZE_MAX
 * when the refusal is of the whole). */
static int
parse(const char *s, struct hp_sig *sig, const char **why, size_t *stop)
{
	struct parser ps = { s, sig, NULL };
	const char *start;
	int at;

	memset(sig, 0, sizeof(*sig));
	if (s == NULL || strlen(s) > HP_SIG_MAX_LEN) {
		fail(&ps, "signature missing or longer than 256 bytes");
		goto bad;
	}
	if (strstr(s, "->") == NULL) {
		fail(&ps, "signature has no '->'");
		goto bad;
	}
	while (*ps.p != '-') {
		if (sig->nargs == HP_SIG_MAX_ARGS) {
			fail(&ps, "more than 8 arguments");
			goto bad;
		}
		start = ps.p;
		if ((at = parse_type(&ps, 0)) < 0)
			goto bad;
		if (sig->node[at].type == HP_T_UNIT) {
			fail_at(&ps, start, "unit is only a result type");
			goto bad;
		}
		sig->args[sig->nargs++] = (uint8_t)at;
		if (*ps.p == ',' && ps.p[1] == '-') {
			fail_at(&ps, ps.p + 1, "unknown type");	/* none after the ',' */
			goto bad;
		} else if (*ps.p == ',') {
			ps.p++;
		} else if (*ps.p != '-') {
			fail(&ps, "arguments not separated by ','");
			goto bad;
		}
	}
	if (ps.p[1] != '>') {
		fail(&ps, "signature has no '->'");
		goto bad;
	}
	ps.p += 2;
	start = ps.p;
	if ((at = parse_type(&ps, 0)) < 0)
		goto bad;
	if (hp_sig_is_chan(sig->node[at].type)) {
		fail_at(&ps, start, sig->node[at].type == HP_T_RX ?
			"rx<T> is only an argument type" : "chan<T> is only an argument type");
		goto bad;
	}
	if (*ps.p != '\0') {
		fail(&ps, "signature goes on after its result type");
		goto bad;
	}
	sig->ret = (uint8_t)at;
	return 0;
bad:
	if (why != NULL)
		*why = ps.why;
	/* the first two refusals are of the whole text: ps.p is still s */
	*stop = ps.p != s || (s != NULL && strlen(s) <= HP_SIG_MAX_LEN &&
	    strstr(s, "->") != NULL) ? (size_t)(ps.p - s) : SIZE_MAX;
	memset(sig, 0, sizeof(*sig));
	return -EINVAL;
}

int
hp_sig_parse(const char *s, struct hp_sig *sig, const char **why)
{
	size_t stop;

	return parse(s, sig, why, &stop);
}

uint8_t
hp_sig_child(const struct hp_sig *sig, uint8_t at, unsigned i)
{
	uint8_t c = (uint8_t)(at + 1);

	while (i-- > 0)
		c = (uint8_t)(c + sig->node[c].size);
	return c;
}

struct out {
	char	*buf;
	size_t	cap;
	size_t	len;
};

static void
put(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->len < o->cap)
		memcpy(o->buf + o->len, s, n < o->cap - o->len ? n : o->cap - o->len);
	o->len += n;
}

static void
render(struct out *o, const struct hp_sig *sig, uint8_t at)
{
	const struct hp_sig_node *nd = &sig->node[at];

	if (nd->type == HP_T_TUPLE) {
		put(o, "(");
	} else {
		for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
			if (types[k].type == nd->type)
				put(o, types[k].name);
		if (nd->n > 0)
			put(o, "<");
	}
	for (unsigned i = 0; i < nd->n; i++) {
		if (i > 0)
			put(o, ",");
		render(o, sig, hp_sig_child(sig, at, i));
	}
	if (nd->type == HP_T_TUPLE)
		put(o, ")");
	else if (nd->n > 0)
		put(o, ">");
}

static size_t
done(struct out *o)
{
	if (o->cap > 0)
		o->buf[o->len < o->cap ? o->len : o->cap - 1] = '\0';
	return o->len;
}

size_t
hp_sig_type_text(const struct hp_sig *sig, uint8_t at, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };

	render(&o, sig, at);
	return done(&o);
}

size_t
hp_sig_text(const struct hp_sig *sig, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };

	for (unsigned i = 0; i < sig->nargs; i++) {
		if (i > 0)
			put(&o, ",");
		render(&o, sig, sig->args[i]);
	}
	put(&o, "->");
	render(&o, sig, sig->ret);
	return done(&o);
}

/* Up to max bytes of s at o's end, as C writes them in a string: printable
 * ASCII as it is but for '"' and '\\', the rest \xNN; "..." after a cut. */
static void
put_shown(struct out *o, const char *s, size_t max)
{
	char x[5];
	size_t k;

	for (k = 0; s[k] != '\0' && k < max; k++) {
		if (s[k] >= 0x20 && s[k] < 0x7f && s[k] != '"' && s[k] != '\\') {
			x[0] = s[k];
			x[1] = '\0';
		} else {
			x[0] = '\\';
			x[1] = 'x';
			x[2] = "0123456789abcdef"[(uint8_t)s[k] >> 4];
			x[3] = "0123456789abcdef"[s[k] & 15];
			x[4] = '\0';
		}
		put(o, x);
	}
	if (s[k] != '\0')
		put(o, "...");
}

char *
hp_text_shown(const char *s, size_t max, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };

	put_shown(&o, s, max);
	done(&o);
	return buf;
}

size_t
hp_sig_explain(const char *s, char *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };
	struct hp_sig sig;
	const char *why;
	size_t stop;
	char n[24];

	if (parse(s, &sig, &why, &stop) == 0)
		return done(&o);
	if (s == NULL) {
		put(&o, "no signature");
		return done(&o);
	}
	put(&o, "signature \"");
	put_shown(&o, s, 64);
	put(&o, "\": ");
	put(&o, why);
	if (stop != SIZE_MAX) {
		/* where, and what is there: people count from 1 */
		put(&o, " at byte ");
		snprintf(n, sizeof(n), "%zu", stop + 1);
		put(&o, n);
		if (s[stop] == '\0') {
			put(&o, " (its end)");
		} else {
			put(&o, " (\"");
			put_shown(&o, s + stop, 16);
			put(&o, "\")");
		}
	}
	return done(&o);
}

/* r[shm.payload.encoding]: each type's postcard form. Recursion is as
 * deep as the signature's types: HP_SIG_MAX_DEPTH at most. Loops run once per element, each at least a byte of the input
 * (hp_pc_get_seq_len: no type inside a compound is empty). */
int
hp_sig_skip(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at)
{
	const struct hp_sig_node *nd = &sig->node[at];
	const uint8_t *b;
	const char *s;
	size_t n;

	switch (nd->type) {
	case HP_T_STR:
		return hp_pc_get_str(d, &s, &n);
	case HP_T_BYTES:
		return hp_pc_get_bytes(d, &b, &n);
	case HP_T_U64:
	case HP_T_CHAN:
	case HP_T_RX:
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
	case HP_T_F64:
		return hp_pc_get_raw(d, &b, 8);
	case HP_T_OPT:
		if (hp_pc_get_bool(d) == 1)
			return hp_sig_skip(d, sig, (uint8_t)(at + 1));
		break;
	case HP_T_LIST:
	case HP_T_MAP:
		n = hp_pc_get_seq_len(d);
		for (size_t i = 0; i < n && d->err == 0; i++) {
			hp_sig_skip(d, sig, (uint8_t)(at + 1));
			if (nd->type == HP_T_MAP)
				hp_sig_skip(d, sig, hp_sig_child(sig, at, 1));
		}
		break;
	case HP_T_TUPLE:
		for (unsigned i = 0; i < nd->n && d->err == 0; i++)
			hp_sig_skip(d, sig, hp_sig_child(sig, at, i));
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
		if (hp_sig_skip(&d, sig, sig->args[i]) != 0)
			return -EBADMSG;
	return hp_pc_remaining(&d) == 0 ? 0 : -EBADMSG;
}

int
hp_sig_check_result(const struct hp_sig *sig, const uint8_t *buf, size_t len)
{
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, buf, len);
	if (hp_sig_skip(&d, sig, sig->ret) != 0)
		return -EBADMSG;
	return hp_pc_remaining(&d) == 0 ? 0 : -EBADMSG;
}
