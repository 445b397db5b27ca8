#!/usr/bin/env bash
# The option tables (user/cli/trace.c, user/cli/diff.c): --help lists every
# row; every option that takes a value says so when it has none; bad values
# give one line naming the value and exit status 2, before anything is
# traced (so without root); good values at their bounds are taken; long
# values are shortened in the message, not cut.
source "$(dirname "$0")/lib.sh"
NOCMD=/nonexistent/heaptrace-check-command

# rows FILE: "long key arg" of each OPTION row ("-" for no key or no value).
rows() {
	grep -o 'OPTION("[^"]*", *[^,]*, *[^,]*' "$1" |
		sed -E 's/^OPTION\("([^"]*)", *([^,]*), *(.*)$/\1 \2 \3/' |
		awk '{ k = $2 == "0" ? "-" : substr($2, 2, 1); a = $3 == "NULL" ? "-" : $3; gsub(/"/, "", a); print $1, k, a }'
}

# --help lists every row, with its letter and its value's name.
help_rows() {
	local cmd=$1 src=$2 long key arg want n=0
	run "help-$cmd" ${cmd:+"$cmd"} --help
	report "options: heaptrace ${cmd:+$cmd }--help: exit 0, on stdout only" \
		"$([ "$RC" = 0 ] || echo "exit $RC")$([ -s "$TMP/help-$cmd.err" ] && cat "$TMP/help-$cmd.err")"
	while read -r long key arg; do
		n=$((n + 1))
		want="--$long"
		[ "$arg" != - ] && want+=" $arg"
		[ "$key" != - ] && want="-$key, $want"
		report "options: ${cmd:-trace} --help lists '$want'" \
			"$(grep -qF -- "  $want " "$TMP/help-$cmd.out" || grep -qxF -- "  $want" "$TMP/help-$cmd.out" ||
				echo "not in: $(grep -F -- "--$long" "$TMP/help-$cmd.out")")"
	done < <(rows "$src")
	[ "$n" -ge 5 ] || fail "options: rows read from $src" "$n rows"
}
help_rows "" user/cli/trace.c
help_rows diff user/cli/diff.c

# Every option that takes a value, given none.
while read -r long key arg; do
	[ "$arg" = - ] && continue
	run "novalue-$long" --"$long"
	report "options: --$long without its $arg: one line, exit 2" \
		"$(one_error "novalue-$long" 2)$(grep -qF "option --$long needs a value" "$TMP/novalue-$long.err" ||
			echo "no 'option --$long needs a value'")"
done < <(rows user/cli/trace.c)

# bad ARGS... = STATUS FRAGMENT: one line holding FRAGMENT, exit STATUS.
bad() {
	local args=() d name
	while [ "$1" != = ]; do args+=("$1"); shift; done
	name="${args[*]}"
	run bad "${args[@]}"
	d=$(one_error bad "$2")
	grep -qF -- "$3" "$TMP/bad.err" || d+="no '$3' in: $(cat "$TMP/bad.err")"
	report "options: heaptrace ${name//$NOCMD/CMD}: '$3', exit $2" "$d"
}
for v in 0 x -5 2147483648 1.5 " 5" +5 ""; do bad -p "$v" = 2 "-p needs a process id, not '$v'"; done
for o in d i; do
	for v in 0 -1 x 1e3 inf 0x10 ""; do bad -$o "$v" $NOCMD = 2 "-$o needs a positive number of seconds, not '$v'"; done
done
for v in 0 x -1; do bad --min-age "$v" $NOCMD = 2 "--min-age needs a positive number of seconds, not '$v'"; done
for o in top max-allocs max-stacks; do
	for v in 0 x -5 4294967296 1.5 " 5" +5 1K; do bad --$o "$v" $NOCMD = 2 "--$o needs a positive count, not '$v'"; done
done
for v in 0 128 x -1; do bad --max-depth "$v" $NOCMD = 2 "--max-depth takes 1 to 127 frames, not '$v'"; done
for v in 0 x 1T 1KB -1 1.5K; do bad --peak-step "$v" $NOCMD = 2 "--peak-step needs a positive number of bytes, not '$v'"; done
for v in 0 x 1KB -1; do bad --interval-bytes "$v" $NOCMD = 2 "--interval-bytes needs a positive number of bytes, not '$v'"; done
for v in 0 x; do bad --snapshot-at-rss "$v" $NOCMD = 2 "--snapshot-at-rss needs a positive number of bytes, not '$v'"; done
good --interval-bytes 1G --snapshot-at-rss 400M --diff
for v in 1025M 2G x -1 1T; do bad --sample-rate "$v" $NOCMD = 2 "--sample-rate takes bytes, 0 to 1G (suffixes K, M, G), not '$v'"; done
for o in limit-peak limit-leak; do
	for v in x -1 1T 18446744073709551616; do bad --$o "$v" $NOCMD = 2 "--$o takes bytes (suffixes K, M, G), not '$v'"; done
done
for v in bogus "" PPROF; do bad -f "$v" $NOCMD = 2 "unknown format '$v'"; done
for v in bogus inuse; do bad --value "$v" $NOCMD = 2 "unknown value '$v'"; done
bad --probe-at bogus $NOCMD = 2 "--probe-at takes auto or entry, not 'bogus'"
bad --unwind bogus $NOCMD = 2 "--unwind takes fp, dwarf or auto, not 'bogus'"
bad --stack-capture bogus $NOCMD = 2 "--stack-capture takes walk or kernel, not 'bogus'"
bad --preset bogus $NOCMD = 2 "unknown preset 'bogus'"
for v in bogus 127.0.0.1:99999 :0x10 127.0.0.1; do bad --http "$v" $NOCMD = 2 "--http takes ADDR:PORT (e.g. 127.0.0.1:6060) or unix:PATH, not '$v'"; done
bad --http 1.2.3.4.5:80 $NOCMD = 2 "--http 1.2.3.4.5:80: '1.2.3.4.5' is not an IPv4 address"
bad --http unix: $NOCMD = 2 "--http unix:: a unix socket needs a path of 1 to 107 bytes"
bad --http :1 --http-token "$TMP/none" $NOCMD = 2 "--http-token $TMP/none: No such file or directory"
bad --bogus $NOCMD = 2 "unknown option '--bogus'"
bad -Z $NOCMD = 2 "unknown option '-Z'"
bad --diff=x $NOCMD = 2 "unknown option '--diff=x'"
# What no single option can check.
bad -p 1 $NOCMD = 2 "give either -p PID or a command, not both"
bad -q = 2 "nothing to trace: give -p PID or a command"
bad -u nobody -p 1 = 2 "-u runs a launched command as a user; a -p process keeps its own"
bad --no-libc $NOCMD = 2 "--no-libc leaves nothing to trace: add --sym or --preset"
bad --merge $NOCMD = 2 "--merge makes one profile of the processes --follow-fork traces: it needs --follow-fork"
bad --diff $NOCMD = 2 "--diff summarises growth between snapshots: it needs -i or --interval-bytes"
bad -o /nonexistent/dir/x.heap $NOCMD = 1 "cannot write /nonexistent/dir/x.heap: /nonexistent/dir: No such file or directory"
bad -u heaptrace-no-such-user /bin/true = 1 "-u heaptrace-no-such-user: no such user"
# diff's table.
bad diff -f bogus a b = 2 "heaptrace diff: unknown format 'bogus'"
bad diff --value bogus a b = 2 "heaptrace diff: unknown value 'bogus'"
bad diff --top 0 a b = 2 "heaptrace diff: --top needs a positive count, not '0'"
bad diff --bogus a b = 2 "unknown option '--bogus'"
bad diff -f = 2 "option -f needs a value"

# Good values at their bounds are taken: parsing reaches --version.
good() {
	run good "$@" --version
	report "options: heaptrace $* --version: taken, exit 0" \
		"$([ "$RC" = 0 ] || echo "exit $RC")$(grep -qx "heaptrace [0-9.]*" "$TMP/good.out" || echo "stdout: $(cat "$TMP/good.out")")$(cat "$TMP/good.err")"
}
good -p 2147483647
good --top 4294967295 --max-allocs 1 --max-stacks 1
good --max-depth 1
good --max-depth 127
good -d 0.5 -i .25 --min-age 1000000000
good --peak-step 1 --sample-rate 1G --limit-peak 0 --limit-leak 17179869183G
good --sample-rate 0 --peak-step 1k --limit-leak 1m
good -f proto --value alloc_objects --probe-at entry --unwind dwarf --stack-capture kernel
good --collapsed --value inuse_objects --unwind fp --stack-capture walk
good --http 127.0.0.1:6060 --http :0 --http unix:/tmp/x.sock
good --sym 'arena_alloc:size=arg2*arg4,objects=arg4,arena=arg1' --reset-sym 'arena_reset:arena=arg1' --free-sym pool_free
good --preset python --preset jemalloc

# A long value is shortened around "...", with what follows it kept.
long=$(head -c 5000 /dev/zero | tr '\0' a)
longbad() {
	local what=$1 tail=$2 args=() d
	shift 2
	while [ "$1" != = ]; do args+=("$1"); shift; done
	run long "${args[@]}"
	d=$(one_error long "$2")
	grep -qF "aaa...aaa" "$TMP/long.err" || d+="no 'aaa...aaa' in the line"$'\n'
	[ "$(wc -c <"$TMP/long.err")" -lt 700 ] || d+="$(wc -c <"$TMP/long.err") bytes"$'\n'
	[[ $(cat "$TMP/long.err") == *"$tail" ]] || d+="does not end with '$tail': ...$(tail -c 100 "$TMP/long.err")"$'\n'
	report "options: a 5,000-byte $what is shortened with '...', the line kept whole ('...$tail')" "$d"
}
longbad "--sym spec" "' is not a symbol name" --sym "${long}é:size=zz" $NOCMD = 2
longbad "--sym spec" "bad expression: expected argN, ret, a number or *(...) at 'zz'" --sym "${long}:size=zz" $NOCMD = 2
longbad "--top value" "' (see heaptrace --help)" --top "$long" $NOCMD = 2
longbad "--preset name" "': python, jemalloc, or list to print them (see heaptrace --help)" --preset "$long" = 2
longbad "-o path" ": File name too long" -o "/tmp/$long" $NOCMD = 1
longbad "diff operand" ": File name too long" diff "$long" "$long" = 1
# Shortened between characters, not inside one: "a" then 2,500 two-byte "é".
utf=a$(printf 'é%.0s' $(seq 2500))
run utf8 --preset "$utf" $NOCMD
report "options: a long value of multi-byte characters is shortened between characters (valid UTF-8)" \
	"$(one_error utf8 2)$(iconv -f UTF-8 -t UTF-8 "$TMP/utf8.err" >/dev/null 2>&1 || echo "not UTF-8: $(od -c "$TMP/utf8.err" | sed -n '10,12p')")$(grep -qF 'é...é' "$TMP/utf8.err" || echo "no 'é...é'")"
summary
