#!/bin/sh
# `make demo`: trace the bundled demo program from its first instruction and
# show the three output formats.
set -e
cd "$(dirname "$0")/.."
HT=build/heaptrace
DEMO=build/demo
mkdir -p build/demo-out
ERR=build/demo-out/stderr

# heaptrace's standard error is the demo's own (the demo program's output
# is kept out of it); shown whole when heaptrace fails, so that a failure
# says why.
ht() {
	if ! $HT "$@" 2>"$ERR"; then
		cat "$ERR" >&2
		echo "make demo: heaptrace $* failed" >&2
		exit 1
	fi
	grep '^heaptrace:' "$ERR" >&2 || true
}

echo "== heaptrace -f top $DEMO"
ht -f top --top 5 $DEMO

echo "== heaptrace --collapsed $DEMO   (input for flamegraph.pl)"
ht --collapsed $DEMO

ht -o build/demo-out/demo.heap $DEMO >/dev/null
echo "== heaptrace -o build/demo-out/demo.heap $DEMO   (pprof heap profile, first lines)"
head -n 6 build/demo-out/demo.heap
echo "== google-pprof --text $DEMO build/demo-out/demo.heap"
google-pprof --text $DEMO build/demo-out/demo.heap 2>/dev/null | head -n 12
