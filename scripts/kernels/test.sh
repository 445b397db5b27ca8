#!/bin/bash
# test.sh: `make test-kernels`.  For each kernel of KERNELS (default 6.1
# 6.12), boots it (run.sh) and runs tests/run.sh on KERNEL_AREAS, then on
# KERNEL_NOINJECT_AREAS with --no-inject, one guest each, KERNEL_JOBS at
# once; ends with one line "N passed, N failed" over all of them.  Each
# guest's output is kept in build/kernels/SERIES-MODE.log.
set -u
cd "$(dirname "$0")/../.."
accel=$(sh scripts/kernels/accel.sh) || exit 2
kernels=${KERNELS:-6.1 6.12}
areas=${KERNEL_AREAS:-core custom sampling unwinding fork mmap fastpath batch}
noinject=${KERNEL_NOINJECT_AREAS-core custom sampling unwinding fork mmap batch}
secs=${KERNEL_TIMEOUT:-1800}
# Emulated, the suite runs several times slower than on the host: its
# budget before timeouts shorten grows alike (five sixths of the guest's
# time), and each run's timeout is three times the host's (HT_TEST_SLOW:
# under QEMU without KVM a program taking a signal every 100 us, t_inject's
# and t_batch's, ran past 60 s on Debian's 6.1; past the budget, 10 s cut
# every later run of the full set short).
export HT_TEST_BUDGET=${HT_TEST_BUDGET:-$([ "$accel" = kvm ] && echo 340 || echo $((secs * 5 / 6)))}
export HT_TEST_SLOW=${HT_TEST_SLOW:-$([ "$accel" = kvm ] && echo 1 || echo 3)}
mkdir -p build/kernels

# Without KVM each guest is one emulated CPU, one host thread: as many
# guests run at once as the host has CPUs, so CI's part takes half the time
# on two.  With KVM a guest has two CPUs, and they run one at a time.
jobs=${KERNEL_JOBS:-$([ "$accel" = kvm ] && echo 1 || nproc)}

# one SERIES MODE [--no-inject] AREA...: one guest, its output in its log.
one() {
	local series=$1 mode=$2 log
	shift 2
	log=build/kernels/$series-$mode.log
	{
		echo "# --- kernel $series, $mode: tests/run.sh $*"
		bash scripts/kernels/run.sh -t "$secs" "$series" -- bash tests/run.sh "$@" 2>&1
		echo "# --- kernel $series, $mode: exit $?"
	} >"$log"
}

# Each kernel fetched and its initramfs made before any guest starts: the
# guests of one kernel, started at once, would both unpack and build it
# (stop 45's CI: one guest lost its initrd.gz.tmp to the other's rename).
for k in $kernels; do
	kdir=$(sh scripts/kernels/fetch.sh "$k") && sh scripts/kernels/initramfs.sh "$kdir" >/dev/null ||
		echo "# kernel $k: cannot be prepared (said above); its guests will say so too"
done

logs=()
running=0
for k in $kernels; do
	for mode in exact noinject; do
		if [ $mode = exact ]; then set -- $areas; else set -- ${noinject:+--no-inject $noinject}; fi
		[ $# -gt 0 ] || continue
		if [ "$running" -ge "$jobs" ]; then
			wait -n
			running=$((running - 1))
		fi
		echo "# kernel $k, $mode: started, its output in build/kernels/$k-$mode.log"
		one "$k" $mode "$@" &
		running=$((running + 1))
		logs+=("build/kernels/$k-$mode.log")
	done
done
wait

# The logs whole, one after the other, and their counts added.  A guest
# that gives no summary (did not boot, timed out) counts as one failure.
pass=0 fail=0
for log in "${logs[@]}"; do
	cat "$log"
	summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -z "$summary" ]; then
		echo "not ok - $log: no summary from the guest ($(tail -n 1 "$log"))"
		fail=$((fail + 1))
		continue
	fi
	pass=$((pass + $(echo "$summary" | cut -d' ' -f1)))
	fail=$((fail + $(echo "$summary" | cut -d' ' -f3)))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
