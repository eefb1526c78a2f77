#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A test guest in Python on asyncio (tests/python): async handlers,
call_async, async streams, served by serve()."""
import asyncio
import os

import hubguest
from hashing import chain, queued, source_bytes

g = hubguest.attach()


@g.method("aio.sum", "rx<u64>->u64")
async def upsum(items):
    """An upload read with async for."""
    total = 0
    async for v in items:
        total += v
    return total


async def _count(n):
    for i in range(1, n + 1):
        yield i


@g.method("aio.upload", "str,u64->str")
async def upload(method, n):
    """1..n sent to method from an async iterator."""
    return "ok %d" % await g.call_async(method, _count(n), timeout=60)


@g.method("aio.uploadwithin", "str,u64,u64->str")
async def uploadwithin(method, n, ms):
    """As pyguest's, from an async iterator; "(aio.noread waits)" after
    an error that came while aio.noread (of this guest) still waited."""
    try:
        return "ok %d" % await g.call_async(method, _count(n), timeout=ms / 1000)
    except hubguest.Error as e:
        return "%s: %s%s" % (type(e).__name__, e, " (aio.noread waits)" if _noread else "")


@g.method("aio.creditlooks", "u64->str")
async def creditlooks(ms):
    """aio.uploadwithin's upload to aio.noread, for ms: its answer, and
    how many times the sender looked for credit meanwhile, in how long."""
    loop = asyncio.get_running_loop()
    before, t0 = g.stats()["credit_waits"], loop.time()
    answer = await uploadwithin("aio.noread", 100000, ms)
    looks = g.stats()["credit_waits"] - before
    return "%s; %d looks in %.3f s" % (answer, looks, loop.time() - t0)


_noread = []


@g.method("aio.noread", "rx<u64>->u64")
async def noread(items):
    """Reads nothing of its upload; answers once its caller gave up on
    it (20 s at most)."""
    _noread.append(True)
    try:
        for _ in range(2000):
            if hubguest.cancelled():
                break
            await asyncio.sleep(0.01)
    finally:
        _noread.pop()
    return 0


@g.method("aio.sleep", "u64->u64")
async def sleep(ms):
    await asyncio.sleep(ms / 1000)
    return ms


_meeting = []


@g.method("aio.meet", "u64->u64")
async def meet(n):
    """Returns once n calls of it are in their handlers at once, which only
    handlers running side by side can do."""
    here = asyncio.get_running_loop().create_future()
    _meeting.append(here)
    if len(_meeting) >= n:
        for f in _meeting:
            if not f.done():
                f.set_result(len(_meeting))
        _meeting.clear()
    return await here


@g.method("aio.both", "str->str")
async def both(text):
    a, b = await asyncio.gather(g.call_async("echo.echo", text, timeout=5),
                                g.call_async("echo.reverse", text, timeout=5))
    return a + "|" + b


@g.method("aio.who", "str->str")
async def who(_):
    # in the handler's task, after the loop ran others
    await asyncio.sleep(0)
    return hubguest.caller()


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


async def fill_window(s, window, item=4096):
    """Takes nothing of s until no further item fits in the window (10 s
    at most): the loop serves the guest meanwhile."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while (queued(s) + 1) * item <= window and not s._call.done() \
            and loop.time() < deadline:
        await asyncio.sleep(0.002)


@g.method("aio.slowsource", "u64,u64->str")
async def slowsource(n, window):
    """py.slowsource with async for: the event loop serves the guest
    (hubd rings its fd for every item) while the reader sleeps."""
    s = g.stream("hub.source", n, timeout=10)
    ait = s.__aiter__()         # the call is made, nothing taken yet
    await fill_window(s, window)
    full = queued(s)
    for _ in range(20):
        await asyncio.sleep(0.01)
    later = most = queued(s)
    h = got = 0
    async for item in ait:
        if item != source_bytes(got, len(item)):
            return "bad bytes at %d" % got
        got += len(item)
        h = chain(h, item)
        await asyncio.sleep(0)  # the loop serves between items
        most = max(most, queued(s))
    if got != n or s.result != h:
        return "mismatch: %d bytes, hash %x, hub's %x" % (got, h, s.result)
    return "ok %d full=%d later=%d most=%d" % (got, full, later, most)


@g.method("aio.abandon", "u64,u64->str")
async def abandon(n, window):
    """Leaves hub.source streams of n bytes with the window full of items
    not taken: by break (the async generator finalized by the loop), and
    by aclose(); each must stop its sender. Then streams another to the
    end."""
    loop = asyncio.get_running_loop()
    for how in ("break", "aclose"):
        s = g.stream("hub.source", n, timeout=10)
        ait = s.__aiter__()
        await fill_window(s, window)
        if how == "break":
            async for item in ait:
                break
            del ait
        else:
            await ait.__anext__()
            await ait.aclose()
        deadline = loop.time() + 10
        while not s._stopped and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if not s._stopped:
            return "%s: the stream was not stopped" % how
    total = 0
    async for item in g.stream("hub.source", 5000, timeout=10):
        total += len(item)
    return "ok %d" % total


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


@g.method("aio.callwait", "->str")
async def callwait():
    """Awaits prober.wait (answered only with a Cancel) with no timeout of
    its own: what ended the wait, as "ExcType: message"."""
    try:
        await g.call_async("prober.wait")
    except hubguest.CallError as e:
        return "%s: %s" % (type(e).__name__, getattr(e, "message", e))
    return "answered"


@g.method("aio.hold", "str,u64->str")
async def hold(method, n):
    """Streams method(n), takes one item and holds the rest (the sender
    waits for credit) until the stream ends (two minutes at most): what
    ended it."""
    s = g.stream(method, n)
    items = s.__aiter__()
    try:
        await items.__anext__()
        for _ in range(1200):
            if s.ended is not None:
                break
            await asyncio.sleep(0.1)
        async for _ in items:
            pass
    except hubguest.Error as e:
        return "%s: %s" % (type(e).__name__, e)
    return "ended"


_cancels = []


@g.method("aio.untilcancel", "->str")
async def untilcancel():
    """As pyguest's: awaits until its caller gives up on it (a Cancel),
    for a minute at most; counted in aio.cancels."""
    for _ in range(6000):
        if hubguest.cancelled():
            break
        await asyncio.sleep(0.01)
    _cancels.append(hubguest.cancelled())
    return "cancelled"


@g.method("aio.cancels", "->u64")
def cancels():
    return sum(_cancels)


@g.method("aio.meta_nested", "str->str")
async def meta_nested(method):
    """As pyguest's: from an async handler, the call made from a task of
    its own (the context goes with it)."""
    c = hubguest.current_call()
    mine = "%d %s" % (c.deadline_ns, c.trace or "-")
    its = await asyncio.ensure_future(g.call_async(method, "x", timeout=10))
    return "%s|%s" % (mine, its)


@g.method("aio.waitstop", "->str")
def waitstop():
    """A sync handler inside serve(): calls prober.wait, which answers only
    a Cancel, for up to a minute; a stop ends the wait at once (Stopping,
    which answers our caller), though the loop waits for us."""
    g.call("prober.wait", timeout=60)
    return "answered"


@g.method("aio.awaitstop", "->str")
async def awaitstop():
    """The same awaited: a stop cancels us where we wait (prober gets a
    Cancel) and answers "aio.awaitstop: the guest is stopping"."""
    await g.call_async("prober.wait", timeout=60)
    return "answered"


async def main():
    await g.serve()


asyncio.run(main())
