/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's commands that change what runs: start, stop and restart a
 * guest, reload the config; each prints what hubd did. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "hubctl/hubctl.h"

static int
supervise(struct ctl *ctl, const char *cmd, const char *name)
{
	json_object *a;
	char buf[96];
	int rc;

	if ((a = client_ask_about(ctl, cmd, name, &rc)) == NULL)
		return rc;
	printf("%s: %s\n", name, state_text(buf, sizeof(buf), a));
	json_object_put(a);
	return 0;
}

int
hubctl_restart(struct ctl *ctl, int argc, char **argv)
{
	(void)argc;
	return supervise(ctl, "restart", argv[0]);
}

int
hubctl_stop(struct ctl *ctl, int argc, char **argv)
{
	(void)argc;
	return supervise(ctl, "stop", argv[0]);
}

int
hubctl_start(struct ctl *ctl, int argc, char **argv)
{
	(void)argc;
	return supervise(ctl, "start", argv[0]);
}

/* What reload did and refused, then the verdict. A refusal (permission)
 * has no messages: only the error. */
int
hubctl_reload(struct ctl *ctl, int argc, char **argv)
{
	json_object *a = client_cmd(ctl, "reload"), *msgs;
	int ok = json_object_get_boolean(js_get(a, "ok"));

	(void)argc;
	(void)argv;
	msgs = js_get(a, "messages");
	if (ctl->json) {
		js_print(a);
		return !ok;
	}
	for (size_t i = 0; json_object_is_type(msgs, json_type_array) &&
	     i < json_object_array_length(msgs); i++)
		printf("%s\n", js_shown(json_object_array_get_idx(msgs, i)));
	if (client_failed(ctl, a))
		return 1;
	json_object_put(a);
	return 0;
}
