/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The death tally hubctl peers shows (s6-supervise's): each guest's last
 * TALLY_MAX deaths, when, how (exit status, signal), why and what it was
 * serving; and each death told in the log as it is recorded. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/tally.h"

/* The calls routed to p and not answered yet, by method, into d: what
 * it was serving when it died. */
static void
record_serving(struct hub *h, struct peer *p, struct death *d)
{
	struct pending *e;
	uint32_t pos = 0, k;

	d->in_flight = d->nserving = 0;
	while ((e = hp_idtab_next(&p->pend, &pos)) != NULL) {
		const struct method *m = methods_by_id(h, e->method_id);
		const char *name = m != NULL ? m->name : "?";

		d->in_flight++;
		for (k = 0; k < d->nserving; k++)
			if (strcmp(d->serving[k].method, name) == 0)
				break;
		if (k == d->nserving) {
			if (k == DEATH_SERVING_MAX)
				continue;	/* counted in in_flight alone */
			snprintf(d->serving[k].method, sizeof(d->serving[k].method), "%s", name);
			d->serving[k].calls = 0;
			d->nserving++;
		}
		d->serving[k].calls++;
	}
}

/* The tally hubctl peers shows: the last TALLY_MAX deaths, wall clock,
 * with the calls it was serving (before recovery fails them). */
struct death *
tally_record(struct hub *h, struct peer *p, int reason, int status, int sig)
{
	struct death *d = &p->tally[p->ndeaths % TALLY_MAX];

	d->when_ns = hp_clock_ns(CLOCK_REALTIME);
	d->reason = reason;
	d->status = status;
	d->sig = sig;
	snprintf(d->detail, sizeof(d->detail), "%s", p->kill_detail);
	record_serving(h, p, d);
	p->ndeaths++;
	return d;
}

/* "SIGKILL", "signal 77" for one without a name. */
const char *
tally_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev != NULL)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* ", while serving kv.get (1 call), kv.put (2 calls)", or "". */
static const char *
serving_text(const struct death *d, char *buf, size_t len)
{
	size_t n = 0;
	uint32_t named = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < d->nserving && n < len; k++) {
		named += d->serving[k].calls;
		n += (size_t)snprintf(buf + n, len - n, "%s%s (%u call%s)",
				      k == 0 ? ", while serving " : ", ", d->serving[k].method,
				      d->serving[k].calls, d->serving[k].calls == 1 ? "" : "s");
	}
	if (d->in_flight > named && n < len)
		snprintf(buf + n, len - n, " and %u more", d->in_flight - named);
	return buf;
}

const char *
tally_cause(const struct death *d, char *buf, size_t len)
{
	char sig[32];

	if (d->reason == DEATH_EXITED && d->status < 0)	/* started by hand */
		snprintf(buf, len, "exited");
	else if (d->reason == DEATH_EXITED)
		snprintf(buf, len, "exited with status %d", d->status);
	else if (d->reason == DEATH_STOPPED)
		snprintf(buf, len, "stopped by the SIGTERM that asked it to");
	else if (d->reason == DEATH_CRASHED)
		snprintf(buf, len, "killed by signal %d (%s)%s%s", d->status,
			 tally_signal_name(d->status, sig, sizeof(sig)),
			 d->detail[0] ? ", " : "", d->detail);
	else if (d->sig != 0)
		snprintf(buf, len, "%s: %s (%s)", lifecycle_death_name(d->reason), d->detail,
			 tally_signal_name(d->sig, sig, sizeof(sig)));
	else
		snprintf(buf, len, "%s: %s", lifecycle_death_name(d->reason), d->detail);
	return buf;
}

const struct death *
tally_last(const struct peer *p)
{
	return p->ndeaths > 0 ? &p->tally[(p->ndeaths - 1) % TALLY_MAX] : NULL;
}

const char *
tally_gone(const struct hub *h, const struct peer *p, const char *method, char *buf,
	   size_t len)
{
	const struct death *d = tally_last(p);
	char cause[DEATH_DETAIL_MAX + 64];

	/* stopped with the hub: not a death of the guest's own */
	if (h->stopping)
		snprintf(buf, len, "the hub is stopping (guest %s stopped with it)",
			 p->conf->name);
	else
		snprintf(buf, len, "guest %s died%s%s%s%s", p->conf->name,
			 method != NULL ? " serving " : "", method != NULL ? method : "",
			 d != NULL ? ": " : "",
			 d != NULL ? tally_cause(d, cause, sizeof(cause)) : "");
	return buf;
}

/* Its death in the log, with what it was serving. */
void
tally_log(const struct peer *p, const struct death *d)
{
	const char *name = p->conf->name;
	char serving[320], cause[DEATH_DETAIL_MAX + 64];

	serving_text(d, serving, sizeof(serving));
	tally_cause(d, cause, sizeof(cause));
	if (d->reason == DEATH_EXITED || d->reason == DEATH_STOPPED)
		log_info("guest %s: %s%s", name, cause, serving);
	else
		log_warnx("guest %s: %s%s", name, cause, serving);
	if (p->life.short_ring)
		log_warnx("guest %s: out of memory: deaths may be undercounted", name);
}
