# SPDX-License-Identifier: MIT OR Apache-2.0
"""pytest fixtures for the Python binding: a real hubd, started from the
build tree ($HUB_BUILD, default build/) with a config of the test's own
(the control socket and its lock in a temporary directory; the guests'
memory is handed to them as fds and lives in no filesystem), driven with
hubctl -j. Teardown always stops it (SIGTERM, SIGKILL after a few
seconds) and checks it left no lock and no guest process behind."""
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("HUB_BUILD", os.path.join(ROOT, "build")))
PYGUESTS = os.path.join(HERE, "guests")
BINDING = os.path.join(ROOT, "bindings", "python")
_n = itertools.count()

# C guests of the build, Python ones of tests/python/guests
ECHO = "[guest echo]\nexec = %s/guests/echo\n" % BUILD
COUNTER = "[guest counter]\nexec = %s/guests/counter\n" % BUILD
PROBER = "[guest prober]\nexec = %s/tests/guests/prober\n" % BUILD
PYGUEST = "[guest pyguest]\nexec = %s/pyguest.py\nprovides = py.*\n" % PYGUESTS
PYASYNC = "[guest pyasync]\nexec = %s/pyasync.py\nprovides = aio.*\n" % PYGUESTS


def alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class Hub:
    def __init__(self, guests, keys=""):
        n = next(_n)
        self.dir = tempfile.mkdtemp(prefix="hubpy-")
        self.sock = os.path.join(self.dir, "hub.sock")
        self.conf = os.path.join(self.dir, "hub.conf")
        self.logpath = os.path.join(self.dir, "hub.log")
        with open(self.conf, "w") as f:
            f.write("[hub]\ncontrol = %s\n%s\n%s" % (self.sock, keys, guests))
        self.proc = None
        self.pids = set()

    def env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = BINDING + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["HUB_LIBGUEST"] = os.path.join(BUILD, "libguest.so")
        # the guests' #!/usr/bin/env python3 finds the python running the tests
        env["PATH"] = os.path.dirname(sys.executable) + ":" + env.get("PATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start(self, up=(), methods=()):
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen([os.path.join(BUILD, "hubd"), "-f", self.conf],
                                     stdout=log, stderr=subprocess.STDOUT, env=self.env())
        log.close()
        deadline = time.monotonic() + 10
        while not os.path.exists(self.sock):
            assert self.proc.poll() is None, "hubd exited: %s" % self.log()
            assert time.monotonic() < deadline, "hubd did not start: %s" % self.log()
            time.sleep(0.02)
        if up:
            self.wait_up(*up)
        if methods:
            self.wait_methods(*methods)
        return self

    def log(self):
        try:
            with open(self.logpath, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def ctl(self, *args, timeout=30):
        """hubctl -j ARGS: (exit status, the JSON lines, stderr)."""
        r = subprocess.run([os.path.join(BUILD, "hubctl"), "-s", self.sock, "-j", "-t",
                            str(timeout)] + [str(a) for a in args],
                           capture_output=True, text=True, timeout=timeout + 10)
        lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        return r.returncode, lines, r.stderr

    def call(self, method, *args, timeout=30):
        """A call through hubctl: (exit status, result or error text, items)."""
        rc, lines, err = self.ctl("call", method, *args, timeout=timeout)
        items = [line["item"] for line in lines if "item" in line]
        final = [line for line in lines if "item" not in line]
        assert final or rc != 0, "hubctl call %s: no answer: %s" % (method, err)
        if not final:
            return rc, err, items
        last = final[-1]
        if last.get("ok"):
            return rc, last.get("result"), items
        return rc, last.get("error"), items

    def ok(self, method, *args, timeout=30):
        """The result of a call that must succeed."""
        rc, res, items = self.call(method, *args, timeout=timeout)
        assert rc == 0, "%s %r: %r\n%s" % (method, args, res, self.log()[-3000:])
        return res

    def peers(self):
        rc, lines, err = self.ctl("peers")
        assert rc == 0, err
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
        assert deaths, "%s never died" % name
        return max(deaths, key=lambda d: d["time"])

    def wait(self, cond, what, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            v = cond()
            if v:
                return v
            assert time.monotonic() < deadline, "%s: not in %s s\n%s" % (
                what, timeout, self.log()[-3000:])
            time.sleep(0.05)

    def wait_up(self, *names, timeout=10):
        self.wait(lambda: all(self.peers().get(n, {}).get("state") == "up" for n in names),
                  "guests %s up" % (names,), timeout)

    def methods(self):
        rc, lines, err = self.ctl("methods")
        assert rc == 0, err
        return {m["name"]: m["signature"] for m in lines[0]["methods"]}

    def wait_methods(self, *names, timeout=10):
        self.wait(lambda: all(n in self.methods() for n in names),
                  "methods %s" % (names,), timeout)

    def stop(self):
        """SIGTERM, then SIGKILL after a few seconds; checks that the
        lock is gone and no guest lives on."""
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
        assert rc == 0, "hubd exit status %s\n%s" % (rc, self.log()[-3000:])
        # on hubd's stop every guest leaves by itself (the host's goodbye)
        tail = self.log().rsplit("stopping", 1)[-1]
        assert "killed by signal" not in tail, "a guest was killed at stop:%s" % tail
        assert not os.path.exists(self.sock + ".lock"), "lock left behind"
        deadline = time.monotonic() + 3
        while any(alive(p) for p in self.pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [p for p in self.pids if alive(p)]
        assert not left, "guests outlived hubd: %s" % left

    def cleanup(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        for p in self.pids:
            if alive(p):
                os.kill(p, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def make_hub():
    """make_hub(guests_config, keys="", up=(names), methods=(names)): a
    started Hub, stopped (and checked) at the test's end."""
    hubs = []

    def make(guests, keys="", up=(), methods=()):
        h = Hub(guests, keys)
        hubs.append(h)
        return h.start(up=up, methods=methods)

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


@pytest.fixture
def hub(make_hub):
    """echo, counter and prober in C, pyguest in Python, all up."""
    return make_hub(ECHO + COUNTER + PROBER + PYGUEST, up=("echo", "counter", "prober", "pyguest"),
                    methods=("echo.echo", "counter.count", "prober.route", "py.str", "py.log"))
