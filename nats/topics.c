/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics across hubs (doc/nats.md, "Topics across hubs"). Export: the
 * topics of this hub that match [export] topics (hub.advertised, asked
 * at each refresh and when hub.topics says one came or went) are
 * subscribed to here, drop-oldest, and each event is published on
 * PREFIX.ev.HUB.TOPIC; the announcement lists them with their
 * signatures ("topics"). Import: a topic other hubs announce, where it
 * matches [import] topics, is advertised on this hub with the first
 * announcer's signature, and each event from NATS is published into
 * it, so the local subscribers' policies apply here, each its own.
 * Events from NATS are untrusted: one from a hub that did not announce
 * the topic with that signature, or not of the signature (libguest's
 * guest_publish checks it), is refused and counted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nats/hubnats.h"
#include "proto/builtin.h"
#include "proto/topic.h"

#define TOPICS_MAX	64	/* each way: libguest's bound of topics a
				 * guest publishes, and of its subscriptions */
#define SOURCES_MAX	64	/* hubs heard of exporting one topic */

/* A topic of this hub, offered on NATS. */
struct etopic {
	char		name[BR_NAME_MAX + 1];
	char		sig[HP_SIG_MAX_LEN + 1];
	char		subject[BR_SUBJECT_MAX];
	int		sub;		/* our subscription on the hub, 0 none */
	int		refused;	/* the hub refused it: not tried again */
	uint32_t	seen;		/* the refresh that listed it */
	struct br_pack	pack;		/* this loop pass's events */
	struct bridge	*b;
};

/* A hub that announced an imported topic. */
struct source {
	char		hub[BR_NAME_MAX + 1];
	int		same;		/* with our signature: its events are taken */
	int		stale;		/* not in its latest announcement (yet) */
};

/* A topic brought in: advertised here, published elsewhere. */
struct itopic {
	char			remote[BR_NAME_MAX + 1];
	char			local[BR_NAME_MAX + 1];	/* its name here */
	char			sig[HP_SIG_MAX_LEN + 1];
	int			advertised;	/* 0: the hub refused it (logged) */
	natsSubscription	*sub;		/* PREFIX.ev.*.REMOTE (or FROM) */
	struct source		*src;
	uint32_t		nsrc;
	uint64_t		refused[4];	/* its own, each reason's, for the
						 * log's rate */
};

struct br_topics {
	struct etopic	*out[TOPICS_MAX];
	uint32_t	nout;
	struct itopic	*in[TOPICS_MAX];
	uint32_t	nin;
	int		watch;		/* our hub.topics subscription, 0 none */
	/* the counts the note shows; lost: what libnats dropped of the
	 * imported topics' events, the bridge being behind (its
	 * subscriptions' limits), in subscriptions gone and now */
	uint64_t	sent, dropped, published, refused, lost;
};

static int
matches(char *const *patterns, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (br_pattern_matches(patterns[i], name))
			return 1;
	return 0;
}

/* -- export ---------------------------------------------------------------- */

static struct etopic *
out_find(struct br_topics *t, const char *name)
{
	for (uint32_t i = 0; i < t->nout; i++)
		if (strcmp(t->out[i]->name, name) == 0)
			return t->out[i];
	return NULL;
}

/* The events of x gathered this pass, on to NATS: one alone as it is,
 * two or more as a pack (Hub-Pack). */
static void
etopic_flush(struct bridge *b, struct etopic *x)
{
	struct br_topics *t = b->topics;
	struct br_pack *pk = &x->pack;
	natsMsg *m = NULL;
	char count[24];
	natsStatus s;

	if (pk->n == 0)
		return;
	if (pk->n == 1) {
		s = natsConnection_Publish(b->nc, x->subject, pk->buf + 4, (int)(pk->len - 4));
	} else if ((s = natsMsg_Create(&m, x->subject, NULL, (const char *)pk->buf,
				       (int)pk->len)) == NATS_OK) {
		if ((s = natsMsgHeader_Set(m, BR_H_PACK, br_pack_count(pk, count))) == NATS_OK)
			s = natsConnection_PublishMsg(b->nc, m);
		br_msg_done(b, m);
	}
	if (s == NATS_OK)
		t->sent += pk->n;
	else
		t->dropped += pk->n;
	pk->n = 0;
	pk->len = 0;
}

void
br_topics_flush(struct bridge *b)
{
	for (uint32_t i = 0; b->topics != NULL && i < b->topics->nout; i++)
		etopic_flush(b, b->topics->out[i]);
}

/* An event of an exported topic, on our subscription: into this pass's
 * pack (br_topics_flush sends it), or alone when too large for one.
 * What our subscription lost (lapped: it never holds the publisher up)
 * is counted as dropped, as is what cannot go now. */
static void
on_local_event(struct guest *g, const struct guest_event *ev, void *ctx)
{
	struct etopic *x = ctx;
	struct bridge *b = x->b;
	struct br_topics *t = b->topics;
	int fits;

	(void)g;
	t->dropped += ev->lost;
	if (ev->bad || b->nc == NULL ||
	    !atomic_load_explicit(&b->connected, memory_order_relaxed)) {
		t->dropped++;
		return;
	}
	fits = br_pack_fits(&x->pack, br_payload_budget(b), ev->len);
	if (fits <= 0)
		etopic_flush(b, x);	/* what came first goes first */
	if (fits >= 0 && br_pack_put(&x->pack, ev->data, ev->len) == 0)
		return;
	etopic_flush(b, x);
	if ((b->max_payload > 0 && (int64_t)ev->len > b->max_payload) ||
	    natsConnection_Publish(b->nc, x->subject, ev->data, (int)ev->len) != NATS_OK)
		t->dropped++;
	else
		t->sent++;
}

static void
etopic_free(struct etopic *x)
{
	free(x->pack.buf);
	free(x);
}

/* A topic hub.advertised listed: exported (or still). */
static void
topic_one(struct bridge *b, const char *name, const char *sig)
{
	struct br_topics *t = b->topics;
	struct etopic *x;

	if ((x = out_find(t, name)) == NULL) {
		if (t->nout >= TOPICS_MAX || (x = calloc(1, sizeof(*x))) == NULL)
			return;
		snprintf(x->name, sizeof(x->name), "%s", name);
		x->b = b;
		snprintf(x->subject, sizeof(x->subject), "%s.ev.%s.%s", b->conf.subject,
			 b->conf.name, x->name);
		t->out[t->nout++] = x;
	}
	snprintf(x->sig, sizeof(x->sig), "%s", sig);
	x->seen = b->refresh;
}

/* hub.advertised's answer for one pattern: what it lists is exported. */
static void
on_advertised(void *ctx, int status, const uint8_t *res, size_t len)
{
	br_refresh_answer(ctx, "hub.advertised", status, res, len, topic_one);
}

void
br_topics_refresh(struct bridge *b)
{
	uint8_t arg[BR_NAME_MAX + 8];
	size_t pos;

	for (int i = 0; i < b->conf.netopics; i++) {
		pos = 0;
		guest_pc_put_str(arg, sizeof(arg), &pos, b->conf.etopics[i],
				 strlen(b->conf.etopics[i]));
		if (guest_call_async(b->g, HP_SVC_ADVERTISED, arg, pos, on_advertised, b, NULL) == 0)
			b->refreshing++;
		else
			b->refresh_failed = 1;
	}
}

void
br_topics_refresh_done(struct bridge *b)
{
	struct br_topics *t = b->topics;
	int rc;

	for (uint32_t i = 0; i < t->nout;) {
		struct etopic *x = t->out[i];

		if (x->seen != b->refresh) {
			if (x->sub > 0) {
				guest_unsubscribe(b->g, x->sub);
				br_log("no longer exporting topic %s", x->name);
			}
			etopic_flush(b, x);
			etopic_free(x);
			t->out[i] = t->out[--t->nout];
			continue;
		}
		if (x->sub == 0 && !x->refused) {
			/* drop-oldest: a bridge behind (NATS slow, or gone)
			 * never holds the local publisher up; what it
			 * lost is counted (on_local_event) */
			rc = guest_subscribe(b->g, x->name, GUEST_DROP_OLDEST, on_local_event, x);
			if (rc > 0) {
				x->sub = rc;
				br_log("exporting topic %s (%s)", x->name, x->sig);
			} else {
				x->refused = 1;
				br_log("cannot subscribe to topic %s: %s", x->name,
				       rc == -EPERM ? "its subscribers = leaves hub-nats out" :
				       strerror(-rc));
			}
		}
		i++;
	}
}

/* hub.topics: a topic advertised or withdrawn that we would export: the
 * refresh comes now, not at the next interval. */
static void
on_hub_topics(struct guest *g, const struct guest_event *ev, void *ctx)
{
	struct bridge *b = ctx;
	const char *name, *what;
	size_t pos = 0, nn, wn;
	char nbuf[BR_NAME_MAX + 1];

	(void)g;
	if (ev->bad || guest_pc_get_str(ev->data, ev->len, &pos, &name, &nn) != 0 ||
	    guest_pc_get_str(ev->data, ev->len, &pos, &what, &wn) != 0 || nn > BR_NAME_MAX)
		return;
	snprintf(nbuf, sizeof(nbuf), "%.*s", (int)nn, name);
	if (!matches(b->conf.etopics, b->conf.netopics, nbuf) ||
	    !((wn == 10 && memcmp(what, "advertised", 10) == 0) ||
	      (wn == 9 && memcmp(what, "withdrawn", 9) == 0)))
		return;
	if (b->next_announce_ns > b->now_ns)
		b->next_announce_ns = b->now_ns;
}

void
br_topics_announce(struct bridge *b, struct json_object *o, size_t *used, size_t budget)
{
	struct br_topics *t = b->topics;
	json_object *a = json_object_new_array();

	for (uint32_t i = 0; i < t->nout; i++) {
		const struct etopic *x = t->out[i];
		json_object *pair;

		if (x->sub <= 0)
			continue;	/* nothing of it would come */
		*used += strlen(x->name) + strlen(x->sig) + 8;
		if (*used > budget)
			break;
		pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_string(x->name));
		json_object_array_add(pair, json_object_new_string(x->sig));
		json_object_array_add(a, pair);
	}
	json_object_object_add(o, "topics", a);
}

/* -- import ---------------------------------------------------------------- */

static struct itopic *
in_find(struct br_topics *t, const char *remote)
{
	for (uint32_t i = 0; i < t->nin; i++)
		if (strcmp(t->in[i]->remote, remote) == 0)
			return t->in[i];
	return NULL;
}

static int
in_subscribe(struct bridge *b, struct itopic *it)
{
	char subject[BR_SUBJECT_MAX];

	if (b->nc == NULL || !it->advertised || it->sub != NULL)
		return 0;
	snprintf(subject, sizeof(subject), "%s.ev.%s.%s", b->conf.subject,
		 b->conf.from[0] != '\0' ? b->conf.from : "*", it->remote);
	return natsConnection_SubscribeSync(&it->sub, b->nc, subject) == NATS_OK ? 0 : -1;
}

/* Hub hub announces topic name as sig: advertised here the first time. */
static struct itopic *
bring_in(struct bridge *b, const char *hub, const char *name, const char *sig)
{
	struct br_topics *t = b->topics;
	struct itopic *it;
	int rc;

	if ((it = in_find(t, name)) != NULL)
		return it;
	if (t->nin >= TOPICS_MAX || (it = calloc(1, sizeof(*it))) == NULL) {
		br_log("topic %s from hub %s: more than %d topics imported, not kept", name, hub,
		       TOPICS_MAX);
		return NULL;
	}
	snprintf(it->remote, sizeof(it->remote), "%s", name);
	snprintf(it->sig, sizeof(it->sig), "%s", sig);
	t->in[t->nin++] = it;
	if (b->conf.prefix[0] != '\0' &&
	    (size_t)snprintf(it->local, sizeof(it->local), "%s.%s", b->conf.prefix, name) >=
	    sizeof(it->local)) {
		br_log("%s.%s: too long a name for this hub", b->conf.prefix, name);
		return it;	/* kept, not advertised: not tried again */
	} else if (b->conf.prefix[0] == '\0') {
		snprintf(it->local, sizeof(it->local), "%s", name);
	}
	rc = guest_advertise(b->g, it->local, sig, 0);
	if (rc == -EPERM)
		br_log("cannot advertise topic %s: add it to publishes = in hub-nats's [guest] "
		       "section", it->local);
	else if (rc == -EEXIST)
		br_log("cannot advertise topic %s: another guest of this hub publishes it",
		       it->local);
	else if (rc < 0)
		br_log("cannot advertise topic %s: %s", it->local, strerror(-rc));
	else {
		it->advertised = 1;
		br_log("importing topic %s (%s) from hub %s", it->local, sig, hub);
		if (in_subscribe(b, it) != 0)
			br_log("cannot subscribe to %s's events on NATS", it->remote);
	}
	return it;
}

/* hub's latest announcement lists it (or not: stale) as sig. */
static void
source_set(struct itopic *it, const char *hub, const char *sig)
{
	struct source *s = NULL, *grown;

	for (uint32_t i = 0; i < it->nsrc; i++)
		if (strcmp(it->src[i].hub, hub) == 0)
			s = &it->src[i];
	if (s == NULL) {
		if (it->nsrc >= SOURCES_MAX ||
		    (grown = realloc(it->src, (it->nsrc + 1) * sizeof(*grown))) == NULL)
			return;
		it->src = grown;
		s = &it->src[it->nsrc++];
		snprintf(s->hub, sizeof(s->hub), "%s", hub);
		s->same = strcmp(sig, it->sig) == 0;
		if (!s->same)
			br_log("hub %s publishes topic %s as %s, here it is %s: its events are "
			       "refused", hub, it->remote, sig, it->sig);
	}
	s->same = strcmp(sig, it->sig) == 0;
	s->stale = 0;
}

/* hub's sources not in its latest announcement (all of them: it left)
 * dropped. */
static void
sources_sweep(struct br_topics *t, const char *hub, int all)
{
	for (uint32_t i = 0; i < t->nin; i++) {
		struct itopic *it = t->in[i];

		for (uint32_t j = 0; j < it->nsrc;) {
			if (strcmp(it->src[j].hub, hub) == 0 && (all || it->src[j].stale)) {
				it->src[j] = it->src[--it->nsrc];
				continue;
			}
			j++;
		}
	}
}

size_t
br_topics_count(struct json_object *o)
{
	json_object *a;

	if (!json_object_object_get_ex(o, "topics", &a) || !json_object_is_type(a, json_type_array))
		return 0;
	return json_object_array_length(a);
}

/* An announcement's "topics": [[NAME, SIG], ...], from hub (checked,
 * not ours, allowed by from =). */
void
br_topics_announced(struct bridge *b, const char *hub, struct json_object *o)
{
	struct br_topics *t = b->topics;
	json_object *a;
	struct hp_sig parsed;
	size_t n;

	if (b->conf.nitopics == 0)
		return;
	for (uint32_t i = 0; i < t->nin; i++)
		for (uint32_t j = 0; j < t->in[i]->nsrc; j++)
			if (strcmp(t->in[i]->src[j].hub, hub) == 0)
				t->in[i]->src[j].stale = 1;
	if (json_object_object_get_ex(o, "topics", &a) && json_object_is_type(a, json_type_array) &&
	    (n = json_object_array_length(a)) <= BR_METHODS_MAX) {
		for (size_t i = 0; i < n; i++) {
			json_object *pair = json_object_array_get_idx(a, i), *jn, *js;
			const char *name, *sig;
			struct itopic *it;

			if (!json_object_is_type(pair, json_type_array) ||
			    json_object_array_length(pair) != 2 ||
			    !json_object_is_type(jn = json_object_array_get_idx(pair, 0),
						 json_type_string) ||
			    !json_object_is_type(js = json_object_array_get_idx(pair, 1),
						 json_type_string))
				continue;
			name = json_object_get_string(jn);
			sig = json_object_get_string(js);
			/* the lengths JSON gave: a NUL inside is refused */
			if (!br_subject_part_ok(name, (size_t)json_object_get_string_len(jn), 1) ||
			    !matches(b->conf.itopics, b->conf.nitopics, name) ||
			    (size_t)json_object_get_string_len(js) != strlen(sig) ||
			    strlen(sig) > HP_SIG_MAX_LEN || hp_topic_sig_parse(sig, &parsed, NULL) != 0)
				continue;
			if ((it = bring_in(b, hub, name, sig)) != NULL)
				source_set(it, hub, sig);
		}
	}
	sources_sweep(t, hub, 0);
}

void
br_topics_forget(struct bridge *b, const char *hub)
{
	sources_sweep(b->topics, hub, 1);
}

/* An event's bytes, from hub (hn bytes) as the subject says: published
 * here if of the topic's signature, else refused as kind. */
static void
remote_one(struct bridge *b, struct itopic *it, const char *hub, size_t hn, const void *data,
	   size_t len, int kind)
{
	static const char *const why_of[] = {
		"a hub that does not announce it", "a hub that publishes it with another signature",
		NULL, "a malformed pack",
	};
	struct br_topics *t = b->topics;
	const char *why = why_of[kind];
	int rc;

	if (why == NULL) {
		if ((rc = guest_publish(b->g, it->local, data, len)) == 0) {
			t->published++;
			return;
		}
		why = rc == -EINVAL ? "not of its signature" :
		    rc == -EMSGSIZE ? "larger than its events may be" : strerror(-rc);
	}
	t->refused++;
	/* each reason's first refusal, then one in 1000 */
	if (it->refused[kind]++ % 1000 == 0)
		br_log("an event of %s from hub %.*s refused: %s (%llu so)", it->remote,
		       (int)hn, hub, why, (unsigned long long)it->refused[kind]);
}

/* A message from NATS on its subject PREFIX.ev.HUB.TOPIC: an event, or
 * a pack of them (Hub-Pack, checked whole first), each published here if
 * HUB announced the topic with our signature and the bytes are of it. */
static void
on_remote_event(struct bridge *b, struct itopic *it, natsMsg *m)
{
	const char *s = natsMsg_GetSubject(m), *hub, *dot, *count = NULL;
	const uint8_t *data = (const uint8_t *)natsMsg_GetData(m);
	size_t plen = strlen(b->conf.subject), len = (size_t)natsMsg_GetDataLength(m), off = 0;
	uint32_t n;
	int kind = 0;	/* remote_one's: 0 a hub not heard of, 1 another
			 * signature's, 2 taken if of the signature */

	/* the subscription's subject: PREFIX.ev. is there */
	hub = s + plen + 4;
	if ((dot = strchr(hub, '.')) == NULL || !br_subject_part_ok(hub, (size_t)(dot - hub), 0))
		return;
	for (uint32_t i = 0; i < it->nsrc; i++)
		if (strlen(it->src[i].hub) == (size_t)(dot - hub) &&
		    memcmp(it->src[i].hub, hub, (size_t)(dot - hub)) == 0)
			kind = it->src[i].same ? 2 : 1;
	if (natsMsgHeader_Get(m, BR_H_PACK, &count) != NATS_OK || count == NULL) {
		remote_one(b, it, hub, (size_t)(dot - hub), data, len, kind);
		return;
	}
	if (br_pack_check(data, len, count, &n) < 0) {
		remote_one(b, it, hub, (size_t)(dot - hub), NULL, 0, 3);
		return;
	}
	for (; n > 0; n--) {
		uint32_t ilen = br_get32(data + off);

		remote_one(b, it, hub, (size_t)(dot - hub), data + off + 4, ilen, kind);
		off += 4 + (size_t)ilen;
	}
}

void
br_topics_drain(struct bridge *b)
{
	struct br_topics *t = b->topics;
	natsMsg *m = NULL;

	if (t == NULL)
		return;
	/* index, not pointer: a publish may serve (a block subscriber),
	 * though nothing it runs adds imported topics */
	for (uint32_t i = 0; i < t->nin; i++)
		for (int n = 0; n < 1024 && br_next_msg(t->in[i]->sub, &m); n++) {
			on_remote_event(b, t->in[i], m);
			natsMsg_Destroy(m);
		}
}

/* -- the bridge's life --------------------------------------------------- */

void
br_topics_start(struct bridge *b)
{
	int rc;

	if (b->conf.netopics == 0 && b->conf.nitopics == 0)
		return;
	if ((b->topics = calloc(1, sizeof(*b->topics))) == NULL) {
		br_log("out of memory: no topics");
		return;
	}
	if (b->conf.netopics > 0) {
		rc = guest_subscribe(b->g, "hub.topics", GUEST_DROP_OLDEST, on_hub_topics, b);
		if (rc > 0)
			b->topics->watch = rc;
		else	/* the refresh still finds them, later */
			br_log("cannot subscribe to hub.topics: %s", strerror(-rc));
	}
}

int
br_topics_attach(struct bridge *b)
{
	struct br_topics *t = b->topics;

	for (uint32_t i = 0; t != NULL && i < t->nin; i++)
		if (in_subscribe(b, t->in[i]) != 0)
			return -1;
	return 0;
}

void
br_topics_detach(struct bridge *b)
{
	struct br_topics *t = b->topics;

	for (uint32_t i = 0; t != NULL && i < t->nin; i++) {
		int64_t n = 0;

		if (t->in[i]->sub != NULL && natsSubscription_GetDropped(t->in[i]->sub, &n) == NATS_OK &&
		    n > 0)
			t->lost += (uint64_t)n;
		natsSubscription_Destroy(t->in[i]->sub);
		t->in[i]->sub = NULL;
	}
}

void
br_topics_summary(struct bridge *b, char *buf, size_t cap)
{
	const struct br_topics *t = b->topics;
	uint64_t lost;

	if (t == NULL || cap == 0) {
		if (cap > 0)
			buf[0] = '\0';
		return;
	}
	lost = t->lost;
	for (uint32_t i = 0; i < t->nin; i++) {
		int64_t n = 0;

		if (t->in[i]->sub != NULL && natsSubscription_GetDropped(t->in[i]->sub, &n) == NATS_OK &&
		    n > 0)
			lost += (uint64_t)n;
	}
	snprintf(buf, cap, "; topics %u out (%llu sent, %llu dropped), %u in (%llu published, "
		 "%llu refused, %llu lost)", t->nout, (unsigned long long)t->sent,
		 (unsigned long long)t->dropped, t->nin, (unsigned long long)t->published,
		 (unsigned long long)t->refused, (unsigned long long)lost);
}

void
br_topics_stop(struct bridge *b)
{
	struct br_topics *t = b->topics;

	if (t == NULL)
		return;
	br_topics_detach(b);
	for (uint32_t i = 0; i < t->nout; i++)
		etopic_free(t->out[i]);
	for (uint32_t i = 0; i < t->nin; i++) {
		free(t->in[i]->src);
		free(t->in[i]);
	}
	free(t);
	b->topics = NULL;
}
