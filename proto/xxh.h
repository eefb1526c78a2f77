/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* XXH3 from libxxhash, at the widest vectors the CPU has: Debian builds
 * the library for SSE2, but ships its x86 dispatcher, which picks AVX2 or
 * AVX-512 at run time (twice as fast here) and hashes the same. */
#ifndef HP_XXH_H
#define HP_XXH_H

#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
#endif

#endif
