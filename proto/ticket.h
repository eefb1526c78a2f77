/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The spawn ticket a guest is started with (r[shm.spawn.ticket]). */
#ifndef HP_TICKET_H
#define HP_TICKET_H

#include <stdint.h>

/* A guest started by hand (start = manual) has instead, ours,
 * --hub-ticket=PATH:SECRET: it connects to hubd's socket at PATH, writes
 * the SECRET (HP_TICKET_SECRET_LEN hex digits, 128 random bits), and
 * hubd answers with HP_TICKET_REPLY and, by SCM_RIGHTS, the fds a spawned
 * guest inherits: its doorbell's end, its domain, and its zone's pool if
 * it has one. Hubd closes the connection instead on anything else. */
#define HP_TICKET_SECRET_LEN	32
#define HP_TICKET_REPLY		"peer-id=%u\n"
#define HP_TICKET_FDS		3

/* Parses the spawn ticket (r[shm.spawn.args]) from argv: --hub-path=P,
 * --peer-id=N (1..255), --doorbell-fd=F (an open fd), and ours,
 * --hub-pool=P (optional: the shared pool's file), --hub-bells=R,W
 * (optional: hp_bells_make's guest ends); or --hub-ticket alone.
 * Other arguments are left for the plugin. -EINVAL with *why when one is
 * missing or bad. */
struct hp_ticket {
	const char	*hub_path;
	const char	*pool_path;	/* NULL: no shared pool */
	uint32_t	peer_id;
	int		doorbell_fd;
	int		bells[2];	/* --hub-bells=R,W (HP_FEAT_BELLS): read,
					 * rung; -1: none */
	const char	*hand;		/* --hub-ticket's PATH:SECRET, NULL: none */
	/* hp_ticket_fetch's: the fds received and their paths */
	int		fds[HP_TICKET_FDS];
	char		paths[2][32];
};
int hp_ticket_parse(int argc, char *const argv[], struct hp_ticket *t, const char **why);

/* For t->hand: fetches the ticket from hubd and fills t in as if it had
 * been spawned. -errno with *why (the fds received closed again). */
int hp_ticket_fetch(struct hp_ticket *t, const char **why);
/* Closes the fds hp_ticket_fetch received (an attach that failed). */
void hp_ticket_close(struct hp_ticket *t);

#endif
