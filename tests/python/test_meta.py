# SPDX-License-Identifier: MIT OR Apache-2.0
"""Call metadata in Python: a handler reads its call's deadline and trace
(hubguest.current_call()), the calls it makes inherit both (a sync handler
and an async one's task), deadline= and trace= override them."""
import os

from conftest import PROBER, PYASYNC, PYGUEST

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def shown(s):
    d, t = s.split(" ")
    assert t == "-" or len(t) == 55, s
    return int(d), t


def call_meta(h, *args):
    """hubctl call --trace TP --timeout 60000 ARGS: its result."""
    rc, lines, err = h.ctl("call", "--trace", TP, "--timeout", "60000", *args)
    assert rc == 0 and lines and lines[-1].get("ok"), (rc, lines, err)
    return lines[-1]["result"]


def inherited(s):
    mine, its = (shown(x) for x in s.split("|"))
    assert mine[1][:35] == its[1][:35] == TP[:35], s           # the same trace-id
    assert mine[1][36:52] != its[1][36:52], s                  # a new parent-id
    assert mine[0] != 0 and 0 < its[0] <= mine[0], s           # not later


def test_handler_reads_and_calls_inherit(make_hub):
    h = make_hub(PROBER + PYGUEST + PYASYNC, up=("prober", "pyguest", "pyasync"),
                 wait=("py.meta", "py.meta_nested", "aio.meta_nested", "prober.route"))
    d, t = shown(call_meta(h, "py.meta", "x"))
    assert d != 0 and t == TP
    # Python -> Python, through the hub
    inherited(call_meta(h, "py.meta_nested", "py.meta"))
    # an async handler's task
    inherited(call_meta(h, "aio.meta_nested", "py.meta"))
    # C (libguest) -> Python: prober's call carries what it was called with
    d, t = shown(call_meta(h, "prober.route", "py.meta", "x"))
    assert d != 0 and t[:35] == TP[:35] and t != TP
    # overridden: no deadline, a new trace
    d, t = shown(call_meta(h, "py.meta_override", "py.meta"))
    assert d == 0 and t.startswith("00-") and t[:35] != TP[:35]
    assert os.path.exists(h.sock)
