/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The supervisor's decisions (daemon/lifecycle.h) on a fake clock: every
 * (state, event) pair of the table, the restart policy, the backoff, and
 * the count of deaths in the window for any max_deaths. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "daemon/lifecycle.h"

#define MS	1000000ull
#define S	1000000000ull
#define POLICY	PEER_NSTATES

static struct config_guest conf;
static struct life life;

static void
setup(void)
{
	memset(&conf, 0, sizeof(conf));
	snprintf(conf.name, sizeof(conf.name), "g");
	conf.restart = RESTART_ON_FAILURE;
	conf.max_deaths = 5;
	conf.death_window_ns = 60 * S;
	conf.backoff_min_ns = 100 * MS;
	conf.backoff_max_ns = 30 * S;
	memset(&life, 0, sizeof(life));
}

static void
teardown(void)
{
	lifecycle_free(&life);
}

/* One event at now; the outcome. */
static struct life_out
ev(enum peer_state s, enum peer_event e, uint64_t now, int reason, int status,
   uint64_t ran)
{
	struct life_in in = { now, &conf, 0, reason, status, ran };
	struct life_out out;

	lifecycle_step(&life, s, e, &in, &out);
	return out;
}

/* A crash of a guest that was up for ran ns. */
static struct life_out
crash(uint64_t now, uint64_t ran)
{
	return ev(PEER_UP, PE_DIED, now, DEATH_CRASHED, 9, ran);
}

/* What every pair does, written out independently of the table. */
static const struct {
	enum peer_state		next;
	enum life_action	action;
} want[PEER_NSTATES][PE_NEVENTS] = {
	[PEER_DOWN] = {
		{ PEER_STARTING, LA_SPAWN },	/* START */
		{ PEER_DOWN, LA_IGNORE },	/* SPAWN_OK */
		{ PEER_DOWN, LA_IGNORE },	/* SPAWN_FAILED */
		{ PEER_DOWN, LA_IGNORE },	/* ATTACHED */
		{ PEER_DOWN, LA_IGNORE },	/* DIED */
		{ PEER_DOWN, LA_IGNORE },	/* TIMER */
		{ PEER_DOWN, LA_NONE },		/* STOP */
		{ PEER_STARTING, LA_SPAWN },	/* RESTART */
		{ PEER_DOWN, LA_IGNORE },	/* DOORBELL_GONE */
		{ PEER_DOWN, LA_IGNORE },	/* VIOLATION */
		{ PEER_DOWN, LA_IGNORE },	/* HUNG */
	},
	[PEER_STARTING] = {
		{ PEER_STARTING, LA_NONE },
		{ PEER_STARTING, LA_WATCH },
		{ POLICY, LA_DEATH },
		{ PEER_UP, LA_ATTACH },
		{ POLICY, LA_DEATH },
		{ PEER_ENDING, LA_KILL },
		{ PEER_STOPPING, LA_TERM },
		{ PEER_STOPPING, LA_TERM },
		{ PEER_ENDING, LA_BELL_GRACE },
		{ PEER_ENDING, LA_KILL },
		{ PEER_ENDING, LA_KILL },
	},
	[PEER_UP] = {
		{ PEER_UP, LA_NONE },
		{ PEER_UP, LA_IGNORE },
		{ PEER_UP, LA_IGNORE },
		{ PEER_UP, LA_IGNORE },
		{ POLICY, LA_DEATH },
		{ PEER_UP, LA_IGNORE },
		{ PEER_STOPPING, LA_TERM },
		{ PEER_STOPPING, LA_TERM },
		{ PEER_ENDING, LA_BELL_GRACE },
		{ PEER_ENDING, LA_GOODBYE },
		{ PEER_ENDING, LA_KILL },
	},
	[PEER_STOPPING] = {
		{ PEER_STOPPING, LA_PEND },
		{ PEER_STOPPING, LA_IGNORE },
		{ PEER_STOPPING, LA_IGNORE },
		{ PEER_STOPPING, LA_ATTACH },	/* stopped as it started */
		{ POLICY, LA_DEATH },
		{ PEER_STOPPING, LA_KILL },
		{ PEER_STOPPING, LA_NONE },
		{ PEER_STOPPING, LA_PEND },
		{ PEER_STOPPING, LA_UNWATCH_BELL },
		{ PEER_ENDING, LA_KILL },
		{ PEER_ENDING, LA_NONE },
	},
	[PEER_ENDING] = {
		{ PEER_ENDING, LA_PEND },
		{ PEER_ENDING, LA_IGNORE },
		{ PEER_ENDING, LA_IGNORE },
		{ PEER_ENDING, LA_IGNORE },
		{ POLICY, LA_DEATH },
		{ PEER_ENDING, LA_KILL },
		{ PEER_ENDING, LA_NONE },
		{ PEER_ENDING, LA_PEND },
		{ PEER_ENDING, LA_UNWATCH_BELL },
		{ PEER_ENDING, LA_NONE },
		{ PEER_ENDING, LA_NONE },
	},
	[PEER_BACKOFF] = {
		{ PEER_BACKOFF, LA_NONE },
		{ PEER_BACKOFF, LA_IGNORE },
		{ PEER_BACKOFF, LA_IGNORE },
		{ PEER_BACKOFF, LA_IGNORE },
		{ PEER_BACKOFF, LA_IGNORE },
		{ PEER_STARTING, LA_SPAWN },
		{ PEER_DOWN, LA_CANCEL },
		{ PEER_STARTING, LA_SPAWN },
		{ PEER_BACKOFF, LA_IGNORE },
		{ PEER_BACKOFF, LA_IGNORE },
		{ PEER_BACKOFF, LA_IGNORE },
	},
	[PEER_FAILED] = {
		{ PEER_STARTING, LA_SPAWN },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_DOWN, LA_NONE },
		{ PEER_STARTING, LA_SPAWN },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_FAILED, LA_IGNORE },
		{ PEER_FAILED, LA_IGNORE },
	},
	[PEER_WAITING] = {
		{ PEER_WAITING, LA_NONE },
		{ PEER_STARTING, LA_WATCH },	/* its process came */
		{ PEER_WAITING, LA_IGNORE },
		{ PEER_WAITING, LA_IGNORE },
		{ PEER_WAITING, LA_IGNORE },
		{ PEER_WAITING, LA_IGNORE },
		{ PEER_DOWN, LA_WITHDRAW },
		{ PEER_STARTING, LA_WITHDRAW },
		{ PEER_WAITING, LA_IGNORE },
		{ PEER_WAITING, LA_IGNORE },
		{ PEER_WAITING, LA_IGNORE },
	},
};

START_TEST(test_every_pair_listed)
{
	for (int s = 0; s < PEER_NSTATES; s++) {
		ck_assert_str_ne(lifecycle_state_name(s), "?");
		for (int e = 0; e < PE_NEVENTS; e++) {
			const struct life_rule *r = lifecycle_rule(s, e);

			ck_assert_msg(r->listed, "%s + %s is not in the table",
				      lifecycle_state_name(s), lifecycle_event_name(e));
			ck_assert_msg(r->next == want[s][e].next &&
				      r->action == want[s][e].action,
				      "%s + %s: got %s, %s; want %s, %s",
				      lifecycle_state_name(s), lifecycle_event_name(e),
				      lifecycle_state_name(r->next),
				      lifecycle_action_name(r->action),
				      lifecycle_state_name(want[s][e].next),
				      lifecycle_action_name(want[s][e].action));
		}
	}
	for (int e = 0; e < PE_NEVENTS; e++)
		ck_assert_str_ne(lifecycle_event_name(e), "?");
	for (int a = 0; a < LA_NACTIONS; a++)
		ck_assert_str_ne(lifecycle_action_name(a), "?");
	for (int d = 0; d < DEATH_NREASONS; d++)
		ck_assert_str_ne(lifecycle_death_name(d), "?");
	/* out of range: ignored, never an index past the table */
	ck_assert_int_eq(lifecycle_rule(PEER_NSTATES, PE_START)->action, LA_IGNORE);
	ck_assert_int_eq(lifecycle_rule(PEER_DOWN, PE_NEVENTS)->action, LA_IGNORE);
}
END_TEST

/* Every pair through lifecycle_step: the table's next state (the policy's
 * for a death), and an ignored pair changes nothing at all. */
START_TEST(test_every_pair_stepped)
{
	for (int s = 0; s < PEER_NSTATES; s++) {
		for (int e = 0; e < PE_NEVENTS; e++) {
			struct life before;
			struct life_out out;

			lifecycle_free(&life);
			life.want_down = e % 2;		/* some of each */
			before = life;
			out = ev(s, e, 5 * S, DEATH_CRASHED, 9, 0);
			ck_assert_int_eq(out.action, want[s][e].action);
			if (out.action == LA_IGNORE) {
				ck_assert_msg(out.next == (enum peer_state)s &&
					      memcmp(&before, &life, sizeof(life)) == 0,
					      "%s + %s is ignored but changed something",
					      lifecycle_state_name(s), lifecycle_event_name(e));
			} else if (out.action == LA_DEATH) {
				ck_assert_msg(out.next == PEER_DOWN || out.next == PEER_BACKOFF,
					      "%s + %s: %s", lifecycle_state_name(s),
					      lifecycle_event_name(e),
					      lifecycle_state_name(out.next));
				ck_assert_uint_eq(out.recent, 1);
			} else {
				ck_assert_int_eq(out.next, want[s][e].next);
			}
		}
	}
}
END_TEST

START_TEST(test_wishes)
{
	struct life_out o;

	/* stopped by hand: down after its death, whatever the policy */
	conf.restart = RESTART_ALWAYS;
	ck_assert_int_eq(ev(PEER_UP, PE_STOP, 0, 0, 0, 0).next, PEER_STOPPING);
	o = ev(PEER_STOPPING, PE_DIED, 1 * S, DEATH_CRASHED, 15, 0);
	ck_assert_int_eq(o.next, PEER_DOWN);
	/* started again: up, and the stop is forgotten */
	ck_assert_int_eq(ev(PEER_DOWN, PE_START, 2 * S, 0, 0, 0).next, PEER_STARTING);
	ck_assert_int_eq(life.want_down, 0);
	/* restarted while up: stop first, start again at once when down */
	ck_assert_int_eq(ev(PEER_UP, PE_RESTART, 3 * S, 0, 0, 0).next, PEER_STOPPING);
	o = ev(PEER_STOPPING, PE_DIED, 4 * S, DEATH_CRASHED, 15, 0);
	ck_assert_int_eq(o.next, PEER_STARTING);
	ck_assert_int_eq(life.want_restart, 0);
	/* stop, then start while still stopping: back up once down */
	ev(PEER_UP, PE_STOP, 5 * S, 0, 0, 0);
	ck_assert_int_eq(ev(PEER_STOPPING, PE_START, 5 * S, 0, 0, 0).next, PEER_STOPPING);
	ck_assert_int_eq(ev(PEER_STOPPING, PE_DIED, 6 * S, DEATH_EXITED, 0, 0).next,
			 PEER_STARTING);
	/* the hub stopping: down, restart wished or not */
	ev(PEER_UP, PE_RESTART, 7 * S, 0, 0, 0);
	{
		struct life_in in = { 8 * S, &conf, 1, DEATH_EXITED, 0, 0 };

		lifecycle_step(&life, PEER_STOPPING, PE_DIED, &in, &o);
		ck_assert_int_eq(o.next, PEER_DOWN);
	}
}
END_TEST

/* Defect (issue 39): "hubctl stop g; hubctl start g" back to back left g
 * down: the start, arriving while g stopped, was lost. A start or restart
 * while it stops or ends is pending: carried out by its death, whatever
 * the policy and however it died; a stop forgets it; the hub stopping
 * drops it. */
START_TEST(test_start_while_stopping)
{
	static const enum peer_event asks[] = { PE_START, PE_RESTART };
	static const enum peer_state going[] = { PEER_STOPPING, PEER_ENDING };
	struct life_out o;
	uint64_t t = 1 * S;

	conf.restart = RESTART_NEVER;	/* the policy alone would leave it down */
	for (size_t a = 0; a < 2; a++) {
		for (size_t g = 0; g < 2; g++) {
			ck_assert_int_eq(ev(PEER_UP, PE_STOP, t += MS, 0, 0, 0).next,
					 PEER_STOPPING);
			ck_assert_int_eq(lifecycle_start_pending(&life, PEER_STOPPING), 0);
			o = ev(going[g], asks[a], t += MS, 0, 0, 0);
			ck_assert_msg(o.action == LA_PEND && o.next == going[g],
				      "%s while %s: %s, %s", lifecycle_event_name(asks[a]),
				      lifecycle_state_name(going[g]),
				      lifecycle_action_name(o.action), lifecycle_state_name(o.next));
			ck_assert_int_eq(lifecycle_start_pending(&life, going[g]), 1);
			ck_assert_int_eq(life.want_down, 0);
			/* asked twice: still one start */
			ck_assert_int_eq(ev(going[g], asks[a], t += MS, 0, 0, 0).action, LA_PEND);
			o = ev(going[g], PE_DIED, t += MS, DEATH_CRASHED, 9, 0);
			ck_assert_msg(o.next == PEER_STARTING, "%s while %s, then died: %s",
				      lifecycle_event_name(asks[a]), lifecycle_state_name(going[g]),
				      lifecycle_state_name(o.next));
			ck_assert_int_eq(lifecycle_start_pending(&life, PEER_STARTING), 0);
			ck_assert_int_eq(ev(PEER_STARTING, PE_SPAWN_OK, t += MS, 0, 0, 0).next,
					 PEER_STARTING);
			ck_assert_int_eq(ev(PEER_STARTING, PE_ATTACHED, t += MS, 0, 0, 0).next,
					 PEER_UP);
		}
	}
	/* stop, start, stop: the last word counts, it stays down */
	ev(PEER_UP, PE_STOP, t += MS, 0, 0, 0);
	ev(PEER_STOPPING, PE_START, t += MS, 0, 0, 0);
	ck_assert_int_eq(ev(PEER_STOPPING, PE_STOP, t += MS, 0, 0, 0).action, LA_NONE);
	ck_assert_int_eq(lifecycle_start_pending(&life, PEER_STOPPING), 0);
	ck_assert_int_eq(ev(PEER_STOPPING, PE_DIED, t += MS, DEATH_EXITED, 0, 0).next,
			 PEER_DOWN);
	/* a start that comes while it is down or up is no pending one */
	ck_assert_int_eq(ev(PEER_DOWN, PE_START, t += MS, 0, 0, 0).next, PEER_STARTING);
	ck_assert_int_eq(lifecycle_start_pending(&life, PEER_STARTING), 0);
	ck_assert_int_eq(ev(PEER_UP, PE_START, t += MS, 0, 0, 0).action, LA_NONE);
	ck_assert_int_eq(lifecycle_start_pending(&life, PEER_UP), 0);
	/* the hub stopping: the pending start is not carried out */
	ev(PEER_UP, PE_STOP, t += MS, 0, 0, 0);
	ev(PEER_STOPPING, PE_START, t += MS, 0, 0, 0);
	{
		struct life_in in = { t += MS, &conf, 1, DEATH_EXITED, 0, 0 };

		lifecycle_step(&life, PEER_STOPPING, PE_DIED, &in, &o);
		ck_assert_int_eq(o.next, PEER_DOWN);
	}
}
END_TEST

START_TEST(test_restart_policy)
{
	static const struct {
		int restart, reason, status;
		enum peer_state next;
	} cases[] = {
		{ RESTART_ON_FAILURE, DEATH_EXITED, 0, PEER_DOWN },
		{ RESTART_ON_FAILURE, DEATH_EXITED, 1, PEER_BACKOFF },
		{ RESTART_ON_FAILURE, DEATH_CRASHED, 9, PEER_BACKOFF },
		{ RESTART_ON_FAILURE, DEATH_HUNG, 9, PEER_BACKOFF },
		{ RESTART_ON_FAILURE, DEATH_VIOLATION, 3, PEER_BACKOFF },
		{ RESTART_ON_FAILURE, DEATH_SPAWN, 24, PEER_BACKOFF },
		{ RESTART_ALWAYS, DEATH_EXITED, 0, PEER_BACKOFF },
		{ RESTART_NEVER, DEATH_EXITED, 1, PEER_DOWN },
		{ RESTART_NEVER, DEATH_CRASHED, 9, PEER_DOWN },
		{ RESTART_NEVER, DEATH_SPAWN, 24, PEER_DOWN },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct life_out o;

		lifecycle_free(&life);
		conf.restart = cases[i].restart;
		o = ev(cases[i].reason == DEATH_SPAWN ? PEER_STARTING : PEER_UP,
		       cases[i].reason == DEATH_SPAWN ? PE_SPAWN_FAILED : PE_DIED,
		       S, cases[i].reason, cases[i].status, 0);
		ck_assert_msg(o.next == cases[i].next, "case %zu: %s, want %s", i,
			      lifecycle_state_name(o.next),
			      lifecycle_state_name(cases[i].next));
	}
}
END_TEST

START_TEST(test_backoff_doubles_and_resets)
{
	static const uint64_t delays[] = { 100, 200, 400, 800, 1000, 1000, 1000 };
	uint64_t t = 0;
	struct life_out o;

	conf.backoff_max_ns = 1 * S;
	conf.max_deaths = 100;
	for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
		o = crash(t += 10 * MS, 5 * MS);
		ck_assert_int_eq(o.next, PEER_BACKOFF);
		ck_assert_msg(o.delay_ns == delays[i] * MS, "death %zu: %llu ms, want %llu",
			      i, (unsigned long long)(o.delay_ns / MS),
			      (unsigned long long)delays[i]);
	}
	/* a run longer than twice backoff_max: back to backoff_min */
	o = crash(t += 3 * S, 2 * S + 1);
	ck_assert_uint_eq(o.delay_ns, 100 * MS);
	o = crash(t += 10 * MS, 5 * MS);
	ck_assert_uint_eq(o.delay_ns, 200 * MS);
	/* a run of exactly twice backoff_max is not long */
	o = crash(t += 10 * MS, 2 * S);
	ck_assert_uint_eq(o.delay_ns, 400 * MS);
	/* a restart by hand starts from the minimum again */
	ev(PEER_BACKOFF, PE_RESTART, t, 0, 0, 0);
	o = crash(t += 10 * MS, 5 * MS);
	ck_assert_uint_eq(o.delay_ns, 100 * MS);
	/* no overflow near the top of the range */
	lifecycle_free(&life);
	conf.backoff_min_ns = 1;
	conf.backoff_max_ns = UINT64_MAX;
	conf.max_deaths = 1000;
	for (int i = 0; i < 70; i++)
		o = crash(t += 10 * MS, 0);
	ck_assert_uint_eq(o.delay_ns, UINT64_MAX);
}
END_TEST

/* Deaths 1 to max_deaths restart, death max_deaths + 1 fails, whatever
 * max_deaths is (the tally once held 8: 8 or more never failed). */
START_TEST(test_max_deaths)
{
	static const uint32_t values[] = { 1, 7, 8, 9, 10, 100, 1000 };

	conf.backoff_min_ns = conf.backoff_max_ns = 0;
	for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
		uint64_t t = 1 * S;
		struct life_out o;

		lifecycle_free(&life);
		conf.max_deaths = values[v];
		for (uint32_t i = 1; i <= values[v]; i++) {
			o = crash(t += 1 * MS, 0);
			ck_assert_msg(o.next == PEER_BACKOFF && o.recent == i,
				      "max_deaths %u, death %u: %s, %u in the window",
				      values[v], i, lifecycle_state_name(o.next), o.recent);
		}
		o = crash(t += 1 * MS, 0);
		ck_assert_msg(o.next == PEER_FAILED && o.recent == values[v] + 1,
			      "max_deaths %u, death %u: %s, %u in the window", values[v],
			      values[v] + 1, lifecycle_state_name(o.next), o.recent);
		ck_assert_uint_eq(lifecycle_recent(&life, &conf, t), values[v] + 1);
		/* the ring holds what counting needs, not every death */
		ck_assert_uint_le(life.cap, values[v] + 1);
		ck_assert_int_eq(life.short_ring, 0);
	}
}
END_TEST

/* Ends asked for (hubctl restart, stop) are not deaths: however many, a
 * crash after them is the first in the window. */
START_TEST(test_asked_ends_not_deaths)
{
	uint64_t t = 1 * S;
	struct life_out o;

	lifecycle_free(&life);
	conf.restart = RESTART_ALWAYS;
	conf.max_deaths = 2;
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(ev(PEER_UP, PE_RESTART, t += MS, 0, 0, 0).next, PEER_STOPPING);
		o = ev(PEER_STOPPING, PE_DIED, t += MS, DEATH_EXITED, 0, 0);
		ck_assert_int_eq(o.next, PEER_STARTING);
		ck_assert_uint_eq(o.recent, 0);
	}
	ck_assert_int_eq(ev(PEER_UP, PE_STOP, t += MS, 0, 0, 0).next, PEER_STOPPING);
	ck_assert_int_eq(ev(PEER_STOPPING, PE_DIED, t += MS, DEATH_EXITED, 0, 0).next, PEER_DOWN);
	ck_assert_int_eq(ev(PEER_DOWN, PE_START, t += MS, 0, 0, 0).next, PEER_STARTING);
	o = crash(t += MS, 0);
	ck_assert_msg(o.next == PEER_BACKOFF && o.recent == 1, "%s, %u in the window",
		      lifecycle_state_name(o.next), o.recent);
}
END_TEST

START_TEST(test_window_slides)
{
	struct life_out o;

	conf.max_deaths = 3;
	conf.death_window_ns = 10 * S;
	/* 0, 1, 2 s: three in the window */
	for (int i = 0; i < 3; i++) {
		o = crash((uint64_t)i * S, 0);
		ck_assert_int_eq(o.next, PEER_BACKOFF);
		ck_assert_uint_eq(o.recent, (uint32_t)i + 1);
	}
	/* 10.5 s: the one at 0 has left the window: 1, 2, 10.5 */
	o = crash(10 * S + 500 * MS, 0);
	ck_assert_msg(o.next == PEER_BACKOFF && o.recent == 3, "%s, %u",
		      lifecycle_state_name(o.next), o.recent);
	/* 11.5 s: 2, 10.5, 11.5 */
	o = crash(11 * S + 500 * MS, 0);
	ck_assert_msg(o.next == PEER_BACKOFF && o.recent == 3, "%s, %u",
		      lifecycle_state_name(o.next), o.recent);
	/* 11.6 s: 2, 10.5, 11.5, 11.6: four within 10 s */
	o = crash(11 * S + 600 * MS, 0);
	ck_assert_msg(o.next == PEER_FAILED && o.recent == 4, "%s, %u",
		      lifecycle_state_name(o.next), o.recent);
	/* the window's edge counts: exactly 10 s old is still in it */
	ck_assert_uint_eq(lifecycle_recent(&life, &conf, 12 * S), 4);
	ck_assert_uint_eq(lifecycle_recent(&life, &conf, 20 * S + 500 * MS), 3);
	ck_assert_uint_eq(lifecycle_recent(&life, &conf, 21 * S + 600 * MS), 1);
	ck_assert_uint_eq(lifecycle_recent(&life, &conf, 60 * S), 0);
	/* started by hand: a clean slate */
	ck_assert_int_eq(ev(PEER_FAILED, PE_START, 22 * S, 0, 0, 0).next, PEER_STARTING);
	ck_assert_uint_eq(lifecycle_recent(&life, &conf, 22 * S), 0);
}
END_TEST

/* A failed spawn is a death: counted, backed off, failed in the end. */
START_TEST(test_spawn_failures_count)
{
	struct life_out o;
	uint64_t t = 0;

	conf.max_deaths = 2;
	for (uint32_t i = 1; i <= 2; i++) {
		o = ev(PEER_STARTING, PE_SPAWN_FAILED, t += 100 * MS, DEATH_SPAWN, 24, 0);
		ck_assert_int_eq(o.next, PEER_BACKOFF);
		ck_assert_uint_eq(o.recent, i);
	}
	o = ev(PEER_STARTING, PE_SPAWN_FAILED, t += 100 * MS, DEATH_SPAWN, 24, 0);
	ck_assert_int_eq(o.next, PEER_FAILED);
	/* restart by hand: counted afresh */
	ck_assert_int_eq(ev(PEER_FAILED, PE_RESTART, t, 0, 0, 0).next, PEER_STARTING);
	o = ev(PEER_STARTING, PE_SPAWN_FAILED, t += 100 * MS, DEATH_SPAWN, 24, 0);
	ck_assert_int_eq(o.next, PEER_BACKOFF);
	ck_assert_uint_eq(o.recent, 1);
}
END_TEST

/* max_deaths changed by a reload: the ring follows, both ways. */
START_TEST(test_max_deaths_changed)
{
	struct life_out o;
	uint64_t t = 0;

	conf.max_deaths = 100;
	for (int i = 0; i < 50; i++)
		crash(t += MS, 0);
	conf.max_deaths = 10;
	o = crash(t += MS, 0);
	ck_assert_msg(o.next == PEER_FAILED && o.recent == 11, "%s, %u",
		      lifecycle_state_name(o.next), o.recent);
	conf.max_deaths = 200;
	for (int i = 0; i < 150; i++)
		o = crash(t += MS, 0);
	ck_assert_msg(o.next == PEER_BACKOFF && o.recent == 161, "%s, %u",
		      lifecycle_state_name(o.next), o.recent);
	for (int i = 0; i < 40; i++)
		o = crash(t += MS, 0);
	ck_assert_msg(o.next == PEER_FAILED && o.recent == 201, "%s, %u",
		      lifecycle_state_name(o.next), o.recent);
}
END_TEST

Suite *suite_supervise(void);
/* start = manual: after any death it waits for a person again (STARTING
 * gets its ticket ready), whatever restart, max_deaths and the backoff
 * say; never after a stop or when the hub stops; a failure to get ready
 * goes by the policy, so that it cannot loop. */
START_TEST(test_manual)
{
	struct life_out o;

	conf.start_manual = 1;
	conf.restart = RESTART_NEVER;
	conf.max_deaths = 1;
	for (int i = 0; i < 5; i++) {
		o = ev(PEER_UP, PE_DIED, (uint64_t)i * MS, DEATH_CRASHED, 9, 0);
		ck_assert_msg(o.next == PEER_STARTING, "death %d: %s", i,
			      lifecycle_state_name(o.next));
	}
	/* a restart by hand while waiting: a new ticket, no wish left over */
	o = ev(PEER_WAITING, PE_RESTART, 10 * MS, 0, 0, 0);
	ck_assert_int_eq(o.next, PEER_STARTING);
	ck_assert_int_eq(o.action, LA_WITHDRAW);
	ck_assert_int_eq(life.want_restart, 0);
	o = ev(PEER_WAITING, PE_STOP, 11 * MS, 0, 0, 0);
	ck_assert_int_eq(o.next, PEER_DOWN);
	ck_assert_int_eq(life.want_down, 1);
	ev(PEER_DOWN, PE_START, 12 * MS, 0, 0, 0);
	ev(PEER_UP, PE_STOP, 13 * MS, 0, 0, 0);
	ck_assert_int_eq(ev(PEER_STOPPING, PE_DIED, 14 * MS, DEATH_CRASHED, 15, 0).next,
			 PEER_DOWN);
	ev(PEER_DOWN, PE_START, 15 * MS, 0, 0, 0);
	ck_assert_int_ne(ev(PEER_STARTING, PE_SPAWN_FAILED, 16 * MS, DEATH_SPAWN, 24, 0).next,
			 PEER_STARTING);
}
END_TEST

Suite *
suite_supervise(void)
{
	Suite *s = suite_create("supervise");
	TCase *tc = tcase_create("lifecycle");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_every_pair_listed);
	tcase_add_test(tc, test_every_pair_stepped);
	tcase_add_test(tc, test_wishes);
	tcase_add_test(tc, test_start_while_stopping);
	tcase_add_test(tc, test_restart_policy);
	tcase_add_test(tc, test_backoff_doubles_and_resets);
	tcase_add_test(tc, test_max_deaths);
	tcase_add_test(tc, test_asked_ends_not_deaths);
	tcase_add_test(tc, test_window_slides);
	tcase_add_test(tc, test_spawn_failures_count);
	tcase_add_test(tc, test_max_deaths_changed);
	tcase_add_test(tc, test_manual);
	suite_add_tcase(s, tc);
	return s;
}
