/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control commands' table (request.h's CTL_COMMANDS): each row's
 * handler, cmd_<name> (cmd.h), and the call's progress, for the socket
 * below (control.c: the clients, parsing, who may run what). */
#include "daemon/cmd.h"
#include "daemon/commands.h"
#include "daemon/monitor.h"
#include "daemon/route.h"

/* Each command's handler (request.h's rows), handed to the socket by
 * hubd.c; a client's call goes through route.c (cmd_call), and so do its
 * client's progress and going away. */
#define CTL_HANDLER(id, name, who, needs)	[CTL_##id] = cmd_##name,
const struct control_ops commands_ops = {
	.cmd = { CTL_COMMANDS(CTL_HANDLER) },
	.call_consumed = route_client_consumed,
	.call_abandon = route_client_abandon,
	.call_feed = cmd_call_feed,
	.monitor_gone = monitor_gone,
};
#undef CTL_HANDLER
