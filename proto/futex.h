/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* futex wait and wake on words in the shared segment. Never
 * FUTEX_PRIVATE_FLAG: waiter and waker are different processes
 * (r[shm.wakeup.consumer-wait], r[shm.wakeup.producer-wait]). */
#ifndef HP_FUTEX_H
#define HP_FUTEX_H

#include <stdint.h>
#include <time.h>

#include "proto/atomic.h"

/* Sleeps while *word == expected. timeout is relative (NULL: forever).
 * 0 when woken (maybe spuriously), -EAGAIN when *word != expected already,
 * -ETIMEDOUT, -EINTR. */
int hp_futex_wait(hp_atomic_u32 *word, uint32_t expected, const struct timespec *timeout);

/* Wakes up to n waiters (INT32_MAX: all); returns how many were woken, or -errno. */
int hp_futex_wake(hp_atomic_u32 *word, int n);

#endif
