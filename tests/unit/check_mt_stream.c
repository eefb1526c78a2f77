/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The runtime's timers and stream combinators (mt/stream.c):
 * after and tick deliver and end with their reader, pipelines keep order
 * and content, and an end on either side runs through the whole chain.
 * Each test runs a runtime of its own; guest_rt_run returning says every
 * microthread (timers and stages included) has ended. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "guestlib/guest.h"

#define MS	1000000ull

/* Runs fn(arg) on a runtime of p processors until every microthread ends. */
static void
run_on(unsigned p, void (*fn)(void *), void *arg)
{
	struct guest_rt_config cfg = { .processors = p };
	struct guest_rt *rt;
	int ret;

	ret = guest_rt_new(&cfg, &rt);
	ck_assert_msg(ret == 0, "guest_rt_new: %d", ret);
	ret = guest_rt_run(rt, fn, arg);
	ck_assert_msg(ret == 0, "guest_rt_run: %d", ret);
	guest_rt_free(rt);
}

/* -- timers ------------------------------------------------------------- */

struct after_t {
	uint64_t	t0, t1, value;
	int		first, second;
};

static void
after_body(void *arg)
{
	struct after_t *a = arg;
	struct guest_mtchan *ch;

	a->t0 = guest_mt_now_ns();
	if ((a->first = guest_mt_after(20 * MS, &ch)) < 0)
		return;
	a->first = guest_mtchan_recv(ch, &a->value);
	a->t1 = guest_mt_now_ns();
	a->second = guest_mtchan_recv(ch, &a->value);	/* one item, then over */
	guest_mtchan_close(ch, GUEST_MT_READER);
}

START_TEST(test_after_fires_once)
{
	struct after_t a = { 0 };

	run_on(1, after_body, &a);
	ck_assert_msg(a.first == 0, "recv: %d", a.first);
	ck_assert_msg(a.t1 - a.t0 >= 20 * MS, "fired after %llu ns",
		      (unsigned long long)(a.t1 - a.t0));
	ck_assert_msg(a.value >= a.t0 + 20 * MS, "its time %llu, started %llu",
		      (unsigned long long)a.value, (unsigned long long)a.t0);
	ck_assert_msg(a.second == -EPIPE, "second recv: %d", a.second);
}
END_TEST

/* A reader that goes before the timer is due ends it: the run returns
 * long before the hour is up (the tcase's timeout would catch it). */
static void
after_dropped_body(void *arg)
{
	struct guest_mtchan *ch;

	*(int *)arg = guest_mt_after(3600000 * MS, &ch);
	if (*(int *)arg == 0)
		guest_mtchan_close(ch, GUEST_MT_READER);
}

START_TEST(test_after_reader_gone)
{
	int ret = -1;

	run_on(1, after_dropped_body, &ret);
	ck_assert_msg(ret == 0, "guest_mt_after: %d", ret);
}
END_TEST

#define TICKS	5

struct tick_t {
	uint64_t	t0, at[TICKS], v[TICKS];
	int		ret;
};

static void
tick_body(void *arg)
{
	struct tick_t *t = arg;
	struct guest_mtchan *ch;

	t->t0 = guest_mt_now_ns();
	if ((t->ret = guest_mt_tick(2 * MS, &ch)) < 0)
		return;
	for (int i = 0; i < TICKS; i++) {
		if ((t->ret = guest_mtchan_recv(ch, &t->v[i])) < 0)
			break;
		t->at[i] = guest_mt_now_ns();
	}
	/* the producer ends with it: guest_rt_run returns */
	guest_mtchan_close(ch, GUEST_MT_READER);
}

static void
check_ticks(unsigned p)
{
	struct tick_t t = { 0 };

	run_on(p, tick_body, &t);
	ck_assert_msg(t.ret == 0, "recv: %d", t.ret);
	for (int i = 0; i < TICKS; i++) {
		/* tick i is due (i + 1) periods in, or later (one missed) */
		ck_assert_msg(t.v[i] >= t.t0 + (uint64_t)(i + 1) * 2 * MS,
			      "tick %d at %llu ns", i, (unsigned long long)(t.v[i] - t.t0));
		ck_assert_msg(t.at[i] >= t.v[i], "tick %d received before it was sent", i);
		if (i > 0)
			ck_assert_msg(t.v[i] > t.v[i - 1], "tick %d not after tick %d", i, i - 1);
	}
}

START_TEST(test_tick_until_reader_gone)
{
	check_ticks(1);
}
END_TEST

START_TEST(test_tick_until_reader_gone_p2)
{
	check_ticks(2);
}
END_TEST

static void
bad_args_body(void *arg)
{
	struct guest_mtchan *ch, *out;
	int *ret = arg;

	ret[0] = guest_mt_tick(0, &ch);
	ret[1] = guest_mtchan_new(sizeof(int), 0, &ch);
	if (ret[1] != 0)
		return;
	ret[2] = guest_mt_map(ch, 0, NULL, NULL, &out);
	ret[3] = guest_mt_filter(ch, NULL, NULL, &out);
	ret[4] = guest_mt_buffer(ch, 4, NULL);
	/* refused: ch is still ours */
	guest_mtchan_close(ch, GUEST_MT_WRITER);
	guest_mtchan_close(ch, GUEST_MT_READER);
}

START_TEST(test_bad_args)
{
	int ret[5] = { 1, 1, 1, 1, 1 };

	run_on(1, bad_args_body, ret);
	ck_assert_msg(ret[0] == -EINVAL, "tick(0): %d", ret[0]);
	ck_assert_msg(ret[1] == 0, "guest_mtchan_new: %d", ret[1]);
	ck_assert_msg(ret[2] == -EINVAL, "map(NULL fn): %d", ret[2]);
	ck_assert_msg(ret[3] == -EINVAL, "filter(NULL keep): %d", ret[3]);
	ck_assert_msg(ret[4] == -EINVAL, "buffer(NULL out): %d", ret[4]);
}
END_TEST

/* Off a runtime nothing can be spawned: the calls fail, leaving in with
 * the caller and nothing allocated (ASan's leak check would say). */
START_TEST(test_off_runtime)
{
	struct guest_mtchan *ch, *out = NULL;
	int ret;

	ret = guest_mt_after(MS, &ch);
	ck_assert_msg(ret < 0, "guest_mt_after off a runtime: %d", ret);
	ret = guest_mtchan_new(sizeof(int), 0, &ch);
	if (ret != 0)
		return;		/* channels need a runtime too: nothing to check */
	ret = guest_mt_buffer(ch, 4, &out);
	ck_assert_msg(ret < 0, "guest_mt_buffer off a runtime: %d", ret);
	ck_assert_ptr_null(out);
	guest_mtchan_close(ch, GUEST_MT_WRITER);
	guest_mtchan_close(ch, GUEST_MT_READER);
}
END_TEST

/* -- pipelines ------------------------------------------------------------ */

#define ITEMS	10000

struct producer {
	struct guest_mtchan	*ch;		/* its writer end */
	int			n;		/* items to send; < 0: until refused */
	int			sent;
	int			status;		/* the send that ended it, or 0 */
};

static void
producer_main(void *arg)
{
	struct producer *p = arg;

	for (int i = 0; p->n < 0 || i < p->n; i++) {
		if ((p->status = guest_mtchan_send(p->ch, &i)) != 0)
			break;
		p->sent++;
	}
	guest_mtchan_close(p->ch, GUEST_MT_WRITER);
}

static int
even(void *ctx, const void *item)
{
	(void)ctx;
	return *(const int *)item % 2 == 0;
}

/* int to int64_t: the output's items are not the input's size */
static void
triple(void *ctx, const void *item, void *out)
{
	int64_t v = (int64_t)*(const int *)item * 3;

	(void)ctx;
	*(int64_t *)out = v;
}

struct chain_t {
	struct producer	prod;
	int		ret;		/* a failed setup call */
	int		got;
	int		bad;		/* the first index out of order, or -1 */
	int		end;		/* the receive after the last item */
	int		stop_after;	/* items read before closing; 0: all */
};

/* producer -> filter(even) -> map(x * 3) -> buffer(16) -> this reader */
static void
chain_body(void *arg)
{
	struct chain_t *c = arg;
	struct guest_mtchan *ch;
	int64_t v;

	c->bad = -1;
	if ((c->ret = guest_mtchan_new(sizeof(int), 0, &c->prod.ch)) < 0)
		return;
	ch = c->prod.ch;
	if ((c->ret = guest_mt_spawn(producer_main, &c->prod, NULL)) < 0 ||
	    (c->ret = guest_mt_filter(ch, even, NULL, &ch)) < 0 ||
	    (c->ret = guest_mt_map(ch, sizeof(int64_t), triple, NULL, &ch)) < 0 ||
	    (c->ret = guest_mt_buffer(ch, 16, &ch)) < 0) {
		guest_mtchan_close(ch, GUEST_MT_READER);
		return;
	}
	for (;;) {
		if (c->stop_after > 0 && c->got == c->stop_after)
			break;
		if ((c->end = guest_mtchan_recv(ch, &v)) != 0)
			break;
		if (c->bad < 0 && v != (int64_t)c->got * 6)
			c->bad = c->got;
		c->got++;
	}
	/* with items left: the chain comes down to the producer */
	guest_mtchan_close(ch, GUEST_MT_READER);
}

static void
check_chain(unsigned p)
{
	struct chain_t c = { .prod = { .n = ITEMS } };

	run_on(p, chain_body, &c);
	ck_assert_msg(c.ret == 0, "setup: %d", c.ret);
	ck_assert_msg(c.bad < 0, "item %d out of order or changed", c.bad);
	ck_assert_msg(c.got == ITEMS / 2, "got %d items of %d", c.got, ITEMS / 2);
	/* the producer's close ran down the chain */
	ck_assert_msg(c.end == -EPIPE, "after the last item: %d", c.end);
	ck_assert_msg(c.prod.status == 0 && c.prod.sent == ITEMS,
		      "producer: sent %d, status %d", c.prod.sent, c.prod.status);
}

START_TEST(test_chain_order)
{
	check_chain(1);
}
END_TEST

START_TEST(test_chain_order_p2)
{
	check_chain(2);
}
END_TEST

/* The reader goes after 100 items of an endless stream: every stage ends
 * (else guest_rt_run would not return) and the producer's send fails. */
static void
check_teardown(unsigned p)
{
	struct chain_t c = { .prod = { .n = -1 }, .stop_after = 100 };

	run_on(p, chain_body, &c);
	ck_assert_msg(c.ret == 0, "setup: %d", c.ret);
	ck_assert_msg(c.bad < 0, "item %d out of order or changed", c.bad);
	ck_assert_int_eq(c.got, 100);
	ck_assert_msg(c.prod.status == -EPIPE, "producer's last send: %d",
		      c.prod.status);
	/* what the stages and the buffer held when the reader went, at most */
	ck_assert_msg(c.prod.sent >= 200 && c.prod.sent <= 200 + 2 * (16 + 4),
		      "producer sent %d", c.prod.sent);
}

START_TEST(test_teardown_upstream)
{
	check_teardown(1);
}
END_TEST

START_TEST(test_teardown_upstream_p2)
{
	check_teardown(2);
}
END_TEST

/* A short stream through a buffer larger than it: all of it, then the end. */
static void
short_body(void *arg)
{
	struct chain_t *c = arg;
	struct guest_mtchan *ch;
	int v;

	c->bad = -1;
	if ((c->ret = guest_mtchan_new(sizeof(int), 0, &c->prod.ch)) < 0)
		return;
	ch = c->prod.ch;
	if ((c->ret = guest_mt_buffer(ch, 64, &ch)) < 0) {
		guest_mtchan_close(ch, GUEST_MT_WRITER);
		guest_mtchan_close(ch, GUEST_MT_READER);
		return;
	}
	if ((c->ret = guest_mt_spawn(producer_main, &c->prod, NULL)) < 0) {
		guest_mtchan_close(c->prod.ch, GUEST_MT_WRITER);
		guest_mtchan_close(ch, GUEST_MT_READER);
		return;
	}
	while ((c->end = guest_mtchan_recv(ch, &v)) == 0) {
		if (c->bad < 0 && v != c->got)
			c->bad = c->got;
		c->got++;
	}
	guest_mtchan_close(ch, GUEST_MT_READER);
}

START_TEST(test_end_downstream)
{
	struct chain_t c = { .prod = { .n = 3 } };

	run_on(1, short_body, &c);
	ck_assert_msg(c.ret == 0, "setup: %d", c.ret);
	ck_assert_msg(c.bad < 0, "item %d out of order or changed", c.bad);
	ck_assert_int_eq(c.got, 3);
	ck_assert_msg(c.end == -EPIPE, "after the last item: %d", c.end);
}
END_TEST

/* -- alt over a tick and a data channel ---------------------------------- */

#define SLOW_ITEMS	20

struct alt_t {
	int		ret;
	int		got, ticks, bad, data_end;
};

/* sends SLOW_ITEMS, a millisecond or more apart: ticks come between */
static void
slow_producer(void *arg)
{
	struct guest_mtchan *ch = arg;

	for (int i = 0; i < SLOW_ITEMS; i++) {
		guest_mt_sleep(MS);
		if (guest_mtchan_send(ch, &i) != 0)
			break;
	}
	guest_mtchan_close(ch, GUEST_MT_WRITER);
}

static void
alt_body(void *arg)
{
	struct alt_t *a = arg;
	struct guest_mtchan *tick, *data;
	struct guest_mtop ops[2];
	uint64_t when;
	int v, r;

	a->bad = -1;
	if ((a->ret = guest_mt_tick(MS / 2, &tick)) < 0)
		return;
	if ((a->ret = guest_mtchan_new(sizeof(int), 0, &data)) < 0 ||
	    (a->ret = guest_mt_spawn(slow_producer, data, NULL)) < 0) {
		guest_mtchan_close(tick, GUEST_MT_READER);
		return;
	}
	for (;;) {
		ops[0] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = tick, .item = &when };
		ops[1] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = data, .item = &v };
		if ((r = guest_mt_alt(ops, 2)) < 0) {
			a->ret = r;
			break;
		}
		if (ops[r].status != 0) {
			if (r == 1)
				a->data_end = ops[1].status;
			else
				a->ret = ops[0].status;	/* a tick never ends */
			break;
		}
		if (r == 0)
			a->ticks++;
		else if (v != a->got++ && a->bad < 0)
			a->bad = v;
	}
	guest_mtchan_close(tick, GUEST_MT_READER);
	guest_mtchan_close(data, GUEST_MT_READER);
}

static void
check_alt(unsigned p)
{
	struct alt_t a = { 0 };

	run_on(p, alt_body, &a);
	ck_assert_msg(a.ret == 0, "setup or alt: %d", a.ret);
	ck_assert_msg(a.bad < 0, "data item %d out of order", a.bad);
	ck_assert_int_eq(a.got, SLOW_ITEMS);
	ck_assert_msg(a.data_end == -EPIPE, "data's end: %d", a.data_end);
	/* 20 ms of data at least, a tick due every 0.5 ms */
	ck_assert_msg(a.ticks >= 1, "no tick in %d data items", a.got);
}

START_TEST(test_alt_tick_and_data)
{
	check_alt(1);
}
END_TEST

START_TEST(test_alt_tick_and_data_p2)
{
	check_alt(2);
}
END_TEST

Suite *suite_mt_stream(void);
Suite *
suite_mt_stream(void)
{
	Suite *s = suite_create("mt_stream");
	TCase *timers = tcase_create("timers");
	TCase *pipes = tcase_create("pipelines");
	TCase *p2 = tcase_create("two processors");

	tcase_add_test(timers, test_after_fires_once);
	tcase_add_test(timers, test_after_reader_gone);
	tcase_add_test(timers, test_tick_until_reader_gone);
	tcase_add_test(timers, test_alt_tick_and_data);
	tcase_add_test(timers, test_bad_args);
	tcase_add_test(timers, test_off_runtime);
	tcase_set_timeout(timers, 10);
	suite_add_tcase(s, timers);

	tcase_add_test(pipes, test_chain_order);
	tcase_add_test(pipes, test_teardown_upstream);
	tcase_add_test(pipes, test_end_downstream);
	tcase_set_timeout(pipes, 20);
	suite_add_tcase(s, pipes);

	tcase_add_test(p2, test_tick_until_reader_gone_p2);
	tcase_add_test(p2, test_chain_order_p2);
	tcase_add_test(p2, test_teardown_upstream_p2);
	tcase_add_test(p2, test_alt_tick_and_data_p2);
	tcase_set_timeout(p2, 30);
	tcase_set_tags(p2, "tsan");
	suite_add_tcase(s, p2);
	return s;
}
