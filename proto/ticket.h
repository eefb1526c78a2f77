/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The spawn ticket a guest is started with (r[shm.spawn.ticket]). */
#ifndef HP_TICKET_H
#define HP_TICKET_H

#include <stdint.h>

/* Parses the spawn ticket (r[shm.spawn.args]) from argv: --hub-path=P,
 * --peer-id=N (1..255), --doorbell-fd=F (an open fd), and ours,
 * --hub-pool=P (optional: the shared pool's file). Other arguments are
 * left for the plugin. -EINVAL with *why when one is missing or bad. */
struct hp_ticket {
	const char	*hub_path;
	const char	*pool_path;	/* NULL: no shared pool */
	uint32_t	peer_id;
	int		doorbell_fd;
};
int hp_ticket_parse(int argc, char *const argv[], struct hp_ticket *t, const char **why);

#endif
