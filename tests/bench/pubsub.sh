# SPDX-License-Identifier: MIT OR Apache-2.0
# Sourced by run.sh, run in its shell (start_hub, must, val, ratio, TMP,
# HUBS, SMOKE). bench_pubsub: one publisher to 1, 4 and 16 subscribers,
# each its own process, a run as tests/bench/pubsub.h has it (64-byte
# events; throughput flat out, latency paced): hub's topics (psguest:
# pb publishes pb.ev, s1..sN subscribe; 256 slots) drop-oldest and
# block, against iceoryx publish-subscribe (ioxps, a queue of 256 that
# discards its oldest, or blocks the publisher; iox.sh) and D-Bus
# signals through dbus-daemon (dbusps; dbus.sh). Then, on the hub of 4
# drop-oldest subscribers: the others' rate while s4 is stopped
# (SIGSTOP), the CPU of hubd and its guests while the publisher is
# quiet, what a subscription maps; and the 4 subscribers on CPU 0 alone
# for the three. Sets the PS_* figures; pubsub_rows prints them.

# the subscriber counts measured, and a run's lengths
PS_NS="1 4 16"
PS_FLAT_MS=1000; PS_PACED=1000; PS_IDLE_S=2
if [ "$SMOKE" = --smoke ]; then PS_NS=4; PS_FLAT_MS=50; PS_PACED=50; PS_IDLE_S=1; fi
# ps_period N: between two paced events, us: the same for every system;
# 1 ms and more so that D-Bus's daemon, which sends each event once per
# subscriber and wakes each, keeps up (at 100 us it does not)
ps_period() { echo $((125 * $1 > 1000 ? 125 * $1 : 1000)); }

# ps_figures DIR RUN [SKIP]: the reports DIR/*.RUN (but SKIP's) pooled:
# "rate=.. min_rate=.. lost_pct=.. subs=.. median_ns=.. p99_ns=.."; rate
# is the mean over the subscribers of events / own window
ps_figures() {
	local dir=$1 run=$2 skip=${3:-} f files=() lat

	for f in "$dir"/*."$run"; do
		[ -e "$f" ] && [ "$(basename "$f" ".$run")" != "$skip" ] && files+=("$f")
	done
	[ ${#files[@]} -gt 0 ] || return 0
	lat=$(tail -q -n +2 "${files[@]}" | sort -n | awk '{ a[NR] = $1 } END {
		if (NR) printf "median_ns=%.0f p99_ns=%.0f", a[int(NR / 2) + 1], a[int(NR * 0.99) + 1] }')
	awk -v lat="$lat" 'FNR == 1 {
		split($0, kv, /[ =]/); c = kv[2]; w = kv[4]
		r = w > 0 ? c * 1e9 / w : 0
		s += r; n++; if (n == 1 || r < min) min = r
		got += c; lost += kv[6]
	} END {
		printf "rate=%.0f min_rate=%.0f lost_pct=%.1f subs=%d %s\n", s / n, min,
			got + lost ? 100 * lost / (got + lost) : 0, n, lat
	}' "${files[@]}"
}
# ps_keys PREFIX FIGURES: the figures as PREFIX_KEY=VALUE lines
ps_keys() { tr ' ' '\n' <<<"$2" | sed "s/^/$1_/"; }
# ps_wait DIR RUN N: until N reports of RUN are there (60 s at most)
ps_wait() {
	for _ in $(seq 1200); do
		[ "$(ls "$1" | grep -c "\.$2\$")" -ge "$3" ] && return 0
		sleep 0.05
	done
	echo "bench: $3 reports of run $2 in $1 did not come" >&2
	exit 1
}

# ps_hub NAME N POLICY: a hub of pb and N subscribers of POLICY (under
# PIN_HUB when set), each subscribed; sets CTL and PSD (their reports)
ps_hub() {
	local i subs=""

	PSD=$TMP/$1.d
	# the guests run as users of their own: they reach PSD through TMP
	mkdir -p "$PSD"; chmod 711 "$TMP"; chmod 1777 "$PSD"
	for i in $(seq "$2"); do
		subs+="[guest s$i]\nexec = $B/tests/bench/psguest\nargs = --prefix s$i --sub pb.ev --policy $3 --out $PSD\n"
	done
	start_hub "$1" "max_guests = $(($2 + 1))\nheartbeat_interval = 5s\n[topic pb.ev]\nslots = 256\nevent_max = 64" \
		"[guest pb]\nexec = $B/tests/bench/psguest\nargs = --prefix pb --pub pb.ev --out $PSD\n$subs" $(($2 + 1))
	for _ in $(seq 200); do
		[ "$(ls "$PSD" | grep -c '\.sub$')" -ge "$2" ] && return 0
		sleep 0.05
	done
	echo "bench: hub $1: not every subscriber subscribed" >&2; cat "$TMP/$1.log" >&2; exit 1
}
# ps_run RUN N NEED: pb publishes run RUN to the hub CTL names (NEED
# subscribers must drain), then waits for NEED reports; PS_PUB: pb's
# events/s in the flat phase
ps_run() {
	local r

	r=$($CTL call pb.run "$1" "$PS_FLAT_MS" "$PS_PACED" "$(ps_period "$2")" "$3")
	must published= "$r"
	PS_PUB=$(val per_s "$r")
	ps_wait "$PSD" "$1" "$3"
}
# ps_pid NAME: guest NAME's pid on the hub CTL names
ps_pid() {
	$CTL -j peers | tr '{' '\n' | grep "\"name\":\"$1\"" | grep -o '"pid":[0-9]*' | cut -d: -f2 | head -1
}
ps_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done; echo "$t"; }
# ps_mapped PID: what PID maps of its subscription (the topic's memory
# and its cursor: /memfd:hub-topic* mappings): "rss=.. pss=.." bytes; Pss
# shares each page among the processes that map it
ps_mapped() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = ($6 ~ /memfd:hub-(topic|cursor)/) }
	     m && $1 == "Rss:" { rss += $2 } m && $1 == "Pss:" { pss += $2 }
	     END { printf "rss=%d pss=%d\n", rss * 1024, pss * 1024 }' "/proc/$1/smaps"
}

bench_pubsub() {
	local n pol r hubd pids s4 t0 t1 one="taskset -c 0"

	for n in $PS_NS; do
		for pol in drop-oldest block; do
			echo "hub topics, 1 publisher to $n subscribers, $pol..." >&2
			ps_hub "ps$n$pol" "$n" "$pol"
			ps_run 1 "$n" "$n"
			ps_keys "hub_${pol%-*}_$n" "$(ps_figures "$PSD" 1)" >> "$TMP/ps.keys"
			if [ "$n" = 4 ] && [ "$pol" = drop-oldest ]; then
				# s4 stops reading: the others' rate against theirs above
				s4=$(ps_pid s4)
				ps_keys hub_three "$(ps_figures "$PSD" 1 s4) pub=$PS_PUB" >> "$TMP/ps.keys"
				kill -STOP "$s4"
				ps_run 2 "$n" 3
				kill -CONT "$s4"
				ps_keys hub_stopped "$(ps_figures "$PSD" 2 s4) pub=$PS_PUB" >> "$TMP/ps.keys"
				ps_wait "$PSD" 2 4
				# a quiet publisher: hubd's and its guests' CPU
				hubd=${HUBS[-1]}
				pids="$hubd $($CTL -j peers | grep -o '"pid":[0-9]*' | cut -d: -f2 | tr '\n' ' ')"
				t0=$(ps_ticks $pids); sleep "$PS_IDLE_S"; t1=$(ps_ticks $pids)
				PS_IDLE=$(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v s="$PS_IDLE_S" \
					'BEGIN { printf "%.2f", 100 * d / hz / s }')
				PS_NPROC=$(wc -w <<<"$pids")
				r=$(ps_mapped "$(ps_pid s1)")
				PS_RSS=$(val rss "$r"); PS_PSS=$(val pss "$r")
			fi
			stop_pids "${HUBS[-1]}"
		done
	done
	echo "hub topics, 1 publisher to 4 subscribers, drop-oldest, all on CPU 0..." >&2
	PIN_HUB=$one ps_hub ps1cpu 4 drop-oldest
	ps_run 1 4 4
	ps_keys hub_1cpu_4 "$(ps_figures "$PSD" 1)" >> "$TMP/ps.keys"
	stop_pids "${HUBS[-1]}"
	if [ "$SMOKE" != --smoke ]; then
		echo "iceoryx and D-Bus publish-subscribe..." >&2
		bench_iox "$B" 0 ps >> "$TMP/ps.keys"
		bench_dbus "$B" 0 ps >> "$TMP/ps.keys"
	fi
	PS=$(cat "$TMP/ps.keys")
	PS_ERR=$(sed -n 's/^\(iox\|dbus\)_error=/\1: /p' <<<"$PS" | tr '\n' ';')
}

# ps_run_peer DIR RUN N PROGRAM ARGS...: one run of ioxps or dbusps (ARGS
# before the plan), its figures as keys PREFIX_...; for iox.sh and
# dbus.sh, which start the peer's daemon: "PREFIX" is $1 of the caller
ps_peer() {
	local prefix=$1 dir=$2 run=$3 n=$4 out

	shift 4
	mkdir -p "$dir"
	if ! out=$(timeout 300 "$@" "$n" "$PS_FLAT_MS" "$PS_PACED" "$(ps_period "$n")" 2>&1); then
		echo "${prefix%%_*}_error=$prefix: $(tail -n 1 <<<"$out" | tr -cd '[:print:]' | cut -c1-120)"
		return 1
	fi
	ps_keys "$prefix" "$(ps_figures "$dir" "$run")"
}

# pubsub_rows: the table's rows (run.sh's columns)
pubsub_rows() {
	local n k h i d

	k() { val "$1" "$PS"; }
	for n in $PS_NS; do
		h=$(k "hub_drop_${n}_rate"); i=$(k "iox_drop_${n}_rate"); d=$(k "dbus_${n}_rate")
		echo "| 1 publisher to $n subscriber(s), 64 B events flat out: events/s per subscriber (hub drop-oldest, 256 slots; iceoryx a queue of 256 discarding its oldest; D-Bus through dbus-daemon, its queues bounded) | $h | events/s | iceoryx ${i:--}; D-Bus ${d:--} | $(ratio "$h" "${i:-0}")x; $(ratio "$h" "${d:-0}")x | >= 1x iceoryx |"
		echo "| the same: events lost (lapped, dropped), % | $(k "hub_drop_${n}_lost_pct") | % | iceoryx $(k "iox_drop_${n}_lost_pct"); D-Bus $(k "dbus_${n}_lost_pct") | | |"
		h=$(k "hub_block_${n}_rate"); i=$(k "iox_block_${n}_rate")
		echo "| the same, lossless (hub block; iceoryx blocks its publisher) | $h | events/s | iceoryx ${i:--} | $(ratio "$h" "${i:-0}")x | |"
		echo "| the same: events lost, % (none expected) | $(k "hub_block_${n}_lost_pct") | % | iceoryx $(k "iox_block_${n}_lost_pct") | | 0 |"
		h=$(k "hub_drop_${n}_median_ns"); i=$(k "iox_drop_${n}_median_ns"); d=$(k "dbus_${n}_median_ns")
		echo "| 1 publisher to $n subscriber(s), latency publish to callback, one event every $(ps_period "$n") us, median | $h | ns | iceoryx ${i:--}; D-Bus ${d:--} | $(ratio "$h" "${i:-0}")x; $(ratio "$h" "${d:-0}")x | <= 1x iceoryx |"
		h=$(k "hub_drop_${n}_p99_ns"); i=$(k "iox_drop_${n}_p99_ns"); d=$(k "dbus_${n}_p99_ns")
		echo "| the same, p99 | $h | ns | iceoryx ${i:--}; D-Bus ${d:--} | $(ratio "$h" "${i:-0}")x; $(ratio "$h" "${d:-0}")x | <= 1x iceoryx |"
	done
	h=$(k hub_1cpu_4_rate); i=$(k iox_1cpu_4_rate); d=$(k dbus_1cpu_4_rate)
	echo "| one CPU (taskset -c 0, every process): 1 publisher to 4 subscribers, events/s per subscriber | $h | events/s | iceoryx ${i:--}; D-Bus ${d:--} | $(ratio "$h" "${i:-0}")x; $(ratio "$h" "${d:-0}")x | |"
	h=$(k hub_1cpu_4_median_ns); i=$(k iox_1cpu_4_median_ns); d=$(k dbus_1cpu_4_median_ns)
	echo "| one CPU: the same, latency median / p99 | $h / $(k hub_1cpu_4_p99_ns) | ns | iceoryx ${i:--} / $(k iox_1cpu_4_p99_ns); D-Bus ${d:--} / $(k dbus_1cpu_4_p99_ns) | $(ratio "$h" "${i:-0}")x; $(ratio "$h" "${d:-0}")x | |"
	if grep -q hub_stopped_rate <<<"$PS"; then
		h=$(k hub_stopped_rate); i=$(k hub_three_rate)
		echo "| 4 drop-oldest subscribers, s4 stopped (SIGSTOP): the other three's events/s each | $h | events/s | all four reading: the same three $i | $(ratio "$h" "$i")x | 0.9x to 1.1x |"
		h=$(k hub_stopped_pub); i=$(k hub_three_pub)
		echo "| the same: the publisher's events/s, s4 stopped | $h | events/s | all four reading $i | $(ratio "$h" "$i")x | |"
		echo "| a quiet publisher for $PS_IDLE_S s: CPU of hubd and its $((PS_NPROC - 1)) guests (utime + stime) | $PS_IDLE | % of a core | | | ~0 |"
		echo "| memory per subscriber: what it maps of its subscription (cursor page + topic memory), resident / its share (Pss) | $PS_RSS / $PS_PSS | bytes | | | |"
	fi
}
