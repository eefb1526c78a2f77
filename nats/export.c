/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Exports: this hub's methods that match [export] methods, offered on
 * NATS. hub.methods lists them (now and every announce interval: a
 * method comes and goes with its guest); each gets a subscription to
 * PREFIX.call.METHOD in the queue group PREFIX (NATS gives each request
 * to one of the hubs that export it), and PREFIX.at.HUB.> reaches this
 * hub by name; PREFIX.announce says what they are. What comes on these
 * subjects goes to callin.c (requests, cancels) and estream.c (a
 * stream's credit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nats/hubnats.h"
#include "proto/builtin.h"

/* Methods or topics to export (topics.c has the topics'). */
static int
exporting(const struct bridge *b)
{
	return b->conf.nexports > 0 || b->conf.netopics > 0;
}

static struct br_export *
export_find(struct bridge *b, const char *name)
{
	for (uint32_t i = 0; i < b->nexports; i++)
		if (strcmp(b->exports[i].name, name) == 0)
			return &b->exports[i];
	return NULL;
}

/* Announces what this hub exports (an empty list: it is leaving). */
static void
announce(struct bridge *b, int leaving)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	char subject[BR_SUBJECT_MAX];
	const char *text;
	natsMsg *m = NULL;
	size_t budget = br_payload_budget(b);
	size_t used = 0;

	json_object_object_add(o, "hub", json_object_new_string(b->conf.name));
	json_object_object_add(o, "every_ms", json_object_new_int64(b->conf.announce_ms));
	/* not in the queue group: called by name only by those who name it
	 * (from =), never picked by another's load sharing (route.c) */
	if (!b->conf.queue)
		json_object_object_add(o, "queue", json_object_new_boolean(0));
	for (uint32_t i = 0; !leaving && i < b->nexports; i++) {
		const struct br_export *x = &b->exports[i];
		json_object *pair;

		/* with queue = no too: callers that name this hub (from =)
		 * learn of it so */
		used += strlen(x->name) + strlen(x->sig) + 8;
		if (used > budget)
			break;	/* the rest stay reachable, unannounced */
		pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_string(x->name));
		json_object_array_add(pair, json_object_new_string(x->sig));
		json_object_array_add(a, pair);
	}
	json_object_object_add(o, "methods", a);
	if (b->topics != NULL && !leaving)
		br_topics_announce(b, o, &used, budget);
	/* signed with it: an old announcement sent again is refused */
	json_object_object_add(o, "seq", json_object_new_int64((int64_t)br_trust_next_seq(b)));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	snprintf(subject, sizeof(subject), "%s.announce", b->conf.subject);
	if (natsMsg_Create(&m, subject, NULL, text, (int)strlen(text)) == NATS_OK &&
	    br_trust_sign(b, m, text, strlen(text)) == 0)
		natsConnection_PublishMsg(b->nc, m);
	natsMsg_Destroy(m);
	json_object_put(o);
}

static int
subscribe(struct bridge *b, struct br_export *x)
{
	char subject[BR_SUBJECT_MAX];

	snprintf(subject, sizeof(subject), "%s.call.%s", b->conf.subject, x->name);
	return natsConnection_QueueSubscribeSync(&x->sub, b->nc, subject, b->conf.subject) ==
	    NATS_OK ? 0 : -1;
}

/* A method hub.methods listed: exported (or still). */
static void
export_one(struct bridge *b, const char *name, const char *sig)
{
	struct br_export *x, *grown;

	if ((x = export_find(b, name)) == NULL) {
		if (b->nexports >= BR_METHODS_MAX ||
		    (grown = realloc(b->exports, (b->nexports + 1) * sizeof(*grown))) == NULL)
			return;
		b->exports = grown;
		x = &b->exports[b->nexports++];
		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%s", name);
	}
	snprintf(x->sig, sizeof(x->sig), "%s", sig);
	if (hp_sig_parse(x->sig, &x->parsed, NULL) != 0) {
		x->sig[0] = '\0';	/* hubd checked it: not reached */
		return;
	}
	x->chan_arg = br_chan_arg(&x->parsed);
	x->seen = b->refresh;
}

/* hub.methods's answer for one pattern: what it lists is exported. */
static void
on_methods(void *ctx, int status, const uint8_t *res, size_t len)
{
	br_refresh_answer(ctx, "hub.methods", status, res, len, export_one);
}

/* After every pattern's answer: new methods subscribed, gone ones
 * dropped, then announced. */
static void
refresh_done(struct bridge *b)
{
	for (uint32_t i = 0; i < b->nexports;) {
		struct br_export *x = &b->exports[i];

		if (x->seen != b->refresh) {
			if (x->sub != NULL) {
				natsSubscription_Unsubscribe(x->sub);
				natsSubscription_Destroy(x->sub);
				br_log("no longer exporting %s", x->name);
			}
			b->exports[i] = b->exports[--b->nexports];
			continue;
		}
		if (x->sub == NULL && b->conf.queue && b->nc != NULL) {
			if (subscribe(b, x) == 0)
				br_log("exporting %s (%s)", x->name, x->sig);
			else
				x->sub = NULL;
		}
		i++;
	}
	if (b->topics != NULL)
		br_topics_refresh_done(b);
	if (b->nc != NULL)
		announce(b, 0);
}

static void
refresh(struct bridge *b)
{
	uint8_t arg[BR_NAME_MAX + 8];
	size_t pos;

	b->refresh++;
	b->refresh_pending = 1;
	b->refresh_failed = 0;
	for (int i = 0; i < b->conf.nexports; i++) {
		pos = 0;
		guest_pc_put_str(arg, sizeof(arg), &pos, b->conf.exports[i],
				 strlen(b->conf.exports[i]));
		if (guest_call_async(b->g, HP_SVC_METHODS, arg, pos, on_methods, b, NULL) == 0)
			b->refreshing++;
		else
			b->refresh_failed = 1;
	}
	if (b->topics != NULL)
		br_topics_refresh(b);
}

/* A request for method: to callin.c, with the export it names (NULL:
 * none). */
static void
request(struct bridge *b, natsMsg *m, const char *method)
{
	natsMsg *v[BR_BATCH_MAX];
	int n = br_gather_requests(b, m, v);

	if (n == -1)
		br_callin_request(b, m, method, export_find(b, method));
	/* a batch (gather.c): each entry as the request it stands for; the
	 * export found again for each, a call may have changed the list */
	for (int i = 0; i < n; i++) {
		b->in_batch = 1;
		br_callin_request(b, v[i], method, export_find(b, method));
		b->in_batch = 0;
		br_msg_done(b, v[i]);
	}
}

int
br_export_msg(struct bridge *b, natsMsg *m)
{
	const char *s = natsMsg_GetSubject(m), *rest;
	size_t plen = strlen(b->conf.subject), nlen = strlen(b->conf.name);
	size_t ilen = strlen(b->inbox);

	if (!exporting(b))
		return 0;
	if (strncmp(s, b->inbox, ilen) == 0 && strncmp(s + ilen, ".c.", 3) == 0) {
		br_estream_credit(b, m, s + ilen + 3);
		br_msg_done(b, m);
		return 1;
	}
	if (strncmp(s, b->conf.subject, plen) != 0 || s[plen] != '.')
		return 0;
	rest = s + plen + 1;
	if (strncmp(rest, "call.", 5) == 0)
		request(b, m, rest + 5);
	else if (strncmp(rest, "at.", 3) == 0 && strncmp(rest + 3, b->conf.name, nlen) == 0 &&
		 rest[3 + nlen] == '.')
		request(b, m, rest + 3 + nlen + 1);
	else if (strcmp(rest, "cancel") == 0)
		br_callin_cancel(b, m);
	else if (strcmp(rest, "discover") == 0) {
		/* soon, not at once: every hub answers the same question */
		if (b->next_announce_ns > b->now_ns + 100000000u)
			b->next_announce_ns = b->now_ns + 100000000u;
	} else
		return 0;
	br_msg_done(b, m);
	return 1;
}

/* What came on the subscriptions the loop reads itself (requests,
 * cancels, discovery), after libnats read the socket. */
void
br_export_drain(struct bridge *b)
{
	natsSubscription *fixed[3] = { b->sub_at, b->sub_cancel, b->sub_discover };

	for (int i = 0; i < 3; i++)
		br_drain(fixed[i], b, br_export_msg);
	/* index, not pointer: a request's call may let libguest serve, and
	 * the list of exports be grown meanwhile */
	for (uint32_t i = 0; i < b->nexports; i++)
		br_drain(b->exports[i].sub, b, br_export_msg);
	br_service_drain(b);
}

void
br_export_tick(struct bridge *b)
{
	if (!exporting(b) || b->now_ns < b->next_escan_ns)
		return;
	/* as import's: every BR_SCAN_NS */
	b->next_escan_ns = b->now_ns + BR_SCAN_NS;
	if (b->nc != NULL)
		b->max_payload = natsConnection_GetMaxPayload(b->nc);
	if (b->refresh_pending && b->refreshing == 0) {
		/* a pattern unanswered: keep what was exported, say it again */
		if (b->refresh_failed && b->nc != NULL)
			announce(b, 0);
		else
			refresh_done(b);
		b->refresh_pending = 0;
	}
	if (b->now_ns >= b->next_announce_ns && b->refreshing == 0 && b->nc != NULL) {
		refresh(b);
		b->next_announce_ns = b->now_ns + (uint64_t)b->conf.announce_ms * 1000000u;
	}
	br_callin_scan(b);
}

void
br_export_start(struct bridge *b)
{
	br_callin_start(b);
	br_service_start(b);
}

int
br_export_attach(struct bridge *b)
{
	char subject[BR_SUBJECT_MAX];

	if (!exporting(b))
		return 0;
	snprintf(subject, sizeof(subject), "%s.at.%s.>", b->conf.subject, b->conf.name);
	if (natsConnection_SubscribeSync(&b->sub_at, b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.cancel", b->conf.subject);
	if (natsConnection_SubscribeSync(&b->sub_cancel, b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.discover", b->conf.subject);
	if (natsConnection_SubscribeSync(&b->sub_discover, b->nc, subject) != NATS_OK)
		return -1;
	if (br_service_attach(b) != 0)
		return -1;
	/* the methods are subscribed and announced at the next refresh */
	b->next_announce_ns = 0;
	b->next_escan_ns = 0;
	return 0;
}

void
br_export_detach(struct bridge *b)
{
	for (uint32_t i = 0; i < b->nexports; i++) {
		natsSubscription_Destroy(b->exports[i].sub);
		b->exports[i].sub = NULL;
	}
	natsSubscription_Destroy(b->sub_at);
	natsSubscription_Destroy(b->sub_cancel);
	natsSubscription_Destroy(b->sub_discover);
	b->sub_at = b->sub_cancel = b->sub_discover = NULL;
	br_service_detach(b);
}

void
br_export_stop(struct bridge *b)
{
	if (exporting(b) && b->nc != NULL)
		announce(b, 1);
	br_export_detach(b);
	br_callin_stop(b);
	br_service_stop(b);
	free(b->exports);
	/* the last answers and the goodbye out, if there is a way out */
	if (b->nc != NULL && natsConnection_Status(b->nc) == NATS_CONN_STATUS_CONNECTED)
		br_write_out(b, 500);
}
