/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The microthread runtime's stacks: mapped with a guard below, the
 * microthread's own struct at the top, pooled for reuse; and the fault
 * handler that names an overflow into a guard. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "mt/internal.h"

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
	size_t len = rt->guard + rt->stack_size;
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
		ASAN_UNPOISON_MEMORY_REGION((char *)map + rt->guard, rt->stack_size);
#endif
	} else {
		map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
		if (map == MAP_FAILED)
			return -errno;
		/* the guard: an overflow faults (mt_fault) instead of
		 * writing over whatever lies below */
		if (mprotect(map, rt->guard, PROT_NONE) < 0) {
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

/* Back to the pool (or unmapped past cap stacks pooled); never while in
 * use: called on a scheduler after the microthread's last switch, by its
 * joiner, or for one abandoned. */
static void
stack_put(struct guest_rt *rt, struct guest_mt *m, unsigned cap)
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
	if (rt->npool < cap) {
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

void
mt_stack_put(struct guest_rt *rt, struct guest_mt *m)
{
	stack_put(rt, m, MT_POOL_MAX);
}

/* An abandoned microthread's stack stays mapped, past the pool's cap,
 * until guest_rt_free: libguest still looks at what lies there (the
 * calls it awaited) after the run. */
void
mt_stack_abandon(struct guest_rt *rt, struct guest_mt *m)
{
	stack_put(rt, m, UINT_MAX);
}

/* -- overflows ------------------------------------------------------------ */

#define MT_ALTSTACK	(64u * 1024)

static void
say(const char *s)
{
	ssize_t n = write(STDERR_FILENO, s, strlen(s));

	(void)n;	/* nothing to do if stderr is gone */
}

/* v in base 10 or 16, async-signal-safe. */
static void
say_num(uint64_t v, unsigned base)
{
	char buf[24], *p = buf + sizeof(buf);

	*--p = '\0';
	do {
		*--p = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	if (base == 16)
		say("0x");
	say(p);
}

/* The stack pointer where the fault came, NULL where unknown. */
static const char *
fault_sp(const void *uctx)
{
	const ucontext_t *uc = uctx;

#if defined(__x86_64__)
	return (const char *)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	return (const char *)uc->uc_mcontext.sp;
#else
	(void)uc;
	return NULL;
#endif
}

/* Whether a fault at a, with the stack pointer at sp, is m's stack
 * overflowing: a in the guard, or sp below the stack (a frame larger
 * than the guard jumped it, and faulted wherever it landed). */
static int
overflowed(const struct guest_mt *m, const char *a, const char *sp)
{
	const char *bottom = (const char *)m->map + m->rt->guard;

	if (a >= (const char *)m->map && a < bottom)
		return 1;
	return sp != NULL && sp < bottom;
}

/* SIGSEGV or SIGBUS: one line on stderr, then the default action back, so
 * that the fault, repeated when we return, kills the guest as it would
 * have (hubd sees a crash and restarts it). Only what is safe in a
 * signal handler: the current thread's microthread (mt_tls) and its
 * bounds, and write(2). */
static void
mt_fault(int sig, siginfo_t *si, void *uctx)
{
	struct guest_mt *m = mt_tls.cur;
	const char *a = si->si_addr;
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0) {
		/* sent (kill, raise), not a fault: nothing repeats it */
		raise(sig);
		return;
	}
	if (m != NULL && overflowed(m, a, fault_sp(uctx))) {
		say("libguest: microthread stack overflow");
		if (m->label != NULL) {
			say(" in the handler of ");
			say(m->label);
		}
		say(" (stack ");
		say_num(m->rt->stack_size / 1024, 10);
		say(" KiB; raise it with guest_rt_config.stack_size or HUB_MT_STACK)\n");
	} else {
		say(sig == SIGSEGV ? "libguest: fatal signal SIGSEGV at " :
		    "libguest: fatal signal SIGBUS at ");
		say_num((uintptr_t)a, 16);
		say("\n");
	}
}

static void
fault_install_once(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS };
	struct sigaction sa, old;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		/* a handler of the program's (or a sanitizer's) stays */
		if (sigaction(sigs[i], NULL, &old) != 0 ||
		    (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = mt_fault;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/* Once per process, at a runtime's first start. */
void
mt_fault_install(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fault_install_once);
}

/* A processor's thread needs a signal stack: an overflow leaves no room
 * on its own. One the thread has already is kept. */
void
mt_altstack_on(struct mt_proc *p)
{
	stack_t ss, old;
	void *map;

	p->altstack = NULL;
	if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
		return;
	map = mmap(NULL, MT_ALTSTACK, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return;		/* an overflow dies unnamed, as before */
	ss.ss_sp = map;
	ss.ss_size = MT_ALTSTACK;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0) {
		munmap(map, MT_ALTSTACK);
		return;
	}
	p->altstack = map;
}

void
mt_altstack_off(struct mt_proc *p)
{
	stack_t ss = { .ss_flags = SS_DISABLE };

	if (p->altstack == NULL)
		return;
	sigaltstack(&ss, NULL);
	munmap(p->altstack, MT_ALTSTACK);
	p->altstack = NULL;
}
