/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Starting a guest's process (r[shm.spawn.ticket]): its peer entry
 * reserved, the spawn ticket on its command line, its doorbell at fd 3,
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/unistd.h>

#include "daemon/log.h"
#include "daemon/spawn.h"
#include "proto/doorbell.h"
#include "proto/peer.h"

#define GUEST_DOORBELL_FD	3	/* where the guest finds its doorbell */

/* Builds the guest's argv: its own, then the spawn ticket (r[shm.spawn.args];
 * r[shm.file.path]: the segment's path travels on the command line). */
static char **
guest_argv(struct hub *h, struct peer *p)
{
	char **argv;
	int n = 0;

	while (p->conf->argv[n] != NULL)
		n++;
	if ((argv = calloc((size_t)n + 4, sizeof(*argv))) == NULL)
		return NULL;
	memcpy(argv, p->conf->argv, (size_t)n * sizeof(*argv));
	if (asprintf(&argv[n], "--hub-path=%s", h->conf.segment_path) < 0)
		argv[n] = NULL;
	if (asprintf(&argv[n + 1], "--peer-id=%u", p->id) < 0)
		argv[n + 1] = NULL;
	if (asprintf(&argv[n + 2], "--doorbell-fd=%d", GUEST_DOORBELL_FD) < 0)
		argv[n + 2] = NULL;
	if (argv[n] == NULL || argv[n + 1] == NULL || argv[n + 2] == NULL) {
		free(argv[n]);
		free(argv[n + 1]);
		free(argv[n + 2]);
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
	free(argv[n]);
	free(argv[n + 1]);
	free(argv[n + 2]);
	free(argv);
}

/* What went wrong in the child before exec, sent up the error pipe. */
enum child_step {
	CHILD_RLIMIT_AS,
	CHILD_RLIMIT_NOFILE,
	CHILD_GROUP,
	CHILD_USER,
	CHILD_DOORBELL,
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
		[CHILD_RLIMIT_AS] = "limit_memory", [CHILD_RLIMIT_NOFILE] = "limit_files",
		[CHILD_GROUP] = "group", [CHILD_USER] = "user",
		[CHILD_DOORBELL] = "doorbell fd", [CHILD_EXEC] = "exec",
	};

	return step >= 0 && step <= CHILD_EXEC ? names[step] : "?";
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void __attribute__((noreturn))
child(struct peer *p, char **argv, int guest_end, int err_fd, pid_t hubd)
{
	struct child_err ce = { CHILD_EXEC, 0 };
	sigset_t all;
	int tmp;

	/* Its own process group (hubd sets it too, whichever runs first):
	 * what it forks is ended with it, and a ^C at hubd's terminal is
	 * hubd's to handle; guests are stopped through the protocol. */
	setpgid(0, 0);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (p->conf->limit_memory != 0) {
		struct rlimit rl = { p->conf->limit_memory, p->conf->limit_memory };

		ce.step = CHILD_RLIMIT_AS;
		if (setrlimit(RLIMIT_AS, &rl) != 0)
			goto fail;
	}
	if (p->conf->limit_files != 0) {
		struct rlimit rl = { p->conf->limit_files, p->conf->limit_files };

		ce.step = CHILD_RLIMIT_NOFILE;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			goto fail;
	}
	/* whom it runs as (users.c): a uid of its own with no other group,
	 * its user = and group =, or hubd's; never our supplementary groups */
	if (p->conf->run_gid >= 0) {
		gid_t gid = (gid_t)p->conf->run_gid;

		ce.step = CHILD_GROUP;
		if (setgroups(p->conf->runs == GUEST_RUNS_OWN ? 0 : 1, &gid) != 0 ||
		    setgid(gid) != 0)
			goto fail;
	}
	ce.step = CHILD_USER;
	if (p->conf->run_uid >= 0 && setuid((uid_t)p->conf->run_uid) != 0)
		goto fail;
	/* hubd gone, even by SIGKILL: the guest goes too, also one that
	 * never looks at its doorbell. After setuid, which clears it; a
	 * hubd gone already is seen by getppid. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != hubd)
		goto fail;
	/* r[shm.spawn.fd-inheritance]: only the doorbell is inherited, at 3.
	 * The error pipe (it reports a failed exec) goes to 4, close-on-exec,
	 * by way of 5 or 6 in case it sits at 3 or 4; moves to low numbers
	 * take no new fd (limit_files is 16 at least, hubd may be out of
	 * fds). Everything above is closed: whatever hubd itself inherited
	 * without close-on-exec too. */
	ce.step = CHILD_DOORBELL;
	tmp = guest_end == GUEST_DOORBELL_FD + 2 ? GUEST_DOORBELL_FD + 3 : GUEST_DOORBELL_FD + 2;
	if (err_fd != tmp && dup3(err_fd, tmp, O_CLOEXEC) != tmp)
		goto fail;
	err_fd = tmp;
	if (guest_end == GUEST_DOORBELL_FD) {
		if (fcntl(guest_end, F_SETFD, 0) != 0)
			goto fail;
	} else if (dup2(guest_end, GUEST_DOORBELL_FD) != GUEST_DOORBELL_FD) {
		goto fail;
	}
	if (dup3(err_fd, GUEST_DOORBELL_FD + 1, O_CLOEXEC) != GUEST_DOORBELL_FD + 1)
		goto fail;
	err_fd = GUEST_DOORBELL_FD + 1;
	closefrom(GUEST_DOORBELL_FD + 2);
	ce.step = CHILD_EXEC;
	/* libguest's microthreads run on this many processors (hubd has
	 * one thread: setenv after fork is safe) */
	if (p->conf->processors != 0) {
		char n[16];

		snprintf(n, sizeof(n), "%u", p->conf->processors);
		if (setenv("HUB_PROCESSORS", n, 1) != 0)
			goto fail;
	}
	execv(p->conf->exec, argv);
fail:
	ce.err = errno;
	if (write(err_fd, &ce, sizeof(ce)) < 0)
		_exit(126);
	_exit(127);
}

/* Forks and execs the guest (r[shm.spawn.ticket]). 0 with p->pid, p->pidfd
 * and p->bell set; or -errno with why in p->kill_detail, nothing left
 * behind and its entry Empty again. */
int
spawn_guest(struct hub *h, struct peer *p)
{
	uint32_t seen;
	int fds[2] = { -1, -1 }, errpipe[2] = { -1, -1 }, err = 0, status;
	struct child_err ce;
	const char *what = NULL;
	char **argv = NULL, line[512];
	ssize_t n;
	pid_t pid, hubd;

	if (p->next_conf != NULL) {	/* changed by a reload */
		config_guest_free(p->conf);
		p->conf = p->next_conf;
		p->next_conf = NULL;
	}
	p->kill_reason = -1;
	p->kill_detail[0] = '\0';
	p->start_ns = hp_now_ns();
	p->up_ns = 0;		/* not up: a failure here is no long run */
	/* r[shm.spawn.ticket] 1 r[shm.spawn.reserved-state]: ours until it
	 * attaches. Down, the entry is Empty unless a guest wrote over it. */
	if (hp_peer_reserve(hp_segment_peer(&h->seg, p->id), &seen) != 0) {
		snprintf(p->kill_detail, sizeof(p->kill_detail),
			 "peer entry %u is busy (state %u)", p->id, seen);
		return -EBUSY;
	}
	hp_peer_view_host(&h->seg, p->id, &p->view);
	/* the guest sees it at attach (the fork orders it before); host_attach
	 * goes by p->conf, never by what a guest may have written here */
	hp_peer_offer(&p->view, p->conf->shared_pool ? HP_FEAT_VARSLOT : 0);
	/* the epoch its attach increments (check_attach) */
	p->epoch = hp_peer_epoch(p->view.entry);
	/* 2: r[shm.doorbell.socketpair] */
	if ((err = hp_doorbell_pair(fds)) != 0) {
		what = "doorbell socketpair";
		goto fail;
	}
	if (pipe2(errpipe, O_CLOEXEC) != 0) {
		err = -errno;
		what = "pipe";
		goto fail;
	}
	if ((argv = guest_argv(h, p)) == NULL) {
		err = -ENOMEM;
		what = "arguments";
		goto fail;
	}
	log_debug("guest %s: spawning %s", p->conf->name,
		  log_argv(line, sizeof(line), argv));
	hubd = getpid();
	if ((pid = fork()) < 0) {
		err = -errno;
		what = "fork";
		goto fail;
	}
	if (pid == 0)
		child(p, argv, fds[1], errpipe[1], hubd);
	/* the child does it too: whichever runs first, the group exists
	 * before the guest can fork (EACCES once it has exec'd: it has) */
	setpgid(pid, pid);
	/* r[shm.spawn.fd-inheritance]: we keep only our end */
	close(fds[1]);
	close(errpipe[1]);
	fds[1] = errpipe[1] = -1;
	/* The child's exec closes the pipe: 0 bytes is success. */
	while ((n = read(errpipe[0], &ce, sizeof(ce))) < 0 && errno == EINTR)
		;
	close(errpipe[0]);
	errpipe[0] = -1;
	if (n == sizeof(ce)) {
		/* it _exits right after writing: reap it now */
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		err = -ce.err;
		if (ce.step == CHILD_EXEC)
			snprintf(p->kill_detail, sizeof(p->kill_detail), "exec %s: %s",
				 p->conf->exec, strerror(ce.err));
		else
			snprintf(p->kill_detail, sizeof(p->kill_detail), "%s: %s",
				 child_step_name(ce.step), strerror(ce.err));
		goto fail;
	}
	if ((p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) {
		err = -errno;
		what = "pidfd_open";
		kill(-pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		goto fail;
	}
	p->pid = pid;
	p->bell = fds[0];
	if (p->restarts++ > 0)
		log_info("guest %s: restarted (pid %d)", p->conf->name, (int)pid);
	else
		log_info("guest %s: started (pid %d)", p->conf->name, (int)pid);
	free_argv(p, argv);
	return 0;
fail:
	if (what != NULL)
		snprintf(p->kill_detail, sizeof(p->kill_detail), "%s: %s", what,
			 strerror(-err));
	free_argv(p, argv);
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (errpipe[i] >= 0)
			close(errpipe[i]);
	}
	/* r[shm.spawn.reserved-state]: spawn failed, back to Empty */
	hp_peer_unreserve(p->view.entry);
	return err;
}
