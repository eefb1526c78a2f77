/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's table of methods called over lanes (guestlib/routes.c):
 * every route found through its index, full, replaced, removed one at a
 * time and a lane's at once, against a plain list of what it should hold. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"

static struct guest *g;
static struct lg_lane lanes[3];
/* what the table should hold: the lane (1-based) of method i, 0: none */
static uint8_t want[3 * LG_ROUTES_MAX];

/* Method ids, each its own and never 0 (as hp_method_id's): a third
 * apart by a power of two, which a poor hash would pile into few slots,
 * the rest odd. */
static uint64_t
method(uint32_t i)
{
	return i % 3 == 0 ? (uint64_t)(i + 1) << 32 : (uint64_t)i * 2 + 1;
}

static void
setup(void)
{
	g = calloc(1, sizeof(*g));
	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(lg_routes_init(g), 0);
	for (int i = 0; i < 3; i++)
		lanes[i] = (struct lg_lane){ .id = 10 + (uint32_t)i };
	memset(want, 0, sizeof(want));
}

static void
teardown(void)
{
	lg_routes_free(g);
	free(g);
}

static int
set(uint32_t i, int lane)
{
	struct lg_route r = { .method = method(i), .lane = &lanes[lane - 1] };
	int rc = lg_route_set(g, &r);

	if (rc == 0)
		want[i] = (uint8_t)lane;
	return rc;
}

/* Every method, routed or not, found as want says. */
static void
check_all(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < sizeof(want); i++) {
		struct lg_route *r = lg_lane_route(g, method(i));

		if (want[i] == 0) {
			ck_assert_msg(r == NULL, "method %u has a route it should not", i);
			continue;
		}
		n++;
		ck_assert_msg(r != NULL, "method %u lost its route", i);
		ck_assert_uint_eq(r->method, method(i));
		ck_assert_ptr_eq(r->lane, &lanes[want[i] - 1]);
	}
	ck_assert_uint_eq(g->routes.count, n);
}

START_TEST(test_full_then_removed)
{
	uint32_t i;

	for (i = 0; i < LG_ROUTES_MAX; i++)
		ck_assert_int_eq(set(i, 1 + (int)(i % 3)), 0);
	check_all();
	/* full: a new method stays on the hub, a routed one moves lanes */
	ck_assert_int_eq(set(LG_ROUTES_MAX, 1), -ENOSPC);
	ck_assert_int_eq(set(5, 1), 0);
	check_all();
	/* UNROUTE names the lane: the route over another stays */
	lg_route_unset(g, method(5), lanes[1].id);
	lg_route_unset(g, method(LG_ROUTES_MAX + 1), lanes[0].id);
	check_all();
	for (i = 0; i < LG_ROUTES_MAX; i += 2) {
		lg_route_unset(g, method(i), lanes[want[i] - 1].id);
		want[i] = 0;
	}
	check_all();
	ck_assert_int_eq(set(LG_ROUTES_MAX, 2), 0);
	check_all();
}
END_TEST

START_TEST(test_lane_dropped)
{
	for (uint32_t i = 0; i < 600; i++)
		ck_assert_int_eq(set(i, 1 + (int)(i % 3)), 0);
	lg_routes_drop_lane(g, &lanes[1]);
	for (uint32_t i = 0; i < 600; i++)
		if (want[i] == 2)
			want[i] = 0;
	check_all();
	/* a lane closing routes nothing, though its routes are still there */
	lanes[0].closing = 1;
	ck_assert_ptr_null(lg_lane_route(g, method(0)));
	ck_assert_ptr_nonnull(lg_lane_route(g, method(2)));
	lg_routes_drop_lane(g, &lanes[0]);
	lg_routes_drop_lane(g, &lanes[2]);
	ck_assert_uint_eq(g->routes.count, 0);
	ck_assert_ptr_null(lg_lane_route(g, method(2)));
}
END_TEST

Suite *suite_routes(void);
Suite *
suite_routes(void)
{
	Suite *s = suite_create("routes");
	TCase *tc = tcase_create("routes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_full_then_removed);
	tcase_add_test(tc, test_lane_dropped);
	suite_add_tcase(s, tc);
	return s;
}
