/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Byte counts and durations written for people. size_text: the way the
 * config takes them ("35M", "1.5K"; libbsd's humanize_number, 4
 * characters), for hubd's messages and the config's errors. size_iec and
 * duration_text: hubctl's tables ("34.5 MiB", "3 min 20 s"). */
#ifndef HUB_SIZE_H
#define HUB_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* bytes as text in buf (len >= 5); the exact digits when it cannot be
 * rounded. Returns buf. */
const char	*size_text(char *buf, size_t len, uint64_t bytes);

/* bytes in IEC units with one decimal, rounded: "512 B", "1.0 KiB",
 * "34.5 MiB", up to "16.0 EiB" (len >= 10 holds them all). Returns buf. */
const char	*size_iec(char *buf, size_t len, uint64_t bytes);

/* ns as the two largest units that matter, cut down (never rounded up to
 * a value not reached yet): "999 ns", "12 us", "850 ms", "1.5 s",
 * "3 min 20 s", "2 h 5 min", "3 d 4 h" (len >= 24 holds them all).
 * Returns buf. */
const char	*duration_text(char *buf, size_t len, uint64_t ns);

#endif
