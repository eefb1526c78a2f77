/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* guestlog.c: a guest's stdout and stderr, through a pipe hubd reads in
 * its loop: each line into hubd's log tagged with the guest's name, and
 * the last lines kept (across restarts) for hubctl logs. */
#ifndef HUB_GUESTLOG_H
#define HUB_GUESTLOG_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#define GUESTLOG_LINES		200	/* kept per guest, at most ... */
#define GUESTLOG_BYTES		65536	/* ... and this many bytes in all */
#define GUESTLOG_LINE_MAX	1024	/* a longer line is cut into pieces */
/* Of a guest's lines (its output and hub.log) hubd's log takes this many
 * at once, then this many a second; the rest are kept and counted. */
#define GUESTLOG_BURST		1000
#define GUESTLOG_RATE		50
/* Of a guest's output hubd reads this many bytes at once, then this many
 * a second: a guest that writes faster waits in its writes, and costs
 * hubd no more than that. */
#define GUESTLOG_READ_BURST	(4u << 20)
#define GUESTLOG_READ_RATE	(1u << 20)

struct hub;
struct peer;

/* What a guest may still do at once (bytes read, lines logged): refilled
 * at a rate a second, up to a burst. */
struct guestlog_budget {
	uint64_t	tokens;
	uint64_t	at_ns;		/* counted up to here */
};

struct guestlog {
	int		fd;		/* the pipe's read end, -1: none */
	ev_io		w;
	ev_timer	pause;		/* read again once it runs out */
	struct guestlog_budget	read_budget;	/* bytes of its output hubd may read */
	char		**lines;	/* ring of GUESTLOG_LINES, NULL: none yet */
	uint32_t	first, n;
	size_t		bytes;		/* of the lines kept */
	uint64_t	total;		/* lines ever */
	struct guestlog_budget	log_budget;	/* lines hubd's log may take */
	uint64_t	unlogged;	/* lines not logged since the last said so */
	uint64_t	said_ns;	/* when that was last said */
	char		part[GUESTLOG_LINE_MAX];	/* a line not ended yet */
	size_t		plen;
};

/* Once per entry. */
void		guestlog_init(struct peer *p);
/* Before a spawn: the pipe; its write end (close-on-exec) for the child's
 * 1 and 2 in *wfd. 0 or -errno. */
int		guestlog_pipe(struct peer *p, int *wfd);
/* The guest runs: its output is read from now on. */
void		guestlog_watch(struct hub *h, struct peer *p);
/* Its instance is gone: what is left in the pipe is read, the pipe
 * closed; the lines stay. */
void		guestlog_end(struct hub *h, struct peer *p);
/* The kept lines go (the entry is freed; its instance ended before). */
void		guestlog_free(struct peer *p);
/* Lines hubd writes about the guest (its stack), tag before each: logged
 * and kept as its own. text is changed (control characters). */
void		guestlog_text(struct peer *p, const char *tag, char *text, size_t len);
/* Whether hubd's log takes one more line of the guest's now (its
 * output, hub.log): GUESTLOG_BURST at once, GUESTLOG_RATE a second; one
 * it does not take is counted, and said in a line once it takes them
 * again. */
int		guestlog_may_log(struct peer *p);
/* The i-th kept line, the oldest first (i < p->out.n). */
const char	*guestlog_line(const struct peer *p, uint32_t i);

#endif
