# shellcheck shell=bash
# Area "unit" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario unit: the unit tests of build/unit.

# ---------------------------------------------------------------------------
# Unit tests of single modules (tests/unit, built into build/unit): each is a
# program whose own last line is "N passed, N failed".
scenario_unit() {
	local u name d
	for u in "$ROOT"/build/unit/*; do
		[ -x "$u" ] || continue
		name=$(basename "$u")
		timeout -k 5 "$(tmo)" "$u" >"$TMP/unit.$name.out" 2>&1
		RC=$?
		d=""
		[ "$RC" = 0 ] || d+="exit status $RC"$'\n'
		tail -1 "$TMP/unit.$name.out" | grep -Eq '^[0-9]+ passed, 0 failed$' ||
			d+="last line: $(tail -1 "$TMP/unit.$name.out")"$'\n'
		[ -n "$d" ] && d+=$(grep '^not ok' "$TMP/unit.$name.out" | head -10)
		report "unit: $name ($(tail -1 "$TMP/unit.$name.out"))" "$d"
	done
	[ -e "$ROOT/build/unit/test_symbolize" ] || fail "unit: build/unit/test_symbolize not built" ""
	[ -e "$ROOT/build/unit/test_sample" ] || fail "unit: build/unit/test_sample not built" ""
}
