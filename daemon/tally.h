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
/* How d ended, for people: "exited with status 1", "killed by signal 11
 * (SIGSEGV)", "hung: heartbeat stale (...) (SIGKILL)"; in buf. */
const char	*tally_cause(const struct death *d, char *buf, size_t len);
/* p's newest death, NULL if none. */
const struct death *tally_last(const struct peer *p);
/* Why p's calls and lanes end, for those at their other end: "guest kv
 * died serving kv.get: killed by signal 11 (SIGSEGV)" (method NULL: no
 * "serving"), or the hub stopping. In buf, cut to len. */
const char	*tally_gone(const struct hub *h, const struct peer *p, const char *method,
			    char *buf, size_t len);
/* A signal's name, "SIGKILL" ("signal N" for one without), in buf. */
const char	*tally_signal_name(int sig, char *buf, size_t len);

#endif
