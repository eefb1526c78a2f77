/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Memory-ordering helpers for words shared through the segment.
 *
 * Every shared word is touched only through these, with the order spelled
 * out at the call site; each acquire/release there carries a comment naming
 * the store or load it pairs with. */
#ifndef HP_ATOMIC_H
#define HP_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint32_t hp_atomic_u32;
typedef _Atomic uint64_t hp_atomic_u64;

/* r[shm.architecture]: cross-process atomics must be plain lock-free
 * instructions, never a libatomic lock that lives in one process. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(sizeof(hp_atomic_u32) == 4, "atomic u32 is 4 bytes");
_Static_assert(sizeof(hp_atomic_u64) == 8, "atomic u64 is 8 bytes");

static inline uint32_t hp_load_relaxed_u32(hp_atomic_u32 *p)
{ return atomic_load_explicit(p, memory_order_relaxed); }
static inline uint32_t hp_load_acquire_u32(hp_atomic_u32 *p)
{ return atomic_load_explicit(p, memory_order_acquire); }
static inline uint64_t hp_load_relaxed_u64(hp_atomic_u64 *p)
{ return atomic_load_explicit(p, memory_order_relaxed); }
static inline uint64_t hp_load_acquire_u64(hp_atomic_u64 *p)
{ return atomic_load_explicit(p, memory_order_acquire); }

/* The writers, for proto/ alone: every store into shared memory is a
 * proto call, so one anywhere else does not compile. The Makefile defines
 * HP_WRITER for proto's files and for the tests (whose hostile guests
 * write what no proto call would); scripts/check-stores.sh sees that no
 * other file does. */
#ifdef HP_WRITER
static inline void hp_store_relaxed_u32(hp_atomic_u32 *p, uint32_t v)
{ atomic_store_explicit(p, v, memory_order_relaxed); }
static inline void hp_store_release_u32(hp_atomic_u32 *p, uint32_t v)
{ atomic_store_explicit(p, v, memory_order_release); }
static inline void hp_store_relaxed_u64(hp_atomic_u64 *p, uint64_t v)
{ atomic_store_explicit(p, v, memory_order_relaxed); }
static inline void hp_store_release_u64(hp_atomic_u64 *p, uint64_t v)
{ atomic_store_explicit(p, v, memory_order_release); }

/* Compare-and-swap with acq_rel on success, acquire on failure; *expected
 * receives the current value when it fails. Returns nonzero on success. */
static inline int hp_cas_u32(hp_atomic_u32 *p, uint32_t *expected, uint32_t desired)
{
	return atomic_compare_exchange_strong_explicit(p, expected, desired,
		memory_order_acq_rel, memory_order_acquire);
}
static inline int hp_cas_u64(hp_atomic_u64 *p, uint64_t *expected, uint64_t desired)
{
	return atomic_compare_exchange_strong_explicit(p, expected, desired,
		memory_order_acq_rel, memory_order_acquire);
}

static inline uint32_t hp_fetch_add_u32(hp_atomic_u32 *p, uint32_t v, memory_order mo)
{ return atomic_fetch_add_explicit(p, v, mo); }
static inline uint64_t hp_fetch_add_u64(hp_atomic_u64 *p, uint64_t v, memory_order mo)
{ return atomic_fetch_add_explicit(p, v, mo); }
static inline uint64_t hp_fetch_or_u64(hp_atomic_u64 *p, uint64_t v, memory_order mo)
{ return atomic_fetch_or_explicit(p, v, mo); }
#endif /* HP_WRITER */

/* A full fence: the store-then-load (Dekker) pattern of the wake protocol
 * needs it on both sides; acquire/release alone does not order them. */
static inline void hp_fence_seq_cst(void)
{ atomic_thread_fence(memory_order_seq_cst); }

/* Polite spinning: tells the core we are in a spin-wait loop. */
static inline void hp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif
