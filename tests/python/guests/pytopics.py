#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A test guest in Python for topics (tests/python/test_topics.py): it
advertises and publishes its own topics, subscribes with a handler (sync
and async), reads a topic as an iterator (for and async for) and waits
for methods, each on request. Its methods and topics are NAME.x, NAME
the first argument that is not part of the spawn ticket (default "pt")."""
import asyncio
import sys

import hubguest

name = "pt"
for a in sys.argv[1:]:
    if not a.startswith("--") and a.isidentifier():
        name = a
        break

g = hubguest.attach()
seen, aseen, readers = [], [], {}


def m(method, sig):
    return g.method("%s.%s" % (name, method), sig)


@m("advertise", "str,str,bool->unit")
def advertise(topic, sig, retain):
    g.advertise(topic, sig, retain=retain)


@m("publish", "str,str->unit")
def publish(topic, value):
    g.publish(topic, value)


@m("publish2", "str,u64,str->unit")
def publish2(topic, n, text):
    g.publish(topic, n, text)


@m("publishbad", "str->str")
def publishbad(topic):
    # a value not of the topic's signature: refused here, nothing sent
    try:
        g.publish(topic, 42)
    except (TypeError, ValueError) as e:
        return "refused: %s" % e
    return "sent"


@m("subscribe", "str->unit")
def subscribe(topic):
    @g.subscribe(topic)
    def on(*args):
        seen.append(" ".join(str(a) for a in args))


@m("asubscribe", "str->unit")
def asubscribe(topic):
    @g.subscribe(topic)
    async def on(*args):
        await asyncio.sleep(0)      # a task of the loop
        aseen.append(" ".join(str(a) for a in args))


@m("seen", "->list<str>")
def t_seen():
    return seen


@m("aseen", "->list<str>")
def t_aseen():
    return aseen


@m("open", "str,str->unit")
def t_open(topic, policy):
    readers[topic] = g.topic(topic, policy=policy)


@m("take", "str,u64->list<str>")
def take(topic, n):
    # for over the topic, each Event's value, seq order checked
    out, last = [], None
    for ev in readers[topic]:
        assert last is None or ev.seq > last, (last, ev.seq)
        last = ev.seq
        out.append("%s lost=%d" % (ev.value, ev.lost))
        if len(out) == n:
            break
    return out


@m("atake", "str,u64->list<str>")
async def atake(topic, n):
    out = []
    async for ev in readers[topic]:
        out.append("%s lost=%d" % (ev.value, ev.lost))
        if len(out) == n:
            break
    return out


@m("next", "str,f64->opt<str>")
def t_next(topic, timeout):
    ev = readers[topic].next(timeout=timeout)
    return None if ev is None else str(ev.value)


@m("dropmany", "str,u64->u64")
def dropmany(topic, n):
    """n Topics of topic, each looked at once and dropped unclosed (more
    than a guest's 64 subscriptions): how many were made."""
    made = 0
    for _ in range(n):
        g.topic(topic).next(timeout=0)
        made += 1
    return made


@m("close", "str->unit")
def t_close(topic):
    readers.pop(topic).close()


@m("register", "str->unit")
def register(method):
    g.register(method, "->str", lambda: "late")


@m("wait", "str,f64->str")
def wait(method, timeout):
    try:
        assert g.wait_method(method, timeout=timeout) is True
    except TimeoutError as e:
        return "timeout: %s" % e
    return "ok"


# an async subscriber from the start: run() serves on an asyncio loop
@g.subscribe("%s.boot" % name)
async def boot(value):
    aseen.append("boot " + value)


if __name__ == "__main__":
    g.run()
