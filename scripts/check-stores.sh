#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# Every store into shared memory is a proto/ call: proto/atomic.h's
# writers compile only where HP_WRITER is defined, which the Makefile does
# for proto/ and tests/ alone. This checks that no other file defines it,
# and that a file without it which stores does not compile.
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-cc}

bad=$(grep -rln --include='*.[ch]' HP_WRITER daemon guestlib hubctl nats bridge \
	bindings 2>/dev/null || true)
if [ -n "$bad" ]; then
	echo "check-stores: HP_WRITER outside proto/ and tests/ in:" >&2
	echo "$bad" >&2
	exit 1
fi
probe='#include "proto/atomic.h"
void f(hp_atomic_u32 *p);
void f(hp_atomic_u32 *p) { hp_store_relaxed_u32(p, 1); }'
if printf '%s\n' "$probe" | $CC -std=c11 -I. -Werror -fsyntax-only -x c - 2>/dev/null; then
	echo "check-stores: a store outside proto/ compiled (proto/atomic.h's gate is open)" >&2
	exit 1
fi
if ! printf '%s\n' "$probe" | $CC -std=c11 -I. -DHP_WRITER -Werror -fsyntax-only -x c -; then
	echo "check-stores: the probe does not compile even with HP_WRITER" >&2
	exit 1
fi
echo "check-stores: shared memory is written in proto/ alone"
