/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest's attach (which wires the service loop's dispatch table
 * to calls, channels and the Goodbye, and starts on the callback
 * runtime) and detach, and the public entries to the loop, each handed to
 * the runtime in use. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/doorbell.h"
#include "proto/msg.h"
#include "proto/peer.h"
#include "proto/ticket.h"

#define ATTACH_RETRY_MS	1000	/* a segment still being created */
#define UNDECODABLE	"(undecodable goodbye)"

static int	on_goodbye(struct guest *g, struct hp_msg_in *m);

/* guest_attach's first beat: the clock is session.c's. */
static uint64_t
clock_beat(struct guest *g)
{
	return lg_clock_beat(g);
}

/* The dispatch table, and the callback runtime until guest_run_mt. */
static void
wire(struct guest *g)
{
	g->rt = &lg_callback;
	lg_call_out_wire(g);
	lg_call_in_wire(g);
	lg_chan_wire(g);
	g->on_msg[HP_MSG_GOODBYE] = on_goodbye;	/* the host ended us */
}

static void	sigterm_install(struct guest *g);
static int	own_loop_fd(struct guest *g);
static void	sigterm_remove(struct guest *g);
static void	release(struct guest *g);

/* What an attached guest needs before it runs: its eventfd and guest_fd's
 * epoll set, the heartbeat, the tables of calls and channels, SIGTERM.
 * 0, or -errno with *why (the caller detaches). */
static int
attached(struct guest *g, const char **why)
{
	int rc;

	if ((g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		*why = "cannot make an eventfd";
		return -errno;
	}
	g->ep.wake_fd = g->wake_fd;
	if ((rc = own_loop_fd(g)) != 0) {
		*why = "cannot make the descriptor guest_fd gives";
		return rc;
	}
	g->hb_interval = g->seg.params.heartbeat_interval;
	clock_beat(g);
	g->next_req = 1;
	if (hp_idtab_reserve(&g->out, 32) != 0 ||
	    lg_chans_alloc(&g->chans, g->view.chans, g->seg.params.max_channels,
			   g->seg.params.initial_credit, HP_SIDE_GUEST, &g->ep, NULL) != 0) {
		*why = "out of memory";
		return -ENOMEM;
	}
	sigterm_install(g);
	/* hubd reads our output through a pipe, where stdio would hold a
	 * plugin's printf lines until exit (or lose them in a crash) */
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOLBF, 0);
	return 0;
}

int
guest_attach(int argc, char *const argv[], struct guest **gp, const char **why)
{
	struct hp_ticket t;
	struct guest *g;
	uint32_t state = HP_PEER_RESERVED;
	const char *dummy;
	int rc, waited = 0;

	if (why == NULL)
		why = &dummy;
	*gp = NULL;
	/* r[shm.spawn.guest-init] 1: the ticket */
	if ((rc = hp_ticket_parse(argc, argv, &t, why)) != 0)
		return rc;
	/* started by hand (start = manual): the rest from hubd */
	if (t.hand != NULL && (rc = hp_ticket_fetch(&t, why)) != 0)
		return rc;
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		*why = "out of memory";
		hp_ticket_close(&t);
		return -ENOMEM;
	}
	g->seg.fd = -1;
	g->epfd = -1;
	g->wake_fd = -1;
	g->out = (struct hp_idtab)HP_IDTAB_INIT(struct out_call);
	g->later_tail = &g->later;
	wire(g);
	g->doorbell = t.doorbell_fd;
	g->bells[0] = t.bells[0];
	g->bells[1] = t.bells[1];
	g->peer_id = t.peer_id;
	/* 2-3: map and validate; a hub still creating it has no magic yet */
	while ((rc = hp_segment_attach(&g->seg, t.hub_path, 0, why)) == -EAGAIN &&
	       waited < ATTACH_RETRY_MS) {
		usleep(10000);
		waited += 10;
	}
	if (rc != 0)
		goto fail;
	/* the shared pool, a file of its own, where the host lets us in */
	if (t.pool_path != NULL &&
	    (rc = hp_segment_attach_pool(&g->seg, t.pool_path, t.peer_id, why)) != 0)
		goto fail_unmap;
	/* 4: our entry, through its own offsets (they are authoritative) */
	if ((rc = hp_peer_view_guest(&g->seg, t.peer_id, &g->view, why)) != 0)
		goto fail_unmap;
	if ((rc = hp_endpoint_init_guest(&g->ep, &g->seg, &g->view, g->doorbell,
					 g->bells[0] >= 0 ? g->bells : NULL,
					 HP_FEAT_ALL | HP_FEAT_LANES | HP_FEAT_BELLS)) != 0) {
		*why = "the host's rings are corrupt";
		goto fail_unmap;
	}
	if ((rc = lg_lanes_init(g)) != 0 || (rc = lg_topics_init(g)) != 0) {
		*why = "out of memory";
		goto fail_lanes;
	}
	/* 5-6: Reserved -> Attached and the epoch incremented, or somebody
	 * else's entry (r[shm.guest.attach-failure]: then we do not attach
	 * at all). What we set up is released to hubd's acquire of Attached
	 * (check_attach); r[shm.crash.epoch]: a new instance. */
	if ((rc = hp_peer_attach(g->view.entry, &state)) != 0) {
		*why = "the peer entry is not reserved for us (started by hand?)";
		goto fail_lanes;
	}
	if ((rc = attached(g, why)) != 0) {
		release(g);
		free(g);
		return rc;
	}
	/* 7: tell the host we are here (r[shm.doorbell.signal]) */
	hp_doorbell_signal(g->doorbell);
	*gp = g;
	return 0;

fail_lanes:
	lg_topics_free(g);
	lg_lanes_free(g);
fail_unmap:
	hp_segment_close(&g->seg);
fail:
	free(g);
	hp_ticket_close(&t);	/* what a hand-started guest received */
	return rc;
}

/* guest_fd: one descriptor for a plugin's own loop to poll, whatever
 * lanes come and go (lane.c adds theirs), readable also for a kick of
 * wake_fd (guest_stop, lg_rest). */
static int
own_loop_fd(struct guest *g)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = g->doorbell };

	if ((g->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->doorbell, &ev) != 0)
		return -errno;
	/* the bell hubd rings, when we use it */
	ev.data.fd = g->ep.bell_in;
	if (g->ep.bell_in >= 0 && epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->ep.bell_in, &ev) != 0)
		return -errno;
	ev.data.fd = g->wake_fd;
	return epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->wake_fd, &ev) != 0 ? -errno : 0;
}

unsigned
guest_peer_id(const struct guest *g)
{
	return g->peer_id;
}

int
guest_fd(struct guest *g)
{
	if (lg_detached(g))
		return -ENOTCONN;
	/* the plugin's loop sleeps on it from now on: every libguest wait
	 * that sleeps leaves it rung for the next message, as
	 * guest_service does */
	g->own_loop = 1;
	lg_rest(g);
	return g->epfd;
}

/* guest.h's since 0.5, with a size; compat.c keeps 0.1's */
__asm__(".symver guest_get_stats, guest_get_stats@@@LIBGUEST_0.5");

int
guest_get_stats(const struct guest *g, struct guest_stats *s)
{
	struct guest *locked = (struct guest *)(uintptr_t)g;
	struct guest_stats own;
	size_t n = s->size;

	if (n < offsetof(struct guest_stats, calls_in) + sizeof(s->calls_in))
		return -EINVAL;
	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(locked);
	own = g->stats;
	own.wakes = g->ep.stats.wakes;
	own.sleeps = g->ep.stats.sleeps;
	g->rt->unlock(locked);
	/* a later guest.h's fields, which this libguest does not keep */
	if (n > sizeof(own)) {
		memset((char *)s + sizeof(own), 0, n - sizeof(own));
		n = sizeof(own);
	}
	own.size = n;
	memcpy(s, &own, n);
	return 0;
}

/* r[shm.goodbye.payload]: the host ended us and says why (the rule we
 * broke). Kept for guest_goodbye_reason; the loop ends with -ECONNABORTED
 * and so does every call in flight. */
static int
on_goodbye(struct guest *g, struct hp_msg_in *m)
{
	const char *why;
	size_t n;

	if (hp_msg_decode_goodbye(m->payload, m->len, &why, &n) != 0) {
		why = UNDECODABLE;
		n = strlen(why);
	}
	if (n > GOODBYE_MAX) {
		n = GOODBYE_MAX;
		while (n > 0 && ((uint8_t)why[n] & 0xC0) == 0x80)
			n--;		/* whole UTF-8 sequences only */
	}
	memcpy(g->goodbye, why, n);
	g->goodbye[n] = '\0';
	g->ended_by_hub = 1;
	g->dead = -ECONNABORTED;
	lg_out_fail_all(g, -ECONNABORTED);
	return -ECONNABORTED;
}

const char *
guest_goodbye_reason(const struct guest *g)
{
	return g->ended_by_hub ? g->goodbye : NULL;
}

/* -- the loop, in the runtime in use ------------------------------------- */

int
guest_service(struct guest *g)
{
	if (lg_detached(g))
		return -ENOTCONN;
	return g->rt->service(g);
}

int
guest_service_wait(struct guest *g, int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };

	if (lg_detached(g))
		return -ENOTCONN;
	return g->rt->service_wait(g, &t);
}

/* Async-signal-safe: an atomic store and a write(2) to an eventfd. */
void
guest_stop(struct guest *g)
{
	/* release: pairs with the acquire loads of guest_run (runtime_callback.c)
	 * and the microthread service (runtime_mt.c), which then see what the
	 * stopping thread wrote before; the wake below ends their sleep */
	if (lg_detached(g))
		return;		/* nothing runs to stop */
	atomic_store_explicit(&g->stop, 1, memory_order_release);
	g->rt->stop(g);
}

/* SIGTERM (hubctl stop, restart, a hub that stops): guest_run returns 0,
 * as on the hub's goodbye, and the guest detaches and exits; installed
 * only over the default action, for the first guest attached. */
static struct guest *_Atomic term_guest;

static void
on_sigterm(int sig)
{
	struct guest *g = atomic_load(&term_guest);
	int saved = errno;

	(void)sig;
	if (g != NULL)
		guest_stop(g);
	errno = saved;
}

static void
sigterm_install(struct guest *g)
{
	struct sigaction sa, old;
	struct guest *none = NULL;

	if (sigaction(SIGTERM, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
	    (old.sa_flags & SA_SIGINFO))
		return;		/* the application's choice */
	if (!atomic_compare_exchange_strong(&term_guest, &none, g))
		return;		/* another guest of this process has it */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigterm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGTERM, &sa, NULL) != 0)
		atomic_store(&term_guest, NULL);
	else
		g->term_handler = 1;
}

/* Back to the default action if the handler is still ours. */
static void
sigterm_remove(struct guest *g)
{
	struct sigaction sa, old;
	struct guest *me = g;

	if (!g->term_handler)
		return;
	if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == on_sigterm) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
	}
	atomic_compare_exchange_strong(&term_guest, &me, NULL);
}

/* Everything g holds but g itself: what detach and a failed attach end. */
static void
release(struct guest *g)
{
	if (g->view.entry != NULL) {
		hp_endpoint_flush(&g->ep);
		hp_endpoint_set_awake(&g->ep, 0);	/* no longer one of the hub's */
		/* r[shm.guest.detach] r[shm.goodbye.guest]: we are leaving
		 * (release: pairs with host_check's acquire of the state) */
		hp_peer_goodbye(g->view.entry);
		hp_doorbell_signal(g->doorbell);
	}
	lg_topics_free(g);
	lg_lanes_free(g);
	lg_out_fail_all(g, -EPIPE);
	lg_later_free(g);
	lg_calls_free(g);
	sigterm_remove(g);
	if (g->epfd >= 0)
		close(g->epfd);
	if (g->wake_fd >= 0)
		close(g->wake_fd);
	hp_segment_close(&g->seg);
	close(g->doorbell);
	hp_fds_close(g->bells, 2);
	for (uint32_t i = 0; i < g->nmethods; i++)
		free(g->methods[i].name);
	free(g->methods);
	for (uint32_t i = 0; i < g->nretired; i++)
		free(g->retired[i]);
	free(g->retired);
	hp_idtab_free(&g->out);
	lg_chans_free(&g->chans);
}

/* The detached guests, kept (a few KB each, for the process's life) so
 * that a handle used after guest_detach, or detached twice, finds a guest
 * that refuses, not memory malloc gave to something else. */
static struct guest *_Atomic detached;

void
guest_detach(struct guest *g)
{
	struct guest *head;

	if (g == NULL || g->detached)
		return;
	release(g);
	g->detached = 1;
	head = atomic_load(&detached);
	do
		g->next_detached = head;
	while (!atomic_compare_exchange_weak(&detached, &head, g));
}
