/* Byte counts written for people the way the config takes them ("35M",
 * "1.5K"; libbsd's humanize_number, 4 characters): hubd's messages, the
 * config's errors and hubctl's tables. */
#ifndef HUB_SIZE_H
#define HUB_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* bytes as text in buf (len >= 5); the exact digits when it cannot be
 * rounded. Returns buf. */
const char	*size_text(char *buf, size_t len, uint64_t bytes);

#endif
