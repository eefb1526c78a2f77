/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Doorbells: signal and wait, timeouts, coalescing of many signals, and
 * death of the peer (closed end, dead process) as -EPIPE without SIGPIPE. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/clock.h"
#include "proto/doorbell.h"

#define ERRSTR(r)	((r) < 0 ? strerror(-(r)) : "ok")
/* a wait for another process: as long as a loaded machine may take */
#define PEER_WAIT_MS	30000

static int fds[2] = { -1, -1 };
static pid_t child = -1;

static void
setup(void)
{
	int ret;

	/* A dead peer must give -EPIPE, not kill us. */
	signal(SIGPIPE, SIG_DFL);
	ret = hp_doorbell_pair(fds);
	ck_assert_msg(ret == 0, "pair: %d (%s)", ret, ERRSTR(ret));
}

static void
teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	fds[0] = fds[1] = -1;
}

/* r[shm.doorbell.socketpair] */
START_TEST(test_pair_flags)
{
	int i, type, domain;
	socklen_t len;

	for (i = 0; i < 2; i++) {
		ck_assert_msg(fcntl(fds[i], F_GETFD) & FD_CLOEXEC,
		    "end %d is not close-on-exec", i);
		ck_assert_msg(fcntl(fds[i], F_GETFL) & O_NONBLOCK,
		    "end %d is blocking", i);
		len = sizeof(type);
		ck_assert_int_eq(getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &len), 0);
		ck_assert_msg(type == SOCK_STREAM, "end %d type %d", i, type);
		len = sizeof(domain);
		ck_assert_int_eq(getsockopt(fds[i], SOL_SOCKET, SO_DOMAIN, &domain, &len), 0);
		ck_assert_msg(domain == AF_UNIX, "end %d domain %d", i, domain);
	}
}
END_TEST

/* r[shm.doorbell.signal] r[shm.doorbell.wait] */
START_TEST(test_signal_then_wait)
{
	int ret;

	ret = hp_doorbell_signal(fds[0]);
	ck_assert_msg(ret == 0, "signal: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_wait(fds[1], 1000);
	ck_assert_msg(ret == 1, "wait: %d (%s)", ret, ERRSTR(ret));
	/* Drained: nothing more. */
	ret = hp_doorbell_wait(fds[1], 0);
	ck_assert_msg(ret == 0, "second wait: %d (%s)", ret, ERRSTR(ret));

	/* And the other way round. */
	ck_assert_int_eq(hp_doorbell_signal(fds[1]), 0);
	ret = hp_doorbell_wait(fds[0], 1000);
	ck_assert_msg(ret == 1, "host wait: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

/* r[shm.doorbell.wait] */
START_TEST(test_wait_times_out)
{
	int64_t t0 = (int64_t)(hp_now_ns() / HP_NS_PER_MS), dt;
	int ret;

	ret = hp_doorbell_wait(fds[1], 50);
	dt = (int64_t)(hp_now_ns() / HP_NS_PER_MS) - t0;
	ck_assert_msg(ret == 0, "wait: %d (%s)", ret, ERRSTR(ret));
	ck_assert_msg(dt >= 40, "returned after %lld ms", (long long)dt);
	ck_assert_int_eq(hp_doorbell_wait(fds[1], 0), 0);
}
END_TEST

/* Many signals coalesce: a full socket already holds a pending signal. */
START_TEST(test_signals_coalesce)
{
	int small = 4096, i, ret;
	char b = 1;

	ck_assert_int_eq(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small,
	    sizeof(small)), 0);
	ck_assert_int_eq(setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &small,
	    sizeof(small)), 0);
	for (i = 0; i < 20000; i++) {
		ret = hp_doorbell_signal(fds[0]);
		ck_assert_msg(ret == 0, "signal %d: %d (%s)", i, ret, ERRSTR(ret));
	}
	/* The socket did fill up, so the EAGAIN path was taken. */
	ck_assert_msg(send(fds[0], &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno == EAGAIN, "socket never filled: %s", strerror(errno));
	ret = hp_doorbell_wait(fds[1], 1000);
	ck_assert_msg(ret == 1, "wait: %d (%s)", ret, ERRSTR(ret));
	for (i = 0; i < 100 && hp_doorbell_wait(fds[1], 0) == 1; i++)
		;
	ret = hp_doorbell_drain(fds[1]);
	ck_assert_msg(ret == 0, "drain: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_wait(fds[1], 0);
	ck_assert_msg(ret == 0, "wait after drain: %d (%s)", ret, ERRSTR(ret));
	/* Signalling works again once drained. */
	ck_assert_int_eq(hp_doorbell_signal(fds[0]), 0);
	ck_assert_int_eq(hp_doorbell_wait(fds[1], 1000), 1);
}
END_TEST

START_TEST(test_drain_empty)
{
	int ret = hp_doorbell_drain(fds[1]);

	ck_assert_msg(ret == 0, "drain: %d (%s)", ret, ERRSTR(ret));
	ck_assert_int_eq(hp_doorbell_signal(fds[0]), 0);
	ck_assert_int_eq(hp_doorbell_signal(fds[0]), 0);
	ck_assert_int_eq(hp_doorbell_drain(fds[1]), 0);
	ck_assert_int_eq(hp_doorbell_wait(fds[1], 0), 0);
}
END_TEST

/* r[shm.doorbell.death]: a closed peer end is -EPIPE everywhere, and
 * signalling it raises no SIGPIPE (the test would die of it). */
START_TEST(test_peer_closed)
{
	int ret;

	close(fds[1]);
	fds[1] = -1;
	ret = hp_doorbell_signal(fds[0]);
	ck_assert_msg(ret == -EPIPE, "signal: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_wait(fds[0], 1000);
	ck_assert_msg(ret == -EPIPE, "wait: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_wait(fds[0], -1);
	ck_assert_msg(ret == -EPIPE, "wait forever: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_drain(fds[0]);
	ck_assert_msg(ret == -EPIPE, "drain: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

/* A signal sent just before the peer died is reported as its death. */
START_TEST(test_signal_then_peer_closed)
{
	int ret;

	ck_assert_int_eq(hp_doorbell_signal(fds[1]), 0);
	close(fds[1]);
	fds[1] = -1;
	ret = hp_doorbell_wait(fds[0], 1000);
	ck_assert_msg(ret == -EPIPE, "wait: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_drain(fds[0]);
	ck_assert_msg(ret == -EPIPE, "drain: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

/* r[shm.doorbell.death]: a guest process that dies wakes a host blocked
 * in wait at once. */
/* A child holding fds[1] (fds[0] closed in it, fds[1] in the parent):
 * 1 in the child, 0 in the parent. It dies with the test. */
static int
fork_peer(void)
{
	pid_t parent = getpid();

	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
		close(fds[0]);
		return 1;
	}
	close(fds[1]);
	fds[1] = -1;
	return 0;
}

/* The wait ends with -EPIPE: it saw the death, however long a loaded
 * machine took to get the child there (a wait that missed it times out
 * with 0). */
START_TEST(test_peer_process_dies)
{
	int ret;

	if (fork_peer()) {
		usleep(50000);
		_exit(0);	/* the kernel closes fds[1] */
	}
	ret = hp_doorbell_wait(fds[0], PEER_WAIT_MS);
	ck_assert_msg(ret == -EPIPE, "wait: %d (%s)", ret, ERRSTR(ret));
	waitpid(child, NULL, 0);
	child = -1;
}
END_TEST

/* r[shm.doorbell.purpose]: one pair between two processes wakes each side
 * in turn and then tells the death of one: the other, blocked in wait on
 * the end that carried the wakes, sees it as -EPIPE. */
START_TEST(test_wakes_both_ways_then_death)
{
	int status;

	if (fork_peer()) {
		if (hp_doorbell_signal(fds[1]) != 0)
			_exit(1);
		if (hp_doorbell_wait(fds[1], PEER_WAIT_MS) != 1)
			_exit(2);
		_exit(0);	/* the kernel closes fds[1] */
	}
	ck_assert_int_eq(hp_doorbell_wait(fds[0], PEER_WAIT_MS), 1);
	ck_assert_int_eq(hp_doorbell_signal(fds[0]), 0);
	ck_assert_int_eq(hp_doorbell_wait(fds[0], PEER_WAIT_MS), -EPIPE);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	child = -1;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child's wake or wait failed: status %d", status);
}
END_TEST

/* Half-close (shutdown for writing) is the peer going away too. */
START_TEST(test_peer_shutdown_write)
{
	int ret;

	ck_assert_int_eq(shutdown(fds[1], SHUT_WR), 0);
	ret = hp_doorbell_wait(fds[0], 1000);
	ck_assert_msg(ret == -EPIPE, "wait: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

static void
on_alarm(int sig)
{
	(void)sig;
}

START_TEST(test_wait_interrupted)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	ret = hp_doorbell_wait(fds[1], 5000);
	signal(SIGALRM, SIG_DFL);
	ck_assert_msg(ret == -EINTR, "wait: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

START_TEST(test_bad_fd)
{
	int fd = fds[1], ret;

	close(fds[1]);
	fds[1] = -1;
	ret = hp_doorbell_wait(fd, 0);
	ck_assert_msg(ret == -EBADF, "wait: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_signal(fd);
	ck_assert_msg(ret == -EBADF, "signal: %d (%s)", ret, ERRSTR(ret));
	ret = hp_doorbell_drain(fd);
	ck_assert_msg(ret == -EBADF, "drain: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

Suite *suite_doorbell(void);

Suite *
suite_doorbell(void)
{
	Suite *s = suite_create("doorbell");
	TCase *tc = tcase_create("doorbell");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_pair_flags);
	tcase_add_test(tc, test_signal_then_wait);
	tcase_add_test(tc, test_wait_times_out);
	tcase_add_test(tc, test_signals_coalesce);
	tcase_add_test(tc, test_drain_empty);
	tcase_add_test(tc, test_peer_closed);
	tcase_add_test(tc, test_signal_then_peer_closed);
	tcase_add_test(tc, test_peer_process_dies);
	tcase_add_test(tc, test_wakes_both_ways_then_death);
	tcase_add_test(tc, test_peer_shutdown_write);
	tcase_add_test(tc, test_wait_interrupted);
	tcase_add_test(tc, test_bad_fd);
	tcase_set_timeout(tc, 3 * PEER_WAIT_MS / 1000);
	suite_add_tcase(s, tc);
	return s;
}
