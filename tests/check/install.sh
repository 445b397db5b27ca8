#!/usr/bin/env bash
# What `make install` and `make deb` ship beside the binary: heaptrace(8)
# and the bash completion (build/, generated from heaptrace --dump-options).
# Every option of each command's --help (parsed, not listed here) is in
# the page and offered by the completion; the page renders without a
# warning and tells the exit statuses and environment the code has; the
# completion answers options, values, pids, commands and `diff`.
source "$(dirname "$0")/lib.sh"
MAN_PAGE=build/heaptrace.8
COMPLETION=build/heaptrace.bash-completion

for f in "$MAN_PAGE" "$COMPLETION"; do
	report "install: $f is built (make all)" "$([ -s "$f" ] || echo "missing or empty")"
done

# The page as man shows it, and what troff had to say about it.  Without
# man (man-db) or groff (groff-base), not build dependencies, the checks
# that read the rendered page are skipped, saying what to install.
rendered=$TMP/man.txt
: >"$rendered"
no_man=""
if command -v man >/dev/null; then
	MANWIDTH=80 man --warnings -l "$MAN_PAGE" >"$rendered" 2>"$TMP/man.err"
	rc=$?
	report "install: man --warnings -l $MAN_PAGE: exit 0, no warning" \
		"$([ "$rc" = 0 ] || echo "exit $rc")$(cat "$TMP/man.err")$([ -s "$rendered" ] || echo "nothing rendered")"
else
	no_man="man is not installed (apt-get install man-db, or make deps)"
	skip "install: man --warnings -l $MAN_PAGE: exit 0, no warning" "$no_man"
fi
if command -v groff >/dev/null; then
	groff -ww -z -man "$MAN_PAGE" 2>"$TMP/groff.err"
	report "install: groff -ww -man $MAN_PAGE: no warning" "$(cat "$TMP/groff.err")"
else
	skip "install: groff -ww -man $MAN_PAGE: no warning" "groff is not installed (apt-get install groff-base, or make deps)"
fi

# page_report NAME DIAG: a check of the rendered page; skipped without man.
page_report() {
	if [ -n "$no_man" ]; then skip "$1" "$no_man"; else report "$1" "$2"; fi
}

# help_options CMD...: "-k --long" or "--long" per option line of that --help.
help_options() {
	"$HT" "$@" --help | sed -nE 's/^  (-([A-Za-z]), |    )--([a-z][a-z0-9-]*).*/\2 \3/p'
}

# complete WORD...: the completion's answers (one per line) for the command
# line "heaptrace WORD...", the cursor at the end of the last word.
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=(heaptrace "$@"); COMP_CWORD=$#; COMPREPLY=()
		_heaptrace; printf "%s\n" "${COMPREPLY[@]}"' complete "$ROOT/$COMPLETION" "$@" 2>&1
}

for cmd in "" diff; do
	n=0 missing_man="" missing_comp=""
	while read -r key long; do
		[ -n "$long" ] || { long=$key key=""; }
		n=$((n + 1))
		# A tag of the page: "-k, --long" or "--long" at the start of a line.
		if [ -n "$key" ]; then
			grep -qE -- "^ +-$key, --$long( |$)" "$rendered" || missing_man+="-$key, --$long"$'\n'
		else
			grep -qE -- "^ +--$long( |$)" "$rendered" || missing_man+="--$long"$'\n'
		fi
		grep -qxF -- "--$long" <<<"$(complete_words ${cmd:+"$cmd"} "--$long")" || missing_comp+="--$long"$'\n'
		if [ -n "$key" ]; then
			grep -qxF -- "-$key" <<<"$(complete_words ${cmd:+"$cmd"} "-$key")" || missing_comp+="-$key"$'\n'
		fi
	done < <(help_options ${cmd:+"$cmd"})
	[ "$n" -ge 5 ] || fail "install: options read from heaptrace ${cmd:+$cmd }--help" "$n options"
	page_report "install: the page has the $n options of heaptrace ${cmd:+$cmd }--help" "$missing_man"
	report "install: the completion offers the $n options of heaptrace ${cmd:+$cmd }--help" "$missing_comp"
done
# The diff section holds diff's options: its own --value line is there.
page_report "install: the page has a section for heaptrace diff" \
	"$(grep -q '^   heaptrace diff OLD NEW' "$rendered" || echo "no 'heaptrace diff OLD NEW' subsection")"

# The exit statuses of the code: 2 for usage (cmd_trace), HT_EXIT_LIMIT for a limit.
limit=$(sed -nE 's/^#define HT_EXIT_LIMIT +([0-9]+).*/\1/p' user/session/limits.h)
d=""
[ -n "$limit" ] || d+="no HT_EXIT_LIMIT in user/session/limits.h"$'\n'
for s in 0 1 2 "$limit"; do
	grep -qE "^       $s( |$)" <<<"$(sed -n '/^EXIT STATUS/,/^[A-Z]/p' "$rendered")" || d+="no exit status $s"$'\n'
done
page_report "install: EXIT STATUS has 0, 1, 2 and $limit (HT_EXIT_LIMIT)" "$d"

# Every environment variable the code reads is in ENVIRONMENT.
d="" n=0
while read -r var; do
	n=$((n + 1))
	grep -qw -- "$var" <<<"$(sed -n '/^ENVIRONMENT/,/^[A-Z]/p' "$rendered")" || d+="$var is read (user/) but not in ENVIRONMENT"$'\n'
done < <(grep -rhoE 'getenv\("[A-Z_]+"\)' user | sed -E 's/getenv\("(.*)"\)/\1/' | sort -u)
[ "$n" -ge 5 ] || d+="only $n getenv() calls found in user/"$'\n'
page_report "install: ENVIRONMENT names the $n variables the code reads" "$d"
page_report "install: FILES names the cache of user/util/cache.h" \
	"$(grep -q '\$XDG_CACHE_HOME/heaptrace.*~/.cache/heaptrace' user/util/cache.h || echo "cache.h's path changed";
	   grep -qF '$XDG_CACHE_HOME/heaptrace/ or ~/.cache/heaptrace/' <<<"$(sed -n '/^FILES/,/^[A-Z]/p' "$rendered")" ||
		echo "not in FILES")"

# The completion: an option by its start, the values of an option, pids.
got=$(complete_words --fo | sort | tr '\n' ' ')
want=$(help_options | awk '$NF ~ /^fo/ { printf "--%s\n", $NF }' | sort | tr '\n' ' ')
report "install: completion of 'heaptrace --fo' is the --fo* options of --help ($want)" \
	"$([ "$got" = "$want" ] || echo "got: $got")"
# -f's values: what the option table dumps, each named in --help's -f line and taken by the parser.
formats=$("$HT" --dump-options | awk -F'\t' '$1 == "command" { c = $2 } c == "trace" && $1 == "option" { o = $2 }
	c == "trace" && o == "format" && $1 == "choice" { print $2 }')
d=""
[ "$(wc -w <<<"$formats")" -ge 4 ] || d+="--dump-options gives -f the values: $formats"$'\n'
for f in $formats; do
	grep -qw -- "$f" <<<"$("$HT" --help | sed -n '/--format FMT/,/--collapsed/p')" || d+="$f: not in --help's -f text"$'\n'
	run fmt-"$f" -f "$f" -u nobody -p 1
	grep -q 'unknown format' "$TMP/fmt-$f.err" && d+="$f: refused by the parser"$'\n'
done
for args in "--format" "--format =" "-f"; do
	# shellcheck disable=SC2086
	got=$(complete_words $args "" | tr '\n' ' ')
	[ "$got" = "$(tr '\n' ' ' <<<"$formats")" ] || d+="heaptrace $args <TAB>: $got"$'\n'
done
got=$(complete_words --format p | tr '\n' ' ')
[ "$got" = "$(grep '^p' <<<"$formats" | tr '\n' ' ')" ] || d+="heaptrace --format p<TAB>: $got"$'\n'
report "install: completion of 'heaptrace --format <TAB>' is -f's values ($(tr '\n' ' ' <<<"$formats"))" "$d"
d=""
for o in value preset unwind probe-at stack-capture; do
	want=$("$HT" --dump-options | awk -F'\t' -v o="$o" '$1 == "command" { c = $2 } c == "trace" && $1 == "option" { x = $2 }
		c == "trace" && x == o && $1 == "choice" { print $2 }' | tr '\n' ' ')
	got=$(complete_words "--$o" "" | tr '\n' ' ')
	[ -n "$want" ] && [ "$got" = "$want" ] || d+="--$o: got '$got', the table has '$want'"$'\n'
done
report "install: completion of --value, --preset, --unwind, --probe-at, --stack-capture: their values" "$d"
pids=$(complete_words -p "")
report "install: completion of 'heaptrace -p <TAB>' offers process ids" \
	"$(grep -qx "$$" <<<"$pids" && grep -qx 1 <<<"$pids" || echo "no $$ or 1 in: $(head -5 <<<"$pids")")"
got=$(complete_words diff --v | tr '\n' ' ')
report "install: completion of 'heaptrace diff --v' is --value" "$([ "$got" = "--value " ] || echo "got: $got")"
report "install: completion of 'heaptrace d' offers the command diff" \
	"$(got=$(complete_words d); grep -qx diff <<<"$got" || echo "no diff in: $(head -5 <<<"$got")")"
# After the options, the command: its own completion (bash-completion's) takes over.
# (HT_CHECK_BASH_COMPLETION: another path, for trying the check where the package is missing.)
BASH_COMPLETION_LIB=${HT_CHECK_BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
if [ -r "$BASH_COMPLETION_LIB" ]; then
	got=$(bash -c 'source "$2"; source "$1"
		COMP_WORDS=(heaptrace -f top --value alloc_space ls --col); COMP_CWORD=6; COMP_LINE="${COMP_WORDS[*]}"
		COMP_POINT=${#COMP_LINE}; _heaptrace; printf "%s\n" "${COMPREPLY[@]}"' complete "$ROOT/$COMPLETION" "$BASH_COMPLETION_LIB" 2>&1)
	report "install: completion of 'heaptrace -f top --value alloc_space ls --col' is ls's --color" \
		"$(grep -q '^--color' <<<"$got" || echo "got: $got")"
else
	skip "install: completion of 'heaptrace -f top --value alloc_space ls --col' is ls's --color" \
		"bash-completion is not installed (apt-get install bash-completion, or make deps)"
fi
summary
