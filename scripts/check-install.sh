#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# An install under a prefix of its own, used in place (make test-install
# runs it): make install PREFIX=TMP writes nothing outside TMP; the
# installed hub-run starts the installed hubd with the installed config,
# whose example guests (C, found their libguest by RUNPATH; Python, told
# where the binding is by env =) come up and answer; the installed hub-nats
# loads and reads its installed example config, which hubd.conf's
# commented-out [guest nats] section names where it is; a guest built
# against the installed libguest with pkg-config runs under it; then make
# uninstall leaves TMP empty. Usage: check-install.sh (MAKE and CC from
# the environment). Everything goes, also when a step fails.
set -u
MAKE=${MAKE:-make}
CC=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
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
sed 's/^; methods = /methods = /' "$p/etc/hub/nats.conf" > "$tmp/nats.conf"
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
