/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's timers and suspension: each processor's
 * timer heap of deadlines, suspending a microthread and claiming (waking)
 * it. */
#include <errno.h>
#include <stdlib.h>

#include "mt/internal.h"
#include "proto/clock.h"

static void
heap_set(struct mt_proc *p, unsigned i, struct mt_timer t)
{
	p->heap[i] = t;
	t.m->tidx = (int)i;
}

static void
heap_up(struct mt_proc *p, unsigned i)
{
	struct mt_timer t = p->heap[i];

	while (i > 0 && p->heap[(i - 1) / 2].at > t.at) {
		heap_set(p, i, p->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(p, i, t);
}

static void
heap_down(struct mt_proc *p, unsigned i)
{
	struct mt_timer t = p->heap[i];

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= p->nheap)
			break;
		if (c + 1 < p->nheap && p->heap[c + 1].at < p->heap[c].at)
			c++;
		if (p->heap[c].at >= t.at)
			break;
		heap_set(p, i, p->heap[c]);
		i = c;
	}
	heap_set(p, i, t);
}

static void
heap_remove(struct mt_proc *p, unsigned i)
{
	struct guest_mt *m = p->heap[i].m;

	m->tidx = -1;
	if (--p->nheap > i) {
		heap_set(p, i, p->heap[p->nheap]);
		heap_down(p, i);
		heap_up(p, (unsigned)p->heap[i].m->tidx);
	}
	atomic_store_explicit(&p->tnext, p->nheap ? p->heap[0].at : UINT64_MAX,
	    memory_order_relaxed);
}

static int
timer_add(struct mt_proc *p, struct guest_mt *m, uint64_t at)
{
	pthread_mutex_lock(&p->tmu);
	if (p->nheap == p->capheap) {
		unsigned cap = p->capheap ? p->capheap * 2 : 64;
		struct mt_timer *h = realloc(p->heap, cap * sizeof(*h));

		if (h == NULL) {
			pthread_mutex_unlock(&p->tmu);
			return -ENOMEM;
		}
		p->heap = h;
		p->capheap = cap;
	}
	p->heap[p->nheap] = (struct mt_timer){ at, m };
	heap_up(p, p->nheap++);
	m->tproc = p;
	atomic_store_explicit(&p->tnext, p->heap[0].at, memory_order_relaxed);
	pthread_mutex_unlock(&p->tmu);
	return 0;
}

/* Drops m's deadline, if the timer has not fired: m runs again, so its
 * entry must not outlive this wait. */
static void
timer_cancel(struct guest_mt *m)
{
	struct mt_proc *tp = m->tproc;

	if (tp == NULL)
		return;
	pthread_mutex_lock(&tp->tmu);
	if (m->tidx >= 0)
		heap_remove(tp, (unsigned)m->tidx);
	pthread_mutex_unlock(&tp->tmu);
	m->tproc = NULL;
}

/* Fires p's expired deadlines. The claim is made under tmu: the
 * microthread cannot finish its wait (timer_cancel takes tmu) and end
 * while we still look at it. */
void
mt_timers_fire(struct mt_proc *p)
{
	uint64_t now;

	if (atomic_load_explicit(&p->tnext, memory_order_relaxed) == UINT64_MAX)
		return;
	now = hp_now_ns();
	if (atomic_load_explicit(&p->tnext, memory_order_relaxed) > now)
		return;
	pthread_mutex_lock(&p->tmu);
	while (p->nheap > 0 && p->heap[0].at <= now) {
		struct guest_mt *m = p->heap[0].m;
		/* acquire: pairs with mt_wait_begin's release store of WAITING */
		uint64_t w = atomic_load_explicit(&m->wstate, memory_order_acquire);

		heap_remove(p, 0);
		if (MT_W_STATE(w) == MT_W_WAITING)
			mt_claim(m, MT_W_GEN(w), m->timer_idx);
	}
	pthread_mutex_unlock(&p->tmu);
}

/* -- suspend and wake ------------------------------------------------------ */

/* Starts a wait of m (running): a new generation, WAITING, in the
 * suspension window, with a deadline on its processor's heap. Nothing is
 * published yet: the caller does that (under its lock) after this. */
void
mt_wait_begin(struct guest_mt *m, uint64_t deadline_ns, int timer_idx)
{
	uint64_t gen = MT_W_GEN(atomic_load_explicit(&m->wstate,
	    memory_order_relaxed)) + 1;

	m->timer_idx = timer_idx;
	m->wake_idx = 0;
	atomic_store_explicit(&m->sw, MT_SW_SUSPENDING, memory_order_relaxed);
	/* release: pairs with mt_try_claim's CAS; a claimer sees sw
	 * SUSPENDING and the fields above */
	atomic_store_explicit(&m->wstate, gen << 2 | MT_W_WAITING, memory_order_release);
	if (deadline_ns != UINT64_MAX && timer_add(m->proc, m, deadline_ns) < 0) {
		/* no room for the deadline: it has passed, as far as we know */
		m->wake_idx = timer_idx;
		atomic_store_explicit(&m->wstate, gen << 2 | MT_W_CLAIMED,
		    memory_order_relaxed);
		atomic_store_explicit(&m->sw, MT_SW_WOKEN, memory_order_relaxed);
	}
}

/* Switches away until claimed; returns the claimer's wake_idx. */
int
mt_wait_switch(struct guest_mt *m)
{
	struct mt_proc *p = m->proc;
	transfer_t t;

	p->why = MT_SUSPEND;
	san_to_sched(m, p, 0);
	t = jump_fcontext(p->sched_ctx, NULL);
	p = t.data;		/* maybe another processor now */
	p->sched_ctx = t.fctx;
	san_in_mt(m, p, 0);
	timer_cancel(m);
	return m->wake_idx;
}

/* Claims m's wait of generation gen: WAITING -> CLAIMED, so exactly one
 * of its wakers and its timer wins. 1 won: m stays suspended until
 * mt_ready, so the winner may first hand it an item. */
int
mt_try_claim(struct guest_mt *m, uint64_t gen)
{
	uint64_t w = gen << 2 | MT_W_WAITING;

	/* acq_rel: pairs with mt_wait_begin's release store of WAITING */
	return atomic_compare_exchange_strong_explicit(&m->wstate, &w,
	    gen << 2 | MT_W_CLAIMED, memory_order_acq_rel, memory_order_acquire);
}

/* Lets a claimed microthread go on, its wait returning wake_idx. */
void
mt_ready(struct guest_mt *m, int wake_idx)
{
	m->wake_idx = wake_idx;
	mt_make_runnable(m);
}

int
mt_claim(struct guest_mt *m, uint64_t gen, int wake_idx)
{
	if (!mt_try_claim(m, gen))
		return 0;
	mt_ready(m, wake_idx);
	return 1;
}

int
mt_suspend(pthread_mutex_t *unlock, uint64_t deadline_ns)
{
	struct guest_mt *m = mt_self();

	if (m == NULL) {
		if (unlock != NULL)
			pthread_mutex_unlock(unlock);
		return -EPERM;
	}
	mt_wait_begin(m, deadline_ns, -ETIMEDOUT);
	/* after WAITING: a waker that finds us under the lock can claim us */
	if (unlock != NULL)
		pthread_mutex_unlock(unlock);
	return mt_wait_switch(m);
}

int
mt_wake(struct guest_mt *m)
{
	/* acquire: pairs with mt_wait_begin's release store of WAITING */
	uint64_t w = atomic_load_explicit(&m->wstate, memory_order_acquire);

	if (MT_W_STATE(w) != MT_W_WAITING)
		return 0;
	return mt_claim(m, MT_W_GEN(w), 0);
}
