/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* kv: an in-memory key-value store. kv.put KEY VALUE, kv.get KEY,
 * kv.delete KEY, kv.list (the keys, one per line), kv.keys (the keys as a
 * list<str>), kv.mget KEYS (a list<str>: the value of each, or none).
 * Keys are str, values bytes: any bytes, UTF-8 or not. Every put and
 * delete publishes the key on the topic kv.changed (doc/events.md). */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"

struct entry {
	struct entry	*next;
	char		*key;
	size_t		klen;
	uint8_t		*val;
	size_t		vlen;
};

static struct entry *table;

static struct entry **
find(const char *k, size_t n)
{
	struct entry **pp;

	for (pp = &table; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->klen == n && memcmp((*pp)->key, k, n) == 0)
			break;
	return pp;
}

/* kv.changed KEY: who listens learns of it; a key too long for the
 * topic's events (event_max) is not told, the change stands. */
static void
changed(struct guest_call *c, const char *k, size_t kn)
{
	uint8_t ev[4096];
	size_t n = 0;

	if (guest_pc_put_str(ev, sizeof(ev), &n, k, kn) >= 0)	/* its length */
		guest_publish(guest_call_guest(c), "kv.changed", ev, n);
}

static void
put(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *k;
	const uint8_t *v;
	size_t kn, vn, pos = 0;
	struct entry **pp, *e;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &k, &kn) != 0 ||
	    guest_pc_get_bytes(args, len, &pos, &v, &vn) != 0 || pos != len) {
		guest_reply_error(c, "kv.put takes a key and a value");
		return;
	}
	if ((e = *(pp = find(k, kn))) == NULL) {
		if ((e = calloc(1, sizeof(*e))) == NULL || (e->key = malloc(kn + 1)) == NULL) {
			free(e);
			guest_reply_error(c, "out of memory");
			return;
		}
		memcpy(e->key, k, kn);
		e->klen = kn;
		*pp = e;
	}
	free(e->val);
	if ((e->val = malloc(vn + 1)) == NULL) {
		e->vlen = 0;
		guest_reply_error(c, "out of memory");
		return;
	}
	memcpy(e->val, v, vn);
	e->vlen = vn;
	/* told before the answer: k is in the call's arguments, which are
	 * libguest's again once it is answered */
	changed(c, k, kn);
	guest_reply(c, NULL, 0);
}

static void
get(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *k;
	size_t kn, pos = 0, out = 0;
	struct entry *e;
	uint8_t *res;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &k, &kn) != 0) {
		guest_reply_error(c, "kv.get takes a key");
		return;
	}
	if ((e = *find(k, kn)) == NULL) {
		guest_reply_error(c, "no such key");
		return;
	}
	if ((res = malloc(e->vlen + 10)) == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	guest_pc_put_bytes(res, e->vlen + 10, &out, e->val, e->vlen);
	guest_reply(c, res, out);
	free(res);
}

static void
del(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *k;
	size_t kn, pos = 0;
	struct entry **pp, *e;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &k, &kn) != 0) {
		guest_reply_error(c, "kv.delete takes a key");
		return;
	}
	if ((e = *(pp = find(k, kn))) == NULL) {
		guest_reply_error(c, "no such key");
		return;
	}
	*pp = e->next;
	changed(c, e->key, e->klen);
	guest_reply(c, NULL, 0);
	free(e->key);
	free(e->val);
	free(e);
}

static void
list(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	size_t total = 0, n = 0, out = 0;
	char *text;
	uint8_t *res;

	(void)args;
	(void)len;
	(void)ctx;
	for (struct entry *e = table; e != NULL; e = e->next)
		total += e->klen + 1;
	if ((text = malloc(total + 1)) == NULL || (res = malloc(total + 10)) == NULL) {
		free(text);
		guest_reply_error(c, "out of memory");
		return;
	}
	for (struct entry *e = table; e != NULL; e = e->next) {
		memcpy(text + n, e->key, e->klen);
		n += e->klen;
		text[n++] = '\n';
	}
	guest_pc_put_str(res, total + 10, &out, text, n);
	guest_reply(c, res, out);
	free(text);
	free(res);
}

/* ->list<str>: the count, then each key. */
static void
keys(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	size_t cap = 10, n = 0, out = 0;
	uint8_t *res;

	(void)args;
	(void)len;
	(void)ctx;
	for (struct entry *e = table; e != NULL; e = e->next, n++)
		cap += e->klen + 10;
	if ((res = malloc(cap)) == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	guest_pc_put_len(res, cap, &out, n);
	for (struct entry *e = table; e != NULL; e = e->next)
		guest_pc_put_str(res, cap, &out, e->key, e->klen);
	guest_reply(c, res, out);
	free(res);
}

/* list<str>->list<opt<bytes>>: as many values as keys, in their order,
 * none for a key not there. The keys are read twice: once for the room
 * the answer needs, once to answer. */
static void
mget(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *k;
	size_t n, kn, pos = 0, cap = 10, out = 0;
	struct entry *e;
	uint8_t *res;

	(void)ctx;
	if (guest_pc_get_len(args, len, &pos, &n) != 0) {
		guest_reply_error(c, "kv.mget takes a list of keys");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (guest_pc_get_str(args, len, &pos, &k, &kn) != 0) {
			guest_reply_error(c, "kv.mget takes a list of keys");
			return;
		}
		e = *find(k, kn);
		cap += 1 + (e != NULL ? e->vlen + 10 : 0);
	}
	if ((res = malloc(cap)) == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	pos = 0;
	guest_pc_get_len(args, len, &pos, &n);
	guest_pc_put_len(res, cap, &out, n);
	for (size_t i = 0; i < n; i++) {
		guest_pc_get_str(args, len, &pos, &k, &kn);
		e = *find(k, kn);
		guest_pc_put_opt(res, cap, &out, e != NULL);
		if (e != NULL)
			guest_pc_put_bytes(res, cap, &out, e->val, e->vlen);
	}
	guest_reply(c, res, out);
	free(res);
}

int
main(int argc, char *argv[])
{
	struct guest *g;
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	/* first, so that a subscriber hears of every change once we serve;
	 * a host without topics (one written from the spec alone) has none */
	if ((rc = guest_advertise(g, "kv.changed", "str", 0)) == -ENOSYS)
		warnx("this hub has no topics: kv.changed is not published");
	else if (rc != 0)
		errx(1, "cannot publish kv.changed: %s", strerror(-rc));
	if (guest_register(g, "kv.put", "str,bytes->unit", put, NULL) != 0 ||
	    guest_register(g, "kv.get", "str->bytes", get, NULL) != 0 ||
	    guest_register(g, "kv.delete", "str->unit", del, NULL) != 0 ||
	    guest_register(g, "kv.list", "->str", list, NULL) != 0 ||
	    guest_register(g, "kv.keys", "->list<str>", keys, NULL) != 0 ||
	    guest_register(g, "kv.mget", "list<str>->list<opt<bytes>>", mget, NULL) != 0)
		errx(1, "cannot register methods");
	rc = guest_run(g);
	if (rc == -ECONNABORTED)	/* the hub ended us for breaking a rule */
		fprintf(stderr, "kv: hub ended me: %s\n", guest_goodbye_reason(g));
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
