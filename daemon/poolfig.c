/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* One size class of the shared pool as JSON (poolfig.h). */
#include <stdint.h>

#include "daemon/poolfig.h"
#include "proto/varpool_host.h"

static void
add(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

json_object *
pool_class_json(struct hp_varpool *vp, uint32_t c)
{
	struct hp_var_class_stats cs;
	json_object *e = json_object_new_object();

	hp_var_class_stats(vp, c, &cs);
	add(e, "class", c);
	add(e, "slot_size", cs.slot_size);
	add(e, "slots_per_extent", cs.slots_per_extent);
	add(e, "extents", cs.extents);
	add(e, "slots", cs.slots);
	add(e, "free", cs.free);
	add(e, "in_use", cs.in_use);
	add(e, "high_water", cs.high_water);
	add(e, "allocs", cs.allocs);
	add(e, "frees", cs.frees);
	add(e, "conflicts", cs.conflicts);
	add(e, "fallbacks", cs.fallbacks);
	add(e, "waits", cs.waits);
	add(e, "errors", cs.errors);
	json_object_object_add(e, "corrupt", json_object_new_boolean(
		hp_load_relaxed_u32(&vp->cls[c].corrupt) != 0));
	if (!vp->host)	/* the host keeps these to itself */
		return e;
	add(e, "reclaimed", cs.diag.reclaimed);
	add(e, "rebuilds", cs.diag.rebuilds);
	add(e, "double_frees", cs.diag.double_frees);
	add(e, "stale_frees", cs.diag.stale_frees);
	add(e, "bad_links", cs.diag.bad_links);
	add(e, "grown", cs.diag.grown);
	return e;
}
