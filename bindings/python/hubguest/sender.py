# SPDX-License-Identifier: MIT OR Apache-2.0
"""Sender: a channel this guest sends on (a handler's chan<T> argument, or
one it opens to pass to a call), its items encoded as the channel's T and
sent as the receiver's credit allows (guest_chan_send), then ended with a
Close or a Reset.

It knows its guest and the call it was passed to (call.py) only by their
attributes: it imports neither."""

import errno
import time

from ._wait import deadline_in, ms_left
from .codec import Chan, Rx, encode
from .errors import ChannelClosed, Stopping, Timeout, status_error


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
        if self.item_type is None and isinstance(t, (Chan, Rx)):
            self.item_type = t.item
        self._call = call
        return self.id

    def _encode(self, item):
        if self.item_type is None:
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise TypeError("channel %d sends raw bytes, not %s"
                                % (self.id, type(item).__name__))
            return bytes(item)
        try:
            return encode(self.item_type, item)
        except TypeError as e:
            raise TypeError("channel %d (items %s): %s" % (self.id, self.item_type, e)) from None

    def send(self, item, timeout=None):
        """Sends one item, waiting (up to timeout seconds, None: as long as
        it takes) while the receiver's credit is used up, serving
        meanwhile. Raises ChannelClosed once the receiver stopped the
        channel, Stopping when the guest stops (SIGTERM) as it waits
        inside run() or serve()."""
        if self.ended:
            raise ChannelClosed("channel %d is ended" % self.id, -errno.ENOTCONN)
        g = self._g
        c = self._call
        deadline = deadline_in(timeout)
        if c is not None and not c._sent:
            # the receiver must hear of the channel (the call's Request,
            # once its signature is known) before any item reaches it
            while not c._sent and not c.done():
                ms = ms_left(deadline)
                if ms == 0:
                    raise Timeout("channel %d: %s not sent in time" % (self.id, c.method),
                                  -errno.ETIMEDOUT)
                g._serve_slice(ms)
            if not c._sent:
                raise ChannelClosed("channel %d: %s failed: %s" % (self.id, c.method, c._exc),
                                    -errno.ENOTCONN)
        data = self._encode(item)    # as the call's chan<T> says
        while True:
            # in slices, as every blocking wait: SIGTERM's handler runs
            # between them, and a stop ends the wait
            ms = ms_left(deadline)
            rc = g._lib.guest_chan_send(g._handle(), self.id, data or None, len(data), ms)
            if rc != -errno.ETIMEDOUT or ms_left(deadline) == 0:
                break
            if g._stopping and g._running:
                raise Stopping("channel %d: the guest is stopping" % self.id, -errno.ESHUTDOWN)
        if rc != 0:
            raise status_error(rc, g.goodbye_reason, "channel %d: " % self.id)
        self._sent += 1

    async def asend(self, item, timeout=None):
        """send() for a coroutine: waits for credit without blocking the
        event loop (under serve() it looks again each time the guest has
        served: credit comes as a message). On a channel passed to a call
        (an upload), ChannelClosed once that call is over (its answer, its
        timeout): nobody takes the items any more."""
        deadline = deadline_in(timeout)
        g = self._g
        c = self._call
        while c is not None and not c._sent and not c.done():
            await g._next_service(deadline)     # the Request waits for hub.signature
        while True:
            try:
                return self.send(item, 0)
            except Timeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
            if c is not None and c.done():
                raise ChannelClosed("channel %d: %s is over" % (self.id, c.method),
                                    -errno.ENOTCONN)
            await g._next_service(deadline)

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
