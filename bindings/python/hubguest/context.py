# SPDX-License-Identifier: MIT OR Apache-2.0
"""A call's deadline and trace context (doc/protocol.md, "Call
metadata"): what a handler reads of the call it serves (current_call()),
and what the calls it makes carry: by default the handled call's deadline
(the earlier of it and the call's own timeout) and its trace (the same
trace-id, a new parent-id), held in a context variable, so that an async
handler's tasks inherit them too; Guest.call's deadline= and trace= say
otherwise for one call.

Deadlines are time.monotonic() seconds here: CLOCK_MONOTONIC, the hub's
clock, shared by every process on the host."""

import contextvars
import os
import re
import time

from ._wait import NS_MAX, ns, seconds

class _Marker:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "hubguest." + self.name


# deadline=/trace= left as they are: the handled call's.
INHERIT = _Marker("INHERIT")
# trace=NEW_TRACE: a new trace (random ids, sampled).
NEW_TRACE = _Marker("NEW_TRACE")

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})\Z")


def _valid_traceparent(t):
    m = _TRACEPARENT.match(t) if isinstance(t, str) else None
    return m is not None and m.group(1) != "0" * 32 and m.group(2) != "0" * 16


class CallInfo:
    """The call a handler serves: deadline_ns (CLOCK_MONOTONIC ns, 0: none)
    and trace (its W3C traceparent, None: none), as the caller sent them."""
    __slots__ = ("deadline_ns", "trace")

    def __init__(self, deadline_ns, trace):
        self.deadline_ns = deadline_ns
        self.trace = trace

    @property
    def deadline(self):
        """The deadline as time.monotonic() seconds, None for none."""
        return self.deadline_ns / 1e9 if self.deadline_ns else None

    def remaining(self):
        """Seconds left to the deadline (0 once it passed), None for none."""
        if not self.deadline_ns:
            return None
        return max(0.0, (self.deadline_ns - time.monotonic_ns()) / 1e9)

    @property
    def trace_id(self):
        """The trace's id (32 hex digits), None for no trace."""
        return self.trace[3:35] if self.trace else None

    def __repr__(self):
        return "CallInfo(deadline_ns=%d, trace=%r)" % (self.deadline_ns, self.trace)


_current = contextvars.ContextVar("hubguest_call", default=None)


def current_call():
    """Inside a handler (an async def one and its tasks too): the CallInfo
    of the call it serves, its deadline and trace. None outside one."""
    return _current.get()


def outgoing(timeout, deadline=INHERIT, trace=INHERIT):
    """(deadline_ns, traceparent or None) of a call made now: deadline
    (time.monotonic() seconds, None: none) and trace (a traceparent sent
    as it is, None: none, NEW_TRACE) or the handled call's; timeout
    (seconds, None) bounds the deadline. Raises ValueError for a trace
    that is not a traceparent."""
    cur = _current.get()
    if deadline is INHERIT:
        d = cur.deadline_ns if cur is not None else 0
    elif deadline is None:
        d = 0
    else:
        d = max(1, ns(seconds(deadline, "deadline", "time.monotonic() seconds")))
    if timeout is not None:
        own = min(NS_MAX, time.monotonic_ns() + ns(seconds(timeout)))
        d = min(d, own) if d else own
    if trace is INHERIT:
        t = None
        if cur is not None and cur.trace:
            # the same trace, a new parent-id: this call's
            t = "00-%s-%s-%s" % (cur.trace[3:35], os.urandom(8).hex(), cur.trace[53:55])
    elif trace is None:
        t = None
    elif trace is NEW_TRACE:
        t = "00-%s-%s-01" % (os.urandom(16).hex(), os.urandom(8).hex())
    elif _valid_traceparent(trace):
        t = trace
    else:
        raise ValueError("trace must be a W3C traceparent, 00-<32 hex>-<16 hex>-<2 hex> "
                         "(lower-case, ids not zero), None or hubguest.NEW_TRACE: %r"
                         % (trace,))
    return d, t
