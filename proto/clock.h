/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Clocks read as nanoseconds: the one conversion hubd, libguest and
 * hubctl share. CLOCK_MONOTONIC for deadlines and heartbeats (the clock
 * r[shm.crash.heartbeat-clock] has host and guests compare); CLOCK_REALTIME
 * only for times shown to people. */
#ifndef HP_CLOCK_H
#define HP_CLOCK_H

#include <stdint.h>
#include <time.h>

#define HP_NS_PER_S	1000000000ull
#define HP_NS_PER_MS	1000000ull

static inline uint64_t
hp_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * HP_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
hp_now_ns(void)
{
	return hp_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC a tick (1 to 10 ms) behind, read in a few ns: for
 * spans of a second or more on the data path. */
static inline uint64_t
hp_coarse_ns(void)
{
	return hp_clock_ns(CLOCK_MONOTONIC_COARSE);
}

#endif
