#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs the Debian packages hub builds and tests with, only those missing
# (found with pkg-config or the compiler), so nothing is reinstalled.
set -u
CC=${CC:-cc}
need=""
has_pc() { pkg-config --exists "$1" 2>/dev/null; }
has_header() { printf '#include <%s>\n' "$1" | "$CC" -E -x c - >/dev/null 2>&1; }

command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
has_pc check   || need="$need check"
has_pc libbsd  || need="$need libbsd-dev"
has_pc inih    || need="$need libinih-dev"
has_pc json-c  || need="$need libjson-c-dev"
has_pc libxxhash || need="$need libxxhash-dev"
has_pc libseccomp || need="$need libseccomp-dev"	# the guests' system call filter
has_header ev.h || need="$need libev-dev"	# Debian's libev ships no .pc
has_pc libnats || need="$need libnats-dev"	# hub-nats, the bridge onto NATS
has_pc libsodium || need="$need libsodium-dev"	# hub-nats's keys and signatures
# its tests run a NATS server of their own (nats-server, never its service)
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] ||
	need="$need nats-server"
command -v openssl >/dev/null 2>&1 || need="$need openssl"	# its TLS test's certificate
command -v "${CXX:-g++}" >/dev/null 2>&1 || need="$need g++"	# guest.h as C++
# libguest's microthreads switch stacks with Boost's fcontext (C linkage,
# no .pc): the headers come with the -dev package, and the .so with them
{ [ -d /usr/include/boost/context ] &&
	ls /usr/lib/*/libboost_context.so /usr/lib/libboost_context.so 2>/dev/null |
	grep -q .; } || need="$need libboost-context-dev"
# the Python binding's tests: python3 with pytest (Debian's python3 gets
# python3-pytest; a python3 first on PATH that has pytest does as well)
command -v python3 >/dev/null 2>&1 || [ -x /usr/bin/python3 ] || need="$need python3"
{ python3 -c 'import pytest' 2>/dev/null || /usr/bin/python3 -c 'import pytest' 2>/dev/null; } ||
	need="$need python3-pytest"
# the fuzzers: clang with its libFuzzer runtime
command -v clang >/dev/null 2>&1 || need="$need clang"
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
	need="$need libclang-rt-dev"
# the manual pages' checks: mandoc's lint, and man-db with groff for
# man --warnings (Debian's minimal images may lack them)
command -v mandoc >/dev/null 2>&1 || need="$need mandoc"
command -v man >/dev/null 2>&1 || need="$need man-db"
command -v groff >/dev/null 2>&1 || need="$need groff-base"
# make deb: dpkg-buildpackage with debhelper and dh_python3 (it checks for
# build-essential); make check's test-deb looks for a manual page with man
command -v dpkg-buildpackage >/dev/null 2>&1 || need="$need dpkg-dev"
command -v dh >/dev/null 2>&1 || need="$need debhelper"
command -v dh_python3 >/dev/null 2>&1 || need="$need dh-python"
dpkg-query -W -f='${Status}' build-essential 2>/dev/null | grep -q ' installed$' ||
	need="$need build-essential"
if [ -n "${BENCH:-}" ]; then	# make bench: the baselines and the plot
	has_pc libzmq || need="$need libzmq3-dev"
	command -v gnuplot >/dev/null 2>&1 || need="$need gnuplot-nox"
	# the D-Bus peer: sd-bus, and a dbus-daemon started on a private socket.
	# dbus-broker is measured when it is there but never installed from
	# here: Debian's depends on systemd-sysv and takes over dbus.service.
	has_pc libsystemd || need="$need libsystemd-dev"
	command -v dbus-daemon >/dev/null 2>&1 || need="$need dbus-daemon"
	# the iceoryx peer: RouDi, and the C binding (headers in a versioned dir)
	command -v iox-roudi >/dev/null 2>&1 || need="$need iceoryx"
	ls /usr/include/iceoryx/v*/iceoryx_binding_c/client.h >/dev/null 2>&1 ||
		need="$need libiceoryx-binding-c-dev"
fi

[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "hub: missing build dependencies; as root run:" >&2
	echo "  apt-get update && apt-get install -y$need" >&2
	exit 1
fi
echo "hub: installing$need"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq --no-install-recommends $need || exit 1
# Debian's nats-server starts a system-wide server on port 4222 where
# systemd runs; the tests need only the program
case " $need " in *" nats-server "*)
	if [ -d /run/systemd/system ] && systemctl is-active --quiet nats-server 2>/dev/null; then
		systemctl disable --now nats-server >/dev/null 2>&1 &&
			echo "hub: stopped and disabled the nats-server service the package started"
	fi ;;
esac
