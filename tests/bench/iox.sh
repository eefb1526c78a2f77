# SPDX-License-Identifier: MIT OR Apache-2.0
# Eclipse iceoryx 2.0 (Debian's iceoryx) as a bench peer; sourced by run.sh.
#   bench_iox BUILD_DIR N [ps]
# Starts a RouDi of its own, runs tests/bench/iox (request/response, 8-byte
# request and reply) busy-polling and in a WaitSet, then the WaitSet one
# with every process on CPU 0. Prints iox_spin_median_ns= iox_spin_p99_ns=
# iox_ws_median_ns= iox_ws_p99_ns= iox_ws_1cpu_median_ns= for the variants
# that ran, and iox_error= (the first failure) when the peer or a variant
# could not run; returns 0 either way. With ps, tests/bench/ioxps instead
# (publish-subscribe, pubsub.sh's runs and its ps_peer): iox_drop_N_* and
# iox_block_N_* for N in PS_NS, then iox_1cpu_4_* on CPU 0.
#
# RouDi 2.0 has no private domain: its names are fixed (/dev/shm/iceoryx_mgmt,
# a data segment named after its group, /tmp/roudi and its lock files, and
# a /tmp socket per client). Only its memory pools come from our config
# file. So it runs only when no other RouDi does, and what it leaves behind
# is removed only when it was ours (it held the lock, said it was ready).

bench_iox() {
	# a subshell: its own trap, nothing of run.sh's set -e or variables
	(
	set +e
	b=$1 n=$2 what=${3:-} tmp="" roudi="" ours=0 clean=1 error=""
	# roudi's data segment: named after the group it runs as
	seg=/dev/shm/$(id -gn)
	fixed="/dev/shm/iceoryx_mgmt $seg /tmp/roudi /tmp/roudi.lock /tmp/iox-unique-roudi.lock"

	stop() {
		if [ -n "$roudi" ]; then
			# a clean stop only when every client left cleanly: RouDi
			# signals the processes it still lists, and a dead one's
			# pid may be someone else's by now
			if [ "$clean" = 1 ]; then
				kill -INT "$roudi" 2>/dev/null
				for _ in $(seq 60); do
					kill -0 "$roudi" 2>/dev/null || break
					sleep 0.05
				done
			fi
			kill -KILL "$roudi" 2>/dev/null
			wait "$roudi" 2>/dev/null
		fi
		if [ "$ours" = 1 ]; then
			rm -f $fixed /tmp/hubbench-iox-[cs]-* 2>/dev/null
		fi
		[ -n "$tmp" ] && rm -rf "$tmp"
	}
	trap stop EXIT
	trap 'exit 1' INT TERM HUP
	fail() { echo "iox_error=$*"; exit 0; }
	val() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }

	[ -x "$b/tests/bench/iox${what}" ] || fail "not built (make bench builds it)"
	command -v iox-roudi >/dev/null 2>&1 || fail "no iox-roudi (Debian package iceoryx)"
	pgrep -x iox-roudi >/dev/null && fail "another RouDi is running"
	if [ -e /tmp/roudi.lock ] && ! flock -n /tmp/roudi.lock true 2>/dev/null; then
		fail "another RouDi holds /tmp/roudi.lock"
	fi

	tmp=$(mktemp -d /tmp/hub-bench-iox-XXXXXX) || fail "mktemp"
	# one small pool: 8 and 64-byte payloads and their headers; ioxps's
	# 16 subscribers' queues of 256 hold up to 4096
	printf '[general]\nversion = 1\n\n[[segment]]\n\n[[segment.mempool]]\nsize = 128\ncount = 8192\n' \
		> "$tmp/roudi.toml"
	# no core file from an abort at shutdown; no process monitoring
	(ulimit -c 0; exec iox-roudi -c "$tmp/roudi.toml" -m off) > "$tmp/roudi.log" 2>&1 &
	roudi=$!
	for _ in $(seq 100); do
		grep -q "RouDi is ready for clients" "$tmp/roudi.log" && { ours=1; break; }
		kill -0 "$roudi" 2>/dev/null || break
		sleep 0.05
	done
	if [ "$ours" != 1 ]; then
		# not ours, whatever it left: another RouDi may own those names
		fail "RouDi did not start: $(tail -1 "$tmp/roudi.log" | tr -cd '[:print:]' | cut -c1-120)"
	fi

	run() {	# run KEY MODE [taskset -c 0]: one variant, bounded
		local key=$1 mode=$2 out rc why
		shift 2
		out=$(timeout 30 "$@" "$b/tests/bench/iox" "$mode" "$n" 2>"$tmp/err")
		rc=$?
		if [ $rc -ne 0 ] || [ -z "$(val median_ns "$out")" ]; then
			clean=0
			why=$(tail -1 "$tmp/err" | tr -cd '[:print:]' | cut -c1-120)
			[ $rc = 124 ] && why="no result in 30 s"
			# the first failure is the one reported
			[ -n "$error" ] || error="$mode${1:+ on one CPU}: ${why:-exit status $rc}"
			return 1
		fi
		echo "${key}_median_ns=$(val median_ns "$out")"
		[ "$key" = iox_ws_1cpu ] || echo "${key}_p99_ns=$(val p99_ns "$out")"
	}
	if [ "$what" = ps ]; then
		# runs numbered N (drop-oldest), 100 + N (block), 999 (CPU 0)
		for k in $PS_NS; do
			ps_peer "iox_drop_$k" "$tmp/ps" "$k" "$k" \
				"$b/tests/bench/ioxps" drop-oldest "$tmp/ps" "$k" || clean=0
			ps_peer "iox_block_$k" "$tmp/ps" $((100 + k)) "$k" \
				"$b/tests/bench/ioxps" block "$tmp/ps" $((100 + k)) || clean=0
		done
		taskset -a -p -c 0 "$roudi" >/dev/null 2>&1
		ps_peer iox_1cpu_4 "$tmp/ps" 999 4 taskset -c 0 \
			"$b/tests/bench/ioxps" drop-oldest "$tmp/ps" 999 || clean=0
		exit 0
	fi
	# one failing variant does not keep the others from running
	run iox_spin spin
	run iox_ws ws
	# every process on CPU 0, RouDi's threads too (they matter little)
	taskset -a -p -c 0 "$roudi" >/dev/null 2>&1
	run iox_ws_1cpu ws taskset -c 0
	[ -z "$error" ] || echo "iox_error=$error"
	exit 0
	)
	return 0
}
