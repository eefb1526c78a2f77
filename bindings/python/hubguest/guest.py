# SPDX-License-Identifier: MIT OR Apache-2.0
"""The guest: attaching, methods, calls, channels and the service loop, on
libguest's functions (guestlib/guest.h) through ctypes.

One thread drives a guest, as in C: handlers and callbacks run on the
thread that serves (run(), serve(), or a blocking call's wait, which
serves other traffic meanwhile, as guest_call does)."""

import asyncio
import atexit
import contextvars
import ctypes
import errno
import inspect
import itertools
import signal
import sys
import threading
import time
import traceback

from . import _lib
from .codec import Chan, Signature
from .errors import (Error, AttachError, HubError, InvalidPayload, Timeout, HubGone,
                     UnknownMethod, UserError, ChannelClosed, HubUnreachable, RemoteTimeout,
                     call_error, describe, status_error)

# A blocking wait serves in slices this long at most, so that a signal's
# Python handler (SIGTERM: stop) runs soon: libguest's waits go on through
# EINTR, and Python runs signal handlers only between bytecodes.
SLICE_MS = 100
# What guest_reply_error sends of a message at most (bytes); of a
# forwarded error's text (guest_reply_status keeps as much).
ERROR_MAX = 200
FORWARD_MAX = 1023
# hub.signature: the one signature the binding knows without asking.
_SIG_SIGNATURE = Signature("str->str")


class _Channel:
    """CHANNEL: where a stream's channel goes among a call's arguments."""

    def __repr__(self):
        return "hubguest.CHANNEL"


CHANNEL = _Channel()


class _Running:
    """A call whose handler runs (an async one's task too): what caller()
    asks libguest about, while live (libguest frees a call answered)."""
    __slots__ = ("g", "call", "live")

    def __init__(self, g, call):
        self.g, self.call, self.live = g, call, True


_running = contextvars.ContextVar("hubguest_running", default=None)


def caller():
    """Inside a handler (an async def one too): who made the call, as
    guest_call_caller says: the calling guest's name, "client:UID" for a
    control client (hubctl call), "hub" for the hub's own. The hub says
    it (once per call, asked only if a handler asks), so a handler may
    trust it. None outside a handler; raises hubguest.Error when nobody
    can tell (the caller left, the hub is gone)."""
    r = _running.get()
    if r is None:
        return None
    if not r.live or r.g._h is None:
        raise Error("no caller: the call is over")
    name = r.g._lib.guest_call_caller(r.call)
    r.g._reraise()
    if name is None:
        raise Error("the hub cannot say who made this call (its caller left, or the "
                    "hub is gone)")
    return name.decode("utf-8", "replace")

# Methods whose channel is a plain u64 argument, not a chan<T>: the
# argument index, and their items are raw bytes (hub.source sends the
# stream's bytes as they are, not postcard values).
_RAW_STREAMS = {"hub.source": 1}


def _deadline(timeout):
    if timeout is None:
        return None
    if timeout < 0:
        raise ValueError("timeout must be >= 0 seconds (or None: no limit)")
    return time.monotonic() + timeout


def _ms_left(deadline):
    """Milliseconds of the next wait slice: up to SLICE_MS, up to the
    deadline; 0 when it has passed."""
    if deadline is None:
        return SLICE_MS
    left = deadline - time.monotonic()
    if left <= 0:
        return 0
    return max(1, min(SLICE_MS, int(left * 1000 + 0.999)))


def _error_text(text, limit=ERROR_MAX):
    """text as guest_reply_error takes it: no NUL, at most limit bytes of
    UTF-8, cut between characters."""
    b = text.replace("\0", "\\0").encode("utf-8", "replace")
    if len(b) > limit:
        b = b[:limit - 3]
        while b and (b[-1] & 0xC0) == 0x80:
            b = b[:-1]
        if b and b[-1] >= 0xC0:
            b = b[:-1]
        b += b"..."
    return b


class Call:
    """A call in flight (Guest.start): the signature looked up if needed,
    the arguments encoded by it, the call sent, its answer decoded.

    result(timeout) waits for the answer, serving meanwhile; done() tells
    whether it came; cancel() sends Cancel. Awaiting it (in a guest served
    by serve()) waits without blocking the event loop."""

    def __init__(self, guest, method, args, signature, timeout, payload_fn=None):
        self._g = guest
        self.method = method
        self._args = args
        self._payload_fn = payload_fn    # (sig) -> bytes, instead of args
        self._explicit = signature is not None
        self._sig = Signature(signature) if signature is not None else None
        self._deadline = _deadline(timeout)
        self._retried = False
        self._call_id = None
        self._token = None
        self._done = False
        self._value = None
        self._exc = None
        self._callbacks = []
        self._timer = None
        self._sent = False              # the method's Request is out
        self.signature = None           # the Signature the call was made with
        for a in args or ():
            if isinstance(a, Sender) and not a._given:
                a._call = self          # its items wait for the Request

    # -- the steps ---------------------------------------------------------

    def _begin(self):
        if self._sig is None:
            self._sig = self._g._sigs.get(self.method)
        if self._sig is None:
            self._lookup()
        else:
            self._send()

    def _lookup(self):
        """hub.signature for the method, then the call."""
        def done(status, data):
            if self._done:
                return
            if status != 0:
                text = self._g._err_text(status, data)
                if status == -errno.ENOSYS:
                    self._fail(Error("this hub has no hub.signature: pass signature= "
                                     "to call %s" % self.method))
                elif status == -errno.ECONNREFUSED and (text or "").startswith("no such method"):
                    self._fail(UnknownMethod("%s: no such method" % self.method,
                                             -errno.ENOSYS, self.method))
                else:
                    self._fail(call_error("hub.signature", status, text,
                                          self._g.goodbye_reason))
                return
            try:
                sig = Signature(_SIG_SIGNATURE.decode_result(data))
            except ValueError as e:
                self._fail(Error("hub.signature answered for %s: %s" % (self.method, e)))
                return
            old = self._g._sigs.get(self.method)
            self._g._sigs[self.method] = sig
            if self._retried and old is not None and old == sig:
                # the same signature: the arguments really do not fit
                self._fail(self._retry_exc)
                return
            self._sig = sig
            self._send()

        try:
            payload = _SIG_SIGNATURE.encode_args([self.method], "hub.signature")
            self._raw("hub.signature", payload, done)
        except BaseException as e:
            self._fail(e)

    def _send(self):
        try:
            if self._payload_fn is not None:
                payload = self._payload_fn(self._sig)
            else:
                payload = self._sig.encode_args(self._args, self.method, self._chan_id)
            self.signature = self._sig
            self._raw(self.method, payload, self._answered)
            self._sent = True
        except BaseException as e:
            self._fail(e)

    def _chan_id(self, i, value):
        if isinstance(value, Sender):
            return value._given_to(self, self._sig.args[i])
        if isinstance(value, Stream):
            raise TypeError("%s: pass a stream's channel with Guest.stream()" % self.method)
        return value     # an id: checked as u64 by the encoder

    def _raw(self, method, payload, fn):
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise Timeout("%s: no answer in time" % self.method, -errno.ETIMEDOUT, self.method)
        self._token, self._call_id = self._g._call_raw(method, payload, fn)

    def _answered(self, status, data):
        if self._done:
            return
        if status == 0:
            try:
                value = self._sig.decode_result(data)
            except ValueError as e:
                # a method registered again with another result type
                self._g._sigs.pop(self.method, None)
                self._fail(InvalidPayload("%s: the result does not decode as %s (%s): %s"
                                          % (self.method, self._sig.ret, self._sig.text, e),
                                          -errno.EBADMSG, self.method))
                return
            self._finish(value, None)
            return
        exc = call_error(self.method, status, self._g._err_text(status, data),
                         self._g.goodbye_reason)
        if status == -errno.EBADMSG and not self._explicit and not self._retried:
            # the method may have been registered again, by a restarted
            # guest, with another signature: ask once more
            self._retried = True
            self._retry_exc = exc
            self._sent = False
            self._g._sigs.pop(self.method, None)
            self._lookup()
            return
        self._fail(exc)

    def _finish(self, value, exc):
        if self._done:
            return
        self._done = True
        self._value, self._exc = value, exc
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for fn in self._callbacks:
            fn(self)
        self._callbacks = []

    def _fail(self, exc):
        self._finish(None, exc)

    def _expire(self):
        """The deadline passed: Cancel to the callee, Timeout to us; a
        late answer is dropped."""
        self._timer = None
        if self._done:
            return
        if self._call_id is not None and self._g._h is not None:
            self._g._lib.guest_cancel(self._g._h, self._call_id)
        self._fail(Timeout("%s: no answer in time" % self.method, -errno.ETIMEDOUT, self.method))

    # -- the caller's side -----------------------------------------------------

    def done(self):
        return self._done

    def add_done_callback(self, fn):
        """fn(call) once the call is done (at once if it is)."""
        if self._done:
            fn(self)
        else:
            self._callbacks.append(fn)

    def cancel(self):
        """Sends Cancel (advisory: the callee decides) for a call in
        flight."""
        if not self._done and self._call_id is not None and self._g._h is not None:
            self._g._lib.guest_cancel(self._g._h, self._call_id)

    def result(self, timeout=None):
        """The result (decoded by the method's signature), waiting for it
        up to timeout seconds (None: the call's own timeout) and serving
        meanwhile; raises the call's error."""
        deadline = self._deadline if timeout is None else _deadline(timeout)
        while not self._done:
            ms = _ms_left(deadline)
            if ms == 0:
                self._expire()
                break
            self._g._serve_slice(ms)
        if self._exc is not None:
            raise self._exc
        return self._value

    def __await__(self):
        return self._g._future_of(self).__await__()


class Sender:
    """A channel this guest sends on: a handler's chan<T> argument, or one
    opened with Guest.open_sender() (for hub.sink, say). Items are encoded
    as T; a channel whose type is not known sends bytes as they are.

    End it once with close() (done) or reset() (given up); as a context
    manager it closes, or resets on an exception. A handler's channels
    still open when it returns are closed for it (reset if it raised)."""

    def __init__(self, guest, chan_id, item_type, given):
        self._g = guest
        self.id = chan_id
        self.item_type = item_type      # "str", ..., or None: raw bytes
        self._given = given             # the host gave it (a handler's argument)
        self._call = None               # the call it was passed to (opened ones)
        self._sent = 0
        self.ended = False

    def __repr__(self):
        return "<hubguest.Sender %d %s%s>" % (self.id, self.item_type or "raw",
                                              " ended" if self.ended else "")

    def _given_to(self, call, t):
        if self._given:
            raise TypeError("%s: a handler's channel cannot be passed on" % call.method)
        if self.ended or (self._call is not None and self._call is not call):
            raise ChannelClosed("channel %d is ended, or passed to another call" % self.id)
        if self.item_type is None and isinstance(t, Chan):
            self.item_type = t.item
        self._call = call
        return self.id

    def _encode(self, item):
        if self.item_type is None:
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise TypeError("channel %d sends raw bytes, not %s"
                                % (self.id, type(item).__name__))
            return bytes(item)
        from .codec import encode
        try:
            return encode(self.item_type, item)
        except TypeError as e:
            raise TypeError("channel %d (chan<%s>): %s" % (self.id, self.item_type, e)) from None

    def send(self, item, timeout=None):
        """Sends one item, waiting (up to timeout seconds, None: as long as
        it takes) while the receiver's credit is used up. Raises
        ChannelClosed once the receiver stopped the channel."""
        if self.ended:
            raise ChannelClosed("channel %d is ended" % self.id, -errno.ENOTCONN)
        g = self._g
        c = self._call
        if c is not None and not c._sent:
            # the receiver must hear of the channel (the call's Request,
            # once its signature is known) before any item reaches it
            deadline = _deadline(timeout)
            while not c._sent and not c.done():
                ms = _ms_left(deadline)
                if ms == 0:
                    raise Timeout("channel %d: %s not sent in time" % (self.id, c.method),
                                  -errno.ETIMEDOUT)
                g._serve_slice(ms)
            if not c._sent:
                raise ChannelClosed("channel %d: %s failed: %s" % (self.id, c.method, c._exc),
                                    -errno.ENOTCONN)
        data = self._encode(item)    # as the call's chan<T> says
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        rc = g._lib.guest_chan_send(g._handle(), self.id, data or None, len(data), ms)
        if rc != 0:
            raise status_error(rc, g.goodbye_reason, "channel %d: " % self.id)
        self._sent += 1

    async def asend(self, item, timeout=None):
        """send() for a coroutine: waits for credit without blocking the
        event loop (it looks again every millisecond)."""
        deadline = _deadline(timeout)
        c = self._call
        while c is not None and not c._sent and not c.done():
            await asyncio.sleep(0.001)
        while True:
            try:
                return self.send(item, 0)
            except Timeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(0.001)

    def _end(self, reset):
        if self.ended:
            return
        self.ended = True
        g = self._g
        if g._h is None:
            return
        if not self._given and self._sent == 0 and (self._call is None or (
                self._call.done() and self._call._exc is not None)):
            # nobody ever took it (never passed on, or the call was
            # refused): a Close would name a channel the hub does not
            # know; keep the id for the next open_sender
            g._spare_tx.append(self.id)
            return
        rc = (g._lib.guest_chan_reset if reset else g._lib.guest_chan_close)(g._h, self.id)
        if rc not in (0, -errno.ENOTCONN):
            raise status_error(rc, g.goodbye_reason, "channel %d: " % self.id)

    def close(self):
        """Ends the channel: done (Close)."""
        self._end(False)

    def reset(self):
        """Ends the channel: given up (Reset)."""
        self._end(True)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self._end(et is not None)
        return False


class Stream:
    """The items of a call that streams to this guest: iterate over it
    (for, or async for under serve()) for each item, decoded as the
    channel's T; then .result holds the call's result. The call's error,
    if any, is raised at the end of the iteration.

    timeout (seconds) bounds each wait: for the next item, and for the
    result once the stream ended. Leaving the loop early (break) stops
    the sender (a Reset) and drops what still comes.

    Credit goes back to the sender as the loop takes items, not as they
    arrive (the channel is held: guest_chan_hold): a slow loop holds the
    sender back, and what waits to be taken is at most the hub's
    initial_credit bytes of items, however long the stream."""

    def __init__(self, guest, method, args, signature, timeout):
        self._g = guest
        self.method = method
        self._args = list(args)
        self._timeout = timeout
        self._items = []
        self._head = 0
        self._raw = False
        self.item_type = None
        self.chan_id = None
        self._token = None
        self.ended = None       # 0 Close, -ECONNRESET Reset, -EPIPE hub gone
        self.result = None
        self._waiter = None     # an asyncio future while async for waits
        self._stopped = False
        self._started = False
        self._call = Call(guest, method, None, signature, None, self._payload)

    def _payload(self, sig):
        """The call's arguments with the channel's id in place."""
        args = list(self._args)
        if any(a is CHANNEL for a in args):
            at = [i for i, a in enumerate(args) if a is CHANNEL]
            if len(at) != 1:
                raise TypeError("%s: one hubguest.CHANNEL at most" % self.method)
            pos = at[0]
        else:
            chans = sig.chan_positions()
            if len(chans) == 1:
                pos = chans[0]
            elif self.method in _RAW_STREAMS:
                pos = _RAW_STREAMS[self.method]
            elif not chans:
                raise TypeError("%s (%s) has no chan<T> argument: pass hubguest.CHANNEL "
                                "where the channel id goes" % (self.method, sig.text))
            else:
                raise TypeError("%s (%s) has several chan<T> arguments: pass "
                                "hubguest.CHANNEL where this stream's goes"
                                % (self.method, sig.text))
            args.insert(pos, CHANNEL)
        if pos >= len(sig.args):
            raise TypeError("%s (%s) takes %d arguments, %d given with the channel"
                            % (self.method, sig.text, len(sig.args), len(args)))
        t = sig.args[pos]
        if isinstance(t, Chan):
            self.item_type = t.item
        elif t == "u64":
            self._raw = True     # a channel id as a plain u64: raw items
        else:
            raise TypeError("%s (%s): argument %d is %s, not a channel"
                            % (self.method, sig.text, pos + 1, t))
        args[pos] = self.chan_id
        return sig.encode_args(args, self.method)

    def _start(self):
        if self._started:
            return
        self._started = True
        self._token, self.chan_id = self._g._rx_open(self)
        self._call.add_done_callback(self._call_done)
        self._call._begin()

    def _call_done(self, call):
        if call._exc is not None and self.ended is None and self._token is not None:
            # refused before the stream began (no such method, guest
            # restarting, arguments): nobody sends on the channel, and a
            # Reset would name a channel the hub does not know: keep it
            # for the next stream
            self._g._rx_spare(self._token, self.chan_id)
            self._token = None
            self.ended = -errno.ECANCELED
        self._wake()

    # called from libguest (Guest._on_item, _on_end)
    def _item(self, data):
        self._items.append(data)
        self._wake()

    def _end(self, status):
        self.ended = status
        self._token = None
        self._wake()

    def _wake(self):
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _next_ready(self):
        """(True, item) for the next item, (True, None) for the end of the
        items, (False, None) while neither has come."""
        if self._head < len(self._items):
            data = self._items[self._head]
            self._items[self._head] = None
            self._head += 1
            if self._head > 1024 and self._head * 2 > len(self._items):
                del self._items[:self._head]
                self._head = 0
            # taken: its credit goes back to the sender (while the channel
            # is ours: once it ended, its id may be another stream's)
            if data and self.ended is None:
                self._g._rx_consumed(self.chan_id, len(data))
            if self._raw:
                return True, data
            from .codec import decode
            try:
                return True, decode(self.item_type, data)
            except ValueError as e:
                self.stop()
                raise InvalidPayload("%s: an item does not decode as %s: %s"
                                     % (self.method, self.item_type, e), -errno.EBADMSG,
                                     self.method) from None
        if self.ended is not None and self._call.done():
            return True, None
        return False, None

    def _outcome(self):
        call = self._call
        if call._exc is not None:
            raise call._exc
        if self.ended == -errno.ECONNRESET:
            raise ChannelClosed("%s: the sender reset the stream" % self.method,
                                -errno.ECONNRESET)
        if self.ended == -errno.EPIPE:
            raise status_error(-errno.EPIPE, None, "%s: " % self.method)
        self.result = call._value

    def stop(self):
        """Tells the sender to stop (a Reset) if the stream is still
        going; what it sent meanwhile is dropped."""
        if self._stopped or self.ended is not None or not self._started:
            return
        self._stopped = True
        g = self._g
        if g._h is not None and self._call._call_id is not None and not self._call.done():
            g._lib.guest_chan_reset(g._h, self.chan_id)

    def _over(self, item):
        # the channel ended, the call answered, every item taken
        return item is None and self.ended is not None and self._call.done() \
            and self._head >= len(self._items)

    def __iter__(self):
        self._start()
        return self._gen()

    def _gen(self):
        deadline = _deadline(self._timeout)
        finished = False
        try:
            while True:
                ready, item = self._next_ready()
                if ready:
                    if self._over(item):
                        break
                    deadline = _deadline(self._timeout)
                    yield item
                    continue
                ms = _ms_left(deadline)
                if ms == 0:
                    self.stop()
                    raise Timeout("%s: no item or answer in time" % self.method,
                                  -errno.ETIMEDOUT, self.method)
                self._g._serve_slice(ms)
            finished = True
        finally:
            if not finished:
                self.stop()
        self._outcome()

    def __aiter__(self):
        self._start()
        return self._agen()

    async def _agen(self):
        loop = asyncio.get_running_loop()
        finished = False
        try:
            while True:
                ready, item = self._next_ready()
                if ready:
                    if self._over(item):
                        break
                    yield item
                    continue
                self._waiter = loop.create_future()
                try:
                    await asyncio.wait_for(self._waiter, self._timeout)
                except asyncio.TimeoutError:
                    self.stop()
                    raise Timeout("%s: no item or answer in time" % self.method,
                                  -errno.ETIMEDOUT, self.method) from None
                finally:
                    self._waiter = None
            finished = True
        finally:
            if not finished:
                self.stop()
        self._outcome()

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.stop()
        return False

    def collect(self):
        """All the items as a list (then .result is set)."""
        return list(self)


class _Method:
    __slots__ = ("name", "sig", "fn", "is_async")

    def __init__(self, name, sig, fn):
        self.name = name
        self.sig = sig
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)


class Guest:
    """A hub guest, attached to the hub at its first use (run(), serve(),
    call(), ...) with the spawn ticket in argv (sys.argv by default);
    detached by detach() (and by run() and serve() when they end, and at
    interpreter exit). Until then nothing needs a hub, nor libguest:
    a plugin's module imports, and its handlers run as plain functions,
    in a unit test.

    Register methods with the method() decorator or register(), call
    others with call(), start() or call_async(), stream with stream(),
    then serve: run() (blocking, ends on SIGTERM or SIGINT) or
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
        self._stopping = False
        self._loop = None               # the asyncio loop while serve() runs
        self._stop_future = None
        self._deferred_exc = None       # KeyboardInterrupt, SystemExit in a handler
        # C calls these back: they must live as long as the guest
        self._c_handler = _lib.HANDLER(self._on_request)
        self._c_result = _lib.RESULT_FN(self._on_result)
        self._c_item = _lib.ITEM_FN(self._on_item)
        self._c_end = _lib.END_FN(self._on_end)

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
        for token, m in list(self._methods.items()):
            self._register(token, m)

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

    # -- methods -----------------------------------------------------------------

    def register(self, name, signature, fn):
        """Registers fn as method name ("service.method") with signature
        ("str,u64->bool", say). fn gets the arguments decoded (a chan<T>
        argument as a Sender) and returns the result (None for unit); an
        async def fn is awaited (serve() or run() with an event loop), the
        guest serving meanwhile. An exception becomes an Err answer
        "ExcType: message", its traceback on stderr (UserError: its message
        alone, no traceback)."""
        sig = Signature(signature)
        if not callable(fn):
            raise TypeError("a handler must be callable")
        m = _Method(name, sig, fn)
        token = next(self._method_tokens)
        if self._h is None and not self._ever:
            self._methods[token] = m    # registered when it attaches
            return fn
        self._handle()
        self._register(token, m)
        return fn

    def _register(self, token, m):
        self._methods[token] = m
        rc = self._lib.guest_register(self._h, m.name.encode(), m.sig.text.encode(),
                                      self._c_handler, token)
        if rc != 0:
            del self._methods[token]
            why = {-errno.EEXIST: "the name is taken",
                   -errno.EPERM: "not one of this guest's names (its NAME.* or its "
                                 "config's provides)",
                   -errno.ENOSPC: "this guest has as many methods as the hub allows",
                   -errno.EINVAL: "a bad name (1 to 63 of A-Z a-z 0-9 _ . -, no "
                                  "empty part between dots) or signature",
                   -errno.ENAMETOOLONG: "name over 63 bytes",
                   -errno.EREMOTEIO: "the hub refused it (a hub.* name?)"}.get(rc)
            if why is None:
                raise status_error(rc, self.goodbye_reason, "register %s: " % m.name)
            raise Error("register %s (%s): %s" % (m.name, m.sig.text, why), rc)
        self._sigs[m.name] = m.sig

    def method(self, name, signature):
        """Decorator: @g.method("greeter.hello", "str->str")."""
        def deco(fn):
            self.register(name, signature, fn)
            return fn
        return deco

    def _on_request(self, call, args, n, token):
        try:
            m = self._methods.get(token)
            data = ctypes.string_at(args, n) if n else b""
            if m is None:
                self._lib.guest_reply_error(call, b"no handler")
                return
            self._dispatch(call, m, data)
        except BaseException as e:     # nothing may escape into C
            self._defer(e)

    def _dispatch(self, call, m, data):
        # caller() names this call while its handler runs (a task made
        # for it copies the context)
        r = _Running(self, call)
        token = _running.set(r)
        try:
            self._dispatch_in(call, m, data, r)
        finally:
            _running.reset(token)

    def _dispatch_in(self, call, m, data, r):
        try:
            values = m.sig.decode_args(data)
        except ValueError as e:
            self._lib.guest_reply_error(call, _error_text("arguments: %s" % e))
            return
        senders = []
        for i, t in enumerate(m.sig.args):
            if isinstance(t, Chan):
                s = Sender(self, values[i], t.item, True)
                senders.append(s)
                values[i] = s
        try:
            v = m.fn(*values)
        except BaseException as e:
            r.live = False
            self._answer(call, m, senders, None, e)
            return
        if inspect.isawaitable(v):
            loop = self._loop
            if loop is None:
                if inspect.iscoroutine(v):
                    v.close()
                r.live = False
                self._answer(call, m, senders, None, Error(
                    "%s is async: serve the guest with serve() (or run(), which "
                    "does when a handler is async)" % m.name))
                return
            self._answering[call] = m
            task = asyncio.ensure_future(v, loop=loop)
            task.add_done_callback(lambda t: self._task_done(call, m, senders, t, r))
            return
        r.live = False
        self._answer(call, m, senders, v, None)

    def _task_done(self, call, m, senders, task, r):
        r.live = False
        if self._answering.pop(call, None) is None:
            return          # detached meanwhile: libguest freed the call
        if task.cancelled():
            self._answer(call, m, senders, None, asyncio.CancelledError("cancelled"))
            return
        e = task.exception()
        self._answer(call, m, senders, None if e else task.result(), e)

    def _answer(self, call, m, senders, value, exc):
        if self._h is None:
            return
        if exc is None:
            try:
                payload = m.sig.encode_result(value, m.name)
            except (TypeError, ValueError) as e:
                print("hubguest: %s: %s" % (m.name, e), file=sys.stderr, flush=True)
                exc = UserError("%s returned %s, which does not fit the result "
                                "type %s of %s" % (m.name, _short(value), m.sig.ret, m.sig.text))
        for s in senders:
            try:
                s._end(exc is not None)
            except Error:
                pass
        if exc is None:
            rc = self._lib.guest_reply(call, payload or None, len(payload))
            if rc == -errno.EMSGSIZE:
                print("hubguest: %s: result too large" % m.name, file=sys.stderr, flush=True)
            return
        if isinstance(exc, (HubUnreachable, RemoteTimeout)):
            # an error from elsewhere, forwarded as its caller saw it
            self._lib.guest_reply_status(call, exc.code, _error_text(exc.message, FORWARD_MAX))
            return
        if isinstance(exc, UserError):
            text = str(exc)
        else:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                self._defer(exc)
            print("hubguest: %s raised:" % m.name, file=sys.stderr)
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            sys.stderr.flush()
            text = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
        self._lib.guest_reply_error(call, _error_text(text))

    def _defer(self, exc):
        """An exception that must reach whoever serves (C is in between):
        kept, the serving stops, and it is raised there."""
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            if self._deferred_exc is None:
                self._deferred_exc = exc
            self.stop()
        else:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)

    def _reraise(self):
        e, self._deferred_exc = self._deferred_exc, None
        if e is not None:
            raise e

    # -- calls ---------------------------------------------------------------------

    def _err_text(self, status, data):
        # libguest gives an error's text as text
        return data.decode("utf-8", "replace") if status != 0 and data else None

    def _call_raw(self, method, payload, fn):
        """guest_call_async(method, payload): fn(status, bytes) later."""
        token = next(self._call_tokens)
        cid = ctypes.c_uint32()
        self._calls[token] = fn
        rc = self._lib.guest_call_async(self._handle(), method.encode(), payload or None,
                                        len(payload), self._c_result, token, ctypes.byref(cid))
        if rc != 0:
            del self._calls[token]
            raise call_error(method, rc, None, self.goodbye_reason)
        return token, cid.value

    def _on_result(self, token, status, result, n):
        try:
            fn = self._calls.pop(token, None)
            if fn is None:
                return
            fn(status, ctypes.string_at(result, n) if n and result else b"")
        except BaseException as e:
            self._defer(e)

    def start(self, method, *args, timeout=None, signature=None):
        """Starts a call and returns its Call at once: .result() waits for
        it, await waits in an event loop. The arguments are encoded by the
        method's signature (asked of the hub with hub.signature and kept,
        unless signature= gives it); a value that does not fit it raises
        TypeError or ValueError before the call is sent."""
        c = Call(self, method, args, signature, timeout)
        c._begin()
        if c.done() and c._exc is not None and isinstance(c._exc, (TypeError, ValueError)) \
                and not isinstance(c._exc, Error):
            raise c._exc
        if timeout is not None and self._loop is not None and not c.done():
            c._timer = self._loop.call_later(timeout, c._expire)
        return c

    def call(self, method, *args, timeout=None, signature=None):
        """Calls method with args and returns its result, decoded by its
        signature; waits up to timeout seconds (None: for ever), serving
        other traffic meanwhile (handlers of this guest included). Raises
        a hubguest.CallError (RemoteError, UnknownMethod, Timeout...),
        HubGone or Ended when it fails."""
        return self.start(method, *args, timeout=timeout, signature=signature).result()

    async def call_async(self, method, *args, timeout=None, signature=None):
        """call() for a coroutine: the event loop runs on meanwhile (the
        guest must be served by serve())."""
        return await self.start(method, *args, timeout=timeout, signature=signature)

    def _future_of(self, call):
        loop = asyncio.get_running_loop()
        if self._loop is None:
            raise Error("await a call in a guest served by serve() (or use result())")
        fut = loop.create_future()

        def done(c):
            if fut.done():
                return
            if c._exc is not None:
                fut.set_exception(c._exc)
            else:
                fut.set_result(c._value)
        call.add_done_callback(done)
        return fut

    def signature(self, method, timeout=None):
        """method's signature as a str (hub.signature, kept per name)."""
        sig = self._sigs.get(method)
        if sig is None:
            try:
                text = self.call("hub.signature", method, timeout=timeout,
                                 signature=_SIG_SIGNATURE)
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

    # -- serving -----------------------------------------------------------------

    def _serve_slice(self, ms):
        """Waits up to ms for traffic and serves it (guest_service_wait)."""
        rc = self._lib.guest_service_wait(self._handle(), ms)
        if rc != 0:
            self._loop_error(rc)
        self._reraise()

    def _loop_error(self, rc):
        if rc == -errno.ESHUTDOWN:
            self._stopping = True
            raise status_error(-errno.EPIPE, None, "")
        raise status_error(rc, self.goodbye_reason, "")

    def stop(self):
        """Makes run() or serve() return (from a handler, say)."""
        self._stopping = True
        f = self._stop_future
        if f is not None and not f.done():
            f.set_result(None)

    def service(self):
        """guest_service: serves what is there without blocking (for a loop
        of your own that polls fileno()). Call it when fileno() is
        readable, at least every service_timeout() seconds (the
        heartbeat), and last before your loop sleeps."""
        rc = self._lib.guest_service(self._handle())
        if rc != 0:
            self._loop_error(rc)
        self._reraise()

    def service_timeout(self):
        """Seconds until service() must run again (heartbeat), or None."""
        ms = self._lib.guest_service_timeout_ms(self._handle())
        return None if ms < 0 else ms / 1000.0

    def run(self, detach=True):
        """Serves until stop(), SIGTERM or SIGINT (which stop it cleanly), or
        the hub's goodbye; then detaches (unless detach=False). With an async
        handler registered it runs an asyncio loop (serve()). Raises
        HubGone if hubd died, Ended if the hub ended this guest."""
        if any(m.is_async for m in self._methods.values()) and self._loop is None:
            return asyncio.run(self.serve(detach=detach))
        self._stopping = False
        old = _install_signals(self.stop)
        try:
            while not self._stopping:
                try:
                    self._serve_slice(SLICE_MS)
                except HubGone as e:
                    if e.code == -errno.EPIPE and self._stopping:
                        break     # the hub said goodbye: a clean end
                    raise
        finally:
            _restore_signals(old)
            if detach:
                self.detach()
        self._reraise()

    async def serve(self, detach=True):
        """Serves the guest in the running asyncio loop until stop(),
        SIGTERM or SIGINT (handled by the loop), or the hub's goodbye; then
        detaches (unless detach=False). The loop watches fileno() and runs
        guest_service when it is readable and at every heartbeat; async
        handlers run as tasks, answered when they finish."""
        loop = asyncio.get_running_loop()
        if self._loop is not None:
            raise Error("the guest is served already")
        self._loop = loop
        self._stopping = False
        self._stop_future = loop.create_future()
        fd = self.fileno()
        sigs = []
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self.stop)
                    sigs.append(sig)
                except (NotImplementedError, RuntimeError):
                    pass
        failure = []

        def service():
            if self._h is None or self._stop_future.done():
                return
            try:
                self.service()
            except HubGone as e:
                if not self._stopping:
                    failure.append(e)
                self.stop()
            except BaseException as e:
                failure.append(e)
                self.stop()

        loop.add_reader(fd, service)
        try:
            service()
            while not self._stop_future.done():
                t = self.service_timeout() if self._h is not None else None
                try:
                    await asyncio.wait_for(asyncio.shield(self._stop_future),
                                           0.02 if t is None else max(t, 0.001))
                except asyncio.TimeoutError:
                    service()       # the heartbeat
        finally:
            loop.remove_reader(fd)
            for sig in sigs:
                loop.remove_signal_handler(sig)
            self._loop = None
            self._stop_future = None
            if detach:
                self.detach()     # handlers still running: never answered
        if failure:
            raise failure[0]


def _short(v):
    r = repr(v)
    return "%s %s" % (type(v).__name__, r if len(r) <= 40 else r[:37] + "...")


_attached = set()


def _detach_all():
    for g in list(_attached):
        try:
            g.detach()
        except Exception:
            pass


atexit.register(_detach_all)


def _install_signals(stop):
    """SIGTERM and SIGINT stop the loop (hubd stops a guest with SIGTERM,
    then SIGKILL after stop_grace); the old handlers, to put back."""
    if threading.current_thread() is not threading.main_thread():
        return None
    old = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            old[sig] = signal.signal(sig, lambda s, f: stop())
        except (ValueError, OSError):
            pass
    return old


def _restore_signals(old):
    if not old:
        return
    for sig, h in old.items():
        try:
            signal.signal(sig, h)
        except (ValueError, OSError):
            pass


def attach(argv=None):
    """A Guest that attaches with the spawn ticket in argv (sys.argv by
    default: hubd starts a guest with --hub-path, --peer-id and
    --doorbell-fd) at its first use: run(), serve(), call() and the rest
    raise AttachError with libguest's reason when it cannot (started by
    hand, say). Registering methods needs no hub: they are registered
    when it attaches, so a plugin's module imports in a unit test."""
    return Guest(argv)
