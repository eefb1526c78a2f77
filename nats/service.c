/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* NATS's service protocol (ADR-32, "micro"), so that the tools operators
 * use for NATS services see hubs: an exporting bridge answers $SRV.PING,
 * $SRV.INFO and $SRV.STATS (each alone, with the service's name, and with
 * its name and id) as the service named [nats] subject ("hub"), one
 * instance per bridge, the hub's name in its metadata. Its endpoints are
 * the exported methods, with what callin.c counts of each: requests,
 * errors, the last error, processing time.
 *
 * Answered here, on the loop, not by libnats's own micro (libnats 3.6 and
 * later; Debian's 3.4 has none): that one runs its handlers on threads of
 * its own, while every figure and the list of exports belong to the loop
 * (hubnats.h), and it would subscribe the endpoints itself, where export.c
 * does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "guest.h"
#include "nats/hubnats.h"

#define EPS_MAX		(2 * BR_METHODS_MAX)	/* endpoints ever counted */
#define ERROR_MAX	128			/* last_error, bytes */
#define ANSWERS_MAX	100	/* $SRV answers a second: any NATS client may ask */

/* One endpoint's figures, by name: they outlive its export's coming and
 * going. */
struct ep {
	uint64_t	requests, errors, time_ns;
	char		last_error[ERROR_MAX];
};

struct br_service {
	struct br_names		names;
	struct ep		*eps;		/* by the names' index */
	uint32_t		neps;		/* room in eps */
	char			id[128];	/* this instance: the inbox's token */
	char			started[40];	/* RFC 3339, UTC */
	natsSubscription	*sub[3];	/* $SRV.*, $SRV.*.NAME, $SRV.*.NAME.ID */
	uint64_t		second_ns;	/* the second answers are counted in */
	uint32_t		answers;
	uint64_t		dropped;	/* over ANSWERS_MAX, not answered */
};

void
br_service_start(struct bridge *b)
{
	struct br_service *s;
	const char *dot = strrchr(b->inbox, '.');
	struct timespec ts;
	struct tm tm;

	if (b->conf.nexports == 0 || (s = calloc(1, sizeof(*s))) == NULL)
		return;
	s->names.max = EPS_MAX;
	/* unique per instance, as the inbox is: libnats's NUID */
	snprintf(s->id, sizeof(s->id), "%s", dot != NULL ? dot + 1 : b->inbox);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s->started, sizeof(s->started), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(s->started + strlen(s->started), sizeof(s->started) - strlen(s->started),
		 ".%09ldZ", ts.tv_nsec);
	b->service = s;
}

int
br_service_attach(struct bridge *b)
{
	struct br_service *s = b->service;
	char subject[BR_SUBJECT_MAX];

	if (s == NULL)
		return 0;
	/* any verb: the ones not ADR-32's are dropped in service_msg */
	snprintf(subject, sizeof(subject), "$SRV.*");
	if (natsConnection_SubscribeSync(&s->sub[0], b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "$SRV.*.%s", b->conf.subject);
	if (natsConnection_SubscribeSync(&s->sub[1], b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "$SRV.*.%s.%s", b->conf.subject, s->id);
	if (natsConnection_SubscribeSync(&s->sub[2], b->nc, subject) != NATS_OK)
		return -1;
	return 0;
}

void
br_service_detach(struct bridge *b)
{
	struct br_service *s = b->service;

	if (s == NULL)
		return;
	for (int i = 0; i < 3; i++) {
		natsSubscription_Destroy(s->sub[i]);
		s->sub[i] = NULL;
	}
}

void
br_service_stop(struct bridge *b)
{
	struct br_service *s = b->service;

	if (s == NULL)
		return;
	br_service_detach(b);
	br_names_free(&s->names);
	free(s->eps);
	free(s);
	b->service = NULL;
}

uint32_t
br_service_request(struct bridge *b, const char *name)
{
	struct br_service *s = b->service;
	uint32_t i, cap;
	struct ep *grown;

	if (s == NULL || (i = br_names_find(&s->names, name, 1)) == UINT32_MAX)
		return UINT32_MAX;
	if (i >= s->neps) {
		cap = s->neps < 16 ? 16 : 2 * s->neps;
		if ((grown = realloc(s->eps, (size_t)cap * sizeof(*grown))) == NULL)
			return UINT32_MAX;
		memset(grown + s->neps, 0, (size_t)(cap - s->neps) * sizeof(*grown));
		s->eps = grown;
		s->neps = cap;
	}
	s->eps[i].requests++;
	return i;
}

void
br_service_call(struct bridge *b, struct ecall *e, natsMsg *m, uint32_t ep)
{
	const char *from = NULL;

	(void)b;
	e->ep = ep;
	e->start_ns = br_now_ns();
	/* a NATS client's word, for hubctl calls: a hub's name or "?" */
	if (natsMsgHeader_Get(m, BR_H_FROM, &from) != NATS_OK || from == NULL ||
	    !br_subject_part_ok(from, strlen(from), 0))
		from = "?";
	snprintf(e->from, sizeof(e->from), "%s", from);
}

void
br_service_count(struct bridge *b, uint32_t ep, int status, const void *text, size_t len,
		 uint64_t start_ns)
{
	struct br_service *s = b->service;
	uint64_t now = br_now_ns();
	struct ep *p;

	if (s == NULL || ep >= s->neps)
		return;
	p = &s->eps[ep];
	p->time_ns += now > start_ns ? now - start_ns : 0;
	if (status == 0)
		return;
	p->errors++;
	if (text == NULL || len == 0) {
		text = br_status_word(status);
		len = strlen(text);
	}
	if (len >= sizeof(p->last_error)) {
		/* cut between UTF-8 characters, never inside one */
		len = sizeof(p->last_error) - 1;
		while (len > 0 && (((const uint8_t *)text)[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(p->last_error, text, len);
	p->last_error[len] = '\0';
	/* JSON takes no NUL and json-c no control bytes from us raw */
	for (size_t i = 0; i < len; i++)
		if ((uint8_t)p->last_error[i] < ' ')
			p->last_error[i] = ' ';
}

const char *
br_service_name(struct bridge *b, uint32_t ep)
{
	struct br_service *s = b->service;

	return s != NULL && ep < s->names.n ? s->names.name[ep] : "";
}

/* The fields every answer has: type, name, id, version, metadata. */
static json_object *
standard(struct bridge *b, const char *type)
{
	json_object *o = json_object_new_object(), *md = json_object_new_object();
	char version[32];

	snprintf(version, sizeof(version), "%d.%d.%d", GUEST_VERSION_MAJOR, GUEST_VERSION_MINOR,
		 GUEST_VERSION_PATCH);
	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "name", json_object_new_string(b->conf.subject));
	json_object_object_add(o, "id", json_object_new_string(b->service->id));
	json_object_object_add(o, "version", json_object_new_string(version));
	json_object_object_add(md, "hub", json_object_new_string(b->conf.name));
	json_object_object_add(o, "metadata", md);
	return o;
}

/* Export x as an endpoint: name, subject, queue_group. */
static json_object *
endpoint(struct bridge *b, const struct br_export *x)
{
	json_object *o = json_object_new_object();
	char subject[BR_SUBJECT_MAX];

	json_object_object_add(o, "name", json_object_new_string(x->name));
	if (b->conf.queue) {
		snprintf(subject, sizeof(subject), "%s.call.%s", b->conf.subject, x->name);
		json_object_object_add(o, "subject", json_object_new_string(subject));
		json_object_object_add(o, "queue_group", json_object_new_string(b->conf.subject));
	} else {
		/* queue = no: called by name only, no queue group */
		snprintf(subject, sizeof(subject), "%s.at.%s.%s", b->conf.subject, b->conf.name,
			 x->name);
		json_object_object_add(o, "subject", json_object_new_string(subject));
	}
	return o;
}

static json_object *
info(struct bridge *b)
{
	json_object *o = standard(b, "io.nats.micro.v1.info_response"), *eps = json_object_new_array();
	char text[160];
	size_t used = 0, budget = br_payload_budget(b);

	snprintf(text, sizeof(text), "the methods hub %s exports through hub-nats", b->conf.name);
	json_object_object_add(o, "description", json_object_new_string(text));
	for (uint32_t i = 0; i < b->nexports; i++) {
		const struct br_export *x = &b->exports[i];
		json_object *e, *md;

		if ((used += 2 * strlen(x->name) + strlen(x->sig) + 128) > budget)
			break;	/* as announce: the rest unlisted */
		e = endpoint(b, x);
		md = json_object_new_object();
		json_object_object_add(md, "signature", json_object_new_string(x->sig));
		json_object_object_add(e, "metadata", md);
		json_object_array_add(eps, e);
	}
	json_object_object_add(o, "endpoints", eps);
	return o;
}

static json_object *
stats(struct bridge *b)
{
	struct br_service *s = b->service;
	json_object *o = standard(b, "io.nats.micro.v1.stats_response"), *eps = json_object_new_array();
	size_t used = 0, budget = br_payload_budget(b);

	for (uint32_t i = 0; i < b->nexports; i++) {
		const struct br_export *x = &b->exports[i];
		uint32_t k = br_names_find(&s->names, x->name, 0);
		struct ep none = { 0 }, *p = k < s->neps ? &s->eps[k] : &none;
		json_object *e;

		if ((used += 2 * strlen(x->name) + sizeof(p->last_error) + 200) > budget)
			break;
		e = endpoint(b, x);
		json_object_object_add(e, "num_requests", json_object_new_int64((int64_t)p->requests));
		json_object_object_add(e, "num_errors", json_object_new_int64((int64_t)p->errors));
		json_object_object_add(e, "last_error", json_object_new_string(p->last_error));
		json_object_object_add(e, "processing_time", json_object_new_int64((int64_t)p->time_ns));
		json_object_object_add(e, "average_processing_time", json_object_new_int64(
			p->requests > 0 ? (int64_t)(p->time_ns / p->requests) : 0));
		json_object_array_add(eps, e);
	}
	json_object_object_add(o, "endpoints", eps);
	json_object_object_add(o, "started", json_object_new_string(s->started));
	return o;
}

/* $SRV.VERB[.NAME[.ID]]: the answer to VERB, if the rest is ours. */
static int
service_msg(struct bridge *b, natsMsg *m)
{
	const char *subject = natsMsg_GetSubject(m), *reply = natsMsg_GetReply(m), *rest, *text;
	size_t nlen = strlen(b->conf.subject);
	json_object *o = NULL;
	char verb[8];
	size_t vlen;

	if (strncmp(subject, "$SRV.", 5) != 0 || reply == NULL || *reply == '\0')
		goto out;
	subject += 5;
	vlen = strcspn(subject, ".");
	rest = subject + vlen;
	if (vlen >= sizeof(verb))
		goto out;
	memcpy(verb, subject, vlen);
	verb[vlen] = '\0';
	/* "", ".NAME" or ".NAME.ID": the wildcards took anything */
	if (*rest == '.') {
		if (strncmp(rest + 1, b->conf.subject, nlen) != 0)
			goto out;
		rest += 1 + nlen;
		if (*rest == '.' && strcmp(rest + 1, b->service->id) == 0)
			rest += strlen(rest);
		if (*rest != '\0')
			goto out;
	}
	/* an INFO or STATS costs a walk of every export: a flood of them
	 * would hold the loop up */
	if (b->now_ns >= b->service->second_ns + 1000000000u) {
		if (b->service->dropped > 0)
			br_log("$SRV: %llu requests over %d a second not answered",
			       (unsigned long long)b->service->dropped, ANSWERS_MAX);
		b->service->second_ns = b->now_ns;
		b->service->answers = 0;
		b->service->dropped = 0;
	}
	if (++b->service->answers > ANSWERS_MAX) {
		b->service->dropped++;
		goto out;
	}
	if (strcmp(verb, "PING") == 0)
		o = standard(b, "io.nats.micro.v1.ping_response");
	else if (strcmp(verb, "INFO") == 0)
		o = info(b);
	else if (strcmp(verb, "STATS") == 0)
		o = stats(b);
	else
		goto out;
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	natsConnection_Publish(b->nc, reply, text, (int)strlen(text));
	json_object_put(o);
out:
	natsMsg_Destroy(m);
	return 1;
}

void
br_service_drain(struct bridge *b)
{
	struct br_service *s = b->service;

	if (s == NULL)
		return;
	for (int i = 0; i < 3; i++)
		br_drain(s->sub[i], b, service_msg);
}
