/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* intruder: a test guest that reaches for what is not its own, to show
 * that a guest with a uid of its own cannot. Methods are named PREFIX.x,
 * PREFIX from --prefix (default "intruder"), so it can be its own victim:
 *   probe PID		tries on process PID, answering each try's outcome
 *			as NAME=ok or NAME=ERRNO (EPERM, EACCES, ...):
 *			kill0 (kill 0), kill (SIGKILL), ptrace (PTRACE_SEIZE),
 *			mem and environ (open /proc/PID/...), fd (opendir
 *			/proc/PID/fd), fd0..fd3, fd5, fd6 (open
 *			/proc/PID/fd/N: a guest's domain is 5, its pool 6)
 *   control PATH NAME	connects to the control socket PATH and asks it to
 *			stop guest NAME: "connect=ERRNO", or "answer=LINE"
 *   whoami		"uid=N gid=N groups=A,B" (groups empty: none)
 *   kernel		asks what filter.c's seccomp filter forbids, of
 *			itself (so that only the filter can say no):
 *			process_vm_readv of its own memory, unshare of a
 *			mount namespace, keyctl, perf_event_open: each
 *			NAME=ok or NAME=ERRNO
 *   escape		more of the same, with arguments no filter-less
 *			call lets change anything (a sethostname that is
 *			too long): clone with each CLONE_NEW* flag
 *			(newns=...), clone3, the io_uring calls,
 *			personality(READ_IMPLIES_EXEC) and with bits past
 *			32, pidfd_getfd, sethostname, fanotify_init,
 *			uffd_dev (a userfaultfd by /dev/userfaultfd's
 *			USERFAULTFD_IOC_NEW: its open's errno when it
 *			cannot be opened), an
 *			AF_VSOCK socket (also with bits past the int's);
 *			and, in a child, a call of the x32 and of the i386
 *			ABI: x32= and int80= say how the child ended
 *			(SIGSYS, signal: another, exit: 0, failed: another status)
 *   work		what every plugin may need, under the same filter:
 *			a thread, fork, posix_spawn of /bin/true, the
 *			personality's query and PER_LINUX: each ok or ERRNO
 *   tty		what it could do to the terminal hubd runs on:
 *			"stdin=tty" if its fd 0 is a terminal (else
 *			stdin=ERRNO, ENOTTY), devtty= the open of /dev/tty
 *			(its controlling terminal: ENXIO when none), sti= a
 *			TIOCSTI of a newline into either's input, as a
 *			command typed into the operator's shell would be */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest.h"
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW	_IO(0xAA, 0x00)	/* linux/userfaultfd.h, Linux 6.1 */
#endif
#include "tests/guests/testguest.h"

static void
reply_str(struct guest_call *c, const char *s)
{
	size_t n = strlen(s), pos = 0;
	uint8_t *buf = malloc(n + 10);

	if (buf == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	guest_pc_put_str(buf, n + 10, &pos, s, n);
	guest_reply(c, buf, pos);
	free(buf);
}

static const char *
err_name(int err)
{
	static char other[24];

	switch (err) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ESRCH: return "ESRCH";
	case ENOENT: return "ENOENT";
	case ENXIO: return "ENXIO";
	case ENOSYS: return "ENOSYS";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case ENOTTY: return "ENOTTY";
	default:
		snprintf(other, sizeof(other), "errno%d", err);
		return other;
	}
}

/* " name=OUTCOME" appended to out. */
static void
note(char *out, size_t len, const char *name, int ok)
{
	size_t n = strlen(out);

	snprintf(out + n, len - n, "%s%s=%s", n ? " " : "", name, err_name(ok ? 0 : errno));
}

static void
try_open(char *out, size_t len, const char *name, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	note(out, len, name, fd >= 0);
	if (fd >= 0)
		close(fd);
}

static void
probe(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char out[512] = "", path[64], name[8];
	size_t pos = 0;
	uint64_t v;
	pid_t pid;
	DIR *d;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &v) != 0 || v == 0 || v > INT32_MAX) {
		guest_reply_error(c, "probe takes a pid");
		return;
	}
	pid = (pid_t)v;
	note(out, sizeof(out), "kill0", kill(pid, 0) == 0);
	note(out, sizeof(out), "kill", kill(pid, SIGKILL) == 0);
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0) {
		note(out, sizeof(out), "ptrace", 1);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	} else {
		note(out, sizeof(out), "ptrace", 0);
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	try_open(out, sizeof(out), "mem", path);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	try_open(out, sizeof(out), "environ", path);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	note(out, sizeof(out), "fd", d != NULL);
	if (d != NULL)
		closedir(d);
	for (int fd = 0; fd <= 6; fd++) {
		if (fd == 4)
			continue;	/* the error pipe, gone at exec */
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		snprintf(name, sizeof(name), "fd%d", fd);
		try_open(out, sizeof(out), name, path);
	}
	reply_str(c, out);
}

static void
control(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	char out[512], line[256], req[128];
	const char *p, *n;
	size_t pn, nn, pos = 0;
	ssize_t got;
	int fd;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &p, &pn) != 0 || pn >= sizeof(sun.sun_path) ||
	    guest_pc_get_str(args, len, &pos, &n, &nn) != 0 || nn > 64) {
		guest_reply_error(c, "control takes a socket path and a guest's name");
		return;
	}
	memcpy(sun.sun_path, p, pn);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		snprintf(out, sizeof(out), "connect=%s", err_name(errno));
		if (fd >= 0)
			close(fd);
		reply_str(c, out);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "{\"cmd\":\"stop\",\"name\":\"%.*s\"}\n", (int)nn, n);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		snprintf(out, sizeof(out), "write=%s", err_name(errno));
	else if ((got = read(fd, line, sizeof(line) - 1)) <= 0)
		snprintf(out, sizeof(out), "read=%s", got == 0 ? "eof" : err_name(errno));
	else
		snprintf(out, sizeof(out), "answer=%.*s", (int)got, line);
	out[strcspn(out, "\n")] = '\0';
	close(fd);
	reply_str(c, out);
}

static void
whoami(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	gid_t groups[64];
	char out[1024];
	int n = getgroups(64, groups);
	size_t k;

	(void)args;
	(void)len;
	(void)ctx;
	k = (size_t)snprintf(out, sizeof(out), "uid=%u gid=%u groups=", (unsigned)getuid(),
			     (unsigned)getgid());
	for (int i = 0; i < n && k < sizeof(out) - 16; i++)
		k += (size_t)snprintf(out + k, sizeof(out) - k, "%s%u", i ? "," : "",
				      (unsigned)groups[i]);
	reply_str(c, out);
}

static void
kernel(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char mine[16] = "mine", got[16], out[256];
	struct iovec local = { got, sizeof(got) }, remote = { mine, sizeof(mine) };
	long r[4];
	int e[4];

	(void)args;
	(void)len;
	(void)ctx;
	errno = 0;
	r[0] = (long)process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	e[0] = errno;
	errno = 0;
	r[1] = unshare(CLONE_NEWNS);	/* allowed to root, were it not filtered */
	e[1] = errno;
	errno = 0;
	r[2] = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -1 /* thread */, 0);
	e[2] = errno;
	errno = 0;
	r[3] = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	e[3] = errno;
	snprintf(out, sizeof(out), "process_vm_readv=%s unshare=%s keyctl=%s perf_event_open=%s",
		 r[0] >= 0 ? "ok" : err_name(e[0]), r[1] == 0 ? "ok" : err_name(e[1]),
		 r[2] >= 0 ? "ok" : err_name(e[2]), r[3] >= 0 ? "ok" : err_name(e[3]));
	reply_str(c, out);
}

/* " name=OUTCOME" of a system call's result r (ok when r >= 0). */
static void
note_r(char *out, size_t len, const char *name, long r, int err)
{
	errno = err;
	note(out, len, name, r >= 0);
}

/* A clone or clone3 that made a child: it leaves at once. */
static long
reap(long r)
{
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

/* In a child: the call of another ABI (x32: the number with bit 30, the
 * i386 ABI: int 0x80), then exit 0; "SIGSYS" when the filter ended it. */
static const char *
foreign(int i386)
{
	pid_t pid;
	int st;

	if ((pid = fork()) < 0)
		return err_name(errno);
	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);	/* no core file for the test */
		prctl(PR_SET_DUMPABLE, 0);
		/* a kernel without the i386 ABI answers int 0x80 with
		 * SIGSEGV: a death, not a handler's (ASan's) exit */
		signal(SIGSEGV, SIG_DFL);
		if (!i386) {
			syscall(0x40000000 | SYS_getpid);
		} else {
#if defined(__x86_64__)
			long r = 20;	/* getpid */

			__asm__ volatile("int $0x80" : "+a"(r) : : "memory");
#endif
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return err_name(errno);
	if (WIFSIGNALED(st))
		return WTERMSIG(st) == SIGSYS ? "SIGSYS" : "signal";
	return WEXITSTATUS(st) == 0 ? "exit" : "failed";
}

/* In a child (a guest is its process group's leader, which may not
 * make a session): a session or a process group of its own, which
 * would take it out of the group hubd ends with the guest; "ok" or the
 * errno's name. */
static const char *
leave_group(int session)
{
	pid_t pid;
	int st;

	if ((pid = fork()) < 0)
		return err_name(errno);
	if (pid == 0)
		_exit((session ? setsid() : setpgid(0, 0)) >= 0 ? 0 : errno == EPERM ? 1 : 2);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return "error";
	return WEXITSTATUS(st) == 0 ? "ok" : WEXITSTATUS(st) == 1 ? "EPERM" : "error";
}

static void
escape(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const struct {
		const char	*name;
		unsigned long	 flag;
	} ns[] = {
		{ "newns", CLONE_NEWNS }, { "newuts", CLONE_NEWUTS },
		{ "newipc", CLONE_NEWIPC }, { "newuser", CLONE_NEWUSER },
		{ "newpid", CLONE_NEWPID }, { "newnet", CLONE_NEWNET },
		{ "newcgroup", CLONE_NEWCGROUP },
		{ "newuser+ns+net", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET },
	};
	struct {	/* clone3's struct clone_args, as of Linux 5.3 */
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
		uint64_t stack, stack_size, tls;
	} ca = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
	uint64_t params[16] = { 0 };	/* struct io_uring_params, 120 bytes */
	char out[1024] = "", name[256];
	long r, was;
	int fd;

	(void)args;
	(void)len;
	(void)ctx;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		errno = 0;
		r = reap(syscall(SYS_clone, ns[i].flag | SIGCHLD, NULL, NULL, NULL, NULL));
		note_r(out, sizeof(out), ns[i].name, r, errno);
	}
	errno = 0;
	r = reap(syscall(SYS_clone3, &ca, sizeof(ca)));
	note_r(out, sizeof(out), "clone3", r, errno);
	errno = 0;
	if ((r = syscall(SYS_io_uring_setup, 8, params)) >= 0)
		close((int)r);
	note_r(out, sizeof(out), "io_uring_setup", r, errno);
	errno = 0;
	r = syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
	note_r(out, sizeof(out), "io_uring_enter", r, errno);
	errno = 0;
	r = syscall(SYS_io_uring_register, -1, 0, NULL, 0);
	note_r(out, sizeof(out), "io_uring_register", r, errno);
	was = syscall(SYS_personality, 0xffffffffUL);
	errno = 0;
	r = syscall(SYS_personality, (unsigned long)READ_IMPLIES_EXEC);
	note_r(out, sizeof(out), "personality", r, errno);
	syscall(SYS_personality, (unsigned long)was);
	errno = 0;	/* the kernel reads 32 bits: PER_LINUX */
	r = syscall(SYS_personality, 0x100000000UL);
	note_r(out, sizeof(out), "personality_hi", r, errno);
	syscall(SYS_personality, (unsigned long)was);
	errno = 0;
	if ((fd = (int)syscall(SYS_pidfd_open, getpid(), 0)) >= 0) {
		if ((r = syscall(SYS_pidfd_getfd, fd, 0, 0)) >= 0)
			close((int)r);
		note_r(out, sizeof(out), "pidfd_getfd", r, errno);
		close(fd);
	} else {
		note_r(out, sizeof(out), "pidfd_open", -1, errno);
	}
	memset(name, 'x', sizeof(name));
	errno = 0;	/* 65 bytes: EINVAL, had it passed */
	r = sethostname(name, 65);
	note_r(out, sizeof(out), "sethostname", r, errno);
	errno = 0;	/* no such flags: EINVAL, had it passed */
	r = syscall(SYS_fanotify_init, 0xffffffffUL, 0);
	note_r(out, sizeof(out), "fanotify_init", r, errno);
	errno = 0;
	if ((fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC)) >= 0) {
		if ((r = ioctl(fd, USERFAULTFD_IOC_NEW, O_CLOEXEC)) >= 0)
			close((int)r);
		close(fd);
		fd = (int)r;
	}
	note_r(out, sizeof(out), "uffd_dev", fd, errno);
	errno = 0;
	if ((fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0)
		close(fd);
	note_r(out, sizeof(out), "vsock", fd, errno);
	errno = 0;	/* the kernel reads an int: AF_VSOCK */
	if ((r = syscall(SYS_socket, 0xffffffff00000000UL | AF_VSOCK,
			 SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0)
		close((int)r);
	note_r(out, sizeof(out), "vsock_hi", r, errno);
	snprintf(out + strlen(out), sizeof(out) - strlen(out), " setsid=%s setpgid=%s",
		 leave_group(1), leave_group(0));
	snprintf(out + strlen(out), sizeof(out) - strlen(out), " x32=%s int80=%s", foreign(0),
		 foreign(1));
	reply_str(c, out);
}

static void *
thread_main(void *arg)
{
	return arg;
}

static void
work(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char *const argv[] = { "true", NULL };
	char out[256] = "";
	pthread_t t;
	pid_t pid;
	long was;
	int rc, st = -1;

	(void)args;
	(void)len;
	(void)ctx;
	if ((rc = pthread_create(&t, NULL, thread_main, NULL)) == 0)
		pthread_join(t, NULL);
	errno = rc;
	note(out, sizeof(out), "thread", rc == 0);
	if ((pid = fork()) == 0)
		_exit(7);
	if (pid > 0)
		waitpid(pid, &st, 0);
	note(out, sizeof(out), "fork", pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 7);
	st = -1;
	if ((rc = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, NULL)) == 0)
		waitpid(pid, &st, 0);
	errno = rc;
	note(out, sizeof(out), "spawn", rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	errno = 0;
	was = personality(0xffffffff);
	note(out, sizeof(out), "personality_query", was != -1);
	errno = 0;
	note(out, sizeof(out), "personality_linux", personality(PER_LINUX) != -1);
	reply_str(c, out);
}

static void
tty(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char out[256] = "", nl = '\n';
	int fd, r;

	(void)args;
	(void)len;
	(void)ctx;
	errno = 0;
	r = isatty(STDIN_FILENO);
	snprintf(out, sizeof(out), "stdin=%s", r ? "tty" : err_name(errno));
	errno = 0;
	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	note(out, sizeof(out), "devtty", fd >= 0);
	errno = 0;
	r = ioctl(fd >= 0 ? fd : STDIN_FILENO, TIOCSTI, &nl);
	note(out, sizeof(out), "sti", r == 0);
	if (fd >= 0)
		close(fd);
	reply_str(c, out);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "probe", "u64->str", probe },
		{ "control", "str,str->str", control },
		{ "whoami", "->str", whoami },
		{ "kernel", "->str", kernel },
		{ "escape", "->str", escape },
		{ "work", "->str", work },
		{ "tty", "->str", tty },
	};
	struct guest *g;
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "intruder"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
