/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Starting a guest's process (r[shm.spawn.ticket]): its memory domain
 * made and its peer entry there reserved, the spawn ticket on its command
 * line, its doorbell at fd 3, its domain at 5, its zone's pool at 6 and
 * its bells at 7 and 8, /dev/null its stdin, a process group of its own
 * and no controlling terminal,
 * its limits, user and group set and every other fd closed between fork
 * and exec; a failure before exec comes back up a pipe with the step that
 * failed. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/unistd.h>

#include "daemon/escape.h"
#include "daemon/filter.h"
#include "daemon/guestlog.h"
#include "daemon/log.h"
#include "daemon/manual.h"
#include "daemon/pool.h"
#include "daemon/spawn.h"
#include "daemon/users.h"
#include "proto/doorbell.h"
#include "proto/peer.h"

/* The fds a guest inherits, and the error pipe's place (close-on-exec). */
enum {
	GUEST_DOORBELL_FD = 3,
	GUEST_ERRPIPE_FD,
	GUEST_DOMAIN_FD,
	GUEST_POOL_FD,
	GUEST_BELL_IN_FD,	/* the pipe we ring it on, its end */
	GUEST_BELL_OUT_FD,	/* the eventfd it rings us on */
	GUEST_FDS
};

/* Builds the guest's argv: its own, then the spawn ticket (r[shm.spawn.args];
 * r[shm.file.path]: where its segment is travels on the command line, a
 * path to the fd it inherits, so that a guest that opens a path attaches
 * unchanged), and its zone's pool if it has one. */
#define TICKET_ARGS	5
static char **
guest_argv(struct peer *p)
{
	char **argv;
	int n = 0, bad = 0;

	while (p->conf->argv[n] != NULL)
		n++;
	if ((argv = calloc((size_t)n + TICKET_ARGS + 1, sizeof(*argv))) == NULL)
		return NULL;
	memcpy(argv, p->conf->argv, (size_t)n * sizeof(*argv));
	bad |= asprintf(&argv[n], "--hub-path=/proc/self/fd/%d", GUEST_DOMAIN_FD) < 0;
	bad |= asprintf(&argv[n + 1], "--peer-id=%u", p->id) < 0;
	bad |= asprintf(&argv[n + 2], "--doorbell-fd=%d", GUEST_DOORBELL_FD) < 0;
	bad |= asprintf(&argv[n + 3], "--hub-bells=%d,%d", GUEST_BELL_IN_FD,
			GUEST_BELL_OUT_FD) < 0;
	if (p->zone != NULL)
		bad |= asprintf(&argv[n + 4], "--hub-pool=/proc/self/fd/%d", GUEST_POOL_FD) < 0;
	if (bad) {
		for (int i = 0; i < TICKET_ARGS; i++)
			free(argv[n + i]);
		free(argv);
		return NULL;
	}
	return argv;
}

static void
free_argv(struct peer *p, char **argv)
{
	int n = 0;

	if (argv == NULL)
		return;
	while (p->conf->argv[n] != NULL)
		n++;
	for (int i = 0; i < TICKET_ARGS; i++)
		free(argv[n + i]);
	free(argv);
}

/* What hubd holds open per guest: its domain and its zone's pool
 * (memfds), its pidfd, doorbell, bell eventfd, the write end of the pipe
 * it rings the guest on and the guest's log pipe (7), and one for a lane
 * or a control client; beside a few dozen of its own. */
#define FDS_PER_GUEST	8
#define FDS_OWN		64

/* The limit of open files hubd was started with: the guests'. Soft 0:
 * unknown, left as it is. */
static struct rlimit guest_nofile;

void
spawn_raise_fd_limit(uint32_t max_guests)
{
	rlim_t need = (rlim_t)max_guests * FDS_PER_GUEST + FDS_OWN;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		log_warn("getrlimit(RLIMIT_NOFILE)");
		return;
	}
	guest_nofile = rl;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = { rl.rlim_max, rl.rlim_max };

		if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
			log_debug("open files: up to %llu (was %llu)",
				  (unsigned long long)up.rlim_cur,
				  (unsigned long long)rl.rlim_cur);
			rl = up;
		} else {
			log_warn("raising RLIMIT_NOFILE to %llu", (unsigned long long)up.rlim_cur);
		}
	}
	if (rl.rlim_cur < need)
		log_warnx("max_guests = %u needs about %llu open files, but hubd may open %llu: "
			  "guests past that fail to start (raise the hard limit: LimitNOFILE= in "
			  "the unit, ulimit -Hn)", max_guests, (unsigned long long)need,
			  (unsigned long long)rl.rlim_cur);
}

/* What went wrong in the child before exec, sent up the error pipe. */
enum child_step {
	CHILD_TERMINAL,
	CHILD_RLIMIT_AS,
	CHILD_RLIMIT_NOFILE,
	CHILD_GROUP,
	CHILD_USER,
	CHILD_FDS,
	CHILD_FILTER,
	CHILD_EXEC,
};

struct child_err {
	int	step;		/* enum child_step */
	int	err;		/* errno */
};

static const char *
child_step_name(int step)
{
	static const char *const names[] = {
		[CHILD_TERMINAL] = "terminal", [CHILD_RLIMIT_AS] = "limit_memory",
		[CHILD_RLIMIT_NOFILE] = "limit_files",
		[CHILD_GROUP] = "group", [CHILD_USER] = "user",
		[CHILD_FDS] = "inherited fds", [CHILD_FILTER] = "seccomp",
		[CHILD_EXEC] = "exec",
	};

	return step >= 0 && step <= CHILD_EXEC ? names[step] : "?";
}

/* In the child: closes every fd above 2 but the n in keep (-1: none). */
static void
close_others(const int *keep, int n)
{
	int lo = 3;

	for (;;) {
		int next = -1;

		/* the lowest kept fd at lo or above */
		for (int i = 0; i < n; i++)
			if (keep[i] >= lo && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0)
			break;
		/* one by one where the kernel has no close_range */
		if (next > lo && close_range((unsigned)lo, (unsigned)next - 1, 0) != 0)
			for (int fd = lo; fd < next; fd++)
				close(fd);
		lo = next + 1;
	}
	closefrom(lo);
}

/* In the child: its limits (limit_memory, limit_files). -1 with errno
 * and ce->step set on failure. */
static int
child_limits(struct peer *p, struct child_err *ce)
{
	if (p->conf->limit_memory != 0) {
		struct rlimit rl = { p->conf->limit_memory, p->conf->limit_memory };

		ce->step = CHILD_RLIMIT_AS;
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			return -1;
	}
	if (p->conf->limit_files != 0) {
		struct rlimit rl = { p->conf->limit_files, p->conf->limit_files };

		ce->step = CHILD_RLIMIT_NOFILE;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			return -1;
	} else if (guest_nofile.rlim_cur != 0) {
		/* what hubd was started with, not what it raised itself to */
		ce->step = CHILD_RLIMIT_NOFILE;
		if (setrlimit(RLIMIT_NOFILE, &guest_nofile) != 0)
			return -1;
	}
	return 0;
}

/* In the child: whom it runs as (users.c), and its end with hubd's. -1
 * with errno and ce->step set on failure. */
static int
child_user(struct peer *p, pid_t hubd, struct child_err *ce)
{
	/* a uid of its own with no other group, its user = and group =, or
	 * hubd's; never our supplementary groups */
	if (p->conf->run_gid >= 0) {
		gid_t gid = (gid_t)p->conf->run_gid;

		ce->step = CHILD_GROUP;
		if (setgroups(p->conf->runs == GUEST_RUNS_OWN ? 0 : 1, &gid) != 0 ||
		    setgid(gid) != 0)
			return -1;
	}
	ce->step = CHILD_USER;
	if (p->conf->run_uid >= 0 && setuid((uid_t)p->conf->run_uid) != 0)
		return -1;
	/* hubd gone, even by SIGKILL: the guest goes too, also one that
	 * never looks at its doorbell. After setuid, which clears it; a
	 * hubd gone already is seen by getppid. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != hubd)
		return -1;
	/* hubd's stack tool (hangstack.c), a child of hubd run as this
	 * guest's user, may trace it where Yama's ptrace_scope 1 allows only
	 * a tracer's descendants; without Yama this fails and nothing needs
	 * it. A Yama exception lasts across exec. */
	(void)prctl(PR_SET_PTRACER, hubd, 0, 0, 0);
	return 0;
}

/* In the child: its controlling terminal, if hubd has one, given up
 * (TIOCNOTTY: for this process alone, it not leading the session). 0, or
 * -1 with errno. */
static int
drop_terminal(void)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENXIO || errno == ENOENT ? 0 : -1;	/* none */
	if (ioctl(fd, TIOCNOTTY) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

/* In the child: r[shm.spawn.fd-inheritance]: the doorbell at 3, the
 * domain at 5, the pool at 6 and the bells at 7 and 8 are inherited; the error pipe (it reports
 * a failed exec) goes to 4, close-on-exec. Everything else is closed
 * first, whatever hubd itself inherited without close-on-exec too, so
 * that the moves below find free fds under any limit_files (16 at least)
 * even when hubd is out of fds; each fd is first lifted above the
 * targets, so that none overwrites another. Its stdout and stderr are the
 * pipe hubd reads (guestlog.c); its stdin /dev/null, never hubd's: the
 * terminal hubd was started from (a guest would read the operator's keys,
 * or TIOCSTI a command into the shell), or whatever hubd opened at 0 when
 * it was started with 0 closed. -1 with errno set on failure. */
static int
child_fds(struct peer *p, const int *guest_end, int err_fd, int out_fd)
{
	int src[GUEST_FDS + 1], lifted[GUEST_FDS], out, null;

	for (int t = 0; t <= GUEST_FDS; t++)
		src[t] = -1;
	src[GUEST_DOORBELL_FD] = guest_end[0];
	src[GUEST_BELL_IN_FD] = guest_end[1];
	src[GUEST_BELL_OUT_FD] = p->bells[0];
	src[GUEST_ERRPIPE_FD] = err_fd;
	src[GUEST_DOMAIN_FD] = p->dom.fd;
	src[GUEST_POOL_FD] = p->zone != NULL ? p->zone->fd : -1;
	src[GUEST_FDS] = out_fd;	/* kept too, and lifted first */
	close_others(src + GUEST_DOORBELL_FD, GUEST_FDS + 1 - GUEST_DOORBELL_FD);
	if ((out = fcntl(out_fd, F_DUPFD_CLOEXEC, GUEST_FDS)) < 0)
		return -1;
	for (int t = GUEST_DOORBELL_FD; t < GUEST_FDS; t++) {
		lifted[t] = -1;
		if (src[t] >= 0 && (lifted[t] = fcntl(src[t], F_DUPFD_CLOEXEC, GUEST_FDS)) < 0)
			return -1;
	}
	for (int t = GUEST_DOORBELL_FD; t < GUEST_FDS; t++) {
		int flags = t == GUEST_ERRPIPE_FD ? O_CLOEXEC : 0;

		if (lifted[t] >= 0 && dup3(lifted[t], t, flags) != t)
			return -1;
		if (lifted[t] < 0)
			close(t);
	}
	/* the fds moved, 0 to 2 are free to take (hubd may have had one
	 * there); not close-on-exec, should open give 0 itself */
	if ((null = open("/dev/null", O_RDONLY)) < 0 ||
	    dup2(null, STDIN_FILENO) != STDIN_FILENO)
		return -1;
	if (null != STDIN_FILENO)
		close(null);
	if (dup2(out, STDOUT_FILENO) != STDOUT_FILENO ||
	    dup2(out, STDERR_FILENO) != STDERR_FILENO)
		return -1;
	closefrom(GUEST_FDS);
	return 0;
}

/* In the child: its env = (config_keys.c checked each NAME=VALUE), and
 * the processors libguest's microthreads run on (hubd has one thread:
 * setenv after fork is safe). -1 with errno set on failure. */
static int
child_env(struct peer *p)
{
	for (char **e = p->conf->env; e != NULL && *e != NULL; e++)
		if (putenv(*e) != 0)
			return -1;
	if (p->conf->processors != 0) {
		char n[16];

		snprintf(n, sizeof(n), "%u", p->conf->processors);
		if (setenv("HUB_PROCESSORS", n, 1) != 0)
			return -1;
	}
	return 0;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void __attribute__((noreturn))
child(struct peer *p, char **argv, const int *guest_end, int err_fd, int out_fd, pid_t hubd)
{
	struct child_err ce = { CHILD_EXEC, 0 };
	sigset_t all;
	int rc;

	/* Its own process group (hubd sets it too, whichever runs first):
	 * what it forks is ended with it, and a ^C at hubd's terminal is
	 * hubd's to handle; guests are stopped through the protocol. */
	setpgid(0, 0);
	/* and no controlling terminal, hubd's, which it could open as
	 * /dev/tty (to read the operator's keys, or TIOCSTI a command into
	 * the shell). Not by setsid: a session of its own is a scheduler
	 * autogroup of its own too, where sched_yield no longer hands the
	 * CPU to hubd or a peer, which the wait path relies on when the
	 * hub's processes outnumber the CPUs. */
	if (drop_terminal() != 0) {
		ce.step = CHILD_TERMINAL;
		goto fail;
	}
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (child_limits(p, &ce) != 0 || child_user(p, hubd, &ce) != 0)
		goto fail;
	ce.step = CHILD_FDS;
	if (child_fds(p, guest_end, err_fd, out_fd) != 0)
		goto fail;
	err_fd = GUEST_ERRPIPE_FD;
	/* last, no_new_privs set: what no guest may ask of the kernel */
	ce.step = CHILD_FILTER;
	if (p->conf->seccomp && (rc = filter_apply()) != 0) {
		errno = -rc;
		goto fail;
	}
	ce.step = CHILD_EXEC;
	if (child_env(p) != 0)
		goto fail;
	execv(p->conf->exec, argv);
fail:
	ce.err = errno;
	if (write(err_fd, &ce, sizeof(ce)) < 0)
		_exit(126);
	_exit(127);
}

/* A new config a reload gave it taken up, and what its last instance
 * left cleared. */
static void
spawn_reset(struct hub *h, struct peer *p)
{
	if (p->next_conf != NULL) {	/* changed by a reload */
		config_guest_free(p->conf);
		p->conf = p->next_conf;
		p->next_conf = NULL;
		users_release(h);	/* a uid it had before, renumbered */
	}
	p->kill_reason = -1;
	p->kill_detail[0] = '\0';
	p->start_ns = hp_now_ns();
	p->up_ns = 0;		/* not up: a failure here is no long run */
}

/* Its zone's pool joined, and its own memory made, which no other guest
 * maps (the previous instance's went at its recovery), with its entry
 * there reserved and offered. -errno with why in *what. */
static int
make_domain(struct hub *h, struct peer *p, const char **what)
{
	struct hp_params prm = h->conf.params;
	char name[48];
	uint32_t seen;
	int err;

	if ((err = pool_join(h, p, what)) != 0)
		return err;
	snprintf(name, sizeof(name), "hub:%s", p->conf->name);
	/* its heartbeat, the hub's or its own (r[shm.crash.heartbeat]: the
	 * header of its domain says how often it beats, 0: never) */
	if (p->conf->heartbeat_ns != CONFIG_HEARTBEAT_HUB)
		prm.heartbeat_interval = p->conf->heartbeat_ns;
	p->heartbeat_ns = prm.heartbeat_interval;
	if ((err = hp_segment_create(&p->dom, &prm, p->id,
				     p->zone != NULL ? h->features : h->features & ~HP_FEAT_VARSLOT,
				     name, what)) != 0)
		return err;
	/* the epochs go on from the last instance's */
	hp_peer_carry_epoch(hp_segment_peer(&p->dom, p->id), p->epoch);
	/* r[shm.spawn.ticket] 1 r[shm.spawn.reserved-state]: ours until it
	 * attaches */
	if (hp_peer_reserve(hp_segment_peer(&p->dom, p->id), &seen) != 0) {
		*what = "peer entry busy in a fresh domain";
		return -EBUSY;
	}
	hp_peer_view_host(&p->dom, p->id, &p->view);
	/* the guest sees it at attach (the fork orders it before); host_attach
	 * goes by p->zone, never by what a guest may have written here */
	hp_peer_offer(&p->view, (p->zone != NULL ? HP_FEAT_VARSLOT : 0) |
		      (p->conf->lanes != LANES_NONE ? HP_FEAT_LANES : 0) |
		      (p->conf->start_manual ? 0 : HP_FEAT_BELLS));
	/* the epoch its attach increments (check_attach) */
	p->epoch = hp_peer_epoch(p->view.entry);
	return 0;
}

/* What stops a file from being exec'd, on its own: NULL, or why in buf. */
static const char *
file_problem(const char *path, char *buf, size_t len)
{
	struct stat st;

	if (stat(path, &st) != 0)
		snprintf(buf, len, "%s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		snprintf(buf, len, "not a regular file");
	else if (access(path, X_OK) != 0)
		snprintf(buf, len, "not executable");
	else
		return NULL;
	return buf;
}

const char *
spawn_exec_problem(const char *path, char *buf, size_t len)
{
	char head[256], why[128], shown[4 * 100 + 1];
	ssize_t n = -1;
	size_t at, end;
	int fd;

	if (file_problem(path, buf, len) != NULL)
		return buf;
	/* a script: its #! line's interpreter (the kernel's ENOENT names
	 * the script, which is there) */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) >= 0) {
		n = read(fd, head, sizeof(head) - 1);
		close(fd);
	}
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return NULL;
	head[n] = '\0';
	for (at = 2; head[at] == ' ' || head[at] == '\t'; at++)
		;
	for (end = at; head[end] != '\0' && strchr(" \t\r\n", head[end]) == NULL; end++)
		;
	head[end] = '\0';
	if (at == end) {
		snprintf(buf, len, "its #! line names no interpreter");
		return buf;
	}
	if (file_problem(head + at, why, sizeof(why)) == NULL)
		return NULL;
	/* the script's bytes, whoever wrote them: escaped for the log */
	escape_text(shown, sizeof(shown), head + at, end - at < 100 ? end - at : 100, 0);
	snprintf(buf, len, "its #! interpreter %s: %s", shown, why);
	return buf;
}

/* Waits for the child's exec: the child's exec closes the error pipe, 0
 * bytes is success. -errno, with why in p->kill_detail and the child
 * reaped, when a step before exec failed. */
static int
exec_result(struct peer *p, pid_t pid, int errfd)
{
	struct child_err ce;
	char why[160];
	ssize_t n;
	int status;

	while ((n = read(errfd, &ce, sizeof(ce))) < 0 && errno == EINTR)
		;
	if (n != sizeof(ce))
		return 0;
	/* it _exits right after writing: reap it now */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (ce.step == CHILD_EXEC)	/* what the errno alone hides, if hubd sees it */
		snprintf(p->kill_detail, sizeof(p->kill_detail), "exec %s: %s",
			 p->conf->exec, spawn_exec_problem(p->conf->exec, why, sizeof(why)) != NULL ?
			 why : strerror(ce.err));
	else if ((ce.step == CHILD_GROUP || ce.step == CHILD_USER) && ce.err == EPERM &&
		 geteuid() == 0)
		/* root without the capability: a bounding set took it (a
		 * container's, the unit's CapabilityBoundingSet=) */
		snprintf(p->kill_detail, sizeof(p->kill_detail), "%s: %s: hubd runs as root "
			 "without CAP_SET%s, so it cannot give a guest a user of its own "
			 "(give hubd the capability, or set guest_uids = no and no user =)",
			 child_step_name(ce.step), strerror(ce.err),
			 ce.step == CHILD_GROUP ? "GID" : "UID");
	else
		snprintf(p->kill_detail, sizeof(p->kill_detail), "%s: %s",
			 child_step_name(ce.step), strerror(ce.err));
	return -ce.err;
}

/* Forks the guest and execs it with its ends, guest_end: the doorbell's
 * and its bell's (the pipe's read end), which hubd closes once the child
 * has them (-1 then). 0 with p->pid and
 * p->pidfd set; or -errno with why in *what (or, a step of the child's,
 * in p->kill_detail) and no child left. */
static int
fork_guest(struct peer *p, int guest_end[2], const char **what)
{
	int errpipe[2] = { -1, -1 }, out_w = -1, err = 0, status;
	char **argv = NULL, line[512];
	pid_t pid, hubd;

	if (pipe2(errpipe, O_CLOEXEC) != 0) {
		err = -errno;
		*what = "pipe";
		goto fail;
	}
	if ((err = guestlog_pipe(p, &out_w)) != 0) {
		*what = "output pipe";
		goto fail;
	}
	if ((argv = guest_argv(p)) == NULL) {
		err = -ENOMEM;
		*what = "arguments";
		goto fail;
	}
	log_debug("guest %s: spawning %s", p->conf->name,
		  log_argv(line, sizeof(line), argv));
	hubd = getpid();
	if ((pid = fork()) < 0) {
		err = -errno;
		*what = "fork";
		goto fail;
	}
	if (pid == 0)
		child(p, argv, guest_end, errpipe[1], out_w, hubd);
	/* the child does it too: whichever runs first, the group exists
	 * before the guest can fork (EACCES once it has exec'd: it has) */
	setpgid(pid, pid);
	/* r[shm.spawn.fd-inheritance]: we keep only our end */
	close(guest_end[0]);
	close(guest_end[1]);
	close(errpipe[1]);
	close(out_w);
	guest_end[0] = guest_end[1] = errpipe[1] = out_w = -1;
	if ((err = exec_result(p, pid, errpipe[0])) != 0)
		goto fail;
	if ((p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) {
		err = -errno;
		*what = "pidfd_open";
		kill(-pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		goto fail;
	}
	p->pid = pid;
fail:
	free_argv(p, argv);
	for (int i = 0; i < 2; i++)
		if (errpipe[i] >= 0)
			close(errpipe[i]);
	if (out_w >= 0)
		close(out_w);
	return err;
}

/* Starts the guest (r[shm.spawn.ticket]). 0 with p->pid, p->pidfd and
 * p->bell set (start = manual: p->bell only, p->pid 0, its ticket waiting
 * in manual.c for a process started by hand); or -errno with why in
 * p->kill_detail, nothing left behind and its entry Empty again. */
int
spawn_guest(struct hub *h, struct peer *p, host_peer_fn *started_by_hand)
{
	int fds[2] = { -1, -1 }, ends[2] = { -1, -1 }, theirs[2], err;
	const char *what = NULL;

	spawn_reset(h, p);
	if ((err = make_domain(h, p, &what)) != 0)
		goto fail;
	/* 2: r[shm.doorbell.socketpair] */
	if ((err = hp_doorbell_pair(fds)) != 0) {
		what = "doorbell socketpair";
		goto fail;
	}
	if (p->conf->start_manual) {
		if ((err = manual_listen(h, p, fds[1], started_by_hand, &what)) != 0)
			goto fail;
		p->bell = fds[0];
		return 0;
	}
	/* ours: wakes cheaper than a doorbell byte (HP_FEAT_BELLS) */
	if ((err = hp_bells_make(p->bells, theirs)) != 0) {
		what = "bells";
		goto fail;
	}
	ends[0] = fds[1];
	ends[1] = theirs[0];	/* theirs[1] is p->bells[0]: one eventfd */
	fds[1] = -1;
	err = fork_guest(p, ends, &what);
	if (err != 0)
		goto fail;
	p->bell = fds[0];
	guestlog_watch(h, p);
	if (p->restarts++ > 0)
		log_info("guest %s: restarted (pid %d)", p->conf->name, (int)p->pid);
	else
		log_info("guest %s: started (pid %d)", p->conf->name, (int)p->pid);
	return 0;
fail:
	if (what != NULL)
		snprintf(p->kill_detail, sizeof(p->kill_detail), "%s: %s", what,
			 strerror(-err));
	hp_fds_close(fds, 2);
	hp_fds_close(ends, 2);
	hp_fds_close(p->bells, 2);
	guestlog_end(h, p);
	/* r[shm.spawn.reserved-state]: spawn failed; its domain goes */
	hp_segment_close(&p->dom);
	memset(&p->view, 0, sizeof(p->view));
	return err;
}
