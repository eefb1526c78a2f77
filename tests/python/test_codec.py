# SPDX-License-Identifier: MIT OR Apache-2.0
"""Signatures and postcard values, without a hub: the bytes must be those
proto/postcard.c and proto/sig.c read and write."""
import errno
import re

import pytest

import hubguest
from hubguest import Signature, decode, encode
from hubguest.codec import Chan, parse_type


@pytest.mark.parametrize("t,value,wire", [
    ("str", "", "00"),
    ("str", "hi", "026869"),
    ("str", "é", "02c3a9"),
    ("bytes", b"\x00\xff", "0200ff"),
    ("u64", 0, "00"),
    ("u64", 127, "7f"),
    ("u64", 128, "8001"),
    ("u64", 300, "ac02"),
    ("u64", 2**64 - 1, "ffffffffffffffffff01"),
    ("i64", 0, "00"),
    ("i64", -1, "01"),
    ("i64", 1, "02"),
    ("i64", -64, "7f"),
    ("i64", 2**63 - 1, "feffffffffffffffff01"),
    ("i64", -2**63, "ffffffffffffffffff01"),
    ("bool", False, "00"),
    ("bool", True, "01"),
    ("unit", None, ""),
])
def test_values_round_trip(t, value, wire):
    assert encode(t, value).hex() == wire
    assert decode(t, bytes.fromhex(wire)) == value


def test_request_of_hub_ping_as_the_protocol_says():
    # doc/protocol.md: a Request to hub.ping with the bytes "hi" carries
    # 00 (no metadata) then 02 68 69: the argument bytes are the last three
    assert Signature("bytes->bytes").encode_args([b"hi"]).hex() == "026869"


@pytest.mark.parametrize("t,value,exc", [
    ("str", b"x", TypeError), ("str", "\udc80", ValueError),
    ("bytes", "x", TypeError), ("u64", -1, ValueError), ("u64", 2**64, ValueError),
    ("u64", True, TypeError), ("u64", 1.0, TypeError), ("i64", 2**63, ValueError),
    ("bool", 1, TypeError), ("unit", 0, TypeError),
])
def test_values_that_do_not_fit(t, value, exc):
    with pytest.raises(exc):
        encode(t, value)


@pytest.mark.parametrize("t,wire", [
    ("str", "05616263"), ("str", "02c328"), ("bool", "02"), ("u64", "80"),
    ("u64", "ffffffffffffffffff7f"), ("u64", "0000"), ("bytes", ""),
])
def test_bytes_that_do_not_decode(t, wire):
    with pytest.raises(ValueError):
        decode(t, bytes.fromhex(wire))


def test_signatures():
    s = Signature("str,bytes,u64,i64,bool,chan<u64>->unit")
    assert s.args == ("str", "bytes", "u64", "i64", "bool", Chan("u64")) and s.ret == "unit"
    assert s.chan_positions() == [5]
    assert Signature("->str").args == ()
    for bad in ["str", "str->", "->chan<u64>", "unit->str", "str,->str", "str, u64->str",
                "chan<unit>->str", "chan<>->str", "x" * 120 + "->str",
                ",".join(["u64"] * 9) + "->unit", "str->str->str"]:
        with pytest.raises(ValueError):
            Signature(bad)
    with pytest.raises(TypeError):
        Signature(5)
    # rx<T>: an upload, an argument only, its value the channel id
    from hubguest.codec import Rx
    s = Signature("str,rx<list<u64>>->u64")
    assert s.args == ("str", Rx(parse_type("list<u64>"))) and s.rx_positions() == [1]
    assert s.chan_positions() == [] and s.decode_args(b"\x01a\x07") == ["a", 7]
    for bad in ["->rx<u64>", "rx<rx<u64>>->unit", "list<rx<u64>>->unit", "rx<unit>->unit",
                "chan<rx<u64>>->unit"]:
        with pytest.raises(ValueError):
            Signature(bad)


def test_signature_errors_say_where():
    # as libguest and hubd say it (proto/sig.c hp_sig_explain): what, and
    # the byte (from 1) where, with what is there
    for bad, want in [
            ("str,strr->u64", "signature 'str,strr->u64': unknown type 'strr' (one of "),
            ("str,strr->u64", " at byte 5 ('strr->u64')"),
            ("list<u64->str", "a type without its '>' at byte 9 ('->str')"),
            ("str str->str", "arguments not separated by ',' at byte 4 (' str->str')"),
            ("->", "at byte 3 (its end)"),
            ("é->str", "at byte 1 ('é->str')"),
            ("u64->" + "(u64,bytes," * 3 + "xx)", "at byte 39 ('xx)')"),
            ("xu64,u64,u64,u64,u64->str", "at byte 1 ('xu64,u64,u64,u64...')"),
            # a type not allowed where it is, a map's key: at its start
            ("chan<u64>->chan<u64>", "chan<T> is only an argument type at byte 12 ('chan<u64>')"),
            ("unit->unit", "unit is only a result type at byte 1 ('unit->unit')"),
            ("map<f64,u64>->unit", "a map key that is not str, bytes, u64, i64 or bool "
             "at byte 5 ('f64,u64>->unit')"),
            ("opt<chan<u64>>->u64", "chan<T> is only an argument type at byte 5 "
             "('chan<u64>>->u64')"),
            ("chan<rx<u64>>->str", "rx<T> is only an argument type at byte 6 ('rx<u64>>->str')"),
            ("list<" * 9 + "u64" + ">" * 9 + "->unit",
             "types nested more than 8 deep at byte 41 ('list<u64>>>>>>>>...')"),
            ("str,->str", "at byte 5 ('->str')")]:
        with pytest.raises(ValueError) as e:
            Signature(bad)
        assert want in str(e.value), (bad, str(e.value))
    # a guest's method with one: the same words, before any hub is asked
    g = hubguest.attach([])
    with pytest.raises(ValueError, match=r"unknown type 'strr' .* at byte 5 \('strr->u64'\)"):
        g.register("g.m", "str,strr->u64", lambda a: 0)


def test_arguments_named_in_errors():
    s = Signature("str,u64->str")
    assert s.encode_args(["a", 1]).hex() == "016101"
    with pytest.raises(TypeError, match=r"m\.x \(str,u64->str\) takes 2 arguments, 1 given"):
        s.encode_args(["a"], "m.x")
    with pytest.raises(TypeError, match=r"m\.x \(str,u64->str\): argument 2 must be an int"):
        s.encode_args(["a", "1"], "m.x")
    with pytest.raises(ValueError):
        s.decode_args(bytes.fromhex("01610102"))   # a byte left over


def test_names_are_text_without_nul():
    # a NUL ends a name in C: "echo.echo\0x" would call echo.echo, and
    # "py.a\0b" register py.a; a name that is no str was refused with
    # hub.signature's argument error, or at attach. Each is refused where
    # it is given, before the guest attaches.
    g = hubguest.attach(["by-hand"])
    nul = pytest.raises(ValueError, match=r"a method's name 'echo.echo\\x00x' holds a NUL")
    for use in (g.call, g.start, g.stream):
        with nul:
            use("echo.echo\0x", signature="str->str")
    with nul:
        g.signature("echo.echo\0x")
    with pytest.raises(TypeError, match="a method's name is a str, not bytes"):
        g.call(b"echo.echo", "x")
    with pytest.raises(ValueError, match="NUL"):
        g.register("py.a\0b", "->unit", lambda: None)
    with pytest.raises(TypeError, match="a method's name is a str, not int"):
        g.method(5, "->unit")(lambda: None)
    with pytest.raises(ValueError, match="NUL"):
        g.unregister("py.a\0b")
    with pytest.raises(ValueError, match=r"a topic's name 'py.t\\x00' holds a NUL"):
        g.advertise("py.t\0", "str")
    with pytest.raises(ValueError, match="a topic's name"):
        g.subscribe("py.t\0")
    with pytest.raises(TypeError, match="a topic's name is a str, not NoneType"):
        g.subscribe(None)
    assert not g.attached and not g._methods and not g._adverts and not g._subs


def test_method_names_checked_where_given():
    # a name the hub refuses (proto/method.h), or one registered twice,
    # was taken here and failed only at attach ("register dup.a
    # (str->str): the name is taken"), the guest then dying at each start
    g = hubguest.attach(["by-hand"])
    for name, why in [("x..y", "an empty part between dots"), (".x", "an empty part"),
                      ("x.", "an empty part"), ("", "empty"),
                      ("py." + "x" * 61, "longer than 63 bytes"),
                      ("py.a b", "a byte not in A-Z a-z 0-9 _ . -"),
                      ("py.é", "a byte not in"), ("py.x\x1b[31m", "a byte not in")]:
        with pytest.raises(ValueError, match="register %s: bad method name: %s" % (
                re.escape(repr(name)), why)):
            g.register(name, "str->str", lambda s: s)
        with pytest.raises(ValueError, match="bad method name: " + why):
            g.method(name, "str->str")(lambda s: s)
    g.register("py." + "x" * 60, "str->str", lambda s: s)      # 63 bytes: taken
    g.register("A-z_0.9.x-", "str->str", lambda s: s)
    # twice: the second says so, where it is given
    taken = "register dup.a \\(u64->u64\\): this guest registers dup.a \\(str->str\\) already"

    @g.method("dup.a", "str->str")
    def a(s):
        return s
    with pytest.raises(ValueError, match=taken):
        @g.method("dup.a", "u64->u64")
        def b(n):
            return n
    with pytest.raises(ValueError, match=taken):
        g.register("dup.a", "u64->u64", lambda n: n)
    # withdrawn, it may be registered again
    g.unregister("dup.a")
    g.register("dup.a", "u64->u64", lambda n: n)
    assert not g.attached
    assert sorted(m.name for m in g._methods.values()) == sorted(
        ["py." + "x" * 60, "A-z_0.9.x-", "dup.a"])


def test_errors_are_hubguest_errors():
    for cls in (hubguest.RemoteError, hubguest.HubError, hubguest.UnknownMethod, hubguest.Timeout,
                hubguest.HubGone, hubguest.Ended, hubguest.ChannelClosed, hubguest.AttachError):
        assert issubclass(cls, hubguest.Error)
    assert issubclass(hubguest.Timeout, TimeoutError)
    e = hubguest.RemoteError("a.b", "ValueError: x")
    assert e.message == "ValueError: x" and e.method == "a.b" and str(e) == "a.b: ValueError: x"
    # the hub's errors apart from the callee's
    # errors a bridge forwarded: RemoteErrors of their own status
    e = hubguest.errors.call_error("a.b", -errno.EHOSTUNREACH, "no responders")
    assert isinstance(e, hubguest.HubUnreachable) and isinstance(e, hubguest.RemoteError)
    assert e.code == -errno.EHOSTUNREACH and e.message == "no responders"
    e = hubguest.errors.call_error("a.b", -errno.ETIMEDOUT, "after 2s")
    assert isinstance(e, hubguest.RemoteTimeout) and isinstance(e, TimeoutError)
    assert not isinstance(e, hubguest.Timeout) and e.code == -errno.ETIMEDOUT
    assert str(e) == "a.b: after 2s"
    # no text: the caller's own timeout
    assert type(hubguest.errors.call_error("a.b", -errno.ETIMEDOUT)) is hubguest.Timeout
    e = hubguest.HubError("a.b", "guest a is down")
    assert isinstance(e, hubguest.CallError) and not isinstance(e, hubguest.RemoteError)
    assert e.code == -errno.ECONNREFUSED and e.message == "guest a is down"


def test_attach_without_a_ticket(monkeypatch):
    import os
    from conftest import BUILD
    monkeypatch.setenv("HUB_LIBGUEST", os.path.join(BUILD, "libguest.so"))
    g = hubguest.attach(["by-hand"])    # attaches at its first use
    assert not g.attached
    with pytest.raises(hubguest.AttachError, match="--hub-path"):
        g.run()
    with pytest.raises(hubguest.AttachError, match="--hub-path"):
        hubguest.attach(["by-hand"]).call("echo.echo", "x")


def test_library_not_found(monkeypatch):
    from hubguest import _lib
    monkeypatch.setattr(_lib, "_lib", None)
    monkeypatch.setenv("HUB_LIBGUEST", "/nonexistent/libguest.so")
    with pytest.raises(hubguest.Error, match="HUB_LIBGUEST=/nonexistent/libguest.so"):
        hubguest.attach(["x"]).run()


def test_libguest_too_old(monkeypatch):
    # a libguest before 0.7 (no guest_call_deadline: a handler could not
    # read its call's deadline) is refused, saying what the binding needs
    import ctypes
    import os
    from conftest import BUILD
    from hubguest import _lib
    real = ctypes.CDLL

    class Old:
        def __init__(self, path):
            self._lib = real(path)

        def __getattr__(self, name):
            if name == "guest_call_deadline":
                raise AttributeError(name)
            return getattr(self._lib, name)

    monkeypatch.setattr(_lib, "_lib", None)
    monkeypatch.setattr(_lib.ctypes, "CDLL", Old)
    monkeypatch.setenv("HUB_LIBGUEST", os.path.join(BUILD, "libguest.so"))
    with pytest.raises(hubguest.Error, match=r"has no guest_call_deadline: libguest too old "
                       r"for this binding \(it needs 0\.7 or later\)"):
        _lib.load()


@pytest.mark.parametrize("t,value,wire", [
    ("f64", 1.5, "000000000000f83f"),
    ("f64", -0.0, "0000000000000080"),
    ("list<u64>", [], "00"),
    ("list<u64>", [1, 300], "0201ac02"),
    ("opt<str>", None, "00"),
    ("opt<str>", "a", "010161"),
    ("(u64,str,bool)", (5, "z", True), "05017a01"),
    ("map<str,i64>", {"a": 1, "b": -1}, "0201610201620" + "1"),
    ("list<opt<bytes>>", [b"\xff", None], "020101ff00"),
    ("map<u64,(f64,list<str>)>", {7: (2.0, ["x"])}, "01070000000000000040010178"),
    ("opt<opt<bool>>", False, "010100"),
])
def test_compound_values_round_trip(t, value, wire):
    # the bytes are those tests/unit/check_sig.c and proto/sig.c take
    assert encode(t, value).hex() == wire
    assert decode(t, bytes.fromhex(wire)) == value


def test_compound_values_python_forms():
    # a tuple is taken for a list and a list for a tuple; ints for f64
    assert encode("list<u64>", (1, 2)) == encode("list<u64>", [1, 2])
    assert decode("(u64,u64)", encode("(u64,u64)", [1, 2])) == (1, 2)
    assert decode("f64", encode("f64", 3)) == 3.0
    nan = decode("f64", encode("f64", float("nan")))
    assert nan != nan
    assert decode("f64", encode("f64", float("-inf"))) == float("-inf")


@pytest.mark.parametrize("t,value,exc,match", [
    ("list<u64>", [1, -2], ValueError, "element 2"),
    ("list<u64>", {1}, TypeError, "must be a list"),
    ("(u64,str)", (1,), TypeError, "a tuple of 2"),
    ("(u64,str)", (1, 2), TypeError, "field 2 must be str"),
    ("map<u64,str>", {"a": "b"}, TypeError, "key 'a' must be an int"),
    ("map<str,bool>", {"a": 1}, TypeError, "the value of 'a' must be a bool"),
    ("opt<u64>", "x", TypeError, "must be an int"),
    ("f64", "1.5", TypeError, "must be a float"),
    ("f64", True, TypeError, "must be a float"),
    ("f64", 10 ** 400, ValueError, "too large"),
])
def test_compound_values_that_do_not_fit(t, value, exc, match):
    with pytest.raises(exc, match=match):
        encode(t, value)


@pytest.mark.parametrize("t,wire", [
    ("f64", "000000000000f8"),                 # 7 bytes of 8
    ("list<u64>", "0301"),                     # a count past the input
    ("list<u64>", "ffffffffffffffff7f"),       # no loop for elements not there
    ("opt<u64>", "0205"),                      # tag 0 or 1
    ("map<str,u64>", "010161"),                # a value missing
    ("(u64,str)", "05"),
    ("list<str>", "0102c328"),                 # not UTF-8 inside
    ("map<str,u64>", "02016101016102"),        # "a" twice: a dict keeps one
    ("map<bool,u64>", "0201010101"),           # true twice
])
def test_compound_bytes_that_do_not_decode(t, wire):
    with pytest.raises(ValueError):
        decode(t, bytes.fromhex(wire))


def test_compound_signatures():
    from hubguest.codec import List, Map, Opt, Tuple
    text = "map<str,list<opt<(u64,f64)>>>,chan<(i64,bool)>->list<str>"
    s = Signature(text)
    assert s.args == (Map("str", List(Opt(Tuple(["u64", "f64"])))), Chan(Tuple(["i64", "bool"])))
    assert s.ret == List("str") and s.chan_positions() == [1]
    # rendered back as written
    assert ",".join(str(a) for a in s.args) + "->" + str(s.ret) == text
    deep = "list<" * 8 + "u64" + ">" * 8
    assert str(Signature("->" + deep).ret) == deep
    for bad in ["->" + "list<" * 9 + "u64" + ">" * 9, "map<f64,str>->unit", "map<(u64),str>->unit",
                "list<unit>->unit", "->list<chan<u64>>", "()->unit", "(u64,)->unit",
                "list<u64->unit", "map<str>->unit", "(" + "((u64))," * 21 + "u64)->unit"]:
        with pytest.raises(ValueError):
            Signature(bad)
