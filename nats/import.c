/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Imports: what other hubs announce on PREFIX.announce, where it matches
 * [import] methods, is registered on this hub (under [import] prefix),
 * its calls served by callout.c; hubs that go silent are forgotten, and
 * hubd is told where each method is served now. Announcements are
 * untrusted: names, signatures and sizes checked, hubs and methods
 * bounded. What comes on our inbox for calls out goes to callout.c and
 * istream.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nats/hubnats.h"

static struct br_remote *
remote_find(struct bridge *b, const char *name)
{
	for (uint32_t i = 0; i < b->nremotes; i++)
		if (strcmp(b->remotes[i].name, name) == 0)
			return &b->remotes[i];
	return NULL;
}

/* Methods or topics to import (topics.c has the topics'). */
static int
importing(const struct bridge *b)
{
	return b->conf.nimports > 0 || b->conf.nitopics > 0;
}

static void
remote_drop(struct bridge *b, struct br_remote *r)
{
	if (b->topics != NULL)
		br_topics_forget(b, r->name);
	free(r->methods);
	*r = b->remotes[--b->nremotes];
}

static int
wanted(const struct bridge *b, const char *name)
{
	for (int i = 0; i < b->conf.nimports; i++)
		if (br_pattern_matches(b->conf.imports[i], name))
			return 1;
	return 0;
}

static struct br_import *
import_find(struct bridge *b, const char *remote)
{
	for (uint32_t i = 0; i < b->nimports; i++)
		if (strcmp(b->imports[i]->remote, remote) == 0)
			return b->imports[i];
	return NULL;
}

/* imp registered on this hub as sig (its name here free: never taken,
 * or withdrawn); the reason logged when it cannot be. */
static void
enroll(struct bridge *b, struct br_import *imp, const char *hub, const char *sig)
{
	int rc;

	snprintf(imp->sig, sizeof(imp->sig), "%s", sig);
	hp_sig_parse(imp->sig, &imp->parsed, NULL);	/* on_announce parsed it */
	imp->chan_arg = br_chan_arg(&imp->parsed);
	imp->where[0] = '\0';
	rc = guest_register(b->g, imp->local, sig, br_callout_call, imp);
	if (rc == 0) {
		imp->registered = 1;
		br_log("importing %s (%s) from hub %s", imp->local, sig, hub);
		b->next_describe_ns = 0;	/* hubctl methods says where at once */
		return;
	}
	imp->refused = 1;
	if (rc == -EPERM)
		br_log("cannot register %s: add it to provides = in hub-nats's [guest] section",
		       imp->local);
	else if (rc == -EEXIST)
		br_log("cannot register %s: this hub has it already", imp->local);
	else
		br_log("cannot register %s: %s", imp->local, strerror(-rc));
}

/* Whether a hub other than hub serves name (as last announced). */
static int
served_elsewhere(struct bridge *b, const char *hub, const char *name);

/* Hub p offers name as sig: registered here the first time (within
 * its own quota: one hub's list cannot push out another's), again after
 * it was withdrawn, and anew when the hubs that serve it now all serve
 * it with another signature. */
static void
bring_in(struct bridge *b, struct br_peer *p, const char *name, const char *sig)
{
	const char *hub = p->name;
	struct br_import *imp = import_find(b, name), **grown;

	if (imp != NULL) {
		if (imp->refused)
			return;
		if (!imp->registered) {
			enroll(b, imp, hub, sig);
		} else if (strcmp(imp->sig, sig) != 0 && !served_elsewhere(b, hub, name)) {
			/* the only hub that serves it changed it: follow */
			br_log("hub %s serves %s as %s now, not %s: registered anew", hub, name,
			       sig, imp->sig);
			if (guest_unregister(b->g, imp->local) == 0)
				enroll(b, imp, hub, sig);
		} else if (strcmp(imp->sig, sig) != 0) {
			br_log("hub %s serves %s as %s, here it is %s: it refuses these calls",
			       hub, name, sig, imp->sig);
		}
		return;
	}
	if (p->nbrought >= BR_METHODS_MAX || (imp = calloc(1, sizeof(*imp))) == NULL ||
	    (grown = realloc(b->imports, (b->nimports + 1) * sizeof(*grown))) == NULL) {
		free(imp);
		return;
	}
	b->imports = grown;
	p->nbrought++;
	imp->b = b;
	snprintf(imp->remote, sizeof(imp->remote), "%s", name);
	snprintf(imp->sig, sizeof(imp->sig), "%s", sig);
	if (b->conf.prefix[0] != '\0' &&
	    (size_t)snprintf(imp->local, sizeof(imp->local), "%s.%s", b->conf.prefix, name) >=
	    sizeof(imp->local)) {
		br_log("%s.%s: too long a name for this hub", b->conf.prefix, name);
		imp->refused = 1;
		b->imports[b->nimports++] = imp;	/* kept: not tried again */
		return;
	} else if (b->conf.prefix[0] == '\0') {
		snprintf(imp->local, sizeof(imp->local), "%s", name);
	}
	/* kept from here on, registered or withdrawn: calls in flight
	 * point to it */
	b->imports[b->nimports++] = imp;
	enroll(b, imp, hub, sig);
}

/* PREFIX.announce: {"hub": NAME, "every_ms": N, "methods": [[NAME, SIG], ...]} */
static void
on_announce(struct bridge *b, natsMsg *m)
{
	struct json_tokener *tok = json_tokener_new_ex(4);
	json_object *o = NULL, *v, *methods;
	const char *hub;
	struct br_remote *r;
	struct br_peer *peer;
	struct hp_sig parsed;
	const char *why;
	int64_t every;
	size_t n, ntopics;

	if (tok == NULL)
		return;
	o = json_tokener_parse_ex(tok, natsMsg_GetData(m), natsMsg_GetDataLength(m));
	json_tokener_free(tok);
	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "hub", &v) || !json_object_is_type(v, json_type_string) ||
	    !br_subject_part_ok(json_object_get_string(v), (size_t)json_object_get_string_len(v), 0) ||
	    !json_object_object_get_ex(o, "methods", &methods) ||
	    !json_object_is_type(methods, json_type_array) ||
	    (n = json_object_array_length(methods)) > BR_METHODS_MAX) {
		br_trust_malformed(b);
		goto out;
	}
	hub = json_object_get_string(json_object_object_get(o, "hub"));
	every = json_object_object_get_ex(o, "every_ms", &v) ? json_object_get_int64(v) : 0;
	if (every < 100 || every > 3600000)
		every = 2000;
	if (strcmp(hub, b->conf.name) == 0 ||
	    (b->conf.from[0] != '\0' && strcmp(hub, b->conf.from) != 0))
		goto out;
	/* a hub of [trust] whose key signed it, or nobody: every NATS
	 * client may publish here */
	if ((peer = br_trust_announcement(b, m, hub, json_object_object_get_ex(o, "seq", &v) &&
					  json_object_is_type(v, json_type_int) ?
					  json_object_get_int64(v) : 0)) == NULL)
		goto out;
	/* neither methods nor topics: the hub is leaving */
	ntopics = br_topics_count(o);
	if ((r = remote_find(b, hub)) == NULL) {
		if (n == 0 && ntopics == 0)
			goto out;
		if (b->nremotes >= BR_REMOTES_MAX) {
			br_log("hub %s: more than %d hubs heard of, not kept", hub, BR_REMOTES_MAX);
			goto out;
		}
		r = &b->remotes[b->nremotes++];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", hub);
		br_log("hub %s announced itself", hub);
		b->next_describe_ns = 0;	/* hubctl shows it at once */
	}
	if (n == 0 && ntopics == 0) {
		br_log("hub %s left", hub);
		remote_drop(b, r);
		b->next_describe_ns = 0;
		goto out;
	}
	if (r->silent) {
		/* back (thawed, or started again): calls go to it again */
		br_log("hub %s announced itself again", hub);
		r->silent = 0;
		r->gone = 0;
		r->suspect_ns = 0;
		b->next_describe_ns = 0;
	}
	r->seen_ns = b->now_ns;
	r->every_ns = (uint64_t)every * 1000000u;
	r->solo = json_object_object_get_ex(o, "queue", &v) &&
	    json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v);
	free(r->methods);
	r->methods = NULL;
	r->nmethods = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *pair = json_object_array_get_idx(methods, i), *jn, *js;
		const char *name, *sig;
		char (*grown)[BR_NAME_MAX + 1];

		if (!json_object_is_type(pair, json_type_array) ||
		    json_object_array_length(pair) != 2 ||
		    !json_object_is_type(jn = json_object_array_get_idx(pair, 0), json_type_string) ||
		    !json_object_is_type(js = json_object_array_get_idx(pair, 1), json_type_string))
			continue;
		name = json_object_get_string(jn);
		sig = json_object_get_string(js);
		/* the length JSON gave: a NUL inside is refused, not cut at */
		if (!br_subject_part_ok(name, (size_t)json_object_get_string_len(jn), 1) ||
		    !wanted(b, name) || (size_t)json_object_get_string_len(js) != strlen(sig) ||
		    strlen(sig) > HP_SIG_MAX_LEN ||
		    hp_sig_parse(sig, &parsed, &why) != 0)
			continue;
		if ((grown = realloc(r->methods, (r->nmethods + 1) * sizeof(*grown))) == NULL)
			break;
		r->methods = grown;
		snprintf(r->methods[r->nmethods++], BR_NAME_MAX + 1, "%s", name);
		bring_in(b, peer, name, sig);
	}
	if (b->topics != NULL)
		br_topics_announced(b, hub, o);
out:
	json_object_put(o);
}

int
br_import_msg(struct bridge *b, natsMsg *m)
{
	const char *s = natsMsg_GetSubject(m);
	size_t plen = strlen(b->conf.subject), ilen = strlen(b->inbox);

	if (!importing(b))
		return 0;
	if (strncmp(s, b->inbox, ilen) == 0 && strncmp(s + ilen, ".s.", 3) == 0) {
		int kept = br_istream_item(b, m, s + ilen + 3);

		br_callout_pump(b);
		if (kept)
			return 1;	/* the stream's now, sent on or queued */
	} else if (strncmp(s, b->inbox, ilen) == 0 && s[ilen] == '.') {
		if (br_callout_reply(b, m, s + ilen + 1))
			return 1;
		br_callout_pump(b);
	} else if (strncmp(s, b->conf.subject, plen) == 0 && strcmp(s + plen, ".announce") == 0)
		on_announce(b, m);
	else
		return 0;
	br_msg_done(b, m);
	return 1;
}

void
br_import_drain(struct bridge *b)
{
	br_drain(b->sub_announce, b, br_import_msg);
}

void
br_import_tick(struct bridge *b)
{
	if (!importing(b))
		return;
	br_callout_pump(b);
	/* the deadlines and Cancels: every BR_SCAN_NS, not every pass (a
	 * pass per message, a walk over every call in flight each) */
	if (b->now_ns < b->next_iscan_ns)
		return;
	b->next_iscan_ns = b->now_ns + BR_SCAN_NS;
	if (b->nc != NULL)
		b->max_payload = natsConnection_GetMaxPayload(b->nc);
	br_callout_scan(b);
	if (b->conf.suspect_ms > 0)
		br_route_tick(b);
	/* cut off from NATS, nobody is heard: silence counts from when the
	 * bridge can hear again; behind, an announcement may wait unread */
	if (!atomic_load_explicit(&b->connected, memory_order_relaxed) || b->behind) {
		for (uint32_t i = 0; i < b->nremotes; i++)
			b->remotes[i].seen_ns = b->now_ns;
		return;
	}
	for (uint32_t i = 0; i < b->nremotes;) {
		struct br_remote *r = &b->remotes[i];
		/* a hub busy answering is not silent, its announcement late */
		uint64_t heard = r->answer_ns > r->seen_ns ? r->answer_ns : r->seen_ns;

		if (!r->gone && b->now_ns > heard + 3 * r->every_ns && b->conf.suspect_ms > 0) {
			/* frozen, its connection open, NATS's queue group
			 * would give it calls again were it forgotten: kept
			 * until NATS says nobody listens by its name */
			if (!r->silent)
				br_route_silent(b, r);
			i++;
		} else if (r->gone || b->now_ns > heard + 3 * r->every_ns) {
			br_log("hub %s went silent", r->name);
			remote_drop(b, r);
			b->next_describe_ns = 0;
		} else {
			i++;
		}
	}
}

void
br_import_start(struct bridge *b)
{
	br_callout_start(b);
}

int
br_import_attach(struct bridge *b)
{
	char subject[BR_SUBJECT_MAX];

	if (!importing(b))
		return 0;
	snprintf(subject, sizeof(subject), "%s.announce", b->conf.subject);
	if (natsConnection_SubscribeSync(&b->sub_announce, b->nc, subject) != NATS_OK)
		return -1;
	/* who exports what: every hub announces soon */
	snprintf(subject, sizeof(subject), "%s.discover", b->conf.subject);
	natsConnection_Publish(b->nc, subject, NULL, 0);
	return 0;
}

void
br_import_detach(struct bridge *b)
{
	natsSubscription_Destroy(b->sub_announce);
	b->sub_announce = NULL;
}

void
br_import_stop(struct bridge *b)
{
	br_callout_stop(b);
	br_import_detach(b);
	for (uint32_t i = 0; i < b->nremotes; i++)
		free(b->remotes[i].methods);
	for (uint32_t i = 0; i < b->nimports; i++)
		free(b->imports[i]);
	free(b->imports);
}

/* Whether remote r announced method name. A silent hub still does:
 * busy or frozen, it is passed over (route.c) but its methods stay, so
 * that a hub slow under load is not withdrawn under its callers; it is
 * forgotten once it left, or NATS says nobody listens by its name. */
static int
serves(const struct br_remote *r, const char *name)
{
	for (uint32_t i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], name) == 0)
			return 1;
	return 0;
}

static int
served_elsewhere(struct bridge *b, const char *hub, const char *name)
{
	for (uint32_t r = 0; r < b->nremotes; r++)
		if (strcmp(b->remotes[r].name, hub) != 0 && serves(&b->remotes[r], name))
			return 1;
	return 0;
}

/* What no hub serves any more (it left, was forgotten, or no longer
 * lists it) is withdrawn here: hubctl methods no longer lists it, a call gets
 * "no such method". It comes back with the next hub that announces it. */
static void
withdraw_unserved(struct bridge *b)
{
	for (uint32_t i = 0; i < b->nimports; i++) {
		struct br_import *imp = b->imports[i];

		if (!imp->registered || served_elsewhere(b, "", imp->remote))
			continue;
		if (guest_unregister(b->g, imp->local) != 0)
			continue;	/* tried again at the next change */
		imp->registered = 0;
		imp->where[0] = '\0';
		br_log("no hub serves %s any more: withdrawn", imp->local);
	}
}

void
br_import_describe(struct bridge *b)
{
	char text[sizeof(((struct br_import *)0)->where)];

	withdraw_unserved(b);
	for (uint32_t i = 0; i < b->nimports; i++) {
		struct br_import *imp = b->imports[i];
		size_t n = (size_t)snprintf(text, sizeof(text), "NATS:");
		uint32_t named = 0, more = 0;

		if (!imp->registered)
			continue;

		for (uint32_t r = 0; r < b->nremotes; r++) {
			if (!serves(&b->remotes[r], imp->remote))
				continue;
			if (n + strlen(b->remotes[r].name) + 24 < sizeof(text))
				n += (size_t)snprintf(text + n, sizeof(text) - n, "%s hub %s",
						      named++ ? "," : "", b->remotes[r].name);
			else
				more++;
		}
		if (more > 0)
			snprintf(text + n, sizeof(text) - n, " and %u more", more);
		else if (named == 0)
			snprintf(text + n, sizeof(text) - n, " no hub serves it now");
		if (strcmp(text, imp->where) == 0)
			continue;
		/* hubd says "not your method" when it could not be
		 * registered: nothing to describe then */
		guest_describe(b->g, imp->local, text);
		snprintf(b->imports[i]->where, sizeof(imp->where), "%s", text);
	}
}

void
br_import_summary(struct bridge *b, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "%u imported from %u hub(s)", b->nimports,
				    b->nremotes);

	for (uint32_t r = 0; r < b->nremotes && r < 4 && n < cap; r++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", r ? ", " : " (", b->remotes[r].name);
	if (b->nremotes > 0 && n < cap)
		snprintf(buf + n, cap - n, "%s)", b->nremotes > 4 ? ", ..." : "");
}
