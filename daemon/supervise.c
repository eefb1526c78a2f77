/* The guest supervisor: an explicit state machine per guest (hubd.h),
 * one handler per event: spawned, attached, died, backoff over, stop.
 *
 * Death is seen at once by pidfd (r[shm.death.process-handle]) and by
 * doorbell hang-up (r[shm.doorbell.death]), whichever comes first; a hang
 * by the heartbeat check in host.c (r[shm.crash.host-owned],
 * r[shm.death.detection-methods]: all three, the doorbell doubling as the
 * wake-up channel, r[shm.doorbell.purpose], r[shm.doorbell.optional]).
 * The death callback runs on the loop and schedules everything it starts
 * (r[shm.death.callback-context]). Children are reaped only here, with
 * waitid(P_PIDFD) on the pidfd that said the child exited: hubd runs a
 * non-default libev loop precisely so that libev installs no SIGCHLD
 * handler of its own, whose waitpid(-1) would steal the exit statuses. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/hubd.h"
#include "daemon/log.h"
#include "proto/channel.h"
#include "proto/doorbell.h"
#include "proto/futex.h"
#include "proto/msg.h"

#define GUEST_DOORBELL_FD	3	/* where the guest finds its doorbell */

const char *
supervise_state_name(int state)
{
	static const char *const names[] = {
		"down", "starting", "up", "stopping", "backoff", "failed",
	};

	return state >= 0 && state <= PEER_FAILED ? names[state] : "?";
}

const char *
supervise_death_name(int reason)
{
	static const char *const names[] = {
		"exited", "crashed", "hung", "protocol violation", "spawn failed",
	};

	return reason >= 0 && reason <= DEATH_SPAWN ? names[reason] : "?";
}

static void death(struct hub *h, struct peer *p, int reason, int status);

static void
pid_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	siginfo_t si;

	(void)loop;
	(void)revents;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) != 0 || si.si_pid == 0)
		return;
	if (si.si_code == CLD_EXITED)
		death(p->hub, p, DEATH_EXITED, si.si_status);
	else
		death(p->hub, p, DEATH_CRASHED, si.si_status);
}

static void
attached(struct hub *h, struct peer *p)
{
	/* acquire: pairs with the guest's epoch increment (release) */
	p->epoch = hp_load_acquire_u32(&p->view.entry->epoch);
	if (host_attach(h, p) != 0) {
		supervise_kill(p, DEATH_VIOLATION, "shm.ring.capacity");
		return;
	}
	p->state = PEER_UP;
	p->up_ns = now_ns();
	ev_timer_stop(h->loop, &p->timer);
	log_info("guest %s: attached as peer %u (pid %d, epoch %u)", p->conf->name,
		 p->id, (int)p->pid, p->epoch);
}

/* A starting guest's entry: Attached (it is up), Reserved (not yet), or
 * anything else (it wrote nonsense into the state word). */
void
supervise_check_attach(struct hub *h, struct peer *p)
{
	/* acquire: pairs with the guest's CAS Reserved -> Attached */
	uint32_t state = hp_load_acquire_u32(&p->view.entry->state);

	if (state == HP_PEER_ATTACHED)
		attached(h, p);
	else if (state != HP_PEER_RESERVED)
		supervise_kill(p, DEATH_VIOLATION, "shm.spawn.reserved-state");
}

static void
bell_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct hub *h = p->hub;

	(void)loop;
	(void)revents;
	if (hp_doorbell_drain(p->bell) == -EPIPE) {
		/* r[shm.doorbell.death]: its end closed, it is dying or has
		 * died; the pidfd reports how. One that closed it and lives
		 * on cannot be woken any more: it gets a second to exit. */
		ev_io_stop(h->loop, &p->bell_w);
		if (p->state == PEER_UP) {
			ev_timer_stop(h->loop, &p->timer);
			ev_timer_set(&p->timer, 1.0, 0);
			ev_timer_start(h->loop, &p->timer);
		}
		return;
	}
	/* r[shm.spawn.guest-init]: it rings once attached */
	if (p->state == PEER_STARTING)
		supervise_check_attach(h, p);
	host_wake(h);
	if (!ev_is_active(&h->idle_w))
		ev_idle_start(h->loop, &h->idle_w);
}

static void
timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer *p = w->data;

	(void)loop;
	(void)revents;
	switch (p->state) {
	case PEER_STARTING:
		supervise_kill(p, DEATH_HUNG, "did not attach in time");
		break;
	case PEER_UP:		/* its doorbell closed a second ago */
		supervise_kill(p, DEATH_CRASHED, "closed its doorbell but did not exit");
		break;
	case PEER_STOPPING:
		log_warnx("guest %s: did not stop in time, killing it", p->conf->name);
		kill(p->pid, SIGKILL);
		break;
	case PEER_BACKOFF:
		supervise_start(p->hub, p);
		break;
	}
}

static double
seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

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

/* In the child, between fork and exec: only async-signal-safe calls. */
static void __attribute__((noreturn))
child(struct peer *p, char **argv, int guest_end, int err_fd)
{
	sigset_t all;
	int e;

	/* Its own process group: a ^C at hubd's terminal is hubd's to
	 * handle; guests are stopped through the protocol. */
	setpgid(0, 0);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (p->conf->limit_memory != 0) {
		struct rlimit rl = { p->conf->limit_memory, p->conf->limit_memory };

		if (setrlimit(RLIMIT_AS, &rl) != 0)
			goto fail;
	}
	if (p->conf->limit_files != 0) {
		struct rlimit rl = { p->conf->limit_files, p->conf->limit_files };

		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			goto fail;
	}
	/* its own user and group, and no supplementary groups of ours */
	if (p->conf->gid >= 0) {
		gid_t gid = (gid_t)p->conf->gid;

		if (setgroups(1, &gid) != 0 || setgid(gid) != 0)
			goto fail;
	}
	if (p->conf->uid >= 0 && setuid((uid_t)p->conf->uid) != 0)
		goto fail;
	/* r[shm.spawn.fd-inheritance]: only the doorbell is inherited; dup2
	 * gives a copy without close-on-exec, every other fd has it. */
	if (guest_end == GUEST_DOORBELL_FD) {
		if (fcntl(guest_end, F_SETFD, 0) != 0)
			goto fail;
	} else if (dup2(guest_end, GUEST_DOORBELL_FD) != GUEST_DOORBELL_FD) {
		goto fail;
	}
	/* and whatever hubd itself inherited without close-on-exec */
	close_range(GUEST_DOORBELL_FD + 1, ~0u, CLOSE_RANGE_CLOEXEC);
	execv(p->conf->exec, argv);
fail:
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(126);
	_exit(127);
}

/* Resets p's part of the segment and closes its handles
 * (r[shm.crash.recovery], r[shm.death.recovery]). */
static void
recover(struct hub *h, struct peer *p)
{
	struct hp_peer_entry *e = hp_segment_peer(&h->seg, p->id);
	struct hp_peer_view v;
	struct hp_slot_pool pool;

	/* 1: Goodbye while we clean up */
	hp_store_release_u32(&e->state, HP_PEER_GOODBYE);
	/* 2: every call in flight to or from it fails */
	host_detach(h, p);
	hp_peer_view_host(&h->seg, p->id, &v);
	/* 3: rings empty */
	hp_store_relaxed_u32(&e->g2h_head, 0);
	hp_store_relaxed_u32(&e->g2h_tail, 0);
	hp_store_relaxed_u32(&e->h2g_head, 0);
	hp_store_relaxed_u32(&e->h2g_tail, 0);
	/* 4: every slot of its pool free (host pool slots: host_detach) */
	hp_slot_pool_view(&pool, v.pool, h->seg.params.slots_per_guest,
			  h->seg.params.slot_size);
	hp_slot_pool_reset(&pool);
	/* 5: channels Free */
	hp_chan_table_reset(v.chans, h->seg.params.max_channels);
	hp_store_relaxed_u64(&e->last_heartbeat, 0);
	hp_store_relaxed_u32(&e->guest_features, 0);
	/* whatever it wrote over its entry's offsets, the next guest finds
	 * its areas where the host keeps them */
	e->ring_offset = hp_geometry_ring_offset(&h->seg.geo, p->id);
	e->slot_pool_offset = hp_geometry_pool_offset(&h->seg.geo, p->id);
	e->channel_table_offset = hp_geometry_chan_offset(&h->seg.geo, p->id);
	if (v.ext != NULL) {
		hp_store_relaxed_u32(&v.ext->guest_waits, 0);
		hp_store_relaxed_u32(&v.ext->host_waits, 0);
	}
	ev_io_stop(h->loop, &p->pid_w);
	ev_io_stop(h->loop, &p->bell_w);
	ev_timer_stop(h->loop, &p->timer);
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->bell >= 0)
		close(p->bell);
	p->pidfd = p->bell = -1;
	p->pid = 0;
	/* 6: Empty: the entry may be reserved again (release: everything
	 * above is visible to whoever reserves it next) */
	hp_store_release_u32(&e->state, HP_PEER_EMPTY);
}

static void
tally(struct peer *p, int reason, int status)
{
	struct death *d = &p->tally[p->ndeaths % TALLY_MAX];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	d->when_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	d->reason = reason;
	d->status = status;
	snprintf(d->detail, sizeof(d->detail), "%s", p->kill_detail);
	p->ndeaths++;
}

/* Deaths within the guest's window, this one included. */
static uint32_t
recent_deaths(struct peer *p)
{
	struct timespec ts;
	uint64_t now, n = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (uint32_t i = 0; i < TALLY_MAX && i < p->ndeaths; i++)
		if (now - p->tally[i].when_ns <= p->conf->death_window_ns &&
		    p->tally[i].when_ns >= p->tally_from_ns)
			n++;
	return (uint32_t)n;
}

/* The death callback (r[shm.death.callback]): runs on the loop, never
 * blocks; recovers, then decides about a restart. */
static void
death(struct hub *h, struct peer *p, int reason, int status)
{
	uint32_t recent;

	if (p->kill_reason >= 0)
		reason = p->kill_reason;
	tally(p, reason, status);
	if (reason == DEATH_EXITED)
		log_info("guest %s: exited with status %d", p->conf->name, status);
	else if (reason == DEATH_CRASHED)
		log_warnx("guest %s: killed by signal %d%s%s", p->conf->name, status,
			  p->kill_detail[0] ? ", " : "", p->kill_detail);
	else
		log_warnx("guest %s: %s: %s", p->conf->name, supervise_death_name(reason),
			  p->kill_detail);
	recover(h, p);
	p->kill_reason = -1;
	p->kill_detail[0] = '\0';
	if (p->removed) {		/* dropped by a reload: the entry is free */
		log_info("guest %s: removed", p->conf->name);
		guest_conf_free(p->conf);
		guest_conf_free(p->next_conf);
		p->conf = p->next_conf = NULL;
		p->removed = p->want_restart = 0;
		p->state = PEER_DOWN;
		p->ndeaths = 0;
		p->restarts = 0;
		if (h->stopping && supervise_all_down(h))
			ev_break(h->loop, EVBREAK_ALL);
		return;
	}
	if (p->want_restart && !h->stopping) {
		p->want_restart = 0;
		supervise_start(h, p);
		return;
	}
	if (p->want_down || h->stopping ||
	    p->conf->restart == RESTART_NEVER ||
	    (p->conf->restart == RESTART_ON_FAILURE && reason == DEATH_EXITED && status == 0)) {
		p->state = PEER_DOWN;
		if (h->stopping && supervise_all_down(h))
			ev_break(h->loop, EVBREAK_ALL);
		return;
	}
	recent = recent_deaths(p);
	if (recent > p->conf->max_deaths) {
		p->state = PEER_FAILED;
		log_warnx("guest %s: FAILED: died %u times within %.0f s; left down "
			  "until 'hubctl restart %s'", p->conf->name, recent,
			  seconds(p->conf->death_window_ns), p->conf->name);
		return;
	}
	/* exponential backoff, back to the minimum after a long good run */
	if (p->backoff_ns == 0 ||
	    (p->up_ns != 0 && now_ns() - p->up_ns > p->conf->backoff_max_ns * 2))
		p->backoff_ns = p->conf->backoff_min_ns;
	else if ((p->backoff_ns *= 2) > p->conf->backoff_max_ns)
		p->backoff_ns = p->conf->backoff_max_ns;
	p->state = PEER_BACKOFF;
	log_info("guest %s: restarting in %.3f s", p->conf->name, seconds(p->backoff_ns));
	ev_timer_set(&p->timer, seconds(p->backoff_ns), 0);
	ev_timer_start(h->loop, &p->timer);
}

int
supervise_start(struct hub *h, struct peer *p)
{
	struct hp_peer_entry *e = hp_segment_peer(&h->seg, p->id);
	uint32_t empty = HP_PEER_EMPTY;
	int fds[2] = { -1, -1 }, errpipe[2] = { -1, -1 }, err = 0;
	char **argv = NULL;
	ssize_t n;
	pid_t pid;

	p->hub = h;
	p->kill_reason = -1;
	p->want_down = 0;
	if (p->next_conf != NULL) {	/* changed by a reload */
		guest_conf_free(p->conf);
		p->conf = p->next_conf;
		p->next_conf = NULL;
	}
	ev_io_init(&p->pid_w, pid_cb, -1, EV_READ);
	ev_io_init(&p->bell_w, bell_cb, -1, EV_READ);
	ev_timer_init(&p->timer, timer_cb, 0, 0);
	p->pid_w.data = p->bell_w.data = p->timer.data = p;
	/* r[shm.spawn.ticket] 1 r[shm.spawn.reserved-state]: ours until it attaches */
	if (!hp_cas_u32(&e->state, &empty, HP_PEER_RESERVED)) {
		log_warnx("guest %s: peer entry %u is busy (state %u)", p->conf->name,
			  p->id, empty);
		return -EBUSY;
	}
	hp_peer_view_host(&h->seg, p->id, &p->view);
	/* 2: r[shm.doorbell.socketpair] */
	if ((err = hp_doorbell_pair(fds)) != 0 || pipe2(errpipe, O_CLOEXEC) != 0 ||
	    (argv = guest_argv(h, p)) == NULL) {
		err = err ? err : -errno;
		log_warnx("guest %s: cannot prepare spawn: %s", p->conf->name, strerror(-err));
		goto fail;
	}
	p->start_ns = now_ns();
	p->up_ns = 0;
	if ((pid = fork()) < 0) {
		err = -errno;
		log_warn("guest %s: fork", p->conf->name);
		goto fail;
	}
	if (pid == 0)
		child(p, argv, fds[1], errpipe[1]);
	/* r[shm.spawn.fd-inheritance]: we keep only our end */
	close(fds[1]);
	close(errpipe[1]);
	fds[1] = errpipe[1] = -1;
	p->pid = pid;
	p->bell = fds[0];
	/* The child's exec closes the pipe: 0 bytes is success, else errno. */
	while ((n = read(errpipe[0], &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(errpipe[0]);
	errpipe[0] = -1;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0)
		fatal("pidfd_open");	/* Linux >= 5.3 is a requirement */
	ev_io_set(&p->pid_w, p->pidfd, EV_READ);
	ev_io_start(h->loop, &p->pid_w);
	p->state = PEER_STARTING;
	if (n == sizeof(err)) {
		snprintf(p->kill_detail, sizeof(p->kill_detail), "exec %s: %s",
			 p->conf->exec, strerror(err));
		p->kill_reason = DEATH_SPAWN;
		free_argv(p, argv);
		return 0;	/* its exit, seen on the pidfd, is the death */
	}
	ev_io_set(&p->bell_w, p->bell, EV_READ);
	ev_io_start(h->loop, &p->bell_w);
	ev_timer_set(&p->timer, seconds(h->conf.attach_timeout_ns), 0);
	ev_timer_start(h->loop, &p->timer);
	if (p->restarts++ > 0)
		log_info("guest %s: restarted (pid %d)", p->conf->name, (int)pid);
	else
		log_info("guest %s: started (pid %d)", p->conf->name, (int)pid);
	free_argv(p, argv);
	return 0;
fail:
	free_argv(p, argv);
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (errpipe[i] >= 0)
			close(errpipe[i]);
	}
	/* r[shm.spawn.reserved-state]: spawn failed, back to Empty */
	hp_store_release_u32(&e->state, HP_PEER_EMPTY);
	return err;
}

/* Ends a guest we gave up on: a Goodbye naming why (r[shm.goodbye.payload]),
 * then SIGKILL; recovery follows when its pidfd reports the exit. */
void
supervise_kill(struct peer *p, int reason, const char *detail)
{
	if (p->kill_reason >= 0 || p->pid <= 0)
		return;		/* already on its way out */
	p->kill_reason = reason;
	snprintf(p->kill_detail, sizeof(p->kill_detail), "%s", detail);
	host_goodbye(p->hub, p, detail);
	if (p->state == PEER_UP)
		p->state = PEER_STOPPING;
	if (syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) != 0)
		kill(p->pid, SIGKILL);
}

/* Asks a guest to leave: SIGTERM, then SIGKILL after stop_grace. */
void
supervise_stop(struct hub *h, struct peer *p)
{
	p->want_down = 1;
	switch (p->state) {
	case PEER_BACKOFF:
	case PEER_FAILED:
		ev_timer_stop(h->loop, &p->timer);
		p->state = PEER_DOWN;
		return;
	case PEER_STARTING:
	case PEER_UP:
		p->state = PEER_STOPPING;
		syscall(SYS_pidfd_send_signal, p->pidfd, SIGTERM, NULL, 0);
		ev_timer_stop(h->loop, &p->timer);
		ev_timer_set(&p->timer, seconds(h->conf.stop_grace_ns), 0);
		ev_timer_start(h->loop, &p->timer);
		return;
	}
}

/* hubctl restart: now if it is down (failed included: its tally is
 * cleared), else after a stop. */
void
supervise_restart(struct hub *h, struct peer *p)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	p->tally_from_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	p->backoff_ns = 0;
	switch (p->state) {
	case PEER_DOWN:
	case PEER_FAILED:
	case PEER_BACKOFF:
		ev_timer_stop(h->loop, &p->timer);
		supervise_start(h, p);
		return;
	case PEER_STOPPING:
		p->want_restart = 1;
		return;
	default:
		supervise_stop(h, p);
		p->want_down = 0;
		p->want_restart = 1;
		return;
	}
}

int
supervise_all_down(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		int s = h->peers[i].state;

		if (s == PEER_STARTING || s == PEER_UP || s == PEER_STOPPING)
			return 0;
	}
	return 1;
}

/* Graceful stop (r[shm.goodbye.host]): say goodbye in the header, ring
 * every doorbell, give guests stop_grace to detach, then SIGKILL. */
void
supervise_stop_all(struct hub *h)
{
	h->stopping = 1;
	/* r[shm.goodbye.host-atomic] */
	hp_store_release_u32(&hp_segment_header(&h->seg)->host_goodbye, 1);
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];

		if (p->bell >= 0)
			hp_doorbell_signal(p->bell);
		/* a spec-only guest sleeps on its ring head */
		hp_futex_wake(&hp_segment_peer(&h->seg, p->id)->h2g_head, INT32_MAX);
		if (p->state == PEER_BACKOFF || p->state == PEER_FAILED) {
			ev_timer_stop(h->loop, &p->timer);
			p->state = PEER_DOWN;
		} else if (p->state == PEER_STARTING || p->state == PEER_UP) {
			p->want_down = 1;
			p->state = PEER_STOPPING;
			ev_timer_stop(h->loop, &p->timer);
			ev_timer_set(&p->timer, seconds(h->conf.stop_grace_ns), 0);
			ev_timer_start(h->loop, &p->timer);
		}
	}
	if (supervise_all_down(h))
		ev_break(h->loop, EVBREAK_ALL);
}
