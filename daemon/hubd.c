/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd: owns the segment, spawns and supervises the guests, serves their
 * rings and the control socket, all from one libev loop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <bsd/libutil.h>

#include "daemon/answer.h"
#include "daemon/commands.h"
#include "daemon/control.h"
#include "daemon/dispatch.h"
#include "daemon/fair.h"
#include "daemon/filter.h"
#include "daemon/host.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/manual.h"
#include "daemon/methods.h"
#include "daemon/monitor.h"
#include "daemon/notify.h"
#include "daemon/pool.h"
#include "daemon/relay.h"
#include "daemon/upload.h"
#include "daemon/reload.h"
#include "daemon/route.h"
#include "daemon/services.h"
#include "daemon/size.h"
#include "daemon/spawn.h"
#include "daemon/streams.h"
#include "daemon/supervise.h"
#include "daemon/discovery.h"
#include "daemon/topics.h"
#include "daemon/users.h"

#define SPIN_NS		50000	/* keep polling rings this long after the last work */
#define BUSY_NS		1000000	/* then give libev a turn at least this often */
#define YIELD_AFTER_NS	10000	/* quiet this long: yield the CPU now and then */
/* make install under a prefix of its own builds hubd again with its own */
#ifndef HUB_CONF_DEFAULT
#define HUB_CONF_DEFAULT	"/etc/hub/hubd.conf"
#endif
#define DEFAULT_CONF	HUB_CONF_DEFAULT

/* -h, --help: on stdout, exit 0; a bad command line: on stderr, exit 1. */
static void __attribute__((noreturn))
usage(FILE *out, int status)
{
	fprintf(out, "usage: hubd [-hnv] [-f file]\n"
		"  -f file  configuration (default " DEFAULT_CONF ")\n"
		"  -n       check the configuration and the files it names, and exit\n"
		"  -v       verbose logging\n"
		"  -h       this help (--help too)\n"
		"The control socket (hubctl -s) is the file's [hub] control\n"
		"(default " HUB_CONTROL_DEFAULT "); see hubd(8) and hubd.conf(5).\n");
	exit(status);
}

/* hubd -n: what a good file names that would fail once the hub runs.
 * A guest whose exec cannot run fails alone and the hub runs on: a
 * warning. The control socket's directory must be there, or its parent
 * for hubd to make it, and its path must fit a socket's address, else
 * hubd cannot start: an error. So is a guest started by hand whose ticket
 * socket's path does not fit: no ticket could ever start it. Returns the
 * errors. */
static int
check_files(const struct hub_conf *c, const char *file)
{
	const char *slash = strrchr(c->control_path, '/');
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	size_t len = strlen(c->control_path);
	struct stat st;
	int errors = 0;

	if (len >= sizeof(sock)) {
		fprintf(stderr, "%s:%d: control %s: socket path too long (%zu bytes, at most "
			"%zu): hubd cannot start\n", file, c->control_line, c->control_path, len,
			sizeof(sock) - 1);
		errors++;
	}
	for (uint32_t i = 0; i < c->nguests; i++) {
		const struct config_guest *g = &c->guests[i];
		char why[160];
		int n;

		if (g->start_manual) {
			n = manual_path(sock, sizeof(sock), c->control_path, g->name);
			if (n < 0 || (size_t)n >= sizeof(sock)) {
				fprintf(stderr, "%s:%d: guest %s: ticket socket path too long (%d "
					"bytes, at most %zu): it cannot be started by hand\n", file,
					g->line, g->name, n, sizeof(sock) - 1);
				errors++;
			}
			continue;	/* started by hand, as the operator says */
		}
		if (spawn_exec_problem(g->exec, why, sizeof(why)) != NULL)
			fprintf(stderr, "%s:%d: warning: guest %s: exec %s: %s: it will not "
				"start\n", file, g->line, g->name, g->exec, why);
	}
	if (slash != NULL && slash != c->control_path) {
		char *dir = strndup(c->control_path, (size_t)(slash - c->control_path));
		char *up = dir != NULL ? strrchr(dir, '/') : NULL;

		/* hubd makes the last part of the socket's directory only */
		if (dir != NULL && stat(dir, &st) != 0 && up != NULL && up != dir) {
			*up = '\0';
			int missing = stat(dir, &st) != 0 ? errno == ENOENT ? 1 : -1 : 0;

			if (missing != 0 || !S_ISDIR(st.st_mode)) {
				fprintf(stderr, "%s:%d: control %s: %s %s: hubd makes the "
					"socket's own directory only, not the ones above it\n",
					file, c->control_line, c->control_path, dir,
					missing == 1 ? "does not exist" : "is not a directory");
				errors++;
			}
		}
		free(dir);
	}
	return errors;
}

/* Woken from sleep and done with what woke us: whoever rang us is most
 * likely runnable behind us on this CPU (the kernel wakes us on the
 * waker's), waiting for what we sent; step aside once now rather than
 * after YIELD_AFTER_NS of polling (a call from quiet 8 us sooner), or
 * after the rest of the loop's turn (9 us more). */
static void
step_aside(struct hub *h)
{
	if (h->woken && h->served) {
		h->woken = 0;
		sched_yield();
	}
}

/* The data path's turn: poll every ring until there has been nothing to do
 * for SPIN_NS, returning to libev at least every BUSY_NS so sockets and
 * timers are served. No syscall here while messages flow. */
static void
idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct hub *h = w->data;
	uint64_t start = hp_now_ns(), last = start, now = start;
	int worked = 0;

	(void)revents;
	for (unsigned round = 0;; round++) {
		if (dispatch_poll(h) > 0) {
			worked = 1;
			h->served = 1;
		} else {
			step_aside(h);
			/* more of the hub's processes awake than CPUs: what
			 * we wait for needs this CPU more than polling does
			 * (endpoint.h) */
			if (host_crowded(h))
				sched_yield();
		}
		/* the clock only now and then: a read costs as much as a
		 * poll; busy rounds too, or a flood that never lets a
		 * round come up empty keeps libev, and with it the
		 * control socket, deaths and the heartbeat checks, waiting */
		if (round % 16 != 0)
			continue;
		now = hp_now_ns();
		if (worked) {
			last = now;
			worked = 0;
		}
		/* quiet for a while: a guest we woke may be waiting for this
		 * CPU (the kernel likes to wake it here), so step aside now
		 * and then; a reply within YIELD_AFTER_NS still finds us spinning */
		if (now - last > YIELD_AFTER_NS && round % 64 == 0)
			sched_yield();
		if (now - last > SPIN_NS) {
			ev_idle_stop(loop, w);	/* quiet: let the loop sleep */
			return;
		}
		if (now - start > BUSY_NS)
			return;
	}
}

/* Each loop iteration, before libev looks for events: the supervisor acts
 * on the faults the data path found; then, if the loop is about to block,
 * announce sleep and look once more. */
static void
prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct hub *h = w->data;

	(void)revents;
	supervise_faults(h);
	/* a guest found a class exhausted (it rang the doorbell) */
	pool_grow_requested(h);
	if (ev_is_active(&h->idle_w))
		return;
	h->announced = 1;
	h->sleeps++;
	host_awake_update(h, 0);
	if (dispatch_sleep_prepare(h))
		ev_idle_start(loop, &h->idle_w);
}

static void
check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	struct hub *h = w->data;

	(void)revents;
	if (h->announced) {
		h->announced = 0;
		/* what woke us is most likely in a ring already (a guest
		 * rings after it publishes): served now, before another turn
		 * of the loop; only the guest whose bell rang (bells_cb ran
		 * first) if one did, and we step aside before we touch the
		 * other guests' memory, all cold after a quiet spell (each
		 * guest beside it cost a call after quiet 0.3 us) */
		h->woken = 1;
		h->served = (h->rang != NULL ? dispatch_serve(h, h->rang) : dispatch_poll(h)) > 0;
		if (h->served && !ev_is_active(&h->idle_w))
			ev_idle_start(loop, &h->idle_w);
		step_aside(h);
		h->rang = NULL;
		/* a guest that sends meanwhile still sees our sleep
		 * announced, and rings once more: no wake is lost */
		host_awake_update(h, 1);
		host_wake(h);
	}
}

/* STATUS= for systemctl status, when it changes. */
static void
update_status(struct hub *h)
{
	uint32_t up = 0, all = 0;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		all += h->peers[i].conf != NULL;
		up += h->peers[i].state == PEER_UP;
	}
	if (up == h->status_up)
		return;
	h->status_up = up;
	notify("STATUS=%u of %u guests up", up, all);
}

static void
tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	host_check(w->data, hp_now_ns());
	supervise_tick(w->data);
	update_status(w->data);
}

/* Pinged from the loop itself: a hung loop stops the pings. */
static void
watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	notify("WATCHDOG=1");
}

static void
signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct hub *h = w->data;

	(void)loop;
	(void)revents;
	if (w->signum == SIGHUP) {
		log_info("SIGHUP: reloading %s", h->conf.file);
		reload_config(h, stderr);
		return;
	}
	if (w->signum == SIGUSR1 || w->signum == SIGUSR2) {
		log_info("%s: ignored (SIGHUP reloads, SIGTERM stops)", strsignal(w->signum));
		return;
	}
	if (h->stopping)
		return;
	log_info("%s: stopping", strsignal(w->signum));
	notify("STOPPING=1");
	supervise_stop_all(h);
}

/* A lock file's pid (n bytes in pid), or -1 when the file is not one: a
 * regular file of a pid and a newline, or empty. */
static int
lock_pid(int fd, char *pid, size_t len)
{
	struct stat st;
	ssize_t n;

	n = pread(fd, pid, len - 1, 0);
	pid[n > 0 ? n : 0] = '\0';
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size >= (off_t)len ||
	    pid[strspn(pid, "0123456789")] != (pid[0] ? '\n' : '\0'))
		return -1;
	return (int)strcspn(pid, "\n");
}

/* One hubd per control socket: a lock beside it, not a guess from the
 * socket (a hubd killed leaves it behind; its lock goes with it).
 * A file already there must be a lock file (a pid, or empty): whatever
 * else sits at that path is somebody's, not ours to overwrite. flopen
 * opens and locks, and locks again if the file it locked was unlinked
 * or replaced meanwhile (a hubd that exits unlinks its lock: another's
 * lock on the old file would be no lock at all). Not pidfile_open: it
 * empties whatever file is there before anyone looks at it, and follows
 * symlinks. */
static int
lock_hub(struct hub *h)
{
	const char *slash = strrchr(h->conf.control_path, '/');
	char pid[32];
	int fd, n;

	if (asprintf(&h->lock_path, "%s.lock", h->conf.control_path) < 0) {
		h->lock_path = NULL;
		log_warnx("out of memory");
		return -1;
	}
	/* /run/hub (or a prefix's) when run by hand (systemd's RuntimeDirectory
	 * otherwise) */
	if (slash != NULL && slash != h->conf.control_path) {
		char *dir = strndup(h->conf.control_path,
				    (size_t)(slash - h->conf.control_path));

		if (dir == NULL || (mkdir(dir, 0755) != 0 && errno != EEXIST))
			log_warn("mkdir %s", dir != NULL ? dir : "");
		free(dir);
	}
	/* held until lock_fd is closed (teardown, or fail below); O_NONBLOCK:
	 * the lock is not waited for (nor a FIFO's writer) */
	h->lock_fd = flopen(h->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			    O_NONBLOCK, 0600);
	if (h->lock_fd < 0 && errno == EWOULDBLOCK) {
		/* whose: for the message only */
		n = -1;
		if ((fd = open(h->lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
			       O_NONBLOCK)) >= 0) {
			n = lock_pid(fd, pid, sizeof(pid));
			close(fd);
		}
		log_warnx("another hubd (pid %.*s) owns %s", n > 0 ? n : 1, n > 0 ? pid : "?",
			  h->conf.control_path);
		return -1;
	}
	if (h->lock_fd < 0) {
		log_warn("%s", h->lock_path);
		return -1;
	}
	if (lock_pid(h->lock_fd, pid, sizeof(pid)) < 0) {
		log_warnx("%s exists and is not a hubd lock file: refusing to touch it",
			  h->lock_path);
		goto fail;
	}
	h->lock_held = 1;
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(h->lock_fd, 0) != 0 || pwrite(h->lock_fd, pid, (size_t)n, 0) != n)
		log_warn("%s", h->lock_path);
	log_debug("locked %s", h->lock_path);
	return 0;
fail:
	close(h->lock_fd);	/* and its lock */
	h->lock_fd = -1;
	return -1;
}

/* The data path, each part below the next: the transport (host.c), the
 * dispatcher, the handlers. The handlers fill the dispatcher's table and
 * its work sources, and register what a peer's attach or detach means to
 * them; the supervisor learns who waits for a freed entry. Nothing below
 * names what sits above it. */
static int
wire(struct hub *h)
{
	methods_init(h);
	for (uint32_t i = 0; i < h->npeers; i++)
		answer_init(&h->peers[i]);
	if (fair_init(h) != 0 || services_init(h) != 0)
		return -1;
	dispatch_init(h);
	dispatch_on(h, HP_MSG_REQUEST, route_request);
	dispatch_on(h, HP_MSG_RESPONSE, route_response);
	dispatch_on(h, HP_MSG_CANCEL, route_cancel);
	/* a channel without a relay: relay.c hands it to streams.c */
	dispatch_on(h, HP_MSG_DATA, relay_data);
	dispatch_on(h, HP_MSG_CLOSE, relay_end);
	dispatch_on(h, HP_MSG_RESET, relay_end);
	dispatch_source(h, services_source_pump, services_source_ready);
	dispatch_source(h, relay_pump, relay_ready);
	dispatch_source(h, upload_pump, upload_ready);
	host_on_attach(h, pool_forget);
	host_on_attach(h, streams_reset_all);
	host_on_detach(h, relay_detach);	/* before answer_detach: a Reset before the error */
	host_on_detach(h, upload_detach);
	host_on_detach(h, answer_detach);
	host_on_detach(h, streams_reset_all);	/* streams from p to clients end, to p stop */
	host_on_detach(h, pool_forget);
	host_on_detach(h, methods_detach);	/* hub.describe's texts */
	host_on_charge(h, pool_over_quota, pool_room);
	if (lanes_init(h) != 0 || topics_init(h) != 0 || monitor_init(h) != 0)
		return -1;
	discovery_init(h);
	supervise_on_free(h, reload_start_waiting);
	return 0;
}

static void
unwire(struct hub *h)
{
	relay_free_all(h);
	upload_free_all(h);
	lanes_free(h);
	topics_free(h);
	monitor_free(h);
	for (uint32_t i = 0; h->peers != NULL && i < h->npeers; i++)
		answer_free(&h->peers[i]);
	fair_free(h);
	methods_free(h);
}

/* r[shm.topology.hub]: one host and its guests, each guest's memory a
 * domain of its own made as it starts (spawn.c). Everything made here is
 * undone by teardown, also after a failure half way: no lock or socket is
 * left behind, and there is no file of shared memory to leave. */
static int
setup(struct hub *h)
{
	struct hub_conf *c = &h->conf;
	struct hp_geometry geo;
	char size[24];
	int rc;

	if (hp_geometry_compute(&c->params, &geo, NULL) != 0)
		return -1;	/* config_load checked it */
	if (lock_hub(h) != 0)
		return -1;
	/* what every domain offers (r[shm.handshake]) */
	h->features = HP_FEAT_WAITERS | (c->params.var.nclasses > 0 ? HP_FEAT_VARSLOT : 0);
	if ((h->peers = calloc(c->params.max_guests, sizeof(*h->peers))) == NULL)
		goto nomem;
	h->npeers = c->params.max_guests;
	for (uint32_t i = 0; i < c->params.max_guests; i++) {
		struct peer *p = &h->peers[i];

		p->id = i + 1;
		p->dom.fd = -1;
		supervise_init(h, p);
		p->chans = calloc(c->params.max_channels, sizeof(*p->chans));
		if (p->chans == NULL)
			goto nomem;
	}
	if (wire(h) != 0)
		goto nomem;
	h->ncpus = hp_cpus_usable();
	host_awake_update(h, 1);	/* counted until the loop sleeps */
	if ((rc = filter_init()) != 0)
		log_warnx("guests run without a system call filter: %s", strerror(-rc));
	/* last: a socket that answers means a hub that is ready */
	if (control_init(h, &commands_ops) != 0) {
		log_warnx("cannot open the control socket %s", c->control_path);
		return -1;
	}
	log_info("%u guests at most, each in memory of its own (%s mapped, what it uses "
		 "resident)", c->params.max_guests, size_text(size, sizeof(size), geo.total_size));
	return 0;
nomem:
	log_warnx("out of memory");
	return -1;
}

/* The hub whose guests' process groups go with hubd, however it exits
 * (fatal() included); none once torn down. */
static struct hub *guests_of;

static void
kill_guests(void)
{
	if (guests_of != NULL)
		supervise_kill_groups(guests_of);
}

static void
teardown(struct hub *h)
{
	kill_guests();		/* all down by now, unless something went wrong */
	guests_of = NULL;
	reload_free(h);
	if (h->ctl_fd >= 0)
		control_close(h);
	for (uint32_t i = 0; i < h->npeers; i++)
		hp_segment_close(&h->peers[i].dom);
	filter_free();
	pool_free(h);
	users_release_all(h);	/* all down by now: their uids are free */
	if (h->lock_held)
		unlink(h->lock_path);
	if (h->lock_fd >= 0)
		close(h->lock_fd);
	free(h->lock_path);
	for (uint32_t i = 0; i < h->npeers; i++) {
		free(h->peers[i].chans);
		free(h->peers[i].tx_cls);
		config_guest_free(h->peers[i].conf);
		config_guest_free(h->peers[i].next_conf);
		lifecycle_free(&h->peers[i].life);
		guestlog_free(&h->peers[i]);
	}
	unwire(h);
	free(h->peers);
	config_free(&h->conf);
}

int
main(int argc, char *argv[])
{
	/* by default SIGQUIT, SIGUSR1 and SIGUSR2 would end hubd at once,
	 * its lock and socket left behind (a log rotation's USR1 did) */
	static const int sigs[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2 };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = DEFAULT_CONF;
	struct hub hub, *h = &hub;
	int ch, check = 0, verbose = 0;

	while ((ch = getopt_long(argc, argv, "f:nvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f': file = optarg; break;
		case 'n': check = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout, 0); break;
		default: usage(stderr, 1);
		}
	}
	if (optind != argc)
		usage(stderr, 1);
	log_init(verbose, "hubd");
	memset(h, 0, sizeof(*h));
	h->lock_fd = h->ctl_fd = h->ctl_spare = h->uid_fd = -1;
	if (config_load(file, &h->conf, stderr) != 0)
		return 1;
	log_debug("config %s: %u guests", file, h->conf.nguests);
	if (check) {
		int errors = check_files(&h->conf, file);

		if (errors == 0)
			printf("%s: configuration OK (%u guest%s)\n", file, h->conf.nguests,
			       h->conf.nguests == 1 ? "" : "s");
		config_free(&h->conf);
		return errors == 0 ? 0 : 1;
	}
	signal(SIGPIPE, SIG_IGN);
	spawn_raise_fd_limit(h->conf.params.max_guests);
	notify_init();
	/* Not ev_default_loop: that one reaps every child with waitpid(-1)
	 * on SIGCHLD and would steal the exit statuses our pidfds report. */
	if ((h->loop = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV)) == NULL) {
		log_warnx("cannot create the event loop");
		config_free(&h->conf);
		return 1;
	}
	/* before anything is made: a SIGTERM from now on waits for the loop
	 * and stops the hub cleanly, never kills it half set up */
	_Static_assert(sizeof(sigs) / sizeof(sigs[0]) == sizeof(h->sig_w) / sizeof(h->sig_w[0]),
		       "a watcher per signal");
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		ev_signal_init(&h->sig_w[i], signal_cb, sigs[i]);
		h->sig_w[i].data = h;
		ev_signal_start(h->loop, &h->sig_w[i]);
	}
	if (setup(h) != 0) {
		teardown(h);
		ev_loop_destroy(h->loop);
		return 1;
	}
	ev_idle_init(&h->idle_w, idle_cb);
	ev_prepare_init(&h->prepare_w, prepare_cb);
	ev_check_init(&h->check_w, check_cb);
	h->idle_w.data = h->prepare_w.data = h->check_w.data = h;
	ev_prepare_start(h->loop, &h->prepare_w);
	ev_check_start(h->loop, &h->check_w);
	/* heartbeat checks a few times per interval: a hang is seen within
	 * 2.25 intervals; never more often than 100 Hz, never less than 1 Hz */
	double tick = (double)h->conf.params.heartbeat_interval / 4e9;

	tick = tick == 0 || tick > 1 ? 1 : tick < 0.01 ? 0.01 : tick;
	ev_timer_init(&h->tick_w, tick_cb, tick, tick);
	h->tick_w.data = h;
	ev_timer_start(h->loop, &h->tick_w);
	pool_start(h);
	h->start_ns = hp_now_ns();
	if (notify_watchdog_s() > 0) {
		ev_timer_init(&h->watchdog_w, watchdog_cb, 0, notify_watchdog_s() / 2);
		ev_timer_again(h->loop, &h->watchdog_w);
	}
	users_number(h, &h->conf);
	for (uint32_t i = 0; i < h->conf.nguests; i++) {
		if ((h->peers[i].conf = config_guest_dup(&h->conf.guests[i])) == NULL)
			log_warnx("guest %s: out of memory, not started", h->conf.guests[i].name);
		else
			users_take(h->peers[i].conf);
	}
	guests_of = h;
	if (atexit(kill_guests) != 0)
		log_warnx("atexit: guests' children may outlive an abnormal exit");
	for (uint32_t i = 0; i < h->conf.nguests; i++)
		if (h->peers[i].conf != NULL)
			supervise_start(h, &h->peers[i]);
	h->status_up = UINT32_MAX;
	notify("READY=1\nSTATUS=%u guests started", h->conf.nguests);
	ev_run(h->loop, 0);
	log_last_lines(3000);
	log_info("stopped");
	teardown(h);
	ev_loop_destroy(h->loop);
	return h->exit_code;
}
