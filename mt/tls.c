/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's thread-local state: the processor this thread
 * is, and the microthread it runs. */
#include "mt/internal.h"
#include "proto/clock.h"

_Thread_local struct mt_tls mt_tls;

/* Read anew on each call: a microthread may resume on another thread, and
 * a compiler may keep a TLS address across the jump if it sees it. */
__attribute__((noinline)) struct mt_proc *
mt_cur_proc(void)
{
	__asm__ __volatile__("" ::: "memory");
	return mt_tls.p;
}

__attribute__((noinline)) struct guest_mt *
mt_self(void)
{
	__asm__ __volatile__("" ::: "memory");
	return mt_tls.cur;
}

void
mt_set_label(const char *label)
{
	struct guest_mt *m = mt_self();

	if (m != NULL)
		m->label = label;
}

void *
mt_ctx(void)
{
	struct guest_mt *m = mt_self();

	return m != NULL ? m->ctx_area : NULL;
}

uint64_t
guest_mt_now_ns(void)
{
	return hp_now_ns();
}

void
mt_on_exit(void (*fn)(void *), void *arg)
{
	struct guest_mt *m = mt_self();

	if (m != NULL) {
		m->on_exit = fn;
		m->on_exit_arg = arg;
	}
}
