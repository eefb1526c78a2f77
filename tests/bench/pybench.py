#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""pybench: the Python binding's data path, measured from inside a Python
guest (make bench, tests/bench/run.sh). Methods, named pyb.x:
  rtt METHOD N SIZE   N calls of METHOD (hub.ping, or a guest's echo) with a
                      SIZE-byte bytes argument, one at a time, each answer
                      checked: "median_ns=.. p99_ns=.."
  echo BYTES          its argument back (what a C guest calls: routed)
  source BYTES        BYTES from hub.source read as an iterator:
                      "mb_per_s=.. items=.." """
import time

import hubguest

g = hubguest.attach()


@g.method("pyb.echo", "bytes->bytes")
def echo(data):
    return data


@g.method("pyb.rtt", "str,u64,u64->str")
def rtt(method, n, size):
    arg = bytes(i % 251 for i in range(size))
    sig = "bytes->bytes"        # both targets; no lookup inside the loop
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        if g.call(method, arg, timeout=10, signature=sig) != arg:
            raise ValueError("%s answered something else" % method)
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    return "median_ns=%d p99_ns=%d" % (times[n // 2], times[n * 99 // 100])


@g.method("pyb.source", "u64->str")
def source(nbytes):
    got = items = 0
    t0 = time.perf_counter_ns()
    for chunk in g.stream("hub.source", nbytes):
        got += len(chunk)
        items += 1
    dt = time.perf_counter_ns() - t0
    if got != nbytes:
        raise ValueError("hub.source sent %d bytes of %d" % (got, nbytes))
    return "mb_per_s=%.1f items=%d" % (nbytes / 1e6 / (dt / 1e9), items)


g.run()
