#!/bin/sh
# `make demo`: trace the bundled demo program from its first instruction and
# show the three output formats.
set -e
cd "$(dirname "$0")/.."
HT=build/heaptrace
DEMO=build/demo
mkdir -p build/demo-out

echo "== heaptrace -f top $DEMO"
$HT -f top --top 5 $DEMO 2>/dev/null

echo "== heaptrace --collapsed $DEMO   (input for flamegraph.pl)"
$HT --collapsed $DEMO 2>/dev/null

$HT -o build/demo-out/demo.heap $DEMO >/dev/null 2>&1
echo "== heaptrace -o build/demo-out/demo.heap $DEMO   (pprof heap profile, first lines)"
head -n 6 build/demo-out/demo.heap
echo "== google-pprof --text $DEMO build/demo-out/demo.heap"
google-pprof --text $DEMO build/demo-out/demo.heap 2>/dev/null | head -n 12
