/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* natsps: plain NATS publish-subscribe on libnats, what topics across
 * hub-nats are measured against (nats.sh), a run as tests/bench/pubsub.h
 * has it.
 *   natsps URL DIR RUN N FLAT_MS PACED_N PERIOD_US
 * forks N subscribers (each a connection of its own, subscribed to one
 * subject, libnats's default limits: a slow one loses what is beyond
 * them), then publishes from this process, the 64-byte event as the
 * payload (as many bytes as an event across hub-nats carries); each
 * subscriber writes DIR/sI.RUN. The publisher has libnats's default
 * options (its buffer, written by the flusher) and flushes after each
 * event outside the flat phase, so that a paced event is on its way at
 * once. Exits non-zero on any failure. */
#include <err.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>

#include "tests/bench/pubsub.h"

#define CONNECT_MS	10000
#define SILENCE_MS	30000	/* a subscriber gives up */

static char subject[64];
static int done_pipe[2];

static natsConnection *
connect_to(const char *url)
{
	natsConnection *nc = NULL;

	if (natsConnection_ConnectTo(&nc, url) != NATS_OK)
		errx(1, "cannot connect to %s: %s", url, nats_GetLastError(NULL));
	return nc;
}

static void
on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct ps_tally *t = closure;

	(void)nc;
	(void)sub;
	if (ps_take(t, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), hp_now_ns())) {
		if (ps_report(t) != 0)
			warn("report");
		if (write(done_pipe[1], "E", 1) != 1)
			warn("end");
	}
	natsMsg_Destroy(m);
}

static int
subscriber(const char *url, const char *dir, int idx, int ready)
{
	static struct ps_tally t;
	natsConnection *nc = connect_to(url);
	natsSubscription *sub = NULL;
	struct pollfd pfd;
	char me[16], c;

	snprintf(me, sizeof(me), "s%d", idx);
	t.dir = dir;
	t.name = me;
	if (pipe(done_pipe) != 0)
		err(1, "pipe");
	if (natsConnection_Subscribe(&sub, nc, subject, on_msg, &t) != NATS_OK ||
	    natsConnection_Flush(nc) != NATS_OK)
		errx(1, "subscriber %d: cannot subscribe", idx);
	if (write(ready, "R", 1) != 1)
		err(1, "ready");
	close(ready);
	pfd = (struct pollfd){ .fd = done_pipe[0], .events = POLLIN };
	if (poll(&pfd, 1, 3 * SILENCE_MS + 60000) != 1 || read(done_pipe[0], &c, 1) != 1)
		errx(1, "subscriber %d: the run did not end", idx);
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	return 0;
}

static int
send_msg(void *ctx, const struct ps_event *ev)
{
	natsConnection *nc = ctx;

	if (natsConnection_Publish(nc, subject, ev, PS_EVENT) != NATS_OK)
		return -EIO;
	/* the paced events at once, not when the flusher wakes */
	if (ev->phase != PS_FLAT && natsConnection_FlushTimeout(nc, 5000) != NATS_OK)
		return -EIO;
	return 0;
}

int
main(int argc, char *argv[])
{
	struct ps_plan plan = { 0 };
	struct pollfd pfd;
	natsConnection *nc;
	uint64_t flat = 0, flat_ns = 0;
	pid_t *kids;
	int n, p[2], got = 0, rc = 0, st;
	char c;

	if (argc != 8 || (n = atoi(argv[4])) < 1 || n > 64) {
		fprintf(stderr, "usage: natsps URL DIR RUN N FLAT_MS PACED_N PERIOD_US\n");
		return 2;
	}
	plan.dir = argv[2];
	plan.need = (uint32_t)n;
	plan.run = (uint32_t)atoi(argv[3]);
	plan.flat_ms = strtoull(argv[5], NULL, 10);
	plan.paced_n = strtoull(argv[6], NULL, 10);
	plan.period_us = strtoull(argv[7], NULL, 10);
	snprintf(subject, sizeof(subject), "bench.ps.%d", (int)getpid());
	prctl(PR_SET_TIMERSLACK, 1UL);	/* paced sends on time */
	if ((kids = calloc((size_t)n, sizeof(*kids))) == NULL || pipe(p) != 0)
		err(1, "setup");
	fflush(stdout);
	/* the subscribers before this process starts libnats's threads */
	for (int i = 0; i < n; i++) {
		if ((kids[i] = fork()) == -1)
			err(1, "fork");
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(p[0]);
			exit(subscriber(argv[1], argv[2], i + 1, p[1]));
		}
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	while (got < n && poll(&pfd, 1, CONNECT_MS) == 1 && read(p[0], &c, 1) == 1)
		got++;
	nc = connect_to(argv[1]);
	if (got < n) {
		warnx("%d of %d subscribers subscribed", got, n);
		rc = 1;
	} else if (ps_publish(&plan, send_msg, nc, &flat, &flat_ns) != 0) {
		warnx("publisher: NATS failed, or the subscribers did not drain");
		rc = 1;
	}
	for (int i = 0; i < n; i++) {
		if (rc != 0)
			kill(kids[i], SIGKILL);
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = 1;
	}
	if (rc == 0)
		printf("published=%llu per_s=%.0f\n", (unsigned long long)flat,
		       (double)flat * 1e9 / (double)flat_ns);
	natsConnection_Destroy(nc);
	free(kids);
	return rc;
}
