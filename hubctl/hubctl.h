/* What hubctl's files share: hubctl.c (the commands that talk to hubd,
 * main), views.c (top and stats -w) and inspect.c (hubctl inspect, a
 * segment read alone). */
#ifndef HUB_HUBCTL_H
#define HUB_HUBCTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

extern int json_out;	/* -j: answers as JSON, one object per line */

/* The views that run on (top, stats -w): their options. */
struct every {
	double	interval;	/* -d: seconds between frames or lines */
	long	count;		/* -n: frames or lines, then exit 0; 0: no end */
	int	watch;		/* stats -w */
};
extern struct every every;

/* hubctl.c */
json_object	*get(json_object *o, const char *key);
/* o[key] as text ("" when it is not there), as a number, as a list (which
 * must be there: hubctl exits 2 if not) */
const char	*text(json_object *o, const char *key);
uint64_t	 u64(json_object *o, const char *key);
json_object	*list(json_object *o, const char *key);
int		 print_json(json_object *a);
/* cmd's answer, for a view: asked once more on a new connection when hubd
 * closed this one; exits 2 when hubd cannot be reached, 1 when it says no. */
json_object	*ask_again(int *fd, const char *cmd);
/* A JSON number of units, each per ns long, in ns (0 if not a number). */
uint64_t	 json_ns(json_object *v, uint64_t per);

/* inspect.c: hubctl inspect SEGMENT; fd is unused (no daemon). */
int		 cmd_inspect(int fd, int argc, char **argv);

/* views.c: hubctl top, and hubctl stats -w */
int		 cmd_top(int fd, int argc, char **argv);
int		 stats_watch(int fd);

#endif
