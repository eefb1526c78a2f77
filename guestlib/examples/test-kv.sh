#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# A plugin's test as its author would write it: hub-run starts a hub with
# the kv example alone and runs the checks against it with plain hubctl.
# Usage: test-kv.sh BUILD_DIR (make test runs it on build/).
set -u
b=${1:-build}
exec "$b/hub-run" -g "kv=$b/guests/kv" -w kv.get -w kv.delete -- sh -c '
	set -e
	hubctl call kv.put colour blue
	test "$(hubctl call kv.get colour)" = blue
	hubctl call kv.put colour green
	test "$(hubctl call kv.get colour)" = green
	hubctl call kv.delete colour
	! hubctl call kv.get colour 2>/dev/null
	echo "test-kv: 1 passed, 0 failed"'
