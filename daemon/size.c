/* Byte counts for people (size.h). */
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
