/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* spawn.c: forks and execs p's guest with its ticket. 0 with p->pid,
 * p->pidfd and p->bell set; or -errno with why in p->kill_detail, nothing
 * left behind and its entry Empty again. A start = manual guest is not
 * forked: 0 with p->pid 0, and started_by_hand runs once a person's
 * process took its ticket (manual.c). */
#ifndef SPAWN_H
#define SPAWN_H

#include "daemon/hub.h"

int		spawn_guest(struct hub *h, struct peer *p, host_peer_fn *started_by_hand);

#endif
