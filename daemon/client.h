/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A control client, what the socket (control.c) and the commands above
 * it (cmd_*.c) share: the client, and the ways a command answers it
 * (client.c). Private to those. */
#ifndef HUB_CLIENT_H
#define HUB_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ev.h>
#include <json-c/json.h>

#include "daemon/hub.h"
#include "daemon/request.h"

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
	/* CLOCK_MONOTONIC ns (hp_now_ns), not libev's wall clock: a clock
	 * step moves no client's timeout */
	uint64_t	rx_ns;		/* last request bytes */
	uint64_t	tx_ns;		/* last write progress, or since output waits */
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
	int		feeding;	/* ... whose stream the client sends (hub.sink -,
					 * or a guest's rx<T> -: uploading) */
	int		uploading;
	int		feed_wait;	/* its next line waits for the callee's credit */
	uint64_t	fed;		/* items it sent */
	uint64_t	sink_hash;	/* ... hashed as it comes (the stream hash) */
	int		monitoring;	/* it watches calls (monitor.c): open until
					 * it closes, whatever it reads */
	int		eof;		/* it sends no more: close once served */
	int		closing;	/* close once out is written */
	int		broken;		/* out of memory: close at once */
	int		*fds;		/* to hand over with the answer at ... */
	uint64_t	fds_at;		/* ... this output byte (control.c) */
	uint32_t	nfds;
	uint32_t	fds_sent;
	struct ext_call	call;
};

/* Output bytes not written yet. */
static inline size_t
client_unsent(const struct client *c)
{
	return c->outlen - c->outpos;
}

/* The fds (dup'd here) go with the next answer line's first bytes
 * (SCM_RIGHTS): 0, or -1 when they cannot (then nothing is kept). One
 * set at a time. */
int	client_pass_fds(struct client *c, const int *fds, uint32_t n);
/* Closes the fds not handed over yet. */
void	client_drop_fds(struct client *c);

/* client.c: a client's output. One answer line; written by control.c. */
int	client_out_line(struct client *c, const char *s, size_t n);
/* The bytes of an item just queued (output [start, queued)) go back to
 * the guest as credit once written. */
void	client_mark_add(struct client *c, uint64_t start, uint32_t credit);
void	client_reply(struct client *c, json_object *o);
void	client_reply_error(struct client *c, const char *msg);
/* For control.c: out of memory for c, closed from the loop; and the
 * credit of the marks that the output written by now has passed. */
void	client_break(struct client *c);
uint64_t client_marks_written(struct client *c);

#endif
