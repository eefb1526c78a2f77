/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Untrusted text for logs and terminals (escape.h), with libbsd's vis(3)
 * for each byte that needs it. vis alone escapes every byte over 0x7f
 * in the C locale (UTF-8 would come out as octal) or follows a locale:
 * what is valid UTF-8 is decided here, the same whatever the locale. */
#define LIBBSD_OPENBSD_VIS	/* vis.h's strnvis: the one we do not use */
#include <stdint.h>
#include <string.h>

#include <bsd/vis.h>

#include "daemon/escape.h"
#include "proto/postcard.h"

/* Bytes of the UTF-8 character at s (n left) to pass as they are: a
 * valid one beyond the C1 controls; 0 for a byte to escape. */
static size_t
utf8_printable(const uint8_t *s, size_t n)
{
	size_t k = hp_utf8_char(s, n);

	if (k == 0)
		return 0;
	if (s[0] == 0xC2 && s[1] <= 0x9F)
		return 0;	/* U+0080..U+009F: C1 */
	/* the bidirectional overrides and isolates, U+202A..U+202E and
	 * U+2066..U+2069: they reorder what a terminal shows after them */
	if (s[0] == 0xE2 && ((s[1] == 0x80 && s[2] >= 0xAA && s[2] <= 0xAE) ||
			     (s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9)))
		return 0;
	return k;
}

/* An ASCII byte to escape. */
static int
control(uint8_t c, int flags)
{
	if (c == '\t' || (c == '\n' && (flags & ESCAPE_KEEP_NL)))
		return 0;
	return c < 0x20 || c == 0x7F;
}

char *
escape_text(char *dst, size_t cap, const char *src, size_t len, int flags)
{
	const uint8_t *s = (const uint8_t *)src;
	size_t out = 0, k, w;

	for (size_t i = 0; i < len; i += k) {
		char enc[5];
		const char *put = src + i;

		k = s[i] >= 0x80 ? utf8_printable(s + i, len - i) : 1;
		if (k == 0 || control(s[i], flags)) {
			/* the next byte: "\000" for a NUL a digit follows */
			vis(enc, s[i], VIS_CSTYLE | VIS_OCTAL | VIS_NL | VIS_NOLOCALE,
			    i + 1 < len ? s[i + 1] : '\0');
			put = enc;
			k = 1;
			w = strlen(enc);
		} else {
			w = k;
		}
		if (out + w >= cap)
			break;
		memcpy(dst + out, put, w);
		out += w;
	}
	dst[out] = '\0';
	return dst;
}

void
escape_mask(char *s, size_t len)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t k;

	for (size_t i = 0; i < len; i += k) {
		k = u[i] >= 0x80 ? utf8_printable(u + i, len - i) : 1;
		if (k == 0 || control(u[i], 0)) {
			s[i] = '?';
			k = 1;
		}
	}
}
