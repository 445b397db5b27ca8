#!/usr/bin/env bash
# `make check`: the tests that need no root, no BPF and no network, run by
# any contributor in seconds after `make`: the unit tests, the fuzz corpus
# replays, the golden files of every writer and reader, options, symbol
# specs, bad profiles, the include graph, the circles inside folders, the
# files' sizes and the BPF programs' stack depth (tests/check/*.sh).
# Prints a line per part and every failure and warning; the whole output
# is in build/check.log.  A check whose tool is missing (a package beyond
# the build's) is skipped with its reason.  Ends with "N passed, N
# failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
LOG=build/check.log
mkdir -p build
: >"$LOG"
pass=0 fail=0 skipped=0
start=$SECONDS

# part NAME COMMAND...: its "ok"/"not ok"/"skip" lines counted; a part
# that ends without its "N passed, N failed[, N skipped]" line, or with a
# status that does not match it, is one failure more.
part() {
	local name=$1 out ok bad skips last rc t0=$SECONDS
	shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" >>"$LOG"
	ok=$(grep -c '^ok - ' <<<"$out")
	bad=$(grep -c '^not ok - ' <<<"$out")
	skips=$(grep -c '^skip - ' <<<"$out")
	last=$(tail -n 1 <<<"$out")
	if ! [[ $last =~ ^[0-9]+\ passed,\ [0-9]+\ failed(,\ [0-9]+\ skipped)?$ ]] || { [ "$rc" != 0 ] && [ "$bad" = 0 ]; }; then
		bad=$((bad + 1))
		out+=$'\n'"not ok - $name ended with status $rc, last line: $last"
	fi
	pass=$((pass + ok))
	fail=$((fail + bad))
	skipped=$((skipped + skips))
	printf '%-28s %4d passed, %d failed%s  (%d s)\n' "$name" "$ok" "$bad" \
		"$([ "$skips" = 0 ] || echo ", $skips skipped")" $((SECONDS - t0))
	grep -A12 -E '^(not ok|warning) - ' <<<"$out" | grep -E '^(not ok - |warning - |#   |--)' | sed 's/^/    /'
	grep '^skip - ' <<<"$out" | sed 's/^/    /'
}

# Every unit test and fuzz target has its program (the Makefile builds them for check).
for src in tests/unit/test_*.c tests/fuzz/fuzz_*.c; do
	b=$(basename "$src" .c) kind=unit
	[ "${b#fuzz_}" != "$b" ] && b=replay_${b#fuzz_} kind=fuzz
	if [ -x "build/unit/$b" ]; then
		part "$kind $b" "build/unit/$b"
	else
		fail=$((fail + 1))
		echo "not ok - build/unit/$b (from $src) is not built" | tee -a "$LOG"
	fi
done
for s in tests/check/[a-z]*.sh; do
	[ "$s" = tests/check/lib.sh ] && continue
	[ "$s" = tests/check/run.sh ] && continue
	part "$(basename "$s" .sh)" bash "$s"
done
echo "check: $((SECONDS - start)) s; every line in $LOG"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
