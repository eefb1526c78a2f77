/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Method signatures: parsed and rendered back, hostile ones refused (too
 * deep, too long, too many types, bad syntax), values checked by them
 * from exactly-sized buffers (AddressSanitizer catches a read past the
 * end); and hubd's text forms both ways (daemon/pcjson.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/pcjson.h"
#include "proto/method.h"
#include "proto/sig.h"

static struct hp_sig
sig_of(const char *text)
{
	struct hp_sig sig;
	const char *why = NULL;
	int rc = hp_sig_parse(text, &sig, &why);

	ck_assert_msg(rc == 0, "%s: %s", text, why);
	return sig;
}

START_TEST(test_round_trip)
{
	static const char *const good[] = {
		"->unit", "str,bytes->unit", "u64,chan<u64>->u64", "->str",
		"list<u64>->list<opt<str>>", "map<str,u64>->(u64,f64)",
		"(str,(i64,bool),list<bytes>)->opt<map<u64,list<f64>>>",
		"chan<map<bytes,(str,opt<i64>)>>,f64->bool", "map<bool,str>->map<i64,unit_>",
		"opt<opt<opt<opt<opt<opt<opt<opt<u64>>>>>>>>->unit",
		"(u64)->(str)", "rx<u64>->u64", "str,rx<(str,list<bytes>)>,chan<u64>->unit",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct hp_sig sig;
		const char *why = NULL;
		char back[HP_SIG_MAX_LEN + 1];

		if (strstr(good[i], "unit_") != NULL) {
			/* not a type: refused */
			ck_assert_int_eq(hp_sig_parse(good[i], &sig, &why), -EINVAL);
			continue;
		}
		sig = sig_of(good[i]);
		ck_assert_uint_eq(hp_sig_text(&sig, back, sizeof(back)), strlen(good[i]));
		ck_assert_str_eq(back, good[i]);
	}
}
END_TEST

START_TEST(test_tree)
{
	struct hp_sig sig = sig_of("u64,chan<(str,bool)>,map<str,list<i64>>->opt<f64>");
	char text[64];

	ck_assert_uint_eq(sig.nargs, 3);
	ck_assert_uint_eq(hp_sig_arg_type(&sig, 0), HP_T_U64);
	ck_assert_uint_eq(hp_sig_arg_type(&sig, 1), HP_T_CHAN);
	ck_assert_uint_eq(hp_sig_arg_type(&sig, 2), HP_T_MAP);
	hp_sig_type_text(&sig, hp_sig_chan_item(&sig, 1), text, sizeof(text));
	ck_assert_str_eq(text, "(str,bool)");
	hp_sig_type_text(&sig, hp_sig_child(&sig, sig.args[2], 1), text, sizeof(text));
	ck_assert_str_eq(text, "list<i64>");
	hp_sig_type_text(&sig, sig.ret, text, sizeof(text));
	ck_assert_str_eq(text, "opt<f64>");
	/* cut to fit, NUL-terminated, the whole length said */
	ck_assert_uint_eq(hp_sig_type_text(&sig, sig.args[2], text, 6), strlen("map<str,list<i64>>"));
	ck_assert_str_eq(text, "map<s");
}
END_TEST

/* rx<T>: a channel the callee reads, the same shape as chan<T> */
START_TEST(test_rx)
{
	struct hp_sig sig = sig_of("str,rx<list<u64>>->u64");
	char text[64];

	ck_assert_uint_eq(hp_sig_arg_type(&sig, 1), HP_T_RX);
	ck_assert(hp_sig_is_chan(HP_T_RX) && hp_sig_is_chan(HP_T_CHAN) &&
		  !hp_sig_is_chan(HP_T_U64));
	hp_sig_type_text(&sig, hp_sig_chan_item(&sig, 1), text, sizeof(text));
	ck_assert_str_eq(text, "list<u64>");
	/* its value is the channel id, a varint */
	ck_assert_int_eq(hp_sig_check_args(&sig, (const uint8_t *)"\x01z\x03", 3), 0);
	ck_assert_int_eq(hp_sig_check_args(&sig, (const uint8_t *)"\x01z", 2), -EBADMSG);
}
END_TEST

START_TEST(test_hostile)
{
	static const struct {
		const char	*sig;
		const char	*why;
	} bad[] = {
		{ "", "no '->'" }, { "str", "no '->'" }, { "str-", "no '->'" },
		{ "str->", "unknown type" }, { "->", "unknown type" },
		{ "strr->str", "unknown type" }, { "str,->str", "unknown type" },
		{ ",str->str", "unknown type" }, { "str->str,str", "goes on" },
		{ "str str->str", "separated" }, { "unit->str", "only a result" },
		{ "->chan<u64>", "only an argument" }, { "chan<unit>->str", "only a result" },
		{ "chan<chan<u64>>->str", "only an argument" }, { "list<unit>->str", "only a result" },
		{ "->rx<u64>", "rx<T> is only an argument" }, { "rx<unit>->str", "only a result" },
		{ "rx<rx<u64>>->str", "rx<T> is only an argument" },
		{ "chan<rx<u64>>->str", "rx<T> is only an argument" },
		{ "rx<chan<u64>>->str", "chan<T> is only an argument" },
		{ "list<rx<u64>>->str", "rx<T> is only an argument" }, { "rx->str", "its '<'" },
		{ "list->str", "its '<'" }, { "list<u64->str", "its '>'" }, { "list<u64>>->str", "separated" },
		{ "map<str>->str", "value type" }, { "map<f64,str>->str", "map key" },
		{ "map<list<u64>,str>->str", "map key" }, { "map<(u64),str>->str", "map key" },
		{ "()->str", "unknown type" }, { "(u64->str", "its ')'" }, { "(u64,)->str", "unknown type" },
		{ "u64,u64,u64,u64,u64,u64,u64,u64,u64->unit", "more than 8 arguments" },
		/* 9 deep */
		{ "list<list<list<list<list<list<list<list<list<u64>>>>>>>>>->unit", "8 deep" },
		{ "((((((((((u64))))))))))->unit", "8 deep" },
		{ "->opt<opt<opt<opt<opt<opt<opt<opt<opt<u64>>>>>>>>>", "8 deep" },
	};
	struct hp_sig sig;
	const char *why;
	char text[HP_SIG_MAX_LEN + 64];
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(hp_sig_parse(bad[i].sig, &sig, &why) == -EINVAL, "%s parsed", bad[i].sig);
		ck_assert_msg(why != NULL && strstr(why, bad[i].why) != NULL, "%s: %s, not %s",
			      bad[i].sig, why, bad[i].why);
	}
	ck_assert_int_eq(hp_sig_parse(NULL, &sig, &why), -EINVAL);
	/* why may be NULL */
	ck_assert_int_eq(hp_sig_parse("bad", &sig, NULL), -EINVAL);
	/* 64 types fit, a 65th does not (a 1-field tuple is 2 bytes a type);
	 * 256 bytes fit, 257 do not */
	n = (size_t)snprintf(text, sizeof(text), "(");
	for (int i = 0; i < 7; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "(((((((u64))))))),");
	snprintf(text + n - 1, sizeof(text) - n + 1, ")->((((((u64))))))");
	sig = sig_of(text);
	ck_assert_uint_eq(sig.nnodes, 64);
	snprintf(text + n - 1, sizeof(text) - n + 1, ")->(((((((u64)))))))");
	ck_assert_int_eq(hp_sig_parse(text, &sig, &why), -EINVAL);
	ck_assert_str_eq(why, "more than 64 types");
	memset(text, 0, sizeof(text));
	memcpy(text, "bytes->", 7);
	memset(text + 7, ' ', HP_SIG_MAX_LEN - 7 + 1);
	ck_assert_int_eq(hp_sig_parse(text, &sig, &why), -EINVAL);
	ck_assert_str_eq(why, "signature missing or longer than 256 bytes");
}
END_TEST

/* A heap copy of exactly n bytes, checked as arguments of sig. */
static int
check(const char *sigtext, const void *p, size_t n)
{
	struct hp_sig sig = sig_of(sigtext);
	uint8_t *b = malloc(n ? n : 1);
	int rc;

	memcpy(b, p, n);
	rc = hp_sig_check_args(&sig, b, n);
	free(b);
	return rc;
}

#define OK(sig, bytes)	ck_assert_msg(check(sig, bytes, sizeof(bytes) - 1) == 0, \
				      "%s refused %s", sig, #bytes)
#define BAD(sig, bytes)	ck_assert_msg(check(sig, bytes, sizeof(bytes) - 1) == -EBADMSG, \
				      "%s took %s", sig, #bytes)

/* r[shm.payload.encoding] */
START_TEST(test_values)
{
	OK("str->unit", "\x02hi");
	BAD("str->unit", "\x02\xff\xfe");		/* not UTF-8 */
	BAD("str->unit", "\x03hi");			/* truncated */
	OK("f64->unit", "\x00\x00\x00\x00\x00\x00\xf8\x3f");
	BAD("f64->unit", "\x00\x00\x00\x00\x00\x00\xf8");
	BAD("f64->unit", "\x00\x00\x00\x00\x00\x00\xf8\x3f\x00");	/* one too many */
	OK("list<u64>->unit", "\x03\x01\x02\x7f");
	OK("list<u64>->unit", "\x00");
	BAD("list<u64>->unit", "\x03\x01\x02");		/* an element missing */
	BAD("list<u64>->unit", "\x03\x01\x02\x80");	/* a varint cut */
	/* a count larger than the input: refused before any element */
	BAD("list<u64>->unit", "\xff\xff\xff\xff\x0f\x01");
	BAD("list<u64>->unit", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01");
	OK("list<str>->unit", "\x02\x01" "a\x00");
	BAD("list<str>->unit", "\x02\x01" "a\x01\xc0");	/* bad UTF-8 inside */
	OK("opt<str>->unit", "\x00");
	OK("opt<str>->unit", "\x01\x01" "a");
	BAD("opt<str>->unit", "\x02\x01" "a");		/* tag 0 or 1 */
	BAD("opt<str>->unit", "\x01");
	OK("opt<opt<bool>>->unit", "\x01\x00");
	OK("opt<opt<bool>>->unit", "\x01\x01\x01");
	BAD("opt<opt<bool>>->unit", "\x01\x01\x02");	/* a bool is 0 or 1 */
	OK("(u64,str,bool)->unit", "\x05\x01z\x01");
	BAD("(u64,str,bool)->unit", "\x05\x01z");
	OK("map<str,i64>->unit", "\x02\x01" "a\x01\x01" "b\x02");
	BAD("map<str,i64>->unit", "\x02\x01" "a\x01\x01" "b");	/* a value missing */
	BAD("map<str,i64>->unit", "\x01\x01\xff\x01");	/* a key not UTF-8 */
	OK("map<bytes,list<(bool,f64)>>->unit",
	   "\x01\x01\xff\x01\x01\x00\x00\x00\x00\x00\x00\xf0\x3f");
	/* channels are ids: u64 */
	OK("u64,chan<list<str>>->unit", "\x01\x02");
	BAD("u64,chan<list<str>>->unit", "\x01");
	/* 8 deep, each level's count inside the one before */
	OK("list<list<list<list<list<list<list<list<u64>>>>>>>>->unit",
	   "\x01\x01\x01\x01\x01\x01\x01\x01\x05");
	BAD("list<list<list<list<list<list<list<list<u64>>>>>>>>->unit",
	    "\x01\x01\x01\x01\x01\x01\x01\x02\x05");
}
END_TEST

START_TEST(test_result)
{
	struct hp_sig sig = sig_of("str->list<opt<u64>>");

	ck_assert_int_eq(hp_sig_check_result(&sig, (const uint8_t *)"\x02\x00\x01\x09", 4), 0);
	ck_assert_int_eq(hp_sig_check_result(&sig, (const uint8_t *)"\x02\x00\x01", 3), -EBADMSG);
	ck_assert_int_eq(hp_sig_check_result(&sig, (const uint8_t *)"\x01\x00\x00", 3), -EBADMSG);
	sig = sig_of("->unit");
	ck_assert_int_eq(hp_sig_check_result(&sig, NULL, 0), 0);
}
END_TEST

/* -- hubd's text forms ------------------------------------------------- */

/* Argument text encoded by its type, then shown as JSON: 0 and the JSON
 * in out, or the error with what is wrong in out. */
static int
through(const char *sigtext, const char *text, char *out, size_t cap)
{
	struct hp_sig sig = sig_of(sigtext);
	uint8_t buf[512];
	struct hp_pc_enc e;
	struct hp_pc_dec d;
	json_object *j;
	int rc;

	hp_pc_enc_init(&e, buf, sizeof(buf));
	rc = pcjson_encode_arg(&e, &sig, sig.args[0], text, strlen(text), out, cap);
	if (rc != 0)
		return rc;
	ck_assert_int_eq(hp_sig_check_args(&sig, buf, e.len), 0);
	hp_pc_dec_init(&d, buf, e.len);
	ck_assert_int_eq(pcjson_value(&d, &sig, sig.args[0], &j), 0);
	ck_assert_uint_eq(hp_pc_remaining(&d), 0);
	snprintf(out, cap, "%s", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
	return 0;
}

static void
same(const char *sig, const char *text, const char *json)
{
	char out[512];
	int rc = through(sig, text, out, sizeof(out));

	ck_assert_msg(rc == 0, "%s '%s': %d %s", sig, text, rc, out);
	ck_assert_msg(strcmp(out, json) == 0, "%s '%s' shows %s, not %s", sig, text, out, json);
}

static void
refused(const char *sig, const char *text, const char *why)
{
	char out[512];
	int rc = through(sig, text, out, sizeof(out));

	ck_assert_msg(rc == -EINVAL, "%s '%s' taken: %s", sig, text, out);
	ck_assert_msg(strcmp(out, why) == 0, "%s '%s': \"%s\", not \"%s\"", sig, text, out, why);
}

START_TEST(test_text_in_out)
{
	same("str->unit", "héllo", "\"héllo\"");
	same("u64->unit", "18446744073709551615", "18446744073709551615");
	same("i64->unit", "-9223372036854775808", "-9223372036854775808");
	same("bool->unit", "true", "true");
	same("f64->unit", "1.5", "1.5");
	same("f64->unit", "2", "2.0");
	same("f64->unit", "0.1", "0.1");
	same("f64->unit", "-1e300", "-1e+300");
	same("f64->unit", "NaN", "\"NaN\"");
	same("f64->unit", "-Infinity", "\"-Infinity\"");
	same("list<u64>->unit", "[1, 2,3]", "[1,2,3]");
	same("list<u64>->unit", " [] ", "[]");
	same("opt<str>->unit", "null", "null");
	same("opt<str>->unit", "\"x\"", "\"x\"");
	same("(u64,str,f64)->unit", "[1,\"a\",0.5]", "[1,\"a\",0.5]");
	same("map<str,u64>->unit", "{\"a\":1}", "{\"a\":1}");
	same("map<u64,list<opt<bool>>>->unit", "{\"7\":[true,null]}", "{\"7\":[true,null]}");
	same("map<bool,f64>->unit", "{\"false\":\"Infinity\"}", "{\"false\":\"Infinity\"}");
	same("list<f64>->unit", "[1,2.5,\"NaN\"]", "[1.0,2.5,\"NaN\"]");
	same("list<i64>->unit", "[-9223372036854775808,9223372036854775807]",
	     "[-9223372036854775808,9223372036854775807]");
}
END_TEST

/* Bytes: as they are, unless they are not UTF-8 or look like the base64
 * form; what comes out goes back in as the same bytes. */
START_TEST(test_bytes_base64)
{
	char out[512];

	same("bytes->unit", "hello", "\"hello\"");
	same("bytes->unit", "hex:fffe", "\"hex:fffe\"");
	same("bytes->unit", "base64://4=", "\"base64://4=\"");
	same("bytes->unit", "base64:aGk=", "\"hi\"");
	same("bytes->unit", "base64:", "\"\"");
	/* bytes that read as the base64 form are shown in it */
	same("bytes->unit", "base64:YmFzZTY0Olg=", "\"base64:YmFzZTY0Olg=\"");
	ck_assert_int_eq(through("bytes->unit", "base64:YmFzZTY0Olg=", out, sizeof(out)), 0);
	same("list<bytes>->unit", "[\"base64:AP8=\",\"ok\"]", "[\"base64:AP8=\",\"ok\"]");
	same("map<bytes,bytes>->unit", "{\"base64:/w==\":\"base64:/w==\"}",
	     "{\"base64:/w==\":\"base64:/w==\"}");
	/* where the base64 goes wrong, counted after "base64:" */
	refused("bytes->unit", "base64:!!!!", "is not a bytes: bad base64 at character 1 "
		"after \"base64:\": '!' is not a base64 character");
	refused("bytes->unit", "base64:QQ", "is not a bytes: bad base64: it ends inside a "
		"group of 4 characters ('=' pads one)");
	refused("bytes->unit", "base64:QUJD\x01", "is not a bytes: bad base64 at character "
		"5 after \"base64:\": byte 0x01 is not a base64 character");
	refused("bytes->unit", "base64:QR==", "is not a bytes: bad base64 at character 2 "
		"after \"base64:\": 'R' leaves bits set past the last byte");
	refused("bytes->unit", "base64:QUJ=QQ==", "is not a bytes: bad base64 at character "
		"5 after \"base64:\": 'Q' comes after the padding");
	refused("list<bytes>->unit", "[\"ok\",\"base64:Q===\"]", "is not a list<bytes>: "
		"element 2 is not a bytes: bad base64 at character 2 after \"base64:\": '=' "
		"pads a group of 4 that has fewer than 2 characters");
	refused("map<bytes,u64>->unit", "{\"base64:QQ=\":1}", "is not a map<bytes,u64>: key "
		"\"base64:QQ=\" is not a bytes: bad base64: its padding ends after one '=' of two");
}
END_TEST

#define U64_RANGE	" (a whole number from 0 to 18446744073709551615)"
#define I64_RANGE	" (a whole number from -9223372036854775808 to 9223372036854775807)"

START_TEST(test_text_refused)
{
	/* a number says its range */
	refused("u64->unit", "-1", "is not a u64" U64_RANGE);
	refused("u64->unit", "18446744073709551616", "is not a u64" U64_RANGE);
	refused("i64->unit", "1.5", "is not an i64" I64_RANGE);
	refused("i64->unit", " 1", "is not an i64" I64_RANGE);
	refused("i64->unit", "9223372036854775808", "is not an i64" I64_RANGE);
	refused("i64->unit", "-9223372036854775809", "is not an i64" I64_RANGE);
	refused("bool->unit", "yes", "is not a bool (true or false)");
	refused("str->unit", "\xff", "is not a str (UTF-8)");
	refused("f64->unit", "inf", "is not an f64 (a number, NaN, Infinity or -Infinity)");
	refused("f64->unit", "0x10", "is not an f64 (a number, NaN, Infinity or -Infinity)");
	refused("f64->unit", "1e999", "is not an f64 (a number, NaN, Infinity or -Infinity)");
	refused("list<u64>->unit", "[1,2,-3]", "is not a list<u64>: element 3 is not a u64"
		U64_RANGE);
	refused("list<u64>->unit", "[1,2", "is not a list<u64>: not JSON (unexpected end of data)");
	refused("list<u64>->unit", "[1] 2", "is not a list<u64>: not JSON (unexpected character)");
	refused("list<u64>->unit", "{}", "is not a list<u64>: not a JSON array");
	refused("list<u64>->unit", "[99999999999999999999]",
		"is not a list<u64>: a number larger than 64 bits");
	refused("list<i64>->unit", "[9223372036854775808]",
		"is not a list<i64>: element 1 is not an i64" I64_RANGE);
	refused("list<list<str>>->unit", "[[\"a\"],[1]]",
		"is not a list<list<str>>: element 2 is not a list<str>: "
		"element 1 is not a str (UTF-8)");
	refused("opt<u64>->unit", "\"x\"", "is not an opt<u64>: is not a u64" U64_RANGE);
	refused("(u64,str)->unit", "[1]", "is not a (u64,str): 1 fields, not 2");
	refused("(u64,str)->unit", "[1,2]", "is not a (u64,str): field 2 is not a str (UTF-8)");
	refused("map<u64,str>->unit", "{\"x\":\"a\"}",
		"is not a map<u64,str>: key \"x\" is not a u64" U64_RANGE);
	refused("map<str,bool>->unit", "{\"x\":1}",
		"is not a map<str,bool>: the value of \"x\" is not a bool (true or false)");
	/* nested JSON deeper than any type can be */
	refused("list<u64>->unit", "[[[[[[[[[[[[1]]]]]]]]]]]]",
		"is not a list<u64>: not JSON (nesting too deep)");
}
END_TEST

/* A map's key given twice is refused, naming it, whichever object it is
 * in and however it is written: json-c would keep the last, the guest
 * would get the same key twice. Keys that repeat in different objects,
 * or a string value that looks like a key, are fine. */
START_TEST(test_text_duplicate_keys)
{
	refused("map<str,u64>->unit", "{\"a\":1,\"a\":2}",
		"is not a map<str,u64>: key \"a\" given twice in one object");
	refused("map<str,u64>->unit", "{\"a\":1,\"b\":2, \"\\u0061\" : 3}",
		"is not a map<str,u64>: key \"a\" given twice in one object");
	refused("list<map<str,map<str,bool>>>->unit",
		"[{\"x\":{}},{\"y\":{\"p\":true,\"q\":false,\"p\":false}}]",
		"is not a list<map<str,map<str,bool>>>: key \"p\" given twice in one object");
	refused("map<u64,str>->unit", "{\"1\":\"a\",\"01\":\"b\"}",
		"is not a map<u64,str>: key \"01\" given twice (as another text of the "
		"same value)");
	refused("map<bytes,u64>->unit", "{\"a\":1,\"base64:YQ==\":2}",
		"is not a map<bytes,u64>: key \"base64:YQ==\" given twice (as another text "
		"of the same value)");
	same("list<map<str,u64>>->unit", "[{\"a\":1},{\"a\":2}]", "[{\"a\":1},{\"a\":2}]");
	same("map<str,str>->unit", "{\"a\":\"a\",\"b\":\"{\\\"a\\\":1,\\\"a\\\":2}\"}",
	     "{\"a\":\"a\",\"b\":\"{\\\"a\\\":1,\\\"a\\\":2}\"}");
	same("map<u64,str>->unit", "{\"1\":\"a\",\"2\":\"b\"}", "{\"1\":\"a\",\"2\":\"b\"}");
}
END_TEST

/* An f64 inside JSON past its range is refused as the argument alone
 * is, not taken as Infinity; the words Infinity and NaN stay values. */
START_TEST(test_text_f64_range)
{
	refused("list<f64>->unit", "[1.5,1e400]",
		"is not a list<f64>: element 2 is not an f64: 1e400 is beyond an f64's range");
	refused("opt<f64>->unit", "-1e400",
		"is not an opt<f64>: is not an f64: -1e400 is beyond an f64's range");
	refused("map<str,f64>->unit", "{\"a\":2e308}",
		"is not a map<str,f64>: the value of \"a\" is not an f64: 2e308 is beyond "
		"an f64's range");
	same("list<f64>->unit", "[Infinity,-Infinity,\"Infinity\",1e308]",
	     "[\"Infinity\",\"-Infinity\",\"Infinity\",1e+308]");
}
END_TEST

/* A \uD800-\uDFFF escape that is not half of a pair is no character:
 * refused, where json-c made it U+FFFD; a pair is one character. */
START_TEST(test_text_lone_surrogate)
{
	refused("list<str>->unit", "[\"ok\",\"a\\ud800\"]",
		"is not a list<str>: \"\\ud800\" at byte 9 is half of a UTF-16 surrogate "
		"pair, no character");
	refused("map<str,u64>->unit", "{\"\\uDC00\\uD800\":1}",
		"is not a map<str,u64>: \"\\uDC00\" at byte 3 is half of a UTF-16 "
		"surrogate pair, no character");
	refused("opt<bytes>->unit", "\"\\ud83d\\u0041\"",
		"is not an opt<bytes>: \"\\ud83d\" at byte 2 is half of a UTF-16 "
		"surrogate pair, no character");
	same("list<str>->unit", "[\"\\ud83d\\ude00\",\"\\\\ud800\",\"\\\"\\ud83d\\ude00\"]",
	     "[\"\xf0\x9f\x98\x80\",\"\\\\ud800\",\"\\\"\xf0\x9f\x98\x80\"]");
	same("list<str>->unit", "[\"\xef\xbf\xbd\"]", "[\"\xef\xbf\xbd\"]");
}
END_TEST

/* A key with a NUL: json-c cuts it there, so it is refused, not sent cut
 * ("a\0b" as "a"). Shown, a map with such a key, or a key twice, is
 * -EEXIST: a JSON object cannot show either. */
START_TEST(test_map_keys_json_cannot_carry)
{
	static const struct { const char *bytes; size_t n; int rc; } shown[] = {
		{ "\x02\x01" "a\x01\x01" "b\x02", 7, 0 },
		{ "\x02\x01" "a\x01\x01" "a\x02", 7, -EEXIST },	/* "a" twice */
		{ "\x01\x03" "a\x00" "b\x01", 6, -EEXIST },		/* "a\0b" */
		{ "\x01\x01\x02\x01" "a\x01\x01" "a\x02", 9, -EEXIST },	/* nested */
	};

	refused("map<str,u64>->unit", "{\"a\\u0000b\":1}",
		"is not a map<str,u64>: key \"a\" holds a NUL (\\u0000), which a key "
		"cannot carry here");
	refused("list<map<bytes,u64>>->unit", "[{\"x\":1},{\"\\u0000\":2}]",
		"is not a list<map<bytes,u64>>: key \"\" holds a NUL (\\u0000), which a key "
		"cannot carry here");
	same("map<str,str>->unit", "{\"a\":\"b\\u0000c\"}", "{\"a\":\"b\\u0000c\"}");
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		struct hp_sig sig = sig_of(i == 3 ? "map<u64,map<str,u64>>->unit" :
					   "map<str,u64>->unit");
		struct hp_pc_dec d;
		json_object *j = NULL;
		int rc;

		hp_pc_dec_init(&d, (const uint8_t *)shown[i].bytes, shown[i].n);
		ck_assert_int_eq(hp_sig_check_args(&sig, (const uint8_t *)shown[i].bytes,
						   shown[i].n), 0);
		rc = pcjson_value(&d, &sig, sig.args[0], &j);
		ck_assert_msg(rc == shown[i].rc, "case %zu: %d", i, rc);
		ck_assert(rc == 0 ? j != NULL : j == NULL);
		json_object_put(j);
	}
}
END_TEST

START_TEST(test_encoder_full)
{
	struct hp_sig sig = sig_of("list<str>->unit");
	uint8_t buf[8];
	struct hp_pc_enc e;
	char why[64];

	hp_pc_enc_init(&e, buf, sizeof(buf));
	ck_assert_int_eq(pcjson_encode_arg(&e, &sig, sig.args[0], "[\"abcdefgh\"]", 12,
					   why, sizeof(why)), -ENOSPC);
}
END_TEST

/* Method names: the one set hubd registers, libguest checks, the
 * config's provides and hub-nats take (proto/method.h). */
START_TEST(test_method_names)
{
	static const struct { const char *name; const char *why; } cases[] = {
		{ "kv.get", NULL }, { "a", NULL }, { "A-b_9.c-d.E_", NULL },
		{ "", HP_METHOD_NAME_EMPTY },
		{ "h4.a\nhubd: guest kv: FAKE", HP_METHOD_NAME_CHAR },
		{ "h4.b\033[31mred", HP_METHOD_NAME_CHAR },
		{ "a b", HP_METHOD_NAME_CHAR }, { "a.*", HP_METHOD_NAME_CHAR },
		{ "a.>", HP_METHOD_NAME_CHAR }, { "caf\xc3\xa9", HP_METHOD_NAME_CHAR },
		{ "a/b", HP_METHOD_NAME_CHAR }, { "a\x7f", HP_METHOD_NAME_CHAR },
		{ ".a", HP_METHOD_NAME_PART }, { "a.", HP_METHOD_NAME_PART },
		{ "a..b", HP_METHOD_NAME_PART }, { ".", HP_METHOD_NAME_PART },
	};
	char name[HP_METHOD_NAME_MAX + 2];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = hp_method_name_refused(cases[i].name, strlen(cases[i].name));

		ck_assert_msg(why == NULL ? cases[i].why == NULL :
			      cases[i].why != NULL && strcmp(why, cases[i].why) == 0,
			      "'%s': %s", cases[i].name, why ? why : "taken");
	}
	/* a NUL inside: the bytes as sent, not a C string */
	ck_assert_str_eq(hp_method_name_refused("a.b\0c", 5), HP_METHOD_NAME_CHAR);
	memset(name, 'n', sizeof(name));
	ck_assert_ptr_null(hp_method_name_refused(name, HP_METHOD_NAME_MAX));
	ck_assert_str_eq(hp_method_name_refused(name, HP_METHOD_NAME_MAX + 1), HP_METHOD_NAME_LONG);
}
END_TEST

/* hp_sig_explain: what is wrong and where, the text shown safely and
 * cut; "" for a signature that parses. */
START_TEST(test_explain)
{
	static const char *const cases[][2] = {
		{ "str,strr->u64",
		  "signature \"str,strr->u64\": unknown type at byte 5 (\"strr->u64\")" },
		{ "strr->str", "signature \"strr->str\": unknown type at byte 1 (\"strr->str\")" },
		{ "->", "signature \"->\": unknown type at byte 3 (its end)" },
		{ "list<u64->str",
		  "signature \"list<u64->str\": a type without its '>' at byte 9 (\"->str\")" },
		{ "str str->str", "signature \"str str->str\": arguments not separated by ',' "
		  "at byte 4 (\" str->str\")" },
		{ "str-u64->u64", "signature \"str-u64->u64\": signature has no '->' at byte 4 "
		  "(\"-u64->u64\")" },
		{ "str", "signature \"str\": signature has no '->'" },
		{ "->str,str", "signature \"->str,str\": signature goes on after its result type "
		  "at byte 6 (\",str\")" },
		/* a type not allowed where it is, a map's key: at its start, not past it */
		{ "chan<u64>->chan<u64>", "signature \"chan<u64>->chan<u64>\": chan<T> is only an "
		  "argument type at byte 12 (\"chan<u64>\")" },
		{ "unit->unit", "signature \"unit->unit\": unit is only a result type at byte 1 "
		  "(\"unit->unit\")" },
		{ "str,unit->str", "signature \"str,unit->str\": unit is only a result type at "
		  "byte 5 (\"unit->str\")" },
		{ "map<f64,u64>->unit", "signature \"map<f64,u64>->unit\": a map key that is not "
		  "str, bytes, u64, i64 or bool at byte 5 (\"f64,u64>->unit\")" },
		{ "map<list<u64>,str>->str", "signature \"map<list<u64>,str>->str\": a map key that "
		  "is not str, bytes, u64, i64 or bool at byte 5 (\"list<u64>,str>->...\")" },
		{ "opt<chan<u64>>->u64", "signature \"opt<chan<u64>>->u64\": chan<T> is only an "
		  "argument type at byte 5 (\"chan<u64>>->u64\")" },
		{ "->rx<u64>", "signature \"->rx<u64>\": rx<T> is only an argument type at byte 3 "
		  "(\"rx<u64>\")" },
		{ "chan<rx<u64>>->str", "signature \"chan<rx<u64>>->str\": rx<T> is only an "
		  "argument type at byte 6 (\"rx<u64>>->str\")" },
		{ "(u64,list<unit>)->str", "signature \"(u64,list<unit>)->str\": unit is only a "
		  "result type at byte 11 (\"unit>)->str\")" },
		/* the 9th, at its start */
		{ "list<list<list<list<list<list<list<list<list<u64>>>>>>>>>->unit",
		  "signature \"list<list<list<list<list<list<list<list<list<u64>>>>>>>>>->unit\": "
		  "types nested more than 8 deep at byte 41 (\"list<u64>>>>>>>>...\")" },
		{ "->opt<opt<opt<opt<opt<opt<opt<opt<opt<u64>>>>>>>>>",
		  "signature \"->opt<opt<opt<opt<opt<opt<opt<opt<opt<u64>>>>>>>>>\": types nested "
		  "more than 8 deep at byte 35 (\"opt<u64>>>>>>>>>\")" },
		{ "((((((((((u64))))))))))->unit", "signature \"((((((((((u64))))))))))->unit\": "
		  "types nested more than 8 deep at byte 9 (\"((u64))))))))))-...\")" },
		/* no type after the ',': where one would be, as in "(u64,)" */
		{ "str,->str", "signature \"str,->str\": unknown type at byte 5 (\"->str\")" },
		{ "(u64,)->str", "signature \"(u64,)->str\": unknown type at byte 6 (\")->str\")" },
		{ "u64,u64,u64,u64,u64,u64,u64,u64,u64->unit",
		  "signature \"u64,u64,u64,u64,u64,u64,u64,u64,u64->unit\": more than 8 arguments "
		  "at byte 33 (\"u64->unit\")" },
		/* a guest's bytes: never raw */
		{ "st\033[2J\"->str", "signature \"st\\x1b[2J\\x22->str\": unknown type at byte 1 "
		  "(\"st\\x1b[2J\\x22->str\")" },
		{ "u64->(u64,bytes,u64,bytes,u64,bytes,u64,bytes,u64,bytes,u64,bytes,u64,bytes,xx)",
		  "signature \"u64->(u64,bytes,u64,bytes,u64,bytes,u64,bytes,u64,bytes,u64,"
		  "byte...\": unknown type at byte 77 (\"xx)\")" },
		{ "str->str", "" },
	};
	char buf[512], small[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = hp_sig_explain(cases[i][0], buf, sizeof(buf));

		ck_assert_msg(strcmp(buf, cases[i][1]) == 0 && n == strlen(buf), "%s: '%s' (%zu)",
			      cases[i][0], buf, n);
	}
	ck_assert_uint_eq(hp_sig_explain(NULL, buf, sizeof(buf)), strlen("no signature"));
	/* cut to fit, the length it would have */
	ck_assert_uint_eq(hp_sig_explain("strr->str", small, sizeof(small)),
			  strlen(cases[1][1]));
	ck_assert_str_eq(small, "signature \"strr");
}
END_TEST

Suite *suite_sig(void);
Suite *
suite_sig(void)
{
	Suite *s = suite_create("sig");
	TCase *tc = tcase_create("sig");
	TCase *tt = tcase_create("text");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_tree);
	tcase_add_test(tc, test_rx);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_explain);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_result);
	tcase_add_test(tc, test_method_names);
	suite_add_tcase(s, tc);
	tcase_add_test(tt, test_text_in_out);
	tcase_add_test(tt, test_bytes_base64);
	tcase_add_test(tt, test_text_refused);
	tcase_add_test(tt, test_text_duplicate_keys);
	tcase_add_test(tt, test_text_f64_range);
	tcase_add_test(tt, test_text_lone_surrogate);
	tcase_add_test(tt, test_map_keys_json_cannot_carry);
	tcase_add_test(tt, test_encoder_full);
	suite_add_tcase(s, tt);
	return s;
}
