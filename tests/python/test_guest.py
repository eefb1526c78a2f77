# SPDX-License-Identifier: MIT OR Apache-2.0
"""The Python binding end to end: Python guests (tests/python/guests) in a
real hubd beside C guests, driven with hubctl."""
import errno
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from hubguest.handlers import _error_text

from conftest import BUILD, ECHO, COUNTER, PROBER, PYGUEST, PYASYNC, PYGUESTS

HUBCTL = os.path.join(BUILD, "hubctl")


def test_each_type_both_ways(hub):
    # hubctl encodes by the signature, the Python handler decodes, answers,
    # and hubctl decodes the answer
    assert hub.ok("py.str", "héllo") == "héllo!"
    assert hub.ok("py.bytes", "abc") == b"cba"
    assert hub.ok("py.u64", "41") == 42
    assert hub.ok("py.u64", str(2**64 - 1)) == 0
    assert hub.ok("py.i64", "-7") == 7
    assert hub.ok("py.i64", str(-2**63)) == -2**63
    assert hub.ok("py.bool", "true") is False
    assert hub.ok("py.bool", "false") is True
    assert hub.ok("py.unit") is None
    assert hub.ok("py.multi", "s", "b", "3", "-4", "true") == "('s', b'b', 3, -4, True)"
    # the same as Python values, and results as Python values
    assert hub.ok("py.u64", 41) == 42
    assert hub.ok("py.bool", True) is False
    assert hub.ok("py.bytes", b"\xff\x00b") == b"b\x00\xff"
    assert hub.ok("py.bytes", b"base64:x") == b"x:46esab"
    assert hub.ok("py.multi", "s", b"\xff", 3, -4, True) == "('s', b'\\xff', 3, -4, True)"
    # floats, also those JSON has no number for (given in quotes, hubctl
    # refused them: "argument 1 is not an f64")
    assert hub.ok("py.f64", 1.5) == -1.5
    assert hub.ok("py.f64", float("inf")) == float("-inf")
    assert hub.ok("py.optf64", float("-inf")) == float("inf")
    assert math.isnan(hub.ok("py.f64", float("nan")))
    # and from Python to Python through the hub (pyguest calls itself)
    assert hub.ok("py.callany", "py.str", "x") == "ok: 'x!'"
    assert hub.ok("py.calltyped", "py.i64", "-9") == "ok: 9"
    assert hub.ok("py.calltyped", "py.u64", "9") == "ok: 10"


def test_compound_types_both_ways(hub):
    # hubctl's JSON arguments decoded into dicts, lists, None, tuples and
    # floats, and the handler's tuple shown as JSON
    assert hub.ok("py.compound", '{"b":[1.5,-2],"a":[]}', "null") == \
        (["a", "b"], 1.5, {0: False, 2: True})
    assert hub.ok("py.compound", '{}', '[7,"base64:/w=="]') == ([], None, {7: True})
    # Python values in: dicts, lists, None, tuples, bytes (hub.ok encodes
    # them as hubctl's JSON by the signature)
    assert hub.ok("py.compound", {"b": [1.5, -2], "a": []}, None) == \
        (["a", "b"], 1.5, {0: False, 2: True})
    assert hub.ok("py.compound", {}, (7, b"\xff")) == ([], None, {7: True})
    assert hub.ok("py.compound", {"x": [float("inf")]}, None) == (["x"], float("inf"), {1: False})
    rc, err, _ = hub.call("py.compound", '{"a":["x"]}', "null")
    assert rc == 1 and "argument 1 is not a map<str,list<f64>>: the value of \"a\" is not " \
        "a list<f64>: element 1 is not an f64" in err


def test_python_calls_c_and_c_calls_python(hub):
    # Python -> C: greeter-like shout through echo.echo
    assert hub.ok("py.shout", "make noise") == "MAKE NOISE"
    # C -> Python: prober.route (C) calls py.str
    assert hub.ok("prober.route", "py.str", "from C") == "from C!"
    # Python -> C -> Python: py.viaprober waits on prober.route, which calls
    # py.str back on the same guest while its handler waits
    assert hub.ok("py.viaprober", "round trip") == "round trip!"


def test_handler_learns_its_caller(hub):
    # hubctl's call is a control client's; a C guest's, through the hub
    # (hub.caller) and then over the lane that follows, is that guest's;
    # pyguest calling itself is pyguest
    assert hub.ok("py.who", "x") == "client:%d" % os.getuid()
    assert hub.ok("prober.route", "py.who", "x") == "prober"
    assert hub.ok("prober.route", "py.who", "x") == "prober"
    assert hub.ok("py.callany", "py.who", "x") == "ok: 'pyguest'"
    assert hub.peer("pyguest")["deaths"] == []


def test_register_only_its_names(hub):
    # pyguest's own names are pyguest.*, and its config provides py.*
    assert hub.ok("py.register", "py.extra") == "ok"
    assert hub.ok("py.register", "pyguest.extra") == "ok"
    assert hub.ok("py.extra") == "extra"
    # another guest's, stopped or not, and one nobody has: refused
    eperm = "Error %d: register %%s (->str): not one of this guest's names" % -errno.EPERM
    assert hub.ok("py.register", "echo.mine").startswith(eperm % "echo.mine")
    rc, _, _ = hub.ctl("stop", "echo")
    assert rc == 0
    assert hub.ok("py.register", "echo.echo").startswith(eperm % "echo.echo")
    # a call of a stopped guest's method: the hub's error, not the callee's
    hub.wait(lambda: hub.peer("echo")["state"] == "down", "echo down")
    assert hub.ok("py.callany", "echo.echo", "x") == "HubError: echo.echo: guest echo is down"
    assert hub.ok("py.register", "nobody.x").startswith(eperm % "nobody.x")
    assert "guest pyguest: may not register nobody.x" in hub.log()
    # not a method name at all (proto/method.h), or one pyguest has: the
    # binding says so where it is given, before libguest and the hub
    for name in ("py.a b", "py..x", "py.x\x1b[31m"):
        rc, err, _ = hub.call("py.register", name)
        assert rc != 0 and err.startswith("ValueError: register %r: bad method name: " % name), err
    rc, err, _ = hub.call("py.register", "py.str")
    assert rc != 0 and err.startswith("ValueError: register py.str (->str): this guest "
                                      "registers py.str (str->str) already"), err
    assert hub.ok("py.str", "still") == "still!"


def test_unregister(hub):
    # registered, called, withdrawn: a new call is the hub's "no such
    # method"; registered again, it answers again
    assert hub.ok("py.register", "py.gone") == "ok"
    assert hub.ok("py.gone") == "extra"
    assert hub.ok("py.unregister", "py.gone") == "ok"
    rc, err, _ = hub.call("py.gone")
    assert rc != 0 and "py.gone" in err, err
    assert "py.gone" not in hub.methods()
    assert hub.ok("py.unregister", "py.gone").startswith("Error %d: unregister py.gone: not "
                                                         "registered here" % -errno.ENOENT)
    assert hub.ok("py.register", "py.gone") == "ok"
    assert hub.ok("py.gone") == "extra"


def test_handler_that_raises(hub):
    pid = hub.peer("pyguest")["pid"]
    rc, err, _ = hub.call("py.raise", "boom")
    assert rc == 1 and err == "ValueError: boom"
    rc, err, _ = hub.call("py.usererr", "just this")
    assert rc == 1 and err == "just this"
    # the traceback went to stderr (hubd's log)
    hub.wait(lambda: "ValueError: boom" in hub.log() and "Traceback" in hub.log(),
             "the traceback in the log")
    # the same process answers the next call
    assert hub.ok("py.str", "still here") == "still here!"
    assert hub.peer("pyguest")["pid"] == pid
    # C calling a Python method that raises gets the user error
    assert hub.ok("prober.route", "py.raise", "x") == "error: user"


def test_error_text_not_utf8_goes_as_u_fffd(hub):
    # a handler's error text with lone surrogates (a filename decoded with
    # surrogateescape) arrived as "bad ? name ?? ???": its bytes are back,
    # each that is not UTF-8 U+FFFD, as guest_reply_error sends them in C
    rc, err, _ = hub.call("py.usererrbytes", b"bad \xff name \xc3\xa9 \xed\xa0\x80")
    assert rc == 1 and err == "bad \ufffd name \xe9 \ufffd\ufffd\ufffd", repr(err)
    # a lone surrogate that is no byte's: U+FFFD too, not an exception
    assert _error_text("a \ud800 \udcff\0") == "a \ufffd \ufffd\\0".encode()
    assert hub.peer("pyguest")["deaths"] == []


def test_wrong_result_type(hub):
    pid = hub.peer("pyguest")["pid"]
    rc, err, _ = hub.call("py.wrong", "not a number")
    assert rc == 1
    assert "does not fit the result type u64 of str->u64" in err
    assert hub.ok("py.pid") == pid


def test_argument_types_checked_before_sending(hub):
    res = hub.ok("py.badargs")
    assert res.startswith("TypeError (1 sent): echo.echo (str->str): argument 1 must be str")
    # the errors of failed calls, as Python exceptions
    assert hub.ok("py.callany", "no.such", "x") == "UnknownMethod: no.such: no such method"
    assert hub.ok("py.callany", "py.raise", "bad") == "RemoteError: py.raise: ValueError: bad"
    assert hub.ok("py.calltyped", "py.str", "5").startswith(
        "TypeError: py.str (str->str): argument 1 must be str, not int")
    assert hub.ok("py.calltyped", "py.u64", "-1").startswith(
        "ValueError: py.u64 (u64->u64): argument 1 = -1 is out of u64's range")


def test_forwarded_errors(hub):
    hub.wait(lambda: "prober.why2" in hub.methods() and "prober.fail" in hub.methods(),
             "prober.why2 and prober.fail")
    # a C guest's guest_reply_status reaches Python as its own class
    assert hub.ok("py.callfail", "unreachable", "no responders") == \
        "HubUnreachable EHOSTUNREACH: no responders"
    assert hub.ok("py.callfail", "timeout", "after 2s") == "RemoteTimeout ETIMEDOUT: after 2s"
    assert hub.ok("py.callfail", "user", "plain") == "RemoteError EREMOTEIO: plain"
    # a Python handler raising one forwards it: C's caller gets the status
    assert hub.ok("prober.why2", "py.forward", "unreachable", "no responders") == \
        "unreachable: no responders | unreachable: no responders"
    assert hub.ok("prober.why2", "py.forward", "timeout", "after 2s") == \
        "timeout: after 2s | timeout: after 2s"
    assert hub.ok("prober.why2", "py.forward", "user", "plain") == "user: plain | user: plain"
    # and hubctl says what failed
    rc, lines, _ = hub.ctl("call", "py.forward", "timeout", "after 2s")
    assert rc == 1 and lines[-1] == {"ok": False, "kind": "timeout", "error": "after 2s"}
    assert hub.peer("pyguest")["deaths"] == []


def test_call_too_large_names_its_size(hub):
    # the largest class of the default pool is 32 MiB: 40 MiB (and its
    # length prefix) is refused at the caller, the size named
    assert hub.ok("py.bigcall", str(40 << 20)) == (
        "PayloadTooLarge: echo.echo: its arguments of 41943044 bytes are larger than "
        "the hub carries")
    assert hub.ok("py.bigcall", str(1 << 20)) == "ok %d" % (1 << 20)


def test_hub_signature(hub):
    assert hub.ok("hub.signature", "py.multi") == "str,bytes,u64,i64,bool->str"
    assert hub.ok("py.sig", "echo.echo") == "str->str"
    assert hub.ok("py.sig", "counter.count") == "u64,chan<u64>->u64"
    assert hub.ok("py.sig", "hub.sink") == "rx<bytes>->u64"
    assert hub.ok("py.sig", "no.such") == "UnknownMethod: no.such: no such method"
    rc, err, _ = hub.call("hub.signature", "no.such")
    assert rc == 1 and err == "no such method: no.such"


def test_killed_python_guest_is_restarted(hub):
    pid = hub.peer("pyguest")["pid"]
    os.kill(pid, signal.SIGKILL)
    hub.wait(lambda: hub.peer("pyguest")["pid"] not in (0, pid) and
             hub.peer("pyguest")["state"] == "up", "pyguest back")
    p = hub.peer("pyguest")
    assert p["epoch"] == 2
    assert hub.last_death("pyguest")["reason"] == "crashed"
    assert hub.last_death("pyguest")["status"] == 9
    hub.wait_methods("py.str")
    assert hub.ok("py.str", "again") == "again!"
    assert hub.ok("py.pid") == p["pid"]


def test_sigterm_is_a_clean_detach(hub):
    rc, _, err = hub.ctl("stop", "pyguest")
    assert rc == 0, err
    hub.wait(lambda: hub.peer("pyguest")["state"] == "down", "pyguest down")
    # it exited by itself, before stop_grace would have killed it: SIGTERM
    # was noticed (no time asserted: load can slow it, never change how
    # it ended)
    death = hub.last_death("pyguest")
    assert death["reason"] == "exited" and death["status"] == 0, death
    assert "killed by signal" not in hub.log().split("pyguest: stopping")[-1]
    rc, _, _ = hub.ctl("start", "pyguest")
    hub.wait_up("pyguest")
    hub.wait_methods("py.str")
    assert hub.ok("py.str", "back") == "back!"


def stop_while_waiting(h, guest, method, text):
    """Calls method, whose handler waits for prober.wait (answered only
    with a Cancel), then hubctl stop guest: the wait ends (Stopping), the
    callee gets the Cancel, the handler's caller an error with text, and
    the guest exits by itself, not killed after stop_grace."""
    w = subprocess.Popen([HUBCTL, "-s", h.sock, "-t", "120", "call", method],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        h.wait(lambda: any(c["method"] == "prober.wait" for c in h.ctl("calls")[1][0]["calls"]),
               "prober.wait in flight")
        rc, _, err = h.ctl("stop", guest)
        assert rc == 0, err
        out, err = w.communicate(timeout=120)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    assert w.returncode != 0 and text in err, (out, err)
    h.wait(lambda: h.peer(guest)["state"] == "down", "%s down" % guest)
    death = h.last_death(guest)
    assert death["reason"] == "exited" and death["status"] == 0, death
    h.wait(lambda: h.ok("prober.cancels") == 1, "the Cancel at prober")


def test_stop_ends_a_handlers_wait(hub):
    stop_while_waiting(hub, "pyguest", "py.waitstop", "prober.wait: the guest is stopping")


def test_stop_ends_a_send_waiting_for_credit(make_hub):
    # py.count sends to aio.hold, which takes one item and holds the rest:
    # py.count waits for credit when hubctl stop pyguest comes. The wait
    # ends (it went on in C, deaf to SIGTERM, until stop_grace killed the
    # guest: "did not stop in time")
    h = make_hub(PYGUEST + PYASYNC, keys="initial_credit = 4K\n", up=("pyguest", "pyasync"),
                 wait=("py.count", "aio.hold"))
    w = subprocess.Popen([HUBCTL, "-s", h.sock, "-t", "120", "call", "aio.hold", "py.count",
                          "1000000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        h.wait(lambda: any(c["method"] == "py.count" for c in h.ctl("calls")[1][0]["calls"]),
               "py.count in flight")
        rc, _, err = h.ctl("stop", "pyguest")
        assert rc == 0, err
        out, err = w.communicate(timeout=120)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    h.wait(lambda: h.peer("pyguest")["state"] == "down", "pyguest down")
    death = h.last_death("pyguest")
    assert death["reason"] == "exited" and death["status"] == 0, death
    # its handler ended, answering why
    assert out.startswith("RemoteError: py.count: channel ") and \
        out.endswith(": the guest is stopping\n"), (out, err)


def test_stop_then_start_back_to_back(hub):
    # issue 39: "hubctl stop greeter; hubctl start greeter" left it down:
    # the start, coming while it stopped, was lost
    pid = hub.peer("pyguest")["pid"]
    rc, _, err = hub.ctl("stop", "pyguest")
    assert rc == 0, err
    rc, lines, err = hub.ctl("start", "pyguest")
    assert rc == 0, err
    # still stopping: it starts once stopped, and the answer says so;
    # down already: it starts now
    assert lines[0]["state"] == "starting" or lines[0].get("then") == "start", lines
    hub.wait(lambda: hub.peer("pyguest")["state"] == "up" and
             hub.peer("pyguest")["pid"] not in (0, pid), "pyguest up again")
    hub.wait_methods("py.str")
    assert hub.ok("py.str", "again") == "again!"


def test_channels_sync(hub):
    # a Python handler's chan<T> argument, hubctl on the other end
    rc, res, items = hub.call("py.count", "5")
    assert rc == 0 and items == [1, 2, 3, 4, 5] and res == 5
    rc, res, items = hub.call("py.words", "a bb ccc")
    assert rc == 0 and items == ["a", "bb", "ccc"] and res == 3
    # hub.source as an iterator: every byte and the stream hash checked
    assert hub.ok("py.source", "100000").startswith("ok 100000 ")
    assert hub.ok("py.source", "0").startswith("ok 0 ")
    # a relayed stream from a C guest, and from a Python one
    assert hub.ok("py.relay", "1000") == "ok 1000"
    assert hub.ok("py.pyrelay", "py.count", "100") == "ok 5050 100"
    assert hub.ok("py.pyrelay", "counter.count", "10") == "ok 55 10"
    # into hub.sink with a channel the guest opened, hashes compared
    assert hub.ok("py.sink", "300000", "4000") == "ok 300000"
    assert hub.ok("py.sink", "10", "3") == "ok 10"
    # leaving a stream early stops its sender; the next one works
    assert hub.ok("py.early", "1000000") == "ok 5000"
    # refused streams do not use channels up
    assert hub.ok("py.nostream") == "ok 100"
    assert hub.peer("pyguest")["deaths"] == []


def test_asyncio(make_hub):
    h = make_hub(ECHO + COUNTER + PYASYNC, up=("echo", "counter", "pyasync"),
                 wait=("aio.sleep", "aio.timeout"))
    assert h.ok("aio.both", "abc") == "abc|cba"
    assert h.ok("aio.who", "x") == "client:%d" % os.getuid()
    assert h.ok("aio.source", "70000") == "ok 70000"
    assert h.ok("aio.relay", "300") == "ok 300"
    rc, res, items = h.call("aio.count", "200")
    assert rc == 0 and items == list(range(1, 201)) and res == 200
    rc, err, _ = h.call("aio.raise", "k")
    assert rc == 1 and err == "KeyError: 'k'"
    assert h.ok("aio.timeout").startswith("Timeout: aio.sleep: no answer in time")
    # async handlers run side by side: four calls of aio.meet, each of
    # which answers only once all four are in their handlers together
    procs = [subprocess.Popen([HUBCTL, "-s", h.sock, "-t", "60", "call", "aio.meet", "4"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(4)]
    outs = [p.communicate(timeout=90)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs == [b"4\n"] * 4, outs
    # SIGTERM through the loop's handler: a clean exit
    rc, _, _ = h.ctl("stop", "pyasync")
    h.wait(lambda: h.peer("pyasync")["state"] == "down", "pyasync down")
    death = h.last_death("pyasync")
    assert death["reason"] == "exited" and death["status"] == 0, death


@pytest.mark.parametrize("method,text", [
    ("aio.waitstop", "prober.wait: the guest is stopping"),
    ("aio.awaitstop", "aio.awaitstop: the guest is stopping"),
])
def test_asyncio_stop_ends_a_handlers_wait(make_hub, method, text):
    # the same in a guest served by serve(): a sync handler's blocking
    # wait (SIGTERM reaches it, though the loop, whose own signal handling
    # it had, cannot run until it returns), and an async handler awaiting
    # a call (cancelled where it waits); stop_grace far off
    h = make_hub(PROBER + PYASYNC, keys="stop_grace = 300s\n", up=("prober", "pyasync"),
                 wait=(method, "prober.wait", "prober.cancels"))
    stop_while_waiting(h, "pyasync", method, text)


WINDOW = 65536          # initial_credit of the hubs below
SOURCE_ITEM = 4096      # hub.source's items


def credit_waits(h, name):
    """hubd's credit waits for guest name: hub.source found no credit."""
    rc, lines, err = h.ctl("stats")
    assert rc == 0, err
    return lines[0]["guests"][name]["credit_waits"]


def test_uploads_both_ways(make_hub):
    # rx<T>: a caller passes an iterator (or an async iterator), the
    # handler gets an iterator (or an async one): Python to Python both
    # ways, Python to C (counter.sum), hubctl's stdin to Python, through
    # hubd, far more than a window
    h = make_hub(COUNTER + PYGUEST + PYASYNC, keys="initial_credit = 4K\n",
                 up=("counter", "pyguest", "pyasync"),
                 wait=("counter.sum", "py.upload", "aio.upload", "aio.sum"))
    n = 20000
    want = "ok %d" % (n * (n + 1) // 2)
    assert h.ok("py.upload", "counter.sum", n) == want
    assert h.ok("py.upload", "aio.sum", n) == want
    assert h.ok("aio.upload", "py.sum", n) == want
    assert h.ok("aio.upload", "counter.sum", n) == want
    assert h.ok("aio.upload", "aio.sum", 10) == "ok 55"
    # a callee that reads a few and answers: the caller stops, no hang
    assert h.ok("py.upload", "py.takefew", n) == "ok 6"
    r = subprocess.run([HUBCTL, "-s", h.sock, "call", "py.sum", "-"],
                       input="".join("%d\n" % i for i in range(1, 101)),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "5050\n", r.stderr
    # hubguest.testing uploads an iterable as g.call does (it gave hubctl
    # the list's JSON: "argument 1 is the caller's stream")
    assert h.ok("py.sum", range(1, 101)) == 5050
    assert h.ok("counter.sum", (i for i in range(1, 11))) == 55
    assert h.ok("aio.sum", []) == 0
    for name in ("pyguest", "pyasync"):
        assert h.peer(name)["deaths"] == []


def test_upload_ends_at_the_calls_timeout(make_hub):
    # the callee takes no item: the upload, sync or async, waits for its
    # credit until the call's timeout, then the call is given up (it
    # waited for the credit, past the timeout, until the callee answered)
    h = make_hub(PYGUEST + PYASYNC, keys="initial_credit = 4K\n", up=("pyguest", "pyasync"),
                 wait=("py.uploadwithin", "aio.uploadwithin", "aio.noread"))
    assert h.ok("py.uploadwithin", "aio.noread", 100000, 300) == \
        "Timeout: aio.noread: no answer in time"
    assert h.ok("aio.uploadwithin", "aio.noread", 100000, 300) == \
        "Timeout: aio.noread: no answer in time (aio.noread waits)"


def test_async_send_waits_for_credit_without_polling(make_hub):
    # asend looked for credit every millisecond, a thousand wakes a second
    # of a stalled receiver; it now looks each time the guest has served
    # (the hub rang it, or serve()'s own 20 ms tick with no heartbeat)
    h = make_hub(PYASYNC, keys="initial_credit = 4K\n", up=("pyasync",),
                 wait=("aio.creditlooks", "aio.noread"))
    out = h.ok("aio.creditlooks", 3000)
    m = re.fullmatch(r"Timeout: aio.noread: no answer in time \(aio.noread waits\); "
                     r"(\d+) looks in ([0-9.]+) s", out)
    assert m, out
    # at least one look (a busy machine may stretch the second: counted,
    # not rated), and nowhere near one a millisecond
    looks, secs = int(m.group(1)), float(m.group(2))
    assert looks >= 1 and looks / secs <= 100, out


def test_slow_stream_reader_holds_the_sender_back(make_hub):
    # 32 MiB of hub.source read slowly by a guest served meanwhile (by
    # g.service() in a for loop, by the event loop under async for): credit
    # goes back as the reader takes items, not as they arrive, so hubd
    # sends a window's worth and waits, however long the reader sleeps,
    # and the binding never queues more; every byte arrives, hashes match
    h = make_hub(PYGUEST + PYASYNC, keys="initial_credit = 64K\n", up=("pyguest", "pyasync"),
                 wait=("py.slowsource", "aio.slowsource"))
    n = 32 << 20
    per = WINDOW // SOURCE_ITEM
    for name, method in (("pyguest", "py.slowsource"), ("pyasync", "aio.slowsource")):
        waits = credit_waits(h, name)
        res = h.ok(method, n, WINDOW, timeout=120)
        assert res.startswith("ok %d " % n), res
        queued = dict(f.split("=") for f in res.split()[2:])
        assert int(queued["full"]) == per and int(queued["later"]) == per, res
        assert int(queued["most"]) <= per, res
        assert credit_waits(h, name) > waits, "hubd never waited for %s's credit" % name
        assert h.peer(name)["deaths"] == []


def test_abandoned_stream_reader_stops_the_sender(make_hub):
    # a reader that leaves a stream with a window's worth queued and the
    # sender waiting for credit (close(), a dropped iterator, break in
    # async for, aclose()) stops it with a Reset as before: the next
    # stream works and every channel is freed
    h = make_hub(PYGUEST + PYASYNC, keys="initial_credit = 64K\n", up=("pyguest", "pyasync"),
                 wait=("py.abandon", "aio.abandon"))
    for name, method in (("pyguest", "py.abandon"), ("pyasync", "aio.abandon")):
        assert h.ok(method, 1 << 20, WINDOW) == "ok 5000"
        h.wait(lambda: h.peer(name)["channels_open"] == 0, "%s's channels freed" % name)
        assert h.peer(name)["deaths"] == []


def test_signature_asked_again_after_reregistration(make_hub, request):
    # flip keeps its count where its own uid (a hubd of root gives it one)
    # can write: not under pytest's tmp_path, which only we can reach
    d = tempfile.mkdtemp(prefix="hubpy-flip-")
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    os.chmod(d, 0o711)
    state = os.path.join(d, "flip-state")
    os.close(os.open(state, os.O_CREAT | os.O_WRONLY, 0o600))
    os.chmod(state, 0o666)
    h = make_hub(PYGUEST + "[guest flip]\nexec = %s/flip.py\nargs = %s\n" % (PYGUESTS, state),
                 up=("pyguest", "flip"), wait=("flip.m", "py.calltyped"))
    assert h.methods()["flip.m"] == "u64->str"
    assert h.ok("py.calltyped", "flip.m", "7") == "ok: 'u64 7'"
    pid = h.peer("flip")["pid"]
    os.kill(pid, signal.SIGKILL)
    h.wait(lambda: h.methods().get("flip.m") == "str->str" and
           h.peer("flip")["state"] == "up", "flip back as str->str")
    # pyguest's cached u64->str no longer fits: InvalidPayload from the hub,
    # the signature asked again, and the int now refused by str->str
    assert h.ok("py.calltyped", "flip.m", "7").startswith(
        "TypeError: flip.m (str->str): argument 1 must be str, not int")
    assert h.ok("py.callany", "flip.m", "x") == "ok: \"str 'x'\""
    # flip serves with run() and an async handler: run() ran an event
    # loop, and SIGTERM ends it cleanly too
    h.ctl("stop", "flip")
    h.wait(lambda: h.peer("flip")["state"] == "down", "flip down")
    death = h.last_death("flip")
    assert death["reason"] == "exited" and death["status"] == 0, death


def test_log_and_debugging(hub):
    hub.ok("py.log", "a line from python")
    hub.wait(lambda: "guest pyguest: a line from python" in hub.log(), "hub.log line")


def test_describe(hub):
    # hub.describe from Python: a method's where, the guest's note, a refusal
    assert hub.ok("py.describe", "py.str", "over there") == "ok"
    assert hub.ok("py.describe", "", "all well") == "ok"
    rc, lines, _ = hub.ctl("methods")
    where = {m["name"]: m.get("where") for m in lines[0]["methods"]}
    assert where["py.str"] == "over there" and where["py.u64"] is None
    assert hub.peer("pyguest")["note"] == "all well"
    assert hub.ok("py.describe", "echo.echo", "x") == "error: not your method: echo.echo"
    assert hub.ok("py.describe", "", "") == "ok"
    assert "note" not in hub.peer("pyguest")


def test_greeter_example(make_hub):
    greeter = os.path.join(BUILD, "guests", "greeter")
    h = make_hub(ECHO + "[guest greeter]\nexec = %s\n" % greeter, up=("echo", "greeter"),
                 wait=("greeter.hello", "greeter.shout", "greeter.count"))
    assert h.ok("greeter.hello", "world") == "hello, world"
    assert h.ok("greeter.shout", "python calls c") == "PYTHON CALLS C"
    rc, res, items = h.call("greeter.count", "3")
    assert rc == 0 and items == [1, 2, 3] and res == 3
