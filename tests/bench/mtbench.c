/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* mtbench: libguest's microthreads against what they replace.
 *   yield N		two microthreads yielding to each other, P = 1
 *   fcontext N		the floor: a bare jump_fcontext pair, no runtime
 *   condvar N		two threads handing a turn over with a condvar
 *   spawn N		spawn + exit + join of an empty microthread
 *   detached N		spawn + exit of a detached one (and the yield that
 *			runs it)
 *   chan N P		rendezvous ping-pong between two microthreads on a
 *			runtime of P processors (placement is the runtime's)
 * Each prints one "name=value" line: switch_ns (per one-way switch),
 * ns (per microthread) or rtt_ns (per round trip). No mode: all of them,
 * N = 200000, each line's name prefixed with its mode (yield_switch_ns). */
#include <err.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt/fcontext.h"
#include "guestlib/guest.h"

static uint64_t iters;

static void
run(unsigned p, void (*fn)(void *), void *arg)
{
	struct guest_rt_config cfg = { .processors = p };
	struct guest_rt *rt;
	int ret;

	if ((ret = guest_rt_new(&cfg, &rt)) < 0)
		errx(1, "guest_rt_new: %s", strerror(-ret));
	if ((ret = guest_rt_run(rt, fn, arg)) < 0)
		errx(1, "guest_rt_run: %s", strerror(-ret));
	guest_rt_free(rt);
}

/* -- yield ----------------------------------------------------------------- */

static void
yielder(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < iters; i++)
		guest_mt_yield();
}

static void
yield_body(void *arg)
{
	struct guest_mt *mt;
	uint64_t t0;

	if (guest_mt_spawn(yielder, NULL, &mt) < 0)
		errx(1, "guest_mt_spawn");
	guest_mt_yield();	/* the other one started */
	t0 = guest_mt_now_ns();
	for (uint64_t i = 0; i < iters; i++)
		guest_mt_yield();
	*(double *)arg = (double)(guest_mt_now_ns() - t0) / (double)(2 * iters);
	guest_mt_join(mt);
}

static double
bench_yield(void)
{
	double ns = 0;

	run(1, yield_body, &ns);
	return ns;
}

/* -- bare fcontext ---------------------------------------------------------- */

static void
fc_entry(transfer_t t)
{
	for (;;)
		t = jump_fcontext(t.fctx, NULL);
}

static double
bench_fcontext(void)
{
	size_t size = 64 << 10;
	char *stack = malloc(size);
	fcontext_t c;
	uint64_t t0;

	if (stack == NULL)
		err(1, "malloc");
	c = make_fcontext(stack + size, size, fc_entry);
	c = jump_fcontext(c, NULL).fctx;	/* started */
	t0 = guest_mt_now_ns();
	for (uint64_t i = 0; i < iters; i++)
		c = jump_fcontext(c, NULL).fctx;
	t0 = guest_mt_now_ns() - t0;
	free(stack);		/* fc_entry never runs again */
	return (double)t0 / (double)(2 * iters);
}

/* -- condvar ping-pong -------------------------------------------------------- */

static struct {
	pthread_mutex_t	mu;
	pthread_cond_t	cv[2];
	int		turn;
} cvp = { PTHREAD_MUTEX_INITIALIZER,
	  { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER }, 0 };

/* me's turn, iters times: each hands it over to the other side */
static void *
cv_side(void *arg)
{
	int me = (int)(intptr_t)arg;

	pthread_mutex_lock(&cvp.mu);
	for (uint64_t i = 0; i < iters; i++) {
		while (cvp.turn != me)
			pthread_cond_wait(&cvp.cv[me], &cvp.mu);
		cvp.turn = !me;
		pthread_cond_signal(&cvp.cv[!me]);
	}
	pthread_mutex_unlock(&cvp.mu);
	return NULL;
}

static double
bench_condvar(void)
{
	pthread_t th;
	uint64_t t0;

	t0 = guest_mt_now_ns();
	if (pthread_create(&th, NULL, cv_side, (void *)(intptr_t)1) != 0)
		errx(1, "pthread_create");
	cv_side((void *)(intptr_t)0);
	pthread_join(th, NULL);
	return (double)(guest_mt_now_ns() - t0) / (double)(2 * iters);
}

/* -- spawn ---------------------------------------------------------------- */

static void
nothing(void *arg)
{
	(void)arg;
}

static void
spawn_body(void *arg)
{
	struct guest_mt *mt;
	uint64_t t0 = guest_mt_now_ns();

	for (uint64_t i = 0; i < iters; i++) {
		if (guest_mt_spawn(nothing, NULL, &mt) < 0)
			errx(1, "guest_mt_spawn");
		guest_mt_join(mt);
	}
	*(double *)arg = (double)(guest_mt_now_ns() - t0) / (double)iters;
}

/* the yield runs the new one to its end: one stack at a time */
static void
detached_body(void *arg)
{
	uint64_t t0 = guest_mt_now_ns();

	for (uint64_t i = 0; i < iters; i++) {
		if (guest_mt_spawn(nothing, NULL, NULL) < 0)
			errx(1, "guest_mt_spawn");
		guest_mt_yield();
	}
	*(double *)arg = (double)(guest_mt_now_ns() - t0) / (double)iters;
}

static double
bench_spawn(int detached)
{
	double ns = 0;

	run(1, detached ? detached_body : spawn_body, &ns);
	return ns;
}

/* -- channel round trip ------------------------------------------------------ */

struct pp {
	struct guest_mtchan	*ping, *pong;
	double			ns;
};

static void
echo(void *arg)
{
	struct pp *pp = arg;
	uint64_t v;

	while (guest_mtchan_recv(pp->ping, &v) == 0)
		if (guest_mtchan_send(pp->pong, &v) != 0)
			break;
	guest_mtchan_close(pp->ping, GUEST_MT_READER);
	guest_mtchan_close(pp->pong, GUEST_MT_WRITER);
}

static void
chan_body(void *arg)
{
	struct pp *pp = arg;
	uint64_t t0, v;

	if (guest_mtchan_new(sizeof(uint64_t), 0, &pp->ping) < 0 ||
	    guest_mtchan_new(sizeof(uint64_t), 0, &pp->pong) < 0 ||
	    guest_mt_spawn(echo, pp, NULL) < 0)
		errx(1, "channel setup");
	t0 = guest_mt_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		if (guest_mtchan_send(pp->ping, &i) != 0 ||
		    guest_mtchan_recv(pp->pong, &v) != 0 || v != i)
			errx(1, "round trip %llu", (unsigned long long)i);
	}
	pp->ns = (double)(guest_mt_now_ns() - t0) / (double)iters;
	guest_mtchan_close(pp->ping, GUEST_MT_WRITER);
	guest_mtchan_close(pp->pong, GUEST_MT_READER);
}

static double
bench_chan(unsigned p)
{
	struct pp pp = { 0 };

	run(p, chan_body, &pp);
	return pp.ns;
}

int
main(int argc, char *argv[])
{
	static const char *const modes[] = { "yield", "fcontext", "condvar",
	    "spawn", "detached", "chan" };
	const char *mode = argc > 1 ? argv[1] : NULL;
	int all = mode == NULL, known = all;

	for (size_t i = 0; !known && i < sizeof(modes) / sizeof(modes[0]); i++)
		known = strcmp(mode, modes[i]) == 0;
	iters = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
	if (!known || iters == 0)
		errx(2, "usage: mtbench [yield|fcontext|condvar|spawn|detached|chan N [P]]");
	if (all || strcmp(mode, "yield") == 0)
		printf("%sswitch_ns=%.1f\n", all ? "yield_" : "", bench_yield());
	if (all || strcmp(mode, "fcontext") == 0)
		printf("%sswitch_ns=%.1f\n", all ? "fcontext_" : "", bench_fcontext());
	if (all || strcmp(mode, "condvar") == 0)
		printf("%sswitch_ns=%.1f\n", all ? "condvar_" : "", bench_condvar());
	if (all || strcmp(mode, "spawn") == 0)
		printf("%sns=%.1f\n", all ? "spawn_" : "", bench_spawn(0));
	if (all || strcmp(mode, "detached") == 0)
		printf("%sns=%.1f\n", all ? "detached_" : "", bench_spawn(1));
	if (all) {
		printf("chan_p1_rtt_ns=%.1f\n", bench_chan(1));
		printf("chan_p2_rtt_ns=%.1f\n", bench_chan(2));
	} else if (strcmp(mode, "chan") == 0) {
		printf("rtt_ns=%.1f\n", bench_chan(argc > 3 ? (unsigned)atoi(argv[3]) : 1));
	}
	return 0;
}
