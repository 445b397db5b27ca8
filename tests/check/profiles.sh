#!/usr/bin/env bash
# Bad profiles given to `heaptrace diff`: each is refused with one line
# naming the file (and the line, where there is one) and exit status 1;
# bad usage with status 2.  The inputs are made from tests/golden/'s.
source "$(dirname "$0")/lib.sh"
G=tests/golden
T=$TMP

# bad NAME WANT_STATUS WANT_LINE ARGS...: heaptrace ARGS gives exactly WANT_LINE ("heaptrace: " left out).
bad() {
	local name=$1 st=$2 want=$3 d
	shift 3
	run "$name" "$@"
	d=$(one_error "$name" "$st")
	[ -z "$d" ] && [ "$(cat "$TMP/$name.err")" != "heaptrace: $want" ] &&
		d="stderr: $(cat "$TMP/$name.err")"$'\n'"want:   heaptrace: $want"
	want=${want//$T/\$TMP}
	report "profiles: $name: exit $st, '${want:0:100}'" "$d"
}

new_lines=$(wc -l <$G/new.heap)
head -c 150 $G/new.heap >"$T/cut-record.heap"
bad cut-record 1 "$T/cut-record.heap:2: the file ends in the middle of this line: a profile cut short" \
	diff $G/empty.heap "$T/cut-record.heap"
# Cut between the counts and the frames: every field that is there parses.
head -2 $G/new.heap | head -c -20 >"$T/cut-frames.heap"
bad cut-frames 1 "$T/cut-frames.heap:2: the file ends in the middle of this line: a profile cut short" \
	diff "$T/cut-frames.heap" $G/new.heap
head -c 60 $G/new.heap >"$T/cut-header.heap"
bad cut-header 1 "$T/cut-header.heap:1: the file ends in the middle of this line: a profile cut short" \
	diff $G/empty.heap "$T/cut-header.heap"
head -c -20 $G/new.heap >"$T/cut-maps.heap"
bad cut-maps 1 "$T/cut-maps.heap:$new_lines: the file ends in the middle of this line: a profile cut short" \
	diff $G/empty.heap "$T/cut-maps.heap"
head -c 30 $G/new.heap >"$T/cut-early.heap"
bad cut-early 1 "$T/cut-early.heap is not a heap profile (no 'heap profile: N: N [N: N] @' header)" \
	diff $G/empty.heap "$T/cut-early.heap"
{ head -3 $G/new.heap; echo garbage; } >"$T/garbage.heap"
bad garbage 1 "$T/garbage.heap:4: not a heap profile record" diff $G/empty.heap "$T/garbage.heap"
{ head -2 $G/new.heap; printf '     1: 5 [ 1: 5] @ 0x1\0\n'; } >"$T/nul.heap"
bad nul 1 "$T/nul.heap:3: a NUL byte in a text profile" diff $G/empty.heap "$T/nul.heap"
: >"$T/empty.heap"
bad empty 1 "$T/empty.heap is empty, not a heap profile" diff $G/empty.heap "$T/empty.heap"
bad elf 1 "$G/app is not a heap profile (neither 'heap profile:' text nor a gzipped profile.proto)" \
	diff $G/empty.heap $G/app
bad directory 1 "$G is a directory, not a heap profile" diff $G/empty.heap $G
bad missing 1 "cannot read $T/missing.heap: No such file or directory" diff "$T/missing.heap" $G/new.heap
printf 'heap profile: 1: 5 [ 1: 5] @ heapprofile\n    -1:  5 [    1:  5] @ 0x401000\n' >"$T/negative.heap"
run negative diff $G/empty.heap "$T/negative.heap"
report "profiles: negative: a negative count is refused, exit 1, one line naming the file" \
	"$(one_error negative 1)$(grep -q "$T/negative.heap" "$TMP/negative.err" || echo "no file name: $(cat "$TMP/negative.err")")"
head -c 300 $G/new.pb.gz >"$T/cut.pb.gz"
bad cut-proto 1 "$T/cut.pb.gz: not a gzipped profile" diff $G/empty.heap "$T/cut.pb.gz"
gzip -c $G/app.c >"$T/text.gz"
bad gzip-text 1 "$T/text.gz: gzip, but not a profile.proto inside" diff $G/empty.heap "$T/text.gz"
bad one-operand 2 "usage: heaptrace diff OLD NEW [-f top|collapsed|pprof] [--value V]" diff $G/new.heap
run three diff $G/new.heap $G/new.heap $G/new.heap
report "profiles: three operands: usage, exit 2" "$(one_error three 2)"
summary
