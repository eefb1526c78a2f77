/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The progressive wait of a guest-host pair's end (endpoint.h): spin,
 * yield, then announce and sleep (on the doorbell, on the spec's futex
 * words under a host without waiter words, or on the shared pool's word
 * for a slot) until a condition holds; and the conditions (data to read,
 * room to send). Built on endpoint.c's announce, cancel and awake count. */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "proto/channel.h"
#include "proto/clock.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/futex.h"
#include "proto/varpool.h"

/* Progressive wait: spin this long, then yield for this long, then sleep.
 * Spinning covers a peer that answers within microseconds without a
 * syscall; the bound keeps two waiting processes from filling two cores.
 * While the hub's processes outnumber the CPUs there is no spinning: each
 * yield hands this CPU to whoever the answer waits for. */
#define SPIN_NS		20000
#define YIELD_NS	50000
/* A wait that begins this long after the one before ends a quiet spell:
 * one exchange after quiet, not a busy pipeline. */
#define SPORADIC_NS	1000000
/* Longest futex sleep under a host without waiter words: it may wake a
 * word other than ours (which slot bitmap word is its choice) or ring only
 * the doorbell; between naps we look at the doorbell. */
#define SPEC_NAP_MS	20
#define SPEC_NAP_SHORT_MS 1	/* slot waits, or several things at once */
/* A variable slot is freed by whichever peer held it, straight into the
 * shared list: the wake comes on the pool's futex word, and we look at
 * the doorbell between naps. */
#define VAR_NAP_MS	2

/* The futex word a guest sleeps on under a host without waiter words (the
 * first of waits, in bit order), or NULL: sleep on the doorbell. */
static hp_atomic_u32 *
spec_sleep_word(const struct hp_endpoint *ep, uint32_t waits)
{
	if (ep->my_waits != NULL || ep->side != HP_SIDE_GUEST || waits == 0)
		return NULL;
	if ((waits & -waits) == HP_WAIT_CREDIT)
		return ep->credit_word;
	return ep->sleep_words[hp_wait_bit_index(waits & -waits)];
}

/* One nap on word while it still holds seen, then a look at the doorbell:
 * drains it and tells a host that died (-EPIPE). */
static int
spec_sleep(struct hp_endpoint *ep, hp_atomic_u32 *word, uint32_t seen,
	   uint32_t waits, int ms)
{
	int cap = (waits & (waits - 1)) != 0 || (waits & HP_WAIT_SLOT) ?
	    SPEC_NAP_SHORT_MS : SPEC_NAP_MS;
	struct timespec ts;
	int rc;

	if (ms < 0 || ms > cap)
		ms = cap;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	hp_futex_wait(word, seen, &ts);
	rc = hp_endpoint_drain(ep);
	return rc == -EPIPE ? -EPIPE : 0;
}

/* One nap on the variable pool's wake word (hp_var_sleep_begin counted
 * us), then a look at the doorbell. */
static int
var_sleep(struct hp_endpoint *ep, uint32_t seen, int ms)
{
	struct timespec ts = { 0, 0 };
	int rc;

	if (ms < 0 || ms > VAR_NAP_MS)
		ms = VAR_NAP_MS;
	ts.tv_nsec = (long)ms * 1000000;
	hp_futex_wait(&ep->var->hdr->wake_seq, seen, &ts);
	hp_var_sleep_end(ep->var);
	rc = hp_endpoint_drain(ep);
	return rc == -EPIPE ? -EPIPE : 0;
}

/* What a wait that spun (or found its condition at its first look)
 * tells of the next, ending with ready's r (0: its time ran out) after
 * took ns: a run of long ones sends the next waits to sleep at once
 * (endpoint.h). A wait that slept at once tells nothing: how long it took
 * holds its own wake. */
static int
ended(struct hp_endpoint *ep, uint64_t took, int r)
{
	ep->outlasted = r != 0 && took <= HP_WAIT_LONG_NS ? 0 : ep->outlasted + 1;
	return r < 0 ? r : r > 0;
}

int
hp_endpoint_wait(struct hp_endpoint *ep, uint32_t waits,
		 int (*ready)(void *arg), void *arg, int timeout_ms)
{
	uint64_t began = hp_now_ns(), start = began, deadline = UINT64_MAX;
	/* After quiet, a guest whose call goes to another guest through the
	 * host, or that answered one that came so (sleep_first), sleeps at
	 * once: the host then rings the next process of the chain while this
	 * one is not runnable on its CPU, and the kernel wakes that one there
	 * rather than on an idle CPU, which a VM takes 100 us or more to run
	 * (doc/performance.md, "What any relay costs here"). A busy pipeline
	 * still spins: its waits begin microseconds apart. */
	int hinted = ep->sleep_first && began - ep->wait_began_ns > SPORADIC_NS;
	int at_once = hinted;
	/* So does a wait after a run of long ones (endpoint.h), all but one
	 * in HP_WAIT_PROBE, which spins to see whether they still are. */
	int patient = ep->outlasted >= HP_WAIT_OUTLASTED;
	int r, i;

	if (patient && ++ep->since_probe < HP_WAIT_PROBE)
		at_once = 1;
	else if (patient)
		ep->since_probe = 0;
	ep->sleep_first = 0;
	ep->wait_began_ns = began;
	if (timeout_ms >= 0)
		deadline = began + (uint64_t)timeout_ms * 1000000u;
	/* Woken from a sleep last time, or we woke the peer since: it is
	 * likely on this CPU, runnable behind us and about to read what we
	 * just sent (the kernel wakes a sleeper on its waker's CPU);
	 * spinning here would keep it off for the whole spin (wake-from-idle
	 * 27 -> 10 us over a lane). One step aside first, before a sleep at
	 * once after long waits too (the sleep takes longer to give the CPU
	 * up: a lane after quiet on one CPU 40 -> 30 us); not when hinted. */
	if ((hp_endpoint_take_rang(ep) | ep->woke) && !hinted)	/* |: both cleared */
		sched_yield();
	ep->woke = 0;
	for (i = 0; !at_once && !hp_endpoint_crowded(ep); i++) {
		if ((r = ready(arg)) != 0)
			return ended(ep, 0, r);
		hp_cpu_relax();
		if ((i & 63) == 63 && hp_now_ns() - start > SPIN_NS)
			break;
	}
	for (start = hp_now_ns(); !at_once;) {
		if ((r = ready(arg)) != 0)
			return ended(ep, 0, r);
		if (hp_now_ns() - start > YIELD_NS)
			break;
		sched_yield();
	}
	for (int slept = 0;; slept = 1) {
		uint64_t now = hp_now_ns();
		hp_atomic_u32 *word = spec_sleep_word(ep, waits);
		/* read before the re-check: a change after it fails the
		 * futex_wait instead of being slept through; relaxed: only
		 * compared by the kernel, ready() makes its own acquires */
		uint32_t seen = word != NULL ? hp_load_relaxed_u32(word) : 0;
		/* waiting for a variable slot: counted on the pool's word */
		int var_wait = (waits & HP_WAIT_SLOT) && ep->var != NULL &&
		    ep->var->want != HP_VAR_NIL;
		uint32_t vseen = var_wait ? hp_var_sleep_begin(ep->var) : 0;
		int ms;

		hp_endpoint_announce(ep, waits);
		if ((r = ready(arg)) != 0 || now >= deadline) {
			if (var_wait)
				hp_var_sleep_end(ep->var);
			hp_endpoint_cancel(ep);
			if (!at_once)
				return ended(ep, now - began, r);
			if (r > 0 && !slept)	/* there at its first look */
				return ended(ep, 0, r);
			return r < 0 ? r : r > 0;
		}
		ms = deadline == UINT64_MAX ? -1 :
		    (int)((deadline - now + 999999) / 1000000);
		ep->stats.sleeps++;
		hp_endpoint_set_awake(ep, 0);
		r = var_wait ? var_sleep(ep, vseen, ms) :
		    word != NULL ? spec_sleep(ep, word, seen, waits, ms) :
		    hp_endpoint_sleep(ep, ep->wake_fd, ms);
		hp_endpoint_set_awake(ep, 1);
		hp_endpoint_cancel(ep);
		if (r == -EPIPE)
			return -EPIPE;
		ep->woke = r > 0;
	}
}

int
hp_endpoint_rx_ready(void *arg)
{
	struct hp_endpoint *ep = arg;
	int n;

	if (ep->inbox_pos != ep->inbox_len)
		return 1;
	n = hp_ring_available(&ep->rx);
	return n < 0 ? n : n > 0;
}

int
hp_endpoint_tx_ready(void *arg)
{
	struct hp_endpoint *ep = arg;
	int rc = hp_endpoint_tx_room(ep);

	if (rc <= 0)
		return rc;
	if (ep->var != NULL)
		return hp_var_ready(ep->var);
	return hp_slot_count_free(&ep->tx_pool) > 0;
}
