# SPDX-License-Identifier: MIT OR Apache-2.0
"""Items read from a channel with for or async for: what Stream (the
items of a call's chan<T>) and Upload (a handler's rx<T>) share.

A reader gives: _begin() (called as the iteration begins),
_next_ready() -> (ready, item), _is_last(item), _each_wait() (seconds a
wait for the next item may take, None: for ever), _late() (the Timeout to
raise when one took longer), stop(), _outcome() (after the last item), and
the attributes _g (its guest, for _serve_slice) and _waiter (the future an
async iteration waits on, which the reader's callbacks complete)."""

import asyncio

from ._wait import deadline_in, ms_left


class Items:
    """Iterate once, with for in a plain handler or async for in an async
    one; leaving the loop early stops the sender."""

    def __iter__(self):
        self._begin()
        return self._gen()

    def _gen(self):
        finished = False
        try:
            deadline = deadline_in(self._each_wait())
            while True:
                ready, item = self._next_ready()
                if ready:
                    if self._is_last(item):
                        break
                    deadline = deadline_in(self._each_wait())
                    yield item
                    continue
                ms = ms_left(deadline)
                if ms == 0:
                    self.stop()
                    raise self._late()
                self._g._serve_slice(ms)
            finished = True
        finally:
            if not finished:
                self.stop()
        self._outcome()

    def __aiter__(self):
        self._begin()
        return self._agen()

    async def _agen(self):
        loop = asyncio.get_running_loop()
        finished = False
        try:
            while True:
                ready, item = self._next_ready()
                if ready:
                    if self._is_last(item):
                        break
                    yield item
                    continue
                self._waiter = loop.create_future()
                try:
                    await asyncio.wait_for(self._waiter, self._each_wait())
                except asyncio.TimeoutError:
                    self.stop()
                    raise self._late() from None
                finally:
                    self._waiter = None
            finished = True
        finally:
            if not finished:
                self.stop()
        self._outcome()

    def collect(self):
        """All the items as a list."""
        return list(self)
