/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* monitor.c: the calls that pass through hubd shown to the control
 * clients that watch them (hubctl monitor), a line per call as it ends;
 * the methods they watch are kept off lanes meanwhile. */
#ifndef MONITOR_H
#define MONITOR_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/hub.h"

struct client;

/* Registers the detach hook and the table of calls watched; -ENOMEM. */
int	monitor_init(struct hub *h);
void	monitor_free(struct hub *h);

/* Whether a monitor's glob matches the method named (monitor_watches:
 * none attached is a test of one pointer). */
int	monitor_matches(struct hub *h, const char *method);
static inline int
monitor_watches(struct hub *h, const char *method)
{
	return h->monitors != NULL && monitor_matches(h, method);
}

/* A call of meth begins on behalf of *o (through hubd): when a monitor
 * watches meth, o->watch is set to its entry, which the answer ends
 * (answer.c: monitor_end). caller: the calling guest, NULL for a control
 * client; callee: the guest that serves meth, NULL for hubd's own; args
 * and len its arguments' postcard, NULL when they do not match meth's
 * signature. Only with h->monitors set. */
void	monitor_begin(struct hub *h, struct origin *o, const struct peer *caller,
		      const struct peer *callee, const struct method *meth,
		      const uint8_t *args, size_t len);
/* The call of entry watch ends with this Response payload: its line to
 * each monitor that watches its method (answer.c's hooks.answered). */
void	monitor_end(struct hub *h, uint64_t watch, const uint8_t *payload, size_t len);

/* The monitor command (cmd.h's cmd_monitor) and its client going
 * (control_ops.monitor_gone). */
void	monitor_gone(struct client *c);

#endif
