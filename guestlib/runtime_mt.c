/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest on microthreads: guest_run_mt serves the rings from the
 * runtime's scheduler (mt.h's struct mt_io), runs each request's handler
 * on a microthread of a reusable pool, and turns every libguest wait made
 * on a microthread (an answer, ring room, a slot, credit) into a suspend
 * of that microthread alone. guest_stop drains it: every such wait ends
 * with -ESHUTDOWN, the handlers running finish, and only then does
 * guest_run_mt return. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/list.h"
#include "mt/mt.h"
#include "proto/doorbell.h"

#define IDLE_MAX	64	/* handler microthreads kept for reuse */
/* The longest sleep when no doorbell will ring for what is awaited. */
#define SLEEP_UNRUNG_NS	(20 * 1000000ull)

/* A request handed to a handler microthread: its arguments copied, since
 * the message's slot is released once the service moves on. */
struct lg_req {
	struct guest_call	*call;
	guest_handler		fn;
	void			*ctx;
	struct lg_req		*prev, *next;	/* in lg_mt.reqs */
	size_t			len;
	uint8_t			args[];
};

/* A handler microthread between requests, on its own stack. */
struct lg_worker {
	struct guest_mt		*mt;
	struct lg_req		*req;		/* set by whoever wakes it */
	struct lg_worker	*next;
};

/* -- handlers ------------------------------------------------------------ */

static void
req_free(struct guest *g, struct lg_req *r)
{
	HP_LIST_UNLINK(&g->mt->reqs, r);
	free(r);
}

static void
handler_done(struct guest *g, struct lg_req *r)
{
	memset(mt_ctx(), 0, MT_CTX_SIZE);
	g->call_ran(g, r->call);
}

/* A handler that ended its microthread (guest_mt_exit) is done with its
 * request as one that returned: else the request stayed, and a stop
 * waited for it until hubd's SIGKILL. */
static void
handler_exited(void *arg)
{
	struct lg_req *r = arg;
	struct guest *g = r->call->g;

	handler_done(g, r);
	lg_mt_lock(g);
	req_free(g, r);
	lg_mt_unlock(g);
}

static void
worker_main(void *arg)
{
	struct lg_req *r = arg;
	struct lg_worker w = { .mt = mt_self() };
	struct guest *g = r->call->g;

	for (;;) {
		mt_set_label(r->call->method);
		/* the calls it makes, and its microthreads', inherit these */
		if (!lg_call_late(g, r->call)) {	/* its deadline passed while it waited */
			memcpy(mt_ctx(), &r->call->meta, sizeof(r->call->meta));
			mt_on_exit(handler_exited, r);
			r->fn(r->call, r->args, r->len, r->ctx);
			mt_on_exit(NULL, NULL);
			handler_done(g, r);
		}
		lg_mt_lock(g);
		req_free(g, r);
		if (g->mt->nidle >= IDLE_MAX) {
			lg_mt_unlock(g);
			return;
		}
		/* back to the pool until a request comes (never a deadline:
		 * the pool's microthreads are abandoned at the end) */
		w.req = NULL;
		w.next = g->mt->idle;
		g->mt->idle = &w;
		g->mt->nidle++;
		lg_suspend(g, UINT64_MAX);
		r = w.req;
		lg_mt_unlock(g);
	}
}

/* No microthread for c (out of memory, or of mappings: two a stack,
 * vm.max_map_count bounds them): its caller is told, the guest serves on
 * and says so once until a spawn works again. */
static int
no_microthread(struct guest *g, struct guest_call *c, int err)
{
	if (!g->mt->spawn_failed)
		fprintf(stderr, "libguest: no microthread for a call of %s (%s): "
		    "refused with an error until one can be made\n", c->method,
		    strerror(-err));
	g->mt->spawn_failed = 1;
	guest_reply_error(c, "the guest has no room for another microthread");
	g->call_ran(g, c);
	return 0;
}

/* Each request on a microthread of its own; none once stopping (a lane's
 * peer, or a hub that was not told, may still call). */
static int
mt_handle(struct guest *g, struct guest_call *c, guest_handler fn, void *ctx,
	  const uint8_t *args, size_t len)
{
	struct lg_req *r;
	struct lg_worker *w;
	int rc;

	if (g->mt->draining) {
		guest_reply_error(c, "the guest is stopping");
		g->call_ran(g, c);
		return 0;
	}
	if ((r = malloc(sizeof(*r) + len)) == NULL)
		return -ENOMEM;
	*r = (struct lg_req){ .call = c, .fn = fn, .ctx = ctx, .len = len };
	if (len > 0)
		memcpy(r->args, args, len);
	HP_LIST_PUSH(&g->mt->reqs, r);
	if ((w = g->mt->idle) != NULL) {
		g->mt->idle = w->next;
		g->mt->nidle--;
		w->req = r;
		mt_wake(w->mt);
		return 0;
	}
	if ((rc = guest_mt_spawn(worker_main, r, NULL)) != 0) {
		req_free(g, r);
		return no_microthread(g, c, rc);
	}
	g->mt->spawn_failed = 0;
	return 0;
}

/* -- the service, as the runtime's outside work --------------------------- */

/* Whether a stopping runtime may end: no handler runs, and no microthread
 * is inside a wait on the hub (one abandoned there would leave its
 * call's answer pointing into a freed stack). */
static int
drained(const struct lg_mt *m)
{
	return m->reqs == NULL && m->blocked == NULL && m->awaiting == NULL;
}

/* guest_stop, seen by the service: from now on every wait on the hub ends
 * with -ESHUTDOWN (lg_mt_wait, mt_await), those waiting are woken to see
 * it, and the runtime ends once drained. */
static int
drain(struct guest *g)
{
	struct lg_mt *m = g->mt;

	if (!m->draining) {
		m->draining = 1;
		lg_mt_wake_ready(g);
		for (struct lg_event *ev = m->awaiting; ev != NULL; ev = ev->next)
			mt_wake(ev->waiter);
	}
	return drained(m) ? -ESHUTDOWN : 0;
}

static int
io_poll(void *arg)
{
	struct guest *g = arg;
	int did, rc, rang;

	lg_mt_lock(g);
	rc = lg_serve(g, &did);
	/* the heartbeat, while microthreads keep busy: by the clock (a
	 * vDSO read, once per MT_POLL_EVERY runs), not by a count of polls:
	 * 64 of those took a handler's 4096 yields, and one that computes
	 * between yields on a loaded machine went 2 intervals without a beat */
	if (did)
		g->mt->served++;
	else
		lg_clock_beat(g);
	if (g->mt->blocked != NULL)
		lg_mt_wake_ready(g);
	/* acquire: pairs with guest_stop's release */
	if (rc == 0 && atomic_load_explicit(&g->stop, memory_order_acquire))
		rc = drain(g);
	rang = hp_endpoint_take_rang(&g->ep);
	lg_mt_unlock(g);
	/* what the microthreads sent woke a peer: its CPU, before we look
	 * again (wake_peer, proto/endpoint.c) */
	if (rang)
		sched_yield();
	return rc < 0 ? rc : did;
}

static int
io_ready(void *arg)
{
	struct guest *g = arg;

	if (atomic_load(&g->mt->kicked))
		return 1;
	/* acquire: pairs with guest_stop's release; a stop being drained
	 * waits for its handlers like any other work */
	if (atomic_load_explicit(&g->stop, memory_order_acquire) &&
	    (!g->mt->draining || drained(g->mt)))
		return 1;
	if (hp_host_goodbye_said(&g->seg))
		return 1;
	for (struct lg_blocked *w = g->mt->blocked; w != NULL; w = w->next)
		if (w->ready(w->arg) != 0)
			return 1;
	return lg_traffic(g);
}

/* Sleeps until traffic, a blocked microthread's condition, a kick or
 * deadline_ns. mu is given up for the sleep itself: a microthread of
 * another processor may send meanwhile. The runtime yielded before it
 * came here: no spinning. */
static int
io_wait(void *arg, uint64_t deadline_ns)
{
	struct guest *g = arg;
	struct lg_mt *m = g->mt;
	uint32_t waits = HP_WAIT_RING_DATA;
	uint64_t now, until = deadline_ns, drain;
	int rc = 0;

	lg_mt_lock(g);
	now = lg_clock_beat(g);
	if (g->hb_interval != 0 && g->next_hb < until)
		until = g->next_hb;
	for (struct lg_blocked *w = m->blocked; w != NULL; w = w->next)
		waits |= w->waits;
	/* no doorbell rings for these: look again soon (a host without
	 * waiter words wakes by futex; a freed variable slot by the pool's
	 * own word) */
	if (g->ep.my_waits == NULL && until > now + SLEEP_UNRUNG_NS)
		until = now + SLEEP_UNRUNG_NS;
	if ((waits & HP_WAIT_SLOT) && until > now + SLEEP_UNRUNG_NS / 4)
		until = now + SLEEP_UNRUNG_NS / 4;
	hp_endpoint_announce(&g->ep, waits);
	if (!io_ready(g) && until > now) {
		uint64_t ms = until == UINT64_MAX ? 0 : (until - now + 999999) / 1000000;
		struct hp_sleep sl;

		g->ep.stats.sleeps++;
		hp_endpoint_set_awake(&g->ep, 0);
		/* the group and the lanes' figures are the lock's: another
		 * processor may open or close a lane while we sleep */
		hp_endpoint_sleep_prepare(&g->ep, m->kick_fd, &sl);
		/* the lanes' figures, the topics' announcement (lane.c) */
		if (g->group.on_sleep(g->group.on_sleep_arg) == 0) {
			lg_mt_unlock(g);
			rc = hp_sleep_poll(&sl, until == UINT64_MAX ? -1 :
					   ms > INT_MAX ? INT_MAX : (int)ms);
			lg_mt_lock(g);
			if (rc > 0)
				rc = hp_endpoint_sleep_finish(&g->ep, &sl);
		}
		hp_endpoint_set_awake(&g->ep, 1);
	}
	hp_endpoint_cancel(&g->ep);
	/* seq_cst: pairs with io_kick's store, before its write */
	if (atomic_exchange(&m->kicked, 0))
		(void)!read(m->kick_fd, &drain, sizeof(drain));
	if (rc == -EPIPE)
		g->dead = -EPIPE;
	lg_mt_unlock(g);
	return rc == -EPIPE ? rc : 0;
}

static void
io_kick(void *arg)
{
	struct guest *g = arg;
	uint64_t one = 1;

	/* seq_cst: io_wait reads it before it sleeps (io_ready) and
	 * takes it back after (exchange); the eventfd ends a sleep begun */
	atomic_store(&g->mt->kicked, 1);
	(void)!write(g->mt->kick_fd, &one, sizeof(one));
}

/* Spinning helps only while the hub's processes fit the CPUs (the
 * endpoint's crowding count): else it keeps the peer off a CPU. */
static int
io_spin(void *arg)
{
	struct guest *g = arg;

	return !hp_endpoint_crowded(&g->ep);
}

/* -- the runtime (struct lg_runtime) -------------------------------------- */

/* On a microthread of this guest's runtime: waits suspend, the runtime
 * serves. Elsewhere (another thread) as the callback runtime. */
static int
on_mt(const struct guest *g)
{
	return g->mt != NULL && mt_self() != NULL;
}

static int
mt_wait(struct guest *g, uint32_t waits, int (*ready)(void *), void *arg,
	struct timeout *t)
{
	if (on_mt(g))	/* that microthread alone waits */
		return lg_mt_wait(g, waits, ready, arg, t);
	return lg_wait_resting(g, waits, ready, arg, t);
}

static int
mt_wait_serving(struct guest *g, uint32_t waits, int (*ready)(void *),
		void *arg, struct timeout *t)
{
	if (on_mt(g))	/* suspended: the runtime serves meanwhile */
		return lg_mt_wait(g, waits, ready, arg, t);
	return lg_callback.wait_serving(g, waits, ready, arg, t);
}

static int
mt_wait_ends(struct guest *g, uint32_t waits, int (*ready)(void *), void *arg,
	     struct timeout *t)
{
	if (on_mt(g))	/* suspended: the runtime serves meanwhile */
		return lg_mt_wait(g, waits, ready, arg, t);
	return lg_callback.wait_ends(g, waits, ready, arg, t);
}

/* Suspends alone: the guest serves on. */
static int
mt_await(struct guest *g, struct lg_event *ev, struct timeout *t)
{
	int rc = 0;

	if (!on_mt(g))
		return lg_callback.await(g, ev, t);
	ev->waiter = mt_self();
	/* a microthread's deadline: no clock read for one without */
	lg_timeout_at(t, t->ms < 0 ? 0 : hp_now_ns());
	HP_LIST_PUSH(&g->mt->awaiting, ev);	/* for drain() */
	while (!ev->done) {
		if (g->mt->draining) {
			rc = -ESHUTDOWN;
			break;
		}
		if ((rc = lg_suspend(g, t->at)) != 0)
			break;
	}
	HP_LIST_UNLINK(&g->mt->awaiting, ev);
	return ev->done ? 0 : rc;
}

static void
mt_wake_event(struct lg_event *ev)
{
	if (ev->waiter != NULL)
		mt_wake(ev->waiter);
}

/* A sender that saw traffic lets the runtime serve it. */
static int
mt_sending(struct guest *g)
{
	if (!on_mt(g))
		return lg_callback.sending(g);
	if (!g->mt->locking)	/* with more processors, an idle one serves */
		guest_mt_yield();
	return 0;
}

static int
mt_service(struct guest *g)
{
	if (on_mt(g))	/* the runtime serves: let it */
		return guest_mt_yield();
	return lg_callback.service(g);
}

static int
mt_service_wait(struct guest *g, struct timeout *t)
{
	if (on_mt(g))
		return lg_mt_service_wait(g, t);
	return lg_callback.service_wait(g, t);
}

/* The service's next poll ends the runtime (io_poll): only a kick here,
 * which is async-signal-safe. */
static void
mt_stop(struct guest *g)
{
	if (g->mt != NULL)
		io_kick(g);
}

static const struct lg_runtime lg_microthreads = {
	.lock		= lg_mt_lock,
	.unlock		= lg_mt_unlock,
	.wait		= mt_wait,
	.wait_serving	= mt_wait_serving,
	.wait_ends	= mt_wait_ends,
	.await		= mt_await,
	.wake		= mt_wake_event,
	.handle		= mt_handle,
	.run_held	= mt_handle,	/* a microthread each, as dispatch does */
	.sending	= mt_sending,
	.service	= mt_service,
	.service_wait	= mt_service_wait,
	.stop		= mt_stop,
};

/* HUB_PROCESSORS: 1 to 256; 0 when unset, or (said on stderr, where it
 * was ignored without a word) when it is anything else: the default, one.
 * Not refused as HUB_MT_STACK is: a guest inherits it from hubd's own
 * environment too, and one processor serves, only slower. */
static unsigned
env_processors(void)
{
	const char *env = getenv("HUB_PROCESSORS");
	char shown[40 * 4 + 4];
	unsigned long n;
	char *end;

	if (env == NULL)
		return 0;
	errno = 0;
	n = strtoul(env, &end, 10);
	if (env[0] >= '0' && env[0] <= '9' && *end == '\0' && errno == 0 &&
	    n >= 1 && n <= 256)
		return (unsigned)n;
	fprintf(stderr, "libguest: HUB_PROCESSORS=\"%s\": not a number of processors "
	    "(1 to 256); running on 1\n", hp_text_shown(env, 40, shown, sizeof(shown)));
	return 0;
}

/* guest.h's since 0.5, with a size; compat.c keeps 0.2's */
__asm__(".symver guest_run_mt, guest_run_mt@@@LIBGUEST_0.5");

int
guest_run_mt(struct guest *g, const struct guest_rt_config *cfg)
{
	struct guest_rt_config dflt;
	struct mt_io io = { io_poll, io_wait, io_kick, io_spin, g };
	pthread_mutexattr_t attr;
	struct lg_mt *m;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (g->mt != NULL || mt_self() != NULL)
		return -EBUSY;
	if ((rc = mt_config(cfg, &dflt)) != 0)
		return rc;
	/* the operator's choice (hubd.conf processors = N), unless the
	 * plugin made its own */
	if (dflt.processors == 0)
		dflt.processors = env_processors();
	cfg = &dflt;
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return -ENOMEM;
	m->locking = cfg->processors > 1;
	if ((m->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = guest_rt_new(cfg, &m->rt)) != 0)
		goto fail_fd;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m->mu, &attr);
	pthread_mutexattr_destroy(&attr);
	g->mt = m;
	g->rt = &lg_microthreads;
	rc = mt_rt_run(m->rt, NULL, NULL, &io);
	g->rt = &lg_callback;
	/* What is left was abandoned with its microthreads (the hub gone,
	 * or it said goodbye: no drain); a call one of them awaits would
	 * write its answer into a stack freed below */
	for (struct lg_event *ev = m->awaiting; ev != NULL; ev = ev->next)
		ev->abandoned = 1;
	lg_out_forget_abandoned(g);
	while (m->reqs != NULL)
		req_free(g, m->reqs);
	lg_mt_bridges_free(g);
	g->mt = NULL;
	guest_rt_free(m->rt);
	pthread_mutex_destroy(&m->mu);
fail_fd:
	close(m->kick_fd);
fail:
	free(m);
	return rc == -ESHUTDOWN ? 0 : rc;
}
