/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Sizes and durations for people (size.h), and JSON numbers without
 * float noise (jsonout.h): exact strings at the edges. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "daemon/jsonout.h"
#include "daemon/size.h"

#define NS_S	1000000000ull

START_TEST(test_size_iec)
{
	static const struct {
		uint64_t	bytes;
		const char	*text;
	} cases[] = {
		{ 0, "0 B" }, { 512, "512 B" }, { 1023, "1023 B" }, { 1024, "1.0 KiB" },
		{ 1536, "1.5 KiB" }, { 1048524, "1023.9 KiB" },
		{ 1048575, "1.0 MiB" },	/* rounds up into the next unit */
		{ (uint64_t)(34.5 * 1048576), "34.5 MiB" }, { 1ull << 30, "1.0 GiB" },
		{ 1ull << 60, "1.0 EiB" }, { UINT64_MAX, "16.0 EiB" },
	};
	char buf[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(size_iec(buf, sizeof(buf), cases[i].bytes), cases[i].text);
	/* a short buffer is cut, never overrun */
	ck_assert_str_eq(size_iec(buf, 4, 1536), "1.5");
}
END_TEST

START_TEST(test_duration_text)
{
	static const struct {
		uint64_t	ns;
		const char	*text;
	} cases[] = {
		{ 0, "0 ns" }, { 999, "999 ns" }, { 1000, "1 us" }, { 12345, "12 us" },
		{ 999999, "999 us" }, { 1000000, "1 ms" }, { 850000000, "850 ms" },
		{ NS_S, "1.0 s" }, { 1500000000, "1.5 s" }, { 59999999999ull, "59.9 s" },
		{ 60 * NS_S, "1 min 0 s" }, { 61 * NS_S, "1 min 1 s" },
		{ 200 * NS_S, "3 min 20 s" }, { 3600 * NS_S, "1 h 0 min" },
		{ 7500 * NS_S, "2 h 5 min" }, { 86400 * NS_S, "1 d 0 h" },
		{ (3 * 86400 + 4 * 3600 + 59) * NS_S, "3 d 4 h" },
		{ UINT64_MAX, "213503 d 23 h" },
	};
	char buf[24];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(duration_text(buf, sizeof(buf), cases[i].ns), cases[i].text);
}
END_TEST

/* The text a double is written with, as json-c writes it. */
static const char *
written(json_object *o)
{
	static char buf[64];

	strcpy(buf, json_object_to_json_string_ext(o, JSON_OUT_FLAGS));
	json_object_put(o);
	return buf;
}

START_TEST(test_json_numbers)
{
	json_object *o = json_object_new_object();

	ck_assert_str_eq(written(json_fixed(1502, 3)), "1.502");
	ck_assert_str_eq(written(json_fixed(1500, 3)), "1.5");
	ck_assert_str_eq(written(json_fixed(2000, 3)), "2.0");
	ck_assert_str_eq(written(json_fixed(7, 3)), "0.007");
	ck_assert_str_eq(written(json_fixed(0, 1)), "0.0");
	ck_assert_str_eq(written(json_fixed(42, 0)), "42.0");
	ck_assert_str_eq(written(json_seconds(1502468887)), "1.502");
	ck_assert_str_eq(written(json_seconds(UINT64_MAX)), "18446744073.709");
	/* the number behind the text is the same */
	json_object *v = json_fixed(1502, 3);

	ck_assert(json_object_get_double(v) > 1.5019 && json_object_get_double(v) < 1.5021);
	json_object_put(v);
	/* slashes as they are */
	json_object_object_add(o, "segment", json_object_new_string("/dev/shm/hub"));
	ck_assert_str_eq(written(o), "{\"segment\":\"/dev/shm/hub\"}");
}
END_TEST

Suite *suite_size(void);
Suite *
suite_size(void)
{
	Suite *s = suite_create("size");
	TCase *tc = tcase_create("size");

	tcase_add_test(tc, test_size_iec);
	tcase_add_test(tc, test_duration_text);
	tcase_add_test(tc, test_json_numbers);
	suite_add_tcase(s, tc);
	return s;
}
