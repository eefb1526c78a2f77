/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ioxps: Eclipse iceoryx 2.0's publish-subscribe (its C binding) as the
 * bench's peer for hub's topics, a run as tests/bench/pubsub.h has it.
 *   ioxps POLICY DIR RUN N FLAT_MS PACED_N PERIOD_US
 * forks N subscribers (each an iceoryx runtime of its own, blocking in a
 * WaitSet, a queue of 256 events), then publishes from this process;
 * each subscriber writes DIR/sI.RUN. POLICY: drop-oldest (the queue
 * discards its oldest event) or block (the publisher waits for the
 * slowest). A RouDi must be running (iox.sh). Exits non-zero on any
 * failure. */
#include <err.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iceoryx_binding_c/log.h>
#include <iceoryx_binding_c/publisher.h>
#include <iceoryx_binding_c/runtime.h>
#include <iceoryx_binding_c/subscriber.h>
#include <iceoryx_binding_c/wait_set.h>

#include "tests/bench/pubsub.h"

#define QUEUE		256	/* iceoryx 2.0's largest subscriber queue */
#define CONNECT_MS	10000	/* RouDi matching every port */
#define SILENCE_NS	(30 * HP_NS_PER_S)	/* a subscriber gives up */

static char event[32];
static int block;

static int
subscriber(const char *dir, int idx, int ready)
{
	iox_sub_storage_t ss;
	iox_sub_options_t o;
	iox_ws_storage_t wss;
	iox_notification_info_t info[1];
	struct timespec to = { .tv_sec = 1 };
	struct ps_tally t = { .dir = dir };
	char name[64], me[16];
	uint64_t missed, t0;
	iox_ws_t ws;
	iox_sub_t s;

	snprintf(name, sizeof(name), "hubbench-ps-s-%d", (int)getpid());
	iox_runtime_init(name);
	iox_sub_options_init(&o);
	o.queueCapacity = QUEUE;
	o.queueFullPolicy = block ? QueueFullPolicy_BLOCK_PRODUCER :
	    QueueFullPolicy_DISCARD_OLDEST_DATA;
	s = iox_sub_init(&ss, "hubbench", "ps", event, &o);
	ws = iox_ws_init(&wss);
	if (iox_ws_attach_subscriber_state(ws, s, SubscriberState_HAS_DATA, 0, NULL) !=
	    WaitSetResult_SUCCESS)
		errx(1, "subscriber: attaching to the WaitSet");
	for (t0 = hp_now_ns(); iox_sub_get_subscription_state(s) != SubscribeState_SUBSCRIBED;
	     usleep(1000))
		if (hp_now_ns() - t0 > CONNECT_MS * HP_NS_PER_MS)
			errx(1, "subscriber: no publisher");
	snprintf(me, sizeof(me), "s%d", idx);
	t.name = me;
	if (write(ready, "R", 1) != 1)
		err(1, "ready");
	close(ready);
	for (t0 = hp_now_ns();;) {
		const void *p;
		int end = 0;

		while (!end && iox_sub_take_chunk(s, &p) == ChunkReceiveResult_SUCCESS) {
			end = ps_take(&t, p, PS_EVENT, hp_now_ns());
			iox_sub_release_chunk(s, p);
			t0 = 0;
		}
		if (end)
			break;
		if (t0 == 0)
			t0 = hp_now_ns();
		else if (hp_now_ns() - t0 > SILENCE_NS)
			errx(1, "subscriber %d: no event for 30 s", idx);
		iox_ws_timed_wait(ws, to, info, 1, &missed);
	}
	if (ps_report(&t) != 0)
		err(1, "report");
	iox_ws_deinit(ws);
	iox_sub_deinit(s);
	iox_runtime_shutdown();
	return 0;
}

static int
send_chunk(void *ctx, const struct ps_event *ev)
{
	iox_pub_t p = ctx;
	void *chunk;
	int tries = 0;

	/* every chunk held by a queue (block: the publisher waits inside
	 * publish; drop-oldest: N full queues hold N * 256) */
	while (iox_pub_loan_chunk(p, &chunk, PS_EVENT) != AllocationResult_SUCCESS)
		if (++tries > 1000000)
			return -ENOMEM;
	memcpy(chunk, ev, PS_EVENT);
	iox_pub_publish_chunk(p, chunk);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct ps_plan plan = { 0 };
	iox_pub_storage_t ps;
	iox_pub_options_t o;
	struct pollfd pfd;
	char name[64], c;
	uint64_t flat = 0, flat_ns = 0;
	pid_t *kids;
	int n, p[2], got = 0, rc = 0, st;

	if (argc != 8 || (n = atoi(argv[4])) < 1 || n > 64 ||
	    (strcmp(argv[1], "block") != 0 && strcmp(argv[1], "drop-oldest") != 0)) {
		fprintf(stderr, "usage: ioxps block|drop-oldest DIR RUN N FLAT_MS PACED_N PERIOD_US\n");
		return 2;
	}
	block = strcmp(argv[1], "block") == 0;
	plan.dir = argv[2];
	plan.need = (uint32_t)n;
	plan.run = (uint32_t)atoi(argv[3]);
	plan.flat_ms = strtoull(argv[5], NULL, 10);
	plan.paced_n = strtoull(argv[6], NULL, 10);
	plan.period_us = strtoull(argv[7], NULL, 10);
	prctl(PR_SET_TIMERSLACK, 1UL);	/* paced sends on time */
	iox_set_loglevel(Iceoryx_LogLevel_Warn);
	snprintf(event, sizeof(event), "ev-%d", (int)getpid());
	if ((kids = calloc((size_t)n, sizeof(*kids))) == NULL || pipe(p) != 0)
		err(1, "setup");
	fflush(stdout);
	/* the subscribers before this process is an iceoryx runtime */
	for (int i = 0; i < n; i++) {
		if ((kids[i] = fork()) == -1)
			err(1, "fork");
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(p[0]);
			exit(subscriber(argv[2], i + 1, p[1]));
		}
	}
	close(p[1]);
	snprintf(name, sizeof(name), "hubbench-ps-p-%d", (int)getpid());
	iox_runtime_init(name);
	iox_pub_options_init(&o);
	o.subscriberTooSlowPolicy = block ? ConsumerTooSlowPolicy_WAIT_FOR_CONSUMER :
	    ConsumerTooSlowPolicy_DISCARD_OLDEST_DATA;
	iox_pub_t pub = iox_pub_init(&ps, "hubbench", "ps", event, &o);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	while (got < n && poll(&pfd, 1, CONNECT_MS) == 1 && read(p[0], &c, 1) == 1)
		got++;
	if (got < n) {
		warnx("%d of %d subscribers connected", got, n);
		rc = 1;
	} else if (ps_publish(&plan, send_chunk, pub, &flat, &flat_ns) != 0) {
		warnx("publisher: out of chunks, or the subscribers did not drain");
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
	iox_pub_deinit(pub);
	iox_runtime_shutdown();
	free(kids);
	return rc;
}
