#!/bin/bash
# A Python program's allocations (#40 item 5): Debian's python3.11 (LTO+PGO,
# non-PIE) building strings, lists and a dict, timed by itself (the loop
# alone: start-up and the profile's writing are outside).  Seconds a run;
# configurations round-robin, R rounds; each target the median of its
# rounds' ratios (paired: this machine's speed drifts between rounds), and
# ratios of medians, all from this run:
#   bare           python3 alone
#   tracemalloc1   python3 -X tracemalloc=1 (the standard library, one frame)
#   tracemalloc25  python3 -X tracemalloc=25
#   exact          heaptrace --preset python (Python frames in its stacks)
#   exact_native   the same without Python frames (HEAPTRACE_PYFRAMES=off):
#                  what reading them costs
#   s512k          heaptrace --preset python --sample-rate 512K
#   noinject       heaptrace --preset python --no-inject (uprobes)
#
# Environment: PY_ITEMS (300000 strings), PY_RUNS (3), PY_BIN
# (/usr/bin/python3), PY_CONFIGS (all of the above).
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

ITEMS=${PY_ITEMS:-300000}
RUNS=${PY_RUNS:-3}
PY=${PY_BIN:-/usr/bin/python3}
RUN_TIMEOUT=600
bench_start python
[ -x "$PY" ] || { note "no $PY"; exit 1; }

# Small strings (pymalloc), lists growing (realloc) and a dict, some of it
# freed as it goes: what most Python programs allocate.
cat >"$TMP/load.py" <<EOF
import sys, time
t = time.perf_counter()
keep, d = [], {}
for i in range($ITEMS):
    s = str(i) * 3
    keep.append(s)
    d[s] = [i, s]
    if i % 3 == 0:
        del d[s]
print("secs %.4f" % (time.perf_counter() - t))
EOF

# Each target's two configurations run one after the other in a round: paired() takes their ratio there.
CONFIGS=(${PY_CONFIGS:-bare s512k tracemalloc25 exact exact_native tracemalloc1 noinject})
SECS=

run() {
	local name=$1 rc=0
	case $name in
	bare) timeout $RUN_TIMEOUT "$PY" "$TMP/load.py" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	tracemalloc1) timeout $RUN_TIMEOUT "$PY" -X tracemalloc=1 "$TMP/load.py" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	tracemalloc25) timeout $RUN_TIMEOUT "$PY" -X tracemalloc=25 "$TMP/load.py" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	exact) timeout $RUN_TIMEOUT "$HT" --preset python -o /dev/null -- "$PY" "$TMP/load.py" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	exact_native)
		HEAPTRACE_PYFRAMES=off timeout $RUN_TIMEOUT "$HT" --preset python -o /dev/null -- "$PY" "$TMP/load.py" \
			>"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	s512k)
		timeout $RUN_TIMEOUT "$HT" --preset python --sample-rate 512K -o /dev/null -- "$PY" "$TMP/load.py" \
			>"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	noinject)
		timeout $RUN_TIMEOUT "$HT" --preset python --no-inject -o /dev/null -- "$PY" "$TMP/load.py" \
			>"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	*) note "unknown configuration $name"; exit 2 ;;
	esac
	SECS=$(sed -n 's/^secs //p' "$TMP/out" "$TMP/err" | head -1)
	[ "$rc" -eq 0 ] && [ -n "$SECS" ] || { SECS=; note "$name failed (exit $rc): $(tail -2 "$TMP/err" | tr '\n' ' ')"; }
}

note "$PY, $ITEMS strings, $RUNS rounds"
rounds "$RUNS" s SECS

echo
echo "$("$PY" -V 2>&1) ($PY), $ITEMS strings: seconds of the loop (median of $RUNS rounds)"
for c in "${CONFIGS[@]}"; do
	printf '  %-44s %8s   [%s]\n' "$c" "${MED[$c]:--}" "${ALL[$c]:-}"
done
echo
target "exact / -X tracemalloc=25, paired" "$(paired exact tracemalloc25 "$RUNS")" "<" 1.0
target "bare / 512K (speed kept), paired" "$(paired bare s512k "$RUNS")" ">=" 0.95
printf '  %-44s %8s\n' "exact / -X tracemalloc=25, of medians" "$(ratio "${MED[exact]:-}" "${MED[tracemalloc25]:-}")"
printf '  %-44s %8s\n' "bare / 512K, of medians" "$(ratio "${MED[bare]:-}" "${MED[s512k]:-}")"
printf '  %-44s %8s\n' "exact / bare" "$(ratio "${MED[exact]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "exact / exact without Python frames" "$(ratio "${MED[exact]:-}" "${MED[exact_native]:-}")"
printf '  %-44s %8s\n' "-X tracemalloc=25 / bare" "$(ratio "${MED[tracemalloc25]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "--no-inject / exact" "$(ratio "${MED[noinject]:-}" "${MED[exact]:-}")"
