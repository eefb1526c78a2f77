#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# Checks an installed libguest (make test-install runs it on its staging
# tree): the .so exports exactly the functions guest.h declares, each in
# version node LIBGUEST_<MAJOR> or a later minor's LIBGUEST_<MAJOR>.<MINOR>;
# its symbols, each name@node, are exactly those guestlib/libguest.map and
# debian/libguest0.symbols list; the soname, the file name and
# libguest.pc's Version are guest.h's version; a C++ program builds
# against guest.h, links and runs. Usage: check-libguest.sh ROOT
# (ROOT/include/guest.h, ROOT/lib/libguest.so, ROOT/lib/pkgconfig/libguest.pc;
# the map and the symbols file are this tree's). Needs GCC (its -aux-info
# lists what a header declares).
set -u
root=${1:?usage: check-libguest.sh ROOT}
tree=$(dirname "$0")/..
CC=${CC:-cc}
CXX=${CXX:-g++}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "libguest: $*" >&2; fail=$((fail + 1)); }

# guest.h's version, as the preprocessor sees it
printf '#include <guest.h>\nGUEST_VERSION_MAJOR GUEST_VERSION_MINOR GUEST_VERSION_PATCH\n' |
	"$CC" -E -P -I"$root/include" -x c - > "$tmp/ver" || exit 1
set -- $(tail -n 1 "$tmp/ver")
major=$1 version=$1.$2.$3

# 1. exports: every function guest.h declares, nothing else
printf '#include <guest.h>\n' > "$tmp/decl.c"
"$CC" -aux-info "$tmp/aux" -fsyntax-only -I"$root/include" "$tmp/decl.c" || exit 1
grep "^/\* [^ ]*/guest\.h:[0-9]*:" "$tmp/aux" |
	sed 's/^\/\*.*\*\/[^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\) (.*/\1/' | sort > "$tmp/declared"
[ -s "$tmp/declared" ] || { echo "libguest: no functions found in guest.h" >&2; exit 1; }
nm -D --defined-only "$root/lib/libguest.so" > "$tmp/nm" || exit 1
# the version node itself is an absolute symbol; the rest are what we
# export, a function whose ABI changed twice (compat.c)
awk '$2 != "A" { print $3 }' "$tmp/nm" | sed 's/@.*//' | sort -u > "$tmp/exported"
if cmp -s "$tmp/declared" "$tmp/exported"; then
	ok
else
	comm -13 "$tmp/declared" "$tmp/exported" | sed 's/^/  exported, not in guest.h: /' >&2
	comm -23 "$tmp/declared" "$tmp/exported" | sed 's/^/  in guest.h, not exported: /' >&2
	bad "the .so's dynamic symbols are not guest.h's functions"
fi
unversioned=$(awk '$2 != "A" && $3 !~ /@@?LIBGUEST_'"$major"'(\.[0-9]+)?$/ { print $3 }' "$tmp/nm")
[ -z "$unversioned" ] && ok || bad "not in a node LIBGUEST_$major[.MINOR]:" $unversioned

# 1b. each name@node exported is in libguest.map and in the symbols file,
# and nothing more: what a link binds is what dpkg-shlibdeps and the map
# say (the nodes themselves too, as NODE@NODE)
awk '$2 == "A" { print $3 "@" $3; next } { sub(/@@/, "@", $3); print $3 }' \
	"$tmp/nm" | sort > "$tmp/exported@"
awk '/^[ \t]*\/?\*/ || /^[ \t]*\*/ { next }	# comments
	/^[A-Za-z_][A-Za-z0-9_.]*[ \t]*\{/ { node = $1; sub(/\{.*/, "", node)
		print node "@" node; global = 0; next }
	/global:/ { global = 1; next }
	/local:/ { global = 0; next }
	global && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ { name = $1; sub(/;.*/, "", name)
		print name "@" node }' "$tree/guestlib/libguest.map" | sort > "$tmp/map"
awk '/^ [^ ]/ { print $1 }' "$tree/debian/libguest0.symbols" | sort > "$tmp/symbols"
for f in map symbols; do
	case $f in
	map) name=guestlib/libguest.map ;;
	symbols) name=debian/libguest0.symbols ;;
	esac
	if [ -s "$tmp/$f" ] && cmp -s "$tmp/exported@" "$tmp/$f"; then
		ok
	else
		comm -23 "$tmp/exported@" "$tmp/$f" | sed "s|^|  exported, not in $name: |" >&2
		comm -13 "$tmp/exported@" "$tmp/$f" | sed "s|^|  in $name, not exported: |" >&2
		bad "the .so's symbols (nm -D) are not $name's"
	fi
done

# 2. one version: soname, file name, pkg-config
soname=$(readelf -d "$root/lib/libguest.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libguest.so.$major" ] && ok || bad "soname $soname, guest.h says libguest.so.$major"
real=$(readlink -f "$root/lib/libguest.so")
[ "$real" = "$(readlink -f "$root/lib/libguest.so.$version")" ] &&
	[ -f "$root/lib/libguest.so.$version" ] &&
	[ "$real" = "$(readlink -f "$root/lib/libguest.so.$major")" ] && ok ||
	bad "libguest.so -> libguest.so.$major -> libguest.so.$version (a file) does not hold"
pc=$(PKG_CONFIG_SYSROOT_DIR= PKG_CONFIG_LIBDIR="$root/lib/pkgconfig" \
	pkg-config --modversion libguest)
[ "$pc" = "$version" ] && ok || bad "libguest.pc says Version $pc, guest.h $version"

# 3. C++: guest.h compiles, its functions link (extern "C"), the program runs
cat > "$tmp/cxx.cc" <<'EOF'
#include <guest.h>
#include <cstdio>

static_assert(GUEST_VERSION == GUEST_VERSION_MAJOR * 10000 +
	      GUEST_VERSION_MINOR * 100 + GUEST_VERSION_PATCH, "GUEST_VERSION");

int
main()
{
	uint8_t buf[16];
	size_t pos = 0;
	uint64_t v = 0;

	if (guest_pc_put_u64(buf, sizeof(buf), &pos, 42) < 0)
		return 1;
	pos = 0;
	if (guest_pc_get_u64(buf, sizeof(buf), &pos, &v) != 0 || v != 42)
		return 1;
	std::printf("%llu\n", (unsigned long long)v);
	return 0;
}
EOF
if "$CXX" -std=c++11 -Wall -Wextra -Werror -o "$tmp/cxx" "$tmp/cxx.cc" \
	-I"$root/include" -L"$root/lib" -lguest &&
	LD_LIBRARY_PATH="$root/lib" "$tmp/cxx" > /dev/null; then
	ok
else
	bad "a C++ program does not build against guest.h or does not run"
fi

echo "libguest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
