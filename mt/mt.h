/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's interface to libguest (sched.c and its
 * parts): what libguest on microthreads (guestlib/runtime_mt*.c) uses
 * beyond guest.h's guest_mt_* / guest_mtchan_*, which the runtime
 * implements.
 *
 * Outside work (the guest's rings) enters the runtime through struct
 * mt_io: a processor polls it between microthreads, and at most one idle
 * processor at a time sleeps in its wait (the others park on their own). */
#ifndef MT_MT_H
#define MT_MT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "guestlib/guest.h"

#pragma GCC visibility push(hidden)

struct mt_io {
	/* Serves what is ready without blocking, on a processor's scheduler
	 * (never on a microthread: mt_self() is NULL there). 1 it did
	 * something, 0 nothing, < 0 the runtime must end (mt_rt_run returns
	 * it). Called before a processor parks, and at least every
	 * MT_POLL_EVERY switches on each processor; never on two processors
	 * at once. */
	int	(*poll)(void *ctx);
	/* Sleeps until outside work may be there, deadline_ns
	 * (CLOCK_MONOTONIC, UINT64_MAX: none) or kick; returns < 0 as poll
	 * does, else 0. Its caller polls again after it. */
	int	(*wait)(void *ctx, uint64_t deadline_ns);
	/* From any thread: makes a wait in progress (or the next one)
	 * return soon. */
	void	(*kick)(void *ctx);
	/* Whether an idle processor may poll without yielding for a few
	 * microseconds before its yields (NULL: never); from any processor. */
	int	(*spin)(void *ctx);
	void	*ctx;
};

#define MT_POLL_EVERY	64

/* Runs fn(arg) as the first microthread (fn NULL: none) on the calling
 * thread as processor 0, with io (NULL: none). Without io it returns 0
 * once every microthread has ended; with io it runs until io's poll or
 * wait returns < 0 (that value) or mt_rt_stop, live microthreads or not:
 * those left are abandoned (never run again; their stacks stay mapped
 * until guest_rt_free). */
int	mt_rt_run(struct guest_rt *rt, void (*fn)(void *), void *arg,
	    const struct mt_io *io);
/* From any thread: makes mt_rt_run return 0 soon. */
void	mt_rt_stop(struct guest_rt *rt);

/* The microthread running on this thread, NULL on a scheduler or a
 * thread outside any runtime. */
struct guest_mt *mt_self(void);
/* Names what the calling microthread runs (a handler's method name, kept
 * alive by the caller while it runs; NULL: nothing), for the message a
 * stack overflow prints. Microthreads it spawns inherit it. */
void	mt_set_label(const char *label);
/* Runs fn(arg) on the calling microthread if it ends by guest_mt_exit
 * (not by returning from its function); fn NULL: nothing. For libguest's
 * handler microthreads: a handler that exits is done with its request,
 * as one that returns. Not inherited. */
void	mt_on_exit(void (*fn)(void *), void *arg);
/* The calling microthread's MT_CTX_SIZE bytes for libguest (the call its
 * handler serves: deadline and trace), zero at first and copied into
 * each microthread it spawns; NULL on a scheduler or outside a runtime. */
#define MT_CTX_SIZE	40
void	*mt_ctx(void);

/* Suspends the calling microthread until mt_wake or deadline_ns
 * (CLOCK_MONOTONIC, UINT64_MAX: none). unlock (if not NULL, held once by
 * the caller) is released after the microthread counts as waiting, so a
 * waker that finds it under that lock cannot miss it; it is not held on
 * return. 0 woken, -ETIMEDOUT. */
int	mt_suspend(pthread_mutex_t *unlock, uint64_t deadline_ns);
/* Wakes a microthread suspended (or suspending) in mt_suspend, from any
 * thread or a scheduler. 1 it was woken by this call, 0 it was not
 * waiting (woken already, or its deadline won). */
int	mt_wake(struct guest_mt *m);

/* A caller's struct guest_rt_config (NULL: all defaults) as this
 * libguest's, its size read as guest.h says: *out zeroed, then the
 * caller's fields copied. 0, -EINVAL (a size short of stack_size) or
 * -E2BIG (a non-zero byte past libguest's own struct). */
int	mt_config(const struct guest_rt_config *cfg, struct guest_rt_config *out);

/* A channel's item size (chan.c): what the stream combinators
 * (stream.c) must know of their input beyond guest.h. */
size_t	mt_chan_item_size(const struct guest_mtchan *ch);

#pragma GCC visibility pop

#endif
