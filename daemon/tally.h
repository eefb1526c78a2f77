/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* tally.c: the death tally, each death recorded and told in the log. */
#ifndef TALLY_H
#define TALLY_H

#include <stddef.h>

#include "daemon/hub.h"

/* p's death, with p->kill_detail and the calls it was serving, as its
 * tally's newest (it keeps TALLY_MAX). */
struct death	*tally_record(struct hub *h, struct peer *p, int reason, int status,
		    int sig);
/* Its death d in the log: how it ended, why, what it was serving. */
void		tally_log(const struct peer *p, const struct death *d);
/* A signal's name, "SIGKILL" ("signal N" for one without), in buf. */
const char	*tally_signal_name(int sig, char *buf, size_t len);

#endif
