/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What hubctl inspect's files share (the command itself is in hubctl.h):
 * inspect.c (what to read: the live hub's fds or files; the verdict),
 * inspect_domain.c (a guest's domain, or any segment, read alone),
 * inspect_pool.c (a zone's pool read alone), inspect_print.c (the answer
 * for people) and, below them all, inspect_answer.c (the answer's
 * pieces: problems, areas, a domain's label). Each domain's or pool's
 * answer is a JSON object with its own "areas" and "problems". */
#ifndef HUB_HUBCTL_INSPECTOR_H
#define HUB_HUBCTL_INSPECTOR_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "proto/varpool_host.h"

struct hp_segment;

/* inspect_answer.c: one broken invariant into problems */
void		 inspect_problem(json_object *problems, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One area of a file into areas (peer 0: the area is no peer's). */
void		 inspect_area(json_object *areas, const char *name, int peer, uint64_t off,
			      uint64_t len);
/* areas in file order */
void		 inspect_areas_sort(json_object *areas);
/* "guest NAME" for a domain, "segment NAME" for a whole hub's. */
const char	*inspect_domain_label(char *buf, size_t len, json_object *o);

/* inspect_domain.c: seg read the way a guest reads it (a guest's domain,
 * or a whole hub's segment); own: the peer whose domain it is (0: find
 * out); zone and file NULL when not known. */
json_object	*inspect_domain(struct hp_segment *seg, const char *name, uint32_t own,
				const char *zone, const char *file);

/* inspect_pool.c: a pool's file (a zone's memfd, or a dump's copy),
 * mapped read-only and its headers checked; its owner ids run to
 * max_guests (hubd's: not in the file). */
struct pool_map {
	struct hp_varpool	vp;
	void			*base;
	uint64_t		size;
	int			fd;
};
int		 pool_map_open(struct pool_map *pm, const char *path, uint32_t max_guests,
			       const char **why);
void		 pool_map_close(struct pool_map *pm);
/* The pool's areas, its figures per class and validate's problems;
 * live: the pool changes meanwhile (a problem counts when seen twice). */
json_object	*inspect_pool(struct hp_varpool *vp, const char *name, const char *file,
			      int live);

/* inspect_print.c: a domain's or a pool's answer for people */
void		 inspect_print_domain(json_object *o);
void		 inspect_print_pool(json_object *o);

#endif
