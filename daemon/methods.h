/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* methods.c: the method registry */
#ifndef METHODS_H
#define METHODS_H

#include <stddef.h>
#include <stdint.h>
#include "daemon/hub.h"

void		methods_init(struct hub *h);
void		methods_free(struct hub *h);
/* Registers name for owner's instance epoch (owner 0: the host, service
 * its row in services.c); -errno with *why: -EPERM a guest's name that is
 * not one of its own (config_guest_covers), -EEXIST taken, ... */
int		methods_add(struct hub *h, const char *name, const char *signature,
			    uint32_t owner, uint32_t epoch, uint16_t service,
			    const char **why);
struct method	*methods_by_id(struct hub *h, uint64_t id);
const struct method *methods_find(struct hub *h, const char *name);
/* Whether m can be called now: its owner is the instance that registered
 * it, up and served. */
int		methods_live(struct hub *h, const struct method *m);
/* Why a method that is not live cannot be called now, written into buf. */
const char	*methods_unavailable(struct hub *h, const struct method *m,
				     char *buf, size_t len);
/* p's instance went (a detach hook): what it said of itself and its
 * methods (hub.describe) described live state, so it goes too. */
void		methods_detach(struct hub *h, struct peer *p);
/* hub.unregister: name, registered by p's instance, goes; 0, or -ENOENT
 * (nobody's) or -EPERM (not this instance's), nothing changed. */
int		methods_remove(struct hub *h, struct peer *p, const char *name);
/* p is down for good (removed from the config): its methods go. */
void		methods_forget(struct hub *h, struct peer *p);

#endif
