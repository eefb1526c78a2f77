#!/usr/bin/env python3
"""A test guest in Python on asyncio (tests/python): async handlers,
call_async, async streams, served by serve()."""
import asyncio
import os

import hubguest
from hashing import chain

g = hubguest.attach()


@g.method("aio.sleep", "u64->u64")
async def sleep(ms):
    await asyncio.sleep(ms / 1000)
    return ms


@g.method("aio.both", "str->str")
async def both(text):
    a, b = await asyncio.gather(g.call_async("echo.echo", text, timeout=5),
                                g.call_async("echo.reverse", text, timeout=5))
    return a + "|" + b


@g.method("aio.pid", "->u64")
def pid():
    return os.getpid()


@g.method("aio.raise", "str->str")
async def araise(text):
    await asyncio.sleep(0)
    raise KeyError(text)


@g.method("aio.source", "u64->str")
async def source(n):
    h = got = 0
    s = g.stream("hub.source", n, timeout=10)
    async for item in s:
        got += len(item)
        h = chain(h, item)
    return "ok %d" % got if s.result == h and got == n else "mismatch"


@g.method("aio.relay", "u64->str")
async def relay(n):
    s = g.stream("counter.count", n, timeout=10)
    items = [i async for i in s]
    return "ok %d" % len(items) if items == list(range(1, n + 1)) and s.result == n \
        else "mismatch"


@g.method("aio.count", "u64,chan<u64>->u64")
async def count(n, out):
    for i in range(1, n + 1):
        await out.asend(i)
    return n


@g.method("aio.timeout", "->str")
async def timeout():
    try:
        await g.call_async("aio.sleep", 2000, timeout=0.2)
    except hubguest.Timeout as e:
        return "Timeout: %s" % e
    return "no timeout"


async def main():
    await g.serve()


asyncio.run(main())
