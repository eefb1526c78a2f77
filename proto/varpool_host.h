/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The host's upkeep of the variable-size shared slot pool (varpool.h):
 * appending extents, the sweeper, rebuilding a free list, validate and the
 * per-class figures; varpool_host.c. hubd calls them, hubctl inspect calls
 * validate and the figures on a read-only view; a guest never does. */
#ifndef HP_VARPOOL_HOST_H
#define HP_VARPOOL_HOST_H

#include <stdint.h>

#include "proto/varpool.h"

/* Host: appends an extent to class c (r[shm.varslot.extents]). 0,
 * -ENOSPC at max_extents or when the file cannot grow. */
int hp_var_grow(struct hp_varpool *vp, uint32_t c);

/* Host: gives the memory of class c's free slots in its extents past the
 * first back to the system (the pages go; the file keeps its size, the
 * mappings stay, and a slot's pages come back, zeroed, when it is next
 * written). Each free slot is taken off the list first, so no one can
 * take it meanwhile, and put back after: those of the first extent last,
 * so that the next allocations take them. A guest allocating meanwhile
 * finds the class short, as when it is exhausted. Returns the bytes
 * given back. */
uint64_t hp_var_release(struct hp_varpool *vp, uint32_t c);

/* Whether a guest found class c exhausted since the last call, taking the
 * request (r[shm.varslot.extents]): 1 if the host should grow it. */
int hp_var_take_grow_request(struct hp_varpool *vp, uint32_t c);

/* Host: the sweeper. Every held slot whose owner dead(arg, owner) says is
 * gone, that is held by no peer, in no state or as generation 0, or held
 * as the host's while the host's record says it is not, returns to its
 * list with a new generation; classes marked corrupt, whose list has a
 * cycle or a link out of range, or with Free slots on no list for good
 * are rebuilt; held slots older than stuck_ns (0: no check) are counted
 * into *stuck and passed to on_stuck.
 * Returns how many slots came back; *why (NULL: not wanted) says for
 * what. held_by (NULL: not wanted), an array of max_guests + 1, is
 * zeroed, then gets for each owner (0 the host, then each peer id) the
 * slots it holds (Allocated or InFlight) once this sweep's returns are
 * done, and their bytes (each its class's slot size): a slot held by
 * nobody yet counts for no one. */
struct hp_var_held {
	uint32_t	cls, index, owner, gen;
	uint64_t	held_ns;
};
struct hp_var_back {
	uint32_t	dead;		/* held by a peer that is gone */
	uint32_t	forged;		/* held as the host's, not by the host */
	uint32_t	no_owner;	/* held by no peer, or by nobody for too long */
	uint32_t	bad_state;	/* in no state at all */
	uint32_t	gen_zero;	/* held as generation 0 (never allocated) */
	uint32_t	lost;		/* Free, and on no list for good */
};
struct hp_var_tally {
	uint32_t	slots;
	uint64_t	bytes;
};
uint32_t hp_var_sweep(struct hp_varpool *vp, uint64_t now, uint64_t stuck_ns,
		      int (*dead)(void *arg, uint32_t owner), void *arg,
		      void (*on_stuck)(void *arg, const struct hp_var_held *s),
		      uint32_t *stuck, struct hp_var_back *why,
		      struct hp_var_tally *held_by);
/* Host: the free list of class c rebuilt from the slots' metadata. */
void hp_var_rebuild(struct hp_varpool *vp, uint32_t c);

/* validate(): every slot on exactly one free list or held by one live
 * owner (live NULL: any peer id counts as live; on the host's view, a
 * slot held as the host's must be in its record), no list with a cycle
 * or an out-of-range link, generations sane. Each problem goes to report;
 * returns how many were found. */
uint32_t hp_var_validate(struct hp_varpool *vp, int (*live)(void *arg, uint32_t owner),
			 void *arg, void (*report)(void *arg, const char *problem), void *rarg);

/* validate() of a pool others change meanwhile: a slot in transit can
 * look odd once, so with twice a problem counts only when a second pass
 * says it again. A broken list of a large class can make a problem of
 * every slot: each pass keeps the first HP_VAR_PROBLEMS_MAX, and one more
 * report says how many were left out. Returns how many problems counted;
 * -1 (nothing reported) when out of memory. */
#define HP_VAR_PROBLEMS_MAX	1000
int64_t hp_var_validate_twice(struct hp_varpool *vp, int twice,
			      int (*live)(void *arg, uint32_t owner), void *arg,
			      void (*report)(void *arg, const char *problem), void *rarg);

/* Per-class figures: the peers' counters summed, the host's diagnostics,
 * and the slots counted from the metadata. */
struct hp_var_class_stats {
	uint32_t	slot_size, slots_per_extent, extents, slots;
	uint32_t	free, in_use, high_water;
	uint64_t	allocs, frees, conflicts, fallbacks, waits, errors;
	struct hp_var_diag diag;
};
void hp_var_class_stats(struct hp_varpool *vp, uint32_t c, struct hp_var_class_stats *s);

#endif
