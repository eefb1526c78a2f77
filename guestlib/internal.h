/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's private header: the guest and what its files share, the
 * runtime interface (struct lg_runtime) and the service loop's dispatch
 * table, and the functions one file offers the others, grouped by file.
 *
 * The files in layers, each calling only those below it: attach.c
 * (attach, which wires the rest; detach; the public loop entries) above
 * register.c (the methods served), above call_in.c (calls in), above
 * call_out.c (calls out), above chan_lane.c (channels passed over a
 * lane), above chan.c (channels), above runtime_mt.c (the microthread
 * runtime, over its waits in runtime_mt_wait.c and the generic
 * microthreads of mt/), above runtime_callback.c (the callback runtime),
 * above serve.c (the loop), above lane.c (direct lanes to other guests),
 * above session.c (the heartbeat, waits on the hub, sends). Upward only
 * through struct lg_runtime, the dispatch table and the hooks in struct
 * guest (call_ran, lane_gone, drained). */
#ifndef GUESTLIB_INTERNAL_H
#define GUESTLIB_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "guestlib/guest.h"
#include "proto/callmeta.h"
#include "proto/channel.h"
#include "proto/clock.h"
#include "proto/endpoint.h"
#include "proto/idtab.h"
#include "proto/lane.h"
#include "proto/method.h"
#include "proto/segment.h"
#include "proto/sig.h"

#define GOODBYE_MAX	255	/* bytes of the hub's Goodbye reason kept */
#define LG_ERR_TEXT_MAX	1023	/* bytes of a call's error text given */
#define LG_DONE_KEPT	256	/* answered calls kept after their handler */
#define TICK_ITEMS	8	/* stream items per look at the clock (heartbeat) */

struct method {
	uint64_t	id;
	char		*name;		/* its own copy: a call's handler may
					 * outlive a realloc of g->methods */
	guest_handler	fn;
	void		*ctx;
	struct hp_sig	sig;		/* for its chan<T> arguments */
	uint8_t		chans;		/* whether it has any chan<T> */
	uint8_t		rx;		/* ... or rx<T> */
};

struct lg_lane;

struct out_call {
	uint64_t	id;		/* request id (idtab key) */
	uint64_t	method;		/* its id: named in a lane's death */
	guest_result_fn	fn;		/* NULL: given up on, its answer awaited
					 * to be dropped (over a lane) */
	void		*ctx;
	struct lg_lane	*lane;		/* sent over it, NULL: through the hub */
	uint8_t		async;		/* guest_call_async's: counted against
					 * the bound of its way (lg_hub_out_max,
					 * lg_lane_out_max) */
	uint8_t		nchans;		/* its channels passed over the lane */
	uint32_t	chans[HP_SIG_MAX_ARGS];	/* ... their ids in its table */
	uint32_t	serials[HP_SIG_MAX_ARGS];
	uint8_t		up;		/* ... bit i: chans[i] is an upload
					 * (rx<T>): we send on it */
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
	/* A channel of the hub's table passed to a call over a lane: it goes
	 * on as lane_chan of lane's table, the hub's entry Closed meanwhile
	 * (hubd takes it for no other call), and freed with its end. */
	struct lg_lane	*lane;
	uint32_t	lane_chan;
	/* ... and in the lane's table: the hub's id it came from, the call
	 * it was passed to (serial), and what the peer may send on it */
	uint32_t	origin;
	uint32_t	serial;
	uint32_t	granted;	/* initial_credit and every grant */
	uint32_t	got;		/* bytes received */
	/* An rx<T> argument of a call to us, not accepted yet: its sender
	 * has no credit until guest_chan_accept grants the window. Its end,
	 * if it comes first, is kept for accept (ended, status); once the
	 * call is answered it is nobody's (orphan): freed at its end. */
	uint8_t		offered;
	uint8_t		ended;
	uint8_t		orphan;
	int		status;
};

struct tx_chan {
	uint32_t	sent_total;	/* r[shm.flow.remaining-credit]: local */
	uint8_t		open;		/* we send on it (opened it, or sent) */
	uint8_t		ended;		/* Close or Reset went either way: the
					 * id is not ours until given again */
	/* An upload (rx<T>) passed to a call over a lane, in the lane's
	 * table: the hub's id it came from (its entry Closed meanwhile,
	 * freed with its end) and the call it went with. */
	uint32_t	origin;
	uint32_t	serial;
};

/* A table of channels (chan.c): the hub's, in the guest's own segment,
 * or a lane's, shared with the peer (the spec's table either way: the
 * segment's host side opens even ids, its guest side odd ones). */
struct lg_chans {
	struct hp_chan_entry	*entries;
	struct rx_chan		*rx;		/* by id */
	struct tx_chan		*tx;
	uint32_t		max;		/* max_channels */
	uint32_t		credit;		/* initial_credit */
	int			side;		/* HP_SIDE_*: the ids we open */
	uint32_t		cursor;		/* hp_chan_open's */
	uint8_t			owed;		/* a channel we receive on has
						 * consumed bytes not granted back */
	struct hp_endpoint	*ep;		/* its traffic goes on */
	struct lg_lane		*lane;		/* NULL: the hub's */
};

/* Public ids of a lane's channels (the callee's, given in a Request over
 * the lane): LG_LANE_CHAN | the lane's id (low 15 bits) << 16 | its id
 * in the lane's table (HP_LANE_CHANNELS_MAX keeps it in 16 bits). */
#define LG_LANE_CHAN	0x80000000u

static inline int
lg_chans_alloc(struct lg_chans *cs, struct hp_chan_entry *entries, uint32_t max,
	       uint32_t credit, int side, struct hp_endpoint *ep, struct lg_lane *lane)
{
	*cs = (struct lg_chans){ .entries = entries, .max = max, .credit = credit,
				 .side = side, .ep = ep, .lane = lane };
	cs->rx = calloc(max, sizeof(*cs->rx));
	cs->tx = calloc(max, sizeof(*cs->tx));
	return cs->rx != NULL && cs->tx != NULL ? 0 : -ENOMEM;
}

static inline void
lg_chans_free(struct lg_chans *cs)
{
	free(cs->rx);
	free(cs->tx);
	cs->rx = NULL;
	cs->tx = NULL;
}

/* A direct lane to another guest (lane.c, proto/lane.h): one more
 * endpoint, served by the same loop, in the hub endpoint's wait group. */
#define LG_LANES_MAX	(HP_GROUP_MAX - 1)
#define LG_ROUTES_MAX	1024	/* methods called over lanes, in all */

struct lg_lane {
	uint32_t		id;		/* hubd's */
	uint32_t		side;		/* HP_LANE_SIDE_* */
	uint32_t		calls_max;	/* the peer's requests in flight to us */
	uint32_t		calls_in;	/* ... now */
	uint32_t		calls_out;	/* our async calls in flight to it
						 * (lg_lane_out_max) */
	int			bell;
	int			bells[3];	/* with bells: sleep on, ring, and
						 * the latter's read end, kept;
						 * -1: none (proto/lane.h) */
	uint32_t		refs;		/* frames using it across a serve or a
						 * wait: freed at the last lg_lane_put */
	int			closed;		/* out of the guest's tables */
	int			closing;	/* reaped at the end of the round */
	int			violation;	/* the peer broke rule (why) */
	int			told;		/* the hub closed it: no report */
	uint64_t		hung_ns;	/* when its peer was seen to hang
						 * up (0: not), hubd's word on how
						 * it went awaited since */
	uint64_t		n_out, n_in;	/* calls each way, for the figures */
	char			peer[HP_LANE_NAME_MAX + 1];
	char			why[HP_LANE_REASON_MAX + 1];
	struct hp_lane_map	map;
	struct hp_endpoint	ep;
	struct lg_chans		chans;		/* the lane's table (chan<T> calls) */
};

/* A lane held across a serve or a wait (refs), so that closing it
 * meanwhile (a nested serve reaps it) does not free it under the holder;
 * the last put frees a closed one. */
static inline void
lg_lane_hold(struct lg_lane *ln)
{
	ln->refs++;
}

static inline void
lg_lane_put(struct lg_lane *ln)
{
	if (--ln->refs == 0 && ln->closed) {
		hp_segment_close(&ln->map.seg);
		lg_chans_free(&ln->chans);
		free(ln);
	}
}

/* The peer broke rule: the lane closes at the end of the round. */
static inline void
lg_lane_broken(struct lg_lane *ln, const char *rule)
{
	if (ln->closing)
		return;
	ln->closing = 1;
	ln->violation = 1;
	snprintf(ln->why, sizeof(ln->why), "guest %s broke %s on the lane", ln->peer,
		 rule != NULL ? rule : "the protocol");
}

/* How long a send waits for room on a lane before its peer is taken to
 * have stopped reading it, and loses the lane (one that stops reading its
 * hub ring is ended by hubd). A send that waits serves meanwhile what
 * runs no handler (the answers to our calls above all: the peer may be
 * waiting for room to send them), so an honest peer is never that
 * slow. */
#define LG_LANE_STALL_MS	2000

/* Our guest_call_async calls in flight over a lane at most: one more
 * waits (serving) for an answer, LG_OUT_QUIET_MS at most. No more than the peer's ring holds, so
 * that the answers the peer owes for a burst fit its ring once we take
 * what it sent; and so that a peer that reads nothing has its ring full
 * (LG_LANE_STALL_MS) before our calls reach the bound. A blocking
 * guest_call waits for its own answer and is not held back. */
static inline uint32_t
lg_lane_out_max(const struct lg_lane *ln)
{
	return ln->map.seg.params.ring_size;
}

struct lg_route {
	uint64_t	method;
	struct lg_lane	*lane;
	struct hp_sig	sig;		/* for its chan<T> arguments */
	uint8_t		chans;		/* whether it has any */
	char		name[HP_METHOD_NAME_MAX + 1];	/* from its first call
					 * (ROUTE gives the id): named when
					 * the lane's callee dies in it */
};

/* A request whose handler runs later (call_in.c): it came while the guest
 * looked at its ring from a send, where no handler may run. */
struct lg_later {
	struct lg_later	*next;
	struct guest_call *call;
	guest_handler	fn;
	void		*ctx;
	size_t		len;
	uint8_t		args[];
};

struct timeout;

/* A message type's handler in the service loop (serve.c): 0, or an error
 * that ends the loop. */
typedef int (*lg_msg_fn)(struct guest *g, struct hp_msg_in *m);

#define LG_MSG_TYPES	10	/* HP_MSG_* are below */
#define LG_TOPICS_MAX	64	/* topics a guest publishes, and subscriptions */

/* A caller waiting for an event the service delivers (an answer): set by
 * the runtime's await, woken through its wake. */
struct lg_event {
	int		done;
	void		*waiter;	/* the runtime's: who to wake */
	int		abandoned;	/* its waiter will never run again */
	struct lg_event	*prev, *next;	/* the microthreads' awaiting list */
};

/* How the guest runs handlers and waits: the callback runtime
 * (runtime_callback.c: guest_run, guest_service, the caller's own thread) or the
 * microthread runtime (runtime_mt.c, while guest_run_mt runs). Hooks take
 * the guest locked (lock/unlock: what the runtime needs for a public
 * entry; a callback may call in again). */
struct lg_runtime {
	void	(*lock)(struct guest *g);
	void	(*unlock)(struct guest *g);
	/* Waits on the hub until ready(arg), beating: 1 ready, 0 when t ran
	 * out, or ready()'s or the wait's error. */
	int	(*wait)(struct guest *g, uint32_t waits, int (*ready)(void *),
		    void *arg, struct timeout *t);
	/* As wait, serving meanwhile what must be served for ready() to
	 * come (a credit wait: the receiver's Reset, other callers'
	 * handlers). */
	int	(*wait_serving)(struct guest *g, uint32_t waits,
		    int (*ready)(void *), void *arg, struct timeout *t);
	/* As wait, serving meanwhile what runs no handler (answers,
	 * Cancels, channel traffic; Requests kept for later): a send that
	 * waits for a lane's peer, which may be waiting for us to take its
	 * answers. */
	int	(*wait_ends)(struct guest *g, uint32_t waits,
		    int (*ready)(void *), void *arg, struct timeout *t);
	/* Until ev->done (0), or t ran out (-ETIMEDOUT) or the loop's
	 * error: for guest_call's answer. */
	int	(*await)(struct guest *g, struct lg_event *ev, struct timeout *t);
	/* ev is done: wakes its waiter (from the service). */
	void	(*wake)(struct lg_event *ev);
	/* Runs (or queues) a request's handler. */
	int	(*handle)(struct guest *g, struct guest_call *c, guest_handler fn,
		    void *ctx, const uint8_t *args, size_t len);
	/* Runs a request that was held for later (serve.c) now, ahead of
	 * those still held. */
	int	(*run_held)(struct guest *g, struct guest_call *c, guest_handler fn,
		    void *ctx, const uint8_t *args, size_t len);
	/* A sender saw traffic: what it may serve without running a handler. */
	int	(*sending)(struct guest *g);
	/* guest_service, guest_service_wait, guest_stop's part. */
	int	(*service)(struct guest *g);
	int	(*service_wait)(struct guest *g, struct timeout *t);
	void	(*stop)(struct guest *g);
};

struct guest_call {
	struct guest	*g;
	uint32_t	req_id;
	const char	*method;	/* its method's name (struct method's) */
	char		caller[HP_LANE_NAME_MAX + 1]; /* guest_call_caller's, once asked */
	int		cancelled;
	uint8_t		answered;	/* a second answer is -EALREADY */
	uint8_t		running;	/* its handler has not returned */
	struct lg_lane	*lane;		/* came over it, NULL: from the hub */
	int		lane_gone;	/* ... and it closed: the answer is dropped */
	uint8_t		nchans;		/* its channels in the lane's table, or
					 * its chan<T> ones in the hub's */
	uint32_t	chans[HP_SIG_MAX_ARGS];
	uint32_t	serials[HP_SIG_MAX_ARGS]; /* the hub's: each one's tx serial */
	struct hp_callmeta meta;	/* its deadline and trace, as they came */
	char		trace[HP_TRACEPARENT_LEN + 1]; /* guest_call_trace's, "" none */
	uint8_t		nrx;		/* its rx<T> arguments (the hub's table) */
	uint32_t	rx[HP_SIG_MAX_ARGS];
	struct guest_call *prev, *next;	/* calls being handled */
};

struct guest {
	const struct lg_runtime	*rt;		/* the runtime in use */
	lg_msg_fn		on_msg[LG_MSG_TYPES]; /* by HP_MSG_* (serve.c) */
	/* A request's handler has returned (call_in.c's, called by the
	 * runtime that ran it). */
	void			(*call_ran)(struct guest *g, struct guest_call *c);
	void			(*drained)(struct lg_chans *cs);
						/* cs's ring is empty (chan.c's
						 * grants) */
	void			(*lane_gone)(struct guest *g, struct lg_lane *ln);
						/* call_in.c: fails the calls over
						 * it, drops the answers to it */
	/* topics.c: delivers events (serve.c), whether some wait, and the
	 * announcement before a sleep (1: something came, do not sleep) */
	int			(*topics_serve)(struct guest *g, int *did);
	int			(*topics_ready)(struct guest *g);
	int			(*topics_sleep)(struct guest *g);
	struct lg_topics	*topics;
	struct hp_segment	seg;
	struct hp_peer_view	view;
	struct hp_endpoint	ep;
	uint32_t		peer_id;
	int			doorbell;
	int			bells[2];	/* the ticket's (HP_FEAT_BELLS), -1: none */
	int			epfd;		/* guest_fd: every doorbell, wake_fd */
	uint8_t			own_loop;	/* guest_fd was asked for: the
						 * plugin's loop sleeps on it */
	uint32_t		servicing;	/* guest_services under way */
	uint32_t		running;	/* guest_runs under way */
	uint8_t			kicked;		/* lg_rest wrote wake_fd */
	struct hp_wait_group	group;		/* ep, then the lanes' */
	struct lg_lane		*lanes[LG_LANES_MAX];
	uint32_t		nlanes;
	struct hp_idtab		routes;		/* struct lg_route by method id:
						 * method -> lane (routes.c) */
	struct lg_lane		*cur_lane;	/* the message served came over it */
	/* the deadline and trace of the call whose handler runs on the
	 * service thread (callback runtime; microthreads keep their own,
	 * mt_ctx), which calls it makes inherit (call_out.c) */
	struct hp_callmeta	cur_meta;
	const char		*lane_rule;	/* the rule a lane's peer broke */
	uint32_t		rounds;		/* serve rounds, for the lanes' figures */
	uint32_t		reap_held;	/* sends waiting for room, serving
						 * (wait_ends): no lane closes, so
						 * none is freed under its sender */
	uint64_t		hb_interval;
	uint64_t		next_hb;	/* UINT64_MAX: no heartbeat */
	struct method		*methods;
	uint32_t		nmethods;
	char			**retired;	/* unregistered methods' names: a
						 * call of one may still point to it */
	uint32_t		nretired;
	struct hp_idtab		out;		/* struct out_call by request id */
	uint32_t		hub_calls_out;	/* ... async ones through the
						 * hub (lg_hub_out_max) */
	uint32_t		next_req;
	struct guest_call	*active;		/* calls not answered yet */
	struct guest_call	*answered;	/* answered, their handler running */
	struct guest_call	*done[LG_DONE_KEPT];	/* answered last, freed in
						 * turn: a late second answer
						 * finds its call */
	uint32_t		done_pos;
	struct lg_later		*later;		/* handlers to run, oldest first */
	struct lg_later		**later_tail;
	uint32_t		nlater;
	size_t			later_bytes;	/* their arguments, copied */
	uint8_t			deferring;	/* lg_serve_ends: requests wait */
	uint32_t		holding;	/* a call of the hub's services
						 * under way: no handler runs
						 * (runtime_callback.c's await) */
	struct lg_chans		chans;		/* the hub's table */
	uint32_t		chan_serial;	/* channels passed over lanes, and
						 * chan<T> arguments through the hub */
	_Atomic uint32_t	stop;		/* guest_stop: from a signal handler too;
						 * this process's own, not shared */
	int			wake_fd;	/* eventfd: guest_stop ends a sleep,
						 * lg_rest makes guest_fd readable */
	int			term_handler;	/* guest_attach installed SIGTERM's */
	int			dead;		/* 0, or why the loop must end */
	uint32_t		items;		/* stream items sent or served (heartbeat) */
	int			ended_by_hub;	/* a Goodbye came: goodbye is set */
	char			goodbye[GOODBYE_MAX + 1];
	struct guest_stats	stats;
	struct lg_mt		*mt;		/* guest_run_mt is running */
	/* guest_detach released all but this struct, kept as a handle to
	 * nothing: a slip that uses g after it gets -ENOTCONN, not freed
	 * memory (lg_detached) */
	uint8_t			detached;
	struct guest		*next_detached;	/* ... kept in a list: reachable */
};

/* g was detached: every entry that takes it refuses (-ENOTCONN). */
static inline int
lg_detached(const struct guest *g)
{
	return g->detached;
}

/* A buffer given as a pointer and a length: NULL is one only when it is
 * empty; NULL with a length is the caller's slip (-EINVAL), not bytes to
 * read or write. */
static inline int
lg_buf_bad(const void *p, size_t len)
{
	return p == NULL && len > 0;
}

/* How long a guest_call_async past its way's bound waits for an answer
 * at most: calls that all wait at their callees (no answer for that
 * long) pile nothing up on us, and one more goes. */
#define LG_OUT_QUIET_MS	50

/* Our guest_call_async calls in flight through the hub at most: one
 * more waits (serving) for an answer. Each answer that waits in hubd for
 * us (our ring full while we send) counts against our pool quota, which
 * is at least two rings' worth: a burst of so many keeps an honest guest
 * within it, and within calls_in_flight (1024) by default. */
static inline uint32_t
lg_hub_out_max(const struct guest *g)
{
	return g->seg.params.ring_size;
}

/* The guest on microthreads (runtime_mt.c). With P > 1 processors, mu guards
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
	struct lg_event		*awaiting;	/* microthreads awaiting answers */
	int			draining;	/* guest_stop seen: every wait ends,
						 * the handlers finish, then the
						 * runtime returns */
	struct lg_bridge	*bridges;	/* guest_chan_reader/writer's */
	int			spawn_failed;	/* a handler's microthread could not
						 * be made: said once */
	uint64_t		served;		/* polls that found something */
};

/* A microthread waiting for the hub: woken by the service once ready()
 * says so (or its deadline passes). */
struct lg_blocked {
	struct guest_mt		*mt;
	uint32_t		waits;		/* HP_WAIT_* it needs announced */
	int			linked;		/* in the list: not woken yet */
	int			(*ready)(void *);
	void			*arg;
	struct lg_blocked	*prev, *next;	/* in lg_mt.blocked, oldest first */
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

/* session.c */
/* One message (type) sent or received, or an event: a look at the coarse
 * clock that keeps the heartbeat going while messages flow (for stream
 * items, every TICK_ITEMS). */
void	lg_tick(struct guest *g, uint8_t type);
/* Reads the clock and beats if a beat is due. */
uint64_t lg_clock_beat(struct guest *g);
/* A wait's own condition, for a wrapper that adds to it (the guest's
 * traffic, guest_stop). */
struct lg_cond {
	struct guest	*g;
	int		(*ready)(void *);
	void		*arg;
};
/* The caller's thread sleeping in hp_endpoint_wait until ready(arg),
 * beating: 1 ready, 0 when t ran out, or ready()'s or the wait's error. */
int	lg_wait_beating(struct guest *g, uint32_t waits, int (*ready)(void *),
	    void *arg, struct timeout *t);
/* Waits for room on ln's ring (NULL: the hub's); -EPIPE: ln closes. */
int	lg_wait_tx(struct guest *g, struct lg_lane *ln, struct timeout *t);
int	lg_send_msg(struct guest *g, uint8_t type, uint32_t id, uint64_t method,
	    const void *head, size_t hlen, const void *body, size_t blen,
	    int flags, struct timeout *t);
/* lg_send_msg over a lane (NULL: the hub's ring); -EPIPE when the lane
 * is closing or its peer gone, -EPROTO when the peer broke its ring. */
int	lg_send_on(struct guest *g, struct lg_lane *ln, uint8_t type, uint32_t id,
	    uint64_t method, const void *head, size_t hlen, const void *body,
	    size_t blen, int flags, struct timeout *t);

/* serve.c */
int	lg_serve(struct guest *g, int *did);
/* Serves what comes before the next Request: answers, Cancels, channel
 * traffic; no handler runs. */
int	lg_serve_ends(struct guest *g);
/* Whether lg_serve_ends has something to do: traffic other than a
 * Request it would leave in its ring (a lane closing has none). */
int	lg_ends_ready(void *g);
int	lg_wait_rx(struct guest *g, int (*ready)(void *), struct timeout *t);
/* Whether the service has something to do (traffic, a Goodbye, a
 * handler waiting). Not guest_stop: lg_wait_beating ends a wait inside
 * the loop for it, a call made after the loop goes on waiting. */
int	lg_rx_ready(void *g);
/* Control goes back to a plugin's own loop, which sleeps on guest_fd:
 * the hub and lane peers ring for the next message, and what came
 * already makes guest_fd readable. */
void	lg_rest(struct guest *g);
/* The runtimes' wait (struct lg_runtime's wait): lg_wait_beating, then
 * lg_rest for a plugin's own loop outside guest_service. */
int	lg_wait_resting(struct guest *g, uint32_t waits, int (*ready)(void *),
	    void *arg, struct timeout *t);
/* Traffic on the hub's ring or a lane's, or a lane to reap. */
int	lg_traffic(struct guest *g);
/* A request's handler later, in the order requests came: the call is
 * registered already, so that its Cancel finds it. */
int	lg_later(struct guest *g, struct guest_call *c, guest_handler fn,
	    void *ctx, const uint8_t *args, size_t len);
void	lg_later_free(struct guest *g);

/* runtime_callback.c */
extern const struct lg_runtime lg_callback;

/* call_in.c */
/* Fills the dispatch table's Request and Cancel, call_ran and lane_gone. */
void	lg_call_in_wire(struct guest *g);
/* Frees every call in (detach). */
void	lg_calls_free(struct guest *g);
/* A call held until now whose deadline has passed meanwhile: answered
 * timeout, its handler never started (1); else 0. */
int	lg_call_late(struct guest *g, struct guest_call *c);

/* call_out.c */
/* Fills the dispatch table's Response. */
void	lg_call_out_wire(struct guest *g);
/* lg_send_on for a call's message: a lane whose peer broke its ring
 * closes, and the send says -EPIPE as for a lane that is closing. */
int	lg_call_send(struct guest *g, struct lg_lane *ln, uint8_t type, uint32_t id,
	    uint64_t method, const void *head, size_t hlen, const void *body,
	    size_t blen, struct timeout *t);
/* The options of libguest's own calls to the hub (hub.register,
 * hub.caller...): the handler's deadline and trace are not theirs. */
extern const struct guest_call_opts lg_own_call;
/* Each call out over ln fails, Cancelled (its lane is gone). */
void	lg_out_lane_gone(struct guest *g, struct lg_lane *ln);
/* Fails every call in flight with status (the loop has ended for good:
 * nothing new can start). */
void	lg_out_fail_all(struct guest *g, int status);
/* Each guest_call whose lg_event is marked abandoned forgets its caller:
 * its answer, if it comes, goes to nobody (the caller's stack is about
 * to be freed with its microthread). */
void	lg_out_forget_abandoned(struct guest *g);

/* topics.c */
/* Fills the dispatch table's Topic and the topics' hooks: 0, -ENOMEM. */
int	lg_topics_init(struct guest *g);
/* Ends every publication and subscription here (detach). */
void	lg_topics_free(struct guest *g);

/* routes.c: the methods called over lanes */
/* An empty table: 0 or -ENOMEM. */
int	lg_routes_init(struct guest *g);
void	lg_routes_free(struct guest *g);
/* The route a call of method takes over a lane (not one closing), or
 * NULL. */
struct lg_route *lg_lane_route(struct guest *g, uint64_t method);
/* r's method over r's lane from now on, in place of its route if it
 * had one: 0, or -ENOSPC when LG_ROUTES_MAX methods have routes. */
int	lg_route_set(struct guest *g, const struct lg_route *r);
/* method's calls no longer go over lane (its route over another stays). */
void	lg_route_unset(struct guest *g, uint64_t method, uint32_t lane);
/* No call goes over ln any more. */
void	lg_routes_drop_lane(struct guest *g, const struct lg_lane *ln);

/* lane.c */
/* Fills the dispatch table's Lane; sets the lanes up when the hub
 * offers them (after the endpoint): 0 or -errno. */
int	lg_lanes_init(struct guest *g);
/* Whether a lane has traffic, or is to be reaped. */
int	lg_lanes_ready(struct guest *g);
/* Closes the lanes marked closing, or whose peer hung up. */
void	lg_lanes_reap(struct guest *g);
/* Each lane's figures where hubd reads them. */
void	lg_lanes_publish(struct guest *g);
/* Closes every lane (detach). */
void	lg_lanes_free(struct guest *g);

/* chan.c */
/* Fills the dispatch table's Data, Close and Reset, and drained. */
void	lg_chan_wire(struct guest *g);
/* A deferred channel's item was taken: its credit goes back (all that is
 * owed when flush, as once the ring is empty). Nothing on a channel the
 * receiver stopped: what it held went back then. */
void	lg_chan_consumed(struct guest *g, uint32_t chan, size_t len, int flush);
static inline uint32_t
lg_lane_chan_pub(const struct lg_lane *ln, uint32_t id)
{
	return LG_LANE_CHAN | (ln->id & 0x7fffu) << 16 | id;
}

static inline struct hp_chan_entry *
lg_chan_entry(struct lg_chans *cs, uint32_t id)
{
	return &cs->entries[id];
}
/* The end of a channel we receive on, told to its on_end. */
void	lg_chan_rx_end(struct guest *g, struct lg_chans *cs, uint32_t id, int status);
/* A call to us with rx<T> arguments is answered: those not accepted are
 * freed, now or at their end. */
void	lg_chan_rx_answered(struct guest *g, struct guest_call *c);

/* chan_lane.c */
/* A call of a method with chan<T> arguments (sig) going over ln: moves
 * each channel to ln's table (c->chans) and gives the arguments with
 * their ids there in *out (malloc'd). 0, 1 when the call must go through
 * the hub (a channel not ours to pass, the lane's table full), -ENOMEM. */
int	lg_chan_move(struct guest *g, struct lg_lane *ln, const struct hp_sig *sig,
	    const uint8_t *args, size_t len, struct out_call *c, uint8_t **out,
	    size_t *outlen);
/* An upload moved to a lane ended (tx_end, the lane's end): the hub's
 * entry it came from is freed and its id names nothing moved. */
void	lg_chan_unorigin(struct guest *g, struct lg_chans *cs, uint32_t id);
/* Stops an upload we send on over a lane with a Reset (its call was
 * answered). */
void	lg_chan_tx_stop(struct guest *g, struct lg_chans *cs, uint32_t id);
/* ... back to the hub's table: the Request did not go out. */
void	lg_chan_unmove(struct guest *g, struct lg_lane *ln, const struct out_call *c);
/* c's answer came over its lane: its channels still open end (Close,
 * or for an upload we send on a Reset: the answer ends it). */
void	lg_chan_answered(struct guest *g, const struct out_call *c);
/* A Request over ln: its chan<T> arguments checked (0, or -EPROTO with
 * g->lane_rule), noted in c and given to the handler as public ids in
 * *out (malloc'd; -ENOMEM). */
int	lg_chan_adopt(struct guest *g, struct lg_lane *ln, const struct hp_sig *sig,
	    const uint8_t *args, size_t len, struct guest_call *c, uint8_t **out,
	    size_t *outlen);
/* c was answered: nothing more goes out on its channels. */
void	lg_chan_replied(struct guest_call *c);
/* ln closes: the channels in its table end. */
void	lg_chan_lane_gone(struct guest *g, struct lg_lane *ln);

/* runtime_mt_chan.c */
/* Ends the hub channels bridged to runtime channels (guest_run_mt's end). */
void	lg_mt_bridges_free(struct guest *g);

/* runtime_mt_wait.c */
/* The guest's lock while guest_run_mt runs (struct lg_mt's mu). */
void	lg_mt_lock(struct guest *g);
void	lg_mt_unlock(struct guest *g);
/* Suspends the calling microthread (mu given up meanwhile) until
 * mt_wake or deadline_ns: 0 or -ETIMEDOUT. */
int	lg_suspend(struct guest *g, uint64_t deadline_ns);
/* The microthread runtime's wait: that microthread alone suspends. */
int	lg_mt_wait(struct guest *g, uint32_t waits, int (*ready)(void *),
	    void *arg, struct timeout *t);
/* Wakes the blocked microthreads that can go on (from the service). */
void	lg_mt_wake_ready(struct guest *g);
/* guest_service_wait on a microthread: until the service found traffic. */
int	lg_mt_service_wait(struct guest *g, struct timeout *t);

#pragma GCC visibility pop

#endif
