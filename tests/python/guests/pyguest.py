#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A test guest in Python (tests/python): every signature type both ways,
errors, calls to C guests and back, channels both ways.
Methods are named PREFIX.x, PREFIX from the first argument that is not
part of the spawn ticket (default "py")."""
import errno
import os
import sys
import time

import hubguest
from hashing import chain, queued, source_bytes

prefix = "py"
for a in sys.argv[1:]:
    if not a.startswith("--") and a.isidentifier():
        prefix = a
        break

g = hubguest.attach()
assert hubguest.caller() is None    # outside a handler


def m(name, sig):
    return g.method("%s.%s" % (prefix, name), sig)


@m("str", "str->str")
def t_str(s):
    return s + "!"


@m("bytes", "bytes->bytes")
def t_bytes(b):
    return bytes(reversed(b))


@m("u64", "u64->u64")
def t_u64(n):
    return (n + 1) % (1 << 64)


@m("i64", "i64->i64")
def t_i64(n):
    return -n if n != -(1 << 63) else n


@m("bool", "bool->bool")
def t_bool(b):
    return not b


@m("f64", "f64->f64")
def t_f64(x):
    return -x


@m("optf64", "opt<f64>->opt<f64>")
def t_optf64(x):
    return None if x is None else -x


@m("unit", "->unit")
def t_unit():
    return None


@m("multi", "str,bytes,u64,i64,bool->str")
def multi(s, b, u, i, t):
    return repr((s, b, u, i, t))


@m("compound", "map<str,list<f64>>,opt<(u64,bytes)>->(list<str>,opt<f64>,map<u64,bool>)")
def compound(groups, extra):
    # the keys sorted, the largest value, whether each group is long
    values = [v for vs in groups.values() for v in vs]
    return (sorted(groups), max(values) if values else None,
            {len(vs): len(vs) > 1 for vs in groups.values()} if extra is None
            else {extra[0]: extra[1] == b"\xff"})


@m("pid", "->u64")
def pid():
    return os.getpid()


@m("raise", "str->str")
def t_raise(text):
    raise ValueError(text)


@m("usererr", "str->str")
def usererr(text):
    raise hubguest.UserError(text)


@m("usererrbytes", "bytes->str")
def usererrbytes(raw):
    """Raises UserError with raw decoded as a filename is (surrogateescape:
    a byte that is not UTF-8 is a lone surrogate)."""
    raise hubguest.UserError(raw.decode("utf-8", "surrogateescape"))


@m("wrong", "str->u64")
def wrong(text):
    return text         # a str where the signature says u64


@m("shout", "str->str")
def shout(text):
    return g.call("echo.echo", text, timeout=5).upper()


@m("bigcall", "u64->str")
def bigcall(n):
    # an argument of n bytes to echo.echo: what a call too large raises
    try:
        return "ok %d" % len(g.call("echo.echo", "a" * n, timeout=30))
    except hubguest.PayloadTooLarge as e:
        return "PayloadTooLarge: %s" % e


@m("viaprober", "str->str")
def viaprober(text):
    # C's prober.route calls our PREFIX.str back while we wait
    return g.call("prober.route", prefix + ".str", text, timeout=5)


@m("waitstop", "->str")
def waitstop():
    """Calls prober.wait, which answers only a Cancel, for up to a minute:
    a stop ends the wait at once (Stopping, which answers our caller)."""
    g.call("prober.wait", timeout=60)
    return "answered"


_cancels = []


@m("untilcancel", "->str")
def untilcancel():
    """Serves until its caller gives up on it (a Cancel), for a minute at
    most; counted in PREFIX.cancels."""
    end = time.monotonic() + 60
    while not hubguest.cancelled() and time.monotonic() < end:
        g.service()
        time.sleep(0.01)
    _cancels.append(hubguest.cancelled())
    return "cancelled"


@m("cancels", "->u64")
def cancels():
    """How many PREFIX.untilcancel calls saw their Cancel."""
    assert not hubguest.cancelled()     # not this call's
    return sum(_cancels)


@m("who", "str->str")
def who(_):
    # asked twice: the second is libguest's kept answer
    first = hubguest.caller()
    assert hubguest.caller() == first
    return first


@m("callany", "str,str->str")
def callany(method, arg):
    """Calls method(arg: str): its result as text, or its error's class
    and text."""
    try:
        return "ok: %r" % (g.call(method, arg, timeout=5),)
    except hubguest.Error as e:
        return "%s: %s" % (type(e).__name__, e)


@m("forward", "str,str->unit")
def forward(kind, text):
    """Answers as a bridge does for what failed on the far side."""
    if kind == "unreachable":
        raise hubguest.HubUnreachable("far.m", text)
    if kind == "timeout":
        raise hubguest.RemoteTimeout("far.m", text)
    raise hubguest.UserError(text)


@m("callfail", "str,str->str")
def callfail(kind, text):
    """Calls prober.fail(kind, text): the error's class, code and text."""
    try:
        return "ok: %r" % (g.call("prober.fail", kind, text, timeout=5),)
    except hubguest.RemoteError as e:
        return "%s %s: %s" % (type(e).__name__, errno.errorcode[-e.code], e.message)
    except hubguest.Error as e:
        return "%s: %s" % (type(e).__name__, e)


@m("calltyped", "str,i64->str")
def calltyped(method, n):
    """Calls method(n: an int): its result, or the error's class and text."""
    try:
        return "ok: %r" % (g.call(method, n, timeout=5),)
    except (hubguest.Error, TypeError, ValueError) as e:
        return "%s: %s" % (type(e).__name__, e)


@m("badargs", "->str")
def badargs():
    before = g.stats()["calls_out"]
    try:
        g.call("echo.echo", 5, timeout=5)
    except TypeError as e:
        sent = g.stats()["calls_out"] - before
        # the signature's lookup went out, the call did not
        return "TypeError (%d sent): %s" % (sent, e)
    return "no error"


@m("sig", "str->str")
def sig(name):
    try:
        return g.signature(name, timeout=5)
    except hubguest.Error as e:
        return "%s: %s" % (type(e).__name__, e)


@m("register", "str->str")
def register(name):
    """Registers name (answering "extra") now: ok, or the error with its
    code."""
    try:
        g.register(name, "->str", lambda: "extra")
        return "ok"
    except hubguest.Error as e:
        return "%s %d: %s" % (type(e).__name__, e.code, e)


@m("unregister", "str->str")
def unregister(name):
    """Withdraws name: ok, or the error with its code."""
    try:
        g.unregister(name)
        return "ok"
    except hubguest.Error as e:
        return "%s %d: %s" % (type(e).__name__, e.code, e)


@m("count", "u64,chan<u64>->u64")
def count(n, out):
    for i in range(1, n + 1):
        out.send(i)
    return n


@m("words", "str,chan<str>->u64")
def words(text, out):
    n = 0
    for w in text.split():
        out.send(w)
        n += 1
    return n


@m("source", "u64->str")
def source(n):
    """n bytes from hub.source, each checked, the hash against the hub's."""
    h = got = 0
    s = g.stream("hub.source", n, timeout=10)
    for item in s:
        if any(b != (got + k) % 256 for k, b in enumerate(item)):
            return "bad bytes at %d" % got
        got += len(item)
        h = chain(h, item)
    if got != n or s.result != h:
        return "mismatch: %d bytes, hash %x, hub's %x" % (got, h, s.result)
    return "ok %d %016x" % (got, h)


@m("relay", "u64->str")
def relay(n):
    """counter.count (a C guest) streams 1..n to us through hubd."""
    s = g.stream("counter.count", n, timeout=10)
    items = list(s)
    if items != list(range(1, n + 1)) or s.result != n:
        return "mismatch: %r, result %r" % (items[:10], s.result)
    return "ok %d" % len(items)


@m("pyrelay", "str,u64->str")
def pyrelay(method, n):
    """method (a chan<u64> method of another guest, Python or C) streams
    1..n to us; the items' sum."""
    s = g.stream(method, n, timeout=10)
    return "ok %d %d" % (sum(s), s.result)


@m("early", "u64->str")
def early(n):
    """Leaves a hub.source stream of n bytes after its first item; then
    streams another to the end."""
    s = g.stream("hub.source", n, timeout=10)
    for item in s:
        break
    s = g.stream("hub.source", 5000, timeout=10)
    total = sum(len(i) for i in s)
    return "ok %d" % total


def fill_window(s, window, item=4096):
    """Serves, taking nothing, until no further item of s fits in the
    window (10 s at most)."""
    deadline = time.monotonic() + 10
    while (queued(s) + 1) * item <= window and not s._call.done() \
            and time.monotonic() < deadline:
        g.service()
        time.sleep(0.002)


@m("slowsource", "u64,u64->str")
def slowsource(n, window):
    """A slow reader of n bytes of hub.source, in a guest that serves on
    meanwhile (g.service(), as a guest does while a handler waits):
    takes nothing until the window (the hub's initial_credit) is full,
    serves on 20 times, then takes the items one at a time, serving
    between them. Answers "ok N full=F later=L most=M": the items queued
    once the window was full, after serving on, and the most ever; every
    byte and the hash checked."""
    s = g.stream("hub.source", n, timeout=10)
    it = iter(s)                # the call is made, nothing taken yet
    fill_window(s, window)
    full = queued(s)
    for _ in range(20):
        time.sleep(0.01)
        g.service()
    later = most = queued(s)
    h = got = 0
    for item in it:
        if item != source_bytes(got, len(item)):
            return "bad bytes at %d" % got
        got += len(item)
        h = chain(h, item)
        g.service()
        most = max(most, queued(s))
    if got != n or s.result != h:
        return "mismatch: %d bytes, hash %x, hub's %x" % (got, h, s.result)
    return "ok %d full=%d later=%d most=%d" % (got, full, later, most)


@m("abandon", "u64,u64->str")
def abandon(n, window):
    """Leaves hub.source streams of n bytes with the window full of items
    not taken: by closing the iterator, and by dropping it; each must stop
    its sender. Then streams another to the end."""
    for how in ("close", "drop"):
        s = g.stream("hub.source", n, timeout=10)
        it = iter(s)
        next(it)
        fill_window(s, window)
        if how == "close":
            it.close()
        else:
            del it
        if not s._stopped:
            return "%s: the stream was not stopped" % how
    total = sum(len(i) for i in g.stream("hub.source", 5000, timeout=10))
    return "ok %d" % total


@m("nostream", "->str")
def nostream():
    """A stream from a method nobody registered, many times: refused each
    time, the channel kept for the next one (never leaked)."""
    for _ in range(100):
        try:
            list(g.stream("no.such", hubguest.CHANNEL, timeout=5, signature="chan<u64>->u64"))
        except hubguest.UnknownMethod:
            continue
        return "no error"
    s = g.stream("hub.source", 100, timeout=5)
    return "ok %d" % sum(len(i) for i in s)


@m("sink", "u64,u64->str")
def sink(n, item):
    """n bytes in items of item bytes into hub.sink, our hash against the
    hub's (each item's postcard length prefix included)."""
    s = g.open_sender()
    c = g.start("hub.sink", s, timeout=30)
    h = sent = seq = 0
    with s:
        while sent < n:
            k = min(item, n - sent)
            data = bytes((seq * 131 + i * 7) % 256 for i in range(k))
            h = chain(h, hubguest.encode("bytes", data))
            s.send(data)
            sent += k
            seq += 1
    hub = c.result()
    return "ok %d" % sent if hub == h else "mismatch: %x vs %x" % (hub, h)


@m("sum", "rx<u64>->u64")
def upsum(items):
    """An upload (rx<u64>): its items read as an iterator, their sum."""
    return sum(items)


@m("upload", "str,u64->str")
def upload(method, n):
    """1..n sent to method (an rx<u64> one) from an iterator: its answer."""
    return "ok %d" % g.call(method, iter(range(1, n + 1)), timeout=60)


@m("uploadwithin", "str,u64,u64->str")
def uploadwithin(method, n, ms):
    """1..n sent to method as upload() does, within ms: its answer, or
    the error."""
    try:
        return "ok %d" % g.call(method, iter(range(1, n + 1)), timeout=ms / 1000)
    except hubguest.Error as e:
        return "%s: %s" % (type(e).__name__, e)


@m("takefew", "rx<u64>->u64")
def takefew(items):
    """The first three items, the rest never read: the caller's sends fail."""
    total = 0
    for i, v in enumerate(items):
        total += v
        if i == 2:
            break
    return total


@m("log", "str->unit")
def log(text):
    g.log(text)


@m("describe", "str,str->str")
def describe(method, text):
    try:
        g.describe(method, text)
    except hubguest.HubError as e:
        return "error: %s" % e.message
    return "ok"


def _shown():
    """The handled call's deadline and trace as metaguest shows them:
    "DEADLINE TRACE" (ns, 0: none; "-": none)."""
    c = hubguest.current_call()
    return "%d %s" % (c.deadline_ns, c.trace or "-")


@m("meta", "str->str")
def meta(_):
    c = hubguest.current_call()
    assert (c.deadline is None) == (c.deadline_ns == 0)
    assert c.remaining() is None or c.remaining() >= 0
    return _shown()


@m("meta_nested", "str->str")
def meta_nested(method):
    """Its own deadline and trace, then method's (a meta): "MINE|ITS"."""
    return "%s|%s" % (_shown(), g.call(method, "x", timeout=10))


@m("meta_override", "str->str")
def meta_override(method):
    """method called with no deadline and a new trace."""
    return g.call(method, "x", deadline=None, trace=hubguest.NEW_TRACE)


@m("meta_far", "str,f64,f64->str")
def meta_far(method, timeout, deadline):
    """method called with timeout (seconds; below 0: none) and deadline
    (below 0: none, not the handled call's): its meta, or the error."""
    try:
        return g.call(method, "x", timeout=timeout if timeout >= 0 else None,
                      deadline=deadline if deadline >= 0 else None)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)


g.run()
