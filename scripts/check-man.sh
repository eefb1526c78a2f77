#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
# Checks the manual pages in doc/man (make check-man): each renders clean
# under mandoc's lint and groff's warnings, and each still says what the
# code does: hubctl.1 every command of main.c's table and every option
# its getopt_long takes, and doc/hubctl.md's opening list every command; hub-run.1 every option of hub-run.sh;
# doc/control.md every control command of request.h's table (a row of
# its Commands table and a section), and every one hubctl sends; hubd.8
# every option of hubd.c's getopt;
# hubd.conf.5 every key of config_keys.c's tables, in its own section, and
# no key that is not there; conf/hubd.conf, which says it shows every key,
# each of them; hub-nats.8 every option of nats/main.c and
# every key of nats/conf.c, in its own section, and none that is not there; libguest.3 every GUEST_API function of guest.h,
# in its SYNOPSIS and described below it, and no function that is gone.
# And the docs: every relative link of README.md and doc/*.md resolves (the
# file, and the heading a #fragment names), the README links every
# doc page and stays at most 250 lines, and doc/layout.md gives every
# file of the product's folders its job. Run from the top of the tree.
set -u
man_dir=doc/man
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "man: $*" >&2; fail=$((fail + 1)); }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# A list the code gave must not be empty: an empty one means the pattern
# no longer matches the source, and every check below would pass.
nonempty() {
	[ -s "$2" ] || { bad "found nothing in $1: scripts/check-man.sh no longer reads it"; return 1; }
}

# Lists $1 (what the code has) and $2 (what the page says) must be the same
# set: $3 is the complaint about what $2 lacks, $4 about what it has extra.
same_set() {
	comm -23 "$1" "$2" > "$tmp/missing"
	comm -13 "$1" "$2" > "$tmp/extra"
	if [ -s "$tmp/missing" ]; then bad "$3$(tr '\n' ' ' < "$tmp/missing")"; else ok; fi
	if [ -s "$tmp/extra" ]; then bad "$4$(tr '\n' ' ' < "$tmp/extra")"; else ok; fi
}

# 1. every page: mandoc's lint at warning level and groff's warnings, silent
for page in hubd.8 hubctl.1 hub-run.1 hubd.conf.5 hub-nats.8 libguest.3; do
	[ -f "$man_dir/$page" ] || { bad "$man_dir/$page missing"; continue; }
	if mandoc -T lint -W warning "$man_dir/$page" > "$tmp/lint" 2>&1; then
		ok
	else
		bad "$page: mandoc -T lint:"; sed 's/^/  /' "$tmp/lint" >&2
	fi
	if man --warnings -E UTF-8 -l "$man_dir/$page" 2> "$tmp/groff" > /dev/null &&
	    [ ! -s "$tmp/groff" ]; then
		ok
	else
		bad "$page: man --warnings:"; sed 's/^/  /' "$tmp/groff" >&2
	fi
	# every warning groff has (-ww), more than man's default set: mdoc's
	# own and a register used before it is set among them
	if groff -ww -mandoc -z "$man_dir/$page" 2> "$tmp/groff" && [ ! -s "$tmp/groff" ]; then
		ok
	else
		bad "$page: groff -ww -mandoc -z:"; sed 's/^/  /' "$tmp/groff" >&2
	fi
done

# The lines of section $2 (.Sh NAME) of page $1.
section() {
	awk -v sh="$2" '/^\.Sh / { on = (substr($0, 5) == sh); next } on' "$man_dir/$1"
}

# Option letters of a getopt string: "+js:t:h" is j s t h.
letters() {
	tr -d '+:' | sed 's/./&\n/g' | sed '/^$/d'
}

# An option letter is documented as ".It Fl X" in section $2 of page $1.
check_options() {
	section "$1" "$2" | sed -n 's/^\.It Fl \([A-Za-z0-9]\).*/\1/p' | sort -u > "$tmp/documented"
	while read -r o; do
		if grep -qx -- "$o" "$tmp/documented"; then ok; else
			bad "$1: option -$o ($3) is not documented in $2"; fi
	done < "$tmp/options"
}

# 2. hubd.8: hubd.c's getopt_long string
sed -n 's/.*getopt\(_long\)\{0,1\}(argc, argv, "\([^"]*\)".*/\2/p' daemon/hubd.c | letters > "$tmp/options"
nonempty "daemon/hubd.c's getopt" "$tmp/options" && check_options hubd.8 OPTIONS hubd
# and no option hubd does not take
section hubd.8 OPTIONS | sed -n 's/^\.It Fl \([A-Za-z0-9]\).*/\1/p' | while read -r o; do
	grep -qx -- "$o" "$tmp/options" || echo "$o"
done > "$tmp/extra"
if [ -s "$tmp/extra" ]; then bad "hubd.8 documents options hubd does not take: $(tr '\n' ' ' < "$tmp/extra")"
else ok; fi

# 3. hubctl.1: the commands table and getopt_long's string
awk '/^static const struct command commands\[\]/ { on = 1; next }
	on && /^};/ { on = 0 }
	on' hubctl/main.c | sed -n 's/^[[:space:]]*{ "\([a-z][a-z-]*\)",.*/\1/p' > "$tmp/commands"
nonempty "hubctl/main.c's commands[]" "$tmp/commands" && {
	# a command is an ".It Ic NAME" of COMMANDS, or ".It Xo" then ".Ic NAME"
	section hubctl.1 COMMANDS | awk '
		/^\.It Ic / { print $3 }
		xo && /^\.Ic / { print $2 }
		{ xo = ($0 == ".It Xo") }' | sort -u > "$tmp/documented"
	while read -r c; do
		if grep -qx -- "$c" "$tmp/documented"; then ok; else
			bad "hubctl.1: command '$c' of main.c's table is not documented in COMMANDS"; fi
	done < "$tmp/commands"
}
# and doc/hubctl.md's first paragraph, which lists them, names each
awk '/^hubctl drives/ { on = 1 } on && /^$/ { exit } on' doc/hubctl.md |
	grep -o '`[a-z-]*' | tr -d '`' | sort -u > "$tmp/documented"
while read -r c; do
	if grep -qx -- "$c" "$tmp/documented"; then ok; else
		bad "doc/hubctl.md: command '$c' of main.c's table is not in its first paragraph"; fi
done < "$tmp/commands"
sed -n 's/.*getopt_long(argc, argv, "\([^"]*\)".*/\1/p' hubctl/main.c | letters > "$tmp/options"
nonempty "hubctl/main.c's getopt_long" "$tmp/options" && check_options hubctl.1 DESCRIPTION hubctl

# hub-run.1: the options hub-run.sh's getopts takes
sed -n 's/.*getopts \([a-z:]*\) opt.*/\1/p' scripts/hub-run.sh | letters > "$tmp/options"
nonempty "scripts/hub-run.sh's getopts" "$tmp/options" && check_options hub-run.1 DESCRIPTION hub-run

# 3b. doc/control.md: the control commands of request.h's table
# (X(ID, name, who, needs) rows), each a row of the Commands table
# ("| `name` |") and named in a "### `name`" heading (one heading may
# name several), and none that is not there; and every command hubctl
# sends (client_cmd(ctl, "name"), client_ask..., supervise(ctl, "name"),
# "cmd" set to "name") one of them
sed -n 's/^[[:space:]]*X([A-Z_]*,[[:space:]]*\([a-z_]*\),.*/\1/p' daemon/request.h |
	sort -u > "$tmp/commands"
nonempty "daemon/request.h's CTL_COMMANDS" "$tmp/commands" && {
	grep '^### ' doc/control.md | grep -o '`[a-z_]*`' | tr -d '`' | sort -u > "$tmp/documented"
	same_set "$tmp/commands" "$tmp/documented" "doc/control.md: commands not documented: " "doc/control.md: documents commands hubd does not have: "
	awk '/^## Commands/ { on = 1; next } /^#/ { on = 0 } on' doc/control.md |
		sed -n 's/^| `\([a-z_]*\)` |.*/\1/p' | sort -u > "$tmp/documented"
	same_set "$tmp/commands" "$tmp/documented" "doc/control.md: commands missing from the Commands table: " "doc/control.md: the Commands table has commands hubd does not have: "
}
cat hubctl/*.c | sed -n \
	-e 's/.*\(client_cmd\|client_ask\|client_ask_about\|client_ask_again\|supervise\)(ctl, "\([a-z_]*\)".*/\2/p' \
	-e 's/.*"cmd", json_object_new_string("\([a-z_]*\)").*/\1/p' | sort -u > "$tmp/sent"
nonempty "hubctl's requests (hubctl/*.c)" "$tmp/sent" && {
	comm -23 "$tmp/sent" "$tmp/commands" > "$tmp/missing"
	if [ -s "$tmp/missing" ]; then
		bad "hubctl sends commands that daemon/request.h and doc/control.md do not have: $(tr '\n' ' ' < "$tmp/missing")"
	else ok; fi
}

# 4. hubd.conf.5: each table of config_keys.c against its section's keys
# (a key_gone entry is a key no longer taken, refused with an error: the
# page must not list it)
# The keys of config_keys.c's table $1_keys[], key_gone's left out.
table_keys() {
	awk -v t="static const struct key $1_keys[] = {" '
		$0 == t { on = 1; next }
		on && /^};/ { on = 0 }
		on && !/key_gone/' daemon/config_keys.c | sed -n 's/^[[:space:]]*{ "\([a-z_]*\)",.*/\1/p' |
		sort -u
}
for t in hub:hub pool:pool guest:"guest NAME" topic:"topic NAME"; do
	table=${t%%:*} sect=${t#*:}
	table_keys "$table" > "$tmp/keys"
	nonempty "daemon/config_keys.c's ${table}_keys[]" "$tmp/keys" || continue
	awk -v ss="[$sect]" '
		/^\.S[sh] / { on = (substr($0, 5) == ss); next }
		on && /^\.It Cm / { print $3 }' "$man_dir/hubd.conf.5" | sort -u > "$tmp/documented"
	same_set "$tmp/keys" "$tmp/documented" "hubd.conf.5: [$sect] keys not documented: " "hubd.conf.5: [$sect] documents keys hubd does not take: "
done

# 4a. conf/hubd.conf, which says it shows every key: each [hub] and
# [pool] key as a line "KEY = ..." or "# KEY = ..." of its section, each
# guest's and topic's as "#   KEY = ..." in the comments that list them
for table in hub pool guest topic; do
	table_keys "$table" > "$tmp/keys"
	case $table in
	hub | pool)
		awk -v ss="[$table]" '/^\[/ { on = ($0 == ss); next }
			on' conf/hubd.conf | sed -n 's/^\(# \)\{0,1\}\([a-z_]*\) *=.*/\2/p' ;;
	*)
		sed -n 's/^#   \([a-z_]*\) *=.*/\1/p' conf/hubd.conf ;;
	esac | sort -u > "$tmp/shown"
	comm -23 "$tmp/keys" "$tmp/shown" > "$tmp/missing"
	if [ -s "$tmp/missing" ]; then
		bad "conf/hubd.conf: $table keys not shown: $(tr '\n' ' ' < "$tmp/missing")"
	else ok; fi
done

# 4b. hub-nats.8: the keys nats/conf.c takes, each section's from its own
# part of the parser (on_nats for [nats], handler's branch for each other
# section, as strcmp(key, "NAME")), against that section's ".It Cm NAME"
# lines; and the long options main.c takes (strcmp(argv[i], "--NAME"))
# against OPTIONS' ".It Fl -NAME"
awk '/^on_nats\(/ { sec = "nats" }
	/strcmp\(section, "export"\)/ { sec = "export" }
	/strcmp\(section, "import"\)/ { sec = "import" }
	/^}/ { sec = "" }
	sec != "" {
		line = $0
		while (match(line, /strcmp\(key, "[a-z_]*"\)/)) {
			k = substr(line, RSTART + 13, RLENGTH - 15)
			print sec, k
			line = substr(line, RSTART + RLENGTH)
		}
	}' nats/conf.c | sort -u > "$tmp/nkeys"
nonempty "nats/conf.c's keys" "$tmp/nkeys" && for sect in nats export import; do
	sed -n "s/^$sect //p" "$tmp/nkeys" > "$tmp/keys"
	nonempty "nats/conf.c's [$sect] keys" "$tmp/keys" || continue
	awk -v ss="[$sect]" '
		/^\.S[sh] / { on = (substr($0, 5) == ss); next }
		on && /^\.It Cm / { print $3 }' "$man_dir/hub-nats.8" | sort -u > "$tmp/documented"
	same_set "$tmp/keys" "$tmp/documented" "hub-nats.8: [$sect] keys not documented: " "hub-nats.8: [$sect] documents keys hub-nats does not take: "
done
sed -n 's/.*strcmp(argv\[i\], "--\([a-z-]*\)").*/\1/p' nats/main.c | sort -u > "$tmp/options"
nonempty "nats/main.c's options" "$tmp/options" && {
	section hub-nats.8 OPTIONS | sed -n 's/^\.It Fl -\([a-z-]*\).*/\1/p' | sort -u > "$tmp/documented"
	same_set "$tmp/options" "$tmp/documented" "hub-nats.8: options not documented in OPTIONS: " "hub-nats.8: OPTIONS documents options hub-nats does not take: "
}

# 5. libguest.3: guest.h's GUEST_API functions (a declaration may span lines)
awk '/^GUEST_API/ { d = ""; on = 1 }
	on { d = d " " $0 }
	on && /;/ { print d; on = 0 }' guestlib/guest.h |
	sed 's/(.*//; s/.*[ *]//' | sort -u > "$tmp/functions"
nonempty "guestlib/guest.h's GUEST_API declarations" "$tmp/functions" && {
	section libguest.3 SYNOPSIS | sed -n 's/^\.F[no] \([a-z_][a-z_0-9]*\).*/\1/p' | sort -u > "$tmp/synopsis"
	awk '/^\.Sh / { on = (substr($0, 5) != "NAME" && substr($0, 5) != "SYNOPSIS"); next }
		on' "$man_dir/libguest.3" | grep -o '^\.Fn [a-z_0-9]*' | sed 's/^\.Fn //' |
		sort -u > "$tmp/described"
	same_set "$tmp/functions" "$tmp/synopsis" "libguest.3: not in SYNOPSIS: " "libguest.3: SYNOPSIS has functions guest.h does not declare: "
	comm -23 "$tmp/functions" "$tmp/described" > "$tmp/missing"
	if [ -s "$tmp/missing" ]; then
		bad "libguest.3: not described after SYNOPSIS: $(tr '\n' ' ' < "$tmp/missing")"
	else ok; fi
}

# 6. the docs' links: [text](path) and [text](path#heading) relative to
# the page, outside indented code; web links are not followed
docs="README.md $(ls doc/*.md)"
# the anchors of a page's headings, as GitHub makes them: lower case,
# punctuation dropped, blanks to hyphens
anchors() {
	awk '/^    / || /^\t/ { next }
		/^#+ / { sub(/^#+ +/, ""); h = tolower($0)
			gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}
for page in $docs; do
	dir=$(dirname "$page")
	grep -v '^    \|^	' "$page" | grep -o '](\([^)]*\))' | sed 's/^](//; s/)$//' |
		grep -v '^[a-z]*:' | sort -u > "$tmp/links"
	while read -r link; do
		path=${link%%#*}
		frag=${link#"$path"}; frag=${frag#\#}
		target=$page
		[ -z "$path" ] || target=$dir/$path
		if [ ! -e "$target" ]; then
			bad "$page: link to $link: no $target"; continue
		fi
		case $target in *.md) ;; *) ok; continue ;; esac
		if [ -n "$frag" ] && ! anchors "$target" | grep -qxF -- "$frag"; then
			bad "$page: link to $link: no heading #$frag in $target"
		else ok; fi
	done < "$tmp/links"
done
for page in doc/*.md; do
	if grep -qF "]($page" README.md; then ok; else
		bad "README.md does not link $page"; fi
done

# 7. doc/layout.md names every file of the product's folders in the
# table of that folder's section ("## `DIR/`"), each with its job, and no
# file that is gone; the README stays short, pointing to the pages for the rest.
layout_dirs="proto daemon hubctl guestlib guestlib/examples mt nats
	bindings/python/hubguest scripts"
for d in $layout_dirs; do
	awk -v h="## \`$d/\`" '/^## / { on = ($0 == h); next } on' doc/layout.md \
		> "$tmp/section"
	if [ ! -s "$tmp/section" ]; then
		bad "doc/layout.md: no section \"## \`$d/\`\""; continue
	fi
	find "$d" -maxdepth 1 -type f \( -name '*.[ch]' -o -name '*.py' -o -name '*.sh' \
		-o -name '*.in' -o -name '*.map' \) -printf '%f\n' | sort > "$tmp/files"
	nonempty "$d/" "$tmp/files" || continue
	grep '^|' "$tmp/section" | grep -o '`[^`/ ]*\.\(c\|h\|py\|sh\|in\|map\)`' | tr -d '`' |
		sort -u > "$tmp/named"
	same_set "$tmp/files" "$tmp/named" "doc/layout.md, $d/: no job given for " \
		"doc/layout.md, $d/: names what is not there: "
done
lines=$(wc -l < README.md)
if [ "$lines" -le 250 ]; then ok; else
	bad "README.md has $lines lines, at most 250: link to doc/ for the rest"; fi

echo "man: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
