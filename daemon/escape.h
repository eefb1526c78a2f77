/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Text someone else wrote (a guest's, a client's) made safe for a log
 * line or a terminal: one function for hubd's log (log.c) and hubctl's
 * text output. */
#ifndef HUB_ESCAPE_H
#define HUB_ESCAPE_H

#include <stddef.h>

#define ESCAPE_KEEP_NL	0x1	/* newlines stay: a text of several lines */

/* src[0..len) into dst (cap bytes, NUL-terminated, cap > 0): C0 controls
 * (tab aside; newline too with ESCAPE_KEEP_NL), DEL, C1 (U+0080..U+009F),
 * the bidirectional overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069) and every byte that is not part of valid UTF-8
 * escaped as vis(3)
 * writes them in C style, else octal ("\n", "\r", "\033", "\377"); the
 * rest as it is, UTF-8 included, backslashes too (nothing is to be
 * unescaped: what matters is that no byte ends a line or drives a
 * terminal). Cut between characters when dst is full. Returns dst. */
char	*escape_text(char *dst, size_t cap, const char *src, size_t len, int flags);
/* In place, for text kept and shown again (a guest's output): each byte
 * escape_text would escape becomes '?', so that s[0..len) is valid
 * UTF-8 (JSON may carry it) with nothing that drives a terminal. */
void	escape_mask(char *s, size_t len);

#endif
