# SPDX-License-Identifier: MIT OR Apache-2.0
# Sourced by run.sh, run in its shell (start_hub, must, val, ratio, TMP,
# HUBS). bench_nats: a call across hub-nats against plain NATS
# request/reply, on a nats-server of its own on a free loopback port:
#   hub B: benchguest rb (rb.echo) and hub-nats exporting rb.*
#   hub A: benchguest ra and hub-nats importing rb.* (provides = rb.*)
# ra.rtt rb.echo: one call in flight; ra.pipeto rb.echo: W in flight,
# each answer checked. natsbase: a responder and a requester on libnats,
# the same payload (the 9 bytes of benchguest's 8-byte argument, postcard
# encoded; hub-nats adds its headers), with libnats's default options as
# hub-nats has them, and with send_asap (-a). Then the same on CPU 0
# alone: a nats-server, two hubs and the plain NATS pair of their own.
# Every process it starts goes into HUBS, a nats-server into LATE:
# run.sh's EXIT trap stops them, whatever fails, the servers last (a
# hub-nats stopping says goodbye on NATS). Sets the NB_* and BR_* figures; nats_rows prints them.
NATSD=$(command -v nats-server || echo /usr/sbin/nats-server)

nats_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nats_server NAME [PIN]: a nats-server on loopback, listening; sets NATS_URL
nats_server() {
	local port

	port=$(nats_port)
	${2:-} "$NATSD" -a 127.0.0.1 -p "$port" > "$TMP/$1.log" 2>&1 &
	LATE+=($!)
	NATS_URL=nats://127.0.0.1:$port
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "bench: nats-server did not start (make deps installs it)" >&2
	cat "$TMP/$1.log" >&2
	exit 1
}

# nats_fail WHAT: the bridge path gave no figure: why, and the hubs' logs
nats_fail() {
	echo "bench: the call across hub-nats failed: $1" >&2
	for f in "$TMP"/nb?.log "$TMP"/nc?.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}

# nats_trust NAME: keys for bridges NAMEa and NAMEb, each its own (mode
# 0600: as root, the bridges run as nobody, who owns it), in
# TMP/NAMEa.key and TMP/NAMEb.key; sets NATS_TRUST (a [trust] section
# naming both) and NATS_USER (the guest's user = line, or none)
nats_trust() {
	local h

	NATS_TRUST="[trust]"; NATS_USER=""
	for h in a b; do
		rm -f "$TMP/$1$h.key"
		NATS_TRUST="$NATS_TRUST\n$1$h = $($B/hub-nats --keygen "$TMP/$1$h.key" | sed -n 's/^[^#].* = //p')"
		[ "$(id -u)" = 0 ] && chown nobody "$TMP/$1$h.key" && NATS_USER="user = nobody\n"
	done
	return 0
}

# bridge_hubs NAME: hubs NAMEb (exports rb.*) and NAMEa (imports it) on
# NATS_URL, under PIN_HUB when set; waits until A has rb.echo, sets CTL (A's)
bridge_hubs() {
	local n=$1

	# hubd starts guests as users of their own (guest_uids): hub-nats
	# reads its config through TMP (mktemp's, 0700)
	chmod 711 "$TMP"
	local trust user

	nats_trust "$n"
	trust=$NATS_TRUST; user=$NATS_USER
	printf '[nats]\nservers = %s\nname = %sb\nannounce = 500ms\nkey = %s\n[export]\nmethods = rb.*\n%b\n' \
		"$NATS_URL" "$n" "$TMP/${n}b.key" "$trust" > "$TMP/${n}b-nats.conf"
	printf '[nats]\nservers = %s\nname = %sa\nannounce = 500ms\nkey = %s\n[import]\nmethods = rb.*\ntimeout = 10s\n%b\n' \
		"$NATS_URL" "$n" "$TMP/${n}a.key" "$trust" > "$TMP/${n}a-nats.conf"
	chmod 644 "$TMP/${n}b-nats.conf" "$TMP/${n}a-nats.conf"
	start_hub "${n}b" "max_guests = 3" \
		"[guest rb]\nexec = $B/tests/bench/benchguest\nargs = --prefix rb\n[guest nats]\nexec = $B/hub-nats\nargs = --config $TMP/${n}b-nats.conf\n$user" 2
	start_hub "${n}a" "max_guests = 3" \
		"[guest ra]\nexec = $B/tests/bench/benchguest\nargs = --prefix ra\n[guest nats]\nexec = $B/hub-nats\nargs = --config $TMP/${n}a-nats.conf\nprovides = rb.*\n$user" 2
	for _ in $(seq 200); do
		$CTL methods 2>/dev/null | grep -q '^rb\.echo\b' && return 0
		sleep 0.05
	done
	nats_fail "hub ${n}a never imported rb.echo"
}

# bridge_call KEY ARGS...: hubctl call on A, its answer, which must hold KEY
bridge_call() {
	local key=$1 out

	shift
	out=$($CTL call "$@" 2>&1) || nats_fail "hubctl call $*: $out"
	grep -q "$key" <<<"$out" || nats_fail "hubctl call $*: no $key in: $out"
	echo "$out"
}

# natsbase_serve SUBJECT [-a] [PIN]: a plain NATS responder, subscribed
natsbase_serve() {
	local out=$TMP/natsbase-$1.out

	: > "$out"	# there before the responder opens it: polled below
	${3:-} "$B/tests/bench/natsbase" ${2:-} serve "$NATS_URL" "$1" 3600 > "$out" 2>&1 &
	HUBS+=($!)
	for _ in $(seq 100); do grep -q ready=1 "$out" && return 0; sleep 0.05; done
	echo "bench: natsbase's responder did not start" >&2
	cat "$out" >&2
	exit 1
}

# natsbase ARGS...: the requester's figures, which must be there
natsbase() {
	local out

	out=$("$B/tests/bench/natsbase" "$@") || { echo "bench: natsbase $* failed" >&2; exit 1; }
	grep -qE 'p99_ns=|failed=0' <<<"$out" || { echo "bench: natsbase $*: $out" >&2; exit 1; }
	echo "$out"
}

# nats_tree PID...: the PIDs and their descendants (a hub's guests)
nats_tree() {
	local p

	for p in "$@"; do
		echo "$p"
		nats_tree $(pgrep -P "$p" || true)
	done
}

# nats_cost PID...: "TICKS CS": the processes' CPU time in clock ticks
# (utime + stime, every thread's) and their live threads' context
# switches, voluntary or not
nats_cost() {
	local p t=0 c=0 x

	for p in "$@"; do
		x=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null) && t=$((t + x))
		x=$(cat /proc/"$p"/task/*/status 2>/dev/null |
			awk '/ctxt_switches/ { s += $2 } END { print s + 0 }') && c=$((c + x))
	done
	echo "$t $c"
}

# nats_per_call "T0 C0" "T1 C1" CALLS [CPU_US CS]: sets PC_US (CPU us per
# call) and PC_CS (context switches per call) from two nats_cost
# figures, plus what a process measured of itself
nats_per_call() {
	local tck t0 c0 t1 c1

	tck=$(getconf CLK_TCK)
	read -r t0 c0 <<<"$1"
	read -r t1 c1 <<<"$2"
	PC_US=$(awk -v t=$((t1 - t0)) -v k="$tck" -v n="$3" -v u="${4:-0}" \
		'BEGIN { printf "%.1f", (t * 1e6 / k + u) / n }')
	PC_CS=$(awk -v c=$((c1 - c0)) -v n="$3" -v x="${5:-0}" 'BEGIN { printf "%.2f", (c + x) / n }')
}

bench_nats() {
	local r pids c0 hubs responder one="taskset -c 0"

	echo "hub-nats: two hubs through one nats-server, and plain NATS..." >&2
	nats_server natsd
	bridge_hubs nb
	hubs="${HUBS[-2]} ${HUBS[-1]}"
	# one call in flight: NATS_ROUNDS rounds of N_NATS calls, each the
	# bridge's then plain NATS's (send_asap), so that both sides of a
	# round's ratio see the same machine (it drifts by 2x); the figures
	# are the medians over the rounds, the ratio the median of theirs
	natsbase_serve bench.echoa -a
	responder=${HUBS[-1]}
	for _ in $(seq "$NATS_ROUNDS"); do
		r=$(bridge_call p99_ns= ra.rtt rb.echo "$N_NATS" 8)
		echo "$(val median_ns "$r") $(val p99_ns "$r")" >> "$TMP/one.hub"
		r=$(natsbase -a rtt "$NATS_URL" bench.echoa "$N_NATS" 9)
		echo "$(val median_ns "$r") $(val p99_ns "$r")" >> "$TMP/one.nats"
	done
	BR_MED=$(cut -d' ' -f1 "$TMP/one.hub" | median); BR_P99=$(cut -d' ' -f2 "$TMP/one.hub" | median)
	NBA_MED=$(cut -d' ' -f1 "$TMP/one.nats" | median); NBA_P99=$(cut -d' ' -f2 "$TMP/one.nats" | median)
	BR_R1S=$(paste -d' ' "$TMP/one.hub" "$TMP/one.nats" | awk '{ printf "%.2f\n", $1 / $3 }' | sort -g)
	r=$(bridge_call failed=0 ra.pipeto rb.echo "$PIPE_MS" 64 0); BR_64=$(val per_s "$r")
	# CPU and context switches per call: both hubds, their guests (the
	# caller, the callee, both bridges) and nats-server
	pids=$(nats_tree $hubs "${LATE[-1]}")
	c0=$(nats_cost $pids)
	r=$(bridge_call failed=0 ra.pipeto rb.echo "$PIPE_MS" 256 0); BR_256=$(val per_s "$r")
	nats_per_call "$c0" "$(nats_cost $pids)" "$(val calls "$r")"
	BR_US=$PC_US; BR_CS=$PC_CS
	[ -n "$BR_MED" ] && [ -n "$BR_64" ] && [ -n "$BR_256" ] || nats_fail "no figures"
	# a stream across: rb.produce sends 1 KiB items into ra's chan<bytes>
	r=$(bridge_call items_ok=1 ra.gstream rb "$NATS_STREAM" 1024)
	BR_ITEMS=$(val items_per_s "$r")
	# the same again: each hub has given its two guests a lane for
	# rb.produce by now (the first call of a method between two guests
	# goes through hubd, which then relays its stream)
	r=$(bridge_call items_ok=1 ra.gstream rb "$NATS_STREAM" 1024)
	BR_ITEMS2=$(val items_per_s "$r")

	natsbase_serve bench.echo
	r=$(natsbase rtt "$NATS_URL" bench.echo "$N_NATS" 9)
	NB_MED=$(val median_ns "$r"); NB_P99=$(val p99_ns "$r")
	NB_64=$(val per_s "$(natsbase pipe "$NATS_URL" bench.echo "$PIPE_MS" 64 9)")
	NB_256=$(val per_s "$(natsbase pipe "$NATS_URL" bench.echo "$PIPE_MS" 256 9)")
	NBA_64=$(val per_s "$(natsbase -a pipe "$NATS_URL" bench.echoa "$PIPE_MS" 64 9)")
	# the responder (bench.echoa's) and nats-server, and the requester's own
	pids="$responder ${LATE[-1]}"
	c0=$(nats_cost $pids)
	r=$(natsbase -a pipe "$NATS_URL" bench.echoa "$PIPE_MS" 256 9)
	NBA_256=$(val per_s "$r")
	nats_per_call "$c0" "$(nats_cost $pids)" "$(val calls "$r")" "$(val cpu_us "$r")" \
		"$(val cs "$r")"
	NBA_US=$PC_US; NBA_CS=$PC_CS
	r=$("$B/tests/bench/natsbase" stream "$NATS_URL" bench.items $((NATS_STREAM / 1024)) 1024)
	NB_ITEMS=$(val items_per_s "$r"); NB_LOST=$(val lost "$r")
	[ -n "$NB_ITEMS" ] || { echo "bench: natsbase stream: $r" >&2; exit 1; }

	echo "hub-nats and plain NATS, all on CPU 0..." >&2
	nats_server natsd1 "$one"
	PIN_HUB=$one bridge_hubs nc
	r=$(bridge_call failed=0 ra.pipeto rb.echo "$PIPE_MS" 256 0); BR1_256=$(val per_s "$r")
	[ -n "$BR1_256" ] || nats_fail "no figure on CPU 0"
	natsbase_serve bench.echo1 "" "$one"
	natsbase_serve bench.echo1a -a "$one"
	NB1_256=$(val per_s "$($one "$B/tests/bench/natsbase" pipe "$NATS_URL" bench.echo1 "$PIPE_MS" 256 9)")
	NBA1_256=$(val per_s "$($one "$B/tests/bench/natsbase" -a pipe "$NATS_URL" bench.echo1a "$PIPE_MS" 256 9)")
	[ -n "$NB1_256" ] && [ -n "$NBA1_256" ] || { echo "bench: natsbase on CPU 0 failed" >&2; exit 1; }
}

# goal RATIO OP LIMIT: "met" or "NOT met" (OP: le, ge)
goal() {
	awk -v r="$1" -v op="$2" -v l="$3" 'BEGIN {
		ok = op == "le" ? r + 0 <= l + 0 : r + 0 >= l + 0
		print (r == "-" || !ok) ? "NOT met" : "met" }'
}

# nats_rows: the table's rows (run.sh's columns); LANE and LANE_P64 are
# the local guest to guest call over a lane on one hub, from run.sh. The
# goals (issue 43) are against plain NATS with send_asap, the faster of
# its two single-call figures
nats_rows() {
	local how="A's guest to B's: A's hub-nats, NATS, B's hub-nats; 8 B"
	local asap="plain NATS request/reply, 2 processes, send_asap (no flusher delay: hub-nats writes at the end of each loop pass)"
	local plain="plain NATS with libnats defaults (its flusher holds a message about 1 ms)"
	local r1 r64 r256 rone rcpu rst rst2

	r1=$(median <<<"$BR_R1S"); r64=$(ratio "$BR_64" "$NBA_64")
	r256=$(ratio "$BR_256" "$NBA_256"); rone=$(ratio "$BR1_256" "$NBA1_256")
	rcpu=$(ratio "$BR_US" "$NBA_US"); rst=$(ratio "$BR_ITEMS" "$NB_ITEMS")
	rst2=$(ratio "$BR_ITEMS2" "$NB_ITEMS")
	echo "| a call across hub-nats ($how), median / p99, medians of $NATS_ROUNDS rounds of $N_NATS alternated with plain NATS | $BR_MED / $BR_P99 | ns | $asap: $NBA_MED / $NBA_P99 ns | ${r1}x ($(head -1 <<<"$BR_R1S")-$(tail -1 <<<"$BR_R1S"), the rounds' median and spread) / $(ratio "$BR_P99" "$NBA_P99")x | median <= 1.3x: $(goal "$r1" le 1.3) |"
	echo "| the same against plain NATS with libnats defaults | $BR_MED / $BR_P99 | ns | $plain: $NB_MED / $NB_P99 ns | $(ratio "$BR_MED" "$NB_MED")x / $(ratio "$BR_P99" "$NB_P99")x | |"
	echo "| the same against hub's local guest to guest call over a lane | $BR_MED | ns | over a lane $LANE ns | $(ratio "$BR_MED" "$LANE")x | |"
	echo "| calls across hub-nats, 64 in flight | $BR_64 | calls/s | $asap (async publish, replies to an inbox): $NBA_64; $plain: $NB_64 requests/s | ${r64}x; $(ratio "$BR_64" "$NB_64")x | >= 1.0x of send_asap: $(goal "$r64" ge 1.0) |"
	echo "| the same against hub's local guest to guest calls over a lane, 64 in flight | $BR_64 | calls/s | over a lane $LANE_P64 calls/s | $(ratio "$BR_64" "$LANE_P64")x | |"
	echo "| calls across hub-nats, 256 in flight | $BR_256 | calls/s | $asap: $NBA_256; $plain: $NB_256 requests/s | ${r256}x; $(ratio "$BR_256" "$NB_256")x | >= 1.0x of send_asap: $(goal "$r256" ge 1.0) |"
	echo "| one CPU (taskset -c 0: nats-server, both hubs, their guests): calls across hub-nats, 256 in flight | $BR1_256 | calls/s | the same plain NATS on CPU 0, send_asap: $NBA1_256; defaults: $NB1_256 requests/s | ${rone}x; $(ratio "$BR1_256" "$NB1_256")x | >= 0.5x of send_asap: $(goal "$rone" ge 0.5) |"
	echo "| CPU per call across hub-nats, 256 in flight (both hubds, both bridges, caller, callee, nats-server) | $BR_US | us | plain NATS send_asap, 256 in flight (requester, responder, nats-server): $NBA_US us | ${rcpu}x | <= 2x: $(goal "$rcpu" le 2) |"
	echo "| context switches per call, the same processes | $BR_CS | switches | plain NATS send_asap: $NBA_CS | $(ratio "$BR_CS" "$NBA_CS")x | |"
	echo "| a stream across hub-nats (chan<bytes>, 1 KiB items, $((NATS_STREAM >> 10)) KiB: B's guest sends, A's reads each; the method's first call, its stream relayed by both hubds) | $BR_ITEMS | items/s | a plain NATS publisher to a subscriber, 1 KiB items, no credit: $NB_ITEMS items/s ($NB_LOST lost) | ${rst}x | >= 0.5x: $(goal "$rst" ge 0.5) |"
	echo "| the same stream again (over the lanes each hub gave its guests after the first call) | $BR_ITEMS2 | items/s | the same plain NATS stream: $NB_ITEMS items/s | ${rst2}x | >= 0.5x: $(goal "$rst2" ge 0.5) |"
}

# bench_nats_topics: topics across hub-nats against plain NATS
# publish-subscribe, a run as tests/bench/pubsub.h has it (64-byte events
# flat out: the events/s the subscriber got and what it lost; then paced:
# latency), on a nats-server of its own:
#   hub ntb: psguest pb publishes pb.ev; hub-nats exports topics pb.*
#   hub nta: psguest s1 subscribes to pb.ev drop-oldest, s2 block;
#	hub-nats imports topics pb.* (publishes = pb.*); 256 slots on both
# natsps: one publisher, one subscriber, the same 64 bytes. Sets the NT_*
# and NP_* figures; nats_topics_rows prints them. Uses pubsub.sh's
# ps_period, ps_wait, ps_figures and run lengths.
bench_nats_topics() {
	local r ctlb psd=$TMP/nt.d npd=$TMP/np.d
	local keys="max_guests = 3\n[topic pb.ev]\nslots = 256\nevent_max = 64"

	echo "topics across hub-nats, and plain NATS publish-subscribe..." >&2
	nats_server natsdt
	mkdir -p "$psd" "$npd"; chmod 711 "$TMP"; chmod 1777 "$psd"
	nats_trust nt
	printf '[nats]\nservers = %s\nname = ntb\nannounce = 500ms\nkey = %s\n[export]\ntopics = pb.*\n%b\n' \
		"$NATS_URL" "$TMP/ntb.key" "$NATS_TRUST" > "$TMP/ntb-nats.conf"
	printf '[nats]\nservers = %s\nname = nta\nannounce = 500ms\nkey = %s\n[import]\ntopics = pb.*\n%b\n' \
		"$NATS_URL" "$TMP/nta.key" "$NATS_TRUST" > "$TMP/nta-nats.conf"
	chmod 644 "$TMP/ntb-nats.conf" "$TMP/nta-nats.conf"
	start_hub ntb "$keys" \
		"[guest pb]\nexec = $B/tests/bench/psguest\nargs = --prefix pb --pub pb.ev --out $psd\n[guest nats]\nexec = $B/hub-nats\nargs = --config $TMP/ntb-nats.conf\n$NATS_USER" 2
	ctlb=$CTL
	start_hub nta "$keys" \
		"[guest s1]\nexec = $B/tests/bench/psguest\nargs = --prefix s1 --sub pb.ev --policy drop-oldest --out $psd\n[guest s2]\nexec = $B/tests/bench/psguest\nargs = --prefix s2 --sub pb.ev --policy block --out $psd\n[guest nats]\nexec = $B/hub-nats\nargs = --config $TMP/nta-nats.conf\npublishes = pb.*\n$NATS_USER" 3
	for _ in $(seq 200); do
		$CTL logs nats 2>/dev/null | grep -q 'importing topic pb.ev' && break
		sleep 0.05
	done
	$CTL logs nats 2>/dev/null | grep -q 'importing topic pb.ev' ||
		nats_fail "hub nta never imported topic pb.ev"
	r=$($ctlb call pb.run 1 "$PS_FLAT_MS" "$PS_PACED" "$(ps_period 1)" 2)
	must published= "$r"
	NT_PUB=$(val per_s "$r")
	ps_wait "$psd" 1 2
	r=$(ps_figures "$psd" 1 s2)
	NT_RATE=$(val rate "$r"); NT_LOST=$(val lost_pct "$r")
	NT_MED=$(val median_ns "$r"); NT_P99=$(val p99_ns "$r")
	r=$(ps_figures "$psd" 1 s1)
	NT_BRATE=$(val rate "$r"); NT_BLOST=$(val lost_pct "$r")
	NT_NOTE=$($ctlb -j peers | grep -o 'topics 1 out ([^)]*)' | head -1)
	NT_NOTE_A=$($CTL -j peers | grep -o '1 in ([^)]*)' | head -1 | sed 's/(\([0-9]*\) published/(published=\1/')
	[ -z "${NT_DEBUG:-}" ] || $CTL logs nats >&2
	NT_CROSS=$(awk -v n="$(val published "$NT_NOTE_A")" -v ms="$PS_FLAT_MS" \
		'BEGIN { printf "%.0f", n * 1000 / ms }')
	stop_pids "${HUBS[-1]}" "${HUBS[-2]}"

	r=$(timeout 300 "$B/tests/bench/natsps" "$NATS_URL" "$npd" 1 1 "$PS_FLAT_MS" "$PS_PACED" \
		"$(ps_period 1)") || { echo "bench: natsps failed: $r" >&2; exit 1; }
	NP_PUB=$(val per_s "$r")
	r=$(ps_figures "$npd" 1)
	NP_RATE=$(val rate "$r"); NP_LOST=$(val lost_pct "$r")
	NP_MED=$(val median_ns "$r"); NP_P99=$(val p99_ns "$r")
}

# nats_topics_rows: the table's rows (run.sh's columns)
nats_topics_rows() {
	local how="psguest on hub B to psguest on hub A (drop-oldest, 256 slots): B's hub-nats, NATS, A's hub-nats"
	local plain="plain NATS publish-subscribe (natsps: 1 publisher, 1 subscriber, libnats defaults)"

	echo "| topics across hub-nats ($how), 64 B events flat out: events/s the drop-oldest subscriber got | $NT_RATE | events/s | $plain: $NP_RATE | $(ratio "$NT_RATE" "$NP_RATE")x | >= 0.5x: $(goal "$(ratio "$NT_RATE" "$NP_RATE")" ge 0.5) |"
	echo "| the same: events lost (lapped on B or A, dropped), % | $NT_LOST | % | plain NATS $NP_LOST; publishers $NT_PUB and $NP_PUB events/s; B's bridge: $NT_NOTE, A's: $NT_NOTE_A | | |"
	echo "| the same, a block subscriber on A beside it (A's bridge waits for it): events/s it got, lost % | $NT_BRATE / $NT_BLOST | events/s / % | $plain: $NP_RATE / $NP_LOST | $(ratio "$NT_BRATE" "$NP_RATE")x | |"
	echo "| the same: events A's bridge published per second of the flat phase (what crossed NATS) | $NT_CROSS | events/s | $plain: $NP_RATE | $(ratio "$NT_CROSS" "$NP_RATE")x | >= 0.5x: $(goal "$(ratio "$NT_CROSS" "$NP_RATE")" ge 0.5) |"
	echo "| topics across hub-nats, latency publish to callback, one event every $(ps_period 1) us, median / p99 | $NT_MED / $NT_P99 | ns | plain NATS $NP_MED / $NP_P99 ns | $(ratio "$NT_MED" "$NP_MED")x / $(ratio "$NT_P99" "$NP_P99")x | |"
}
