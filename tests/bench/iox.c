/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* iox: Eclipse iceoryx 2.0's request/response (its C binding) as a bench
 * peer. iox MODE N [W]: W (2000) warm-up round trips, then N timed ones,
 * each an 8-byte request carrying a counter and an 8-byte reply that must
 * echo it; prints "median_ns=.. p99_ns=.. n=..", exits non-zero on any
 * failure. MODE:
 *   spin	the client loans a request, sends it, then busy-polls
 *		iox_client_take_response; the server busy-polls
 *		iox_server_take_request (a pause instruction in each turn;
 *		either gives up after a second without news, the client
 *		also when the warm-up takes over 2 s)
 *   ws		both sides block in a WaitSet: the client on its
 *		response-received event, the server on request-received
 * The client forks the server; each is an iceoryx runtime of its own, so
 * a RouDi must be running. */
#include <err.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <iceoryx_binding_c/client.h>
#include <iceoryx_binding_c/log.h>
#include <iceoryx_binding_c/runtime.h>
#include <iceoryx_binding_c/server.h>
#include <iceoryx_binding_c/wait_set.h>

#include "proto/atomic.h"
#include "proto/clock.h"

#define GIVE_UP_NS	HP_NS_PER_S		/* one reply or request, at most */
#define CONNECT_NS	(5 * HP_NS_PER_S)	/* RouDi matching the two ports */
#define WARMUP_NS	(2 * HP_NS_PER_S)	/* all of the warm-up, at most */

static int spin;
static uint64_t warmup = 2000;
static char event[32];

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A WaitSet wait bounded so that a dead peer cannot hang us: 0 when
 * something was notified. A timed wait may also come back empty early
 * (a wake-up left over from a notification already collected). */
static int
ws_wait(iox_ws_t ws)
{
	iox_notification_info_t info[2];
	struct timespec to = { .tv_sec = GIVE_UP_NS / HP_NS_PER_S };
	uint64_t missed, t0 = hp_now_ns();

	while (iox_ws_timed_wait(ws, to, info, 2, &missed) == 0)
		if (hp_now_ns() - t0 > GIVE_UP_NS)
			return -1;
	return 0;
}

/* Echoes every request's counter until `total` were answered. */
static int
server(uint64_t total)
{
	iox_server_storage_t ss;
	iox_server_options_t o;
	iox_ws_storage_t wss;
	iox_ws_t ws = NULL;
	iox_server_t s;
	char name[64];
	uint64_t t0, done = 0, idle = 0;

	snprintf(name, sizeof(name), "hubbench-iox-s-%d", (int)getpid());
	iox_runtime_init(name);
	iox_server_options_init(&o);
	o.requestQueueCapacity = 4;
	s = iox_server_init(&ss, "hubbench", "iox", event, &o);
	if (!spin) {
		ws = iox_ws_init(&wss);
		if (iox_ws_attach_server_event(ws, s, ServerEvent_REQUEST_RECEIVED, 0, NULL) !=
		    WaitSetResult_SUCCESS)
			errx(1, "server: attaching to the WaitSet");
	}
	/* the client connects through RouDi's discovery loop */
	for (t0 = hp_now_ns(); !iox_server_has_clients(s); usleep(1000))
		if (hp_now_ns() - t0 > CONNECT_NS)
			errx(1, "server: no client");
	while (done < total) {
		const void *req;
		void *res;
		enum iox_ServerRequestResult r = iox_server_take_request(s, &req);

		if (r != ServerRequestResult_SUCCESS) {
			if (r != ServerRequestResult_NO_PENDING_REQUESTS)
				errx(1, "server: take_request: %d", (int)r);
			if (spin) {
				hp_cpu_relax();
				/* the clock only now and then: it costs */
				if (idle++ == 0)
					t0 = hp_now_ns();
				else if ((idle & 255) == 0 && hp_now_ns() - t0 > GIVE_UP_NS)
					errx(1, "server: no request for a second");
			} else if (ws_wait(ws) != 0)
				errx(1, "server: no request for a second");
			continue;
		}
		if (iox_server_loan_response(s, req, &res, 8) != AllocationResult_SUCCESS)
			errx(1, "server: loan_response");
		memcpy(res, req, 8);
		iox_server_release_request(s, req);
		if (iox_server_send(s, res) != ServerSendResult_SUCCESS)
			errx(1, "server: send");
		done++;
		idle = 0;
	}
	if (ws != NULL)
		iox_ws_deinit(ws);
	iox_server_deinit(s);
	iox_runtime_shutdown();
	return 0;
}

/* One round trip: loan, send, then wait for the reply and check it. */
static int
call(iox_client_t c, iox_ws_t ws, uint64_t counter)
{
	const void *res;
	void *req;
	uint64_t t0 = 0, v, idle = 0;
	enum iox_ChunkReceiveResult r;

	if (iox_client_loan_request(c, &req, 8) != AllocationResult_SUCCESS) {
		warnx("client: loan_request");
		return -1;
	}
	memcpy(req, &counter, 8);
	if (iox_client_send(c, req) != ClientSendResult_SUCCESS) {
		warnx("client: send");
		return -1;
	}
	while ((r = iox_client_take_response(c, &res)) != ChunkReceiveResult_SUCCESS) {
		if (r != ChunkReceiveResult_NO_CHUNK_AVAILABLE) {
			warnx("client: take_response: %d", (int)r);
			return -1;
		}
		if (ws != NULL) {
			if (ws_wait(ws) != 0) {
				warnx("client: no reply for a second");
				return -1;
			}
			continue;
		}
		hp_cpu_relax();
		if (idle++ == 0)
			t0 = hp_now_ns();
		else if ((idle & 255) == 0 && hp_now_ns() - t0 > GIVE_UP_NS) {
			warnx("client: no reply for a second");
			return -1;
		}
	}
	memcpy(&v, res, 8);
	iox_client_release_response(c, res);
	if (v != counter) {
		warnx("client: reply %llu to request %llu", (unsigned long long)v,
		      (unsigned long long)counter);
		return -1;
	}
	return 0;
}

static int
client(uint64_t n, pid_t srv)
{
	iox_client_storage_t cs;
	iox_client_options_t o;
	iox_ws_storage_t wss;
	iox_ws_t ws = NULL;
	iox_client_t c;
	char name[64];
	uint64_t *t, t0;
	int rc = 1, st;

	if ((t = malloc(n * sizeof(*t))) == NULL)
		err(1, "malloc");
	snprintf(name, sizeof(name), "hubbench-iox-c-%d", (int)getpid());
	iox_runtime_init(name);
	iox_client_options_init(&o);
	o.responseQueueCapacity = 4;
	c = iox_client_init(&cs, "hubbench", "iox", event, &o);
	if (!spin) {
		ws = iox_ws_init(&wss);
		if (iox_ws_attach_client_event(ws, c, ClientEvent_RESPONSE_RECEIVED, 0, NULL) !=
		    WaitSetResult_SUCCESS) {
			warnx("client: attaching to the WaitSet");
			goto out;
		}
	}
	for (t0 = hp_now_ns(); iox_client_get_connection_state(c) != ConnectionState_CONNECTED;
	     usleep(1000))
		if (hp_now_ns() - t0 > CONNECT_NS) {
			warnx("client: no server");
			goto out;
		}
	/* Two pollers that do not get a core each wait out each other's time
	 * slice, milliseconds a round trip: say so early rather than burn
	 * CPU for a figure that only measures the scheduler. */
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < warmup; i++) {
		if (call(c, ws, i) != 0)
			goto out;
		if ((i & 63) == 63 && hp_now_ns() - t0 > WARMUP_NS) {
			warnx("%llu warm-up round trips took over %llu s: starved of CPU",
			      (unsigned long long)i + 1, WARMUP_NS / HP_NS_PER_S);
			goto out;
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		t0 = hp_now_ns();
		if (call(c, ws, warmup + i) != 0)
			goto out;
		t[i] = hp_now_ns() - t0;
	}
	qsort(t, n, sizeof(*t), cmp);
	rc = 0;
out:
	if (rc != 0)
		kill(srv, SIGKILL);
	if (waitpid(srv, &st, 0) != srv || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (rc == 0)
			warnx("server failed");
		rc = 1;
	}
	if (rc == 0)
		printf("median_ns=%llu p99_ns=%llu n=%llu\n", (unsigned long long)t[n / 2],
		       (unsigned long long)t[n * 99 / 100], (unsigned long long)n);
	free(t);
	if (ws != NULL)
		iox_ws_deinit(ws);
	iox_client_deinit(c);
	iox_runtime_shutdown();
	return rc;
}

int
main(int argc, char *argv[])
{
	unsigned long long n;
	pid_t pid, parent = getpid();

	if (argc < 3 || argc > 4 ||
	    (strcmp(argv[1], "spin") != 0 && strcmp(argv[1], "ws") != 0) ||
	    (n = strtoull(argv[2], NULL, 10)) == 0 || n > 100000000 ||
	    (argc == 4 && (warmup = strtoull(argv[3], NULL, 10)) > 100000000)) {
		fprintf(stderr, "usage: iox spin|ws N [WARMUP]\n");
		return 2;
	}
	spin = strcmp(argv[1], "spin") == 0;
	iox_set_loglevel(Iceoryx_LogLevel_Warn);
	snprintf(event, sizeof(event), "rtt-%d", (int)getpid());
	fflush(stdout);
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		/* the server never outlives the client */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		exit(server(warmup + n));
	}
	return client(n, pid);
}
