/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A config file, hubd's or hub-nats's, opened for its parser: a regular
 * file. */
#ifndef HP_CONFFILE_H
#define HP_CONFFILE_H

#include <stddef.h>
#include <stdio.h>

/* Opens path to read: NULL if it cannot be, or is not a regular file (a
 * FIFO would hold the caller in its open until someone writes it,
 * /dev/zero in its read for ever); then why (cap bytes) says so,
 * without the path. */
FILE	*hp_config_open(const char *path, char *why, size_t cap);

#endif
