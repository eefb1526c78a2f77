#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A plugin as its author writes it: attach() at module level, handlers
decorated, run() only when started as a program, so that a unit test
imports the module and calls the handlers with no hub (test_kit.py)."""
import os

import hubguest

g = hubguest.attach()


@g.method("greet.hello", "str->str")
def hello(name):
    return "hello, " + name


@g.method("greet.env", "str->str")
def env(name):
    """What the guest's environment says of name ("" unset): env = in its
    section sets it."""
    return os.environ.get(name, "")


@g.method("greet.die", "->unit")
def die():
    """Dies in the call: its caller's error says so."""
    os._exit(3)


@g.method("greet.fail", "str->unit")
def fail(text):
    """Answers Err with text as it is."""
    raise hubguest.UserError(text)


def spin_in_python():
    """Never returns, never lets the guest beat: hubd finds it hung."""
    n = 0
    while True:
        n += 1


@g.method("greet.hang", "->unit")
def hang():
    spin_in_python()


if __name__ == "__main__":
    g.run()
