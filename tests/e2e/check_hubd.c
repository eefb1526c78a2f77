/* hubd as a process: what its guests inherit from it, whatever the kernel,
 * and what -v adds to its log. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

/* r[shm.spawn.fd-inheritance]: a guest gets stdin, stdout, stderr and its
 * doorbell, nothing else, also of what hubd inherited without
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
	ck_assert_msg(rc == 0 && strcmp(out, "0 1 2 3\n") == 0,
		      "the guest started with fds '%s' (status %d)", out, rc);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
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
	suite_add_tcase(s, tc);
	return s;
}
