/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The methods a guest calls over lanes (lane.c fills it from the hub's
 * ROUTE and UNROUTE, call_out.c asks it on every call): an array of
 * routes and an index on the method id, open addressing in a table kept
 * at most half full, each bucket a route's position + 1. A call looks
 * at a bucket or two whatever the number of routes (a linear scan read
 * a route of ~240 bytes per method routed). Routes go rarely (a lane
 * closed, an UNROUTE): the index is then built anew. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"

#define BUCKETS		(2 * LG_ROUTES_MAX)	/* a power of 2 */

/* The method's bucket, or the empty one where it would go. */
static uint32_t
bucket(const struct guest *g, uint64_t method)
{
	/* Fibonacci hashing: ids hubd hands out in sequence spread out */
	uint32_t b = (uint32_t)((method * 0x9e3779b97f4a7c15ull) >> 32) & (BUCKETS - 1);

	while (g->route_at[b] != 0 && g->routes[g->route_at[b] - 1].method != method)
		b = (b + 1) & (BUCKETS - 1);
	return b;
}

static void
reindex(struct guest *g)
{
	memset(g->route_at, 0, BUCKETS * sizeof(*g->route_at));
	for (uint32_t i = 0; i < g->nroutes; i++)
		g->route_at[bucket(g, g->routes[i].method)] = (uint16_t)(i + 1);
}

int
lg_routes_init(struct guest *g)
{
	g->routes = calloc(LG_ROUTES_MAX, sizeof(*g->routes));
	g->route_at = calloc(BUCKETS, sizeof(*g->route_at));
	if (g->routes == NULL || g->route_at == NULL) {
		lg_routes_free(g);
		return -ENOMEM;
	}
	return 0;
}

void
lg_routes_free(struct guest *g)
{
	free(g->routes);
	free(g->route_at);
	g->routes = NULL;
	g->route_at = NULL;
	g->nroutes = 0;
}

struct lg_route *
lg_lane_route(struct guest *g, uint64_t method)
{
	uint16_t at;

	if (g->nroutes == 0)
		return NULL;
	at = g->route_at[bucket(g, method)];
	if (at == 0 || g->routes[at - 1].lane->closing)
		return NULL;
	return &g->routes[at - 1];
}

int
lg_route_set(struct guest *g, const struct lg_route *r)
{
	uint32_t b;

	if (g->routes == NULL)
		return -ENOSPC;
	b = bucket(g, r->method);
	if (g->route_at[b] != 0) {
		g->routes[g->route_at[b] - 1] = *r;
		return 0;
	}
	if (g->nroutes == LG_ROUTES_MAX)
		return -ENOSPC;
	g->routes[g->nroutes] = *r;
	g->route_at[b] = (uint16_t)++g->nroutes;
	return 0;
}

void
lg_route_unset(struct guest *g, uint64_t method, uint32_t lane)
{
	uint16_t at;

	if (g->nroutes == 0)
		return;
	at = g->route_at[bucket(g, method)];
	if (at == 0 || g->routes[at - 1].lane->id != lane)
		return;
	g->routes[at - 1] = g->routes[--g->nroutes];
	reindex(g);
}

void
lg_routes_drop_lane(struct guest *g, const struct lg_lane *ln)
{
	uint32_t i, j;

	for (i = j = 0; i < g->nroutes; i++)
		if (g->routes[i].lane != ln)
			g->routes[j++] = g->routes[i];
	if (j != g->nroutes) {
		g->nroutes = j;
		reindex(g);
	}
}
