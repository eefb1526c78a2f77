/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's direct lanes to other guests (proto/lane.h): what the hub
 * says of them (HP_MSG_LANE: a lane, a method to call over it or no
 * longer, its end; the methods' table is routes.c's), and closing a
 * lane: at once
 * when its peer hangs up or breaks a rule, the calls in flight over it
 * failing as they would through the hub when the callee goes, and the
 * hub told why. Serving a lane is serve.c's, as for the hub's ring. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/channel.h"

static struct lg_lane *
lane_by_id(struct guest *g, uint32_t id)
{
	for (uint32_t i = 0; i < g->nlanes; i++)
		if (g->lanes[i]->id == id)
			return g->lanes[i];
	return NULL;
}

/* Tells the hub (HP_MSG_LANE CLOSED); a hub that cannot take it now
 * learns of it from the other side, or when ours ends. */
static void
report(struct guest *g, struct lg_lane *ln)
{
	struct hp_lane_msg r = { .op = HP_LANE_CLOSED, .lane = ln->id,
				 .violation = (uint32_t)ln->violation };
	struct timeout t = { 100, 0 };
	uint8_t buf[256];
	int64_t n;

	snprintf(r.reason, sizeof(r.reason), "%s", ln->why);
	if ((n = hp_lane_msg_encode(buf, sizeof(buf), &r)) > 0)
		lg_send_msg(g, HP_MSG_LANE, 0, 0, buf, (size_t)n, NULL, 0, 0, &t);
}

static void
publish(struct lg_lane *ln)
{
	struct hp_lane_tally t = {
		.calls_out = ln->n_out, .calls_in = ln->n_in,
		.bytes_out = ln->ep.stats.bytes_sent,
		.bytes_in = ln->ep.stats.bytes_received,
		.wakes = ln->ep.stats.wakes, .sleeps = ln->ep.stats.sleeps,
	};

	hp_lane_figures_write(&ln->map, &t);
}

void
lg_lanes_publish(struct guest *g)
{
	for (uint32_t i = 0; i < g->nlanes; i++)
		publish(g->lanes[i]);
}

/* The group's on_sleep: a sleep costs far more than these stores; and
 * the topics' announcement (topics.c), which may find it should not
 * sleep. */
static int
before_sleep(void *arg)
{
	struct guest *g = arg;

	lg_lanes_publish(g);
	return g->topics_sleep != NULL ? g->topics_sleep(g) : 0;
}

/* Its end: out of the table and the group, every call over it failed
 * (r[shm.crash.*] as through the hub: the callee is gone for us), its
 * doorbell closed (the peer sees the hang-up), its memory unmapped. */
static void
lane_close(struct guest *g, struct lg_lane *ln)
{
	uint32_t i;

	for (i = 0; i < g->nlanes && g->lanes[i] != ln; i++)
		;
	if (i == g->nlanes)
		return;
	g->lanes[i] = g->lanes[--g->nlanes];
	hp_group_remove(&g->group, &ln->ep);
	if (g->epfd >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, ln->bell, NULL);
	if (g->epfd >= 0 && ln->bells[0] >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, ln->bells[0], NULL);
	publish(ln);
	if (!ln->told)
		report(g, ln);
	/* its calls fail naming their methods, which its routes keep;
	 * closing, it is no call's route meanwhile (lg_lane_route) */
	g->lane_gone(g, ln);
	lg_routes_drop_lane(g, ln);
	/* nothing signals it from now on: the number may be reused */
	close(ln->bell);
	hp_fds_close(ln->bells, 3);
	ln->bell = ln->ep.doorbell = ln->ep.bell_in = ln->ep.bell_out = -1;
	ln->closed = 1;
	lg_lane_hold(ln);
	lg_lane_put(ln);	/* freed now, or by the last holder */
}

/* The peer closed the pipe it rings us on (a sleep found it hung up and
 * polls it no more): out of guest_fd's epoll too, where its hang-up
 * would make the plugin's loop spin; the lane goes on, woken by its
 * doorbell. */
static void
drop_hung_bell(struct guest *g, struct lg_lane *ln)
{
	if (ln->bells[0] < 0 || ln->ep.bell_in >= 0)
		return;
	if (g->epfd >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, ln->bells[0], NULL);
	close(ln->bells[0]);
	ln->bells[0] = -1;
}

/* A peer that dies hangs up its lanes before hubd has seen the death;
 * hubd then closes them with how it went ("guest B died: killed by
 * signal 11"), which the calls over it fail with rather than "it hung
 * up". That word is awaited this long: a peer alive that only closed
 * its end gets none. The wait ends at a heartbeat's wake at the latest
 * (no heartbeat: no wait). */
#define HUBD_WORD_NS	(2 * HP_NS_PER_S)

static int
awaits_word(const struct guest *g, const struct lg_lane *ln)
{
	return ln->hung_ns != 0 && g->hb_interval != 0 && !hp_host_goodbye_said(&g->seg) &&
	    hp_now_ns() - ln->hung_ns < HUBD_WORD_NS;
}

void
lg_lanes_reap(struct guest *g)
{
	for (uint32_t i = 0; i < g->nlanes;) {
		struct lg_lane *ln = g->lanes[i];

		drop_hung_bell(g, ln);
		/* a peer gone: what it sent before is served first */
		if (!ln->closing && hp_group_hung(&ln->ep) &&
		    hp_endpoint_rx_ready(&ln->ep) == 0) {
			if (ln->hung_ns == 0)
				ln->hung_ns = hp_now_ns();
			if (!awaits_word(g, ln)) {
				ln->closing = 1;
				snprintf(ln->why, sizeof(ln->why), "guest %s is gone: it hung "
					 "up the lane", ln->peer);
			}
		}
		if (ln->closing)
			lane_close(g, ln);	/* g->lanes[i] is another now */
		else
			i++;
	}
}

int
lg_lanes_ready(struct guest *g)
{
	for (uint32_t i = 0; i < g->nlanes; i++) {
		struct lg_lane *ln = g->lanes[i];

		/* one to reap is work, unless a send waiting for room holds
		 * reaping off (reap_held): then only what a serve takes */
		if ((g->reap_held == 0 && (ln->closing || (hp_group_hung(&ln->ep) &&
							   !awaits_word(g, ln)))) ||
		    (!ln->closing && hp_endpoint_rx_ready(&ln->ep) != 0))
			return 1;
	}
	return 0;
}

/* OPEN: its memfd and doorbell came with a doorbell byte before. 0, or
 * -errno with what went wrong in gone->why: -EBADMSG (gone->violation)
 * when the lane broke the rules before we took it (the peer may write it
 * first), else we could not take it. */
static int
lane_open(struct guest *g, const struct hp_lane_msg *lm, struct lg_lane *gone)
{
	struct lg_lane *ln;
	struct epoll_event ev = { .events = EPOLLIN };
	const char *why = "";
	int memfd, bell, bells[3] = { -1, -1, -1 }, rc;

	hp_endpoint_drain(&g->ep);
	memfd = hp_fdq_take(&g->group.fdq);
	bell = hp_fdq_take(&g->group.fdq);
	/* with bells: the one to sleep on, the one to ring, and the read
	 * end of the latter, kept (proto/lane.h) */
	for (int i = 0; lm->bells && i < 3; i++)
		bells[i] = hp_fdq_take(&g->group.fdq);
	if (memfd >= 0 && !hp_lane_fd_is(memfd, lm->lane)) {
		/* out of step with the hub (an OPEN it could not send): none
		 * of what waits is ours, and the next OPEN's come anew */
		hp_fdq_clear(&g->group.fdq);
		close(memfd);
		memfd = -1;
	}
	if (memfd < 0 || bell < 0 || (lm->bells && (bells[0] < 0 || bells[1] < 0 || bells[2] < 0)) ||
	    g->nlanes >= LG_LANES_MAX ||
	    lane_by_id(g, lm->lane) != NULL || (ln = calloc(1, sizeof(*ln))) == NULL) {
		if (memfd >= 0)
			close(memfd);
		if (bell >= 0)
			close(bell);
		hp_fds_close(bells, 3);
		snprintf(gone->why, sizeof(gone->why), "the lane could not be set up");
		return -ENOMEM;
	}
	ln->id = lm->lane;
	ln->side = lm->side;
	ln->calls_max = lm->calls_max;
	ln->bell = bell;
	memcpy(ln->bells, bells, sizeof(ln->bells));
	snprintf(ln->peer, sizeof(ln->peer), "%s", lm->peer);
	rc = hp_lane_attach(&ln->map, memfd, lm->side, bell, &ln->ep, &why);
	if (rc == 0 && lm->bells) {	/* before a sleep of the group polls it */
		ln->ep.bell_in = bells[0];
		ln->ep.bell_out = bells[1];
	}
	if (rc == 0 &&
	    ((rc = lg_chans_alloc(&ln->chans, ln->map.view.chans, ln->map.seg.params.max_channels,
				  ln->map.seg.params.initial_credit,
				  lm->side == HP_LANE_SIDE_A ? HP_SIDE_HOST : HP_SIDE_GUEST,
				  &ln->ep, ln)) != 0 ||
	     (rc = hp_group_add(&g->group, &ln->ep)) != 0)) {
		hp_segment_close(&ln->map.seg);	/* attach closes its own */
		lg_chans_free(&ln->chans);
	}
	if (rc != 0) {
		close(bell);
		hp_fds_close(bells, 3);
		free(ln);
		/* a lane the spec's checks refuse was written by the peer
		 * (it may take it first); running out of something is ours */
		gone->violation = rc != -ENOMEM && rc != -EMFILE && rc != -ENFILE &&
		    rc != -ENOSPC;
		if (gone->violation)
			snprintf(gone->why, sizeof(gone->why), "guest %s broke %s on the lane "
				 "before it was taken (%s)", lm->peer, rc == -EPROTO ?
				 "shm.ring.capacity" : "shm.file.attach", why);
		else
			snprintf(gone->why, sizeof(gone->why), "the lane could not be set up: %s",
				 why);
		return rc;
	}
	ln->ep.awake = g->ep.awake;
	ln->ep.awake_flag = g->ep.awake_flag;
	ln->ep.ncpus = g->ep.ncpus;
	ev.data.fd = bell;
	if (g->epfd >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_ADD, bell, &ev);
	ev.data.fd = bells[0];
	if (g->epfd >= 0 && bells[0] >= 0)
		epoll_ctl(g->epfd, EPOLL_CTL_ADD, bells[0], &ev);
	g->lanes[g->nlanes++] = ln;
	return 0;
}

static void
lane_route(struct guest *g, const struct hp_lane_msg *lm)
{
	struct lg_lane *ln = lane_by_id(g, lm->lane);
	struct lg_route r = { .method = lm->method, .lane = ln };

	/* the signature says which arguments are channels, to move to the
	 * lane with the call; one we cannot read keeps the method on the
	 * hub */
	if (ln == NULL || ln->closing || hp_sig_parse(lm->sig, &r.sig, NULL) != 0)
		return;
	r.chans = hp_sig_takes_chan(&r.sig);
	lg_route_set(g, &r);	/* a table full keeps the method on the hub */
}

/* UNROUTE: the method's calls go through the hub from now on (a monitor
 * watches it there). Calls already sent over the lane end there; one
 * whose route was looked up before (a send waiting for room) keeps its
 * copy (call_out.c) and goes over the lane: the last to. The hub routes
 * the method again on its next call through it. */
static void
lane_unroute(struct guest *g, const struct hp_lane_msg *lm)
{
	lg_route_unset(g, lm->method, lm->lane);
}

/* The hub's word on a lane (from the hub's ring only: a lane's
 * endpoint refuses the type). One the guest cannot act on is left:
 * the call that brought it went through the hub all the same. */
static int
on_lane(struct guest *g, struct hp_msg_in *m)
{
	struct hp_lane_msg lm;
	struct lg_lane *ln, gone = { .id = 0 };

	if (hp_lane_msg_decode(m->payload, m->len, &lm) != 0)
		return 0;
	gone.id = lm.lane;
	switch (lm.op) {
	case HP_LANE_OPEN:
		if (lane_open(g, &lm, &gone) != 0)
			report(g, &gone);	/* or the hub counts it open */
		break;
	case HP_LANE_ROUTE:
		lane_route(g, &lm);
		break;
	case HP_LANE_UNROUTE:
		lane_unroute(g, &lm);
		break;
	case HP_LANE_CLOSE:
		if ((ln = lane_by_id(g, lm.lane)) != NULL && !ln->closing) {
			ln->closing = 1;
			ln->told = 1;
			snprintf(ln->why, sizeof(ln->why), "%s", lm.reason);
		}
		break;
	}
	return 0;
}

int
lg_lanes_init(struct guest *g)
{
	g->on_msg[HP_MSG_LANE] = on_lane;
	if (hp_group_add(&g->group, &g->ep) != 0)
		return -ENOSPC;
	g->group.on_sleep = before_sleep;
	g->group.on_sleep_arg = g;
	if (!g->ep.lim.lane_msgs)
		return 0;
	return lg_routes_init(g);
}

void
lg_lanes_free(struct guest *g)
{
	while (g->nlanes > 0) {
		g->lanes[0]->told = 1;	/* the hub sees us go */
		g->lanes[0]->closing = 1;
		lane_close(g, g->lanes[0]);
	}
	hp_fdq_clear(&g->group.fdq);
	lg_routes_free(g);
}
