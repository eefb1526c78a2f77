#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# For each rule ID of the spec (tests/spec-rules.txt), whether code and tests
# cite it as r[rule], or n/a for a rule hub leaves out
# (tests/spec-not-applicable.txt: the rule id first on each line); then the
# totals.
set -u
cd "$(dirname "$0")/.." || exit 1
code_dirs="proto daemon guestlib"
na_list=tests/spec-not-applicable.txt
total=0 both=0 code_only=0 test_only=0 na=0
printf '%-40s %-5s %-5s\n' RULE CODE TEST
while read -r rule; do
	[ -n "$rule" ] || continue
	total=$((total + 1))
	if awk -v r="$rule" '$1 == r { f = 1 } END { exit !f }' "$na_list" 2>/dev/null; then
		printf '%-40s %-5s %-5s\n' "$rule" n/a n/a
		na=$((na + 1))
		continue
	fi
	c=no t=no
	grep -rqF "r[$rule]" $code_dirs 2>/dev/null && c=yes
	grep -rqF --exclude=spec-rules.txt "r[$rule]" tests 2>/dev/null && t=yes
	printf '%-40s %-5s %-5s\n' "$rule" "$c" "$t"
	case "$c$t" in
	yesyes) both=$((both + 1)) ;;
	yesno) code_only=$((code_only + 1)) ;;
	noyes) test_only=$((test_only + 1)) ;;
	esac
done < tests/spec-rules.txt
echo "rules: $total; cited in code and tests: $both; code only: $code_only;" \
	"tests only: $test_only; not applicable: $na;" \
	"nowhere: $((total - both - code_only - test_only - na))"
