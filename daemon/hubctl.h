/* What hubctl's two files share: hubctl.c (the commands that talk to
 * hubd, main) and inspect.c (hubctl inspect, a segment read alone). */
#ifndef HUB_HUBCTL_H
#define HUB_HUBCTL_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

extern int json_out;	/* -j: answers as JSON, one object per line */

/* hubctl.c */
json_object	*get(json_object *o, const char *key);
int		 print_json(json_object *a);
/* A JSON number of units, each per ns long, in ns (0 if not a number). */
uint64_t	 json_ns(json_object *v, uint64_t per);

/* inspect.c: hubctl inspect SEGMENT; fd is unused (no daemon). */
int		 cmd_inspect(int fd, int argc, char **argv);

#endif
