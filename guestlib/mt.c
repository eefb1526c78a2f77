/* The microthread runtime: stacks, context switches, the M:N scheduler
 * (local and global run queues, stealing, parking), timers, suspend and
 * wake. Channels and alt are in mt_chan.c.
 *
 * A microthread always switches to its processor's scheduler and the
 * scheduler to the next microthread (never one microthread straight to
 * another): the scheduler's stack is where a dead microthread's stack is
 * released and where a suspending one is published once its context is
 * saved, so neither can be touched while still in use. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "guestlib/mt_internal.h"
#include "proto/atomic.h"
#include "proto/clock.h"

#ifdef MT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef MT_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#define MT_MAX_PROCS		1024
#define MT_POOL_MAX		1024	/* idle stacks kept per runtime */
#define MT_DEFAULT_STACK	(64u * 1024)
#define MT_YIELD_ROUNDS		16	/* sched_yield rounds before sleeping */
/* Polling the io without yielding first, while its spin says so: an
 * answer is often a microsecond away, and sched_yield is a system call. */
#define MT_SPIN_NS		20000
#define MT_GLOBAL_EVERY		61	/* local picks before a look at global */

/* JEC counters (the Blitz/Rayon sleep protocol) */
#define C_SLEEP_ONE	((uint64_t)1)
#define C_IDLE_ONE	((uint64_t)1 << 16)
#define C_JEC_ONE	((uint64_t)1 << 32)
#define C_SLEEPING(c)	((uint32_t)((c) & 0xffff))
#define C_IDLE(c)	((uint32_t)(((c) >> 16) & 0xffff))
#define C_JEC(c)	((uint32_t)((c) >> 32))

/* A processor's latch: UNSET running or looking, SLEEPY announced, SLEEPING
 * about to block or blocked, SET told to wake. */
#define MT_L_UNSET	0u
#define MT_L_SLEEPY	1u
#define MT_L_SLEEPING	2u
#define MT_L_SET	3u

struct mt_tls {
	struct mt_proc	*p;	/* this thread's processor, if any */
	struct guest_mt	*cur;	/* the microthread it runs, if any */
};
static _Thread_local struct mt_tls tls;

static void	enqueue(struct guest_mt *m);
static void	rt_stop(struct guest_rt *rt);
static void	new_work(struct guest_rt *rt);

/* -- sanitizer hooks ---------------------------------------------------- */

static inline void
san_to_mt(struct mt_proc *p, struct guest_mt *m)
{
#ifdef MT_ASAN
	__sanitizer_start_switch_fiber(&p->asan_fake, (char *)m->map + p->rt->page,
	    (size_t)((char *)m - ((char *)m->map + p->rt->page)));
#endif
#ifdef MT_TSAN
	__tsan_switch_to_fiber(m->tsan_fiber, 0);
#endif
	(void)p;
	(void)m;
}

static inline void
san_in_sched(struct mt_proc *p)
{
#ifdef MT_ASAN
	__sanitizer_finish_switch_fiber(p->asan_fake, NULL, NULL);
#endif
	(void)p;
}

static inline void
san_to_sched(struct guest_mt *m, struct mt_proc *p, int dying)
{
#ifdef MT_ASAN
	/* NULL: a dying fiber's fake stack goes with it */
	__sanitizer_start_switch_fiber(dying ? NULL : &m->asan_fake, p->sbottom, p->ssize);
#endif
#ifdef MT_TSAN
	__tsan_switch_to_fiber(p->tsan_fiber, 0);
#endif
	(void)m;
	(void)p;
	(void)dying;
}

static inline void
san_in_mt(struct guest_mt *m, struct mt_proc *p, int first)
{
#ifdef MT_ASAN
	/* what we came from is p's scheduler stack: kept to switch back */
	__sanitizer_finish_switch_fiber(first ? NULL : m->asan_fake, &p->sbottom, &p->ssize);
#endif
	(void)m;
	(void)p;
	(void)first;
}

/* -- thread-local state ------------------------------------------------- */

/* Read anew on each call: a microthread may resume on another thread, and
 * a compiler may keep a TLS address across the jump if it sees it. */
__attribute__((noinline)) struct mt_proc *
mt_cur_proc(void)
{
	__asm__ __volatile__("" ::: "memory");
	return tls.p;
}

__attribute__((noinline)) struct guest_mt *
mt_self(void)
{
	__asm__ __volatile__("" ::: "memory");
	return tls.cur;
}

uint64_t
guest_mt_now_ns(void)
{
	return hp_now_ns();
}

/* -- stacks --------------------------------------------------------------- */

static void
stack_unmap(struct guest_rt *rt, struct guest_mt *m)
{
#ifdef MT_ASAN
	ASAN_UNPOISON_MEMORY_REGION(m->map, m->maplen);
#endif
	munmap(m->map, m->maplen);
	(void)rt;
}

/* A stack with its microthread at the top, from the pool or mapped. */
static int
stack_get(struct guest_rt *rt, struct guest_mt **mp)
{
	struct guest_mt *m;
	size_t len = rt->page + rt->stack_size;
	void *map;

	pthread_mutex_lock(&rt->mu);
	if ((m = rt->pool) != NULL) {
		rt->pool = m->next;
		rt->npool--;
	}
	pthread_mutex_unlock(&rt->mu);
	if (m != NULL) {
		map = m->map;
#ifdef MT_ASAN
		/* frames of its last user may be left poisoned */
		ASAN_UNPOISON_MEMORY_REGION((char *)map + rt->page, rt->stack_size);
#endif
	} else {
		map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
		if (map == MAP_FAILED)
			return -errno;
		/* the guard page: an overflow faults instead of writing over
		 * whatever lies below */
		if (mprotect(map, rt->page, PROT_NONE) < 0) {
			int e = errno;

			munmap(map, len);
			return -e;
		}
		m = (struct guest_mt *)((char *)map + len - sizeof(*m));
		pthread_mutex_lock(&rt->mu);
		rt->mmaps++;
		rt->stacks++;
		pthread_mutex_unlock(&rt->mu);
	}
	memset(m, 0, sizeof(*m));
	m->map = map;
	m->maplen = len;
	m->rt = rt;
	m->tidx = -1;
	*mp = m;
	return 0;
}

/* Back to the pool (or unmapped past its cap); never while in use: called
 * on a scheduler after the microthread's last switch, or by its joiner. */
static void
stack_put(struct guest_rt *rt, struct guest_mt *m)
{
	int unmap = 0;

#ifdef MT_TSAN
	if (m->tsan_fiber != NULL)
		__tsan_destroy_fiber(m->tsan_fiber);
	m->tsan_fiber = NULL;
#endif
	pthread_mutex_lock(&rt->mu);
	if (m->all_prev != NULL)
		m->all_prev->all_next = m->all_next;
	else
		rt->all = m->all_next;
	if (m->all_next != NULL)
		m->all_next->all_prev = m->all_prev;
	if (rt->npool < MT_POOL_MAX) {
		m->next = rt->pool;
		rt->pool = m;
		rt->npool++;
	} else {
		unmap = 1;
		rt->munmaps++;
		rt->stacks--;
	}
	pthread_mutex_unlock(&rt->mu);
	if (unmap)
		stack_unmap(rt, m);
}

/* -- run queues ----------------------------------------------------------- */

/* Returns the queue's new length. */
static uint32_t
local_push(struct mt_proc *p, struct guest_mt *m)
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
		local_push(p, m);	/* gmu -> p->mu: nothing takes them the
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

			local_push(p, m);
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
static void
enqueue(struct guest_mt *m)
{
	struct mt_proc *p = mt_cur_proc();

	if (p != NULL && p->rt == m->rt) {
		if (local_push(p, m) >= 2 && p->rt->nproc > 1)
			new_work(m->rt);
	} else {
		global_push(m->rt, m);
		new_work(m->rt);
	}
}

/* The claimer's half of the suspension window: a microthread still
 * switching away is only marked, its scheduler queues it. */
static void
make_runnable(struct guest_mt *m)
{
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
		enqueue(m);
		return;
	}
}

/* -- timers ---------------------------------------------------------------- */

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
static void
timers_fire(struct mt_proc *p)
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
	make_runnable(m);
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
	uint64_t w = atomic_load_explicit(&m->wstate, memory_order_acquire);

	if (MT_W_STATE(w) != MT_W_WAITING)
		return 0;
	return mt_claim(m, MT_W_GEN(w), 0);
}

/* -- parking: the JEC protocol --------------------------------------------- */

/* Wakes one sleeping processor: a condvar sleeper first, the io sleeper
 * only if none (passes 2; 1: never the io sleeper). 1 if it woke one. */
static int
wake_one(struct guest_rt *rt, int passes)
{
	for (int pass = 0; pass < passes; pass++) {
		for (unsigned i = 0; i < rt->nproc; i++) {
			struct mt_proc *q = &rt->procs[i];

			if (atomic_load_explicit(&q->latch, memory_order_relaxed) !=
			    MT_L_SLEEPING)
				continue;
			pthread_mutex_lock(&q->smu);
			if (q->blocked && q->io_sleeper == pass) {
				q->blocked = 0;
				/* the waker takes the sleeper off the count */
				atomic_fetch_sub_explicit(&rt->counters, C_SLEEP_ONE,
				    memory_order_seq_cst);
				atomic_store_explicit(&q->latch, MT_L_SET,
				    memory_order_relaxed);
				if (q->io_sleeper)
					rt->io->kick(rt->io->ctx);
				else
					pthread_cond_signal(&q->scond);
				pthread_mutex_unlock(&q->smu);
				return 1;
			}
			pthread_mutex_unlock(&q->smu);
		}
	}
	return 0;
}

/* New work is queued: toggle the JEC to active (a processor about to sleep
 * sees it changed) and wake one sleeper unless an idle processor that is
 * still awake will find the work anyway. */
static void
new_work(struct guest_rt *rt)
{
	uint64_t c;

	/* the queue push (under its mutex) before the counters' load: pairs
	 * with the sleeper's fence between its sleeping count and its last
	 * look at the queues */
	hp_fence_seq_cst();
	c = atomic_load_explicit(&rt->counters, memory_order_seq_cst);
	for (;;) {
		if ((C_JEC(c) & 1) != 0)
			break;	/* active already */
		if (atomic_compare_exchange_weak_explicit(&rt->counters, &c,
		    c + C_JEC_ONE, memory_order_seq_cst, memory_order_seq_cst))
			break;
	}
	if (C_SLEEPING(c) == 0)
		return;
	if (C_IDLE(c) > C_SLEEPING(c))
		return;	/* an awake idle processor will take it */
	wake_one(rt, 2);
}

static int
has_work(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;

	if (atomic_load_explicit(&rt->stopping, memory_order_acquire))
		return 1;
	if (atomic_load_explicit(&p->n, memory_order_relaxed) ||
	    atomic_load_explicit(&rt->gn, memory_order_relaxed))
		return 1;
	/* what steal would take: two or more queued, or a lone head whose
	 * processor has not switched since we last looked */
	for (unsigned i = 0; i < rt->nproc; i++) {
		struct mt_proc *v = &rt->procs[i];
		uint32_t n = atomic_load_explicit(&v->n, memory_order_relaxed);

		if (v == p || n == 0)
			continue;
		if (n >= 2 || (p->seen == v && p->seen_switches ==
		    atomic_load_explicit(&v->switches, memory_order_relaxed)))
			return 1;
	}
	return 0;
}

static int
io_trylock(struct guest_rt *rt)
{
	int z = 0;

	/* acquire: pairs with io_unlock's release, the io is used by one
	 * processor at a time */
	return atomic_compare_exchange_strong_explicit(&rt->io_busy, &z, 1,
	    memory_order_acquire, memory_order_relaxed);
}

static void
io_unlock(struct guest_rt *rt)
{
	/* release: pairs with io_trylock's acquire */
	atomic_store_explicit(&rt->io_busy, 0, memory_order_release);
}

/* Polls io if no other processor is at it; 1 it did something. */
static int
io_poll(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;
	int rc;

	if (!io_trylock(rt))
		return 0;
	rc = rt->io->poll(rt->io->ctx);
	io_unlock(rt);
	atomic_fetch_add_explicit(&rt->polls, 1, memory_order_relaxed);
	if (rc < 0) {
		rt->result = rc;	/* before the stop, which publishes it */
		rt_stop(rt);
		return 0;
	}
	/* what it brought may keep us busy: a processor asleep on its own
	 * comes to take over the io (proc_sleep) */
	if (rc > 0 && rt->nproc > 1)
		wake_one(rt, 1);
	return rc > 0;
}

static void
abs_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / HP_NS_PER_S);
	ts->tv_nsec = (long)(ns % HP_NS_PER_S);
}

/* Blocks p until woken, its next deadline, or (the io sleeper) outside
 * work. Called once it announced sleepy (jec_snap) and found nothing. */
static void
proc_sleep(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;
	uint32_t l = MT_L_UNSET;
	uint64_t c, deadline;
	int io = 0, waited_io = 0;

	if (!atomic_compare_exchange_strong_explicit(&p->latch, &l, MT_L_SLEEPY,
	    memory_order_acq_rel, memory_order_acquire)) {
		/* SET: someone woke us already */
		atomic_store_explicit(&p->latch, MT_L_UNSET, memory_order_relaxed);
		p->rounds = 0;
		return;
	}
	/* the one processor that sleeps in io->wait holds the io meanwhile:
	 * poll and wait never run at once */
	if (rt->io != NULL && io_trylock(rt)) {
		int rc = rt->io->poll(rt->io->ctx);

		atomic_fetch_add_explicit(&rt->polls, 1, memory_order_relaxed);
		if (rc != 0) {
			io_unlock(rt);
			if (rc < 0) {
				rt->result = rc;
				rt_stop(rt);
			}
			goto awake;
		}
		io = 1;
	}
	pthread_mutex_lock(&p->smu);
	l = MT_L_SLEEPY;
	if (!atomic_compare_exchange_strong_explicit(&p->latch, &l, MT_L_SLEEPING,
	    memory_order_acq_rel, memory_order_acquire))
		goto unlock_awake;
	c = atomic_load_explicit(&rt->counters, memory_order_seq_cst);
	for (;;) {
		if (C_JEC(c) != p->jec_snap) {
			/* work came since we announced: look again */
			pthread_mutex_unlock(&p->smu);
			if (io)
				io_unlock(rt);
			atomic_store_explicit(&p->latch, MT_L_UNSET, memory_order_relaxed);
			p->rounds = MT_YIELD_ROUNDS;	/* announce again */
			return;
		}
		if (atomic_compare_exchange_weak_explicit(&rt->counters, &c,
		    c + C_SLEEP_ONE, memory_order_seq_cst, memory_order_seq_cst))
			break;
	}
	/* our sleeping count before the last look at the queues: pairs with
	 * new_work's fence between its push and its load of the counters */
	hp_fence_seq_cst();
	if (has_work(p)) {
		atomic_fetch_sub_explicit(&rt->counters, C_SLEEP_ONE, memory_order_seq_cst);
		goto unlock_awake;
	}
	/* only p adds to its heap, and p is here */
	deadline = atomic_load_explicit(&p->tnext, memory_order_relaxed);
	p->blocked = 1;
	p->io_sleeper = io;
	atomic_fetch_add_explicit(&rt->parks, 1, memory_order_relaxed);
	if (io) {
		pthread_mutex_unlock(&p->smu);
		int rc = rt->io->wait(rt->io->ctx, deadline);

		waited_io = 1;
		pthread_mutex_lock(&p->smu);
		if (rc < 0) {
			rt->result = rc;
			pthread_mutex_unlock(&p->smu);
			rt_stop(rt);	/* takes our smu: not held */
			pthread_mutex_lock(&p->smu);
		}
	} else {
		while (p->blocked) {
			if (deadline == UINT64_MAX) {
				pthread_cond_wait(&p->scond, &p->smu);
			} else {
				struct timespec ts;

				abs_timespec(deadline, &ts);
				if (pthread_cond_timedwait(&p->scond, &p->smu,
				    &ts) == ETIMEDOUT)
					break;
			}
		}
	}
	if (p->blocked) {
		/* woke on our own (deadline, io): nobody took us off */
		p->blocked = 0;
		atomic_fetch_sub_explicit(&rt->counters, C_SLEEP_ONE, memory_order_seq_cst);
	}
	p->io_sleeper = 0;
unlock_awake:
	pthread_mutex_unlock(&p->smu);
	if (io)
		io_unlock(rt);
	/* we leave the io, maybe to run what it brought for long: a
	 * sleeper takes the wait over (the io is free now), or nobody would
	 * serve the rings (and beat) while we compute */
	if (waited_io && rt->nproc > 1)
		wake_one(rt, 1);
awake:
	atomic_store_explicit(&p->latch, MT_L_UNSET, memory_order_relaxed);
	p->rounds = 0;
}

/* One round of looking for work while idle: a few yields, then announce
 * sleepy (the JEC snapshot), one more yield, then sleep. */
static void
proc_idle(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;

	if (!p->idle) {
		p->idle = 1;
		p->rounds = 0;
		atomic_fetch_add_explicit(&rt->counters, C_IDLE_ONE, memory_order_seq_cst);
	}
	if (rt->io != NULL && io_poll(p)) {
		p->rounds = 0;
		p->spin_from = 0;
		return;
	}
	if (p->rounds == 0 && rt->io != NULL && rt->io->spin != NULL) {
		if (p->spin_from == 0) {
			p->spin_from = hp_now_ns();
			p->spins = 0;
		}
		/* the clock every 64 looks; the io's word whether spinning
		 * helps (not while processes outnumber CPUs) */
		if (((++p->spins & 63) != 0 || hp_now_ns() - p->spin_from < MT_SPIN_NS) &&
		    rt->io->spin(rt->io->ctx)) {
			hp_cpu_relax();
			return;
		}
	}
	if (p->rounds < MT_YIELD_ROUNDS) {
		p->rounds++;
		sched_yield();
		return;
	}
	if (p->rounds == MT_YIELD_ROUNDS) {
		uint64_t c = atomic_load_explicit(&rt->counters, memory_order_seq_cst);

		/* active (odd) -> sleepy (even); the snapshot is the value
		 * after our toggle, so our own toggle is no news */
		while ((C_JEC(c) & 1) != 0 && !atomic_compare_exchange_weak_explicit(
		    &rt->counters, &c, c + C_JEC_ONE, memory_order_seq_cst,
		    memory_order_seq_cst))
			;
		p->jec_snap = C_JEC(atomic_load_explicit(&rt->counters,
		    memory_order_seq_cst));
		p->rounds++;
		sched_yield();
		return;
	}
	proc_sleep(p);
}

static void
proc_busy(struct mt_proc *p)
{
	p->spin_from = 0;
	if (p->idle) {
		p->idle = 0;
		p->rounds = 0;
		atomic_fetch_sub_explicit(&p->rt->counters, C_IDLE_ONE,
		    memory_order_seq_cst);
	}
}

/* Wakes every sleeper, once stopping is set. */
static void
rt_stop(struct guest_rt *rt)
{
	/* release: pairs with the loops' acquire loads of stopping */
	atomic_store_explicit(&rt->stopping, 1, memory_order_release);
	for (unsigned i = 0; i < rt->nproc; i++) {
		struct mt_proc *q = &rt->procs[i];

		pthread_mutex_lock(&q->smu);
		atomic_store_explicit(&q->latch, MT_L_SET, memory_order_relaxed);
		if (q->blocked) {
			q->blocked = 0;
			atomic_fetch_sub_explicit(&rt->counters, C_SLEEP_ONE,
			    memory_order_seq_cst);
			if (q->io_sleeper)
				rt->io->kick(rt->io->ctx);
			else
				pthread_cond_signal(&q->scond);
		}
		pthread_mutex_unlock(&q->smu);
	}
}

void
mt_rt_stop(struct guest_rt *rt)
{
	rt_stop(rt);
}

/* -- the scheduler ------------------------------------------------------- */

static void
mt_finish(struct mt_proc *p, struct guest_mt *m)
{
	struct guest_rt *rt = p->rt;
	uintptr_t j;

	if (!m->joinable) {
		stack_put(rt, m);
	} else {
		/* acq_rel: pairs with guest_mt_join's CAS; after it the joiner
		 * may free m, so m is not touched again */
		j = atomic_exchange_explicit(&m->join, MT_JOIN_DONE, memory_order_acq_rel);
		if (j != 0)
			mt_wake((struct guest_mt *)j);
	}
	if (atomic_fetch_sub_explicit(&rt->live, 1, memory_order_acq_rel) == 1 &&
	    rt->io == NULL)
		rt_stop(rt);
}

/* Runs m until it switches back, then does what it asked for. */
static void
proc_run(struct mt_proc *p, struct guest_mt *m)
{
	transfer_t t;
	uint32_t s;

	m->proc = p;
	p->cur = m;
	tls.cur = m;
	atomic_fetch_add_explicit(&p->switches, 1, memory_order_relaxed);
	san_to_mt(p, m);
	t = jump_fcontext(m->ctx, p);
	san_in_sched(p);
	m->ctx = t.fctx;
	tls.cur = NULL;
	p->cur = NULL;
	switch (p->why) {
	case MT_YIELD:
		local_push(p, m);
		break;
	case MT_SUSPEND:
		s = MT_SW_SUSPENDING;
		/* release: m's context is saved; pairs with make_runnable's
		 * acquire load. Failing, it was claimed in the window: ours */
		if (!atomic_compare_exchange_strong_explicit(&m->sw, &s,
		    MT_SW_PARKED, memory_order_acq_rel, memory_order_acquire)) {
			atomic_store_explicit(&m->sw, MT_SW_RUNNING, memory_order_relaxed);
			local_push(p, m);
		}
		break;
	case MT_EXIT:
		mt_finish(p, m);
		break;
	}
}

static struct guest_mt *
proc_next(struct mt_proc *p)
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

static void
proc_loop(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;
	struct guest_mt *m;

	tls.p = p;
#ifdef MT_TSAN
	p->tsan_fiber = __tsan_get_current_fiber();
#endif
	/* acquire: pairs with rt_stop's release store */
	while (!atomic_load_explicit(&rt->stopping, memory_order_acquire)) {
		timers_fire(p);
		if (rt->io != NULL && p->since_poll >= MT_POLL_EVERY) {
			p->since_poll = 0;
			io_poll(p);
		}
		if ((m = proc_next(p)) != NULL) {
			proc_busy(p);
			p->since_poll++;
			proc_run(p, m);
			continue;
		}
		proc_idle(p);
	}
	proc_busy(p);
	tls.p = NULL;
}

static void *
worker_main(void *arg)
{
	proc_loop(arg);
	return NULL;
}

/* -- microthreads ---------------------------------------------------------- */

static void __attribute__((noreturn))
mt_entry(transfer_t t)
{
	struct mt_proc *p = t.data;
	struct guest_mt *m = p->cur;

	p->sched_ctx = t.fctx;
	san_in_mt(m, p, 1);
	m->fn(m->arg);
	guest_mt_exit();
}

static int
spawn_on(struct guest_rt *rt, guest_mt_fn fn, void *arg, struct guest_mt **mtp)
{
	struct guest_mt *m = NULL;
	int rc;

	if (fn == NULL)
		return -EINVAL;
	if ((rc = stack_get(rt, &m)) < 0)
		return rc;
	m->fn = fn;
	m->arg = arg;
	m->joinable = mtp != NULL;
	/* started lazily: its first jump lands in mt_entry */
	m->ctx = make_fcontext(m, (size_t)((char *)m - ((char *)m->map + rt->page)),
	    mt_entry);
#ifdef MT_TSAN
	m->tsan_fiber = __tsan_create_fiber(0);
#endif
	pthread_mutex_lock(&rt->mu);
	m->all_next = rt->all;
	if (rt->all != NULL)
		rt->all->all_prev = m;
	rt->all = m;
	rt->spawned++;
	pthread_mutex_unlock(&rt->mu);
	atomic_fetch_add_explicit(&rt->live, 1, memory_order_relaxed);
	if (mtp != NULL)
		*mtp = m;
	enqueue(m);
	return 0;
}

int
guest_mt_spawn(guest_mt_fn fn, void *arg, struct guest_mt **mtp)
{
	struct mt_proc *p = mt_cur_proc();

	if (p == NULL)
		return -EPERM;
	return spawn_on(p->rt, fn, arg, mtp);
}

int
guest_mt_yield(void)
{
	struct guest_mt *m = mt_self();
	struct mt_proc *p;
	transfer_t t;

	if (m == NULL)
		return -EPERM;
	p = m->proc;
	p->why = MT_YIELD;
	san_to_sched(m, p, 0);
	t = jump_fcontext(p->sched_ctx, NULL);
	p = t.data;
	p->sched_ctx = t.fctx;
	san_in_mt(m, p, 0);
	return 0;
}

/* Off a microthread there is nothing to end: abort, as a broken
 * invariant. */
void
guest_mt_exit(void)
{
	struct guest_mt *m = mt_self();
	struct mt_proc *p;

	if (m == NULL)
		abort();
	p = m->proc;
	p->why = MT_EXIT;
	san_to_sched(m, p, 1);
	jump_fcontext(p->sched_ctx, NULL);
	abort();	/* a dead microthread is never resumed */
}

int
guest_mt_join(struct guest_mt *h)
{
	struct guest_mt *m = mt_self();
	uintptr_t z = 0;

	if (m == NULL)
		return -EPERM;
	if (h == NULL || !h->joinable || h == m)
		return -EINVAL;
	mt_wait_begin(m, UINT64_MAX, 0);
	/* acq_rel: pairs with mt_finish's exchange; whoever comes second
	 * sees the other */
	if (atomic_compare_exchange_strong_explicit(&h->join, &z, (uintptr_t)m,
	    memory_order_acq_rel, memory_order_acquire)) {
		mt_wait_switch(m);
	} else {
		/* ended already: the wait was never published */
		atomic_store_explicit(&m->wstate, (MT_W_GEN(atomic_load_explicit(
		    &m->wstate, memory_order_relaxed)) << 2) | MT_W_IDLE,
		    memory_order_relaxed);
		atomic_store_explicit(&m->sw, MT_SW_RUNNING, memory_order_relaxed);
	}
	stack_put(h->rt, h);
	return 0;
}

int
guest_mt_sleep(uint64_t ns)
{
	struct guest_mt *m = mt_self();
	uint64_t at;

	if (m == NULL)
		return -EPERM;
	at = hp_now_ns() + ns;
	if (at < ns)
		at = UINT64_MAX - 1;
	while (mt_suspend(NULL, at) != -ETIMEDOUT)
		;	/* a stray mt_wake: keep sleeping */
	return 0;
}

/* -- runtimes -------------------------------------------------------------- */

int
guest_rt_new(const struct guest_rt_config *cfg, struct guest_rt **rtp)
{
	struct guest_rt *rt;
	unsigned nproc = cfg != NULL && cfg->processors ? cfg->processors : 1;
	size_t ss = cfg != NULL && cfg->stack_size ? cfg->stack_size : MT_DEFAULT_STACK;
	long page = sysconf(_SC_PAGESIZE);
	void *procs;

	if (nproc > MT_MAX_PROCS || page <= 0 || ss > ((size_t)1 << 40))
		return -EINVAL;
	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return -ENOMEM;
	rt->page = (size_t)page;
	rt->stack_size = (ss + rt->page - 1) / rt->page * rt->page;
	if (rt->stack_size < 2 * rt->page)
		rt->stack_size = 2 * rt->page;
	rt->nproc = nproc;
	if (posix_memalign(&procs, 64, nproc * sizeof(struct mt_proc)) != 0) {
		free(rt);
		return -ENOMEM;
	}
	rt->procs = procs;
	memset(rt->procs, 0, nproc * sizeof(struct mt_proc));
	pthread_mutex_init(&rt->mu, NULL);
	pthread_mutex_init(&rt->gmu, NULL);
	for (unsigned i = 0; i < nproc; i++) {
		struct mt_proc *p = &rt->procs[i];
		pthread_condattr_t ca;

		p->rt = rt;
		p->id = i;
		pthread_mutex_init(&p->mu, NULL);
		pthread_mutex_init(&p->tmu, NULL);
		pthread_mutex_init(&p->smu, NULL);
		pthread_condattr_init(&ca);
		/* deadlines are CLOCK_MONOTONIC */
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->scond, &ca);
		pthread_condattr_destroy(&ca);
		p->tnext = UINT64_MAX;
	}
	*rtp = rt;
	return 0;
}

/* After a run: every microthread left is abandoned, its stack freed. */
static void
rt_abandon(struct guest_rt *rt)
{
	struct guest_mt *m;

	for (unsigned i = 0; i < rt->nproc; i++) {
		struct mt_proc *p = &rt->procs[i];

		for (unsigned k = 0; k < p->nheap; k++)
			p->heap[k].m->tidx = -1;
		p->nheap = 0;
		p->tnext = UINT64_MAX;
		p->head = p->tail = NULL;
		p->n = 0;
		p->idle = 0;
		p->rounds = 0;
		p->since_poll = 0;
		p->latch = MT_L_UNSET;
	}
	rt->ghead = rt->gtail = NULL;
	rt->gn = 0;
	for (;;) {
		pthread_mutex_lock(&rt->mu);
		m = rt->all;
		pthread_mutex_unlock(&rt->mu);
		if (m == NULL)
			break;
		/* off the channels it waits on: they may outlive the run */
		mt_alt_abandon(m);
		stack_put(rt, m);
	}
	rt->live = 0;
}

int
mt_rt_run(struct guest_rt *rt, void (*fn)(void *), void *arg, const struct mt_io *io)
{
	unsigned started = 1;
	int rc = 0;

	if (rt == NULL || mt_cur_proc() != NULL)
		return rt == NULL ? -EINVAL : -EBUSY;	/* no nested runs */
	rt->io = io;
	rt->result = 0;
	rt->stopping = 0;
	rt->counters = 0;
	if (fn != NULL) {
		/* the first microthread goes on processor 0's queue */
		tls.p = &rt->procs[0];
		rc = spawn_on(rt, fn, arg, NULL);
		tls.p = NULL;
		if (rc < 0)
			return rc;
	} else if (io == NULL) {
		return 0;	/* nothing will ever run */
	}
	for (; started < rt->nproc; started++) {
		if ((rc = pthread_create(&rt->procs[started].thread, NULL,
		    worker_main, &rt->procs[started])) != 0) {
			rc = -rc;
			rt_stop(rt);
			break;
		}
	}
	if (rc == 0)
		proc_loop(&rt->procs[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(rt->procs[i].thread, NULL);
	rt_abandon(rt);
	rt->io = NULL;
	return rc < 0 ? rc : rt->result;
}

int
guest_rt_run(struct guest_rt *rt, void (*fn)(void *), void *arg)
{
	if (fn == NULL)
		return -EINVAL;
	return mt_rt_run(rt, fn, arg, NULL);
}

void
guest_rt_free(struct guest_rt *rt)
{
	struct guest_mt *m;

	if (rt == NULL)
		return;
	while ((m = rt->pool) != NULL) {
		rt->pool = m->next;
		stack_unmap(rt, m);
	}
	for (unsigned i = 0; i < rt->nproc; i++) {
		struct mt_proc *p = &rt->procs[i];

		free(p->heap);
		pthread_mutex_destroy(&p->mu);
		pthread_mutex_destroy(&p->tmu);
		pthread_mutex_destroy(&p->smu);
		pthread_cond_destroy(&p->scond);
	}
	pthread_mutex_destroy(&rt->mu);
	pthread_mutex_destroy(&rt->gmu);
	free(rt->procs);
	free(rt);
}

void
mt_rt_stats(struct guest_rt *rt, struct mt_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&rt->mu);
	st->mmaps = rt->mmaps;
	st->munmaps = rt->munmaps;
	st->stacks = rt->stacks;
	st->pooled = rt->npool;
	st->spawned = rt->spawned;
	pthread_mutex_unlock(&rt->mu);
	for (unsigned i = 0; i < rt->nproc; i++) {
		st->switches += atomic_load_explicit(&rt->procs[i].switches,
		    memory_order_relaxed);
		st->steals += atomic_load_explicit(&rt->procs[i].steals,
		    memory_order_relaxed);
	}
	st->parks = atomic_load_explicit(&rt->parks, memory_order_relaxed);
	st->polls = atomic_load_explicit(&rt->polls, memory_order_relaxed);
	st->live = atomic_load_explicit(&rt->live, memory_order_relaxed);
}
