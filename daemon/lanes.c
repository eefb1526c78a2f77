/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct lanes between guests (proto/lane.h). hubd brokers and
 * supervises them and is not in their path: when a guest's call to
 * another's method comes through it, both announced HP_FEAT_LANES and
 * the policy allows ([guest] lanes, [hub] lanes_per_guest), it makes a
 * lane (a sealed memfd and a doorbell socketpair, and two pipes for
 * bells when both have them), hands each side its end over its doorbell
 * and tells the caller to call that method over it, and the callee's
 * methods that take a channel (hubd would relay a stream that passes it
 * all along, and a stream is often its method's first call); later
 * calls go straight from guest to guest; while a monitor watches a
 * method, its routes are taken back (monitor.c: lanes_withdraw) and it
 * is not routed, so that its calls pass hubd. A side that goes takes
 * its lanes with it at once (the other is told, and fails what was in
 * flight over them as a callee's death fails it through the hub); a
 * side that closes one (its peer hung up, or broke a rule) says so, and
 * a broken rule is recorded against the lane and keeps the pair on
 * calls through the hub until either restarts, and the two guests by
 * name for [hub] lane_ban whatever their instances (a rule broken by
 * every new instance would cost one stall each). Neither side can get
 * the other ended by what it says: a report closes a lane, nothing
 * more. Over 600 lines, one job: a lane's life, from the call that
 * opens it to the record it leaves; each part reads the same table. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/dispatch.h"
#include "daemon/host.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/tally.h"
#include "proto/doorbell.h"

/* How many methods one side is told to call over one lane at most: more
 * go through the hub. */
#define ROUTES_MAX	1024
/* Routed before their first call (the callee's methods that take a
 * channel) only while the side has fewer routes than this: a callee
 * that registers many cannot fill its caller's route table (libguest's
 * LG_ROUTES_MAX, for every lane) with methods it may never call. */
#define PREROUTES_MAX	8
/* A lane closed this soon, nothing served over it, without a broken
 * rule: the side could not take it, and is not offered it again. */
#define SETUP_NS	(2ull * 1000000000)
/* After a lane could not be made, hubd tries again for the pair no
 * sooner (and logs no more often). */
#define RETRY_NS	(10ull * 1000000000)

static int
side_in(const struct lane_ends *e, const struct peer *p)
{
	if (e->peer[0] == p->id && e->epoch[0] == p->epoch)
		return 0;
	if (e->peer[1] == p->id && e->epoch[1] == p->epoch)
		return 1;
	return -1;
}

static int
side_of(const struct lane *ln, const struct peer *p)
{
	return side_in(&ln->e, p);
}

static struct lane *
lane_by_id(struct hub *h, uint32_t id)
{
	struct lane *ln;

	for (ln = h->lanes; ln != NULL && ln->e.id != id; ln = ln->next)
		;
	return ln;
}

static struct lane *
lane_between(struct hub *h, const struct peer *p, const struct peer *q)
{
	for (struct lane *ln = h->lanes; ln != NULL; ln = ln->next)
		if (side_of(ln, p) >= 0 && side_of(ln, q) >= 0)
			return ln;
	return NULL;
}

/* One message about a lane to p, on its ring (after the descriptors, for
 * an OPEN). */
static void
tell(struct hub *h, struct peer *p, const struct hp_lane_msg *m)
{
	uint8_t buf[320];
	int64_t n = hp_lane_msg_encode(buf, sizeof(buf), m);

	if (n > 0)
		host_send(h, p, HP_MSG_LANE, 0, 0, buf, (uint32_t)n);
}

static void
tell_close(struct hub *h, struct peer *p, uint32_t id, const char *reason)
{
	struct hp_lane_msg m = { .op = HP_LANE_CLOSE, .lane = id };

	snprintf(m.reason, sizeof(m.reason), "%s", reason);
	tell(h, p, &m);
}

/* Adds a side's published figures to its guest's counters, as if the
 * traffic had gone through hubd: what it sent came in, what it served
 * went out. */
static void
figures_add(const struct lane *ln, uint32_t side, struct peer_stats *s)
{
	struct hp_lane_tally t;

	hp_lane_figures_read(&ln->map, side, &t);
	s->calls_in += t.calls_out;
	s->calls_out += t.calls_in;
	s->lane_calls_in += t.calls_out;
	s->lane_calls_out += t.calls_in;
	s->bytes_in += t.bytes_out;
	s->bytes_out += t.bytes_in;
	s->wakes += t.wakes;
}

/* Calls made over the lane, both ways, as its sides say. */
static uint64_t
calls_over(const struct lane *ln)
{
	struct hp_lane_tally a, b;

	hp_lane_figures_read(&ln->map, HP_LANE_SIDE_A, &a);
	hp_lane_figures_read(&ln->map, HP_LANE_SIDE_B, &b);
	return a.calls_out + b.calls_out;
}

/* Out of the list and freed, its figures kept in its guests' counters;
 * with late, remembered for one report still on its way (gone()). */
static void
lane_drop(struct hub *h, struct lane *ln, int late)
{
	for (struct lane **pp = &h->lanes; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == ln) {
			*pp = ln->next;
			break;
		}
	}
	for (int s = 0; s < 2; s++) {
		struct peer *p = hub_peer(h, ln->e.peer[s]);

		if (p != NULL) {
			figures_add(ln, (uint32_t)s, &p->stats);
			if (p->nlanes > 0)
				p->nlanes--;
		}
		free(ln->routes[s]);
	}
	if (late)
		h->lanes_gone[h->nlanes_gone++ % LANES_GONE] = ln->e;
	hp_segment_close(&ln->map.seg);
	free(ln);
}

/* The largest payload both may send and take through the hub (each its
 * fixed pool's, or its shared pool's largest class): a lane takes that
 * much, no more (a guest kept out of the pool stays on its limit). */
static uint32_t
max_payload(const struct peer *p, const struct peer *q)
{
	uint32_t a = p->ep.lim.max_payload_size, b = q->ep.lim.max_payload_size;

	return a < b ? a : b;
}

/* The lane's bells (HP_FEAT_BELLS), when both use bells with us: pipe s
 * is rung by side s and read by the other; each side also keeps a read
 * end of the pipe it rings, so that its peer gone raises no SIGPIPE (a
 * write then fills the pipe, and EAGAIN is a wake pending). Pipes, not
 * eventfds: a peer sharing an eventfd could make our writes block. 1
 * with the pipes, 0 without (their doorbell then). */
static int
lane_bells(const struct peer *p, const struct peer *q, int pipes[2][2])
{
	if (p->ep.bell_out < 0 || q->ep.bell_out < 0)
		return 0;
	if (pipe2(pipes[0], O_CLOEXEC | O_NONBLOCK) != 0)
		return 0;
	if (pipe2(pipes[1], O_CLOEXEC | O_NONBLOCK) != 0) {
		close(pipes[0][0]);
		close(pipes[0][1]);
		return 0;
	}
	return 1;
}

/* A new lane between p (side A) and q (side B), each handed its end; NULL
 * when it cannot be made (said in the log, calls go through the hub). */
static struct lane *
lane_open(struct hub *h, struct peer *p, struct peer *q)
{
	struct hp_params lp;
	struct lane *ln;
	struct peer *side[2] = { p, q };
	const char *why = "";
	char name[80];
	int bells[2], pipes[2][2], use_bells, sent[2] = { 0, 0 }, rc;

	if ((ln = calloc(1, sizeof(*ln))) == NULL)
		return NULL;
	/* ids start at 1; past 2^32 lanes opened they wrap, round a lane
	 * still open */
	do {
		ln->e.id = ++h->next_lane;
	} while (ln->e.id == 0 || lane_by_id(h, ln->e.id) != NULL);
	hp_lane_params(&h->conf.params, max_payload(p, q), h->conf.lane_slots, &lp);
	/* the id in the name: a guest checks that the memfd it takes is the
	 * one its OPEN is about (hp_lane_fd_is) */
	snprintf(name, sizeof(name), HP_LANE_MEMFD "%u:%s-%s", ln->e.id, p->conf->name,
		 q->conf->name);
	if ((rc = hp_lane_create(&ln->map, &lp, name, &why)) != 0) {
		log_warnx("lane %s-%s: %s: %s", p->conf->name, q->conf->name, why, strerror(-rc));
		free(ln);
		return NULL;
	}
	if ((rc = hp_doorbell_pair(bells)) != 0) {
		log_warnx("lane %s-%s: doorbell: %s", p->conf->name, q->conf->name, strerror(-rc));
		hp_segment_close(&ln->map.seg);
		free(ln);
		return NULL;
	}
	use_bells = lane_bells(p, q, pipes);
	for (int s = 0; s < 2; s++) {
		/* the memory, the doorbell; then its bell to sleep on, the
		 * one it rings, and that one's read end, kept */
		int fds[5] = { ln->map.seg.fd, bells[s] };

		if (use_bells) {
			fds[2] = pipes[1 - s][0];
			fds[3] = pipes[s][1];
			fds[4] = pipes[s][0];
		}
		ln->e.peer[s] = side[s]->id;
		ln->e.epoch[s] = side[s]->epoch;
		/* a doorbell so full that it takes no more: that side is not
		 * reading it, and gets no lane */
		sent[s] = hp_doorbell_send_fds(side[s]->bell, fds, use_bells ? 5 : 2) == 0;
	}
	close(bells[0]);
	close(bells[1]);
	for (int i = 0; use_bells && i < 4; i++)
		close(pipes[i / 2][i % 2]);
	/* the guests have the memory; ours stays mapped for the figures */
	close(ln->map.seg.fd);
	ln->map.seg.fd = -1;
	ln->opened_ns = hp_now_ns();
	for (int s = 0; s < 2; s++) {
		struct hp_lane_msg m = { .op = HP_LANE_OPEN, .lane = ln->e.id, .side = (uint32_t)s,
					 .calls_max = h->conf.calls_in_flight,
					 .bells = (uint32_t)use_bells };

		if (!sent[s])
			continue;
		/* every descriptor sent is taken by its OPEN, in order */
		snprintf(m.peer, sizeof(m.peer), "%s", side[1 - s]->conf->name);
		tell(h, side[s], &m);
		if (!sent[1 - s])
			tell_close(h, side[s], ln->e.id, "the lane could not be handed over");
	}
	if (!sent[0] || !sent[1]) {
		log_warnx("lane %s-%s: a doorbell is full: calls go through the hub",
			  p->conf->name, q->conf->name);
		hp_segment_close(&ln->map.seg);
		free(ln);
		return NULL;
	}
	p->nlanes++;
	q->nlanes++;
	ln->next = h->lanes;
	h->lanes = ln;
	log_info("lane %u: %s and %s call each other directly", ln->e.id, p->conf->name,
		 q->conf->name);
	return ln;
}

/* Whether the pair closed a lane over a broken rule, these instances. */
static int
refused(struct hub *h, const struct peer *p, const struct peer *q)
{
	uint32_t n = h->nlane_records < LANES_HISTORY ? h->nlane_records : LANES_HISTORY;

	for (uint32_t i = 0; i < n; i++) {
		const struct lane_record *r = &h->lane_records[i];

		for (int s = 0; s < 2; s++)
			if (r->e.peer[s] == p->id && r->e.epoch[s] == p->epoch &&
			    r->e.peer[1 - s] == q->id && r->e.epoch[1 - s] == q->epoch)
				return 1;
	}
	return 0;
}

static int
ban_is(const struct lane_ban *b, const char *x, const char *y)
{
	return (strcmp(b->name[0], x) == 0 && strcmp(b->name[1], y) == 0) ||
	    (strcmp(b->name[0], y) == 0 && strcmp(b->name[1], x) == 0);
}

/* Whether guests x and y (names) are kept off lanes now. */
static int
banned(struct hub *h, const char *x, const char *y)
{
	uint64_t now = hp_now_ns();

	for (uint32_t i = 0; i < LANES_BANNED; i++)
		if (h->lane_bans[i].until_ns > now && ban_is(&h->lane_bans[i], x, y))
			return 1;
	return 0;
}

/* x and y get no lane for lane_ban from now: the pair's entry, else a
 * free or lapsed one, else the one that lapses first. */
static void
ban(struct hub *h, const char *x, const char *y)
{
	uint64_t now = hp_now_ns();
	struct lane_ban *b = NULL;

	if (h->conf.lane_ban_ns == 0 || x[0] == '\0' || y[0] == '\0')
		return;
	for (uint32_t i = 0; i < LANES_BANNED && b == NULL; i++)
		if (ban_is(&h->lane_bans[i], x, y))
			b = &h->lane_bans[i];
	for (uint32_t i = 0; i < LANES_BANNED && b == NULL; i++)
		if (h->lane_bans[i].until_ns <= now)
			b = &h->lane_bans[i];
	if (b == NULL) {
		b = &h->lane_bans[0];
		for (uint32_t i = 1; i < LANES_BANNED; i++)
			if (h->lane_bans[i].until_ns < b->until_ns)
				b = &h->lane_bans[i];
	}
	snprintf(b->name[0], sizeof(b->name[0]), "%s", x);
	snprintf(b->name[1], sizeof(b->name[1]), "%s", y);
	b->until_ns = now + h->conf.lane_ban_ns;
}

/* p calls m over ln (p's side s) from now on: 1, else 0 (routed
 * already, or too many routes). */
static int
route(struct hub *h, struct lane *ln, int s, struct peer *p, const struct method *m)
{
	struct hp_lane_msg msg;
	uint64_t *r;

	for (uint32_t i = 0; i < ln->nroutes[s]; i++)
		if (ln->routes[s][i] == m->id)
			return 0;
	if (ln->nroutes[s] >= ROUTES_MAX ||
	    (r = realloc(ln->routes[s], (ln->nroutes[s] + 1) * sizeof(*r))) == NULL)
		return 0;
	ln->routes[s] = r;
	r[ln->nroutes[s]++] = m->id;
	msg = (struct hp_lane_msg){ .op = HP_LANE_ROUTE, .lane = ln->e.id, .method = m->id };
	snprintf(msg.sig, sizeof(msg.sig), "%s", m->signature);
	tell(h, p, &msg);
	return 1;
}

void
lanes_offer(struct hub *h, struct peer *p, struct peer *q, const struct method *m,
	    int (*watched)(struct hub *h, const char *method))
{
	struct lane *ln;
	int s;

	/* both announced lanes (their HP_MSG_LANE is allowed), each allows
	 * the other; a method a monitor watches goes through hubd */
	if (p == q || (watched != NULL && watched(h, m->name)) ||
	    !p->ep.lim.lane_msgs || !q->ep.lim.lane_msgs ||
	    !config_lanes_allow(p->conf, q->conf->name) ||
	    !config_lanes_allow(q->conf, p->conf->name))
		return;
	if ((ln = lane_between(h, p, q)) == NULL) {
		if (p->nlanes >= h->conf.lanes_per_guest || q->nlanes >= h->conf.lanes_per_guest ||
		    refused(h, p, q) || banned(h, p->conf->name, q->conf->name) ||
		    hp_now_ns() < h->lane_retry_ns)
			return;
		if ((ln = lane_open(h, p, q)) == NULL) {
			/* out of memory or descriptors, or a side not reading
			 * its doorbell: each call would try (and log) again */
			h->lane_retry_ns = hp_now_ns() + RETRY_NS;
			return;
		}
	}
	s = side_of(ln, p);
	if (!route(h, ln, s, p, m))
		return;
	/* and q's other methods that take a channel (above) */
	for (uint32_t i = 0; i < h->nmethods; i++) {
		const struct method *o = &h->methods[i];

		if (ln->nroutes[s] >= PREROUTES_MAX)
			break;
		if (o->owner == q->id && o->epoch == q->epoch && o != m && hp_sig_takes_chan(&o->sig) &&
		    (watched == NULL || !watched(h, o->name)))
			route(h, ln, s, p, o);
	}
}

void
lanes_method_added(struct hub *h, struct peer *q, const struct method *m,
		   int (*watched)(struct hub *h, const char *method))
{
	if (m == NULL || m->owner != q->id || !hp_sig_takes_chan(&m->sig) ||
	    (watched != NULL && watched(h, m->name)))
		return;
	for (struct lane *ln = h->lanes; ln != NULL; ln = ln->next) {
		int sq = side_of(ln, q), s = 1 - sq;
		struct peer *p;

		/* a caller of q's that has routes over the lane, as
		 * lanes_offer would have given it the method had it been
		 * there */
		if (sq < 0 || ln->nroutes[s] == 0 || ln->nroutes[s] >= PREROUTES_MAX ||
		    (p = hub_peer(h, ln->e.peer[s])) == NULL || side_of(ln, p) != s ||
		    !host_serving(p))
			continue;
		route(h, ln, s, p, m);
	}
}

void
lanes_withdraw(struct hub *h, int (*watched)(struct hub *h, const char *method))
{
	for (struct lane *ln = h->lanes; ln != NULL; ln = ln->next) {
		for (int s = 0; s < 2; s++) {
			struct peer *p = hub_peer(h, ln->e.peer[s]);
			uint32_t i, j;

			for (i = j = 0; i < ln->nroutes[s]; i++) {
				const struct method *m = methods_by_id(h, ln->routes[s][i]);
				struct hp_lane_msg un = { .op = HP_LANE_UNROUTE, .lane = ln->e.id,
							  .method = ln->routes[s][i] };

				if (m == NULL || !watched(h, m->name)) {
					ln->routes[s][j++] = ln->routes[s][i];
					continue;
				}
				/* the next call of it through hubd routes it again */
				if (p != NULL && p->epoch == ln->e.epoch[s] && host_serving(p))
					tell(h, p, &un);
			}
			ln->nroutes[s] = j;
		}
	}
}

int
lanes_between(struct hub *h, const struct peer *p, const struct peer *q)
{
	return lane_between(h, p, q) != NULL;
}

/* Kept against the pair: no lane again for these instances; a broken
 * rule (violation) is shown by hubctl lanes. A violation reported after
 * the other side's plain close (hubd may read the two reports either
 * way round) takes that close's place. */
static void
record(struct hub *h, const struct lane_ends *e, int reporter, const char *reason,
       int violation)
{
	uint32_t n = h->nlane_records < LANES_HISTORY ? h->nlane_records : LANES_HISTORY;
	struct lane_record *r = NULL;
	struct timespec ts;

	for (uint32_t i = 0; i < n && r == NULL; i++) {
		struct lane_record *o = &h->lane_records[(h->nlane_records - 1 - i) % LANES_HISTORY];

		if (o->e.id == e->id && !o->violation)
			r = o;
	}
	if (r == NULL)
		r = &h->lane_records[h->nlane_records++ % LANES_HISTORY];
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(r, 0, sizeof(*r));
	r->when_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	r->e = *e;
	r->reporter = (uint32_t)reporter;
	r->violation = violation;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	for (int s = 0; s < 2; s++) {
		struct peer *p = hub_peer(h, e->peer[s]);

		if (p != NULL && p->conf != NULL) {
			snprintf(r->name[s], sizeof(r->name[s]), "%s", p->conf->name);
			p->stats.lane_violations += violation != 0;
		}
	}
	if (violation)
		ban(h, r->name[0], r->name[1]);
}

/* A report about lane id from p after hubd dropped it: the side that saw
 * the other hang up may have been heard first. Its ends, or NULL (too
 * old, not p's, or reported on already: a guest gets one late word, not
 * a record per message). */
static struct lane_ends *
gone(struct hub *h, uint32_t id, const struct peer *p)
{
	uint32_t n = h->nlanes_gone < LANES_GONE ? h->nlanes_gone : LANES_GONE;

	for (uint32_t i = 0; i < n; i++) {
		struct lane_ends *e = &h->lanes_gone[(h->nlanes_gone - 1 - i) % LANES_GONE];

		if (e->id == id)
			return side_in(e, p) >= 0 ? e : NULL;
	}
	return NULL;
}

/* Whether the instance q was has gone (its end of the doorbell closed,
 * though hubd has not taken in its death yet, or a new one runs): a lane
 * its peer closed then was closed for that, not because the peer could
 * not take it or lied. */
static int
peer_hung_up(const struct peer *q, uint32_t epoch)
{
	return q == NULL || q->epoch != epoch || hp_sock_hung_up(q->bell);
}

/* HP_MSG_LANE from guest p: it closed a lane (CLOSED); nothing else comes
 * this way. */
static void
on_report(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	struct hp_lane_msg r;
	struct lane_ends *e;
	struct lane *ln;
	struct peer *q;
	char why[HP_LANE_REASON_MAX + 1];
	int s;

	if (hp_lane_msg_decode(m->payload, m->len, &r) != 0 || r.op != HP_LANE_CLOSED) {
		host_fault(h, p, DEATH_VIOLATION, "lane.report");
		return;
	}
	ln = lane_by_id(h, r.lane);
	if (ln == NULL || side_of(ln, p) < 0) {
		/* closed already: by the other side's report, or a death */
		if (r.violation && (e = gone(h, r.lane, p)) != NULL) {
			log_warnx("lane %u: guest %s closed it: %s", r.lane, p->conf->name, r.reason);
			record(h, e, side_in(e, p), r.reason, 1);
			e->id = 0;	/* ids start at 1: found no more */
		}
		return;
	}
	s = side_of(ln, p);
	q = hub_peer(h, ln->e.peer[1 - s]);
	if (r.violation) {
		log_warnx("lane %u: guest %s closed it: %s", ln->e.id, p->conf->name, r.reason);
		record(h, &ln->e, s, r.reason, 1);
	} else if (!peer_hung_up(q, ln->e.epoch[1 - s])) {
		/* it could not take the lane (its memory limit, say), or says
		 * a peer that is up hung up: not offered again to these two
		 * (a lane made anew after each such word would cost both
		 * sides and us a lane, and a line, per call) */
		if (hp_now_ns() - ln->opened_ns < SETUP_NS && calls_over(ln) == 0)
			log_warnx("lane %u: guest %s could not take it: %s", ln->e.id,
				  p->conf->name, r.reason);
		else
			log_warnx("lane %u: guest %s closed it while its peer is up: %s",
				  ln->e.id, p->conf->name, r.reason);
		record(h, &ln->e, s, r.reason, 0);
	}
	if (q != NULL && q->conf != NULL && q->epoch == ln->e.epoch[1 - s]) {
		snprintf(why, sizeof(why), "guest %s closed the lane", p->conf->name);
		tell_close(h, q, ln->e.id, why);
	}
	/* closed for a broken rule: recorded, no second word from either */
	lane_drop(h, ln, !r.violation);
}

/* A guest gone: its lanes close at once, the other sides told. */
static void
on_detach(struct hub *h, struct peer *p)
{
	char why[320];
	struct lane *ln, *next;

	tally_gone(h, p, NULL, why, sizeof(why));
	for (ln = h->lanes; ln != NULL; ln = next) {
		int s = side_of(ln, p);
		struct peer *q;

		next = ln->next;
		if (s < 0)
			continue;
		q = hub_peer(h, ln->e.peer[1 - s]);
		if (q != NULL && q->conf != NULL && q->epoch == ln->e.epoch[1 - s])
			tell_close(h, q, ln->e.id, why);
		lane_drop(h, ln, 1);	/* the survivor's report may be on its way */
	}
}

int
lanes_init(struct hub *h)
{
	dispatch_on(h, HP_MSG_LANE, on_report);
	host_on_detach(h, on_detach);
	h->lane_records = calloc(LANES_HISTORY, sizeof(*h->lane_records));
	h->lanes_gone = calloc(LANES_GONE, sizeof(*h->lanes_gone));
	h->lane_bans = calloc(LANES_BANNED, sizeof(*h->lane_bans));
	return h->lane_records != NULL && h->lanes_gone != NULL && h->lane_bans != NULL ?
	    0 : -ENOMEM;
}

void
lanes_stats(struct hub *h, const struct peer *p, struct peer_stats *s)
{
	for (struct lane *ln = h->lanes; ln != NULL; ln = ln->next) {
		int side = side_of(ln, p);

		if (side >= 0)
			figures_add(ln, (uint32_t)side, s);
	}
}

static void
add_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

json_object *
lanes_json(struct hub *h)
{
	json_object *open = json_object_new_array(), *recs = json_object_new_array();
	json_object *bans = json_object_new_array();
	json_object *o = json_object_new_object();
	uint32_t n = h->nlane_records < LANES_HISTORY ? h->nlane_records : LANES_HISTORY;
	uint64_t now = hp_now_ns();

	for (struct lane *ln = h->lanes; ln != NULL; ln = ln->next) {
		json_object *l = json_object_new_object();

		add_u64(l, "id", ln->e.id);
		add_u64(l, "age_ms", (now - ln->opened_ns) / 1000000u);
		for (int s = 0; s < 2; s++) {
			struct peer *p = hub_peer(h, ln->e.peer[s]);
			json_object *side = json_object_new_object();
			struct hp_lane_tally t;

			hp_lane_figures_read(&ln->map, (uint32_t)s, &t);
			json_object_object_add(side, "guest", json_object_new_string(
				p != NULL && p->conf != NULL ? p->conf->name : "?"));
			add_u64(side, "calls_out", t.calls_out);
			add_u64(side, "calls_in", t.calls_in);
			add_u64(side, "bytes_out", t.bytes_out);
			add_u64(side, "bytes_in", t.bytes_in);
			add_u64(side, "wakes", t.wakes);
			add_u64(side, "sleeps", t.sleeps);
			add_u64(side, "methods", ln->nroutes[s]);
			json_object_object_add(l, s == 0 ? "a" : "b", side);
		}
		json_object_array_add(open, l);
	}
	/* newest first */
	for (uint32_t i = 0; i < n; i++) {
		const struct lane_record *r =
		    &h->lane_records[(h->nlane_records - 1 - i) % LANES_HISTORY];
		json_object *j;

		if (!r->violation)
			continue;
		j = json_object_new_object();
		add_u64(j, "when_ns", r->when_ns);
		json_object_object_add(j, "a", json_object_new_string(r->name[0]));
		json_object_object_add(j, "b", json_object_new_string(r->name[1]));
		json_object_object_add(j, "reported_by", json_object_new_string(r->name[r->reporter]));
		json_object_object_add(j, "reason", json_object_new_string(r->reason));
		json_object_array_add(recs, j);
	}
	for (uint32_t i = 0; i < LANES_BANNED; i++) {
		const struct lane_ban *b = &h->lane_bans[i];
		json_object *j;

		if (b->until_ns <= now)
			continue;
		j = json_object_new_object();
		json_object_object_add(j, "a", json_object_new_string(b->name[0]));
		json_object_object_add(j, "b", json_object_new_string(b->name[1]));
		add_u64(j, "left_ms", (b->until_ns - now + 999999) / 1000000u);
		json_object_array_add(bans, j);
	}
	json_object_object_add(o, "lanes", open);
	json_object_object_add(o, "violations", recs);
	json_object_object_add(o, "banned", bans);
	return o;
}

void
lanes_free(struct hub *h)
{
	while (h->lanes != NULL)
		lane_drop(h, h->lanes, 0);
	free(h->lane_records);
	free(h->lanes_gone);
	free(h->lane_bans);
	h->lane_records = NULL;
	h->lanes_gone = NULL;
	h->lane_bans = NULL;
}
