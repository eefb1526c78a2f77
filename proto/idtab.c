/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The open-addressing id table (idtab.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "proto/idtab.h"

#define IDTAB_MIN	64

static uint64_t
slot_id(const struct hp_idtab *t, uint32_t i)
{
	uint64_t id;

	memcpy(&id, t->slots + (size_t)i * t->esize, sizeof(id));
	return id;
}

static void *
slot_at(const struct hp_idtab *t, uint32_t i)
{
	return t->slots + (size_t)i * t->esize;
}

/* id's first slot to look at: the top log2(cap) bits of id * key */
static uint32_t
home(const struct hp_idtab *t, uint64_t id)
{
	return (uint32_t)((id * t->key) >> (64 - __builtin_ctz(t->cap)));
}

/* The slot holding id, or the free slot where it would go. */
static uint32_t
probe(const struct hp_idtab *t, uint64_t id)
{
	uint32_t mask = t->cap - 1, i;
	uint64_t at;

	for (i = home(t, id); (at = slot_id(t, i)) != 0 && at != id; i = (i + 1) & mask)
		;
	return i;
}

/* A key no guest knows: from the kernel's random pool, else from where
 * the table lies (ASLR). Odd, so that the product keeps every bit of
 * the id. */
static uint64_t
new_key(const struct hp_idtab *t)
{
	uint64_t k;

	if (getrandom(&k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k))
		k = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)t ^ ((uint64_t)(uintptr_t)&k << 17);
	return k | 1;
}

void *
hp_idtab_find(const struct hp_idtab *t, uint64_t id)
{
	uint32_t i;

	if (t->cap == 0 || id == 0)
		return NULL;
	i = probe(t, id);
	return slot_id(t, i) == id ? slot_at(t, i) : NULL;
}

static int
grow(struct hp_idtab *t, uint32_t cap)
{
	struct hp_idtab n = { NULL, t->esize, cap, t->count, t->key != 0 ? t->key : new_key(t) };

	if ((n.slots = calloc(n.cap, n.esize)) == NULL)
		return -1;
	for (uint32_t i = 0; i < t->cap; i++) {
		uint64_t id = slot_id(t, i);

		if (id != 0)
			memcpy(slot_at(&n, probe(&n, id)), slot_at(t, i), t->esize);
	}
	free(t->slots);
	*t = n;
	return 0;
}

int
hp_idtab_reserve(struct hp_idtab *t, uint32_t n)
{
	uint64_t want = ((uint64_t)t->count + n) * 2, cap = t->cap ? t->cap : IDTAB_MIN;

	while (cap < want)
		cap *= 2;
	if (cap > UINT32_MAX / 2 + 1)
		return -1;
	return cap == t->cap ? 0 : grow(t, (uint32_t)cap);
}

void *
hp_idtab_insert(struct hp_idtab *t, uint64_t id)
{
	void *e;

	if (id == 0 || hp_idtab_reserve(t, 1) != 0)
		return NULL;
	e = slot_at(t, probe(t, id));
	memset(e, 0, t->esize);
	memcpy(e, &id, sizeof(id));
	t->count++;
	return e;
}

/* Backward-shift deletion: each later entry of the cluster moves into the
 * hole when the hole lies on its probe path (between its home slot and
 * where it sits, cyclically). */
void
hp_idtab_remove(struct hp_idtab *t, void *e)
{
	uint32_t mask = t->cap - 1;
	uint32_t hole = (uint32_t)(((uint8_t *)e - t->slots) / t->esize);
	uint64_t id;

	for (uint32_t j = (hole + 1) & mask; (id = slot_id(t, j)) != 0; j = (j + 1) & mask) {
		uint32_t h = home(t, id);

		if (((j - h) & mask) >= ((j - hole) & mask)) {
			memcpy(slot_at(t, hole), slot_at(t, j), t->esize);
			hole = j;
		}
	}
	memset(slot_at(t, hole), 0, t->esize);
	t->count--;
}

void *
hp_idtab_next(const struct hp_idtab *t, uint32_t *pos)
{
	for (; *pos < t->cap; (*pos)++)
		if (slot_id(t, *pos) != 0)
			return slot_at(t, (*pos)++);
	return NULL;
}

void
hp_idtab_remove_walked(struct hp_idtab *t, void *e, uint32_t *pos)
{
	/* backward shift moves entries only into the hole, from later in
	 * its cluster: unseen ones land at or after it */
	hp_idtab_remove(t, e);
	(*pos)--;
}

int
hp_idtab_take(struct hp_idtab *t, void *out)
{
	uint32_t pos = 0;
	void *e = hp_idtab_next(t, &pos);

	if (e == NULL)
		return -1;
	memcpy(out, e, t->esize);
	hp_idtab_remove(t, e);
	return 0;
}

void
hp_idtab_clear(struct hp_idtab *t)
{
	if (t->slots != NULL)
		memset(t->slots, 0, (size_t)t->cap * t->esize);
	t->count = 0;
}

void
hp_idtab_free(struct hp_idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = 0;
	t->count = 0;
}
