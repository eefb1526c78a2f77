/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Postcard values as JSON and from text (pcjson.h). Recursion follows the
 * signature's types, HP_SIG_MAX_DEPTH deep at most. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <resolv.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/pcjson.h"

#define B64_LEN	(sizeof(PCJSON_BASE64) - 1)

/* -- out ---------------------------------------------------------------- */

/* Bytes as text: as they are, or PCJSON_BASE64 and base64 when they are
 * not UTF-8 or would read as that form (then they go back in unchanged). */
static json_object *
bytes_json(const uint8_t *b, size_t n)
{
	json_object *o;
	size_t cap;
	char *t;

	if (hp_utf8_valid(b, n) && (n < B64_LEN || memcmp(b, PCJSON_BASE64, B64_LEN) != 0))
		return json_object_new_string_len((const char *)b, (int)n);
	cap = B64_LEN + (n + 2) / 3 * 4 + 1;
	if ((t = malloc(cap)) == NULL)
		return NULL;
	memcpy(t, PCJSON_BASE64, B64_LEN);
	if (b64_ntop(b, n, t + B64_LEN, cap - B64_LEN) < 0) {
		free(t);
		return NULL;
	}
	o = json_object_new_string(t);
	free(t);
	return o;
}

/* The shortest text that reads back as v; JSON has no NaN or infinity:
 * those are strings. */
static json_object *
f64_json(double v)
{
	char text[32];

	if (isnan(v))
		return json_object_new_string("NaN");
	if (isinf(v))
		return json_object_new_string(v > 0 ? "Infinity" : "-Infinity");
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(text, sizeof(text), "%.*g", prec, v);
		if (strtod(text, NULL) == v)
			break;
	}
	/* a number with a point, so that it reads as one that has a fraction */
	if (strpbrk(text, ".e") == NULL && strlen(text) + 2 < sizeof(text))
		strcat(text, ".0");
	return json_object_new_double_s(v, text);
}

static int value_of(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at,
		    uint32_t *left, json_object **out);

/* A map key (a scalar) as an object's key: a string as is, the others as
 * their JSON text. */
static int
key_of(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at, uint32_t *left,
       json_object **out)
{
	json_object *k;
	int rc;

	if ((rc = value_of(d, sig, at, left, &k)) != 0)
		return rc;
	if (json_object_is_type(k, json_type_string)) {
		*out = k;
		return 0;
	}
	*out = json_object_new_string(json_object_to_json_string(k));
	json_object_put(k);
	return *out != NULL ? 0 : -1;
}

static int
value_of(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at, uint32_t *left,
	 json_object **out)
{
	const struct hp_sig_node *nd = &sig->node[at];
	json_object *o = NULL, *k, *v;
	const uint8_t *b;
	const char *s;
	size_t n;
	int bad = 0;

	*out = NULL;
	/* a byte can make a value (list<bool>), and a value costs hubd some
	 * 50 bytes as JSON: a guest's 32 MiB answer must not cost it GiBs */
	if (*left == 0)
		return -E2BIG;
	(*left)--;
	switch (nd->type) {
	case HP_T_STR:
		if (hp_pc_get_str(d, &s, &n) != 0)
			return -1;
		o = json_object_new_string_len(s, (int)n);
		break;
	case HP_T_BYTES:
		if (hp_pc_get_bytes(d, &b, &n) != 0)
			return -1;
		o = bytes_json(b, n);
		break;
	case HP_T_U64:
	case HP_T_CHAN:
	case HP_T_RX:
		o = json_object_new_uint64(hp_pc_get_u64(d));
		break;
	case HP_T_I64:
		o = json_object_new_int64(hp_pc_get_i64(d));
		break;
	case HP_T_BOOL:
		o = json_object_new_boolean(hp_pc_get_bool(d) == 1);
		break;
	case HP_T_F64:
		o = f64_json(hp_pc_get_f64(d));
		break;
	case HP_T_UNIT:
		return 0;
	case HP_T_OPT:
		if (hp_pc_get_bool(d) != 1)
			return d->err != 0 ? -1 : 0;	/* None: null */
		return value_of(d, sig, (uint8_t)(at + 1), left, out);
	case HP_T_LIST:
	case HP_T_TUPLE:
		n = nd->type == HP_T_LIST ? hp_pc_get_seq_len(d) : nd->n;
		o = json_object_new_array_ext((int)n);
		for (size_t i = 0; i < n && !bad && o != NULL; i++) {
			if ((bad = value_of(d, sig, nd->type == HP_T_LIST ? (uint8_t)(at + 1) :
					    hp_sig_child(sig, at, (unsigned)i), left, &v)) != 0)
				break;
			json_object_array_add(o, v);
		}
		break;
	case HP_T_MAP:
		n = hp_pc_get_seq_len(d);
		o = json_object_new_object();
		for (size_t i = 0; i < n && !bad && o != NULL; i++) {
			if ((bad = key_of(d, sig, (uint8_t)(at + 1), left, &k)) != 0)
				break;
			if ((bad = value_of(d, sig, hp_sig_child(sig, at, 1), left, &v)) != 0) {
				json_object_put(k);
				break;
			}
			/* JSON has no way to show a key twice, nor one with a
			 * NUL (json-c's keys are C strings): refused, as the
			 * last would stand or the key would be cut */
			s = json_object_get_string(k);
			if (strlen(s) != (size_t)json_object_get_string_len(k) ||
			    json_object_object_get_ex(o, s, NULL)) {
				json_object_put(k);
				json_object_put(v);
				bad = -EEXIST;
				break;
			}
			json_object_object_add(o, s, v);
			json_object_put(k);
		}
		break;
	default:
		return -1;
	}
	if (bad || d->err != 0 || o == NULL) {
		json_object_put(o);
		return bad == -E2BIG || bad == -EEXIST ? bad : -1;
	}
	*out = o;
	return 0;
}

int
pcjson_value(struct hp_pc_dec *d, const struct hp_sig *sig, uint8_t at, json_object **out)
{
	uint32_t left = PCJSON_VALUES_MAX;

	return value_of(d, sig, at, &left, out);
}

int
pcjson_args(const struct hp_sig *sig, const uint8_t *buf, size_t len, json_object **out)
{
	struct hp_pc_dec d;
	json_object *v;

	*out = json_object_new_array();
	hp_pc_dec_init(&d, buf, len);
	for (uint8_t i = 0; i < sig->nargs; i++) {
		v = NULL;
		if (pcjson_value(&d, sig, sig->args[i], &v) != 0) {
			json_object_put(v);
			break;
		}
		json_object_array_add(*out, v);
	}
	if (json_object_array_length(*out) != sig->nargs || hp_pc_remaining(&d) != 0) {
		json_object_put(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* -- in ----------------------------------------------------------------- */

/* "is not a list<u64>", and ": " and the rest when fmt is given. */
static int __attribute__((format(printf, 5, 6)))
wrong(const struct hp_sig *sig, uint8_t at, char *why, size_t cap, const char *fmt, ...)
{
	static const char *const hint[] = {
		[HP_T_STR] = " (UTF-8)", [HP_T_BOOL] = " (true or false)",
		[HP_T_F64] = " (a number, NaN, Infinity or -Infinity)",
		[HP_T_U64] = " (a whole number from 0 to 18446744073709551615)",
		[HP_T_I64] = " (a whole number from -9223372036854775808 to "
		    "9223372036854775807)",
	};
	uint8_t t = sig->node[at].type;
	char type[HP_SIG_MAX_LEN + 1];
	size_t off;
	va_list ap;

	hp_sig_type_text(sig, at, type, sizeof(type));
	/* "an i64", "an f64", "an opt<str>"; "a u64" */
	off = (size_t)snprintf(why, cap, "is not a%s %s%s", strchr("ifo", type[0]) != NULL ?
			       "n" : "", type, fmt == NULL && t < sizeof(hint) / sizeof(hint[0]) &&
			       hint[t] != NULL ? hint[t] : "");
	if (fmt != NULL && off + 2 < cap) {
		memcpy(why + off, ": ", 3);
		va_start(ap, fmt);
		vsnprintf(why + off + 2, cap - off - 2, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* wrong() for a scalar scalar_in refused, with its detail if any. */
static int
wrong_scalar(const struct hp_sig *sig, uint8_t at, char *why, size_t cap, const char *detail)
{
	return *detail != '\0' ? wrong(sig, at, why, cap, "%s", detail) :
	    wrong(sig, at, why, cap, NULL);
}

/* NaN, Infinity, -Infinity: 0 and *v, or -1. */
static int
f64_word(const char *s, size_t n, double *v)
{
	if (n == 3 && memcmp(s, "NaN", 3) == 0)
		*v = NAN;
	else if (n == 8 && memcmp(s, "Infinity", 8) == 0)
		*v = INFINITY;
	else if (n == 9 && memcmp(s, "-Infinity", 9) == 0)
		*v = -INFINITY;
	else
		return -1;
	return 0;
}

/* Where base64 text (n bytes at s, after PCJSON_BASE64) goes wrong, by
 * b64_pton's rules (blanks skipped, '=' padding only to end a group of 4,
 * no bits left over), into why: "bad base64 at character 3 after
 * \"base64:\": '!' is not a base64 character". */
static void
b64_problem(const char *s, size_t n, char *why, size_t cap)
{
	static const char digits[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *what = NULL, *d;
	size_t k, at = n, last = 0;
	unsigned state = 0, pad = 0, bits = 0;
	char c[16];

	for (k = 0; k < n && what == NULL; k++) {
		if (isspace((unsigned char)s[k]))
			continue;
		at = k;
		if (pad > 0 && !(s[k] == '=' && state == 2 && pad == 1))
			what = "comes after the padding";
		else if (s[k] == '=' && pad > 0)
			pad++;
		else if (s[k] == '=' && state < 2)
			what = "pads a group of 4 that has fewer than 2 characters";
		else if (s[k] == '=')
			pad = state == 3 ? 2 : 1;
		else if (s[k] == '\0' || (d = strchr(digits, s[k])) == NULL)
			what = "is not a base64 character";
		else {
			state = (state + 1) % 4;
			last = k;
			bits = (unsigned)(d - digits);
		}
	}
	if (what == NULL && pad == 1 && state == 2) {
		snprintf(why, cap, "bad base64: its padding ends after one '=' of two");
		return;
	}
	if (what == NULL && pad == 0 && state != 0) {
		snprintf(why, cap, "bad base64: it ends inside a group of 4 characters "
			 "('=' pads one)");
		return;
	}
	if (what == NULL && pad > 0 && (bits & (state == 2 ? 15 : 3)) != 0) {
		at = last;	/* bits past the last byte */
		what = "leaves bits set past the last byte";
	}
	if (what == NULL) {
		snprintf(why, cap, "bad base64");
		return;
	}
	if (isprint((unsigned char)s[at]))
		snprintf(c, sizeof(c), "'%c'", s[at]);
	else
		snprintf(c, sizeof(c), "byte 0x%02x", (unsigned char)s[at]);
	snprintf(why, cap, "bad base64 at character %zu after \"" PCJSON_BASE64 "\": %s %s",
		 at + 1, c, what);
}

/* Bytes from their text: decoded after PCJSON_BASE64, else as they are;
 * -EINVAL with where the base64 goes wrong in why. */
static int
bytes_in(struct hp_pc_enc *e, const char *text, size_t len, char *why, size_t cap)
{
	uint8_t *b;
	char *src;
	int n;

	if (len < B64_LEN || memcmp(text, PCJSON_BASE64, B64_LEN) != 0) {
		hp_pc_put_bytes(e, text, len);
		return 0;
	}
	/* b64_pton reads a C string: a NUL inside is no base64 */
	if ((src = strndup(text + B64_LEN, len - B64_LEN)) == NULL)
		return -ENOMEM;
	if (strlen(src) != len - B64_LEN) {
		free(src);
		b64_problem(text + B64_LEN, len - B64_LEN, why, cap);
		return -EINVAL;
	}
	if ((b = malloc(len / 4 * 3 + 3)) == NULL) {
		free(src);
		return -ENOMEM;
	}
	n = b64_pton(src, b, len / 4 * 3 + 3);
	if (n >= 0)
		hp_pc_put_bytes(e, b, (size_t)n);
	else
		b64_problem(text + B64_LEN, len - B64_LEN, why, cap);
	free(b);
	free(src);
	return n >= 0 ? 0 : -EINVAL;
}

/* A scalar from its plain text (an argument, a map's key); -EINVAL with
 * more to say in detail (of SCALAR_DETAIL bytes: "" when the type says
 * enough). */
#define SCALAR_DETAIL	128
static int
scalar_in(struct hp_pc_enc *e, uint8_t t, const char *text, size_t len, char *detail)
{
	char buf[32], *end;
	double f;

	errno = 0;
	*detail = '\0';
	switch (t) {
	case HP_T_STR:
		/* U+0000 is valid UTF-8: carried like any other character */
		if (!hp_utf8_valid((const uint8_t *)text, len))
			return -EINVAL;
		hp_pc_put_str(e, text, len);
		return 0;
	case HP_T_BYTES:
		return bytes_in(e, text, len, detail, SCALAR_DETAIL);
	case HP_T_BOOL:
		if (len == 4 && memcmp(text, "true", 4) == 0)
			hp_pc_put_bool(e, 1);
		else if (len == 5 && memcmp(text, "false", 5) == 0)
			hp_pc_put_bool(e, 0);
		else
			return -EINVAL;
		return 0;
	case HP_T_UNIT:
		return len == 0 ? 0 : -EINVAL;
	}
	/* a number: no NUL inside, short enough for any (leading zeros aside) */
	if (len == 0 || len >= sizeof(buf) || memchr(text, '\0', len) != NULL)
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (t == HP_T_U64 || hp_sig_is_chan(t)) {
		unsigned long long v;

		if (*buf < '0' || *buf > '9')
			return -EINVAL;
		v = strtoull(buf, &end, 10);
		if (*end != '\0' || errno != 0)
			return -EINVAL;
		hp_pc_put_u64(e, v);
	} else if (t == HP_T_I64) {
		long long v = strtoll(buf, &end, 10);

		if (*end != '\0' || errno != 0 || isspace((unsigned char)*buf))
			return -EINVAL;
		hp_pc_put_i64(e, v);
	} else if (t == HP_T_F64) {
		if (f64_word(buf, len, &f) != 0) {
			/* JSON's number syntax: no hex, no "inf", no space */
			if (strspn(buf, "-+.0123456789eE") != len)
				return -EINVAL;
			f = strtod(buf, &end);
			if (*end != '\0' || (errno != 0 && isinf(f)))
				return -EINVAL;
		}
		hp_pc_put_f64(e, f);
	} else {
		return -EINVAL;
	}
	return 0;
}

static int json_in(struct hp_pc_enc *e, const struct hp_sig *sig, uint8_t at,
		   json_object *j, char *why, size_t cap);

/* A map from a JSON object. Two keys that differ as text but not as
 * values ("1" and "01" for a u64, "a" and "base64:YQ==" for bytes) are
 * refused as one key given twice: the callee would get the same key
 * twice (the same text twice is refused before, bad_key). */
static int
map_in(struct hp_pc_enc *e, const struct hp_sig *sig, uint8_t at, json_object *j,
       char *why, size_t cap)
{
	json_object *seen = json_object_new_object();
	char sub[512], detail[SCALAR_DETAIL], *hex = NULL;
	int rc = 0;

	if (seen == NULL)
		return -ENOMEM;
	hp_pc_put_seq_len(e, (size_t)json_object_object_length(j));
	json_object_object_foreach(j, key, val) {
		size_t k0 = e->len;

		if (e->err != 0)
			break;
		if (scalar_in(e, sig->node[at + 1].type, key, strlen(key), detail) != 0) {
			wrong_scalar(sig, (uint8_t)(at + 1), sub, sizeof(sub), detail);
			rc = wrong(sig, at, why, cap, "key \"%.64s\" %s", key, sub);
			break;
		}
		if (e->err != 0)
			break;
		/* the key's postcard bytes, in hex, as a key of seen */
		if ((hex = malloc(2 * (e->len - k0) + 1)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		for (size_t i = k0; i < e->len; i++)
			snprintf(hex + 2 * (i - k0), 3, "%02x", e->buf[i]);
		hex[2 * (e->len - k0)] = '\0';
		if (json_object_object_get_ex(seen, hex, NULL)) {
			rc = wrong(sig, at, why, cap, "key \"%.64s\" given twice (as another "
				   "text of the same value)", key);
			break;
		}
		json_object_object_add(seen, hex, NULL);
		free(hex);
		hex = NULL;
		if (json_in(e, sig, hp_sig_child(sig, at, 1), val, sub, sizeof(sub)) != 0) {
			rc = wrong(sig, at, why, cap, "the value of \"%.64s\" %s", key, sub);
			break;
		}
	}
	free(hex);
	json_object_put(seen);
	return rc;
}

/* A key given twice in one object of text (len bytes, valid JSON), or
 * one with a NUL (\u0000) inside: what is wrong with it, and the key
 * (decoded, cut to fit) in key; NULL if none. json-c keeps the last of
 * such keys, and cuts a key at its NUL, and says nothing, so the text
 * is read again here: each object's keys as json-c decodes them, into a
 * set per object. */
static const char *
bad_key(const char *text, size_t len, char *key, size_t cap)
{
	json_object *stack[HP_SIG_MAX_DEPTH + 2];	/* a set per object; NULL: array */
	json_tokener *tok = json_tokener_new();
	const char *what = NULL;
	int depth = 0, want_key = 0;

	if (tok == NULL)
		return NULL;	/* json_in reads the text: it will fail there too */
	for (size_t i = 0; i < len && what == NULL; i++) {
		char c = text[i];

		if (c == '"') {
			size_t end = i + 1;
			json_object *k;

			while (end < len && text[end] != '"')
				end += text[end] == '\\' ? 2 : 1;
			if (want_key && depth > 0 && stack[depth - 1] != NULL) {
				json_tokener_reset(tok);
				k = json_tokener_parse_ex(tok, text + i, (int)(end + 1 - i));
				if (k != NULL) {
					const char *ks = json_object_get_string(k);

					if (strlen(ks) != (size_t)json_object_get_string_len(k))
						what = "holds a NUL (\\u0000), which a key cannot "
						    "carry here";
					else if (json_object_object_get_ex(stack[depth - 1], ks,
									   NULL))
						what = "given twice in one object";
					if (what != NULL) {
						snprintf(key, cap, "%s", ks);
					} else {
						json_object_object_add(stack[depth - 1], ks, NULL);
					}
					json_object_put(k);
				}
				want_key = 0;
			}
			i = end;
		} else if (c == '{' || c == '[') {
			if (depth == (int)(sizeof(stack) / sizeof(stack[0])))
				break;	/* deeper than json-c took it: never */
			stack[depth++] = c == '{' ? json_object_new_object() : NULL;
			want_key = c == '{';
		} else if ((c == '}' || c == ']') && depth > 0) {
			json_object_put(stack[--depth]);
			want_key = 0;
		} else if (c == ',' && depth > 0) {
			want_key = stack[depth - 1] != NULL;
		}
	}
	while (depth > 0)
		json_object_put(stack[--depth]);
	json_tokener_free(tok);
	return what;
}

static int
json_in(struct hp_pc_enc *e, const struct hp_sig *sig, uint8_t at, json_object *j,
	char *why, size_t cap)
{
	const struct hp_sig_node *nd = &sig->node[at];
	char sub[512], detail[SCALAR_DETAIL];
	int64_t i;
	size_t n;
	double f;

	switch (nd->type) {
	case HP_T_STR:
	case HP_T_BYTES:
		if (!json_object_is_type(j, json_type_string))
			return wrong(sig, at, why, cap, NULL);
		if (scalar_in(e, nd->type, json_object_get_string(j),
			      (size_t)json_object_get_string_len(j), detail) != 0)
			return wrong_scalar(sig, at, why, cap, detail);
		return 0;
	case HP_T_U64:
		if (!json_object_is_type(j, json_type_int) || json_object_get_int64(j) < 0)
			return wrong(sig, at, why, cap, NULL);
		hp_pc_put_u64(e, json_object_get_uint64(j));
		return 0;
	case HP_T_I64:
		i = json_object_get_int64(j);
		if (!json_object_is_type(j, json_type_int) ||
		    (i == INT64_MAX && json_object_get_uint64(j) != (uint64_t)INT64_MAX))
			return wrong(sig, at, why, cap, NULL);
		hp_pc_put_i64(e, i);
		return 0;
	case HP_T_BOOL:
		if (!json_object_is_type(j, json_type_boolean))
			return wrong(sig, at, why, cap, NULL);
		hp_pc_put_bool(e, json_object_get_boolean(j));
		return 0;
	case HP_T_F64:
		if (json_object_is_type(j, json_type_double) || json_object_is_type(j, json_type_int)) {
			f = json_object_get_double(j);
			/* json-c reads 1e400 as Infinity: refused, as scalar_in
			 * does (the word Infinity has no digit) */
			if (isinf(f) && strpbrk(json_object_to_json_string(j), "0123456789"))
				return wrong(sig, at, why, cap, "%.40s is beyond an f64's range",
					     json_object_to_json_string(j));
		} else if (!json_object_is_type(j, json_type_string) ||
			 f64_word(json_object_get_string(j),
				  (size_t)json_object_get_string_len(j), &f) != 0)
			return wrong(sig, at, why, cap, NULL);
		hp_pc_put_f64(e, f);
		return 0;
	case HP_T_OPT:
		hp_pc_put_bool(e, j != NULL);
		if (j != NULL && json_in(e, sig, (uint8_t)(at + 1), j, sub, sizeof(sub)) != 0)
			return wrong(sig, at, why, cap, "%s", sub);
		return 0;
	case HP_T_LIST:
	case HP_T_TUPLE:
		if (!json_object_is_type(j, json_type_array))
			return wrong(sig, at, why, cap, "not a JSON array");
		n = json_object_array_length(j);
		if (nd->type == HP_T_TUPLE && n != nd->n)
			return wrong(sig, at, why, cap, "%zu fields, not %u", n, nd->n);
		if (nd->type == HP_T_LIST)
			hp_pc_put_seq_len(e, n);
		for (size_t k = 0; k < n && e->err == 0; k++)
			if (json_in(e, sig, nd->type == HP_T_LIST ? (uint8_t)(at + 1) :
				    hp_sig_child(sig, at, (unsigned)k),
				    json_object_array_get_idx(j, k), sub, sizeof(sub)) != 0)
				return wrong(sig, at, why, cap, "%s %zu %s", nd->type == HP_T_LIST ?
					     "element" : "field", k + 1, sub);
		return 0;
	case HP_T_MAP:
		if (!json_object_is_type(j, json_type_object))
			return wrong(sig, at, why, cap, "not a JSON object");
		return map_in(e, sig, at, j, why, cap);
	}
	return wrong(sig, at, why, cap, NULL);
}

/* json-c takes an integer too large for 64 bits as the largest there is:
 * every integer in text (outside strings) is looked at first. */
static int
ints_fit(const char *s, size_t len)
{
	for (size_t k = 0; k < len; k++) {
		size_t n;

		if (s[k] == '"') {
			for (k++; k < len && s[k] != '"'; k++)
				k += s[k] == '\\';
			continue;
		}
		if (s[k] != '-' && (s[k] < '0' || s[k] > '9'))
			continue;
		n = strspn(s + k, "-0123456789");
		if (strchr(".eE", s[k + n]) == NULL || s[k + n] == '\0') {
			char buf[32];

			if (n >= sizeof(buf))
				return 0;
			memcpy(buf, s + k, n);
			buf[n] = '\0';
			errno = 0;
			if (buf[0] == '-')
				(void)strtoll(buf, NULL, 10);
			else
				(void)strtoull(buf, NULL, 10);
			if (errno != 0)
				return 0;
		}
		k += n;		/* a number's fraction or exponent is digits too */
		k += strspn(s + k, ".eE+-0123456789");
		k--;
	}
	return 1;
}

/* The UTF-16 unit of a \uXXXX escape at s (6 bytes there), or -1. */
static long
u_escape(const char *s, size_t left)
{
	char hex[5], *end;
	long v;

	if (left < 6 || s[0] != '\\' || s[1] != 'u')
		return -1;
	memcpy(hex, s + 2, 4);
	hex[4] = '\0';
	v = strtol(hex, &end, 16);
	return *end == '\0' && isxdigit((unsigned char)hex[0]) ? v : -1;
}

/* A \uD800-\uDFFF escape that is not half of a pair in text (valid
 * JSON): json-c makes it U+FFFD and says nothing. Its offset, or len. */
static size_t
lone_surrogate(const char *s, size_t len)
{
	for (size_t k = 0, in = 0; k < len; k++) {
		long u, lo;

		if (s[k] == '"') {
			in = !in;
		} else if (in && s[k] == '\\') {
			u = u_escape(s + k, len - k);
			if (u >= 0xdc00 && u <= 0xdfff)
				return k;
			if (u >= 0xd800 && u <= 0xdbff) {
				lo = u_escape(s + k + 6, len - k - 6);
				if (lo < 0xdc00 || lo > 0xdfff)
					return k;
				k += 6;
			}
			k++;	/* what the backslash escapes: not a '"' that ends */
		}
	}
	return len;
}

int
pcjson_encode_arg(struct hp_pc_enc *e, const struct hp_sig *sig, uint8_t at,
		  const char *text, size_t len, char *why, size_t cap)
{
	uint8_t t = sig->node[at].type;
	json_tokener *tok;
	json_object *j;
	const char *problem;
	char key[80];
	size_t bad;
	int rc;

	if (sig->node[at].n == 0 || hp_sig_is_chan(t)) {
		char detail[SCALAR_DETAIL];

		rc = scalar_in(e, t, text, len, detail);
		return rc == -EINVAL ? wrong_scalar(sig, at, why, cap, detail) :
		    rc != 0 ? rc : e->err;
	}
	/* JSON, nested no deeper than the type can be */
	if ((tok = json_tokener_new_ex(HP_SIG_MAX_DEPTH + 1)) == NULL)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* the NUL after the text ends a number at its end */
	j = json_tokener_parse_ex(tok, text, (int)len + 1);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		rc = wrong(sig, at, why, cap, "not JSON (%s)",
			   json_tokener_error_desc(json_tokener_get_error(tok)));
	} else if (json_tokener_get_parse_end(tok) < len &&
		   strspn(text + json_tokener_get_parse_end(tok), " \t\r\n") !=
		   len - json_tokener_get_parse_end(tok)) {
		rc = wrong(sig, at, why, cap, "more after the JSON value");
	} else if (!ints_fit(text, len)) {
		rc = wrong(sig, at, why, cap, "a number larger than 64 bits");
	} else if ((bad = lone_surrogate(text, len)) < len) {
		rc = wrong(sig, at, why, cap, "\"%.6s\" at byte %zu is half of a UTF-16 "
			   "surrogate pair, no character", text + bad, bad + 1);
	} else if (memchr(text, '{', len) != NULL &&
		   (problem = bad_key(text, len, key, sizeof(key))) != NULL) {
		rc = wrong(sig, at, why, cap, "key \"%.64s\" %s", key, problem);
	} else {
		rc = json_in(e, sig, at, j, why, cap);
		rc = rc != 0 ? rc : e->err;
	}
	json_object_put(j);
	json_tokener_free(tok);
	return rc;
}
