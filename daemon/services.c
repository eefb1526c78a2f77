/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The host's built-in services (hub.*, proto/builtin.h), one table of
 * name, signature and handler; and hub.source's sending, paced by the
 * calling guest's credit. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/xxh.h"

#include "daemon/answer.h"
#include "daemon/host.h"
#include "daemon/guestlog.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/monitor.h"
#include "daemon/services.h"
#include "daemon/discovery.h"
#include "daemon/topics.h"
#include "proto/builtin.h"
#include "proto/channel.h"
#include "proto/method.h"

#define SOURCE_ITEM	4096	/* hub.source's item size at most */

/* A service's handler: p is the calling guest, or NULL for a control
 * client; it answers o, now or later. */
typedef void service_fn(struct hub *h, struct peer *p, const struct origin *o,
			const uint8_t *args, size_t len);

static void
svc_ping(struct hub *h, struct peer *p, const struct origin *o,
	 const uint8_t *args, size_t len)
{
	(void)p;
	answer_ok(h, o, args, len);
}

static void
svc_log(struct hub *h, struct peer *p, const struct origin *o,
	const uint8_t *args, size_t len)
{
	const char *s;
	size_t n;
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &s, &n);
	/* within the guest's budget, as its output */
	if (p == NULL || guestlog_may_log(p))
		log_info("guest %s: %.*s", p ? p->conf->name : "(control)",
			 (int)(n > 1000 ? 1000 : n), s);
	answer_ok(h, o, NULL, 0);
}

static void
svc_peers(struct hub *h, struct peer *caller, const struct origin *o,
	  const uint8_t *args, size_t len)
{
	char text[255 * 80];
	size_t n = 0;
	uint8_t buf[sizeof(text) + 8];
	struct hp_pc_enc e;

	(void)caller;
	(void)args;
	(void)len;
	for (uint32_t i = 0; i < h->conf.params.max_guests && n < sizeof(text) - 80; i++) {
		struct peer *p = &h->peers[i];

		if (p->conf == NULL)
			continue;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%u %s %s\n", p->id,
				      p->conf->name, lifecycle_state_name(p->state));
	}
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_str(&e, text, n);
	answer_ok(h, o, buf, e.len);
}

static void
svc_register(struct hub *h, struct peer *p, const struct origin *o,
	     const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	const char *name, *sig, *why;
	size_t nlen, slen;
	char nbuf[64], sbuf[HP_SIG_MAX_LEN + 1];
	int rc;

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &name, &nlen);
	hp_pc_get_str(&d, &sig, &slen);
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, "only guests register methods");
		return;
	}
	if (d.err != 0 || slen >= sizeof(sbuf)) {
		answer_error(h, o, HP_ERR_USER, "name or signature too long");
		return;
	}
	/* the bytes as sent, a NUL among them too: the name is logged, listed
	 * and printed (proto/method.h); the log line escapes it (log.c) */
	if ((why = hp_method_name_refused(name, nlen)) != NULL) {
		log_warnx("guest %s: may not register \"%.*s\": %s", p->conf->name,
			  (int)(nlen < sizeof(nbuf) ? nlen : sizeof(nbuf) - 1), name, why);
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	memcpy(nbuf, name, nlen);
	nbuf[nlen] = '\0';
	memcpy(sbuf, sig, slen);
	sbuf[slen] = '\0';
	if (strncmp(nbuf, HP_SVC_PREFIX, strlen(HP_SVC_PREFIX)) == 0) {
		answer_error(h, o, HP_ERR_USER, "the hub. prefix is the host's");
		return;
	}
	if ((rc = methods_add(h, nbuf, sbuf, p->id, p->epoch, 0, &why)) != 0) {
		char text[256];

		if (rc == -EPERM)
			log_warnx("guest %s: may not register %s: not one of its names "
				  "(%s.* or provides)", p->conf->name, nbuf, p->conf->name);
		/* two names, one id: made on purpose, most likely (proto/method.h) */
		if (rc == -EEXIST && strcmp(why, HP_SVC_REG_COLLIDES) == 0)
			log_warnx("guest %s: may not register %s: %s, %s",
				  p->conf->name, nbuf, why,
				  methods_by_id(h, hp_method_id(nbuf, strlen(nbuf)))->name);
		/* a malformed signature: what is wrong and where, to the
		 * guest and in the log */
		if (rc == -EINVAL && hp_sig_explain(sbuf, text, sizeof(text)) > 0) {
			log_warnx("guest %s: may not register %s: %s", p->conf->name, nbuf, text);
			answer_error(h, o, HP_ERR_USER, text);
			return;
		}
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	log_info("guest %s: registered %s (%s)", p->conf->name, nbuf, sbuf);
	answer_ok(h, o, NULL, 0);
	discovery_method(h, methods_find(h, nbuf));
	lanes_method_added(h, p, methods_find(h, nbuf), monitor_watches);
}

static void
svc_sink(struct hub *h, struct peer *p, const struct origin *o,
	 const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	uint64_t id;
	struct hchan *c;

	hp_pc_dec_init(&d, args, len);
	id = hp_pc_get_u64(&d);
	/* the guest opened it (odd id) and sends on it; we receive */
	if (p == NULL || d.err != 0 || id > UINT32_MAX ||
	    hp_chan_id_check((uint32_t)id, h->conf.params.max_channels, HP_SIDE_GUEST) != 0 ||
	    p->chans[id].open) {
		answer_error(h, o, HP_ERR_USER, "hub.sink needs a channel the guest opened");
		return;
	}
	c = &p->chans[id];
	memset(c, 0, sizeof(*c));
	c->open = 1;
	c->granted = h->conf.params.initial_credit;	/* r[shm.flow.initial] */
	c->checksum = HP_STREAM_HASH_SEED;
	c->o = *o;
	c->o.kind = ORIGIN_SINK;	/* answered on Close (streams.c) */
}

static void
svc_source(struct hub *h, struct peer *p, const struct origin *o,
	   const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	uint64_t bytes, id;
	struct hchan *c;

	hp_pc_dec_init(&d, args, len);
	bytes = hp_pc_get_u64(&d);
	id = hp_pc_get_u64(&d);
	/* the guest opened it (odd id) to receive on: it grants, we send */
	if (p == NULL || d.err != 0 || id > UINT32_MAX ||
	    hp_chan_id_check((uint32_t)id, h->conf.params.max_channels, HP_SIDE_GUEST) != 0 ||
	    p->chans[id].open ||
	    hp_chan_state(&p->view.chans[id]) != HP_CHAN_ACTIVE) {
		answer_error(h, o, HP_ERR_USER, "hub.source needs a channel the guest opened");
		return;
	}
	c = &p->chans[id];
	memset(c, 0, sizeof(*c));
	c->open = c->sending = 1;
	c->to_send = bytes;
	c->checksum = HP_STREAM_HASH_SEED;
	c->o = *o;
	p->sources++;
}

/* Err User PREFIX and the name as asked, cut to fit (whole UTF-8
 * sequences); bad: it did not decode. */
static void
name_error(struct hub *h, const struct origin *o, const char *prefix, const char *name,
	   size_t n, int bad)
{
	char text[64 + 80];

	if (bad)
		n = 0;
	if (n > 64) {
		n = 64;
		while (n > 0 && ((uint8_t)name[n] & 0xC0) == 0x80)
			n--;
	}
	snprintf(text, sizeof(text), "%s%.*s", prefix, (int)n, n ? name : "");
	answer_error(h, o, HP_ERR_USER, text);
}

/* A method by the name as asked: NULL for one nobody registered (or a
 * name no method has: too long, a NUL in it). */
static struct method *
find_asked(struct hub *h, const char *name, size_t n)
{
	struct method *m;

	if (n == 0 || n > HP_METHOD_NAME_MAX || memchr(name, '\0', n) != NULL)
		return NULL;
	m = methods_by_id(h, hp_method_id(name, n));
	return m != NULL && strlen(m->name) == n && memcmp(m->name, name, n) == 0 ? m : NULL;
}

/* hub.signature: the signature a method was registered with, whether or
 * not its guest is up now (a caller encoding arguments for it needs the
 * shape, not the state). */
static void
svc_signature(struct hub *h, struct peer *p, const struct origin *o,
	      const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	const struct method *m = NULL;
	const char *name;
	size_t n;
	uint8_t buf[HP_SIG_MAX_LEN + 8];
	struct hp_pc_enc e;

	(void)p;
	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &name, &n);
	if (d.err == 0)
		m = find_asked(h, name, n);
	if (m == NULL) {
		name_error(h, o, HP_SVC_SIG_UNKNOWN, name, n, d.err != 0);
		return;
	}
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_str(&e, m->signature, strlen(m->signature));
	answer_ok(h, o, buf, e.len);
}

/* hub.describe: METHOD, TEXT. What the calling guest says of a method its
 * instance registered, or of itself (METHOD ""), for operators (hubctl
 * methods, peers): one text per method and one per guest, replaced by the
 * next, "" clears; all of them cleared when the instance detaches
 * (methods_detach). Nothing changes unless everything checks out. */
static void
svc_describe(struct hub *h, struct peer *p, const struct origin *o,
	     const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	struct method *m = NULL;
	const char *name, *text, *why;
	size_t nlen, tlen;
	char *to;

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &name, &nlen);
	hp_pc_get_str(&d, &text, &tlen);
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, HP_SVC_DESC_GUESTS);
		return;
	}
	if (d.err != 0 || hp_pc_remaining(&d) != 0) {
		answer_error(h, o, HP_ERR_USER, "hub.describe takes a method and a text");
		return;
	}
	/* UTF-8 was checked against the signature already (the control
	 * path's too): checked again, it is cheap */
	if ((why = hp_describe_refused(text, tlen)) != NULL) {
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	if (nlen == 0) {
		to = p->note;
	} else {
		if ((m = find_asked(h, name, nlen)) == NULL) {
			name_error(h, o, HP_SVC_SIG_UNKNOWN, name, nlen, 0);
			return;
		}
		/* registered by this instance: another's, or an earlier
		 * instance's not registered again, is not its to describe */
		if (m->owner != p->id || m->epoch != p->epoch) {
			name_error(h, o, HP_SVC_DESC_NOT_YOURS, name, nlen, 0);
			return;
		}
		to = m->where;
	}
	memcpy(to, text, tlen);
	to[tlen] = '\0';
	answer_ok(h, o, NULL, 0);
}

/* hub.unregister: METHOD. The calling instance withdraws a method it
 * registered (a bridge whose remote hubs no longer serve it, or serve it
 * with another signature); new calls get "no such method" at once. Calls
 * already sent to it stay in its table, its to answer. */
static void
svc_unregister(struct hub *h, struct peer *p, const struct origin *o,
	       const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	const char *name;
	char nbuf[HP_METHOD_NAME_MAX + 1];
	size_t n;
	int rc;

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &name, &n);
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, "only guests unregister methods");
		return;
	}
	if (d.err != 0 || hp_pc_remaining(&d) != 0) {
		answer_error(h, o, HP_ERR_USER, "hub.unregister takes a method");
		return;
	}
	if (n == 0 || n > HP_METHOD_NAME_MAX || memchr(name, '\0', n) != NULL) {
		name_error(h, o, HP_SVC_SIG_UNKNOWN, name, n, 0);
		return;
	}
	memcpy(nbuf, name, n);
	nbuf[n] = '\0';
	if ((rc = methods_remove(h, p, nbuf)) != 0) {
		name_error(h, o, rc == -EPERM ? HP_SVC_DESC_NOT_YOURS : HP_SVC_SIG_UNKNOWN, name, n,
			   0);
		return;
	}
	log_info("guest %s: unregistered %s", p->conf->name, nbuf);
	answer_ok(h, o, NULL, 0);
}

/* hub.caller: who made call id, one the asking guest is serving. Only
 * p's own table is looked in: no guest learns who calls another. */
static void
svc_caller(struct hub *h, struct peer *p, const struct origin *o,
	   const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	const struct pending *e = NULL;
	uint64_t id;
	char who[ORIGIN_NAME_MAX], text[80];
	uint8_t buf[ORIGIN_NAME_MAX + 8];
	struct hp_pc_enc enc;

	hp_pc_dec_init(&d, args, len);
	id = hp_pc_get_u64(&d);
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, "only guests ask who called them");
		return;
	}
	if (d.err == 0 && id != 0 && id <= UINT32_MAX)
		e = hp_idtab_find(&p->pend, (uint32_t)id);
	if (e == NULL) {
		snprintf(text, sizeof(text), "%s%" PRIu64 " in flight to you",
			 HP_SVC_CALLER_UNKNOWN, d.err == 0 ? id : 0);
		answer_error(h, o, HP_ERR_USER, text);
		return;
	}
	if (e->o.kind == ORIGIN_NONE) {
		answer_error(h, o, HP_ERR_USER, HP_SVC_CALLER_GONE);
		return;
	}
	origin_name(h, &e->o, who, sizeof(who));
	hp_pc_enc_init(&enc, buf, sizeof(buf));
	hp_pc_put_str(&enc, who, strlen(who));
	answer_ok(h, o, buf, enc.len);
}

/* Whether name is what pattern asks for: "" or "*" every name, "a.*"
 * every name that begins "a.", else that name. */
static int
name_matches(const char *pattern, size_t plen, const char *name)
{
	if (plen == 0 || (plen == 1 && pattern[0] == '*'))
		return 1;
	if (plen >= 2 && pattern[plen - 1] == '*' && pattern[plen - 2] == '.')
		return strncmp(name, pattern, plen - 1) == 0;
	return strlen(name) == plen && memcmp(name, pattern, plen) == 0;
}

/* hub.methods: the methods that can be called now, other than the host's
 * and the asking guest's own (a bridge that offers this hub's methods
 * elsewhere must not offer back what it brought in). */
static void
svc_methods(struct hub *h, struct peer *p, const struct origin *o,
	    const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	struct hp_pc_enc e;
	const char *pat;
	size_t plen, cap, n = 0;
	uint8_t *buf;

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &pat, &plen);
	if (d.err != 0 || plen > HP_METHOD_NAME_MAX) {
		answer_error(h, o, HP_ERR_USER, "the pattern is not a method name or NAME.*");
		return;
	}
	/* each entry at most a name and a signature with their lengths */
	cap = 16 + (size_t)h->nmethods * (HP_METHOD_NAME_MAX + HP_SIG_MAX_LEN + 8);
	if ((buf = malloc(cap)) == NULL) {
		answer_error(h, o, HP_ERR_USER, "out of memory");
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		/* first the count, then the entries */
		hp_pc_enc_init(&e, buf, cap);
		hp_pc_put_u64(&e, n);
		n = 0;
		for (uint32_t i = 0; i < h->nmethods; i++) {
			const struct method *m = &h->methods[i];

			if (m->owner == 0 || (p != NULL && m->owner == p->id) ||
			    !methods_live(h, m) || !name_matches(pat, plen, m->name))
				continue;
			n++;
			if (pass == 1) {
				hp_pc_put_str(&e, m->name, strlen(m->name));
				hp_pc_put_str(&e, m->signature, strlen(m->signature));
			}
		}
	}
	answer_ok(h, o, buf, e.len);
	free(buf);
}

/* hub.advertised: the topics published now, as hub.methods lists
 * methods (not the host's, not the asking guest's own). */
static void
svc_advertised(struct hub *h, struct peer *p, const struct origin *o,
	       const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	struct hp_pc_enc e;
	const char *pat;
	size_t plen, cap = 16, n = 0;
	uint8_t *buf;

	hp_pc_dec_init(&d, args, len);
	hp_pc_get_str(&d, &pat, &plen);
	if (d.err != 0 || plen > HP_TOPIC_NAME_MAX) {
		answer_error(h, o, HP_ERR_USER, "the pattern is not a topic name or NAME.*");
		return;
	}
	for (struct topic *t = h->topics; t != NULL; t = t->next)
		cap += HP_TOPIC_NAME_MAX + HP_SIG_MAX_LEN + 8;
	if ((buf = malloc(cap)) == NULL) {
		answer_error(h, o, HP_ERR_USER, "out of memory");
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		/* first the count, then the entries */
		hp_pc_enc_init(&e, buf, cap);
		hp_pc_put_u64(&e, n);
		n = 0;
		for (struct topic *t = h->topics; t != NULL; t = t->next) {
			uint32_t pub;

			if (t->host_owned || !t->has_sig || (pub = topics_publisher(h, t)) == 0 ||
			    (p != NULL && pub == p->id) || !name_matches(pat, plen, t->name))
				continue;
			n++;
			if (pass == 1) {
				hp_pc_put_str(&e, t->name, strlen(t->name));
				hp_pc_put_str(&e, t->sig, strlen(t->sig));
			}
		}
	}
	answer_ok(h, o, buf, e.len);
	free(buf);
}

/* A str argument as a C string in buf, or NULL (too long, NUL inside). */
static const char *
str_arg(struct hp_pc_dec *d, char *buf, size_t cap)
{
	const char *s;
	size_t n;

	hp_pc_get_str(d, &s, &n);
	if (d->err != 0 || n >= cap || memchr(s, '\0', n) != NULL)
		return NULL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

static void
svc_advertise(struct hub *h, struct peer *p, const struct origin *o,
	      const uint8_t *args, size_t len)
{
	char name[HP_TOPIC_NAME_MAX + 1], sig[HP_SIG_MAX_LEN + 1];
	const char *why, *n, *s;
	struct hp_pc_dec d;
	int retain;

	hp_pc_dec_init(&d, args, len);
	n = str_arg(&d, name, sizeof(name));
	s = str_arg(&d, sig, sizeof(sig));
	retain = hp_pc_get_bool(&d) == 1;
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, "only guests advertise topics");
		return;
	}
	if (n == NULL || s == NULL) {
		answer_error(h, o, HP_ERR_USER, "topic name or signature too long");
		return;
	}
	if (topics_advertise(h, p, n, s, retain, &why) != 0) {
		log_warnx("guest %s: may not publish %s: %s", p->conf->name, n, why);
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	log_info("guest %s: publishes %s (%s)", p->conf->name, n, s);
	answer_ok(h, o, NULL, 0);
}

static void
svc_subscribe(struct hub *h, struct peer *p, const struct origin *o,
	      const uint8_t *args, size_t len)
{
	char name[HP_TOPIC_NAME_MAX + 1], pol[16];
	const char *why, *n, *s;
	struct hp_pc_dec d;
	uint8_t out[16];
	struct hp_pc_enc e;
	int policy;
	int64_t id;

	hp_pc_dec_init(&d, args, len);
	n = str_arg(&d, name, sizeof(name));
	s = str_arg(&d, pol, sizeof(pol));
	if (p == NULL) {
		answer_error(h, o, HP_ERR_USER, "only guests subscribe (hubctl listen)");
		return;
	}
	if (n == NULL) {
		answer_error(h, o, HP_ERR_USER, "topic name longer than 64 bytes");
		return;
	}
	if (s == NULL || (policy = hp_topic_policy_parse(s)) < 0) {
		answer_error(h, o, HP_ERR_USER, "policy is block, drop-oldest or latest");
		return;
	}
	if ((id = topics_subscribe(h, p, n, (uint32_t)policy, &why)) < 0) {
		log_warnx("guest %s: may not subscribe to %s: %s", p->conf->name, n, why);
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	hp_pc_enc_init(&e, out, sizeof(out));
	hp_pc_put_u64(&e, (uint64_t)id);
	answer_ok(h, o, out, e.len);
}

static void
svc_unsubscribe(struct hub *h, struct peer *p, const struct origin *o,
		const uint8_t *args, size_t len)
{
	struct hp_pc_dec d;
	const char *why;
	uint64_t id;

	hp_pc_dec_init(&d, args, len);
	id = hp_pc_get_u64(&d);
	if (p == NULL || topics_unsubscribe(h, p, id, &why) != 0) {
		answer_error(h, o, HP_ERR_USER, p == NULL ? "only guests subscribe" : why);
		return;
	}
	answer_ok(h, o, NULL, 0);
}

static const struct service {
	const char	*name;
	const char	*sig;
	service_fn	*fn;
} services[] = {
	{ HP_SVC_PING, HP_SVC_SIG_PING, svc_ping },
	{ HP_SVC_LOG, HP_SVC_SIG_LOG, svc_log },
	{ HP_SVC_PEERS, HP_SVC_SIG_PEERS, svc_peers },
	{ HP_SVC_REGISTER, HP_SVC_SIG_REGISTER, svc_register },
	{ HP_SVC_SINK, HP_SVC_SIG_SINK, svc_sink },
	{ HP_SVC_SOURCE, HP_SVC_SIG_SOURCE, svc_source },
	{ HP_SVC_SIGNATURE, HP_SVC_SIG_SIGNATURE, svc_signature },
	{ HP_SVC_CALLER, HP_SVC_SIG_CALLER, svc_caller },
	{ HP_SVC_METHODS, HP_SVC_SIG_METHODS, svc_methods },
	{ HP_SVC_DESCRIBE, HP_SVC_SIG_DESCRIBE, svc_describe },
	{ HP_SVC_ADVERTISE, HP_SVC_SIG_ADVERTISE, svc_advertise },
	{ HP_SVC_SUBSCRIBE, HP_SVC_SIG_SUBSCRIBE, svc_subscribe },
	{ HP_SVC_UNSUBSCRIBE, HP_SVC_SIG_UNSUBSCRIBE, svc_unsubscribe },
	{ HP_SVC_ADVERTISED, HP_SVC_SIG_ADVERTISED, svc_advertised },
	{ HP_SVC_UNREGISTER, HP_SVC_SIG_UNREGISTER, svc_unregister },
};
#define NSERVICES	(sizeof(services) / sizeof(services[0]))

int
services_init(struct hub *h)
{
	const char *why;

	for (uint16_t i = 0; i < NSERVICES; i++) {
		if (methods_add(h, services[i].name, services[i].sig, 0, 0, i, &why) != 0) {
			log_warnx("built-in %s: %s", services[i].name, why);
			return -1;
		}
	}
	return 0;
}

void
services_call(struct hub *h, struct peer *p, const struct method *m,
	      const struct origin *o, const uint8_t *args, size_t len)
{
	if (m->owner != 0 || m->service >= NSERVICES) {	/* a bug of ours */
		answer_error(h, o, HP_ERR_UNKNOWN_METHOD, "no such host service");
		return;
	}
	services[m->service].fn(h, p, o, args, len);
}

/* -- hub.source's sending ------------------------------------------------ */

/* A hub.source stream's next item size, or 0 while the guest's credit,
 * from its shared counter, does not allow one; -1 if that counter is corrupt. */
static int64_t
source_next(struct hub *h, struct peer *p, uint32_t id)
{
	struct hchan *c = &p->chans[id];
	uint32_t item = h->conf.params.max_payload_size < SOURCE_ITEM ?
	    h->conf.params.max_payload_size : SOURCE_ITEM;
	uint32_t n = c->to_send < item ? (uint32_t)c->to_send : item;
	/* r[shm.flow.ordering.sender] r[shm.flow.wrap-rule]: hp_chan_credit
	 * acquires the receiving guest's grant (hp_chan_grant's release) */
	int64_t credit = hp_chan_credit(&p->view.chans[id], c->sent_total);

	if (credit < 0)
		return -1;
	return (uint64_t)credit >= n ? n : 0;
}

int
services_source_pump(struct hub *h, struct peer *p)
{
	uint8_t out[16];
	struct hp_pc_enc e;
	int sent = 0;

	for (uint32_t id = 1; id < h->conf.params.max_channels && p->sources > 0; id++) {
		struct hchan *c = &p->chans[id];
		struct hp_outbuf ob;
		int64_t n;

		if (!c->open || !c->sending)
			continue;
		while (c->to_send > 0 && host_serving(p)) {
			if ((n = source_next(h, p, id)) < 0) {
				host_fault(h, p, DEATH_VIOLATION, "shm.flow.wrap-rule");
				return sent;
			}
			if (n == 0)
				p->stats.credit_waits++;
			if (n == 0 || host_reserve(h, p, (uint32_t)n, &ob) != 0)
				break;
			for (uint32_t i = 0; i < n; i++)
				ob.buf[i] = (uint8_t)(c->bytes + i);
			c->checksum = XXH3_64bits_withSeed(ob.buf, (size_t)n, c->checksum);
			hp_endpoint_commit(&p->ep, &ob, HP_MSG_DATA, id, 0, (uint32_t)n,
					   HP_SEND_MORE);
			c->sent_total += (uint32_t)n;
			c->bytes += (uint64_t)n;
			c->to_send -= (uint64_t)n;
			sent++;
		}
		if (c->to_send > 0 || host_try_send(h, p, HP_MSG_CLOSE, id, 0, NULL, 0) != 0)
			continue;
		c->open = c->sending = 0;
		c->stale = STALE_SENT;	/* the guest's stop may cross our Close */
		p->sources--;
		hp_pc_enc_init(&e, out, sizeof(out));
		hp_pc_put_u64(&e, c->checksum);
		answer_ok(h, &c->o, out, e.len);
	}
	return sent;
}

int
services_source_ready(struct hub *h, struct peer *p)
{
	/* a full ring is no work: its consumer rings HP_WAIT_RING_SPACE */
	if (p->sources == 0 || hp_endpoint_tx_ready(&p->ep) <= 0)
		return 0;
	for (uint32_t id = 1; id < h->conf.params.max_channels && p->sources > 0; id++)
		if (p->chans[id].open && p->chans[id].sending &&
		    (p->chans[id].to_send == 0 || source_next(h, p, id) != 0))
			return 1;
	return 0;
}
