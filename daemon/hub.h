/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd's core types: the hub, its peers, their channels and calls, and
 * the hooks the parts register; each part's functions are in its own
 * header. */
#ifndef HUB_H
#define HUB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <ev.h>

#include "daemon/config.h"
#include "daemon/guestlog.h"
#include "daemon/hangstack.h"
#include "daemon/lifecycle.h"
#include "proto/builtin.h"
#include "proto/callmeta.h"
#include "proto/clock.h"
#include "proto/endpoint.h"
#include "proto/idtab.h"
#include "proto/layout.h"
#include "proto/msg.h"
#include "proto/segment.h"
#include "proto/sig.h"
#include "proto/varpool_host.h"

struct hub;
struct client;
struct peer;

/* The hooks by which the parts above the data path hear from it; each
 * part registers its own at start (hubd.c). */
typedef void	host_peer_fn(struct hub *h, struct peer *p);
typedef int	host_quota_fn(struct hub *h, struct peer *p, uint32_t slots, uint64_t bytes);
#define HOST_HOOKS_MAX	12
/* A handler of one message type (dispatch.c's table). */
typedef void	dispatch_fn(struct hub *h, struct peer *p, struct hp_msg_in *m);
/* A work source: pump sends what it can for p (how many messages), ready
 * says whether pump would do something now. */
typedef int	dispatch_work_fn(struct hub *h, struct peer *p);
#define DISPATCH_TYPES		(HP_MSG_LANE + 1)
#define DISPATCH_SOURCES_MAX	4

/* The supervisor's states, events and decisions: lifecycle.h. The death
 * tally (tally.c) shown by hubctl peers keeps the last TALLY_MAX deaths
 * with their wall-clock time; the count against max_deaths is
 * lifecycle.h's, on CLOCK_MONOTONIC. */
#define TALLY_MAX	8
#define DEATH_DETAIL_MAX 256	/* "exec /a/long/path: strerror", a rule, ... */

/* The calls a guest was serving when it died, by method: the first
 * DEATH_SERVING_MAX methods by name, all of them in the count. */
#define DEATH_SERVING_MAX 4

struct death {
	uint64_t	when_ns;	/* CLOCK_REALTIME, for people */
	int		reason;		/* DEATH_* */
	int		status;		/* exit status or signal; errno if spawn failed */
	int		sig;		/* the signal that ended it, 0: it exited */
	char		detail[DEATH_DETAIL_MAX];	/* the rule broken, ... */
	uint32_t	in_flight;	/* calls routed to it, unanswered */
	uint32_t	nserving;	/* methods in serving[] */
	struct {
		char		method[64];
		uint32_t	calls;
	}		serving[DEATH_SERVING_MAX];
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
struct upload;
struct lane;
struct topic;
struct lane_record;
struct lane_ban;
struct lane_ends;
struct manual;
struct monitor;

struct origin {
	enum origin_kind kind;
	uint32_t	peer;		/* ORIGIN_PEER: caller and its ... */
	uint32_t	epoch;		/* ... instance */
	uint32_t	req_id;		/* its request id */
	struct ext_call	*ext;		/* ORIGIN_CLIENT */
	uint32_t	chan;		/* a client call's stream: its channel id */
	uint64_t	watch;		/* a monitor sees the call: its entry
					 * (monitor.c), 0: none; 64 bits, so
					 * an id is never handed out twice */
	struct hp_callmeta meta;	/* the call's deadline and trace, as
					 * it came (hubctl calls) */
};

/* A call the host made to a guest, awaiting its Response (answer.c). */
struct pending {
	uint64_t	id;		/* host->guest request id (idtab key) */
	struct origin	o;
	uint64_t	method_id;	/* what it calls: hubctl calls, deaths */
	uint64_t	since_ns;	/* CLOCK_MONOTONIC, sent then */
	uint64_t	client;		/* a control client's call: CALLER_CLIENT |
					 * its uid, kept once the client went (the
					 * guest still answers it: answer_client_calls) */
	uint32_t	from;		/* its caller's counting slot (fair.c) */
	uint8_t		streams;	/* it carries a stream of its caller's */
};

/* Where one of a guest's calls waits: its callee's pending entry. So a
 * Cancel finds its call at once, not by a walk of every guest's table a
 * guest could make hubd do at ring speed. */
struct call_out {
	uint64_t	key;		/* the caller's request id + 1 (idtab key) */
	uint32_t	callee;		/* peer id */
	uint32_t	pend_id;	/* its pending entry's id there */
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
	uint32_t	var_off;	/* where in it the payload starts */
	struct zone	*zone;		/* the slot's pool: the target's, or the
					 * sender's, to copy from once there is room */
	uint32_t	charged;	/* peer id whose pool quota it counts against */
	uint8_t		for_charged;	/* charged is its receiver: an answer, an item */
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
	uint32_t	received;	/* bytes received in all */
	uint32_t	granted;	/* what we granted, kept locally */
	uint32_t	unreported;	/* consumed, not yet granted back */
	uint32_t	held;		/* a client stream: items its client has not taken */
	uint8_t		stale;		/* a client stream we ended: STALE_* */
	uint8_t		stopped;	/* its reader went: Reset sent, no more credit */
	uint64_t	caller;		/* whom hubd opened it for: CALLER_* */
	uint64_t	checksum;	/* hub.sink, hub.source: the stream hash (proto/builtin.h) */
	uint64_t	bytes;
	uint64_t	to_send;	/* hub.source: bytes still to send */
	uint32_t	sent_total;	/* hub.source: r[shm.flow.remaining-credit] */
	struct origin	o;		/* where items and the end go */
	struct relay	*relay;		/* one end of a stream between guests (relay.c) */
	struct upload	*upload;	/* one end of an rx<T> stream (upload.c) */
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
	/* over lanes, in the figures the guests publish (lanes.c): counted
	 * in calls_* and bytes_* too */
	uint64_t	lane_calls_in;
	uint64_t	lane_calls_out;
	uint64_t	lane_violations;	/* lanes closed because it said the
						 * other broke a rule, or the other
						 * said it did */
};

/* The counters hubctl stats shows per guest and in all (cmd_hub.c). */
#define HUB_TOTALS	14

/* A shared pool and the guests in it ([guest] zone = NAME; by default a
 * guest's own): a sealed memfd of its own that only its members map.
 * Within a zone payloads are handed on without copying; across zones
 * hubd copies (host_forward). */
struct zone {
	struct zone		*next;
	char			name[CONFIG_GUEST_NAME_MAX + 1];
	uint32_t		members;	/* configured guests that joined */
	uint32_t		backlogged;	/* its slots waiting in hubd's backlogs:
						 * it stays until they are gone */
	struct hp_varpool	var;
	uint8_t			*base;		/* its region and first extents */
	uint64_t		size;
	int			fd;
	struct hp_var_tally	*held;		/* by owner at the last sweep */
	uint32_t		stuck;		/* slots held too long then */
	uint8_t			full_logged[HP_VAR_MAX_CLASSES];
	/* per class: its slots taken (all guests' counts) at the sweep that
	 * last saw them change, and when; whether its memory went back since
	 * (pool.c, [pool] release_after) */
	struct {
		uint64_t	allocs, since_ns;
		uint8_t		released;
	}			quiet[HP_VAR_MAX_CLASSES];
	uint64_t		released;	/* bytes given back, in all */
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
	int			bells[2];	/* HP_FEAT_BELLS: the eventfd it rings
						 * us on, the pipe we ring it on
						 * (hp_bells_make), -1: none */
	struct manual		*manual;	/* start = manual: its ticket, while
						 * it waits (manual.c) */
	ev_io			pid_w;
	ev_io			bell_w;
	ev_io			bells_w;	/* on bells[0] */
	ev_timer		timer;		/* attach, backoff, stop or goodbye grace */
	int			timer_reason;	/* DEATH_* the timer's SIGKILL means, or -1 */
	const char		*timer_detail;	/* and why */
	uint32_t		epoch;
	/* its memory domain, one per instance: a sealed memfd only it and
	 * hubd map, made at spawn and dropped once it is gone */
	struct hp_segment	dom;
	struct zone		*zone;		/* its shared pool, NULL: none */
	struct hp_peer_view	view;
	struct hp_endpoint	ep;
	/* not read while held on a guest it called (route.c): by that
	 * guest's backlog (host.c), by its share of that guest's calls in
	 * flight (fair.c), or both (HOLD_*); since held_ns (coarse clock) */
	uint32_t		held_on;
	uint8_t			held_by;
	uint8_t			bl_holds;	/* callers may be held on its backlog */
	uint64_t		held_ns;
	uint32_t		hold_off;	/* held on this guest no more until it
						 * answers one of its calls: a hold
						 * there outlasted HOLD_MAX_NS */
	int			kill_reason;	/* DEATH_* when we ended it, else -1 */
	char			kill_detail[DEATH_DETAIL_MAX];
	const char		*fault;		/* a rule it broke, for the supervisor */
	int			fault_reason;	/* DEATH_VIOLATION or DEATH_HUNG */
	struct hp_idtab		pend;		/* struct pending by request id */
	struct hp_idtab		calls_out;	/* struct call_out: its calls other
						 * guests hold, by its request id */
	uint32_t		next_req;
	uint32_t		inbound;	/* its calls being routed */
	/* fair.c: its calls in flight by caller (slot 0: control clients
	 * and hubd, else the peer id), how many slots have any, the last
	 * two slots to have none left and since when (CLOCK_MONOTONIC) */
	uint32_t		*calls_from;
	uint32_t		ncallers;
	struct {
		uint32_t	slot;
		uint64_t	ns;
	}			left[2];
	uint32_t		streaming;	/* its calls with a stream, in flight */
	struct qmsg		*bl_head;
	struct qmsg		**bl_tail;
	uint32_t		bl_count;
	uint8_t			bl_starved;	/* its head waits for a variable slot */
	uint8_t			quota_wait;	/* ... that its quota has no room for */
	/* shared pool slots hubd holds in backlogs on its behalf (its
	 * answers and items, its requests to others), and their bytes */
	uint32_t		pool_charged_slots;
	uint64_t		pool_charged_bytes;
	uint32_t		pool_for_slots;	/* of those, its answers and items */
	uint64_t		pool_for_bytes;
	/* what waits in hubd's memory on its behalf, copied out of slots
	 * of a class down to its spare (host_forward): bytes */
	uint64_t		mem_charged;
	/* slots hubd put into its shared pool since its zone's last sweep
	 * (which counts those it still holds), and their bytes */
	uint32_t		copied_slots;
	uint64_t		copied_bytes;
	uint8_t			*tx_cls;	/* ep.tx_cls: what it has not read
						 * yet, for its quota (pool.c) */
	char			fault_text[128];	/* a fault's words of ours */
	struct hchan		*chans;		/* by channel id, this guest's own
						 * (r[shm.id.channel-scope]) */
	uint32_t		chan_cursor;
	uint32_t		sources;	/* hub.source streams under way */
	uint32_t		relays;		/* streams from other guests it receives (relay.c) */
	uint32_t		uploads;	/* uploads it receives (upload.c) */
	uint32_t		nmethods;	/* registered by this instance */
	uint32_t		methods_held;	/* entries its instances left, these too */
	char			note[HP_DESCRIBE_MAX + 1];	/* hub.describe "": this
						 * instance's, cleared at detach */
	uint32_t		nlanes;		/* lanes open (lanes.c) */
	int			said_state;	/* hub.guests: the word last told (topics.c) */
	uint64_t		start_ns;	/* CLOCK_MONOTONIC */
	uint64_t		up_ns;
	uint64_t		heartbeat_ns;	/* this instance's interval, 0: none */
	uint32_t		restarts;
	struct death		tally[TALLY_MAX];
	uint32_t		ndeaths;	/* ever */
	struct guestlog		out;		/* its stdout and stderr */
	struct hangstack	stack;		/* taking its stack, hung */
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
	char		where[HP_DESCRIBE_MAX + 1];	/* hub.describe: its owner's
					 * instance's words, cleared at detach */
};

struct hub {
	struct ev_loop		*loop;
	struct hub_conf		conf;
	uint32_t		features;	/* HP_FEAT_* every domain offers */
	struct zone		*zones;
	uint32_t		awake;		/* the hub's processes awake, as last
						 * published to the guests (host.c) */
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
	ev_signal		sig_w[6];	/* one per signal main() handles */
	ev_timer		tick_w;		/* heartbeats, epochs, stalls */
	ev_timer		watchdog_w;	/* systemd's WatchdogSec */
	uint32_t		status_up;	/* guests up at the last STATUS= */
	int			announced;	/* sleep announced to the guests */
	int			woken;		/* slept, and has not stepped aside
						 * since (idle_cb) */
	int			served;		/* did work since it woke */
	struct peer		*rang;		/* the first guest whose bell rang
						 * since sleep was announced:
						 * served before the others, its
						 * bell drained on the next turn
						 * (bells_cb) */
	uint32_t		ncpus;		/* CPUs hubd may run on */
	uint32_t		poll_start;	/* dispatch_poll's first peer this round */
	uint64_t		polls;		/* dispatch_poll rounds: what a spin costs */
	uint64_t		sleeps;		/* times the loop announced sleep */
	/* hubctl stats' totals count since hubd started: the counters of
	 * guests whose entries were freed (host_retire) stay in them, and
	 * they never show less than they did (cmd_stats) */
	struct peer_stats	gone;
	uint64_t		gone_deaths;
	uint64_t		gone_restarts;
	uint64_t		totals[HUB_TOTALS];
	char			*lock_path;
	int			lock_held;	/* the lock is ours: unlink at exit */
	uint32_t		npeers;		/* entries allocated in peers */
	/* entries from this one on were never started (supervise_start):
	 * the data path's loops over the guests stop here, so that an
	 * unused max_guests costs a call after quiet nothing */
	uint32_t		peers_end;
	int			ctl_fd;		/* control socket, -1 before */
	ev_io			ctl_w;
	ev_timer		ctl_retry_w;	/* accepting paused: out of fds */
	int			ctl_starved;	/* logged that episode already */
	int			ctl_spare;	/* /dev/null, closed to take a client when no fd is left */
	int			ctl_refusing;	/* logged a refused client already */
	struct client		*clients;
	uint32_t		nclients;
	int			exit_code;
	struct config_guest	**waiting;	/* added by a reload, no entry free yet */
	uint32_t		nwaiting;
	int			uid_fd;		/* the uid locks of every hub (users.c) */
	uint32_t		*uid_locks;	/* the uids ours hold, locked in it */
	uint32_t		nuid_locks;
	ev_timer		pool_w;		/* the variable pool's sweeper */
	ev_timer		starved_w;	/* a backlog waits for a variable slot */
	struct relay		*relays;	/* streams between guests (relay.c) */
	struct upload		*uploads;	/* rx<T> streams (upload.c) */
	struct lane		*lanes;		/* open lanes (lanes.c) */
	struct topic		*topics;	/* topics.c */
	uint32_t		next_topic;
	uint32_t		next_sub;
	/* the counters passed 0 once: an id may be one still held, looked
	 * for from then on only (a scan of every topic, or subscription) */
	uint8_t			topic_ids_wrapped, sub_ids_wrapped;
	uint32_t		next_lane;
	uint64_t		lane_retry_ns;	/* no lane made before (one failed) */
	struct lane_record	*lane_records;	/* [LANES_HISTORY], a ring */
	uint32_t		nlane_records;	/* ever */
	struct lane_ends	*lanes_gone;	/* [LANES_GONE], a ring */
	uint32_t		nlanes_gone;	/* ever */
	struct lane_ban		*lane_bans;	/* [LANES_BANNED] */
	struct monitor		*monitors;	/* clients watching calls (monitor.c):
						 * NULL, and calls cost nothing more */
	struct hp_idtab		watched;	/* calls they see, under way */
	uint64_t		next_watch;
	struct {
		host_peer_fn	*attach[HOST_HOOKS_MAX];	/* host_on_attach */
		host_peer_fn	*detach[HOST_HOOKS_MAX];	/* host_on_detach */
		uint32_t	nattach, ndetach;
		host_quota_fn	*over_quota;	/* host_on_charge */
		host_quota_fn	*room;		/* host_on_charge */
		void		(*entry_freed)(struct hub *h);	/* supervise_on_free */
		host_peer_fn	*state_changed;	/* supervise: p->state moved (topics.c) */
		/* answer.c: a watched call's answer went (monitor.c) */
		void		(*answered)(struct hub *h, uint64_t watch,
					    const uint8_t *payload, size_t len);
	}			hooks;
	struct {
		dispatch_fn	*handler[DISPATCH_TYPES];	/* dispatch_on */
		struct {
			dispatch_work_fn *pump, *ready;
		}		source[DISPATCH_SOURCES_MAX];	/* dispatch_source */
		uint32_t	nsources;
	}			dispatch;
};

/* Calls from outside the segment (control clients). */
struct ext_call {
	void		*ctx;
	void		(*on_item)(struct ext_call *c, const uint8_t *item, size_t len);
	void		(*on_done)(struct ext_call *c, int status,
				   const struct hp_response *r);
	/* router's */
	uint32_t	peer;
	uint32_t	req_id;
	uint32_t	chan;
	struct hp_sig	sig;		/* the method's, as it was at the call */
	char		method[64];	/* its name, as struct method's */
	uint8_t		item;		/* the stream's item type: its node */
	uint64_t	caller;		/* CALLER_CLIENT | uid (cmd_call.c) */
	struct hp_callmeta meta;	/* the deadline and trace it asked for */
	char		why[768];	/* room for a refusal's text, signature and all */
	/* not a call but a subscription (hubctl listen): its end when the
	 * client goes (route_client_abandon) */
	void		(*on_abandon)(struct ext_call *c);
	/* an upload (rx<T>) the client sends: upload.c's, and its call when
	 * the client's next item may come */
	struct upload	*up;
	void		(*on_more)(struct ext_call *c);
};

/* The zone a pool of hubd's belongs to (every one is a zone's). */
static inline struct zone *
zone_of(struct hp_varpool *vp)
{
	return (struct zone *)(void *)((char *)vp - offsetof(struct zone, var));
}

/* Guest entry by peer id, NULL for 0 or out of range. */
static inline struct peer *
hub_peer(struct hub *h, uint32_t id)
{
	return id == 0 || id > h->conf.params.max_guests ? NULL : &h->peers[id - 1];
}

#endif
