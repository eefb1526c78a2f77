/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Numbers for JSON without float noise (jsonout.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/jsonout.h"

json_object *
json_fixed(uint64_t v, unsigned decimals)
{
	uint64_t scale = 1;
	char text[48];
	size_t n;

	if (decimals > 9)
		decimals = 9;
	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	if (decimals == 0)
		n = (size_t)snprintf(text, sizeof(text), "%" PRIu64 ".0", v);
	else
		n = (size_t)snprintf(text, sizeof(text), "%" PRIu64 ".%0*" PRIu64, v / scale,
				     (int)decimals, v % scale);
	/* trailing zeros say nothing: one stays, so that it reads as a fraction */
	while (n > 2 && text[n - 1] == '0' && text[n - 2] != '.')
		text[--n] = '\0';
	return json_object_new_double_s((double)v / (double)scale, text);
}

json_object *
json_seconds(uint64_t ns)
{
	return json_fixed(ns / 1000000, 3);
}
