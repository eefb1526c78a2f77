/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* manual.c: a guest started by hand (start = manual), to debug it: its
 * ticket waits on a socket of its own for the process a person starts,
 * which receives there what a spawned guest inherits. */
#ifndef MANUAL_H
#define MANUAL_H

#include "daemon/hub.h"

/* Listens for p's process (spawn.c, in place of the fork): guest_end is
 * its doorbell's end, taken on success; started runs once a process took
 * the ticket (p->pid, p->pidfd set). 0, or -errno with *what set. */
int		manual_listen(struct hub *h, struct peer *p, int guest_end,
			      host_peer_fn *started, const char **what);
/* The ticket socket's path of guest name, beside the control socket, in
 * path (n bytes): its length as snprintf's, n or more when cut short
 * (hubd -n checks it against a socket's address). */
int		manual_path(char *path, size_t n, const char *control, const char *name);
/* Its socket, ticket and doorbell end go (recovery; idempotent). */
void		manual_end(struct hub *h, struct peer *p);
/* The socket's path and the secret, NULL when p waits for nobody. */
const char	*manual_socket(const struct peer *p);
const char	*manual_secret(const struct peer *p);

#endif
