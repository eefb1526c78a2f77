#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""greeter: a hub guest in Python.

    greeter.hello NAME   answers "hello, NAME"
    greeter.shout TEXT   calls the C guest's echo.echo with TEXT and answers
                         what it said, upper-cased (Python calling C)
    greeter.count N      streams 1..N on its chan<u64> argument, answers N
    greeter.seen         what it saw of the kv guest's topic kv.changed
                         (the key of each put and delete): how many
                         events, and the last key

hubd starts it with a spawn ticket (conf/hubd.conf, [guest greeter]);
`make run` runs it from the build tree. Its prints and tracebacks go to
hubd's standard error, with hubd's log."""
import hubguest

g = hubguest.attach()
seen = {"events": 0, "last": None}


@g.method("greeter.hello", "str->str")
def hello(name):
    return "hello, " + name


@g.method("greeter.shout", "str->str")
def shout(text):
    return g.call("echo.echo", text, timeout=5).upper()


@g.method("greeter.count", "u64,chan<u64>->u64")
def count(n, out):
    for i in range(1, n + 1):
        out.send(i)
    return n        # out is closed for us once we return


# Each put and delete of the kv guest, as it happens: no polling. kv need
# not be up yet; a greeter that falls behind is lapped (drop-oldest) and
# only counts what it missed.
@g.subscribe("kv.changed")
def kv_changed(key):
    seen["events"] += 1
    seen["last"] = key


@g.method("greeter.seen", "->str")
def seen_text():
    if seen["last"] is None:
        return "no change of kv seen yet"
    return "%d change%s of kv seen, the last of key %r" % (
        seen["events"], "" if seen["events"] == 1 else "s", seen["last"])


if __name__ == "__main__":
    g.log("greeter: ready")
    g.run()         # until hubd stops us (SIGTERM): then a clean detach
