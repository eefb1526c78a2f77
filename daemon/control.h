/* The control socket: newline-delimited JSON requests and answers. */
#ifndef HUB_CONTROL_H
#define HUB_CONTROL_H

#include <stddef.h>

struct hub;

#define CONTROL_MSG_MAX		65536	/* one request line at most */

/* Control connections at once, by the caller's uid (SO_PEERCRED): in all,
 * of which the last CONTROL_CLIENTS_RESERVED only for root and hubd's own
 * user, and at most CONTROL_CLIENTS_PER_UID for any other user. */
#define CONTROL_CLIENTS_MAX		256
#define CONTROL_CLIENTS_RESERVED	16
#define CONTROL_CLIENTS_PER_UID		16

int	control_init(struct hub *h);
void	control_close(struct hub *h);

/* One request, parsed and checked before anything acts on it. */
#define CTL_PEERS	1
#define CTL_METHODS	2
#define CTL_STATUS	3
#define CTL_STATS	4
#define CTL_CALL	5
#define CTL_RELOAD	6
#define CTL_RESTART	7
#define CTL_STOP	8
#define CTL_START	9

#define CTL_ARGS_MAX	8

/* A call's argument as JSON gave it: len bytes, NUL bytes included. */
struct ctl_arg {
	const char	*s;
	size_t		len;
};

struct control_req {
	int		cmd;			/* CTL_* */
	const char	*method;		/* call */
	const char	*name;			/* restart, stop, start */
	struct ctl_arg	args[CTL_ARGS_MAX];	/* call */
	int		nargs;
	void		*json;			/* owns the strings above */
};

/* 0, or -1 with *why saying what is wrong with the request. */
int	control_parse(const char *line, size_t len, struct control_req *r, const char **why);
void	control_req_free(struct control_req *r);

#endif
