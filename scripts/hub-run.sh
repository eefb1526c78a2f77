#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# hub-run: a throwaway hub around one command, for tests (hub-run(1)).
# It writes a config of its own in a temporary directory (the control
# socket there), starts hubd, waits until every guest is up and every
# method named with -w is registered, runs the command with HUBCTL_SOCKET
# set, then stops hubd, checks no guest outlived it, removes the directory
# and exits with the command's status (125: hub-run itself failed).
set -u

prog=hub-run
usage() {
	echo "usage: $prog [-v] [-c conf] [-g 'name=exec [arg...]']... [-w method]..." \
		"[-t seconds] [--] command [arg...]"
}
# -h: all of it, as hubctl -h and hubd -h say theirs (hub-run(1) is the
# long form)
help() {
	usage
	cat <<'EOT'
Runs command against a throwaway hub: starts a private hubd with the
guests given, waits until each is up and each method of -w is registered,
runs command with HUBCTL_SOCKET set (and hubctl first on PATH), then stops
hubd, checks no guest outlived it and removes what it made.
  -c conf        a hubd.conf whose guests and keys are used (its control
                 socket is replaced by hub-run's own; a relative exec is
                 relative to conf's directory, as hubd takes it)
  -g 'name=exec [arg...]'
                 a guest [guest name] with exec (and args), exec found as
                 a shell finds a command (./x from here, x on PATH);
                 repeatable; -c or -g at least once
  -w method      wait until method is registered first; repeatable
  -t seconds     how long to wait for the hub to be ready (default 30)
  -v             print hubd's log on stderr after the command, always
  -h             this help
environment:
  HUBCTL_SOCKET  set for command: the private hub's control socket
  TMPDIR         where the temporary directory is made (default /tmp)
  hubd and hubctl are the ones beside hub-run, else on PATH; from a build
  tree, PYTHONPATH and HUB_LIBGUEST are set for the tree's Python guests
examples:
  hub-run -g kv=build/guests/kv -w kv.get -- \
      sh -c 'hubctl call kv.put a b && hubctl call kv.get a'
  hub-run -g greet=./greet.py -w greet.hello -- pytest tests/
exit status: command's; 125 an option was wrong, the hub did not come
up, or it did not stop cleanly after command succeeded; 128+N a signal N
ended hub-run
EOT
}
die() {
	echo "$prog: $*" >&2
	exit 125
}

# The first executable file named $1 in PATH's directories, as execvp
# finds it (not a builtin, as command -v says it), with an absolute path;
# 1 if there is none.
on_path() {
	dirs=${PATH-/bin:/usr/bin}:
	while [ -n "$dirs" ]; do
		d=${dirs%%:*} dirs=${dirs#*:}
		case $d in
		'') d=$PWD ;;	# an empty one is here
		/*) ;;
		*) d=$PWD/$d ;;
		esac
		if [ -f "$d/$1" ] && [ -x "$d/$1" ]; then
			printf '%s\n' "$d/$1"	# echo takes \ as an escape
			return 0
		fi
	done
	return 1
}

# -g's name=exec [arg...] as a [guest] section, added to $guests. exec as
# a shell would take it: a path relative to here made absolute (hubd,
# reading its config in another directory, would take it relative to
# that), a name without a slash looked up on PATH.
add_guest() {
	name=${1%%=*} rest=${1#*=}
	exe=${rest%% *}
	args=${rest#"$exe"}
	args=${args#"${args%%[! ]*}"}	# its leading blanks off
	case $exe in
	'') die "-g $1: no exec after the =" ;;
	/*) ;;
	*/*) exe=$PWD/$exe ;;
	*) found=$(on_path "$exe") || die "-g $1: $exe not found on PATH"
	   exe=$found ;;
	esac
	guests="${guests}[guest $name]
exec = $exe
"
	[ -z "$args" ] || guests="${guests}args = $args
"
}

conf= guests= waits= timeout=30 verbose=0
while getopts c:g:w:t:vh opt; do
	case $opt in
	c) [ -r "$OPTARG" ] || die "$OPTARG: cannot read it"; conf=$OPTARG ;;
	g) case $OPTARG in
	   [A-Za-z0-9_-]*=?*) ;;
	   *) die "-g $OPTARG: not name=exec" ;;
	   esac
	   add_guest "$OPTARG" ;;
	w) waits="$waits $OPTARG" ;;
	t) case $OPTARG in
	   ''|*[!0-9]*|0) die "-t $OPTARG: not a whole number of seconds above 0" ;;
	   esac
	   timeout=$OPTARG ;;
	v) verbose=1 ;;
	h) help; exit 0 ;;
	*) usage >&2; exit 125 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { usage >&2; exit 125; }
[ -n "$conf$guests" ] || die "no guest: give -c conf or -g name=exec"

# hubd and hubctl beside this script (a build tree: build/hub-run) or in
# the install it came with (PREFIX/bin/hub-run, PREFIX/sbin/hubd), else
# on PATH.
# (its real directory: guests of users of their own may not pass through
# the link that led to it)
here=$(cd -P "$(dirname "$0")" && pwd -P) || die "cannot find where it lives"
find_prog() {
	for p in "$here/$1" "$here/../sbin/$1" "$here/../bin/$1"; do
		[ -x "$p" ] && { echo "$p"; return 0; }
	done
	PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin command -v "$1"
}
hubd=$(find_prog hubd) || die "hubd not found beside $0 nor on PATH"
hubctl=$(find_prog hubctl) || die "hubctl not found beside $0 nor on PATH"
# In a build tree, Python guests find the binding and libguest there;
# installed, the binding where install put it (make install fills in
# installed_pythondir), which finds libguest in its prefix by itself.
installed_pythondir=
if [ -e "$here/libguest.so" ] && [ -d "$here/../bindings/python/hubguest" ]; then
	HUB_LIBGUEST=${HUB_LIBGUEST:-$here/libguest.so}
	PYTHONPATH=$(cd "$here/../bindings/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}
	export HUB_LIBGUEST PYTHONPATH
elif [ -n "$installed_pythondir" ] && [ -d "$installed_pythondir/hubguest" ]; then
	PYTHONPATH=$installed_pythondir${PYTHONPATH:+:$PYTHONPATH}
	export PYTHONPATH
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hub-run.XXXXXX") || die "mktemp failed"
sock=$tmp/hub.sock
log=$tmp/hubd.log
hubd_pid= cmd_pid= pids=

# Stops hubd (SIGTERM, SIGKILL after 30 s), then checks that no guest
# lives on (30 s at most); 0 if all went cleanly. Generous: a loaded
# machine may take that long to run a few processes.
stop_hub() {
	clean=0
	[ -n "$hubd_pid" ] || return 0
	# the pids of the guests, for the check after
	pids="$pids $("$hubctl" -s "$sock" -j -t 2 peers 2>/dev/null |
		grep -o '"pid":[0-9]*' | sed 's/.*://')"
	kill -TERM "$hubd_pid" 2>/dev/null
	n=0
	while kill -0 "$hubd_pid" 2>/dev/null && [ $n -lt 600 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	if kill -0 "$hubd_pid" 2>/dev/null; then
		echo "$prog: hubd did not stop in 30 s: killed" >&2
		kill -KILL "$hubd_pid" 2>/dev/null
		clean=1
	fi
	wait "$hubd_pid"
	rc=$?
	hubd_pid=
	[ $clean -ne 0 ] || [ $rc -eq 0 ] || { echo "$prog: hubd exited with status $rc" >&2; clean=1; }
	# guests die with hubd (their parent-death signal), and are reaped by init
	n=0 left=
	while [ $n -lt 600 ]; do
		left=
		for p in $pids; do
			st=$(sed 's/.*) \(.\).*/\1/' "/proc/$p/stat" 2>/dev/null) || continue
			[ "$st" = Z ] || left="$left $p"
		done
		[ -n "$left" ] || break
		sleep 0.05
		n=$((n + 1))
	done
	if [ -n "$left" ]; then
		echo "$prog: guest processes outlived hubd:$left (killed)" >&2
		kill -KILL $left 2>/dev/null
		clean=1
	fi
	return $clean
}

show_log() {
	echo "$prog: hubd's log:" >&2
	sed 's/^/  /' "$log" >&2
}

cleanup() {
	trap '' INT TERM HUP
	[ -z "$cmd_pid" ] || kill -TERM "$cmd_pid" 2>/dev/null
	stop_hub || [ -n "$log_shown" ] || show_log
	rm -rf "$tmp"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

# The config: -c's file with its [hub] section's control = ours (a [hub]
# added if it has none), then a section per -g. The file's relative exec
# paths are made absolute, against its directory as hubd takes them
# (hubd.conf(5)): the copy is in another one. The directory goes to awk
# in the environment, where a backslash is no escape.
case $conf in
/*) confdir=${conf%/*} ;;	# "" for /file: then exec = /path
*/*) confdir=$PWD/${conf%/*} ;;
*) confdir=$PWD ;;
esac
{
	if [ -z "$conf" ] || ! grep -q '^[[:space:]]*\[hub\]' "$conf"; then
		printf '[hub]\ncontrol = %s\n' "$sock"
	fi
	[ -z "$conf" ] || confdir=$confdir awk -v sock="$sock" '
		/^[ \t]*\[/ {
			hub = $0 ~ /^[ \t]*\[hub\][ \t]*([#;].*)?$/
			print
			if (hub)
				print "control = " sock
			next
		}
		hub && /^[ \t]*control[ \t]*=/ { next }
		# exec = path (or exec: path), the path taken as it is: with
		# the directory before it unless absolute, none (an error of
		# hubd) or a comment
		/^[ \t]*exec[ \t]*[=:]/ {
			i = match($0, /[=:][[:space:]]*/)
			v = substr($0, i + RLENGTH)
			if (v !~ /^([\/;]|[[:space:]]*$)/) {
				print substr($0, 1, i + RLENGTH - 1) ENVIRON["confdir"] "/" v
				next
			}
		}
		{ print }' "$conf"
	printf '%s' "$guests"
} > "$tmp/hubd.conf" || { rm -rf "$tmp"; die "cannot write $tmp/hubd.conf"; }

# Its own session: a ^C at the terminal is ours to handle, not hubd's.
setsid "$hubd" -f "$tmp/hubd.conf" > "$log" 2>&1 &
hubd_pid=$!

# Ready: every guest up and every -w method registered. A guest that dies
# meanwhile (it has restarted), hubd gone, or the time out: failed.
why= missing= log_shown=
deadline=$(($(date +%s) + timeout))
while :; do
	if ! kill -0 "$hubd_pid" 2>/dev/null; then
		why="hubd exited"
		break
	fi
	if peers=$("$hubctl" -s "$sock" -j -t 2 peers 2>/dev/null); then
		pids="$pids $(echo "$peers" | grep -o '"pid":[0-9]*' | sed 's/.*://')"
		# the first guest with a death (names are A-Z a-z 0-9 _ . -):
		# its last one, as hubctl peers NAME says it
		dead=$(echo "$peers" | sed 's/{"name":"/\n/g' | grep '"deaths":\[{' |
			head -n 1 | sed 's/".*//')
		if [ -n "$dead" ]; then
			why="guest $dead died: $("$hubctl" -s "$sock" peers "$dead" 2>&1 |
				sed -n 's/^death 1: [^(]*([^)]*): //p')"
			break
		fi
		if ! echo "$peers" | grep -o '"state":"[^"]*"' | grep -qv '"up"'; then
			methods=$("$hubctl" -s "$sock" methods 2>/dev/null | awk 'NR > 1 { print $1 }')
			missing=
			for m in $waits; do
				echo "$methods" | grep -qxF "$m" || missing="$missing $m"
			done
			[ -n "$missing" ] || break
		fi
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		why="not ready in $timeout s${missing:+ (not registered:$missing)}"
		break
	fi
	sleep 0.05
done
if [ -n "$why" ]; then
	echo "$prog: $why" >&2
	show_log
	log_shown=1	# once: hubd's own exit says nothing more
	cleanup
	exit 125
fi

# The command: hubctl inside it reaches this hub. In the background, so
# that a signal to hub-run is handled at once; its stdin is ours still.
HUBCTL_SOCKET=$sock
PATH=$(dirname "$hubctl"):$PATH
export HUBCTL_SOCKET PATH
exec 3<&0
"$@" <&3 3<&- &
cmd_pid=$!
exec 3<&-
wait "$cmd_pid"
status=$?
cmd_pid=
[ $verbose -eq 0 ] || show_log
trap '' INT TERM HUP
if ! stop_hub; then
	show_log
	[ $status -ne 0 ] || status=125
fi
rm -rf "$tmp"
exit $status
