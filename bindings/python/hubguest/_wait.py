# SPDX-License-Identifier: MIT OR Apache-2.0
"""How long a blocking wait lasts (a call's result, a Sender's first item,
a Stream's next item, run()): a timeout's deadline, and the slices the
wait serves in until then."""

import time

# A blocking wait serves in slices this long at most, so that a signal's
# Python handler (SIGTERM: stop) runs soon: libguest's waits go on through
# EINTR, and Python runs signal handlers only between bytecodes.
SLICE_MS = 100


def deadline_in(timeout):
    """The monotonic time timeout seconds from now (None: no deadline)."""
    if timeout is None:
        return None
    if timeout < 0:
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
