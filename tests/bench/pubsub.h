/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* pubsub.h: what the publish-subscribe bench programs share (psguest on
 * hub's topics, ioxps on iceoryx, dbusps on D-Bus signals), so that the
 * three measure alike: the 64-byte event, the publisher's phases, a
 * subscriber's tally and the report file it leaves. Header only.
 *
 * A run: WARM events paced (every side wakes, pages are touched), a
 * pause, FLAT events as fast as the publisher can send them for flat_ms
 * (throughput: each subscriber counts what it got over its own window,
 * first to last FLAT event, and the events it lost by their sequence),
 * a pause, DRAIN events every 10 ms until `need` subscribers said they
 * saw one (each makes DIR/NAME.RUN.drained: what queued in front of it
 * is gone), PACED events one every period_us stamped with
 * CLOCK_MONOTONIC just before the send (latency: now - stamp in the
 * subscriber, no queue in front of it), then END. At END a subscriber
 * writes DIR/NAME.RUN: "count=.. window_ns=.. lost=.." then one latency
 * sample (ns) a line; run.sh pools the files. */
#ifndef HUB_BENCH_PUBSUB_H
#define HUB_BENCH_PUBSUB_H

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/clock.h"

#define PS_EVENT	64	/* bytes of an event */
#define PS_WARM_N	200	/* warm-up events, paced */
#define PS_PAUSE_MS	200	/* between the phases */
#define PS_DRAIN_MS	30000	/* the subscribers' queues drain, at most */

enum { PS_WARM = 1, PS_FLAT, PS_DRAIN, PS_PACED, PS_END };

struct ps_event {
	uint64_t	stamp;		/* CLOCK_MONOTONIC at the send (PACED) */
	uint64_t	seq;		/* one more each event of a run */
	uint32_t	phase;		/* PS_* */
	uint32_t	run;		/* names the report file */
	uint8_t		pad[PS_EVENT - 24];
};
_Static_assert(sizeof(struct ps_event) == PS_EVENT, "a 64-byte event");

struct ps_plan {
	const char	*dir;		/* the subscribers' reports */
	uint32_t	need;		/* subscribers that must drain */
	uint32_t	run;
	uint64_t	flat_ms;	/* the throughput phase */
	uint64_t	paced_n;	/* latency samples per subscriber */
	uint64_t	period_us;	/* between two paced events */
	void		(*idle)(int ms);	/* waits ms while draining (a
						 * guest serves); NULL: sleeps */
};

/* Sends one event: 0, or -errno (the run stops). */
typedef int (*ps_send_fn)(void *ctx, const struct ps_event *ev);

static inline void
ps_sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / HP_NS_PER_S),
			       .tv_nsec = (long)(ns % HP_NS_PER_S) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* How many subscribers saw run's DRAIN. */
static inline uint32_t
ps_drained(const char *dir, uint32_t run)
{
	char pat[512];
	glob_t gl;
	uint32_t n = 0;

	snprintf(pat, sizeof(pat), "%s/*.%u.drained", dir, run);
	if (glob(pat, 0, NULL, &gl) == 0)
		n = (uint32_t)gl.gl_pathc;
	globfree(&gl);
	return n;
}

/* The publisher's run; *flat: events sent in the FLAT phase, *flat_ns
 * its length. 0 or the first send's -errno. */
static inline int
ps_publish(const struct ps_plan *p, ps_send_fn send, void *ctx, uint64_t *flat,
	   uint64_t *flat_ns)
{
	struct ps_event ev;
	uint64_t t0, end, seq = 0;
	int rc;

	memset(&ev, 0, sizeof(ev));
	ev.run = p->run;
	ev.phase = PS_WARM;
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < PS_WARM_N; i++) {
		ps_sleep_until(t0 + i * p->period_us * 1000);
		ev.seq = seq++;
		if ((rc = send(ctx, &ev)) != 0)
			return rc;
	}
	ps_sleep_until(hp_now_ns() + PS_PAUSE_MS * HP_NS_PER_MS);
	ev.phase = PS_FLAT;
	t0 = hp_now_ns();
	end = t0 + p->flat_ms * HP_NS_PER_MS;
	for (uint64_t i = 0;; i++) {
		/* the clock every 64 events: it costs */
		if ((i & 63) == 0 && hp_now_ns() >= end)
			break;
		ev.seq = seq++;
		ev.stamp = 0;
		if ((rc = send(ctx, &ev)) != 0)
			return rc;
		(*flat)++;
	}
	*flat_ns = hp_now_ns() - t0;
	ps_sleep_until(hp_now_ns() + PS_PAUSE_MS * HP_NS_PER_MS);
	ev.phase = PS_DRAIN;
	for (t0 = hp_now_ns(); ps_drained(p->dir, p->run) < p->need;) {
		if (hp_now_ns() - t0 > PS_DRAIN_MS * HP_NS_PER_MS)
			return -ETIMEDOUT;
		ev.seq = seq++;
		if ((rc = send(ctx, &ev)) != 0)
			return rc;
		if (p->idle != NULL)
			p->idle(10);
		else
			ps_sleep_until(hp_now_ns() + 10 * HP_NS_PER_MS);
	}
	ps_sleep_until(hp_now_ns() + 10 * HP_NS_PER_MS);
	ev.phase = PS_PACED;
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < p->paced_n; i++) {
		ps_sleep_until(t0 + i * p->period_us * 1000);
		ev.seq = seq++;
		ev.stamp = hp_now_ns();
		if ((rc = send(ctx, &ev)) != 0)
			return rc;
	}
	ps_sleep_until(hp_now_ns() + 10 * HP_NS_PER_MS);
	ev.phase = PS_END;
	ev.seq = seq++;
	return send(ctx, &ev);
}

/* A subscriber's tally of one run. */
struct ps_tally {
	const char	*dir, *name;	/* where it reports */
	uint64_t	n, first, last, lost, next;
	uint64_t	*lat;
	size_t		nlat, cap;
	uint32_t	run;
	int		drained;
};

/* One event received at now (len bytes of data): 1 at END (the tally
 * is complete), else 0. */
static inline int
ps_take(struct ps_tally *t, const void *data, size_t len, uint64_t now)
{
	struct ps_event ev;

	memset(&ev, 0, sizeof(ev));
	memcpy(&ev, data, len < sizeof(ev) ? len : sizeof(ev));
	t->run = ev.run;
	switch (ev.phase) {
	case PS_FLAT:
		if (t->n++ == 0)
			t->first = now;
		else if (ev.seq > t->next)
			t->lost += ev.seq - t->next;
		t->last = now;
		t->next = ev.seq + 1;
		break;
	case PS_DRAIN:
		if (!t->drained) {
			char path[512];
			int fd;

			snprintf(path, sizeof(path), "%s/%s.%u.drained", t->dir, t->name, ev.run);
			if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
				close(fd);
			t->drained = 1;
		}
		break;
	case PS_PACED:
		if (t->nlat == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 4096;
			uint64_t *p = realloc(t->lat, cap * sizeof(*p));

			if (p == NULL)
				break;
			t->lat = p;
			t->cap = cap;
		}
		t->lat[t->nlat++] = now - ev.stamp;
		break;
	case PS_END:
		return 1;
	}
	return 0;
}

/* Writes the tally as DIR/NAME.RUN (through a temporary name: the file
 * is whole once it is there) and starts a new one. 0 or -errno. */
static inline int
ps_report(struct ps_tally *t)
{
	char path[512], tmp[520];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s.%u", t->dir, t->name, t->run);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return -errno;
	fprintf(f, "count=%llu window_ns=%llu lost=%llu\n", (unsigned long long)t->n,
		(unsigned long long)(t->last - t->first), (unsigned long long)t->lost);
	for (size_t i = 0; i < t->nlat; i++)
		fprintf(f, "%llu\n", (unsigned long long)t->lat[i]);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		rc = -errno;
	t->n = t->first = t->last = t->lost = t->next = 0;
	t->nlat = 0;
	t->drained = 0;
	return rc;
}

#endif
