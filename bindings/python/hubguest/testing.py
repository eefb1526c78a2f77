# SPDX-License-Identifier: MIT OR Apache-2.0
"""A throwaway hub for a plugin's tests: a real hubd with a config of the
test's own (its control socket in a temporary directory; the guests'
memory is handed to them as fds and lives in no filesystem), driven with
hubctl -j, stopped and checked at the end.

    from hubguest.testing import Hub

    def test_greet():
        with Hub(guests={"greet": "/path/to/greet.py"}, wait=["greet.hello"]) as hub:
            assert hub.ok("greet.hello", "world") == "hello, world"

or, with pytest (`pytest -p hubguest.testing`, or `pytest_plugins =
["hubguest.testing"]` in a conftest.py), the make_hub fixture:

    def test_greet(make_hub):
        hub = make_hub({"greet": "/path/to/greet.py"}, wait=["greet.hello"])
        assert hub.ok("greet.hello", "world") == "hello, world"

hub.ok() and hub.call() take the arguments as Python values and return
the result as one, both by the method's signature (hubctl's text forms
still work: a str is given as it is; another value that does not fit
raises g.call's TypeError). A guest that dies or a hubd that
exits while the hub starts fails the test at once, with hubd's reason.

hubd and hubctl: those of the build tree $HUB_BUILD names (or build=),
else those of the install this binding belongs to (PREFIX/bin/hubctl and
PREFIX/sbin/hubd for a binding in PREFIX/lib/python3.X/dist-packages),
else hubctl on PATH and hubd beside it in ../sbin or on PATH. The guests
inherit hubd's environment: PYTHONPATH leads to this very binding, so
that Python guests import the hubguest the tests do (and it finds its
libguest), and PATH to the python running the tests (their
#!/usr/bin/env python3) and to hubctl. Stopping checks that hubd exits
with status 0, that no guest was killed at the stop, and that no guest
process outlives it; a failure raises HubError (an AssertionError, as
pytest shows them)."""

import base64
import itertools
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from . import codec

_n = itertools.count()
BINDING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The prefix this binding is installed under: PREFIX/lib/python3.X/dist-packages
# (or /usr/lib/python3/dist-packages); in a build tree, no bin/hubctl there.
PREFIX = os.path.normpath(os.path.join(BINDING, "..", "..", ".."))


class HubError(AssertionError):
    """The hub did not start, answer or stop as it should."""


# How long a wait (the Hub's timeout by default) and a stop may take: what
# a loaded machine (a CI runner's two CPUs shared with other tests) needs
# to run a few processes, not what an idle one does; polled, never slept.
WAIT_S = 30


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\r": "\\r", "\v": "\\v"}


def shown(text):
    """Text a guest wrote (an error's, from hubctl's JSON) as hubd's
    escape_text shows it, fit for the terminal a failure is printed on:
    controls but newline and tab, DEL, C1 and the bidirectional
    overrides and isolates escaped (C style, else octal bytes)."""
    def one(ch):
        o = ord(ch)
        if ch in "\n\t" or not (o < 0x20 or 0x7f <= o <= 0x9f or 0x202a <= o <= 0x202e or
                                 0x2066 <= o <= 0x2069):
            return ch
        return _C_ESCAPES.get(ch) or "".join("\\%03o" % b for b in ch.encode("utf-8"))
    return "".join(one(ch) for ch in str(text))


def _check(cond, text):
    if not cond:
        raise HubError(text)


def alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def find_programs(build=None):
    """(hubd, hubctl, libguest or None): a build tree's (build, else
    $HUB_BUILD), or the installed ones."""
    build = build or os.environ.get("HUB_BUILD")
    if build:
        build = os.path.abspath(build)
        _check(all(os.access(os.path.join(build, p), os.X_OK) for p in ("hubd", "hubctl")),
               "no hubd and hubctl in %s (HUB_BUILD, or build=): set HUB_BUILD to the "
               "build directory, where make puts them" % build)
        return (os.path.join(build, "hubd"), os.path.join(build, "hubctl"),
                os.path.join(build, "libguest.so"))
    installed = os.path.join(PREFIX, "bin", "hubctl")
    hubctl = installed if os.access(installed, os.X_OK) else shutil.which("hubctl")
    if not hubctl:
        # a binding in a build tree (bindings/python): its build/ is likely
        tree = os.path.normpath(os.path.join(BINDING, "..", "..", "build"))
        _check(False, "hubctl not found: not installed with this hubguest (%s) nor on PATH; "
               "for a build tree, set HUB_BUILD=%s" % (
                   installed, tree if os.access(os.path.join(tree, "hubctl"), os.X_OK)
                   else "its build directory (where make put hubd and hubctl)"))
    hubctl = os.path.realpath(hubctl)
    hubd = os.path.join(os.path.dirname(os.path.dirname(hubctl)), "sbin", "hubd")
    if not os.access(hubd, os.X_OK):
        hubd = shutil.which("hubd", path=os.environ.get("PATH", "") +
                            ":/usr/local/sbin:/usr/sbin:/sbin")
    _check(hubd, "hubd not found beside %s nor on PATH" % hubctl)
    return hubd, hubctl, None


def guest_sections(guests):
    """The config text of guests: a dict of NAME -> exec path, a list
    [exec, arg...], or a dict of keys {"exec": ..., "env": ...}; or the
    sections themselves as text."""
    if isinstance(guests, str):
        return guests
    text = ""
    for name, g in guests.items():
        if isinstance(g, str):
            g = {"exec": g}
        elif isinstance(g, (list, tuple)):
            g = {"exec": g[0], "args": " ".join('"%s"' % a.replace("\\", "\\\\")
                                                 .replace('"', '\\"') for a in g[1:])}
        text += "[guest %s]\n" % name
        for k, v in g.items():
            if k == "exec":
                v = os.path.abspath(v)
            if v != "":
                text += "%s = %s\n" % (k, v)
    return text


def _keys_text(keys):
    """keys= as [hub]'s lines: a str, or a list or tuple of lines."""
    if isinstance(keys, (list, tuple)) and all(isinstance(k, str) for k in keys):
        return "\n".join(keys)
    if not isinstance(keys, str):
        raise TypeError("keys= is lines of [hub]: a str, or a list or tuple of str, not %r"
                        % (keys,))
    return keys


class Hub:
    """A hubd of its own: Hub(guests, keys="", up=(), wait=()).start(),
    or as a context manager. guests: see guest_sections; keys: lines of
    its [hub] section (a str, or a list or tuple of them); up: guests to
    wait for until they are up; wait: methods to wait for until they are
    registered (a guest is up once it attached, before it registered its
    methods)."""

    def __init__(self, guests, keys="", up=(), wait=(), build=None, timeout=WAIT_S):
        keys = _keys_text(keys)
        self.hubd, self.hubctl, self.libguest = find_programs(build)
        self.up, self.waits, self.timeout = tuple(up), tuple(wait), timeout
        self.dir = tempfile.mkdtemp(prefix="hubtest-%d-" % next(_n))
        self.sock = os.path.join(self.dir, "hub.sock")
        self.conf = os.path.join(self.dir, "hub.conf")
        self.logpath = os.path.join(self.dir, "hub.log")
        with open(self.conf, "w") as f:
            f.write("[hub]\ncontrol = %s\n%s\n%s" % (self.sock, keys, guest_sections(guests)))
        self.proc = None
        self.pids = set()
        self.starting = False

    def env(self):
        """hubd's environment, which its guests inherit; with
        HUBCTL_SOCKET and hubctl's directory first on PATH, for a hubctl
        (or a script) run by the test: subprocess.run(["hubctl", "peers"],
        env=hub.env())."""
        env = dict(os.environ)
        env["PYTHONPATH"] = BINDING + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        if self.libguest:
            env["HUB_LIBGUEST"] = self.libguest
        env["PATH"] = (os.path.dirname(self.hubctl) + ":" + os.path.dirname(sys.executable) +
                       ":" + env.get("PATH", ""))
        env["PYTHONUNBUFFERED"] = "1"
        env["HUBCTL_SOCKET"] = self.sock
        return env

    def start(self):
        """Starts hubd and waits for up and wait; on a failure, the hub is
        cleaned up and HubError says why, with hubd's log."""
        try:
            with open(self.logpath, "ab") as log:
                self.proc = subprocess.Popen([self.hubd, "-f", self.conf], stdout=log,
                                             stderr=subprocess.STDOUT, env=self.env())
            self.wait(self.listening, "hubd listening")
            self.starting = True
            if self.up:
                self.wait_up(*self.up)
            if self.waits:
                self.wait_methods(*self.waits)
        except BaseException:
            self.cleanup()
            raise
        finally:
            self.starting = False
        return self

    def _no_death(self, peers):
        """While starting: a guest that died (it exits, cannot load its
        libraries, breaks a rule) fails at once with hubd's reason rather
        than after the whole timeout."""
        for name, p in peers.items():
            for d in p.get("deaths") or ():
                how = d.get("signal") or "status %s" % d.get("status")
                _check(False, "guest %s died while the hub started: %s %s%s\n%s" % (
                    name, shown(d.get("reason", "?")), how,
                    ", " + shown(d["detail"]) if d.get("detail") else "", self.log()[-3000:]))

    def listening(self):
        """Whether hubd takes connections: its socket is there from bind
        on, refusing them until it listens."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(self.sock)
            except OSError:
                return False
        return True

    def __enter__(self):
        return self.start()

    def __exit__(self, et, ev, tb):
        try:
            self.stop()
        finally:
            self.cleanup()
        return False

    def log(self):
        try:
            with open(self.logpath, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def ctl(self, *args, timeout=30, input=None):
        """hubctl -s SOCK -j ARGS, on this hub: (exit status, the JSON
        lines parsed, stderr), for any command (doc/hubctl.md, -j):
        rc, lines, err = hub.ctl("peers"); lines[0]["peers"]. Its
        arguments are given as str(); input is its standard input (none
        if None: never the test's); it never raises for hubctl's
        status."""
        r = subprocess.run([self.hubctl, "-s", self.sock, "-j", "-t", str(timeout)] +
                           [str(a) for a in args], input=input,
                           stdin=subprocess.DEVNULL if input is None else None,
                           capture_output=True, text=True, timeout=timeout + 10)
        lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        return r.returncode, lines, r.stderr

    def signature(self, method):
        """The method's codec.Signature as registered now (a guest can
        register it again with another), None if it is not."""
        text = self.methods().get(method)
        return codec.Signature(text) if text is not None else None

    def call(self, method, *args, timeout=30):
        """A call through hubctl: (exit status, result or error text,
        items of its chan<T> argument). Arguments are Python values by
        the method's signature (a chan<T> one left out: its items come
        back; an rx<T> one an iterable of its items, uploaded); a str is
        given as it is, also as hubctl's text form of another type ("5",
        '["a"]'), but to an opt<str> or opt<bytes>, whose value it is;
        another value that does not fit raises g.call's TypeError (or
        ValueError) before hubctl runs. The result and the items are
        Python values; an error is its whole text, as hubctl prints it
        ("cancelled: guest ctally died")."""
        sig = self.signature(method)
        at = [i for i, t in enumerate(sig.args) if not isinstance(t, codec.Chan)] if sig else []
        texts, upload = [], None
        for n, a in enumerate(args):
            i = at[n] if n < len(at) else None
            t = sig.args[i] if i is not None else None
            if isinstance(t, codec.Rx) and not isinstance(a, (str, bytes)):
                texts.append("-")       # hubctl sends its input's lines
                upload = _upload_text(method, t.item, a)
            else:
                if t is not None and not isinstance(t, codec.Rx) and not isinstance(a, str):
                    sig.encode_arg(i, a, method)    # as g.call checks it
                texts.append(_arg_text(t, a))
        rc, lines, err = self.ctl("call", method, *texts, timeout=timeout, input=upload)
        chans = [t.item for t in sig.args if isinstance(t, codec.Chan)] if sig else []
        items = [_value(chans[0] if chans else None, line["item"])
                 for line in lines if "item" in line]
        final = [line for line in lines if "item" not in line]
        _check(final or rc != 0, "hubctl call %s: no answer: %s" % (method, err))
        if not final:
            return rc, err, items
        last = final[-1]
        if last.get("ok"):
            return rc, _value(sig.ret if sig else None, last.get("result")), items
        return rc, _error_text(last), items

    def ok(self, method, *args, timeout=30):
        """The result of a call that must succeed, as a Python value:
        hub.ok("kv.mget", ["a", "b"]) == [b"1", None]. A failure raises
        HubError with the error's text and hubd's log."""
        rc, res, items = self.call(method, *args, timeout=timeout)
        _check(rc == 0, "%s %r: %s\n%s" % (method, args, shown(res), self.log()[-3000:]))
        return res

    def peers(self):
        rc, lines, err = self.ctl("peers")
        _check(rc == 0, err)
        peers = {p["name"]: p for p in lines[0]["peers"]}
        for p in peers.values():
            if p.get("pid"):
                self.pids.add(p["pid"])
        if self.starting:
            self._no_death(peers)
        return peers

    def peer(self, name):
        return self.peers()[name]

    def last_death(self, name):
        """The guest's latest death (hubctl lists the last 8)."""
        deaths = self.peer(name)["deaths"]
        _check(deaths, "%s never died" % name)
        return max(deaths, key=lambda d: d["time"])

    def wait(self, cond, what, timeout=None):
        """Polls cond() until it is true (its value), hubd gone or the
        timeout (the Hub's, WAIT_S by default) passed: HubError."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            _check(self.proc is not None and self.proc.poll() is None,
                   "%s: hubd exited\n%s" % (what, self.log()[-3000:]))
            if self.starting:
                self.peers()        # a guest died: HubError at once
            v = cond()
            if v:
                return v
            _check(time.monotonic() < deadline, "%s: not in %s s\n%s" % (
                what, timeout, self.log()[-3000:]))
            time.sleep(0.05)

    def wait_up(self, *names, timeout=None):
        self.wait(lambda: all(self.peers().get(n, {}).get("state") == "up" for n in names),
                  "guests %s up" % (names,), timeout)

    def methods(self):
        rc, lines, err = self.ctl("methods")
        _check(rc == 0, err)
        return {m["name"]: m["signature"] for m in lines[0]["methods"]}

    def wait_methods(self, *names, timeout=None):
        self.wait(lambda: all(n in self.methods() for n in names),
                  "methods %s" % (names,), timeout)

    def stop(self):
        """SIGTERM, then SIGKILL after WAIT_S; checks that hubd
        exited with 0, that the lock is gone and that no guest lives on."""
        if self.proc is None:
            return
        try:
            self.peers()
        except Exception:
            pass
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.proc = None
        _check(rc == 0, "hubd exit status %s\n%s" % (rc, self.log()[-3000:]))
        # on hubd's stop every guest leaves by itself (the host's goodbye)
        tail = self.log().rsplit("stopping", 1)[-1]
        _check("killed by signal" not in tail, "a guest was killed at stop:%s" % tail)
        _check(not os.path.exists(self.sock + ".lock"), "lock left behind")
        deadline = time.monotonic() + WAIT_S
        while any(alive(p) for p in self.pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [p for p in self.pids if alive(p)]
        _check(not left, "guests outlived hubd: %s" % left)

    def cleanup(self):
        """Kills what is left and removes the directory (always safe)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        for p in self.pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


def _json_value(t, v):
    """v for hubctl's JSON: bytes as base64:, tuples as lists, a map's
    keys as their text."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "base64:" + base64.b64encode(bytes(v)).decode()
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
    if isinstance(v, (list, tuple)):
        if isinstance(t, codec.Tuple):
            return [_json_value(f, x) for f, x in zip(t.fields, v)] + list(v[len(t.fields):])
        item = t.item if isinstance(t, codec.List) else None
        return [_json_value(item, x) for x in v]
    if isinstance(v, dict):
        kt, vt = (t.key, t.value) if isinstance(t, codec.Map) else (None, None)
        return {(_json_key(k)): _json_value(vt, x) for k, x in v.items()}
    if isinstance(t, codec.Opt):
        return _json_value(t.item, v)
    return v


def _json_key(k):
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, (bytes, bytearray)):
        return _json_value("bytes", k)
    return str(k)


def _arg_text(t, v):
    """An argument's text for hubctl call (doc/hubctl.md's table)."""
    if isinstance(v, str):
        if isinstance(t, codec.Opt) and t.item in ("str", "bytes"):
            return json.dumps(v)
        return v
    if isinstance(v, (bytes, bytearray, memoryview)) and t in ("bytes", None):
        return _json_value(t, v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return _json_value(t, v)    # bare: hubctl takes no "NaN" in quotes here
    return json.dumps(_json_value(t, v), allow_nan=False)


def _upload_text(method, t, items):
    """An upload's items as hubctl reads them: a line each; one that is
    no str is checked as T, as a Sender's is."""
    lines = []
    for n, x in enumerate(items):
        if not isinstance(x, str):
            try:
                codec.encode(t, x)
            except (TypeError, ValueError) as e:
                raise type(e)("%s: upload item %d: %s" % (method, n + 1, e)) from None
        lines.append(_arg_text(t, x))
    for n, line in enumerate(lines):
        if "\n" in line:
            raise ValueError("%s: upload item %d has a newline, which hubctl's lines cannot "
                             "carry" % (method, n + 1))
    return "".join(line + "\n" for line in lines)


def _value(t, v):
    """hubctl's JSON value v of type t as Python's (codec.py's mapping):
    bytes as bytes, tuples as tuples, map keys by their type."""
    if t is None or v is None:
        return v
    if t == "bytes" and isinstance(v, str):
        if v.startswith("base64:"):
            return base64.b64decode(v[7:])
        return v.encode()
    if t == "f64" and isinstance(v, str):
        return float(v.replace("Infinity", "inf"))
    if isinstance(t, codec.Opt):
        return _value(t.item, v)
    if isinstance(t, codec.List) and isinstance(v, list):
        return [_value(t.item, x) for x in v]
    if isinstance(t, codec.Tuple) and isinstance(v, list):
        return tuple(_value(f, x) for f, x in zip(t.fields, v))
    if isinstance(t, codec.Map) and isinstance(v, dict):
        return {_key(t.key, k): _value(t.value, x) for k, x in v.items()}
    return v


def _key(t, k):
    if t in ("u64", "i64"):
        return int(k)
    if t == "bool":
        return k == "true"
    return _value(t, k)


def _error_text(a):
    """An error answer's text as hubctl prints it: its kind when it says
    more than the error, the error, its detail."""
    error = a.get("error") or "hubd said no, without a reason"
    kind = a.get("kind")
    label = {"unreachable": "remote hub unreachable", "timeout": "remote timeout"}.get(
        kind, None if kind in (None, "user", error) else kind)
    detail = a.get("detail")
    return "%s%s%s" % (label + ": " if label else "", error,
                       ": " + (detail if isinstance(detail, str) else json.dumps(detail))
                       if detail not in (None, "") else "")


try:
    import pytest
except ImportError:     # Hub works without pytest; the fixture needs it
    pytest = None

if pytest is not None:
    @pytest.fixture
    def make_hub():
        """make_hub(guests, keys="", up=(), wait=()): a started Hub,
        stopped (and checked) and removed at the test's end."""
        hubs = []

        def make(guests, keys="", up=(), wait=(), **kw):
            h = Hub(guests, keys, up=up, wait=wait, **kw)
            hubs.append(h)
            return h.start()

        yield make
        errors = []
        for h in hubs:
            try:
                h.stop()
            except AssertionError as e:
                errors.append(str(e))
            finally:
                h.cleanup()
        assert not errors, "\n".join(errors)
