/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest: what a hub guest plugin links.
 *
 * A guest is started by hubd with a spawn ticket on its command line. It
 * attaches, registers its methods, and runs the service loop, which answers
 * calls, delivers channel data and keeps the heartbeat; it may call methods
 * of the host and, through the host, of other guests.
 *
 *	struct guest *g;
 *	const char *why;
 *	if (guest_attach(argc, argv, &g, &why) < 0)
 *		errx(1, "%s", why);
 *	guest_register(g, "echo.echo", "str->str", echo, NULL);
 *	return guest_run(g) == 0 ? 0 : 1;
 *
 * Payloads are postcard values (see doc/protocol.md): handlers receive the raw
 * argument bytes and reply with raw result bytes; guest_pc_* helpers
 * below cover the common shapes (strings, bytes, u64).
 *
 * Every function returns 0 (or a count) on success and -errno on failure;
 * nothing prints or exits (but a bad HUB_PROCESSORS, said on stderr, and
 * guest_mt_exit off a microthread, which aborts). A buffer given as a
 * pointer and a length (a call's arguments or result, a reply, a channel
 * item, an event, the guest_pc_* helpers' buffers) may be NULL only with
 * a length of 0: NULL with a length is refused with -EINVAL, and nothing
 * is sent. One thread drives a guest: handlers, callbacks
 * and calls all run on the thread that runs the loop; under guest_run_mt
 * (below, "Microthreads") on its microthreads instead, which may call any
 * of these functions from any of the runtime's processors. No other
 * thread, nor a signal handler, may call those that take a struct guest
 * or a struct guest_call (nothing notices: it races with the loop), but
 * guest_stop, which any thread may; the guest_pc_* helpers and
 * guest_mt_now_ns touch no guest and run anywhere.
 *
 * The heartbeat (a hub's heartbeat_interval: a guest silent for two
 * intervals is ended as hung) is kept by libguest: by the service loop, by
 * every libguest call that waits (for an answer, for credit, for ring
 * space or a slot: each wait beats at least every half interval, however
 * long it lasts) and by sends and received messages (a clock read every few
 * messages, not per message). A handler that computes for longer than the
 * interval without calling libguest must call guest_service() now and then.
 *
 * When the hub ends the guest for breaking a rule it says why in a Goodbye:
 * the loop and every call and send then fail with -ECONNABORTED (calls in
 * flight too), and guest_goodbye_reason() tells the rule. */
#ifndef GUEST_H
#define GUEST_H

#include <stddef.h>
#include <stdint.h>

/* libguest's version, the one in the tree: the Makefile makes the soname
 * libguest.so.MAJOR (a new MAJOR when the ABI breaks), the file name
 * libguest.so.MAJOR.MINOR.PATCH and libguest.pc's Version from these.
 * GUEST_VERSION is one number for #if (0.1.0 is 100). */
#define GUEST_VERSION_MAJOR	0
#define GUEST_VERSION_MINOR	8
#define GUEST_VERSION_PATCH	0
#define GUEST_VERSION	(GUEST_VERSION_MAJOR * 10000 + \
			 GUEST_VERSION_MINOR * 100 + GUEST_VERSION_PATCH)

/* What the library exports: it is built with -fvisibility=hidden, so a
 * function is part of its ABI only when declared here with GUEST_API (and
 * listed in libguest.map). */
#if defined(__GNUC__)
#define GUEST_API	__attribute__((visibility("default")))
#else
#define GUEST_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct guest;
struct guest_call;

/* Attach with the ticket in argv (--hub-path, --peer-id, --doorbell-fd), to
 * hubd or any host that follows the spec, whatever its segment layout: the
 * header and this guest's PeerEntry say where everything is, and all of it
 * is checked first (doc/protocol.md, "Attaching"). On failure *why (if not
 * NULL) says what went wrong, e.g. when started by hand without a ticket,
 * or which area of a corrupt segment is wrong and how (-EBADMSG). */
GUEST_API int guest_attach(int argc, char *const argv[], struct guest **gp,
			   const char **why);

/* Clean detach (r[shm.guest.detach]): Goodbye state, pending calls failed,
 * unmapped, what it held freed. Once, after the loop has returned (not
 * from a handler or a callback); its calls are gone after it. g stays a
 * handle to nothing (a few KB kept until the process exits): a second
 * guest_detach and guest_stop do nothing, guest_peer_id and
 * guest_goodbye_reason answer as before, and every other function given
 * it fails with -ENOTCONN. NULL: nothing. */
GUEST_API void guest_detach(struct guest *g);

/* This guest's peer id: the host's number for its entry (1 up to the
 * hub's max_guests), not its name. */
GUEST_API unsigned guest_peer_id(const struct guest *g);

/* A method handler. args/len are the request's argument bytes (valid until
 * the handler returns). The handler answers with guest_reply or
 * guest_reply_error, now or later (the call stays valid until answered). */
typedef void (*guest_handler)(struct guest_call *call, const uint8_t *args,
			      size_t len, void *ctx);

/* Registers a method with the host so others can call it. name is
 * "service.method"; signature tells hubctl how to encode arguments and
 * decode the result: "ARG,ARG->RET" with types str, bytes, u64, i64, f64,
 * bool, list<T>, opt<T>, map<K,V>, tuples (T,T), unit as a result alone
 * and, as an argument, chan<T> (a channel the caller receives items
 * of type T on: the handler sends on it) or rx<T> (a channel the caller
 * sends items of type T on: the handler reads it, guest_chan_accept);
 * the grammar and its bounds: doc/protocol.md, "Signatures".
 * Errors are always str.
 * A name is 1 to 63 bytes of A-Z a-z 0-9 _ . - in parts between dots,
 * none empty (no dot first or last, no two in a row).
 * Checked here, before asking the host: -EINVAL for a name that is not
 * one (or NULL name or fn) or a malformed signature (what is wrong and
 * where said on stderr: "libguest: guest_register NAME: signature
 * \"str,strr->u64\": unknown type at byte 5 (\"strr->u64\")"), -ENAMETOOLONG for a
 * name over 63 bytes. The host's refusals: -EPERM the name is not one of this
 * guest's (a guest registers NAME.*, NAME its [guest NAME] section's, and
 * what its section's provides = lists), -EEXIST the name is taken (or
 * its method id, by another name), -ENOSPC this guest has as many
 * methods as the host allows, -EREMOTEIO any other (e.g. the "hub."
 * prefix); or a call's errors (-ETIMEDOUT,
 * -EPIPE, -ECONNABORTED). A host with no method registry (it answers
 * hub.register with UnknownMethod, as a host written from the spec alone
 * does) calls methods by id: the method is then served without
 * registering, 0. No handler runs while it waits for the host: a call
 * that comes meanwhile waits for the loop (guest_run, guest_run_mt,
 * guest_service), so a plugin registers before its state is ready and a
 * microthread handler always runs on a microthread. */
GUEST_API int guest_register(struct guest *g, const char *name,
			     const char *signature, guest_handler fn, void *ctx);

/* Tells operators what this guest serves, really (hub.describe): text
 * shown by hubctl methods beside method, a method this instance
 * registered ("WHERE": "NATS: hub b, hub c" for a bridge's), or, for
 * method NULL or "", by hubctl peers beside the guest ("NATS ...:
 * connected, 2 remote hubs"). One text each, replaced by the next; text
 * NULL or "" clears it; the host forgets them all when this instance
 * detaches. A synchronous call that, as guest_register, runs no handler
 * while it waits.
 * Checked here: -ENAMETOOLONG a method name over 63 bytes, -EMSGSIZE a
 * text over 200 bytes (HP_DESCRIBE_MAX), -EILSEQ not UTF-8, -EINVAL a
 * control character. The host's refusals: -EPERM not a method of this
 * instance's, -ENOENT no such method, -EREMOTEIO any other; -ENOSYS a
 * host without hub.describe; or a call's errors. Since 0.4. */
GUEST_API int guest_describe(struct guest *g, const char *method, const char *text);
/* (libguest 0.8) Withdraws method, registered by this instance
 * (hub.unregister): new calls get -ENOSYS "no such method"; a call
 * already sent to it that comes after is answered so too; those whose
 * handler has run are the handler's to answer, as before. The name may
 * be registered again (another signature, say). A synchronous call that
 * runs no handler while it waits. -ENOENT not registered here; the
 * host's refusals: -EPERM not this instance's, -EREMOTEIO any other; a
 * host without hub.unregister (-ENOSYS) keeps routing it here, and it
 * is answered -ENOSYS here. */
GUEST_API int guest_unregister(struct guest *g, const char *method);

/* Payloads: up to 32 bytes travel in the descriptor; larger ones in a
 * slot of the hub's shared pool (up to its largest class: 32 MiB with the
 * default config) or, under a host without it or for a guest kept out of
 * it, of this guest's own pool (up to max_payload_size); a channel item is
 * bounded by the channel's credit too. A send that finds no slot free waits, like one
 * that finds the ring full; -EMSGSIZE beyond the limit (a guest_reply so
 * refused answers its caller an error instead, "METHOD: its result of N
 * bytes is larger than the hub carries"). A handler's
 * arguments, and an item or result passed to a callback, point into the
 * slot and are valid until the callback returns. */

/* Answers a call with Ok(result) / Err(User(error)); the bytes are postcard,
 * of the method's result type: nobody checks them on the way (hubd checks
 * arguments, not results), so a caller decodes them with care.
 * guest_reply_error's message is UTF-8, cut to 1023 bytes between
 * characters (NULL: "error"); in one that is not, each byte that starts
 * no valid character is sent as U+FFFD, so that the caller gets its
 * answer (before 0.8.0, such a message was refused with -EILSEQ and
 * nothing was sent). It is guest_reply_status -EREMOTEIO.
 * A call is answered once: a second answer (any of the four) sends
 * nothing and returns -EALREADY, from the handler, its microthread or a
 * callback after the handler returned (for the last, until the guest has
 * answered 256 other calls since, when the call is freed). guest_reply
 * with NULL result and len > 0: -EINVAL, nothing sent, the call still
 * to be answered. */
GUEST_API int guest_reply(struct guest_call *c, const void *result, size_t len);
GUEST_API int guest_reply_error(struct guest_call *c, const char *message);
/* Answers Err(Cancelled): the reply to a call given up on after Cancel. */
GUEST_API int guest_reply_cancelled(struct guest_call *c);
/* (libguest 0.4) Answers with the error a caller of this guest's would see
 * as status (guest_result_fn below), text its text: for a guest that
 * forwards an answer it got from elsewhere (a bridge to another host), so
 * that the error keeps its meaning. status: -EREMOTEIO (as
 * guest_reply_error), -ENOSYS, -EBADMSG, -ECANCELED (UnknownMethod,
 * InvalidPayload, Cancelled: text in an "error.text" metadata entry),
 * -EHOSTUNREACH (the remote hub was unreachable) or -ETIMEDOUT (the
 * remote side timed out): Err(User(text)) with an "error.kind" metadata
 * entry "unreachable" or "timeout" (doc/protocol.md, section 6). text
 * NULL: the kind's own ("no such method", "remote hub unreachable"...);
 * UTF-8, cut to 1023 bytes (between characters), a byte that starts no
 * valid character sent as U+FFFD, as guest_reply_error's. -EINVAL for
 * another status (nothing sent); -EALREADY as guest_reply. */
GUEST_API int guest_reply_status(struct guest_call *c, int status, const char *text);
/* Nonzero once the call was cancelled: its caller gave up on it (a
 * timeout, guest_cancel), went away (a client, a guest that died)
 * or its lane closed. Advisory: the call must still be answered. */
GUEST_API int guest_call_cancelled(const struct guest_call *c);
/* Who made the call, for its handler to decide what the caller may do:
 * the calling guest's name (its [guest NAME] section), "client:UID" for a
 * control client (hubctl call), "hub" for the hub's own. Over a lane the
 * lane's peer, at once; else the hub says (hub.caller, a synchronous call
 * that serves meanwhile as guest_call does). Kept: a second ask is free.
 * Valid until the call is answered; NULL once it is, or when the hub
 * cannot tell (the caller left, the hub is gone). */
GUEST_API const char *guest_call_caller(struct guest_call *c);
GUEST_API struct guest *guest_call_guest(const struct guest_call *c);

/* (libguest 0.7) The call's deadline: the CLOCK_MONOTONIC time, in ns
 * (guest_mt_now_ns, or clock_gettime, reads that clock; all processes of
 * a host share it), by which its caller wants the answer; 0 for none.
 * libguest never starts a handler whose call's deadline has passed: the
 * caller gets -ETIMEDOUT, "the deadline passed before the call started"
 * (as from guest_reply_status); a handler that works long may look at
 * the time left, and give up (guest_reply_status -ETIMEDOUT). */
GUEST_API uint64_t guest_call_deadline(const struct guest_call *c);
/* (0.7) The call's W3C trace context, its traceparent
 * "00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>", or NULL when
 * the caller sent none. Valid until the call is answered. */
GUEST_API const char *guest_call_trace(const struct guest_call *c);

/* Outcome of a call: 0 Ok; -EREMOTEIO the callee's error (its handler
 * answered guest_reply_error); -ECONNREFUSED the hub's own error, the
 * callee never saw the call (its guest down or restarting, too many
 * calls in flight, arguments too large for it, a host service's
 * refusal); -ENOSYS unknown method; -EBADMSG invalid payload;
 * -ECANCELED cancelled (by the callee, or the hub: the callee died);
 * -EHOSTUNREACH the callee answered that a remote hub it forwards to was
 * unreachable, -ETIMEDOUT no answer in time, or the callee answered that
 * the remote side timed out (both guest_reply_status); -EPIPE the hub is
 * gone; -ECONNABORTED the hub ended this guest (guest_goodbye_reason);
 * -EMSGSIZE result too big for the buffer.
 * For an error that came as an answer (-EREMOTEIO, -ECONNREFUSED,
 * -ENOSYS, -EBADMSG, -ECANCELED, -EHOSTUNREACH, -ETIMEDOUT answered),
 * result is its text, decoded: len bytes (at most 1023) followed by a
 * NUL, e.g. "no such key" or "guest kv is down" (for -ENOSYS, -EBADMSG
 * and -ECANCELED the callee's guest_reply_status text, else the hub's
 * or the kind's own); for the others (a -ETIMEDOUT of this side's
 * timeout included) result is NULL and len 0. */
typedef void (*guest_result_fn)(void *ctx, int status, const uint8_t *result,
				size_t len);

/* Starts a call of method (on the host or another guest) and returns at
 * once; fn runs from the service loop when the answer arrives. *call_id
 * (if not NULL) identifies it for guest_cancel. With ring_size (256)
 * such calls in flight its way (through the hub, or over a lane), it
 * first waits for an answer (50 ms at most: calls that all wait at
 * their callees are no burst), serving meanwhile: earlier calls' fn may
 * run before it returns. */
GUEST_API int guest_call_async(struct guest *g, const char *method,
			       const void *args, size_t len, guest_result_fn fn,
			       void *ctx, uint32_t *call_id);
/* Sends Cancel for a call in flight (advisory). */
GUEST_API int guest_cancel(struct guest *g, uint32_t call_id);

/* Calls and waits up to timeout_ms (-1: forever) in all, for room to send
 * and for the answer, serving other traffic meanwhile. Ok: the result is
 * copied to result[0..cap) and its length stored in *result_len
 * (-EMSGSIZE if over cap: *result_len says how much it needs). An error
 * with text (as for guest_result_fn): the text, cut to cap - 1 bytes,
 * NUL-terminated, in result, its length (without the NUL) in
 * *result_len; an error without (this side's -ETIMEDOUT, say) writes
 * nothing to result and sets *result_len to 0. The same on a
 * microthread. A handler's call that waits when guest_stop comes (inside
 * guest_run or guest_service) ends at once with -ESHUTDOWN, and the
 * callee gets a Cancel, as on a timeout. -EINVAL, nothing sent, for a
 * NULL method or NULL args with len > 0 (guest_call_async too), or NULL
 * result with cap > 0. */
GUEST_API int guest_call(struct guest *g, const char *method, const void *args,
			 size_t len, void *result, size_t cap, size_t *result_len,
			 int timeout_ms);

/* (libguest 0.7) Each call carries a deadline and a trace context (W3C
 * traceparent), both optional (doc/protocol.md, "Call metadata"). A call
 * made while a handler runs (from the handler itself under guest_run;
 * under guest_run_mt from its microthread and the microthreads that one
 * spawns) inherits the handled call's: the same deadline and the same
 * trace-id with a new parent-id, this call's. guest_call's timeout_ms
 * is a deadline too: the call's is the earlier of the two, and
 * guest_call waits no longer than it. Outside a handler a call has
 * neither, unless opts give them.
 * guest_call_with and guest_call_async_with take opts (NULL: as
 * guest_call, guest_call_async) to say otherwise for one call:
 *   GUEST_CALL_DEADLINE  deadline_ns instead of the inherited deadline
 *                        (0: none; guest_call's timeout still bounds it)
 *   GUEST_CALL_TRACE     trace, a traceparent sent as it is, instead of
 *                        the inherited trace (NULL: none)
 *   GUEST_CALL_NEW_TRACE a new trace (random ids, sampled)
 * -EINVAL for a size short of the struct, an unknown flag, both trace
 * flags, or a trace that is not a traceparent (version 00, lower-case
 * hex, ids not all zero). */
#define GUEST_CALL_DEADLINE	0x1u
#define GUEST_CALL_TRACE	0x2u
#define GUEST_CALL_NEW_TRACE	0x4u
struct guest_call_opts {
	size_t		size;		/* sizeof(struct guest_call_opts) */
	unsigned	flags;		/* GUEST_CALL_* */
	uint64_t	deadline_ns;	/* CLOCK_MONOTONIC, 0: none */
	const char	*trace;		/* a traceparent, NULL: none */
};
GUEST_API int guest_call_with(struct guest *g, const char *method, const void *args,
			      size_t len, void *result, size_t cap, size_t *result_len,
			      int timeout_ms, const struct guest_call_opts *opts);
GUEST_API int guest_call_async_with(struct guest *g, const char *method,
				    const void *args, size_t len, guest_result_fn fn,
				    void *ctx, uint32_t *call_id,
				    const struct guest_call_opts *opts);

/* Channels (r[shm.flow.*]). A sender sends items on a channel id it was
 * given (e.g. as a chan<T> argument: one that came over a direct lane has
 * the top bit set) or opened; it blocks while the
 * receiver's credit is used up, or the ring is full, up to timeout_ms for
 * the whole call (-ETIMEDOUT). -ENOTCONN for a channel that is not ours
 * to send on, or was closed or reset (by us, or by the receiver: hubd
 * resets a stream whose reader went away, and grants it no more credit),
 * or a chan<T> argument whose call is answered: the answer ends its
 * stream, so a handler sends and closes first, then answers.
 * Sends fail with -ECONNABORTED once the hub ended the guest, -EPIPE once
 * the hub is gone. Each send looks at what arrived, and while it waits
 * for credit the guest goes on serving, as guest_call does: under
 * guest_run other requests' handlers run inside the send (a stream that
 * waits for a slow reader holds up nobody else), and a Cancel
 * (guest_call_cancelled) or the receiver's Reset is seen at once; on a
 * microthread the send suspends and the runtime serves. */
GUEST_API int guest_chan_send(struct guest *g, uint32_t chan, const void *item,
			      size_t len, int timeout_ms);
/* The same for n items, published together (one head store and at most
 * one wake instead of n): for streams of small items. */
struct iovec;
GUEST_API int guest_chan_send_batch(struct guest *g, uint32_t chan,
				    const struct iovec *items, int n,
				    int timeout_ms);
/* Ends a channel this guest sends on, with Close (done) or Reset (given
 * up), whether or not anything was sent on it: every channel given or
 * opened to send on must be ended once. -ENOTCONN if it is not ours to
 * send on or was ended already.
 * On a channel this guest receives on (guest_chan_open), either tells
 * the sender to stop: on_item runs no more, and on_end runs once the
 * sender has ended the channel (hubd does so at once, with a Reset:
 * on_end gets -ECONNRESET); only then is the id free again. -ENOTCONN
 * if the sender was told already. */
GUEST_API int guest_chan_close(struct guest *g, uint32_t chan);
GUEST_API int guest_chan_reset(struct guest *g, uint32_t chan);

/* Opens a channel this guest sends on (odd id): pass the id to the
 * receiver in a call (e.g. hub.sink), then send, then close. */
GUEST_API int64_t guest_chan_open_send(struct guest *g);

/* Opens a channel this guest receives on: returns its id (odd), to pass to
 * the sender in a call (hub.source, or the chan<T> argument of another
 * guest's method: hubd relays that guest's items, and the call's answer
 * comes after the channel's end). on_item runs for each item; on_end once
 * with 0 on Close or -ECONNRESET on Reset or -EPIPE if the hub died. */
typedef void (*guest_item_fn)(void *ctx, const uint8_t *item, size_t len);
typedef void (*guest_end_fn)(void *ctx, int status);
GUEST_API int64_t guest_chan_open(struct guest *g, guest_item_fn on_item,
				  guest_end_fn on_end, void *ctx);

/* An rx<T> argument (an upload): the handler reads the channel id it
 * was given with guest_chan_accept, on_item and on_end as for
 * guest_chan_open; the caller sends nothing until then (accepting grants
 * the window, initial_credit bytes). An upload whose sender ended it
 * before has on_end run at once. An upload not accepted when the call
 * is answered is dropped (the caller's sends fail, -ENOTCONN), as is
 * the rest of one accepted: answering ends the stream. guest_chan_close
 * or _reset tells the sender to stop, as for guest_chan_open's. 0;
 * -ENOTCONN if chan is no rx<T> argument of a call in hand, or was
 * accepted already; -EINVAL no on_item or on_end.
 * The caller's side: guest_chan_open_send, the id in the argument,
 * guest_call_async (or guest_call from another microthread than the
 * sends), guest_chan_send the items, guest_chan_close (the end); the
 * answer comes after. Through the hub, or over a lane as a chan<T> is.
 * Since 0.7. */
GUEST_API int guest_chan_accept(struct guest *g, uint32_t chan, guest_item_fn on_item,
				guest_end_fn on_end, void *ctx);

/* For a receiver that keeps items to take later (a queue of its own):
 * credit normally goes back to the sender as on_item returns, so a slow
 * reader's queue grows without limit. Held (from guest_chan_hold on, on
 * a channel from guest_chan_open, best before its id is passed on), an
 * item's credit goes back only when the receiver reports it taken with
 * guest_chan_consumed: what the receiver keeps stays within the window
 * (the hub's initial_credit bytes), and the sender waits meanwhile. The
 * receiver must then take what it keeps, and report it, for the stream
 * to go on: credit goes back a quarter of the window at a time, and all
 * of it once the receiver holds nothing more. guest_chan_close or _reset
 * gives back at once what the receiver still holds (it need not report
 * it); once on_end has run, the id is no longer the receiver's (the next
 * guest_chan_open may reuse it): report nothing more for it. Not for
 * guest_chan_reader's channels, which report their own.
 * guest_chan_hold: 0, or -ENOTCONN if chan is not a channel this guest
 * receives on. guest_chan_consumed: bytes is what the receiver took, the
 * lengths on_item had (one item or several); 0, -EINVAL if that is more
 * than it holds (nothing unless held), -ENOTCONN as guest_chan_hold. 0,
 * doing nothing, after guest_chan_close or _reset. */
GUEST_API int guest_chan_hold(struct guest *g, uint32_t chan);
GUEST_API int guest_chan_consumed(struct guest *g, uint32_t chan, size_t bytes);

/* The service loop: returns 0 after guest_stop or when the host said
 * goodbye (r[shm.goodbye.host]), -EPIPE if the hub died, -EPROTO if the
 * host broke the protocol, -ECONNABORTED if the hub ended this guest with
 * a Goodbye (r[shm.goodbye.payload]: see guest_goodbye_reason). */
GUEST_API int guest_run(struct guest *g);
/* Makes guest_run (or guest_run_mt) return 0 once the handler running,
 * if any, has returned. Async-signal-safe: an atomic flag and a write(2)
 * to an eventfd that ends the loop's sleep. A wait of that handler (a
 * guest_call's for its answer, a send's for room or credit,
 * guest_service_wait) ends with -ESHUTDOWN, so that a handler waiting on
 * a slow or hung callee cannot hold the guest past its stop_grace; a
 * call made after guest_run returned waits as usual. guest_run_mt does
 * the same for every microthread (see guest_run_mt). hubd asks a guest
 * to leave (hubctl stop or restart) with SIGTERM, then SIGKILL after
 * stop_grace: guest_attach installs a SIGTERM handler that calls
 * guest_stop, so the guest detaches and exits 0, a clean stop, not a
 * crash. It does so only if SIGTERM has its default action (to keep
 * SIGTERM, install your own handler, or SIG_IGN, before guest_attach),
 * for the first guest of the process; guest_detach restores the
 * default. */
GUEST_API void guest_stop(struct guest *g);

/* The reason the hub gave when it ended this guest (the spec rule it
 * broke, e.g. "shm.desc.msg-type"), "(undecodable goodbye)" if the Goodbye
 * did not decode, NULL if the hub did not end it; after guest_detach
 * too. A guest should print it, e.g.
 *	if (rc == -ECONNABORTED)
 *		fprintf(stderr, "echo: hub ended me: %s\n", guest_goodbye_reason(g)); */
GUEST_API const char *guest_goodbye_reason(const struct guest *g);

/* Waits up to timeout_ms for traffic and serves what arrived: for a
 * handler or callback that waits for something (an answer, a Cancel)
 * while the guest keeps serving. 0, or the loop's error (as guest_run,
 * -ECONNABORTED included); -ESHUTDOWN in a handler once guest_stop came
 * (the handler should return: the loop is ending). */
GUEST_API int guest_service_wait(struct guest *g, int timeout_ms);

/* For plugins with their own event loop: poll guest_fd for POLLIN, then
 * call guest_service, which does what is ready without blocking. Once
 * guest_fd was asked for, the fd is readable whenever there is something
 * to serve: guest_service and every libguest wait (a guest_call from the
 * loop, say) leave the hub and the lanes ringing it for the next message,
 * and guest_stop (SIGTERM) makes it readable too. Call guest_service also
 * at least every guest_service_timeout_ms() (heartbeat), and from a
 * handler that computes for longer than the heartbeat interval (under a
 * host that does not offer hub's waiter words, whose wakes are futex
 * wakes no fd sees, that is at most 20 ms). 0; -ESHUTDOWN once the loop
 * should end well (guest_stop, or the hub said goodbye); or the loop's
 * error (as guest_run, -ECONNABORTED included). */
GUEST_API int guest_fd(struct guest *g);
GUEST_API int guest_service(struct guest *g);
GUEST_API int guest_service_timeout_ms(const struct guest *g);

/* Counters (for tests and benchmarks). size first, so the struct can
 * grow: the caller sets it to sizeof(struct guest_stats), its guest.h's;
 * libguest fills the fields that fit in it, zeroes what lies past its
 * own struct (fields of a later guest.h it does not know), and sets size
 * to how much it filled. 0, or -EINVAL (nothing written) when size does
 * not hold calls_in. Since 0.5 (before, no size and void; a binary built
 * then still gets that). */
struct guest_stats {
	size_t		size;		/* in: sizeof(struct guest_stats);
					 * out: bytes filled */
	uint64_t	calls_in;	/* requests handled */
	uint64_t	calls_out;	/* calls made */
	uint64_t	credit_waits;	/* sends that waited for credit */
	uint64_t	ring_waits;	/* sends that waited for ring space or a slot */
	uint64_t	wakes;		/* wake syscalls issued */
	uint64_t	sleeps;
};
GUEST_API int guest_get_stats(const struct guest *g, struct guest_stats *s);

/* Postcard helpers for argument and result values. Each encoder returns
 * the length written or -ENOSPC; each decoder 0 or -EBADMSG, and advances
 * *pos (start at 0) so several values can be read in a row.
 * str is UTF-8: guest_pc_put_str refuses anything else with -EILSEQ and
 * writes nothing, guest_pc_get_str with -EBADMSG; bytes is any bytes,
 * the same length-prefixed shape without the check: a "bytes" argument
 * or result of a signature is read and written with the _bytes pair.
 * Decoded strings and bytes point into buf. bool is 0 or 1 (put takes
 * any int, non-zero is true); f64 8 bytes little-endian.
 * Compounds are their parts in a row: a list<T> or map<K,V> is its count
 * (guest_pc_put_len; guest_pc_get_len refuses a count larger than the
 * bytes left) then the elements, or each key then its value; an opt<T>
 * is guest_pc_put_opt(present) then, if present, the value; a tuple is
 * its fields in order. */
GUEST_API int guest_pc_put_str(uint8_t *buf, size_t cap, size_t *pos,
			       const char *s, size_t n);
GUEST_API int guest_pc_put_bytes(uint8_t *buf, size_t cap, size_t *pos,
				 const void *p, size_t n);
GUEST_API int guest_pc_put_u64(uint8_t *buf, size_t cap, size_t *pos,
			       uint64_t v);
GUEST_API int guest_pc_put_i64(uint8_t *buf, size_t cap, size_t *pos,
			       int64_t v);
GUEST_API int guest_pc_put_bool(uint8_t *buf, size_t cap, size_t *pos, int v);
GUEST_API int guest_pc_put_f64(uint8_t *buf, size_t cap, size_t *pos, double v);
GUEST_API int guest_pc_put_len(uint8_t *buf, size_t cap, size_t *pos, size_t n);
GUEST_API int guest_pc_put_opt(uint8_t *buf, size_t cap, size_t *pos, int present);
GUEST_API int guest_pc_get_str(const uint8_t *buf, size_t len, size_t *pos,
			       const char **s, size_t *n);
GUEST_API int guest_pc_get_bytes(const uint8_t *buf, size_t len, size_t *pos,
				 const uint8_t **p, size_t *n);
GUEST_API int guest_pc_get_u64(const uint8_t *buf, size_t len, size_t *pos,
			       uint64_t *v);
GUEST_API int guest_pc_get_i64(const uint8_t *buf, size_t len, size_t *pos,
			       int64_t *v);
GUEST_API int guest_pc_get_bool(const uint8_t *buf, size_t len, size_t *pos, int *v);
GUEST_API int guest_pc_get_f64(const uint8_t *buf, size_t len, size_t *pos, double *v);
GUEST_API int guest_pc_get_len(const uint8_t *buf, size_t len, size_t *pos, size_t *n);
GUEST_API int guest_pc_get_opt(const uint8_t *buf, size_t len, size_t *pos,
			       int *present);

/* -- Microthreads ---------------------------------------------------------
 *
 * The runtime a handler can block in without stalling its guest: every
 * request served by guest_run_mt runs its handler in a microthread of its
 * own, and a guest_call, guest_chan_send or runtime channel operation made
 * there suspends only that microthread; the guest meanwhile serves other
 * calls, keeps the heartbeat and runs other microthreads. Microthreads
 * switch in user space (Boost.Context's fcontext: no system call), each on
 * its own stack with a guard below. P processors (OS threads) run them,
 * P = 1 unless configured: with P = 1 no two microthreads ever run at once,
 * and a handler that computes for long gives the others (and the ring) a
 * turn with guest_mt_yield; with P > 1 an idle processor serves the ring
 * while another computes.
 *
 *	static void both(struct guest_call *c, const uint8_t *a, size_t n, void *ctx)
 *	{
 *		... guest_mt_spawn two microthreads that each guest_call one
 *		    method and guest_mt_join them; then guest_reply ...
 *	}
 *	guest_register(g, "pair.both", "str->str", both, NULL);
 *	return guest_run_mt(g, NULL) == 0 ? 0 : 1;
 *
 * guestlib/examples/fanout.c is that guest, complete.
 *
 * Functions marked (mt) are called on a microthread; elsewhere they fail
 * with -EPERM. The callback API (guest_call_async's fn, a channel's on_item
 * and on_end) still works under guest_run_mt: callbacks run on the
 * processor's scheduler, not on a microthread, and must not block; with
 * P > 1 one may run while a microthread runs on another processor, so what
 * a callback writes for a microthread to read needs an atomic (release in
 * the callback, acquire in the reader) or a runtime channel. */

struct guest_rt;		/* a runtime: P processors */
struct guest_mt;		/* a joinable microthread */
struct guest_mtchan;		/* a runtime channel */

/* size first, so the struct can grow: sizeof(struct guest_rt_config),
 * or 0 for the fields of 0.5 (processors, stack_size), so a config
 * zero-initialised or with designated fields only needs no size. A
 * field past size is taken as 0 (its default); bytes past the end of
 * libguest's own struct must be 0 (else -E2BIG: a setting this libguest
 * does not know); a size that does not reach stack_size is -EINVAL.
 * Since 0.5 (a binary built before, without size, still works). */
struct guest_rt_config {
	size_t		size;		/* sizeof(struct guest_rt_config), or 0 */
	unsigned	processors;	/* OS threads running microthreads; 0: as
					 * configured (guest_run_mt: the hub's
					 * processors = N for this guest, given
					 * as HUB_PROCESSORS), else 1 */
	size_t		stack_size;	/* bytes per microthread (rounded up to
					 * pages, a guard below); 0: as
					 * configured (HUB_MT_STACK, e.g.
					 * "256k"), else 64 KiB. An overflow
					 * kills the guest with a line on
					 * stderr naming the handler */
};

/* Serves the guest like guest_run, each request's handler on a
 * microthread from a pool (cfg NULL: defaults). Returns as guest_run
 * does. After guest_stop it first drains: every wait of a microthread on
 * the hub (an answer, ring room, credit, a slot) ends with -ESHUTDOWN, a
 * request that comes meanwhile (over a lane, say) is answered "the guest
 * is stopping", and it returns once no handler runs and no microthread
 * waits on the hub (a handler that computes is waited for: hubd's
 * stop_grace bounds it). Microthreads still suspended then, or when the
 * hub went or said goodbye, are abandoned (their stacks freed, nothing
 * of theirs runs again). */
GUEST_API int guest_run_mt(struct guest *g, const struct guest_rt_config *cfg);

/* A runtime of its own, without a guest (tools, tests): guest_rt_run runs
 * fn(arg) as the first microthread on the calling thread (processor 0)
 * and returns 0 once every microthread has ended. */
GUEST_API int guest_rt_new(const struct guest_rt_config *cfg, struct guest_rt **rtp);
GUEST_API int guest_rt_run(struct guest_rt *rt, void (*fn)(void *), void *arg);
GUEST_API void guest_rt_free(struct guest_rt *rt);

/* Starts fn(arg) on a new microthread of the current runtime (from a
 * microthread or a callback). mtp NULL: detached, its end is nobody's
 * business; else joinable, and guest_mt_join must be called once.
 * -ENOMEM: no stack could be mapped (memory, limit_memory, or the
 * kernel's vm.max_map_count: two mappings a stack, some 32,000
 * microthreads by default); a request that finds none so is answered
 * an error and the guest serves on. */
typedef void (*guest_mt_fn)(void *arg);
GUEST_API int guest_mt_spawn(guest_mt_fn fn, void *arg, struct guest_mt **mtp);
/* (mt) Waits until mt has ended, and frees the handle. */
GUEST_API int guest_mt_join(struct guest_mt *mt);
/* (mt) Lets the other runnable microthreads (and the guest's ring) run. */
GUEST_API int guest_mt_yield(void);
/* (mt) Ends the calling microthread, as returning from its fn does (a
 * handler's: as the handler returning; its call stays to be answered if
 * it was not); off a microthread there is nothing to end and it cannot
 * return: it says so on stderr ("libguest: guest_mt_exit called off a
 * microthread ...") and aborts. */
GUEST_API void guest_mt_exit(void) __attribute__((noreturn));
/* (mt) Sleeps ns nanoseconds (CLOCK_MONOTONIC). */
GUEST_API int guest_mt_sleep(uint64_t ns);

/* Runtime channels carry items of item_size bytes, copied in and out;
 * capacity 0 makes a rendezvous (a send waits for its receiver), n a
 * buffer of n items. A channel has a writer end and a reader end, one
 * reference to each at creation: guest_mtchan_dup adds one, and
 * guest_mtchan_close drops one. Once no writer is left, a receive gets
 * what is buffered and then -EPIPE; once no reader is left, a send fails
 * with -EPIPE. The channel is freed when both ends are gone. */
#define GUEST_MT_WRITER	0
#define GUEST_MT_READER	1
GUEST_API int guest_mtchan_new(size_t item_size, unsigned capacity,
			       struct guest_mtchan **chp);
GUEST_API void guest_mtchan_dup(struct guest_mtchan *ch, int end);
GUEST_API void guest_mtchan_close(struct guest_mtchan *ch, int end);
/* (mt) 0, or -EPIPE as above. */
GUEST_API int guest_mtchan_send(struct guest_mtchan *ch, const void *item);
GUEST_API int guest_mtchan_recv(struct guest_mtchan *ch, void *item);

/* alt: waits until one of n operations can complete, completes that one
 * alone and returns its index; among several ready ones alt picks fairly
 * (the starting point rotates), prialt the first in order. A send or
 * receive whose channel is over (-EPIPE above) is ready, with that status.
 * GUEST_MT_WRITER_GONE is ready once ch has no writer left (its buffer may
 * still hold items), GUEST_MT_READER_GONE once it has no reader;
 * GUEST_MT_DEADLINE once CLOCK_MONOTONIC reaches deadline_ns. */
enum guest_mtop_kind {
	GUEST_MT_SEND = 1,
	GUEST_MT_RECV,
	GUEST_MT_WRITER_GONE,
	GUEST_MT_READER_GONE,
	GUEST_MT_DEADLINE,
};
struct guest_mtop {
	int			kind;		/* enum guest_mtop_kind */
	struct guest_mtchan	*ch;
	void			*item;		/* SEND: from; RECV: to */
	uint64_t		deadline_ns;	/* DEADLINE */
	int			status;		/* out: 0 or -EPIPE */
};
/* (mt) The index of the operation done, or -EINVAL (n < 1, a bad op). */
GUEST_API int guest_mt_alt(struct guest_mtop *ops, int n);
GUEST_API int guest_mt_prialt(struct guest_mtop *ops, int n);
/* CLOCK_MONOTONIC in ns, for deadlines. */
GUEST_API uint64_t guest_mt_now_ns(void);

/* Timers as channels, to wait on with alt: after sends one uint64_t (the
 * time) after ns and closes its writer; tick sends one every ns until the
 * reader closes the channel. The caller holds the reader end. */
GUEST_API int guest_mt_after(uint64_t ns, struct guest_mtchan **chp);
GUEST_API int guest_mt_tick(uint64_t ns, struct guest_mtchan **chp);

/* Stream combinators: each spawns a microthread that reads in and writes
 * a new channel, whose reader end it gives the caller; it takes over the
 * caller's reader reference of in. The output closes when in does; when
 * the output's reader goes, the microthread closes in and ends.
 * map: fn(ctx, item, out_item) turns each item into an item of out_size
 * bytes; filter: passes the items for which keep(ctx, item) is nonzero;
 * buffer: the same items through a buffer of n. */
GUEST_API int guest_mt_map(struct guest_mtchan *in, size_t out_size,
			   void (*fn)(void *ctx, const void *item, void *out),
			   void *ctx, struct guest_mtchan **outp);
GUEST_API int guest_mt_filter(struct guest_mtchan *in,
			      int (*keep)(void *ctx, const void *item), void *ctx,
			      struct guest_mtchan **outp);
GUEST_API int guest_mt_buffer(struct guest_mtchan *in, unsigned n,
			      struct guest_mtchan **outp);

/* A channel of the hub as a runtime channel, its items struct guest_bytes
 * (data from malloc: the receiver frees it). guest_chan_reader: opens a
 * channel this guest receives on (its id in *chan, for the sender) whose
 * items come out of *chp; credit goes back to the sender as they are
 * received from *chp, so a slow reader holds the sender back. When the
 * sender ends the channel, *chp's writer end is closed (receives get what
 * is left, then -EPIPE) after *end (if not NULL, it must outlive the
 * channel) is set to 0 for a Close, -ECONNRESET for a Reset, -EPIPE if the
 * hub died. Closing *chp's reader end tells the sender to stop (a Reset).
 * guest_chan_writer: items sent on *chp go out on channel chan (one this
 * guest sends on: opened, or given as a chan<T> argument), each send
 * waiting for credit; closing *chp's writer end closes chan. Their data
 * must come from malloc too: libguest frees it once sent (a send that
 * fails, -EPIPE, leaves it the sender's). */
struct guest_bytes {
	void	*data;
	size_t	len;
};
GUEST_API int guest_chan_reader(struct guest *g, uint32_t *chan,
				struct guest_mtchan **chp, int *end);
GUEST_API int guest_chan_writer(struct guest *g, uint32_t chan,
				struct guest_mtchan **chp);
/* guest_chan_accept_reader: an rx<T> argument read as guest_chan_reader
 * reads (a handler microthread receives its items from *chp, blocking;
 * end as above): guest_chan_accept's rules and errors, -EPERM outside
 * guest_run_mt. Since 0.7. */
GUEST_API int guest_chan_accept_reader(struct guest *g, uint32_t chan,
				       struct guest_mtchan **chp, int *end);

/* -- topics: events one-to-many (doc/events.md) -----------------------------
 *
 * A topic is named like a method: guest NAME publishes NAME.* and what
 * its config section lists in publishes =. Its signature is a list of
 * argument types, as a method's before "->" ("str", "u64,str"); each
 * event is their postcard bytes. The publisher writes each event once
 * into the topic's memory; every subscriber reads it from there. */

#define GUEST_TOPIC_RETAIN	1u	/* guest_advertise: a subscriber that
					 * comes late gets the newest event at once */

/* Makes this guest the publisher of topic, whose events are sig's
 * arguments. 0, or -errno: -EPERM not one of its names, -ENAMETOOLONG a
 * name over 63 bytes (as a method's), -EINVAL another bad name or a bad
 * signature (logged with why), -EEXIST another guest publishes
 * it, -ENOSPC it keeps 64 topics already, -ENOSYS a host without
 * topics. Again after a restart: a retained
 * event is still there. */
GUEST_API int guest_advertise(struct guest *g, const char *topic, const char *sig,
			      unsigned flags);
/* Publishes one event (len bytes, checked against the signature) to
 * topic, advertised before. 0, or -errno: -ENOENT not advertised,
 * -EMSGSIZE larger than the topic's events may be, -EINVAL not of the
 * signature. Waits for a block subscriber up to the topic's block
 * timeout (serving meanwhile), then overruns it. */
GUEST_API int guest_publish(struct guest *g, const char *topic, const void *ev, size_t len);

/* Overflow policies, per subscription. */
#define GUEST_BLOCK		0u	/* the publisher waits for us (bounded) */
#define GUEST_DROP_OLDEST	1u	/* lapped when behind; told how many lost */
#define GUEST_LATEST		2u	/* only the newest event each time */

struct guest_event {
	int		sub;		/* the subscription */
	const char	*topic;
	const char	*sig;		/* the topic's signature now */
	const void	*data;		/* the event's bytes, valid in the call */
	size_t		len;
	uint64_t	seq;		/* its sequence in the topic */
	uint64_t	lost;		/* events lost just before it (lapped,
					 * skipped under latest, or spoiled by
					 * the publisher) */
	int		bad;		/* 1: the publisher wrote something that
					 * is no event (data empty) or not of
					 * the signature */
};
typedef void (*guest_event_fn)(struct guest *g, const struct guest_event *ev, void *ctx);

/* Subscribes to topic with policy (GUEST_*). Each event runs fn on the
 * service loop (fn NULL: take them with guest_next_event); under
 * guest_run_mt too, not on a microthread of its own: what fn waits for
 * holds every microthread up (spawn one, guest_mt_spawn, for that). The topic
 * need not be published yet. The subscription's id (> 0), or -errno:
 * -EPERM the config does not let this guest subscribe, -ENAMETOOLONG a
 * name over 63 bytes, -EINVAL another bad name or a bad policy, -EMFILE
 * too many subscriptions. */
GUEST_API int guest_subscribe(struct guest *g, const char *topic, unsigned policy,
			      guest_event_fn fn, void *ctx);
GUEST_API int guest_unsubscribe(struct guest *g, int sub);
/* The next event of subscription sub (fn NULL), copied into buf (cap
 * bytes), waiting up to timeout_ms (-1: forever) while serving: 1 with
 * *ev (data is buf), 0 none came, or -errno (-EMSGSIZE cap too small:
 * the event stays). */
GUEST_API int guest_next_event(struct guest *g, int sub, void *buf, size_t cap,
			       struct guest_event *ev, int timeout_ms);

/* Waits until method name can be called (registered, its guest up), up
 * to timeout_ms (-1: forever), serving meanwhile: 0, -ETIMEDOUT, or
 * -errno. Built on the hub.methods topic: no polling. */
GUEST_API int guest_wait_method(struct guest *g, const char *name, int timeout_ms);

/* hub.sink and hub.source answer with the stream's hash: XXH3-64 from
 * libxxhash chained over the items in order, h = XXH3_64bits_withSeed(item,
 * len, h) from h = 0, over each item as sent (for bytes items, the postcard
 * length prefix included). */

#ifdef __cplusplus
}
#endif

#endif
