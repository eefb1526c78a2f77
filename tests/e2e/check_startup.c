/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd's start: no file of shared memory anywhere (a small /dev/shm
 * limits nothing), files that are not hub's left alone, one hubd per
 * control socket, and every failed start removing what it made. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static int
file_is(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return 0;
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	return strcmp(buf, text) == 0;
}

/* Runs hubd -f conf in the foreground until it exits (killed after
 * 10 s); its exit status, its log in *log (malloc'd). */
static int
run_hubd_on(const char *conf, char **log)
{
	const char *logf = harness_path("run.log");
	int status = -1;
	FILE *f;
	pid_t pid;

	unlink(logf);
	if ((pid = fork()) == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin("hubd"), "hubd", "-f", conf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	*log = calloc(1, 65536);
	if ((f = fopen(logf, "r")) != NULL) {
		(*log)[fread(*log, 1, 65535, f)] = '\0';
		fclose(f);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs hubd on a config of [hub] keys, as run_hubd_on. */
static int
run_hubd(const char *keys, char **log)
{
	const char *conf = harness_path("run.conf");
	FILE *f = fopen(conf, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "[hub]\n%s", keys);
	fclose(f);
	return run_hubd_on(conf, log);
}

/* hubd on control refuses to start (exit 1) saying want. */
static void
expect_refused(const char *control, const char *want)
{
	char keys[1100], *log;
	int rc;

	snprintf(keys, sizeof(keys), "control = %s\n", control);
	rc = run_hubd(keys, &log);
	ck_assert_msg(rc == 1 && strstr(log, want) != NULL, "exit %d, log: %s", rc, log);
	free(log);
}

/* The guests' memory is in no filesystem: a hub whose /dev/shm holds
 * 16 MiB (a container's may hold 64) still carries a 16 MiB payload, and
 * nothing appears there. hubd runs in a mount namespace of its own with
 * a small tmpfs on /dev/shm. */
START_TEST(test_small_dev_shm_limits_nothing)
{
	char *out = NULL;
	int status;
	pid_t pid;

	ck_assert_int_eq(hub_prepare(&hub, NULL, "[guest prober]\nexec = @/tests/guests/prober\n"
				     "[guest echo]\nexec = @/guests/echo\n"), 0);
	if ((pid = fork()) == 0) {
		int fd = open(hub.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=16m") != 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin("hubd"), "hubd", "-f", hub.conf, (char *)NULL);
		_exit(127);
	}
	hub.pid = pid;
	ck_assert(hub_wait_up(&hub, "prober,echo", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "prober.big") == 0);
	ck_assert_int_eq(hubctl(&hub, &out, "-t", "60", "call", "prober.big", "16777216",
				(char *)NULL), 0);
	ck_assert_str_eq(out, "16777216\n");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
	(void)status;
}
END_TEST

/* A second hubd on the same control socket fails to start (the lock
 * beside the socket is the first one's) and leaves the first alone. */
START_TEST(test_failed_start_removes_what_it_made)
{
	char *out = NULL;

	ck_assert(hub_start(&hub, NULL, NULL) == 0);
	expect_refused(hub.sock, "another hubd");
	/* the first one's socket and lock are still there, and it answers */
	hubctl_ok(&hub, &out, "status", (char *)NULL);
	free(out);
	ck_assert(exists(harness_path("hub0.sock.lock")));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: hubd opened its lock file, then locked it. A hubd exiting in
 * between unlinks the file: the lock taken was on a file nobody would
 * open again, and a third hubd took the same paths as well. Now the
 * lock is on the file at the path (flopen locks again if it changed). */
START_TEST(test_lock_while_the_owner_exits)
{
	const char *at = harness_path("lockwait.at"), *go = harness_path("lockwait.go");
	const char *blog = harness_path("b.log");
	char keys[600], want[64], *log;
	json_object *o = NULL;
	int rc, status;
	pid_t b;

	ck_assert(hub_start(&hub, NULL, NULL) == 0);
	/* B, on A's config, stops between its open and its lock */
	if ((b = fork()) == 0) {
		char asan[512];
		int fd = open(blog, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(asan, sizeof(asan), "%s:verify_asan_link_order=0",
			 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
		setenv("ASAN_OPTIONS", asan, 1);
		setenv("LD_PRELOAD", bin("tests/shim/lockwait.so"), 1);
		setenv("LOCKWAIT_AT", at, 1);
		setenv("LOCKWAIT_GO", go, 1);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin("hubd"), "hubd", "-f", hub.conf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000 && !exists(at); i++)
		usleep(10000);
	ck_assert_msg(exists(at), "hubd B never tried to lock");
	/* A exits, unlinking its lock; then B locks */
	ck_assert_int_eq(hub_stop(&hub), 0);
	write_file(go, "");
	for (int i = 0; i < 1000 && (o = hub_request(&hub, "{\"cmd\":\"status\"}", NULL)) == NULL;
	     i++)
		usleep(10000);
	ck_assert_msg(o != NULL, "hubd B does not answer: %s", blog);
	json_object_put(o);
	ck_assert_msg(waitpid(b, &status, WNOHANG) == 0, "hubd B exited: %d", status);
	/* C, on the same paths, finds B there */
	snprintf(keys, sizeof(keys), "control = %s\n", hub.sock);
	rc = run_hubd(keys, &log);
	snprintf(want, sizeof(want), "another hubd (pid %d) owns", (int)b);
	ck_assert_msg(rc == 1 && strstr(log, want) != NULL, "exit %d, log: %s", rc, log);
	free(log);
	ck_assert_msg(exists(hub.sock), "B's socket was removed");
	kill(b, SIGTERM);
	ck_assert_int_eq(waitpid(b, &status, 0), b);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hubd B: %d", status);
}
END_TEST

/* A file at the lock's or the socket's path that is not hub's is
 * refused and left as it is. */
START_TEST(test_foreign_files_kept)
{
	const char *lock = harness_path("precious2.sock.lock");

	/* a lock path holding something else than a pid */
	write_file(lock, "my notes\n");
	expect_refused(harness_path("precious2.sock"), "is not a hubd lock file");
	ck_assert_msg(file_is(lock, "my notes\n"), "the lock path's file was changed");
	ck_assert(!exists(harness_path("precious2.sock")));
	/* a control path holding a file: refused, and the lock made before
	 * it removed again */
	write_file(harness_path("ctl"), "my diary\n");
	expect_refused(harness_path("ctl"), "is not a socket");
	ck_assert_msg(file_is(harness_path("ctl"), "my diary\n"), "the control path's file was changed");
	ck_assert(!exists(harness_path("ctl.lock")));
}
END_TEST

/* A SIGTERM while hubd is still setting up stops it cleanly once it is
 * ready, never kills it half made with its lock or socket left behind. */
START_TEST(test_sigterm_during_start)
{
	const char *conf = harness_path("big.conf");
	char lock[300];
	int status;
	pid_t pid;
	FILE *f;

	snprintf(lock, sizeof(lock), "%s.lock", harness_path("big.sock"));
	ck_assert_ptr_nonnull(f = fopen(conf, "w"));
	fprintf(f, "[hub]\ncontrol = %s\nmax_guests = 15\n"
		"slot_size = 1M\nslots_per_guest = 64\n", harness_path("big.sock"));
	fclose(f);
	if ((pid = fork()) == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl(bin("hubd"), "hubd", "-f", conf, (char *)NULL);
		_exit(127);
	}
	/* the lock is the first thing it makes */
	for (int i = 0; i < 10000 && !exists(lock); i++)
		usleep(100);
	ck_assert_msg(exists(lock), "hubd never took its lock");
	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "hubd ended with status %#x (signal %d)", status,
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_msg(!exists(lock) && !exists(harness_path("big.sock")),
		      "the lock or the socket was left");
}
END_TEST

/* A config that is no file of settings is refused at once, saying what
 * it is: a FIFO held hubd in its open until someone wrote to it, and
 * /dev/zero in its read for ever (a line that never ends). */
START_TEST(test_config_not_a_file_refused)
{
	const char *fifo = harness_path("fifo.conf");
	static const struct {
		const char *path, *kind;
	} cases[] = {
		{ NULL, "it is a FIFO" },
		{ "/dev/zero", "it is a character device" },
	};
	char *log;
	int rc;

	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = cases[i].path != NULL ? cases[i].path : fifo;

		rc = run_hubd_on(path, &log);
		ck_assert_msg(rc == 1 && strstr(log, cases[i].kind) != NULL, "%s: exit %d, log: %s",
			      path, rc, log);
		free(log);
	}
	ck_assert_int_eq(unlink(fifo), 0);
}
END_TEST

/* A config larger than 1 MiB is refused before it is read, saying its
 * size and the limit: a sparse file of 1 GiB held hubd some ten seconds
 * in its read (blank bytes, one line too long). */
START_TEST(test_config_too_large_refused)
{
	const char *huge = harness_path("huge.conf");
	char *log;
	int fd, rc;

	ck_assert_int_ge(fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
	ck_assert_int_eq(ftruncate(fd, 1L << 30), 0);	/* sparse: no disk taken */
	close(fd);
	rc = run_hubd_on(huge, &log);
	unlink(huge);
	ck_assert_msg(rc == 1 && strstr(log, "huge.conf: cannot read: it is 1073741824 bytes, "
			"and a config is at most 1048576 (1 MiB)") != NULL, "exit %d, log: %s", rc, log);
	free(log);
}
END_TEST

/* attach_timeout = 0 would kill every guest: hubd -n refuses it */
START_TEST(test_zero_attach_timeout_refused)
{
	const char *conf = harness_path("zero.conf");
	int status;
	pid_t pid;

	write_file(conf, "[hub]\nattach_timeout = 0\n");
	if ((pid = fork()) == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl(bin("hubd"), "hubd", "-n", "-f", conf, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "hubd -n: status %d", status);
}
END_TEST

Suite *suite_startup(void);
Suite *
suite_startup(void)
{
	Suite *s = suite_create("startup");
	TCase *tc = tcase_create("startup");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_small_dev_shm_limits_nothing);
	tcase_add_test(tc, test_failed_start_removes_what_it_made);
	tcase_add_test(tc, test_lock_while_the_owner_exits);
	tcase_add_test(tc, test_foreign_files_kept);
	tcase_add_test(tc, test_zero_attach_timeout_refused);
	tcase_add_test(tc, test_config_not_a_file_refused);
	tcase_add_test(tc, test_config_too_large_refused);
	tcase_add_test(tc, test_sigterm_during_start);
	suite_add_tcase(s, tc);
	return s;
}
