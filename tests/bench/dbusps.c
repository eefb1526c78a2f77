/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* dbusps: D-Bus signals through a bus daemon (sd-bus) as the bench's
 * peer for hub's topics, a run as tests/bench/pubsub.h has it.
 *   dbusps ADDRESS DIR RUN N FLAT_MS PACED_N PERIOD_US
 * forks N subscribers, each a connection to the bus at ADDRESS with a
 * match on the signal hub.bench.Ps.Ev, then emits the run's events from
 * this process, each an Ev(ay) signal of the 64-byte event, broadcast:
 * the daemon sends it to every match. Each subscriber writes DIR/sI.RUN.
 * A bus daemon queues without bound (up to its limits): no policy. Exits
 * non-zero on any failure. */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "tests/bench/pubsub.h"

#define PATH		"/hub/bench/ps"
#define IFACE		"hub.bench.Ps"
#define SILENCE_US	(30 * 1000000ull)	/* a subscriber gives up */

static sd_bus *
connect_bus(const char *address)
{
	sd_bus *b;
	int r;

	if ((r = sd_bus_new(&b)) < 0 ||
	    (r = sd_bus_set_address(b, address)) < 0 ||
	    (r = sd_bus_set_bus_client(b, 1)) < 0 ||
	    (r = sd_bus_start(b)) < 0)
		errx(1, "connect %s: %s", address, strerror(-r));
	return b;
}

struct sub {
	struct ps_tally	t;
	int		end;
};

static int
on_event(sd_bus_message *m, void *ctx, sd_bus_error *e)
{
	struct sub *s = ctx;
	const void *p;
	size_t len;
	uint64_t now = hp_now_ns();
	int r;

	(void)e;
	if ((r = sd_bus_message_read_array(m, 'y', &p, &len)) < 0)
		return r;
	if (!s->end)
		s->end = ps_take(&s->t, p, len, now);
	return 0;
}

static int
subscriber(const char *address, const char *dir, int idx, int ready)
{
	struct sub s = { .t.dir = dir };
	char name[16];
	sd_bus *b = connect_bus(address);
	int r;

	if ((r = sd_bus_match_signal(b, NULL, NULL, PATH, IFACE, "Ev", on_event, &s)) < 0)
		errx(1, "subscriber: match: %s", strerror(-r));
	snprintf(name, sizeof(name), "s%d", idx);
	s.t.name = name;
	if (write(ready, "R", 1) != 1)
		err(1, "ready");
	close(ready);
	while (!s.end) {
		if ((r = sd_bus_process(b, NULL)) < 0)
			errx(1, "subscriber %d: %s", idx, strerror(-r));
		if (r == 0 && (r = sd_bus_wait(b, SILENCE_US)) <= 0)
			errx(1, "subscriber %d: %s", idx, r == 0 ? "no event for 30 s" :
			     strerror(-r));
	}
	if (ps_report(&s.t) != 0)
		err(1, "report");
	sd_bus_flush_close_unref(b);
	return 0;
}

/* One signal, written out before the next: the publisher waits while
 * the daemon reads no more from it (its queues at their limits). */
static int
emit(void *ctx, const struct ps_event *ev)
{
	sd_bus *b = ctx;
	sd_bus_message *m = NULL;
	int r;

	if ((r = sd_bus_message_new_signal(b, &m, PATH, IFACE, "Ev")) < 0 ||
	    (r = sd_bus_message_append_array(m, 'y', ev, PS_EVENT)) < 0)
		goto out;
	if ((r = sd_bus_send(b, m, NULL)) >= 0)
		r = sd_bus_flush(b);
out:
	sd_bus_message_unref(m);
	return r < 0 ? r : 0;
}

int
main(int argc, char *argv[])
{
	struct ps_plan plan = { 0 };
	struct pollfd pfd;
	uint64_t flat = 0, flat_ns = 0;
	pid_t *kids;
	char c;
	int n, p[2], got = 0, rc = 0, st;
	sd_bus *b;

	if (argc != 8 || (n = atoi(argv[4])) < 1 || n > 64) {
		fprintf(stderr, "usage: dbusps ADDRESS DIR RUN N FLAT_MS PACED_N PERIOD_US\n");
		return 2;
	}
	plan.dir = argv[2];
	plan.need = (uint32_t)n;
	plan.run = (uint32_t)atoi(argv[3]);
	plan.flat_ms = strtoull(argv[5], NULL, 10);
	plan.paced_n = strtoull(argv[6], NULL, 10);
	plan.period_us = strtoull(argv[7], NULL, 10);
	prctl(PR_SET_TIMERSLACK, 1UL);	/* paced sends on time */
	if ((kids = calloc((size_t)n, sizeof(*kids))) == NULL || pipe(p) != 0)
		err(1, "setup");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		if ((kids[i] = fork()) == -1)
			err(1, "fork");
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(p[0]);
			exit(subscriber(argv[1], argv[2], i + 1, p[1]));
		}
	}
	close(p[1]);
	b = connect_bus(argv[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	while (got < n && poll(&pfd, 1, 10000) == 1 && read(p[0], &c, 1) == 1)
		got++;
	if (got < n) {
		warnx("%d of %d subscribers ready", got, n);
		rc = 1;
	} else if ((rc = ps_publish(&plan, emit, b, &flat, &flat_ns)) != 0) {
		warnx("publisher: %s", strerror(-rc));
		rc = 1;
	}
	for (int i = 0; i < n; i++) {
		if (rc != 0)
			kill(kids[i], SIGKILL);
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = 1;
	}
	if (rc == 0)
		printf("published=%llu per_s=%.0f\n", (unsigned long long)flat,
		       (double)flat * 1e9 / (double)flat_ns);
	sd_bus_flush_close_unref(b);
	free(kids);
	return rc;
}
