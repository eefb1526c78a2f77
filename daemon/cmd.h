/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control commands' handlers, one cmd_<name> per row of request.h's
 * CTL_COMMANDS, for the table in commands.c; grouped by the file that
 * defines them. Each answers its client through client.h. */
#ifndef HUB_CMD_H
#define HUB_CMD_H

#include <stddef.h>

#include "daemon/request.h"

struct client;
struct hub;
struct json_object;
struct peer;

/* cmd_call.c: a client's call, and the stream it feeds hub.sink with */
void		cmd_call(struct client *c, const struct control_req *r);
void		cmd_call_feed(struct client *c, const char *line, size_t len);

/* cmd_guests.c: what starts and stops guests */
void		cmd_start(struct client *c, const struct control_req *r);
void		cmd_stop(struct client *c, const struct control_req *r);
void		cmd_restart(struct client *c, const struct control_req *r);
void		cmd_reload(struct client *c, const struct control_req *r);
void		cmd_ticket(struct client *c, const struct control_req *r);

/* cmd_peers.c: the views of the guests */
void		cmd_peers(struct client *c, const struct control_req *r);
void		cmd_logs(struct client *c, const struct control_req *r);
void		cmd_calls(struct client *c, const struct control_req *r);
/* The guest a request names, or NULL when there is none (and the client
 * is told). */
struct peer	*cmd_guest_named(struct client *c, const char *name);
/* Its state into o: "state", "then": "start" when it starts again once
 * stopped, "starts_in_s" while it backs off. */
void		cmd_add_state(struct hub *h, struct json_object *o, struct peer *p);

/* cmd_topics.c: topics for operators */
void		cmd_topics(struct client *c, const struct control_req *r);
void		cmd_listen(struct client *c, const struct control_req *r);
void		cmd_emit(struct client *c, const struct control_req *r);

/* monitor.c: a client that watches the calls as they pass */
void		cmd_monitor(struct client *c, const struct control_req *r);

/* cmd_hub.c: the views of the hub as a whole */
void		cmd_status(struct client *c, const struct control_req *r);
void		cmd_version(struct client *c, const struct control_req *r);
void		cmd_methods(struct client *c, const struct control_req *r);
void		cmd_stats(struct client *c, const struct control_req *r);
void		cmd_lanes(struct client *c, const struct control_req *r);
void		cmd_pool(struct client *c, const struct control_req *r);
void		cmd_domains(struct client *c, const struct control_req *r);

#endif
