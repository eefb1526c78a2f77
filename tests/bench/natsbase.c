/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* natsbase: plain NATS request/reply between two processes on libnats,
 * what a call across hub-nats is measured against (run.sh). No hub: a
 * responder echoes every request, a requester measures.
 *   serve URL SUBJECT SECS	answers each request on SUBJECT with its
 *				payload; prints "ready=1" once the server
 *				has its subscription; ends on SIGTERM or
 *				after SECS (bounded, if it is left behind)
 *   rtt URL SUBJECT N SIZE	N requests one at a time
 *				(natsConnection_Request), SIZE bytes, each
 *				answer checked:
 *				"median_ns=.. p99_ns=.. p999_ns=.."
 *   pipe URL SUBJECT MS W SIZE	W requests in flight for MS ms: each
 *				published with a reply subject in our inbox
 *				(one subscription, INBOX.>), and each reply's
 *				callback publishes the next; each answer
 *				checked: "per_s=.. calls=.. failed=..
 *				cpu_us=.. cs=.." (the last two: this
 *				process's CPU time and context switches)
 *   stream URL SUBJECT N SIZE	a publisher sends N SIZE-byte items on
 *				SUBJECT as fast as libnats takes them, a
 *				subscriber (a connection of its own) counts
 *				them: "items_per_s=.. items=.. lost=.."
 * -a first: each side's connection sends every message at once
 * (natsOptions_SetSendAsap), not from its buffer, which libnats's
 * flusher thread writes out after letting it fill for 1 ms; without it,
 * libnats's default options, as hub-nats has them. */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include <nats/nats.h>

#include "proto/clock.h"

static int asap;

static natsConnection *
connect_to(const char *url)
{
	natsConnection *nc = NULL;
	natsOptions *o = NULL;
	natsStatus s = natsOptions_Create(&o);

	if (s == NATS_OK)
		s = natsOptions_SetURL(o, url);
	if (s == NATS_OK && asap)
		s = natsOptions_SetSendAsap(o, true);
	if (s == NATS_OK)
		s = natsConnection_Connect(&nc, o);
	natsOptions_Destroy(o);
	if (s != NATS_OK)
		errx(1, "NATS %s: %s", url, natsStatus_GetText(s));
	return nc;
}

static void
done(natsConnection *nc, natsSubscription *sub)
{
	natsSubscription_Destroy(sub);
	natsConnection_Close(nc);
	natsConnection_Destroy(nc);
	nats_Close();
}

static unsigned long long
number(const char *s, unsigned long long lo, unsigned long long hi, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *s == '\0' || *s == '-' || *end != '\0' || v < lo || v > hi)
		errx(2, "%s: '%s' is not a number from %llu to %llu", what, s, lo, hi);
	return v;
}

/* The payload: SIZE bytes of a pattern the answer must bring back. */
static char *
payload(size_t size)
{
	char *p = malloc(size ? size : 1);

	if (p == NULL)
		err(1, "malloc");
	for (size_t i = 0; i < size; i++)
		p[i] = (char)('a' + i % 26);
	return p;
}

static int
same(natsMsg *m, const char *want, size_t len)
{
	return (size_t)natsMsg_GetDataLength(m) == len &&
	    (len == 0 || memcmp(natsMsg_GetData(m), want, len) == 0);
}

static void
echo(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	const char *reply = natsMsg_GetReply(m);

	(void)sub;
	(void)closure;
	if (reply != NULL && *reply != '\0')
		natsConnection_Publish(nc, reply, natsMsg_GetData(m), natsMsg_GetDataLength(m));
	natsMsg_Destroy(m);
}

static int
serve(const char *url, const char *subject, unsigned secs)
{
	struct timespec limit = { (time_t)secs, 0 };
	natsSubscription *sub = NULL;
	natsConnection *nc;
	sigset_t set;

	/* blocked before libnats starts its threads: they inherit it */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	nc = connect_to(url);
	if (natsConnection_Subscribe(&sub, nc, subject, echo, NULL) != NATS_OK ||
	    natsConnection_Flush(nc) != NATS_OK)
		errx(1, "subscribe %s: %s", subject, nats_GetLastError(NULL));
	printf("ready=1\n");
	fflush(stdout);
	sigtimedwait(&set, NULL, &limit);
	done(nc, sub);
	return 0;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
rtt(const char *url, const char *subject, uint64_t n, size_t size)
{
	natsConnection *nc = connect_to(url);
	uint64_t *t = malloc(n * sizeof(*t)), warm = n / 10 < 2000 ? n / 10 : 2000;
	char *p = payload(size);
	natsStatus s = NATS_OK;
	uint64_t i;

	if (t == NULL)
		err(1, "malloc");
	/* as benchguest's rtt: warmed up first */
	for (i = 0; i < warm + n && s == NATS_OK; i++) {
		natsMsg *m = NULL;
		uint64_t t0 = hp_now_ns();

		s = natsConnection_Request(&m, nc, subject, p, (int)size, 10000);
		if (s == NATS_OK && !same(m, p, size))
			s = NATS_PROTOCOL_ERROR;
		if (i >= warm)
			t[i - warm] = hp_now_ns() - t0;
		natsMsg_Destroy(m);
	}
	if (s != NATS_OK)
		errx(1, "request %llu of %s: %s", (unsigned long long)i, subject,
		     natsStatus_GetText(s));
	qsort(t, n, sizeof(*t), cmp);
	printf("median_ns=%llu p99_ns=%llu p999_ns=%llu\n", (unsigned long long)t[n / 2],
	       (unsigned long long)t[n * 99 / 100], (unsigned long long)t[n * 999 / 1000]);
	free(t);
	free(p);
	done(nc, NULL);
	return 0;
}

struct pipe {
	natsConnection	*nc;
	const char	*subject;
	char		inbox[128];
	char		*payload;
	size_t		size;
	atomic_uint_fast64_t	seq, ok, failed;
	atomic_uint	inflight;
	atomic_int	stop;
};

/* One more request in flight: to SUBJECT, its reply to INBOX.SEQ. */
static void
send_one(struct pipe *pp)
{
	char reply[160];

	snprintf(reply, sizeof(reply), "%s.%llu", pp->inbox,
		 (unsigned long long)atomic_fetch_add(&pp->seq, 1));
	atomic_fetch_add(&pp->inflight, 1);
	if (natsConnection_PublishRequest(pp->nc, pp->subject, reply, pp->payload,
					  (int)pp->size) != NATS_OK) {
		atomic_fetch_sub(&pp->inflight, 1);
		atomic_fetch_add(&pp->failed, 1);
	}
}

/* A reply, on libnats's delivery thread: counted, and the next sent. */
static void
on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct pipe *pp = closure;

	(void)nc;
	(void)sub;
	atomic_fetch_add(same(m, pp->payload, pp->size) ? &pp->ok : &pp->failed, 1);
	natsMsg_Destroy(m);
	atomic_fetch_sub(&pp->inflight, 1);
	if (!atomic_load(&pp->stop))
		send_one(pp);
}

static int
pipe_run(const char *url, const char *subject, unsigned ms, unsigned window, size_t size)
{
	static struct pipe pp;
	struct timespec tick = { 0, 1000000 };
	char inbox_all[160];
	natsSubscription *sub = NULL;
	natsInbox *inbox = NULL;
	struct rusage ru;
	uint64_t t0, calls;

	pp.nc = connect_to(url);
	pp.subject = subject;
	pp.size = size;
	pp.payload = payload(size);
	if (natsInbox_Create(&inbox) != NATS_OK)
		errx(1, "no inbox");
	snprintf(pp.inbox, sizeof(pp.inbox), "%s", (const char *)inbox);
	natsInbox_Destroy(inbox);
	snprintf(inbox_all, sizeof(inbox_all), "%s.>", pp.inbox);
	if (natsConnection_Subscribe(&sub, pp.nc, inbox_all, on_reply, &pp) != NATS_OK ||
	    natsConnection_Flush(pp.nc) != NATS_OK)
		errx(1, "subscribe %s: %s", inbox_all, nats_GetLastError(NULL));
	t0 = hp_now_ns();
	for (unsigned i = 0; i < window; i++)
		send_one(&pp);
	while (hp_now_ns() - t0 < (uint64_t)ms * 1000000u)
		nanosleep(&tick, NULL);
	/* what was answered within the window only */
	calls = atomic_load(&pp.ok);
	atomic_store(&pp.stop, 1);
	for (int i = 0; i < 10000 && atomic_load(&pp.inflight) > 0; i++)
		nanosleep(&tick, NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("per_s=%.0f calls=%llu failed=%llu cpu_us=%lld cs=%ld\n",
	       (double)calls * 1e3 / (double)ms, (unsigned long long)calls,
	       (unsigned long long)(atomic_load(&pp.failed) + atomic_load(&pp.inflight)),
	       (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
	       (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
	       ru.ru_nvcsw + ru.ru_nivcsw);
	done(pp.nc, sub);
	free(pp.payload);
	return 0;
}

struct counter {
	atomic_uint_fast64_t	items, last_ns;
};

static void
on_item(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct counter *k = closure;

	(void)nc;
	(void)sub;
	natsMsg_Destroy(m);
	atomic_store(&k->last_ns, hp_now_ns());
	atomic_fetch_add(&k->items, 1);
}

/* A plain NATS publisher's rate, what a stream across hub-nats is
 * measured against: N items published back to back, counted by a
 * subscriber of the same process on a connection of its own (no
 * credit: what the server or the subscriber dropped is "lost"). */
static int
stream(const char *url, const char *subject, uint64_t n, size_t size)
{
	static struct counter k;
	struct timespec tick = { 0, 1000000 };
	natsConnection *pub = connect_to(url), *rx = connect_to(url);
	natsSubscription *sub = NULL;
	char *p = payload(size);
	uint64_t t0, got, idle = 0, seen = 0;

	if (natsConnection_Subscribe(&sub, rx, subject, on_item, &k) != NATS_OK ||
	    natsSubscription_SetPendingLimits(sub, -1, -1) != NATS_OK ||
	    natsConnection_Flush(rx) != NATS_OK)
		errx(1, "subscribe %s: %s", subject, nats_GetLastError(NULL));
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < n; i++)
		if (natsConnection_Publish(pub, subject, p, (int)size) != NATS_OK)
			errx(1, "publish %s: %s", subject, nats_GetLastError(NULL));
	natsConnection_Flush(pub);
	/* until every item came, or none for a second */
	while ((got = atomic_load(&k.items)) < n && idle < 1000) {
		idle = got == seen ? idle + 1 : 0;
		seen = got;
		nanosleep(&tick, NULL);
	}
	printf("items_per_s=%.0f items=%llu lost=%llu\n",
	       got > 0 ? (double)got * 1e9 / (double)(atomic_load(&k.last_ns) - t0) : 0.0,
	       (unsigned long long)got, (unsigned long long)(n - got));
	natsSubscription_Destroy(sub);
	natsConnection_Close(rx);
	natsConnection_Destroy(rx);
	done(pub, NULL);
	free(p);
	return 0;
}

int
main(int argc, char *argv[])
{
	if (argc > 1 && strcmp(argv[1], "-a") == 0) {
		asap = 1;
		argc--;
		argv++;
	}
	if (argc == 5 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], argv[3], (unsigned)number(argv[4], 1, 86400, "SECS"));
	if (argc == 6 && strcmp(argv[1], "rtt") == 0)
		return rtt(argv[2], argv[3], number(argv[4], 1, 10000000, "N"),
			   (size_t)number(argv[5], 0, 1 << 20, "SIZE"));
	if (argc == 7 && strcmp(argv[1], "pipe") == 0)
		return pipe_run(argv[2], argv[3], (unsigned)number(argv[4], 1, 60000, "MS"),
				(unsigned)number(argv[5], 1, 65536, "W"),
				(size_t)number(argv[6], 0, 1 << 20, "SIZE"));
	if (argc == 6 && strcmp(argv[1], "stream") == 0)
		return stream(argv[2], argv[3], number(argv[4], 1, 100000000, "N"),
			      (size_t)number(argv[5], 1, 1 << 20, "SIZE"));
	fprintf(stderr, "usage: natsbase [-a] serve URL SUBJECT SECS | rtt URL SUBJECT N SIZE |\n"
		"       natsbase [-a] pipe URL SUBJECT MS W SIZE | stream URL SUBJECT N SIZE\n");
	return 2;
}
