/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* baseline: what hub is measured against, on this machine, now.
 *   shm N		two processes ping-pong one cache line (the floor)
 *   futex N		the same, each side sleeping in futex_wait every time
 *   futex-idle N MS	N futex round trips, each after MS ms of silence:
 *			rtt_ns (the mean) and median_ns
 *   futex-apart N MS	the same, the two processes pinned to two CPUs: every
 *			wake lands on a CPU that went idle
 *   futex-relay N MS	futex-idle through a third process, as a call through
 *			hubd goes: caller to middle to callee and back, each
 *			asleep in futex_wait (the least such a relay costs)
 *   socket-idle N MS	the socket ping-pong, each round trip after MS ms
 *   yield N		the same, each side calling sched_yield while it waits:
 *			on one CPU (taskset -c 0), two hand-offs per round trip
 *   socket N		an 8-byte ping-pong over a UNIX socketpair
 *   zmq N		ZeroMQ REQ/REP over ipc:// (when built with libzmq)
 *   copy SIZE MB	SIZE-byte blocks through shared memory, one process
 *			copying in, the other copying out: GB/s
 *   ring N		N descriptors through an SPSC ring between processes
 * Each prints one "name=value" line (the *-idle, futex-apart and futex-relay two):
 * rtt_ns, gb_per_s or per_s. */
#include <err.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/clock.h"
#include "proto/futex.h"
#include "proto/ring.h"

#ifdef HAVE_ZMQ
#include <zmq.h>
#endif

static void *
shared(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		err(1, "mmap");
	memset(p, 0, n);
	return p;
}

static pid_t
child(void)
{
	pid_t pid = fork();

	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return pid;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

enum wait_how { SPIN, FUTEX, YIELD };

/* Pins process who (0: the caller) to the cpu-th CPU it may use; -1 if
 * there is no such CPU or the kernel refused (futex-apart). */
static int
pin(pid_t who, int cpu)
{
	cpu_set_t set, one;
	int seen = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set) || seen++ != cpu)
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		return sched_setaffinity(who, sizeof(one), &one);
	}
	return -1;
}

/* Round trips after quiet, each timed on its own: the median, which a few
 * slow wakes do not move as they do a mean. */
struct quiet {
	unsigned	ms;		/* of quiet before each round trip */
	uint64_t	*t, n, idle, c0;
};

static void
quiet_start(struct quiet *q, uint64_t n, unsigned ms)
{
	*q = (struct quiet){ .ms = ms, .n = n };
	if (ms > 0 && n > 0 && (q->t = malloc(n * sizeof(*q->t))) == NULL)
		err(1, "malloc");
}

/* Before each round trip: both sides fall asleep. */
static void
quiet_before(struct quiet *q)
{
	uint64_t s0;

	if (q->ms == 0)
		return;
	s0 = hp_now_ns();
	usleep(q->ms * 1000);
	q->c0 = hp_now_ns();
	q->idle += q->c0 - s0;
}

static void
quiet_after(struct quiet *q, uint64_t i)
{
	if (q->t != NULL)
		q->t[i] = hp_now_ns() - q->c0;
}

/* rtt_ns, the mean over the run less the quiet, and median_ns. */
static void
quiet_report(struct quiet *q, uint64_t t0)
{
	printf("rtt_ns=%.0f\n", (double)(hp_now_ns() - t0 - q->idle) / (double)q->n);
	if (q->t != NULL) {
		qsort(q->t, q->n, sizeof(*q->t), cmp_u64);
		printf("median_ns=%llu\n", (unsigned long long)q->t[q->n / 2]);
		free(q->t);
	}
}

/* apart: the two processes on two CPUs (futex-apart) */
static void
pingpong(uint64_t n, enum wait_how how, unsigned idle_ms, int apart)
{
	int sleep = how == FUTEX;
	hp_atomic_u32 *w = shared(4096);
	struct quiet q;
	uint64_t t0;
	pid_t pid;

	if ((pid = child()) == 0) {
		for (uint32_t i = 1; i <= 2 * n; i += 2) {
			while (hp_load_acquire_u32(w) != i)
				if (sleep)
					hp_futex_wait(w, i - 1, NULL);
				else if (how == YIELD)
					sched_yield();
			hp_store_release_u32(w, i + 1);
			if (sleep)
				hp_futex_wake(w, 1);
		}
		_exit(0);
	}
	/* the parent pins both: a child that failed would leave it waiting */
	if (apart && (pin(pid, 1) != 0 || pin(0, 0) != 0)) {
		kill(pid, SIGKILL);
		errx(1, "futex-apart: cannot pin two processes to two CPUs");
	}
	quiet_start(&q, n, idle_ms);
	t0 = hp_now_ns();
	for (uint32_t i = 0; i < 2 * n; i += 2) {
		quiet_before(&q);
		hp_store_release_u32(w, i + 1);
		if (sleep)
			hp_futex_wake(w, 1);
		while (hp_load_acquire_u32(w) != i + 2)
			if (sleep)
				hp_futex_wait(w, i + 1, NULL);
			else if (how == YIELD)
				sched_yield();
		quiet_after(&q, i / 2);
	}
	quiet_report(&q, t0);
	waitpid(pid, NULL, 0);
}

/* Sleeps until *w holds v (each word has one waiter); the acquire pairs
 * with signal_u32's release. */
static void
await_u32(hp_atomic_u32 *w, uint32_t v)
{
	uint32_t seen;

	while ((seen = hp_load_acquire_u32(w)) != v)
		hp_futex_wait(w, seen, NULL);
}

/* Stores v in *w and wakes its waiter (await_u32). */
static void
signal_u32(hp_atomic_u32 *w, uint32_t v)
{
	hp_store_release_u32(w, v);
	hp_futex_wake(w, 1);
}

/* futex-relay: the caller wakes the middle, which wakes the callee, whose
 * answer wakes the middle, which wakes the caller; a word per sleeper, on
 * lines of their own. */
static void
relay(uint64_t n, unsigned idle_ms)
{
	hp_atomic_u32 *w = shared(4096), *caller = &w[0], *middle = &w[16], *callee = &w[32];
	struct quiet q;
	uint64_t t0;
	pid_t mid, end;

	if ((end = child()) == 0) {
		for (uint32_t i = 1; i <= n; i++) {
			await_u32(callee, i);
			signal_u32(middle, 2 * i);
		}
		_exit(0);
	}
	if ((mid = child()) == 0) {
		for (uint32_t i = 1; i <= n; i++) {
			await_u32(middle, 2 * i - 1);
			signal_u32(callee, i);
			await_u32(middle, 2 * i);
			signal_u32(caller, i);
		}
		_exit(0);
	}
	quiet_start(&q, n, idle_ms);
	t0 = hp_now_ns();
	for (uint32_t i = 1; i <= n; i++) {
		quiet_before(&q);
		signal_u32(middle, 2 * i - 1);
		await_u32(caller, i);
		quiet_after(&q, i - 1);
	}
	quiet_report(&q, t0);
	waitpid(mid, NULL, 0);
	waitpid(end, NULL, 0);
}

/* idle_ms: each round trip after that much quiet (socket-idle) */
static void
socket_pingpong(uint64_t n, unsigned idle_ms)
{
	int sv[2];
	char buf[8] = "pingping";
	struct quiet q;
	uint64_t t0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		err(1, "socketpair");
	if ((pid = child()) == 0) {
		for (uint64_t i = 0; i < n; i++)
			if (read(sv[1], buf, 8) != 8 || write(sv[1], buf, 8) != 8)
				_exit(1);
		_exit(0);
	}
	quiet_start(&q, n, idle_ms);
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		quiet_before(&q);
		if (write(sv[0], buf, 8) != 8 || read(sv[0], buf, 8) != 8)
			errx(1, "socket");
		quiet_after(&q, i);
	}
	quiet_report(&q, t0);
	waitpid(pid, NULL, 0);
}

#ifdef HAVE_ZMQ
static void
zmq_pingpong(uint64_t n)
{
	char ep[64], buf[8] = "pingping";
	uint64_t t0;
	pid_t pid;

	snprintf(ep, sizeof(ep), "ipc:///tmp/hub-bench-zmq-%d", (int)getpid());
	if ((pid = child()) == 0) {
		void *ctx = zmq_ctx_new(), *rep = zmq_socket(ctx, ZMQ_REP);

		zmq_bind(rep, ep);
		for (uint64_t i = 0; i < n + 1; i++)
			if (zmq_recv(rep, buf, 8, 0) < 0 || zmq_send(rep, buf, 8, 0) < 0)
				_exit(1);
		zmq_close(rep);
		zmq_ctx_term(ctx);
		_exit(0);
	}
	void *ctx = zmq_ctx_new(), *req = zmq_socket(ctx, ZMQ_REQ);

	zmq_connect(req, ep);
	zmq_send(req, buf, 8, 0);	/* connection set up, not counted */
	zmq_recv(req, buf, 8, 0);
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < n; i++)
		if (zmq_send(req, buf, 8, 0) < 0 || zmq_recv(req, buf, 8, 0) < 0)
			errx(1, "zmq");
	printf("rtt_ns=%.0f\n", (double)(hp_now_ns() - t0) / (double)n);
	zmq_close(req);
	zmq_ctx_term(ctx);
	waitpid(pid, NULL, 0);
	unlink(ep + 6);
}
#endif

/* Four SIZE-byte buffers in shared memory, each with a full flag. */
static void
copy(size_t size, uint64_t mb)
{
	uint64_t blocks = (mb << 20) / size, t0;
	hp_atomic_u32 *flags = shared(4096);
	uint8_t *bufs = shared(4 * size), *src = malloc(size), *dst = malloc(size);
	pid_t pid;

	memset(src, 7, size);
	if ((pid = child()) == 0) {
		for (uint64_t i = 0; i < blocks; i++) {
			while (hp_load_acquire_u32(&flags[(i % 4) * 16]) == 0)
				sched_yield();
			memcpy(dst, bufs + (i % 4) * size, size);
			hp_store_release_u32(&flags[(i % 4) * 16], 0);
		}
		_exit(dst[size - 1] == 7 ? 0 : 1);
	}
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < blocks; i++) {
		while (hp_load_acquire_u32(&flags[(i % 4) * 16]) != 0)
			sched_yield();
		memcpy(bufs + (i % 4) * size, src, size);
		hp_store_release_u32(&flags[(i % 4) * 16], 1);
	}
	waitpid(pid, NULL, 0);
	printf("gb_per_s=%.3f\n", (double)(blocks * size) / (double)(hp_now_ns() - t0));
}

static void
ring(uint64_t n)
{
	struct { hp_atomic_u32 head; uint8_t pad[60]; hp_atomic_u32 tail; } *ix = shared(4096);
	struct hp_desc *descs = shared(1024 * sizeof(struct hp_desc)), batch[32];
	struct hp_ring r;
	uint64_t t0, got = 0;
	pid_t pid;

	memset(batch, 0, sizeof(batch));
	if ((pid = child()) == 0) {
		hp_ring_init_producer(&r, &ix->head, &ix->tail, descs, 1024);
		for (uint64_t sent = 0; sent < n;) {
			int k = hp_ring_enqueue_batch(&r, batch, 32);

			if (k <= 0)
				sched_yield();
			else
				sent += (uint64_t)k;
		}
		_exit(0);
	}
	hp_ring_init_consumer(&r, &ix->head, &ix->tail, descs, 1024);
	t0 = hp_now_ns();
	while (got < n) {
		int k = hp_ring_dequeue_batch(&r, batch, 32);

		if (k <= 0)
			sched_yield();
		else
			got += (uint64_t)k;
	}
	printf("per_s=%.0f\n", (double)got * 1e9 / (double)(hp_now_ns() - t0));
	waitpid(pid, NULL, 0);
}

int
main(int argc, char *argv[])
{
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
	unsigned idle_ms = argc > 3 ? (unsigned)atoi(argv[3]) : 5;	/* the *-idle */

	if (argc < 2)
		errx(2, "usage: baseline shm|futex|futex-idle|futex-apart|futex-relay|yield|socket|socket-idle|zmq|copy|ring N [MB|MS]");
	if (strcmp(argv[1], "shm") == 0)
		pingpong(n, SPIN, 0, 0);
	else if (strcmp(argv[1], "futex") == 0)
		pingpong(n, FUTEX, 0, 0);
	else if (strcmp(argv[1], "futex-idle") == 0)
		pingpong(n, FUTEX, idle_ms, 0);
	else if (strcmp(argv[1], "futex-apart") == 0)
		pingpong(n, FUTEX, idle_ms, 1);
	else if (strcmp(argv[1], "futex-relay") == 0)
		relay(n, idle_ms);
	else if (strcmp(argv[1], "yield") == 0)
		pingpong(n, YIELD, 0, 0);
	else if (strcmp(argv[1], "socket") == 0)
		socket_pingpong(n, 0);
	else if (strcmp(argv[1], "socket-idle") == 0)
		socket_pingpong(n, idle_ms);
#ifdef HAVE_ZMQ
	else if (strcmp(argv[1], "zmq") == 0)
		zmq_pingpong(n);
#endif
	else if (strcmp(argv[1], "copy") == 0)
		copy((size_t)n, argc > 3 ? strtoull(argv[3], NULL, 10) : 1024);
	else if (strcmp(argv[1], "ring") == 0)
		ring(n);
	else
		errx(2, "unknown or unavailable baseline %s", argv[1]);
	return 0;
}
