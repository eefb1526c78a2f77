#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""pysock N: what a Python plugin would use instead of hub, the baseline
for the Python rows of make bench: N round trips of 8 bytes between two
Python processes over a UNIX socketpair, each answer checked.
Prints "median_ns=.. p99_ns=..". """
import os
import socket
import sys
import time

n = int(sys.argv[1])
a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    a.close()
    while True:
        m = b.recv(64)
        if not m:
            os._exit(0)
        b.sendall(m)
b.close()
msg = b"8 bytes!"
times = []
for _ in range(n):
    t0 = time.perf_counter_ns()
    a.sendall(msg)
    if a.recv(64) != msg:
        sys.exit("pysock: the echo differs")
    times.append(time.perf_counter_ns() - t0)
a.close()
os.waitpid(pid, 0)
times.sort()
print("median_ns=%d p99_ns=%d" % (times[n // 2], times[n * 99 // 100]))
