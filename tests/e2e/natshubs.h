/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Hubs joined by hub-nats, for the nats suites: each hub's bridge config
 * written to the run directory, calls by hubctl, what hubctl methods and
 * peers show. */
#ifndef HUB_NATSHUBS_H
#define HUB_NATSHUBS_H

#include <sys/types.h>

#include "tests/e2e/harness.h"

/* A guest section for tests/guests/lanebreaker with methods NAME.* */
#define LB(name) "[guest " name "]\nexec = @/tests/guests/lanebreaker\nargs = --prefix " name "\n"

/* The bridge's section for hub NAME, its config written to the run
 * directory: [nats] servers, name and key, then what extra holds, then
 * a [trust] of every hub the nats suites start (a, b, b1, b2, c, d).
 * The bridge runs as nobody, its key file nobody's, mode 0600. */
char *	nh_bridge(const char *name, const char *servers, const char *provides, const char *extra);

/* Hub NAME's key file in the run directory (static). */
const char *	nh_key_path(const char *name);
/* Its public key (static), the key made first if there is none. */
const char *	nh_pubkey(const char *name);

/* hub B: kv, and a bridge exporting kv.* and the sleeper's methods. */
void	nh_start_b(struct hub_proc *h, const char *name, const char *servers);

/* hub A: a caller guest, and a bridge importing kv.* and sl.*. */
void	nh_start_a(struct hub_proc *h, const char *servers, const char *extra);

/* hubctl call on h: status and first line (malloc'd). */
int	nh_ctl(struct hub_proc *h, char **line, const char *method, const char *a1, const char *a2);

/* hubctl call on h answers want. */
void	nh_expect_ok(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2);

/* hubctl call fails on h, its error output containing want. */
void	nh_expect_err(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2);

/* Polls hubctl call on h until it answers want (the network settling),
 * then asserts it did. */
void	nh_wait_ok(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2);

/* cl.load METHOD N on hub A, in a child (a hub can be killed meanwhile):
 * its pid; the answer comes on *rfd. */
pid_t	nh_load_in_child(struct hub_proc *h, const char *method, const char *n, int *rfd);

/* What the child of nh_load_in_child answered, once it ended (static). */
char *	nh_child_answer(pid_t pid, int rfd);

/* The count after key= in a cl.load answer, 0 if absent. */
unsigned	nh_load_count(const char *answer, const char *key);

/* Every one of n calls ended: answered, or an error; none lost. */
void	nh_all_ended(const char *answer, unsigned n);

/* The "where" hubctl methods shows for method on h, "" if none
 * (static). */
const char *	nh_where(struct hub_proc *h, const char *method);

/* The note hubctl peers shows for guest name on h, "" if none (static). */
const char *	nh_note_of(struct hub_proc *h, const char *name);

/* Waits until method's "where" on h is want. */
void	nh_wait_where(struct hub_proc *h, const char *method, const char *want);

#endif
