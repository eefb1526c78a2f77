/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest's topics (guest.h, proto/topic.h): what it publishes and what
 * it subscribes to, set up with the hub's built-ins (hub.advertise,
 * hub.subscribe) and HP_MSG_TOPIC's descriptors; events written once
 * into the topic's memory and read from it in the service loop, each
 * subscription's bell in the guest's sleep. Over 600 lines and whole:
 * the hub's messages, the service loop's part and the public calls all
 * change one table of publications and subscriptions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/builtin.h"
#include "proto/method.h"
#include "proto/postcard.h"
#include "proto/topic.h"

#define TOPICS_BATCH	64	/* events delivered per subscription per round */

struct lg_pub {
	char			name[HP_TOPIC_NAME_MAX + 1];
	struct hp_sig		sig;		/* its events' arguments */
	uint32_t		topic;		/* hubd's id, 0: no memory yet */
	uint32_t		block_ms;
	uint32_t		event_max;
	int			mapped;
	struct hp_topic_writer	w;
};

struct lg_sub {
	int			id;
	int			claimed;	/* guest_subscribe returned it */
	uint32_t		topic;
	char			name[HP_TOPIC_NAME_MAX + 1];
	char			sig[HP_SIG_MAX_LEN + 1];
	struct hp_sig		psig;
	int			has_sig;
	int			announced;	/* sleeping set in its cursor */
	int			ended;		/* the hub ended it */
	struct hp_topic_reader	r;
	guest_event_fn		fn;
	void			*ctx;
	uint8_t			*buf;		/* event_max bytes */
	size_t			held;		/* guest_next_event: an event kept */
	struct guest_event	held_ev;
};

struct lg_topics {
	struct lg_pub		*pub[LG_TOPICS_MAX];
	uint32_t		npub;
	struct lg_sub		*sub[LG_TOPICS_MAX];
	uint32_t		nsub;
	uint32_t		bells_hung;	/* the group's count, as last seen */
};

/* -- bells ----------------------------------------------------------------- */

static void
bell_add(struct guest *g, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd < 0)
		return;
	hp_group_bell_add(&g->group, fd);
	if (g->epfd >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void
bell_remove(struct guest *g, int fd)
{
	if (fd < 0)
		return;
	hp_group_bell_remove(&g->group, fd);
	if (g->epfd >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static int
in_group(const struct guest *g, int fd)
{
	for (uint32_t i = 0; i < g->group.nbells; i++)
		if (g->group.bell[i] == fd)
			return 1;
	return 0;
}

/* Bells the sleep found hung up (a peer that went or shut its end) leave
 * guest_fd's epoll too, which would otherwise report them at every look. */
static void
bells_reap(struct guest *g)
{
	struct lg_topics *ts = g->topics;

	if (ts->bells_hung == g->group.bells_hung || g->epfd < 0)
		return;
	ts->bells_hung = g->group.bells_hung;
	for (uint32_t i = 0; i < ts->nsub; i++)
		if (!in_group(g, ts->sub[i]->r.bell))
			epoll_ctl(g->epfd, EPOLL_CTL_DEL, ts->sub[i]->r.bell, NULL);
	for (uint32_t i = 0; i < ts->npub; i++)
		for (uint32_t j = 0; ts->pub[i]->mapped && j < ts->pub[i]->w.nsubs; j++)
			if (!in_group(g, ts->pub[i]->w.subs[j].bell))
				epoll_ctl(g->epfd, EPOLL_CTL_DEL, ts->pub[i]->w.subs[j].bell, NULL);
}

/* -- the hub's word ---------------------------------------------------------- */

static struct lg_pub *
pub_by_name(struct lg_topics *ts, const char *name)
{
	for (uint32_t i = 0; i < ts->npub; i++)
		if (strcmp(ts->pub[i]->name, name) == 0)
			return ts->pub[i];
	return NULL;
}

static struct lg_pub *
pub_by_topic(struct lg_topics *ts, uint32_t topic)
{
	for (uint32_t i = 0; i < ts->npub; i++)
		if (ts->pub[i]->topic == topic && ts->pub[i]->mapped)
			return ts->pub[i];
	return NULL;
}

static struct lg_sub *
sub_by_id(struct lg_topics *ts, int id)
{
	for (uint32_t i = 0; i < ts->nsub; i++)
		if (ts->sub[i]->id == id)
			return ts->sub[i];
	return NULL;
}

static void
pub_unmap(struct guest *g, struct lg_pub *p)
{
	if (!p->mapped)
		return;
	for (uint32_t i = 0; i < p->w.nsubs; i++)
		bell_remove(g, p->w.subs[i].bell);
	hp_topic_writer_free(&p->w);
	p->mapped = 0;
}

/* WRITE: our topic's memory. */
static void
on_write(struct guest *g, const struct hp_topic_msg *tm, const int *fds)
{
	struct lg_pub *p = pub_by_name(g->topics, tm->name);
	struct hp_topic_map map;
	const char *why;

	if (p == NULL || fds[0] < 0 || hp_topic_map(&map, fds[0], &tm->geom, 1, &why) != 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		return;
	}
	close(fds[0]);
	pub_unmap(g, p);
	hp_topic_writer_init(&p->w, &map);
	p->mapped = 1;
	p->topic = tm->topic;
	p->block_ms = tm->block_ms;
	p->event_max = tm->geom.event_max;
}

/* READER: a subscriber of ours. */
static void
on_reader(struct guest *g, const struct hp_topic_msg *tm, const int *fds)
{
	struct lg_pub *p = pub_by_topic(g->topics, tm->topic);
	const char *why;

	if (p == NULL || fds[0] < 0 || fds[1] < 0) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return;
	}
	/* taken over (and closed on failure) by writer_add */
	if (hp_topic_writer_add(&p->w, tm->sub, tm->policy, fds[0], fds[1], &why) != 0)
		return;
	/* only a block subscriber's ring is waited for (publish) */
	if (tm->policy == HP_TOPIC_BLOCK)
		bell_add(g, fds[1]);
}

static void
on_reader_gone(struct guest *g, const struct hp_topic_msg *tm)
{
	struct lg_pub *p = pub_by_topic(g->topics, tm->topic);

	if (p == NULL)
		return;
	for (uint32_t i = 0; i < p->w.nsubs; i++)
		if (p->w.subs[i].id == tm->sub)
			bell_remove(g, p->w.subs[i].bell);
	hp_topic_writer_remove(&p->w, tm->sub);
}

static void
sub_set_sig(struct lg_sub *s, const char *sig)
{
	/* "": nobody advertised it yet (HP_TOPIC_SIGNATURE comes then) */
	snprintf(s->sig, sizeof(s->sig), "%s", sig);
	s->has_sig = sig[0] != '\0' && hp_topic_sig_parse(sig, &s->psig, NULL) == 0;
}

/* READ: our subscription, before hub.subscribe's answer. */
static void
on_read(struct guest *g, const struct hp_topic_msg *tm, const int *fds)
{
	struct lg_topics *ts = g->topics;
	struct lg_sub *s;
	const char *why;

	s = NULL;
	if (ts->nsub >= LG_TOPICS_MAX || fds[0] < 0 || fds[1] < 0 || fds[2] < 0 ||
	    sub_by_id(ts, (int)tm->sub) != NULL || (s = calloc(1, sizeof(*s))) == NULL ||
	    (s->buf = malloc(tm->geom.event_max)) == NULL) {
		free(s);
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return;
	}
	/* takes the three over, on failure too */
	if (hp_topic_reader_init(&s->r, fds[0], &tm->geom, fds[1], fds[2], tm->policy, &why) != 0) {
		free(s->buf);
		free(s);
		return;
	}
	s->id = (int)tm->sub;
	s->topic = tm->topic;
	snprintf(s->name, sizeof(s->name), "%s", tm->name);
	sub_set_sig(s, tm->sig);
	bell_add(g, s->r.bell);
	ts->sub[ts->nsub++] = s;
}

static int
on_topic(struct guest *g, struct hp_msg_in *m)
{
	struct lg_topics *ts = g->topics;
	struct hp_topic_msg tm;
	int fds[3] = { -1, -1, -1 }, n;

	if (hp_topic_msg_decode(m->payload, m->len, &tm) != 0)
		return 0;	/* nothing to take: its descriptors, if any, are the
				 * next's problem, as a lane's (lane.c) */
	hp_endpoint_drain(&g->ep);
	n = hp_topic_msg_fds(tm.op);
	for (int i = 0; i < n; i++)
		fds[i] = hp_fdq_take(&g->group.fdq);
	switch (tm.op) {
	case HP_TOPIC_WRITE:
		on_write(g, &tm, fds);
		break;
	case HP_TOPIC_READER:
		on_reader(g, &tm, fds);
		break;
	case HP_TOPIC_READER_GONE:
		on_reader_gone(g, &tm);
		break;
	case HP_TOPIC_READ:
		on_read(g, &tm, fds);
		break;
	case HP_TOPIC_SIGNATURE:
		for (uint32_t i = 0; i < ts->nsub; i++)
			if (ts->sub[i]->topic == tm.topic)
				sub_set_sig(ts->sub[i], tm.sig);
		break;
	case HP_TOPIC_END:
		for (uint32_t i = 0; i < ts->nsub; i++)
			if (ts->sub[i]->id == (int)tm.sub)
				ts->sub[i]->ended = 1;
		break;
	}
	return 0;
}

/* -- delivering ---------------------------------------------------------------- */

/* The next event of s into its buffer, as guest_event: 1, 0 none. */
static int
take(struct lg_sub *s, struct guest_event *ev)
{
	struct hp_topic_event te;
	int rc = hp_topic_next(&s->r, s->buf, s->r.map.geom.event_max, &te);

	if (rc == 0)
		return 0;
	*ev = (struct guest_event){ .sub = s->id, .topic = s->name, .sig = s->sig,
				    .data = s->buf, .len = rc == 1 ? te.len : 0,
				    .seq = te.seq, .lost = te.lost, .bad = rc != 1 };
	/* the publisher's bytes, checked as a method's arguments are */
	if (rc == 1 && s->has_sig && hp_sig_check_args(&s->psig, s->buf, te.len) != 0)
		ev->bad = 1;
	return 1;
}

/* The service loop's part: each subscription with a handler gets what
 * came, a batch at a time. */
static int
topics_serve(struct guest *g, int *did)
{
	struct lg_topics *ts = g->topics;
	struct guest_event ev;

	bells_reap(g);
	for (uint32_t i = 0; i < ts->nsub; i++) {
		struct lg_sub *s = ts->sub[i];

		if (s->announced) {
			hp_topic_reader_awake(&s->r);
			s->announced = 0;
		}
		if (!s->claimed || s->fn == NULL)
			continue;
		for (int n = 0; n < TOPICS_BATCH && take(s, &ev) == 1; n++) {
			*did = 1;
			s->fn(g, &ev, s->ctx);
			lg_tick(g, HP_MSG_DATA);	/* an event counts as an item */
			/* the handler may have unsubscribed it */
			if (i >= ts->nsub || ts->sub[i] != s)
				break;
		}
	}
	return 0;
}

static int
topics_ready(struct guest *g)
{
	struct lg_topics *ts = g->topics;

	for (uint32_t i = 0; i < ts->nsub; i++)
		if (ts->sub[i]->claimed && ts->sub[i]->fn != NULL &&
		    hp_topic_ready(&ts->sub[i]->r))
			return 1;
	return 0;
}

/* Before a sleep: each subscription told we sleep, and looked at again. */
static int
topics_sleep(struct guest *g)
{
	struct lg_topics *ts = g->topics;
	int any = 0;

	for (uint32_t i = 0; i < ts->nsub; i++) {
		struct lg_sub *s = ts->sub[i];

		if (!s->claimed)
			continue;
		s->announced = 1;
		if (hp_topic_reader_announce(&s->r) && s->fn != NULL)
			any = 1;
	}
	return any;
}

/* -- publishing ------------------------------------------------------------------ */

static int
advertise(struct guest *g, const char *topic, const char *sig, unsigned flags)
{
	uint8_t args[HP_TOPIC_NAME_MAX + HP_SIG_MAX_LEN + 32], res[256] = "";
	struct lg_topics *ts = g->topics;
	struct lg_pub *p;
	struct hp_pc_enc e;
	struct hp_sig ps;
	size_t n, rlen = 0;
	int rc, fresh = 0;

	if (topic != NULL && strlen(topic) > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;	/* named as a method, as guest_register says */
	if (topic == NULL || sig == NULL || (n = strlen(topic)) == 0 ||
	    hp_method_name_refused(topic, n) != NULL || hp_topic_sig_parse(sig, &ps, NULL) != 0)
		return -EINVAL;
	if ((p = pub_by_name(ts, topic)) == NULL) {
		if (ts->npub >= LG_TOPICS_MAX || (p = calloc(1, sizeof(*p))) == NULL)
			return -ENOMEM;
		memcpy(p->name, topic, n + 1);
		ts->pub[ts->npub++] = p;
		fresh = 1;
	}
	p->sig = ps;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, topic, n);
	hp_pc_put_str(&e, sig, strlen(sig));
	hp_pc_put_bool(&e, (flags & GUEST_TOPIC_RETAIN) != 0);
	g->holding++;
	rc = guest_call_with(g, HP_SVC_ADVERTISE, args, e.len, res, sizeof(res) - 1, &rlen,
			    10000, &lg_own_call);
	g->holding--;
	if (rc == 0 && p->mapped)
		return 0;
	if (rc == 0)
		rc = -EIO;	/* agreed, but its memory did not come */
	else if (rc == -EREMOTEIO || rc == -ECONNREFUSED)
		rc = strstr((char *)res, "not one of") != NULL ? -EPERM :
		    strstr((char *)res, "another guest") != NULL ? -EEXIST :
		    strstr((char *)res, "too many") != NULL ? -ENOSPC : -EINVAL;
	if (fresh) {
		ts->npub--;
		free(p);
	}
	return rc;
}

int
guest_advertise(struct guest *g, const char *topic, const char *sig, unsigned flags)
{
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	rc = advertise(g, topic, sig, flags);
	g->rt->unlock(g);
	return rc;
}

static int
room_ready(void *arg)
{
	return hp_topic_writer_room(arg);
}

static int
publish(struct guest *g, struct lg_pub *p, const void *ev, size_t len)
{
	struct timeout t = { (int)p->block_ms, 0 };
	uint32_t blocker;
	int rc;

	if (len > p->event_max)
		return -EMSGSIZE;
	if (hp_sig_check_args(&p->sig, ev, len) != 0)
		return -EINVAL;
	while ((rc = hp_topic_publish(&p->w, ev, len, &blocker)) == -EAGAIN) {
		/* a block subscriber has not made room: wait for it, up to
		 * the topic's block timeout, then overrun it */
		hp_topic_writer_announce(&p->w);
		rc = g->rt->wait_serving(g, 0, room_ready, &p->w, &t);
		hp_topic_writer_cancel(&p->w);
		if (rc < 0)
			return rc;
		if (rc == 0)
			hp_topic_overrun(&p->w);
		if (!p->mapped)
			return -ENOENT;	/* the hub took it back meanwhile */
	}
	/* a loop that only publishes beats too */
	lg_tick(g, HP_MSG_DATA);
	return rc;
}

int
guest_publish(struct guest *g, const char *topic, const void *ev, size_t len)
{
	struct lg_pub *p;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (lg_buf_bad(ev, len))
		return -EINVAL;
	g->rt->lock(g);
	p = topic != NULL ? pub_by_name(g->topics, topic) : NULL;
	rc = p == NULL || !p->mapped ? -ENOENT : publish(g, p, ev, len);
	g->rt->unlock(g);
	return rc;
}

/* -- subscribing ----------------------------------------------------------------- */

static void
sub_free(struct guest *g, struct lg_sub *s)
{
	struct lg_topics *ts = g->topics;

	for (uint32_t i = 0; i < ts->nsub; i++)
		if (ts->sub[i] == s) {
			/* in order: the service loop walks the array */
			memmove(&ts->sub[i], &ts->sub[i + 1], (ts->nsub - i - 1) * sizeof(s));
			ts->nsub--;
			break;
		}
	bell_remove(g, s->r.bell);
	hp_topic_reader_free(&s->r);
	free(s->buf);
	free(s);
}

static int
subscribe(struct guest *g, const char *topic, unsigned policy, guest_event_fn fn, void *ctx)
{
	uint8_t args[HP_TOPIC_NAME_MAX + 32], res[256] = "";
	const char *pname = hp_topic_policy_name(policy);
	struct hp_pc_enc e;
	struct hp_pc_dec d;
	struct lg_sub *s;
	size_t n, rlen = 0;
	uint64_t id;
	int rc;

	if (topic != NULL && strlen(topic) > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;
	if (topic == NULL || (n = strlen(topic)) == 0 || pname == NULL ||
	    hp_method_name_refused(topic, n) != NULL)
		return -EINVAL;
	if (g->topics->nsub >= LG_TOPICS_MAX)
		return -EMFILE;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, topic, n);
	hp_pc_put_str(&e, pname, strlen(pname));
	g->holding++;
	rc = guest_call_with(g, HP_SVC_SUBSCRIBE, args, e.len, res, sizeof(res) - 1, &rlen,
			    10000, &lg_own_call);
	g->holding--;
	if (rc == -EREMOTEIO || rc == -ECONNREFUSED)
		return strstr((char *)res, "subscribers") != NULL ? -EPERM :
		    strstr((char *)res, "too many") != NULL ? -EMFILE : -EINVAL;
	if (rc != 0)
		return rc;
	hp_pc_dec_init(&d, res, rlen);
	id = hp_pc_get_u64(&d);
	if (d.err != 0 || id == 0 || id > INT32_MAX || (s = sub_by_id(g->topics, (int)id)) == NULL)
		return -EIO;	/* agreed, but its memory did not come */
	s->claimed = 1;
	s->fn = fn;
	s->ctx = ctx;
	return (int)id;
}

int
guest_subscribe(struct guest *g, const char *topic, unsigned policy, guest_event_fn fn,
		void *ctx)
{
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	rc = subscribe(g, topic, policy, fn, ctx);
	g->rt->unlock(g);
	return rc;
}

static int
unsubscribe(struct guest *g, int id)
{
	uint8_t args[16], res[128];
	struct lg_sub *s = sub_by_id(g->topics, id);
	struct hp_pc_enc e;
	size_t rlen = 0;
	int rc;

	if (s == NULL || !s->claimed)
		return -ENOENT;
	sub_free(g, s);
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_u64(&e, (uint64_t)id);
	g->holding++;
	rc = guest_call_with(g, HP_SVC_UNSUBSCRIBE, args, e.len, res, sizeof(res), &rlen,
			    10000, &lg_own_call);
	g->holding--;
	return rc == -EREMOTEIO ? 0 : rc;	/* gone already: as asked */
}

int
guest_unsubscribe(struct guest *g, int sub)
{
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	rc = unsubscribe(g, sub);
	g->rt->unlock(g);
	return rc;
}

static int
sub_ready(void *arg)
{
	struct lg_sub *s = arg;

	return s->held != 0 || s->ended || hp_topic_ready(&s->r);
}

static int
next_event(struct guest *g, int id, void *buf, size_t cap, struct guest_event *ev,
	   int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };
	struct lg_sub *s = sub_by_id(g->topics, id);
	int rc;

	if (s == NULL || !s->claimed)
		return -ENOENT;
	if (s->fn != NULL)
		return -EINVAL;	/* its events go to its handler */
	while (!s->held) {
		if (take(s, &s->held_ev) == 1) {
			s->held = 1;
			break;
		}
		if (s->ended)
			return -EPIPE;
		rc = g->rt->wait_serving(g, 0, sub_ready, s, &t);
		if (rc <= 0)
			return rc;
		/* a handler run meanwhile may have ended it */
		if ((s = sub_by_id(g->topics, id)) == NULL)
			return -ENOENT;
	}
	if (s->held_ev.len > cap)
		return -EMSGSIZE;
	*ev = s->held_ev;
	if (ev->len > 0)
		memcpy(buf, s->buf, ev->len);
	ev->data = buf;
	s->held = 0;
	return 1;
}

int
guest_next_event(struct guest *g, int sub, void *buf, size_t cap, struct guest_event *ev,
		 int timeout_ms)
{
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (lg_buf_bad(buf, cap))
		return -EINVAL;
	g->rt->lock(g);
	rc = next_event(g, sub, buf, cap, ev, timeout_ms);
	g->rt->unlock(g);
	return rc;
}

/* -- set-up ------------------------------------------------------------------------ */

int
lg_topics_init(struct guest *g)
{
	if ((g->topics = calloc(1, sizeof(*g->topics))) == NULL)
		return -ENOMEM;
	g->on_msg[HP_MSG_TOPIC] = on_topic;
	g->topics_serve = topics_serve;
	g->topics_ready = topics_ready;
	g->topics_sleep = topics_sleep;
	return 0;
}

void
lg_topics_free(struct guest *g)
{
	struct lg_topics *ts = g->topics;

	if (ts == NULL)
		return;
	while (ts->nsub > 0)
		sub_free(g, ts->sub[ts->nsub - 1]);
	for (uint32_t i = 0; i < ts->npub; i++) {
		pub_unmap(g, ts->pub[i]);
		free(ts->pub[i]);
	}
	free(ts);
	g->topics = NULL;
}
