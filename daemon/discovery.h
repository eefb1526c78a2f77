/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Discovery (discovery.c, doc/events.md): hubd tells who comes and goes
 * on its own topics, hub.guests and hub.methods (topics.c carries them,
 * and tells hub.topics itself), so that no guest polls for a guest or a
 * method. */
#ifndef DISCOVERY_H
#define DISCOVERY_H

#include "daemon/hub.h"

/* Registers the supervisor's state hook and the detach hook. */
void	discovery_init(struct hub *h);
/* A method was registered (hub.register). */
void	discovery_method(struct hub *h, const struct method *m);

#endif
