#!/usr/bin/env bash
# Golden files of every writer and reader: the profiles in tests/golden/
# (text, sampled heap_v2 text and -f proto, of tests/golden/app) run through
# `heaptrace diff -f FORMAT`, compared byte for byte with
# tests/golden/expected/.  -f proto is compared inflated (zlib's deflate
# may change, the protobuf may not), and as text by its fields' names
# (build/check/pbdump, the .pb.txt beside each .pb, for a readable diff);
# -f html by its data, the template around it being build/report.html.  After a change of output that is
# meant: `make golden` (this script with --update) rewrites them; review
# the diff before committing it.
source "$(dirname "$0")/lib.sh"
G=tests/golden
E=$G/expected
UPDATE=0
[ "${1:-}" = --update ] && UPDATE=1 && mkdir -p "$E"

# The data of an -f html page: what the writer put in place of @DATA@.
html_data() {
	local page=$1 tpl=build/report.html before after
	before=$(grep -b -o '@DATA@' "$tpl" | head -1 | cut -d: -f1)
	after=$(($(stat -c %s "$tpl") - before - 6))
	if ! cmp -s <(head -c "$before" "$page") <(head -c "$before" "$tpl") ||
		! cmp -s <(tail -c "$after" "$page") <(tail -c "$after" "$tpl"); then
		echo "the page is not build/report.html around its data"
		return 1
	fi
	head -c $(($(stat -c %s "$page") - after)) "$page" | tail -c +$((before + 1))
}

# golden NAME FORMAT OLD NEW [OPTIONS...]: heaptrace diff OLD NEW -f FORMAT OPTIONS.
golden() {
	local name=$1 fmt=$2 old=$3 new=$4 ext=$2 got want d=""
	shift 4
	run "$name" diff "$old" "$new" -f "$fmt" "$@"
	got=$TMP/$name.out
	if [ "$fmt" = proto ]; then
		ext=pb
		gzip -dc <"$TMP/$name.out" >"$TMP/$name.pb" 2>>"$TMP/$name.err" || d+="not gzip"$'\n'
		got=$TMP/$name.pb
	elif [ "$fmt" = html ]; then
		ext=html.json
		html_data "$TMP/$name.out" >"$TMP/$name.json" || d+="$(cat "$TMP/$name.json")"$'\n'
		got=$TMP/$name.json
	fi
	want=$E/$name.$ext
	[ "$RC" = 0 ] || d+="exit status $RC: $(head -3 "$TMP/$name.err")"$'\n'
	[ -s "$TMP/$name.err" ] && d+="stderr: $(head -3 "$TMP/$name.err")"$'\n'
	if [ "$fmt" = proto ] && [ -z "$d" ]; then
		build/check/pbdump <"$got" >"$got.txt" || d+="pbdump: $(tail -1 "$got.txt")"$'\n'
		[ -z "$d" ] && d+=$(compare "$got.txt" "$want.txt")
	fi
	# A run that failed compares nothing and, with --update, writes nothing.
	[ -z "$d" ] && d+=$(compare "$got" "$want")
	report "golden $name: diff ${old#"$G/"} ${new#"$G/"} -f $fmt${*:+ $*}" "$d"
}

# compare GOT WANT: nothing, or how they differ; with --update, GOT becomes WANT.
compare() {
	if [ "$UPDATE" = 1 ]; then
		cp "$1" "$2"
	elif [ ! -e "$2" ]; then
		echo "no $2: make golden"
	elif ! cmp -s "$1" "$2"; then
		echo "differs from $2 (make golden, if the change is meant):"
		if [[ $2 == *.pb ]]; then
			cmp "$1" "$2" 2>&1
		else
			diff "$2" "$1" | head -20
		fi
	fi
}

for f in top collapsed pprof proto html svg; do
	golden "diff-$f" "$f" $G/old.heap $G/new.heap
	golden "new-$f" "$f" $G/empty.heap $G/new.heap
done
# The proto reader: what it read is what the writers show.
for f in pprof top collapsed; do
	golden "proto-$f" "$f" $G/empty.heap $G/new.pb.gz
done
golden mixed-collapsed collapsed $G/old.heap $G/new.pb.gz
# heap_v2: raw counts of sampled allocations, scaled up by the reader.
golden sampled-pprof pprof $G/empty.heap $G/sampled.heap
golden sampled-top top $G/empty.heap $G/sampled.heap
for v in inuse_objects alloc_space alloc_objects; do
	golden "value-$v-top" top $G/old.heap $G/new.heap --value "$v"
	golden "value-$v-collapsed" collapsed $G/old.heap $G/new.heap --value "$v"
done
golden top2 top $G/old.heap $G/new.heap --top 2
# Shrinking: negative counts; -f pprof keeps only the growth.
golden shrink-top top $G/new.heap $G/old.heap
golden shrink-pprof pprof $G/new.heap $G/old.heap
golden shrink-collapsed collapsed $G/new.heap $G/old.heap

# The same profile through CRLF line ends reads the same.
sed 's/$/\r/' $G/new.heap >"$TMP/crlf.heap"
run crlf diff $G/empty.heap "$TMP/crlf.heap" -f collapsed
report "golden: a CRLF copy of new.heap reads as new.heap (-f collapsed)" \
	"$(cmp "$TMP/crlf.out" $E/new-collapsed.collapsed 2>&1)"
# Twice the same: no time, address or order that changes between runs.
run again1 diff $G/old.heap $G/new.heap -f proto
run again2 diff $G/old.heap $G/new.heap -f proto
report "golden: diff -f proto twice gives the same bytes" "$(cmp "$TMP/again1.out" "$TMP/again2.out" 2>&1)"
summary
