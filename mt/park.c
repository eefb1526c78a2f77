/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's parking (the JEC protocol of Blitz/Rayon):
 * an idle processor polls the outside work, yields, announces it is
 * sleepy and sleeps; new work wakes one sleeper; a stop wakes all. */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "mt/internal.h"
#include "proto/atomic.h"
#include "proto/clock.h"

#define MT_YIELD_ROUNDS		16	/* sched_yield rounds before sleeping */
/* Polling the io without yielding first, while its spin says so: an
 * answer is often a microsecond away, and sched_yield is a system call. */
#define MT_SPIN_NS		20000

/* JEC counters (the Blitz/Rayon sleep protocol) */
#define C_SLEEP_ONE	((uint64_t)1)
#define C_IDLE_ONE	((uint64_t)1 << 16)
#define C_JEC_ONE	((uint64_t)1 << 32)
#define C_SLEEPING(c)	((uint32_t)((c) & 0xffff))
#define C_IDLE(c)	((uint32_t)(((c) >> 16) & 0xffff))
#define C_JEC(c)	((uint32_t)((c) >> 32))

static void	rt_stop(struct guest_rt *rt);

/* Wakes one sleeping processor: a condvar sleeper first, the io sleeper
 * only if none (passes 2; 1: never the io sleeper). 1 if it woke one. */
int
mt_wake_one(struct guest_rt *rt, int passes)
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
void
mt_new_work(struct guest_rt *rt)
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
	mt_wake_one(rt, 2);
}

static int
has_work(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;

	/* acquire: pairs with rt_stop's release store */
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
int
mt_io_poll(struct mt_proc *p)
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
		mt_wake_one(rt, 1);
	return rc > 0;
}

static void
abs_timespec(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / HP_NS_PER_S);
	ts->tv_nsec = (long)(ns % HP_NS_PER_S);
}

/* The sleep of a processor counted as sleeping, smu held (and given up
 * while it sleeps): in the io's wait if it holds the io, else on its
 * condvar until a waker takes it off (blocked 0) or deadline. */
static void
sleep_blocked(struct mt_proc *p, int io, uint64_t deadline)
{
	struct guest_rt *rt = p->rt;

	if (io) {
		pthread_mutex_unlock(&p->smu);
		int rc = rt->io->wait(rt->io->ctx, deadline);

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

	/* acq_rel: pairs with a waker's store of SET, made after the work
	 * it publishes; failing, we see that work */
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
	/* acq_rel: pairs with the same CAS above (SLEEPY made there, by this
	 * processor); a waker's store of SET is made under smu, held here,
	 * so the mutex orders it, and the work it wakes us for is published
	 * by the seq_cst counters read below */
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
	 * mt_new_work's fence between its push and its load of the counters */
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
	sleep_blocked(p, io, deadline);
	waited_io = io;
unlock_awake:
	pthread_mutex_unlock(&p->smu);
	if (io)
		io_unlock(rt);
	/* we leave the io, maybe to run what it brought for long: a
	 * sleeper takes the wait over (the io is free now), or nobody would
	 * serve the rings (and beat) while we compute */
	if (waited_io && rt->nproc > 1)
		mt_wake_one(rt, 1);
awake:
	atomic_store_explicit(&p->latch, MT_L_UNSET, memory_order_relaxed);
	p->rounds = 0;
}

/* One round of looking for work while idle: a few yields, then announce
 * sleepy (the JEC snapshot), one more yield, then sleep. */
void
mt_proc_idle(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;

	if (!p->idle) {
		p->idle = 1;
		p->rounds = 0;
		atomic_fetch_add_explicit(&rt->counters, C_IDLE_ONE, memory_order_seq_cst);
	}
	if (rt->io != NULL && mt_io_poll(p)) {
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

void
mt_proc_busy(struct mt_proc *p)
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
