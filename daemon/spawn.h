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
/* At start: hubd's limit of open files raised to its hard limit, since
 * each guest holds several (a shell's and systemd's soft limit of 1024
 * ran out at 144 guests); a warning if max_guests still needs more. The
 * guests get the soft limit hubd was started with back (unless
 * limit_files), for a guest on select() takes no fd past FD_SETSIZE. */
void		spawn_raise_fd_limit(uint32_t max_guests);
/* Why path cannot be exec'd, as far as hubd can tell, in buf ("not a
 * regular file", "its #! interpreter /usr/bin/pyhton3: No such file or
 * directory", ...); NULL when it sees nothing wrong. */
const char	*spawn_exec_problem(const char *path, char *buf, size_t len);

#endif
