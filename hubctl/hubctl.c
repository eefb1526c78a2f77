/* hubctl: talks to a running hubd over its control socket; its commands,
 * usage and main. The views that run on (top, stats -w) are views.c, the
 * segment inspector (hubctl inspect) inspect.c. One short function per
 * command, each printing its answer through the request and answer
 * helpers above it. */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>
#include <json-c/json.h>

#include "daemon/control.h"
#include "hubctl/hubctl.h"
#include "daemon/jsonout.h"
#include "daemon/size.h"
#include "proto/clock.h"

#define DEFAULT_SOCKET	"/run/hub/hubd.sock"
#define ANSWER_MAX	(512ul << 20)	/* one answer line, for sanity only */

int json_out;
static int timeout_s;	/* -t: give up on an answer after this long */
static int write_errno;	/* the request could not be sent: why */
static const char *sock_path;	/* -s: for the views, which connect again */

struct every every = { 1.0, 0, 0 };

struct command {
	const char	*name;
	const char	*usage;
	int		min_args;	/* arguments, options left out */
	int		max_args;
	int		(*run)(int fd, int argc, char **argv);
	const char	*help;
	const char	*opts;		/* of w, d and n: the options it takes */
};

static void __attribute__((noreturn)) usage(void);

static int
connect_to(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >= sizeof(sun.sun_path))
		errx(2, "socket path too long: %s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		err(2, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
		err(2, "cannot reach hubd at %s (is it running? -s sets the socket)", path);
	if (timeout_s > 0) {
		struct timeval tv = { timeout_s, 0 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

/* One request line. Refused here if hubd would refuse it for its size. If
 * hubd closed the connection meanwhile, its answer (it may have said why)
 * is read all the same; write_errno says what went wrong if none comes. */
static void
send_request(int fd, json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_OUT_FLAGS);
	size_t n = strlen(s), off = 0;
	char *line;
	ssize_t w;

	if (n + 1 > CONTROL_MSG_MAX)
		errx(2, "the request would be %zu bytes with its newline: hubd takes %d at most "
		     "(shorter arguments?)", n + 1, CONTROL_MSG_MAX);
	if ((line = malloc(n + 1)) == NULL)
		err(2, "malloc");
	memcpy(line, s, n);
	line[n] = '\n';
	json_object_put(req);
	while (off < n + 1) {
		if ((w = send(fd, line + off, n + 1 - off, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EPIPE && errno != ECONNRESET)
				err(2, "write to hubd");
			write_errno = errno;
			break;
		}
		off += (size_t)w;
	}
	free(line);
}

/* The connection ended without an answer. */
static void __attribute__((noreturn))
no_answer(const char *during)
{
	if (write_errno != 0)
		errx(2, "hubd closed the connection%s: %s", during, strerror(write_errno));
	errx(2, "hubd closed the connection%s", during);
}

/* Reads one answer line, of any length (up to ANSWER_MAX); NULL when hubd
 * closed the connection. */
static json_object *
read_answer(int fd)
{
	static char *buf;
	static size_t len, cap, scanned;	/* no newline in buf[0, scanned) */
	json_object *o;
	char *nl;
	ssize_t n;

	for (;;) {
		if (len > scanned && (nl = memchr(buf + scanned, '\n', len - scanned)) != NULL) {
			*nl = '\0';
			o = json_tokener_parse(buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
			scanned = 0;
			if (o == NULL)
				errx(2, "hubd sent something that is not JSON");
			return o;
		}
		scanned = len;
		if (len == cap) {
			if (cap >= ANSWER_MAX)
				errx(2, "an answer from hubd longer than %lu MiB", ANSWER_MAX >> 20);
			cap = cap ? cap * 2 : 65536;
			if ((buf = realloc(buf, cap)) == NULL)
				err(2, "an answer of %zu bytes", cap);
		}
		if ((n = read(fd, buf + len, cap - len)) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				errx(1, "no answer within %d s (-t)", timeout_s);
			if (write_errno == 0)
				write_errno = errno;
			no_answer("");
		}
		if (n == 0)
			return NULL;
		len += (size_t)n;
	}
}

json_object *
get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* o[key] as text, "" when it is not there. */
const char *
text(json_object *o, const char *key)
{
	const char *s = json_object_get_string(get(o, key));

	return s != NULL ? s : "";
}

/* o[key], which must be a list: an answer without it is not one hubctl
 * understands. */
json_object *
list(json_object *o, const char *key)
{
	json_object *v = get(o, key);

	if (!json_object_is_type(v, json_type_array))
		errx(2, "hubd's answer has no \"%s\" list", key);
	return v;
}

/* 1 for an answer with ok false, printed and freed; 0 otherwise. */
static int
failed(json_object *a)
{
	json_object *detail = get(a, "detail");

	if (json_object_get_boolean(get(a, "ok")))
		return 0;
	if (json_out)
		printf("%s\n", json_object_to_json_string_ext(a, JSON_OUT_FLAGS));
	else
		fprintf(stderr, "hubctl: %s%s%s\n",
			get(a, "error") != NULL ? text(a, "error") : "hubd said no, without a reason",
			detail ? ": " : "", detail ? json_object_get_string(detail) : "");
	json_object_put(a);
	return 1;
}

static void
send_cmd(int fd, const char *cmd)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	send_request(fd, req);
}

static json_object *
simple(int fd, const char *cmd)
{
	json_object *a;

	send_cmd(fd, cmd);
	if ((a = read_answer(fd)) == NULL)
		no_answer("");
	return a;
}

uint64_t
json_ns(json_object *v, uint64_t per)
{
	double d = json_object_get_double(v) * (double)per;

	return d > 0 && d < 1.8e19 ? (uint64_t)(d + 0.5) : 0;
}

int
print_json(json_object *a)
{
	printf("%s\n", json_object_to_json_string_ext(a, JSON_OUT_FLAGS));
	json_object_put(a);
	return 0;
}

/* Asks cmd; NULL when that is all there is to do: it failed (*rc 1,
 * printed) or the answer went out as JSON (*rc 0). */
static json_object *
ask(int fd, const char *cmd, int *rc)
{
	json_object *a = simple(fd, cmd);

	*rc = 0;
	if (failed(a)) {
		*rc = 1;
		return NULL;
	}
	if (json_out) {
		*rc = print_json(a);
		return NULL;
	}
	return a;
}

/* A death as people read it: when (local time, and how long ago), why. */
static void
death_text(char *buf, size_t len, json_object *d)
{
	uint64_t when = json_ns(get(d, "time"), HP_NS_PER_S), now = hp_clock_ns(CLOCK_REALTIME);
	time_t t = (time_t)(when / HP_NS_PER_S);
	char at[32] = "?", ago[24];
	struct tm tm;

	if (localtime_r(&t, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%s (%s ago): %s, status %d%s%s", at,
		 duration_text(ago, sizeof(ago), now > when ? now - when : 0), text(d, "reason"),
		 json_object_get_int(get(d, "status")), *text(d, "detail") ? ", " : "",
		 text(d, "detail"));
}

/* hubctl peers NAME: one guest, a "key: value" per line. */
static int
peer_detail(json_object *p)
{
	json_object *deaths = get(p, "deaths"), *args = get(p, "args");
	char buf[512];

	if (json_out)
		return print_json(json_object_get(p));
	printf("name: %s\n", text(p, "name"));
	printf("peer id: %d\n", json_object_get_int(get(p, "peer_id")));
	printf("state: %s\n", text(p, "state"));
	printf("pid: %d\n", json_object_get_int(get(p, "pid")));
	printf("epoch: %" PRId64 "\n", json_object_get_int64(get(p, "epoch")));
	printf("uptime: %s\n", duration_text(buf, sizeof(buf), json_ns(get(p, "uptime_s"), HP_NS_PER_S)));
	printf("restarts: %d\n", json_object_get_int(get(p, "restarts")));
	if (get(p, "heartbeat_age_ms") != NULL)
		printf("heartbeat age: %s\n", duration_text(buf, sizeof(buf),
			json_ns(get(p, "heartbeat_age_ms"), HP_NS_PER_MS)));
	if (get(p, "g2h_depth") != NULL) {
		printf("rings: %d waiting guest->host, %d host->guest\n",
		       json_object_get_int(get(p, "g2h_depth")),
		       json_object_get_int(get(p, "h2g_depth")));
		printf("slots: %d in use, %d free\n", json_object_get_int(get(p, "slots_used")),
		       json_object_get_int(get(p, "slots_free")));
		printf("channels: %d open\n", json_object_get_int(get(p, "channels_open")));
	}
	if (get(p, "pool_slots") != NULL) {
		char q[24];

		printf("shared pool: %" PRIu64 " slots, %s (quota %" PRIu64 " slots, %s)\n",
		       json_object_get_uint64(get(p, "pool_slots")),
		       size_iec(buf, sizeof(buf), json_object_get_uint64(get(p, "pool_bytes"))),
		       json_object_get_uint64(get(p, "pool_quota_slots")),
		       size_iec(q, sizeof(q), json_object_get_uint64(get(p, "pool_quota"))));
	}
	if (get(p, "exec") != NULL)
		printf("exec: %s\n", text(p, "exec"));
	if (json_object_is_type(args, json_type_array) && json_object_array_length(args) > 0) {
		printf("args:");
		for (size_t i = 0; i < json_object_array_length(args); i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(args, i)));
		printf("\n");
	}
	for (size_t i = 0; json_object_is_type(deaths, json_type_array) &&
	     i < json_object_array_length(deaths); i++) {
		death_text(buf, sizeof(buf), json_object_array_get_idx(deaths, i));
		printf("death %zu: %s\n", i + 1, buf);
	}
	if (!json_object_is_type(deaths, json_type_array) || json_object_array_length(deaths) == 0)
		printf("deaths: none\n");
	return 0;
}

/* hubctl peers [NAME]: every guest in a table, or one in detail. */
static int
cmd_peers(int fd, int argc, char **argv)
{
	json_object *a = NULL, *peers;
	int rc;

	if (argc == 0 && (a = ask(fd, "peers", &rc)) == NULL)
		return rc;
	if (argc == 1) {
		a = simple(fd, "peers");
		if (failed(a))
			return 1;
		peers = list(a, "peers");
		for (size_t i = 0; i < json_object_array_length(peers); i++) {
			json_object *p = json_object_array_get_idx(peers, i);

			if (strcmp(text(p, "name"), argv[0]) == 0) {
				rc = peer_detail(p);
				json_object_put(a);
				return rc;
			}
		}
		json_object_put(a);
		fprintf(stderr, "hubctl: no guest named '%s' (hubctl peers lists them)\n", argv[0]);
		return 1;
	}
	peers = list(a, "peers");
	printf("%-16s %4s %-9s %8s %5s %12s %4s %10s %9s %5s %5s  %s\n", "NAME", "PEER",
	       "STATE", "PID", "EPOCH", "UPTIME", "RST", "HB-AGE", "RINGS", "SLOTS", "CHANS",
	       "LAST DEATH");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *p = json_object_array_get_idx(peers, i);
		json_object *deaths = get(p, "deaths");
		char last[128] = "-", hb[24] = "-", up[24], rings[24];

		if (json_object_is_type(deaths, json_type_array) &&
		    json_object_array_length(deaths) > 0) {
			json_object *d = json_object_array_get_idx(deaths, 0);

			snprintf(last, sizeof(last), "%s %d%s%s", text(d, "reason"),
				 json_object_get_int(get(d, "status")),
				 *text(d, "detail") ? " " : "", text(d, "detail"));
		}
		if (get(p, "heartbeat_age_ms") != NULL)
			duration_text(hb, sizeof(hb), json_ns(get(p, "heartbeat_age_ms"), HP_NS_PER_MS));
		snprintf(rings, sizeof(rings), "%d/%d", json_object_get_int(get(p, "g2h_depth")),
			 json_object_get_int(get(p, "h2g_depth")));
		printf("%-16s %4d %-9s %8d %5" PRId64 " %12s %4d %10s %9s %5d %5d  %s\n",
		       text(p, "name"), json_object_get_int(get(p, "peer_id")), text(p, "state"),
		       json_object_get_int(get(p, "pid")),
		       json_object_get_int64(get(p, "epoch")),
		       duration_text(up, sizeof(up), json_ns(get(p, "uptime_s"), HP_NS_PER_S)),
		       json_object_get_int(get(p, "restarts")), hb, rings,
		       json_object_get_int(get(p, "slots_used")),
		       json_object_get_int(get(p, "channels_open")), last);
	}
	json_object_put(a);
	return 0;
}

static int
cmd_methods(int fd, int argc, char **argv)
{
	json_object *a, *ms;
	int rc;

	(void)argc;
	(void)argv;
	if ((a = ask(fd, "methods", &rc)) == NULL)
		return rc;
	ms = list(a, "methods");
	printf("%-24s %-28s %s\n", "METHOD", "SIGNATURE", "OWNER");
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);

		printf("%-24s %-28s %s\n", text(m, "name"), text(m, "signature"),
		       text(m, "owner"));
	}
	json_object_put(a);
	return 0;
}

static int
cmd_status(int fd, int argc, char **argv)
{
	json_object *a;
	int rc;

	(void)argc;
	(void)argv;
	if ((a = ask(fd, "status", &rc)) == NULL)
		return rc;
	json_object_object_foreach(a, key, val) {
		static const char *const sizes[] = { "segment_size", "segment_bytes",
			"segment_initial_bytes", "slot_size", "max_payload_size", NULL };
		char buf[32];
		int is_size = 0;

		if (strcmp(key, "ok") == 0)
			continue;
		for (size_t k = 0; sizes[k] != NULL; k++)
			is_size |= strcmp(key, sizes[k]) == 0;
		if (is_size)
			printf("%-22s %s\n", key, size_iec(buf, sizeof(buf), json_object_get_uint64(val)));
		else if (strcmp(key, "uptime_s") == 0)
			printf("%-22s %s\n", "uptime", duration_text(buf, sizeof(buf),
				json_ns(val, HP_NS_PER_S)));
		else if (strcmp(key, "heartbeat_interval_ns") == 0)
			printf("%-22s %s\n", "heartbeat_interval", duration_text(buf, sizeof(buf),
				json_object_get_uint64(val)));
		if (is_size || strcmp(key, "uptime_s") == 0 || strcmp(key, "heartbeat_interval_ns") == 0)
			continue;
		if (strcmp(key, "pool_classes") != 0) {
			printf("%-22s %s\n", key, json_object_get_string(val));
			continue;
		}
		/* slot size x slots per extent x extents, or none */
		printf("%-22s", key);
		for (size_t i = 0; json_object_is_type(val, json_type_array) &&
		     i < json_object_array_length(val); i++) {
			json_object *c = json_object_array_get_idx(val, i);
			char size[24];

			printf("%s%s x %" PRIu64 " x %" PRIu64, i > 0 ? ", " : " ",
			       size_iec(size, sizeof(size),
					 json_object_get_uint64(get(c, "slot_size"))),
			       json_object_get_uint64(get(c, "slots_per_extent")),
			       json_object_get_uint64(get(c, "extents")));
		}
		if (json_object_array_length(val) == 0)
			printf(" none");
		printf("\n");
	}
	json_object_put(a);
	return 0;
}

/* A value printed for people: strings as they are (ending in a newline),
 * the rest as JSON. */
static void
print_value(json_object *v)
{
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		size_t n = (size_t)json_object_get_string_len(v);	/* NULs too */

		fwrite(s, 1, n, stdout);
		if (n == 0 || s[n - 1] != '\n')
			putchar('\n');
	}
	else if (v != NULL)
		printf("%s\n", json_object_to_json_string_ext(v, JSON_OUT_FLAGS));
}

static int
cmd_call(int fd, int argc, char **argv)
{
	json_object *req = json_object_new_object(), *args = json_object_new_array(), *a;

	json_object_object_add(req, "cmd", json_object_new_string("call"));
	json_object_object_add(req, "method", json_object_new_string(argv[0]));
	for (int i = 1; i < argc; i++)
		json_object_array_add(args, json_object_new_string(argv[i]));
	json_object_object_add(req, "args", args);
	send_request(fd, req);
	while ((a = read_answer(fd)) != NULL) {
		if (!json_object_is_type(a, json_type_object))
			errx(2, "hubd sent an answer that is not a JSON object");
		json_object *item = get(a, "item");

		if (item != NULL) {
			if (json_out)
				print_json(a);
			else {
				print_value(item);
				json_object_put(a);
			}
			if (ferror(stdout))	/* nobody takes the items: stop */
				err(2, "stdout");
			continue;
		}
		if (failed(a))
			return 1;
		if (json_out)
			return print_json(a);
		if (!json_object_is_type(get(a, "result"), json_type_null))
			print_value(get(a, "result"));
		json_object_put(a);
		return 0;
	}
	no_answer(" during the call");	/* never a silent end: exit 2 */
}

static int
supervise(int fd, const char *cmd, const char *name)
{
	json_object *req = json_object_new_object(), *a;

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	json_object_object_add(req, "name", json_object_new_string(name));
	send_request(fd, req);
	if ((a = read_answer(fd)) == NULL)
		no_answer("");
	if (failed(a))
		return 1;
	if (json_out)
		return print_json(a);
	printf("%s: %s\n", name, text(a, "state"));
	json_object_put(a);
	return 0;
}

static int
cmd_restart(int fd, int argc, char **argv)
{
	(void)argc;
	return supervise(fd, "restart", argv[0]);
}

static int
cmd_stop(int fd, int argc, char **argv)
{
	(void)argc;
	return supervise(fd, "stop", argv[0]);
}

static int
cmd_start(int fd, int argc, char **argv)
{
	(void)argc;
	return supervise(fd, "start", argv[0]);
}

/* What reload did and refused, then the verdict. A refusal (permission)
 * has no messages: only the error. */
static int
cmd_reload(int fd, int argc, char **argv)
{
	json_object *a = simple(fd, "reload"), *msgs;
	int ok = json_object_get_boolean(get(a, "ok"));

	(void)argc;
	(void)argv;
	msgs = get(a, "messages");
	if (json_out) {
		print_json(a);
		return !ok;
	}
	for (size_t i = 0; json_object_is_type(msgs, json_type_array) &&
	     i < json_object_array_length(msgs); i++)
		printf("%s\n", json_object_get_string(json_object_array_get_idx(msgs, i)));
	if (failed(a))
		return 1;
	json_object_put(a);
	return 0;
}

uint64_t
u64(json_object *o, const char *key)
{
	return json_object_get_uint64(get(o, key));
}

/* A view's question: hubd closes a connection idle longer than its
 * client_timeout, so a view that waits longer connects again. */
json_object *
ask_again(int *fd, const char *cmd)
{
	json_object *a;

	send_cmd(*fd, cmd);
	if ((a = read_answer(*fd)) == NULL) {
		close(*fd);
		write_errno = 0;
		*fd = connect_to(sock_path);
		a = simple(*fd, cmd);
	}
	if (failed(a))
		exit(1);
	return a;
}

/* One line of hubctl stats: counts as they are, bytes for people. */
static void
stats_row(const char *name, json_object *g, const char *const *cols)
{
	char size[24];

	printf("%-16s", name);
	for (size_t k = 0; k < 11; k++) {
		uint64_t v = json_object_get_uint64(get(g, cols[k]));

		if (strncmp(cols[k], "bytes_", 6) == 0)
			printf(" %12s", size_iec(size, sizeof(size), v));
		else
			printf(" %*" PRIu64, k < 4 ? 12 : 10, v);
	}
	printf("\n");
}

static int
cmd_stats(int fd, int argc, char **argv)
{
	json_object *a, *guests;
	int rc;
	static const char *const cols[] = { "calls_in", "calls_out", "bytes_in", "bytes_out",
			       "ring_full", "slot_exhausted", "credit_waits", "wakes",
			       "deaths", "restarts", "violations" };
	static const char *const heads[] = { "CALLS-IN", "CALLS-OUT", "BYTES-IN", "BYTES-OUT",
				"RING-FULL", "NO-SLOT", "NO-CREDIT", "WAKES", "DEATHS",
				"RESTARTS", "VIOLATIONS" };

	(void)argc;
	(void)argv;
	if (every.watch)
		return stats_watch(fd);
	if ((a = ask(fd, "stats", &rc)) == NULL)
		return rc;
	printf("%-16s", "GUEST");
	for (size_t k = 0; k < 11; k++)
		printf(" %*s", k < 4 ? 12 : 10, heads[k]);
	printf("\n");
	if (!json_object_is_type(guests = get(a, "guests"), json_type_object))
		errx(2, "hubd's answer has no \"guests\"");
	json_object_object_foreach(guests, name, g)
		stats_row(name, g, cols);
	stats_row("(total)", get(a, "total"), cols);
	if (get(a, "pool") != NULL) {
		json_object *p = get(a, "pool");

		printf("shared pool: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		       " waits, %" PRIu64 " errors, %" PRIu64 " reclaimed\n",
		       json_object_get_uint64(get(p, "allocations")),
		       json_object_get_uint64(get(p, "frees")),
		       json_object_get_uint64(get(p, "waits")),
		       json_object_get_uint64(get(p, "errors")),
		       json_object_get_uint64(get(p, "reclaimed")));
	}
	if (get(a, "relays") != NULL) {
		char size[24];
		json_object *r = get(a, "relays");

		printf("streams between guests: %" PRIu64 " open, %s held\n",
		       json_object_get_uint64(get(r, "open")),
		       size_iec(size, sizeof(size),
				 json_object_get_uint64(get(r, "queued_bytes"))));
	}
	if (get(a, "loop") != NULL) {
		json_object *l = get(a, "loop");

		printf("hubd's loop: %" PRIu64 " iterations, %" PRIu64 " ring polls, %" PRIu64
		       " sleeps\n", json_object_get_uint64(get(l, "iterations")),
		       json_object_get_uint64(get(l, "polls")),
		       json_object_get_uint64(get(l, "sleeps")));
	}
	json_object_put(a);
	return 0;
}

/* A count of the pool's table: as it is, or in K and M when too wide. */
static const char *
count_text(char *buf, size_t len, uint64_t v)
{
	if (v < 1000000)
		snprintf(buf, len, "%" PRIu64, v);
	else
		size_text(buf, len, v);
	return buf;
}

/* hubctl pool [--validate] [--json]: the shared pool per size class, and
 * with --validate its check on the live hub (exit 1 when broken). */
static int
cmd_pool(int fd, int argc, char **argv)
{
	static const char *const cols[] = { "slots", "free", "in_use", "high_water", "allocs",
		"frees", "conflicts", "fallbacks", "waits", "reclaimed", "rebuilds", "errors" };
	static const char *const heads[] = { "SLOTS", "FREE", "IN-USE", "HIGH", "ALLOCS",
		"FREES", "CONFL", "FALLBK", "WAITS", "RECLAIM", "REBUILD", "ERRORS" };
	json_object *req = json_object_new_object(), *a, *classes, *problems;
	char size[24], size2[24], size3[24], num[24];
	int validate = 0, valid;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--validate") == 0)
			validate = 1;
		else if (strcmp(argv[i], "--json") == 0)
			json_out = 1;
		else {
			json_object_put(req);
			fprintf(stderr, "usage: hubctl pool [--validate] [--json]\n");
			return 2;
		}
	}
	json_object_object_add(req, "cmd", json_object_new_string("pool"));
	if (validate)
		json_object_object_add(req, "validate", json_object_new_boolean(1));
	send_request(fd, req);
	if ((a = read_answer(fd)) == NULL)
		no_answer("");
	if (failed(a))
		return 1;
	/* without --validate there is no verdict: nothing is wrong */
	valid = !validate || json_object_get_boolean(get(a, "valid"));
	if (json_out) {
		print_json(a);
		return !valid;
	}
	classes = list(a, "classes");
	printf("%-5s %9s %7s %7s", "CLASS", "SIZE", "PER-EXT", "EXTENTS");
	for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		printf(" %*s", (int)(strlen(heads[k]) > 6 ? strlen(heads[k]) : 6), heads[k]);
	printf("\n");
	for (size_t i = 0; i < json_object_array_length(classes); i++) {
		json_object *c = json_object_array_get_idx(classes, i);
		char ext[24];

		snprintf(ext, sizeof(ext), "%" PRIu64 "/%" PRIu64, u64(c, "extents"),
			 u64(a, "max_extents"));
		printf("%5" PRIu64 " %9s %7" PRIu64 " %7s", u64(c, "class"),
		       size_iec(size, sizeof(size), u64(c, "slot_size")),
		       u64(c, "slots_per_extent"), ext);
		for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			printf(" %*s", (int)(strlen(heads[k]) > 6 ? strlen(heads[k]) : 6),
			       count_text(num, sizeof(num), u64(c, cols[k])));
		printf("\n");
	}
	/* what the errors were, where there were any */
	for (size_t i = 0; i < json_object_array_length(classes); i++) {
		json_object *c = json_object_array_get_idx(classes, i);

		if (u64(c, "errors") != 0)
			printf("class %" PRIu64 " errors: %" PRIu64 " double frees, %" PRIu64
			       " stale frees, %" PRIu64 " bad links, %" PRIu64 " by guests\n",
			       u64(c, "class"), u64(c, "double_frees"), u64(c, "stale_frees"),
			       u64(c, "bad_links"), u64(c, "errors") - u64(c, "double_frees") -
			       u64(c, "stale_frees") - u64(c, "bad_links"));
	}
	printf("segment %s (%s at start), pool %s (%s at start), %" PRIu64
	       " slots held too long\n",
	       size_iec(size, sizeof(size), u64(a, "segment_bytes")),
	       size_iec(size2, sizeof(size2), u64(a, "segment_initial_bytes")),
	       size_iec(size3, sizeof(size3), u64(a, "pool_bytes")),
	       size_iec(num, sizeof(num), u64(a, "pool_initial_bytes")), u64(a, "stuck"));
	if (validate) {
		problems = list(a, "problems");
		for (size_t i = 0; i < json_object_array_length(problems); i++)
			printf("PROBLEM: %s\n",
			       json_object_get_string(json_object_array_get_idx(problems, i)));
		printf("validate: %s\n", valid ? "valid" : "broken");
	}
	json_object_put(a);
	return !valid;
}

static const struct command commands[] = {
	{ "status", "status", 0, 0, cmd_status,
	  "hub parameters, uptime, segment size, host pool, pool classes", NULL },
	{ "stats", "stats [-w] [-d SECONDS] [-n COUNT]", 0, 0, cmd_stats,
	  "counters per guest and in all; -w: the hub's rates, a line per interval", "wdn" },
	{ "top", "top [-d SECONDS] [-n FRAMES]", 0, 0, cmd_top,
	  "a live view of the guests: state, calls/s, bytes/s, rings, slots, waits", "dn" },
	{ "peers", "peers [NAME]", 0, 1, cmd_peers,
	  "guests: state, pid, epoch, uptime, deaths; NAME: one in detail", NULL },
	{ "methods", "methods", 0, 0, cmd_methods, "registered methods, signatures, owners",
	  NULL },
	{ "call", "call METHOD [ARG...]", 1, 9, cmd_call,
	  "call a method; arguments are encoded by its signature", NULL },
	{ "restart", "restart NAME", 1, 1, cmd_restart,
	  "restart a guest now (a failed one too: its deaths are forgiven)", NULL },
	{ "stop", "stop NAME", 1, 1, cmd_stop, "stop a guest and keep it down", NULL },
	{ "start", "start NAME", 1, 1, cmd_start, "start a stopped or failed guest", NULL },
	{ "pool", "pool [--validate] [--json]", 0, 2, cmd_pool,
	  "the shared pool per size class; --validate checks it (exit 1: broken)", NULL },
	{ "reload", "reload", 0, 0, cmd_reload,
	  "re-read the config: new guests start, dropped stop, changed restart", NULL },
	{ "inspect", "inspect SEGMENT", 1, 1, cmd_inspect,
	  "read a segment file, no daemon needed, and check its invariants", NULL },
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
view_options(const struct command *c, int *argc, char **argv)
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
		every.watch = 1;
		if (a[1] == 'w')
			continue;
		val = a[2] != '\0' ? a + 2 : i + 1 < *argc ? argv[++i] : NULL;
		if (val == NULL) {
			fprintf(stderr, "hubctl: %s: -%c takes a value\n", c->name, a[1]);
			return -1;
		}
		if (a[1] == 'd' && seconds_arg(val, &every.interval) != 0) {
			fprintf(stderr, "hubctl: %s: -d takes seconds " SECONDS_RANGE
				" (2, 0.5, .25), not '%s'\n", c->name, val);
			return -1;
		}
		if (a[1] == 'n' && count_arg(val, &every.count) != 0) {
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
static const char *
details(const char *name)
{
	if (strcmp(name, "call") == 0)
		return "Arguments are given as text and encoded by the method's registered\n"
		       "signature (see 'hubctl methods'): str and bytes as they are, u64 and\n"
		       "i64 in decimal, bool as true or false. A chan<T> argument is not given:\n"
		       "hubd opens the channel and hubctl prints each item as it arrives,\n"
		       "then the result. Strings print as they are, other values as JSON.\n"
		       "A method's error is printed on stderr and exits 1.\n";
	if (strcmp(name, "inspect") == 0)
		return "Maps SEGMENT, a regular file, read-only (it works with hubd hung or\n"
		       "gone; anything else, a FIFO say, is refused at once) and prints the\n"
		       "header, the host pool and every peer entry that was ever used: state,\n"
		       "epoch, ring heads and tails, free slots, open channels, heartbeat age.\n"
		       "It checks that indices are in range, states are states, no bitmap bit\n"
		       "is set past the last slot, and Empty entries were fully recovered;\n"
		       "exit 1 lists what is broken. The shared pool: its extents among the\n"
		       "areas, its figures per class, and what validate finds (as in 'hubctl\n"
		       "pool --validate', with any peer id counting as a live owner: who is\n"
		       "alive is not known offline), each as a \"pool: \" problem.\n";
	if (strcmp(name, "reload") == 0)
		return "Re-reads hubd's config file (as SIGHUP does). Guests are matched by\n"
		       "name: new ones start, dropped ones stop, changed ones restart. The\n"
		       "segment parameters and paths cannot change while hubd runs: a change\n"
		       "there is reported and the running values are kept. A broken file\n"
		       "changes nothing and exits 1 with what is wrong.\n";
	if (strcmp(name, "pool") == 0)
		return "Per size class of the shared pool: slot SIZE, slots PER-EXTent,\n"
		       "EXTENTS now/at most, SLOTS, FREE, IN-USE and HIGH (the most in use at\n"
		       "once), then counters since hubd started: ALLOCS, FREES, CONFL (CAS\n"
		       "conflicts), FALLBK (served by a larger class), WAITS (every class that\n"
		       "fits exhausted), RECLAIM (slots taken back from guests that are gone),\n"
		       "REBUILD (free lists rebuilt), ERRORS (double and stale frees, bad\n"
		       "links: detailed below the table when any). Counts from a million on\n"
		       "are rounded (1.2M; exact with -j). Then the segment's and the pool's\n"
		       "bytes now and at start (extents are appended to the file) and the\n"
		       "slots a live guest has held longer than [pool] stuck_after.\n"
		       "--validate checks that every slot is on exactly one free list or held\n"
		       "by one live owner, no list has a cycle or a link out of range, and no\n"
		       "held slot has generation 0; a problem counts only if two passes both\n"
		       "see it (a slot in transit can look odd once). Each is printed as\n"
		       "PROBLEM: and exits 1; a class found broken is rebuilt by the sweeper.\n"
		       "A hub without a shared pool ([pool] classes = none) exits 1.\n";
	if (strcmp(name, "peers") == 0)
		return "Columns: RST restarts, HB-AGE time since the guest's last heartbeat,\n"
		       "RINGS descriptors waiting guest->host/host->guest, SLOTS slots of its\n"
		       "pool in use, CHANS channels open, LAST DEATH reason, status, detail.\n"
		       "With NAME, that guest alone, a \"key: value\" per line: its peer id,\n"
		       "state, pid, epoch, uptime, restarts, heartbeat age, rings, slots,\n"
		       "channels, exec and args, and its recent deaths (when, reason, exit\n"
		       "status or signal, detail). An unknown NAME exits 1. -j: its object.\n";
	if (strcmp(name, "top") == 0)
		return "A table redrawn every SECONDS (-d, default 1; plain decimal seconds\n"
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
		       "rates as numbers (null in the first). hubd going away: exit 2.\n";
	if (strcmp(name, "stats") == 0)
		return "Counters since hubd started, per guest and in all: CALLS-IN, CALLS-OUT,\n"
		       "BYTES-IN, BYTES-OUT (rounded; exact with -j), RING-FULL, NO-SLOT,\n"
		       "NO-CREDIT (waits), WAKES, DEATHS, RESTARTS, VIOLATIONS; the shared\n"
		       "pool's and the streams between guests' totals.\n"
		       "-w: a line per interval (-d SECONDS, default 1; plain decimal seconds\n"
		       "from 0.01 to 86400, as 2, 0.5 or .25) with the hub's rates:\n"
		       "calls in and out, bytes in and out per second, waits and wakes per\n"
		       "second, and the deaths and restarts in that interval; the header again\n"
		       "every 20 lines on a terminal; -n COUNT lines, then exit 0. -d and -n\n"
		       "imply -w. -j: a JSON object per line.\n";
	return "";
}

static int
help(const char *name)
{
	for (size_t i = 0; name != NULL && i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name) != 0)
			continue;
		printf("usage: hubctl %s\n%s\n%s", commands[i].usage, commands[i].help,
		       details(name));
		return 0;
	}
	usage_to(stdout);
	return name == NULL ? 0 : 2;
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
	const char *sock = getenv("HUBCTL_SOCKET");
	int ch, fd, rc, nargs;

	/* a connection hubd closed is an error to report, not a way to die */
	signal(SIGPIPE, SIG_IGN);

	if (sock == NULL)
		sock = DEFAULT_SOCKET;
	while ((ch = getopt_long(argc, argv, "+js:t:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j': json_out = 1; break;
		case 's': sock = optarg; break;
		case 't':
			if ((timeout_s = atoi(optarg)) <= 0)
				errx(2, "-t takes a number of seconds");
			break;
		case 'h': return help(NULL);
		default: usage();
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
		if ((c->opts != NULL && view_options(c, &nargs, argv + 1) != 0) ||
		    nargs < c->min_args || nargs > c->max_args) {
			fprintf(stderr, "usage: hubctl %s\n", c->usage);
			return 2;
		}
		sock_path = sock;
		fd = c->run == cmd_inspect ? -1 : connect_to(sock);
		rc = c->run(fd, nargs, argv + 1);
		if (fflush(stdout) != 0 || ferror(stdout))
			err(2, "stdout");
		return rc;
	}
	fprintf(stderr, "hubctl: unknown command '%s'\n", argv[0]);
	usage();
}
