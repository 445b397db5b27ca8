# shellcheck shell=bash
# Area "drain" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# exact mode's event ring, its consumer (user/tracer/drain.c,
# bpf/drain.bpf.c) against a producer of the test's own.

# build/tests/ring_drain checks its figures itself, one "ok - " or
# "not ok - " line each: every line is a check of this scenario.  $1: the
# scenario's name; the rest: the environment (HEAPTRACE_PAIR=0: the same
# figures with every block through the live map).
ringdrain_run() {
	local name=$1 out="$TMP/$1.out" rc n
	shift
	env "$@" timeout "$(tmo)" "$ROOT/build/tests/ring_drain" 200000 >"$out" 2>"$TMP/$name.err"
	rc=$?
	report "$name: build/tests/ring_drain exits 0" \
		"$([ $rc -eq 0 ] || { echo "exit $rc"; grep -v '^ok' "$out"; cat "$TMP/$name.err"; })"
	n=$(grep -c '^ok - ' "$out")
	report "$name: every check ran and passed ($n)" \
		"$([ "$n" -ge 137 ] && ! grep -q '^not ok' "$out" || { echo "$n checks passed, want >= 137"; grep '^not ok' "$out"; })"
	grep '^# drain cost' "$out"
	return 0
}

scenario_ringdrain() {
	ringdrain_run ringdrain HEAPTRACE_PAIR=1
}

# Pairs off: every figure as with them (the checks of pairs' marks expect none).
scenario_ringdrainnopair() {
	ringdrain_run ringdrainnopair HEAPTRACE_PAIR=0
}
