/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime: the M:N scheduler's loop and context switches,
 * microthreads (spawn, yield, exit, join, sleep) and runtimes (new, run,
 * free). Its other parts: stack.c (stacks), queue.c (run queues),
 * wait.c (timers, suspend and wake), park.c (parking), tls.c;
 * channels and alt are in chan.c.
 *
 * A microthread always switches to its processor's scheduler and the
 * scheduler to the next microthread (never one microthread straight to
 * another): the scheduler's stack is where a dead microthread's stack is
 * released and where a suspending one is published once its context is
 * saved, so neither can be touched while still in use. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mt/internal.h"
#include "proto/clock.h"

#define MT_MAX_PROCS		1024
#define MT_DEFAULT_STACK	(64u * 1024)
#define MT_MAX_STACK		(1ull << 30)	/* HUB_MT_STACK's most */
/* Unmapped below each stack: address space only. More than a page, so
 * that a large frame written upwards (a local array's memset) still
 * lands in it rather than in the stack below. */
#define MT_GUARD		(64u * 1024)

/* -- the scheduler ------------------------------------------------------- */

static void
mt_finish(struct mt_proc *p, struct guest_mt *m)
{
	struct guest_rt *rt = p->rt;
	uintptr_t j;

	if (!m->joinable) {
		mt_stack_put(rt, m);
	} else {
		/* acq_rel: pairs with guest_mt_join's CAS; after it the joiner
		 * may free m, so m is not touched again */
		j = atomic_exchange_explicit(&m->join, MT_JOIN_DONE, memory_order_acq_rel);
		if (j != 0)
			mt_wake((struct guest_mt *)j);
	}
	if (atomic_fetch_sub_explicit(&rt->live, 1, memory_order_acq_rel) == 1 &&
	    rt->io == NULL)
		mt_rt_stop(rt);
}

/* Runs m until it switches back, then does what it asked for. */
static void
proc_run(struct mt_proc *p, struct guest_mt *m)
{
	transfer_t t;
	uint32_t s;

	m->proc = p;
	p->cur = m;
	mt_tls.cur = m;
	atomic_fetch_add_explicit(&p->switches, 1, memory_order_relaxed);
	san_to_mt(p, m);
	t = jump_fcontext(m->ctx, p);
	san_in_sched(p);
	m->ctx = t.fctx;
	mt_tls.cur = NULL;
	p->cur = NULL;
	switch (p->why) {
	case MT_YIELD:
		mt_local_push(p, m);
		break;
	case MT_SUSPEND:
		s = MT_SW_SUSPENDING;
		/* release: m's context is saved; pairs with mt_make_runnable's
		 * acquire load. Failing, it was claimed in the window: ours */
		if (!atomic_compare_exchange_strong_explicit(&m->sw, &s,
		    MT_SW_PARKED, memory_order_acq_rel, memory_order_acquire)) {
			atomic_store_explicit(&m->sw, MT_SW_RUNNING, memory_order_relaxed);
			mt_local_push(p, m);
		}
		break;
	case MT_EXIT:
		mt_finish(p, m);
		break;
	}
}

static void
proc_loop(struct mt_proc *p)
{
	struct guest_rt *rt = p->rt;
	struct guest_mt *m;

	mt_tls.p = p;
	mt_altstack_on(p);
#ifdef MT_TSAN
	p->tsan_fiber = __tsan_get_current_fiber();
#endif
	/* acquire: pairs with rt_stop's release store */
	while (!atomic_load_explicit(&rt->stopping, memory_order_acquire)) {
		mt_timers_fire(p);
		if (rt->io != NULL && p->since_poll >= MT_POLL_EVERY) {
			p->since_poll = 0;
			mt_io_poll(p);
		}
		if ((m = mt_proc_next(p)) != NULL) {
			mt_proc_busy(p);
			p->since_poll++;
			proc_run(p, m);
			continue;
		}
		mt_proc_idle(p);
	}
	mt_proc_busy(p);
	mt_altstack_off(p);
	mt_tls.p = NULL;
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
	if ((rc = mt_stack_get(rt, &m)) < 0)
		return rc;
	m->fn = fn;
	m->arg = arg;
	m->label = mt_self() != NULL ? mt_self()->label : NULL;
	/* a call's deadline and trace go on with the work it spawns */
	if (mt_self() != NULL)
		memcpy(m->ctx_area, mt_self()->ctx_area, sizeof(m->ctx_area));
	else
		memset(m->ctx_area, 0, sizeof(m->ctx_area));
	m->joinable = mtp != NULL;
	/* started lazily: its first jump lands in mt_entry */
	m->ctx = make_fcontext(m, (size_t)((char *)m - ((char *)m->map + rt->guard)),
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
	mt_enqueue(m);
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

/* Off a microthread there is nothing to end, and noreturn leaves no
 * error to return: the misuse is said, then abort, as a broken
 * invariant. */
void
guest_mt_exit(void)
{
	struct guest_mt *m = mt_self();
	void (*on_exit)(void *);
	struct mt_proc *p;

	if (m == NULL) {
		fprintf(stderr, "libguest: guest_mt_exit called off a microthread "
		    "(a handler under guest_run, or a thread of the plugin's own): "
		    "nothing to end, aborting\n");
		abort();
	}
	if ((on_exit = m->on_exit) != NULL) {
		m->on_exit = NULL;
		on_exit(m->on_exit_arg);
	}
	p = m->proc;	/* on_exit may have switched processors */
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
	mt_stack_put(h->rt, h);
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

/* HUB_MT_STACK: bytes, or with a k, m or g suffix (powers of 1024);
 * anything else is refused, not ignored, so a typo is not a surprise. */
static int
env_stack_size(size_t *ss)
{
	const char *env = getenv("HUB_MT_STACK"), *p;
	uint64_t n = 0, unit = 1;

	if (env == NULL)
		return 0;
	for (p = env; *p >= '0' && *p <= '9' && n <= MT_MAX_STACK; p++)
		n = n * 10 + (uint64_t)(*p - '0');
	switch (*p) {
	case 'k': case 'K': unit = 1ull << 10; p++; break;
	case 'm': case 'M': unit = 1ull << 20; p++; break;
	case 'g': case 'G': unit = 1ull << 30; p++; break;
	}
	if (p == env || !(env[0] >= '0' && env[0] <= '9') || *p != '\0' ||
	    n == 0 || n > MT_MAX_STACK / unit) {
		fprintf(stderr, "libguest: HUB_MT_STACK=%s: not a stack size "
		    "(bytes, or a number with k, m or g, at most 1g)\n", env);
		return -EINVAL;
	}
	*ss = (size_t)(n * unit);
	return 0;
}

/* size 0: a caller of 0.5's guest.h that set no size, whose fields are
 * all there is up to stack_size */
#define CONFIG_SIZE_0_5	(offsetof(struct guest_rt_config, stack_size) + \
			 sizeof(size_t))

int
mt_config(const struct guest_rt_config *cfg, struct guest_rt_config *out)
{
	size_t n = cfg != NULL ? cfg->size : sizeof(*out);

	memset(out, 0, sizeof(*out));
	if (cfg == NULL)
		return 0;
	if (n == 0)
		n = CONFIG_SIZE_0_5;
	if (n < CONFIG_SIZE_0_5)
		return -EINVAL;
	/* a later guest.h's settings: refused unless left at 0, the default */
	for (size_t i = sizeof(*out); i < n; i++)
		if (((const unsigned char *)cfg)[i] != 0)
			return -E2BIG;
	memcpy(out, cfg, n < sizeof(*out) ? n : sizeof(*out));
	out->size = sizeof(*out);
	return 0;
}

/* guest.h's since 0.5, with a size; compat.c keeps 0.2's */
__asm__(".symver guest_rt_new, guest_rt_new@@@LIBGUEST_0.5");

int
guest_rt_new(const struct guest_rt_config *cfg, struct guest_rt **rtp)
{
	struct guest_rt_config c;
	struct guest_rt *rt;
	unsigned nproc;
	size_t ss;
	long page = sysconf(_SC_PAGESIZE);
	void *procs;
	int rc;

	if ((rc = mt_config(cfg, &c)) != 0)
		return rc;
	nproc = c.processors ? c.processors : 1;
	ss = c.stack_size;
	/* the operator's choice (hubd.conf env =), unless the plugin made
	 * its own */
	if (ss == 0 && (rc = env_stack_size(&ss)) != 0)
		return rc;
	if (ss == 0)
		ss = MT_DEFAULT_STACK;
	if (nproc > MT_MAX_PROCS || page <= 0 || ss > ((size_t)1 << 40))
		return -EINVAL;
	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return -ENOMEM;
	rt->page = (size_t)page;
	rt->stack_size = (ss + rt->page - 1) / rt->page * rt->page;
	if (rt->stack_size < 2 * rt->page)
		rt->stack_size = 2 * rt->page;
	rt->guard = (MT_GUARD + rt->page - 1) / rt->page * rt->page;
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
		if (m->abandon != NULL)
			m->abandon(m);
		mt_stack_abandon(rt, m);
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
	mt_fault_install();
	rt->io = io;
	rt->result = 0;
	rt->stopping = 0;
	rt->counters = 0;
	if (fn != NULL) {
		/* the first microthread goes on processor 0's queue */
		mt_tls.p = &rt->procs[0];
		rc = spawn_on(rt, fn, arg, NULL);
		mt_tls.p = NULL;
		if (rc < 0)
			return rc;
	} else if (io == NULL) {
		return 0;	/* nothing will ever run */
	}
	for (; started < rt->nproc; started++) {
		if ((rc = pthread_create(&rt->procs[started].thread, NULL,
		    worker_main, &rt->procs[started])) != 0) {
			rc = -rc;
			mt_rt_stop(rt);
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
		mt_stack_unmap(rt, m);
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
