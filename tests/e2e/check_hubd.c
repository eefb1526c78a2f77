/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd as a process: what its guests inherit from it, whatever the kernel,
 * and what -v adds to its log. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

/* This process and what it starts from now on (hubd, its guests) run as
 * on a kernel older than close_range (5.9): the call fails with ENOSYS. */
static void
without_close_range(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

	ck_assert_msg(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
		      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0,
		      "seccomp: %s", strerror(errno));
}

/* r[shm.spawn.fd-inheritance]: a guest gets stdin, stdout, stderr, its
 * doorbell (3), its domain (5) and its pool (6), nothing else, also of what hubd inherited without
 * close-on-exec, and also where the kernel has no close_range. */
START_TEST(test_guest_inherits_no_fds)
{
	char *out = NULL;
	int fd, rc;

	/* the filter stays with the process: not in a runner that runs every
	 * test in one (CK_FORK=no) */
	if (getenv("CK_FORK") != NULL && strcmp(getenv("CK_FORK"), "no") == 0)
		return;
	without_close_range();
	/* an fd hubd inherits without close-on-exec */
	fd = open("/dev/null", O_RDONLY);
	ck_assert_int_eq(dup2(fd, 40), 40);
	close(fd);
	hub_start_up(&hub, NULL, "[guest prober]\nexec = @/tests/guests/prober\n", "prober");
	ck_assert(hub_wait_method(&hub, "prober.fds") == 0);
	rc = hubctl(&hub, &out, "call", "prober.fds", (char *)NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "0 1 2 3 5 6 7 8\n") == 0,
		      "the guest started with fds '%s' (status %d)", out, rc);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* What an operator debugging would want, as debug lines: the config, the
 * lock, each spawn with its argv, each lifecycle step, each control
 * client and request, what a reload found. */
static const char *const debug_lines[] = {
	"hubd: config ",
	"hubd: locked ",
	"hubd: guest echo: spawning ",
	" --hub-path=",
	"hubd: guest echo: start: down -> starting, spawn",
	"hubd: guest echo: attached: starting -> up, attach",
	"hubd: guest echo: restart: up -> stopping, term",
	"hubd: control: client ",
	") connected, ",
	"): peers\n",
	"): call echo.echo\n",
	"): restart echo\n",
	"): bad request: ",
	") closed",
	"hubd: reload: guest echo: unchanged",
	"hubd: reload: attach_timeout ",
};

/* Runs a hub through what the debug lines are about; its log. */
static char *
exercise(void)
{
	json_object *o;
	char *out = NULL;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\nargs = --x \"a b\"\n",
		     "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	hubctl_ok(&hub, &out, "call", "echo.echo", "hi", (char *)NULL);
	free(out);
	o = hub_request(&hub, "{\"cmd\":\"nonsense\"}", NULL);
	json_object_put(o);
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	free(out);
	hubctl_ok(&hub, &out, "restart", "echo", (char *)NULL);
	free(out);
	ck_assert(hub_wait_up(&hub, "echo", 10000) == 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
	return hub_log(&hub);
}

/* Defect: hubd -v logged nothing more than without it. */
START_TEST(test_verbose_logs_debug_lines)
{
	char *log;

	harness_hubd_verbose(1);
	log = exercise();
	harness_hubd_verbose(0);
	for (size_t i = 0; i < sizeof(debug_lines) / sizeof(debug_lines[0]); i++)
		ck_assert_msg(strstr(log, debug_lines[i]) != NULL, "no '%s' with -v: %.2500s",
			      debug_lines[i], log);
	/* the argv as the config's args = writes it */
	ck_assert_msg(strstr(log, "/guests/echo --x \"a b\" --hub-path=") != NULL,
		      "argv: %.2500s", log);
	free(log);
}
END_TEST

START_TEST(test_no_debug_lines_without_v)
{
	char *log = exercise();

	for (size_t i = 0; i < sizeof(debug_lines) / sizeof(debug_lines[0]); i++)
		ck_assert_msg(strstr(log, debug_lines[i]) == NULL, "'%s' without -v: %.2500s",
			      debug_lines[i], log);
	/* what is logged anyway still is */
	ck_assert_msg(strstr(log, "hubd: guest echo: started (pid ") != NULL, "%.2500s", log);
	free(log);
}
END_TEST

/* SIGUSR1 and SIGUSR2 (a log rotation's) are ignored, said in the log;
 * SIGQUIT stops the hub as SIGTERM does: by default each ended hubd at
 * once, its lock and control socket left behind. */
START_TEST(test_stray_signals)
{
	char lock[300];
	int status = -1;
	struct stat st;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\n", "echo");
	kill(hub.pid, SIGUSR1);
	kill(hub.pid, SIGUSR2);
	for (int i = 0; i < 1000 && strstr(hub_log_tail(&hub), "User defined signal 2: ignored") ==
	     NULL; i++)
		sleep_ms(10);
	ck_assert_msg(strstr(hub_log_tail(&hub), "User defined signal 1: ignored (SIGHUP reloads, "
			     "SIGTERM stops)") != NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(alive(hub.pid), "hubd died: %s", hub_log_tail(&hub));
	ck_assert_str_eq(hub_peer_state(&hub, "echo"), "up");
	kill(hub.pid, SIGQUIT);
	for (int i = 0; i < 3000 && hub.pid > 0; i++) {
		if (waitpid(hub.pid, &status, WNOHANG) == hub.pid)
			hub.pid = 0;	/* else the teardown's to end */
		sleep_ms(10);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hubd: status %#x", status);
	snprintf(lock, sizeof(lock), "%s.lock", hub.sock);
	ck_assert_msg(stat(lock, &st) != 0 && stat(hub.sock, &st) != 0,
		      "the lock or the socket was left");
}
END_TEST

/* The harness's own cleanup: a hubd a failed test left running on its
 * socket (as the next test of its case would start on the same one) is
 * killed before a new one starts there, so that the new test talks to
 * its own hubd and not to the one left over. */
START_TEST(test_leftover_hubd_is_replaced)
{
	struct hub_proc left, next;
	char keys[320];
	int status = 0;

	snprintf(keys, sizeof(keys), "control = %s", harness_path("same.sock"));
	ck_assert_msg(hub_start(&left, keys, NULL) == 0, "the first hubd did not start");
	ck_assert_msg(hub_start(&next, keys, NULL) == 0, "the second hubd did not start: %s",
		      hub_log_tail(&next));
	for (int i = 0; i < 1000 && waitpid(left.pid, &status, WNOHANG) == 0; i++)
		sleep_ms(10);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "the hubd left over was not killed: status %#x", status);
	ck_assert_msg(alive(next.pid), "the new hubd is not the one that runs: %s",
		      hub_log_tail(&next));
	ck_assert_int_eq(hub_stop(&next), 0);
}
END_TEST

/* hubd's standard error a pipe nobody reads: hubd drops the lines it has
 * no room for, serves on, and says how many it dropped once there is
 * room. It waited in its write, the whole hub with it: no answer to a
 * client, a guest or SIGTERM. Once stopping, its last lines wait a while
 * for room (they were dropped: no "stopped" where the reader was slow). A
 * pipe of one page, filled by a guest that writes a lot. */
START_TEST(test_full_stderr_blocks_nothing)
{
	char buf[4096], *text = calloc(1, 1 << 20);
	size_t len = 0;
	int p[2], queued = 0, status = -1;
	struct pollfd pfd;
	ssize_t n;

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(hub_prepare(&hub, NULL, "[guest chat]\nexec = @/tests/guests/lifeguest\n"
				     "args = --mode=chatty\n[guest echo]\nexec = @/guests/echo\n"), 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_gt(fcntl(p[1], F_SETPIPE_SZ, 4096), 0);
	if ((hub.pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 2);
		execl(bin("hubd"), "hubd", "-f", hub.conf, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (int i = 0; i < 1000 && queued < 3000; i++) {
		ck_assert_int_eq(ioctl(p[0], FIONREAD, &queued), 0);
		sleep_ms(10);
	}
	ck_assert_int_ge(queued, 3000);
	/* full: it answers all the same, and its guests work */
	ck_assert(hub_wait_up(&hub, "chat,echo", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	for (int i = 0; i < 3; i++) {
		char *out = NULL;

		hubctl_ok(&hub, &out, "call", "echo.echo", "\"still here\"", (char *)NULL);
		ck_assert_str_eq(out, "\"still here\"\n");
		free(out);
	}
	/* read from a little later on: hubd's last lines wait for room, and
	 * what was dropped is said */
	kill(hub.pid, SIGTERM);
	sleep_ms(100);
	pfd = (struct pollfd){ p[0], POLLIN, 0 };
	while (len < (1 << 20) - 1 && poll(&pfd, 1, 30000) == 1 &&
	       (n = read(p[0], buf, sizeof(buf))) > 0) {
		if ((size_t)n > (1 << 20) - 1 - len)
			n = (ssize_t)((1 << 20) - 1 - len);
		memcpy(text + len, buf, (size_t)n);
		len += (size_t)n;
	}
	close(p[0]);
	for (int i = 0; i < 3000 && hub.pid > 0; i++) {
		if (waitpid(hub.pid, &status, WNOHANG) == hub.pid)
			hub.pid = 0;	/* else the teardown's to end */
		sleep_ms(10);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hubd: status %#x", status);
	ck_assert_msg(strstr(text, " log lines dropped: standard error was full\n") != NULL &&
		      strstr(text, "hubd: stopped\n") != NULL, "%s", text + (len > 2000 ? len - 2000 : 0));
	free(text);
}
END_TEST

Suite *suite_hubd(void);
Suite *
suite_hubd(void)
{
	Suite *s = suite_create("hubd");
	TCase *tc = tcase_create("process");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_guest_inherits_no_fds);
	tcase_add_test(tc, test_verbose_logs_debug_lines);
	tcase_add_test(tc, test_no_debug_lines_without_v);
	tcase_add_test(tc, test_stray_signals);
	tcase_add_test(tc, test_full_stderr_blocks_nothing);
	tcase_add_test(tc, test_leftover_hubd_is_replaced);
	suite_add_tcase(s, tc);
	return s;
}
