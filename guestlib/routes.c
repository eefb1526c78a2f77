/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The methods a guest calls over lanes (lane.c fills it from the hub's
 * ROUTE and UNROUTE, call_out.c asks it on every call): a table on the
 * method id (proto/idtab.h; a method id is a hash already), at most
 * LG_ROUTES_MAX routes. A call looks at a slot or two whatever the
 * number of routes. */
#include <errno.h>

#include "guestlib/internal.h"

int
lg_routes_init(struct guest *g)
{
	g->routes = (struct hp_idtab)HP_IDTAB_INIT(struct lg_route);
	return 0;
}

void
lg_routes_free(struct guest *g)
{
	hp_idtab_free(&g->routes);
}

struct lg_route *
lg_lane_route(struct guest *g, uint64_t method)
{
	struct lg_route *r = g->routes.count > 0 ? hp_idtab_find(&g->routes, method) : NULL;

	return r == NULL || r->lane->closing ? NULL : r;
}

int
lg_route_set(struct guest *g, const struct lg_route *r)
{
	struct lg_route *x;

	if (g->routes.esize == 0)	/* no lanes here */
		return -ENOSPC;
	if ((x = hp_idtab_find(&g->routes, r->method)) == NULL &&
	    (g->routes.count == LG_ROUTES_MAX ||
	     (x = hp_idtab_insert(&g->routes, r->method)) == NULL))
		return -ENOSPC;
	*x = *r;
	return 0;
}

void
lg_route_unset(struct guest *g, uint64_t method, uint32_t lane)
{
	struct lg_route *r = g->routes.count > 0 ? hp_idtab_find(&g->routes, method) : NULL;

	if (r != NULL && r->lane->id == lane)
		hp_idtab_remove(&g->routes, r);
}

void
lg_routes_drop_lane(struct guest *g, const struct lg_lane *ln)
{
	struct lg_route *r;
	uint32_t pos = 0;

	while ((r = hp_idtab_next(&g->routes, &pos)) != NULL)
		if (r->lane == ln)
			hp_idtab_remove_walked(&g->routes, r, &pos);
}
