/* libguest's private header: the guest and what its files share, and the
 * functions one file offers the others, grouped by file. */
#ifndef GUESTLIB_INTERNAL_H
#define GUESTLIB_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "guestlib/guest.h"
#include "proto/clock.h"
#include "proto/endpoint.h"
#include "proto/idtab.h"
#include "proto/segment.h"
#include "proto/sig.h"

#define GOODBYE_MAX	255	/* bytes of the hub's Goodbye reason kept */

struct method {
	uint64_t	id;
	guest_handler	fn;
	void		*ctx;
	struct hp_sig	sig;		/* for its chan<T> arguments */
	uint8_t		chans;		/* whether it has any */
};

struct out_call {
	uint64_t	id;		/* request id (idtab key) */
	guest_result_fn	fn;
	void		*ctx;
};

/* A request whose handler runs later (call.c): it came while the guest
 * looked at its ring from a send, where no handler may run. */
struct lg_later {
	struct lg_later	*next;
	struct guest_call *call;
	guest_handler	fn;
	void		*ctx;
	size_t		len;
	uint8_t		args[];
};

struct guest_call {
	struct guest	*g;
	uint32_t	req_id;
	int		cancelled;
	struct guest_call *prev, *next;	/* calls being handled */
};

struct rx_chan {
	guest_item_fn	on_item;
	guest_end_fn	on_end;
	void		*ctx;
	uint32_t	unreported;	/* consumed bytes not yet granted back */
	uint64_t	held;		/* deferred: bytes delivered to on_item
					 * and not taken yet */
	uint8_t		open;
	uint8_t		stopping;	/* we told the sender to stop: items are
					 * dropped until its Close or Reset */
	uint8_t		deferred;	/* an item is consumed when its reader
					 * takes it (lg_chan_consumed), not when
					 * on_item returns: guest_chan_hold,
					 * guest_chan_reader */
};

struct tx_chan {
	uint32_t	sent_total;	/* r[shm.flow.remaining-credit]: local */
	uint8_t		open;		/* we send on it (opened it, or sent) */
	uint8_t		ended;		/* Close or Reset went either way: the
					 * id is not ours until given again */
};

struct guest {
	struct hp_segment	seg;
	struct hp_peer_view	view;
	struct hp_endpoint	ep;
	uint32_t		peer_id;
	int			doorbell;
	uint64_t		hb_interval;
	uint64_t		next_hb;
	struct method		*methods;
	uint32_t		nmethods;
	struct hp_idtab		out;		/* struct out_call by request id */
	uint32_t		next_req;
	struct guest_call	*active;
	struct lg_later		*later;		/* handlers to run, oldest first */
	struct lg_later		**later_tail;
	uint32_t		nlater;
	size_t			later_bytes;	/* their arguments, copied */
	uint8_t			deferring;	/* lg_serve_ends: requests wait */
	struct rx_chan		*rx;		/* by channel id */
	struct tx_chan		*tx;
	uint32_t		chan_cursor;
	uint8_t			owed;		/* a channel we receive on has
						 * consumed bytes not granted back */
	int			stop;
	int			dead;		/* 0, or why the loop must end */
	uint32_t		ticks;		/* messages until the next clock read */
	uint32_t		tick_every;	/* messages per clock read, 1..TICK_MAX */
	uint64_t		last_clock;	/* the last clock read */
	int			ended_by_hub;	/* a Goodbye came: goodbye is set */
	char			goodbye[GOODBYE_MAX + 1];
	struct guest_stats	stats;
	struct lg_mt		*mt;		/* guest_run_mt is running */
};

/* The guest on microthreads (mtguest.c). With P > 1 processors, mu guards
 * the whole guest: every public entry takes it (recursively: a callback
 * run by the service may call in again), the service holds it while it
 * serves, and a microthread gives it up only to suspend. */
struct lg_mt {
	struct guest_rt		*rt;
	int			locking;	/* P > 1 */
	pthread_mutex_t		mu;
	int			depth;		/* mu's recursion, for lg_suspend */
	int			kick_fd;	/* eventfd: wakes the service's sleep */
	hp_atomic_u32		kicked;		/* the runtime wants it awake */
	struct lg_blocked	*blocked;	/* microthreads waiting on the hub */
	struct lg_blocked	*blocked_tail;
	struct lg_worker	*idle;		/* handler microthreads to reuse */
	uint32_t		nidle;
	struct lg_req		*reqs;		/* requests being handled */
	struct lg_bridge	*bridges;	/* guest_chan_reader/writer's */
	uint64_t		served;		/* polls that found something */
};

/* A caller's timeout, made a point in time at its first wait: a send or
 * call that never has to wait reads no clock. */
struct timeout {
	int		ms;		/* -1: forever */
	uint64_t	at;		/* 0 until the first wait */
};

/* t as a point in time (CLOCK_MONOTONIC ns, UINT64_MAX: none), fixed
 * from now at its first use. */
static inline uint64_t
lg_timeout_at(struct timeout *t, uint64_t now)
{
	if (t->at == 0)
		t->at = t->ms < 0 ? UINT64_MAX : now + (uint64_t)t->ms * 1000000u;
	return t->at;
}

/* Internal: hidden even where a declaration is all a file sees, so
 * nothing here is exported and calls between the files are direct. */
#pragma GCC visibility push(hidden)

/* guest.c */
void	lg_tick(struct guest *g);
uint64_t lg_clock_beat(struct guest *g);
int	lg_wait_beating(struct guest *g, uint32_t waits, int (*ready)(void *),
	    void *arg, struct timeout *t);
int	lg_wait_tx(struct guest *g, struct timeout *t);
int	lg_send_msg(struct guest *g, uint8_t type, uint32_t id, uint64_t method,
	    const void *head, size_t hlen, const void *body, size_t blen,
	    int flags, struct timeout *t);
int	lg_serve(struct guest *g, int *did);
/* Serves what comes before the next Request: answers, Cancels, channel
 * traffic; no handler runs. */
int	lg_serve_ends(struct guest *g);
int	lg_wait_rx(struct guest *g, struct timeout *t);

/* call.c */
int	lg_on_request(struct guest *g, struct hp_msg_in *m);
/* Runs the oldest handler that waits (struct lg_later): 1, or 0 if none. */
int	lg_run_later(struct guest *g);
void	lg_later_free(struct guest *g);
int	lg_on_response(struct guest *g, struct hp_msg_in *m);
void	lg_on_cancel(struct guest *g, uint32_t id);
void	lg_out_fail_all(struct guest *g, int status);

/* chan.c */
int	lg_on_data(struct guest *g, struct hp_msg_in *m);
int	lg_on_chan_end(struct guest *g, struct hp_msg_in *m);
void	lg_grant_owed(struct guest *g);
/* A deferred channel's item was taken: its credit goes back (all that is
 * owed when flush, as once the ring is empty). Nothing on a channel the
 * receiver stopped: what it held went back then. */
void	lg_chan_consumed(struct guest *g, uint32_t chan, size_t len, int flush);
/* We told the sender of chan, a channel we receive on, to stop: what it
 * consumed and has not reported, and what it holds (it takes no more of
 * it), goes back now, so that a sender waiting for credit is not left
 * waiting until it sees the stop. Items that come after are granted
 * back as they come (lg_on_data). */
void	lg_chan_stopped(struct guest *g, uint32_t chan);

/* mtguest.c */
/* On a microthread of this guest's runtime: waits suspend, handlers spawn. */
int	lg_on_mt(const struct guest *g);
void	lg_lock(struct guest *g);
void	lg_unlock(struct guest *g);
/* Suspends the calling microthread (mu given up meanwhile) until
 * lg_wake or deadline_ns: 0 or -ETIMEDOUT. */
int	lg_suspend(struct guest *g, uint64_t deadline_ns);
int	lg_mt_wait(struct guest *g, uint32_t waits, int (*ready)(void *),
	    void *arg, struct timeout *t);
void	lg_bridges_free(struct guest *g);
/* guest_service_wait on a microthread: until the service found traffic. */
int	lg_mt_service_wait(struct guest *g, struct timeout *t);
int	lg_mt_dispatch(struct guest *g, struct guest_call *c, guest_handler fn,
	    void *ctx, const uint8_t *args, size_t len);

#pragma GCC visibility pop

#endif
