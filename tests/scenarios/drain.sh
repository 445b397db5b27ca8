# shellcheck shell=bash
# Area "drain" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# exact mode's event ring, its consumer (user/tracer/drain.c,
# bpf/drain.bpf.c) against a producer of the test's own.

# build/tests/ring_drain checks its figures itself, one "ok - " or
# "not ok - " line each: every line is a check of this scenario.
scenario_ringdrain() {
	local out="$TMP/ringdrain.out" rc n
	timeout "$(tmo)" "$ROOT/build/tests/ring_drain" 200000 >"$out" 2>"$TMP/ringdrain.err"
	rc=$?
	report "ringdrain: build/tests/ring_drain exits 0" \
		"$([ $rc -eq 0 ] || { echo "exit $rc"; grep -v '^ok' "$out"; cat "$TMP/ringdrain.err"; })"
	n=$(grep -c '^ok - ' "$out")
	report "ringdrain: every check ran and passed ($n)" \
		"$([ "$n" -ge 30 ] && ! grep -q '^not ok' "$out" || { echo "$n checks passed, want >= 30"; grep '^not ok' "$out"; })"
	grep '^# drain cost' "$out"
	return 0
}
