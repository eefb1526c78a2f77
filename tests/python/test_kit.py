# SPDX-License-Identifier: MIT OR Apache-2.0
"""What a plugin's author has to test with: a handler tried without a hub
(attach() attaches at the first use), hubguest.testing's Hub and its
make_hub fixture, and env = in a guest's section."""
import importlib.util
import os
import subprocess
import sys

import pytest

import hubguest
from hubguest import testing
from hubguest.codec import Signature
from hubguest.testing import Hub, HubError

from conftest import BUILD, ECHO, PYGUESTS

GREET = os.path.join(PYGUESTS, "greet.py")


def test_handlers_without_a_hub(monkeypatch):
    # no ticket in argv, no libguest to load: the module still imports
    from hubguest import _lib
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setattr(_lib, "_lib", None)     # not loaded yet
    monkeypatch.setenv("HUB_LIBGUEST", "/nonexistent/libguest.so")
    spec = importlib.util.spec_from_file_location("greet_under_test", GREET)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.hello("world") == "hello, world"
    monkeypatch.setenv("GREET_TEST", "x")
    assert mod.env("GREET_TEST") == "x"
    assert not mod.g.attached
    # the first use that needs the hub says what is missing
    with pytest.raises(hubguest.Error, match="HUB_LIBGUEST=/nonexistent/libguest.so"):
        mod.g.call("greet.hello", "x")


def test_as_a_plugin_author(make_hub):
    hub = make_hub({"greet": GREET}, wait=["greet.hello"])
    assert hub.ok("greet.hello", "world") == "hello, world"
    # hubctl run by the test reaches this hub by HUBCTL_SOCKET
    r = subprocess.run([hub.hubctl, "call", "greet.hello", "you"], env=hub.env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "hello, you", r


def test_hub_as_a_context_manager():
    with Hub({"greet": GREET}, wait=["greet.hello"]) as hub:
        assert hub.ok("greet.hello", "a") == "hello, a"
        d = hub.dir
    assert not os.path.exists(d)


def test_a_guest_that_dies_fails_the_start():
    # at once with hubd's reason, not after the timeout (an hour here:
    # waiting for it would hang the test)
    h = Hub({"bad": "/bin/false"}, wait=["bad.x"], timeout=3600)
    with pytest.raises(HubError, match="guest bad died while the hub started: exited status 1"):
        h.start()
    assert not os.path.exists(h.dir) and h.proc is None
    # a config hubd refuses: its reason
    h = Hub({"bad": "/bin/false"}, keys="no_such_key = 1", wait=["bad.x"], timeout=3600)
    with pytest.raises(HubError, match="hubd exited(.|\n)*no_such_key"):
        h.start()
    assert not os.path.exists(h.dir) and h.proc is None


def test_arguments_checked_as_g_call_checks_them(make_hub, monkeypatch):
    # a value of another type was given to hubctl as its text: 5 as '5',
    # b"hi" as '"base64:aGk="', [1, 2] reversed as ']2 ,1['. It raises
    # g.call's TypeError now, before hubctl runs
    hub = make_hub(ECHO, wait=["echo.echo", "echo.reverse"])
    ran = []
    ctl = hub.ctl
    monkeypatch.setattr(hub, "ctl", lambda *a, **kw: ran.append(a[0]) or ctl(*a, **kw))
    for method, value in [("echo.echo", 5), ("echo.echo", b"hi"), ("echo.reverse", [1, 2]),
                          ("echo.echo", None), ("echo.echo", True)]:
        with pytest.raises(TypeError) as want:
            Signature("str->str").encode_args([value], method)     # what g.call raises
        with pytest.raises(TypeError) as e:
            hub.ok(method, value)
        assert str(e.value) == str(want.value), (method, value, str(e.value))
        assert str(e.value).startswith(method + " (str->str): argument 1 must be str, not ")
    assert "call" not in ran, ran
    # a str is still given as it is, and a value that fits as its value
    assert hub.ok("echo.echo", "5") == "5"
    assert hub.ok("echo.reverse", "[1, 2]") == "]2 ,1["
    assert hub.call("echo.echo", "x", 5)[0] != 0       # more than its arguments: hubctl's


def test_keys_as_a_list_and_bad_ones(make_hub):
    # a list's repr went into the config: "unknown section ['ring_size = 3']"
    hub = make_hub(ECHO, keys=["heartbeat_interval = 200ms", "ring_size = 64"],
                   wait=["echo.echo"])
    with open(hub.conf) as f:
        assert "\nheartbeat_interval = 200ms\nring_size = 64\n" in f.read()
    assert hub.ok("echo.echo", "x") == "x"
    h = Hub(ECHO, keys=("ring_size = 3",), wait=["echo.echo"])
    with pytest.raises(HubError, match="ring_size: 3 is not a power of two"):
        h.start()
    for bad in (5, ["ring_size = 64", 5], {"ring_size": 64}):
        with pytest.raises(TypeError, match="keys= is lines of \\[hub\\]"):
            Hub(ECHO, keys=bad)


def test_programs_not_found_says_what_to_set(monkeypatch, tmp_path):
    # no HUB_BUILD, no install beside the binding, no hubctl on PATH: it
    # said "hubctl not found in /tmp/bin nor on PATH", a prefix derived
    # from the binding's place that meant nothing to its user
    monkeypatch.delenv("HUB_BUILD")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(testing, "PREFIX", str(tmp_path / "prefix"))
    tree = tmp_path / "tree"
    monkeypatch.setattr(testing, "BINDING", str(tree / "bindings" / "python"))
    said = "hubctl not found: not installed with this hubguest (%s) nor on PATH; for a " \
        "build tree, set HUB_BUILD=" % (tmp_path / "prefix" / "bin" / "hubctl")
    with pytest.raises(HubError) as e:
        testing.find_programs()
    assert str(e.value) == said + "its build directory (where make put hubd and hubctl)", \
        str(e.value)
    # a binding in a build tree with its build/: that directory is named
    (tree / "build").mkdir(parents=True)
    (tree / "build" / "hubctl").write_text("#!/bin/sh\n")
    (tree / "build" / "hubctl").chmod(0o755)
    with pytest.raises(HubError) as e:
        testing.find_programs()
    assert str(e.value) == said + str(tree / "build"), str(e.value)
    # a HUB_BUILD without the programs says so, not Popen's ENOENT later
    with pytest.raises(HubError, match="no hubd and hubctl in %s \\(HUB_BUILD, or build=\\): "
                       "set HUB_BUILD to the build directory" % tmp_path):
        testing.find_programs(str(tmp_path))


def test_error_detail_and_hubctl_on_path(make_hub):
    # a callee that dies in the call: the error with its detail, as hubctl
    # prints it
    hub = make_hub({"greet": GREET}, wait=["greet.die"])
    rc, err, _ = hub.call("greet.die")
    died = "guest greet died serving greet.die: exited with status 3"
    assert rc != 0 and err == "cancelled: " + died, err
    hub.wait_methods("greet.die")      # back, restarted
    with pytest.raises(HubError, match="greet.die \\(\\): cancelled: " + died):
        hub.ok("greet.die")
    # hubctl by its name alone in hub.env()
    hub.wait_methods("greet.hello")
    r = subprocess.run(["hubctl", "call", "greet.hello", "path"], env=hub.env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "hello, path\n", r
    # a guest's text in a failure is escaped as hubd's log and hubctl
    # escape it: it reaches a terminal (it went raw, escapes and all)
    hub.wait_methods("greet.fail")
    rc, err, _ = hub.call("greet.fail", "red \x1b[31m\u202e\x7f\r")
    assert err == "red \x1b[31m\u202e\x7f\r", repr(err)     # the value as it is
    with pytest.raises(HubError) as e:
        hub.ok("greet.fail", "red \x1b[31m\u202e\x7f\r")
    assert "red \\033[31m\\342\\200\\256\\177\\r\n" in str(e.value), repr(str(e.value))
    # hub.ctl: any command, its JSON lines
    rc, lines, err = hub.ctl("peers", "greet")
    assert rc == 0 and lines and "greet" in str(lines[0]), (rc, lines, err)


def test_env(make_hub):
    # env = in the guest's section, quoted as args =; reload with another
    # value restarts the guest with it
    hub = make_hub({"greet": {"exec": GREET, "env": 'GREETING="hello world" EMPTY='}},
                   wait=["greet.env"])
    assert hub.ok("greet.env", "GREETING") == "hello world"
    assert hub.ok("greet.env", "EMPTY") == ""
    assert hub.ok("greet.env", "UNSET_HERE") == ""
    with open(hub.conf) as f:
        text = f.read()
    with open(hub.conf, "w") as f:
        f.write(text.replace('GREETING="hello world"', "GREETING=bye"))
    rc, _, err = hub.ctl("reload")
    assert rc == 0, err
    hub.wait(lambda: hub.call("greet.env", "GREETING")[1] == "bye", "the new env =")
    # a bad entry: the reload is refused and the guest keeps its env
    with open(hub.conf, "w") as f:
        f.write(text.replace('GREETING="hello world"', "1BAD=x"))
    rc, lines, err = hub.ctl("reload")
    assert rc != 0 and "1BAD=x" in str(lines), (lines, err)
    assert hub.ok("greet.env", "GREETING") == "bye"


def test_hung_guest_python_stack_in_its_logs(make_hub):
    # a handler that spins in Python: hubd finds the guest hung, asks it
    # for its own stack (hubguest's faulthandler on SIGRTMIN+2) before the
    # debugger and the kill; the Python frames are in hubctl logs
    hub = make_hub({"greet": GREET}, keys="heartbeat_interval = 100ms", wait=["greet.hang"])
    rc, err, _ = hub.call("greet.hang", timeout=60)
    assert rc != 0, err
    hub.wait(lambda: hub.peer("greet")["deaths"], "greet's death")
    death = hub.last_death("greet")
    assert death["reason"] == "hung", death
    rc, lines, err = hub.ctl("logs", "greet")
    text = "\n".join(lines[0]["lines"]) if rc == 0 and lines else err
    assert "in spin_in_python" in text and "in hang" in text, text
    assert "asked for its own stack" in hub.log(), hub.log()
