/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* futex on shared words: never FUTEX_PRIVATE_FLAG, the waiter and the
 * waker are different processes. */
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proto/futex.h"

int
hp_futex_wait(hp_atomic_u32 *word, uint32_t expected, const struct timespec *timeout)
{
	/* r[shm.wakeup.consumer-wait] r[shm.wakeup.producer-wait] */
	if (syscall(SYS_futex, (uint32_t *)(uintptr_t)word, FUTEX_WAIT, expected,
		    timeout, NULL, 0) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

int
hp_futex_wake(hp_atomic_u32 *word, int n)
{
	long rc;

	if (n < 0)
		return -EINVAL;
	rc = syscall(SYS_futex, (uint32_t *)(uintptr_t)word, FUTEX_WAKE, n,
		     NULL, NULL, 0);

	return rc < 0 ? -errno : (int)rc;
}
