/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* users.c: whom each guest runs as. A guest without user = gets a uid of
 * its own from [hub] guest_uids (after systemd's DynamicUser), the same
 * for its name across restarts; where it cannot have one, hubd's user,
 * said once. */
#ifndef USERS_H
#define USERS_H

#include "daemon/hub.h"

/* Numbers each guest of c that gets a uid of its own (own_uid): a hash of
 * its name into the range, probed past any number another guest of c or
 * a guest running in h holds, and past the users and groups the system
 * has. A guest running in h under the same name keeps its number. */
void	users_number(struct hub *h, struct hub_conf *c);

/* Decides whom g runs as (runs, run_uid, run_gid, run_user, run_why) as
 * hubd takes its settings (start, reload; never at a restart): its own
 * uid unless hubd is not root or the uid cannot reach its executable (a
 * probe finds out), in which case hubd's user, logged. */
void	users_take(struct config_guest *g);

#endif
