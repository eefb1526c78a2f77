/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The call command: a client's call to a method (route.c takes it on),
 * the items of its stream and its result written as JSON lines from
 * postcard (pcjson.c); and the streams a client sends, a line per item:
 * a guest's rx<T> (upload.c carries them) and hub.sink's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/answer.h"
#include "daemon/client.h"
#include "daemon/cmd.h"
#include "daemon/methods.h"
#include "daemon/pcjson.h"
#include "daemon/route.h"
#include "daemon/streams.h"
#include "daemon/upload.h"
#include "proto/builtin.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/sig.h"
#include "proto/xxh.h"

/* An item of a call's stream, as {"item":VALUE}. Its bytes go back to the
 * guest as credit once the line is written (client_mark_add). */
static void
call_item(struct ext_call *x, const uint8_t *item, size_t len)
{
	struct client *c = x->ctx;
	uint64_t start = c->queued;
	struct hp_pc_dec d;
	char line[48];
	json_object *o, *v;
	uint64_t u;
	int n = -1;

	hp_pc_dec_init(&d, item, len);
	if (x->sig.node[x->item].type == HP_T_U64) {	/* the common case, without json-c */
		u = hp_pc_get_u64(&d);
		if (d.err == 0)
			n = snprintf(line, sizeof(line), "{\"item\":%" PRIu64 "}", u);
	}
	if (n > 0) {
		client_out_line(c, line, (size_t)n);
	} else {
		hp_pc_dec_init(&d, item, len);
		o = json_object_new_object();
		if (pcjson_value(&d, &x->sig, x->item, &v) != 0 || hp_pc_remaining(&d) != 0) {
			json_object_put(v);
			v = json_object_new_string("(item does not decode)");
		}
		json_object_object_add(o, "item", v);
		client_reply(c, o);
	}
	client_mark_add(c, start, (uint32_t)len);
}

static void
call_done(struct ext_call *x, int status, const struct hp_response *r)
{
	static const char *const kinds[] = {
		"user", "unknown method", "invalid payload", "cancelled",
	};
	struct client *c = x->ctx;
	json_object *o = json_object_new_object(), *v;
	struct hp_pc_dec d;
	const char *s;
	size_t n;

	c->calling = 0;
	c->mcount = 0;		/* the stream is over: nobody's credit any more */
	/* an upload still sent: the rest of it is dropped, up to its end */
	c->feed_wait = 0;
	if (status != 0 || r == NULL) {
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "error",
				       json_object_new_string("the answer does not decode"));
	} else if (r->result == HP_RESULT_OK) {
		int rc;

		hp_pc_dec_init(&d, r->value, r->value_len);
		if ((rc = pcjson_value(&d, &x->sig, x->sig.ret, &v)) != 0 ||
		    hp_pc_remaining(&d) != 0) {
			char sig[HP_SIG_MAX_LEN + 1];
			char text[sizeof(x->method) + HP_SIG_MAX_LEN + 128];

			json_object_put(v);
			hp_sig_text(&x->sig, sig, sizeof(sig));
			if (rc == -E2BIG)
				snprintf(text, sizeof(text), "%s returned more than %u values: "
					 "too many to show", x->method, PCJSON_VALUES_MAX);
			else if (rc == -EEXIST)
				snprintf(text, sizeof(text), "%s returned a map with a key twice, "
					 "or one with a NUL byte, which JSON cannot show "
					 "(signature %s)",
					 x->method, sig);
			else
				snprintf(text, sizeof(text), "%s returned a value that does not "
					 "match its signature %s", x->method, sig);
			json_object_object_add(o, "ok", json_object_new_boolean(0));
			json_object_object_add(o, "error", json_object_new_string(text));
		} else {
			char type[HP_SIG_MAX_LEN + 1];

			json_object_object_add(o, "ok", json_object_new_boolean(1));
			json_object_object_add(o, "result", v);
			/* the result's type: null is unit, or an opt's none
			 * (a client prints one and not the other) */
			hp_sig_type_text(&x->sig, x->sig.ret, type, sizeof(type));
			json_object_object_add(o, "returns", json_object_new_string(type));
		}
	} else {
		const char *msg = r->error < 4 ? kinds[r->error] : "error", *t, *why;
		size_t tn, wn;
		int hub = hp_meta_str(&r->meta, HP_META_HUB_ERROR, &why, &wn);

		/* a guest's answer forwarded from elsewhere (guest_reply_status):
		 * what failed there, and the text of a kind that has none */
		if (!hub && r->error == HP_ERR_USER &&
		    hp_meta_str(&r->meta, HP_META_ERROR_KIND, &t, &tn)) {
			if (hp_meta_is(t, tn, HP_ERR_KIND_UNREACHABLE))
				msg = HP_ERR_KIND_UNREACHABLE;
			else if (hp_meta_is(t, tn, HP_ERR_KIND_TIMEOUT))
				msg = HP_ERR_KIND_TIMEOUT;
		}
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "kind", json_object_new_string(msg));
		hp_pc_dec_init(&d, r->value, r->value_len);
		if (r->error == HP_ERR_USER && hp_pc_get_str(&d, &s, &n) == 0)
			json_object_object_add(o, "error", json_object_new_string_len(s, (int)n));
		else if (!hub && r->error != HP_ERR_USER &&
			 hp_meta_str(&r->meta, HP_META_ERROR_TEXT, &t, &tn))
			json_object_object_add(o, "error", json_object_new_string_len(t, (int)tn));
		else
			json_object_object_add(o, "error", json_object_new_string(msg));
		/* what hubd said of an error it made: the error itself for a
		 * User error, not said twice */
		if (hub) {
			json_object *error = json_object_object_get(o, "error");

			if ((size_t)json_object_get_string_len(error) != wn ||
			    memcmp(json_object_get_string(error), why, wn) != 0)
				json_object_object_add(o, "detail",
						       json_object_new_string_len(why, (int)wn));
		}
	}
	client_reply(c, o);
	/* the next request, from the loop: never from inside this call */
	ev_feed_event(c->h->loop, &c->rw, EV_READ);
}

/* hub.sink called with "-" for its channel: the client sends the stream,
 * a line per item, and hubd, the sink, hashes each as it comes (as it
 * hashes a guest's: the item's postcard value, r[shm.flow.ordering.receiver]).
 * Nothing is held: the next line is read once this one is taken, so a
 * client that sends fast waits on the socket. */
static int
sink_fed(const struct control_req *r)
{
	return strcmp(r->method, HP_SVC_SINK) == 0 && r->nargs == 1 && r->args[0].len == 1 &&
	    r->args[0].s[0] == '-';
}

static void
feed_over(struct client *c, const char *error)
{
	json_object *o = json_object_new_object();

	c->calling = c->feeding = 0;
	json_object_object_add(o, "ok", json_object_new_boolean(error == NULL));
	if (error != NULL) {
		json_object_object_add(o, "kind", json_object_new_string("user"));
		json_object_object_add(o, "error", json_object_new_string(error));
	} else {
		json_object_object_add(o, "result", json_object_new_uint64(c->sink_hash));
		json_object_object_add(o, "returns", json_object_new_string("u64"));
	}
	client_reply(c, o);
}

/* The callee has credit for the client's next item again. */
static void
upload_more(struct ext_call *x)
{
	struct client *c = x->ctx;

	c->feed_wait = 0;
	ev_feed_event(c->h->loop, &c->rw, EV_READ);
}

/* Whether a line of a stream says key: true (a JSON true, nothing else:
 * {"end":"false"} does not end a stream). */
static int
line_says(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
	    json_object_get_boolean(v);
}

/* A line of an upload the client cannot send: the call is given up (the
 * callee gets a Cancel, its stream a Reset), the client told why, and the
 * connection closed: what follows was meant as items. */
static void
upload_refused(struct client *c, const char *why)
{
	char text[512];

	snprintf(text, sizeof(text), "item %" PRIu64 " %s", c->fed, why);
	route_client_abandon(c->h, &c->call);
	c->calling = c->feeding = c->uploading = c->feed_wait = 0;
	c->mcount = 0;
	client_reply_error(c, text);
	c->closing = 1;
}

/* A line of a guest's rx<T> the client sends (upload.c): as hub.sink's
 * below. Once the callee answered or stopped the stream, items are
 * dropped up to the end. */
static void
upload_feed(struct client *c, json_object *o)
{
	static uint8_t buf[CONTROL_MSG_MAX + 16];
	struct ext_call *x = &c->call;
	struct hp_pc_enc e;
	json_object *v;
	char why[384];

	if (json_object_object_get_ex(o, "item", &v) && json_object_is_type(v, json_type_string)) {
		c->fed++;
		if (x->up == NULL)
			return;		/* over: dropped */
		hp_pc_enc_init(&e, buf, sizeof(buf));
		/* an item's text form as the channel's item type has it */
		if (pcjson_encode_arg(&e, &x->sig, x->item, json_object_get_string(v),
				      (size_t)json_object_get_string_len(v), why,
				      sizeof(why)) != 0 || e.err != 0)
			upload_refused(c, e.err != 0 ? "is too large" : why);
		else if (e.len > c->h->conf.params.initial_credit)
			upload_refused(c, "is larger than initial_credit: a channel "
				       "could never carry it");
		else if (upload_client_item(c->h, x, buf, (uint32_t)e.len) == 1)
			c->feed_wait = 1;	/* the next line once it went */
	} else if (line_says(o, "end")) {
		upload_client_end(c->h, x, 0);
		c->feeding = c->uploading = 0;
	} else if (line_says(o, "reset")) {
		upload_client_end(c->h, x, 1);
		c->feeding = c->uploading = 0;
	} else {
		c->fed++;	/* counted from 1, as the items it stands for */
		upload_refused(c, "is not a line of the stream: {\"item\":TEXT}, "
			       "{\"end\":true} or {\"reset\":true}");
	}
}

/* One line of the stream: {"item":TEXT}, then {"end":true} (or
 * {"reset":true}: given up). Anything else ends the call, and the
 * connection, which may hold more of what was meant as items. */
void
cmd_call_feed(struct client *c, const char *line, size_t len)
{
	static uint8_t buf[CONTROL_MSG_MAX + 16];
	json_tokener *tok;
	json_object *o = NULL, *v;
	struct hp_pc_enc e;

	if (line == NULL && c->uploading) {
		/* its sender went: the callee sees a Reset */
		upload_client_end(c->h, &c->call, 1);
		c->feeding = c->uploading = 0;
		return;
	}
	if (line == NULL) {
		feed_over(c, "the stream was reset");	/* its sender went */
		return;
	}
	if ((tok = json_tokener_new()) != NULL) {
		o = json_tokener_parse_ex(tok, line, (int)len);
		if (o != NULL && json_tokener_get_parse_end(tok) != len) {
			json_object_put(o);
			o = NULL;
		}
		json_tokener_free(tok);
	}
	if (c->uploading) {
		upload_feed(c, o);
		json_object_put(o);
		return;
	}
	if (json_object_object_get_ex(o, "item", &v) && json_object_is_type(v, json_type_string)) {
		const struct method *m = methods_find(c->h, HP_SVC_SINK);
		char why[128];

		hp_pc_enc_init(&e, buf, sizeof(buf));
		/* an item's text form as the channel's item type has it */
		if (m == NULL || pcjson_encode_arg(&e, &m->sig, hp_sig_chan_item(&m->sig, 0),
						   json_object_get_string(v),
						   (size_t)json_object_get_string_len(v),
						   why, sizeof(why)) != 0 || e.err != 0) {
			feed_over(c, "an item that is not bytes");
			c->closing = 1;
		} else if (e.len > c->h->conf.params.initial_credit) {
			/* what a channel could never carry */
			feed_over(c, "an item larger than initial_credit");
			c->closing = 1;
		} else {
			c->sink_hash = XXH3_64bits_withSeed(buf, e.len, c->sink_hash);
		}
	} else if (line_says(o, "end")) {
		feed_over(c, NULL);
	} else if (line_says(o, "reset")) {
		feed_over(c, "the stream was reset");
	} else {
		feed_over(c, "a line of the stream is {\"item\":TEXT}, {\"end\":true} or "
			  "{\"reset\":true}");
		c->closing = 1;
	}
	json_object_put(o);
}

/* Whether c's user, calling a guest's method, has calls_in_flight calls
 * that guests hold already, those of
 * its clients that went included (a guest answers each call once, Cancel
 * or not, so hubd keeps it until then): a client that called a method
 * that never answers and hung up, again and again, grew hubd's tables
 * without end. Says so to c. */
static int
too_many_calls(struct client *c, const char *method)
{
	const struct method *m = methods_find(c->h, method);
	uint32_t n;
	char text[256];

	if (m == NULL || m->owner == 0)
		return 0;	/* the host's services are answered at once */
	if ((n = answer_client_calls(c->h, CALLER_CLIENT | c->uid)) < c->h->conf.calls_in_flight)
		return 0;
	snprintf(text, sizeof(text), "too many calls in flight: guests hold %u calls of "
		 "uid %u's clients, those of clients that went included (calls_in_flight "
		 "= %u); hubctl calls lists them", n, (unsigned)c->uid,
		 c->h->conf.calls_in_flight);
	client_reply_error(c, text);
	return 1;
}

void
cmd_call(struct client *c, const struct control_req *r)
{
	const char *why = "bad request";

	if (sink_fed(r)) {
		json_object *o = json_object_new_object();

		/* no guest's: nothing to abandon if the client goes */
		c->call = (struct ext_call){ .ctx = c };
		c->calling = c->feeding = 1;
		c->sink_hash = HP_STREAM_HASH_SEED;
		json_object_object_add(o, "send", json_object_new_boolean(1));
		client_reply(c, o);
		return;
	}
	if (too_many_calls(c, r->method))
		return;

	c->call = (struct ext_call){ .ctx = c, .on_item = call_item, .on_done = call_done,
				     .on_more = upload_more, .caller = CALLER_CLIENT | c->uid };
	/* its deadline and trace, checked by request.c */
	if (r->timeout_ms > 0)
		c->call.meta.deadline_ns = hp_now_ns() + (uint64_t)r->timeout_ms * HP_NS_PER_MS;
	if (r->trace != NULL)
		hp_traceparent_parse(r->trace, strlen(r->trace), &c->call.meta);
	c->calling = 1;		/* one request at a time: the next after on_done */
	if (route_client_call(c->h, &c->call, r->method, r->args, r->nargs, &why) != 0) {
		c->calling = 0;
		client_reply_error(c, why);
	} else if (c->call.up != NULL) {
		json_object *o = json_object_new_object();

		/* an rx<T>: the items are the client's to send */
		c->feeding = c->uploading = 1;
		c->feed_wait = 0;
		c->fed = 0;
		json_object_object_add(o, "send", json_object_new_boolean(1));
		/* an item's bytes at most (its postcard value): the window */
		json_object_object_add(o, "item_max",
				       json_object_new_uint64(c->h->conf.params.initial_credit));
		client_reply(c, o);
	}
}
