/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The commands that start and stop guests: start, stop and restart one
 * by name (supervise.c carries them out), reload the config (reload.c),
 * and the ticket that starts a guest of start = manual by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/client.h"
#include "daemon/cmd.h"
#include "daemon/manual.h"
#include "daemon/reload.h"
#include "daemon/supervise.h"

/* Its state, and "then": "start" when it starts again once stopped (a
 * start or restart came while it stopped): never a bare "stopping" that
 * reads as if the start was lost; backing off, when it starts. */
static void
reply_state(struct client *c, struct peer *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	cmd_add_state(c->h, o, p);
	client_reply(c, o);
}

/* restart, start: the guest, or NULL when it cannot start (told why). */
static struct peer *
guest_startable(struct client *c, const char *name)
{
	struct peer *p;
	char why[160];

	if ((p = cmd_guest_named(c, name)) == NULL)
		return NULL;
	/* its pending start would be dropped (the hub stops) or would run
	 * a guest the config no longer has */
	if (c->h->stopping) {
		client_reply_error(c, "hubd is stopping");
		return NULL;
	}
	if (p->removed) {
		snprintf(why, sizeof(why), "guest %.64s was removed from the config and is "
			 "stopping: add it again and reload", name);
		client_reply_error(c, why);
		return NULL;
	}
	return p;
}

void
cmd_restart(struct client *c, const struct control_req *r)
{
	struct peer *p;

	if ((p = guest_startable(c, r->name)) == NULL)
		return;
	supervise_restart(c->h, p);
	reply_state(c, p);
}

void
cmd_stop(struct client *c, const struct control_req *r)
{
	struct peer *p;

	if ((p = cmd_guest_named(c, r->name)) == NULL)
		return;
	supervise_stop(c->h, p);
	reply_state(c, p);
}

/* A stopped or failed guest starts, a stopping one once it has stopped
 * (lifecycle.c decides); a running one is left as it is. */
void
cmd_start(struct client *c, const struct control_req *r)
{
	struct peer *p;

	if ((p = guest_startable(c, r->name)) == NULL)
		return;
	supervise_start(c->h, p);
	reply_state(c, p);
}

void
cmd_reload(struct client *c, const struct control_req *r)
{
	json_object *o, *lines = json_object_new_array();
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *msgs;
	int rc;

	(void)r;

	if ((msgs = open_memstream(&text, &len)) == NULL) {
		json_object_put(lines);
		client_reply_error(c, "out of memory");
		return;
	}
	rc = reload_config(c->h, msgs);
	fclose(msgs);
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		json_object_array_add(lines, json_object_new_string(line));
	free(text);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(rc == 0));
	if (rc != 0)
		json_object_object_add(o, "error", json_object_new_string(
			"reload refused: nothing changed"));
	json_object_object_add(o, "messages", lines);
	client_reply(c, o);
}

/* start = manual: how to start the guest by hand, with its ticket
 * (manual.c): {"env": what hubd would add to its environment, "argv",
 * "as": what switches to its user first, [] when nothing need}. */
void
cmd_ticket(struct client *c, const struct control_req *r)
{
	json_object *o, *env, *argv, *as;
	struct peer *p;
	char why[160], *arg;

	if ((p = cmd_guest_named(c, r->name)) == NULL)
		return;
	if (manual_socket(p) == NULL) {
		snprintf(why, sizeof(why), "guest %s is %s: %s", p->conf->name,
			 lifecycle_state_name(p->state), !p->conf->start_manual ?
			 "hubd starts it (its start is not manual)" :
			 "no ticket waits (hubctl start or restart makes one)");
		client_reply_error(c, why);
		return;
	}
	if (asprintf(&arg, "--hub-ticket=%s:%s", manual_socket(p), manual_secret(p)) < 0) {
		client_reply_error(c, "out of memory");
		return;
	}
	o = json_object_new_object();
	env = json_object_new_array();
	argv = json_object_new_array();
	as = json_object_new_array();
	/* what spawn.c's child sets */
	for (char **e = p->conf->env; e != NULL && *e != NULL; e++)
		json_object_array_add(env, json_object_new_string(*e));
	if (p->conf->processors != 0) {
		char n[32];

		snprintf(n, sizeof(n), "HUB_PROCESSORS=%u", p->conf->processors);
		json_object_array_add(env, json_object_new_string(n));
	}
	json_object_array_add(argv, json_object_new_string(p->conf->exec));
	for (char **a = p->conf->argv + 1; *a != NULL; a++)
		json_object_array_add(argv, json_object_new_string(*a));
	json_object_array_add(argv, json_object_new_string(arg));
	explicit_bzero(arg, strlen(arg));
	free(arg);
	/* root runs it as its user, as hubd would */
	if (geteuid() == 0 && p->conf->run_uid > 0) {
		char u[32], g[32];

		snprintf(u, sizeof(u), "--reuid=%lld", (long long)p->conf->run_uid);
		snprintf(g, sizeof(g), "--regid=%lld", (long long)(p->conf->run_gid >= 0 ?
			 p->conf->run_gid : p->conf->run_uid));
		json_object_array_add(as, json_object_new_string("setpriv"));
		json_object_array_add(as, json_object_new_string(u));
		json_object_array_add(as, json_object_new_string(g));
		json_object_array_add(as, json_object_new_string("--clear-groups"));
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "name", json_object_new_string(p->conf->name));
	json_object_object_add(o, "socket", json_object_new_string(manual_socket(p)));
	json_object_object_add(o, "as", as);
	json_object_object_add(o, "env", env);
	json_object_object_add(o, "argv", argv);
	client_reply(c, o);
}
