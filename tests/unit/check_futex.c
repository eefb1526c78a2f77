/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* futex wait and wake between processes: a wrong expected value, timeouts,
 * signals, and a waiter in another process woken through a MAP_SHARED
 * word (which FUTEX_PRIVATE_FLAG would never reach). */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/clock.h"
#include "proto/futex.h"

#define ERRSTR(r)	((r) < 0 ? strerror(-(r)) : "ok")
#define NCHILD		2
#define WAKE_TRIES_S	30	/* the waiters' own wait is longer */

/* Children a test forks; the checked teardown kills and reaps them, and
 * PR_SET_PDEATHSIG kills them if the test process dies first. */
static pid_t children[NCHILD];
static hp_atomic_u32 *shared;	/* [0] the futex word, [1..] child results */

static void
setup(void)
{
	int i;

	for (i = 0; i < NCHILD; i++)
		children[i] = -1;
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(shared, MAP_FAILED);
}

static void
teardown(void)
{
	int i;

	for (i = 0; i < NCHILD; i++) {
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
			children[i] = -1;
		}
	}
	munmap(shared, 4096);
}

/* A child that sleeps on shared[0] == 0 and exits 0 when woken (its
 * wait's result is in shared[1 + n]). */
static pid_t
spawn_waiter(int n)
{
	pid_t parent = getpid(), pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct timespec ts = { 2 * WAKE_TRIES_S, 0 };
		int r;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
		r = hp_futex_wait(&shared[0], 0, &ts);
		hp_store_release_u32(&shared[1 + n], (uint32_t)r);
		_exit(r == 0 ? 0 : 1);
	}
	children[n] = pid;
	return pid;
}

static void
reap(int n)
{
	int status;

	ck_assert_int_eq(waitpid(children[n], &status, 0), children[n]);
	children[n] = -1;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child %d: status %#x, wait returned %d", n, status,
	    (int)hp_load_acquire_u32(&shared[1 + n]));
}

/* r[shm.wakeup.consumer-wait]: the kernel rechecks the word. */
START_TEST(test_wait_wrong_value_is_eagain)
{
	struct timespec ts = { 1, 0 };
	int ret;

	hp_store_relaxed_u32(&shared[0], 5);
	ret = hp_futex_wait(&shared[0], 4, &ts);
	ck_assert_msg(ret == -EAGAIN, "wait: %d (%s)", ret, ERRSTR(ret));
	ret = hp_futex_wait(&shared[0], 4, NULL);
	ck_assert_msg(ret == -EAGAIN, "wait forever: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

/* r[shm.wakeup.producer-wait] */
START_TEST(test_wait_times_out)
{
	struct timespec ts = { 0, 30 * 1000000 };
	int64_t t0, dt;
	int ret;

	t0 = (int64_t)hp_now_ns();
	ret = hp_futex_wait(&shared[0], 0, &ts);
	dt = (int64_t)hp_now_ns() - t0;
	ck_assert_msg(ret == -ETIMEDOUT, "wait: %d (%s)", ret, ERRSTR(ret));
	ck_assert_msg(dt >= 25 * 1000000, "returned after %lld ns", (long long)dt);
}
END_TEST

START_TEST(test_wait_bad_timeout_is_einval)
{
	struct timespec ts = { 0, 2000000000L };
	int ret = hp_futex_wait(&shared[0], 0, &ts);

	ck_assert_msg(ret == -EINVAL, "wait: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

START_TEST(test_wake_without_waiters)
{
	int ret = hp_futex_wake(&shared[0], 1);

	ck_assert_msg(ret == 0, "wake: %d (%s)", ret, ERRSTR(ret));
	ret = hp_futex_wake(&shared[0], INT32_MAX);
	ck_assert_msg(ret == 0, "wake all: %d (%s)", ret, ERRSTR(ret));
	ret = hp_futex_wake(&shared[0], -1);
	ck_assert_msg(ret == -EINVAL, "wake -1: %d", ret);
}
END_TEST

static void
on_alarm(int sig)
{
	(void)sig;
}

/* The alarm repeats every 20 ms: a lone one could fire before the wait
 * began (the test preempted in between on a loaded machine), and the
 * wait then ran into its timeout. */
START_TEST(test_wait_interrupted_is_eintr)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct timespec ts = { 5, 0 };
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	ret = hp_futex_wait(&shared[0], 0, &ts);
	/* off before the default action (death) is back */
	ck_assert_int_eq(setitimer(ITIMER_REAL, &off, NULL), 0);
	signal(SIGALRM, SIG_DFL);
	ck_assert_msg(ret == -EINTR, "wait: %d (%s)", ret, ERRSTR(ret));
}
END_TEST

/* Wakes up to n waiters on shared[0], with hp_futex_wake(nr), until n
 * were woken: a wake finds a child only once it sleeps, however long a
 * loaded machine takes to run it that far (WAKE_TRIES_S at most). */
static void
wake_until(int n, int nr)
{
	uint64_t end = hp_now_ns() + WAKE_TRIES_S * HP_NS_PER_S;
	int tries = 0, woken = 0, ret;

	for (; woken < n && hp_now_ns() < end; tries++) {
		ret = hp_futex_wake(&shared[0], nr);
		ck_assert_msg(ret >= 0, "wake: %d (%s)", ret, ERRSTR(ret));
		woken += ret;
		if (woken < n)
			usleep(1000);
	}
	ck_assert_msg(woken == n, "woke %d of %d after %d tries in %d s", woken, n, tries,
		      WAKE_TRIES_S);
}

/* r[shm.wakeup.consumer-wait]: a waiter in another process is woken
 * through the shared word (no FUTEX_PRIVATE_FLAG). */
START_TEST(test_wake_other_process)
{
	spawn_waiter(0);
	wake_until(1, 1);
	reap(0);
	ck_assert_int_eq((int)hp_load_acquire_u32(&shared[1]), 0);
}
END_TEST

/* INT32_MAX wakes every waiter. */
START_TEST(test_wake_all)
{
	spawn_waiter(0);
	spawn_waiter(1);
	wake_until(2, INT32_MAX);
	reap(0);
	reap(1);
}
END_TEST

Suite *suite_futex(void);

Suite *
suite_futex(void)
{
	Suite *s = suite_create("futex");
	TCase *tc = tcase_create("wait_wake");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_wait_wrong_value_is_eagain);
	tcase_add_test(tc, test_wait_times_out);
	tcase_add_test(tc, test_wait_bad_timeout_is_einval);
	tcase_add_test(tc, test_wake_without_waiters);
	tcase_add_test(tc, test_wait_interrupted_is_eintr);
	tcase_add_test(tc, test_wake_other_process);
	tcase_add_test(tc, test_wake_all);
	tcase_set_timeout(tc, 3 * WAKE_TRIES_S);
	suite_add_tcase(s, tc);
	return s;
}
