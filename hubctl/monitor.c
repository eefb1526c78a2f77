/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl monitor [GLOB]: each call of a method GLOB matches, printed as
 * hubd reports it when it ends (a line for people, every word of a
 * guest's escaped; -j the JSON lines as they come), each written out at
 * once, into a pipe too. Ctrl-C, SIGTERM or a reader that closed the
 * pipe end it with exit 0; hubd going away with exit 2. */
#include <err.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <json-c/json.h>

#include "daemon/escape.h"
#include "daemon/jsonout.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"

static volatile sig_atomic_t stopped;
static int monitor_fd = -1;

/* Ends the read under way: hubd's side of it looks closed (shutdown is
 * async-signal-safe; client_read retries reads a signal interrupts). */
static void
on_stop(int sig)
{
	(void)sig;
	stopped = 1;
	shutdown(monitor_fd, SHUT_RD);
}

/* v as JSON text for people: its control characters escaped. */
static void
put_json(json_object *v)
{
	const char *s = json_object_to_json_string_ext(v, JSON_OUT_FLAGS);
	size_t n = strlen(s);
	char *buf;

	if ((buf = malloc(4 * n + 1)) == NULL)
		err(2, NULL);
	fputs(escape_text(buf, 4 * n + 1, s, n, 0), stdout);
	free(buf);
}

/* One call: "12:00:01.234 a > b b.echo("x") = "x" 52 us lane trace ID", or
 * with "! KIND: ERROR" for an error. */
static void
put_call(json_object *o)
{
	json_object *args = js_get(o, "args"), *v;
	struct timespec ts;
	struct tm tm;
	char when[32], took[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("%s.%03ld %s > %s %s(", when, ts.tv_nsec / 1000000, js_text(o, "caller"),
	       js_text(o, "callee"), js_text(o, "method"));
	if (json_object_is_type(args, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(args); i++) {
			if (i > 0)
				fputs(", ", stdout);
			put_json(json_object_array_get_idx(args, i));
		}
	} else {
		fputs(js_shown(args), stdout);	/* why they are not shown */
	}
	fputs(")", stdout);
	if ((v = js_get(o, "error")) != NULL) {
		printf(" ! %s%s%s", js_text(o, "kind"), js_get(o, "kind") ? ": " : "",
		       js_shown(v));
	} else {
		fputs(" = ", stdout);
		put_json(js_get(o, "result"));
	}
	printf(" %s%s", duration_text(took, sizeof(took), js_u64(o, "us") * 1000),
	       json_object_get_boolean(js_get(o, "lane")) ? " lane" : "");
	if (js_get(o, "trace") != NULL)
		printf(" trace %s", js_text(o, "trace"));
	putchar('\n');
}

int
hubctl_monitor(struct ctl *ctl, int argc, char **argv)
{
	json_object *req = json_object_new_object(), *a;
	struct sigaction sa = { .sa_handler = on_stop };	/* no SA_RESTART */
	struct timeval forever = { 0, 0 };

	json_object_object_add(req, "cmd", json_object_new_string("monitor"));
	if (argc > 0)
		json_object_object_add(req, "glob", json_object_new_string(argv[0]));
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	if (client_failed(ctl, a))
		return 1;
	json_object_put(a);
	/* -t was for that answer: the calls come when they come */
	setsockopt(ctl->fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof(forever));
	monitor_fd = ctl->fd;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stopped && (a = client_read(ctl)) != NULL) {
		if (ctl->json)
			printf("%s\n", json_object_to_json_string_ext(a, JSON_OUT_FLAGS));
		else if (js_get(a, "dropped") != NULL)
			printf("(%llu calls not shown: hubctl did not read fast enough)\n",
			       (unsigned long long)js_u64(a, "dropped"));
		else
			put_call(a);
		json_object_put(a);
		out_flush();
	}
	if (stopped)
		return 0;
	errx(2, "hubd closed the connection");
}
