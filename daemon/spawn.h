/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* spawn.c: forks and execs p's guest with its ticket. 0 with p->pid,
 * p->pidfd and p->bell set; or -errno with why in p->kill_detail, nothing
 * left behind and its entry Empty again. */
#ifndef SPAWN_H
#define SPAWN_H

#include "daemon/hub.h"

int		spawn_guest(struct hub *h, struct peer *p);

#endif
