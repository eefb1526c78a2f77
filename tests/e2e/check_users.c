/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Each guest its own user ([hub] guest_uids): a guest without user = runs
 * as a uid of its own, the same for its name across restarts, unique on
 * the machine (other hubs' guests of the same name too); it cannot
 * signal, ptrace or read the /proc files of another guest or of hubd, nor
 * use the control socket; user = root, guest_uids = no, a hubd that is
 * not root and an executable its uid cannot reach run it as said, the
 * last two as hubd's user with one log line. The guests are copies of
 * tests/guests/intruder in this run's directory, which any uid can reach
 * (the build directory may be under /root). Needs root; skipped without. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/config.h"
#include "tests/e2e/harness.h"

#define NOBODY	65534		/* nobody, nogroup */
#define UID_LOCK	"/run/hub/uids.lock"	/* hubd's HUB_UID_LOCK */
/* A uid of the default range, this test's alone: past the ones the
 * names here hash to, and another run's (another pid) only by chance */
#define LONE_UID	(CONFIG_GUEST_UIDS_FIRST + 40000u + (uint32_t)getpid() % 20000u)
/* Eight uids of the default range below LONE_UID's, this test's alone
 * (another run's only by chance): other hubs (suites run beside this
 * one) start and stop guests named a and b, and one of them could take
 * our a's number while our hubd restarts */
#define SLICE_UIDS	(CONFIG_GUEST_UIDS_FIRST + 20000u + (uint32_t)getpid() % 2500u * 8u)

static struct hub_proc hub, hub2;

/* A copy of the built program name at path (mode 0755); path. */
static const char *
copy_bin(const char *name, const char *path)
{
	char buf[65536];
	ssize_t n;
	int in = open(bin(name), O_RDONLY | O_CLOEXEC), out;

	ck_assert_msg(in >= 0, "%s: %s", name, strerror(errno));
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ck_assert_msg(out >= 0, "%s: %s", path, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	ck_assert_int_eq(fchmod(out, 0755), 0);
	ck_assert_int_eq(close(out), 0);
	return path;
}

/* The intruder in this run's directory, which every uid can reach. */
static const char *
intruder(void)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s", harness_path("intruder"));
	if (access(path, X_OK) != 0)
		copy_bin("tests/guests/intruder", path);
	return path;
}

/* [guest NAME] running the intruder with methods NAME.*, then extra. */
static const char *
guest(char *buf, size_t len, const char *name, const char *exec, const char *extra)
{
	snprintf(buf, len, "[guest %s]\nexec = %s\nargs = --prefix %s\n%s", name, exec, name,
		 extra != NULL ? extra : "");
	return buf;
}

/* hubctl call method [arg [arg2]] on h: its output (malloc'd),
 * asserting it answered. */
static char *
call_on(struct hub_proc *h, const char *method, const char *arg, const char *arg2)
{
	char *out = NULL;
	int rc = hubctl(h, &out, "call", method, arg, arg2, (char *)NULL);

	ck_assert_msg(rc == 0, "%s: exit %d, '%s': %s", method, rc, out ? out : "",
		      hub_log_tail(h));
	return out;
}

static char *
call(const char *method, const char *arg, const char *arg2)
{
	return call_on(&hub, method, arg, arg2);
}

/* The guest's "user" of hubctl -j peers NAME on h (a new reference). */
static json_object *
user_on(struct hub_proc *h, const char *name)
{
	char *out = NULL;
	json_object *o, *u;

	hubctl_ok(h, &out, "-j", "peers", name, (char *)NULL);
	o = json_tokener_parse(out);
	ck_assert_msg(o != NULL && (u = json_get(o, "user")) != NULL, "peers %s: %s", name, out);
	json_object_get(u);
	json_object_put(o);
	free(out);
	return u;
}

static json_object *
user_of(const char *name)
{
	return user_on(&hub, name);
}

static long long
user_uid(const char *name)
{
	json_object *u = user_of(name);
	long long uid = json_object_get_int64(json_get(u, "uid"));

	json_object_put(u);
	return uid;
}

/* A field of /proc/PID/status ("Uid:" ...): its first number, -1. */
static long
status_field(int pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

/* How many times text is in h's log. */
static int
log_count_on(struct hub_proc *h, const char *text)
{
	char *log = hub_log(h), *p = log;
	int n = 0;

	while (p != NULL && (p = strstr(p, text)) != NULL) {
		n++;
		p += strlen(text);
	}
	free(log);
	return n;
}

static int
log_count(const char *text)
{
	return log_count_on(&hub, text);
}

/* Asserts that guest name runs as a uid of its own: in the default
 * range, not 0, its process's uid and gid (with no other group), no new
 * privileges; returns it. */
static long long
expect_own_on(struct hub_proc *h, const char *name)
{
	json_object *u = user_on(h, name);
	long long uid = json_object_get_int64(json_get(u, "uid"));
	int pid = hub_peer_int(h, name, "pid");
	char method[64], want[64], *out;

	ck_assert_msg(strcmp(json_object_get_string(json_get(u, "as")), "own") == 0 &&
		      uid >= CONFIG_GUEST_UIDS_FIRST && uid <= CONFIG_GUEST_UIDS_LAST &&
		      json_object_get_int64(json_get(u, "gid")) == uid,
		      "%s: %s", name, json_object_to_json_string(u));
	json_object_put(u);
	ck_assert_int_eq(status_field(pid, "Uid:"), uid);
	ck_assert_int_eq(status_field(pid, "Gid:"), uid);
	ck_assert_int_eq(status_field(pid, "NoNewPrivs:"), 1);
	snprintf(method, sizeof(method), "%s.whoami", name);
	snprintf(want, sizeof(want), "uid=%lld gid=%lld groups=\n", uid, uid);
	out = call_on(h, method, NULL, NULL);
	ck_assert_str_eq(out, want);
	free(out);
	return uid;
}

static long long
expect_own(const char *name)
{
	return expect_own_on(&hub, name);
}

/* A uid of its own per guest, in the range (a slice of the default
 * one, SLICE_UIDS), not 0, one per name, the same after the guest's
 * restart, hubd's restart and a reload that adds a guest. Its memory is
 * handed to it as fds: the uid needs no group. */
START_TEST(test_own_uid_per_guest)
{
	char a[1100], b[1100], c[1100], guests[3400], msgs[1024], keys[64];
	long long ua, ub, uc;

	if (geteuid() != 0)
		return;
	snprintf(keys, sizeof(keys), "guest_uids = %u-%u\n", SLICE_UIDS, SLICE_UIDS + 7);
	guest(a, sizeof(a), "a", intruder(), NULL);
	guest(b, sizeof(b), "b", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s", a, b);
	hub_start_up(&hub, keys, guests, "a,b");
	ck_assert(hub_wait_method(&hub, "a.whoami,b.whoami") == 0);
	ua = expect_own("a");
	ub = expect_own("b");
	ck_assert_msg(ua != ub, "a and b share uid %lld", ua);
	/* the guest restarted: the same uid */
	free(call("a.whoami", NULL, NULL));
	{
		char *out = NULL;

		hubctl_ok(&hub, &out, "restart", "a", (char *)NULL);
		free(out);
	}
	ck_assert(hub_wait_up(&hub, "a", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "a.whoami") == 0);
	ck_assert_int_eq(expect_own("a"), ua);
	/* hubd restarted: the same uids */
	ck_assert_int_eq(hub_stop(&hub), 0);
	ck_assert_msg(hub_restart(&hub) == 0, "hubd: %s", hub_log_tail(&hub));
	ck_assert(hub_wait_up(&hub, "a,b", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "a.whoami,b.whoami") == 0);
	ck_assert_int_eq(expect_own("a"), ua);
	ck_assert_int_eq(expect_own("b"), ub);
	/* a guest added by a reload: another uid, the others keep theirs */
	guest(c, sizeof(c), "c", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s%s", a, b, c);
	ck_assert_int_eq(hub_write_conf(&hub, keys, guests), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 1, "reload: %s", msgs);
	ck_assert(hub_wait_up(&hub, "c", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "c.whoami") == 0);
	uc = expect_own("c");
	ck_assert_msg(uc != ua && uc != ub, "c has %lld (a %lld, b %lld)", uc, ua, ub);
	ck_assert_int_eq(user_uid("a"), ua);
	ck_assert_int_eq(user_uid("b"), ub);
	ck_assert_int_eq(hub_peer_int(&hub, "a", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Every try of probe's answer (NAME=OUTCOME ...) was refused, with EPERM
 * or EACCES, and all twelve were made. */
static void
expect_refused(const char *answer, const char *whom)
{
	static const char *const tries[] = {
		"kill0", "kill", "ptrace", "mem", "environ", "fd", "fd0", "fd1", "fd2", "fd3",
		"fd5", "fd6",
	};
	char want[32];

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		const char *p;

		snprintf(want, sizeof(want), "%s=", tries[i]);
		for (p = answer; (p = strstr(p, want)) != NULL; p++)
			if (p == answer || p[-1] == ' ')
				break;
		ck_assert_msg(p != NULL, "%s: no %s in '%s'", whom, tries[i], answer);
		p += strlen(want);
		ck_assert_msg(strncmp(p, "EPERM", 5) == 0 || strncmp(p, "EACCES", 6) == 0,
			      "%s: %s was not refused: '%s'", whom, tries[i], answer);
	}
}

/* A guest cannot signal, ptrace, or open /proc/PID/mem, environ or fd of
 * another guest or of hubd; both still answer after the tries. */
/* hubd as root without CAP_SETUID and CAP_SETGID: a guest it cannot give
 * a user of its own fails saying why and what to do, where it said
 * 'group: Operation not permitted' alone. */
START_TEST(test_root_without_setid_says_so)
{
	char guests[1100], keys[64], *log = NULL;
	const char *want = "group: Operation not permitted: hubd runs as root without "
			   "CAP_SETGID, so it cannot give a guest a user of its own";

	if (geteuid() != 0)
		return;
	snprintf(keys, sizeof(keys), "guest_uids = %u-%u\n", SLICE_UIDS, SLICE_UIDS + 7);
	guest(guests, sizeof(guests), "a", intruder(), NULL);
	hub_next_without_setid();
	ck_assert_int_eq(hub_start(&hub, keys, guests), 0);
	for (double end = now_s() + 30; now_s() < end; sleep_ms(50)) {
		free(log);
		if (strstr(log = hub_log(&hub), want) != NULL)
			break;
	}
	ck_assert_msg(strstr(log, want) != NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

START_TEST(test_guest_cannot_touch_others)
{
	char in[1100], vi[1100], guests[2300], pid[24], *out;
	int victim;

	if (geteuid() != 0)
		return;
	guest(in, sizeof(in), "intruder", intruder(), NULL);
	guest(vi, sizeof(vi), "victim", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s", in, vi);
	hub_start_up(&hub, NULL, guests, "intruder,victim");
	ck_assert(hub_wait_method(&hub, "intruder.probe,victim.whoami") == 0);
	expect_own("intruder");
	expect_own("victim");
	victim = hub_peer_int(&hub, "victim", "pid");
	snprintf(pid, sizeof(pid), "%d", victim);
	out = call("intruder.probe", pid, NULL);
	expect_refused(out, "victim");
	free(out);
	snprintf(pid, sizeof(pid), "%d", (int)hub.pid);
	out = call("intruder.probe", pid, NULL);
	expect_refused(out, "hubd");
	free(out);
	/* the victims live on, the same processes */
	free(call("victim.whoami", NULL, NULL));
	ck_assert_int_eq(hub_peer_int(&hub, "victim", "pid"), victim);
	ck_assert_int_eq(hub_peer_int(&hub, "victim", "restarts"), 0);
	ck_assert(alive(hub.pid));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest cannot use the control socket: it cannot open it (0660,
 * hubd's user and group), and its stop of another guest changes
 * nothing. */
START_TEST(test_guest_cannot_use_control)
{
	char in[1100], vi[1100], guests[2300], *out;
	int victim;

	if (geteuid() != 0)
		return;
	guest(in, sizeof(in), "intruder", intruder(), NULL);
	guest(vi, sizeof(vi), "victim", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s", in, vi);
	hub_start_up(&hub, NULL, guests, "intruder,victim");
	ck_assert(hub_wait_method(&hub, "intruder.control,victim.whoami") == 0);
	expect_own("intruder");
	victim = hub_peer_int(&hub, "victim", "pid");
	out = call("intruder.control", hub.sock, "victim");
	ck_assert_msg(strcmp(out, "connect=EACCES\n") == 0, "control: '%s'", out);
	free(out);
	ck_assert_str_eq(hub_peer_state(&hub, "victim"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "victim", "pid"), victim);
	free(call("victim.whoami", NULL, NULL));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* [hub] group is the control socket's, not the guests': a guest's own
 * uid has its own number as its group and no other, so even with the
 * group set it cannot open the socket. */
START_TEST(test_hub_group_is_not_the_guests)
{
	char in[1100], vi[1100], guests[2300], want[96], *out;
	long long uid;
	int victim;

	if (geteuid() != 0)
		return;
	guest(in, sizeof(in), "intruder", intruder(), NULL);
	guest(vi, sizeof(vi), "victim", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s", in, vi);
	hub_start_up(&hub, "group = nogroup\n", guests, "intruder,victim");
	ck_assert(hub_wait_method(&hub, "intruder.control,victim.whoami") == 0);
	uid = user_uid("intruder");
	ck_assert_msg(uid >= CONFIG_GUEST_UIDS_FIRST && uid <= CONFIG_GUEST_UIDS_LAST,
		      "uid %lld", uid);
	snprintf(want, sizeof(want), "uid=%lld gid=%lld groups=\n", uid, uid);
	out = call("intruder.whoami", NULL, NULL);
	ck_assert_str_eq(out, want);
	free(out);
	victim = hub_peer_int(&hub, "victim", "pid");
	out = call("intruder.control", hub.sock, "victim");
	ck_assert_msg(strcmp(out, "connect=EACCES\n") == 0, "control: '%s'", out);
	free(out);
	ck_assert_str_eq(hub_peer_state(&hub, "victim"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "victim", "pid"), victim);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Every guest starts with filter.c's system call filter: even as root
 * (user = root, so that its uid stops nothing) it cannot read its own
 * memory through process_vm_readv, unshare, use keys or perf; with
 * seccomp = no it can, and peers says which. */
START_TEST(test_system_calls_filtered)
{
	char a[1100], b[1100], guests[2300], *out;
	json_object *p;

	if (geteuid() != 0)
		return;
	guest(a, sizeof(a), "kept", intruder(), "user = root\n");
	guest(b, sizeof(b), "free", intruder(), "user = root\nseccomp = no\n");
	snprintf(guests, sizeof(guests), "%s%s", a, b);
	hub_start_up(&hub, NULL, guests, "kept,free");
	ck_assert(hub_wait_method(&hub, "kept.kernel,free.kernel") == 0);
	out = call("kept.kernel", NULL, NULL);
	ck_assert_str_eq(out, "process_vm_readv=EPERM unshare=EPERM keyctl=EPERM "
			 "perf_event_open=EPERM\n");
	free(out);
	out = call("free.kernel", NULL, NULL);
	ck_assert_msg(strncmp(out, "process_vm_readv=ok unshare=ok ", 31) == 0, "%s", out);
	free(out);
	p = hub_peer(&hub, "kept");
	ck_assert(json_object_get_boolean(json_get(p, "seccomp")));
	json_object_put(p);
	p = hub_peer(&hub, "free");
	ck_assert(!json_object_get_boolean(json_get(p, "seccomp")));
	json_object_put(p);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A hubd started by hand from a shell (here on a pty of the test's, its
 * controlling terminal and stdin): its guests get neither. A guest that
 * had the terminal at fd 0, or could open it as /dev/tty, read the
 * operator's keys and, with TIOCSTI, typed commands into the shell that
 * runs once hubd stops, as whoever started hubd (root). Whatever uid the
 * guest runs as. */
START_TEST(test_guest_has_no_terminal)
{
	char in[1100], *out;
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	ck_assert_msg(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 &&
		      ptsname(master) != NULL, "pty: %s", strerror(errno));
	hub_next_terminal(ptsname(master));
	guest(in, sizeof(in), "intruder", intruder(), NULL);
	hub_start_up(&hub, NULL, in, "intruder");
	ck_assert(hub_wait_method(&hub, "intruder.tty") == 0);
	out = call("intruder.tty", NULL, NULL);
	close(master);
	ck_assert_str_eq(out, "stdin=ENOTTY devtty=ENXIO sti=ENOTTY\n");
	free(out);
	/* not by a session of its own: that would be a scheduler autogroup
	 * of its own too, where its yields hand nothing to hubd or a peer */
	ck_assert_int_eq(getsid(hub_peer_int(&hub, "intruder", "pid")), getsid(hub.pid));
	ck_assert_int_ne(getpgid(hub_peer_int(&hub, "intruder", "pid")), getpgid(hub.pid));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* What the filtered guest's int 0x80 must end in, given how it ended in
 * the unfiltered one (free, its " int80=" field): SIGSYS where the
 * kernel runs the i386 ABI (free's child exits), which the filter does
 * not allow; the kernel's own end where it runs none (IA32 emulation
 * off, or a paravirtualized VM that takes no int 0x80: a signal before
 * any filter; seen on Linux 6.18 under PVM); no int
 * 0x80 off x86-64: the child just exits. */
static const char *
int80_want(const char *free_out)
{
	const char *f = strstr(free_out, " int80=");

	ck_assert_msg(f != NULL, "%s", free_out);
	f += strlen(" int80=");
#if defined(__x86_64__)
	if (strncmp(f, "exit", 4) == 0)
		return "SIGSYS";
	ck_assert_msg(strncmp(f, "signal", 6) == 0, "%s", free_out);
	return "signal";
#else
	return "exit";
#endif
}

/* What seccomp = no would let a guest do and the filter does not: new
 * namespaces through clone (unshare and setns fail already), clone3
 * (ENOSYS: its flags are out of the filter's sight), io_uring, a
 * personality but Linux's, another process's fds, the host name,
 * fanotify, a userfaultfd by /dev/userfaultfd (root's to open), vsock, a child leaving the guest's process group (it would
 * outlive the guest and hubd), another ABI's calls (the process ends). As root, so
 * that its uid stops nothing; and as a uid of its own, for whom the
 * kernel allows a user namespace. Threads, fork and posix_spawn work
 * under it (glibc's clone3 falls back to clone). */
START_TEST(test_escapes_filtered)
{
	static const char work[] = "thread=ok fork=ok spawn=ok personality_query=ok "
				   "personality_linux=ok\n";
	char a[1100], b[1100], c[1100], guests[3400], want[600], *out;
	const char *int80;
	/* the device is Linux 6.1's, with CONFIG_USERFAULTFD */
	int uffd = access("/dev/userfaultfd", F_OK) == 0;

	if (geteuid() != 0)
		return;
	guest(a, sizeof(a), "kept", intruder(), "user = root\n");
	guest(b, sizeof(b), "free", intruder(), "user = root\nseccomp = no\n");
	guest(c, sizeof(c), "own", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s%s", a, b, c);
	hub_start_up(&hub, NULL, guests, "kept,free,own");
	ck_assert(hub_wait_method(&hub, "kept.escape,free.escape,own.escape") == 0);
	out = call("free.escape", NULL, NULL);
	int80 = int80_want(out);
	free(out);
	out = call("kept.escape", NULL, NULL);
	snprintf(want, sizeof(want), "newns=EPERM newuts=EPERM newipc=EPERM newuser=EPERM "
		 "newpid=EPERM newnet=EPERM newcgroup=EPERM newuser+ns+net=EPERM "
		 "clone3=ENOSYS io_uring_setup=EPERM io_uring_enter=EPERM "
		 "io_uring_register=EPERM personality=EPERM personality_hi=EPERM "
		 "pidfd_getfd=EPERM sethostname=EPERM fanotify_init=EPERM uffd_dev=%s "
		 "vsock=EPERM vsock_hi=EPERM setsid=EPERM setpgid=EPERM x32=SIGSYS "
		 "int80=%s\n", uffd ? "EPERM" : "ENOENT", int80);
	ck_assert_str_eq(out, want);
	free(out);
	/* without the filter the same calls pass (or fail on their
	 * arguments): what the test sees is the filter's doing */
	out = call("free.escape", NULL, NULL);
	ck_assert_msg(strstr(out, " newuser+ns+net=ok clone3=ok ") != NULL &&
		      strstr(out, " personality=ok personality_hi=ok pidfd_getfd=ok "
			     "sethostname=EINVAL ") != NULL &&
		      strstr(out, " setsid=ok setpgid=ok ") != NULL &&
		      (!uffd || strstr(out, " uffd_dev=ok ") != NULL) &&
		      strstr(out, " x32=SIGSYS") == NULL, "%s", out);
	free(out);
	out = call("own.escape", NULL, NULL);
	ck_assert_msg(strstr(out, " newuser=EPERM ") != NULL &&
		      (!uffd || strstr(out, " uffd_dev=EACCES ") != NULL) &&
		      strstr(out, " clone3=ENOSYS io_uring_setup=EPERM ") != NULL, "%s", out);
	free(out);
	out = call("kept.work", NULL, NULL);
	ck_assert_str_eq(out, work);
	free(out);
	out = call("own.work", NULL, NULL);
	ck_assert_str_eq(out, work);
	free(out);
	out = call("free.work", NULL, NULL);
	ck_assert_str_eq(out, work);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* user = root runs the guest as root, said so; guest_uids = no runs
 * every guest without user = as hubd's user. */
START_TEST(test_user_root_and_guest_uids_no)
{
	char g[1100], *out;
	json_object *u;

	if (geteuid() != 0)
		return;
	hub_start_up(&hub, NULL, guest(g, sizeof(g), "root", intruder(), "user = root\n"),
		     "root");
	ck_assert(hub_wait_method(&hub, "root.whoami") == 0);
	u = user_of("root");
	ck_assert_msg(strcmp(json_object_get_string(json_get(u, "as")), "user") == 0 &&
		      json_object_get_int64(json_get(u, "uid")) == 0 &&
		      strcmp(json_object_get_string(json_get(u, "name")), "root") == 0,
		      "%s", json_object_to_json_string(u));
	json_object_put(u);
	ck_assert_int_eq(status_field(hub_peer_int(&hub, "root", "pid"), "Uid:"), 0);
	hubctl_ok(&hub, &out, "peers", "root", (char *)NULL);
	ck_assert_msg(strstr(out, "user: root (user =)\n") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);

	hub_start_up(&hub, "guest_uids = no\n", guest(g, sizeof(g), "a", intruder(), NULL),
		     "a");
	ck_assert(hub_wait_method(&hub, "a.whoami") == 0);
	u = user_of("a");
	ck_assert_msg(strcmp(json_object_get_string(json_get(u, "as")), "hubd") == 0 &&
		      json_object_get_int64(json_get(u, "uid")) == 0 &&
		      strcmp(json_object_get_string(json_get(u, "why")), "guest_uids = no") == 0,
		      "%s", json_object_to_json_string(u));
	json_object_put(u);
	ck_assert_int_eq(status_field(hub_peer_int(&hub, "a", "pid"), "Uid:"), 0);
	hubctl_ok(&hub, &out, "peers", "a", (char *)NULL);
	ck_assert_msg(strstr(out, "user: root (hubd's: guest_uids = no)\n") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* An executable its uid cannot reach (in a directory of mode 0700): the
 * guest runs as hubd's user, said once when hubd takes its settings (not
 * again at its restart), and once for a guest a reload adds; it answers. */
START_TEST(test_unreachable_exec_runs_as_hubd)
{
	const char *dir = harness_path("private");
	char exec[512], g[1100], g2[1100], both[2300], msgs[1024], want[600], *out;
	json_object *u;

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(chmod(dir, 0700), 0);
	snprintf(exec, sizeof(exec), "%s/intruder", dir);
	copy_bin("tests/guests/intruder", exec);
	guest(g, sizeof(g), "hidden", exec, NULL);
	hub_start_up(&hub, NULL, g, "hidden");
	ck_assert(hub_wait_method(&hub, "hidden.whoami") == 0);
	out = call("hidden.whoami", NULL, NULL);
	ck_assert_msg(strncmp(out, "uid=0 gid=0 ", 12) == 0, "whoami: %s", out);
	free(out);
	u = user_of("hidden");
	ck_assert_msg(strcmp(json_object_get_string(json_get(u, "as")), "hubd") == 0 &&
		      json_object_get_int64(json_get(u, "uid")) == 0 &&
		      strstr(json_object_get_string(json_get(u, "why")), exec) != NULL &&
		      strstr(json_object_get_string(json_get(u, "why")),
			     " is not reachable by uid ") != NULL,
		      "%s", json_object_to_json_string(u));
	snprintf(want, sizeof(want), "user: root (hubd's: %s)\n",
		 json_object_get_string(json_get(u, "why")));
	json_object_put(u);
	hubctl_ok(&hub, &out, "peers", "hidden", (char *)NULL);
	ck_assert_msg(strstr(out, want) != NULL, "no '%s' in: %s", want, out);
	free(out);
	ck_assert_msg(log_count("guest hidden: runs as hubd's user") == 1, "log: %s",
		      hub_log_tail(&hub));
	/* a restart decides nothing again */
	hubctl_ok(&hub, &out, "restart", "hidden", (char *)NULL);
	free(out);
	ck_assert(hub_wait_up(&hub, "hidden", 10000) == 0);
	ck_assert_int_eq(hub_peer_int(&hub, "hidden", "restarts"), 1);
	ck_assert_msg(log_count("guest hidden: runs as hubd's user") == 1, "log: %s",
		      hub_log_tail(&hub));
	/* a guest added by a reload: its own line, the first not again */
	guest(g2, sizeof(g2), "hidden2", exec, NULL);
	snprintf(both, sizeof(both), "%s%s", g, g2);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, both), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 1, "reload: %s", msgs);
	ck_assert(hub_wait_up(&hub, "hidden2", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "hidden2.whoami") == 0);
	free(call("hidden2.whoami", NULL, NULL));
	ck_assert_msg(log_count("guest hidden2: runs as hubd's user") == 1 &&
		      log_count("guest hidden: runs as hubd's user") == 1, "log: %s",
		      hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubd not root (here nobody, running a copy that nobody can reach):
 * every guest runs as hubd's user, said in one line for the hub, not one
 * per guest. */
START_TEST(test_hubd_not_root)
{
	const char *dir = harness_path("nobody");
	char a[1100], b[1100], guests[2300], hubd[512], *out;
	json_object *o = NULL, *u;

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(chown(dir, NOBODY, NOBODY), 0);
	memset(&hub, 0, sizeof(hub));
	snprintf(hub.conf, sizeof(hub.conf), "%s/hub.conf", dir);
	snprintf(hub.log, sizeof(hub.log), "%s/hub.log", dir);
	snprintf(hub.sock, sizeof(hub.sock), "%s/hub.sock", dir);
	guest(a, sizeof(a), "a", intruder(), NULL);
	guest(b, sizeof(b), "b", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s", a, b);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, guests), 0);
	ck_assert_int_eq(chown(hub.conf, NOBODY, NOBODY), 0);
	copy_bin("hubd", strcpy(hubd, harness_path("hubd")));
	if ((hub.pid = fork()) == 0) {
		int fd;

		if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(126);
		/* after setuid, which clears it: hubd goes with the test */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if ((fd = open(hub.log, O_WRONLY | O_CREAT | O_APPEND, 0600)) < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(hubd, "hubd", "-f", hub.conf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && (o = hub_request(&hub, "{\"cmd\":\"status\"}", NULL)) == NULL;
	     i++)
		sleep_ms(10);
	ck_assert_msg(o != NULL, "hubd as nobody: %s", hub_log_tail(&hub));
	json_object_put(o);
	ck_assert_msg(hub_wait_up(&hub, "a,b", 10000) == 0, "%s", hub_log_tail(&hub));
	ck_assert(hub_wait_method(&hub, "a.whoami,b.whoami") == 0);
	for (const char *const *n = (const char *const[]){ "a", "b", NULL }; *n; n++) {
		u = user_of(*n);
		ck_assert_msg(strcmp(json_object_get_string(json_get(u, "as")), "hubd") == 0 &&
			      json_object_get_int64(json_get(u, "uid")) == NOBODY &&
			      strcmp(json_object_get_string(json_get(u, "why")),
				     "hubd is not root") == 0,
			      "%s: %s", *n, json_object_to_json_string(u));
		json_object_put(u);
		ck_assert_int_eq(status_field(hub_peer_int(&hub, *n, "pid"), "Uid:"), NOBODY);
	}
	hubctl_ok(&hub, &out, "peers", "a", (char *)NULL);
	ck_assert_msg(strstr(out, "user: nobody (hubd's: hubd is not root)\n") != NULL, "%s", out);
	free(out);
	ck_assert_msg(log_count("hubd is not root") == 1 && log_count("apart by memory alone") == 1,
		      "log: %s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A file's text (malloc'd), "" when there is none. */
static char *
slurp(const char *path)
{
	char *text = calloc(1, 65536);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	ck_assert_ptr_nonnull(text);
	if (fd >= 0) {
		n = read(fd, text, 65535);
		close(fd);
	}
	text[n > 0 ? n : 0] = '\0';
	return text;
}

/* hub-run with a guest kv (the intruder), and inside it hubctl -j peers
 * kv and hubctl call kv.probe victim: their outputs (malloc'd). */
static void
hub_run_probe(int victim, char **peers, char **probe)
{
	char g[600], cmd[1600], pf[512], rf[512], lf[512], *log;
	int status;
	pid_t pid;

	snprintf(pf, sizeof(pf), "%s", harness_path("hub-run.peers"));
	snprintf(rf, sizeof(rf), "%s", harness_path("hub-run.probe"));
	snprintf(lf, sizeof(lf), "%s", harness_path("hub-run.log"));
	snprintf(g, sizeof(g), "kv=%s --prefix kv", intruder());
	snprintf(cmd, sizeof(cmd), "hubctl -j peers kv > %s && hubctl call kv.probe %d > %s", pf,
		 victim, rf);
	if ((pid = fork()) == 0) {
		int fd = open(lf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		/* a test that fails stops it: it stops its hub */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execl(bin("hub-run"), "hub-run", "-v", "-t", "30", "-g", g, "-w", "kv.probe", "--",
		      "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	log = slurp(lf);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hub-run: status %d: %.2500s",
		      status, log);
	free(log);
	*peers = slurp(pf);
	*probe = slurp(rf);
}

/* Guests of two hubs and of a hub-run hub, with the same names, get
 * uids of their own that differ; the guest kv of one cannot signal,
 * trace or open the /proc files (fd 5 and 6 too: its memory) of the kv
 * of another. */
START_TEST(test_uids_unique_across_hubs)
{
	char k[1100], o[1100], guests[2300], pid[24], *out, *peers, *probe;
	long long uid[5];
	json_object *j, *u;
	int victim, victim2;

	if (geteuid() != 0)
		return;
	guest(k, sizeof(k), "kv", intruder(), NULL);
	guest(o, sizeof(o), "other", intruder(), NULL);
	snprintf(guests, sizeof(guests), "%s%s", k, o);
	hub_start_up(&hub, NULL, guests, "kv,other");
	hub_start_up(&hub2, NULL, guests, "kv,other");
	ck_assert(hub_wait_method(&hub, "kv.probe,other.whoami") == 0);
	ck_assert(hub_wait_method(&hub2, "kv.probe,other.whoami") == 0);
	uid[0] = expect_own_on(&hub, "kv");
	uid[1] = expect_own_on(&hub, "other");
	uid[2] = expect_own_on(&hub2, "kv");
	uid[3] = expect_own_on(&hub2, "other");
	/* hub 2's kv against hub 1's, and the other way */
	victim = hub_peer_int(&hub, "kv", "pid");
	victim2 = hub_peer_int(&hub2, "kv", "pid");
	snprintf(pid, sizeof(pid), "%d", victim);
	out = call_on(&hub2, "kv.probe", pid, NULL);
	expect_refused(out, "hub 1's kv, from hub 2's");
	free(out);
	snprintf(pid, sizeof(pid), "%d", victim2);
	out = call_on(&hub, "kv.probe", pid, NULL);
	expect_refused(out, "hub 2's kv, from hub 1's");
	free(out);
	/* a hub-run hub's kv against hub 1's */
	hub_run_probe(victim, &peers, &probe);
	j = json_tokener_parse(peers);
	ck_assert_msg(j != NULL && (u = json_get(j, "user")) != NULL &&
		      strcmp(json_object_get_string(json_get(u, "as")), "own") == 0,
		      "hub-run's peers kv: '%s'", peers);
	uid[4] = json_object_get_int64(json_get(u, "uid"));
	json_object_put(j);
	expect_refused(probe, "hub 1's kv, from hub-run's");
	free(peers);
	free(probe);
	for (int a = 0; a < 5; a++)
		for (int b = a + 1; b < 5; b++)
			ck_assert_msg(uid[a] != uid[b], "uid %lld twice: hub 1 kv %lld other %lld, "
				      "hub 2 kv %lld other %lld, hub-run kv %lld", uid[a], uid[0],
				      uid[1], uid[2], uid[3], uid[4]);
	/* the victims live on, the same processes */
	free(call_on(&hub, "kv.whoami", NULL, NULL));
	free(call_on(&hub2, "kv.whoami", NULL, NULL));
	ck_assert_int_eq(hub_peer_int(&hub, "kv", "pid"), victim);
	ck_assert_int_eq(hub_peer_int(&hub2, "kv", "pid"), victim2);
	ck_assert_int_eq(hub_peer_int(&hub, "kv", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub2, "kv", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub2), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Hub 2 with guest_uids = lone-lone, and its one guest: that uid
 * is held elsewhere, so the guest runs as hubd's user, said why. */
static void
expect_lone_uid_taken(uint32_t lone, const char *keys, const char *guests)
{
	char why[96];
	json_object *u;

	hub_start_up(&hub2, keys, guests, "solo");
	u = user_on(&hub2, "solo");
	snprintf(why, sizeof(why), "no free uid in guest_uids %u-%u", lone, lone);
	ck_assert_msg(strcmp(json_object_get_string(json_get(u, "as")), "hubd") == 0 &&
		      strcmp(json_object_get_string(json_get(u, "why")), why) == 0,
		      "hub 2's solo: %s", json_object_to_json_string(u));
	json_object_put(u);
	ck_assert_int_eq(hub_stop(&hub2), 0);
}

/* Whether a hubd holds uid's lock (byte uid of UID_LOCK). */
static int
uid_locked(uint32_t uid)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)uid,
			    .l_len = 1 };
	int fd = open(UID_LOCK, O_RDWR | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "%s: %s", UID_LOCK, strerror(errno));
	ck_assert_int_eq(fcntl(fd, F_OFD_GETLK, &fl), 0);
	close(fd);
	return fl.l_type != F_UNLCK;
}

/* Waits until pid is gone (10 s). */
static void
wait_gone(int pid, const char *whose)
{
	double end = now_s() + 10;

	while (alive(pid) && now_s() < end)
		sleep_ms(10);
	ck_assert_msg(!alive(pid), "%s (pid %d) lives on", whose, pid);
}

/* A uid is a hub's for as long as its guest is in the config, running or
 * not: no other hub takes it. A hub killed with SIGKILL lets it go with
 * its lock, and started again its guest has it again, and works; a
 * reload that drops the guest lets it go too. */
START_TEST(test_uid_lock_dies_with_its_hub)
{
	const uint32_t lone = LONE_UID;
	char keys[64], g[1100], msgs[1024], *out;
	int pid;

	if (geteuid() != 0)
		return;
	snprintf(keys, sizeof(keys), "guest_uids = %u-%u\n", lone, lone);
	guest(g, sizeof(g), "solo", intruder(), NULL);
	hub_start_up(&hub, keys, g, "solo");
	ck_assert(hub_wait_method(&hub, "solo.whoami") == 0);
	ck_assert_int_eq(expect_own("solo"), lone);
	expect_lone_uid_taken(lone, keys, g);
	ck_assert(uid_locked(lone));
	/* stopped: no process runs as it, it is still hub 1's */
	pid = hub_peer_int(&hub, "solo", "pid");
	hubctl_ok(&hub, &out, "stop", "solo", (char *)NULL);
	free(out);
	wait_gone(pid, "solo, stopped");
	expect_lone_uid_taken(lone, keys, g);
	hubctl_ok(&hub, &out, "start", "solo", (char *)NULL);
	free(out);
	ck_assert(hub_wait_up(&hub, "solo", 10000) == 0);
	/* hub 1 killed, its guest with it (its parent-death signal) */
	pid = hub_peer_int(&hub, "solo", "pid");
	ck_assert_int_eq(kill(hub.pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(hub.pid, NULL, 0), hub.pid);
	hub.pid = 0;
	ck_assert_msg(!uid_locked(lone), "uid %u is still locked", lone);
	wait_gone(pid, "solo of the hub killed");
	/* started again: the same uid, working; still not hub 2's */
	ck_assert_msg(hub_restart(&hub) == 0, "hubd: %s", hub_log_tail(&hub));
	ck_assert(hub_wait_up(&hub, "solo", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "solo.whoami") == 0);
	ck_assert_int_eq(expect_own("solo"), lone);
	expect_lone_uid_taken(lone, keys, g);
	/* dropped by a reload: once it is gone, its uid is free for hub 2 */
	pid = hub_peer_int(&hub, "solo", "pid");
	ck_assert_int_eq(hub_write_conf(&hub, keys, ""), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 1, "reload: %s", msgs);
	wait_gone(pid, "solo, dropped");
	for (double end = now_s() + 10; uid_locked(lone) && now_s() < end;)
		sleep_ms(10);
	ck_assert_msg(!uid_locked(lone), "uid %u is still locked: %s", lone,
		      hub_log_tail(&hub));
	hub_start_up(&hub2, keys, g, "solo");
	ck_assert(hub_wait_method(&hub2, "solo.whoami") == 0);
	ck_assert_int_eq(expect_own_on(&hub2, "solo"), lone);
	ck_assert_int_eq(hub_stop(&hub2), 0);
	ck_assert(!uid_locked(lone));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A uid some process runs as, with no hub's lock on it (a guest that
 * outlived its hub, say), is not taken; once the process is gone it is. */
START_TEST(test_uid_a_process_runs_as_is_not_taken)
{
	const uint32_t lone = LONE_UID;
	char keys[64], g[1100];
	pid_t squatter;

	if (geteuid() != 0)
		return;
	snprintf(keys, sizeof(keys), "guest_uids = %u-%u\n", lone, lone);
	guest(g, sizeof(g), "solo", intruder(), NULL);
	if ((squatter = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* it goes with the test */
		if (setgroups(0, NULL) == 0 && setgid(lone) == 0 && setuid(lone) == 0)
			for (;;)
				pause();
		_exit(126);
	}
	ck_assert_int_gt(squatter, 0);
	for (double end = now_s() + 10; status_field(squatter, "Uid:") != (long)lone &&
	     alive(squatter) && now_s() < end;)
		sleep_ms(10);
	ck_assert_int_eq(status_field(squatter, "Uid:"), lone);
	expect_lone_uid_taken(lone, keys, g);
	ck_assert_int_eq(kill(squatter, SIGKILL), 0);
	ck_assert_int_eq(waitpid(squatter, NULL, 0), squatter);
	hub_start_up(&hub, keys, g, "solo");
	ck_assert(hub_wait_method(&hub, "solo.whoami") == 0);
	ck_assert_int_eq(expect_own("solo"), lone);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_users(void);
Suite *
suite_users(void)
{
	Suite *s = suite_create("users");
	TCase *tc = tcase_create("users");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_own_uid_per_guest);
	tcase_add_test(tc, test_guest_cannot_touch_others);
	tcase_add_test(tc, test_guest_cannot_use_control);
	tcase_add_test(tc, test_hub_group_is_not_the_guests);
	tcase_add_test(tc, test_system_calls_filtered);
	tcase_add_test(tc, test_escapes_filtered);
	tcase_add_test(tc, test_guest_has_no_terminal);
	tcase_add_test(tc, test_user_root_and_guest_uids_no);
	tcase_add_test(tc, test_unreachable_exec_runs_as_hubd);
	tcase_add_test(tc, test_hubd_not_root);
	tcase_add_test(tc, test_uids_unique_across_hubs);
	tcase_add_test(tc, test_root_without_setid_says_so);
	tcase_add_test(tc, test_uid_lock_dies_with_its_hub);
	tcase_add_test(tc, test_uid_a_process_runs_as_is_not_taken);
	suite_add_tcase(s, tc);
	return s;
}
