# shellcheck shell=bash
# Area "valgrind" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario valgrind: heaptrace itself under memcheck.

# ---------------------------------------------------------------------------
# heaptrace's own memory under valgrind: no invalid access, no definite leak,
# and the same exact numbers as without it.  tests/valgrind.supp holds only
# valgrind's gaps in modelling bpf(2) attributes.
scenario_valgrind() {
	if ! command -v valgrind >/dev/null; then
		fail "valgrind: not installed" ""
		return
	fi
	local d=""
	echo "valgrind heaptrace -f collapsed --value alloc_space -- build/tests/t_entrypoints" >"$TMP/vg.cmd"
	timeout -k 5 120 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--suppressions="$ROOT/tests/valgrind.supp" \
		"$HT" -f collapsed --value alloc_space -- "$TB/t_entrypoints" \
		>"$TMP/vg.out" 2>"$TMP/vg.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/vg.rc"
	[ "$RC" = 0 ] || d+="exit status $RC (99: valgrind found errors)"$'\n'
	grep -q '^==[0-9]*== ' "$TMP/vg.err" && d+=$(grep '^==[0-9]*== ' "$TMP/vg.err" | head -20)$'\n'
	report "valgrind: heaptrace -f collapsed on t_entrypoints is memcheck-clean" "$d"
	expect_leaf vg ep_malloc 4000
	expect_leaf vg ep_pvalloc 8192
	expect_leaf vg ep_realloc_big 400000
}
