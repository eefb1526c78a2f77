/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's stacks: mapped with a guard page below, the
 * microthread's own struct at the top, pooled for reuse. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "guestlib/mt_internal.h"

#ifdef MT_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define MT_POOL_MAX		1024	/* idle stacks kept per runtime */

void
mt_stack_unmap(struct guest_rt *rt, struct guest_mt *m)
{
#ifdef MT_ASAN
	ASAN_UNPOISON_MEMORY_REGION(m->map, m->maplen);
#endif
	munmap(m->map, m->maplen);
	(void)rt;
}

/* A stack with its microthread at the top, from the pool or mapped. */
int
mt_stack_get(struct guest_rt *rt, struct guest_mt **mp)
{
	struct guest_mt *m;
	size_t len = rt->page + rt->stack_size;
	void *map;

	pthread_mutex_lock(&rt->mu);
	if ((m = rt->pool) != NULL) {
		rt->pool = m->next;
		rt->npool--;
	}
	pthread_mutex_unlock(&rt->mu);
	if (m != NULL) {
		map = m->map;
#ifdef MT_ASAN
		/* frames of its last user may be left poisoned */
		ASAN_UNPOISON_MEMORY_REGION((char *)map + rt->page, rt->stack_size);
#endif
	} else {
		map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
		if (map == MAP_FAILED)
			return -errno;
		/* the guard page: an overflow faults instead of writing over
		 * whatever lies below */
		if (mprotect(map, rt->page, PROT_NONE) < 0) {
			int e = errno;

			munmap(map, len);
			return -e;
		}
		m = (struct guest_mt *)((char *)map + len - sizeof(*m));
		pthread_mutex_lock(&rt->mu);
		rt->mmaps++;
		rt->stacks++;
		pthread_mutex_unlock(&rt->mu);
	}
	memset(m, 0, sizeof(*m));
	m->map = map;
	m->maplen = len;
	m->rt = rt;
	m->tidx = -1;
	*mp = m;
	return 0;
}

/* Back to the pool (or unmapped past its cap); never while in use: called
 * on a scheduler after the microthread's last switch, or by its joiner. */
void
mt_stack_put(struct guest_rt *rt, struct guest_mt *m)
{
	int unmap = 0;

#ifdef MT_TSAN
	if (m->tsan_fiber != NULL)
		__tsan_destroy_fiber(m->tsan_fiber);
	m->tsan_fiber = NULL;
#endif
	pthread_mutex_lock(&rt->mu);
	if (m->all_prev != NULL)
		m->all_prev->all_next = m->all_next;
	else
		rt->all = m->all_next;
	if (m->all_next != NULL)
		m->all_next->all_prev = m->all_prev;
	if (rt->npool < MT_POOL_MAX) {
		m->next = rt->pool;
		rt->pool = m;
		rt->npool++;
	} else {
		unmap = 1;
		rt->munmaps++;
		rt->stacks--;
	}
	pthread_mutex_unlock(&rt->mu);
	if (unmap)
		mt_stack_unmap(rt, m);
}
