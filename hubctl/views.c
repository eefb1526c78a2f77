/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's views that run on: top (a frame per interval) and stats -w (a
 * line per interval), both rates of the counters hubd's stats answer
 * holds; top owns the terminal while it runs and gives it back on every
 * way out. */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <bsd/string.h>
#include <json-c/json.h>

#include "daemon/jsonout.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"

/* What the counters keys (NULL-terminated) of now grew by since before, per
 * second over dt seconds: -1 when there is nothing to compare with. A
 * counter that went down (hubd restarted, a guest of that name is a new
 * one, an older hubd dropped a removed guest's counters from its totals)
 * adds nothing: what it counted in the interval is not known, and its
 * whole value would be a burst that never happened. */
static double
rate(json_object *now, json_object *before, const char *const *keys, double dt)
{
	uint64_t sum = 0;

	if (now == NULL || before == NULL || dt <= 0)
		return -1;
	for (; *keys != NULL; keys++) {
		uint64_t a = js_u64(now, *keys), b = js_u64(before, *keys);

		if (a > b)
			sum += a - b;
	}
	return (double)sum / dt;
}

/* A rate for people: "-" when there is none. */
static const char *
rate_text(char *buf, size_t len, double r)
{
	if (r < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, r < 100 ? "%.1f" : "%.0f", r);
	return buf;
}

static const char *
bytes_rate_text(char *buf, size_t len, double r)
{
	if (r < 0)
		return rate_text(buf, len, r);
	size_iec(buf, len, (uint64_t)(r + 0.5));
	strlcat(buf, "/s", len);
	return buf;
}

/* A rate in JSON: a number with one decimal, null when there is none. */
static json_object *
rate_json(double r)
{
	return r < 0 ? NULL : json_fixed((uint64_t)(r * 10 + 0.5), 1);
}

static const char *const calls_keys[] = { "calls_in", "calls_out", NULL };
static const char *const bytes_keys[] = { "bytes_in", "bytes_out", NULL };
static const char *const waits_keys[] = { "ring_full", "slot_exhausted", "credit_waits", NULL };

/* Waits until deadline (CLOCK_MONOTONIC ns); 1 when key_fd (-1: none)
 * says q first. A key_fd at its end is not watched any more. */
static int
wait_until(uint64_t deadline, int *key_fd)
{
	uint64_t now;
	char c;

	while ((now = hp_now_ns()) < deadline) {
		struct pollfd p = { *key_fd, POLLIN, 0 };
		uint64_t ms = (deadline - now + HP_NS_PER_MS - 1) / HP_NS_PER_MS;

		if (poll(&p, 1, ms > 1000 ? 1000 : (int)ms) <= 0 || *key_fd < 0)
			continue;
		if (read(*key_fd, &c, 1) != 1)
			*key_fd = -1;
		else if (c == 'q' || c == 'Q')
			return 1;
	}
	return 0;
}

/* The next deadline, interval after the last one; from now when we are
 * late (hubd slow to answer, the machine stopped), never in bursts. */
static uint64_t
next_deadline(uint64_t last, double interval)
{
	uint64_t now = hp_now_ns(), next = last + (uint64_t)(interval * 1e9);

	return next > now ? next : now + (uint64_t)(interval * 1e9);
}

/* hubctl stats -w: the hub's totals per second, a line per interval. */
int
stats_watch(struct ctl *ctl)
{
	static const char *const in_keys[] = { "calls_in", NULL }, *const out_keys[] = {
		"calls_out", NULL }, *const bin_keys[] = { "bytes_in", NULL },
		*const bout_keys[] = { "bytes_out", NULL }, *const wake_keys[] = { "wakes", NULL },
		*const death_keys[] = { "deaths", NULL }, *const restart_keys[] = { "restarts", NULL };
	json_object *before = client_ask_again(ctl, "stats"), *now;
	uint64_t t0 = hp_now_ns(), t1, deadline = t0;
	int tty = isatty(STDOUT_FILENO), none = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* each line as it comes, into a pipe too */
	for (long line = 0; ctl->every.count == 0 || line < ctl->every.count; line++) {
		char b[6][24];
		double dt, r[7];
		json_object *tn, *tb;

		deadline = next_deadline(deadline, ctl->every.interval);
		wait_until(deadline, &none);
		now = client_ask_again(ctl, "stats");
		t1 = hp_now_ns();
		dt = (double)(t1 - t0) / 1e9;
		tn = js_get(now, "total");
		tb = js_get(before, "total");
		r[0] = rate(tn, tb, in_keys, dt);
		r[1] = rate(tn, tb, out_keys, dt);
		r[2] = rate(tn, tb, bin_keys, dt);
		r[3] = rate(tn, tb, bout_keys, dt);
		r[4] = rate(tn, tb, waits_keys, dt);
		r[5] = rate(tn, tb, wake_keys, dt);
		r[6] = rate(tn, tb, death_keys, 1);	/* counts in the interval */
		if (ctl->json) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "interval_s", json_seconds(t1 - t0));
			json_object_object_add(o, "calls_in_per_s", rate_json(r[0]));
			json_object_object_add(o, "calls_out_per_s", rate_json(r[1]));
			json_object_object_add(o, "bytes_in_per_s", rate_json(r[2]));
			json_object_object_add(o, "bytes_out_per_s", rate_json(r[3]));
			json_object_object_add(o, "waits_per_s", rate_json(r[4]));
			json_object_object_add(o, "wakes_per_s", rate_json(r[5]));
			json_object_object_add(o, "deaths", json_object_new_uint64((uint64_t)r[6]));
			json_object_object_add(o, "restarts", json_object_new_uint64(
				(uint64_t)rate(tn, tb, restart_keys, 1)));
			js_print(o);
		} else {
			if (line == 0 || (tty && line % 20 == 0))
				printf("%10s %11s %12s %12s %9s %9s %6s %8s\n", "CALLS-IN/S",
				       "CALLS-OUT/S", "BYTES-IN/S", "BYTES-OUT/S", "WAITS/S",
				       "WAKES/S", "DEATHS", "RESTARTS");
			printf("%10s %11s %12s %12s %9s %9s %6" PRIu64 " %8" PRIu64 "\n",
			       rate_text(b[0], sizeof(b[0]), r[0]), rate_text(b[1], sizeof(b[1]), r[1]),
			       bytes_rate_text(b[2], sizeof(b[2]), r[2]),
			       bytes_rate_text(b[3], sizeof(b[3]), r[3]),
			       rate_text(b[4], sizeof(b[4]), r[4]), rate_text(b[5], sizeof(b[5]), r[5]),
			       (uint64_t)r[6], (uint64_t)rate(tn, tb, restart_keys, 1));
		}
		out_flush();	/* the reader gone: stop, exit 0 */
		json_object_put(before);
		before = now;
		t0 = t1;
	}
	json_object_put(before);
	return 0;
}

/* The terminal top draws on: its settings before, restored on every way
 * out (exit, q, a signal), and top's own: no line editing, no echo. */
static struct termios tty_saved, tty_top;
static volatile sig_atomic_t tty_changed;
static int tty_ours;	/* tty_top is set: top has the terminal */

static void
tty_restore(void)
{
	if (tty_changed)
		tcsetattr(STDIN_FILENO, TCSANOW, &tty_saved);
	tty_changed = 0;
}

/* SIGINT quits as q does; SIGTERM and SIGHUP end hubctl as they would;
 * SIGTSTP stops it with the terminal as it was, SIGCONT takes it back. */
static void
on_signal(int sig)
{
	int saved = errno;

	if (sig == SIGCONT) {
		if (tty_ours && tcsetattr(STDIN_FILENO, TCSANOW, &tty_top) == 0)
			tty_changed = 1;
		errno = saved;
		return;
	}
	tty_restore();
	if (sig == SIGINT)
		_exit(0);
	if (sig == SIGTSTP) {
		kill(getpid(), SIGSTOP);
		errno = saved;
		return;
	}
	{
		sigset_t self;	/* blocked while its handler runs */

		sigemptyset(&self);
		sigaddset(&self, sig);
		signal(sig, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &self, NULL);
		raise(sig);
	}
	_exit(2);
}

/* Takes the terminal (stdin) for top; its key fd, or -1 when stdin is not
 * a terminal (q is then not read; Ctrl-C and -n end top). */
static int
tty_take(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &tty_saved) != 0)
		return -1;
	tty_top = tty_saved;
	tty_top.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	tty_top.c_cc[VMIN] = 1;
	tty_top.c_cc[VTIME] = 0;
	tty_ours = 1;
	atexit(tty_restore);
	if (tcsetattr(STDIN_FILENO, TCSANOW, &tty_top) != 0)
		return -1;
	tty_changed = 1;
	return STDIN_FILENO;
}

/* One line of a frame: on a terminal cut to its width, the rest of the
 * line cleared. */
static void __attribute__((format(printf, 2, 3)))
frame_line(int width, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (width > 0)
		printf("%.*s\033[K\n", width, line);
	else
		printf("%s\n", line);
}

/* One frame of top: samples now (peers and stats), compared with before
 * (NULL for the first) dt seconds earlier. */
static void
top_frame(const struct ctl *ctl, json_object *status, json_object *peers, json_object *now, json_object *before,
	  double dt, int tty)
{
	json_object *peerlist = js_list(peers, "peers"), *gn = js_get(now, "guests"),
		    *gb = before != NULL ? js_get(before, "guests") : NULL, *o = NULL, *rows = NULL;
	double calls = rate(js_get(now, "total"), before ? js_get(before, "total") : NULL, calls_keys, dt);
	double bytes = rate(js_get(now, "total"), before ? js_get(before, "total") : NULL, bytes_keys, dt);
	size_t n = json_object_array_length(peerlist), up = 0, shown = n;
	struct winsize ws = { 0 };
	int wname = js_width(peerlist, "name", 16);
	char b[4][32];

	for (size_t i = 0; i < n; i++)
		up += strcmp(js_text(json_object_array_get_idx(peerlist, i), "state"), "up") == 0;
	if (ctl->json) {
		o = json_object_new_object();
		rows = json_object_new_array();
		json_object_object_add(o, "uptime_s", json_object_get(js_get(status, "uptime_s")));
		json_object_object_add(o, "guests_up", json_object_new_uint64(up));
		json_object_object_add(o, "guests", json_object_new_uint64(n));
		json_object_object_add(o, "interval_s", before != NULL ?
			json_seconds((uint64_t)(dt * 1e9)) : NULL);
		json_object_object_add(o, "calls_per_s", rate_json(calls));
		json_object_object_add(o, "bytes_per_s", rate_json(bytes));
	} else {
		if (tty) {
			if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
				ws.ws_col = 511;	/* frame_line's most */
			printf("\033[H");
			/* the headings, the rows, "(N more)", and the line the
			 * last newline leaves the cursor on: a newline on the
			 * bottom line scrolls the hub's line off the top */
			if (ws.ws_row > 4 && n > (size_t)ws.ws_row - 3)
				shown = (size_t)ws.ws_row - 4;
		}
		frame_line(ws.ws_col, "hub up %s, guests %zu up of %zu, calls/s %s, bytes/s %s%s",
			   duration_text(b[0], sizeof(b[0]), js_ns(js_get(status, "uptime_s"),
								  HP_NS_PER_S)),
			   up, n, rate_text(b[1], sizeof(b[1]), calls),
			   bytes < 0 ? "-" : size_iec(b[2], sizeof(b[2]), (uint64_t)(bytes + 0.5)),
			   tty ? "    (q quits)" : "");
		frame_line(ws.ws_col, "%-*s %-9s %8s %9s %12s %9s %5s %8s %6s", wname, "NAME",
			   "STATE", "PID", "CALLS/S", "BYTES/S", "RING", "SLOTS", "WAITS/S", "DEATHS");
	}
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(peerlist, i);
		json_object *sn = js_get(gn, js_text(p, "name")), *sb = gb ? js_get(gb, js_text(p, "name")) : NULL;
		double c = rate(sn, sb, calls_keys, dt), by = rate(sn, sb, bytes_keys, dt);
		double w = rate(sn, sb, waits_keys, dt);

		if (ctl->json) {
			json_object *r = json_object_new_object();

			json_object_object_add(r, "name", json_object_new_string(js_text(p, "name")));
			json_object_object_add(r, "state", json_object_new_string(js_text(p, "state")));
			json_object_object_add(r, "pid", json_object_get(js_get(p, "pid")));
			json_object_object_add(r, "calls_per_s", rate_json(c));
			json_object_object_add(r, "bytes_per_s", rate_json(by));
			json_object_object_add(r, "g2h_depth", json_object_get(js_get(p, "g2h_depth")));
			json_object_object_add(r, "h2g_depth", json_object_get(js_get(p, "h2g_depth")));
			json_object_object_add(r, "slots_used", json_object_get(js_get(p, "slots_used")));
			json_object_object_add(r, "waits_per_s", rate_json(w));
			json_object_object_add(r, "deaths", json_object_new_uint64(js_u64(sn, "deaths")));
			json_object_array_add(rows, r);
			continue;
		}
		if (i == shown) {
			frame_line(ws.ws_col, "(%zu more: a taller terminal shows them)", n - shown);
			break;
		}
		snprintf(b[0], sizeof(b[0]), "%d/%d", json_object_get_int(js_get(p, "g2h_depth")),
			 json_object_get_int(js_get(p, "h2g_depth")));
		frame_line(ws.ws_col, "%-*s %-9s %8d %9s %12s %9s %5d %8s %6" PRIu64,
			   wname, js_text(p, "name"), js_text(p, "state"), json_object_get_int(js_get(p, "pid")),
			   rate_text(b[1], sizeof(b[1]), c), bytes_rate_text(b[2], sizeof(b[2]), by),
			   b[0], json_object_get_int(js_get(p, "slots_used")),
			   rate_text(b[3], sizeof(b[3]), w), js_u64(sn, "deaths"));
	}
	if (ctl->json) {
		json_object_object_add(o, "peers", rows);
		js_print(o);
	} else if (tty) {
		printf("\033[J");
	}
}

/* hubctl top: a frame every interval until q, Ctrl-C or -n frames. */
int
hubctl_top(struct ctl *ctl, int argc, char **argv)
{
	int tty = !ctl->json && isatty(STDOUT_FILENO), key_fd = -1;
	json_object *before = NULL;
	uint64_t t0 = 0, deadline = hp_now_ns();

	(void)argc;
	(void)argv;
	key_fd = tty_take();
	if (tty) {
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);	/* a frame drawn at once */
		printf("\033[H\033[2J");
	} else {
		setvbuf(stdout, NULL, _IOLBF, 0);
	}
	for (long frame = 0; ctl->every.count == 0 || frame < ctl->every.count; frame++) {
		json_object *status = client_ask_again(ctl, "status");
		json_object *peers = client_ask_again(ctl, "peers");
		json_object *now = client_ask_again(ctl, "stats");
		uint64_t t1 = hp_now_ns();

		if (frame > 0 && !tty && !ctl->json)
			printf("\n");	/* frames apart in a log */
		top_frame(ctl, status, peers, now, before, (double)(t1 - t0) / 1e9, tty);
		out_flush();
		json_object_put(status);
		json_object_put(peers);
		json_object_put(before);
		before = now;
		t0 = t1;
		if (ctl->every.count != 0 && frame + 1 == ctl->every.count)
			break;
		deadline = next_deadline(deadline, ctl->every.interval);
		if (wait_until(deadline, &key_fd))
			break;
	}
	json_object_put(before);
	return 0;
}
