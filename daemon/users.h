/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* users.c: whom each guest runs as. A guest without user = gets a uid of
 * its own from [hub] guest_uids (after systemd's DynamicUser), unique on
 * the machine, the same for its name across restarts; where it cannot
 * have one, hubd's user, said once. */
#ifndef USERS_H
#define USERS_H

#include "daemon/hub.h"

/* Numbers each guest of c that gets a uid of its own (own_uid), as root
 * only: a number unique on the machine, whose lock (byte NUMBER of
 * HUB_UID_LOCK, /run/hub/uids.lock) h holds from now on for every hubd to
 * see. A hash of its name is where
 * the search starts, which goes past any number another guest of c or a
 * guest running in h holds, the users and groups the system has, a
 * number another hubd holds the lock of, and one a process runs as. A
 * guest running in h under the same name keeps its number. */
void	users_number(struct hub *h, struct hub_conf *c);

/* Lets go of the locks of numbers no guest of h holds any more (its
 * entry freed, its settings replaced, a reload that dropped it);
 * users_release_all of all of them, as hubd exits (closing the file). */
void	users_release(struct hub *h);
void	users_release_all(struct hub *h);

/* Decides whom g runs as (runs, run_uid, run_gid, run_user, run_why) as
 * hubd takes its settings (start, reload; never at a restart): its own
 * uid unless hubd is not root or the uid cannot reach its executable (a
 * probe finds out), in which case hubd's user, logged. */
void	users_take(struct config_guest *g);

#endif
