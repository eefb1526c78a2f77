/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl call: a method called through hubd, its arguments as text (or
 * a file's bytes), the items of its stream printed as they arrive (or,
 * for an rx<T> given as - or --bytes-file, sent from stdin or the file),
 * then its result. */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <resolv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <json-c/json.h>

#include "daemon/escape.h"
#include "daemon/jsonout.h"
#include "daemon/request.h"
#include "hubctl/hubctl.h"
#include "proto/callmeta.h"
#include "proto/clock.h"
#include "proto/sig.h"

/* The bytes of an rx<bytes> sent from --bytes-file go in items of this
 * many bytes (fewer if hubd says a channel takes fewer): each a line of
 * about 22 KB to hubd, well under its 64 KiB, and a quarter of the
 * default window. */
#define CHUNK_MAX	16384

/* A value printed for people: strings as they are (ending in a newline)
 * but for their control characters, escaped as in every table (a
 * guest's result could drive the terminal otherwise; -j gives the bytes),
 * newlines and tabs kept; the rest as JSON. */
static void
print_value(json_object *v)
{
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		size_t n = (size_t)json_object_get_string_len(v);	/* NULs too */
		char *buf = malloc(4 * n + 1);

		if (buf == NULL)
			err(2, NULL);
		escape_text(buf, 4 * n + 1, s, n, ESCAPE_KEEP_NL);
		n = strlen(buf);
		fwrite(buf, 1, n, stdout);
		if (n == 0 || buf[n - 1] != '\n')
			putchar('\n');
		free(buf);
	}
	else if (v != NULL) {
		/* JSON escapes C0 controls only: DEL and C1 in its strings
		 * (a guest's) are escaped as in a string result */
		const char *s = json_object_to_json_string_ext(v, JSON_OUT_FLAGS);
		size_t n = strlen(s);
		char *buf = malloc(4 * n + 1);

		if (buf == NULL)
			err(2, NULL);
		printf("%s\n", escape_text(buf, 4 * n + 1, s, n, 0));
		free(buf);
	}
}

/* A call's result: nothing for unit, null for an opt's none (and for
 * some(none) of an opt<opt<T>>: JSON, -j too, tells them apart no
 * better), else the value as print_value shows it. A hubd that does not
 * say the result's type ("returns") gets null taken for unit. */
static void
print_result(json_object *a)
{
	json_object *v = js_get(a, "result"), *type = js_get(a, "returns");

	if (!json_object_is_type(v, json_type_null))
		print_value(v);
	else if (type != NULL && strcmp(json_object_get_string(type), "unit") != 0)
		printf("null\n");
}

/* Whether hubd answered meanwhile (the callee answered, or stopped the
 * stream, before reading all of it): nothing more is sent then. */
static int
answered(const struct ctl *ctl)
{
	struct pollfd pfd = { .fd = ctl->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* "base64:" and in's n bytes in standard base64 (b64_ntop, which hubd's
 * pcjson reads back with b64_pton), in out of at least
 * sizeof("base64:") + (n + 2) / 3 * 4 bytes. */
static size_t
base64(char *out, const uint8_t *in, size_t n)
{
	int k;

	memcpy(out, "base64:", 7);
	if ((k = b64_ntop(in, n, out + 7, (n + 2) / 3 * 4 + 1)) < 0)
		errx(2, "cannot write %zu bytes as base64", n);
	return 7 + (size_t)k;
}

/* An rx<bytes> from a file: its bytes in items of up to chunk bytes,
 * each {"item":"base64:..."}, then the end. */
static void
send_file(struct ctl *ctl, const char *path, size_t chunk)
{
	uint8_t *in = malloc(chunk);
	char *out = malloc(sizeof("base64:") + (chunk + 2) / 3 * 4);
	json_object *req;
	FILE *f;
	size_t n;

	if (in == NULL || out == NULL)
		err(2, "malloc");
	if ((f = fopen(path, "rb")) == NULL)
		err(2, "--bytes-file %s", path);
	while ((n = fread(in, 1, chunk, f)) > 0) {
		req = json_object_new_object();
		json_object_object_add(req, "item",
				       json_object_new_string_len(out, (int)base64(out, in, n)));
		client_send(ctl, req);
		if (ctl->write_errno != 0 || answered(ctl))
			goto out;
	}
	if (ferror(f))
		err(2, "--bytes-file %s", path);
	req = json_object_new_object();
	json_object_object_add(req, "end", json_object_new_boolean(1));
	client_send(ctl, req);
out:
	fclose(f);
	free(in);
	free(out);
}

/* The stream a call takes from its caller (an rx<T> or hub.sink given
 * as -): stdin's lines, each an item (its text form, the newline left
 * out), then the end. Sent as fast as hubd reads them: it reads the next
 * once the callee has credit for the last, so the socket holds the rest
 * back. Once hubd answers, the rest is not sent. */
static void
send_items(struct ctl *ctl)
{
	char *line = NULL;
	size_t cap = 0, nline = 0;
	ssize_t n;
	json_object *req;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		nline++;
		if (line[n - 1] == '\n')
			n--;
		req = json_object_new_object();
		json_object_object_add(req, "item", json_object_new_string_len(line, (int)n));
		if (strlen(json_object_to_json_string_ext(req, JSON_OUT_FLAGS)) + 1 >
		    CONTROL_MSG_MAX)
			errx(2, "stdin line %zu: an item of %zd bytes, too long for a line of "
			     "%d bytes to hubd", nline, n, CONTROL_MSG_MAX);
		client_send(ctl, req);
		if (ctl->write_errno != 0)
			break;		/* hubd said why, or its end says so */
		if (answered(ctl)) {
			free(line);
			return;
		}
	}
	if (ferror(stdin))
		err(2, "stdin");
	free(line);
	req = json_object_new_object();
	json_object_object_add(req, "end", json_object_new_boolean(1));
	client_send(ctl, req);
}

/* --bytes-file FILE: the file's bytes, whatever they are (NULs, newlines),
 * as a bytes argument's text form "base64:..." (doc/control.md). The
 * request line bounds it: a file too large for one is refused here. */
static json_object *
bytes_file_arg(const char *path)
{
	size_t cap = (CONTROL_MSG_MAX - 1024) / 4 * 3, n = 0, k, o;	/* room for the rest */
	uint8_t *in = malloc(cap + 1);
	char *out;
	json_object *v;
	FILE *f;

	if (in == NULL || (out = malloc(sizeof("base64:") + (cap + 3) / 3 * 4)) == NULL)
		err(2, "malloc");
	if ((f = fopen(path, "rb")) == NULL)
		err(2, "--bytes-file %s", path);
	while (n <= cap && (k = fread(in + n, 1, cap + 1 - n, f)) > 0)
		n += k;
	if (ferror(f))
		err(2, "--bytes-file %s", path);
	fclose(f);
	if (n > cap)
		errx(2, "--bytes-file %s: more than %zu bytes, too large for a request to hubd",
		     path, cap);
	o = base64(out, in, n);
	v = json_object_new_string_len(out, (int)o);
	free(in);
	free(out);
	return v;
}

int
call_args_end(int argc, char **argv)
{
	int i = 0;

	while (i < argc && strcmp(argv[i], "--") != 0)
		i++;
	return i;
}

json_object *
call_args(const char *cmd, int argc, char **argv)
{
	json_object *args = json_object_new_array();
	int end = call_args_end(argc, argv);

	for (int i = 0; i < argc; i++) {
		if (i == end)
			continue;	/* the "--" itself */
		if (i > end || strcmp(argv[i], "--bytes-file") != 0) {
			json_object_array_add(args, json_object_new_string(argv[i]));
			continue;
		}
		if (++i == end) {
			fprintf(stderr, "hubctl: %s: --bytes-file takes a file\n", cmd);
			json_object_put(args);
			return NULL;
		}
		json_object_array_add(args, bytes_file_arg(argv[i]));
	}
	return args;
}

/* call's options, before METHOD: --timeout MS (the call's deadline,
 * from now; -t SECS too, when not given) and --trace TRACEPARENT (the
 * trace it belongs to, or "new": a trace of its own). No trace unless
 * asked: the hub records none itself, so an id nobody asked for leads
 * nowhere, and a small call stays small (in its descriptor, as a guest
 * written from the spec alone may expect). Their number, or -1. */
static int
call_options(struct ctl *ctl, int argc, char **argv, long *timeout_ms, char *trace)
{
	struct hp_callmeta cm = { 0 };
	char *end;
	int i;

	*timeout_ms = ctl->timeout_s > 0 ? ctl->timeout_s * 1000L : 0;
	trace[0] = '\0';
	for (i = 0; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--timeout") == 0) {
			errno = 0;
			*timeout_ms = strtol(argv[i + 1], &end, 10);
			if (errno != 0 || *end != '\0' || end == argv[i + 1] || *timeout_ms < 1 ||
			    *timeout_ms > INT32_MAX) {
				fprintf(stderr, "hubctl: call: --timeout takes milliseconds, from 1 "
					"to 2147483647, not '%s'\n", argv[i + 1]);
				return -1;
			}
		} else if (strcmp(argv[i], "--trace") == 0) {
			if (strcmp(argv[i + 1], "new") == 0)
				hp_trace_new(&cm, 1);
			else if (hp_traceparent_parse(argv[i + 1], strlen(argv[i + 1]),
						      &cm) != 0) {
				fprintf(stderr, "hubctl: call: --trace takes a W3C traceparent, "
					"00-<32 hex>-<16 hex>-<2 hex> (lower-case, ids not "
					"zero), or new\n");
				return -1;
			}
		} else
			break;
	}
	/* no method begins with '-': an option out of place, or without its value */
	if (i < argc && argv[i][0] == '-') {
		fprintf(stderr, "hubctl: call: %s '%s'%s\n", strcmp(argv[i], "--timeout") == 0 ||
			strcmp(argv[i], "--trace") == 0 ? "no value after" : "unknown option",
			argv[i], strchr("jst", argv[i][1]) != NULL && argv[i][2] == '\0' ?
			": hubctl's own options go before the command (hubctl -t 5 call ...)" : "");
		return -1;
	}
	if (cm.has_trace)
		hp_traceparent_format(&cm, trace);
	/* hubctl waits as long as the call may take, and a little more for
	 * its answer, the timeout, to come: in all, however many items a
	 * stream brings meanwhile */
	if (*timeout_ms > 0 && ctl->timeout_s == 0)
		ctl->call_wait_ms = *timeout_ms + 2000;
	if (*timeout_ms > 0)
		ctl->answer_by_ns = hp_now_ns() + (uint64_t)(ctl->call_wait_ms > 0 ?
		    ctl->call_wait_ms : *timeout_ms) * 1000000u;
	return i;
}

/* The method's signature (hub.signature), to tell an rx<bytes> that
 * --bytes-file streams from a bytes argument it gives whole. */
static int
signature_of(struct ctl *ctl, const char *method, struct hp_sig *sig)
{
	json_object *req = json_object_new_object(), *args = json_object_new_array(), *a;
	int rc = -1;

	json_object_array_add(args, json_object_new_string(method));
	json_object_object_add(req, "cmd", json_object_new_string("call"));
	json_object_object_add(req, "method", json_object_new_string("hub.signature"));
	json_object_object_add(req, "args", args);
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	if (json_object_is_type(js_get(a, "result"), json_type_string) &&
	    hp_sig_parse(json_object_get_string(js_get(a, "result")), sig, NULL) == 0)
		rc = 0;
	json_object_put(a);	/* no such method: the call says so */
	return rc;
}

int
call_file_fits(const char *cmd, const char *file, const struct hp_sig *sig, uint8_t at,
	       const char *name)
{
	uint8_t t = hp_sig_arg_type(sig, at);
	char type[HP_SIG_MAX_LEN + 1];

	if (t == HP_T_BYTES ||
	    (t == HP_T_RX && sig->node[hp_sig_chan_item(sig, at)].type == HP_T_BYTES))
		return 1;
	hp_sig_type_text(sig, sig->args[at], type, sizeof(type));
	fprintf(stderr, "hubctl: %s: --bytes-file %s: argument %d of %s is a%s %s: "
		"--bytes-file gives bytes%s\n", cmd, file, at + 1, name,
		strchr("ifo", type[0]) != NULL ? "n" : "", type,
		strcmp(cmd, "call") == 0 ? " or an rx<bytes>" : "");
	return 0;
}

/* --bytes-file FILE for an rx<bytes>: "-" in the request, FILE the
 * stream (*stream); other arguments as call_args makes them. NULL, said
 * why, for one given where the signature has no bytes or rx<bytes>: its
 * text form "base64:..." would reach a str (or an rx<str>'s items) as
 * that text, not as the file's bytes. */
static json_object *
call_args_rx(struct ctl *ctl, const char *method, int argc, char **argv,
	     const char **stream)
{
	static char dash[] = "-";
	struct hp_sig sig;
	int i, k, n, has = 0, end = call_args_end(argc, argv);
	uint8_t at;

	for (i = 0; i < end; i++)
		has |= strcmp(argv[i], "--bytes-file") == 0;
	if (!has || signature_of(ctl, method, &sig) != 0)
		return call_args("call", argc, argv);
	for (i = 0, k = 0; i < end; i++, k++) {
		int file = strcmp(argv[i], "--bytes-file") == 0 && i + 1 < end;

		/* the signature's argument the k-th given one is: chan<T>s
		 * are not given */
		for (at = 0, n = k; at < sig.nargs; at++)
			if (hp_sig_arg_type(&sig, at) != HP_T_CHAN && n-- == 0)
				break;
		if (file && at < sig.nargs && !call_file_fits("call", argv[i + 1], &sig, at, method))
			return NULL;
		if (file && at < sig.nargs && hp_sig_arg_type(&sig, at) == HP_T_RX) {
			*stream = argv[i + 1];
			argv[i] = dash;
			memmove(argv + i + 1, argv + i + 2, (size_t)(argc - i - 2) * sizeof(*argv));
			argc--;
			end--;
		} else if (file) {
			i++;
		}
	}
	return call_args("call", argc, argv);
}

int
hubctl_call(struct ctl *ctl, int argc, char **argv)
{
	char trace[HP_TRACEPARENT_LEN + 1];
	json_object *req, *args, *a;
	long timeout_ms;
	int nopt;
	const char *stream = NULL;

	if ((nopt = call_options(ctl, argc, argv, &timeout_ms, trace)) < 0)
		return 2;
	argc -= nopt;
	argv += nopt;
	if (argc < 1 || argc > 18) {	/* METHOD, 8 arguments, each a file, -- */
		fprintf(stderr, "usage: hubctl call %s\n", CALL_USAGE);
		return 2;
	}
	if ((args = call_args_rx(ctl, argv[0], argc - 1, argv + 1, &stream)) == NULL)
		return 2;
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("call"));
	json_object_object_add(req, "method", json_object_new_string(argv[0]));
	json_object_object_add(req, "args", args);
	if (timeout_ms > 0)
		json_object_object_add(req, "timeout_ms", json_object_new_int64(timeout_ms));
	if (trace[0] != '\0')
		json_object_object_add(req, "trace", json_object_new_string(trace));
	client_send(ctl, req);
	while ((a = client_read(ctl)) != NULL) {
		if (!json_object_is_type(a, json_type_object))
			errx(2, "hubd sent an answer that is not a JSON object");
		json_object *item = NULL;
		/* an item's null (an opt's none) is an item too */
		int is_item = json_object_object_get_ex(a, "item", &item);

		if (json_object_get_boolean(js_get(a, "send"))) {
			/* ours to send: the items, from stdin or a file */
			int64_t max = json_object_get_int64(js_get(a, "item_max"));

			json_object_put(a);
			if (stream != NULL)
				send_file(ctl, stream, max > 16 && max - 16 < CHUNK_MAX ?
					  (size_t)(max - 16) : CHUNK_MAX);
			else
				send_items(ctl);
			continue;
		}
		if (is_item) {
			if (ctl->json)
				js_print(a);
			else {
				if (item == NULL)
					printf("null\n");
				else
					print_value(item);
				json_object_put(a);
			}
			/* out as it arrives: a reader downstream sees each item
			 * while the stream goes on, and an interrupted hubctl
			 * has printed every item it took */
			out_flush();	/* nobody takes them: stop */
			continue;
		}
		if (client_failed(ctl, a))
			return 1;
		if (ctl->json)
			return js_print(a);
		print_result(a);
		json_object_put(a);
		return 0;
	}
	client_no_answer(ctl, " during the call");	/* never a silent end: exit 2 */
}
