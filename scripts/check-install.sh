#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# An install under a prefix of its own, used in place (make test-install
# runs it): make install PREFIX=TMP writes nothing outside TMP; the
# installed hub-run starts the installed hubd with the installed config,
# whose example guests (C, found their libguest by RUNPATH; Python, told
# where the binding is by env =) come up and answer; the installed hub-nats
# loads and reads its installed example config, which hubd.conf's
# commented-out [guest nats] section names where it is; a guest built
# against the installed libguest with pkg-config runs under it; hubd and
# hubctl meet at the prefix's control socket by default; README's hello.py
# runs under the installed hub-run and its pytest test passes with the
# installed hubguest.testing, nothing set by hand; then make uninstall
# leaves TMP empty. Usage: check-install.sh (MAKE and CC from
# the environment). Everything goes, also when a step fails.
set -u
MAKE=${MAKE:-make}
CC=${CC:-cc}
tmp=$(mktemp -d) || exit 1
hubd=
trap '[ -z "$hubd" ] || kill -KILL $hubd 2>/dev/null; rm -rf "$tmp"' EXIT
p=$tmp/prefix
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "install: $*" >&2; fail=$((fail + 1)); }

if ! $MAKE --no-print-directory -s install PREFIX="$p" > "$tmp/make.log" 2>&1; then
	cat "$tmp/make.log" >&2
	echo "install: make install PREFIX=$p failed" >&2
	exit 1
fi
[ -f "$p/etc/hub/hubd.conf" ] && ok || bad "no $p/etc/hub/hubd.conf (SYSCONFDIR under PREFIX)"
[ -f "$p/etc/hub/nats.conf" ] && ok || bad "no $p/etc/hub/nats.conf (SYSCONFDIR under PREFIX)"

# the control socket inside the prefix, not a system hub's /run/hub
grep -qx "control = $p/var/run/hub/hubd.sock" "$p/etc/hub/hubd.conf" && ok ||
	bad "hubd.conf's control is not $p/var/run/hub/hubd.sock: $(grep '^control' "$p/etc/hub/hubd.conf")"

# the examples find libguest by their RUNPATH, the Python one the binding
# by its env = (the loader and python3 would not look under TMP)
readelf -d "$p/libexec/hub/kv" | grep -q "RUNPATH.*\[$p/lib\]" && ok ||
	bad "libexec/hub/kv has no RUNPATH to $p/lib"
grep -qx "env = PYTHONPATH=$p/lib/python3[.0-9]*/dist-packages HUB_LIBGUEST=$p/lib/libguest.so.0" \
	"$p/etc/hub/hubd.conf" && ok || bad "hubd.conf gives greeter no env = for $p"

# hub-nats: hubd.conf's example section names it and its config where they
# are; it runs with the libraries it needs (libguest inside it), reads the
# example config (which exports and imports nothing: it says so), and with
# methods to import gets as far as the hub it must be started by
n=$fail
grep -qx "# exec = $p/libexec/hub/hub-nats" "$p/etc/hub/hubd.conf" ||
	bad "hubd.conf's [guest nats] example does not exec $p/libexec/hub/hub-nats"
grep -qx "# args = --config $p/etc/hub/nats.conf" "$p/etc/hub/hubd.conf" ||
	bad "hubd.conf's [guest nats] example does not name $p/etc/hub/nats.conf"
readelf -d "$p/libexec/hub/hub-nats" | grep -q 'NEEDED.*libguest' &&
	bad "libexec/hub/hub-nats needs libguest.so: it links libguest.a"
env -i PATH=/usr/bin:/bin "$p/libexec/hub/hub-nats" --config "$p/etc/hub/nats.conf" \
	> "$tmp/nats.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'nothing to do' "$tmp/nats.log" ||
	{ cat "$tmp/nats.log" >&2; bad "hub-nats with the example nats.conf: exit $rc, not 2 (nothing to do)"; }
# with methods, and a key of its own (--keygen): it goes as far as
# attaching to its hub
"$p/libexec/hub/hub-nats" --keygen "$tmp/nats.key" > /dev/null ||
	bad "hub-nats --keygen $tmp/nats.key failed"
sed -e 's/^; methods = /methods = /' -e "s|^; key = .*|key = $tmp/nats.key|" \
	"$p/etc/hub/nats.conf" > "$tmp/nats.conf"
env -i PATH=/usr/bin:/bin "$p/libexec/hub/hub-nats" --config "$tmp/nats.conf" \
	> "$tmp/nats.log" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'started by hubd' "$tmp/nats.log" ||
	{ cat "$tmp/nats.log" >&2; bad "hub-nats with nats.conf's methods set: exit $rc, not 1 (not started by hubd)"; }
[ "$fail" -eq "$n" ] && ok

# a plugin of a plugin author's: pkg-config, and a RUNPATH to libguest's libdir
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
cat > "$tmp/my.c" <<'EOF'
#include <err.h>
#include <guest.h>

static void
echo(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	guest_reply(c, args, len);
}

int
main(int argc, char *argv[])
{
	struct guest *g;
	const char *why;
	int rc;

	if (guest_attach(argc, argv, &g, &why) < 0)
		errx(1, "%s", why);
	guest_register(g, "my.echo", "str->str", echo, NULL);
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
EOF
libdir=$(pkg-config --variable=libdir libguest)
if $CC -o "$tmp/my" "$tmp/my.c" $(pkg-config --cflags --libs libguest) \
	-Wl,-rpath,"$libdir" 2> "$tmp/cc.log"; then
	ok
else
	cat "$tmp/cc.log" >&2
	bad "a guest does not build with pkg-config --cflags --libs libguest"
fi

# the installed hub-run, hubd, hubctl and config, nothing of the tree
# (env -i: no LD_LIBRARY_PATH or PYTHONPATH from the caller either)
cat > "$tmp/calls.sh" <<'EOF'
set -e
hubctl call kv.put colour blue
test "$(hubctl call kv.get colour)" = blue
test "$(hubctl call echo.reverse abc)" = cba
test "$(hubctl call greeter.shout hey)" = HEY
test "$(hubctl call my.echo ab)" = ab
EOF
if env -i PATH=/usr/bin:/bin "$p/bin/hub-run" -t 20 -c "$p/etc/hub/hubd.conf" \
	-g "my=$tmp/my" -w kv.get -w greeter.shout -w my.echo -- sh "$tmp/calls.sh" \
	> "$tmp/run.log" 2>&1; then
	ok
else
	cat "$tmp/run.log" >&2
	bad "the installed hub with its example guests and a pkg-config guest does not answer"
fi

# the installed hubd with no -f reads the prefix's config, and hubctl with
# no -s finds its socket there
env -i PATH=/usr/bin:/bin "$p/sbin/hubd" > "$tmp/hubd.log" 2>&1 &
hubd=$!
n=0
until env -i PATH=/usr/bin:/bin "$p/bin/hubctl" -t 2 peers > "$tmp/peers.log" 2>&1 &&
	grep -q '^kv .* up ' "$tmp/peers.log"; do
	n=$((n + 1))
	if [ $n -ge 200 ] || ! kill -0 $hubd 2>/dev/null; then
		break
	fi
	sleep 0.05
done
grep -q '^kv .* up ' "$tmp/peers.log" && [ -S "$p/var/run/hub/hubd.sock" ] && ok ||
	{ cat "$tmp/peers.log" "$tmp/hubd.log" >&2
	  bad "the installed hubd and hubctl do not meet at $p/var/run/hub/hubd.sock by default"; }
kill -TERM $hubd 2>/dev/null
wait $hubd
hubd=
[ ! -e "$p/var/run/hub/hubd.sock" ] && ok || bad "hubd left $p/var/run/hub/hubd.sock"

# README's hello.py under the installed hub-run with nothing set by hand;
# then README's pytest test of it with the installed hubguest.testing (its
# PYTHONPATH alone: where python3 finds the binding), which finds hubd,
# hubctl and libguest in the same prefix
pydir=$(ls -d "$p"/lib/python3*/dist-packages)
here=$(cd "$(dirname "$0")/.." && pwd)
awk '/^    #!\/usr\/bin\/env python3$/ { f = 1 } f && /^[^ ]/ { exit } f' "$here/README.md" |
	sed 's/^    //' > "$tmp/hello.py"
chmod 755 "$tmp/hello.py"
if (cd "$tmp" && env -i PATH=/usr/bin:/bin "$p/bin/hub-run" -g hello=./hello.py \
	-w hello.greet -- sh -c 'test "$(hubctl call hello.greet world)" = "hello, world"') \
	> "$tmp/run.log" 2>&1; then
	ok
else
	cat "$tmp/run.log" >&2
	bad "README's hello.py does not answer under $p/bin/hub-run"
fi
awk '/^    from hubguest.testing import Hub$/ { f = 1 } f && /^[^ ]/ { exit } f' \
	"$here/README.md" | sed -e 's/^    //' -e "s|/srv/plugins/hello.py|$tmp/hello.py|" \
	> "$tmp/test_hello.py"
if ! /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
	echo "install: no pytest for /usr/bin/python3: README's test of hello.py left out" >&2
elif (cd "$tmp" && env -i PATH=/usr/bin:/bin PYTHONPATH="$pydir" /usr/bin/python3 -m pytest \
	-q -p no:cacheprovider test_hello.py) > "$tmp/pytest.log" 2>&1; then
	ok
else
	cat "$tmp/pytest.log" >&2
	bad "README's pytest test of hello.py fails with the binding installed in $pydir"
fi

if $MAKE --no-print-directory -s uninstall PREFIX="$p" > "$tmp/make.log" 2>&1; then
	ok
else
	cat "$tmp/make.log" >&2
	bad "make uninstall PREFIX=$p failed"
fi
if [ -e "$p" ]; then
	find "$p" | sed 's/^/  left: /' >&2
	bad "make uninstall left files or directories in $p"
else
	ok
fi

echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
