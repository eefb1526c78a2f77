/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Control requests: one JSON object per line, parsed and checked here
 * before anything acts on it (request.h). Alone in its file so that the
 * fuzzer can take it without the daemon around it. */
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/request.h"
#include "proto/callmeta.h"

/* A JSON string that C code may take as a C string: no NUL inside (a
 * method or guest name cut short at one would name another). */
static int
is_name(json_object *v)
{
	return json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

#define CTL_ROW(id, n, who, what) \
	[CTL_##id] = { .name = #n, .access = who, .needs = what },
const struct ctl_command ctl_commands[CTL_NCMDS] = {
	CTL_COMMANDS(CTL_ROW)
};
#undef CTL_ROW

int
request_parse(const char *line, size_t len, struct control_req *r, const char **why)
{
	json_tokener *tok = json_tokener_new();
	json_object *req, *cmd, *v;
	const char *name;
	unsigned needs;
	int deep;

	memset(r, 0, sizeof(*r));
	if (tok == NULL) {
		*why = "out of memory";
		return -1;
	}
	req = json_tokener_parse_ex(tok, line, (int)len);
	deep = json_tokener_get_error(tok) == json_tokener_error_depth;
	if (req != NULL && json_tokener_get_parse_end(tok) != len) {
		json_object_put(req);
		req = NULL;
	}
	json_tokener_free(tok);
	r->json = req;
	if (req == NULL || !json_object_is_type(req, json_type_object)) {
		*why = deep ? "a request is nested at most 32 deep" :
		    "a request is one JSON object per line";
		goto fail;
	}
	if (!json_object_object_get_ex(req, "cmd", &cmd) || !is_name(cmd)) {
		*why = "the request has no \"cmd\" string";
		goto fail;
	}
	name = json_object_get_string(cmd);
	for (int i = CTL_NONE + 1; i < CTL_NCMDS && r->cmd == CTL_NONE; i++)
		if (strcmp(name, ctl_commands[i].name) == 0)
			r->cmd = (enum ctl_cmd)i;
	if (r->cmd == CTL_NONE) {
		*why = "unknown command";
		goto fail;
	}
	needs = ctl_commands[r->cmd].needs;
	if (needs & CTL_NEEDS_METHOD) {
		if (!json_object_object_get_ex(req, "method", &v) || !is_name(v)) {
			*why = "call needs \"method\": a string (no NUL)";
			goto fail;
		}
		r->method = json_object_get_string(v);
		/* the call's deadline and trace (doc/control.md) */
		if (json_object_object_get_ex(req, "timeout_ms", &v)) {
			if (!json_object_is_type(v, json_type_int) ||
			    json_object_get_int64(v) < 1 || json_object_get_int64(v) > INT32_MAX) {
				*why = "\"timeout_ms\" must be a number of milliseconds from 1 "
				    "to 2147483647";
				goto fail;
			}
			r->timeout_ms = json_object_get_int64(v);
		}
		if (json_object_object_get_ex(req, "trace", &v)) {
			struct hp_callmeta cm;

			if (!is_name(v) || hp_traceparent_parse(json_object_get_string(v),
			    (size_t)json_object_get_string_len(v), &cm) != 0) {
				*why = "\"trace\" must be a W3C traceparent: "
				    "00-<32 hex>-<16 hex>-<2 hex>, lower-case, ids not zero";
				goto fail;
			}
			r->trace = json_object_get_string(v);
		}
	}
	if (needs & CTL_NEEDS_TOPIC) {
		if (!json_object_object_get_ex(req, "topic", &v) || !is_name(v)) {
			*why = "the request needs \"topic\": a string (no NUL)";
			goto fail;
		}
		r->topic = json_object_get_string(v);
		if (json_object_object_get_ex(req, "policy", &v)) {
			if (!is_name(v)) {
				*why = "\"policy\" must be a string";
				goto fail;
			}
			r->policy = json_object_get_string(v);
		}
	}
	if (needs & (CTL_NEEDS_METHOD | CTL_TAKES_ARGS)) {
		if (json_object_object_get_ex(req, "args", &v)) {
			if (!json_object_is_type(v, json_type_array) ||
			    json_object_array_length(v) > CTL_ARGS_MAX) {
				*why = "\"args\" must be an array of at most 8 strings";
				goto fail;
			}
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				json_object *a = json_object_array_get_idx(v, i);

				if (!json_object_is_type(a, json_type_string)) {
					*why = "\"args\" must be an array of strings";
					goto fail;
				}
				/* with its length: "\u0000" is a character */
				r->args[r->nargs].s = json_object_get_string(a);
				r->args[r->nargs++].len = (size_t)json_object_get_string_len(a);
			}
		}
	}
	if (needs & CTL_NEEDS_NAME) {
		if (!json_object_object_get_ex(req, "name", &v) || !is_name(v)) {
			*why = "the request needs \"name\": a guest's name";
			goto fail;
		}
		r->name = json_object_get_string(v);
	}
	if ((needs & CTL_TAKES_VALIDATE) && json_object_object_get_ex(req, "validate", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			*why = "\"validate\" must be true or false";
			goto fail;
		}
		r->validate = json_object_get_boolean(v);
	}
	if ((needs & CTL_TAKES_GLOB) && json_object_object_get_ex(req, "glob", &v)) {
		if (!is_name(v) || json_object_get_string_len(v) > CTL_GLOB_MAX) {
			*why = "\"glob\" must be a string of at most 256 bytes (no NUL)";
			goto fail;
		}
		r->glob = json_object_get_string(v);
	}
	return 0;
fail:
	request_free(r);
	return -1;
}

void
request_free(struct control_req *r)
{
	json_object_put(r->json);
	memset(r, 0, sizeof(*r));
}

