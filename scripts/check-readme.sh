#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# Every command in README.md's code blocks, run as written (make check
# runs it): in a temporary directory holding links to the tree's build,
# guestlib, bindings and conf, so that paths such as build/hubctl work
# and what the commands write goes away after. Blocks by kind:
# - make targets (make run, make check, ...): not run, make check is
#   them (and make run never ends);
# - a C program: saved as my.c (the README's name), the next C ones
#   compiled to check them;
# - Python: a test (def test_) is run with pytest as doc/python.md runs
#   one from a build tree (PYTHONPATH, HUB_BUILD), the README's
#   /srv/plugins/ being this directory; the first other one is hello.py,
#   the next ones compiled;
# - shell after a paragraph that says "make run" going: each line under a
#   hub like make run's (conf/hubd.conf, the example guests of build/),
#   started by build/hub-run; a "# -> TEXT" comment (on the line or
#   alone on the next) is what the line must print first;
# - any other shell: each line as it is, in order.
# A block whose paragraph before it holds "<!-- not run: REASON -->" is
# left out, and the reason said. Lines changed before they run, each for
# the reason printed: sudo (root runs them as they are; anyone else
# skips them), /tmp/d (a directory of this run), pgrep -f guests/echo
# (this hub's echo, not another hub's). Usage: check-readme.sh [BUILD]
# (default build; README=FILE: another file). Exit 0: every command did as
# the README says.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "readme: $*" >&2; fail=$((fail + 1)); }
note() { echo "readme: $*"; }

# The lines of a file of commands (one a line, "# -> TEXT" alone on a
# line expecting of the one before), each run by sh in the current
# directory; under a hub, all guests up again after a kill. Its own
# mode, for hub-run to run: check-readme.sh --lines FILE.
if [ "${1:-}" = --lines ]; then
	n=0 failed=0
	# a command and its expectation, tab-separated
	awk '
		/^[ \t]*# -> / { sub(/^[ \t]*# -> /, ""); if (cmd != "") want = $0; next }
		/^[ \t]*#/ || /^[ \t]*$/ { next }
		{ if (cmd != "") print cmd "\t" want; cmd = $0; want = "" }
		/# -> / { want = $0; sub(/.*# -> /, "", want) }
		END { if (cmd != "") print cmd "\t" want }' "$2" > "$2.run" || exit 1
	while IFS='	' read -r cmd exp; do
		n=$((n + 1))
		out=$(sh -c "$cmd" 2>&1 < /dev/null)
		rc=$?
		if [ $rc -ne 0 ]; then
			echo "readme: '$cmd': exit $rc:" >&2
			echo "$out" | sed 's/^/  /' >&2
			failed=$((failed + 1))
		elif [ -n "$exp" ] && [ "$(echo "$out" | head -n 1)" != "$exp" ]; then
			echo "readme: '$cmd': printed, not '$exp':" >&2
			echo "$out" | sed 's/^/  /' >&2
			failed=$((failed + 1))
		fi
		# a guest killed: back up before the next line, as it is by
		# the time someone types one
		case $cmd in
		*kill\ *)
			i=0
			while [ $i -lt 400 ]; do
				peers=$(build/hubctl -j peers 2>/dev/null) &&
					! echo "$peers" | grep -o '"state":"[^"]*"' | grep -qv '"up"' &&
					break
				sleep 0.05
				i=$((i + 1))
			done ;;
		esac
	done < "$2.run"
	echo "readme: $n lines, $failed failed"
	exit $((failed != 0))
fi

build=$(cd "${1:-$here/build}" && pwd -P) || exit 1
readme=${README:-$here/README.md}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
for d in build guestlib bindings conf; do
	src=$here/$d
	[ "$d" = build ] && src=$build
	ln -s "$src" "$tmp/$d" || exit 1
done

# The blocks: block-N (its lines, the four blanks off) and block-N.ctx
# (the paragraph before it: its lines since the last blank one).
awk -v dir="$tmp" '
	function flush() {
		while (n > 0 && lines[n] == "")
			n--
		if (n == 0)
			return
		nb++
		f = dir "/block-" nb
		for (i = 1; i <= n; i++)
			print lines[i] > f
		close(f)
		printf "%s", ctx > (f ".ctx")
		close(f ".ctx")
		n = 0
		ctx = ""
	}
	/^    / { lines[++n] = substr($0, 5); next }
	/^[ \t]*$/ {
		if (n > 0)
			lines[++n] = ""
		else
			blank = 1
		next
	}
	{
		flush()
		if (blank)
			ctx = ""
		blank = 0
		ctx = ctx $0 "\n"
	}
	END { flush() }' "$readme"

# Lines as they will run: the changes, each said once.
rewrite() {
	if grep -q '^sudo \|; sudo \|^ *sudo ' "$1"; then
		if [ "$(id -u)" = 0 ]; then
			note "sudo: run as root, as is"
			sed -i 's/\(^\|; \)sudo /\1/' "$1"
		else
			note "sudo: lines left out (not root)"
			sed -i '/\(^\|; \)sudo /d' "$1"
		fi
	fi
	if grep -q '/tmp/d\b' "$1"; then
		note "/tmp/d: $tmp/d, this run's"
		sed -i "s|/tmp/d\\b|$tmp/d|g" "$1"
	fi
	if grep -q 'pgrep -f guests/echo' "$1"; then
		note "pgrep -f guests/echo: this hub's echo (other hubs may run an echo)"
		sed -i "s#pgrep -f guests/echo#build/hubctl -j peers echo | grep -o '\"pid\":[0-9]*' | head -n 1 | cut -d: -f2#g" "$1"
	fi
}

nc=0 npy=0 b=1
while [ -f "$tmp/block-$b" ]; do
	f=$tmp/block-$b
	ctx=$(cat "$f.ctx")
	first=$(grep -v '^[ \t]*$' "$f" | head -n 1)
	what="block $b ($first)"
	b=$((b + 1))
	if reason=$(echo "$ctx" | grep -o '<!-- not run: [^>]*-->'); then
		reason=${reason#<!-- not run: }
		note "$what: not run: ${reason% -->}"
		continue
	fi
	if ! grep -v '^[ \t]*$' "$f" | grep -qv '^\(make\|[ \t]*#\)'; then
		note "$what: make targets, not run (make check is them; make run never ends)"
		continue
	fi
	case $first in
	'#include'*)
		nc=$((nc + 1))
		if [ $nc -eq 1 ]; then
			cp "$f" "$tmp/my.c"
			note "$what: my.c"
			ok
		elif ${CC:-cc} -fsyntax-only -Iguestlib -x c "$f" 2> "$tmp/cc.log"; then
			ok
		else
			cat "$tmp/cc.log" >&2
			bad "$what: does not compile"
		fi
		continue ;;
	esac
	if grep -q '^\(import hubguest\|from hubguest\)' "$f"; then
		npy=$((npy + 1))
		if grep -q '^def test_' "$f"; then
			sed "s|/srv/plugins/|$tmp/|g" "$f" > "$tmp/test_readme_$npy.py"
			if ! /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
				note "$what: no pytest for /usr/bin/python3, not run"
			elif (cd "$tmp" && PYTHONPATH="$here/bindings/python" HUB_BUILD="$build" \
				/usr/bin/python3 -m pytest -q -p no:cacheprovider \
				"test_readme_$npy.py") > "$tmp/pytest.log" 2>&1; then
				note "$what: pytest: $(tail -n 1 "$tmp/pytest.log")"
				ok
			else
				cat "$tmp/pytest.log" >&2
				bad "$what: its test fails"
			fi
		elif [ ! -e "$tmp/hello.py" ]; then
			cp "$f" "$tmp/hello.py" && chmod 755 "$tmp/hello.py" && ok
			note "$what: hello.py"
		elif python3 -m py_compile "$f" 2> "$tmp/py.log"; then
			ok
		else
			cat "$tmp/py.log" >&2
			bad "$what: does not compile"
		fi
		continue
	fi
	rewrite "$f"
	if echo "$ctx" | grep -q 'make run'; then
		# a hub as make run's, waiting for every method the lines call
		sed "s|/usr/local/libexec/hub/|$build/guests/|" "$here/conf/hubd.conf" > "$tmp/run.conf"
		waits=$(grep -o 'hubctl call [^ ]*' "$f" | sed 's/.* /-w /' | sort -u | tr '\n' ' ')
		# shellcheck disable=SC2086 # the -w options are words
		if (cd "$tmp" && build/hub-run -t 30 -c "$tmp/run.conf" $waits -- \
			sh "$here/scripts/check-readme.sh" --lines "$f") > "$tmp/run.log" 2>&1; then
			note "$what: under a hub as make run's: $(tail -n 1 "$tmp/run.log")"
			ok
		else
			cat "$tmp/run.log" >&2
			bad "$what: under a hub as make run's, the lines above failed"
		fi
	elif (cd "$tmp" && sh "$here/scripts/check-readme.sh" --lines "$f") > "$tmp/run.log" 2>&1; then
		note "$what: $(tail -n 1 "$tmp/run.log")"
		ok
	else
		cat "$tmp/run.log" >&2
		bad "$what: the lines above failed"
	fi
done

[ "$b" -gt 1 ] || bad "no code block found in $readme"
echo "readme: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
