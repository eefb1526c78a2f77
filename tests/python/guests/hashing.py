"""The stream hash of hub.sink and hub.source (proto/services.h): XXH3-64
chained over the items, from libxxhash through ctypes (the tests' own
helper: the binding does not need it)."""
import ctypes

_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_64bits_withSeed.restype = ctypes.c_uint64
_xxh.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]


def chain(h, item):
    """h after item: XXH3_64bits_withSeed(item, len, h)."""
    return _xxh.XXH3_64bits_withSeed(item, len(item), h)
