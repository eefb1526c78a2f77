/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats: a guest that joins hubs on many hosts through NATS
 * (doc/nats.md). Exports: NATS requests for this hub's methods become
 * calls here, their answers the replies. Imports: methods other hubs
 * export are registered here under their names, and a call of one
 * becomes a NATS request. hubd and libguest never speak TCP: only this
 * guest does, through libnats.
 *
 * One thread (the loop, main.c) runs libguest and every table below;
 * libnats's threads only hand messages over (handoff.c). */
/* No file in nats/ is named nats.h, status.h or version.h: with -I.,
 * <nats/nats.h> would find it in place of libnats's. */
#ifndef NATS_HUBNATS_H
#define NATS_HUBNATS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <nats/nats.h>

#include "guest.h"
#include "proto/idtab.h"
#include "proto/sig.h"

#define BR_NAME_MAX	63	/* a hub's name on NATS; a method's, as hubd's */
#define BR_PATTERNS_MAX	64	/* export or import patterns */
#define BR_REMOTES_MAX	256	/* hubs heard of */
#define BR_METHODS_MAX	4096	/* methods one announcement lists */

struct br_conf {
	char		*servers[16];	/* nats:// or tls:// URLs */
	int		nservers;
	char		name[BR_NAME_MAX + 1];	/* this hub on NATS */
	char		subject[64];	/* every subject's first tokens */
	char		user[128], password[128], token[256];
	char		creds[4096], tls_ca[4096], tls_cert[4096], tls_key[4096];
	int		tls;
	uint32_t	announce_ms;
	uint32_t	calls_max;	/* in flight each way */
	char		*exports[BR_PATTERNS_MAX];
	int		nexports;
	int		queue;		/* share load with hubs exporting the same */
	char		*imports[BR_PATTERNS_MAX];
	int		nimports;
	char		prefix[32];	/* before an imported method's name here */
	char		from[BR_NAME_MAX + 1];	/* only from this hub ("" any) */
	uint32_t	timeout_ms;	/* an imported call's answer, at most */
	uint32_t	suspect_ms;	/* a hub unanswering this long is passed over */
};

/* Reads the file at path; 0, or -1 with the reason (file:line: ...) in
 * why. */
int	br_conf_load(struct br_conf *c, const char *path, char *why, size_t cap);
void	br_conf_free(struct br_conf *c);
/* Whether name is what pattern names: "*", "a.*" or a name. */
int	br_pattern_matches(const char *pattern, const char *name);

struct bridge;

/* Messages from libnats's threads, taken in order by the loop. */
struct br_handoff;
struct br_handoff *br_handoff_new(uint32_t cap);
void	br_handoff_free(struct br_handoff *q);
/* The fd that is readable while messages wait (an eventfd). */
int	br_handoff_fd(const struct br_handoff *q);
/* From a libnats thread: 0, or -1 when full (the caller keeps msg). */
int	br_handoff_put(struct br_handoff *q, natsMsg *msg);
/* From the loop: the next message (the caller destroys it), NULL if none. */
natsMsg	*br_handoff_take(struct br_handoff *q);

/* Hands fn the messages waiting on sub, a subscription the loop reads
 * itself (fn: 1 taken, 0 not its own: destroyed here). */
void	br_drain(natsSubscription *sub, struct bridge *b, int (*fn)(struct bridge *, natsMsg *));
/* Wakes the loop (from any thread). */
void	br_handoff_wake(struct br_handoff *q);

/* libnats on the loop (evloop.c). */
struct br_evloop;
struct pollfd;
struct br_evloop *br_evloop_new(struct br_handoff *wake);
void	br_evloop_free(struct br_evloop *e);
natsStatus br_evloop_use(struct br_evloop *e, natsOptions *o);
/* The connection's socket and what to poll it for (fd -1: none now). */
void	br_evloop_pollfd(struct br_evloop *e, struct pollfd *pfd);
/* Whether libnats has a socket on the loop now. */
int	br_evloop_attached(struct br_evloop *e);

/* A method this hub serves to others (export.c). */
struct br_export {
	char			name[BR_NAME_MAX + 1];
	char			sig[HP_SIG_MAX_LEN + 1];
	struct hp_sig		parsed;
	int			chan_arg;	/* br_chan_arg */
	natsSubscription	*sub;		/* NULL: not offered on NATS */
	uint32_t		seen;		/* the refresh that listed it */
};

/* A hub heard of, and what it exports (import.c). */
struct br_remote {
	char		name[BR_NAME_MAX + 1];
	uint64_t	seen_ns;	/* its last announcement, CLOCK_MONOTONIC */
	uint64_t	every_ns;	/* how often it announces */
	uint64_t	answer_ns;	/* its last answer (route.c) */
	uint64_t	suspect_ns;	/* since when it has a call unanswered
					 * too long, 0: it answers */
	uint64_t	probe_ns;	/* asked whether it runs, unanswered */
	int		solo;		/* queue = no there: called by name only
					 * by from = */
	int		silent;		/* suspect and silent: kept, passed
					 * over, until it announces again */
	uint32_t	nmethods;
	char		(*methods)[BR_NAME_MAX + 1];
};

/* A method brought in: registered here, served elsewhere. */
struct br_import {
	char		local[BR_NAME_MAX + 1];	/* its name here */
	char		remote[BR_NAME_MAX + 1];
	char		sig[HP_SIG_MAX_LEN + 1];
	struct hp_sig	parsed;
	int		chan_arg;		/* br_chan_arg */
	char		where[200];		/* as told to hubd (hub.describe) */
	int		registered;		/* on this hub now */
	int		refused;		/* hubd said no: not tried again */
	struct bridge	*b;
};

/* A call from NATS, made here (callin.c), in bridge.ecalls. */
struct ecall {
	uint64_t	id;		/* ours: the answer's callback finds it so */
	uint64_t	deadline_ns;
	uint64_t	forget_ns;	/* after a timeout: a late answer is dropped */
	uint32_t	call_id;	/* libguest's, for guest_cancel */
	uint32_t	timeout_ms;	/* the caller's: each stream item restarts it */
	int		answered;	/* the reply went (a timeout) */
	char		*reply;		/* the caller's reply subject */
};

/* A call of an imported method, waiting for NATS (callout.c), in
 * bridge.icalls. */
struct icall {
	uint64_t		id;		/* SEQ in the reply subject */
	uint64_t		deadline_ns;
	struct guest_call	*c;
	const struct br_import	*imp;
	uint32_t		timeout_ms;	/* told the callee */
	int			cancel_sent;
	int			judged;		/* route.c saw it unanswered */
	uint64_t		sent_ns;
	char			hub[BR_NAME_MAX + 1];	/* sent by name to it ("": the queue) */
	uint8_t			*args;		/* kept while sent by name: sent again
						 * to the queue if the hub is gone */
	size_t			len;
};

/* The caller waits this much longer than it tells the callee, so that the
 * callee's own "timeout" (which names where) comes first. */
#define BR_GRACE_NS	(500ull * 1000000)

struct estream;
struct istream;

struct bridge {
	struct br_conf		conf;
	struct guest		*g;
	natsConnection		*nc;		/* NULL until connected */
	/* the connector thread: connects, hands the connection over */
	pthread_t		connector;
	int			connecting;	/* the thread runs (the loop's word) */
	pthread_mutex_t		mu;
	natsConnection		*ready;		/* connected, for the loop to take */
	atomic_int		closed;		/* libnats gave the connection up */
	atomic_int		stopping;
	struct br_handoff	*q;
	struct br_evloop	*ev;
	atomic_int		connected;	/* as libnats last said (its threads) */
	char			inbox[128];	/* inbox.SEQ: replies; inbox.s.SEQ: a
						 * stream's items; inbox.c.ID: credit */
	natsSubscription	*sub_inbox;
	int64_t			max_payload;	/* the server's, bytes */
	uint64_t		now_ns;
	/* export.c, callin.c, estream.c */
	struct br_export	*exports;
	uint32_t		nexports, refresh, refreshing;
	natsSubscription	*sub_at, *sub_cancel, *sub_discover;
	struct hp_idtab		ecalls;		/* calls we make for NATS */
	uint64_t		next_ecall;
	struct estream		*estreams;	/* their channels, sent on over NATS */
	uint64_t		next_announce_ns, next_escan_ns;
	int			refresh_pending, refresh_failed;
	/* import.c, callout.c, istream.c */
	struct br_remote	remotes[BR_REMOTES_MAX];
	uint32_t		nremotes;
	struct br_import	**imports;
	uint32_t		nimports;
	natsSubscription	*sub_announce;
	struct hp_idtab		icalls;		/* calls waiting for NATS */
	struct istream		*istreams;	/* their channels, fed from NATS */
	uint32_t		next_seq;
	uint32_t		next_route;	/* route.c's round-robin */
	uint64_t		next_iscan_ns;
	/* counters, for the note hubctl shows */
	uint64_t		calls_in, calls_out, errors;
	uint64_t		late;		/* calls past their deadline, never made */
	uint64_t		next_describe_ns;
	int			shown_connected;	/* b->connected, as the note says */
	char			note[200];	/* as told to hubd */
};

/* chanarg.c: the index of sig's chan<T> argument, -1 none, -2 more
 * than one (only one crosses NATS) or an rx<T> (none does). */
int	br_chan_arg(const struct hp_sig *sig);
/* Where argument arg (a chan<T>) is in args: its offset, length and id;
 * 0 or -EBADMSG. */
int	br_chan_find(const struct hp_sig *sig, int arg, const uint8_t *args, size_t len,
		     size_t *off, size_t *n, uint64_t *chan);
/* args with the id at [off, off + n) replaced by chan (malloc'd, its
 * length in *out_len), or NULL. */
uint8_t	*br_chan_rewrite(const uint8_t *args, size_t len, size_t off, size_t n,
			 uint64_t chan, size_t *out_len);

/* Subjects (doc/nats.md): PREFIX.call.METHOD (any hub, a queue group),
 * PREFIX.at.HUB.METHOD (that hub), PREFIX.cancel, PREFIX.announce,
 * PREFIX.discover. */
#define BR_SUBJECT_MAX	256

/* Headers. */
#define BR_H_SIG	"Hub-Signature"	/* the caller's signature of the method */
#define BR_H_TIMEOUT	"Hub-Timeout-Ms"	/* how long the caller waits */
#define BR_H_FROM	"Hub-From"	/* the calling hub */
#define BR_H_DEADLINE	"Hub-Deadline"	/* when the caller gives up: Unix time, ms */
#define BR_H_TRACE	"traceparent"	/* the caller's W3C trace context */
#define BR_H_STATUS	"Hub-Status"	/* an answer's kind (below) */
#define BR_H_STREAM	"Hub-Stream"	/* where a chan<T> argument's items go */
#define BR_H_CREDIT	"Hub-Credit"	/* where the items' receiver says it took them */
#define BR_H_END	"Hub-End"	/* a stream's end: close or reset */

/* Deadlines, Cancels and refreshes are looked at this often. */
#define BR_SCAN_NS	(20ull * 1000000)

/* A receiver tells what it took at least this often (bytes). */
#define BR_ACK_BYTES	(16u * 1024)

/* An answer's Hub-Status, and the libguest status each stands for. */
const char	*br_status_word(int status);
int		br_status_of(const char *word);

/* Every subscription's callback, on a libnats thread: hands m over. */
void	br_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure);

/* Whether s[0..n) can stand in a NATS subject: with dots a method's name
 * as hubd registers them (hp_method_name_refused: A-Z a-z 0-9 _ . -,
 * dots between parts), without a hub's name: 1 to 63 bytes, no blank,
 * control, '*', '>' or dot. */
int	br_subject_part_ok(const char *s, size_t n, int dots);

uint64_t br_now_ns(void);
/* CLOCK_REALTIME in ms since 1970: deadlines between hosts. */
uint64_t br_wall_ms(void);
/* main.c: what is published so far written out, waiting at most ms (the
 * loop no longer runs: on the way out). */
void	br_write_out(struct bridge *b, int ms);
void	br_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* export.c */
void	br_export_start(struct bridge *b);
/* Subscribes on a new connection (b->nc); -1 when it cannot. */
int	br_export_attach(struct bridge *b);
/* Its subscriptions gone with the connection. */
void	br_export_detach(struct bridge *b);
void	br_export_drain(struct bridge *b);
void	br_export_tick(struct bridge *b);
/* A message on one of export's subjects: 1 taken (and destroyed), 0 not
 * export's. */
int	br_export_msg(struct bridge *b, natsMsg *m);
void	br_export_stop(struct bridge *b);

/* callin.c: a request from NATS for method, x the export it names (NULL
 * none), called here. */
void	br_callin_request(struct bridge *b, natsMsg *m, const char *method,
			  const struct br_export *x);
/* PREFIX.cancel: the caller gave up on the call it asked for on reply. */
void	br_callin_cancel(struct bridge *b, natsMsg *m);
/* The calls past their deadline answered "timeout", and cancelled. */
void	br_callin_scan(struct bridge *b);
void	br_callin_start(struct bridge *b);
/* Every call in flight answered "unreachable"; the streams freed. */
void	br_callin_stop(struct bridge *b);

/* estream.c: a chan<T> argument's channel for request m of x, opened
 * here and put in the arguments in place of the caller's (*args then
 * points to *copy, malloc'd, freed by the caller); NULL with the reason
 * in text. */
struct estream *br_estream_open(struct bridge *b, natsMsg *m, const struct br_export *x,
				const uint8_t **args, size_t *len, uint8_t **copy, char *text,
				size_t cap);
/* The call (bridge.ecalls) es belongs to. */
void	br_estream_call(struct estream *es, uint64_t ecall);
/* Closes es's channel; it is freed once ended. */
void	br_estream_close(struct bridge *b, struct estream *es);
/* inbox.c.ID: the caller's side took N bytes of items (their credit
 * goes back to the sender here), or said Hub-End: reset (its reader
 * went away: the sender is told to stop). */
void	br_estream_credit(struct bridge *b, natsMsg *m, const char *idtext);
void	br_estream_stop(struct bridge *b);

/* import.c */
void	br_import_start(struct bridge *b);
int	br_import_attach(struct bridge *b);
void	br_import_detach(struct bridge *b);
void	br_import_drain(struct bridge *b);
void	br_import_tick(struct bridge *b);
int	br_import_msg(struct bridge *b, natsMsg *m);
void	br_import_stop(struct bridge *b);
/* Tells hubd where each imported method is served now (hub.describe:
 * hubctl methods shows it), where that changed. */
void	br_import_describe(struct bridge *b);
/* What is imported, in a few words, for the bridge's note. */
void	br_import_summary(struct bridge *b, char *buf, size_t cap);

/* callout.c: a call of an imported method (ctx its br_import), on the
 * loop's thread: a NATS request. */
void	br_callout_call(struct guest_call *c, const uint8_t *args, size_t len, void *ctx);
/* A reply on inbox.SEQ: now, or (a stream still open) once the stream
 * has ended. 1 when m was kept. */
int	br_callout_reply(struct bridge *b, natsMsg *m, const char *seq);
/* The streams' items sent on, and the answers they held given. */
void	br_callout_pump(struct bridge *b);
/* The calls past their deadline answered, the Cancels sent on. */
void	br_callout_scan(struct bridge *b);
void	br_callout_start(struct bridge *b);
/* Every stream ended, every call in flight answered. */
void	br_callout_stop(struct bridge *b);

/* route.c: the hub a call of imp goes to by name, NULL: the queue
 * group (none passed over, or from =). */
const char	*br_route_pick(struct bridge *b, const struct br_import *imp);
/* ic has waited longer than [import] suspect: its hub (or the hubs that
 * may have it) passed over until they answer. */
void	br_route_unanswered(struct bridge *b, const struct icall *ic);
/* An answer from hub came. */
void	br_route_answered(struct bridge *b, const char *hub);
/* Hubs asked whether they run and silent past [import] suspect made
 * suspects; suspects asked again. */
void	br_route_tick(struct bridge *b);
/* inbox.p.HUB: hub's answer to whether it runs (NATS's "no responders":
 * it is gone, and forgotten if silent). */
void	br_route_probed(struct bridge *b, const char *hub, natsMsg *m);
/* r has not announced for three intervals: kept, passed over, and asked
 * whether it runs (frozen: kept; gone: forgotten). */
void	br_route_silent(struct bridge *b, struct br_remote *r);
/* import.c: r forgotten (r then holds another hub, or is past the end). */
void	br_remote_forget(struct bridge *b, struct br_remote *r);

/* istream.c: a call out's chan<T> argument, fed from NATS. */
struct istream *br_istream_new(void);
/* st in the list, for call id and the caller's channel chan. */
void	br_istream_add(struct bridge *b, struct istream *st, uint64_t id, uint32_t chan);
/* Ends the caller's channel (once), dropping what was not sent. */
void	br_istream_end(struct bridge *b, struct istream *st, int reset);
void	br_istream_free(struct bridge *b, struct istream *st);
/* Call id's stream, if any, reset and freed. */
void	br_istream_drop(struct bridge *b, uint64_t id);
/* inbox.s.SEQ: an item, or the end, of a call's stream. 1 when m was
 * kept (an item, queued). */
int	br_istream_item(struct bridge *b, natsMsg *m, const char *seq);
/* Reply m to call id held until its stream has ended: 1 held; 0 not
 * (no stream, or it ended here: no responders, a second answer). */
int	br_istream_hold(struct bridge *b, uint64_t id, natsMsg *m);
/* Sends what each stream holds on, as far as the caller's credit goes;
 * acks what was taken; ends a channel whose sender ended it once its
 * items are out; then hands answer the reply it held, the stream gone. */
void	br_istream_pump(struct bridge *b, void (*answer)(struct bridge *, natsMsg *, uint64_t));
/* Every stream ended and freed. */
void	br_istream_stop(struct bridge *b);

#endif
