# SPDX-License-Identifier: MIT OR Apache-2.0
"""libguest through ctypes: loading the library and the prototypes of the
functions the binding calls (guestlib/guest.h, whose ABI is libguest.so.0;
0.3 or later: streams hold their channels with guest_chan_hold; 0.4: a
call's caller, guest_call_caller; errors forwarded, guest_reply_status;
0.6: topics, guest_advertise, guest_publish, guest_subscribe,
guest_next_event and guest_wait_method; 0.7: a call's deadline and trace,
guest_call_deadline, guest_call_trace, guest_call_async_with; uploads,
guest_chan_accept).

Nothing here knows Python values: see codec.py for those; guest.py (and
the modules it imports: handlers.py, serve.py, call.py, sender.py) for the
objects built on these calls."""

import ctypes
import os

from .errors import Error

SONAME = "libguest.so.0"
NEEDS = "0.7"       # the libguest version whose functions _PROTOS lists

# guest_handler(call, args, len, ctx)
HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_void_p)
# guest_result_fn(ctx, status, result, len)
RESULT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                             ctypes.c_size_t)
# guest_item_fn(ctx, item, len), guest_end_fn(ctx, status)
ITEM_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
END_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)


class GuestEvent(ctypes.Structure):
    """struct guest_event: one event of a subscription."""
    _fields_ = [("sub", ctypes.c_int), ("topic", ctypes.c_char_p), ("sig", ctypes.c_char_p),
                ("data", ctypes.c_void_p), ("len", ctypes.c_size_t), ("seq", ctypes.c_uint64),
                ("lost", ctypes.c_uint64), ("bad", ctypes.c_int)]


# guest_event_fn(g, ev, ctx)
EVENT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(GuestEvent), ctypes.c_void_p)


class Stats(ctypes.Structure):
    """struct guest_stats (0.5's: its size first, which the caller sets)."""
    COUNTERS = ("calls_in", "calls_out", "credit_waits", "ring_waits", "wakes", "sleeps")
    _fields_ = [("size", ctypes.c_size_t)] + [(name, ctypes.c_uint64) for name in COUNTERS]


class CallOpts(ctypes.Structure):
    """struct guest_call_opts (0.7): a call's deadline and trace."""
    DEADLINE, TRACE, NEW_TRACE = 0x1, 0x2, 0x4
    _fields_ = [("size", ctypes.c_size_t), ("flags", ctypes.c_uint),
                ("deadline_ns", ctypes.c_uint64), ("trace", ctypes.c_char_p)]


_P = ctypes.c_void_p
_PROTOS = {
    # name: (restype, argtypes)
    "guest_attach": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_char_p)]),
    "guest_detach": (None, [_P]),
    "guest_peer_id": (ctypes.c_uint, [_P]),
    "guest_register": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, HANDLER, _P]),
    "guest_unregister": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "guest_reply": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "guest_reply_error": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "guest_reply_cancelled": (ctypes.c_int, [_P]),
    "guest_reply_status": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_char_p]),
    "guest_call_cancelled": (ctypes.c_int, [_P]),
    "guest_call_caller": (ctypes.c_char_p, [_P]),
    "guest_call_async": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                        RESULT_FN, _P, ctypes.POINTER(ctypes.c_uint32)]),
    "guest_call_async_with": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.c_size_t, RESULT_FN, _P,
                                             ctypes.POINTER(ctypes.c_uint32),
                                             ctypes.POINTER(CallOpts)]),
    "guest_call_deadline": (ctypes.c_uint64, [_P]),
    "guest_call_trace": (ctypes.c_char_p, [_P]),
    "guest_cancel": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "guest_chan_send": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.c_int]),
    "guest_chan_close": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "guest_chan_reset": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "guest_chan_open_send": (ctypes.c_int64, [_P]),
    "guest_chan_open": (ctypes.c_int64, [_P, ITEM_FN, END_FN, _P]),
    "guest_chan_hold": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "guest_chan_accept": (ctypes.c_int, [_P, ctypes.c_uint32, ITEM_FN, END_FN, _P]),
    "guest_chan_consumed": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_size_t]),
    "guest_stop": (None, [_P]),
    "guest_goodbye_reason": (ctypes.c_char_p, [_P]),
    "guest_service_wait": (ctypes.c_int, [_P, ctypes.c_int]),
    "guest_fd": (ctypes.c_int, [_P]),
    "guest_service": (ctypes.c_int, [_P]),
    "guest_service_timeout_ms": (ctypes.c_int, [_P]),
    "guest_get_stats": (ctypes.c_int, [_P, ctypes.POINTER(Stats)]),
    "guest_advertise": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]),
    "guest_publish": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "guest_subscribe": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_uint, EVENT_FN, _P]),
    "guest_unsubscribe": (ctypes.c_int, [_P, ctypes.c_int]),
    "guest_next_event": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.POINTER(GuestEvent), ctypes.c_int]),
    "guest_wait_method": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int]),
}

_lib = None


def c_name(name, what="a method's name"):
    """name as libguest takes it: its UTF-8 bytes. TypeError for what is
    not a str; ValueError for a NUL in it, where C would read a shorter
    name (another method's, another topic's)."""
    if not isinstance(name, str):
        raise TypeError("%s is a str, not %s" % (what, type(name).__name__))
    if "\0" in name:
        raise ValueError("%s %r holds a NUL character" % (what, name))
    try:
        return name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("%s %r is not valid UTF-8 text: %s" % (what, name, e)) from None


METHOD_NAME_MAX = 63    # proto/method.h's HP_METHOD_NAME_MAX
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def method_name_refused(name):
    """Why the hub would not register name (a str), as proto/method.c's
    hp_method_name_refused says it; None when it would. libguest exports
    no such check, and the binding needs no libguest until it attaches."""
    b = c_name(name)
    if not b:
        return "bad method name: empty"
    if len(b) > METHOD_NAME_MAX:
        return "bad method name: longer than %d bytes" % METHOD_NAME_MAX
    if not _NAME_BYTES.issuperset(b):
        return "bad method name: a byte not in A-Z a-z 0-9 _ . -"
    if b"" in b.split(b"."):
        return "bad method name: an empty part between dots"
    return None


def _beside():
    """Where libguest is when the loader would not look: the lib directory
    of the prefix this binding was installed under (PREFIX/lib/python3.X/
    dist-packages/hubguest, or /usr/lib/python3/dist-packages/hubguest),
    then a build tree's build/ (bindings/python/hubguest)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.normpath(os.path.join(here, "..", "..", "..", SONAME)),
            os.path.normpath(os.path.join(here, "..", "..", "..", "build", "libguest.so"))]


def load():
    """libguest, loaded once: the file HUB_LIBGUEST names if it is set (a
    build tree's build/libguest.so, say), else the installed libguest.so.0:
    where the loader looks, else in the lib directory of the prefix this
    binding is installed under, else a build tree's beside it. Raises
    hubguest.Error saying what was tried."""
    global _lib
    if _lib is not None:
        return _lib
    path = os.environ.get("HUB_LIBGUEST")
    try:
        lib = ctypes.CDLL(path or SONAME)
    except OSError as e:
        if path:
            raise Error("cannot load libguest from HUB_LIBGUEST=%s: %s" % (path, e)) from None
        lib = None
        for p in _beside():
            if os.path.exists(p):
                try:
                    lib, path = ctypes.CDLL(p), p
                    break
                except OSError:
                    pass
        if lib is None:
            raise Error("cannot load %s (%s; nor in %s): install libguest (make install in "
                        "the hub tree) or set HUB_LIBGUEST to the path of a libguest.so" %
                        (SONAME, e, " or ".join(_beside()))) from None
    for name, (restype, argtypes) in _PROTOS.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise Error("%s has no %s: libguest too old for this binding (it needs %s "
                        "or later)" % (path or SONAME, name, NEEDS)) from None
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib
