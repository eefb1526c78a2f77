/* What control.c (the socket, its clients and their buffers) and the
 * commands above it (commands.c) share: a client, and the ways a command
 * answers it. Private to those two. */
#ifndef HUB_CLIENT_H
#define HUB_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ev.h>
#include <json-c/json.h>

#include "daemon/control.h"
#include "daemon/hubd.h"

/* Item bytes of a call's stream that go back to the guest as credit once
 * the output up to end has been written (output offsets count from the
 * connection's start). */
struct mark {
	uint64_t	start;
	uint64_t	end;
	uint32_t	credit;
};

struct client {
	struct client	*next;
	struct hub	*h;
	int		fd;
	uid_t		uid;
	int		privileged;	/* root or hubd's own user: may change things */
	ev_io		rw;
	ev_io		ww;
	ev_timer	tw;		/* client_timeout */
	ev_tstamp	rx_at;		/* last request bytes */
	ev_tstamp	tx_at;		/* last write progress, or since output waits */
	char		in[CONTROL_MSG_MAX];
	size_t		inlen;
	char		*out;		/* out[outpos, outlen) not written yet */
	size_t		outpos;
	size_t		outlen;
	size_t		outcap;
	uint64_t	queued;		/* output bytes ever added */
	uint64_t	written;	/* ... and written */
	struct mark	*marks;		/* a ring, oldest at mhead */
	uint32_t	mhead;
	uint32_t	mcount;
	uint32_t	mcap;
	int		calling;	/* a call is under way */
	int		eof;		/* it sends no more: close once served */
	int		closing;	/* close once out is written */
	int		broken;		/* out of memory: close at once */
	struct ext_call	call;
};

/* control.c: a client's output. */
int	client_out_line(struct client *c, const char *s, size_t n);
void	client_mark_add(struct client *c, uint64_t start, uint32_t credit);
void	client_reply(struct client *c, json_object *o);
void	client_reply_error(struct client *c, const char *msg);

#endif
