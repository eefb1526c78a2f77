/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A config file, hubd's or hub-nats's, opened for its parser: a regular
 * file no larger than HP_CONFIG_MAX. */
#ifndef HP_CONFFILE_H
#define HP_CONFFILE_H

#include <stddef.h>
#include <stdio.h>

/* The largest config read: far above what max_guests sections and their
 * comments take, far below what keeps a load (a reload: hubd's whole
 * loop) busy for long. */
#define HP_CONFIG_MAX		(1u << 20)
#define HP_CONFIG_MAX_TEXT	"1 MiB"

/* Opens path to read: NULL if it cannot be, or is not a regular file (a
 * FIFO would hold the caller in its open until someone writes it,
 * /dev/zero in its read for ever), or is larger than HP_CONFIG_MAX (1 GB
 * of a sparse file, or 100 MB of blank lines, held hubd for seconds);
 * then why (cap bytes) says so, without the path. */
FILE	*hp_config_open(const char *path, char *why, size_t cap);

#endif
