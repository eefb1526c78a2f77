/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics (topics.h): their memory, the subscriptions and what each party
 * is handed, the guests' and clients' comings and goings, and hubd's own
 * writes (the hub.* discovery topics, the operator's emit). Over 600
 * lines and whole: one registry, whose every step (a topic made, a
 * subscription handed over, a party gone) changes the same lists and
 * tells the same parties. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/host.h"
#include "daemon/log.h"
#include "daemon/topics.h"
#include "proto/doorbell.h"
#include "proto/postcard.h"

#define HUB_TOPIC_SLOTS		256u	/* the discovery topics' ring */
#define HUB_TOPIC_EVENT		1024u
#define WHO_MAX			48	/* "client:UID", a guest's name */

/* -- hubd's writes ----------------------------------------------------------- */

/* One event as the host: never waits, a block subscriber that has not
 * made room is overrun at once (hubd serves everyone). */
static int
host_write(struct topic *t, const uint8_t *ev, size_t len)
{
	uint32_t blocker;
	int rc = hp_topic_publish(&t->w, ev, len, &blocker);

	if (rc == -EAGAIN) {
		hp_topic_overrun(&t->w);
		rc = hp_topic_publish(&t->w, ev, len, &blocker);
	}
	if (rc == 0)
		t->emitted++;
	return rc;
}

void
topics_discover(struct hub *h, const char *topic, const char *a, const char *b, const char *c)
{
	struct topic *t = topics_find(h, topic);
	uint8_t buf[HUB_TOPIC_EVENT];
	struct hp_pc_enc e;
	const char *s[3] = { a, b, c };

	if (t == NULL)
		return;
	hp_pc_enc_init(&e, buf, sizeof(buf));
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(s[i]);

		hp_pc_put_str(&e, s[i], n < 300 ? n : 300);
	}
	if (e.err == 0)
		host_write(t, buf, e.len);
}

static const char *
who_of(struct hub *h, const struct topic_sub *s, char *buf, size_t cap)
{
	struct peer *p = hub_peer(h, s->peer);

	if (s->peer == 0)
		snprintf(buf, cap, "client:%u", (unsigned)s->uid);
	else
		snprintf(buf, cap, "%s", p != NULL && p->conf != NULL ? p->conf->name : "?");
	return buf;
}

/* -- what the guests are told ------------------------------------------------ */

/* m to p, its descriptors first (on its doorbell, in order, as lanes'):
 * 0, or -1 when the doorbell takes no more (then nothing is sent). */
static int
tell(struct hub *h, struct peer *p, const struct hp_topic_msg *m, const int *fds)
{
	uint8_t buf[HP_TOPIC_NAME_MAX + HP_SIG_MAX_LEN + HP_TOPIC_REASON_MAX + 64];
	int64_t n = hp_topic_msg_encode(buf, sizeof(buf), m);
	int nfds = hp_topic_msg_fds(m->op);

	if (n <= 0)
		return -1;
	if (nfds > 0 && hp_doorbell_send_fds(p->bell, fds, nfds) != 0) {
		log_warnx("guest %s: its doorbell takes no more: topic %s not handed over",
			  p->conf->name, m->name[0] ? m->name : "(id)");
		return -1;
	}
	host_send(h, p, HP_MSG_TOPIC, 0, 0, buf, (uint32_t)n);
	return 0;
}

/* The topic's publisher, if it is up as the instance that advertised. */
static struct peer *
publisher(struct hub *h, const struct topic *t)
{
	struct peer *p = hub_peer(h, t->publisher);

	if (p == NULL || p->conf == NULL || p->epoch != t->pub_epoch || !host_serving(p))
		return NULL;
	return p;
}

uint32_t
topics_publisher(struct hub *h, const struct topic *t)
{
	struct peer *p = publisher(h, t);

	return p != NULL ? p->id : 0;
}

/* s's bell end A as hubd's writer holds it, -1 if it hung up (the
 * subscriber is going: nobody to ring). */
static int
bell_a(const struct topic *t, const struct topic_sub *s)
{
	for (uint32_t i = 0; i < t->w.nsubs; i++)
		if (t->w.subs[i].id == s->id)
			return t->w.subs[i].bell;
	return -1;
}

static void
tell_reader(struct hub *h, struct peer *p, const struct topic *t, const struct topic_sub *s)
{
	struct hp_topic_msg m = { .op = HP_TOPIC_READER, .topic = t->id, .sub = s->id,
				  .policy = s->policy };
	int fds[2] = { s->cursor_ro, bell_a(t, s) };

	if (fds[1] >= 0)
		tell(h, p, &m, fds);
}

/* A line to every client that listens to t, or a message to every guest. */
static void
tell_subscribers(struct hub *h, struct topic *t, const struct hp_topic_msg *m,
		 json_object *line)
{
	for (struct topic_sub *s = t->subs; s != NULL; s = s->next) {
		struct peer *q = hub_peer(h, s->peer);

		if (s->peer == 0 && s->tell != NULL)
			s->tell(s->client, json_object_get(line));
		else if (q != NULL && q->conf != NULL && q->epoch == s->epoch)
			tell(h, q, m, NULL);
	}
	json_object_put(line);
}

/* -- the registry ------------------------------------------------------------ */

struct topic *
topics_find(struct hub *h, const char *name)
{
	for (struct topic *t = h->topics; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

static int
sig_set(struct topic *t, const char *sig, const char **why)
{
	struct hp_sig ps;

	if (hp_topic_sig_parse(sig, &ps, why) != 0)
		return -EINVAL;
	t->psig = ps;
	snprintf(t->sig, sizeof(t->sig), "%s", sig);
	t->has_sig = 1;
	return 0;
}

/* Whether name is one of hubd's discovery topics. Their memory is made
 * at their first subscriber: until then there is nobody to tell. */
static int
hub_topic(const char *name)
{
	return strcmp(name, TOPIC_GUESTS) == 0 || strcmp(name, TOPIC_METHODS) == 0 ||
	    strcmp(name, TOPIC_TOPICS) == 0;
}

/* Whether a topic, or a subscription, of h holds id: the counters wrap
 * after 2^32, and an id one still holds is not handed out again (a
 * guest tells its topics and readers apart by them). */
static int
topic_id_used(struct hub *h, uint32_t id)
{
	for (struct topic *t = h->topics; t != NULL; t = t->next)
		if (t->id == id)
			return 1;
	return 0;
}

static int
sub_id_used(struct hub *h, uint32_t id)
{
	for (struct topic *t = h->topics; t != NULL; t = t->next)
		for (struct topic_sub *s = t->subs; s != NULL; s = s->next)
			if (s->id == id)
				return 1;
	return 0;
}

/* The topic name, made with its config's geometry if it is new. */
static struct topic *
topic_get(struct hub *h, const char *name, const char **why)
{
	struct config_topic def;
	const struct config_topic *ct;
	struct hp_topic_map m;
	struct topic *t;
	char mname[HP_TOPIC_NAME_MAX + 16];
	uint32_t n = 0;
	int rc;

	if ((t = topics_find(h, name)) != NULL)
		return t;
	for (t = h->topics; t != NULL; t = t->next)
		n++;
	if (n >= TOPICS_MAX) {
		*why = "too many topics";
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		*why = "out of memory";
		return NULL;
	}
	ct = config_topic_of(&h->conf, name, &def);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->geom.slots = ct->slots;
	t->geom.event_max = ct->event_max;
	t->block_ms = (uint32_t)(ct->block_ns / 1000000);
	if (strncmp(name, HP_SVC_PREFIX, strlen(HP_SVC_PREFIX)) == 0) {
		if (!hub_topic(name)) {
			free(t);
			*why = "no such hub topic (hub.guests, hub.methods, hub.topics)";
			return NULL;
		}
		t->geom.slots = HUB_TOPIC_SLOTS;
		t->geom.event_max = HUB_TOPIC_EVENT;
		t->host_owned = 1;
		sig_set(t, TOPIC_HUB_SIG, why);
	}
	/* named for people (/proc/PID/fd, maps) */
	snprintf(mname, sizeof(mname), "hub-topic:%s", name);
	if ((rc = hp_topic_create(mname, &t->geom, &t->fd, why)) != 0) {
		free(t);
		return NULL;
	}
	if ((rc = hp_topic_map(&m, t->fd, &t->geom, 1, why)) != 0) {
		close(t->fd);
		free(t);
		return NULL;
	}
	hp_topic_writer_init(&t->w, &m);
	do {
		t->id = ++h->next_topic;
		h->topic_ids_wrapped |= t->id == 0;
	} while (t->id == 0 || (h->topic_ids_wrapped && topic_id_used(h, t->id)));
	t->next = h->topics;
	h->topics = t;
	return t;
}

static void
topic_free(struct topic *t)
{
	struct topic_sub *s;

	while ((s = t->subs) != NULL) {
		t->subs = s->next;
		close(s->cursor_ro);
		free(s);	/* its bell goes with the writer */
	}
	hp_topic_writer_free(&t->w);
	close(t->fd);
	free(t);
}

/* A topic nobody publishes or reads, keeping no retained event, goes
 * with its memory: names a guest subscribed to and left do not pile up
 * (a retained one stays for the publisher's next instance, while its
 * guest is in the config). */
static void
topic_reap(struct hub *h, struct topic *t)
{
	if (t->host_owned || t->subs != NULL || publisher(h, t) != NULL ||
	    ((t->flags & HP_TOPIC_RETAIN) && t->owner[0] != '\0' &&
	     hp_topic_claimed(&t->w.map) > 0))
		return;
	for (struct topic **pp = &h->topics; *pp != NULL; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	topic_free(t);
}

/* Topics guest name advertised (whatever its instance). */
static uint32_t
topics_of(struct hub *h, const char *name)
{
	uint32_t n = 0;

	for (struct topic *t = h->topics; t != NULL; t = t->next)
		n += strcmp(t->owner, name) == 0;
	return n;
}

/* -- publishing -------------------------------------------------------------- */

/* Why a topic's name is refused, or NULL: a method's rules (one way to
 * check both), said of a topic, and its own length. */
static const char *
name_refused(const char *name)
{
	static char why[96];
	const char *w = hp_method_name_refused(name, strlen(name));

	if (w != NULL) {
		snprintf(why, sizeof(why), "bad topic name: %s", w + strlen(HP_METHOD_NAME_BAD));
		return why;
	}
	return strlen(name) > HP_TOPIC_NAME_MAX ? "topic name longer than 64 bytes" : NULL;
}

int
topics_advertise(struct hub *h, struct peer *p, const char *name, const char *sig,
		 int retain, const char **why)
{
	struct hp_topic_msg m = { .op = HP_TOPIC_WRITE };
	struct peer *cur;
	struct topic *t;
	int changed, was;

	if ((*why = name_refused(name)) != NULL)
		return -EINVAL;
	if (strncmp(name, HP_SVC_PREFIX, strlen(HP_SVC_PREFIX)) == 0 ||
	    !config_guest_publishes(p->conf, name)) {
		*why = "not one of this guest's topics (NAME.* or publishes)";
		return -EPERM;
	}
	if ((t = topics_find(h, name)) == NULL && topics_of(h, p->conf->name) >= TOPICS_PER_GUEST) {
		*why = "too many topics for one guest";
		return -ENOSPC;
	}
	if (t == NULL && (t = topic_get(h, name, why)) == NULL)
		return -ENOMEM;
	if ((cur = publisher(h, t)) != NULL && cur != p) {
		*why = "another guest publishes it";
		return -EEXIST;
	}
	snprintf(t->owner, sizeof(t->owner), "%s", p->conf->name);
	/* the subscribers learn it: the first one, or a new one */
	changed = !t->has_sig || strcmp(t->sig, sig) != 0;
	was = t->has_sig;
	if (sig_set(t, sig, why) != 0)
		return -EINVAL;
	t->flags = retain ? HP_TOPIC_RETAIN : 0;
	t->publisher = p->id;
	t->pub_epoch = p->epoch;
	m.topic = t->id;
	m.flags = t->flags;
	m.block_ms = t->block_ms;
	m.geom = t->geom;
	snprintf(m.name, sizeof(m.name), "%s", t->name);
	snprintf(m.sig, sizeof(m.sig), "%s", t->sig);
	if (tell(h, p, &m, &t->fd) != 0) {
		t->publisher = 0;
		*why = "the topic's memory could not be handed over";
		return -EAGAIN;
	}
	for (struct topic_sub *s = t->subs; s != NULL; s = s->next)
		tell_reader(h, p, t, s);
	if (changed) {
		struct hp_topic_msg sm = { .op = HP_TOPIC_SIGNATURE, .topic = t->id };
		json_object *line = json_object_new_object();

		snprintf(sm.sig, sizeof(sm.sig), "%s", t->sig);
		json_object_object_add(line, "event", json_object_new_string("signature"));
		json_object_object_add(line, "signature", json_object_new_string(t->sig));
		tell_subscribers(h, t, &sm, line);
		if (was)
			log_info("topic %s: guest %s changed its signature to %s", t->name,
				 p->conf->name, t->sig);
	}
	topics_discover(h, TOPIC_TOPICS, t->name, "advertised", p->conf->name);
	return 0;
}

int64_t
topics_emit(struct topic *t, const uint8_t *ev, size_t len, const char **why)
{
	uint64_t seq = hp_topic_claimed(&t->w.map);
	int rc;

	if (len > t->geom.event_max) {
		*why = "the event is larger than the topic's event_max";
		return -EMSGSIZE;
	}
	if ((rc = host_write(t, ev, len)) != 0) {
		*why = strerror(-rc);
		return rc;
	}
	return (int64_t)seq;
}

/* -- subscribing ------------------------------------------------------------- */

/* A subscription to t: its cursor and bell, hubd's writer told; fds[3]
 * for the subscriber (topic read-only, cursor, bell end B). */
static int
sub_make(struct hub *h, struct topic *t, uint32_t policy, int fds[3], struct topic_sub **sp,
	 const char **why)
{
	uint64_t start = hp_topic_claimed(&t->w.map);
	struct topic_sub *s;
	int bells[2] = { -1, -1 }, cursor = -1, topic_ro = -1, rc;
	char name[HP_TOPIC_NAME_MAX + 16];

	if (t->nsubs >= TOPICS_SUBS_MAX) {
		*why = "the topic has as many subscribers as it may";
		return -ENOSPC;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	s->cursor_ro = s->bell_a = -1;
	/* retained: a late subscriber starts at the newest event */
	if ((t->flags & HP_TOPIC_RETAIN) && start > 0)
		start--;
	snprintf(name, sizeof(name), "hub-cursor:%s", t->name);
	if ((rc = hp_topic_cursor_create(name, start, &cursor, why)) != 0)
		goto fail;
	if ((rc = hp_doorbell_pair(bells)) != 0) {
		*why = "doorbell";
		goto fail;
	}
	if ((s->cursor_ro = hp_topic_reopen_ro(cursor)) < 0 ||
	    (topic_ro = hp_topic_reopen_ro(t->fd)) < 0) {
		rc = s->cursor_ro < 0 ? s->cursor_ro : topic_ro;
		*why = "reopening read-only";
		goto fail;
	}
	s->bell_a = bells[0];
	bells[0] = -1;
	do {
		s->id = ++h->next_sub;
		h->sub_ids_wrapped |= s->id == 0;
	} while (s->id == 0 || (h->sub_ids_wrapped && sub_id_used(h, s->id)));
	/* hubd's writer owns bell_a; the mapping it makes needs no fd kept */
	rc = hp_topic_writer_add(&t->w, s->id, policy, dup(s->cursor_ro), s->bell_a, why);
	if (rc != 0) {
		s->bell_a = -1;	/* closed by writer_add */
		goto fail;
	}
	s->t = t;
	s->policy = policy;
	s->rate_ns = hp_now_ns();
	s->next = t->subs;
	t->subs = s;
	t->nsubs++;
	fds[0] = topic_ro;
	fds[1] = cursor;
	fds[2] = bells[1];
	*sp = s;
	return 0;
fail:
	if (s->cursor_ro >= 0)
		close(s->cursor_ro);
	if (s->bell_a >= 0)
		close(s->bell_a);
	if (topic_ro >= 0)
		close(topic_ro);
	if (cursor >= 0)
		close(cursor);
	for (int i = 0; i < 2; i++)
		if (bells[i] >= 0)
			close(bells[i]);
	free(s);
	return rc < 0 ? rc : -EIO;
}

/* The publisher told of a new subscriber. */
static void
sub_announce(struct hub *h, struct topic *t, struct topic_sub *s)
{
	struct peer *p = publisher(h, t);
	char who[WHO_MAX];

	if (p != NULL)
		tell_reader(h, p, t, s);
	topics_discover(h, TOPIC_TOPICS, t->name, "subscribed", who_of(h, s, who, sizeof(who)));
}

static const char *
refused(struct hub *h, const char *name, const char *guest, int privileged)
{
	struct config_topic def;
	const char *why;

	if ((why = name_refused(name)) != NULL)
		return why;
	if (!privileged && !config_topic_allows(config_topic_of(&h->conf, name, &def), guest))
		return "not among the topic's subscribers (its [topic] section)";
	return NULL;
}

int64_t
topics_subscribe(struct hub *h, struct peer *p, const char *name, uint32_t policy,
		 const char **why)
{
	struct hp_topic_msg m = { .op = HP_TOPIC_READ };
	struct topic_sub *s;
	struct topic *t;
	uint32_t mine = 0;
	int fds[3], rc;

	if ((*why = refused(h, name, p->conf->name, 0)) != NULL)
		return strstr(*why, "subscribers") != NULL ? -EPERM : -EINVAL;
	if (policy >= HP_TOPIC_POLICIES) {
		*why = "policy is block, drop-oldest or latest";
		return -EINVAL;
	}
	for (t = h->topics; t != NULL; t = t->next)
		for (s = t->subs; s != NULL; s = s->next)
			mine += s->peer == p->id && s->epoch == p->epoch;
	if (mine >= TOPICS_SUBS_PER_GUEST) {
		*why = "too many subscriptions for one guest";
		return -EMFILE;
	}
	if ((t = topic_get(h, name, why)) == NULL)
		return -ENOMEM;
	if ((rc = sub_make(h, t, policy, fds, &s, why)) != 0) {
		topic_reap(h, t);
		return rc;
	}
	s->peer = p->id;
	s->epoch = p->epoch;
	m.topic = t->id;
	m.sub = s->id;
	m.policy = policy;
	m.flags = t->flags;
	m.geom = t->geom;
	snprintf(m.name, sizeof(m.name), "%s", t->name);
	snprintf(m.sig, sizeof(m.sig), "%s", t->has_sig ? t->sig : "");
	rc = tell(h, p, &m, fds);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	if (rc != 0) {
		topics_drop(h, s);
		*why = "the subscription could not be handed over";
		return -EAGAIN;
	}
	sub_announce(h, t, s);
	return s->id;
}

int
topics_listen(struct hub *h, const char *name, uint32_t policy, uid_t uid, int privileged,
	      void *client, void (*tellfn)(void *client, json_object *line), int fds[3],
	      struct topic_sub **sp, const char **why)
{
	struct topic *t;
	int rc;

	if ((*why = refused(h, name, NULL, privileged)) != NULL)
		return -EINVAL;
	if (policy >= HP_TOPIC_POLICIES) {
		*why = "policy is block, drop-oldest or latest";
		return -EINVAL;
	}
	if ((t = topic_get(h, name, why)) == NULL)
		return -ENOMEM;
	if ((rc = sub_make(h, t, policy, fds, sp, why)) != 0) {
		topic_reap(h, t);
		return rc;
	}
	(*sp)->uid = uid;
	(*sp)->client = client;
	(*sp)->tell = tellfn;
	sub_announce(h, t, *sp);
	return 0;
}

/* s ends; its topic stays (the caller may be walking the topics). */
static void
sub_drop(struct hub *h, struct topic_sub *s)
{
	struct topic *t = s->t;
	struct peer *p = publisher(h, t);
	char who[WHO_MAX];

	for (struct topic_sub **pp = &t->subs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	t->nsubs--;
	hp_topic_writer_remove(&t->w, s->id);
	if (p != NULL) {
		struct hp_topic_msg m = { .op = HP_TOPIC_READER_GONE, .topic = t->id,
					  .sub = s->id };

		tell(h, p, &m, NULL);
	}
	topics_discover(h, TOPIC_TOPICS, t->name, "unsubscribed", who_of(h, s, who, sizeof(who)));
	close(s->cursor_ro);	/* its bell went with writer_remove */
	free(s);
}

void
topics_drop(struct hub *h, struct topic_sub *s)
{
	struct topic *t = s->t;

	sub_drop(h, s);
	topic_reap(h, t);
}

int
topics_unsubscribe(struct hub *h, struct peer *p, uint64_t id, const char **why)
{
	for (struct topic *t = h->topics; t != NULL; t = t->next)
		for (struct topic_sub *s = t->subs; s != NULL; s = s->next)
			if (s->id == id && s->peer == p->id && s->epoch == p->epoch) {
				topics_drop(h, s);
				return 0;
			}
	*why = "no such subscription of yours";
	return -ENOENT;
}

/* -- goings ------------------------------------------------------------------ */

/* A guest gone: its subscriptions end, its topics have no publisher (their
 * memory stays: a retained event survives a restart) and an event it left
 * half written is spoiled. */
static void
on_detach(struct hub *h, struct peer *p)
{
	struct topic *t, *tnext;

	for (t = h->topics; t != NULL; t = tnext) {
		struct topic_sub *s, *next;

		tnext = t->next;
		for (s = t->subs; s != NULL; s = next) {
			next = s->next;
			if (s->peer == p->id)
				sub_drop(h, s);
		}
		if (t->publisher == p->id) {
			t->publisher = 0;
			/* an event it died writing would hold its readers */
			hp_topic_spoil_unwritten(&t->w);
			topics_discover(h, TOPIC_TOPICS, t->name, "withdrawn", p->conf->name);
		}
		topic_reap(h, t);
	}
}

void
topics_forget(struct hub *h, const char *name)
{
	struct topic *t, *next;

	for (t = h->topics; t != NULL; t = next) {
		next = t->next;
		if (strcmp(t->owner, name) != 0)
			continue;
		t->owner[0] = '\0';	/* no next instance to keep it for */
		topic_reap(h, t);
	}
}

int
topics_init(struct hub *h)
{
	host_on_detach(h, on_detach);
	return 0;
}

void
topics_free(struct hub *h)
{
	struct topic *t;

	while ((t = h->topics) != NULL) {
		h->topics = t->next;
		topic_free(t);
	}
}

/* -- figures ------------------------------------------------------------------- */

static json_object *
sub_json(struct hub *h, const struct topic *t, struct topic_sub *s, uint64_t claim,
	 uint64_t now)
{
	json_object *o = json_object_new_object();
	struct hp_topic_figures f = { 0, 0, 0 };
	char who[WHO_MAX];

	for (uint32_t i = 0; i < t->w.nsubs; i++)
		if (t->w.subs[i].id == s->id)
			hp_topic_cursor_read(&t->w.subs[i].cur, &f);
	/* a rate between two looks, at least a second apart */
	if (now - s->rate_ns >= 1000000000ull) {
		s->rate = (double)(f.received - s->rate_received) * 1e9 / (double)(now - s->rate_ns);
		s->rate_ns = now;
		s->rate_received = f.received;
	}
	json_object_object_add(o, "who", json_object_new_string(who_of(h, s, who, sizeof(who))));
	json_object_object_add(o, "policy",
			       json_object_new_string(hp_topic_policy_name(s->policy)));
	json_object_object_add(o, "received", json_object_new_uint64(f.received));
	json_object_object_add(o, "lost", json_object_new_uint64(f.lost));
	json_object_object_add(o, "behind", json_object_new_uint64(claim > f.read ?
								    claim - f.read : 0));
	json_object_object_add(o, "rate", json_object_new_double(s->rate));
	return o;
}

json_object *
topics_json(struct hub *h)
{
	json_object *all = json_object_new_array();
	uint64_t now = hp_now_ns();

	for (struct topic *t = h->topics; t != NULL; t = t->next) {
		json_object *o = json_object_new_object(), *subs = json_object_new_array();
		struct peer *p = publisher(h, t);
		uint64_t claim = hp_topic_claimed(&t->w.map);

		json_object_object_add(o, "name", json_object_new_string(t->name));
		json_object_object_add(o, "signature",
				       t->has_sig ? json_object_new_string(t->sig) : NULL);
		json_object_object_add(o, "publisher",
				       t->host_owned ? json_object_new_string("hub") :
				       p != NULL ? json_object_new_string(p->conf->name) : NULL);
		json_object_object_add(o, "retain",
				       json_object_new_boolean((t->flags & HP_TOPIC_RETAIN) != 0));
		json_object_object_add(o, "slots", json_object_new_uint64(t->geom.slots));
		json_object_object_add(o, "event_max", json_object_new_uint64(t->geom.event_max));
		json_object_object_add(o, "published", json_object_new_uint64(claim));
		for (struct topic_sub *s = t->subs; s != NULL; s = s->next)
			json_object_array_add(subs, sub_json(h, t, s, claim, now));
		json_object_object_add(o, "subscribers", subs);
		json_object_array_add(all, o);
	}
	return all;
}
