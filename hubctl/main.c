/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl: talks to a running hubd over its control socket. This file is
 * its command table, its options, usage and help, and main; the commands
 * are in a file each or per kind (hubctl.h names them), each given the
 * struct ctl main fills. */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hubctl/hubctl.h"

/* hubd's default (daemon/config.h); a prefix's once installed there */
#ifndef HUB_CONTROL_DEFAULT
#define HUB_CONTROL_DEFAULT	"/run/hub/hubd.sock"
#endif
#define DEFAULT_SOCKET	HUB_CONTROL_DEFAULT

struct command {
	const char	*name;
	const char	*usage;
	int		min_args;	/* arguments, options left out */
	int		max_args;
	int		(*run)(struct ctl *ctl, int argc, char **argv);
	const char	*help;
	const char	*opts;		/* of w, d and n: the options it takes */
};

static const struct command commands[] = {
	{ "status", "status", 0, 0, hubctl_status,
	  "hub parameters, uptime, memory mapped, zones, pool classes", NULL },
	{ "stats", "stats [-w] [-d SECONDS] [-n COUNT]", 0, 0, hubctl_stats,
	  "counters per guest and in all; -w: the hub's rates, a line per interval", "wdn" },
	{ "top", "top [-d SECONDS] [-n FRAMES]", 0, 0, hubctl_top,
	  "a live view of the guests: state, calls/s, bytes/s, rings, slots, waits", "dn" },
	{ "peers", "peers [NAME]", 0, 1, hubctl_peers,
	  "guests: state, pid, epoch, uptime, deaths; NAME: one in detail", NULL },
	{ "methods", "methods", 0, 0, hubctl_methods, "registered methods, signatures, owners",
	  NULL },
	{ "lanes", "lanes", 0, 0, hubctl_lanes,
	  "direct lanes between guests: calls and bytes each way; lanes closed over a broken rule",
	  NULL },
	{ "calls", "calls", 0, 0, hubctl_calls,
	  "calls routed through hubd and not answered yet: caller, callee, method, age, where",
	  NULL },
	{ "remotes", "remotes [GUEST]", 0, 1, hubctl_remotes,
	  "through the NATS bridge: per remote hub and imported method, calls, errors, latency",
	  NULL },
	{ "monitor", "monitor [GLOB]", 0, 1, hubctl_monitor,
	  "each call as it passes: caller, callee, method, arguments, result, duration",
	  NULL },
	{ "logs", "logs NAME", 1, 1, hubctl_logs,
	  "a guest's last lines of stdout and stderr, kept across its restarts", NULL },
	{ "ticket", "ticket NAME", 1, 1, hubctl_ticket,
	  "the command line that starts a guest of start = manual by hand (gdb or pdb too)",
	  NULL },
	{ "call", "call " CALL_USAGE, 1, 22, hubctl_call,
	  "call a method; arguments are encoded by its signature", NULL },
	{ "listen", "listen TOPIC [--policy P] [-n COUNT]", 1, 5, hubctl_listen,
	  "print each event of a topic as it arrives (into a pipe too), until Ctrl-C", NULL },
	{ "emit", "emit TOPIC [VALUE | --bytes-file FILE]... [-- VALUE...]", 1, 18, hubctl_emit,
	  "publish an event to a topic as the operator; values encoded by its signature",
	  NULL },
	{ "topics", "topics", 0, 0, hubctl_topics,
	  "topics: signature, publisher, retained value; subscribers' policy, rate, losses",
	  NULL },
	{ "restart", "restart NAME", 1, 1, hubctl_restart,
	  "restart a guest now (a failed one too: its deaths are forgiven)", NULL },
	{ "stop", "stop NAME", 1, 1, hubctl_stop, "stop a guest and keep it down", NULL },
	{ "start", "start NAME", 1, 1, hubctl_start, "start a stopped or failed guest", NULL },
	{ "pool", "pool [--validate] [--json]", 0, 2, hubctl_pool,
	  "each zone's shared pool per size class; --validate checks them (exit 1: broken)",
	  NULL },
	{ "reload", "reload", 0, 0, hubctl_reload,
	  "re-read the config: new guests start, dropped stop, changed restart", NULL },
	{ "version", "version", 0, 0, hubctl_version,
	  "the control protocol's version, hubd's and hubctl's; the commands hubd takes",
	  NULL },
	{ "inspect", "inspect [FILE...]", 0, 1024, hubctl_inspect,
	  "the hub's memory read-only, invariants checked; FILE...: files, offline", NULL },
	{ "dump", "dump DIR", 1, 1, hubctl_dump,
	  "copy every domain and pool into DIR, for inspect after the hub is gone", NULL },
};

/* -d SECONDS: plain decimal seconds, digits with an optional fraction
 * (2, 0.5, .25), from SECONDS_MIN to SECONDS_MAX. Checked by hand, not
 * by strtod alone, which also takes hex ("0x10" is 16 s), exponents
 * ("1e300", frames with no wait at all), inf, nan and blanks. */
#define SECONDS_MIN	0.01
#define SECONDS_MAX	86400.0
#define SECONDS_RANGE	"from 0.01 to 86400"

static int
seconds_arg(const char *s, double *out)
{
	const char *q = s + strspn(s, "0123456789");
	size_t frac = 0;
	double v;

	if (*q == '.') {
		if ((frac = strspn(q + 1, "0123456789")) == 0)
			return -1;
		q += 1 + frac;
	}
	if (q == s || *q != '\0')
		return -1;
	v = strtod(s, NULL);	/* plain decimal by now; hubctl keeps the C locale */
	if (v < SECONDS_MIN || v > SECONDS_MAX)
		return -1;
	*out = v;
	return 0;
}

/* -n COUNT: a whole number from 1. */
static int
count_arg(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0 || v < 1)
		return -1;
	*out = v;
	return 0;
}

/* The options of c (c->opts: -w, -d SECONDS, -n COUNT) into every, taken
 * out of argv (*argc shrinks); -1 after saying what is wrong. -d and -n
 * make stats a watch (-w) too. */
static int
view_options(const struct command *c, struct every *every, int *argc, char **argv)
{
	int n = 0, i;

	for (i = 0; i < *argc; i++) {
		const char *a = argv[i], *val;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			argv[n++] = argv[i];
			continue;
		}
		if (strchr(c->opts, a[1]) == NULL || (a[1] == 'w' && a[2] != '\0')) {
			fprintf(stderr, "hubctl: %s: unknown option '%s'\n", c->name, a);
			return -1;
		}
		every->watch = 1;
		if (a[1] == 'w')
			continue;
		val = a[2] != '\0' ? a + 2 : i + 1 < *argc ? argv[++i] : NULL;
		if (val == NULL) {
			fprintf(stderr, "hubctl: %s: -%c takes a value\n", c->name, a[1]);
			return -1;
		}
		if (a[1] == 'd' && seconds_arg(val, &every->interval) != 0) {
			fprintf(stderr, "hubctl: %s: -d takes seconds " SECONDS_RANGE
				" (2, 0.5, .25), not '%s'\n", c->name, val);
			return -1;
		}
		if (a[1] == 'n' && count_arg(val, &every->count) != 0) {
			fprintf(stderr, "hubctl: %s: -n takes a count from 1, not '%s'\n", c->name,
				val);
			return -1;
		}
	}
	while (i < *argc)
		argv[n++] = argv[i++];
	*argc = n;
	return 0;
}

static void
usage_to(FILE *f)
{
	fprintf(f, "usage: hubctl [-j] [-s socket] [-t seconds] command [arg...]\n"
		"  -j, --json          answers as JSON, one object per line\n"
		"  -s, --socket PATH   hubd's control socket (default " DEFAULT_SOCKET
		",\n                      or $HUBCTL_SOCKET)\n"
		"  -t, --timeout SECS  give up waiting for an answer after SECS\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-24s%s%s\n", commands[i].usage,
			strlen(commands[i].usage) > 24 ? "\n                           " : " ",
			commands[i].help);
	fprintf(f, "  %-24s %s\n", "help [COMMAND]", "this, or more about one command");
	fprintf(f, "exit status: 0 done, 1 the hub said no (or no answer in time),"
		" 2 bad usage or no hub\n");
}

static void __attribute__((noreturn))
usage(void)
{
	usage_to(stderr);
	exit(2);
}

/* More than a line, for the commands that need it. */
static const struct {
	const char	*name;
	const char	*text;
} details[] = {
	{ "call",
	  "Arguments are given as text and encoded by the method's registered\n"
	  "signature (see 'hubctl methods'): str and bytes as they are, u64 and\n"
	  "i64 in decimal, f64 as a decimal number, bool as true or false;\n"
	  "list<T>, opt<T>, tuples (T1,T2) and map<K,V> as JSON: an array, null\n"
	  "or the value, an array of the fields, an object (kv.mget '[\"a\",\"b\"]').\n"
	  "A chan<T> argument is not given:\n"
	  "hubd opens the channel and hubctl prints each item as it arrives\n"
	  "(written out at once, to a pipe too), then the result. Strings print\n"
	  "as they are (\"\" an empty line), other values as JSON; a unit result\n"
	  "prints nothing, an opt's none null (-j tells it from the text \"null\").\n"
	  "An rx<T> argument (an upload; hub.sink's too) is given as -: each line\n"
	  "of stdin is an item, until its end\n"
	  "(hubctl call hub.sink - < FILE: the stream hash of FILE's lines).\n"
	  "--bytes-file FILE gives a bytes argument as FILE's bytes, whatever\n"
	  "they are (sent as its text form base64:...), up to about 48 KiB;\n"
	  "for an argument of another type it is refused.\n"
	  "A method's error is printed on stderr and exits 1.\n"
	  "--timeout MS sets the call's deadline, MS milliseconds from now (-t\n"
	  "SECS does too when --timeout is not given): a guest never starts a\n"
	  "call whose deadline has passed (\"remote timeout: the deadline passed\n"
	  "before the call started\"), its handler can read it, and the calls it\n"
	  "makes inherit it; hubctl waits that long and 2 s more for the answer.\n"
	  "--trace TRACEPARENT puts the call in that W3C trace\n"
	  "(00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>), --trace new\n"
	  "in a new one; hubctl calls shows the trace id of each call it sets\n"
	  "off. Without --trace the call has none.\n" },
	{ "monitor",
	  "Prints each call of a method GLOB matches (fnmatch; all when not\n"
	  "given) when it ends, a line each, written out at once (to a pipe too):\n"
	  "the time, CALLER > CALLEE METHOD(ARGS) = RESULT or ! KIND: ERROR, its\n"
	  "duration, and \"lane\" for a call between two guests that have a lane.\n"
	  "Arguments and results are decoded by the method's signature and cut\n"
	  "short (strings to 64 bytes, lists and maps to 8 elements); what a guest\n"
	  "sent is escaped. While a monitor watches a method, its calls go through\n"
	  "hubd instead of over lanes, and cost what such a call costs; after,\n"
	  "the next call through hubd puts it back on its lane. hubd drops the\n"
	  "lines hubctl does not read fast enough and says how many. Root and\n"
	  "hubd's user only: arguments are the guests' data. Ctrl-C or a closed\n"
	  "pipe ends it (exit 0). -j: hubd's JSON lines as they come.\n" },
	{ "listen",
	  "Subscribes to TOPIC and prints each event as it arrives, a line each,\n"
	  "written out at once (into a pipe too), until Ctrl-C or SIGTERM (exit\n"
	  "0), a closed stdout (exit 0), -n COUNT events (exit 0), hubd ending\n"
	  "the subscription (its reason, exit 1) or hubd going away (exit 2).\n"
	  "Values are decoded by the topic's signature: strings as they are (their\n"
	  "control characters and newlines escaped), the rest as JSON; the values\n"
	  "of a signature of several arguments space-separated. Events the\n"
	  "subscription lost (lapped, or skipped under latest) show as \"(lost N)\"\n"
	  "on stderr, before the next; an event its publisher spoiled is reported\n"
	  "there and skipped. -j: a JSON line per event, {\"seq\":N,\"lost\":L,\n"
	  "\"value\":V} (V an array for several arguments, null for none), or\n"
	  "{\"seq\":N,\"lost\":L,\"bad\":WHY}. --policy is block, drop-oldest\n"
	  "(the default: a slow hubctl is lapped and told) or latest (only the\n"
	  "newest each time). hubctl reads the topic in place, from the memory hubd\n"
	  "hands it read-only; the topic need not be published yet. Who may\n"
	  "subscribe is the config's ([topic NAME] subscribers =): root and hubd's\n"
	  "user always.\n" },
	{ "emit",
	  "Publishes one event to TOPIC as the operator (root and hubd's user\n"
	  "only), its values given as 'hubctl call' takes arguments and encoded by\n"
	  "the topic's signature: a value that does not fit is refused (exit 1).\n"
	  "The topic must have a signature (its publisher advertised it). Prints\n"
	  "nothing; -j: {\"ok\":true,\"seq\":N}, the event's sequence.\n" },
	{ "topics",
	  "A row per topic: TOPIC, SIGNATURE, PUBLISHER (the guest that advertised\n"
	  "it, hub for the hub.* ones hubd writes, - for none), PUBLISHED events, SUBS\n"
	  "(subscribers) and RETAINED (the newest value of a topic that keeps one,\n"
	  "shortened). Under it, a row per subscriber: SUBSCRIBER (a guest, or\n"
	  "client:UID for a hubctl listen), POLICY, RATE/S (events it took per\n"
	  "second over the last second), RECEIVED, LOST and BEHIND (events\n"
	  "published it has not read). -j: hubd's answer as it is.\n" },
	{ "inspect",
	  "Without FILE: asks hubd for every guest's domain and every zone's pool\n"
	  "(their fds, over the control socket: root and hubd's user only; no\n"
	  "answer within -t, 10 s when not given, exits 2), maps each read-only\n"
	  "and prints, per guest, its domain's header, where each area lies, the\n"
	  "host pool and its peer entry: state, epoch, ring heads and tails, free\n"
	  "slots, open channels, heartbeat age; per zone, its pool's areas and\n"
	  "figures per class. It checks that indices are in range, states are\n"
	  "states, no bitmap bit is set past the last slot, Empty entries were\n"
	  "fully recovered, and what validate finds in each pool (as 'hubctl pool\n"
	  "--validate', any peer id counting as a live owner; on a live pool a\n"
	  "problem counts only if two passes see it). Each problem is printed as\n"
	  "PROBLEM: with the guest or pool it is in; exit 1 when any.\n"
	  "With FILE...: the same on files, no daemon needed (it works with hubd\n"
	  "hung or gone): what 'hubctl dump' wrote (NAME.domain, ZONE.pool; a pool\n"
	  "file takes max_guests from the domains.json beside it, or from a\n"
	  "domain among the files; domains.json itself is passed over, so DIR/*\n"
	  "reads a dump), or a segment file of any host the spec allows.\n"
	  "Anything else, a FIFO say, is refused at once (exit 2).\n" },
	{ "dump",
	  "Gets every guest's domain and every zone's pool as 'inspect' does and\n"
	  "copies each into DIR: NAME.domain, ZONE.pool (0600, their untouched\n"
	  "zeros left as holes), and hubd's answer as domains.json. DIR is made\n"
	  "(0700) when it is not there, and refused when it holds anything. The\n"
	  "copies are taken while the hub runs: a slot that moves meanwhile can\n"
	  "look odd. Read them later, the hub gone: hubctl inspect DIR/*.\n"
	  "Exit 2 when it cannot finish (what it wrote is removed).\n" },
	{ "reload",
	  "Re-reads hubd's config file (as SIGHUP does). Guests are matched by\n"
	  "name: new ones start, dropped ones stop, changed ones restart. Each\n"
	  "[hub] and [pool] key changed is named: its new value taken, or, for\n"
	  "the segment parameters and paths, which cannot change while hubd\n"
	  "runs, its running value kept. A broken file changes nothing and\n"
	  "exits 1 with what is wrong.\n" },
	{ "pool",
	  "A table per zone (its name, its member guests, its pool's bytes now),\n"
	  "a row per size class: slot SIZE, slots PER-EXTent, EXTENTS now/at\n"
	  "most, SLOTS, FREE, IN-USE and HIGH (the most in use at once), then\n"
	  "counters since hubd started: ALLOCS, FREES, CONFL (CAS conflicts),\n"
	  "FALLBK (served by a larger class), WAITS (every class that fits\n"
	  "exhausted), RECLAIM (slots taken back from guests that are gone),\n"
	  "REBUILD (free lists rebuilt), ERRORS (double and stale frees, bad\n"
	  "links: detailed below the table when any). Counts from a million on\n"
	  "are rounded (1.2M; exact with -j). Then the slots a live guest has\n"
	  "held longer than [pool] stuck_after, and a pool's bytes at start.\n"
	  "--validate checks that every slot is on exactly one free list or held\n"
	  "by one live owner, no list has a cycle or a link out of range, and no\n"
	  "held slot has generation 0; a problem counts only if two passes both\n"
	  "see it (a slot in transit can look odd once). Each is printed as\n"
	  "PROBLEM: pool ZONE: ... and exits 1; a class found broken is rebuilt\n"
	  "by the sweeper. A hub without a shared pool ([pool] classes = none)\n"
	  "exits 1.\n" },
	{ "peers",
	  "Columns: RST restarts, HB-AGE time since the guest's last heartbeat,\n"
	  "RINGS descriptors waiting guest->host/host->guest, SLOTS slots of its\n"
	  "pool in use, CHANS channels open, LAST DEATH reason, status, detail.\n"
	  "With NAME, that guest alone, a \"key: value\" per line: its peer id,\n"
	  "state, pid, epoch, uptime, restarts, heartbeat age, rings, slots,\n"
	  "channels, exec and args, and its recent deaths (when, reason, exit\n"
	  "status or signal, detail). An unknown NAME exits 1. -j: its object.\n" },
	{ "top",
	  "A table redrawn every SECONDS (-d, default 1; plain decimal seconds\n"
	  "from 0.01 to 86400, as 2, 0.5 or .25):\n"
	  "the hub's uptime, guests up of all, calls/s and bytes/s in all, then a\n"
	  "row per guest: NAME, STATE, PID, CALLS/S (in + out), BYTES/S (in +\n"
	  "out), RING (descriptors waiting guest->host/host->guest), SLOTS (in\n"
	  "use), WAITS/S (ring full + no slot + no credit), DEATHS. Rates are\n"
	  "what the counters grew by over the real time between two frames: the\n"
	  "first frame has none yet (\"-\"). On a terminal the screen is redrawn\n"
	  "(plain ANSI: home and clear) and q or Ctrl-C quits (exit 0); the\n"
	  "terminal's settings are restored on every way out. Not on a terminal,\n"
	  "frames follow one another, a blank line apart, without escape codes.\n"
	  "-n FRAMES stops after that many (exit 0). -j: a JSON object per frame,\n"
	  "rates as numbers (null in the first). hubd going away: exit 2.\n" },
	{ "stats",
	  "Counters since hubd started, per guest and in all: CALLS-IN, CALLS-OUT,\n"
	  "BYTES-IN, BYTES-OUT (rounded; exact with -j), RING-FULL, NO-SLOT,\n"
	  "NO-CREDIT (waits), WAKES, DEATHS, RESTARTS, VIOLATIONS; the shared\n"
	  "pool's and the streams between guests' totals.\n"
	  "-w: a line per interval (-d SECONDS, default 1; plain decimal seconds\n"
	  "from 0.01 to 86400, as 2, 0.5 or .25) with the hub's rates:\n"
	  "calls in and out, bytes in and out per second, waits and wakes per\n"
	  "second, and the deaths and restarts in that interval; the header again\n"
	  "every 20 lines on a terminal; -n COUNT lines, then exit 0. -d and -n\n"
	  "imply -w. -j: a JSON object per line.\n" },
};

static const char *
details_of(const char *name)
{
	for (size_t i = 0; i < sizeof(details) / sizeof(details[0]); i++)
		if (strcmp(name, details[i].name) == 0)
			return details[i].text;
	return "";
}

/* help [COMMAND]: COMMAND's usage and details, or (none, help itself,
 * -h or --help) every command's; an unknown one is said as on its own. */
static int
help(const char *name)
{
	for (size_t i = 0; name != NULL && i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name) != 0)
			continue;
		printf("usage: hubctl %s\n%s\n%s", commands[i].usage, commands[i].help,
		       details_of(name));
		return 0;
	}
	if (name != NULL && strcmp(name, "help") != 0 && strcmp(name, "-h") != 0 &&
	    strcmp(name, "--help") != 0) {
		fprintf(stderr, "hubctl: unknown command '%s'\n", name);
		usage();
	}
	usage_to(stdout);
	return 0;
}

void
out_flush(void)
{
	struct pollfd out = { STDOUT_FILENO, POLLOUT, 0 };

	if (fflush(stdout) == 0 && !ferror(stdout))
		return;
	/* the reader went (hubctl call ... | head): it has what it wanted.
	 * errno may be a later call's when the failed write was buffered
	 * earlier: the pipe says so itself */
	if (errno == EPIPE || (poll(&out, 1, 0) == 1 && (out.revents & POLLERR)))
		exit(0);
	err(2, "stdout");
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl ctl = { .fd = -1, .sock = getenv("HUBCTL_SOCKET"), .every = { 1.0, 0, 0 } };
	int ch, rc, nargs;

	/* a connection hubd closed is an error to report, not a way to die */
	signal(SIGPIPE, SIG_IGN);

	if (ctl.sock == NULL)
		ctl.sock = DEFAULT_SOCKET;
	opterr = 0;	/* said below as hubctl, not as argv[0] ("build/hubctl") */
	while ((ch = getopt_long(argc, argv, "+js:t:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j': ctl.json = 1; break;
		case 's': ctl.sock = optarg; break;
		case 't': {
			char *end;
			long t;

			errno = 0;
			t = strtol(optarg, &end, 10);
			/* its milliseconds are a call's deadline: 32 bits */
			if (errno != 0 || end == optarg || *end != '\0' || t < 1 ||
			    t > INT32_MAX / 1000)
				errx(2, "-t takes a number of seconds, from 1 to %d", INT32_MAX / 1000);
			ctl.timeout_s = (int)t;
			break;
		}
		case 'h': return help(NULL);
		default:
			if (optopt != 0)
				fprintf(stderr, "hubctl: %s -%c\n", strchr("st", optopt) != NULL ?
					"a value is missing after" : "unknown option", optopt);
			else
				fprintf(stderr, "hubctl: unknown option %s\n", argv[optind - 1]);
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	if (strcmp(argv[0], "help") == 0)
		return help(argc > 1 ? argv[1] : NULL);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];

		if (strcmp(argv[0], c->name) != 0)
			continue;
		if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
			return help(c->name);
		nargs = argc - 1;
		if (c->opts != NULL && view_options(c, &ctl.every, &nargs, argv + 1) != 0) {
			fprintf(stderr, "usage: hubctl %s\n", c->usage);
			return 2;
		}
		if (nargs < c->min_args || nargs > c->max_args) {
			int n = nargs < c->min_args ? c->min_args : c->max_args;

			if (n == 0)
				fprintf(stderr, "hubctl: %s takes no arguments\n", c->name);
			else
				fprintf(stderr, "hubctl: %s takes %s%d argument%s, not %d\n", c->name,
					c->min_args == c->max_args ? "" : nargs < c->min_args ?
					"at least " : "at most ", n, n == 1 ? "" : "s", nargs);
			fprintf(stderr, "usage: hubctl %s\n", c->usage);
			return 2;
		}
		/* inspect and dump connect themselves, when they need hubd */
		if (c->run != hubctl_inspect && c->run != hubctl_dump)
			ctl.fd = client_connect(&ctl);
		rc = c->run(&ctl, nargs, argv + 1);
		out_flush();
		return rc;
	}
	fprintf(stderr, "hubctl: unknown command '%s'\n", argv[0]);
	usage();
}

