#!/bin/bash
# test.sh: `make test-kernels`.  For each kernel of KERNELS (default 6.1
# 6.12), boots it (run.sh) and runs tests/run.sh on KERNEL_AREAS, then on
# KERNEL_NOINJECT_AREAS with --no-inject, one guest each; ends with one line
# "N passed, N failed" over all of them.  A guest that gives no summary
# (did not boot, timed out) counts as one failure.  Each guest's output is
# kept in build/kernels/SERIES-MODE.log.
set -u
cd "$(dirname "$0")/../.."
kernels=${KERNELS:-6.1 6.12}
areas=${KERNEL_AREAS:-core custom sampling unwinding fork mmap fastpath batch}
noinject=${KERNEL_NOINJECT_AREAS-core custom sampling unwinding fork mmap batch}
secs=${KERNEL_TIMEOUT:-1800}
# Emulated, the suite runs several times slower than on the host: its
# budget before timeouts shorten grows alike.
export HT_TEST_BUDGET=${HT_TEST_BUDGET:-$([ -w /dev/kvm ] && echo 340 || echo 1500)}
mkdir -p build/kernels

pass=0 fail=0
# one SERIES MODE [--no-inject] AREA...: one guest, its counts added.
one() {
	local series=$1 mode=$2 log rc summary
	shift 2
	log=build/kernels/$series-$mode.log
	echo "# --- kernel $series, $mode: tests/run.sh $*"
	bash scripts/kernels/run.sh -t "$secs" "$series" -- bash tests/run.sh "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -z "$summary" ]; then
		echo "not ok - kernel $series, $mode: no summary from the guest (exit $rc)"
		fail=$((fail + 1))
		return
	fi
	pass=$((pass + $(echo "$summary" | cut -d' ' -f1)))
	fail=$((fail + $(echo "$summary" | cut -d' ' -f3)))
}

for k in $kernels; do
	# shellcheck disable=SC2086
	[ -z "$areas" ] || one "$k" exact $areas
	# shellcheck disable=SC2086
	[ -z "$noinject" ] || one "$k" noinject --no-inject $noinject
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
