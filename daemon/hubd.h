/* hubd's private header: the hub, its peers, and prototypes grouped by
 * file. */
#ifndef HUBD_H
#define HUBD_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <ev.h>

#include "daemon/config.h"
#include "daemon/lifecycle.h"
#include "proto/clock.h"
#include "proto/endpoint.h"
#include "proto/idtab.h"
#include "proto/msg.h"
#include "proto/segment.h"
#include "proto/sig.h"

struct hub;
struct client;

/* The supervisor's states, events and decisions: lifecycle.h. The death
 * tally shown by hubctl peers keeps the last TALLY_MAX deaths with their
 * wall-clock time; the count against max_deaths is lifecycle.h's, on
 * CLOCK_MONOTONIC. */
#define TALLY_MAX	8
#define DEATH_DETAIL_MAX 256	/* "exec /a/long/path: strerror", a rule, ... */

struct death {
	uint64_t	when_ns;	/* CLOCK_REALTIME, for people */
	int		reason;		/* DEATH_* */
	int		status;		/* exit status or signal; errno if spawn failed */
	char		detail[DEATH_DETAIL_MAX];	/* the rule broken, ... */
};

/* Who waits for the answer to a call the host made. */
enum origin_kind {
	ORIGIN_NONE,		/* nobody any more: drop the answer */
	ORIGIN_PEER,		/* a guest's call, routed */
	ORIGIN_CLIENT,		/* a control client's call */
	ORIGIN_SINK,		/* hub.sink: answered when its stream ends */
};

struct ext_call;
struct relay;

struct origin {
	enum origin_kind kind;
	uint32_t	peer;		/* ORIGIN_PEER: caller and its ... */
	uint32_t	epoch;		/* ... instance */
	uint32_t	req_id;		/* its request id */
	struct ext_call	*ext;		/* ORIGIN_CLIENT */
	uint32_t	chan;		/* a client call's stream: its channel id */
};

/* A call the host made to a guest, awaiting its Response (route.c). */
struct pending {
	uint64_t	id;		/* host->guest request id (idtab key) */
	struct origin	o;
};

/* A message waiting for room in a guest's ring or the host's pool. */
struct qmsg {
	struct qmsg	*next;
	uint8_t		type;
	uint32_t	id;
	uint64_t	method_id;
	uint32_t	len;
	uint32_t	var_slot;	/* a variable slot the host holds for it
					 * (HP_SLOT_INLINE: the payload is data) */
	uint32_t	var_gen;
	uint32_t	charged;	/* peer id whose pool quota it counts against */
	uint8_t		data[];
};

/* A client stream the host ended before the guest did (hchan.stale):
 * what the guest still sends on it is dropped, not a violation. */
enum stale {
	STALE_NO,
	STALE_ENDED,		/* entry freed; the first Data gets a Reset */
	STALE_RESET,		/* Reset sent; dropped until its Close or Reset */
	STALE_SENT,		/* an odd id we sent on and ended: the guest's
				 * own Close or Reset may cross ours */
};

/* A channel the host receives on from a guest. */
struct hchan {
	uint8_t		open;
	uint8_t		sending;	/* hub.source: we send, the guest receives */
	uint8_t		item_type;	/* HP_T_* for a client stream */
	uint32_t	received;	/* bytes received in all */
	uint32_t	granted;	/* what we granted, kept locally */
	uint32_t	unreported;	/* consumed, not yet granted back */
	uint32_t	held;		/* a client stream: items its client has not taken */
	uint8_t		stale;		/* a client stream we ended: STALE_* */
	uint8_t		stopped;	/* its reader went: Reset sent, no more credit */
	uint64_t	caller;		/* whom hubd opened it for: CALLER_* */
	uint64_t	checksum;	/* hub.sink, hub.source: the stream hash (services.h) */
	uint64_t	bytes;
	uint64_t	to_send;	/* hub.source: bytes still to send */
	uint32_t	sent_total;	/* hub.source: r[shm.flow.remaining-credit] */
	struct origin	o;		/* where items and the end go */
	struct relay	*relay;		/* one end of a stream between guests (relay.c) */
};

/* Cumulative over the guest's instances: an instance's endpoint counters
 * are added in when it goes. */
struct peer_stats {
	uint64_t	calls_in;	/* requests from the guest */
	uint64_t	calls_out;	/* requests to the guest */
	uint64_t	violations;
	uint64_t	backlogged;	/* messages that had to wait for room */
	uint64_t	credit_waits;	/* hub.source found no credit */
	uint64_t	bytes_in;
	uint64_t	bytes_out;
	uint64_t	ring_full;
	uint64_t	slot_exhausted;
	uint64_t	wakes;
};

struct peer {
	struct hub		*hub;
	struct config_guest	*conf;		/* its own copy; NULL: entry unused */
	struct config_guest	*next_conf;	/* a reload's, taken at the next start */
	int			removed;	/* a reload dropped it: free when down */
	uint32_t		id;		/* peer id, 1..max_guests */
	enum peer_state		state;		/* lifecycle.h */
	struct life		life;		/* wishes, recent deaths, backoff */
	pid_t			pid;		/* also its process group's id */
	int			pidfd;
	int			bell;		/* our end of the doorbell */
	ev_io			pid_w;
	ev_io			bell_w;
	ev_timer		timer;		/* attach, backoff, stop or goodbye grace */
	int			timer_reason;	/* DEATH_* the timer's SIGKILL means, or -1 */
	const char		*timer_detail;	/* and why */
	uint32_t		epoch;
	struct hp_peer_view	view;
	struct hp_endpoint	ep;
	int			paused;		/* not read: a target is backlogged */
	int			kill_reason;	/* DEATH_* when we ended it, else -1 */
	char			kill_detail[DEATH_DETAIL_MAX];
	const char		*fault;		/* a rule it broke, for the supervisor */
	int			fault_reason;	/* DEATH_VIOLATION or DEATH_HUNG */
	struct hp_idtab		pend;		/* struct pending by request id */
	uint32_t		next_req;
	uint32_t		inbound;	/* its calls being routed */
	struct qmsg		*bl_head;
	struct qmsg		**bl_tail;
	uint32_t		bl_count;
	uint8_t			bl_starved;	/* its head waits for a variable slot */
	/* shared pool slots hubd holds in backlogs on its behalf (its
	 * answers and items, its requests to others), and their bytes */
	uint32_t		pool_charged_slots;
	uint64_t		pool_charged_bytes;
	char			fault_text[128];	/* a fault's words of ours */
	struct hchan		*chans;		/* by channel id */
	uint32_t		chan_cursor;
	uint32_t		sources;	/* hub.source streams under way */
	uint32_t		relays;		/* streams from other guests it receives (relay.c) */
	uint32_t		nmethods;	/* registered by this instance */
	uint64_t		start_ns;	/* CLOCK_MONOTONIC */
	uint64_t		up_ns;
	uint32_t		restarts;
	struct death		tally[TALLY_MAX];
	uint32_t		ndeaths;	/* ever */
	struct peer_stats	stats;
};

/* A registered method: a host service or a guest's. */
struct method {
	uint64_t	id;
	char		name[64];
	char		signature[HP_SIG_MAX_LEN + 1];
	struct hp_sig	sig;
	uint32_t	owner;		/* peer id, 0 = host */
	uint32_t	epoch;		/* owner's instance */
	uint16_t	service;	/* owner 0: its row in services.c */
};

struct hub {
	struct ev_loop		*loop;
	struct hub_conf		conf;
	struct hp_segment	seg;
	struct hp_slot_pool	host_pool;
	uint8_t			*slot_owner;	/* host pool slot -> peer id holding it */
	int			lock_fd;
	struct peer		*peers;		/* [max_guests], index = id - 1 */
	struct method		*methods;
	uint32_t		nmethods;
	uint32_t		mcap;		/* methods allocated */
	struct hp_idtab		mindex;		/* method id -> index (methods.c) */
	uint32_t		faults;		/* peers with a fault not acted on */
	int			stopping;
	int			busy;		/* served something this round */
	uint64_t		start_ns;
	ev_idle			idle_w;		/* keeps polling rings while busy */
	ev_prepare		prepare_w;	/* announces sleep before blocking */
	ev_check		check_w;
	ev_signal		sig_w[3];
	ev_timer		tick_w;		/* heartbeats, epochs, stalls */
	ev_timer		watchdog_w;	/* systemd's WatchdogSec */
	uint32_t		status_up;	/* guests up at the last STATUS= */
	int			announced;	/* sleep announced to the guests */
	uint32_t		ncpus;		/* CPUs hubd may run on */
	uint32_t		poll_start;	/* host_poll's first peer this round */
	uint64_t		polls;		/* host_poll rounds: what a spin costs */
	uint64_t		sleeps;		/* times the loop announced sleep */
	char			*lock_path;
	int			lock_held;	/* the lock is ours: unlink at exit */
	int			seg_created;	/* the segment is ours: unlink at exit */
	uint32_t		npeers;		/* entries allocated in peers */
	int			ctl_fd;		/* control socket, -1 before */
	ev_io			ctl_w;
	ev_timer		ctl_retry_w;	/* accepting paused: out of fds */
	int			ctl_starved;	/* logged that episode already */
	int			ctl_refusing;	/* logged a refused client already */
	struct client		*clients;
	uint32_t		nclients;
	int			exit_code;
	struct config_guest	**waiting;	/* added by a reload, no entry free yet */
	uint32_t		nwaiting;
	ev_timer		pool_w;		/* the variable pool's sweeper */
	ev_timer		starved_w;	/* a backlog waits for a variable slot */
	uint32_t		pool_stuck;	/* slots held too long at the last sweep */
	uint8_t			pool_full_logged[HP_VAR_MAX_CLASSES];
	struct hp_var_tally	*pool_held;	/* by owner at the last sweep */
	struct relay		*relays;	/* streams between guests (relay.c) */
};

/* pool.c: the shared variable pool's host side. */
void		pool_start(struct hub *h);
void		pool_stop(struct hub *h);
/* The sweeper's period changed (reload). */
void		pool_retime(struct hub *h);
void		pool_grow_requested(struct hub *h);
void		pool_reclaim(struct hub *h, uint32_t peer_id);
/* Whether p, holding slots and bytes more, is over its share of the
 * shared pool (pool_quota): then it is faulted (host_fault) and 1. What
 * it holds is what the last sweep counted as its (taken, sent, or handed
 * to it and not freed: in its rings too), plus what waits in backlogs on
 * its behalf (host_forward). */
int		pool_over_quota(struct hub *h, struct peer *p, uint32_t slots,
				uint64_t bytes);
/* What p holds of the shared pool by that count, and its quota. */
struct pool_use {
	uint32_t	slots, max_slots;
	uint64_t	bytes, max_bytes;
};
void		pool_usage(struct hub *h, struct peer *p, struct pool_use *u);
/* p's count from the last sweep forgotten (a new instance). */
void		pool_forget(struct hub *h, struct peer *p);
int		pool_live(void *h, uint32_t owner);
/* validate() twice: each problem both passes found goes to report, its
 * class is marked for the sweeper to rebuild; returns how many. */
uint32_t	pool_validate(struct hub *h, void (*report)(void *arg, const char *problem),
			      void *arg);

/* reload.c: re-read the config; 0 applied, -1 nothing changed. What it
 * did and refused goes to msgs, one line each. A guest added while every
 * entry is taken waits and starts as soon as one is free. */
int		reload_config(struct hub *h, FILE *msgs);
void		reload_start_waiting(struct hub *h);
void		reload_free(struct hub *h);

/* supervise.c: the lifecycle's actions: starting, death, recovery,
 * restart. Each call is an event of lifecycle.h. */
void		supervise_init(struct hub *h, struct peer *p);
void		supervise_start(struct hub *h, struct peer *p);
void		supervise_stop(struct hub *h, struct peer *p);
void		supervise_restart(struct hub *h, struct peer *p);
/* Every tick: guests that attached without ringing. */
void		supervise_tick(struct hub *h);
/* Acts on the faults the data path reported (host_fault): DEATH_VIOLATION
 * gets a Goodbye, then SIGKILL after goodbye_grace; DEATH_HUNG SIGKILL now. */
void		supervise_faults(struct hub *h);
void		supervise_stop_all(struct hub *h);
int		supervise_all_down(struct hub *h);
/* SIGKILL to every guest's process group (hubd exiting). */
void		supervise_kill_groups(struct hub *h);

/* spawn.c: forks and execs p's guest with its ticket. 0 with p->pid,
 * p->pidfd and p->bell set; or -errno with why in p->kill_detail, nothing
 * left behind and its entry Empty again. */
int		spawn_guest(struct hub *h, struct peer *p);

/* Guest entry by peer id, NULL for 0 or out of range. */
static inline struct peer *
hub_peer(struct hub *h, uint32_t id)
{
	return id == 0 || id > h->conf.params.max_guests ? NULL : &h->peers[id - 1];
}

/* host.c: the data path's rounds, sending, liveness, attach and detach */
int		host_init(struct hub *h);
void		host_free(struct hub *h);
int		host_attach(struct hub *h, struct peer *p);
void		host_goodbye(struct hub *h, struct peer *p, const char *reason);
void		host_detach(struct hub *h, struct peer *p);
int		host_poll(struct hub *h);
int		host_sleep_prepare(struct hub *h);
void		host_wake(struct hub *h);
/* More of the hub's processes awake than hubd's CPUs (hp_endpoint_crowded). */
int		host_crowded(const struct hub *h);
void		host_check(struct hub *h, uint64_t now);
/* p broke rule (DEATH_VIOLATION) or stopped reading (DEATH_HUNG): it is
 * served no more, and the supervisor ends it (supervise_faults). The data
 * path never calls the supervisor itself. */
void		host_fault(struct hub *h, struct peer *p, int reason, const char *rule);
/* Whether p is attached and has broken no rule: the data path serves it. */
static inline int
host_serving(const struct peer *p)
{
	return p->state == PEER_UP && p->fault == NULL;
}
/* Sends to a guest, or queues in order behind what already waits. */
void		host_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
			  uint64_t method_id, const uint8_t *payload, uint32_t len);
int		host_try_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
			      uint64_t method_id, const uint8_t *payload, uint32_t len);
int		host_reserve(struct hub *h, struct peer *p, uint32_t len,
			     struct hp_outbuf *ob);
/* Whether p's backlog is long enough to pause those who call it. */
int		host_backlogged(const struct peer *p);
/* A received message's payload on to q as type/id/method_id: its
 * variable slot handed on without copying when q uses the pool, else
 * copied (host_send). -EMSGSIZE, nothing sent, when q cannot take it.
 * While its slot waits in q's backlog it counts against the pool quota
 * of the guest charged (a peer id, 0: none): q for an answer or an item,
 * the caller for a request. */
int		host_forward(struct hub *h, struct peer *q, struct hp_msg_in *m,
		    uint8_t type, uint32_t id, uint64_t method_id, uint32_t charged);
/* p's counters over all its instances, the live one's included. */
void		host_stats(const struct peer *p, struct peer_stats *s);

/* methods.c: the method registry */
void		methods_init(struct hub *h);
void		methods_free(struct hub *h);
/* Registers name for owner's instance epoch (owner 0: the host, service
 * its row in services.c); -errno with *why: -EPERM a guest's name that is
 * not one of its own (config_guest_covers), -EEXIST taken, ... */
int		methods_add(struct hub *h, const char *name, const char *signature,
			    uint32_t owner, uint32_t epoch, uint16_t service,
			    const char **why);
struct method	*methods_by_id(struct hub *h, uint64_t id);
const struct method *methods_find(struct hub *h, const char *name);
/* Whether m can be called now: its owner is the instance that registered
 * it, up and served. */
int		methods_live(struct hub *h, const struct method *m);
/* Why a method that is not live cannot be called now, written into buf. */
const char	*methods_unavailable(struct hub *h, const struct method *m,
				     char *buf, size_t len);
/* p is down for good (removed from the config): its methods go. */
void		methods_forget(struct hub *h, struct peer *p);

/* services.c: the built-in hub.* services */
int		services_init(struct hub *h);
void		services_call(struct hub *h, struct peer *p, const struct method *m,
			      const struct origin *o, const uint8_t *args, size_t len);
/* hub.source: sends what credit and room allow; how many messages. */
int		services_source_pump(struct hub *h, struct peer *p);
/* Whether a hub.source stream of p could send now. */
int		services_source_ready(struct hub *h, struct peer *p);

/* route.c: calls to their targets, answers to their callers */
void		route_init(struct peer *p);
void		route_free(struct peer *p);
void		route_request(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		route_response(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		route_cancel(struct hub *h, struct peer *p, uint32_t req_id);
/* Answers with an error the host makes itself, explained in metadata. */
void		route_answer_error(struct hub *h, const struct origin *o, uint32_t code,
				   const char *why);
void		route_answer_ok(struct hub *h, const struct origin *o,
				const uint8_t *value, size_t len);
/* Fails every call that involves p (r[shm.crash.recovery] 2). */
void		route_detach(struct hub *h, struct peer *p);
/* A complete Response payload to whoever waits for it (copied). */
void		route_answer(struct hub *h, const struct origin *o,
			     const uint8_t *payload, size_t len);
/* A Request to guest q on behalf of o, payload copied; the host's request
 * id goes to *idp. 0 or -ENOMEM. */
int		route_call_guest(struct hub *h, struct peer *q, uint64_t method_id,
				 const uint8_t *payload, uint32_t len,
				 const struct origin *o, uint32_t *idp);

/* streams.c: the channels the host receives on */
/* Whom hubd opens a channel in a guest's table for (hchan.caller): a
 * calling guest, by its peer id, or control clients, one caller per user. */
#define CALLER_CLIENT	(1ull << 32)	/* | the client's uid */
/* Whether caller holds channels_per_caller of p's channels already:
 * one caller may not take every id that others' streams need. */
int		streams_caller_full(struct hub *h, struct peer *p, uint64_t caller);
/* Opens a channel of p for a client call's chan<T> argument: its id, or
 * -errno. */
int64_t		streams_open_client(struct hub *h, struct peer *p,
				    const struct origin *o, uint8_t item_type, uint64_t caller);
void		streams_unopen(struct peer *p, uint32_t id);
void		streams_data(struct hub *h, struct peer *p, struct hp_msg_in *m);
/* Data of len bytes on c from p: checked against what we granted (p's
 * violation if beyond) and counted. 0, or -1 once p was faulted. */
int		streams_take(struct hub *h, struct peer *p, struct hchan *c, uint32_t len);
/* Close (reset 0) or Reset of channel id by the guest. */
void		streams_end(struct hub *h, struct peer *p, uint32_t id, int reset);
/* The answer to request req_id came while the client stream it carries,
 * channel chan, is still open: the guest answered without closing it
 * (nothing sent, an error, or simply forgotten). The stream ends with the
 * answer. We receive, so we free the entry (r[shm.flow.channel-id-reuse]);
 * what the guest may still send on it is dropped (STALE_ENDED). */
void		streams_over(struct hub *h, struct peer *p, uint32_t req_id, uint32_t chan);
void		streams_consumed(struct hub *h, struct peer *p, struct ext_call *x,
				 uint32_t bytes);
void		streams_abandon(struct hub *h, struct peer *p, struct ext_call *x);
/* Every channel of p closed and forgotten (attach, detach). */
void		streams_reset_all(struct hub *h, struct peer *p);

/* relay.c: a guest's chan<T> argument to another guest's method. The
 * caller A passes a channel it opened to receive on (odd id a); hubd
 * opens one in the callee B's table (even id b), receives B's items on b
 * and sends them on to A on a, credit carried end to end. */
/* p calls q's method meth, whose signature has a chan<T>: checks p's
 * channel, opens q's, sends q the Request with the id rewritten; or
 * answers o with Err User itself. */
void		relay_call(struct hub *h, struct peer *p, struct peer *q,
			   const struct method *meth, struct hp_msg_in *m,
			   const struct hp_request *req, const struct origin *o);
/* Data, and Close or Reset, on a channel whose hchan has a relay. */
void		relay_data(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		relay_end(struct hub *h, struct peer *p, uint32_t id, int reset);
/* p answered request req_id (o: its origin; ok: the answer decodes):
 * the relay it carries ends. 1 when the answer is held until the
 * caller has every item and the end of its channel (relay.c sends it
 * then), 0 when route_response may pass it on now. */
int		relay_response(struct hub *h, struct peer *p, uint32_t req_id,
			       const struct origin *o, const struct hp_msg_in *m, int ok);
/* Sends what p's credit allows on the streams it receives from other
 * guests, passes its grants on; how many messages. */
int		relay_pump(struct hub *h, struct peer *p);
/* Whether relay_pump would do something for p now. */
int		relay_ready(struct hub *h, struct peer *p);
/* p is going (before route_detach): its streams end at the other guest
 * with a Reset; nothing of p's is left. */
void		relay_detach(struct hub *h, struct peer *p);
void		relay_free_all(struct hub *h);
/* Streams between guests now, and the bytes hubd holds for them. */
void		relay_stats(struct hub *h, uint32_t *open, uint64_t *queued);

/* Calls from outside the segment (control clients). */
struct ext_call {
	void		*ctx;
	void		(*on_item)(struct ext_call *c, uint8_t item_type,
				   const uint8_t *item, size_t len);
	void		(*on_done)(struct ext_call *c, int status,
				   const struct hp_response *r);
	/* router's */
	uint32_t	peer;
	uint32_t	req_id;
	uint32_t	chan;
	uint8_t		ret_type;
	uint64_t	caller;		/* CALLER_CLIENT | uid (commands.c) */
	char		why[320];	/* room for a refusal's text, signature and all */
};
struct ctl_arg;
/* Calls method with text arguments encoded by its signature. 0 when the
 * call is under way (on_done will run), or -errno with *why. A chan<T>
 * argument is a channel the host opens: each item goes to on_item, and
 * the guest gets its credit back only as the caller reports the items
 * taken (route_client_consumed): a slow caller slows the guest down. */
int		route_client_call(struct hub *h, struct ext_call *c, const char *method,
				  const struct ctl_arg *args, int nargs, const char **why);
/* The caller has taken bytes (item payload bytes, as on_item had them)
 * of the call's stream off the host's hands. */
void		route_client_consumed(struct hub *h, struct ext_call *c, uint32_t bytes);
/* The caller went away: on_done will not run; the guest is told
 * (Cancel) and its stream is drained until it ends. */
void		route_client_abandon(struct hub *h, struct ext_call *c);

#endif
