#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# make bench's memory report: what a hub of 16 and of 255 idle guests
# holds, each guest a tests/bench/benchguest (libguest, a few methods, no
# work), the config the default one but for max_guests and the guests.
#   memory.sh BUILD_DIR [BEFORE_BUILD_DIR]
# BUILD_DIR is this tree's build; BEFORE_BUILD_DIR (make bench
# BEFORE=DIR) another build to compare with, such as one of the last commit
# with a single segment file every guest mapped (9110933):
#   git worktree add /tmp/hub-before 9110933
#   make -C /tmp/hub-before -j2 all build/tests/bench/benchguest
#   make bench BEFORE=/tmp/hub-before/build
# A build whose hubd still takes [hub] segment gets one of its own in
# /dev/shm (removed after). For each hub, once every guest is up and a
# few heartbeats have passed:
#   start		from hubd's start until every guest is up
#   hubd RSS, Pss	VmRSS (/proc/PID/status), Pss (/proc/PID/smaps_rollup)
#   guests' Pss		the sum over the guests (shared pages split among
#			the processes that map them)
#   shared memory	what the hub's shared memory holds in pages: the
#			segment file's allocated blocks, or the blocks of
#			every /memfd:hub* hubd has open (domains and pools)
#   hubd VmSize		the address space hubd has mapped
#   hubd VmPTE		its page tables (kernel memory, in no RSS)
#   per guest		(hubd's and the guests' Pss without their Pss_Shmem,
#			plus the shared memory, plus hubd's and the guests'
#			page tables) / guests: every page once
# Prints the table and writes it to results/memory.md. MEM_GUESTS="16 255"
# (the default) sets the hub sizes.
set -euo pipefail
AFTER=$(cd "$1" && pwd)
BEFORE=${2:-}
[ -z "$BEFORE" ] || BEFORE=$(cd "$BEFORE" && pwd)
SIZES=${MEM_GUESTS:-16 255}
OUT=results
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/hub-mem-XXXXXX)
SHM=/dev/shm/hub-mem-$$
HUBD=""
GUESTS=""

stop_hub() {
	local p i

	[ -n "$HUBD" ] || return 0
	kill "$HUBD" 2>/dev/null || true
	for i in $(seq 100); do kill -0 "$HUBD" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$HUBD" 2>/dev/null || true
	wait "$HUBD" 2>/dev/null || true
	# hubd ends its guests as it stops; any left over are ours to end
	for p in $GUESTS; do kill -9 "$p" 2>/dev/null || true; done
	HUBD="" GUESTS=""
}
cleanup() {
	stop_hub
	rm -rf "$TMP" "$SHM"-* 2>/dev/null || true
}
trap cleanup EXIT

for b in "$AFTER" $BEFORE; do
	for f in hubd hubctl tests/bench/benchguest; do
		[ -x "$b/$f" ] || { echo "memory: $b/$f is missing (make -C ${b%/build} all" \
			"build/tests/bench/benchguest)" >&2; exit 1; }
	done
done

# kb FILE KEY: the figure of a "Key: N kB" line
kb() { awk -v k="$2:" '$1 == k { print $2; exit }' "$1"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.2f", k / 1024 }'; }

# old_layout BUILD: whether its hubd still takes [hub] segment
old_layout() {
	printf '[hub]\nsegment = %s-probe\ncontrol = %s/probe.sock\n' "$SHM" "$TMP" > "$TMP/probe.conf"
	"$1/hubd" -n -f "$TMP/probe.conf" >/dev/null 2>&1
}

# memfd_kb PID: the blocks of the hub's memfds PID holds open, in KiB
memfd_kb() {
	local f n=0

	for f in /proc/"$1"/fd/*; do
		case $(readlink "$f" 2>/dev/null) in
		/memfd:hub*) n=$((n + $(stat -L -c '%b * %B' "$f"))) ;;
		esac
	done
	echo $((n / 1024))
}

# measure LABEL BUILD N: a hub of N guests from BUILD, one table row
measure() {
	local label=$1 b=$2 n=$3 conf=$TMP/$1-$3.conf seg="" ctl t0 t1 up i p
	local rss pss pss_shm gpss=0 gshm=0 gpte=0 shm vms pte per

	ctl="$b/hubctl -s $TMP/$label-$n.sock -t 60"
	{
		printf '[hub]\ncontrol = %s/%s-%s.sock\nmax_guests = %s\n' "$TMP" "$label" "$n" "$n"
		if old_layout "$b"; then
			seg=$SHM-$label-$n
			printf 'segment = %s\n' "$seg"
		fi
		for i in $(seq "$n"); do
			printf '[guest g%s]\nexec = %s/tests/bench/benchguest\nargs = --prefix g%s\n' \
				"$i" "$b" "$i"
		done
	} > "$conf"
	t0=$(date +%s%N)
	"$b/hubd" -f "$conf" 2>"$TMP/$label-$n.log" &
	HUBD=$!
	up=0
	for i in $(seq 6000); do
		up=$($ctl -j peers 2>/dev/null | grep -o '"state":"up"' | wc -l) || up=0
		[ "$up" -ge "$n" ] && break
		kill -0 "$HUBD" 2>/dev/null || break
		sleep 0.1
	done
	t1=$(date +%s%N)
	if [ "$up" -lt "$n" ]; then
		echo "memory: $label: $up of $n guests up" >&2
		tail -20 "$TMP/$label-$n.log" >&2
		exit 1
	fi
	GUESTS=$($ctl -j peers | grep -o '"pid":[0-9]*' | cut -d: -f2)
	[ "$(wc -w <<<"$GUESTS")" -eq "$n" ] ||
		{ echo "memory: $label: $(wc -w <<<"$GUESTS") guest pids for $n guests" >&2; exit 1; }
	sleep 3		# a few heartbeats and a pool sweep: the idle state
	rss=$(kb "/proc/$HUBD/status" VmRSS); vms=$(kb "/proc/$HUBD/status" VmSize)
	pte=$(kb "/proc/$HUBD/status" VmPTE)
	pss=$(kb "/proc/$HUBD/smaps_rollup" Pss); pss_shm=$(kb "/proc/$HUBD/smaps_rollup" Pss_Shmem)
	for p in $GUESTS; do
		gpss=$((gpss + $(kb "/proc/$p/smaps_rollup" Pss)))
		gshm=$((gshm + $(kb "/proc/$p/smaps_rollup" Pss_Shmem)))
		gpte=$((gpte + $(kb "/proc/$p/status" VmPTE)))
	done
	if [ -n "$seg" ]; then
		shm=$(($(stat -c '%b * %B' "$seg") / 1024))
	else
		shm=$(memfd_kb "$HUBD")
	fi
	per=$(((pss - pss_shm + gpss - gshm + shm + pte + gpte) / n))
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$n" \
		"$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')" \
		"$(mib "$rss")" "$(mib "$pss")" "$(mib "$gpss")" "$(mib "$shm")" \
		"$(mib "$vms")" "$(mib "$pte")" "$per"
	stop_hub
	rm -f "$seg"
}

rev() { git -C "$1/.." rev-parse --short HEAD 2>/dev/null || echo "?"; }
{
	echo "Memory of a hub of idle guests, $(date -u +%Y-%m-%d), $(uname -m)," \
		"$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1))," \
		"$(awk '$1 == "MemTotal:" { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo);" \
		"after: $(rev "$AFTER")${BEFORE:+, before: $(rev "$BEFORE")}"
	echo
	echo "| build | guests | start (s) | hubd RSS (MiB) | hubd Pss (MiB) | guests' Pss, sum (MiB) | shared memory held (MiB) | hubd VmSize (MiB) | hubd VmPTE (MiB) | per guest (KiB) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for n in $SIZES; do
		[ -z "$BEFORE" ] || measure before "$BEFORE" "$n"
		measure after "$AFTER" "$n"
	done
} > "$OUT/memory.md"
cat "$OUT/memory.md"
