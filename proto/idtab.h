/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A table of fixed-size entries found by a 64-bit id: hubd's calls to a
 * guest awaiting their answer and its method index, libguest's calls out.
 * Each entry begins with its id (uint64_t); id 0 marks a free slot.
 * Open addressing with linear probing, at most half full; a removal shifts
 * the rest of its cluster back, so there are no tombstones and a lookup
 * stops at the first free slot. An id's slot is its product with a
 * random odd key, the top bits (multiply-shift): ids a guest chooses (its
 * request ids, the names its methods hash from) cannot be made to share
 * slots by someone who does not know the key, and sequential ids spread.
 * Inserting or removing moves entries: a pointer into the table is good
 * until the next change. */
#ifndef HP_IDTAB_H
#define HP_IDTAB_H

#include <stddef.h>
#include <stdint.h>

struct hp_idtab {
	uint8_t		*slots;
	size_t		esize;		/* entry size, a multiple of 8 */
	uint32_t	cap;		/* slots: a power of two, 0 before any */
	uint32_t	count;		/* entries in use */
	uint64_t	key;		/* odd, drawn as it first takes memory */
};

#define HP_IDTAB_INIT(type)	{ NULL, sizeof(type), 0, 0, 0 }

/* The entry with this id, or NULL. */
void	*hp_idtab_find(const struct hp_idtab *t, uint64_t id);
/* Room for n more entries: the next n inserts cannot fail. 0 or -1 when
 * out of memory. */
int	hp_idtab_reserve(struct hp_idtab *t, uint32_t n);
/* A new zeroed entry holding id (not 0, not in the table), or NULL when
 * out of memory. */
void	*hp_idtab_insert(struct hp_idtab *t, uint64_t id);
/* Removes e, an entry of t. */
void	hp_idtab_remove(struct hp_idtab *t, void *e);
/* Iteration: *pos starts at 0; each call returns the next entry or NULL
 * at the end. The table must not change during a walk, except that the
 * entry just returned may be changed (not removed). */
void	*hp_idtab_next(const struct hp_idtab *t, uint32_t *pos);
/* Removes e, the entry the walk at *pos just returned; the walk goes on
 * from its slot, where a later entry may have moved: none is missed
 * (one the walk saw may come again). */
void	hp_idtab_remove_walked(struct hp_idtab *t, void *e, uint32_t *pos);
/* Removes some entry and copies it to out: 0, or -1 when t is empty. For
 * draining a table whose entries' owners are told as each goes, and may
 * change the table meanwhile. */
int	hp_idtab_take(struct hp_idtab *t, void *out);
/* Empties t, keeping its memory. */
void	hp_idtab_clear(struct hp_idtab *t);
/* Frees t's memory; t is empty and usable again. */
void	hp_idtab_free(struct hp_idtab *t);

#endif
