/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The operators' side of topics (doc/events.md): topics lists them with
 * their figures and retained values, listen hands a client a
 * subscription to read in place, emit writes an event as the operator. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/client.h"
#include "daemon/cmd.h"
#include "daemon/log.h"
#include "daemon/pcjson.h"
#include "daemon/topics.h"

/* The retained value (the newest event) of each topic that keeps one. */
static void
add_retained(struct hub *h, json_object *list)
{
	size_t n = json_object_array_length(list);

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(list, i), *name, *v = NULL;
		struct topic *t;
		uint8_t *buf;
		uint64_t seq;
		size_t len;

		if (!json_object_object_get_ex(o, "name", &name) ||
		    (t = topics_find(h, json_object_get_string(name))) == NULL ||
		    !(t->flags & HP_TOPIC_RETAIN) || !t->has_sig)
			continue;
		if ((buf = malloc(t->geom.event_max)) == NULL)
			continue;
		if (hp_topic_latest(&t->w.map, buf, t->geom.event_max, &len, &seq) == 1)
			pcjson_args(&t->psig, buf, len, &v);
		free(buf);
		json_object_object_add(o, "retained", v);
	}
}

void
cmd_topics(struct client *c, const struct control_req *r)
{
	json_object *o = json_object_new_object(), *list = topics_json(c->h);

	(void)r;
	add_retained(c->h, list);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "topics", list);
	client_reply(c, o);
}

/* -- listen -------------------------------------------------------------------- */

/* A listener's client, and its subscription (in the client's call). */
struct listener {
	struct client		*c;
	struct topic_sub	*s;
};

static void
listener_tell(void *arg, json_object *line)
{
	struct listener *l = arg;

	client_reply(l->c, line);
}

static void
listener_gone(struct ext_call *x)
{
	struct listener *l = x->ctx;
	struct client *c = l->c;

	topics_drop(c->h, l->s);
	x->ctx = NULL;
	x->on_abandon = NULL;
	free(l);
}

void
cmd_listen(struct client *c, const struct control_req *r)
{
	int policy = r->policy != NULL ? hp_topic_policy_parse(r->policy) :
	    (int)HP_TOPIC_DROP_OLDEST;
	struct listener *l;
	struct topic *t;
	json_object *o;
	const char *why;
	int fds[3], rc;

	if (policy < 0) {
		client_reply_error(c, "policy is block, drop-oldest or latest");
		return;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		client_reply_error(c, "out of memory");
		return;
	}
	l->c = c;
	rc = topics_listen(c->h, r->topic, (uint32_t)policy, c->uid, c->privileged, l,
			   listener_tell, fds, &l->s, &why);
	if (rc != 0) {
		free(l);
		client_reply_error(c, why);
		return;
	}
	t = l->s->t;
	if (client_pass_fds(c, fds, 3) != 0) {
		for (int i = 0; i < 3; i++)
			close(fds[i]);
		topics_drop(c->h, l->s);
		free(l);
		client_reply_error(c, "the subscription could not be handed over");
		return;
	}
	for (int i = 0; i < 3; i++)
		close(fds[i]);	/* client_pass_fds keeps its own */
	/* a call that never ends: the connection stays, nothing else is read
	 * from it, its end ends the subscription */
	c->calling = 1;
	c->call.ctx = l;
	c->call.on_abandon = listener_gone;
	c->call.peer = 0;
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "topic", json_object_new_string(t->name));
	json_object_object_add(o, "signature", t->has_sig ? json_object_new_string(t->sig) : NULL);
	json_object_object_add(o, "slots", json_object_new_uint64(t->geom.slots));
	json_object_object_add(o, "event_max", json_object_new_uint64(t->geom.event_max));
	json_object_object_add(o, "policy",
			       json_object_new_string(hp_topic_policy_name((uint32_t)policy)));
	json_object_object_add(o, "retain",
			       json_object_new_boolean((t->flags & HP_TOPIC_RETAIN) != 0));
	json_object_object_add(o, "sub", json_object_new_uint64(l->s->id));
	client_reply(c, o);
}

/* -- emit ---------------------------------------------------------------------- */

void
cmd_emit(struct client *c, const struct control_req *r)
{
	struct topic *t = topics_find(c->h, r->topic);
	static uint8_t buf[HP_TOPIC_EVENT_MAX];
	char what[384], msg[512];
	struct hp_pc_enc e;
	json_object *o;
	const char *why;
	int64_t seq;

	if (t == NULL) {
		/* a hub topic exists once subscribed to: hubd's all the same */
		client_reply_error(c, strncmp(r->topic, "hub.", 4) == 0 ?
				   "hubd publishes the hub.* topics itself: nobody else may" :
				   "no such topic: nobody publishes or subscribes to it");
		return;
	}
	/* its subscribers (guest_wait_method too) trust it to say what is */
	if (t->host_owned) {
		client_reply_error(c, "hubd publishes the hub.* topics itself: nobody else may");
		return;
	}
	if (!t->has_sig) {
		client_reply_error(c, "the topic has no signature yet: nobody advertised it");
		return;
	}
	if (r->nargs != t->psig.nargs) {
		snprintf(msg, sizeof(msg), "%d values given, the topic's events have %u (%s)",
			 r->nargs, t->psig.nargs, t->sig);
		client_reply_error(c, msg);
		return;
	}
	hp_pc_enc_init(&e, buf, t->geom.event_max);
	for (int i = 0; i < r->nargs; i++)
		if (pcjson_encode_arg(&e, &t->psig, t->psig.args[i], r->args[i].s, r->args[i].len,
				      what, sizeof(what)) != 0) {
			if (e.err != 0)
				snprintf(msg, sizeof(msg), "the event is larger than the topic's "
					 "event_max (%u bytes)", t->geom.event_max);
			else
				snprintf(msg, sizeof(msg), "value %d %s", i + 1, what);
			client_reply_error(c, msg);
			return;
		}
	if ((seq = topics_emit(t, buf, e.len, &why)) < 0) {
		client_reply_error(c, why);
		return;
	}
	log_info("topic %s: event %lld emitted by uid %u", t->name, (long long)seq,
		 (unsigned)c->uid);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "seq", json_object_new_uint64((uint64_t)seq));
	client_reply(c, o);
}
