/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* GUEST.stats, the method a NATS bridge serves its figures by (nats/tally.c):
 * its signature, by which hubctl (remotes, calls) tells a bridge's from
 * another guest's method of that name. Plain C: hubctl includes it
 * without libnats. */
#ifndef NATS_TALLY_H
#define NATS_TALLY_H

/* (this hub on NATS, remotes, imports, calls in from NATS, calls out);
 * remote: (hub, state "up" "late" "gone", calls, errors, mean ns, p99 ns,
 * in flight (known with [import] from only), ms since heard of);
 * import: (method here, subject, hubs serving it, calls, errors, mean ns,
 * p99 ns, in flight); call in: (the bridge's call id, as hubd's
 * caller_id, method, calling hub, age in ms); call out: (method here, age
 * in ms). */
#define BR_STATS_SIG	"->(str,list<(str,str,u64,u64,u64,u64,opt<u64>,u64)>," \
			"list<(str,str,u64,u64,u64,u64,u64,u64)>,list<(u64,str,str,u64)>," \
			"list<(str,u64)>)"
#define BR_STATS_METHOD	"stats"		/* GUEST.stats */

#endif
