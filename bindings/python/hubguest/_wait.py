# SPDX-License-Identifier: MIT OR Apache-2.0
"""How long a blocking wait lasts (a call's result, a Sender's first item,
a Stream's next item, run()): a timeout's deadline, and the slices the
wait serves in until then."""

import time

# A blocking wait serves in slices this long at most, so that a signal's
# Python handler (SIGTERM: stop) runs soon: libguest's waits go on through
# EINTR, and Python runs signal handlers only between bytecodes.
SLICE_MS = 100
NS_MAX = (1 << 64) - 1      # a deadline in ns is a u64: later ones are this


def seconds(value, what="timeout", unit="a number of seconds"):
    """value, a number of seconds (an int or a float; inf for ever): a
    TypeError or ValueError naming what when it is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("%s must be %s or None, not %s" % (what, unit, type(value).__name__))
    if value != value:
        raise ValueError("%s is NaN, not a number of seconds" % what)
    return value


def ns(secs):
    """secs (seconds, maybe inf) as nanoseconds, at most NS_MAX."""
    return NS_MAX if secs * 1e9 >= NS_MAX else int(secs * 1e9)


def deadline_in(timeout):
    """The monotonic time timeout seconds from now (None: no deadline)."""
    if timeout is None:
        return None
    if seconds(timeout) < 0:
        raise ValueError("timeout must be >= 0 seconds (or None: no limit)")
    return time.monotonic() + timeout


def ms_left(deadline):
    """Milliseconds of the next wait slice: up to SLICE_MS, up to the
    deadline; 0 when it has passed."""
    if deadline is None:
        return SLICE_MS
    left = deadline - time.monotonic()
    if left <= 0:
        return 0
    return max(1, min(SLICE_MS, int(left * 1000 + 0.999)))
