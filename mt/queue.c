/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's run queues: each processor's local FIFO, the
 * global one, stealing, and making a claimed microthread runnable. */
#include "mt/internal.h"

#define MT_GLOBAL_EVERY		61	/* local picks before a look at global */

/* Returns the queue's new length. */
uint32_t
mt_local_push(struct mt_proc *p, struct guest_mt *m)
{
	uint32_t n;

	m->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->tail != NULL)
		p->tail->next = m;
	else
		p->head = m;
	p->tail = m;
	n = atomic_load_explicit(&p->n, memory_order_relaxed) + 1;
	atomic_store_explicit(&p->n, n, memory_order_relaxed);
	pthread_mutex_unlock(&p->mu);
	return n;
}

static struct guest_mt *
local_pop(struct mt_proc *p)
{
	struct guest_mt *m;

	if (atomic_load_explicit(&p->n, memory_order_relaxed) == 0)
		return NULL;
	pthread_mutex_lock(&p->mu);
	if ((m = p->head) != NULL) {
		if ((p->head = m->next) == NULL)
			p->tail = NULL;
		atomic_store_explicit(&p->n, atomic_load_explicit(&p->n,
		    memory_order_relaxed) - 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&p->mu);
	return m;
}

static void
global_push(struct guest_rt *rt, struct guest_mt *m)
{
	m->next = NULL;
	pthread_mutex_lock(&rt->gmu);
	if (rt->gtail != NULL)
		rt->gtail->next = m;
	else
		rt->ghead = m;
	rt->gtail = m;
	atomic_fetch_add_explicit(&rt->gn, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rt->gmu);
}

/* Takes a fair share of the global queue (its length over P, at least
 * one): the first to run now, the rest to p's local queue. */
static struct guest_mt *
global_take(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;
	struct guest_mt *first, *m;
	uint32_t n, want;

	if (atomic_load_explicit(&rt->gn, memory_order_relaxed) == 0)
		return NULL;
	pthread_mutex_lock(&rt->gmu);
	n = atomic_load_explicit(&rt->gn, memory_order_relaxed);
	if ((first = rt->ghead) == NULL) {
		pthread_mutex_unlock(&rt->gmu);
		return NULL;
	}
	want = n / rt->nproc;
	if (want < 1)
		want = 1;
	rt->ghead = first->next;
	for (uint32_t i = 1; i < want && rt->ghead != NULL; i++) {
		m = rt->ghead;
		rt->ghead = m->next;
		mt_local_push(p, m);	/* gmu -> p->mu: nothing takes them the
					 * other way round */
	}
	if (rt->ghead == NULL)
		rt->gtail = NULL;
	atomic_fetch_sub_explicit(&rt->gn, want, memory_order_relaxed);
	pthread_mutex_unlock(&rt->gmu);
	return first;
}

/* Steals the newer half of another processor's queue, never its head: the
 * one it runs next, typically a peer just woken there, which runs best
 * where its waker's data is (the seed's "never steal the next"). The head
 * is taken only when it is alone and its processor made no switch between
 * two of our looks: one microthread computing there for that long would
 * hold it back. The running microthread is in no queue. A queued one is
 * runnable and owned by its queue alone (a claim enqueues once per wait),
 * so the stolen chain is ours once unlinked under the victim's lock. */
static struct guest_mt *
steal(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;
	struct guest_mt *first, *m;
	uint32_t n, keep;
	uint64_t sw;

	for (unsigned k = 1; k < rt->nproc; k++) {
		struct mt_proc *v = &rt->procs[(p->id + k) % rt->nproc];

		if ((n = atomic_load_explicit(&v->n, memory_order_relaxed)) == 0)
			continue;
		if (n == 1) {
			sw = atomic_load_explicit(&v->switches, memory_order_relaxed);
			if (p->seen != v || p->seen_switches != sw) {
				p->seen = v;
				p->seen_switches = sw;
				continue;
			}
		}
		pthread_mutex_lock(&v->mu);
		if ((n = atomic_load_explicit(&v->n, memory_order_relaxed)) == 0) {
			pthread_mutex_unlock(&v->mu);
			continue;
		}
		keep = n == 1 ? 0 : n - n / 2;
		if (keep == 0) {
			first = v->head;
			v->head = v->tail = NULL;
		} else {
			m = v->head;
			for (uint32_t i = 1; i < keep; i++)
				m = m->next;
			first = m->next;
			m->next = NULL;
			v->tail = m;
		}
		atomic_store_explicit(&v->n, keep, memory_order_relaxed);
		pthread_mutex_unlock(&v->mu);
		p->seen = NULL;
		atomic_fetch_add_explicit(&p->steals, n - keep, memory_order_relaxed);
		for (m = first->next; m != NULL; ) {
			struct guest_mt *nx = m->next;

			mt_local_push(p, m);
			m = nx;
		}
		return first;
	}
	return NULL;
}

/* Makes a claimed microthread runnable: on the calling processor's queue
 * if it is one of this runtime's, else the global queue. Other processors
 * are told only of work they may take: a lone head of a local queue is
 * for its own processor (steal), so a ping-pong between two microthreads
 * stays on one processor and lets the others sleep. */
void
mt_enqueue(struct guest_mt *m)
{
	struct mt_proc *p = mt_cur_proc();

	if (p != NULL && p->rt == m->rt) {
		if (mt_local_push(p, m) >= 2 && p->rt->nproc > 1)
			mt_new_work(m->rt);
	} else {
		global_push(m->rt, m);
		mt_new_work(m->rt);
	}
}

/* The claimer's half of the suspension window: a microthread still
 * switching away is only marked, its scheduler queues it. */
void
mt_make_runnable(struct guest_mt *m)
{
	/* acquire: pairs with the scheduler's CAS of sw (below) */
	uint32_t s = atomic_load_explicit(&m->sw, memory_order_acquire);

	for (;;) {
		if (s == MT_SW_SUSPENDING) {
			/* acq_rel: pairs with the scheduler's CAS SUSPENDING->
			 * PARKED, one of the two sees the other */
			if (atomic_compare_exchange_weak_explicit(&m->sw, &s,
			    MT_SW_WOKEN, memory_order_acq_rel, memory_order_acquire))
				return;
			continue;
		}
		/* PARKED: its context is saved (acquire above pairs with the
		 * scheduler's release CAS to PARKED) */
		atomic_store_explicit(&m->sw, MT_SW_RUNNING, memory_order_relaxed);
		mt_enqueue(m);
		return;
	}
}


struct guest_mt *
mt_proc_next(struct mt_proc *p)
{
	struct guest_mt *m = NULL;

	/* now and then the global queue first, so it is not starved by a
	 * busy local one */
	if (++p->ticks % MT_GLOBAL_EVERY == 0)
		m = global_take(p);
	if (m == NULL)
		m = local_pop(p);
	if (m == NULL)
		m = global_take(p);
	if (m == NULL && p->rt->nproc > 1)
		m = steal(p);
	return m;
}
