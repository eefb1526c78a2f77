# SPDX-License-Identifier: MIT OR Apache-2.0
"""Method signatures and the postcard encoding of their values.

A signature is "ARGS->RET" (proto/sig.h): ARGS a comma-separated list,
maybe empty, of at most 8 types, RET one type. No blanks. A type is a
scalar (str bytes u64 i64 f64 bool), list<T>, opt<T>, map<K,V> (K a
scalar but f64), a tuple (T1,T2,...), unit (the result only), chan<T> or
rx<T> (arguments only: a channel id, u64 on the wire; the callee sends on
a chan<T>, the caller on an rx<T>). Types nest at most 8
deep; a signature has at most 64 types and 256 bytes.

Python values: str <-> str, bytes <-> bytes (bytearray and memoryview
accepted), u64 and i64 <-> int (bool refused), f64 <-> float (int
accepted), bool <-> bool, unit <-> None, list<T> <-> list (tuple
accepted), opt<T> <-> None or the value, tuple <-> tuple (list
accepted), map<K,V> <-> dict. An opt<opt<T>> cannot hold Some(None):
None is the outer None. A map whose bytes hold a key twice does not
decode (ValueError), as a dict would keep one value. Postcard
(proto/postcard.h): LEB128 varints, zigzag for i64, a varint length
before the bytes of str and bytes, bool one byte 0 or 1, f64 8 bytes
little-endian, unit nothing; a list or map its varint count then the
elements (each key then its value), an opt 0, or 1 and the value, a
tuple its fields in order."""

import struct

SCALARS = ("str", "bytes", "u64", "i64", "f64", "bool")
TYPES = SCALARS + ("unit",)
MAP_KEYS = ("str", "bytes", "u64", "i64", "bool")
SIG_MAX_LEN = 256
SIG_MAX_ARGS = 8
SIG_MAX_NODES = 64
SIG_MAX_DEPTH = 8
U64_MAX = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class _Compound:
    """A type with type parameters; equal by its text."""
    __slots__ = ()

    def __eq__(self, other):
        return type(other) is type(self) and str(other) == str(self)

    def __hash__(self):
        return hash(str(self))

    __repr__ = lambda self: str(self)


class Chan(_Compound):
    """The type chan<T> of a signature's argument."""
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __str__(self):
        return "chan<%s>" % (self.item,)


class Rx(_Compound):
    """The type rx<T> of a signature's argument: a stream the caller sends
    and the callee reads."""
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __str__(self):
        return "rx<%s>" % (self.item,)


class List(_Compound):
    """list<T>: a Python list."""
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __str__(self):
        return "list<%s>" % (self.item,)


class Opt(_Compound):
    """opt<T>: None or the value."""
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __str__(self):
        return "opt<%s>" % (self.item,)


class Map(_Compound):
    """map<K,V>: a dict."""
    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key, self.value = key, value

    def __str__(self):
        return "map<%s,%s>" % (self.key, self.value)


class Tuple(_Compound):
    """(T1,T2,...): a tuple of as many fields."""
    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = tuple(fields)

    def __str__(self):
        return "(%s)" % ",".join(str(f) for f in self.fields)


class Signature:
    """A parsed signature: .args (type names, or Chan), .ret, .text."""
    __slots__ = ("text", "args", "ret")

    def __init__(self, text):
        if isinstance(text, Signature):
            text = text.text
        if not isinstance(text, str):
            raise TypeError("a signature is a str such as 'str,u64->bool', not %s"
                            % type(text).__name__)
        self.text = text
        self.args, self.ret = _parse(text)

    def __eq__(self, other):
        return isinstance(other, Signature) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return "Signature(%r)" % self.text

    def __str__(self):
        return self.text

    def chan_positions(self):
        return [i for i, t in enumerate(self.args) if isinstance(t, Chan)]

    def rx_positions(self):
        return [i for i, t in enumerate(self.args) if isinstance(t, Rx)]

    def encode_args(self, values, name="", chan_ids=None):
        """The argument bytes for values (a sequence, one per argument).
        A chan<T> or rx<T> argument takes what chan_ids(i, value) answers
        (an int id). TypeError or ValueError naming the signature if one does not
        fit."""
        what = self._what(name)
        if len(values) != len(self.args):
            raise TypeError("%s takes %d argument%s, %d given" % (
                what, len(self.args), "" if len(self.args) == 1 else "s", len(values)))
        out = bytearray()
        for i, (t, v) in enumerate(zip(self.args, values)):
            if isinstance(t, (Chan, Rx)):
                cid = chan_ids(i, v) if chan_ids is not None else v
                _put(out, "u64", cid, what, "argument %d" % (i + 1))
            else:
                _put(out, t, v, what, "argument %d" % (i + 1))
        return bytes(out)

    def encode_arg(self, i, value, name=""):
        """The bytes of argument i (from 0) alone, as encode_args encodes
        it (a chan<T> or rx<T> one is its channel's id): TypeError or
        ValueError in the same words if value does not fit."""
        t = self.args[i]
        out = bytearray()
        _put(out, "u64" if isinstance(t, (Chan, Rx)) else t, value, self._what(name),
             "argument %d" % (i + 1))
        return bytes(out)

    def _what(self, name):
        return "%s (%s)" % (name, self.text) if name else self.text

    def decode_args(self, data):
        """The argument values in data (chan<T> and rx<T> arguments as
        their ids); ValueError if data does not hold exactly them."""
        r = _Reader(data)
        vals = [r.get("u64" if isinstance(t, (Chan, Rx)) else t) for t in self.args]
        r.end()
        return vals

    def encode_result(self, value, name=""):
        out = bytearray()
        _put(out, self.ret, value, self._what(name), "the result")
        return bytes(out)

    def decode_result(self, data):
        r = _Reader(data)
        v = r.get(self.ret)
        r.end()
        return v


class _Parser:
    """proto/sig.c's hp_sig_parse, in Python."""

    def __init__(self, text):
        self.text, self.pos, self.nodes = text, 0, 0

    def fail(self, why):
        # where, as hp_sig_explain says it: the byte (from 1) it stopped
        # at, and what is there
        at = len(self.text[:self.pos].encode("utf-8", "surrogatepass")) + 1
        rest = self.text[self.pos:]
        there = repr(rest[:16])
        if len(rest) > 16:
            there = there[:-1] + "..." + there[-1]     # cut, inside the quotes
        elif not rest:
            there = "its end"
        raise ValueError("signature %r: %s at byte %d (%s)" % (self.text, why, at, there))

    def fail_at(self, start, why):
        # at the start of what is wrong (a type not allowed where it is),
        # not past it
        self.pos = start
        self.fail(why)

    def peek(self):
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def type(self, depth):
        self.nodes += 1
        if self.nodes > SIG_MAX_NODES:
            self.fail("more than %d types" % SIG_MAX_NODES)
        if self.peek() == "(":
            if depth == SIG_MAX_DEPTH:
                self.fail("types nested more than %d deep" % SIG_MAX_DEPTH)
            fields = []
            while True:
                self.pos += 1
                fields.append(self.inner(depth + 1))
                if self.peek() != ",":
                    break
            if self.peek() != ")":
                self.fail("a tuple without its ')'")
            self.pos += 1
            return Tuple(fields)
        start = self.pos
        while self.peek().isdigit() or "a" <= self.peek() <= "z":
            self.pos += 1
        name = self.text[start:self.pos]
        if name in TYPES:
            return name
        if name not in ("list", "opt", "map", "chan", "rx"):
            self.fail_at(start, "unknown type %r (one of %s, list<T>, opt<T>, map<K,V>, "
                         "(T,...), chan<T>, rx<T>)" % (name, ", ".join(TYPES)))
        if depth == SIG_MAX_DEPTH:
            self.fail_at(start, "types nested more than %d deep" % SIG_MAX_DEPTH)
        params = []
        for i in range(2 if name == "map" else 1):
            if self.peek() != ("<" if i == 0 else ","):
                self.fail("a type without its '<'" if i == 0 else "a map without its value type")
            self.pos += 1
            key = self.pos
            params.append(self.inner(depth + 1))
            if name == "map" and i == 0 and params[0] not in MAP_KEYS:
                self.fail_at(key, "a map key that is not str, bytes, u64, i64 or bool")
        if self.peek() != ">":
            self.fail("a type without its '>'")
        self.pos += 1
        return {"list": List, "opt": Opt, "chan": Chan, "rx": Rx}[name](params[0]) if name != "map" \
            else Map(params[0], params[1])

    def inner(self, depth):
        start = self.pos
        t = self.type(depth)
        if t == "unit":
            self.fail_at(start, "unit is only a result type")
        if isinstance(t, Chan):
            self.fail_at(start, "chan<T> is only an argument type")
        if isinstance(t, Rx):
            self.fail_at(start, "rx<T> is only an argument type")
        return t


def _parse(text):
    """(args, ret) of a signature, as proto/sig.c's hp_sig_parse reads it."""
    if len(text.encode("utf-8", "surrogatepass")) > SIG_MAX_LEN:
        raise ValueError("signature %r: longer than %d bytes" % (text, SIG_MAX_LEN))
    if "->" not in text:
        raise ValueError("signature %r has no '->'" % text)
    p = _Parser(text)
    args = []
    while p.peek() != "-":
        if len(args) == SIG_MAX_ARGS:
            p.fail("more than %d arguments" % SIG_MAX_ARGS)
        start = p.pos
        t = p.type(0)
        if t == "unit":
            p.fail_at(start, "unit is only a result type")
        args.append(t)
        if p.peek() == "," and p.text[p.pos + 1:p.pos + 2] != "-":
            p.pos += 1
        elif p.peek() == ",":
            p.fail_at(p.pos + 1, "unknown type ''")     # none after the ','
        elif p.peek() != "-":
            p.fail("arguments not separated by ','")
    if p.text[p.pos:p.pos + 2] != "->":
        p.fail("no '->'")
    p.pos += 2
    start = p.pos
    ret = p.type(0)
    if isinstance(ret, (Chan, Rx)):
        p.fail_at(start, "%s<T> is only an argument type"
                  % ("chan" if isinstance(ret, Chan) else "rx"))
    if p.pos != len(text):
        p.fail("goes on after its result type")
    return tuple(args), ret


def parse_type(text):
    """The type that text writes ("list<u64>"), as a signature holds it."""
    return _parse("->" + text)[1] if isinstance(text, str) else text


# -- postcard ----------------------------------------------------------------

def _varint(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _put(out, t, v, what, where):
    def wrong(expected):
        return TypeError("%s: %s must be %s, not %s" % (what, where, expected, type(v).__name__))

    if t == "str":
        if not isinstance(v, str):
            raise wrong("str")
        try:
            b = v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError("%s: %s is not valid UTF-8 text: %s" % (what, where, e)) from None
        _varint(out, len(b))
        out += b
    elif t == "bytes":
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise wrong("bytes (or bytearray, memoryview)")
        b = bytes(v)
        _varint(out, len(b))
        out += b
    elif t == "u64":
        if not _is_int(v):
            raise wrong("an int (u64)")
        if not 0 <= v <= U64_MAX:
            raise ValueError("%s: %s = %d is out of u64's range 0..2**64-1" % (what, where, v))
        _varint(out, v)
    elif t == "i64":
        if not _is_int(v):
            raise wrong("an int (i64)")
        if not I64_MIN <= v <= I64_MAX:
            raise ValueError("%s: %s = %d is out of i64's range -2**63..2**63-1"
                             % (what, where, v))
        _varint(out, ((v << 1) ^ (v >> 63)) & U64_MAX)
    elif t == "bool":
        if not isinstance(v, bool):
            raise wrong("a bool")
        out.append(1 if v else 0)
    elif t == "f64":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise wrong("a float (f64)")
        try:
            out += struct.pack("<d", float(v))
        except OverflowError:
            raise ValueError("%s: %s = %d is too large for an f64" % (what, where, v)) from None
    elif t == "unit":
        if v is not None:
            raise wrong("None (unit)")
    elif isinstance(t, List):
        if not isinstance(v, (list, tuple)):
            raise wrong("a list (%s)" % t)
        _varint(out, len(v))
        for i, x in enumerate(v):
            _put(out, t.item, x, what, "%s, element %d" % (where, i + 1))
    elif isinstance(t, Opt):
        out.append(0 if v is None else 1)
        if v is not None:
            _put(out, t.item, v, what, where)
    elif isinstance(t, Tuple):
        if not isinstance(v, (list, tuple)) or len(v) != len(t.fields):
            raise wrong("a tuple of %d (%s)" % (len(t.fields), t))
        for i, (ft, x) in enumerate(zip(t.fields, v)):
            _put(out, ft, x, what, "%s, field %d" % (where, i + 1))
    elif isinstance(t, Map):
        if not isinstance(v, dict):
            raise wrong("a dict (%s)" % t)
        _varint(out, len(v))
        for k, x in v.items():
            _put(out, t.key, k, what, "%s, key %r" % (where, k))
            _put(out, t.value, x, what, "%s, the value of %r" % (where, k))
    else:
        raise TypeError("%s: %s: no such type %r" % (what, where, t))


def encode(t, value):
    """The postcard bytes of value as type t ("str", "list<u64>", ... or a
    type as Signature.args holds it)."""
    t = parse_type(t)
    out = bytearray()
    _put(out, t, value, str(t), "the value")
    return bytes(out)


def decode(t, data):
    """The value of type t that data holds exactly (ValueError if not)."""
    t = parse_type(t)
    r = _Reader(data)
    v = r.get(t)
    r.end()
    return v


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def varint(self):
        v = shift = 0
        for _ in range(10):
            if self.pos >= len(self.data):
                raise ValueError("postcard: input ended inside a varint")
            b = self.data[self.pos]
            self.pos += 1
            v |= (b & 0x7F) << shift
            if b < 0x80:
                if v > U64_MAX:
                    raise ValueError("postcard: varint over 64 bits")
                return v
            shift += 7
        raise ValueError("postcard: varint longer than 10 bytes")

    def take(self, n):
        if n > len(self.data) - self.pos:
            raise ValueError("postcard: %d bytes announced, %d left" % (n, len(self.data) - self.pos))
        b = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return b

    def get(self, t):
        if t == "str":
            b = self.take(self.varint())
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("postcard: a str that is not UTF-8") from None
        if t == "bytes":
            return self.take(self.varint())
        if t == "u64":
            return self.varint()
        if t == "i64":
            z = self.varint()
            return (z >> 1) ^ -(z & 1)
        if t == "bool":
            b = self.take(1)[0]
            if b > 1:
                raise ValueError("postcard: bool byte %d (0 or 1)" % b)
            return b == 1
        if t == "f64":
            return struct.unpack("<d", self.take(8))[0]
        if t == "unit":
            return None
        if isinstance(t, List):
            # a count no larger than the bytes left: every element is one at least
            n = self.count()
            return [self.get(t.item) for _ in range(n)]
        if isinstance(t, Opt):
            return self.get(t.item) if self.get("bool") else None
        if isinstance(t, Tuple):
            return tuple(self.get(f) for f in t.fields)
        if isinstance(t, Map):
            n = self.count()
            d = {}
            for _ in range(n):
                k = self.get(t.key)
                # the last value would stand and the first go unseen
                if k in d:
                    raise ValueError("postcard: map key %r given twice" % (k,))
                d[k] = self.get(t.value)
            return d
        if isinstance(t, Chan):
            return self.varint()
        raise ValueError("no such type %r" % (t,))

    def count(self):
        n = self.varint()
        if n > len(self.data) - self.pos:
            raise ValueError("postcard: %d elements announced, %d bytes left"
                             % (n, len(self.data) - self.pos))
        return n

    def end(self):
        if self.pos != len(self.data):
            raise ValueError("postcard: %d bytes left over" % (len(self.data) - self.pos))
