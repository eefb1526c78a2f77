/* hubctl: talks to a running hubd over its control socket. */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#define DEFAULT_SOCKET	"/run/hub/hubd.sock"
#define LINE_MAX_BYTES	(8u << 20)

static int json_out;

struct command {
	const char	*name;
	const char	*usage;
	int		min_args;
	int		max_args;
	int		(*run)(int fd, int argc, char **argv);
	const char	*help;
};

static void __attribute__((noreturn)) usage(void);

static int
connect_to(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		errx(2, "socket path too long: %s", path);
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		err(2, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
		err(2, "cannot reach hubd at %s (is it running? -s sets the socket)", path);
	return fd;
}

static void
send_request(int fd, json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(s);

	if (write(fd, s, n) != (ssize_t)n || write(fd, "\n", 1) != 1)
		err(2, "write to hubd");
	json_object_put(req);
}

/* Reads one answer line; NULL when hubd closed the connection. */
static json_object *
read_answer(int fd)
{
	static char *buf;
	static size_t len, cap;
	json_object *o;
	char *nl;
	ssize_t n;

	for (;;) {
		if (len > 0 && (nl = memchr(buf, '\n', len)) != NULL) {
			*nl = '\0';
			o = json_tokener_parse(buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
			if (o == NULL)
				errx(2, "hubd sent something that is not JSON");
			return o;
		}
		if (len == cap) {
			if (cap >= LINE_MAX_BYTES)
				errx(2, "answer from hubd too long");
			cap = cap ? cap * 2 : 65536;
			if ((buf = realloc(buf, cap)) == NULL)
				err(2, "realloc");
		}
		if ((n = read(fd, buf + len, cap - len)) < 0) {
			if (errno == EINTR)
				continue;
			err(2, "read from hubd");
		}
		if (n == 0)
			return NULL;
		len += (size_t)n;
	}
}

static json_object *
get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
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
		printf("%s\n", json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	else
		fprintf(stderr, "hubctl: %s%s%s\n", json_object_get_string(get(a, "error")),
			detail ? ": " : "", detail ? json_object_get_string(detail) : "");
	json_object_put(a);
	return 1;
}

static json_object *
simple(int fd, const char *cmd)
{
	json_object *req = json_object_new_object(), *a;

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	send_request(fd, req);
	if ((a = read_answer(fd)) == NULL)
		errx(2, "hubd closed the connection");
	return a;
}

static int
print_json(json_object *a)
{
	printf("%s\n", json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	json_object_put(a);
	return 0;
}

static int
cmd_peers(int fd, int argc, char **argv)
{
	json_object *a = simple(fd, "peers"), *peers;

	(void)argc;
	(void)argv;
	if (failed(a))
		return 1;
	if (json_out)
		return print_json(a);
	peers = get(a, "peers");
	printf("%-16s %4s %-9s %8s %6s %10s %8s  %s\n", "NAME", "PEER", "STATE", "PID",
	       "EPOCH", "UPTIME", "RESTARTS", "LAST DEATH");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *p = json_object_array_get_idx(peers, i);
		json_object *deaths = get(p, "deaths");
		char last[128] = "-";

		if (json_object_array_length(deaths) > 0) {
			json_object *d = json_object_array_get_idx(deaths, 0);

			snprintf(last, sizeof(last), "%s %d%s%s",
				 json_object_get_string(get(d, "reason")),
				 json_object_get_int(get(d, "status")),
				 *json_object_get_string(get(d, "detail")) ? " " : "",
				 json_object_get_string(get(d, "detail")));
		}
		printf("%-16s %4d %-9s %8d %6" PRId64 " %9.1fs %8d  %s\n",
		       json_object_get_string(get(p, "name")),
		       json_object_get_int(get(p, "peer_id")),
		       json_object_get_string(get(p, "state")),
		       json_object_get_int(get(p, "pid")),
		       json_object_get_int64(get(p, "epoch")),
		       json_object_get_double(get(p, "uptime_s")),
		       json_object_get_int(get(p, "restarts")), last);
	}
	json_object_put(a);
	return 0;
}

static int
cmd_methods(int fd, int argc, char **argv)
{
	json_object *a = simple(fd, "methods"), *ms;

	(void)argc;
	(void)argv;
	if (failed(a))
		return 1;
	if (json_out)
		return print_json(a);
	ms = get(a, "methods");
	printf("%-24s %-28s %s\n", "METHOD", "SIGNATURE", "OWNER");
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);

		printf("%-24s %-28s %s\n", json_object_get_string(get(m, "name")),
		       json_object_get_string(get(m, "signature")),
		       json_object_get_string(get(m, "owner")));
	}
	json_object_put(a);
	return 0;
}

static int
cmd_status(int fd, int argc, char **argv)
{
	json_object *a = simple(fd, "status");

	(void)argc;
	(void)argv;
	if (failed(a))
		return 1;
	if (json_out)
		return print_json(a);
	json_object_object_foreach(a, key, val) {
		if (strcmp(key, "ok") != 0)
			printf("%-22s %s\n", key, json_object_get_string(val));
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
		size_t n = strlen(s);

		printf("%s%s", s, n > 0 && s[n - 1] == '\n' ? "" : "\n");
	}
	else if (v != NULL)
		printf("%s\n", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
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
		json_object *item = get(a, "item");

		if (item != NULL) {
			if (json_out)
				print_json(a);
			else {
				print_value(item);
				json_object_put(a);
			}
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
	errx(2, "hubd closed the connection during the call");
}

static int
supervise(int fd, const char *cmd, const char *name)
{
	json_object *req = json_object_new_object(), *a;

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	json_object_object_add(req, "name", json_object_new_string(name));
	send_request(fd, req);
	if ((a = read_answer(fd)) == NULL)
		errx(2, "hubd closed the connection");
	if (failed(a))
		return 1;
	if (json_out)
		return print_json(a);
	printf("%s: %s\n", name, json_object_get_string(get(a, "state")));
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

static const struct command commands[] = {
	{ "status", "status", 0, 0, cmd_status, "hub parameters and uptime" },
	{ "peers", "peers", 0, 0, cmd_peers, "guests: state, pid, epoch, uptime, deaths" },
	{ "methods", "methods", 0, 0, cmd_methods, "registered methods, signatures, owners" },
	{ "call", "call METHOD [ARG...]", 1, 9, cmd_call,
	  "call a method; arguments are encoded by its signature" },
	{ "restart", "restart NAME", 1, 1, cmd_restart,
	  "restart a guest now (a failed one too: its deaths are forgiven)" },
	{ "stop", "stop NAME", 1, 1, cmd_stop, "stop a guest and keep it down" },
	{ "start", "start NAME", 1, 1, cmd_start, "start a stopped or failed guest" },
};

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: hubctl [-j] [-s socket] command [arg...]\n"
		"  -j, --json       answers as JSON, one object per line\n"
		"  -s, --socket S   hubd's control socket (default " DEFAULT_SOCKET ")\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(stderr, "  %-24s %s\n", commands[i].usage, commands[i].help);
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = getenv("HUBCTL_SOCKET");
	int ch, fd;

	if (sock == NULL)
		sock = DEFAULT_SOCKET;
	while ((ch = getopt_long(argc, argv, "+js:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j': json_out = 1; break;
		case 's': sock = optarg; break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];

		if (strcmp(argv[0], c->name) != 0)
			continue;
		if (argc - 1 < c->min_args || argc - 1 > c->max_args) {
			fprintf(stderr, "usage: hubctl %s\n", c->usage);
			return 2;
		}
		fd = connect_to(sock);
		return c->run(fd, argc - 1, argv + 1);
	}
	fprintf(stderr, "hubctl: unknown command '%s'\n", argv[0]);
	usage();
}
