# SPDX-License-Identifier: MIT OR Apache-2.0
"""The calls this guest makes: a Call (the method's signature asked of
the hub if need be, the arguments encoded by it, the call sent, its
answer decoded) and a Stream (a call whose callee streams items back on
a channel this guest opened, read as an iterator).

Both drive the C side through their Guest (its _call_raw, _rx_open and
_serve_slice): guest.py imports this module, never the other way."""

import errno
import time

from ._items import Items
from ._lib import c_name
from ._wait import deadline_in, ms_left
from .codec import Chan, Rx, Signature, decode
from .context import INHERIT, outgoing
from .errors import (Error, ChannelClosed, InvalidPayload, Stopping, Timeout,
                     UnknownMethod, call_error, status_error)
from .sender import Sender

# hub.signature: the one signature the binding knows without asking.
HUB_SIGNATURE = Signature("str->str")


class _Channel:
    """CHANNEL: where a stream's channel goes among a call's arguments."""

    def __repr__(self):
        return "hubguest.CHANNEL"


CHANNEL = _Channel()

# Methods whose channel is a plain u64 argument, not a chan<T>: the
# argument index, and their items are raw bytes (hub.source sends the
# stream's bytes as they are, not postcard values).
_RAW_STREAMS = {"hub.source": 1}


class Call:
    """A call in flight (Guest.start): the signature looked up if needed,
    the arguments encoded by it, the call sent, its answer decoded.

    result(timeout) waits for the answer, serving meanwhile; done() tells
    whether it came; cancel() sends Cancel. Awaiting it (in a guest served
    by serve()) waits without blocking the event loop."""

    def __init__(self, guest, method, args, signature, timeout, payload_fn=None,
                 deadline=INHERIT, trace=INHERIT):
        c_name(method)
        self._g = guest
        self.method = method
        self._args = args
        self._payload_fn = payload_fn    # (sig) -> bytes, instead of args
        self._explicit = signature is not None
        self._sig = Signature(signature) if signature is not None else None
        # its deadline and trace, taken now: in the caller's context
        self._meta = outgoing(timeout, deadline, trace)
        self._deadline = deadline_in(timeout)
        if self._meta[0]:
            # the call's deadline, inherited or given, bounds the wait too
            d = self._meta[0] / 1e9
            self._deadline = d if self._deadline is None else min(d, self._deadline)
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
        # an rx<T> given as an iterator (or async iterator, or a list):
        # (its Sender, the items), sent once the Request is out
        self._pump = None
        self._pumped = False
        self._may_pump = any(hasattr(a, "__next__") or hasattr(a, "__anext__") or
                             isinstance(a, (list, tuple)) for a in args or ())
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
                sig = Signature(HUB_SIGNATURE.decode_result(data))
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
            payload = HUB_SIGNATURE.encode_args([self.method], "hub.signature")
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
        if isinstance(self._sig.args[i], Rx) and not isinstance(value, (int, bool)):
            if self._pump is not None and self._pump[1] is value:
                return self._pump[0].id         # asked again (a retry)
            if not (hasattr(value, "__iter__") or hasattr(value, "__aiter__")):
                raise TypeError("%s: argument %d (%s) takes an iterator, an async "
                                "iterator or a Sender, not %s" % (
                                    self.method, i + 1, self._sig.args[i],
                                    type(value).__name__))
            s = self._g.open_sender()
            self._pump = (s, value)
            return s._given_to(self, self._sig.args[i])
        if isinstance(value, Stream):
            raise TypeError("%s: pass a stream's channel with Guest.stream()" % self.method)
        return value     # an id: checked as u64 by the encoder

    def _raw(self, method, payload, fn):
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise Timeout("%s: no answer in time" % self.method, -errno.ETIMEDOUT, self.method)
        self._token, self._call_id = self._g._call_raw(method, payload, fn, self._meta)

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
        self._g._wake_served()      # its uploads' senders see it over

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
        deadline = self._deadline if timeout is None else deadline_in(timeout)
        while not self._done:
            try:
                if self._pump is not None and not self._pumped:
                    self._send_items(deadline)
                    continue
                ms = ms_left(deadline)
                if ms == 0:
                    self._expire()
                    break
                self._g._serve_slice(ms)
            except Stopping:
                # given up as on a timeout: the callee is told
                self.cancel()
                self._fail(Stopping("%s: the guest is stopping" % self.method,
                                    -errno.ESHUTDOWN))
        if self._exc is not None:
            raise self._exc
        return self._value

    def __await__(self):
        if not self._may_pump:
            return self._g._future_of(self).__await__()
        return self._await_items().__await__()

    # -- an upload's items (an rx<T> given as an iterator) ---------------

    def _send_items(self, deadline):
        """The items of the iterator given for an rx<T>, sent as the
        callee's credit allows, then the end. The callee's answer or stop
        before the end ends the sending (ChannelClosed): the answer says;
        so does the deadline (Timeout, and Cancel to the callee)."""
        self._pumped = True
        s, src = self._pump
        if not hasattr(src, "__iter__"):
            s.reset()
            raise TypeError("%s: an async iterator for its rx<T>: await the call "
                            "(call_async) to send it" % self.method)
        try:
            for item in src:
                s.send(item, None if deadline is None else max(0.0, deadline - time.monotonic()))
        except ChannelClosed:
            pass
        except Timeout:
            s.reset()
            self._expire()
            return
        except BaseException:
            s.reset()
            raise
        s.close()

    async def _send_items_async(self):
        self._pumped = True
        s, src = self._pump
        try:
            if hasattr(src, "__aiter__"):
                async for item in src:
                    await s.asend(item)
            else:
                for item in src:
                    await s.asend(item)
        except ChannelClosed:
            pass
        except BaseException:
            s.reset()
            raise
        s.close()

    async def _await_items(self):
        fut = self._g._future_of(self)
        # the signature says whether an argument is an rx<T>
        while not self._done and not self._sent and self._pump is None:
            await self._g._next_service()   # hub.signature's answer
        if self._pump is not None and not self._pumped:
            await self._send_items_async()
        return await fut


class Stream(Items):
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
        deadline_in(timeout)            # a timeout that is no number: said now
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

    def _begin(self):
        self._start()

    def _is_last(self, item):
        return self._over(item)

    def _each_wait(self):
        return self._timeout

    def _late(self):
        return Timeout("%s: no item or answer in time" % self.method, -errno.ETIMEDOUT,
                       self.method)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.stop()
        return False

