/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control socket: newline-delimited JSON requests and answers. The
 * commands and the parser of their requests: request.h; what each does
 * is handed in at control_init (commands.h), so that the socket names
 * nothing above it. */
#ifndef HUB_CONTROL_H
#define HUB_CONTROL_H

#include <stdint.h>

#include "daemon/request.h"

struct client;
struct ext_call;
struct hub;

/* Control connections at once, by the caller's uid (SO_PEERCRED): in all,
 * of which the last CONTROL_CLIENTS_RESERVED only for root and hubd's own
 * user, and at most CONTROL_CLIENTS_PER_UID for any other user. */
#define CONTROL_CLIENTS_MAX		256
#define CONTROL_CLIENTS_RESERVED	16
#define CONTROL_CLIENTS_PER_UID		16

/* What the layer above the socket serves its clients with. */
struct control_ops {
	/* By enum ctl_cmd ([CTL_NONE] unused), for a request that parsed and
	 * that its client may run: answers through client.h's client_reply*,
	 * or begins a call (client.calling, client.call) whose end answers. */
	void	(*cmd[CTL_NCMDS])(struct client *c, const struct control_req *r);
	/* A call under way: its client has taken bytes of the items of the
	 * call's stream (as on_item had them) ... */
	void	(*call_consumed)(struct hub *h, struct ext_call *x, uint32_t bytes);
	/* ... or went away before the call's end. */
	void	(*call_abandon)(struct hub *h, struct ext_call *x);
	/* A line of the stream the client sends (client.feeding), len
	 * bytes, no newline; NULL when it sends no more (its end of the
	 * connection closed). Read one at a time: the next waits, unread,
	 * until this one is taken. */
	void	(*call_feed)(struct client *c, const char *line, size_t len);
	/* A client that watched calls (client.monitoring) is going. */
	void	(*monitor_gone)(struct client *c);
};

/* ops stays in use until control_close. */
int	control_init(struct hub *h, const struct control_ops *ops);
void	control_close(struct hub *h);
/* The socket's group as [hub] group = gid says, -1: unset (a reload
 * changed it); 0, or -1 with errno. */
int	control_regroup(struct hub *h, int64_t gid);

#endif
