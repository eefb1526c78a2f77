# SPDX-License-Identifier: MIT OR Apache-2.0
"""Call metadata in Python: a handler reads its call's deadline and trace
(hubguest.current_call()), the calls it makes inherit both (a sync handler
and an async one's task), deadline= and trace= override them."""
import os
import signal
import subprocess

import pytest

import hubguest
from hubguest.testing import HubError

from conftest import BUILD, PROBER, PYASYNC, PYGUEST

HUBCTL = os.path.join(BUILD, "hubctl")

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
# the deadlines of a call made to be given up, the later ones for a
# machine so loaded that the call reached its callee after the first
DEADLINES_MS = (500, 5000, 15000)


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


def cancel_counted(h, call, count, what):
    """call(ms) makes a call with a deadline ms away that the callee only
    ends on a Cancel, which count() counts. A call that reaches its callee
    after its deadline goes nowhere (hubd or libguest answers it late, the
    handler never runs), as it may on a loaded machine: tried again with a
    longer deadline; failed once none got its Cancel counted."""
    seen = []
    for ms in DEADLINES_MS:
        call(ms)
        try:
            h.wait(lambda: count() >= 1, what, timeout=20)
            return
        except HubError as e:
            seen.append("deadline %d ms: %s" % (ms, str(e).split("\n", 1)[0]))
    raise HubError("%s: none counted\n%s\n%s" % (what, "\n".join(seen), h.log()[-3000:]))


def test_awaited_call_ends_at_the_inherited_deadline(make_hub):
    # an async handler awaits a call that is never answered, with no
    # timeout of its own: its caller's deadline ends the wait, and the
    # callee gets a Cancel (before, the await waited for ever)
    h = make_hub(PROBER + PYASYNC, up=("prober", "pyasync"),
                 wait=("aio.callwait", "prober.wait", "prober.cancels"))
    cancel_counted(h, lambda ms: h.ctl("call", "--timeout", ms, "aio.callwait"),
                   lambda: h.ok("prober.cancels"), "the Cancel at prober")


def test_awaited_call_cancelled_says_why(make_hub):
    # the callee dies while an async handler awaits its call: Cancelled,
    # with the hub's text
    h = make_hub(PROBER + PYASYNC, up=("prober", "pyasync"), wait=("aio.callwait", "prober.wait"))
    pid = h.peer("prober")["pid"]
    w = subprocess.Popen([HUBCTL, "-s", h.sock, "-t", "60", "call", "aio.callwait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        h.wait(lambda: any(c["method"] == "prober.wait" for c in h.ctl("calls")[1][0]["calls"]),
               "prober.wait in flight")
        os.kill(pid, signal.SIGKILL)
        out, err = w.communicate(timeout=60)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    died = "guest prober died serving prober.wait: killed by signal 9 (SIGKILL)"
    assert w.returncode == 0 and out == "Cancelled: %s\n" % died, (out, err)


@pytest.mark.parametrize("prefix", ["py", "aio"])
def test_handler_learns_its_caller_gave_up(make_hub, prefix):
    # prober calls PREFIX.untilcancel and gives up at its timeout (a
    # Cancel): the handler, sync or async, sees it with
    # hubguest.cancelled() and ends (before, it had no way to know, as a C
    # handler has with guest_call_cancelled, and ran on)
    h = make_hub(PROBER + PYGUEST + PYASYNC, up=("prober", "pyguest", "pyasync"),
                 wait=("prober.route_timeout", prefix + ".untilcancel", prefix + ".cancels"))
    assert h.ok(prefix + ".cancels") == 0

    def call(ms):
        assert h.ok("prober.route_timeout", prefix + ".untilcancel", ms) == "error: timeout"
    cancel_counted(h, call, lambda: h.ok(prefix + ".cancels"), "the Cancel seen by " + prefix)


def test_timeouts_and_deadlines_far_or_of_no_number(make_hub):
    # far ones are as far as a deadline goes (they wrapped around: one
    # just under 2**64 ns passed before the call started, 1e30 meant none,
    # inf raised OverflowError)
    h = make_hub(PYGUEST, up=("pyguest",), wait=("py.meta_far", "py.meta"))
    nan, inf = float("nan"), float("inf")
    for timeout, deadline in ((18446744000.0, -1), (inf, -1), (-1, inf), (-1, 1e30)):
        d, t = shown(h.ok("py.meta_far", "py.meta", timeout, deadline))
        assert d == 2**64 - 1, (timeout, deadline, d)
    # no number: said so, before anything is sent
    g = hubguest.attach(["by-hand"])
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not str"):
        g.call("echo.echo", "x", timeout="5")
    with pytest.raises(TypeError, match=r"deadline must be time.monotonic\(\) seconds or None"):
        g.start("echo.echo", "x", deadline="5")
    with pytest.raises(ValueError, match="timeout is NaN"):
        g.call("echo.echo", "x", timeout=nan)
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not str"):
        g.stream("counter.count", 3, timeout="1")
    assert not g.attached
