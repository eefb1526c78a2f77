/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats: started by hubd like any guest, with its config file:
 *	[guest nats]
 *	exec = /usr/libexec/hub/hub-nats
 *	args = --config /etc/hub/nats.conf
 * It connects to NATS (reconnecting for as long as it runs: a hub outlives
 * a NATS restart), then runs one loop: libguest's fd, the handoff's fd
 * (messages from libnats's threads), and the ticks that keep deadlines
 * and announcements. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nats/hubnats.h"

#define HANDOFF_MAX	65536	/* messages from NATS the loop has not taken */
#define TICK_MS		50	/* deadlines are kept this closely */
#define CONNECT_MS	2000	/* one try of one server, TLS included */
#define CLOSE_MS	1000	/* libnats's threads end within this at exit */

static void
on_disconnected(natsConnection *nc, void *arg)
{
	struct bridge *b = arg;

	(void)nc;
	atomic_store_explicit(&b->connected, 0, memory_order_relaxed);
	br_log("NATS connection lost: calls out fail until it is back");
}

static void
on_connected(natsConnection *nc, void *arg)
{
	struct bridge *b = arg;
	char url[256] = "";

	natsConnection_GetConnectedUrl(nc, url, sizeof(url));
	atomic_store_explicit(&b->connected, 1, memory_order_relaxed);
	br_log("connected to NATS at %s", url);
}

static void
on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *arg)
{
	(void)nc;
	(void)sub;
	(void)arg;
	br_log("NATS: %s", natsStatus_GetText(err));
}

/* libnats gave the connection up (a reconnect refused, say): the loop
 * starts over. */
static void
on_closed(natsConnection *nc, void *arg)
{
	struct bridge *b = arg;

	(void)nc;
	atomic_store_explicit(&b->connected, 0, memory_order_relaxed);
	atomic_store(&b->closed, 1);
	br_handoff_wake(b->q);
}

/* Options for a connection: every server, the loop, the callbacks, the
 * credentials; NULL with the reason logged. */
static natsOptions *
options(struct bridge *b)
{
	const struct br_conf *c = &b->conf;
	const char *urls[16];
	natsOptions *o = NULL;
	char name[128];
	natsStatus s;

	for (int i = 0; i < c->nservers; i++)
		urls[i] = c->servers[i];
	snprintf(name, sizeof(name), "hub-nats %s", c->name);
	s = natsOptions_Create(&o);
	if (s == NATS_OK)
		s = natsOptions_SetServers(o, urls, c->nservers);
	if (s == NATS_OK)
		s = natsOptions_SetName(o, name);
	/* each try of a server */
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(o, CONNECT_MS);
	/* a hub outlives NATS restarts: once connected, libnats reconnects
	 * for ever (the connector thread tries until the first time) */
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(o, -1);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(o, 250);
	if (s == NATS_OK)
		s = natsOptions_SetDisconnectedCB(o, on_disconnected, b);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectedCB(o, on_connected, b);
	if (s == NATS_OK)
		s = natsOptions_SetErrorHandler(o, on_error, b);
	/* no natsOptions_UseGlobalMessageDelivery: its shared threads,
	 * ended at exit, lost the two callback subscriptions' closing
	 * messages (LeakSanitizer, check_nats_faults); each has a delivery
	 * thread of its own */
	/* the socket on our loop: read as it is readable, written at the
	 * end of each pass (libnats's flusher would hold a message about a
	 * millisecond, twice per call) */
	if (s == NATS_OK)
		s = br_evloop_use(b->ev, o);
	/* send_asap: a publish asks the loop for the socket's writability
	 * rather than kicking libnats's flusher thread, which woke twice
	 * per publish (a signal, then its 1 ms nap) on the other CPU
	 * (measured in doc/performance.md, "Spin only where it pays") */
	if (s == NATS_OK)
		s = natsOptions_SetSendAsap(o, true);
	/* our own requests and announcements never come back to us */
	if (s == NATS_OK)
		s = natsOptions_SetNoEcho(o, true);
	if (s == NATS_OK)
		s = natsOptions_SetCustomInboxPrefix(o, c->inbox_prefix);
	if (s == NATS_OK && c->user[0] != '\0')
		s = natsOptions_SetUserInfo(o, c->user, c->password);
	if (s == NATS_OK && c->token[0] != '\0')
		s = natsOptions_SetToken(o, c->token);
	if (s == NATS_OK && c->creds[0] != '\0')
		s = natsOptions_SetUserCredentialsFromFiles(o, c->creds, NULL);
	if (s == NATS_OK && (c->tls || c->tls_ca[0] != '\0'))
		s = natsOptions_SetSecure(o, true);
	if (s == NATS_OK && c->tls_ca[0] != '\0')
		s = natsOptions_LoadCATrustedCertificates(o, c->tls_ca);
	if (s == NATS_OK && c->tls_cert[0] != '\0')
		s = natsOptions_LoadCertificatesChain(o, c->tls_cert, c->tls_key);
	if (s == NATS_OK)
		s = natsOptions_SetClosedCB(o, on_closed, b);
	if (s != NATS_OK) {
		/* an option refused (a certificate that does not load, say) */
		const char *why = nats_GetLastError(NULL);

		br_log("NATS options: %s", why != NULL && *why != '\0' ? why : natsStatus_GetText(s));
		natsOptions_Destroy(o);
		return NULL;
	}
	return o;
}

/* Why no TCP socket may be opened here (in buf), or NULL when one may: a
 * sandbox refuses them, such as hubd.service's RestrictAddressFamilies=,
 * and libnats would say only that no server is available. */
static const char *
tcp_refused(char *buf, size_t len)
{
	static const int families[] = { AF_INET, AF_INET6 };
	int fd, e = 0;

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		if ((fd = socket(families[i], SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
			close(fd);
			return NULL;
		}
		if (errno != EAFNOSUPPORT && errno != EPERM && errno != EACCES)
			return NULL;	/* out of fds, say: not refused */
		e = e != 0 ? e : errno;
	}
	errno = e;	/* %m: strerror is not for threads */
	snprintf(buf, len, "TCP sockets are refused here (%m): under systemd, "
		 "hubd.service's RestrictAddressFamilies= must allow AF_INET and AF_INET6 "
		 "(hub-nats(8))");
	return buf;
}

/* The connector thread: tries every server, then again a second later,
 * until one takes us (or the bridge stops); hands the connection to the
 * loop. A try can take CONNECT_MS a server: the loop serves meanwhile. */
static void *
connector(void *arg)
{
	struct bridge *b = arg;
	char last[256] = "", refused[256];

	while (!atomic_load(&b->stopping)) {
		natsOptions *o = options(b);
		natsConnection *nc = NULL;
		natsStatus s = o != NULL ? natsConnection_Connect(&nc, o) : NATS_ERR;
		const char *why;

		natsOptions_Destroy(o);
		if (s == NATS_OK) {
			pthread_mutex_lock(&b->mu);
			b->ready = nc;
			pthread_mutex_unlock(&b->mu);
			br_handoff_wake(b->q);
			return NULL;
		}
		/* once per reason, not once a second */
		why = nats_GetLastError(NULL);
		if (why == NULL || *why == '\0')
			why = natsStatus_GetText(s);
		if (tcp_refused(refused, sizeof(refused)) != NULL)
			why = refused;
		if (strcmp(why, last) != 0) {
			br_log("cannot connect to NATS at %s: %s: trying on", b->conf.servers[0], why);
			snprintf(last, sizeof(last), "%s", why);
		}
		for (int i = 0; i < 10 && !atomic_load(&b->stopping); i++)
			nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	}
	return NULL;
}

static void
connector_start(struct bridge *b)
{
	if (pthread_create(&b->connector, NULL, connector, b) == 0)
		b->connecting = 1;
	else
		br_log("cannot start the connector thread: %s", strerror(errno));
}

/* The subjects only this bridge hears, on each new connection: answers
 * (inbox.SEQ, inbox.B) and a stream's items and credit (inbox.s.SEQ,
 * inbox.c.ID) read by the loop itself, as the others (handed over by
 * libnats's delivery thread, each cost two thread wakes); what comes on
 * the requests' reply subjects (inbox.n.SEQ, inbox.n.bSEQ: NATS's "no
 * responders", and the answers of bridges of before Hub-Answer-To) and
 * probes' answers (inbox.p.HUB) through that thread, as a synchronous
 * subscription drops NATS's "no responders" answer, and with it which
 * call had none. A new kind of inbox subject needs its subscription
 * here. */
static int
inbox_attach(struct bridge *b)
{
	char subject[BR_SUBJECT_MAX];

	snprintf(subject, sizeof(subject), "%s.*", b->inbox);
	if (natsConnection_SubscribeSync(&b->sub_inbox, b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.n.>", b->inbox);
	if (natsConnection_Subscribe(&b->sub_replies, b->nc, subject, br_on_msg, b) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.p.>", b->inbox);
	if (natsConnection_Subscribe(&b->sub_probes, b->nc, subject, br_on_msg, b) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.s.>", b->inbox);
	if (natsConnection_SubscribeSync(&b->sub_items, b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.c.>", b->inbox);
	return natsConnection_SubscribeSync(&b->sub_credit, b->nc, subject) == NATS_OK ? 0 : -1;
}

static void
inbox_detach(struct bridge *b)
{
	natsSubscription_Destroy(b->sub_inbox);
	natsSubscription_Destroy(b->sub_replies);
	natsSubscription_Destroy(b->sub_probes);
	natsSubscription_Destroy(b->sub_items);
	natsSubscription_Destroy(b->sub_credit);
	b->sub_inbox = b->sub_replies = b->sub_probes = b->sub_items = b->sub_credit = NULL;
}

static int
inbox_msg(struct bridge *b, natsMsg *m)
{
	return br_export_msg(b, m) || br_import_msg(b, m);
}

/* The connection is gone for good: its subscriptions with it, and the
 * connector tries again. Calls in flight over it end by their timeout. */
static void
drop(struct bridge *b)
{
	br_export_detach(b);
	br_import_detach(b);
	br_topics_detach(b);
	inbox_detach(b);
	natsConnection_Destroy(b->nc);
	b->nc = NULL;
	atomic_store_explicit(&b->connected, 0, memory_order_relaxed);
	connector_start(b);
}

/* The connector's connection, taken when it is there: subscribed to. */
static void
adopt(struct bridge *b)
{
	natsConnection *nc;

	pthread_mutex_lock(&b->mu);
	nc = b->ready;
	b->ready = NULL;
	pthread_mutex_unlock(&b->mu);
	if (nc == NULL)
		return;
	pthread_join(b->connector, NULL);
	b->connecting = 0;
	b->nc = nc;
	atomic_store(&b->closed, 0);
	on_connected(nc, b);
	b->next_describe_ns = 0;	/* hubctl peers shows it at once */
	if (inbox_attach(b) != 0 || br_import_attach(b) != 0 || br_export_attach(b) != 0 ||
	    br_topics_attach(b) != 0) {
		const char *why = nats_GetLastError(NULL);

		br_log("cannot subscribe: %s", why != NULL && *why != '\0' ? why : "out of memory");
		drop(b);
	}
}

/* The command line: --config FILE, or --keygen FILE or --pubkey FILE
 * (with --config, named as it names this hub); hubd adds a spawn
 * ticket. */
struct args {
	const char	*config, *keygen, *pubkey;
};

static void
parse_args(int argc, char *argv[], struct args *a)
{
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--config") == 0)
			a->config = argv[++i];
		else if (strcmp(argv[i], "--keygen") == 0)
			a->keygen = argv[++i];
		else if (strcmp(argv[i], "--pubkey") == 0)
			a->pubkey = argv[++i];
	}
}

/* hub-nats --keygen FILE or --pubkey FILE: the line for the other hubs'
 * [trust]. */
static int
key_command(const struct args *a)
{
	struct br_conf c;
	char name[BR_NAME_MAX + 1], err[512];

	if (a->config != NULL) {
		if (br_conf_load(&c, a->config, err, sizeof(err)) != 0) {
			fprintf(stderr, "hub-nats: %s: %s\n", a->config, err);
			return 2;
		}
		snprintf(name, sizeof(name), "%s", c.name);
		br_conf_free(&c);
	} else {
		br_default_name(name, sizeof(name));
	}
	return a->keygen != NULL ? br_keygen(a->keygen, name) : br_pubkey(a->pubkey, name);
}

/* What hubctl shows of the bridge: its note (hubctl peers), and where
 * each imported method is served (hubctl methods); told to hubd when it
 * changed, at most every announce interval. */
static void
describe(struct bridge *b)
{
	char note[sizeof(b->note)], url[128] = "", imports[120] = "", ignored[120];
	size_t n;

	int connected = atomic_load_explicit(&b->connected, memory_order_relaxed);

	/* at once when the connection came or went */
	if (b->now_ns < b->next_describe_ns && connected == b->shown_connected)
		return;
	b->shown_connected = connected;
	b->next_describe_ns = b->now_ns + (uint64_t)b->conf.announce_ms * 1000000u;
	if (b->nc != NULL && natsConnection_Status(b->nc) == NATS_CONN_STATUS_CONNECTED)
		natsConnection_GetConnectedUrl(b->nc, url, sizeof(url));
	else if (b->nc != NULL)
		snprintf(url, sizeof(url), "(reconnecting)");
	else
		snprintf(url, sizeof(url), "(connecting to %.100s%s)", b->conf.servers[0],
			 b->conf.nservers > 1 ? ", ..." : "");
	br_import_summary(b, imports, sizeof(imports));
	br_trust_summary(b, ignored, sizeof(ignored));
	/* cut short, if need be: it is a note */
	if (snprintf(note, sizeof(note), "NATS %s as hub %s: %u exported, %s%s", url,
		     b->conf.name, b->nexports, imports, ignored) < 0)
		return;
	n = strlen(note);
	if (b->late > 0)
		snprintf(note + n, sizeof(note) - n, ", %llu call(s) past their deadline not made",
			 (unsigned long long)b->late);
	n = strlen(note);
	if (b->refused_batches > 0)
		snprintf(note + n, sizeof(note) - n, ", %llu malformed batch(es) dropped",
			 (unsigned long long)b->refused_batches);
	n = strlen(note);
	br_topics_summary(b, note + n, sizeof(note) - n);
	if (strcmp(note, b->note) != 0 && guest_describe(b->g, "", note) == 0)
		memcpy(b->note, note, sizeof(note));
	br_import_describe(b);
}

static int
run(struct bridge *b)
{
	struct pollfd pfd[3] = {
		{ .fd = guest_fd(b->g), .events = POLLIN },
		{ .fd = br_handoff_fd(b->q), .events = POLLIN },
	};
	natsMsg *m;
	int rc, timeout, n;

	for (;;) {
		b->now_ns = br_now_ns();
		if (b->connecting)
			adopt(b);
		else if (atomic_load(&b->closed) && b->nc != NULL)
			drop(b);
		for (n = 0; n < 1024 && (m = br_handoff_take(b->q)) != NULL; n++)
			if (!br_export_msg(b, m) && !br_import_msg(b, m))
				br_msg_done(b, m);
		b->behind = n == 1024;
		br_drain(b->sub_inbox, b, inbox_msg);
		br_drain(b->sub_items, b, inbox_msg);
		br_drain(b->sub_credit, b, inbox_msg);
		br_export_drain(b);
		br_import_drain(b);
		br_topics_drain(b);
		br_export_tick(b);
		br_import_tick(b);
		describe(b);
		/* last before sleeping: it asks hubd to ring guest_fd */
		if ((rc = guest_service(b->g)) != 0)
			return rc == -ESHUTDOWN ? 0 : rc;
		/* this pass's stream items and topics' events, packed,
		 * then its requests and answers, batched (gather.c) */
		br_estream_flush(b);
		br_topics_flush(b);
		br_gather_flush(b);
		/* what this pass published, in one write, now */
		br_write_out(b, 0);
		timeout = guest_service_timeout_ms(b->g);
		if (timeout < 0 || timeout > TICK_MS)
			timeout = TICK_MS;
		/* the socket once the connection is ours (the connector's
		 * is attached before the loop takes it) */
		br_evloop_pollfd(b->ev, &pfd[2]);
		if (b->nc == NULL)
			pfd[2].fd = -1;
		if (poll(pfd, pfd[2].fd >= 0 ? 3 : 2, timeout) == 0)
			br_msg_reap(b);		/* idle: the collector may run */
		if (pfd[2].fd >= 0 && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)))
			natsConnection_ProcessReadEvent(b->nc);
		if (pfd[2].fd >= 0 && (pfd[2].revents & POLLOUT))
			natsConnection_ProcessWriteEvent(b->nc);
	}
}

int
main(int argc, char *argv[])
{
	static struct bridge br;
	struct bridge *b = &br;
	struct args a = { 0 };
	const char *path, *why = NULL;
	natsInbox *inbox = NULL;
	char err[1024];
	int rc;

	parse_args(argc, argv, &a);
	if (a.keygen != NULL || a.pubkey != NULL)
		return key_command(&a);
	if ((path = a.config) == NULL) {
		fprintf(stderr, "usage: hub-nats --config FILE (started by hubd: see hub-nats(8))\n"
			"       hub-nats --keygen FILE [--config FILE]\n"
			"       hub-nats --pubkey FILE [--config FILE]\n");
		return 2;
	}
	if (br_conf_load(&b->conf, path, err, sizeof(err)) != 0) {
		fprintf(stderr, "hub-nats: %s: %s\n", path, err);
		return 2;
	}
	if (br_trust_start(b, err, sizeof(err)) != 0) {
		fprintf(stderr, "hub-nats: key: %s\n", err);
		return 2;
	}
	if ((b->q = br_handoff_new(HANDOFF_MAX)) == NULL ||
	    (b->ev = br_evloop_new(b->q)) == NULL || pthread_mutex_init(&b->mu, NULL) != 0 ||
	    natsInbox_Create(&inbox) != NATS_OK) {
		fprintf(stderr, "hub-nats: out of memory\n");
		return 1;
	}
	/* one inbox for the bridge's life: replies find it after a new
	 * connection too; under [nats] inbox_prefix, which NATS
	 * permissions may name */
	snprintf(b->inbox, sizeof(b->inbox), "%.63s.%.60s", b->conf.inbox_prefix,
		 strchr((const char *)inbox, '.') + 1);
	natsInbox_Destroy(inbox);
	if ((rc = guest_attach(argc, argv, &b->g, &why)) < 0) {
		fprintf(stderr, "hub-nats: %s\n", why != NULL ? why : strerror(-rc));
		return 1;
	}
	b->now_ns = br_now_ns();
	br_import_start(b);
	br_export_start(b);
	br_topics_start(b);
	br_tally_start(b);
	connector_start(b);
	br_log("hub %s: exporting %d pattern(s), importing %d, subjects %s.*", b->conf.name,
	       b->conf.nexports, b->conf.nimports, b->conf.subject);
	rc = run(b);
	if (rc != 0)
		br_log("the hub ended: %s", strerror(-rc));
	atomic_store(&b->stopping, 1);
	if (b->connecting) {
		struct timespec until;

		/* a try of a server that does not answer lasts CONNECT_MS:
		 * not waited out (hubd's stop grace is for all of it), the
		 * process ends with the thread in it */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 200000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(b->connector, NULL, &until) != 0) {
			br_export_stop(b);
			br_import_stop(b);
			guest_detach(b->g);
			return rc == 0 ? 0 : 1;
		}
		/* one made as we stopped: never used */
		natsConnection_Destroy(b->ready);
	}
	br_export_stop(b);
	br_import_stop(b);
	br_topics_stop(b);
	br_tally_stop(b);
	br_gather_flush(b);	/* the stopping calls' answers */
	br_gather_stop(b);
	br_msg_reap(b);
	inbox_detach(b);
	/* what is left (the subscriptions' ends) written now: libnats's
	 * close would wait half a second for a PONG only the loop reads */
	br_write_out(b, 100);
	natsConnection_Destroy(b->nc);
	/* the loop and the handoff are left to the process's end: libnats's
	 * closed callback may still wake the handoff from its own thread */
	guest_detach(b->g);
	br_trust_stop(b);
	br_conf_free(&b->conf);
	/* waits for libnats's own threads (delivery, garbage collector):
	 * an exit while one still frees leaves memory behind; bounded, a
	 * stuck thread must not outlast hubd's stop grace */
	if (nats_CloseAndWait(CLOSE_MS) != NATS_OK)
		br_log("libnats did not close within %d ms", CLOSE_MS);
	return rc == 0 ? 0 : 1;
}
