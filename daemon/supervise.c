/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The guest supervisor: carries out what lifecycle.h decides, one event at
 * a time through step(): starting (spawn.c), watching, signals, timers,
 * the faults the data path reports, recovery.
 *
 * Death is seen at once by pidfd (r[shm.death.process-handle]) and by
 * doorbell hang-up (r[shm.doorbell.death]), whichever comes first; a hang
 * by the heartbeat check in host.c, reported to supervise_faults
 * (r[shm.crash.host-owned],
 * r[shm.death.detection-methods]: all three, the doorbell doubling as the
 * wake-up channel, r[shm.doorbell.purpose], r[shm.doorbell.optional]).
 * The death callback runs on the loop and schedules everything it starts
 * (r[shm.death.callback-context]). Children are reaped only here, with
 * waitid(P_PIDFD) on the pidfd that said the child exited (and by
 * spawn.c, a child whose exec failed): hubd runs a
 * non-default libev loop precisely so that libev installs no SIGCHLD
 * handler of its own, whose waitpid(-1) would steal the exit statuses.
 *
 * Each guest leads its own session and process group (setsid in spawn.c's
 * child, before exec): whatever it forks is killed with it, when it dies or is killed,
 * and when hubd exits. Everything after start-up is recoverable: a spawn
 * that fails (no fds, no memory, exec failed) is a death like any other.
 * Each death goes into its tally (tally.c) before recovery.
 *
 * Over 600 lines, one job: the executor of one state machine. Every event
 * comes in through step() and many of its actions end in step() again (an
 * attach that fails is a violation, a death may start the guest anew, a
 * stack taken fires the timer), so the event sources, the actions and
 * step() stay together; split, each part would call the other. */
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/dispatch.h"
#include "daemon/host.h"
#include "daemon/log.h"
#include "daemon/manual.h"
#include "daemon/methods.h"
#include "daemon/pool.h"
#include "daemon/spawn.h"
#include "daemon/supervise.h"
#include "daemon/tally.h"
#include "daemon/topics.h"
#include "daemon/users.h"
#include "proto/doorbell.h"
#include "proto/msg.h"
#include "proto/peer.h"

static void	started_by_hand(struct hub *h, struct peer *p);
static void	stack_taken(struct hub *h, struct peer *p);

#define BELL_GRACE_S		1.0	/* doorbell closed: time to exit by itself */

/* An event's particulars: why (DIED: how it ended, VIOLATION: the rule). */
struct why {
	int		reason;		/* DEATH_*, or -1 */
	int		status;
	const char	*detail;
	int		sig;		/* DIED: the signal that ended it, 0: exited */
};

static void step(struct hub *h, struct peer *p, enum peer_event e, const struct why *w);

static double
seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* SIGKILL (or sig) to the guest and everything in its process group
 * (started by hand: to it alone, its group is not ours). */
static void
kill_group(struct peer *p, int sig)
{
	if (p->pid <= 0)
		return;
	/* the leader by its pidfd, even if it left its group */
	if (p->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
	if (p->conf->start_manual)
		return;
	if (kill(-p->pid, sig) != 0 && errno != ESRCH)
		log_warn("guest %s: kill process group %d", p->conf->name, (int)p->pid);
}

static void
pid_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct why why = { -1, 0, NULL, 0 };
	siginfo_t si;

	(void)loop;
	(void)revents;
	if (p->conf->start_manual) {
		/* not our child: gone, how is its parent's to know */
		why.reason = DEATH_EXITED;
		why.status = -1;
		if (p->kill_detail[0] == '\0')
			snprintf(p->kill_detail, sizeof(p->kill_detail),
				 "started by hand: its status is not hubd's to see");
		step(p->hub, p, PE_DIED, &why);
		return;
	}
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
	    si.si_pid == 0)
		return;
	/* Its children go with it. Not reaped yet, its pid (the group's id)
	 * cannot have been given to anyone else. */
	kill_group(p, SIGKILL);
	waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG);
	why.reason = si.si_code == CLD_EXITED ? DEATH_EXITED : DEATH_CRASHED;
	/* asked to stop, it took the SIGTERM's default action (a guest not
	 * attached yet, one without libguest's handler): no crash */
	if (why.reason == DEATH_CRASHED && si.si_status == SIGTERM && p->state == PEER_STOPPING)
		why.reason = DEATH_STOPPED;
	why.status = si.si_status;
	why.sig = si.si_code == CLD_EXITED ? 0 : si.si_status;
	step(p->hub, p, PE_DIED, &why);
}

/* Whether p was spawned and has not attached yet: starting, or stopped
 * while it started (it may attach all the same). */
static int
attaching(const struct peer *p)
{
	return p->state == PEER_STARTING || (p->state == PEER_STOPPING && p->up_ns == 0);
}

/* A starting guest's entry: Attached (it is up), Reserved (not yet), or
 * anything else (it wrote nonsense into the state word). */
static void
check_attach(struct hub *h, struct peer *p)
{
	/* acquire: pairs with the guest's CAS Reserved -> Attached */
	uint32_t state = hp_peer_state(p->view.entry);
	struct why why = { DEATH_VIOLATION, 0, "shm.spawn.reserved-state", 0 };

	/* r[shm.guest.attach] 4-5: the guest increments its epoch after the
	 * CAS; it is attached once both are done (it rings the doorbell
	 * next, and a tick looks again), never with the epoch of before */
	if (state == HP_PEER_ATTACHED) {
		if (hp_peer_epoch(p->view.entry) != p->epoch)
			step(h, p, PE_ATTACHED, NULL);
		return;
	}
	if (state != HP_PEER_RESERVED)
		step(h, p, PE_VIOLATION, &why);
}

/* A guest rang: the data path looks, awake from now on (the loop's check
 * callback took back the sleep it announced). */
static void
look(struct hub *h)
{
	if (!ev_is_active(&h->idle_w))
		ev_idle_start(h->loop, &h->idle_w);
}

static void
bell_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct hub *h = p->hub;

	(void)loop;
	(void)revents;
	if (hp_doorbell_drain(p->bell) == -EPIPE) {
		/* r[shm.doorbell.death]: its end closed: it is dying or has
		 * died, and the pidfd reports how; or it lives on and cannot
		 * be woken any more */
		step(h, p, PE_DOORBELL_GONE, NULL);
		return;
	}
	/* r[shm.spawn.guest-init]: it rings once attached */
	if (attaching(p))
		check_attach(h, p);
	look(h);
}

/* Its bell rang (HP_FEAT_BELLS): the data path looks. Death and attach
 * are the doorbell's to tell. */
static void
bells_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct hub *h = p->hub;

	(void)loop;
	(void)revents;
	look(h);
	/* it woke us: the loop's check callback, which runs after this one
	 * (a bell's priority is higher), serves it before the others; its
	 * bell, still readable, is drained here on the loop's next turn (the
	 * polling this starts makes it one that does not block) */
	if (h->announced && h->rang == NULL) {
		h->rang = p;
		return;
	}
	hp_bell_drain(p->bells[0]);
}

static void
timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer *p = w->data;

	(void)loop;
	(void)revents;
	step(p->hub, p, PE_TIMER, NULL);
}

/* Arms the peer's one timer; reason and detail say what its SIGKILL (if it
 * kills) will mean. */
static void
arm(struct hub *h, struct peer *p, uint64_t ns, int reason, const char *detail)
{
	ev_timer_stop(h->loop, &p->timer);
	ev_timer_set(&p->timer, seconds(ns), 0);
	ev_timer_start(h->loop, &p->timer);
	p->timer_reason = reason;
	p->timer_detail = detail;
}

static void
disarm(struct hub *h, struct peer *p)
{
	ev_timer_stop(h->loop, &p->timer);
	p->timer_reason = -1;
	p->timer_detail = NULL;
}

/* Recovers what p held and closes its handles (r[shm.crash.recovery],
 * r[shm.death.recovery]). Its domain goes with it: rings, slots, channels
 * and whatever it wrote there; the next instance gets a fresh one. */
static void
recover(struct hub *h, struct peer *p)
{
	/* 1: Goodbye while we clean up */
	if (p->dom.base != NULL)
		hp_peer_goodbye(p->view.entry);
	/* 2: every call in flight to or from it fails */
	host_detach(h, p);
	/* 4: every slot of the shared pool it held, its rings' included */
	pool_reclaim(p);
	ev_io_stop(h->loop, &p->pid_w);
	ev_io_stop(h->loop, &p->bell_w);
	ev_io_stop(h->loop, &p->bells_w);
	manual_end(h, p);	/* a ticket nobody took */
	guestlog_end(h, p);	/* its last words; its lines stay */
	disarm(h, p);
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->bell >= 0)
		close(p->bell);
	p->pidfd = p->bell = -1;
	hp_fds_close(p->bells, 2);
	p->pid = 0;
	/* 3-6: nothing of it is reused: its memory goes (a flag it left
	 * up in its header counts no more) */
	hp_segment_close(&p->dom);
	memset(&p->view, 0, sizeof(p->view));
}

/* Spawns, then tells the lifecycle how it went. */
static void
start(struct hub *h, struct peer *p)
{
	struct why why = { DEATH_SPAWN, 0, NULL, 0 };
	int rc;

	p->state = PEER_STARTING;
	if ((rc = spawn_guest(h, p, started_by_hand)) == 0 && p->pid == 0) {
		/* start = manual: nothing runs yet (manual.c) */
		p->state = PEER_WAITING;
		return;
	}
	if (rc == 0) {
		step(h, p, PE_SPAWN_OK, NULL);
		return;
	}
	p->kill_reason = DEATH_SPAWN;
	why.status = -rc;
	step(h, p, PE_SPAWN_FAILED, &why);
}

/* A death (r[shm.death.callback]): runs on the loop, never blocks; tallies
 * and recovers, then does what the lifecycle decided. */
static void
death(struct hub *h, struct peer *p, enum peer_event e, const struct why *w,
      const struct life_in *in, const struct life_out *out)
{
	const char *name = p->conf->name;

	/* its last words first: its log's lines (they often say why), and
	 * what it sent before it died (an answer: its exit may be seen
	 * before the wake its bell gave has the data path read it), so that
	 * the tally counts only the calls it left unanswered */
	if (e == PE_DIED) {
		guestlog_end(h, p);
		dispatch_last_words(h, p);
	}
	tally_log(p, tally_record(h, p, in->reason, in->status, w != NULL ? w->sig : 0));
	if (e == PE_DIED)
		recover(h, p);
	p->kill_reason = -1;
	p->kill_detail[0] = '\0';
	disarm(h, p);
	p->state = out->next;
	switch (out->next) {
	case PEER_STARTING:		/* restarted by hand or by a reload */
		start(h, p);
		break;
	case PEER_BACKOFF:
		log_info("guest %s: restarting in %.3f s", name, seconds(out->delay_ns));
		arm(h, p, out->delay_ns, -1, NULL);
		break;
	case PEER_FAILED:
		log_warnx("guest %s: FAILED: died %u times within %.0f s; left down "
			  "until 'hubctl restart %s'", name, out->recent,
			  seconds(p->conf->death_window_ns), name);
		break;
	case PEER_DOWN:
		if (!p->removed)
			break;
		/* dropped by a reload: the entry is free */
		log_info("guest %s: removed", name);
		if (h->hooks.state_changed != NULL)
			h->hooks.state_changed(h, p);	/* down, while it has a name */
		supervise_forget(h, p);
		users_release(h);	/* its uid, for any hub to take */
		if (h->hooks.entry_freed != NULL)
			h->hooks.entry_freed(h);	/* a guest waiting for one (reload.c) */
		break;
	case PEER_UP:
	case PEER_STOPPING:
	case PEER_ENDING:
	case PEER_WAITING:
	case PEER_NSTATES:
		log_warnx("guest %s: no state after its death, left down", name);
		p->state = PEER_DOWN;
		break;
	}
	if (h->stopping && supervise_all_down(h))
		ev_break(h->loop, EVBREAK_ALL);
}

/* The kill that ends it: the reason set by the event or, when a timer
 * fired, the one the timer was armed with. */
static void
end(struct hub *h, struct peer *p, enum peer_state from, const struct why *w)
{
	if (p->kill_reason < 0 && w != NULL && w->reason >= 0) {
		p->kill_reason = w->reason;
		snprintf(p->kill_detail, sizeof(p->kill_detail), "%s", w->detail);
	}
	if (w == NULL && p->timer_detail != NULL) {	/* its timer ran out */
		log_warnx("guest %s: %s, killing it", p->conf->name, p->timer_detail);
		if (p->kill_reason < 0) {
			p->kill_reason = p->timer_reason;
			snprintf(p->kill_detail, sizeof(p->kill_detail), "%s",
				 p->timer_detail);
		}
	}
	/* r[shm.goodbye.payload]: an attached guest learns why, if it can */
	if (from == PEER_UP)
		host_goodbye(h, p, p->kill_detail);
	disarm(h, p);
	kill_group(p, SIGKILL);
}

/* A guest hung while up: its stack taken (a tool, until it is done or
 * HANGSTACK_LIMIT_S is over) or SIGABRT (HANGSTACK_ABORT_S to dump),
 * then the timer's SIGKILL. 0: nothing started, kill it now. */
static int
take_stack(struct hub *h, struct peer *p, const struct why *w)
{
	enum hangstack_how how = hangstack_start(h, p, stack_taken);

	if (how == HANGSTACK_NONE)
		return 0;
	p->kill_reason = w->reason;
	snprintf(p->kill_detail, sizeof(p->kill_detail), "%s", w->detail);
	host_goodbye(h, p, p->kill_detail);
	if (how == HANGSTACK_TOOL)
		arm(h, p, (uint64_t)(HANGSTACK_LIMIT_S * 1e9), DEATH_HUNG, "stack taken");
	else
		arm(h, p, (uint64_t)(HANGSTACK_ABORT_S * 1e9), DEATH_HUNG,
		    "SIGABRT sent, not dead yet");
	return 1;
}

/* What the lifecycle decides by: the time, the settings and, for an
 * end, its reason and status. */
static void
life_input(struct hub *h, struct peer *p, enum peer_event e, const struct why *w,
	   struct life_in *in)
{
	memset(in, 0, sizeof(*in));
	in->now_ns = hp_now_ns();
	in->conf = p->conf;
	in->hub_stopping = h->stopping;
	if (e == PE_DIED || e == PE_SPAWN_FAILED) {
		/* ended by us: our reason, its status */
		in->reason = p->kill_reason >= 0 ? p->kill_reason : w->reason;
		in->status = w->status;
		in->ran_ns = p->up_ns != 0 ? in->now_ns - p->up_ns : 0;
	}
}

/* Spawned: its exit and its doorbell watched, and its time to attach. */
static void
watch(struct hub *h, struct peer *p)
{
	ev_io_set(&p->pid_w, p->pidfd, EV_READ);
	ev_io_start(h->loop, &p->pid_w);
	ev_io_set(&p->bell_w, p->bell, EV_READ);
	ev_io_start(h->loop, &p->bell_w);
	if (p->bells[0] >= 0) {
		ev_io_set(&p->bells_w, p->bells[0], EV_READ);
		ev_io_start(h->loop, &p->bells_w);
	}
	/* one started by hand may stop in a debugger before attaching */
	if (!p->conf->start_manual)
		arm(h, p, h->conf.attach_timeout_ns, DEATH_HUNG,
		    "did not attach in time");
}

/* Attached: the data path serves it (host_attach), and it is up in state
 * next; or its rings break a rule, a violation. */
static void
attach(struct hub *h, struct peer *p, enum peer_state next)
{
	/* acquire: pairs with the guest's epoch increment (release) */
	p->epoch = hp_peer_epoch(p->view.entry);
	if (host_attach(h, p) != 0) {
		struct why why = { DEATH_VIOLATION, 0, "shm.ring.capacity", 0 };

		step(h, p, PE_VIOLATION, &why);
		return;
	}
	if (next != PEER_STOPPING)	/* stopping: stop_grace runs on */
		disarm(h, p);
	p->state = next;
	p->up_ns = hp_now_ns();
	log_info("guest %s: attached as peer %u (pid %d, epoch %u)%s", p->conf->name,
		 p->id, (int)p->pid, p->epoch, next == PEER_STOPPING ? ", stopping" : "");
}

/* SIGTERM, and stop_grace to go. */
static void
ask_to_stop(struct hub *h, struct peer *p)
{
	/* hub stopping: the header's Goodbye asks every attached guest at
	 * once; one not attached yet cannot read it */
	if ((!h->stopping || p->state == PEER_STARTING) &&
	    syscall(SYS_pidfd_send_signal, p->pidfd, SIGTERM, NULL, 0) != 0)
		kill(p->pid, SIGTERM);
	arm(h, p, h->conf.stop_grace_ns, -1, "did not stop in time");
}

/* r[shm.goodbye.payload]: the rule it broke; no longer read or written to
 * (not up, state next), it has goodbye_grace to read it and go. */
static void
goodbye(struct hub *h, struct peer *p, enum peer_state next, const struct why *w)
{
	p->kill_reason = w->reason;
	snprintf(p->kill_detail, sizeof(p->kill_detail), "%s", w->detail);
	host_goodbye(h, p, w->detail);
	p->state = next;
	arm(h, p, h->conf.goodbye_grace_ns, -1, "goodbye_grace over");
	log_warnx("guest %s: broke %s: Goodbye sent, SIGKILL in %.3f s unless "
		  "it exits", p->conf->name, w->detail, seconds(h->conf.goodbye_grace_ns));
}

/* One event: the lifecycle decides, this carries it out. */
static void
step(struct hub *h, struct peer *p, enum peer_event e, const struct why *w)
{
	enum peer_state from = p->state;
	struct life_in in;
	struct life_out out;

	life_input(h, p, e, w, &in);
	lifecycle_step(&p->life, from, e, &in, &out);
	log_debug("guest %s: %s: %s -> %s, %s", p->conf->name, lifecycle_event_name(e),
		  lifecycle_state_name(from), lifecycle_state_name(out.next),
		  lifecycle_action_name(out.action));
	switch (out.action) {
	case LA_NONE:
		p->state = out.next;
		break;
	case LA_IGNORE:
		log_warnx("guest %s: %s while %s: ignored", p->conf->name,
			  lifecycle_event_name(e), lifecycle_state_name(from));
		break;
	case LA_SPAWN:
		disarm(h, p);
		start(h, p);
		break;
	case LA_WATCH:
		watch(h, p);
		p->state = out.next;
		break;
	case LA_ATTACH:
		attach(h, p, out.next);
		break;
	case LA_TERM:
		ask_to_stop(h, p);
		p->state = out.next;
		break;
	case LA_GOODBYE:
		goodbye(h, p, out.next, w);
		break;
	case LA_KILL:
		/* hung while up: its stack first, if we can (hangstack.c) */
		if (e != PE_HUNG || from != PEER_UP || !take_stack(h, p, w))
			end(h, p, from, w);
		p->state = out.next;
		break;
	case LA_BELL_GRACE:
		ev_io_stop(h->loop, &p->bell_w);
		ev_io_stop(h->loop, &p->bells_w);
		arm(h, p, (uint64_t)(BELL_GRACE_S * 1e9), DEATH_HUNG,
		    "closed its doorbell but did not exit");
		p->state = out.next;
		break;
	case LA_UNWATCH_BELL:
		ev_io_stop(h->loop, &p->bell_w);
		ev_io_stop(h->loop, &p->bells_w);
		p->state = out.next;
		break;
	case LA_CANCEL:
		disarm(h, p);
		p->state = out.next;
		break;
	case LA_DEATH:
		death(h, p, e, w, &in, &out);
		break;
	case LA_PEND:
		/* death() starts it: the lifecycle said so (want_restart) */
		log_info("guest %s: %s asked while %s: it starts once stopped",
			 p->conf->name, lifecycle_event_name(e), lifecycle_state_name(from));
		p->state = out.next;
		break;
	case LA_WITHDRAW:
		/* start = manual, waiting: its ticket and domain go */
		recover(h, p);
		p->state = out.next;
		if (out.next == PEER_STARTING)
			start(h, p);	/* a new ticket */
		break;
	case LA_NACTIONS:
		break;
	}
	/* discovery (topics.c) hears every state it ends in; a removed
	 * guest's entry has no config left to tell of */
	if (p->state != from && p->conf != NULL && h->hooks.state_changed != NULL)
		h->hooks.state_changed(h, p);
}

/* Once per entry, at start-up. */
void
supervise_init(struct hub *h, struct peer *p)
{
	p->hub = h;
	p->pidfd = p->bell = -1;
	p->bells[0] = p->bells[1] = -1;
	p->kill_reason = p->timer_reason = -1;
	ev_io_init(&p->pid_w, pid_cb, -1, EV_READ);
	ev_io_init(&p->bell_w, bell_cb, -1, EV_READ);
	ev_io_init(&p->bells_w, bells_cb, -1, EV_READ);
	ev_set_priority(&p->bells_w, 1);	/* before check_cb (hubd.c) */
	ev_timer_init(&p->timer, timer_cb, 0, 0);
	guestlog_init(p);
	hangstack_init(p);
	p->pid_w.data = p->bell_w.data = p->bells_w.data = p->timer.data = p;
}

/* fn runs whenever a reload's removal frees a peer entry. */
void
supervise_on_free(struct hub *h, void (*fn)(struct hub *h))
{
	h->hooks.entry_freed = fn;
}

/* Wanted up (hubd starting, a reload added it, hubctl start): now if it
 * is down, once it is down if it is stopping. */
void
supervise_start(struct hub *h, struct peer *p)
{
	if (p->id > h->peers_end)
		h->peers_end = p->id;	/* the data path's loops reach it now */
	step(h, p, PE_START, NULL);
}

/* The guests the data path found at fault (host_fault): a violation ends
 * one after a Goodbye and its grace, a hang at once; recovery follows when
 * its pidfd reports the exit. */
void
supervise_faults(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests && h->faults > 0; i++) {
		struct peer *p = &h->peers[i];
		struct why why = { p->fault_reason, 0, p->fault, 0 };

		if (p->fault == NULL)
			continue;
		p->fault = NULL;
		h->faults--;
		if (p->state != PEER_UP && p->state != PEER_STOPPING)
			continue;	/* ended meanwhile (a timer) */
		step(h, p, why.reason == DEATH_VIOLATION ? PE_VIOLATION : PE_HUNG, &why);
	}
}

/* Periodic: a starting guest that attached without ringing its doorbell
 * is up all the same. */
void
supervise_tick(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (attaching(&h->peers[i]))
			check_attach(h, &h->peers[i]);
}

/* Asks a guest to leave: SIGTERM, then SIGKILL after stop_grace. */
void
supervise_stop(struct hub *h, struct peer *p)
{
	step(h, p, PE_STOP, NULL);
}

void
supervise_forget(struct hub *h, struct peer *p)
{
	methods_forget(h, p);
	topics_forget(h, p->conf->name);
	pool_leave(h, p);	/* its zone's pool goes with its last member */
	host_retire(h, p);	/* its counters stay in the hub's */
	config_guest_free(p->conf);
	config_guest_free(p->next_conf);
	p->conf = p->next_conf = NULL;
	p->removed = 0;
	guestlog_free(p);
	lifecycle_reset(&p->life);
}

/* manual.c: a process started by hand took p's ticket (p->pid, p->pidfd). */
static void
started_by_hand(struct hub *h, struct peer *p)
{
	step(h, p, PE_SPAWN_OK, NULL);
}

/* hubctl restart, a changed config: now if it is down (failed included:
 * its tally is cleared), else once it is down. */
void
supervise_restart(struct hub *h, struct peer *p)
{
	step(h, p, PE_RESTART, NULL);
}

int
supervise_all_down(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		enum peer_state s = h->peers[i].state;

		if (s == PEER_STARTING || s == PEER_UP || s == PEER_STOPPING ||
		    s == PEER_ENDING)
			return 0;
	}
	return 1;
}

uint64_t
supervise_starts_in(struct hub *h, struct peer *p)
{
	double left;

	if (p->state != PEER_BACKOFF || !ev_is_active(&p->timer))
		return 0;
	left = ev_timer_remaining(h->loop, &p->timer);
	return left > 1e-9 ? (uint64_t)(left * 1e9) : 1;
}

/* Graceful stop (r[shm.goodbye.host]): say goodbye in the header, ring
 * every doorbell, give guests stop_grace to detach, then SIGKILL. */
void
supervise_stop_all(struct hub *h)
{
	h->stopping = 1;
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];

		if (p->conf == NULL)
			continue;
		/* in each guest's own header: one a guest sets in its own
		 * stops nobody else */
		if (p->dom.base != NULL) {
			hp_host_goodbye_say(&p->dom);
			/* a spec-only guest sleeps on its ring head */
			hp_peer_wake(p->view.entry);
		}
		if (p->bell >= 0)
			hp_doorbell_signal(p->bell);
		step(h, p, PE_STOP, NULL);
	}
	if (supervise_all_down(h))
		ev_break(h->loop, EVBREAK_ALL);
}

void
supervise_kill_groups(struct hub *h)
{
	for (uint32_t i = 0; h->peers != NULL && i < h->conf.params.max_guests; i++) {
		if (h->peers[i].pid > 0)
			kill_group(&h->peers[i], SIGKILL);
		hangstack_kill(&h->peers[i]);
	}
}

/* Its stack is in the log: the timer's SIGKILL now, if it waits still. */
static void
stack_taken(struct hub *h, struct peer *p)
{
	if (p->state == PEER_ENDING && ev_is_active(&p->timer))
		step(h, p, PE_TIMER, NULL);
}
