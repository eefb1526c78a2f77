/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's topic commands: listen (a topic's events read in place from
 * the memory hubd hands over, proto/topic.h, each printed as it
 * arrives), emit (an event published as the operator) and topics (every
 * topic, its publisher and its subscribers). Part of hubctl (hubctl.h).
 * Just over 600 lines: listen's reading and printing are most of it, and
 * share the event's decoding with topics' retained values. */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/escape.h"
#include "daemon/jsonout.h"
#include "daemon/pcjson.h"
#include "hubctl/hubctl.h"
#include "proto/fdpass.h"
#include "proto/layout.h"	/* HP_CACHE_LINE, which topic.h needs */
#include "proto/postcard.h"
#include "proto/sig.h"
#include "proto/topic.h"

/* The listen answer is one short line; what hubd says after it too. A
 * peer that is not hubd cannot make hubctl hold more. */
#define LINE_MAX_BYTES	65536
/* Events taken in a row before hubctl looks at hubd's lines again. */
#define EVENTS_BATCH	256
/* How long a listen whose bell hung up sleeps between looks (ms). */
#define NO_BELL_MS	200
/* A retained value in the topics table, at most (characters). */
#define RETAINED_SHOWN	40

/* hubd's connection while listening: the bytes of its lines not taken
 * yet (the first came with the fds). */
struct lines {
	char	buf[LINE_MAX_BYTES + 1];
	size_t	len;
};

/* An event's bytes as JSON by its topic's signature: its one value, an
 * array of its values, or null for none (*out). 0, or -1 when they are
 * not exactly that. */
static int
event_json(const struct hp_sig *sig, const uint8_t *ev, size_t len, json_object **out)
{
	json_object *list;

	*out = NULL;
	if (pcjson_args(sig, ev, len, &list) != 0)
		return -1;
	if (sig->nargs != 1) {
		*out = list;
		return 0;
	}
	*out = json_object_get(json_object_array_get_idx(list, 0));
	json_object_put(list);
	return 0;
}

/* One value for people: a string as it is but for its control
 * characters (newlines too: an event is one line), the rest as JSON. */
static void
put_value(json_object *v)
{
	if (json_object_is_type(v, json_type_string)) {
		size_t n = (size_t)json_object_get_string_len(v);	/* NULs too */
		char *buf = malloc(4 * n + 1);

		if (buf == NULL)
			err(2, NULL);
		escape_text(buf, 4 * n + 1, json_object_get_string(v), n, 0);
		fputs(buf, stdout);
		free(buf);
	}
	else
		fputs(json_object_to_json_string_ext(v, JSON_OUT_FLAGS), stdout);
}

/* -- hubctl listen --------------------------------------------------------- */

static volatile sig_atomic_t listen_stop;

static void
on_stop(int sig)
{
	(void)sig;
	listen_stop = 1;
}

/* One listen: what it reads, how it prints, what hubd said. */
struct listen {
	struct ctl		*ctl;
	const char		*topic;
	struct hp_topic_reader	r;
	struct hp_sig		sig;
	int			sig_ok;		/* sig holds the topic's signature */
	char			sig_text[HP_SIG_MAX_LEN + 1];
	uint8_t			*buf;		/* event_max bytes */
	size_t			cap;
	struct lines		in;
	long			left;		/* -n: events to print; 0 no end */
};

/* The signature hubd said the topic has now (NULL or "": none yet). */
static void
listen_set_sig(struct listen *l, json_object *v)
{
	const char *text = json_object_get_string(v), *why = NULL;

	l->sig_ok = 0;
	l->sig_text[0] = '\0';
	if (!json_object_is_type(v, json_type_string) || *text == '\0')
		return;
	snprintf(l->sig_text, sizeof(l->sig_text), "%s", js_shown(v));
	if (hp_topic_sig_parse(text, &l->sig, &why) == 0)
		l->sig_ok = 1;
	else
		fprintf(stderr, "hubctl: listen: %s: hubd gave a signature hubctl cannot read "
			"('%s': %s): its events are shown as bad\n", l->topic, l->sig_text, why);
}

/* A line hubd sent after its answer: the topic's signature changed, or
 * the listening is over (exits). */
static void
listen_line(struct listen *l, char *line)
{
	json_object *o = json_tokener_parse(line);
	const char *ev;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		errx(2, "listen: hubd sent something that is not a JSON object");
	ev = js_text(o, "event");
	if (strcmp(ev, "signature") == 0)
		listen_set_sig(l, js_get(o, "signature"));
	else if (strcmp(ev, "end") == 0) {
		fprintf(stderr, "hubctl: listen: %s: hubd ended it: %s\n", l->topic,
			js_get(o, "reason") != NULL ? js_text(o, "reason") : "no reason given");
		exit(1);
	}
	/* anything else is news from a later hubd: passed over */
	json_object_put(o);
}

/* Takes hubd's lines that came (without waiting): those whole in l->in,
 * then whatever the socket has. Exits 2 when hubd hung up. */
static void
listen_drain(struct listen *l)
{
	char *nl;
	ssize_t n;

	for (;;) {
		while ((nl = memchr(l->in.buf, '\n', l->in.len)) != NULL) {
			size_t used = (size_t)(nl + 1 - l->in.buf);

			*nl = '\0';
			listen_line(l, l->in.buf);
			l->in.len -= used;
			memmove(l->in.buf, l->in.buf + used, l->in.len);
		}
		if (l->in.len == LINE_MAX_BYTES)
			errx(2, "listen: hubd sent a line longer than %d bytes", LINE_MAX_BYTES);
		n = recv(l->ctl->fd, l->in.buf + l->in.len, LINE_MAX_BYTES - l->in.len,
			 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n < 0)
			errx(2, "listen: %s: hubd's connection: %s", l->topic, strerror(errno));
		if (n == 0)
			errx(2, "listen: %s: hubd closed the connection (it stopped, or was "
			     "restarted)", l->topic);
		l->in.len += (size_t)n;
	}
}

/* An event that is not one: the publisher spoiled it, or it is not of
 * the signature. Reported, never fatal. */
static void
listen_bad(struct listen *l, const struct hp_topic_event *ev, const char *why)
{
	if (l->ctl->json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "seq", json_object_new_uint64(ev->seq));
		json_object_object_add(o, "lost", json_object_new_uint64(ev->lost));
		json_object_object_add(o, "bad", json_object_new_string(why));
		js_print(o);
	}
	else {
		fflush(stdout);
		if (ev->lost > 0)
			fprintf(stderr, "(lost %" PRIu64 ")\n", ev->lost);
		fprintf(stderr, "hubctl: listen: %s: event %" PRIu64 " %s\n", l->topic, ev->seq,
			why);
	}
	out_flush();
}

/* One event taken: printed, -j or for people. */
static void
listen_event(struct listen *l, const struct hp_topic_event *ev)
{
	json_object *v = NULL;
	char why[HP_SIG_MAX_LEN + 64];

	if (!l->sig_ok || event_json(&l->sig, l->buf, ev->len, &v) != 0) {
		/* a signature that came meanwhile may be the one it is of */
		listen_drain(l);
		if (!l->sig_ok || event_json(&l->sig, l->buf, ev->len, &v) != 0) {
			if (l->sig_ok)
				snprintf(why, sizeof(why), "is not of the signature %s (%zu bytes)",
					 l->sig_text, ev->len);
			else
				snprintf(why, sizeof(why), "came before any signature (%zu bytes)",
					 ev->len);
			listen_bad(l, ev, why);
			return;
		}
	}
	if (l->ctl->json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "seq", json_object_new_uint64(ev->seq));
		json_object_object_add(o, "lost", json_object_new_uint64(ev->lost));
		json_object_object_add(o, "value", v);
		js_print(o);
	}
	else {
		/* losses on stderr: each line of stdout is an event */
		if (ev->lost > 0) {
			fflush(stdout);
			fprintf(stderr, "(lost %" PRIu64 ")\n", ev->lost);
		}
		if (json_object_is_type(v, json_type_array) && l->sig.nargs != 1) {
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				if (i > 0)
					putchar(' ');
				put_value(json_object_array_get_idx(v, i));
			}
		}
		else
			put_value(v);
		putchar('\n');
		json_object_put(v);
	}
	out_flush();
}

/* The events there now, up to a batch; 1 once -n's count is printed. */
static int
listen_take(struct listen *l)
{
	struct hp_topic_event ev;
	int rc;

	for (int i = 0; i < EVENTS_BATCH && !listen_stop; i++) {
		memset(&ev, 0, sizeof(ev));
		rc = hp_topic_next(&l->r, l->buf, l->cap, &ev);
		if (rc == 0)
			break;
		if (rc == -EBADMSG)
			listen_bad(l, &ev, "spoiled by its publisher: skipped");
		else if (rc < 0)
			errx(2, "listen: %s: reading the topic: %s", l->topic, strerror(-rc));
		else
			listen_event(l, &ev);
		if (l->left > 0 && --l->left == 0)
			return 1;
	}
	return 0;
}

/* Until Ctrl-C (or SIGTERM), a closed stdout, -n's count, or hubd's end. */
static int
listen_loop(struct listen *l)
{
	struct pollfd pfd[2];
	int bell_gone = 0;
	char junk[64];

	for (;;) {
		listen_drain(l);
		if (listen_take(l) == 1 || listen_stop)
			return 0;
		if (hp_topic_ready(&l->r))
			continue;	/* a batch's end: more there */
		if (hp_topic_reader_announce(&l->r)) {
			hp_topic_reader_awake(&l->r);
			continue;
		}
		pfd[0] = (struct pollfd){ .fd = bell_gone ? -1 : l->r.bell, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = l->ctl->fd, .events = POLLIN };
		if (poll(pfd, 2, bell_gone ? NO_BELL_MS : -1) < 0 && errno != EINTR)
			err(2, "poll");
		hp_topic_reader_awake(&l->r);
		if (pfd[0].revents & POLLIN) {
			/* the rings so far: events are read from memory */
			while (recv(l->r.bell, junk, sizeof(junk), MSG_DONTWAIT) > 0)
				;
		}
		/* its writer's end went: hubd says why on the connection, and
		 * until then hubctl looks now and then (hubd may still write) */
		if (pfd[0].revents & (POLLHUP | POLLERR))
			bell_gone = 1;
	}
}

/* The listen answer's first line, and the fds that came with it (as
 * domains.c receives them); what came after the line stays in l->in. */
static json_object *
listen_answer(struct listen *l, int *fds, uint32_t *nfds)
{
	json_object *a;
	char *nl;
	ssize_t n;

	while ((nl = memchr(l->in.buf, '\n', l->in.len)) == NULL) {
		if (l->in.len == LINE_MAX_BYTES)
			errx(2, "listen: hubd's answer is longer than %d bytes", LINE_MAX_BYTES);
		n = hp_fdpass_recv(l->ctl->fd, l->in.buf + l->in.len, LINE_MAX_BYTES - l->in.len,
				   fds, 3, nfds);
		if (n == -EAGAIN)
			client_no_answer_in_time(l->ctl);
		if (n == -EINTR)
			continue;
		if (n < 0)
			errx(2, "listen: reading hubd's answer: %s", strerror((int)-n));
		if (n == 0)
			client_no_answer(l->ctl, "");
		l->in.len += (size_t)n;
	}
	*nl = '\0';	/* a NUL before it ends the line sooner: no JSON then */
	a = json_tokener_parse(l->in.buf);
	l->in.len -= (size_t)(nl + 1 - l->in.buf);
	memmove(l->in.buf, nl + 1, l->in.len);
	if (a == NULL || !json_object_is_type(a, json_type_object))
		errx(2, "listen: hubd sent something that is not a JSON object");
	return a;
}

/* listen's options: --policy P (--policy=P), -n COUNT; the topic. */
static int
listen_options(int argc, char **argv, const char **topic, const char **policy, long *count)
{
	*topic = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char *end;

		if (strncmp(a, "--policy=", 9) == 0)
			*policy = a + 9;
		else if (strcmp(a, "--policy") == 0 || strcmp(a, "-p") == 0) {
			if (++i == argc)
				goto missing;
			*policy = argv[i];
		}
		else if (strncmp(a, "-n", 2) == 0) {
			val = a[2] != '\0' ? a + 2 : i + 1 < argc ? argv[++i] : NULL;
			if (val == NULL)
				goto missing;
			errno = 0;
			*count = strtol(val, &end, 10);
			if (end == val || *end != '\0' || errno != 0 || *count < 1) {
				fprintf(stderr, "hubctl: listen: -n takes a count from 1, not '%s'\n",
					val);
				return -1;
			}
		}
		else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "hubctl: listen: unknown option '%s'\n", a);
			return -1;
		}
		else if (*topic == NULL)
			*topic = a;
		else {
			fprintf(stderr, "hubctl: listen: one topic at a time ('%s' and '%s')\n",
				*topic, a);
			return -1;
		}
		continue;
missing:
		fprintf(stderr, "hubctl: listen: %s takes a value\n", a);
		return -1;
	}
	if (*topic == NULL) {
		fprintf(stderr, "hubctl: listen: which topic?\n");
		return -1;
	}
	if (hp_topic_policy_parse(*policy) < 0) {
		fprintf(stderr, "hubctl: listen: --policy is block, drop-oldest or latest, not "
			"'%s'\n", *policy);
		return -1;
	}
	return 0;
}

int
hubctl_listen(struct ctl *ctl, int argc, char **argv)
{
	static struct listen l;
	struct sigaction sa = { .sa_handler = on_stop };
	struct hp_topic_geom geom;
	json_object *req, *a;
	const char *policy = "drop-oldest", *why = NULL;
	int fds[3] = { -1, -1, -1 }, pol, rc;
	uint32_t nfds = 0;
	int64_t slots, emax;

	l.ctl = ctl;
	if (listen_options(argc, argv, &l.topic, &policy, &l.left) != 0)
		return 2;
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("listen"));
	json_object_object_add(req, "topic", json_object_new_string(l.topic));
	json_object_object_add(req, "policy", json_object_new_string(policy));
	client_send(ctl, req);
	a = listen_answer(&l, fds, &nfds);
	if (client_failed(ctl, a))
		goto fail;
	slots = json_object_get_int64(js_get(a, "slots"));
	emax = json_object_get_int64(js_get(a, "event_max"));
	pol = hp_topic_policy_parse(js_text(a, "policy"));
	geom = (struct hp_topic_geom){ .slots = (uint32_t)slots, .event_max = (uint32_t)emax };
	if (nfds != 3) {
		fprintf(stderr, "hubctl: listen: hubd's answer came with %u fds, not 3\n", nfds);
		goto bad;
	}
	if (slots < 0 || slots > UINT32_MAX || emax < 0 || emax > UINT32_MAX ||
	    hp_topic_geom_check(&geom, &why) != 0) {
		fprintf(stderr, "hubctl: listen: hubd's answer has a geometry hubctl will not use "
			"(%" PRId64 " slots of %" PRId64 " bytes): %s\n", slots, emax,
			why ? why : "out of range");
		goto bad;
	}
	if (pol < 0) {
		fprintf(stderr, "hubctl: listen: hubd's answer has policy '%s'\n",
			js_text(a, "policy"));
		goto bad;
	}
	l.cap = geom.event_max;
	if ((l.buf = malloc(l.cap)) == NULL)
		err(2, NULL);
	rc = hp_topic_reader_init(&l.r, fds[0], &geom, fds[1], fds[2], (uint32_t)pol, &why);
	fds[0] = fds[1] = fds[2] = -1;		/* taken over, closed on failure */
	if (rc != 0) {
		fprintf(stderr, "hubctl: listen: %s: the topic's memory: %s (%s)\n", l.topic,
			why ? why : "refused", strerror(-rc));
		goto bad;
	}
	listen_set_sig(&l, js_get(a, "signature"));
	json_object_put(a);
	/* Ctrl-C and SIGTERM end the poll: a clean end, exit 0 */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = listen_loop(&l);
	hp_topic_reader_free(&l.r);
	free(l.buf);
	return rc;
bad:
	json_object_put(a);
	rc = 2;
	goto out;
fail:
	rc = 1;
out:
	for (uint32_t i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* -- hubctl emit ------------------------------------------------------------- */

/* topic's signature as hubd has it (hubctl topics): 0, or -1 for a topic
 * hubd does not know or has no signature for yet (emit then says so). */
static int
topic_sig(struct ctl *ctl, const char *topic, struct hp_sig *sig)
{
	json_object *req = json_object_new_object(), *a, *all;
	const char *why;
	int rc = -1;

	json_object_object_add(req, "cmd", json_object_new_string("topics"));
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	all = js_get(a, "topics");
	for (size_t i = 0; json_object_is_type(all, json_type_array) &&
	     i < json_object_array_length(all); i++) {
		json_object *t = json_object_array_get_idx(all, i);
		const char *name = json_object_get_string(js_get(t, "name"));
		const char *text = json_object_get_string(js_get(t, "signature"));

		if (name != NULL && strcmp(name, topic) == 0) {
			rc = text != NULL && hp_topic_sig_parse(text, sig, &why) == 0 ? 0 : -1;
			break;
		}
	}
	json_object_put(a);
	return rc;
}

/* Each --bytes-file given for a value the topic's signature makes bytes. */
static int
emit_files_fit(struct ctl *ctl, const char *topic, int argc, char **argv)
{
	struct hp_sig sig;
	int i, k, has = 0, end = call_args_end(argc, argv);

	for (i = 0; i < end; i++)
		has |= strcmp(argv[i], "--bytes-file") == 0;
	if (!has || topic_sig(ctl, topic, &sig) != 0)
		return 1;
	for (i = 0, k = 0; i < end; i++, k++) {
		if (strcmp(argv[i], "--bytes-file") != 0 || i + 1 == end)
			continue;
		if (k < sig.nargs && !call_file_fits("emit", argv[i + 1], &sig, (uint8_t)k, topic))
			return 0;
		i++;
	}
	return 1;
}

int
hubctl_emit(struct ctl *ctl, int argc, char **argv)
{
	json_object *req, *args, *a;

	if (!emit_files_fit(ctl, argv[0], argc - 1, argv + 1) ||
	    (args = call_args("emit", argc - 1, argv + 1)) == NULL)
		return 2;
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("emit"));
	json_object_object_add(req, "topic", json_object_new_string(argv[0]));
	json_object_object_add(req, "args", args);
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	if (client_failed(ctl, a))
		return 1;
	if (ctl->json)
		return js_print(a);
	json_object_put(a);	/* done: nothing to say */
	return 0;
}

/* -- hubctl topics ----------------------------------------------------------- */

/* A retained value for the table: "-" for none; hubd gives the event's
 * values as an array: one value alone, a string as it is (escaped), the
 * rest as JSON; cut to RETAINED_SHOWN characters. */
static const char *
retained_text(char *buf, size_t cap, json_object *v)
{
	const char *s;
	size_t n;

	if (json_object_is_type(v, json_type_array) && json_object_array_length(v) == 1)
		v = json_object_array_get_idx(v, 0);
	if (v == NULL || json_object_is_type(v, json_type_null))
		return "-";
	s = json_object_is_type(v, json_type_string) ? js_shown(v) :
	    json_object_to_json_string_ext(v, JSON_OUT_FLAGS);
	n = strlen(s);
	if (n <= RETAINED_SHOWN && n < cap) {
		memcpy(buf, s, n + 1);
		return buf;
	}
	/* cut between characters: never in the middle of a UTF-8 one */
	n = RETAINED_SHOWN - 3 < cap - 4 ? RETAINED_SHOWN - 3 : cap - 4;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

int
hubctl_topics(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *ts;
	char ret[RETAINED_SHOWN * 4 + 8];
	int rc, wn, ws, wp, wc;

	(void)argc;
	(void)argv;
	if ((a = client_ask(ctl, "topics", &rc)) == NULL)
		return rc;
	ts = js_list(a, "topics");
	/* columns as wide as what they hold: a name of 63 bytes, or a count
	 * a hostile publisher ran up, shifts no other column */
	wn = js_width(ts, "name", 24);
	ws = js_width(ts, "signature", 20);
	wp = js_width(ts, "publisher", 16);
	wc = js_width(ts, "published", 10);
	printf("%-*s %-*s %-*s %*s %5s  %s\n", wn, "TOPIC", ws, "SIGNATURE", wp, "PUBLISHER",
	       wc, "PUBLISHED", "SUBS", "RETAINED");
	for (size_t i = 0; i < json_object_array_length(ts); i++) {
		json_object *t = json_object_array_get_idx(ts, i), *subs = js_get(t, "subscribers");
		size_t nsubs = json_object_is_type(subs, json_type_array) ?
		    json_object_array_length(subs) : 0;
		const char *pub = js_get(t, "publisher") != NULL &&
		    !json_object_is_type(js_get(t, "publisher"), json_type_null) ?
		    js_text(t, "publisher") : "-";
		int sw = js_width(subs, "who", 22), sr = js_width(subs, "received", 10);
		int sl = js_width(subs, "lost", 8), sb = js_width(subs, "behind", 8);

		printf("%-*s %-*s %-*s %*" PRIu64 " %5zu  %s\n", wn, js_text(t, "name"), ws,
		       *js_text(t, "signature") ? js_text(t, "signature") : "-", wp, pub, wc,
		       js_u64(t, "published"), nsubs,
		       retained_text(ret, sizeof(ret), js_get(t, "retained")));
		/* its subscribers under it */
		for (size_t k = 0; k < nsubs; k++) {
			json_object *sub = json_object_array_get_idx(subs, k);

			if (k == 0)
				printf("  %-*s %-12s %8s %*s %*s %*s\n", sw, "SUBSCRIBER", "POLICY",
				       "RATE/S", sr, "RECEIVED", sl, "LOST", sb, "BEHIND");
			printf("  %-*s %-12s %8.1f %*" PRIu64 " %*" PRIu64 " %*" PRIu64 "\n",
			       sw, js_text(sub, "who"), js_text(sub, "policy"),
			       json_object_get_double(js_get(sub, "rate")), sr,
			       js_u64(sub, "received"), sl, js_u64(sub, "lost"), sb,
			       js_u64(sub, "behind"));
		}
	}
	json_object_put(a);
	return 0;
}
