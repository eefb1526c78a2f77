#!/bin/bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# make test-deb: installs the packages make deb built on this machine, runs
# a hub from them alone (the installed hubd, hubctl, example guests and
# Python binding, no PYTHONPATH or HUB_LIBGUEST), checks the installed
# hub-nats runs and reads its config, builds a guest against
# libguest-dev with pkg-config and runs it too, then purges them all, also
# on failure, and checks the machine is as it was. Refuses to run when any
# of the packages, or a file they would bring, is already there (but for a
# config in /etc/hub, set aside meanwhile and put back). Needs root. Usage: test-deb.sh DEBDIR VERSION (guest.h's version).
set -u
debdir=$(realpath "${1:?usage: test-deb.sh DEBDIR VERSION}")
version=${2:?usage: test-deb.sh DEBDIR VERSION}
pkgs="hub libguest0 libguest-dev python3-hubguest"
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "deb: $*" >&2; fail=$((fail + 1)); }
die() { echo "deb: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "installs packages with apt-get: run as root"
debs=""
for p in $pkgs; do
	f=$(ls "$debdir/${p}_"*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || die "no ${p}_*.deb in $debdir: make deb first"
	debs="$debs $f"
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)
	case $st in
	"" | un*) ;;
	*) die "package $p is on this machine ($st): not touching an install" \
		"that is not the test's (apt-get purge $p to run the test)" ;;
	esac
done
# A file a package would bring that is already there is someone's: a
# purge would take it. A config under /etc/hub (make install's hubd.conf)
# is set aside while the packages are there and put back after, on every
# way out; anything else (make install PREFIX=/usr) stops the test.
conflicts=""
for f in $debs; do
	while read -r path; do
		[ -e "$path" ] || [ -L "$path" ] || continue
		case $path in
		/etc/hub/*) conflicts="$conflicts $path" ;;
		*) die "$path is on this machine, not from a package: not" \
			"installing ${f##*/} over it" ;;
		esac
	done < <(dpkg-deb --fsys-tarfile "$f" | tar -t | sed -n 's|^\./|/|; /[^/]$/p')
done
aside=""
put_back() {
	[ -n "$aside" ] || return 0
	(cd "$aside" && find . -type f -o -type l) | while read -r f; do
		mkdir -p "$(dirname "${f#.}")" && mv "$aside/$f" "${f#.}" ||
			echo "deb: could not put ${f#.} back: it is in $aside" >&2
	done
	find "$aside" -depth -type d -empty -delete
	aside=""
}
if [ -n "$conflicts" ]; then
	aside=$(mktemp -d /var/tmp/hub-test-deb.XXXXXX) || exit 1
	trap 'put_back; exit 1' INT TERM HUP
	trap 'put_back' EXIT
	for path in $conflicts; do
		mkdir -p "$aside$(dirname "$path")" && mv "$path" "$aside$path" ||
			{ put_back; die "could not set $path aside"; }
		echo "deb: $path set aside in $aside while the packages are installed"
	done
fi

tmp=$(mktemp -d) || exit 1
hubd_pid=""
installing=""
# what dpkg has on the machine (in any state but not-installed), to compare
# with after the purge
present() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Package}:${Architecture}\n' |
		awk '$1 !~ /^.n/ { print $2 }' | sort
}
before=$(present)

# The hub stopped, its lock and the temporary files gone, the packages
# (and whatever apt added for them) purged: on every way out.
cleanup() {
	if [ -n "$hubd_pid" ]; then
		kill -TERM "$hubd_pid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$hubd_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$hubd_pid" 2>/dev/null
		wait "$hubd_pid" 2>/dev/null
		hubd_pid=""
	fi
	if [ -n "$installing" ]; then
		# ours (none was there before), in whatever state apt left them
		ours=$(for p in $pkgs; do
			dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$p" 2>/dev/null
		done | awk '$1 !~ /^.n/ { print $2 }')
		# and what apt pulled in for them: new since, and marked
		# automatic; dpkg keeps any that something else needs now
		deps=$(present | comm -13 <(echo "$before") - | sed 's/:.*//' |
			grep -vxF "$(printf '%s\n' $pkgs)" | grep -xF "$(apt-mark showauto)")
		if [ -n "$ours" ] && ! DEBIAN_FRONTEND=noninteractive apt-get purge -y -q \
			-o DPkg::Lock::Timeout=120 $ours > "$tmp/purge.log" 2>&1; then
			cat "$tmp/purge.log" >&2
			bad "apt-get purge $ours failed"
		fi
		[ -z "$deps" ] || dpkg --purge $deps > "$tmp/purge.log" 2>&1 ||
			{ cat "$tmp/purge.log" >&2; bad "dpkg --purge $deps failed"; }
		installing=""
	fi
	rm -rf "$tmp"
}
trap 'cleanup; put_back; exit 1' INT TERM HUP
trap 'cleanup; put_back' EXIT

# 1. install: apt-get resolves their dependencies. From here on a signal
# may come at any point, apt-get's included: cleanup purges what is there.
installing=yes
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	-o DPkg::Lock::Timeout=120 $debs > "$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	die "apt-get install failed"
fi
ok

# 2. each package holds what it should
expect() {	# PACKAGE PATH...
	local p=$1 list
	shift
	list=$(dpkg -L "$p")
	for f in "$@"; do
		grep -qxF "$f" <<< "$list" || bad "dpkg -L $p: no $f"
	done
}
n=$fail
expect hub /usr/sbin/hubd /usr/bin/hubctl /usr/bin/hub-run /usr/libexec/hub/echo /usr/libexec/hub/kv \
	/usr/libexec/hub/counter /usr/libexec/hub/fanout /usr/libexec/hub/greeter \
	/usr/libexec/hub/hub-nats \
	/lib/systemd/system/hubd.service /etc/hub/hubd.conf /etc/hub/nats.conf \
	/usr/share/doc/hub/README.md /usr/share/doc/hub/protocol.md /usr/share/doc/hub/security.md \
	/usr/share/doc/hub/nats.md /usr/share/doc/hub/copyright \
	/usr/share/man/man1/hubctl.1.gz /usr/share/man/man1/hub-run.1.gz /usr/share/man/man5/hubd.conf.5.gz \
	/usr/share/man/man8/hubd.8.gz /usr/share/man/man8/hub-nats.8.gz
expect libguest0 /usr/lib/$ma/libguest.so.0 /usr/lib/$ma/libguest.so.$version
expect libguest-dev /usr/include/guest.h /usr/lib/$ma/libguest.so /usr/lib/$ma/libguest.a \
	/usr/lib/$ma/pkgconfig/libguest.pc /usr/share/man/man3/libguest.3.gz
expect python3-hubguest /usr/lib/python3/dist-packages/hubguest/__init__.py
for c in hubd.conf nats.conf; do
	dpkg-query -W -f='${Conffiles}\n' hub | grep -q "^ /etc/hub/$c " ||
		bad "/etc/hub/$c is not a conffile of hub"
done
# the licence each package states (debian/copyright, DEP-5)
for p in $pkgs; do
	grep -qx 'License: MIT or Apache-2.0' "/usr/share/doc/$p/copyright" 2>/dev/null ||
		bad "/usr/share/doc/$p/copyright does not say MIT or Apache-2.0"
done
[ "$fail" -eq "$n" ] && ok

# 3. the unit is installed, not enabled, not started
n=$fail
grep -qx 'ExecStart=/usr/sbin/hubd -f /etc/hub/hubd.conf' /lib/systemd/system/hubd.service ||
	bad "hubd.service does not start /usr/sbin/hubd -f /etc/hub/hubd.conf"
links=$(find /etc/systemd/system -name hubd.service 2>/dev/null)
[ -z "$links" ] || bad "hubd.service enabled on install: $links"
if [ -d /run/systemd/system ] && systemctl is-active --quiet hubd; then
	bad "hubd.service started on install"
fi
for p in /proc/[0-9]*; do
	case $(readlink "$p/exe" 2>/dev/null) in
	/usr/sbin/hubd*) bad "a hubd runs after the install (pid ${p#/proc/})" ;;
	esac
done
[ "$fail" -eq "$n" ] && ok

# 4. the installed default config checks, its guests where it says
/usr/sbin/hubd -n -f /etc/hub/hubd.conf > "$tmp/check.log" 2>&1 && ok ||
	{ cat "$tmp/check.log" >&2; bad "hubd -n -f /etc/hub/hubd.conf fails"; }

# 4b. hub-nats runs with what the packages brought (libnats by hub's
# Depends, libguest inside it) and reads its installed config, which
# exports and imports nothing until edited: it says so, exit 2
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/libexec/hub/hub-nats --config /etc/hub/nats.conf \
	> "$tmp/nats.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'nothing to do' "$tmp/nats.log" && ok ||
	{ cat "$tmp/nats.log" >&2; bad "hub-nats --config /etc/hub/nats.conf: exit $rc, not 2 (nothing to do)"; }

# 5. a guest builds against libguest-dev: pkg-config, the .so, the .a
n=$fail
pkg-config --exists libguest || bad "pkg-config does not find libguest"
[ "$(pkg-config --variable=libdir libguest)" = "/usr/lib/$ma" ] ||
	bad "libguest.pc's libdir is $(pkg-config --variable=libdir libguest), not /usr/lib/$ma"
cc -o "$tmp/kv" guestlib/examples/kv.c $(pkg-config --cflags --libs libguest) ||
	bad "kv.c does not build with pkg-config --cflags --libs libguest"
readelf -d "$tmp/kv" 2>/dev/null | grep -q 'NEEDED.*\[libguest\.so\.0\]' ||
	bad "kv does not link libguest.so.0"
cc -o "$tmp/kv-static" guestlib/examples/kv.c $(pkg-config --cflags libguest) \
	"/usr/lib/$ma/libguest.a" $(pkg-config --static --libs-only-l libguest | sed 's/-lguest//') ||
	bad "kv.c does not build against libguest.a with pkg-config --static's libraries"
[ "$fail" -eq "$n" ] && ok

# 6. man finds the pages
n=$fail
for page in hubctl hubd hubd.conf hub-nats libguest; do
	man -w "$page" > /dev/null 2>&1 || bad "man -w $page finds nothing"
done
[ "$fail" -eq "$n" ] && ok

# 7. a hub from the packages alone: the installed echo and greeter (Python),
# and kv built above, in the environment systemd gives a service
sock=$tmp/hubd.sock
cat > "$tmp/hubd.conf" <<EOF
[hub]
control = $sock
stop_grace = 1s

[pool]
classes = 1K x 64, 64K x 8

[guest echo]
exec = /usr/libexec/hub/echo

[guest greeter]
exec = /usr/libexec/hub/greeter

[guest kv]
exec = $tmp/kv
EOF
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/sbin/hubd -f "$tmp/hubd.conf" \
	> "$tmp/hubd.log" 2>&1 &
hubd_pid=$!
hubctl=/usr/bin/hubctl
for _ in $(seq 100); do	# up to 10 s for the three to register
	m=$("$hubctl" -s "$sock" methods 2>/dev/null)
	grep -q 'greeter\.hello' <<< "$m" && grep -q 'echo\.echo' <<< "$m" &&
		grep -q 'kv\.get' <<< "$m" && break
	kill -0 "$hubd_pid" 2>/dev/null || break
	sleep 0.1
done
call() {	# EXPECTED METHOD ARG...
	local want=$1 got
	shift
	got=$("$hubctl" -s "$sock" call "$@" 2>&1)
	[ "$got" = "$want" ] && ok || bad "hubctl call $*: \"$got\", not \"$want\""
}
call hi echo.echo hi
call "hello, x" greeter.hello x
call "" kv.put colour blue
call blue kv.get colour
if [ "$fail" -ne 0 ]; then
	echo "deb: hubd's log:" >&2
	sed 's/^/  /' "$tmp/hubd.log" >&2
fi

# 8. all of it purged: nothing of the packages left, nothing of the hub
cleanup
n=$fail
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)
	case $st in "" | un*) ;; *) bad "$p is still there after the purge ($st)" ;; esac
done
for f in /etc/hub /usr/sbin/hubd /usr/libexec/hub /usr/lib/python3/dist-packages/hubguest \
	/usr/lib/$ma/libguest.so.0 /var/lib/systemd/deb-systemd-helper-enabled/hubd.service.dsh-also \
	/dev/shm/hub; do
	[ -e "$f" ] && bad "$f is left after the purge"
done
[ "$(present)" = "$before" ] || bad "the installed packages differ from before the test"
[ "$fail" -eq "$n" ] && ok

echo "deb: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
