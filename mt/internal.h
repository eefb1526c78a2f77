/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's insides, shared by its files (sched.c: the
 * scheduler and microthreads; stack.c, queue.c, wait.c, park.c, tls.c)
 * and chan.c (channels, alt). Nothing here leaves the runtime. */
#ifndef MT_INTERNAL_H
#define MT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mt/fcontext.h"
#include "guestlib/guest.h"
#include "mt/mt.h"

#pragma GCC visibility push(hidden)

/* A microthread's wait word: a generation (one per wait) above the state,
 * so a claim meant for an earlier wait can never succeed on a later one. */
#define MT_W_IDLE	0u
#define MT_W_WAITING	1u
#define MT_W_CLAIMED	2u
#define MT_W_STATE(w)	((uint32_t)((w) & 3u))
#define MT_W_GEN(w)	((w) >> 2)

/* The suspension window (the seed's suspending_/wake_pending_ as one word):
 * SUSPENDING from before the waiter is published until its scheduler has
 * saved its context; a claim in that window only marks it WOKEN and the
 * scheduler queues it once the switch is complete. */
#define MT_SW_RUNNING		0u
#define MT_SW_SUSPENDING	1u
#define MT_SW_WOKEN		2u
#define MT_SW_PARKED		3u

/* Why a microthread switched to its scheduler. */
#define MT_YIELD	1
#define MT_SUSPEND	2
#define MT_EXIT		3

#define MT_JOIN_DONE	((uintptr_t)1)

/* A processor's latch: UNSET running or looking, SLEEPY announced, SLEEPING
 * about to block or blocked, SET told to wake. */
#define MT_L_UNSET	0u
#define MT_L_SLEEPY	1u
#define MT_L_SLEEPING	2u
#define MT_L_SET	3u

struct mt_proc;
struct mt_waiter;

/* At the top of its own stack (a guard page below the stack). */
struct guest_mt {
	fcontext_t		ctx;		/* saved while not running */
	struct guest_rt		*rt;
	struct mt_proc		*proc;		/* the processor that runs it now:
						 * set before every jump into it */
	struct guest_mt		*next;		/* run queue or stack pool */
	struct guest_mt		*all_prev, *all_next; /* rt->all, under rt->mu */
	void			*map;		/* the mapping, guard first */
	size_t			maplen;
	guest_mt_fn		fn;
	void			*arg;
	const char		*label;		/* what it runs, for the overflow
						 * message (mt_set_label) */
	uint64_t		ctx_area[MT_CTX_SIZE / 8]; /* mt_ctx: libguest's */
	void			(*on_exit)(void *); /* mt_on_exit's */
	void			*on_exit_arg;
	_Atomic uint64_t	wstate;		/* MT_W_*, generation above */
	_Atomic uint32_t	sw;		/* MT_SW_* */
	int			wake_idx;	/* the claimer's answer */
	int			timer_idx;	/* wake_idx when the timer wins */
	struct mt_proc		*tproc;		/* whose heap holds our deadline */
	int			tidx;		/* index there, -1: none */
	uint32_t		alt_rot;	/* alt's rotating start */
	int			joinable;
	_Atomic uintptr_t	join;		/* 0, MT_JOIN_DONE, or the joiner */
	struct mt_waiter	*waiters;	/* registered by alt, else NULL */
	int			nwaiters;
	/* set by alt with waiters: takes them off their channels when the
	 * microthread is abandoned (chan.c) */
	void			(*abandon)(struct guest_mt *m);
	void			*tsan_fiber;
	void			*asan_fake;
} __attribute__((aligned(64)));

/* One alt operation registered on a channel's queue. */
struct mt_waiter {
	struct mt_waiter	*prev, *next;
	struct guest_mt		*m;
	struct guest_mtop	*op;
	uint64_t		gen;		/* m's wait generation */
	int			idx;		/* op's index in the alt */
	int			list;		/* MT_Q_* it is on, -1: none */
	int			queued;		/* still in that queue: a claimer
						 * takes what it claims out */
};

struct mt_timer {
	uint64_t		at;
	struct guest_mt		*m;
};

struct mt_proc {
	struct guest_rt		*rt;
	unsigned		id;
	pthread_t		thread;
	fcontext_t		sched_ctx;	/* this scheduler, while a mt runs */
	struct guest_mt		*cur;
	int			why;		/* MT_YIELD, MT_SUSPEND, MT_EXIT */

	/* local run queue: FIFO, under mu */
	pthread_mutex_t		mu;
	struct guest_mt		*head, *tail;
	_Atomic uint32_t	n;		/* length, read without mu */

	/* timers: a min-heap by deadline, under tmu */
	pthread_mutex_t		tmu;
	struct mt_timer		*heap;
	unsigned		nheap, capheap;
	_Atomic uint64_t	tnext;		/* heap[0].at, UINT64_MAX: none */

	/* parking (JEC): blocked and the wait under smu */
	pthread_mutex_t		smu;
	pthread_cond_t		scond;
	int			blocked;
	int			io_sleeper;	/* blocked in io->wait, not scond */
	_Atomic uint32_t	latch;		/* MT_L_* */
	uint32_t		jec_snap;
	unsigned		rounds;
	uint64_t		spin_from;	/* idle polling without yields since */
	unsigned		spins;
	int			idle;
	unsigned		since_poll;
	unsigned		ticks;

	void			*altstack;	/* ours, for the fault handler */

	/* sanitizers: this scheduler's fiber and stack */
	void			*tsan_fiber;
	void			*asan_fake;
	const void		*sbottom;
	size_t			ssize;

	struct mt_proc		*seen;		/* steal: a lone head seen there */
	uint64_t		seen_switches;	/* with that many switches */

	_Atomic uint64_t	switches;
	_Atomic uint64_t	steals;
} __attribute__((aligned(64)));

/* Internal counters, for tests and the lead's status. */
struct mt_stats {
	uint64_t	mmaps;		/* stacks mapped, ever */
	uint64_t	munmaps;	/* stacks unmapped, ever */
	uint64_t	stacks;		/* mapped now (running, parked or pooled) */
	uint64_t	pooled;		/* idle in the pool now */
	uint64_t	spawned;
	uint64_t	switches;	/* jumps into microthreads */
	uint64_t	steals;		/* microthreads taken from another processor */
	uint64_t	parks;		/* times a processor slept */
	uint64_t	polls;		/* io->poll calls */
	uint64_t	live;		/* microthreads not ended */
};

struct guest_rt {
	unsigned		nproc;
	size_t			stack_size;	/* usable, page multiple */
	size_t			page;
	size_t			guard;		/* below each stack, page multiple */
	struct mt_proc		*procs;
	const struct mt_io	*io;
	_Atomic int		stopping;
	int			result;		/* io's < 0, returned by run */
	_Atomic uint64_t	live;

	/* global run queue */
	pthread_mutex_t		gmu;
	struct guest_mt		*ghead, *gtail;
	_Atomic uint32_t	gn;

	/* JEC counters: sleeping bits 0-15, inactive 16-31, JEC 32-63 */
	_Atomic uint64_t	counters;
	_Atomic int		io_busy;	/* poll or wait in progress */

	/* every microthread not freed, the stack pool, stats: under mu */
	pthread_mutex_t		mu;
	struct guest_mt		*all;
	struct guest_mt		*pool;
	unsigned		npool;
	uint64_t		mmaps, munmaps, stacks, spawned;
	_Atomic uint64_t	parks, polls;
};

struct mt_tls {
	struct mt_proc	*p;	/* this thread's processor, if any */
	struct guest_mt	*cur;	/* the microthread it runs, if any */
};

/* tls.c */
extern _Thread_local struct mt_tls mt_tls;
struct mt_proc	*mt_cur_proc(void);

/* stack.c */
void		mt_stack_unmap(struct guest_rt *rt, struct guest_mt *m);
int		mt_stack_get(struct guest_rt *rt, struct guest_mt **mp);
void		mt_stack_put(struct guest_rt *rt, struct guest_mt *m);
void		mt_stack_abandon(struct guest_rt *rt, struct guest_mt *m);
void		mt_fault_install(void);
void		mt_altstack_on(struct mt_proc *p);
void		mt_altstack_off(struct mt_proc *p);

/* park.c */
int		mt_wake_one(struct guest_rt *rt, int passes);
void		mt_new_work(struct guest_rt *rt);
int		mt_io_poll(struct mt_proc *p);
void		mt_proc_idle(struct mt_proc *p);
void		mt_proc_busy(struct mt_proc *p);

/* queue.c */
uint32_t	mt_local_push(struct mt_proc *p, struct guest_mt *m);
void		mt_enqueue(struct guest_mt *m);
void		mt_make_runnable(struct guest_mt *m);
struct guest_mt	*mt_proc_next(struct mt_proc *p);

/* wait.c */
void		mt_timers_fire(struct mt_proc *p);
void		mt_wait_begin(struct guest_mt *m, uint64_t deadline_ns, int timer_idx);
int		mt_wait_switch(struct guest_mt *m);
int		mt_try_claim(struct guest_mt *m, uint64_t gen);
void		mt_ready(struct guest_mt *m, int wake_idx);
int		mt_claim(struct guest_mt *m, uint64_t gen, int wake_idx);

/* sched.c */
void		mt_rt_stats(struct guest_rt *rt, struct mt_stats *st);

#pragma GCC visibility pop

/* Sanitizers: a stack switch must be announced, or ASan sees a stack it
 * does not know and TSan mixes two microthreads' histories. */
#if defined(__SANITIZE_ADDRESS__)
#define MT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define MT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MT_TSAN 1
#endif
#endif

#ifdef MT_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef MT_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* The switches, announced (sched.c, wait.c). */
static inline void
san_to_mt(struct mt_proc *p, struct guest_mt *m)
{
#ifdef MT_ASAN
	__sanitizer_start_switch_fiber(&p->asan_fake, (char *)m->map + p->rt->guard,
	    (size_t)((char *)m - ((char *)m->map + p->rt->guard)));
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


#endif
