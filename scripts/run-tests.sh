#!/bin/bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# make check's runner: independent tests side by side, JOBS at a time, the
# slowest of the last run first, each one's output in a log of its own; a
# line per test as it ends, then every failed one's command and log in
# full. Usage: run-tests.sh [-j JOBS] LOGDIR NAME=COMMAND...
# COMMAND runs under sh -c with its output in LOGDIR/NAME.log;
# LOGDIR/times keeps each NAME's seconds for the next run's order. JOBS:
# three per CPU by default, as most tests wait on hubs and guests most of
# the time (on two CPUs, 4 took 144 s, 6 101 s, 8 93 s). Exit 0 when all
# passed, 1 otherwise.
set -u
prog=run-tests
usage() {
	echo "usage: $prog [-j JOBS] LOGDIR NAME=COMMAND..." >&2
	exit 2
}
jobs=$(($(nproc) * 3))
while getopts j: opt; do
	case $opt in
	j) case $OPTARG in ''|*[!0-9]*|0) usage ;; esac; jobs=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
logdir=$1
shift
mkdir -p "$logdir" || exit 1

declare -A cmd last took status pid_of
names=()
for arg; do
	name=${arg%%=*}
	case $name in ''|*[!A-Za-z0-9_.-]*) echo "$prog: $arg: not NAME=COMMAND" >&2; usage ;; esac
	cmd[$name]=${arg#*=}
	names+=("$name")
done
# The slowest first, so the last to end is not a long one started late;
# a test not in the last run's times first of all (it may be long).
if [ -f "$logdir/times" ]; then
	while read -r name secs; do last[$name]=$secs; done < "$logdir/times"
fi
order=$(for name in "${names[@]}"; do echo "${last[$name]:-1e9} $name"; done |
	sort -s -k1,1gr | cut -d' ' -f2)

# Each test a process group of its own (job control), so that an
# interrupted run takes every test's processes with it.
set -m
stop() {
	echo "$prog: interrupted: stopping ${pid_of[*]}" >&2
	for pid in "${!pid_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
	{ wait; } 2>/dev/null
	exit 130
}
trap stop INT TERM HUP

usec() { echo "${EPOCHREALTIME/./}"; }
declare -A began
running=0 failed=()
t0=$(usec)
# Waits for one test to end and says how it went.
reap() {
	local pid rc name secs

	wait -n -p pid
	rc=$?
	name=${pid_of[$pid]}
	unset "pid_of[$pid]"
	running=$((running - 1))
	secs=$((($(usec) - began[$name]) / 100000))
	took[$name]=$((secs / 10)).$((secs % 10))
	status[$name]=$rc
	if [ "$rc" -eq 0 ]; then
		printf 'ok   %-16s %6s s\n' "$name" "${took[$name]}"
	else
		printf 'FAIL %-16s %6s s (exit %d, log %s)\n' "$name" "${took[$name]}" "$rc" \
			"$logdir/$name.log"
		failed+=("$name")
	fi
}
for name in $order; do
	while [ "$running" -ge "$jobs" ]; do reap; done
	began[$name]=$(usec)
	sh -c "${cmd[$name]}" > "$logdir/$name.log" 2>&1 < /dev/null &
	pid_of[$!]=$name
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do reap; done

# this run's times, and the last run's for tests not run this time
for name in "${names[@]}"; do last[$name]=${took[$name]}; done
for name in "${!last[@]}"; do echo "$name ${last[$name]}"; done | sort > "$logdir/times.tmp" &&
	mv "$logdir/times.tmp" "$logdir/times"

for name in "${failed[@]}"; do
	echo
	echo "==== $name failed (exit ${status[$name]}): ${cmd[$name]}"
	cat "$logdir/$name.log"
	echo "==== end of $name"
done
secs=$((($(usec) - t0) / 1000000))
echo "$prog: $((${#names[@]} - ${#failed[@]})) passed, ${#failed[@]} failed, in ${secs} s" \
	"($jobs at a time; logs in $logdir)"
[ "${#failed[@]}" -eq 0 ]
