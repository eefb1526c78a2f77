# SPDX-License-Identifier: MIT OR Apache-2.0
# Sourced by run.sh. bench_dbus BUILD_DIR [N]: N synchronous D-Bus method
# calls (sd-bus, Echo(t) -> t) through a private dbus-daemon, then through a
# bare dbus-broker when it is installed, each bus on a socket in a temp dir
# of its own, never the system's or the session's bus. Prints
# dbus_daemon_median_ns= dbus_daemon_p99_ns= and dbus_broker_median_ns=
# dbus_broker_p99_ns=, or dbus_error=REASON for what could not run; returns
# 0 either way. Every daemon is stopped and the temp dir removed, whatever
# happens: the body is a subshell with its own EXIT trap (run.sh's stays).
# bench_dbus BUILD_DIR N ps: D-Bus signals instead (tests/bench/dbusps,
# pubsub.sh's runs and its ps_peer) through a dbus-daemon whose queues are
# bounded: it reads no more from a sender while 64 KiB of its messages
# wait, and drops what a subscriber's full queue (48 KiB, about 256
# signals) has no room for; prints dbus_N_* for N in PS_NS, then
# dbus_1cpu_4_* with the daemon and every process on CPU 0.
bench_dbus() (
	local bin=$1/tests/bench/dbus${3:-} n=${2:-10000} what=${3:-} dir pids=() out limits=""

	# alive PID: running, not a zombie left for someone else to reap
	alive() { [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" ] &&
		[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
	# stop PID: TERM, up to 2 s to go, then KILL
	stop() {
		kill "$1" 2>/dev/null || return 0
		for _ in $(seq 40); do alive "$1" || return 0; sleep 0.05; done
		kill -9 "$1" 2>/dev/null || true
	}
	cleanup() {
		local p
		for p in "${pids[@]}"; do stop "$p"; done
		wait 2>/dev/null
		if [ -n "${dir:-}" ]; then rm -rf "$dir"; fi
	}
	trap 'rc=$?; cleanup; exit $rc' EXIT
	trap 'exit 130' INT TERM HUP
	# why LOG: its last line, for a one-line error
	why() { tail -n 1 "$1" 2>/dev/null | tr -d '\r' | cut -c 1-120; }
	# calls NAME ADDRESS LOG: the bench's figures as NAME_median_ns=.. NAME_p99_ns=..
	calls() {
		local r
		if ! r=$("$bin" "$2" "$n" 2>>"$3"); then
			echo "dbus_error=$1: $(why "$3")"
			return 0
		fi
		echo "dbus_$1_median_ns=$(sed -n 's/.*median_ns=\([0-9]*\).*/\1/p' <<<"$r")"
		echo "dbus_$1_p99_ns=$(sed -n 's/.*p99_ns=\([0-9]*\).*/\1/p' <<<"$r")"
	}

	if [ ! -x "$bin" ]; then
		echo "dbus_error=not built (libsystemd-dev missing?)"
		return 0
	fi
	if ! command -v dbus-daemon >/dev/null; then
		echo "dbus_error=dbus-daemon not installed"
	else
		dir=$(mktemp -d /tmp/hub-bench-dbus-XXXXXX)
		[ "$what" = ps ] && limits='<limit name="max_incoming_bytes">65536</limit>
		  <limit name="max_outgoing_bytes">49152</limit>'
		# a session-like bus: anyone may own names and send anything
		cat > "$dir/daemon.conf" <<-CONF
		<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
		 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
		<busconfig>
		  <type>session</type>
		  <listen>unix:path=$dir/daemon.sock</listen>
		  <auth>EXTERNAL</auth>
		  $limits
		  <policy context="default">
		    <allow send_destination="*" eavesdrop="true"/>
		    <allow eavesdrop="true"/>
		    <allow own="*"/>
		  </policy>
		</busconfig>
		CONF
		dbus-daemon --config-file="$dir/daemon.conf" --nofork --print-address=3 \
			3>"$dir/daemon.addr" 2>"$dir/daemon.log" </dev/null &
		pids+=($!)
		for _ in $(seq 100); do
			[ -s "$dir/daemon.addr" ] || ! alive "${pids[-1]}" && break
			sleep 0.05
		done
		if [ -s "$dir/daemon.addr" ] && [ "$what" = ps ]; then
			out=$(head -n 1 "$dir/daemon.addr")
			for k in $PS_NS; do
				ps_peer "dbus_$k" "$dir/ps" "$k" "$k" "$bin" "$out" "$dir/ps" "$k" || true
			done
			taskset -a -p -c 0 "${pids[-1]}" >/dev/null 2>&1
			ps_peer dbus_1cpu_4 "$dir/ps" 999 4 taskset -c 0 "$bin" "$out" "$dir/ps" 999 || true
			return 0
		elif [ -s "$dir/daemon.addr" ]; then
			calls daemon "$(head -n 1 "$dir/daemon.addr")" "$dir/daemon.log"
		else
			echo "dbus_error=dbus-daemon did not start: $(why "$dir/daemon.log")"
		fi
	fi

	# dbus-broker-launch needs systemd; the broker itself needs only a
	# controller on a socketpair, which the bench program plays
	if ! command -v dbus-broker >/dev/null; then
		echo "dbus_error=dbus-broker not installed"
		return 0
	fi
	[ -n "${dir:-}" ] || dir=$(mktemp -d /tmp/hub-bench-dbus-XXXXXX)
	"$bin" broker "$dir/broker.sock" >"$dir/broker.out" 2>"$dir/broker.log" </dev/null &
	pids+=($!)
	for _ in $(seq 100); do
		out=$(sed -n 's/^broker_pid=\([0-9]*\)$/\1/p' "$dir/broker.out")
		[ -n "$out" ] || ! alive "${pids[-1]}" && break
		sleep 0.05
	done
	if [ -z "$out" ]; then
		echo "dbus_error=dbus-broker did not start: $(why "$dir/broker.log")"
		return 0
	fi
	# the broker first: its controller then sees the hangup, reaps it, exits
	pids=("$out" "${pids[@]}")
	calls broker "unix:path=$dir/broker.sock" "$dir/broker.log"
)
