# SPDX-License-Identifier: MIT OR Apache-2.0
"""The stream hash of hub.sink and hub.source (proto/builtin.h): XXH3-64
chained over the items, from libxxhash through ctypes (the tests' own
helper: the binding does not need it); hub.source's bytes; what a stream
has queued."""
import ctypes

_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_64bits_withSeed.restype = ctypes.c_uint64
_xxh.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]


def chain(h, item):
    """h after item: XXH3_64bits_withSeed(item, len, h)."""
    return _xxh.XXH3_64bits_withSeed(item, len(item), h)


_BYTES = bytes(range(256))


def source_bytes(at, n):
    """hub.source's n bytes from offset at on: byte k of its stream is k mod 256."""
    reps = (at % 256 + n) // 256 + 1
    return (_BYTES * reps)[at % 256:at % 256 + n]


def queued(stream):
    """The items a hubguest.Stream has queued and the reader not taken (a
    private attribute: the tests look inside)."""
    return len(stream._items) - stream._head
