#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# make deb: builds the Debian packages (debian/) with dpkg-buildpackage in a
# copy of the source tree, never in the checkout (debian/rules' clean would
# wipe build/), and leaves the .deb files in OUT. Usage: deb.sh OUT VERSION
# (VERSION: guest.h's, which debian/changelog's upstream version must be).
set -eu
out=${1:?usage: deb.sh OUT VERSION}
version=${2:?usage: deb.sh OUT VERSION}

deb_version=$(dpkg-parsechangelog -S Version)
if [ "${deb_version%-*}" != "$version" ]; then
	echo "deb: debian/changelog says $deb_version, guest.h $version:" \
		"add a changelog entry (dch -v $version-1)" >&2
	exit 1
fi

rm -rf "$out"
src=$out/src/hub-$version
mkdir -p "$src"
# What is checked out (and not ignored), as it is now: build*/ and
# results/ stay out.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude='./build*' --exclude=./results -cf - . | tar -xf - -C "$src"
fi

# The build sees Debian's toolchain and its own make flags, not the make
# that called us (its -j, SANITIZE=) nor a python3 of the user's PATH.
log=$out/build.log
if ! (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	dpkg-buildpackage -us -uc -b -Jauto) > "$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "deb: dpkg-buildpackage failed (all of it in $log, the tree in $src)" >&2
	exit 1
fi
mv "$out"/src/*.deb "$out"/
rm -rf "$out/src"
ls "$out"/*.deb
