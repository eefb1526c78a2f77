/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What hubctl's files share: main.c (the command table, usage, main),
 * client.c (the connection to hubd), json.c (reading its answers), a
 * file per command or kind of command: listings.c (status, version,
 * methods, lanes, stats), peers.c, call.c, topics.c (listen, emit,
 * topics), lifecycle.c (start, stop, restart, reload), pool.c, debug.c
 * (calls, logs, ticket), remotes.c (remotes; calls' WHERE), monitor.c, views.c (top and stats -w),
 * domains.c (a live hub's memory as fds; hubctl dump) and
 * inspect.c (hubctl inspect: that memory, or files, read alone; its own
 * files share inspector.h). Every command gets the struct ctl that main
 * filled: no file reaches into another's globals. */
#ifndef HUB_HUBCTL_H
#define HUB_HUBCTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct hp_sig;

/* The views that run on (top, stats -w): their options. */
struct every {
	double	interval;	/* -d: seconds between frames or lines */
	long	count;		/* -n: frames or lines, then exit 0; 0: no end */
	int	watch;		/* stats -w */
};

/* One run of hubctl: its options and its connection to hubd. */
struct ctl {
	int		 fd;		/* the connection; -1 for inspect of files */
	const char	*sock;		/* -s: where the views connect again */
	int		 timeout_s;	/* -t: give up on an answer after this long */
	long		 call_wait_ms;	/* call --timeout without -t: waited this long */
	uint64_t	 answer_by_ns;	/* a call's: given up then, items or not (0: none) */
	int		 json;		/* -j: answers as JSON, one object per line */
	int		 write_errno;	/* client.c: the request could not be sent: why */
	struct every	 every;
};

/* main.c: stdout written out now; a reader that went (hubctl listen |
 * head) ends hubctl with 0, any other failure with 2 ("stdout: ..."). */
void		 out_flush(void);
/* client.c: requests to hubd and its answers; each exits 2 when hubd
 * cannot be reached or the connection ends without an answer. */
int		 client_connect(const struct ctl *ctl);
/* Exits 1: no answer in the time -t (or call's --timeout) gave. */
void		 client_no_answer_in_time(const struct ctl *ctl) __attribute__((noreturn));
/* 1, having said hubctl's own refusal (text from fmt, escaped already):
 * on stderr, or with -j as hubd's are, {"ok":false,"error":...} on stdout. */
int		 client_refusal(const struct ctl *ctl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One request line (req is freed); refused here if hubd would refuse it
 * for its size. */
void		 client_send(struct ctl *ctl, json_object *req);
/* One answer; NULL when hubd closed the connection. */
json_object	*client_read(struct ctl *ctl);
void		 client_no_answer(const struct ctl *ctl, const char *during)
	__attribute__((noreturn));
/* 1 for an answer with ok false, printed and freed; 0 otherwise. */
int		 client_failed(const struct ctl *ctl, json_object *a);
/* {"cmd": cmd} sent, its answer read. */
json_object	*client_cmd(struct ctl *ctl, const char *cmd);
/* cmd's answer to print; NULL when that is all there is to do: it failed
 * (*rc 1, printed) or the answer went out as JSON (*rc 0). */
json_object	*client_ask(struct ctl *ctl, const char *cmd, int *rc);
/* The same with "name": name (a guest's), for the commands about one. */
json_object	*client_ask_about(struct ctl *ctl, const char *cmd, const char *name,
				  int *rc);
/* cmd's answer, for a view: asked once more on a new connection when hubd
 * closed this one; exits 1 when it says no. */
json_object	*client_ask_again(struct ctl *ctl, const char *cmd);

/* json.c, each js_NAME: o[key]; as text for people ("" when it is not
 * there), as a number, as a list (which must be there: hubctl exits 2 if
 * not) */
json_object	*js_get(json_object *o, const char *key);
const char	*js_text(json_object *o, const char *key);
/* v as text for people: a string's control characters escaped, in v
 * (daemon/escape.h); every word of hubd's that hubctl prints as text
 * goes through here */
const char	*js_shown(json_object *v);
uint64_t	 js_u64(json_object *o, const char *key);
json_object	*js_list(json_object *o, const char *key);
/* A table column's width for key of list's objects: least, or the
 * longest value (64 at most), so that long names keep the rows aligned. */
int		 js_width(json_object *list, const char *key, int least);
/* A JSON number of units, each per ns long, in ns (0 if not a number). */
uint64_t	 js_ns(json_object *v, uint64_t per);
/* a on a line as JSON, then freed; 0 */
int		 js_print(json_object *a);

/* The commands that ask hubd and print its answer; hubctl_NAME runs
 * "hubctl NAME". listings.c: */
int		 hubctl_status(struct ctl *ctl, int argc, char **argv);
int		 hubctl_version(struct ctl *ctl, int argc, char **argv);
int		 hubctl_methods(struct ctl *ctl, int argc, char **argv);
int		 hubctl_lanes(struct ctl *ctl, int argc, char **argv);
int		 hubctl_stats(struct ctl *ctl, int argc, char **argv);

/* peers.c: hubctl peers [NAME] */
int		 hubctl_peers(struct ctl *ctl, int argc, char **argv);
/* A guest's state for people, from an answer's "state", "then" and
 * "starts_in_s": "stopping, will start when stopped", "backoff, starts
 * in 4.2 s", or the state alone. buf, returned. */
const char	*state_text(char *buf, size_t len, json_object *o);

/* call.c: hubctl call [--timeout MS] [--trace TRACEPARENT] METHOD [ARG...] */
#define CALL_USAGE	"[--timeout MS] [--trace TP|new] METHOD [ARG | --bytes-file FILE]... [-- ARG...]"
int		 hubctl_call(struct ctl *ctl, int argc, char **argv);
/* The arguments of a call (or an emit) as hubd takes them: each ARG as
 * text, --bytes-file FILE as FILE's bytes; NULL after saying what is
 * wrong (cmd names the command). */
json_object	*call_args(const char *cmd, int argc, char **argv);
/* Where the arguments taken as they are begin: at the first "--" (its
 * index; argc: none), so that a text "--bytes-file" can be passed. */
int		 call_args_end(int argc, char **argv);
/* Whether argument at of sig (name's: a method's, a topic's) takes
 * --bytes-file FILE, a bytes or an rx<bytes>; said why not: its text
 * form "base64:..." would reach a str as that text. */
int		 call_file_fits(const char *cmd, const char *file, const struct hp_sig *sig,
				uint8_t at, const char *name);

/* topics.c: hubctl listen TOPIC, emit TOPIC VALUE..., topics */
int		 hubctl_listen(struct ctl *ctl, int argc, char **argv);
int		 hubctl_emit(struct ctl *ctl, int argc, char **argv);
int		 hubctl_topics(struct ctl *ctl, int argc, char **argv);

/* lifecycle.c: hubctl start, stop, restart NAME; hubctl reload */
int		 hubctl_restart(struct ctl *ctl, int argc, char **argv);
int		 hubctl_stop(struct ctl *ctl, int argc, char **argv);
int		 hubctl_start(struct ctl *ctl, int argc, char **argv);
int		 hubctl_reload(struct ctl *ctl, int argc, char **argv);

/* pool.c: hubctl pool [--validate] [--json] */
int		 hubctl_pool(struct ctl *ctl, int argc, char **argv);

/* monitor.c: hubctl monitor [GLOB] */
int		 hubctl_monitor(struct ctl *ctl, int argc, char **argv);

/* debug.c: hubctl calls, hubctl logs NAME, hubctl ticket NAME */
int		 hubctl_calls(struct ctl *ctl, int argc, char **argv);
int		 hubctl_logs(struct ctl *ctl, int argc, char **argv);
int		 hubctl_ticket(struct ctl *ctl, int argc, char **argv);

/* remotes.c: hubctl remotes [GUEST]; the NATS bridges among the guests
 * (the names of those serving GUEST.stats, NULL when hubd said no), and
 * for hubctl calls each call's "where" on NATS added from theirs */
int		 hubctl_remotes(struct ctl *ctl, int argc, char **argv);
json_object	*bridges_list(struct ctl *ctl);
void		 bridges_where(struct ctl *ctl, json_object *calls);

/* views.c: hubctl top, and hubctl stats -w */
int		 hubctl_top(struct ctl *ctl, int argc, char **argv);
int		 stats_watch(struct ctl *ctl);

/* domains.c: a live hub's memory, hubd's "domains" answer and the fds
 * that came with it (fds[i] is list[i]'s: a guest's domain, or a zone's
 * pool), every entry checked: a kind hubctl knows, a name it can use as
 * a file name, the guests first. */
#define DOMAINS_MAX	512	/* max_guests domains and as many zones: 255 + 255 */
struct domains {
	json_object	*answer;
	json_object	*list;			/* answer's "domains" */
	uint32_t	 max_guests;		/* the hub's: a pool's owner ids */
	int		 fds[DOMAINS_MAX];		/* -1: closed already */
	uint32_t	 nfds;
};
/* Connects (ctl->fd), asks and receives; exits 2 (every fd closed, a
 * message) when it cannot: no hub, no answer within -t (10 s when not
 * given: hubd may be hung), a refusal (root and hubd's user only), or an
 * answer that is not what hubd sends. */
void		 domains_fetch(struct ctl *ctl, struct domains *d);
/* Closes every fd still open and frees the answer. */
void		 domains_free(struct domains *d);
/* Whether a guest's or zone's name, a suffix after it, can be a file
 * name: letters, digits, '.', '_', '-', 64 at most. */
int		 domain_name_ok(const char *s);
/* hubctl dump DIR */
int		 hubctl_dump(struct ctl *ctl, int argc, char **argv);

/* inspect.c: hubctl inspect [FILE...]: without FILE the live hub's
 * memory (domains.c), with FILE those files (no daemon, ctl->fd unused). */
int		 hubctl_inspect(struct ctl *ctl, int argc, char **argv);

#endif
