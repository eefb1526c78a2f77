/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hangstack.c: a hung guest's stack, taken before it is killed: by
 * eu-stack or gdb when installed, run as a child hubd's loop watches
 * with a time limit; else by SIGABRT (a core dump, or libguest's crash
 * handler, says where it was). A guest that catches HANGSTACK_SIGNAL
 * (hubguest does: every thread's Python stack, which no tool sees, to
 * its stderr) gets it first, and HANGSTACK_DUMP_S to write it. */
#ifndef HUB_HANGSTACK_H
#define HUB_HANGSTACK_H

#include <signal.h>
#include <sys/types.h>

#include <ev.h>

#define HANGSTACK_LIMIT_S	5.0	/* the tool's time, then SIGKILL */
#define HANGSTACK_ABORT_S	1.0	/* after SIGABRT: time to dump */
#define HANGSTACK_SIGNAL	(SIGRTMIN + 2)	/* "write your own stack" */
#define HANGSTACK_DUMP_S	0.5	/* then its time to, before the tool */

struct hub;
struct peer;

enum hangstack_how {
	HANGSTACK_NONE = -1,	/* off, or nothing could be started */
	HANGSTACK_TOOL,		/* the tool runs: hangstack_done follows */
	HANGSTACK_ABORT,	/* SIGABRT sent */
};

struct hangstack {
	pid_t		pid;		/* the tool, 0: none running */
	int		pidfd;
	int		out;		/* a memfd: its stdout and stderr */
	pid_t		target;		/* the guest's pid then */
	uid_t		uid;		/* whom the tool runs as: the guest's user */
	void		(*done)(struct hub *h, struct peer *p);	/* the tool ended */
	const char	*tool;		/* to run once dump is over */
	ev_io		w;
	ev_timer	dump;		/* the guest writes its own stack */
};

void		hangstack_init(struct peer *p);
/* Starts taking p's stack (p->pid); with HANGSTACK_TOOL, done runs when
 * the tool has ended, its output logged. */
enum hangstack_how hangstack_start(struct hub *h, struct peer *p,
				   void (*done)(struct hub *h, struct peer *p));
/* hubd exits: a tool still running is killed. */
void		hangstack_kill(struct peer *p);

#endif
