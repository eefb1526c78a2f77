# SPDX-License-Identifier: MIT OR Apache-2.0
"""Method signatures and the postcard encoding of their values.

A signature is "ARGS->RET" (proto/sig.h): ARGS a comma-separated list,
maybe empty, of str bytes u64 i64 bool, or chan<T> (T one of those: a
channel id, u64 on the wire); RET one of them or unit. No blanks.

Python values: str <-> str, bytes <-> bytes (bytearray and memoryview
accepted), u64 and i64 <-> int (bool refused), bool <-> bool, unit <->
None. Postcard (proto/postcard.h): LEB128 varints, zigzag for i64,
a varint length before the bytes of str and bytes, bool one byte 0 or 1,
unit nothing."""

TYPES = ("str", "bytes", "u64", "i64", "bool", "unit")
SIG_MAX_LEN = 128
SIG_MAX_ARGS = 8
U64_MAX = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class Chan:
    """The type chan<T> of a signature's argument."""
    __slots__ = ("item",)

    def __init__(self, item):
        self.item = item

    def __eq__(self, other):
        return isinstance(other, Chan) and other.item == self.item

    def __hash__(self):
        return hash(("chan", self.item))

    def __repr__(self):
        return "chan<%s>" % self.item

    __str__ = __repr__


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

    def encode_args(self, values, name="", chan_ids=None):
        """The argument bytes for values (a sequence, one per argument).
        A chan<T> argument takes what chan_ids(i, value) answers (an int
        id). TypeError or ValueError naming the signature if one does not
        fit."""
        what = "%s (%s)" % (name, self.text) if name else self.text
        if len(values) != len(self.args):
            raise TypeError("%s takes %d argument%s, %d given" % (
                what, len(self.args), "" if len(self.args) == 1 else "s", len(values)))
        out = bytearray()
        for i, (t, v) in enumerate(zip(self.args, values)):
            if isinstance(t, Chan):
                cid = chan_ids(i, v) if chan_ids is not None else v
                _put(out, "u64", cid, what, "argument %d" % (i + 1))
            else:
                _put(out, t, v, what, "argument %d" % (i + 1))
        return bytes(out)

    def decode_args(self, data):
        """The argument values in data (chan<T> arguments as their ids);
        ValueError if data does not hold exactly them."""
        r = _Reader(data)
        vals = [r.get("u64" if isinstance(t, Chan) else t) for t in self.args]
        r.end()
        return vals

    def encode_result(self, value, name=""):
        what = "%s (%s)" % (name, self.text) if name else self.text
        out = bytearray()
        _put(out, self.ret, value, what, "the result")
        return bytes(out)

    def decode_result(self, data):
        r = _Reader(data)
        v = r.get(self.ret)
        r.end()
        return v


def _type_of(s):
    if s in TYPES:
        return s
    return None


def _parse(text):
    """(args, ret) of a signature, as proto/sig.c's hp_sig_parse reads it."""
    if len(text.encode("utf-8", "surrogatepass")) > SIG_MAX_LEN:
        raise ValueError("signature %r: longer than %d bytes" % (text, SIG_MAX_LEN))
    arrow = text.find("->")
    if arrow < 0:
        raise ValueError("signature %r has no '->'" % text)
    ret = _type_of(text[arrow + 2:])
    if ret is None:
        raise ValueError("signature %r: unknown result type %r (one of %s)"
                         % (text, text[arrow + 2:], ", ".join(TYPES)))
    args = []
    if arrow > 0:
        for part in text[:arrow].split(","):
            if len(args) == SIG_MAX_ARGS:
                raise ValueError("signature %r: more than %d arguments" % (text, SIG_MAX_ARGS))
            if len(part) > 6 and part.startswith("chan<") and part.endswith(">"):
                t = _type_of(part[5:-1])
                if t is None or t == "unit":
                    raise ValueError("signature %r: unknown channel item type %r"
                                     % (text, part[5:-1]))
                args.append(Chan(t))
                continue
            t = _type_of(part)
            if t is None or t == "unit":
                raise ValueError("signature %r: unknown argument type %r (one of "
                                 "str, bytes, u64, i64, bool, chan<T>)" % (text, part))
            args.append(t)
    return tuple(args), ret


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
    elif t == "unit":
        if v is not None:
            raise wrong("None (unit)")
    else:
        raise TypeError("%s: %s: no such type %r" % (what, where, t))


def encode(t, value):
    """The postcard bytes of value as type t ("str", ... or "unit")."""
    out = bytearray()
    _put(out, t, value, t, "the value")
    return bytes(out)


def decode(t, data):
    """The value of type t that data holds exactly (ValueError if not)."""
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
        if t == "unit":
            return None
        raise ValueError("no such type %r" % (t,))

    def end(self):
        if self.pos != len(self.data):
            raise ValueError("postcard: %d bytes left over" % (len(self.data) - self.pos))
