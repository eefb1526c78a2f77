/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The method registry: every method's name, signature and owner (the host
 * or a guest's instance), found by name or id, and whether it can be
 * called now.
 *
 * An array, and an index from method id to array slot (proto/idtab) rebuilt
 * whenever a method goes. A guest registers only its own names (NAME.*
 * and its provides, config_guest_covers), and no other guest's config covers
 * them (config_load), so a name stays its guest's while it is stopped,
 * failed or restarting. Its methods outlive its instance: while it
 * restarts, a call gets "guest X is restarting", and the next instance
 * registering a name takes its entry back; they go when the guest leaves
 * the config (methods_forget), or to make room for an instance's new
 * names past METHODS_PER_GUEST. What an instance said of them and of
 * itself (hub.describe) goes when it detaches (methods_detach). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/methods.h"
#include "proto/builtin.h"
#include "proto/method.h"

/* Methods one guest may register: a bound on what one guest makes the
 * host keep and list (doc/security.md). */
#define METHODS_PER_GUEST	256

struct index_entry {
	uint64_t	id;
	uint32_t	at;		/* index into h->methods */
};

/* After methods went: fewer entries than the index held, so it never
 * grows here and no insert fails. */
static void
index_refill(struct hub *h)
{
	hp_idtab_clear(&h->mindex);
	for (uint32_t i = 0; i < h->nmethods; i++) {
		struct index_entry *e = hp_idtab_insert(&h->mindex, h->methods[i].id);

		e->at = i;
	}
}

void
methods_init(struct hub *h)
{
	h->mindex = (struct hp_idtab)HP_IDTAB_INIT(struct index_entry);
}

void
methods_free(struct hub *h)
{
	free(h->methods);
	h->methods = NULL;
	h->nmethods = h->mcap = 0;
	hp_idtab_free(&h->mindex);
}

struct method *
methods_by_id(struct hub *h, uint64_t id)
{
	struct index_entry *e = hp_idtab_find(&h->mindex, id);

	return e != NULL ? &h->methods[e->at] : NULL;
}

const struct method *
methods_find(struct hub *h, const char *name)
{
	const struct method *m = methods_by_id(h, hp_method_id(name, strlen(name)));

	return m != NULL && strcmp(m->name, name) == 0 ? m : NULL;
}

int
methods_live(struct hub *h, const struct method *m)
{
	struct peer *q = hub_peer(h, m->owner);

	return m->owner == 0 || (q != NULL && q->state == PEER_UP && q->epoch == m->epoch);
}

const char *
methods_unavailable(struct hub *h, const struct method *m, char *buf, size_t len)
{
	struct peer *q = hub_peer(h, m->owner);
	const char *name = q != NULL && q->conf != NULL ? q->conf->name : "?";

	if (q == NULL || q->conf == NULL)
		snprintf(buf, len, "the method's guest is gone");
	else if (q->state == PEER_UP)
		snprintf(buf, len, "guest %s has not registered it since it restarted", name);
	else if (q->state == PEER_STARTING || q->state == PEER_BACKOFF ||
		 (q->state == PEER_ENDING && q->conf->restart != RESTART_NEVER) ||
		 (q->state == PEER_STOPPING && q->life.want_restart))
		snprintf(buf, len, "guest %s is restarting", name);
	else
		snprintf(buf, len, "guest %s is %s", name, lifecycle_state_name(q->state));
	return buf;
}

/* Whether name is still q's: one of the names of the config it runs
 * with, or comes back with after a reload (next_conf). Stopped, failed or
 * restarting, a guest keeps its names; a reload that gives one to another
 * guest frees it once the old instance is no longer up. */
static int
still_its(const struct peer *q, const char *name)
{
	if (q == NULL || q->conf == NULL)
		return 0;
	return config_guest_covers(q->next_conf != NULL ? q->next_conf : q->conf, name);
}

/* One entry more (or less) in the registry that a guest's instances
 * hold (the host's own are not counted). */
static void
held_by(struct hub *h, uint32_t owner, int n)
{
	struct peer *q = hub_peer(h, owner);

	if (q != NULL && owner != 0)
		q->methods_held = n > 0 ? q->methods_held + 1 :
		    q->methods_held > 0 ? q->methods_held - 1 : 0;
}

/* Drops the first entry an earlier instance of p left; -1 if none. */
static int
drop_earlier(struct hub *h, struct peer *p)
{
	for (uint32_t i = 0; i < h->nmethods; i++) {
		if (h->methods[i].owner == p->id && h->methods[i].epoch != p->epoch) {
			h->methods[i] = h->methods[--h->nmethods];
			held_by(h, p->id, -1);
			index_refill(h);
			return 0;
		}
	}
	return -1;
}

int
methods_add(struct hub *h, const char *name, const char *signature,
	    uint32_t owner, uint32_t epoch, uint16_t service, const char **why)
{
	struct peer *p = hub_peer(h, owner);
	struct method *m, *old;
	struct index_entry *e;
	struct hp_sig sig;
	size_t n = strlen(name);
	uint64_t id = hp_method_id(name, n);

	if ((*why = hp_method_name_refused(name, n)) != NULL)
		return -EINVAL;
	/* a guest registers its own names only, by the config its
	 * instance started with (doc/security.md) */
	if (owner != 0 && (p == NULL || p->conf == NULL || !config_guest_covers(p->conf, name))) {
		*why = HP_SVC_REG_NOT_YOURS;
		return -EPERM;
	}
	if (hp_sig_parse(signature, &sig, why) != 0)
		return -EINVAL;
	if ((old = methods_by_id(h, id)) != NULL) {
		if (strcmp(old->name, name) != 0) {
			*why = HP_SVC_REG_COLLIDES;
			return -EEXIST;
		}
		/* taken, unless by an earlier instance of this guest, or by a
		 * guest whose name it no longer is (a reload moved it) */
		if (methods_live(h, old) || (old->owner != owner &&
		    (old->owner == 0 || still_its(hub_peer(h, old->owner), name)))) {
			*why = HP_SVC_REG_TAKEN;
			return -EEXIST;
		}
	}
	if (p != NULL && p->nmethods >= METHODS_PER_GUEST) {
		*why = HP_SVC_REG_TOO_MANY;
		return -ENOSPC;
	}
	/* the entries its earlier instances left count too: one that
	 * registers new names each time it starts would grow the registry
	 * without end; one such entry makes room */
	if (p != NULL && old == NULL && p->methods_held >= METHODS_PER_GUEST &&
	    drop_earlier(h, p) != 0) {
		*why = HP_SVC_REG_TOO_MANY;
		return -ENOSPC;
	}
	if (old != NULL) {
		m = old;
		held_by(h, m->owner, -1);
	} else {
		if (h->nmethods == h->mcap) {
			uint32_t cap = h->mcap ? h->mcap * 2 : 64;

			if ((m = realloc(h->methods, cap * sizeof(*m))) == NULL) {
				*why = "out of memory";
				return -ENOMEM;
			}
			h->methods = m;
			h->mcap = cap;
		}
		if ((e = hp_idtab_insert(&h->mindex, id)) == NULL) {
			*why = "out of memory";
			return -ENOMEM;
		}
		e->at = h->nmethods;
		m = &h->methods[h->nmethods++];
		memset(m, 0, sizeof(*m));
		memcpy(m->name, name, n);
		m->id = id;
	}
	m->sig = sig;
	snprintf(m->signature, sizeof(m->signature), "%s", signature);
	m->owner = owner;
	m->epoch = epoch;
	m->service = service;
	m->where[0] = '\0';	/* a new registration says nothing yet */
	held_by(h, owner, 1);
	if (p != NULL)
		p->nmethods++;
	return 0;
}

void
methods_detach(struct hub *h, struct peer *p)
{
	p->note[0] = '\0';
	for (uint32_t i = 0; i < h->nmethods; i++)
		if (h->methods[i].owner == p->id)
			h->methods[i].where[0] = '\0';
}

int
methods_remove(struct hub *h, struct peer *p, const char *name)
{
	const struct method *m = methods_find(h, name);
	uint32_t at;

	if (m == NULL)
		return -ENOENT;
	/* as hub.describe: this instance's own, not an earlier one's */
	if (m->owner != p->id || m->epoch != p->epoch)
		return -EPERM;
	at = (uint32_t)(m - h->methods);
	h->methods[at] = h->methods[--h->nmethods];
	if (p->nmethods > 0)
		p->nmethods--;
	held_by(h, p->id, -1);
	index_refill(h);
	return 0;
}

void
methods_forget(struct hub *h, struct peer *p)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < h->nmethods; i++)
		if (h->methods[i].owner != p->id)
			h->methods[kept++] = h->methods[i];
	p->nmethods = p->methods_held = 0;
	if (kept == h->nmethods)
		return;
	h->nmethods = kept;
	index_refill(h);
}
