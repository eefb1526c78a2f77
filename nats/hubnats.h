/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats: a guest that joins hubs on many hosts through NATS
 * (doc/nats.md). Exports: NATS requests for this hub's methods become
 * calls here, their answers the replies. Imports: methods other hubs
 * export are registered here under their names, and a call of one
 * becomes a NATS request. Topics cross the same way (topics.c). hubd
 * and libguest never speak TCP: only this guest does, through libnats.
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
#define BR_TRUST_MAX	BR_REMOTES_MAX	/* [trust] entries */
/* This hub's key when [nats] key is not given (make install sets its
 * own, under its prefix). */
#ifndef BR_KEY_DEFAULT
#define BR_KEY_DEFAULT	"/var/lib/hub/nats.key"
#endif
#define BR_PK_LEN	32	/* an Ed25519 public key, bytes */
#define BR_PK_TEXT	45	/* ... in base64, and a NUL */
#define BR_MAC_KEY_LEN	32	/* a key two hubs share */
#define BR_MAC_LEN	16	/* an answer's MAC; a cancel's token */

/* A hub whose announcements are heard: [trust] NAME = PUBLIC KEY. */
struct br_trusted {
	char		name[BR_NAME_MAX + 1];
	uint8_t		pk[BR_PK_LEN];
};

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
	uint32_t	calls_per_hub;	/* calls from NATS in flight per calling hub */
	char		key[4096];	/* this hub's signing key's file */
	char		inbox_prefix[64];	/* our inbox: PREFIX.random */
	struct br_trusted trust[BR_TRUST_MAX];
	int		ntrust;
	char		*exports[BR_PATTERNS_MAX];
	int		nexports;
	int		queue;		/* share load with hubs exporting the same */
	char		*imports[BR_PATTERNS_MAX];
	int		nimports;
	char		prefix[32];	/* before an imported method's name here */
	char		from[BR_NAME_MAX + 1];	/* only from this hub ("" any) */
	uint32_t	timeout_ms;	/* an imported call's answer, at most */
	char		*etopics[BR_PATTERNS_MAX];	/* [export] topics */
	int		netopics;
	char		*itopics[BR_PATTERNS_MAX];	/* [import] topics */
	int		nitopics;
	uint32_t	suspect_ms;	/* a hub unanswering this long is passed over */
};

/* Reads the file at path; 0, or -1 with the reason (file:line: ...) in
 * why. */
int	br_conf_load(struct br_conf *c, const char *path, char *why, size_t cap);
void	br_conf_free(struct br_conf *c);
/* The host's name as a hub's name ([nats] name's default). */
void	br_default_name(char *name, size_t cap);
/* A key in hex (2 * cap digits) or base64 into out; 0 with its length
 * in *n, or -1. */
int	br_key_decode(const char *text, uint8_t *out, size_t cap, size_t *n);
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

/* A message waiting on sub (NULL: none) into *m: 1, else 0. */
int	br_next_msg(natsSubscription *sub, natsMsg **m);
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
/* What is published so far written out now, waiting for the socket at
 * most ms (0: one write, what the socket takes; more on the way out,
 * when the loop no longer runs). */
struct bridge;
void	br_write_out(struct bridge *b, int ms);

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
	int		gone;		/* silent, and nobody listens by its
					 * name: to be forgotten */
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
	int		has_key, has_commit;
	int		batched;	/* came in a batch: its answer may go in one */
	struct br_caller *caller;	/* its calling hub's entry, NULL none */
	char		*reply;		/* the caller's reply subject: its cancel names it */
	char		*to;		/* where the answer goes: Hub-Answer-To, or reply */
	/* service.c: for $SRV.STATS and hubctl calls */
	uint64_t	start_ns;	/* the request came */
	uint32_t	ep;		/* its endpoint's figures */
	char		from[BR_NAME_MAX + 1];	/* Hub-From, checked ("?") */
	uint8_t		key[BR_MAC_KEY_LEN];	/* its answer's MAC's (trust.c) */
	uint8_t		commit[BR_MAC_LEN];	/* what its cancel's token hashes to */
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
	uint64_t		sent_ns;	/* tally.c: its latency; route.c */
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
struct br_topics;
struct br_service;
struct br_tally;
struct br_trust;
struct br_gather;

/* A hub of [trust], or this one (trust.c). */
struct br_peer {
	char		name[BR_NAME_MAX + 1];
	uint8_t		pk[BR_PK_LEN];
	uint8_t		key[BR_MAC_KEY_LEN];	/* shared with it: its answers' MACs */
	int		have_key;
	uint64_t	last_seq;	/* of its last announcement heard */
	uint32_t	nbrought;	/* methods it brought in here (import.c) */
};

/* A calling hub's calls from NATS in flight (callin.c). */
/* A hub with calls from NATS in flight here (callin.c): an entry while
 * it has any, so that at most calls_max are ever held. */
struct br_caller {
	struct br_caller	*next;	/* in its bucket */
	uint32_t		n;	/* its calls in flight */
	char			name[BR_NAME_MAX + 1];
};

#define BR_CALLER_BUCKETS	256
#define BR_CALLER_KEY_LEN	16	/* crypto_shorthash_KEYBYTES */

#define BR_REAP_MAX	1024	/* messages destroyed together (reap.c) */

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
	natsSubscription	*sub_inbox, *sub_replies;	/* inbox.*, inbox.n.> */
	natsSubscription	*sub_probes;			/* inbox.p.> */
	natsSubscription	*sub_items, *sub_credit;	/* inbox.s.>, inbox.c.> */
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
	int			behind;		/* messages from NATS still wait after a
						 * pass's share was taken */
	/* trust.c */
	struct br_trust		*trust;
	/* calling hubs, in flight: hashed with a key of this run's, so that
	 * names chosen to collide do not make one long chain */
	struct br_caller	*callers[BR_CALLER_BUCKETS];
	uint8_t			caller_key[BR_CALLER_KEY_LEN];
	/* reap.c: messages done with, not destroyed yet */
	natsMsg			*reap[BR_REAP_MAX];
	uint32_t		nreap, reap_bytes;
	/* counters, for the note hubctl shows */
	uint64_t		calls_in, calls_out, errors;
	uint64_t		refused_unsigned, refused_unknown, refused_badsig, refused_replay;
	uint64_t		refused_malformed;	/* announcements that are no JSON of ours */
	uint64_t		refused_answers, refused_cancels;
	uint64_t		late;		/* calls past their deadline, never made */
	uint64_t		next_describe_ns;
	int			shown_connected;	/* b->connected, as the note says */
	char			note[200];	/* as told to hubd */
	struct br_topics	*topics;	/* topics.c, NULL: none configured */
	struct br_service	*service;	/* service.c: $SRV */
	struct br_tally		*tally;		/* tally.c: what hubctl shows */
	struct br_gather	*gather;	/* gather.c: this pass's batches */
	int			in_batch;	/* callin.c's request came in one */
	uint64_t		refused_batches;	/* malformed, dropped whole */
};

/* reap.c: m (NULL: none) destroyed later, with others; in place of
 * natsMsg_Destroy on the loop. */
void	br_msg_done(struct bridge *b, natsMsg *m);
/* Destroys them now: the loop is idle, or the bridge ends. */
void	br_msg_reap(struct bridge *b);

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
#define BR_H_AUTH	"Hub-Auth"	/* an announcement's Ed25519 signature */
#define BR_H_KEY	"Hub-Key"	/* the calling hub's public key */
#define BR_H_MAC	"Hub-Mac"	/* an answer's MAC, by the key both share */
#define BR_H_CANCEL	"Hub-Cancel"	/* the hash of the token that cancels a call */
#define BR_H_BATCH	"Hub-Batch"	/* a batch's entries (batch.c) */
#define BR_H_REPLY	"Hub-Reply"	/* a batch entry's reply subject */
#define BR_H_ANSWER	"Hub-Answer-To"	/* where a request's answer goes (not its
					 * reply subject: NATS's "no responders") */
#define BR_H_PACKS	"Hub-Stream-Packs"	/* "1": the caller reads packed items */
#define BR_H_PACK	"Hub-Pack"	/* a stream message's packed items */
#define BR_H_AHEAD	"Hub-Ahead"	/* credit a stream's sender gives before it is told */

/* Deadlines, Cancels and refreshes are looked at this often. */
#define BR_SCAN_NS	(20ull * 1000000)

/* A receiver tells what it took at least this often (bytes). */
#define BR_ACK_BYTES	(16u * 1024)
/* A stream across NATS may have this much more in flight than its
 * channel's window (estream.c): a round trip's worth. */
#define BR_STREAM_AHEAD	(1u << 20)
/* Items in one pack (a stream message of Hub-Pack: N). */
#define BR_PACK_MAX	4096u

/* What a message's body may take: the server's max_payload less room
 * for the headers. */
size_t	br_payload_budget(const struct bridge *b);
/* batch.c: unsigned 32-bit little-endian numbers of the batch and pack
 * wires. */
void	br_put32(uint8_t *p, uint32_t v);
uint32_t br_get32(const uint8_t *p);

/* An answer's Hub-Status, and the libguest status each stands for. */
const char	*br_status_word(int status);
int		br_status_of(const char *word);

/* Every subscription's callback, on a libnats thread: hands m over. */
void	br_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure);

/* Whether s[0..n) can stand in a NATS subject: with dots a method's name
 * as hubd registers them (hp_method_name_refused: A-Z a-z 0-9 _ . -,
 * dots between parts), without a hub's name as [nats] name takes it: 1
 * to 63 letters, digits, '-' or '_' (br_name_char). */
int	br_subject_part_ok(const char *s, size_t n, int dots);
/* Whether c may be in a hub's name: an ASCII letter or digit, '-', '_'. */
int	br_name_char(int c);

uint64_t br_now_ns(void);
/* A (name, sig) list from hubd (hub.methods, hub.advertised) for one
 * pattern of a refresh: each valid pair handed to fn, the refresh's
 * count of answers waited for taken down, a failure noted (and logged as
 * svc's). */
void	br_refresh_answer(struct bridge *b, const char *svc, int status, const uint8_t *res,
			  size_t len, void (*fn)(struct bridge *, const char *, const char *));
/* CLOCK_REALTIME in ms since 1970: deadlines between hosts. */
uint64_t br_wall_ms(void);
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
/* End of a loop pass: each stream's packed items sent. */
void	br_estream_flush(struct bridge *b);
void	br_estream_stop(struct bridge *b);

/* trust.c: hub-nats --keygen and --pubkey (exit statuses). */
int	br_keygen(const char *path, const char *name);
int	br_pubkey(const char *path, const char *name);
/* This hub's key loaded, [trust] taken; 0, or -1 with why. */
int	br_trust_start(struct bridge *b, char *why, size_t cap);
void	br_trust_stop(struct bridge *b);
/* The hub of [trust] (or this one) named name, NULL none. */
struct br_peer *br_trust_peer(struct bridge *b, const char *name);
/* An announcement's seq: the clock's ms, never the same twice. */
uint64_t br_trust_next_seq(struct bridge *b);
/* m's signature header, over body. */
int	br_trust_sign(struct bridge *b, natsMsg *m, const char *body, size_t len);
/* Announcement m of hub, with seq: its peer when its key signed it and
 * seq is newer and near our clock; else NULL, counted and logged. */
struct br_peer *br_trust_announcement(struct bridge *b, natsMsg *m, const char *hub, int64_t seq);
/* This hub's public key (base64), for a request's Hub-Key. */
const char *br_trust_pk_text(struct bridge *b);
/* Request m's caller's key shared with us (Hub-Key): 0, or -1 none. */
int	br_trust_caller_key(struct bridge *b, natsMsg *m, uint8_t key[BR_MAC_KEY_LEN]);
/* The MAC (Hub-Mac) of an answer on reply, by key, in hex. */
void	br_trust_mac_text(const uint8_t key[BR_MAC_KEY_LEN], const char *reply, const char *word,
			  const void *data, size_t len, char hex[BR_MAC_LEN * 2 + 1]);
/* Whether answer m was made by the hub of [trust] it names; if not
 * counted and logged. */
int	br_trust_answer_ok(struct bridge *b, natsMsg *m);
/* For a request with reply subject reply: the commitment (Hub-Cancel),
 * and the token its cancel carries. */
void	br_trust_cancel_commit(struct bridge *b, const char *reply, char hex[BR_MAC_LEN * 2 + 1]);
void	br_trust_cancel_token(struct bridge *b, const char *reply, char hex[BR_MAC_LEN * 2 + 1]);
/* Request m's Hub-Cancel: 0, or -1 none. */
int	br_trust_commit_parse(natsMsg *m, uint8_t commit[BR_MAC_LEN]);
/* Whether token hex[0..len) is the one commit was made for. */
int	br_trust_cancel_ok(const uint8_t commit[BR_MAC_LEN], const char *hex, size_t len);
/* An announcement that is not one (no JSON object of a hub's name and
 * methods, too many): counted, and logged the first time. */
void	br_trust_malformed(struct bridge *b);
/* What was ignored, for the bridge's note ("" nothing). */
void	br_trust_summary(struct bridge *b, char *buf, size_t cap);

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
/* A reply on inbox.SEQ (seq "SEQ"; also "n.SEQ", "B", "bSEQ", "p.HUB"):
 * now, or (a stream still open) once the stream
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

/* topics.c: events across hubs ([export] topics, [import] topics). */
struct json_object;
void	br_topics_start(struct bridge *b);
/* The imported topics' subscriptions on a new connection; -1 if one
 * cannot be made. */
int	br_topics_attach(struct bridge *b);
void	br_topics_detach(struct bridge *b);
/* Each imported topic's events from NATS, published here. */
void	br_topics_drain(struct bridge *b);
/* End of a loop pass: each exported topic's events gathered, sent (a
 * pack of them, or one alone). */
void	br_topics_flush(struct bridge *b);
/* With export's refresh: hub.advertised asked for each pattern (counted
 * in b->refreshing); once every answer came, new topics subscribed and
 * gone ones dropped. */
void	br_topics_refresh(struct bridge *b);
void	br_topics_refresh_done(struct bridge *b);
/* The announcement's "topics": [[NAME, SIG], ...], within budget. */
void	br_topics_announce(struct bridge *b, struct json_object *o, size_t *used, size_t budget);
/* How many topics an announcement lists (a hub that lists neither
 * methods nor topics is leaving). */
size_t	br_topics_count(struct json_object *o);
/* An announcement from hub (checked, not ours): its topics imported
 * where [import] topics asks for them. */
void	br_topics_announced(struct bridge *b, const char *hub, struct json_object *o);
/* hub left or went silent: its events are no longer taken. */
void	br_topics_forget(struct bridge *b, const char *hub);
/* "; topics ..." for the bridge's note, "" with no topics configured. */
void	br_topics_summary(struct bridge *b, char *buf, size_t cap);
void	br_topics_stop(struct bridge *b);
/* service.c: an exporting bridge answers NATS's service protocol
 * (ADR-32: $SRV.PING, $SRV.INFO, $SRV.STATS, each alone, with the
 * service's name, and with its name and id): the exports are its
 * endpoints, with their requests, errors and processing time. */
void	br_service_start(struct bridge *b);
int	br_service_attach(struct bridge *b);
void	br_service_detach(struct bridge *b);
void	br_service_drain(struct bridge *b);
void	br_service_stop(struct bridge *b);
/* A request for export name came: its endpoint's figures (an index, kept
 * in ecall.ep). */
uint32_t br_service_request(struct bridge *b, const char *name);
/* e (a call just made for request m, of endpoint ep) learns when it
 * came and from which hub. */
void	br_service_call(struct bridge *b, struct ecall *e, natsMsg *m, uint32_t ep);
/* A request of endpoint ep ended with status (0 ok; else an error, text
 * its text), start_ns when it came. */
void	br_service_count(struct bridge *b, uint32_t ep, int status, const void *text,
			 size_t len, uint64_t start_ns);
/* Endpoint ep's name, "" if none. */
const char *br_service_name(struct bridge *b, uint32_t ep);

/* names.c: names to small numbers, for figures kept by name (tally.c,
 * service.c): open addressing, never shrinks, at most max names. */
struct br_names {
	char		(*name)[BR_NAME_MAX + 1];	/* by index */
	uint32_t	n, max;
	uint32_t	*slot;		/* index + 1, 0 empty */
	uint32_t	cap;		/* slots, a power of two */
};
/* name's index; a new one when add (UINT32_MAX when full, or not found). */
uint32_t br_names_find(struct br_names *t, const char *name, int add);
void	br_names_free(struct br_names *t);

/* batch.c: a message as it is made, before it is a natsMsg (br_out_msg:
 * one that goes alone) or a batch entry (br_batch_put): its subject,
 * reply, headers (names and values kept by the caller) and bytes. */
#define BR_OUT_HDRS	12
struct br_out {
	const char	*subject, *reply;
	const void	*data;
	size_t		len;
	uint32_t	nh;
	const char	*name[BR_OUT_HDRS], *value[BR_OUT_HDRS];
};
/* Header name: value added (NATS_INSUFFICIENT_BUFFER: no room). */
natsStatus br_out_header(struct br_out *o, const char *name, const char *value);
natsStatus br_out_msg(const struct br_out *o, natsMsg **mp);
/* The batch wire. Entry o (a request: its reply subject; an answer: its
 * subject is the entry's reply) written at out (NULL: only measured);
 * its bytes, 0 if it cannot go in a batch. */
#define BR_BATCH_MAX	256	/* entries in one batch */
#define BR_BATCH_SEND	64	/* entries a batch is sent with (gather.c) */
size_t	br_batch_put(const struct br_out *o, int answer, uint8_t *out);
/* One entry (br_batch_put's bytes) made a message in *out: 0, or -1. */
int	br_batch_entry(const uint8_t *entry, size_t len, const char *subject, int answer,
		       natsMsg **out);
/* A batch's body of count (Hub-Batch) entries into out[] (*n of them:
 * requests on subject, or answers), each new; 0, or -1: malformed,
 * nothing made. */
int	br_batch_parse(const uint8_t *data, size_t len, const char *count, const char *subject,
		       int answer, natsMsg **out, uint32_t *n);

/* A subject one can publish to, n bytes: tokens of visible bytes, no
 * wildcard (a blank would split the protocol line). */
int	br_subject_ok(const char *s, size_t n);
/* A pack's body (Hub-Pack: count, 1 to BR_PACK_MAX items, each a u32
 * length and its bytes, nothing after the last), checked whole: the
 * items' bytes (their count in *items), or -1 (malformed). */
int64_t	br_pack_check(const uint8_t *p, size_t len, const char *count, uint32_t *items);
/* A pack being made: a stream's items, or a topic's events, of one loop
 * pass. */
struct br_pack {
	uint8_t		*buf;
	size_t		len, cap;
	uint32_t	n;		/* items in it */
};
/* Whether an item of len bytes goes into pk under budget (the pack's
 * body at most) and BR_PACK_MAX items: 1, 0 (send pk first), -1 (it
 * never would: it goes alone). */
int	br_pack_fits(const struct br_pack *pk, size_t budget, size_t len);
/* The item appended: 0, or -1 (no memory). */
int	br_pack_put(struct br_pack *pk, const void *item, size_t len);
/* Its count as Hub-Pack says it, in buf (24 bytes). */
const char *br_pack_count(const struct br_pack *pk, char *buf);

/* gather.c: what one loop pass sends, to one subject or one caller,
 * sent together, and a batch as soon as it holds BR_BATCH_SEND. Request
 * o of call id queued: 0, or -1 (not: the caller publishes it); fail
 * answers a call whose request could not be sent. */
int	br_gather_request(struct bridge *b, const struct br_out *o, uint64_t id,
			  void (*fail)(struct bridge *, uint64_t, const char *));
/* Answer o sent, with others to its caller (in a batch) or alone. */
void	br_gather_answer(struct bridge *b, const struct br_out *o);
/* End of a loop pass: every batch sent (one entry: as it was). */
void	br_gather_flush(struct bridge *b);
/* Request m a batch: its entries, made requests, in out[]; their count,
 * -1 not a batch, -2 malformed (counted). */
int	br_gather_requests(struct bridge *b, natsMsg *m, natsMsg **out);
/* inbox.B: a batch of answers, each to reply (as br_callout_reply;
 * 1: it kept the message). */
void	br_gather_answers(struct bridge *b, natsMsg *m,
			  int (*reply)(struct bridge *, natsMsg *, const char *));
/* inbox.n.bSEQ: NATS's answer to batch SEQ (no responders): every call
 * of it given to answer. */
void	br_gather_batch_reply(struct bridge *b, natsMsg *m, const char *seq,
			      void (*answer)(struct bridge *, natsMsg *, uint64_t));
void	br_gather_stop(struct bridge *b);

/* tally.c: per remote hub and per imported method, calls out, errors and
 * latency, served to hubctl as GUEST.stats (GUEST the bridge's [guest]
 * name: hubctl remotes, hubctl calls). */
void	br_tally_start(struct bridge *b);
void	br_tally_stop(struct bridge *b);
/* Call c of an imported method got reply m (taken out of icalls). */
void	br_tally_answer(struct bridge *b, const struct icall *c, natsMsg *m);
/* Call c timed out: no answer through NATS. */
void	br_tally_timeout(struct bridge *b, const struct icall *c);

#endif
