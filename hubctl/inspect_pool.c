/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl inspect's reading of a zone's shared pool: its file mapped
 * read-only and its headers checked, then its areas, its figures per
 * class and what validate finds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/poolfig.h"
#include "hubctl/inspector.h"
#include "proto/segment.h"

/* hp_var_validate_twice's report: one problem into the list. */
static void
add_problem(void *arg, const char *text)
{
	inspect_problem(arg, "%s", text);
}

/* validate()'s problems into problems. Who is alive is not known here:
 * any peer id counts as a live owner. A live pool changes meanwhile:
 * with twice set, a problem counts only when a second pass says it
 * again, as in hubd's pool --validate. */
static void
pool_problems(struct hp_varpool *vp, int twice, json_object *problems)
{
	if (hp_var_validate_twice(vp, twice, NULL, NULL, add_problem, problems) < 0)
		inspect_problem(problems, "not checked: out of memory");
}

/* A pool, read-only: its areas, its figures per class and validate()'s
 * problems. */
json_object *
inspect_pool(struct hp_varpool *vp, const char *name, const char *file, int live)
{
	json_object *o = json_object_new_object(), *classes = json_object_new_array();
	json_object *areas = json_object_new_array(), *problems = json_object_new_array();
	uint64_t end = vp->offset + hp_var_region_size(vp->nclasses, vp->max_guests);

	json_object_object_add(o, "name", json_object_new_string(name));
	if (file != NULL)
		json_object_object_add(o, "file", json_object_new_string(file));
	inspect_area(areas, "shared pool headers", 0, vp->offset, end - vp->offset);
	for (uint32_t c = 0; c < vp->nclasses; c++) {
		json_object *e = pool_class_json(vp, c);
		uint64_t extents = json_object_get_uint64(json_object_object_get(e, "extents"));

		for (uint32_t x = 0; x < extents && x < vp->c[c].mapped; x++) {
			uint64_t off = hp_load_relaxed_u64(&vp->cls[c].extent_offsets[x]);
			char area[48];

			snprintf(area, sizeof(area), "pool class %u extent %u", c, x);
			inspect_area(areas, area, 0, off, vp->c[c].extent_bytes);
			if (off + vp->c[c].extent_bytes > end)
				end = off + vp->c[c].extent_bytes;
		}
		json_object_array_add(classes, e);
	}
	inspect_areas_sort(areas);
	pool_problems(vp, live, problems);
	json_object_object_add(o, "bytes", json_object_new_uint64(end - vp->offset));
	json_object_object_add(o, "max_extents", json_object_new_int((int)vp->max_extents));
	json_object_object_add(o, "max_guests", json_object_new_int((int)vp->max_guests));
	json_object_object_add(o, "classes", classes);
	json_object_object_add(o, "areas", areas);
	json_object_object_add(o, "problems", problems);
	return o;
}

/* -why for what is wrong: the file (no regular one, too short or too
 * long, not mappable) or its headers (hp_var_attach's). */
int
pool_map_open(struct pool_map *pm, const char *path, uint32_t max_guests, const char **why)
{
	struct stat st;
	int rc;

	pm->base = NULL;
	if ((pm->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		*why = "cannot open it";
		return -errno;
	}
	if (fstat(pm->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		rc = -EBADMSG;
		goto fail;
	}
	if ((uint64_t)st.st_size < HP_VAR_EXTENT_ALIGN || (uint64_t)st.st_size > HP_SEGMENT_MAX) {
		*why = "not a pool file: too short or too long";
		rc = -EBADMSG;
		goto fail;
	}
	pm->size = (uint64_t)st.st_size;
	pm->base = mmap(NULL, (size_t)pm->size, PROT_READ, MAP_SHARED, pm->fd, 0);
	if (pm->base == MAP_FAILED) {
		pm->base = NULL;
		*why = "cannot map it";
		rc = -errno;
		goto fail;
	}
	/* extents published after this fstat are mapped read-only on their own */
	if ((rc = hp_var_attach(&pm->vp, pm->base, pm->size, pm->fd, 0, 0, max_guests, 0,
				why)) != 0)
		goto fail;
	return 0;
fail:
	if (pm->base != NULL)
		munmap(pm->base, (size_t)pm->size);
	close(pm->fd);
	return rc;
}

void
pool_map_close(struct pool_map *pm)
{
	hp_var_close(&pm->vp);
	munmap(pm->base, (size_t)pm->size);
	close(pm->fd);
}
