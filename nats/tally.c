/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What hubctl shows of the bridge's traffic: per remote hub and per
 * imported method, the calls out answered through NATS, their errors and
 * latency (a histogram, for the mean and the 99th percentile), and the
 * calls in flight each way, served as the method GUEST.stats (GUEST the
 * bridge's [guest] name, "nats"): hubctl remotes prints it, hubctl calls
 * merges it into hubd's calls. Figures are kept by name, bounded: a
 * remote hub is counted only once it announced itself. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"
#include "nats/tally.h"

#define REMOTES_EVER	1024			/* hubs ever counted */
#define IMPORTS_EVER	(2 * BR_METHODS_MAX)	/* imported names ever counted */
#define BUCKETS		129	/* a quarter of a power of two each, from 1 us to 2^42 ns */
#define LIST_MAX	4096	/* entries of one list in GUEST.stats */
#define ANSWER_MAX	(16u << 20)

struct hist {
	uint64_t	calls, errors, sum_ns;
	uint64_t	last_ns;		/* its last answer, or announcement */
	uint32_t	bucket[BUCKETS];
};

struct br_tally {
	struct br_names	rnames, inames;
	struct hist	*r, *i;		/* by the names' index */
	uint32_t	nr, ni;		/* room in r, i */
	char		method[BR_NAME_MAX + 8];	/* GUEST.stats, "" none */
};

/* The figures of name in names, h and its room *n grown to fit; NULL if
 * none (full). */
static struct hist *
hist_of(struct br_names *names, struct hist **h, uint32_t *n, const char *name)
{
	uint32_t k = br_names_find(names, name, 1), cap;
	struct hist *grown;

	if (k == UINT32_MAX)
		return NULL;
	if (k >= *n) {
		cap = *n < 16 ? 16 : 2 * *n;
		if ((grown = realloc(*h, (size_t)cap * sizeof(*grown))) == NULL)
			return NULL;
		memset(grown + *n, 0, (size_t)(cap - *n) * sizeof(*grown));
		*h = grown;
		*n = cap;
	}
	return &(*h)[k];
}

static unsigned
bucket_of(uint64_t ns)
{
	unsigned l;

	if (ns < 1024)
		return 0;
	l = 63u - (unsigned)__builtin_clzll(ns);
	/* bucket 1 + 4 (l - 10) + the two bits after the top one */
	return l >= 42 ? BUCKETS - 1 : 1 + 4 * (l - 10) + (unsigned)((ns >> (l - 2)) & 3);
}

/* The largest time bucket k holds. */
static uint64_t
bucket_top(unsigned k)
{
	unsigned l = (k - 1) / 4 + 10;

	return k == 0 ? 1024 : ((uint64_t)(4 + (k - 1) % 4 + 1) << (l - 2)) - 1;
}

static void
hist_add(struct hist *h, int error, uint64_t ns, uint64_t now)
{
	h->calls++;
	h->errors += error != 0;
	h->sum_ns += ns;
	h->last_ns = now;
	h->bucket[bucket_of(ns)]++;
}

static uint64_t
p99(const struct hist *h)
{
	uint64_t want = (h->calls * 99 + 99) / 100, seen = 0;

	for (unsigned k = 0; k < BUCKETS && h->calls > 0; k++)
		if ((seen += h->bucket[k]) >= want)
			return bucket_top(k);
	return 0;
}

static const struct br_remote *
remote_of(const struct bridge *b, const char *name)
{
	for (uint32_t i = 0; i < b->nremotes; i++)
		if (strcmp(b->remotes[i].name, name) == 0)
			return &b->remotes[i];
	return NULL;
}

/* One call out ended: error or not, answered by hub (NULL: none, or one
 * not heard of). */
static void
ended(struct bridge *b, const struct icall *c, const char *hub, int error)
{
	struct br_tally *t = b->tally;
	uint64_t now = br_now_ns(), ns = now > c->sent_ns ? now - c->sent_ns : 0;
	struct hist *h;

	if (t == NULL)
		return;
	if ((h = hist_of(&t->inames, &t->i, &t->ni, c->imp->local)) != NULL)
		hist_add(h, error, ns, now);
	/* a remote's figures only once it announced itself: Hub-From is
	 * anyone's word, and names it never said cost nothing */
	if (hub != NULL && (br_names_find(&t->rnames, hub, 0) != UINT32_MAX ||
			    remote_of(b, hub) != NULL) &&
	    (h = hist_of(&t->rnames, &t->r, &t->nr, hub)) != NULL)
		hist_add(h, error, ns, now);
}

void
br_tally_answer(struct bridge *b, const struct icall *c, natsMsg *m)
{
	const char *word = NULL, *from = NULL;

	if (natsMsg_IsNoResponders(m)) {
		ended(b, c, NULL, 1);
		return;
	}
	natsMsgHeader_Get(m, BR_H_STATUS, &word);
	natsMsgHeader_Get(m, BR_H_FROM, &from);
	if (from != NULL && !br_subject_part_ok(from, strlen(from), 0))
		from = NULL;
	ended(b, c, from, br_status_of(word) != 0);
}

void
br_tally_timeout(struct bridge *b, const struct icall *c)
{
	/* with [import] from, the one hub it was sent to */
	ended(b, c, b->conf.from[0] != '\0' ? b->conf.from : NULL, 1);
}

/* Whether remote r announced method name. */
static int
serves(const struct br_remote *r, const char *name)
{
	for (uint32_t i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], name) == 0)
			return 1;
	return 0;
}

/* each encoder returns what it wrote, or -ENOSPC */
#define PUT(call)	do { if ((call) < 0) return -1; } while (0)

static int
put_hist(uint8_t *buf, size_t cap, size_t *pos, const struct hist *h)
{
	PUT(guest_pc_put_u64(buf, cap, pos, h->calls));
	PUT(guest_pc_put_u64(buf, cap, pos, h->errors));
	PUT(guest_pc_put_u64(buf, cap, pos, h->calls > 0 ? h->sum_ns / h->calls : 0));
	PUT(guest_pc_put_u64(buf, cap, pos, p99(h)));
	return 0;
}

static int
put_str(uint8_t *buf, size_t cap, size_t *pos, const char *s)
{
	return guest_pc_put_str(buf, cap, pos, s, strlen(s)) < 0 ? -1 : 0;
}

/* The remotes: every hub counted or heard of now. */
static int
put_remotes(struct bridge *b, uint8_t *buf, size_t cap, size_t *pos)
{
	struct br_tally *t = b->tally;
	uint32_t n;

	for (uint32_t i = 0; i < b->nremotes; i++)
		hist_of(&t->rnames, &t->r, &t->nr, b->remotes[i].name);
	n = t->rnames.n < LIST_MAX ? t->rnames.n : LIST_MAX;
	PUT(guest_pc_put_len(buf, cap, pos, n));
	for (uint32_t i = 0; i < n; i++) {
		const char *name = t->rnames.name[i], *state = "gone";
		const struct br_remote *r = remote_of(b, name);
		struct hist none = { 0 }, *h = i < t->nr ? &t->r[i] : &none;
		uint64_t last = h->last_ns;

		if (r != NULL) {
			/* late: an announcement missed; forgotten after three */
			state = b->now_ns > r->seen_ns + r->every_ns + r->every_ns / 2 ? "late" : "up";
			if (r->seen_ns > last)
				last = h->last_ns = r->seen_ns;
		}
		PUT(put_str(buf, cap, pos, name));
		PUT(put_str(buf, cap, pos, state));
		PUT(put_hist(buf, cap, pos, h));
		/* in flight per hub is known only when calls go to one */
		PUT(guest_pc_put_opt(buf, cap, pos, strcmp(b->conf.from, name) == 0));
		if (strcmp(b->conf.from, name) == 0)
			PUT(guest_pc_put_u64(buf, cap, pos, b->icalls.count));
		PUT(guest_pc_put_u64(buf, cap, pos,
				     b->now_ns > last ? (b->now_ns - last) / 1000000u : 0));
	}
	return 0;
}

/* The imports: each method brought in, where its calls go, how many
 * wait. */
static int
put_imports(struct bridge *b, uint8_t *buf, size_t cap, size_t *pos, const uint32_t *waiting)
{
	struct br_tally *t = b->tally;
	uint32_t n = b->nimports < LIST_MAX ? b->nimports : LIST_MAX;
	char subject[BR_SUBJECT_MAX];

	PUT(guest_pc_put_len(buf, cap, pos, n));
	for (uint32_t i = 0; i < n; i++) {
		const struct br_import *imp = b->imports[i];
		uint32_t k = br_names_find(&t->inames, imp->local, 0), hubs = 0;
		struct hist none = { 0 }, *h = k < t->ni ? &t->i[k] : &none;

		for (uint32_t r = 0; r < b->nremotes; r++)
			hubs += (uint32_t)serves(&b->remotes[r], imp->remote);
		if (b->conf.from[0] != '\0')
			snprintf(subject, sizeof(subject), "%s.at.%s.%s", b->conf.subject,
				 b->conf.from, imp->remote);
		else
			snprintf(subject, sizeof(subject), "%s.call.%s", b->conf.subject, imp->remote);
		PUT(put_str(buf, cap, pos, imp->local));
		PUT(put_str(buf, cap, pos, subject));
		PUT(guest_pc_put_u64(buf, cap, pos, hubs));
		PUT(put_hist(buf, cap, pos, h));
		PUT(guest_pc_put_u64(buf, cap, pos, waiting[i]));
	}
	return 0;
}

static uint64_t
age_ms(const struct bridge *b, uint64_t since_ns)
{
	return b->now_ns > since_ns ? (b->now_ns - since_ns) / 1000000u : 0;
}

/* The calls each way: hubctl calls shows them beside hubd's (those over
 * a lane hubd never sees). */
static int
put_calls(struct bridge *b, uint8_t *buf, size_t cap, size_t *pos)
{
	uint32_t n = b->ecalls.count < LIST_MAX ? b->ecalls.count : LIST_MAX, k = 0, at = 0;
	struct ecall *e;
	struct icall *ic;

	PUT(guest_pc_put_len(buf, cap, pos, n));
	while (k < n && (e = hp_idtab_next(&b->ecalls, &at)) != NULL) {
		PUT(guest_pc_put_u64(buf, cap, pos, e->call_id));
		PUT(put_str(buf, cap, pos, br_service_name(b, e->ep)));
		PUT(put_str(buf, cap, pos, e->from[0] != '\0' ? e->from : "?"));
		PUT(guest_pc_put_u64(buf, cap, pos, age_ms(b, e->start_ns)));
		k++;
	}
	n = b->icalls.count < LIST_MAX ? b->icalls.count : LIST_MAX;
	k = at = 0;
	PUT(guest_pc_put_len(buf, cap, pos, n));
	while (k < n && (ic = hp_idtab_next(&b->icalls, &at)) != NULL) {
		PUT(put_str(buf, cap, pos, ic->imp->local));
		PUT(guest_pc_put_u64(buf, cap, pos, age_ms(b, ic->sent_ns)));
		k++;
	}
	return 0;
}

/* GUEST.stats: BR_STATS_SIG (nats/tally.h). */
static void
on_stats(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct bridge *b = ctx;
	uint32_t *waiting = calloc(b->nimports + 1, sizeof(*waiting)), at = 0;
	uint8_t *buf = NULL, *grown;
	size_t cap = 16384, pos = 0;
	struct icall *ic;
	int rc = -1;

	(void)args;
	(void)len;
	if (waiting == NULL) {
		guest_reply_error(c, "hub-nats is out of memory");
		return;
	}
	/* the calls out waiting, per import: through its index here */
	while ((ic = hp_idtab_next(&b->icalls, &at)) != NULL)
		for (uint32_t i = 0; i < b->nimports; i++)
			if (b->imports[i] == ic->imp) {
				waiting[i]++;
				break;
			}
	for (; cap <= ANSWER_MAX && rc != 0; cap *= 2) {
		if ((grown = realloc(buf, cap)) == NULL)
			break;
		buf = grown;
		pos = 0;
		rc = put_str(buf, cap, &pos, b->conf.name) != 0 ||
		    put_remotes(b, buf, cap, &pos) != 0 || put_imports(b, buf, cap, &pos, waiting) != 0 ||
		    put_calls(b, buf, cap, &pos) != 0 ? -1 : 0;
	}
	if (rc == 0)
		guest_reply(c, buf, pos);
	else if (cap <= ANSWER_MAX)	/* the loop left early: realloc failed */
		guest_reply_error(c, "hub-nats is out of memory");
	else
		guest_reply_error(c, "hub-nats: the figures are too large to send");
	free(buf);
	free(waiting);
}

/* This guest's [guest] name, from hub.peers's answer res ("ID NAME
 * STATE" lines). */
static int
own_name(struct bridge *b, const uint8_t *res, size_t n, char *name, size_t cap)
{
	const char *text;
	size_t pos = 0, tn;
	unsigned id = guest_peer_id(b->g);

	if (guest_pc_get_str(res, n, &pos, &text, &tn) != 0)
		return -EBADMSG;
	for (size_t i = 0; i < tn;) {
		const char *nl = memchr(text + i, '\n', tn - i);
		size_t end = nl != NULL ? (size_t)(nl - text) : tn;
		char line[160], word[BR_NAME_MAX + 1];
		unsigned pid;

		snprintf(line, sizeof(line), "%.*s", (int)(end - i), text + i);
		if (sscanf(line, "%u %63s", &pid, word) == 2 && pid == id) {
			if (strlen(word) >= cap)
				return -ENAMETOOLONG;
			memcpy(name, word, strlen(word) + 1);
			return 0;
		}
		i = end + 1;
	}
	return -ENOENT;
}

/* hub.peers answered: GUEST.stats registered under this guest's name. */
static void
on_peers(void *ctx, int status, const uint8_t *res, size_t len)
{
	struct bridge *b = ctx;
	struct br_tally *t = b->tally;
	char name[BR_NAME_MAX + 1];
	int rc = status;

	if (t == NULL)
		return;
	if (rc != 0 || (rc = own_name(b, res, len, name, sizeof(name))) != 0) {
		br_log("cannot learn this guest's name (hub.peers): %s: no stats for hubctl",
		       strerror(rc < 0 ? -rc : EREMOTEIO));
		return;
	}
	snprintf(t->method, sizeof(t->method), "%s." BR_STATS_METHOD, name);
	if ((rc = guest_register(b->g, t->method, BR_STATS_SIG, on_stats, b)) != 0) {
		br_log("cannot register %s: %s: no stats for hubctl", t->method, strerror(-rc));
		t->method[0] = '\0';
	}
}

void
br_tally_start(struct bridge *b)
{
	struct br_tally *t = calloc(1, sizeof(*t));
	int rc;

	if (t == NULL)
		return;
	t->rnames.max = REMOTES_EVER;
	t->inames.max = IMPORTS_EVER;
	b->tally = t;
	/* asked, not waited for: a stop that comes meanwhile (hubctl stop
	 * right after start) is seen by the loop at once */
	if ((rc = guest_call_async(b->g, "hub.peers", NULL, 0, on_peers, b, NULL)) != 0)
		br_log("cannot learn this guest's name (hub.peers): %s: no stats for hubctl",
		       strerror(-rc));
}

void
br_tally_stop(struct bridge *b)
{
	struct br_tally *t = b->tally;

	if (t == NULL)
		return;
	br_names_free(&t->rnames);
	br_names_free(&t->inames);
	free(t->r);
	free(t->i);
	free(t);
	b->tally = NULL;
}
