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

hubd and hubctl: those of the build tree $HUB_BUILD names (or build=),
else the installed ones (hubctl on PATH, hubd beside it in ../sbin or on
PATH). The guests inherit hubd's environment: PYTHONPATH leads to this
very binding, so that Python guests import the hubguest the tests do, and
PATH to the python running the tests (their #!/usr/bin/env python3).
Stopping checks that hubd exits with status 0, that no guest was killed
at the stop, and that no guest process outlives it; a failure raises
HubError (an AssertionError, as pytest shows them)."""

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

_n = itertools.count()
BINDING = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class HubError(AssertionError):
    """The hub did not start, answer or stop as it should."""


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
        return (os.path.join(build, "hubd"), os.path.join(build, "hubctl"),
                os.path.join(build, "libguest.so"))
    hubctl = shutil.which("hubctl")
    _check(hubctl, "hubctl not found on PATH (set HUB_BUILD for a build tree)")
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


class Hub:
    """A hubd of its own: Hub(guests, keys="", up=(), wait=()).start(),
    or as a context manager. guests: see guest_sections; keys: lines of
    its [hub] section; up: guests to wait for until they are up; wait:
    methods to wait for until they are registered (a guest is up once it
    attached, before it registered its methods)."""

    def __init__(self, guests, keys="", up=(), wait=(), build=None, timeout=10):
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

    def env(self):
        """hubd's environment, which its guests inherit; with
        HUBCTL_SOCKET, for a hubctl run by the test."""
        env = dict(os.environ)
        env["PYTHONPATH"] = BINDING + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        if self.libguest:
            env["HUB_LIBGUEST"] = self.libguest
        env["PATH"] = os.path.dirname(sys.executable) + ":" + env.get("PATH", "")
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
            if self.up:
                self.wait_up(*self.up)
            if self.waits:
                self.wait_methods(*self.waits)
        except BaseException:
            self.cleanup()
            raise
        return self

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

    def ctl(self, *args, timeout=30):
        """hubctl -j ARGS: (exit status, the JSON lines, stderr)."""
        r = subprocess.run([self.hubctl, "-s", self.sock, "-j", "-t", str(timeout)] +
                           [str(a) for a in args],
                           capture_output=True, text=True, timeout=timeout + 10)
        lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        return r.returncode, lines, r.stderr

    def call(self, method, *args, timeout=30):
        """A call through hubctl: (exit status, result or error text, items)."""
        rc, lines, err = self.ctl("call", method, *args, timeout=timeout)
        items = [line["item"] for line in lines if "item" in line]
        final = [line for line in lines if "item" not in line]
        _check(final or rc != 0, "hubctl call %s: no answer: %s" % (method, err))
        if not final:
            return rc, err, items
        last = final[-1]
        if last.get("ok"):
            return rc, last.get("result"), items
        return rc, last.get("error"), items

    def ok(self, method, *args, timeout=30):
        """The result of a call that must succeed."""
        rc, res, items = self.call(method, *args, timeout=timeout)
        _check(rc == 0, "%s %r: %r\n%s" % (method, args, res, self.log()[-3000:]))
        return res

    def peers(self):
        rc, lines, err = self.ctl("peers")
        _check(rc == 0, err)
        peers = {p["name"]: p for p in lines[0]["peers"]}
        for p in peers.values():
            if p.get("pid"):
                self.pids.add(p["pid"])
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
        timeout (the Hub's, 10 s by default) passed: HubError."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            _check(self.proc is not None and self.proc.poll() is None,
                   "%s: hubd exited\n%s" % (what, self.log()[-3000:]))
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
        """SIGTERM, then SIGKILL after a few seconds; checks that hubd
        exited with 0, that the lock is gone and that no guest lives on."""
        if self.proc is None:
            return
        try:
            self.peers()
        except Exception:
            pass
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(8)
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
        deadline = time.monotonic() + 3
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
