# SPDX-License-Identifier: MIT OR Apache-2.0
"""Serving a guest: the traffic libguest has for it served in a blocking
wait (run(), and a call's or a stream's wait), in a loop of the caller's
own (service() when fileno() is readable), or in a running asyncio loop
(await serve(), which async handlers and awaited calls need). SIGTERM and
SIGINT stop it; an exception a callback cannot raise through C is kept
and raised where the serving returns.

Serving is one of Guest's bases (guest.py): it works on the Guest's
handle and loop state (each time it has served, it ends the
subscriptions of Topics dropped unclosed and wakes the coroutines
waiting for the hub, _next_service) and imports nothing of the binding
but errors and _wait."""

import asyncio
import errno
import signal
import sys
import threading
import time
import traceback

from ._wait import SLICE_MS
from .errors import Error, HubGone, Stopping, status_error


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


class Serving:
    """A Guest's service loop: run(), serve(), service() and stop()."""

    def _serve_slice(self, ms):
        """Waits up to ms for traffic and serves it (guest_service_wait).
        Inside run() or serve() once stopping: Stopping instead, so that a
        handler's wait ends and the loop can (libguest's guest_stop does
        the same for C guests)."""
        if self._stopping and self._running:
            raise Stopping("the guest is stopping", -errno.ESHUTDOWN)
        rc = self._lib.guest_service_wait(self._handle(), ms)
        self._unsubscribe_dropped()
        self._wake_served()
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
        self._wake_served()             # async waiters see it

    def service(self):
        """guest_service: serves what is there without blocking (for a loop
        of your own that polls fileno()). Call it when fileno() is
        readable, at least every service_timeout() seconds (the
        heartbeat), and last before your loop sleeps."""
        rc = self._lib.guest_service(self._handle())
        self._unsubscribe_dropped()
        self._wake_served()
        if rc != 0:
            self._loop_error(rc)
        self._reraise()

    def _wake_served(self):
        """Served (or stopping): the coroutines waiting in _next_service
        look again."""
        waiters, self._served_waiters = self._served_waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    async def _next_service(self, deadline=None):
        """Waits until this guest has served again (its fd rang: the
        hub's next message, be it credit, an answer or an event; or its
        heartbeat), or until deadline (monotonic seconds; None: no limit):
        how a coroutine waits for what only the hub brings. Outside
        serve() nobody may serve for it: it looks again in 1 ms."""
        if self._loop is None:
            await asyncio.sleep(0.001)
            return
        fut = self._loop.create_future()
        self._served_waiters.append(fut)
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        await asyncio.wait({fut}, timeout=wait)

    def service_timeout(self):
        """Seconds until service() must run again (heartbeat), or None."""
        ms = self._lib.guest_service_timeout_ms(self._handle())
        return None if ms < 0 else ms / 1000.0

    def run(self, detach=True):
        """Serves until stop(), SIGTERM or SIGINT (which stop it cleanly), or
        the hub's goodbye; then detaches (unless detach=False). With an async
        handler or subscriber registered it runs an asyncio loop (serve()).
        Raises HubGone if hubd died, Ended if the hub ended this guest."""
        if (any(m.is_async for m in self._methods.values()) or self._topics_need_loop()) \
                and self._loop is None:
            return asyncio.run(self.serve(detach=detach))
        self._stopping = False
        old = _install_signals(self.stop)
        self._running = True
        try:
            while not self._stopping:
                try:
                    self._serve_slice(SLICE_MS)
                except Stopping:
                    break         # SIGTERM came as the slice began
                except HubGone as e:
                    if e.code == -errno.EPIPE and self._stopping:
                        break     # the hub said goodbye: a clean end
                    raise
        finally:
            self._running = False
            _restore_signals(old)
            if detach:
                self.detach()
        self._reraise()

    async def serve(self, detach=True):
        """Serves the guest in the running asyncio loop until stop(),
        SIGTERM or SIGINT, or the hub's goodbye; then detaches (unless
        detach=False). The loop watches fileno() and runs guest_service
        when it is readable and at every heartbeat; async handlers run as
        tasks, answered when they finish. A handler's blocking wait (a
        sync handler's call, say) ends with Stopping on SIGTERM, as in
        run(), though the loop cannot run until it returns. On a stop the
        async handlers still running are cancelled where they wait (a call
        they await gets a Cancel) and answer "METHOD: the guest is
        stopping" (one that catches the cancel answers what it returns);
        serve() returns once they all have, a call that comes meanwhile
        answered so at once."""
        loop = asyncio.get_running_loop()
        if self._loop is not None:
            raise Error("the guest is served already")
        self._loop = loop
        self._stopping = False
        self._stop_future = loop.create_future()
        fd = self.fileno()

        def stopping():
            # Python runs it between bytecodes, also inside a handler's
            # blocking wait (its slices), where the loop's own signal
            # handling would wait for the loop: the wait sees _stopping
            # at once, the loop stops when it runs again
            self._stopping = True
            loop.call_soon_threadsafe(self.stop)
        old = _install_signals(stopping)
        self._running = True
        failure = []

        draining = []       # once stopped: its handlers still finish

        def service():
            if self._h is None or (self._stop_future.done() and not draining):
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
            if self._stopping and not failure:
                draining.append(True)
                await self._drain(service)
        finally:
            loop.remove_reader(fd)
            self._running = False
            _restore_signals(old)
            self._loop = None
            self._stop_future = None
            self._wake_served()
            if detach:
                self.detach()     # handlers still running: never answered
        if failure:
            raise failure[0]

    async def _drain(self, service):
        """serve()'s end: each async handler still running is cancelled
        and waited for, the guest served meanwhile (their answers go out,
        the heartbeat goes on); hubd's stop_grace bounds a handler that
        does not end."""
        tasks = list(self._handler_tasks)
        for t in tasks:
            t.cancel()
        while self._h is not None and any(not t.done() for t in tasks):
            beat = self.service_timeout()
            await asyncio.wait(tasks, timeout=0.02 if beat is None else max(beat, 0.001))
            service()

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

    def _future_of(self, call):
        """A future of serve()'s loop that call's outcome sets: what
        awaiting a Call waits on."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            raise Error("await a call in a guest served by serve() (or use result())")
        fut = loop.create_future()
        # whoever awaited it cancelled (a task cancelled, wait_for's
        # timeout, serve()'s stop): the callee is told, as on a timeout
        fut.add_done_callback(lambda f: call.cancel() if f.cancelled() else None)

        def done(c):
            if fut.done():
                return
            if c._exc is not None:
                fut.set_exception(c._exc)
            else:
                fut.set_result(c._value)
        call.add_done_callback(done)
        return fut
