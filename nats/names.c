/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Names to small numbers, for figures kept by name (tally.c, service.c):
 * open addressing, at most half full, never shrinking, bounded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

static uint32_t
hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

uint32_t
br_names_find(struct br_names *t, const char *name, int add)
{
	uint32_t h = hash(name), k, *grown;

	for (k = 0; t->cap > 0 && k < t->cap; k++) {
		uint32_t s = t->slot[(h + k) & (t->cap - 1)];

		if (s == 0)
			break;
		if (strcmp(t->name[s - 1], name) == 0)
			return s - 1;
	}
	if (!add || t->n >= t->max || strlen(name) > BR_NAME_MAX)
		return UINT32_MAX;
	if (2 * (t->n + 1) > t->cap) {
		/* at most half full: a miss ends soon */
		uint32_t cap = t->cap == 0 ? 64 : 2 * t->cap;
		char (*names)[BR_NAME_MAX + 1];

		if ((grown = calloc(cap, sizeof(*grown))) == NULL)
			return UINT32_MAX;
		if ((names = realloc(t->name, (size_t)cap / 2 * sizeof(*names))) == NULL) {
			free(grown);
			return UINT32_MAX;
		}
		t->name = names;
		for (uint32_t i = 0; i < t->n; i++) {
			for (k = hash(t->name[i]); grown[k & (cap - 1)] != 0; k++)
				;
			grown[k & (cap - 1)] = i + 1;
		}
		free(t->slot);
		t->slot = grown;
		t->cap = cap;
	}
	for (k = h; t->slot[k & (t->cap - 1)] != 0; k++)
		;
	t->slot[k & (t->cap - 1)] = t->n + 1;
	snprintf(t->name[t->n], sizeof(t->name[t->n]), "%s", name);
	return t->n++;
}

void
br_names_free(struct br_names *t)
{
	free(t->slot);
	free(t->name);
	memset(t, 0, sizeof(*t));
}
