/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Control requests (request.c): the commands a request may name, who may
 * run each and what it needs, and the parser that checks a request line
 * against them before anything acts on it. Below the socket (control.c)
 * and the commands (cmd_*.c): it knows neither. */
#ifndef HUB_REQUEST_H
#define HUB_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#define CONTROL_MSG_MAX		65536	/* one request line at most */

/* The control protocol's version, in the version command's answer
 * (doc/control.md): raised only by a change an existing client could
 * trip on (a command, key or value it knows, gone or changed); added
 * commands and keys keep it. */
#define CONTROL_PROTOCOL	1

/* Every control command, one row each: X(ID, name, who, needs). The enum,
 * the parser's table (request.c) and the handlers' table (commands.c) are
 * all made from these rows, so that a command cannot be added without
 * saying who may run it, nor without its handler:
 *   name	as a request gives it ("cmd"), and its handler's: cmd_<name>,
 *		which a cmd_*.c file must define (cmd.h)
 *   who	CTL_READ: whoever can open the socket (mode 0660);
 *		CTL_CHANGE: root and hubd's own user only (SO_PEERCRED):
 *		what changes things, and what hands over the guests'
 *		memory (domains), their output (logs) or the secret that
 *		starts one (ticket)
 *   needs	0; CTL_NEEDS_METHOD: "method", and "args", "timeout_ms"
 *		(1 to 2^31-1), "trace" (a traceparent) if given;
 *		CTL_NEEDS_NAME: "name", a guest's;
 *		CTL_TAKES_VALIDATE: "validate", a boolean, if given;
 *		CTL_NEEDS_TOPIC: "topic", and "policy" if given;
 *		CTL_TAKES_ARGS: "args" if given, as CTL_NEEDS_METHOD's;
 *		CTL_TAKES_GLOB: "glob", a pattern of method names, if given
 *   (monitor is CTL_CHANGE: what it shows is the calls' arguments and
 *   results, the guests' data) */
#define CTL_COMMANDS(X)						\
	X(VERSION,	version,	CTL_READ,	0)			\
	X(PEERS,	peers,		CTL_READ,	0)			\
	X(METHODS,	methods,	CTL_READ,	0)			\
	X(STATUS,	status,		CTL_READ,	0)			\
	X(STATS,	stats,		CTL_READ,	0)			\
	X(LANES,	lanes,		CTL_READ,	0)			\
	X(CALLS,	calls,		CTL_READ,	0)			\
	X(POOL,		pool,		CTL_READ,	CTL_TAKES_VALIDATE)	\
	X(DOMAINS,	domains,	CTL_CHANGE,	0)			\
	X(LOGS,		logs,		CTL_CHANGE,	CTL_NEEDS_NAME)		\
	X(TICKET,	ticket,		CTL_CHANGE,	CTL_NEEDS_NAME)		\
	X(CALL,		call,		CTL_CHANGE,	CTL_NEEDS_METHOD)	\
	X(MONITOR,	monitor,	CTL_CHANGE,	CTL_TAKES_GLOB)		\
	X(RELOAD,	reload,		CTL_CHANGE,	0)			\
	X(RESTART,	restart,	CTL_CHANGE,	CTL_NEEDS_NAME)		\
	X(STOP,		stop,		CTL_CHANGE,	CTL_NEEDS_NAME)		\
	X(START,	start,		CTL_CHANGE,	CTL_NEEDS_NAME)		\
	X(TOPICS,	topics,		CTL_READ,	0)			\
	X(LISTEN,	listen,		CTL_READ,	CTL_NEEDS_TOPIC)	\
	X(EMIT,		emit,		CTL_CHANGE,	CTL_NEEDS_TOPIC | CTL_TAKES_ARGS)

#define CTL_ENUM(id, name, who, needs)	CTL_##id,
enum ctl_cmd {
	CTL_NONE,		/* no command: 0 is never one */
	CTL_COMMANDS(CTL_ENUM)
	CTL_NCMDS
};
#undef CTL_ENUM

/* Who may run a command (no 0: every row says it). */
enum ctl_access {
	CTL_READ = 1,
	CTL_CHANGE,
};

#define CTL_NEEDS_METHOD	0x1
#define CTL_NEEDS_NAME		0x2
#define CTL_TAKES_VALIDATE	0x4	/* optional */
#define CTL_NEEDS_TOPIC		0x8	/* "topic", and "policy" if any */
#define CTL_TAKES_ARGS		0x10	/* "args" if any */
#define CTL_TAKES_GLOB		0x20	/* optional */
#define CTL_GLOB_MAX		256	/* bytes of a glob */

struct ctl_command {
	const char	*name;
	enum ctl_access	access;
	unsigned	needs;		/* CTL_NEEDS_* */
};

/* By enum ctl_cmd; [CTL_NONE] is empty. */
extern const struct ctl_command ctl_commands[CTL_NCMDS];

/* One request, parsed and checked before anything acts on it. */
#define CTL_ARGS_MAX	8

/* A call's argument as JSON gave it: len bytes, NUL bytes included. */
struct ctl_arg {
	const char	*s;
	size_t		len;
};

struct control_req {
	enum ctl_cmd	cmd;
	const char	*method;		/* call */
	const char	*name;			/* restart, stop, start */
	const char	*topic;			/* listen, emit */
	const char	*policy;		/* listen, NULL: not given */
	int		validate;		/* pool */
	const char	*glob;			/* monitor: NULL when not given */
	struct ctl_arg	args[CTL_ARGS_MAX];	/* call */
	int		nargs;
	int64_t		timeout_ms;		/* call: its deadline from now, 0: none */
	const char	*trace;			/* call: a traceparent, NULL: none */
	void		*json;			/* owns the strings above */
};

/* 0, or -1 with *why saying what is wrong with the request. */
int	request_parse(const char *line, size_t len, struct control_req *r, const char **why);
void	request_free(struct control_req *r);

#endif
