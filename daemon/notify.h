/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The systemd notify protocol (sd_notify(3)), without libsystemd: one
 * datagram per message to $NOTIFY_SOCKET. Harmless when not under systemd. */
#ifndef HUB_NOTIFY_H
#define HUB_NOTIFY_H

#include <stdint.h>

void		notify_init(void);
void		notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The watchdog interval systemd asked for, in seconds, or 0. */
double		notify_watchdog_s(void);

#endif
