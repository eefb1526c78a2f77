# SPDX-License-Identifier: MIT OR Apache-2.0
"""Upload: a handler's rx<T> argument, the stream its caller sends, read
as an iterator (for) or an async iterator (async for), each item decoded
as T. The channel is accepted (guest_chan_accept) when the iteration
begins: the caller sends nothing before, and a handler that never reads
it drops it by answering.

It knows its guest only by its attributes (_lib, _h, _rx, _c_item,
_c_end, _serve_slice): it imports no module of the binding but codec,
errors and _items."""

import errno

from ._items import Items
from .codec import decode
from .errors import ChannelClosed, InvalidPayload, Timeout, status_error

_END = object()     # the end of the items (None may be one: an opt<T>)


class Upload(Items):
    """The items a handler's caller sends on its rx<T> argument: iterate
    over it once (for in a plain handler, async for in an async one),
    each item decoded as T; the iteration ends at the caller's Close and
    raises ChannelClosed at its Reset (or when it went). Credit goes back
    to the caller as the loop takes items: a slow handler holds the
    caller back, and at most the hub's initial_credit bytes of items wait
    here. Leaving the loop early (break), or stop(), tells the caller to
    stop. timeout (seconds, None: for ever) bounds each wait for an
    item."""

    def __init__(self, guest, chan_id, item_type, timeout=None):
        self._g = guest
        self.id = chan_id
        self.item_type = item_type
        self.timeout = timeout
        self._items = []
        self._head = 0
        self._token = None
        self._accepted = False
        self._stopped = False
        self.ended = None       # 0 Close, -ECONNRESET Reset, -EPIPE hub gone
        self._waiter = None

    def __repr__(self):
        return "<hubguest.Upload %d rx<%s>>" % (self.id, self.item_type)

    def _accept(self):
        if self._accepted:
            return
        self._accepted = True
        g = self._g
        self._token = next(g._rx_tokens)
        g._rx[self._token] = self      # before: an ended upload ends in accept
        rc = g._lib.guest_chan_accept(g._handle(), self.id, g._c_item, g._c_end, self._token)
        if rc == 0 and self.ended is None:
            # held: an item's credit goes back when the loop takes it
            rc = g._lib.guest_chan_hold(g._h, self.id)
        if rc != 0:
            g._rx.pop(self._token, None)
            self.ended = rc
            raise status_error(rc, g.goodbye_reason, "upload on channel %d: " % self.id)

    # called from libguest (Guest._on_item, _on_end)
    def _item(self, data):
        self._items.append(data)
        self._wake()

    def _end(self, status):
        self.ended = status
        self._wake()

    def _wake(self):
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _next_ready(self):
        """(True, item), (True, _END) at the end, (False, None) while
        neither has come."""
        if self._head < len(self._items):
            data = self._items[self._head]
            self._items[self._head] = None
            self._head += 1
            if self._head > 1024 and self._head * 2 > len(self._items):
                del self._items[:self._head]
                self._head = 0
            if data and self.ended is None:
                self._g._rx_consumed(self.id, len(data))
            try:
                return True, decode(self.item_type, data)
            except ValueError as e:
                self.stop()
                raise InvalidPayload("upload on channel %d: an item does not decode as "
                                     "%s: %s" % (self.id, self.item_type, e),
                                     -errno.EBADMSG) from None
        if self.ended is not None:
            return True, _END
        return False, None

    def _outcome(self):
        if self.ended == -errno.ECONNRESET and not self._stopped:
            raise ChannelClosed("the caller reset its upload on channel %d" % self.id,
                                -errno.ECONNRESET)
        if self.ended not in (0, -errno.ECONNRESET):
            raise status_error(self.ended, self._g.goodbye_reason,
                               "upload on channel %d: " % self.id)

    def stop(self):
        """Tells the caller to stop sending (what it sent meanwhile is
        dropped)."""
        if self._stopped or self.ended is not None or not self._accepted:
            return
        self._stopped = True
        g = self._g
        if g._h is not None:
            g._lib.guest_chan_reset(g._h, self.id)

    def _begin(self):
        self._accept()

    def _is_last(self, item):
        return item is _END

    def _each_wait(self):
        return self.timeout

    def _late(self):
        return Timeout("upload on channel %d: no item in time" % self.id, -errno.ETIMEDOUT)
