#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# make bench: hub's data path against the alternatives, measured side by
# side in one run on this machine. Prints a table of every figure with its
# ratio to the baselines and the goal, writes results/bench.md, .dat, .png.
#   run.sh BUILD_DIR [--smoke]   (--smoke: tiny runs, for make check)
# BENCH_ONLY=nats: only the call across hub-nats, plain NATS and the local
# call over a lane they are compared with, into results/bench-nats.md;
# BENCH_ONLY=pubsub: only publish-subscribe (hub's topics, iceoryx, D-Bus
# signals), into results/bench-pubsub.md;
# BENCH_ONLY=wake: only sporadic calls (each after 5 ms of quiet, every
# process asleep) against the futex baseline (and beside it: the same on
# two CPUs, a UNIX socket ping-pong), WAKE_ROUNDS rounds (5), with the
# busy calls and idle CPU beside them, into results/bench-wake.md
set -euo pipefail
B=$(cd "$1" && pwd)
SMOKE=${2:-}
OUT=results
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/hub-bench-XXXXXX)
HUBS=()		# every process started here (hubds, NATS responders, ...)
LATE=()		# stopped after them: nats-servers (hub-nats says goodbye on NATS)
# running PID: not gone, not a zombie (ours, reaped at exit)
running() { local st; st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }
# stop_pids PID...: SIGTERM, up to 3 s to go (a hubd stops its guests
# first), then SIGKILL for what is left
stop_pids() {
	local pid left

	for pid in "$@"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
	for _ in $(seq 60); do
		left=0
		for pid in "$@"; do [ -n "$pid" ] && running "$pid" && left=1; done
		[ "$left" = 0 ] && break
		sleep 0.05
	done
	for pid in "$@"; do [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true; done
}
cleanup() {
	stop_pids "${HUBS[@]}"
	stop_pids "${LATE[@]}"
	rm -rf "$TMP" 2>/dev/null || true
}
trap cleanup EXIT

. "$(dirname "$0")/iox.sh"
. "$(dirname "$0")/dbus.sh"
. "$(dirname "$0")/nats.sh"
. "$(dirname "$0")/pubsub.sh"

if [ "$SMOKE" = --smoke ]; then
	N_PEER=500; N_RTT=2000; N_PP=2000; PIPE_MS=200; STREAM32=$((1 << 20)); BULK=$((32 << 20))
	IDLE_N=5; IDLE_S=1; NGUESTS=4; COPY_MB=64; RING_N=1000000
	LARGE=$((64 << 20)); POOL_N=1000; REPS=1; N_MT=2000; MT_W=200; FLOOD_MS=200
	N_NATS=50; NATS_ROUNDS=2; NATS_STREAM=$((1 << 20))
else
	N_PEER=20000; N_RTT=200000; N_PP=100000; PIPE_MS=2000; STREAM32=$((64 << 20)); BULK=$((2 << 30))
	IDLE_N=200; IDLE_S=10; NGUESTS=32; COPY_MB=2048; RING_N=50000000
	LARGE=$((2 << 30)); POOL_N=2000000; REPS=3; N_MT=500000; MT_W=10000; FLOOD_MS=2000
	N_NATS=1000; NATS_ROUNDS=5; NATS_STREAM=$((32 << 20))
fi

val() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", a / b }'; }
# median: of the numbers on stdin, one a line
median() { sort -g | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# best KEY max|min CMD...: CMD run REPS times (each short), the best of
# its KEY=value figures: the machine is shared and noisy, and both sides
# of a comparison get the same treatment
best() {
	local key=$1 how=$2 out
	shift 2
	for _ in $(seq "$REPS"); do
		out=$("$@")
		val "$key" "$out"
	done | sort -g | { [ "$how" = max ] && tail -1 || head -1; }
}
# must KEY=VALUE OUTPUT: the run checked itself and says so, else the bench fails
must() {
	grep -q "$1" <<<"$2" || { echo "bench: expected $1 in: $2" >&2; exit 1; }
}

# start_hub NAME HUB_KEYS GUEST_SECTIONS N: a hub on a private control
# socket (its lock beside it) with N guests up; sets CTL
start_hub() {
	local conf=$TMP/$1.conf
	printf '[hub]\ncontrol = %s/%s.sock\n%b\n%b' "$TMP" "$1" "$2" "$3" > "$conf"
	${PIN_HUB:-} "$B/hubd" -f "$conf" 2>"$TMP/$1.log" &
	HUBS+=($!)
	CTL="$B/hubctl -s $TMP/$1.sock -t 600"
	for _ in $(seq 200); do $CTL status >/dev/null 2>&1 && break; sleep 0.05; done
	for _ in $(seq 200); do
		[ "$($CTL -j peers | grep -o '"state":"up"' | wc -l)" -ge "$4" ] && return 0
		sleep 0.05
	done
	echo "bench: hub $1 did not come up" >&2; cat "$TMP/$1.log" >&2; exit 1
}

# The local call over a lane the bridge is compared with, on a hub of
# two guests with lanes on (the default): its keys, its guests
ONE_KEYS="max_guests = 3\nslot_size = 1040K\nslots_per_guest = 4\ninitial_credit = 4M"
LANE_GUESTS="[guest la]\nexec = $B/tests/bench/benchguest\nargs = --prefix la\n[guest lb]\nexec = $B/tests/bench/benchguest\nargs = --prefix lb\n"
# lane_pipe: la keeps 64 calls of lb.echo in flight on the lane hub
lane_pipe() {
	local r

	r=$($CTL call la.pipeto lb.echo "$PIPE_MS" 64 0); must failed=0 "$r"
	LANE_P64=$(val per_s "$r")
}
NATS_HEAD="| figure | hub | unit | baseline (same run) | ratio | goal |\n|---|---|---|---|---|---|"
# The two-guest hub whose guest to guest call goes through hubd: its
# guests (with ONE_KEYS)
ONE_GUESTS="[guest bench]\nexec = $B/tests/bench/benchguest\nlanes = no\n[guest peer]\nexec = $B/tests/bench/benchguest\nargs = --prefix bench2\nprovides = bench2.*\nlanes = no\n"
# lanes_open: how many lanes the hub CTL names has open (none: grep fails)
lanes_open() { $CTL -j lanes | { grep -o '"id":' || true; } | wc -l; }

# Wake from idle: WAKE_MS of quiet before each call, long enough for every
# process of the path to have gone to sleep.
WAKE_MS=5
# wake_base HOW KEY N [PIN...]: a baseline (HOW: futex-idle, futex-apart,
# futex-relay, socket-idle), N round trips each after the same quiet, run under PIN (taskset -c 0) if given: its KEY figure (rtt_ns the
# mean, median_ns the median), in ns
wake_base() {
	local how=$1 key=$2 n=$3 r

	shift 3
	r=$("$@" "$B/tests/bench/baseline" "$how" "$n" "$WAKE_MS"); must "$key=" "$r"
	val "$key" "$r"
}
# wake_call CALLER METHOD N: guest CALLER calls METHOD (8 B) N times, each
# after the same quiet, on the hub CTL names: the median, in ns
wake_call() {
	local r

	r=$($CTL call "$1.idle" "$2" "$3" "$WAKE_MS"); must median_ns= "$r"
	val median_ns "$r"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
cpu_all() { local t=0 p; for p in "$@"; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
# idle_cpu SECONDS HUBD GUEST...: hubd's CPU and all the guests' together
# over SECONDS of quiet, in % of a core (ticks of /proc/PID/stat); sets
# CPU_HUB and CPU_GUESTS
idle_cpu() {
	local s=$1 hubd=$2 hz h0 h1 g0 g1

	shift 2
	hz=$(getconf CLK_TCK)
	h0=$(cpu_ticks "$hubd"); g0=$(cpu_all "$@")
	sleep "$s"
	h1=$(cpu_ticks "$hubd"); g1=$(cpu_all "$@")
	CPU_HUB=$(awk -v d=$((h1 - h0)) -v hz="$hz" -v s="$s" 'BEGIN { printf "%.2f", 100 * d / hz / s }')
	CPU_GUESTS=$(awk -v d=$((g1 - g0)) -v hz="$hz" -v s="$s" 'BEGIN { printf "%.2f", 100 * d / hz / s }')
}

if [ "${BENCH_ONLY:-}" = nats ]; then
	echo "hub, two guests over a lane (the local call)..." >&2
	start_hub lane "$ONE_KEYS" "$LANE_GUESTS" 2
	r=$($CTL call la.rtt lb.echo "$N_RTT" 8); must p99_ns= "$r"
	LANE=$(val median_ns "$r")
	lane_pipe
	bench_nats
	bench_nats_topics
	{ printf '%b\n' "$NATS_HEAD"; nats_rows; nats_topics_rows; } > "$OUT/bench-nats.md"
	cat "$OUT/bench-nats.md"
	echo "bench: 1 passed, 0 failed"
	exit 0
fi

if [ "${BENCH_ONLY:-}" = pubsub ]; then
	bench_pubsub
	{ printf '%b\n' "$NATS_HEAD"; pubsub_rows; } > "$OUT/bench-pubsub.md"
	[ -n "$PS_ERR" ] && echo "peers that did not run: $PS_ERR" >> "$OUT/bench-pubsub.md"
	cat "$OUT/bench-pubsub.md"
	echo "bench: 1 passed, 0 failed"
	exit 0
fi

# BENCH_ONLY=wake: sporadic calls. Four hubs, two guests each: through
# hubd (lanes = no) and over a lane, each once as it comes and once with
# hubd and its guests on CPU 0; and a fifth of 32 guests, for the
# host-served call beside idle guests. Every round measures each row back to back
# (the futex baseline, on CPU 0 too, among them; the futex ping-pong pinned
# to two CPUs, what a wake onto an idle CPU costs; a socket ping-pong, what
# a host on sockets pays; a futex relay through a third process, the least
# any call through a middle costs), so each round gives its own ratio to the futex
# figure: the noise of this machine moves runs by 2x, and both sides of a
# ratio share a round's. Each round also measures
# the busy calls of the full bench, fewer of them, so a change to the wake
# path shows at once whether it costs the busy path.
if [ "${BENCH_ONLY:-}" = wake ]; then
	if [ "$SMOKE" = --smoke ]; then
		WAKE_ROUNDS=${WAKE_ROUNDS:-2}; WAKE_N=20; BUSY_N=2000; WAKE_IDLE_S=1
	else
		WAKE_ROUNDS=${WAKE_ROUNDS:-5}; WAKE_N=200; BUSY_N=20000; WAKE_IDLE_S=2
	fi
	echo "hubs: through hubd, over a lane, the two on CPU 0, and 32 guests..." >&2
	start_hub one "$ONE_KEYS" "$ONE_GUESTS" 2
	CTL_W=$CTL; HUBD_W=${HUBS[-1]}
	start_hub lane "$ONE_KEYS" "$LANE_GUESTS" 2
	CTL_WL=$CTL
	PIN_HUB="taskset -c 0" start_hub one0 "$ONE_KEYS" "$ONE_GUESTS" 2
	CTL_W0=$CTL
	PIN_HUB="taskset -c 0" start_hub lane0 "$ONE_KEYS" "$LANE_GUESTS" 2
	CTL_WL0=$CTL
	# a hub sized for many (max_guests 255) with 32 guests, 31 of them
	# idle: what a call after quiet costs for each guest beside its caller
	MANY=$(for k in $(seq 2 32); do printf '[guest m%d]\\nexec = %s\\nargs = --prefix m%d\\n' \
		"$k" "$B/tests/bench/benchguest" "$k"; done)
	start_hub many "$(sed 's/max_guests = 3/max_guests = 255/' <<<"$ONE_KEYS")" \
		"[guest bench]\nexec = $B/tests/bench/benchguest\n$MANY" 32
	CTL_WM=$CTL
	for CTL in "$CTL_WL" "$CTL_WL0"; do	# the lane opens on the first call
		r=$($CTL call la.rtt lb.echo 1000 8); must p99_ns= "$r"
	done
	# busy_rtt CALLER METHOD: BUSY_N 8 B calls back to back: the median, ns
	busy_rtt() {
		local r

		r=$($CTL call "$1.rtt" "$2" "$BUSY_N" 8); must p99_ns= "$r"
		val median_ns "$r"
	}
	W=$TMP/wake
	APART=$([ "$(nproc)" -ge 2 ] && echo yes || echo no)	# futex-apart needs two CPUs
	for i in $(seq "$WAKE_ROUNDS"); do
		echo "round $i of $WAKE_ROUNDS..." >&2
		wake_base futex-idle median_ns "$WAKE_N" >> "$W.futex"
		if [ "$APART" = yes ]; then
			wake_base futex-apart median_ns "$WAKE_N" >> "$W.apart"
		else
			echo - >> "$W.apart"	# printed as such in the rounds' table
		fi
		wake_base socket-idle median_ns "$WAKE_N" >> "$W.sock"
		wake_base futex-relay median_ns "$WAKE_N" >> "$W.relay"
		CTL=$CTL_W wake_call bench hub.ping "$WAKE_N" >> "$W.host"
		CTL=$CTL_WM wake_call bench hub.ping "$WAKE_N" >> "$W.many"
		CTL=$CTL_W wake_call bench bench2.echo "$WAKE_N" >> "$W.g2g"
		CTL=$CTL_WL wake_call la lb.echo "$WAKE_N" >> "$W.lane"
		wake_base futex-idle median_ns "$WAKE_N" taskset -c 0 >> "$W.futex0"
		wake_base futex-relay median_ns "$WAKE_N" taskset -c 0 >> "$W.relay0"
		CTL=$CTL_W0 wake_call bench hub.ping "$WAKE_N" >> "$W.host0"
		CTL=$CTL_W0 wake_call bench bench2.echo "$WAKE_N" >> "$W.g2g0"
		CTL=$CTL_WL0 wake_call la lb.echo "$WAKE_N" >> "$W.lane0"
		CTL=$CTL_W busy_rtt bench hub.ping >> "$W.bhost"
		CTL=$CTL_W busy_rtt bench bench2.echo >> "$W.bg2g"
		CTL=$CTL_WL busy_rtt la lb.echo >> "$W.blane"
	done
	# the lane rows went over a lane, the others through hubd
	LANES=$(for CTL in "$CTL_WL" "$CTL_WL0" "$CTL_W" "$CTL_W0"; do lanes_open; done | tr -d '\n')
	[ "$LANES" = 1100 ] ||
		{ echo "bench: lanes open on hubs lane, lane0, one, one0: $LANES, not 1100" >&2; exit 1; }
	CTL=$CTL_W
	idle_cpu "$WAKE_IDLE_S" "$HUBD_W" "$($CTL -j peers | sed -n 's/.*"pid":\([0-9]*\).*/\1/p' | head -1)"
	us() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1000 }'; }
	# wake_row ROW BASE WHAT GOAL [BASE_WHAT]: the median of ROW's figures
	# over the rounds, in us; the median of its ratio to the same round's
	# BASE figure (the futex ping-pong unless BASE_WHAT names it), and the
	# lowest and highest of that ratio; no goal if GOAL is empty
	wake_row() {
		local q m g=""

		q=$(paste "$W.$1" "$W.$2" | awk '{ print $1 / $2 }' | sort -g)
		m=$(median <<<"$q")
		[ -n "$4" ] && g="<= $4x: $(goal "$m" le "$4")"
		printf '| %s | %s | us | %s, same quiet, %s us | %.2fx (%.2f-%.2f) | %s |\n' \
			"$3" "$(us "$(median < "$W.$1")")" "${5:-futex ping-pong}" \
			"$(us "$(median < "$W.$2")")" "$m" "$(head -1 <<<"$q")" "$(tail -1 <<<"$q")" "$g"
	}
	busy_row() { echo "| $2 | $(median < "$W.$1" | xargs printf '%.0f') | ns | | | no worse |"; }
	W1CPU="one CPU (taskset -c 0: hubd, its guests, the baseline)"
	SOCKW="UNIX socket ping-pong"
	RELAYW="futex relay"
	{
	printf '%b\n' "$NATS_HEAD"
	echo "| futex ping-pong, $WAKE_MS ms of quiet before each round trip (two processes wake), median of $WAKE_N, median of $WAKE_ROUNDS rounds | $(us "$(median < "$W.futex")") | us | | | |"
	wake_row host futex "host-served call (hub.ping, 8 B: the guest and hubd wake), the same" 1.5
	wake_row g2g futex "guest to guest through hubd (lanes = no: three processes wake), the same" 2.5
	wake_row lane futex "guest to guest over a lane (two processes wake), the same" 1.5
	[ "$APART" = yes ] &&
		wake_row apart futex "futex ping-pong, the two processes pinned to two CPUs (each wake lands on a CPU gone idle), the same" ""
	wake_row sock futex "UNIX socket ping-pong (8 B and the answer over a socketpair, each side asleep in read), the same" ""
	wake_row relay futex "futex relay (caller, middle, callee and back: three processes wake, each asleep in futex_wait, nothing else done), the same" ""
	wake_row g2g relay "guest to guest through hubd against the futex relay" "" "$RELAYW"
	wake_row host sock "host-served call against the socket ping-pong" "" "$SOCKW"
	wake_row lane sock "guest to guest over a lane against the socket ping-pong" "" "$SOCKW"
	wake_row many futex "host-served call on a hub of 32 guests, 31 of them idle (max_guests = 255), the same" ""
	wake_row many host "the same against the host-served call on a hub of two guests" "" "host-served call, two guests"
	echo "| $W1CPU: futex ping-pong, the same | $(us "$(median < "$W.futex0")") | us | | | |"
	wake_row host0 futex0 "$W1CPU: host-served call" 1.5
	wake_row g2g0 futex0 "$W1CPU: guest to guest through hubd" 2.5
	wake_row relay0 futex0 "$W1CPU: futex relay" ""
	wake_row g2g0 relay0 "$W1CPU: guest to guest through hubd against the futex relay" "" "$RELAYW"
	wake_row lane0 futex0 "$W1CPU: guest to guest over a lane" 1.5
	busy_row bhost "busy: host-served call (hub.ping, 8 B), $BUSY_N back to back, median, median of $WAKE_ROUNDS rounds"
	busy_row bg2g "busy: guest to guest through hubd, the same"
	busy_row blane "busy: guest to guest over a lane, the same"
	echo "| idle CPU over $WAKE_IDLE_S s, hubd (the hub through hubd, after its rounds) | $CPU_HUB | % of a core | | | < 1: $(goal "$CPU_HUB" le 0.99) |"
	echo "| idle CPU, the same, a guest | $CPU_GUESTS | % of a core | | | < 1: $(goal "$CPU_GUESTS" le 0.99) |"
	echo
	echo "Each round (us, medians of $WAKE_N calls after $WAKE_MS ms of quiet; busy: ns, medians of $BUSY_N):"
	echo
	echo "| round | futex | futex, 2 CPUs | socket | relay | host | host, 32 guests | g2g | lane | 1 CPU: futex | relay | host | g2g | lane | busy: host | g2g | lane |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	paste "$W.futex" "$W.apart" "$W.sock" "$W.relay" "$W.host" "$W.many" "$W.g2g" "$W.lane" \
		"$W.futex0" "$W.relay0" "$W.host0" "$W.g2g0" "$W.lane0" "$W.bhost" "$W.bg2g" \
		"$W.blane" | awk '{
			printf "| %d |", NR
			for (i = 1; i <= 13; i++)
				if ($i == "-") printf " - |"; else printf " %.1f |", $i / 1000
			printf " %d | %d | %d |\n", $14, $15, $16 }'
	} > "$OUT/bench-wake.md"
	cat "$OUT/bench-wake.md"
	echo "bench: 1 passed, 0 failed"
	exit 0
fi

echo "baselines..." >&2
SHM=$(val rtt_ns "$("$B/tests/bench/baseline" shm $((N_PP * 2)))")
FUTEX=$(val rtt_ns "$("$B/tests/bench/baseline" futex "$N_PP")")
FUTEX_IDLE=$(wake_base futex-idle rtt_ns "$IDLE_N")
SOCK=$(val rtt_ns "$("$B/tests/bench/baseline" socket "$N_PP")")
ZMQ=$("$B/tests/bench/baseline" zmq $((N_PP / 5)) 2>/dev/null || true)
ZMQ=$(val rtt_ns "$ZMQ")
COPY64=$(val gb_per_s "$("$B/tests/bench/baseline" copy 65536 "$COPY_MB")")
COPY1M=$(val gb_per_s "$("$B/tests/bench/baseline" copy 1048576 "$COPY_MB")")
RING=$(val per_s "$("$B/tests/bench/baseline" ring "$RING_N")")
FUTEX_1CPU=$(val rtt_ns "$(taskset -c 0 "$B/tests/bench/baseline" futex "$N_PP")")
YIELD_1CPU=$(val rtt_ns "$(taskset -c 0 "$B/tests/bench/baseline" yield "$N_PP")")
COPY1M_L=$(best gb_per_s max "$B/tests/bench/baseline" copy 1048576 $((LARGE >> 20)))
COPY16M_L=$(best gb_per_s max "$B/tests/bench/baseline" copy 16777216 $((LARGE >> 20)))

echo "pools..." >&2
POOL_VAR=$(best ns_per_pair min "$B/tests/bench/poolbench" var "$POOL_N")
POOL_FIXED=$(best ns_per_pair min "$B/tests/bench/poolbench" fixed "$POOL_N")
POOL_VAR2=$(best ns_per_pair min "$B/tests/bench/poolbench" var2 "$POOL_N")
POOL_FIXED2=$(best ns_per_pair min "$B/tests/bench/poolbench" fixed2 "$POOL_N")
SIZES=$("$B/tests/bench/poolbench" sizes)
DOM_DEFAULT_CALC=$(val default_bytes "$SIZES")
DOM_FIXED16M=$(val fixed16m_bytes "$SIZES")
POOL_DEFAULT_CALC=$(val pool_bytes "$SIZES")

# libguest's microthreads (no hub): a switch against the bare fcontext
# jump under it and a thread hand-off; spawning; runtime channels
echo "microthreads..." >&2
MTB=$B/tests/bench/mtbench
MT_YIELD=$(best switch_ns min "$MTB" yield "$N_MT")
MT_FCTX=$(best switch_ns min "$MTB" fcontext "$N_MT")
MT_CONDVAR=$(best switch_ns min "$MTB" condvar $((N_MT / 5)))
MT_CONDVAR_1CPU=$(best switch_ns min taskset -c 0 "$MTB" condvar $((N_MT / 5)))
MT_SPAWN=$(best ns min "$MTB" spawn "$N_MT")
MT_DETACHED=$(best ns min "$MTB" detached "$N_MT")
MT_CHAN1=$(best rtt_ns min "$MTB" chan "$N_MT" 1)
MT_CHAN2=$(best rtt_ns min "$MTB" chan $((N_MT / 5)) 2)
MT_CONDVAR_RTT=$(awk -v c="$MT_CONDVAR" 'BEGIN { printf "%.1f", 2 * c }')

# cpu_ns PID: the CPU time of all of PID's threads so far, in ns: the
# scheduler's own count (schedstat) where the kernel keeps it, else the
# ticks of /proc/PID/stat (10 ms steps at 100 Hz)
cpu_ns() {
	local f t=0

	if [ -r "/proc/$1/schedstat" ]; then
		for f in /proc/"$1"/task/*/schedstat; do
			t=$((t + $(cut -d' ' -f1 "$f" 2>/dev/null || echo 0)))
		done
		echo "$t"
	else
		echo $(($(cpu_ticks "$1") * 1000000000 / $(getconf CLK_TCK)))
	fi
}
# What hubd maps (its domains and pools: hubctl status) and what of it is
# resident (the pages of every /memfd:hub* it holds open), in bytes
mapped() { $CTL -j status | sed -n 's/.*"mapped_bytes":\([0-9]*\).*/\1/p'; }
resident() {
	local f n=0

	for f in /proc/"$1"/fd/*; do
		case $(readlink "$f" 2>/dev/null) in
		/memfd:hub*) n=$((n + $(stat -L -c '%b * %B' "$f"))) ;;
		esac
	done
	echo "$n"
}

# peers run where make bench has them (make check's smoke run does not)
PEERS=""
if [ "$SMOKE" != --smoke ]; then
	echo "peers: iceoryx, D-Bus..." >&2
	PEERS=$(bench_iox "$B" "$N_PEER"; bench_dbus "$B" $((N_PEER / 4)))
fi
IOX_SPIN=$(val iox_spin_median_ns "$PEERS"); IOX_SPIN99=$(val iox_spin_p99_ns "$PEERS")
IOX_WS=$(val iox_ws_median_ns "$PEERS"); IOX_WS99=$(val iox_ws_p99_ns "$PEERS")
IOX_WS1=$(val iox_ws_1cpu_median_ns "$PEERS")
DBUS=$(val dbus_daemon_median_ns "$PEERS"); DBUS99=$(val dbus_daemon_p99_ns "$PEERS")
BROKER=$(val dbus_broker_median_ns "$PEERS"); BROKER99=$(val dbus_broker_p99_ns "$PEERS")
PEER_ERR=$(sed -n 's/^\(iox\|dbus\)_error=/\1: /p' <<<"$PEERS" | tr '\n' ';')

# rtt_pair CALLER CALLEE: round trips from guest CALLER, served by hubd
# (hub.ping) and to guest CALLEE's echo (routed by hubd, or over a lane
# where the hub's guests have lanes), 8 B and 1 KiB arguments, each
# answer checked by the caller; sets the R_* variables
rtt_pair() {
	local r
	r=$($CTL call "$1.rtt" hub.ping "$N_RTT" 8)
	R_HOST=$(val median_ns "$r"); R_HOST99=$(val p99_ns "$r"); R_HOST999=$(val p999_ns "$r")
	r=$($CTL call "$1.rtt" "$2.echo" "$N_RTT" 8)
	R_G2G=$(val median_ns "$r"); R_G2G99=$(val p99_ns "$r")
	r=$($CTL call "$1.rtt" "$2.echo" "$N_RTT" 1024)
	R_G2GK=$(val median_ns "$r"); R_G2GK99=$(val p99_ns "$r")
	[ -n "$R_HOST" ] && [ -n "$R_G2G" ] && [ -n "$R_G2GK" ] ||
		{ echo "bench: a round-trip run failed" >&2; exit 1; }
}

# Lanes are on by default ([guest] lanes = yes): after the first call
# between two guests, their calls go over a lane of their own and no
# longer through hubd. The hubs whose guest to guest figures are meant
# through hubd say lanes = no for every guest; the lane figures come
# from hubs of the same keys with lanes on.
echo "hub, two guests (through hubd: lanes = no)..." >&2
start_hub one "$ONE_KEYS" "$ONE_GUESTS" 2
rtt_pair bench bench2
MED=$R_HOST; P99=$R_HOST99; P999=$R_HOST999
G2G=$R_G2G; G2G99=$R_G2G99; G2GK=$R_G2GK; G2GK99=$R_G2GK99
IDLE_G2G=$(wake_call bench bench2.echo "$IDLE_N")
PIPE=$(val per_s "$($CTL call bench.pipe "$PIPE_MS" 64 0)")
S32=$(val items_per_s "$($CTL call bench.stream "$STREAM32" 32)")
B64=$(val gb_per_s "$($CTL call bench.stream "$BULK" 65536)")
B1M=$(val gb_per_s "$($CTL call bench.stream "$BULK" 1048576)")
IDLE=$(wake_call bench hub.ping "$IDLE_N")
# guest to guest streams (a chan<bytes> argument: bench2 sends, bench
# receives, reading and hashing every item as hub.sink does), relayed by
# hubd
GBULK=$((BULK / 4))
r=$($CTL call bench.gstream bench2 "$STREAM32" 32); must items_ok=1 "$r"
G_S32=$(val items_per_s "$r")
r=$($CTL call bench.gstream bench2 "$GBULK" 1048576); must items_ok=1 "$r"
G_B1M=$(val gb_per_s "$r")
# and uploads, the other way (an rx<bytes>: bench sends, bench2 reads and
# hashes every item, its hash checked)
r=$($CTL call bench.gupload bench2 "$STREAM32" 32); must items_ok=1 "$r"
U_S32=$(val items_per_s "$r")
r=$($CTL call bench.gupload bench2 "$GBULK" 1048576); must items_ok=1 "$r"
U_B1M=$(val gb_per_s "$r")
GPID=$($CTL -j peers | sed -n 's/.*"pid":\([0-9]*\).*/\1/p' | head -1)
idle_cpu "$IDLE_S" "${HUBS[0]}" "$GPID"
IDLE_HUB=$CPU_HUB; IDLE_GUEST=$CPU_GUESTS

# The same keys, lanes on: the guest to guest call over a lane (its
# host-served call from the same hub, just before), and hubd's CPU
# through the lane run (all its threads), what a lane leaves to hubd
echo "hub, two guests over a lane..." >&2
start_hub lane "$ONE_KEYS" "$LANE_GUESTS" 2
HUBD_LANE=${HUBS[-1]}
r=$($CTL call la.rtt hub.ping "$N_RTT" 8); must p99_ns= "$r"
LANE_HOST=$(val median_ns "$r"); LANE_HOST99=$(val p99_ns "$r")
r=$($CTL call la.rtt lb.echo 1 8); must p99_ns= "$r"	# the lane opens
h0=$(cpu_ns "$HUBD_LANE"); t0=$(date +%s%N)
r=$($CTL call la.rtt lb.echo "$N_RTT" 8); must p99_ns= "$r"
h1=$(cpu_ns "$HUBD_LANE"); t1=$(date +%s%N)
LANE=$(val median_ns "$r"); LANE99=$(val p99_ns "$r"); LANE999=$(val p999_ns "$r")
LANE_HUBD=$(awk -v d=$((h1 - h0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.2f", 100 * d / t }')
LANE_HUBD_MS=$(awk -v d=$((h1 - h0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f / %.0f", d / 1e6, t / 1e6 }')
r=$($CTL call la.rtt lb.echo "$N_RTT" 1024); must p99_ns= "$r"
LANEK=$(val median_ns "$r"); LANEK99=$(val p99_ns "$r")
lane_pipe
IDLE_LANE=$(wake_call la lb.echo "$IDLE_N")
# the same streams over the lane (the first call of lb.produce goes
# through hubd, which routes the method over the lane)
r=$($CTL call la.gstream lb 1000 32); must items_ok=1 "$r"
r=$($CTL call la.gstream lb "$STREAM32" 32); must items_ok=1 "$r"
L_S32=$(val items_per_s "$r")
r=$($CTL call la.gstream lb "$GBULK" 1048576); must items_ok=1 "$r"
L_B1M=$(val gb_per_s "$r")
r=$($CTL call la.gupload lb 1000 32); must items_ok=1 "$r"	# routes lb.consume
r=$($CTL call la.gupload lb "$STREAM32" 32); must items_ok=1 "$r"
LU_S32=$(val items_per_s "$r")
r=$($CTL call la.gupload lb "$GBULK" 1048576); must items_ok=1 "$r"
LU_B1M=$(val gb_per_s "$r")
LANES_OPEN=$(lanes_open)
[ "$LANES_OPEN" -eq 1 ] || { echo "bench: hub lane has $LANES_OPEN lanes open, not 1" >&2; exit 1; }

# start_hub runs hubd under $PIN_HUB when set: its guests inherit the CPU
echo "hub, two guests, all on CPU 0 (through hubd)..." >&2
PIN_HUB="taskset -c 0" start_hub onecpu "max_guests = 3" \
	"[guest c1]\nexec = $B/tests/bench/benchguest\nargs = --prefix c1\nlanes = no\n[guest c2]\nexec = $B/tests/bench/benchguest\nargs = --prefix c2\nlanes = no\n" 2
rtt_pair c1 c2
ONE_HOST=$R_HOST; ONE_G2G=$R_G2G; ONE_G2G99=$R_G2G99
echo "hub, two guests, all on CPU 0, over a lane..." >&2
PIN_HUB="taskset -c 0" start_hub lanecpu "max_guests = 3" \
	"[guest lc1]\nexec = $B/tests/bench/benchguest\nargs = --prefix lc1\n[guest lc2]\nexec = $B/tests/bench/benchguest\nargs = --prefix lc2\n" 2
rtt_pair lc1 lc2
ONE_LANE=$R_G2G; ONE_LANE99=$R_G2G99; ONE_LANE_HOST=$R_HOST

echo "hub, $NGUESTS guests..." >&2
many_guests() {	# many_guests LANES_LINE
	for i in $(seq "$NGUESTS"); do
		printf '[guest b%d]\nexec = %s\nargs = --prefix b%d\n%s' \
			"$i" "$B/tests/bench/benchguest" "$i" "$1"
	done
}
MANY_KEYS="max_guests = $((NGUESTS + 1))\nslots_per_guest = 8\nheartbeat_interval = 5s"
start_hub many "$MANY_KEYS" "$(many_guests "lanes = no\n")" "$NGUESTS"
SINGLE=$(val per_s "$($CTL call b1.pipe "$PIPE_MS" 16 0)")
# every guest's window starts at the same time, 2 s from now (starting
# 32 clients takes a while on a busy machine)
AT=$(($(date +%s%3N) + 2000))
CALLS=()
for i in $(seq "$NGUESTS"); do
	$CTL call "b$i.pipe" "$PIPE_MS" 16 "$AT" > "$TMP/g$i.out" &
	CALLS+=($!)
done
wait "${CALLS[@]}"
for i in $(seq "$NGUESTS"); do val per_s "$(cat "$TMP/g$i.out")"; done > "$TMP/rates"
AGG=$(awk '{ s += $1 } END { printf "%.0f", s }' "$TMP/rates")
MINR=$(sort -n "$TMP/rates" | head -1); MAXR=$(sort -n "$TMP/rates" | tail -1)
# the same hub left alone: hubd's and all its guests' CPU
MANY_HUBD=${HUBS[-1]}
MANY_PIDS=$($CTL -j peers | grep -o '"pid":[0-9]*' | cut -d: -f2)
idle_cpu "$IDLE_S" "$MANY_HUBD" $MANY_PIDS
IDLE_MANY_HUB=$CPU_HUB; IDLE_MANY_GUESTS=$CPU_GUESTS

# The same guests in pairs calling each other, all at once: b(2k-1)
# keeps 16 calls of b(2k).echo in flight (each answer checked), through
# hubd on the hub above (lanes = no) and over a lane each on a hub of the
# same keys with lanes on. The two hubs take turns, REPS rounds: of each
# the round of the highest aggregate, its slowest and fastest pair.
NPAIRS=$((NGUESTS / 2))
echo "hub, $NGUESTS guests in $NPAIRS pairs over lanes..." >&2
CTL_MANY=$CTL
start_hub manylane "$MANY_KEYS" "$(many_guests "")" "$NGUESTS"
CTL_MANYLANE=$CTL
pairs_round() {	# pairs_round NAME: one round on the hub CTL names
	local k calls=() at

	at=$(($(date +%s%3N) + 2000))
	for k in $(seq "$NPAIRS"); do
		$CTL call "b$((2 * k - 1)).pipeto" "b$((2 * k)).echo" "$PIPE_MS" 16 "$at" \
			> "$TMP/pair$k.out" &
		calls+=($!)
	done
	wait "${calls[@]}"
	for k in $(seq "$NPAIRS"); do
		must failed=0 "$(cat "$TMP/pair$k.out")"
		val per_s "$(cat "$TMP/pair$k.out")"
	done > "$TMP/pairs"
	echo "$(awk '{ s += $1 } END { printf "%.0f", s }' "$TMP/pairs")" \
		"$(sort -n "$TMP/pairs" | head -1)" "$(sort -n "$TMP/pairs" | tail -1)" >> "$TMP/$1.pairs"
}
for _ in $(seq "$REPS"); do
	CTL=$CTL_MANY pairs_round hubd
	CTL=$CTL_MANYLANE pairs_round lane
done
read -r PAIRS_HUBD PAIRS_HUBD_MIN PAIRS_HUBD_MAX < <(sort -g "$TMP/hubd.pairs" | tail -1)
read -r PAIRS_LANE PAIRS_LANE_MIN PAIRS_LANE_MAX < <(sort -g "$TMP/lane.pairs" | tail -1)
PAIRS_LANES_OPEN=$(CTL=$CTL_MANYLANE lanes_open)
[ "$PAIRS_LANES_OPEN" -eq "$NPAIRS" ] ||
	{ echo "bench: hub manylane has $PAIRS_LANES_OPEN lanes open, not $NPAIRS" >&2; exit 1; }

# Large payloads through the shared pools, default classes: a 16 MiB item
# needs a channel credit of at least its size (the default is 64K). The
# guest to guest runs go through two hubs: each guest a zone of its own
# (the default: hubd copies every argument from the caller's pool into
# the callee's) and both in one zone (the slot is handed on, no byte
# copied); the small calls too (8 B travels inline, 1 KiB in a pool slot).
# Both through hubd (lanes = no); a third hub of the same keys has lanes
# on: a lane's slots are as large as the hub's largest payload (the
# default classes': 32 MiB), and the caller writes each argument into
# one, the callee copies it out, as the copy baseline does. The three
# hubs take turns, REPS rounds: the best of each figure.
LARGE_KEYS="max_guests = 3\ninitial_credit = 64M"
large_guests() {	# large_guests LINES: ZONE and LANES lines of each guest
	printf '[guest l1]\nexec = %s\nargs = --prefix l1\n%s[guest l2]\nexec = %s\nargs = --prefix l2\n%s' \
		"$B/tests/bench/benchguest" "$1" "$B/tests/bench/benchguest" "$1"
}
large() {	# large KIND ITEM: one run's GB/s, checked
	local out

	if [ "$1" = sink ]; then
		out=$($CTL call l1.stream "$LARGE" "$2")
		must "send=0 hash_ok=1" "$out"
	else
		out=$($CTL call l1.g2g l2 "$LARGE" "$2" 4)
		must failed=0 "$out"
	fi
	val gb_per_s "$out"
}
# g2g_round NAME: one round of the guest to guest figures on the hub CTL
# names, each appended to $TMP/NAME.FIGURE
g2g_round() {
	local r

	large g2g 1048576 >> "$TMP/$1.1m"
	large g2g 16777216 >> "$TMP/$1.16m"
	r=$($CTL call l1.rtt l2.echo "$N_RTT" 8); must p99_ns= "$r"
	val median_ns "$r" >> "$TMP/$1.8"
	r=$($CTL call l1.rtt l2.echo "$N_RTT" 1024); must p99_ns= "$r"
	val median_ns "$r" >> "$TMP/$1.1k"
}
highest() { sort -g "$1" | tail -1; }
echo "hub, large payloads: each guest a zone of its own, both in one zone, and over a lane..." >&2
start_hub large "$LARGE_KEYS" "$(large_guests "lanes = no\n")" 2
CTL_OWN=$CTL; HUBD_OWN=${HUBS[-1]}
for _ in $(seq "$REPS"); do
	large sink 1048576 >> "$TMP/sink.1m"
	large sink 16777216 >> "$TMP/sink.16m"
done
SINK1M=$(highest "$TMP/sink.1m"); SINK16M=$(highest "$TMP/sink.16m")
start_hub largez "$LARGE_KEYS" "$(large_guests "zone = bench\nlanes = no\n")" 2
CTL_ONE=$CTL; HUBD_ONE=${HUBS[-1]}
start_hub largelane "$LARGE_KEYS" "$(large_guests "")" 2
CTL_LLANE=$CTL
for _ in $(seq "$REPS"); do
	CTL=$CTL_OWN g2g_round own
	CTL=$CTL_ONE g2g_round one
	CTL=$CTL_LLANE large g2g 1048576 >> "$TMP/lane.1m"
	CTL=$CTL_LLANE large g2g 16777216 >> "$TMP/lane.16m"
done
LANE1M=$(highest "$TMP/lane.1m"); LANE16M=$(highest "$TMP/lane.16m")
G2G1M=$(highest "$TMP/own.1m"); G2G16M=$(highest "$TMP/own.16m")
Z1M=$(highest "$TMP/one.1m"); Z16M=$(highest "$TMP/one.16m")
G2G_SMALL=$(sort -g "$TMP/own.8" | head -1); G2G_1K=$(sort -g "$TMP/own.1k" | head -1)
Z_SMALL=$(sort -g "$TMP/one.8" | head -1); Z_1K=$(sort -g "$TMP/one.1k" | head -1)
LARGE_MAPPED=$(CTL=$CTL_OWN mapped); LARGE_HELD=$(resident "$HUBD_OWN")
LARGEZ_MAPPED=$(CTL=$CTL_ONE mapped); LARGEZ_HELD=$(resident "$HUBD_ONE")

# The default config's hub with two guests: each guest's domain, each
# zone's pool, what hubd maps and what of it is resident
echo "hub, the default config..." >&2
start_hub default "" \
	"[guest d1]\nexec = $B/tests/bench/benchguest\nargs = --prefix d1\n[guest d2]\nexec = $B/tests/bench/benchguest\nargs = --prefix d2\n" 2
DOM_DEFAULT=$($CTL -j peers | sed -n 's/.*"domain_bytes":\([0-9]*\).*/\1/p' | head -1)
POOL_DEFAULT=$($CTL -j pool | grep -o '"bytes":[0-9]*' | head -1 | sed 's/.*://')
DEFAULT_MAPPED=$(mapped); DEFAULT_HELD=$(resident "${HUBS[-1]}")
DEFAULT_RSS=$(awk '$1 == "VmRSS:" { print $2 * 1024 }' "/proc/${HUBS[-1]}/status")

# libguest on microthreads against hubd: the host-served call from a
# handler run as a callback (fc, guest_run) and from one on a microthread
# (fs, guest_run_mt); the issue's goal: microthreads cost that call at
# most 10%. Then MT_W calls in flight at once into handlers that each make
# a nested call (fc floods fs.nest; fs2 the same on two processors), on a
# hub that lets fc route that many (calls_in_flight) and rings that hold
# them (libguest keeps at most ring_size async calls in flight through
# the hub). The other keys are those of the two-guest hub above, so fc's
# call compares with its figure.
echo "hub, guests on microthreads..." >&2
start_hub mt "max_guests = 3\nslot_size = 1040K\nslots_per_guest = 4\ninitial_credit = 4M\ncalls_in_flight = 20000\nring_size = 16384" \
	"[guest fc]\nexec = $B/tests/bench/benchguest\nargs = --prefix fc\nlanes = no\n[guest fs]\nexec = $B/tests/bench/benchguest\nargs = --prefix fs --mt\nlanes = no\n[guest fs2]\nexec = $B/tests/bench/benchguest\nargs = --prefix fs2 --mt --processors 2\nlanes = no\n" 3
# the two take turns, REPS runs each; the lowest median and p99 of each
for _ in $(seq "$REPS"); do
	for g in fc fs; do
		r=$($CTL call "$g.rtt" hub.ping "$N_RTT" 8)
		must p99_ns= "$r"
		val median_ns "$r" >> "$TMP/$g.med"; val p99_ns "$r" >> "$TMP/$g.p99"
	done
done
lowest() { sort -g "$1" | head -1; }
MT_CB=$(lowest "$TMP/fc.med"); MT_CB99=$(lowest "$TMP/fc.p99")
MT_MT=$(lowest "$TMP/fs.med"); MT_MT99=$(lowest "$TMP/fs.p99")
# mt_flood GUEST: fc keeps MT_W calls of GUEST.nest in flight for FLOOD_MS,
# each checked; GUEST's peak memory (VmHWM) after it over its resident
# size (VmRSS) before, per call in flight: one run on a fresh guest (the
# peak is the process's)
mt_flood() {
	local before out after
	before=$($CTL call "$1.rss")
	out=$($CTL call fc.flood "$1.nest" "$FLOOD_MS" "$MT_W")
	must failed=0 "$out"
	after=$($CTL call "$1.rss")
	FL_RATE=$(val per_s "$out")
	FL_MEM=$(awk -v a="$(val hwm_kb "$after")" -v b="$(val rss_kb "$before")" -v w="$MT_W" \
		'BEGIN { printf "%.0f", (a - b) * 1024 / w }')
	FL_HWM=$(val hwm_kb "$after")
}
mt_flood fs; FLOOD=$FL_RATE; FLOOD_MEM=$FL_MEM; FLOOD_HWM=$FL_HWM
mt_flood fs2; FLOOD2=$FL_RATE; FLOOD2_MEM=$FL_MEM; FLOOD2_HWM=$FL_HWM
# the same handlers, 64 calls in flight
r=$($CTL call fc.flood fs.nest "$FLOOD_MS" 64)
must failed=0 "$r"
FLOOD64=$(val per_s "$r")

# A guest in Python (bindings/python over libguest.so, ctypes): a C guest
# calls it (routed), it calls the host and the C guest, it reads hub.source;
# each against the same call between C guests above.
echo "hub, a Python guest..." >&2
N_PY=$((N_RTT / 10))
PYTHONPATH="$(cd "$(dirname "$0")/../../bindings/python" && pwd)" HUB_LIBGUEST=$B/libguest.so \
start_hub py "max_guests = 3\nslot_size = 1040K\nslots_per_guest = 4\ninitial_credit = 4M" \
	"[guest pc]\nexec = $B/tests/bench/benchguest\nargs = --prefix pc\nlanes = no\n[guest py]\nexec = $(cd "$(dirname "$0")" && pwd)/pybench.py\nprovides = pyb.*\nlanes = no\n" 2
for _ in $(seq 100); do $CTL methods | grep -q pyb.source && break; sleep 0.05; done
r=$($CTL call pc.rtt pyb.echo "$N_PY" 8); must p99_ns= "$r"
PY_IN=$(val median_ns "$r"); PY_IN99=$(val p99_ns "$r")
r=$($CTL call pyb.rtt hub.ping "$N_PY" 8); must p99_ns= "$r"
PY_HOST=$(val median_ns "$r"); PY_HOST99=$(val p99_ns "$r")
r=$($CTL call pyb.rtt pc.echo "$N_PY" 8); must p99_ns= "$r"
PY_OUT=$(val median_ns "$r"); PY_OUT99=$(val p99_ns "$r")
r=$($CTL call pyb.source $((STREAM32 / 4))); must mb_per_s= "$r"
PY_SRC=$(val mb_per_s "$r")
# what a Python plugin would do without hub: two Python processes, a socketpair
r=$(python3 "$(dirname "$0")/pysock.py" "$N_PY"); must p99_ns= "$r"
PY_SOCK=$(val median_ns "$r"); PY_SOCK99=$(val p99_ns "$r")

bench_nats
bench_nats_topics
bench_pubsub

# the table: figure, value, unit, compared with, ratio, goal
{
printf '%b\n' "$NATS_HEAD"
echo "| call round trip, median (a guest calls hub.ping, 8 B) | $MED | ns | shm ping-pong $SHM ns | $(ratio "$MED" "$SHM")x | <= 1.5x |"
echo "| call round trip, p99 | $P99 | ns | shm ping-pong $SHM ns | $(ratio "$P99" "$SHM")x | <= 3x |"
echo "| call round trip, p99.9 | $P999 | ns | shm ping-pong $SHM ns | $(ratio "$P999" "$SHM")x | |"
echo "| the same against iceoryx request/response, busy-polling | $MED | ns | iceoryx ${IOX_SPIN:--} ns | $(ratio "$MED" "${IOX_SPIN:-0}")x | <= 0.33x |"
echo "| guest to guest call through hubd (routed), 8 B, median | $G2G | ns | host-served $MED ns | $(ratio "$G2G" "$MED")x | <= 3x |"
echo "| the same against iceoryx request/response, busy-polling | $G2G | ns | iceoryx ${IOX_SPIN:--} ns | $(ratio "$G2G" "${IOX_SPIN:-0}")x | <= 0.5x |"
echo "| guest to guest call through hubd, 8 B, p99 | $G2G99 | ns | iceoryx busy-polling p99 ${IOX_SPIN99:--} ns | $(ratio "$G2G99" "${IOX_SPIN99:-0}")x | |"
echo "| guest to guest call through hubd, 1 KiB, median | $G2GK | ns | host-served 8 B $MED ns | $(ratio "$G2GK" "$MED")x | |"
echo "| guest to guest call through hubd, 1 KiB, p99 | $G2GK99 | ns | | | |"
echo "| guest to guest call over a lane, 8 B, median | $LANE | ns | host-served, same hub $LANE_HOST ns | $(ratio "$LANE" "$LANE_HOST")x | <= 1.3x |"
echo "| the same against iceoryx request/response, busy-polling | $LANE | ns | iceoryx ${IOX_SPIN:--} ns | $(ratio "$LANE" "${IOX_SPIN:-0}")x | <= 0.4x |"
echo "| guest to guest call over a lane, 8 B, p99 | $LANE99 | ns | iceoryx busy-polling p99 ${IOX_SPIN99:--} ns | $(ratio "$LANE99" "${IOX_SPIN99:-0}")x | |"
echo "| guest to guest call over a lane, 8 B, p99.9 | $LANE999 | ns | host-served p99, same hub $LANE_HOST99 ns | $(ratio "$LANE999" "$LANE_HOST99")x | |"
echo "| guest to guest call over a lane against through hubd, 8 B, median | $LANE | ns | through hubd $G2G ns | $(ratio "$LANE" "$G2G")x | |"
echo "| guest to guest call over a lane, 1 KiB, median / p99 | $LANEK / $LANEK99 | ns | through hubd $G2GK ns | $(ratio "$LANEK" "$G2GK")x | |"
echo "| hubd's CPU through the lane's 8 B run ($LANE_HUBD_MS ms of CPU / of wall clock) | $LANE_HUBD | % of a CPU | | | ~0 |"
echo "| one CPU (taskset -c 0): host-served call, median | $ONE_HOST | ns | futex ping-pong on one CPU $FUTEX_1CPU ns | $(ratio "$ONE_HOST" "$FUTEX_1CPU")x | |"
echo "| one CPU: guest to guest call through hubd, median | $ONE_G2G | ns | futex ping-pong on one CPU $FUTEX_1CPU ns | $(ratio "$ONE_G2G" "$FUTEX_1CPU")x | <= 2x |"
echo "| one CPU: the floor of a hand-off by sched_yield (two per ping-pong; a routed call needs four) | $YIELD_1CPU | ns | | | |"
echo "| one CPU: guest to guest call through hubd, p99 | $ONE_G2G99 | ns | iceoryx WaitSet on one CPU ${IOX_WS1:--} ns (median) | $(ratio "$ONE_G2G99" "${IOX_WS1:-0}")x | |"
echo "| one CPU: guest to guest call over a lane, median | $ONE_LANE | ns | futex ping-pong on one CPU $FUTEX_1CPU ns | $(ratio "$ONE_LANE" "$FUTEX_1CPU")x | <= 1.2x |"
echo "| one CPU: guest to guest call over a lane, p99 | $ONE_LANE99 | ns | through hubd $ONE_G2G99 ns | $(ratio "$ONE_LANE99" "$ONE_G2G99")x | |"
echo "| one CPU: host-served call on the lane hub, median | $ONE_LANE_HOST | ns | the through-hubd hub's $ONE_HOST ns | $(ratio "$ONE_LANE_HOST" "$ONE_HOST")x | |"
echo "| iceoryx WaitSet request/response, median / p99 | ${IOX_WS:--} / ${IOX_WS99:--} | ns | hub guest to guest through hubd $G2G ns | $(ratio "${IOX_WS:-0}" "$G2G")x slower | |"
echo "| D-Bus (sd-bus) through dbus-daemon, median / p99 | ${DBUS:--} / ${DBUS99:--} | ns | hub guest to guest through hubd $G2G ns | $(ratio "${DBUS:-0}" "$G2G")x slower | |"
echo "| D-Bus (sd-bus) through dbus-broker, median / p99 | ${BROKER:--} / ${BROKER99:--} | ns | hub guest to guest through hubd $G2G ns | $(ratio "${BROKER:-0}" "$G2G")x slower | |"
echo "| UNIX socketpair round trip | $SOCK | ns | hub median $MED ns | $(ratio "$SOCK" "$MED")x slower | >= 25x |"
echo "| ZeroMQ REQ/REP ipc:// round trip | ${ZMQ:--} | ns | hub median $MED ns | $(ratio "${ZMQ:-0}" "$MED")x slower | |"
echo "| futex ping-pong (sleeping every time) | $FUTEX | ns | | | |"
echo "| pipelined calls (64 in flight) | $PIPE | calls/s | | | >= 3000000 |"
echo "| streamed 32-byte items | $S32 | items/s | SPSC ring $RING desc/s | $(ratio "$S32" "$RING")x | >= 20000000 |"
echo "| bulk 64 KiB items | $B64 | GB/s | shm copy $COPY64 GB/s | $(ratio "$B64" "$COPY64")x | >= 0.7x |"
echo "| bulk 1 MiB items | $B1M | GB/s | shm copy $COPY1M GB/s | $(ratio "$B1M" "$COPY1M")x | >= 0.7x |"
echo "| guest to guest stream, 32-byte items, through hubd | $G_S32 | items/s | guest to host $S32 items/s | $(ratio "$G_S32" "$S32")x | |"
echo "| guest to guest stream, 32-byte items, over a lane | $L_S32 | items/s | through hubd $G_S32 items/s | $(ratio "$L_S32" "$G_S32")x | |"
echo "| guest to guest stream, 1 MiB items, through hubd | $G_B1M | GB/s | shm copy $COPY1M GB/s | $(ratio "$G_B1M" "$COPY1M")x | |"
echo "| guest to guest stream, 1 MiB items, over a lane | $L_B1M | GB/s | shm copy $COPY1M GB/s; through hubd $G_B1M GB/s | $(ratio "$L_B1M" "$COPY1M")x; $(ratio "$L_B1M" "$G_B1M")x | |"
echo "| guest to guest upload (rx<bytes>), 32-byte items, through hubd | $U_S32 | items/s | the stream the other way $G_S32 items/s | $(ratio "$U_S32" "$G_S32")x | |"
echo "| guest to guest upload (rx<bytes>), 32-byte items, over a lane | $LU_S32 | items/s | through hubd $U_S32 items/s | $(ratio "$LU_S32" "$U_S32")x | |"
echo "| guest to guest upload (rx<bytes>), 1 MiB items, through hubd | $U_B1M | GB/s | the stream the other way $G_B1M GB/s | $(ratio "$U_B1M" "$G_B1M")x | |"
echo "| guest to guest upload (rx<bytes>), 1 MiB items, over a lane | $LU_B1M | GB/s | over a lane the other way $L_B1M GB/s | $(ratio "$LU_B1M" "$L_B1M")x | |"
echo "| wake-from-idle round trip (5 ms quiet first) | $IDLE | ns | futex ping-pong, same quiet, $FUTEX_IDLE ns | $(ratio "$IDLE" "$FUTEX_IDLE")x | <= 1.5x |"
echo "| wake-from-idle, guest to guest through hubd (three processes wake) | $IDLE_G2G | ns | futex ping-pong, same quiet, $FUTEX_IDLE ns | $(ratio "$IDLE_G2G" "$FUTEX_IDLE")x | |"
echo "| wake-from-idle, guest to guest over a lane (two processes wake) | $IDLE_LANE | ns | futex ping-pong, same quiet, $FUTEX_IDLE ns | $(ratio "$IDLE_LANE" "$FUTEX_IDLE")x | <= 2x |"
echo "| idle CPU, hubd | $IDLE_HUB | % of a core | | | < 1 |"
echo "| idle CPU, guest | $IDLE_GUEST | % of a core | | | < 1 |"
echo "| $NGUESTS guests at once, aggregate | $AGG | calls/s | one guest $SINGLE calls/s | $(ratio "$AGG" "$SINGLE")x | >= 0.8x |"
echo "| $NGUESTS guests, slowest / fastest | $MINR / $MAXR | calls/s | | $(ratio "$MINR" "$MAXR") | >= 0.5 |"
echo "| idle CPU after it, hubd / all $NGUESTS guests | $IDLE_MANY_HUB / $IDLE_MANY_GUESTS | % of a core | | | < 1 |"
echo "| $NGUESTS guests in $NPAIRS pairs calling each other at once (16 in flight each), over lanes, aggregate, best of $REPS | $PAIRS_LANE | calls/s | through hubd $PAIRS_HUBD calls/s | $(ratio "$PAIRS_LANE" "$PAIRS_HUBD")x | |"
echo "| the same over lanes, slowest / fastest pair | $PAIRS_LANE_MIN / $PAIRS_LANE_MAX | calls/s | | $(ratio "$PAIRS_LANE_MIN" "$PAIRS_LANE_MAX") | |"
echo "| the same through hubd, slowest / fastest pair | $PAIRS_HUBD_MIN / $PAIRS_HUBD_MAX | calls/s | | $(ratio "$PAIRS_HUBD_MIN" "$PAIRS_HUBD_MAX") | |"
echo "| 1 MiB items into hub.sink (hubd hashes every byte: XXH3-64, libxxhash; the guest checks the hash) | $SINK1M | GB/s | shm copy 1 MiB $COPY1M_L GB/s | $(ratio "$SINK1M" "$COPY1M_L")x | >= 0.7x |"
echo "| 16 MiB items into hub.sink (the same) | $SINK16M | GB/s | shm copy 16 MiB $COPY16M_L GB/s | $(ratio "$SINK16M" "$COPY16M_L")x | >= 0.7x |"
echo "| guest to guest through hubd, 1 MiB arguments (4 calls in flight, reader copies out): both guests in one zone (zero copy) / each a zone of its own (hubd copies) | $Z1M / $G2G1M | GB/s | shm copy 1 MiB $COPY1M_L GB/s | $(ratio "$Z1M" "$COPY1M_L")x / $(ratio "$G2G1M" "$COPY1M_L")x | >= 0.7x |"
echo "| guest to guest through hubd, 16 MiB arguments (the same): one zone / zones of their own | $Z16M / $G2G16M | GB/s | shm copy 16 MiB $COPY16M_L GB/s | $(ratio "$Z16M" "$COPY16M_L")x / $(ratio "$G2G16M" "$COPY16M_L")x | >= 0.7x |"
echo "| guest to guest over a lane, 1 MiB arguments (the same: the caller writes each into a lane slot, the callee copies it out), best of $REPS | $LANE1M | GB/s | shm copy 1 MiB $COPY1M_L GB/s | $(ratio "$LANE1M" "$COPY1M_L")x | >= 0.9x |"
echo "| guest to guest over a lane, 16 MiB arguments (the same) | $LANE16M | GB/s | shm copy 16 MiB $COPY16M_L GB/s | $(ratio "$LANE16M" "$COPY16M_L")x | >= 0.9x |"
echo "| what isolation costs big payloads: zones of their own over one zone, 1 MiB / 16 MiB | $(ratio "$G2G1M" "$Z1M")x / $(ratio "$G2G16M" "$Z16M")x | | | | |"
echo "| guest to guest call through hubd, 8 B (inline, never copied), median, lowest of $REPS: one zone / zones of their own (the same two hubs) | $Z_SMALL / $G2G_SMALL | ns | | $(ratio "$G2G_SMALL" "$Z_SMALL")x | |"
echo "| guest to guest call through hubd, 1 KiB (a pool slot: copied across zones), median: one zone / zones of their own | $Z_1K / $G2G_1K | ns | | $(ratio "$G2G_1K" "$Z_1K")x | |"
echo "| shared pool allocate+free, 64 B, 1 process | $POOL_VAR | ns/pair | fixed pool $POOL_FIXED ns/pair | $(ratio "$POOL_VAR" "$POOL_FIXED")x | |"
echo "| shared pool allocate+free, 64 B, 2 processes, same class | $POOL_VAR2 | ns/pair | fixed pool, same pool, $POOL_FIXED2 ns/pair | $(ratio "$POOL_VAR2" "$POOL_FIXED2")x | |"
echo "| a guest's domain, default config (laid out for 16 guests, only its own areas touched; hp_geometry_compute says $DOM_DEFAULT_CALC) | $DOM_DEFAULT | bytes | fixed pools only, 16 MiB slots (computed) $DOM_FIXED16M bytes | $(ratio "$DOM_FIXED16M" "$DOM_DEFAULT")x smaller | |"
echo "| a zone's pool, default config, as it starts (payloads to 32 MiB; hp_var_initial_size says $POOL_DEFAULT_CALC) | $POOL_DEFAULT | bytes | | | |"
echo "| the default config's hub with 2 guests: mapped by hubd (2 domains, 2 pools) / resident in them | $DEFAULT_MAPPED / $DEFAULT_HELD | bytes | hubd's VmRSS $DEFAULT_RSS bytes | | |"
echo "| the large-payload hubs after their runs (2 guests; extents appended on demand), mapped / resident: one zone | $LARGEZ_MAPPED / $LARGEZ_HELD | bytes | | | |"
echo "| the same, zones of their own | $LARGE_MAPPED / $LARGE_HELD | bytes | one zone, resident $LARGEZ_HELD bytes | $(ratio "$LARGE_HELD" "$LARGEZ_HELD")x | |"
echo "| microthread yield, one switch (P = 1) | $MT_YIELD | ns | bare jump_fcontext pair $MT_FCTX ns | $(ratio "$MT_YIELD" "$MT_FCTX")x | |"
echo "| the same against a condvar hand-off between two threads | $MT_YIELD | ns | condvar $MT_CONDVAR ns; both threads on CPU 0 $MT_CONDVAR_1CPU ns | $(ratio "$MT_CONDVAR" "$MT_YIELD")x / $(ratio "$MT_CONDVAR_1CPU" "$MT_YIELD")x slower | |"
echo "| microthread spawn + exit + join | $MT_SPAWN | ns | one switch $MT_YIELD ns | $(ratio "$MT_SPAWN" "$MT_YIELD")x | |"
echo "| microthread spawn + exit, detached (with the yield that runs it) | $MT_DETACHED | ns | joined $MT_SPAWN ns | $(ratio "$MT_DETACHED" "$MT_SPAWN")x | |"
echo "| runtime channel round trip, rendezvous, P = 1 | $MT_CHAN1 | ns | two switches $MT_YIELD ns each; futex ping-pong (processes) $FUTEX ns | $(ratio "$MT_CHAN1" "$MT_YIELD")x; $(ratio "$FUTEX" "$MT_CHAN1")x slower | |"
echo "| runtime channel round trip, rendezvous, P = 2 (placement the runtime's) | $MT_CHAN2 | ns | P = 1 $MT_CHAN1 ns; condvar round trip $MT_CONDVAR_RTT ns | $(ratio "$MT_CHAN2" "$MT_CHAN1")x; $(ratio "$MT_CHAN2" "$MT_CONDVAR_RTT")x | |"
echo "| host-served call (hub.ping, 8 B) from a handler run as a callback (guest_run), median, lowest of $REPS | $MT_CB | ns | the host-served call above (same hub keys, one run) $MED ns | $(ratio "$MT_CB" "$MED")x | |"
echo "| the same from a handler on a microthread (guest_run_mt, P = 1), median | $MT_MT | ns | from a callback $MT_CB ns | $(ratio "$MT_MT" "$MT_CB")x | <= 1.1x |"
echo "| host-served call from a callback / from a microthread, p99, lowest of $REPS | $MT_CB99 / $MT_MT99 | ns | | $(ratio "$MT_MT99" "$MT_CB99")x | |"
echo "| $MT_W calls in flight into microthread handlers (P = 1) that each call hub.ping (nest) | $FLOOD | calls/s | 64 in flight $FLOOD64 calls/s | $(ratio "$FLOOD" "$FLOOD64")x | |"
echo "| the same, memory per call in flight: (VmHWM after - VmRSS before) / $MT_W | $FLOOD_MEM | bytes | VmHWM after $FLOOD_HWM kB | | |"
echo "| $MT_W calls in flight into microthread handlers on P = 2 | $FLOOD2 | calls/s | P = 1 $FLOOD calls/s | $(ratio "$FLOOD2" "$FLOOD")x | |"
echo "| the same, memory per call in flight | $FLOOD2_MEM | bytes | VmHWM after $FLOOD2_HWM kB | | |"
echo "| a C guest calls a Python guest (routed), 8 B, median / p99 | $PY_IN / $PY_IN99 | ns | C guest to C guest through hubd $G2G ns | $(ratio "$PY_IN" "$G2G")x | |"
echo "| a Python guest calls hub.ping, 8 B, median / p99 | $PY_HOST / $PY_HOST99 | ns | from a C guest $MED ns | $(ratio "$PY_HOST" "$MED")x | |"
echo "| a Python guest calls a C guest, 8 B, median / p99 | $PY_OUT / $PY_OUT99 | ns | C guest to C guest through hubd $G2G ns | $(ratio "$PY_OUT" "$G2G")x | |"
echo "| an 8 B round trip between two Python processes over a UNIX socketpair (no hub), median / p99 | $PY_SOCK / $PY_SOCK99 | ns | a C guest calls a Python guest $PY_IN ns | $(ratio "$PY_SOCK" "$PY_IN")x slower | |"
echo "| a Python guest reads hub.source as an iterator | $PY_SRC | MB/s | | | |"
nats_rows
nats_topics_rows
pubsub_rows
} > "$OUT/bench.md"
PEER_ERR+=$PS_ERR
[ -n "$PEER_ERR" ] && echo "peers that did not run: $PEER_ERR" >> "$OUT/bench.md"
cat "$OUT/bench.md"

cat > "$OUT/bench.dat" <<DAT
"shm ping-pong" $SHM
"hub call median" $MED
"hub call p99" $P99
"futex ping-pong" $FUTEX
"futex after 5 ms quiet" $FUTEX_IDLE
"hub wake-from-idle" $IDLE
"socketpair" $SOCK
"ZeroMQ ipc" ${ZMQ:-0}
"hub guest to guest, through hubd" $G2G
"hub guest to guest, lane" $LANE
"iceoryx busy-polling" ${IOX_SPIN:-0}
"iceoryx WaitSet" ${IOX_WS:-0}
"D-Bus dbus-daemon" ${DBUS:-0}
"microthread channel, P=1" $MT_CHAN1
"microthread channel, P=2" $MT_CHAN2
"hub call from a microthread" $MT_MT
"Python guest calls hub.ping" $PY_HOST
"NATS request/reply" $NB_MED
"NATS request/reply, send_asap" $NBA_MED
"hub call across hub-nats" $BR_MED
DAT
if command -v gnuplot >/dev/null; then
	gnuplot <<GP || echo "bench: gnuplot failed" >&2
set terminal png size 900,500
set output "$OUT/bench.png"
set title "round trip on this machine (ns, log scale; lower is better)"
set logscale y
set style fill solid 0.6
set boxwidth 0.6
set xtics rotate by -25
set grid ytics
plot "$OUT/bench.dat" using 0:2:xtic(1) with boxes notitle
GP
	echo "plot: $OUT/bench.png" >&2
fi
echo "bench: 1 passed, 0 failed"
