#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A test guest whose flip.m changes signature each time it starts (the
count kept in the file its first argument names): u64->str, then
str->str, and so on. Its handler is async, served by run()."""
import sys

import hubguest

state = [a for a in sys.argv[1:] if not a.startswith("--") and "/" in a][0]
try:
    with open(state) as f:
        n = int(f.read() or 0)
except FileNotFoundError:
    n = 0
with open(state, "w") as f:
    f.write(str(n + 1))

g = hubguest.attach()


async def m(v):
    return "%s %r" % ("u64" if n % 2 == 0 else "str", v)


g.register("flip.m", "u64->str" if n % 2 == 0 else "str->str", m)
g.run()     # an async handler: run() serves in an asyncio loop
