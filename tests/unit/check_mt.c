/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime: spawn, yield, join, sleep, stacks, channels,
 * alt, suspend and wake, io hooks, and the M:N scheduler across
 * processors (the "tsan" cases). */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guestlib/guest.h"
#include "mt/mt.h"
#include "mt/internal.h"
#include "proto/clock.h"

static struct guest_rt *
rt_make(unsigned procs)
{
	struct guest_rt_config cfg = { .processors = procs };
	struct guest_rt *rt = NULL;
	int rc = guest_rt_new(&cfg, &rt);

	ck_assert_msg(rc == 0, "guest_rt_new(%u): %d", procs, rc);
	return rt;
}

static void
rt_go(unsigned procs, guest_mt_fn fn, void *arg, struct mt_stats *st)
{
	struct guest_rt *rt = rt_make(procs);
	int rc = guest_rt_run(rt, fn, arg);

	ck_assert_msg(rc == 0, "guest_rt_run: %d", rc);
	if (st != NULL)
		mt_rt_stats(rt, st);
	guest_rt_free(rt);
}

/* -- spawn, yield, join, exit on one processor ------------------------ */

static char order_log[64];
static int order_pos;

static void
order_worker(void *arg)
{
	for (int i = 0; i < 3; i++) {
		order_log[order_pos++] = *(const char *)arg;
		ck_assert_int_eq(guest_mt_yield(), 0);
	}
	if (*(const char *)arg == 'C') {
		guest_mt_exit();
		order_log[order_pos++] = '!';	/* never */
	}
}

static void
order_main(void *arg)
{
	struct guest_mt *a, *b, *c;

	(void)arg;
	ck_assert_int_eq(guest_mt_spawn(order_worker, "A", &a), 0);
	ck_assert_int_eq(guest_mt_spawn(order_worker, "B", &b), 0);
	ck_assert_int_eq(guest_mt_spawn(order_worker, "C", &c), 0);
	ck_assert_int_eq(guest_mt_join(a), 0);
	ck_assert_int_eq(guest_mt_join(b), 0);
	ck_assert_int_eq(guest_mt_join(c), 0);
	order_log[order_pos++] = 'M';
}

START_TEST(test_order_p1)
{
	order_pos = 0;
	memset(order_log, 0, sizeof(order_log));
	rt_go(1, order_main, NULL, NULL);
	ck_assert_msg(strcmp(order_log, "ABCABCABCM") == 0, "order: %s", order_log);
}
END_TEST

static _Atomic int detached_ran;	/* P=2 in mn_abandoned */

static void
detached_fn(void *arg)
{
	(void)arg;
	guest_mt_yield();
	detached_ran++;
}

static void
detached_main(void *arg)
{
	struct guest_mt *self = mt_self();

	(void)arg;
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(guest_mt_spawn(detached_fn, NULL, NULL), 0);
	ck_assert_int_eq(guest_mt_join(self), -EINVAL);
	ck_assert_int_eq(guest_mt_join(NULL), -EINVAL);
	ck_assert_int_eq(guest_mt_spawn(NULL, NULL, NULL), -EINVAL);
	/* returns without waiting: the run ends once all have */
}

START_TEST(test_detached_joinable)
{
	struct guest_mtchan *ch;
	struct guest_mtop op;
	char c = 0;

	detached_ran = 0;
	rt_go(1, detached_main, NULL, NULL);
	ck_assert_msg(detached_ran == 10, "detached ran: %d", (int)detached_ran);
	/* (mt) functions off a microthread */
	ck_assert_int_eq(guest_mt_yield(), -EPERM);
	ck_assert_int_eq(guest_mt_join(NULL), -EPERM);
	ck_assert_int_eq(guest_mt_sleep(1), -EPERM);
	ck_assert_int_eq(guest_mt_spawn(detached_fn, NULL, NULL), -EPERM);
	ck_assert_int_eq(mt_suspend(NULL, UINT64_MAX), -EPERM);
	ck_assert_ptr_null(mt_self());
	ck_assert_int_eq(guest_mtchan_new(1, 0, &ch), 0);
	ck_assert_int_eq(guest_mtchan_send(ch, &c), -EPERM);
	ck_assert_int_eq(guest_mtchan_recv(ch, &c), -EPERM);
	op = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = ch, .item = &c };
	ck_assert_int_eq(guest_mt_alt(&op, 1), -EPERM);
	guest_mtchan_close(ch, GUEST_MT_WRITER);
	guest_mtchan_close(ch, GUEST_MT_READER);
}
END_TEST

#define MANY_ROUNDS	100
#define MANY_BATCH	1000

static unsigned long many_ran;

static void
many_fn(void *arg)
{
	(void)arg;
	many_ran++;
}

static void
many_main(void *arg)
{
	static struct guest_mt *h[MANY_BATCH];

	(void)arg;
	for (int r = 0; r < MANY_ROUNDS; r++) {
		for (int i = 0; i < MANY_BATCH; i++)
			ck_assert_int_eq(guest_mt_spawn(many_fn, NULL, i % 2 ? &h[i] : NULL), 0);
		for (int i = 1; i < MANY_BATCH; i += 2)
			ck_assert_int_eq(guest_mt_join(h[i]), 0);
		while (many_ran < (unsigned long)(r + 1) * MANY_BATCH)
			guest_mt_yield();
	}
}

START_TEST(test_many_pooled)
{
	struct mt_stats st;

	many_ran = 0;
	rt_go(1, many_main, NULL, &st);
	ck_assert_msg(many_ran == MANY_ROUNDS * MANY_BATCH, "ran %lu", many_ran);
	ck_assert_msg(st.spawned == MANY_ROUNDS * MANY_BATCH + 1, "spawned %llu",
	    (unsigned long long)st.spawned);
	/* a batch at a time: the pool keeps the mappings to about one batch */
	ck_assert_msg(st.mmaps <= MANY_BATCH + 8, "mmaps %llu for %d spawns",
	    (unsigned long long)st.mmaps, MANY_ROUNDS * MANY_BATCH);
	ck_assert_msg(st.stacks == st.pooled && st.stacks <= 1024,
	    "stacks %llu pooled %llu", (unsigned long long)st.stacks,
	    (unsigned long long)st.pooled);
}
END_TEST

static int sleep_log[8], sleep_pos;

static void
sleeper(void *arg)
{
	int ms = (int)(intptr_t)arg;
	uint64_t t0 = guest_mt_now_ns();

	ck_assert_int_eq(guest_mt_sleep((uint64_t)ms * 1000000), 0);
	ck_assert_msg(guest_mt_now_ns() - t0 >= (uint64_t)ms * 1000000,
	    "slept %llu ns of %d ms", (unsigned long long)(guest_mt_now_ns() - t0), ms);
	sleep_log[sleep_pos++] = ms;
}

static void
sleep_main(void *arg)
{
	static const int ms[] = { 50, 10, 40, 20, 30 };

	(void)arg;
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(guest_mt_spawn(sleeper, (void *)(intptr_t)ms[i], NULL), 0);
}

START_TEST(test_sleep_order)
{
	sleep_pos = 0;
	rt_go(1, sleep_main, NULL, NULL);
	ck_assert_int_eq(sleep_pos, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(sleep_log[i] == (i + 1) * 10, "woke %d: %d ms",
		    i, sleep_log[i]);
}
END_TEST

static int
deep(int n)
{
	volatile char pad[512];

	pad[0] = (char)n;
	pad[511] = pad[0];
	return n == 0 ? pad[511] : deep(n - 1) + pad[511];
}

static void
overflow_fn(void *arg)
{
	(void)arg;
	deep(1 << 20);
}

START_TEST(test_guard_page)
{
	char said[512];
	ssize_t n, got = 0;
	int status, fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		struct sigaction sa;

		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		setrlimit(RLIMIT_CORE, &rl);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGSEGV, &sa, NULL);
		struct guest_rt *rt;
		if (guest_rt_new(NULL, &rt) < 0)
			_exit(2);
		guest_rt_run(rt, overflow_fn, NULL);
		_exit(0);
	}
	close(fds[1]);
	while (got < (ssize_t)sizeof(said) - 1 &&
	    (n = read(fds[0], said + got, sizeof(said) - 1 - (size_t)got)) > 0)
		got += n;
	said[got] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
	    "child: status %#x (signal %d)", status,
	    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
#if !defined(MT_ASAN) && !defined(MT_TSAN)
	/* named, once (a sanitizer's own handler would come first) */
	ck_assert_str_eq(said, "libguest: microthread stack overflow (stack 64 KiB; "
	    "raise it with guest_rt_config.stack_size or HUB_MT_STACK)\n");
#endif
}
END_TEST

/* HUB_MT_STACK sizes a runtime whose config leaves the stack to it:
 * bytes or k, m, g (rounded up to pages); anything else refuses to make
 * the runtime. A config's own size wins. */
START_TEST(test_stack_size_from_env)
{
	static const struct { const char *v; size_t want; } ok[] = {
		{ "256k", 256u << 10 }, { "1m", 1u << 20 }, { "1M", 1u << 20 },
		{ "131072", 128u << 10 }, { "100000", 0 }, { "1g", 1u << 30 },
	};
	static const char *bad[] = {
		"", "k", "12q", "0", "0k", "2g", "-1", " 1k", "1kb", "1.5m",
		"99999999999999999999999", "1k ",
	};
	struct guest_rt_config cfg = { .processors = 1, .stack_size = 32u << 10 };
	long page = sysconf(_SC_PAGESIZE);
	struct guest_rt *rt;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t want = ok[i].want != 0 ? ok[i].want :
		    (100000 + (size_t)page - 1) / (size_t)page * (size_t)page;

		setenv("HUB_MT_STACK", ok[i].v, 1);
		ck_assert_int_eq(guest_rt_new(NULL, &rt), 0);
		ck_assert_msg(rt->stack_size == want, "%s: %zu", ok[i].v, rt->stack_size);
		guest_rt_free(rt);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("HUB_MT_STACK", bad[i], 1);
		ck_assert_msg(guest_rt_new(NULL, &rt) == -EINVAL, "'%s' taken", bad[i]);
		ck_assert_int_eq(guest_rt_new(&cfg, &rt), 0);
		ck_assert_int_eq(rt->stack_size, 32u << 10);
		guest_rt_free(rt);
	}
	unsetenv("HUB_MT_STACK");
	ck_assert_int_eq(guest_rt_new(NULL, &rt), 0);
	ck_assert_int_eq(rt->stack_size, 64u << 10);
	guest_rt_free(rt);
}
END_TEST

/* struct guest_rt_config as libguest before 0.5 took it, and that ABI's
 * guest_rt_new (guest_rt_new@LIBGUEST_0.2, compat.c) */
struct rt_config_0_2 {
	unsigned	processors;
	size_t		stack_size;
};
int	guest_rt_new_0_2(const struct rt_config_0_2 *cfg, struct guest_rt **rtp);

/* A config's size: 0 is 0.5's fields (a zero-initialised config needs
 * none), sizeof too; shorter than that is refused; a later guest.h's
 * longer config is taken while its unknown fields are 0, refused with
 * E2BIG once one is set. A binary of before 0.5 still gets its stack. */
START_TEST(test_config_size)
{
	struct {
		struct guest_rt_config	cfg;
		uint64_t		later;	/* a field of a later guest.h */
	} big;
	struct rt_config_0_2 old = { 1, 48u << 10 };
	struct guest_rt_config cfg = { .processors = 1, .stack_size = 32u << 10 };
	struct guest_rt *rt;

	unsetenv("HUB_MT_STACK");
	ck_assert_int_eq(guest_rt_new(&cfg, &rt), 0);
	ck_assert_int_eq(rt->stack_size, 32u << 10);
	guest_rt_free(rt);
	cfg.size = sizeof(cfg);
	ck_assert_int_eq(guest_rt_new(&cfg, &rt), 0);
	ck_assert_int_eq(rt->stack_size, 32u << 10);
	guest_rt_free(rt);
	cfg.size = offsetof(struct guest_rt_config, stack_size);
	ck_assert_int_eq(guest_rt_new(&cfg, &rt), -EINVAL);

	memset(&big, 0, sizeof(big));
	big.cfg.size = sizeof(big);
	big.cfg.stack_size = 32u << 10;
	ck_assert_int_eq(guest_rt_new(&big.cfg, &rt), 0);
	ck_assert_int_eq(rt->stack_size, 32u << 10);
	guest_rt_free(rt);
	big.later = 1;
	ck_assert_int_eq(guest_rt_new(&big.cfg, &rt), -E2BIG);

	ck_assert_int_eq(guest_rt_new_0_2(&old, &rt), 0);
	ck_assert_int_eq(rt->stack_size, 48u << 10);
	ck_assert_int_eq(rt->nproc, 1);
	guest_rt_free(rt);
	ck_assert_int_eq(guest_rt_new_0_2(NULL, &rt), 0);
	ck_assert_int_eq(rt->stack_size, 64u << 10);
	guest_rt_free(rt);
}
END_TEST

/* -- channels ------------------------------------------------------------ */

#define FIFO_N	1000

struct pc {
	struct guest_mtchan	*ch;
	int			n;
	int			sent;	/* sends completed */
	int			bad;
};

static void
fifo_producer(void *arg)
{
	struct pc *pc = arg;

	for (int i = 0; i < pc->n; i++) {
		ck_assert_int_eq(guest_mtchan_send(pc->ch, &i), 0);
		pc->sent++;
	}
	guest_mtchan_close(pc->ch, GUEST_MT_WRITER);
}

static void
fifo_main(void *arg)
{
	struct pc *pc = arg;
	struct guest_mt *h;
	int v, i = 0;

	ck_assert_int_eq(guest_mt_spawn(fifo_producer, pc, &h), 0);
	while (guest_mtchan_recv(pc->ch, &v) == 0) {
		if (v != i)
			pc->bad++;
		i++;
	}
	ck_assert_msg(i == pc->n && pc->bad == 0, "received %d, %d out of order", i, pc->bad);
	ck_assert_int_eq(guest_mtchan_recv(pc->ch, &v), -EPIPE);
	ck_assert_int_eq(guest_mt_join(h), 0);
	guest_mtchan_close(pc->ch, GUEST_MT_READER);
}

START_TEST(test_rendezvous_fifo)
{
	struct pc pc = { .n = FIFO_N };

	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &pc.ch), 0);
	rt_go(1, fifo_main, &pc, NULL);
}
END_TEST

static void
buffered_main(void *arg)
{
	struct pc *pc = arg;
	struct guest_mt *h;
	int v;

	ck_assert_int_eq(guest_mt_spawn(fifo_producer, pc, &h), 0);
	guest_mt_yield();
	/* the producer filled the buffer (4) and waits with the 5th */
	ck_assert_msg(pc->sent == 4, "sent before the first receive: %d", pc->sent);
	for (int i = 0; i < pc->n; i++) {
		ck_assert_int_eq(guest_mtchan_recv(pc->ch, &v), 0);
		ck_assert_msg(v == i, "item %d: %d", i, v);
	}
	ck_assert_int_eq(guest_mt_join(h), 0);
	/* writer closed: empty, so -EPIPE */
	ck_assert_int_eq(guest_mtchan_recv(pc->ch, &v), -EPIPE);
	guest_mtchan_close(pc->ch, GUEST_MT_READER);
}

START_TEST(test_buffered_fifo)
{
	struct pc pc = { .n = 100 };

	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 4, &pc.ch), 0);
	rt_go(1, buffered_main, &pc, NULL);
}
END_TEST

static void
close_writer_later(void *arg)
{
	guest_mt_yield();
	guest_mtchan_close(arg, GUEST_MT_WRITER);
}

static void
close_reader_later(void *arg)
{
	guest_mt_yield();
	guest_mtchan_close(arg, GUEST_MT_READER);
}

static void
close_main(void *arg)
{
	struct guest_mtchan *ch;
	int v = 7;

	(void)arg;
	/* buffered items are still received after the writer's close */
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 3, &ch), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(guest_mtchan_send(ch, &i), 0);
	guest_mtchan_dup(ch, GUEST_MT_WRITER);
	guest_mtchan_close(ch, GUEST_MT_WRITER);	/* one writer left */
	ck_assert_int_eq(guest_mtchan_recv(ch, &v), 0);
	ck_assert_int_eq(v, 0);
	guest_mtchan_close(ch, GUEST_MT_WRITER);	/* none left */
	ck_assert_int_eq(guest_mtchan_recv(ch, &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(guest_mtchan_recv(ch, &v), 0);
	ck_assert_int_eq(v, 2);
	ck_assert_int_eq(guest_mtchan_recv(ch, &v), -EPIPE);
	guest_mtchan_close(ch, GUEST_MT_READER);

	/* a receiver waiting is woken by the writer's close */
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &ch), 0);
	ck_assert_int_eq(guest_mt_spawn(close_writer_later, ch, NULL), 0);
	ck_assert_int_eq(guest_mtchan_recv(ch, &v), -EPIPE);
	guest_mtchan_close(ch, GUEST_MT_READER);

	/* a sender waiting is woken by the reader's close; later sends fail */
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &ch), 0);
	ck_assert_int_eq(guest_mt_spawn(close_reader_later, ch, NULL), 0);
	ck_assert_int_eq(guest_mtchan_send(ch, &v), -EPIPE);
	ck_assert_int_eq(guest_mtchan_send(ch, &v), -EPIPE);
	guest_mtchan_close(ch, GUEST_MT_WRITER);

	/* a full buffer's sender too, and a dup'd reader keeps it open */
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 1, &ch), 0);
	guest_mtchan_dup(ch, GUEST_MT_READER);
	guest_mtchan_close(ch, GUEST_MT_READER);
	ck_assert_int_eq(guest_mtchan_send(ch, &v), 0);
	ck_assert_int_eq(guest_mt_spawn(close_reader_later, ch, NULL), 0);
	ck_assert_int_eq(guest_mtchan_send(ch, &v), -EPIPE);
	guest_mtchan_close(ch, GUEST_MT_WRITER);
}

START_TEST(test_close_dup)
{
	rt_go(1, close_main, NULL, NULL);
}
END_TEST

struct refill {
	struct guest_mtchan	*a, *b;
	int			stop;
};

static void
alt_main(void *arg)
{
	int pri = *(int *)arg;
	struct guest_mtchan *a, *b;
	struct guest_mtop ops[2];
	int x = 1, y = 2, got, count[2] = { 0, 0 };

	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 1, &a), 0);
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 1, &b), 0);
	ck_assert_int_eq(guest_mtchan_send(a, &x), 0);
	ck_assert_int_eq(guest_mtchan_send(b, &y), 0);
	for (int i = 0; i < 1000; i++) {
		ops[0] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = a, .item = &got };
		ops[1] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = b, .item = &got };
		int idx = pri ? guest_mt_prialt(ops, 2) : guest_mt_alt(ops, 2);

		ck_assert_msg(idx == 0 || idx == 1, "alt: %d", idx);
		ck_assert_int_eq(ops[idx].status, 0);
		ck_assert_int_eq(got, idx + 1);
		count[idx]++;
		/* both ready again */
		ck_assert_int_eq(guest_mtchan_send(idx ? b : a, &got), 0);
	}
	if (pri)
		ck_assert_msg(count[0] == 1000, "prialt picked %d, %d", count[0], count[1]);
	else
		ck_assert_msg(count[0] >= 400 && count[1] >= 400, "alt picked %d, %d",
		    count[0], count[1]);
	for (int e = 0; e < 2; e++) {
		guest_mtchan_close(a, e);
		guest_mtchan_close(b, e);
	}
}

START_TEST(test_alt_fair)
{
	int pri = 0;

	rt_go(1, alt_main, &pri, NULL);
}
END_TEST

START_TEST(test_prialt_first)
{
	int pri = 1;

	rt_go(1, alt_main, &pri, NULL);
}
END_TEST

static void
deadline_main(void *arg)
{
	struct guest_mtchan *ch;
	struct guest_mtop ops[3];
	uint64_t t0 = guest_mt_now_ns();
	int v, idx;

	(void)arg;
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &ch), 0);
	ops[0] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = ch, .item = &v };
	ops[1] = (struct guest_mtop){ .kind = GUEST_MT_DEADLINE, .deadline_ns = t0 + 40000000 };
	ops[2] = (struct guest_mtop){ .kind = GUEST_MT_DEADLINE, .deadline_ns = t0 + 20000000 };
	idx = guest_mt_alt(ops, 3);
	ck_assert_msg(idx == 2, "alt: %d", idx);
	ck_assert_msg(guest_mt_now_ns() - t0 >= 20000000, "after %llu ns",
	    (unsigned long long)(guest_mt_now_ns() - t0));
	/* passed already: ready at once */
	ops[1].deadline_ns = 1;
	ck_assert_int_eq(guest_mt_prialt(ops, 2), 1);
	/* bad ops */
	ops[0].kind = 99;
	ck_assert_int_eq(guest_mt_alt(ops, 2), -EINVAL);
	ck_assert_int_eq(guest_mt_alt(ops, 0), -EINVAL);
	guest_mtchan_close(ch, GUEST_MT_WRITER);
	guest_mtchan_close(ch, GUEST_MT_READER);
}

START_TEST(test_deadline_op)
{
	rt_go(1, deadline_main, NULL, NULL);
}
END_TEST

static void
gone_main(void *arg)
{
	struct guest_mtchan *ch;
	struct guest_mtop ops[2];
	int v;

	(void)arg;
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 2, &ch), 0);
	ck_assert_int_eq(guest_mtchan_send(ch, &v), 0);
	/* WRITER_GONE beside a receive: the item first, then the close */
	ck_assert_int_eq(guest_mt_spawn(close_writer_later, ch, NULL), 0);
	ops[0] = (struct guest_mtop){ .kind = GUEST_MT_WRITER_GONE, .ch = ch };
	ck_assert_int_eq(guest_mt_prialt(ops, 1), 0);
	ck_assert_int_eq(ops[0].status, 0);
	/* its buffer still holds the item */
	ck_assert_int_eq(guest_mtchan_recv(ch, &v), 0);
	guest_mtchan_close(ch, GUEST_MT_READER);

	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &ch), 0);
	ck_assert_int_eq(guest_mt_spawn(close_reader_later, ch, NULL), 0);
	ops[0] = (struct guest_mtop){ .kind = GUEST_MT_READER_GONE, .ch = ch };
	ops[1] = (struct guest_mtop){ .kind = GUEST_MT_DEADLINE,
	    .deadline_ns = guest_mt_now_ns() + 10 * HP_NS_PER_S };
	ck_assert_int_eq(guest_mt_alt(ops, 2), 0);
	/* gone already: ready at once */
	ck_assert_int_eq(guest_mt_alt(ops, 1), 0);
	guest_mtchan_close(ch, GUEST_MT_WRITER);
}

START_TEST(test_gone_ops)
{
	rt_go(1, gone_main, NULL, NULL);
}
END_TEST

/* -- suspend and wake ----------------------------------------------------- */

#define RACE_ROUNDS	3000

struct race {
	pthread_mutex_t		mu;
	struct guest_mt		*waiting;
	int			done;
	long			woken, timedout, wins;
};

static void
race_mt(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_ROUNDS; i++) {
		pthread_mutex_lock(&r->mu);
		r->waiting = mt_self();
		/* a deadline about as far as the waker's turn */
		int rc = mt_suspend(&r->mu, guest_mt_now_ns() + (uint64_t)(i % 7) * 3000);

		if (rc == 0)
			r->woken++;
		else if (rc == -ETIMEDOUT)
			r->timedout++;
		else
			ck_abort_msg("mt_suspend: %d", rc);
	}
	pthread_mutex_lock(&r->mu);
	r->waiting = NULL;
	r->done = 1;
	pthread_mutex_unlock(&r->mu);
}

static void *
race_waker(void *arg)
{
	struct race *r = arg;

	for (;;) {
		pthread_mutex_lock(&r->mu);
		if (r->done) {
			pthread_mutex_unlock(&r->mu);
			return NULL;
		}
		if (r->waiting != NULL)
			r->wins += mt_wake(r->waiting);
		pthread_mutex_unlock(&r->mu);
		sched_yield();
	}
}

/* The wake wins: the deadline is far, the waker finds it waiting. */
static void
woken_mt(void *arg)
{
	struct race *r = arg;
	int rc;

	pthread_mutex_lock(&r->mu);
	r->waiting = mt_self();
	rc = mt_suspend(&r->mu, guest_mt_now_ns() + 60 * HP_NS_PER_S);
	ck_assert_msg(rc == 0, "mt_suspend: %d, want woken", rc);
	r->woken++;
}

static void *
one_waker(void *arg)
{
	struct race *r = arg;

	for (;;) {
		pthread_mutex_lock(&r->mu);
		if (r->waiting != NULL) {
			r->wins += mt_wake(r->waiting);
			r->waiting = NULL;
			pthread_mutex_unlock(&r->mu);
			return NULL;
		}
		pthread_mutex_unlock(&r->mu);
		sched_yield();
	}
}

/* The deadline wins: nobody wakes it; a wake after that finds nobody
 * waiting and changes nothing. */
static void
timedout_mt(void *arg)
{
	struct race *r = arg;
	int rc;

	pthread_mutex_lock(&r->mu);
	rc = mt_suspend(&r->mu, guest_mt_now_ns() + HP_NS_PER_MS);
	ck_assert_msg(rc == -ETIMEDOUT, "mt_suspend: %d, want -ETIMEDOUT", rc);
	r->timedout++;
	r->wins += mt_wake(mt_self());
}

/* Each outcome forced, then the two racing: a deadline about as far as
 * the waker's turn. Which one wins each round is the scheduler's (under
 * load one may never win): each round has exactly one winner, and the
 * waker counts a win exactly when the microthread was woken. */
START_TEST(test_wake_deadline_race)
{
	struct race w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct race d = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct race r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, one_waker, &w), 0);
	rt_go(2, woken_mt, &w, NULL);
	pthread_join(t, NULL);
	ck_assert_msg(w.woken == 1 && w.wins == 1, "woken %ld, waker won %ld", w.woken, w.wins);

	rt_go(1, timedout_mt, &d, NULL);
	ck_assert_msg(d.timedout == 1 && d.wins == 0, "timed out %ld, late wake won %ld",
	    d.timedout, d.wins);

	ck_assert_int_eq(pthread_create(&t, NULL, race_waker, &r), 0);
	rt_go(2, race_mt, &r, NULL);
	pthread_join(t, NULL);
	ck_assert_msg(r.woken + r.timedout == RACE_ROUNDS && r.woken == r.wins,
	    "woken %ld timed out %ld, waker won %ld", r.woken, r.timedout, r.wins);
}
END_TEST

/* -- io hooks -------------------------------------------------------------- */

struct fakeio {
	int			ev;	/* outside work */
	int			kickfd;
	_Atomic long		polls, waits, kicks, inpoll;
	_Atomic int		overlap;
	pthread_mutex_t		mu;
	struct guest_mt		*waiter;	/* under mu */
	_Atomic int		stop;	/* poll returns -ECANCELED */
	struct guest_rt		*rt;
	long			yields;
};

static int
fake_poll(void *ctx)
{
	struct fakeio *f = ctx;
	uint64_t v;
	int did = 0;

	if (atomic_fetch_add(&f->inpoll, 1) != 0)
		f->overlap = 1;
	ck_assert_ptr_null(mt_self());
	f->polls++;
	if (read(f->ev, &v, sizeof(v)) == sizeof(v)) {
		pthread_mutex_lock(&f->mu);
		if (f->waiter != NULL)
			mt_wake(f->waiter);
		f->waiter = NULL;
		pthread_mutex_unlock(&f->mu);
		did = 1;
	}
	atomic_fetch_sub(&f->inpoll, 1);
	if (f->stop)
		return -ECANCELED;
	return did;
}

static int
fake_wait(void *ctx, uint64_t deadline)
{
	struct fakeio *f = ctx;
	struct pollfd pf[2] = { { f->ev, POLLIN, 0 }, { f->kickfd, POLLIN, 0 } };
	int ms = -1;
	uint64_t v;

	if (atomic_fetch_add(&f->inpoll, 1) != 0)
		f->overlap = 1;
	f->waits++;
	if (deadline != UINT64_MAX) {
		uint64_t now = guest_mt_now_ns();

		ms = deadline <= now ? 0 : (int)((deadline - now) / 1000000 + 1);
	}
	poll(pf, 2, ms);
	if (read(f->kickfd, &v, sizeof(v)) < 0)
		v = 0;
	atomic_fetch_sub(&f->inpoll, 1);
	return 0;
}

static void
fake_kick(void *ctx)
{
	struct fakeio *f = ctx;
	uint64_t one = 1;

	f->kicks++;
	if (write(f->kickfd, &one, sizeof(one)) < 0)
		abort();
}

static void
fake_open(struct fakeio *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	f->ev = eventfd(0, EFD_NONBLOCK);
	f->kickfd = eventfd(0, EFD_NONBLOCK);
	ck_assert(f->ev >= 0 && f->kickfd >= 0);
}

static void
yielder(void *arg)
{
	struct fakeio *f = arg;

	for (int i = 0; i < 20 * MT_POLL_EVERY; i++)
		guest_mt_yield();
	f->stop = 1;
}

START_TEST(test_io_poll_while_yielding)
{
	struct fakeio f;
	struct mt_io io = { fake_poll, fake_wait, fake_kick, NULL, &f };
	struct guest_rt *rt = rt_make(1);
	int rc;

	fake_open(&f);
	rc = mt_rt_run(rt, yielder, &f, &io);
	ck_assert_msg(rc == -ECANCELED, "mt_rt_run: %d", rc);
	/* at least one poll per MT_POLL_EVERY switches */
	ck_assert_msg(f.polls >= 19, "polls %ld over %d yields", f.polls,
	    20 * MT_POLL_EVERY);
	guest_rt_free(rt);
	close(f.ev);
	close(f.kickfd);
}
END_TEST

static void
io_waiter(void *arg)
{
	struct fakeio *f = arg;

	/* woken by poll when the eventfd fires */
	pthread_mutex_lock(&f->mu);
	f->waiter = mt_self();
	ck_assert_int_eq(mt_suspend(&f->mu, UINT64_MAX), 0);
	mt_rt_stop(f->rt);
}

/* Posts once a processor sleeps in io->wait, however long a loaded
 * machine takes it to get there (30 s at most: the test then fails). */
static void *
io_poster(void *arg)
{
	struct fakeio *f = arg;
	uint64_t one = 1, end = guest_mt_now_ns() + 30 * HP_NS_PER_S;

	while (f->waits == 0 && guest_mt_now_ns() < end)
		usleep(1000);
	if (write(f->ev, &one, sizeof(one)) < 0)
		abort();
	return NULL;
}

START_TEST(test_io_wait)
{
	struct fakeio f;
	struct mt_io io = { fake_poll, fake_wait, fake_kick, NULL, &f };
	pthread_t t;
	int rc;

	fake_open(&f);
	f.rt = rt_make(2);
	ck_assert_int_eq(pthread_create(&t, NULL, io_poster, &f), 0);
	rc = mt_rt_run(f.rt, io_waiter, &f, &io);
	pthread_join(t, NULL);
	ck_assert_msg(rc == 0, "mt_rt_run: %d", rc);
	ck_assert_msg(f.waits >= 1 && !f.overlap, "waits %ld overlap %d",
	    (long)f.waits, (int)f.overlap);
	guest_rt_free(f.rt);
	close(f.ev);
	close(f.kickfd);
}
END_TEST

struct kickt {
	struct fakeio		*f;
	pthread_mutex_t		mu;
	struct guest_mt		*m;
};

static void
kick_waiter(void *arg)
{
	struct kickt *k = arg;

	pthread_mutex_lock(&k->mu);
	k->m = mt_self();
	ck_assert_int_eq(mt_suspend(&k->mu, UINT64_MAX), 0);
	mt_rt_stop(k->f->rt);
}

/* Wakes it once the processor sleeps in io->wait (counted sleeping
 * before it calls it: the wake must kick), however long a loaded machine
 * takes it to get there; after 30 s at any rate (the test then fails). */
static void *
kick_waker(void *arg)
{
	struct kickt *k = arg;
	uint64_t end = guest_mt_now_ns() + 30 * HP_NS_PER_S;

	for (;;) {
		usleep(1000);
		pthread_mutex_lock(&k->mu);
		if (k->m != NULL && (k->f->waits >= 1 || guest_mt_now_ns() > end)) {
			mt_wake(k->m);
			pthread_mutex_unlock(&k->mu);
			return NULL;
		}
		pthread_mutex_unlock(&k->mu);
	}
}

START_TEST(test_io_kick)
{
	struct fakeio f;
	struct mt_io io = { fake_poll, fake_wait, fake_kick, NULL, &f };
	struct kickt k = { .f = &f, .mu = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t;
	int rc;

	fake_open(&f);
	f.rt = rt_make(1);
	ck_assert_int_eq(pthread_create(&t, NULL, kick_waker, &k), 0);
	rc = mt_rt_run(f.rt, kick_waiter, &k, &io);
	pthread_join(t, NULL);
	ck_assert_msg(rc == 0, "mt_rt_run: %d", rc);
	/* the one processor slept in io->wait: the wake had to kick it */
	ck_assert_msg(f.kicks >= 1 && f.waits >= 1, "kicks %ld waits %ld",
	    (long)f.kicks, (long)f.waits);
	guest_rt_free(f.rt);
	close(f.ev);
	close(f.kickfd);
}
END_TEST

/* -- ping-pong ------------------------------------------------------------- */
/* Two microthreads that hand the processor to each other and an echo
 * over a channel, many times over: each one's count says the other ran
 * every time. How fast is for make bench (microthreads), not a test. */

#define PINGPONG_N	200000

static int yields_other, echoed, last_echo;

static void
pingpong_other(void *arg)
{
	for (int i = 0; i < PINGPONG_N; i++, yields_other++)
		guest_mt_yield();
	(void)arg;
}

static void
pingpong_echo(void *arg)
{
	struct guest_mtchan **ch = arg;
	int v;

	while (guest_mtchan_recv(ch[0], &v) == 0)
		guest_mtchan_send(ch[1], &v);
	guest_mtchan_close(ch[1], GUEST_MT_WRITER);
}

static void
pingpong_main(void *arg)
{
	struct guest_mtchan *ch[2];
	struct guest_mt *h;
	int v = -1;

	(void)arg;
	yields_other = echoed = 0;
	last_echo = -1;
	if (guest_mt_spawn(pingpong_other, NULL, &h) < 0)
		return;
	for (int i = 0; i < PINGPONG_N; i++)
		guest_mt_yield();
	guest_mt_join(h);
	guest_mtchan_new(sizeof(int), 0, &ch[0]);
	guest_mtchan_new(sizeof(int), 0, &ch[1]);
	if (guest_mt_spawn(pingpong_echo, ch, &h) < 0)
		return;
	for (int i = 0; i < PINGPONG_N / 4; i++) {
		guest_mtchan_send(ch[0], &i);
		if (guest_mtchan_recv(ch[1], &v) == 0 && v == i)
			echoed++;
	}
	last_echo = v;
	guest_mtchan_close(ch[0], GUEST_MT_WRITER);
	guest_mt_join(h);
	guest_mtchan_close(ch[0], GUEST_MT_READER);
	guest_mtchan_close(ch[1], GUEST_MT_READER);
}

/* No ck_assert in the loops: in fork mode each one writes to a pipe. */
START_TEST(test_pingpong)
{
	for (unsigned procs = 1; procs <= 2; procs++) {
		rt_go(procs, pingpong_main, NULL, NULL);
		ck_assert_msg(yields_other == PINGPONG_N && echoed == PINGPONG_N / 4 &&
			      last_echo == PINGPONG_N / 4 - 1,
			      "P=%u: the other yielded %d times of %d, %d echoes of %d (last %d)",
			      procs, yields_other, PINGPONG_N, echoed, PINGPONG_N / 4, last_echo);
	}
}
END_TEST

/* -- M:N across processors ("tsan") ------------------------------------------ */

#define PC_ITEMS	100000
#define PC_PRODUCERS	4
#define PC_CONSUMERS	4

struct pcm {
	struct guest_mtchan	*ch;
	_Atomic uint64_t	sum;
	_Atomic long		count;
	int			base;
};

static struct pcm pcm;

static void
pcm_producer(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int i = id; i < PC_ITEMS; i += PC_PRODUCERS) {
		int rc = guest_mtchan_send(pcm.ch, &i);

		ck_assert_msg(rc == 0, "send: %d", rc);
	}
}

static void
pcm_consumer(void *arg)
{
	int v;
	uint64_t sum = 0;
	long n = 0;

	(void)arg;
	while (guest_mtchan_recv(pcm.ch, &v) == 0) {
		sum += (uint64_t)v * (uint64_t)v;
		n++;
	}
	atomic_fetch_add(&pcm.sum, sum);
	atomic_fetch_add(&pcm.count, n);
	guest_mtchan_close(pcm.ch, GUEST_MT_READER);
}

static void
pcm_main(void *arg)
{
	struct guest_mt *p[PC_PRODUCERS];

	(void)arg;
	for (int i = 1; i < PC_CONSUMERS; i++)
		guest_mtchan_dup(pcm.ch, GUEST_MT_READER);
	for (int i = 0; i < PC_CONSUMERS; i++)
		ck_assert_int_eq(guest_mt_spawn(pcm_consumer, NULL, NULL), 0);
	for (int i = 0; i < PC_PRODUCERS; i++)
		ck_assert_int_eq(guest_mt_spawn(pcm_producer, (void *)(intptr_t)i, &p[i]), 0);
	for (int i = 0; i < PC_PRODUCERS; i++)
		ck_assert_int_eq(guest_mt_join(p[i]), 0);
	guest_mtchan_close(pcm.ch, GUEST_MT_WRITER);
}

START_TEST(test_mn_producers_consumers)
{
	uint64_t want = 0;

	for (uint64_t i = 0; i < PC_ITEMS; i++)
		want += i * i;
	for (unsigned procs = 2; procs <= 4; procs++) {
		for (unsigned cap = 0; cap <= 16; cap += 16) {
			ck_assert_int_eq(guest_mtchan_new(sizeof(int), cap, &pcm.ch), 0);
			pcm.sum = 0;
			pcm.count = 0;
			rt_go(procs, pcm_main, NULL, NULL);
			ck_assert_msg(pcm.count == PC_ITEMS && pcm.sum == want,
			    "P=%u cap %u: %ld items, sum %llu (want %llu)", procs, cap,
			    (long)pcm.count, (unsigned long long)pcm.sum,
			    (unsigned long long)want);
		}
	}
}
END_TEST

static void
busy_fn(void *arg)
{
	volatile unsigned long x = 0;

	(void)arg;
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 20000; i++)
			x += (unsigned long)i;
		guest_mt_yield();
	}
}

static void
steal_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(guest_mt_spawn(busy_fn, NULL, NULL), 0);
}

START_TEST(test_mn_stealing)
{
	struct mt_stats st;

	rt_go(2, steal_main, NULL, &st);
	ck_assert_msg(st.steals > 0, "steals %llu, switches %llu",
	    (unsigned long long)st.steals, (unsigned long long)st.switches);
}
END_TEST

#define PING_N	50000

static void
pong(void *arg)
{
	struct guest_mtchan **ch = arg;
	int v;

	while (guest_mtchan_recv(ch[0], &v) == 0) {
		v++;
		ck_assert_int_eq(guest_mtchan_send(ch[1], &v), 0);
	}
	guest_mtchan_close(ch[1], GUEST_MT_WRITER);
}

static void
ping_main(void *arg)
{
	struct guest_mtchan *ch[2];
	struct guest_mt *h;
	int v = 0;

	(void)arg;
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &ch[0]), 0);
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &ch[1]), 0);
	ck_assert_int_eq(guest_mt_spawn(pong, ch, &h), 0);
	for (int i = 0; i < PING_N; i++) {
		int w = v;

		ck_assert_int_eq(guest_mtchan_send(ch[0], &w), 0);
		ck_assert_int_eq(guest_mtchan_recv(ch[1], &v), 0);
		ck_assert_int_eq(v, w + 1);
		if (i % 64 == 0)
			guest_mt_yield();	/* let the other processor take us */
	}
	guest_mtchan_close(ch[0], GUEST_MT_WRITER);
	ck_assert_int_eq(guest_mtchan_recv(ch[1], &v), -EPIPE);
	ck_assert_int_eq(guest_mt_join(h), 0);
	guest_mtchan_close(ch[0], GUEST_MT_READER);
	guest_mtchan_close(ch[1], GUEST_MT_READER);
}

START_TEST(test_mn_ping_pong)
{
	struct mt_stats st;

	rt_go(2, ping_main, NULL, &st);
	ck_assert_msg(st.switches >= 2 * PING_N, "switches %llu",
	    (unsigned long long)st.switches);
}
END_TEST

static void
lone_sleeper(void *arg)
{
	(void)arg;
	guest_mt_sleep(100000000);
}

/* Processors asleep now (the runtime's JEC counters: bits 0-15). */
static unsigned
sleeping(struct guest_rt *rt)
{
	return (unsigned)(atomic_load_explicit(&rt->counters, memory_order_seq_cst) & 0xffff);
}

struct lone {
	struct guest_rt	*rt;
	unsigned	asleep;		/* the others, once all slept or at the deadline */
	unsigned	after;		/* the others, 100 ms later */
};

/* The one microthread: waits (in sleeps, its processor idle too) until
 * the other three processors sleep, however late a loaded machine lets
 * them get there, then 100 ms more: they must sleep still. Its own
 * processor runs it whenever it looks, so it never counts itself. */
static void
lone_watcher(void *arg)
{
	struct lone *l = arg;

	for (uint64_t end = guest_mt_now_ns() + 20 * HP_NS_PER_S;
	     (l->asleep = sleeping(l->rt)) < 3 && guest_mt_now_ns() < end; )
		guest_mt_sleep(10 * HP_NS_PER_MS);
	guest_mt_sleep(100 * HP_NS_PER_MS);
	l->after = sleeping(l->rt);
}

START_TEST(test_mn_shutdown_parked)
{
	struct lone l = { .rt = rt_make(4) };
	struct mt_stats st;
	struct rusage ru0, ru1;
	double cpu;
	int rc;

	getrusage(RUSAGE_SELF, &ru0);
	rc = guest_rt_run(l.rt, lone_watcher, &l);
	getrusage(RUSAGE_SELF, &ru1);
	ck_assert_msg(rc == 0, "guest_rt_run: %d", rc);
	mt_rt_stats(l.rt, &st);
	guest_rt_free(l.rt);
	cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
	    (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
	    (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
	    (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
	/* 3 processors idle: they slept, stayed asleep, and did not spin */
	ck_assert_msg(l.asleep >= 3 && l.after >= 3 && st.parks >= 3 && cpu < 0.1,
	    "asleep %u, then %u; parks %llu, cpu %.3f s", l.asleep, l.after,
	    (unsigned long long)st.parks, cpu);
}
END_TEST

struct aband {
	struct guest_mtchan	*ch, *big[12];
	struct guest_rt		*rt;
};

static void
blocked_recv(void *arg)
{
	struct aband *a = arg;
	int v;

	guest_mtchan_recv(a->ch, &v);
	ck_abort_msg("abandoned microthread ran on");
}

static void
blocked_alt(void *arg)
{
	struct aband *a = arg;
	struct guest_mtop ops[12];
	int v;

	for (int i = 0; i < 12; i++)
		ops[i] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = a->big[i], .item = &v };
	guest_mt_alt(ops, 12);
	ck_abort_msg("abandoned microthread ran on");
}

static void
aband_main(void *arg)
{
	struct aband *a = arg;
	struct guest_mt *h;

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(guest_mt_spawn(blocked_recv, a, NULL), 0);
	ck_assert_int_eq(guest_mt_spawn(blocked_alt, a, NULL), 0);
	ck_assert_int_eq(guest_mt_spawn(lone_sleeper, NULL, NULL), 0);
	ck_assert_int_eq(guest_mt_spawn(blocked_recv, a, &h), 0);
	for (int i = 0; i < 10; i++)
		guest_mt_yield();
	mt_rt_stop(a->rt);
	guest_mt_join(h);	/* never returns: the run ends first */
}

START_TEST(test_mn_abandoned)
{
	struct fakeio f;
	struct mt_io io = { fake_poll, fake_wait, fake_kick, NULL, &f };
	struct aband a;
	struct mt_stats st;
	int rc;

	fake_open(&f);
	ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &a.ch), 0);
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(guest_mtchan_new(sizeof(int), 0, &a.big[i]), 0);
	a.rt = rt_make(2);
	rc = mt_rt_run(a.rt, aband_main, &a, &io);
	ck_assert_msg(rc == 0, "mt_rt_run: %d", rc);
	mt_rt_stats(a.rt, &st);
	ck_assert_msg(st.stacks == st.pooled && st.live == 0,
	    "stacks %llu pooled %llu live %llu", (unsigned long long)st.stacks,
	    (unsigned long long)st.pooled, (unsigned long long)st.live);
	/* the channels outlive the run, their waiters gone */
	guest_mtchan_close(a.ch, GUEST_MT_WRITER);
	guest_mtchan_close(a.ch, GUEST_MT_READER);
	for (int i = 0; i < 12; i++) {
		guest_mtchan_close(a.big[i], GUEST_MT_WRITER);
		guest_mtchan_close(a.big[i], GUEST_MT_READER);
	}
	/* and the runtime runs again */
	detached_ran = 0;
	ck_assert_int_eq(guest_rt_run(a.rt, detached_main, NULL), 0);
	ck_assert_int_eq((int)detached_ran, 10);
	guest_rt_free(a.rt);
	close(f.ev);
	close(f.kickfd);
}
END_TEST

/* More microthreads abandoned than the stack pool keeps (1024): each
 * left a word on its stack, as libguest leaves the call it awaits there,
 * and every word is still there to read after the run (the stacks past
 * the pool's cap were unmapped, and reading them faulted). */
#define KEPT_N	1100
#define KEPT_MAGIC	0x5eedf00dull

struct kept {
	struct fakeio		*f;
	volatile uint64_t	*word[KEPT_N];
	_Atomic int		waiting;
};

static void
kept_waiter(void *arg)
{
	struct kept *k = arg;
	volatile uint64_t word = KEPT_MAGIC;

	k->word[atomic_fetch_add(&k->waiting, 1)] = &word;
	mt_suspend(NULL, UINT64_MAX);
	ck_abort_msg("abandoned microthread ran on");
}

static void
kept_main(void *arg)
{
	struct kept *k = arg;

	for (int i = 0; i < KEPT_N; i++)
		ck_assert_int_eq(guest_mt_spawn(kept_waiter, k, NULL), 0);
	while (atomic_load(&k->waiting) < KEPT_N)
		guest_mt_yield();
	k->f->stop = 1;		/* the next poll ends the run */
}

START_TEST(test_abandoned_stacks_kept)
{
	struct fakeio f;
	struct mt_io io = { fake_poll, fake_wait, fake_kick, NULL, &f };
	struct kept *k = calloc(1, sizeof(*k));
	struct guest_rt *rt = rt_make(1);
	int rc, intact = 0;

	fake_open(&f);
	k->f = &f;
	rc = mt_rt_run(rt, kept_main, k, &io);
	ck_assert_msg(rc == -ECANCELED, "mt_rt_run: %d", rc);
	for (int i = 0; i < KEPT_N; i++)
		intact += *k->word[i] == KEPT_MAGIC;
	ck_assert_int_eq(intact, KEPT_N);
	guest_rt_free(rt);
	free(k);
	close(f.ev);
	close(f.kickfd);
}
END_TEST

Suite *suite_mt(void);
Suite *
suite_mt(void)
{
	Suite *s = suite_create("mt");
	struct {
		const char	*name;
		const TTest	*test;
		int		tsan;
		int		timeout;
	} cases[] = {
		{ "order", test_order_p1, 0, 10 },
		{ "detached", test_detached_joinable, 0, 10 },
		{ "many", test_many_pooled, 0, 60 },
		{ "sleep", test_sleep_order, 0, 10 },
		{ "guard", test_guard_page, 0, 20 },
		{ "stack_env", test_stack_size_from_env, 0, 10 },
		{ "config_size", test_config_size, 0, 10 },
		{ "rendezvous", test_rendezvous_fifo, 0, 10 },
		{ "buffered", test_buffered_fifo, 0, 10 },
		{ "close", test_close_dup, 0, 10 },
		{ "alt_fair", test_alt_fair, 0, 10 },
		{ "prialt", test_prialt_first, 0, 10 },
		{ "deadline", test_deadline_op, 0, 10 },
		{ "gone", test_gone_ops, 0, 10 },
		{ "wake_race", test_wake_deadline_race, 1, 60 },
		{ "io_poll", test_io_poll_while_yielding, 0, 10 },
		{ "io_wait", test_io_wait, 1, 60 },
		{ "io_kick", test_io_kick, 1, 60 },
		{ "pingpong", test_pingpong, 0, 30 },
		{ "mn_pc", test_mn_producers_consumers, 1, 120 },
		{ "mn_steal", test_mn_stealing, 1, 60 },
		{ "mn_pingpong", test_mn_ping_pong, 1, 120 },
		{ "mn_shutdown", test_mn_shutdown_parked, 1, 60 },
		{ "mn_abandoned", test_mn_abandoned, 1, 20 },
		{ "abandoned_kept", test_abandoned_stacks_kept, 0, 30 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].test);
		tcase_set_timeout(tc, cases[i].timeout);
		if (cases[i].tsan)
			tcase_set_tags(tc, "tsan");
		suite_add_tcase(s, tc);
	}
	return s;
}
