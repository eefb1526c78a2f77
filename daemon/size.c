/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Byte counts and durations for people (size.h). */
#include <inttypes.h>
#include <stdio.h>

#include <bsd/libutil.h>

#include "daemon/size.h"

const char *
size_text(char *buf, size_t len, uint64_t bytes)
{
	if (bytes > INT64_MAX || humanize_number(buf, len < 5 ? len : 5, (int64_t)bytes, "",
						 HN_AUTOSCALE, HN_DECIMAL | HN_NOSPACE | HN_B) < 0)
		snprintf(buf, len, "%" PRIu64, bytes);
	return buf;
}

const char *
size_iec(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	uint64_t tenths;
	unsigned k = 1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (k < 6 && bytes >> (10 * (k + 1)) != 0)
		k++;
	for (;;) {
		/* in tenths of the unit, rounded; the remainder times 10 fits */
		uint64_t shift = 10 * k, rest = bytes & ((UINT64_C(1) << shift) - 1);

		tenths = (bytes >> shift) * 10 + ((rest * 10 + (UINT64_C(1) << (shift - 1))) >> shift);
		if (tenths < 10240 || k == 6)
			break;
		k++;	/* 1023.95 KiB rounds to 1.0 MiB, not 1024.0 KiB */
	}
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", tenths / 10, tenths % 10, units[k - 1]);
	return buf;
}

const char *
duration_text(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000u;

	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%" PRIu64 " us", ns / 1000);
	else if (ns < 1000000000)
		snprintf(buf, len, "%" PRIu64 " ms", ns / 1000000);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " s", s, ns / 100000000 % 10);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 " min %" PRIu64 " s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 " h %" PRIu64 " min", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 " d %" PRIu64 " h", s / 86400, s / 3600 % 24);
	return buf;
}
