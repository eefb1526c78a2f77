/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A hung guest's stack (hangstack.h). The tool runs as hubd's child in a
 * process group of its own, its output into a memfd (no pipe to drain
 * while it runs, nothing to block on); its pidfd in the loop says when it
 * is done, the guest's timer (supervise.c) bounds its time. Its output
 * goes to hubd's log and the guest's kept lines, tagged "[stack] ".
 *
 * The tool reads memory the guest wrote, so it runs as the guest's user
 * and group, not as hubd's: a flaw in gdb or eu-stack that a guest's
 * memory could work is then the guest's own uid, not root. (Under Yama's
 * ptrace_scope 1 the guest allowed hubd's descendants to trace it before
 * its exec, spawn.c.) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/unistd.h>

#include "daemon/hangstack.h"
#include "daemon/hub.h"
#include "daemon/log.h"

#define OUT_MAX		65536	/* of its output, logged */

/* The first tool installed, NULL: none. Fixed places, never PATH. */
static const char *
find_tool(void)
{
	static const char *const tools[] = {
		"/usr/bin/eu-stack", "/usr/local/bin/eu-stack",
		"/usr/bin/gdb", "/usr/local/bin/gdb",
	};

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (access(tools[i], X_OK) == 0)
			return tools[i];
	return NULL;
}

/* Whom target runs as: its effective uid and gid, from /proc/PID/status,
 * which anyone may read. Not the owner of a file there: those are
 * root's once the guest makes itself not dumpable (the tool would run
 * as root on its memory). */
static int
owner_of(pid_t target, uid_t *uid, gid_t *gid)
{
	char path[64], line[256];
	unsigned long r, e;
	int got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)target);
	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	while (got != 3 && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			*uid = (uid_t)e;
			got |= 1;
		} else if (sscanf(line, "Gid: %lu %lu", &r, &e) == 2) {
			*gid = (gid_t)e;
			got |= 2;
		}
	}
	fclose(f);
	return got == 3 ? 0 : -EPROTO;
}

/* Why a tool as target's own user may not trace it, if hubd can tell,
 * into buf; NULL otherwise. */
static const char *
trace_barrier(pid_t target, uid_t uid, char *buf, size_t n)
{
	char path[64];
	struct stat st;
	FILE *f;
	int scope = -1;

	if ((f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re")) != NULL) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	if (scope >= 2) {
		snprintf(buf, n, "Yama's ptrace_scope is %d on this machine: %s", scope,
			 scope == 2 ? "only a process with CAP_SYS_PTRACE may trace another, and "
			 "the tool runs as the guest's user without it" : "nothing may trace");
		return buf;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)target);
	if (uid != 0 && stat(path, &st) == 0 && st.st_uid == 0) {
		snprintf(buf, n, "the guest made itself not dumpable (PR_SET_DUMPABLE 0): its "
			 "own user may not trace it, and hubd does not trace it as root");
		return buf;
	}
	return NULL;
}

static void
done_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct hangstack *s = &p->stack;
	siginfo_t si;
	char *buf, why[192];
	ssize_t n;

	(void)revents;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG) != 0 || si.si_pid == 0)
		return;
	ev_io_stop(loop, w);
	close(s->pidfd);
	s->pidfd = -1;
	s->pid = 0;
	if ((buf = malloc(OUT_MAX)) != NULL &&
	    (n = pread(s->out, buf, OUT_MAX, 0)) > 0)
		guestlog_text(p, "[stack] ", buf, (size_t)n);
	else
		log_warnx("guest %s: its stack: no output", p->conf->name);
	free(buf);
	/* the tool's own words (gdb's "ptrace: Operation not permitted",
	 * exiting 0) do not say why */
	if (p->pid == s->target && trace_barrier(s->target, s->uid, why, sizeof(why)) != NULL)
		log_warnx("guest %s: its stack: %s could not trace it: %s", p->conf->name,
			  s->tool, why);
	close(s->out);
	s->out = -1;
	/* the guest it was for, still waiting for it: ended now */
	if (p->pid == s->target)
		s->done(p->hub, p);
}

static int	run_tool(struct hangstack *s, const char *tool, pid_t target);

static void
say_taking(const struct peer *p)
{
	log_warnx("guest %s: taking its stack with %s as uid %u (%.0f s at most)", p->conf->name,
		  p->stack.tool, (unsigned)p->stack.uid, HANGSTACK_LIMIT_S);
}

/* Whether pid has a handler for sig: its SigCgt mask in /proc (a guest
 * that does not would die of it, stack untaken). */
static int
catches(pid_t pid, int sig)
{
	char path[64], line[128];
	unsigned long long mask;
	FILE *f;
	int yes = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
			yes = sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1) != 0;
			break;
		}
	fclose(f);
	return yes;
}

/* The guest had its time to write its own stack: the tool now, or (the
 * guest gone meanwhile, or no tool started) done. */
static void
dump_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer *p = w->data;
	struct hangstack *s = &p->stack;
	int rc;

	(void)revents;
	if (p->pid != s->target) {	/* ended meanwhile: nothing to take */
		close(s->out);
		s->out = -1;
		return;
	}
	if ((rc = run_tool(s, s->tool, s->target)) != 0) {
		errno = -rc;
		log_warn("guest %s: its stack: %s", p->conf->name, s->tool);
		close(s->out);
		s->out = -1;
		s->done(p->hub, p);
		return;
	}
	ev_io_set(&s->w, s->pidfd, EV_READ);
	ev_io_start(loop, &s->w);
	say_taking(p);
}

void
hangstack_init(struct peer *p)
{
	p->stack.pid = 0;
	p->stack.pidfd = p->stack.out = -1;
	ev_io_init(&p->stack.w, done_cb, -1, EV_READ);
	p->stack.w.data = p;
	ev_timer_init(&p->stack.dump, dump_cb, HANGSTACK_DUMP_S, 0.);
	p->stack.dump.data = p;
}

/* The tool, on p's pid as its user, its output into out. -errno. */
static int
run_tool(struct hangstack *s, const char *tool, pid_t target)
{
	char pid[16], *argv[12];
	int n = 0, rc;
	pid_t child;
	uid_t uid = 0;
	gid_t gid = 0;

	snprintf(pid, sizeof(pid), "%d", (int)target);
	argv[n++] = (char *)(uintptr_t)tool;
	if (strstr(tool, "eu-stack") != NULL) {
		argv[n++] = "-p";
		argv[n++] = pid;
	} else {
		argv[n++] = "-batch";
		argv[n++] = "-nx";
		argv[n++] = "-q";
		argv[n++] = "-p";
		argv[n++] = pid;
		argv[n++] = "-ex";
		argv[n++] = "thread apply all bt";
	}
	argv[n] = NULL;
	if ((rc = owner_of(target, &uid, &gid)) != 0)
		return rc;
	s->uid = uid;
	if ((child = fork()) < 0)
		return -errno;
	if (child == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		if (null < 0 || dup2(null, 0) != 0 || dup2(s->out, 1) != 1 ||
		    dup2(s->out, 2) != 2)
			_exit(127);
		/* the guest's user, none of ours (a hubd not root runs its
		 * guests as itself: nothing to change); setuid clears the
		 * death signal: set after */
		if ((uid != geteuid() || gid != getegid()) &&
		    (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0))
			_exit(126);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			_exit(126);
		closefrom(3);
		execv(tool, argv);
		_exit(127);
	}
	setpgid(child, child);
	s->pid = child;
	if ((s->pidfd = (int)syscall(SYS_pidfd_open, child, 0)) < 0) {
		int err = -errno;

		kill(-child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		s->pid = 0;
		return err;
	}
	return 0;
}

enum hangstack_how
hangstack_start(struct hub *h, struct peer *p, void (*done)(struct hub *h, struct peer *p))
{
	struct hangstack *s = &p->stack;
	const char *tool;
	int rc;

	if (h->conf.hang_stack == HANG_STACK_OFF || p->pid <= 0 || s->pid != 0 ||
	    ev_is_active(&s->dump))
		return HANGSTACK_NONE;	/* off, or one still runs (an earlier hang) */
	if ((tool = find_tool()) == NULL) {
		log_warnx("guest %s: no eu-stack nor gdb installed: SIGABRT, for a core dump "
			  "or its crash handler", p->conf->name);
		if (p->pidfd >= 0 && syscall(SYS_pidfd_send_signal, p->pidfd, SIGABRT, NULL, 0) == 0)
			return HANGSTACK_ABORT;
		return HANGSTACK_NONE;
	}
	if ((s->out = memfd_create("hub-stack", MFD_CLOEXEC)) < 0) {
		log_warn("guest %s: its stack: memfd", p->conf->name);
		return HANGSTACK_NONE;
	}
	s->target = p->pid;
	s->done = done;
	s->tool = tool;
	/* its own stack first (a Python guest's frames), to its stderr */
	if (catches(p->pid, HANGSTACK_SIGNAL) && p->pidfd >= 0 &&
	    syscall(SYS_pidfd_send_signal, p->pidfd, HANGSTACK_SIGNAL, NULL, 0) == 0) {
		log_warnx("guest %s: asked for its own stack (SIGRTMIN+%d), then %s",
			  p->conf->name, HANGSTACK_SIGNAL - SIGRTMIN, tool);
		ev_timer_set(&s->dump, HANGSTACK_DUMP_S, 0.);
		ev_timer_start(h->loop, &s->dump);
		return HANGSTACK_TOOL;
	}
	if ((rc = run_tool(s, tool, p->pid)) != 0) {
		errno = -rc;
		log_warn("guest %s: its stack: %s", p->conf->name, tool);
		close(s->out);
		s->out = -1;
		return HANGSTACK_NONE;
	}
	ev_io_set(&s->w, s->pidfd, EV_READ);
	ev_io_start(h->loop, &s->w);
	say_taking(p);
	return HANGSTACK_TOOL;
}

void
hangstack_kill(struct peer *p)
{
	if (ev_is_active(&p->stack.dump))
		ev_timer_stop(p->hub->loop, &p->stack.dump);
	if (p->stack.pid > 0)
		kill(-p->stack.pid, SIGKILL);
}
