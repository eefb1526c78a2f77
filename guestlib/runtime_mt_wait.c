/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest on microthreads, its waits: the guest's lock (a recursive mutex
 * with P > 1 processors, given up entirely while a microthread is
 * suspended), a microthread suspended until the service finds what it
 * waits for on the hub, and the service waking those that can go on. */
#include <errno.h>
#include <stdlib.h>

#include "guestlib/internal.h"
#include "proto/list.h"
#include "mt/mt.h"

/* Blocked microthreads woken per poll at most: thousands waiting for ring
 * room would otherwise all wake for each free descriptor, and all but a
 * few go back to sleep (the next poll wakes the next ones). */
#define WAKE_BUDGET	8

void
lg_mt_lock(struct guest *g)
{
	struct lg_mt *m = g->mt;

	if (m == NULL || !m->locking)
		return;
	pthread_mutex_lock(&m->mu);
	m->depth++;
}

void
lg_mt_unlock(struct guest *g)
{
	struct lg_mt *m = g->mt;

	if (m == NULL || !m->locking)
		return;
	m->depth--;
	pthread_mutex_unlock(&m->mu);
}

int
lg_suspend(struct guest *g, uint64_t deadline_ns)
{
	struct lg_mt *m = g->mt;
	int depth, rc;

	if (!m->locking)
		return mt_suspend(NULL, deadline_ns);
	/* given up entirely while suspended: it may resume on another
	 * processor, and the service must get in meanwhile */
	depth = m->depth;
	for (int i = 1; i < depth; i++)
		pthread_mutex_unlock(&m->mu);
	m->depth = 0;
	rc = mt_suspend(&m->mu, deadline_ns);
	for (int i = 0; i < depth; i++)
		pthread_mutex_lock(&m->mu);
	m->depth = depth;
	return rc;
}

static void
blocked_unlink(struct lg_mt *m, struct lg_blocked *w)
{
	HP_LIST_UNLINK_TAIL(&m->blocked, &m->blocked_tail, w);
	w->linked = 0;
}

int
lg_mt_wait(struct guest *g, uint32_t waits, int (*ready)(void *), void *arg,
	   struct timeout *t)
{
	struct lg_blocked w = { .mt = mt_self(), .waits = waits, .ready = ready,
				.arg = arg };
	struct lg_mt *m = g->mt;
	int r, rc;

	lg_timeout_at(t, hp_now_ns());
	for (;;) {
		if ((r = ready(arg)) != 0)
			return r < 0 ? r : 1;
		if (g->dead)
			return g->dead;
		if (m->draining)	/* guest_stop (runtime_mt.c) */
			return -ESHUTDOWN;
		/* at the tail: the longest waiting is woken first */
		HP_LIST_APPEND(&m->blocked, &m->blocked_tail, &w);
		w.linked = 1;
		rc = lg_suspend(g, t->at);
		if (w.linked)		/* not woken: the deadline */
			blocked_unlink(m, &w);
		if (rc == -ETIMEDOUT)
			return (r = ready(arg)) != 0 ? (r < 0 ? r : 1) : 0;
	}
}

/* Wakes the oldest blocked microthreads that can go on, WAKE_BUDGET at
 * most (all of them once the guest is dead or stopping). */
void
lg_mt_wake_ready(struct guest *g)
{
	struct lg_blocked *w = g->mt->blocked, *next;
	int budget = WAKE_BUDGET, all = g->dead || g->mt->draining;

	for (; w != NULL && (budget > 0 || all); w = next) {
		next = w->next;
		if (all || w->ready(w->arg) != 0) {
			blocked_unlink(g->mt, w);
			mt_wake(w->mt);
			budget--;
		}
	}
}

struct served_wait {
	struct guest	*g;
	uint64_t	seen;
};

static int
served_ready(void *arg)
{
	struct served_wait *w = arg;

	return w->g->mt->served != w->seen;
}

int
lg_mt_service_wait(struct guest *g, struct timeout *t)
{
	struct served_wait w = { g, 0 };
	int rc;

	lg_mt_lock(g);
	w.seen = g->mt->served;
	rc = lg_mt_wait(g, 0, served_ready, &w, t);
	lg_mt_unlock(g);
	return rc < 0 ? rc : 0;
}
