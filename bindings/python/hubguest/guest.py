# SPDX-License-Identifier: MIT OR Apache-2.0
"""The Guest: its attaching (with the spawn ticket) and detaching, its
state, and the C side of what it starts: the calls it makes
(guest_call_async, answered through _on_result) and the channels it opens
(guest_chan_open and _on_item, _on_end for a Stream; guest_chan_open_send
for a Sender). attach() makes one.

The rest of its surface comes from its bases, one job each: Handlers
(handlers.py) serves its methods, Serving (serve.py) its service loop,
Topics (topics.py) its events, published and subscribed;
Call and Stream (call.py) and Sender (sender.py) are what it hands out.
This module imports them all and none of them imports it.

One thread drives a guest, as in C: handlers and callbacks run on the
thread that serves (run(), serve(), or a blocking call's wait, which
serves other traffic meanwhile, as guest_call does)."""

import atexit
import ctypes
import errno
import faulthandler
import itertools
import signal
import sys
import threading
import time

from . import _lib
from ._lib import CallOpts
from .call import HUB_SIGNATURE, Call, Stream
from .context import INHERIT
from .codec import Signature
from .errors import AttachError, Error, HubError, UnknownMethod, call_error, describe, status_error
from .handlers import Handlers
from .sender import Sender
from .serve import Serving
from .topics import Topics


class Guest(Handlers, Serving, Topics):
    """A hub guest, attached to the hub at its first use (run(), serve(),
    call(), ...) with the spawn ticket in argv (sys.argv by default);
    detached by detach() (and by run() and serve() when they end, and at
    interpreter exit). Until then nothing needs a hub, nor libguest:
    a plugin's module imports, and its handlers run as plain functions,
    in a unit test.

    Register methods with the method() decorator or register(), call
    others with call(), start() or call_async(), stream with stream();
    publish events with advertise() and publish(), take them with the
    subscribe() decorator or topic(), wait for a method with
    wait_method(); then serve: run() (blocking, ends on SIGTERM or SIGINT) or
    await serve() (in an asyncio loop)."""

    def __init__(self, argv=None):
        self._h = None
        self._argv = list(sys.argv if argv is None else argv) or ["guest"]
        self._ever = False              # attached once, or detached: never again
        self._thread = None
        self._methods = {}              # token -> _Method (registered at attach)
        self._method_tokens = itertools.count(1)
        self._sigs = {}                 # method name -> Signature (hub.signature's)
        self._calls = {}                # token -> fn(status, data)
        self._call_tokens = itertools.count(1)
        self._rx = {}                   # token -> Stream
        self._rx_tokens = itertools.count(1)
        self._spare = []                # (token, id) of receive channels nobody took
        self._spare_tx = []             # ids of send channels nobody took
        self._answering = {}            # call pointer -> method (async handlers)
        self._handler_tasks = set()     # their tasks, while they run
        self._stopping = False
        self._running = False           # in run() or serve(): a stop ends its handlers' waits
        self._loop = None               # the asyncio loop while serve() runs
        self._stop_future = None
        self._served_waiters = []       # coroutines waiting for serve() to serve
        self._deferred_exc = None       # KeyboardInterrupt, SystemExit in a handler
        # C calls these back: they must live as long as the guest
        self._c_handler = _lib.HANDLER(self._on_request)
        self._c_result = _lib.RESULT_FN(self._on_result)
        self._c_item = _lib.ITEM_FN(self._on_item)
        self._c_end = _lib.END_FN(self._on_end)
        self._topics_init()

    # -- state -----------------------------------------------------------------

    @property
    def _lib(self):
        return _lib.load()

    def _attach(self):
        """guest_attach with the ticket, then the methods registered so far."""
        argv = self._argv
        arr = (ctypes.c_char_p * (len(argv) + 1))(
            *[a.encode() if isinstance(a, str) else a for a in argv], None)
        h = ctypes.c_void_p()
        why = ctypes.c_char_p()
        rc = self._lib.guest_attach(len(argv), arr, ctypes.byref(h), ctypes.byref(why))
        if rc != 0:
            text = why.value.decode("utf-8", "replace") if why.value else describe(rc)
            raise AttachError("cannot attach to the hub: %s" % text, rc)
        self._h = h.value
        self._ever = True
        self._thread = threading.get_ident()
        _attached.add(self)
        # a plugin's prints should reach hubd's log as they happen
        try:
            sys.stdout.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass
        _stacks_to_stderr()
        for token, m in list(self._methods.items()):
            self._register(token, m)
        self._topics_attach()

    def _handle(self):
        if self._h is None:
            if self._ever:
                raise Error("the guest is detached")
            self._attach()
        return self._h

    @property
    def attached(self):
        return self._h is not None

    @property
    def peer_id(self):
        """This guest's peer id in the hub."""
        return self._lib.guest_peer_id(self._handle())

    @property
    def goodbye_reason(self):
        """The rule the hub said this guest broke when it ended it, or None."""
        if self._h is None:
            return getattr(self, "_last_reason", None)
        r = self._lib.guest_goodbye_reason(self._h)
        return r.decode("utf-8", "replace") if r else None

    def fileno(self):
        """guest_fd: readable when the hub rang this guest."""
        return self._lib.guest_fd(self._handle())

    def stats(self):
        """libguest's counters, as a dict."""
        s = _lib.Stats(size=ctypes.sizeof(_lib.Stats))
        self._lib.guest_get_stats(self._handle(), ctypes.byref(s))
        return {name: getattr(s, name) for name in _lib.Stats.COUNTERS}

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.detach()
        return False

    def detach(self):
        """Leaves the hub cleanly (Goodbye): calls still in flight fail with
        HubGone, calls being answered are dropped. Idempotent; a guest
        never attached is not attached later."""
        self._ever = True
        if self._h is None:
            return
        self._last_reason = self.goodbye_reason
        h, self._h = self._h, None
        _attached.discard(self)
        # libguest fails the calls in flight while it detaches: their
        # callbacks see _h None and report HubGone
        self._lib.guest_detach(h)
        self._answering.clear()

    # -- calls ---------------------------------------------------------------------

    def _err_text(self, status, data):
        # libguest gives an error's text as text
        return data.decode("utf-8", "replace") if status != 0 and data else None

    def _call_raw(self, method, payload, fn, meta=(0, None)):
        """guest_call_async_with(method, payload): fn(status, bytes) later.
        meta: its (deadline_ns, traceparent), as context.outgoing made it."""
        token = next(self._call_tokens)
        cid = ctypes.c_uint32()
        # both given: the binding keeps what a handler's calls inherit
        opts = CallOpts(ctypes.sizeof(CallOpts), CallOpts.DEADLINE | CallOpts.TRACE, meta[0],
                        meta[1].encode() if meta[1] else None)
        self._calls[token] = fn
        rc = self._lib.guest_call_async_with(self._handle(), _lib.c_name(method), payload or None,
                                             len(payload), self._c_result, token,
                                             ctypes.byref(cid), ctypes.byref(opts))
        if rc != 0:
            del self._calls[token]
            raise call_error(method, rc, None, self.goodbye_reason, len(payload))
        return token, cid.value

    def _on_result(self, token, status, result, n):
        try:
            fn = self._calls.pop(token, None)
            if fn is None:
                return
            fn(status, ctypes.string_at(result, n) if n and result else b"")
        except BaseException as e:
            self._defer(e)

    def start(self, method, *args, timeout=None, signature=None, deadline=INHERIT,
              trace=INHERIT):
        """Starts a call and returns its Call at once: .result() waits for
        it, await waits in an event loop. The arguments are encoded by the
        method's signature (asked of the hub with hub.signature and kept,
        unless signature= gives it); a value that does not fit it raises
        TypeError or ValueError before the call is sent.
        The call carries a deadline and a trace: inside a handler the
        handled call's (hubguest.current_call()), the same trace-id with a
        new parent-id; timeout bounds the deadline (and the wait), which
        bounds the wait too. deadline= (time.monotonic() seconds, None:
        none) and trace= (a W3C traceparent sent as it is, None: none,
        hubguest.NEW_TRACE: a new trace) say otherwise."""
        c = Call(self, method, args, signature, timeout, deadline=deadline, trace=trace)
        c._begin()
        if c.done() and c._exc is not None and isinstance(c._exc, (TypeError, ValueError)) \
                and not isinstance(c._exc, Error):
            raise c._exc
        # awaited: the deadline (the timeout's, or the one inherited from
        # the handled call) ends the wait; result() checks it itself
        if c._deadline is not None and self._loop is not None and not c.done():
            c._timer = self._loop.call_later(max(0.0, c._deadline - time.monotonic()),
                                             c._expire)
        return c

    def call(self, method, *args, timeout=None, signature=None, deadline=INHERIT,
             trace=INHERIT):
        """Calls method with args and returns its result, decoded by its
        signature; waits up to timeout seconds (None: for ever), serving
        other traffic meanwhile (handlers of this guest included). Raises
        a hubguest.CallError (RemoteError, UnknownMethod, Timeout...),
        HubGone or Ended when it fails. deadline=, trace=: as start()."""
        return self.start(method, *args, timeout=timeout, signature=signature,
                          deadline=deadline, trace=trace).result()

    async def call_async(self, method, *args, timeout=None, signature=None,
                         deadline=INHERIT, trace=INHERIT):
        """call() for a coroutine: the event loop runs on meanwhile (the
        guest must be served by serve())."""
        return await self.start(method, *args, timeout=timeout, signature=signature,
                                deadline=deadline, trace=trace)

    def signature(self, method, timeout=None):
        """method's signature as a str (hub.signature, kept per name)."""
        _lib.c_name(method)
        sig = self._sigs.get(method)
        if sig is None:
            try:
                text = self.call("hub.signature", method, timeout=timeout,
                                 signature=HUB_SIGNATURE)
            except HubError as e:
                if e.message.startswith("no such method"):
                    raise UnknownMethod("%s: no such method" % method, -errno.ENOSYS,
                                        method) from None
                raise
            sig = Signature(text)
            self._sigs[method] = sig
        return sig.text

    def log(self, text, timeout=5):
        """A line in hubd's log, tagged with this guest's name (hub.log)."""
        self.call("hub.log", text, timeout=timeout, signature="str->unit")

    def describe(self, method, text, timeout=5):
        """Tells operators where method (one this guest registered) is really
        served, shown by hubctl methods; method "" (or None): how this guest
        is, its note in hubctl peers (hub.describe). text: UTF-8, up to 200
        bytes, no control characters; "" clears it. The hub forgets them
        when this guest detaches. A refusal raises HubError."""
        self.call("hub.describe", method or "", text or "", timeout=timeout,
                  signature="str,str->unit")

    # -- channels ------------------------------------------------------------------

    def stream(self, method, *args, timeout=None, signature=None):
        """A call whose callee streams to this guest: returns a Stream to
        iterate over (for or async for), the items decoded as the chan<T>
        argument's T; its .result holds the call's result afterwards. The
        binding opens the channel and passes its id as that argument
        (leave it out of args, or put hubguest.CHANNEL where it goes).
        hub.source's items are the raw bytes it sends:
            for chunk in g.stream("hub.source", 100000): ...
        The sender goes only as fast as the loop takes items: at most the
        hub's initial_credit bytes of them wait in the Stream."""
        return Stream(self, method, args, signature, timeout)

    def open_sender(self):
        """A channel this guest opens to send on, to pass as a call's
        chan<T> argument (hub.sink's, say; it then takes that T):
            s = g.open_sender()
            c = g.start("hub.sink", s)
            s.send(b"..."); s.close()
            digest = c.result()"""
        if self._spare_tx:
            cid = self._spare_tx.pop()
        else:
            cid = self._lib.guest_chan_open_send(self._handle())
            if cid < 0:
                raise status_error(int(cid), self.goodbye_reason, "open a channel: ")
        return Sender(self, int(cid), None, False)

    def _rx_open(self, stream):
        if self._spare:
            token, cid = self._spare.pop()
        else:
            token = next(self._rx_tokens)
            cid = self._lib.guest_chan_open(self._handle(), self._c_item, self._c_end, token)
            if cid < 0:
                raise status_error(int(cid), self.goodbye_reason, "open a channel: ")
            # held: an item's credit goes back when the reader takes it
            # (_rx_consumed), so what the Stream queues stays within the
            # window however slowly it is read
            rc = self._lib.guest_chan_hold(self._h, cid)
            if rc != 0:
                raise status_error(rc, self.goodbye_reason, "hold channel %d: " % cid)
        self._rx[token] = stream
        return token, int(cid)

    def _rx_consumed(self, cid, n):
        """A stream's reader took n bytes of items on channel cid."""
        if self._h is None:
            return
        rc = self._lib.guest_chan_consumed(self._h, cid, n)
        if rc != 0:
            raise status_error(rc, self.goodbye_reason, "channel %d: " % cid)

    def _rx_spare(self, token, cid):
        self._rx.pop(token, None)
        self._spare.append((token, cid))

    def _on_item(self, token, item, n):
        try:
            s = self._rx.get(token)
            if s is not None:
                s._item(ctypes.string_at(item, n) if n else b"")
        except BaseException as e:
            self._defer(e)

    def _on_end(self, token, status):
        try:
            s = self._rx.pop(token, None)
            if s is not None:
                s._end(status)
        except BaseException as e:
            self._defer(e)


_attached = set()


def _detach_all():
    for g in list(_attached):
        try:
            g.detach()
        except Exception:
            pass


atexit.register(_detach_all)


# hubd sends it to a hung guest that catches it, before it takes the
# stack with a debugger and kills the guest (doc/supervisor.md): no
# debugger sees Python's frames, faulthandler writes them.
STACK_SIGNAL_OFFSET = 2     # SIGRTMIN+2: hubd's HANGSTACK_SIGNAL


def _stacks_to_stderr():
    """Every thread's Python stack to stderr (hubd keeps it: hubctl logs)
    when hubd finds the guest hung, and on a fatal signal (SIGSEGV,
    SIGABRT...). Once per process; nothing if stderr has no file."""
    try:
        err = sys.__stderr__
        err.fileno()
        faulthandler.register(signal.SIGRTMIN + STACK_SIGNAL_OFFSET, file=err,
                              all_threads=True)
        if not faulthandler.is_enabled():
            faulthandler.enable(file=err, all_threads=True)
    except (AttributeError, ValueError, OSError, RuntimeError):
        pass


def attach(argv=None):
    """A Guest that attaches with the spawn ticket in argv (sys.argv by
    default: hubd starts a guest with --hub-path, --peer-id and
    --doorbell-fd) at its first use: run(), serve(), call() and the rest
    raise AttachError with libguest's reason when it cannot (started by
    hand, say). Registering methods needs no hub: they are registered
    when it attaches, so a plugin's module imports in a unit test."""
    return Guest(argv)
