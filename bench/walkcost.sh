#!/bin/bash
# The BPF side's own cost per recorded call, from the kernel's statistics
# (sysctl kernel.bpf_stats_enabled, run_time_ns / run_cnt of each program):
# stub_alloc (an allocation the stub recorded: the stack is walked there, or
# in the process by the stub since issue 25, then hashed and accounted) and
# stub_free, while bench/churn runs under heaptrace, exact, with the stub's
# walk (the default), with the BPF walk (HEAPTRACE_WALK=bpf), and under
# BENCH_BASE (another build, e.g. main's), for CFI and --unwind fp, at each
# depth of BENCH_DEPTHS ("8 32").  Measured between two readings 1 s apart
# in the middle of the run, so start-up and the warm-up are not counted;
# only this heaptrace's programs (bpftool's pids).  BENCH_ROUNDS (3) rounds,
# the median of each.
set -u
cd "$(dirname "$0")/.."
HT=${BENCH_HEAPTRACE:-$PWD/build/heaptrace}
BASE=${BENCH_BASE:-}
CHURN=$PWD/build/bench/churn
DEPTHS=${BENCH_DEPTHS:-8 32}
ROUNDS=${BENCH_ROUNDS:-3}
TMP=$(mktemp -d /tmp/heaptrace-walkcost.XXXXXX)
HPID=

old=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	[ -n "$HPID" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$old"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sysctl -qw kernel.bpf_stats_enabled=1 || { echo "walkcost: cannot enable kernel.bpf_stats_enabled" >&2; exit 1; }

# stats PID PROG: "run_time_ns run_cnt" summed over PROG's programs that PID holds (its fds' prog_id).
stats() {
	local id t=0 c=0 rt rc
	for id in $(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u); do
		read -r rt rc < <(bpftool -j prog show id "$id" 2>/dev/null |
			jq -r --arg n "$2" 'select(.name == $n) | "\(.run_time_ns // 0) \(.run_cnt // 0)"')
		t=$((t + ${rt:-0}))
		c=$((c + ${rc:-0}))
	done
	echo "$t $c"
}

# one BIN WALK DEPTH ARGS...: ns per run of stub_alloc and stub_free, "A F".
one() {
	local bin=$1 walk=$2 depth=$3 a0 a1 f0 f1
	shift 3
	HEAPTRACE_WALK=$walk "$bin" "$@" -o /dev/null -- "$CHURN" --pairs 3000000 --depth "$depth" >/dev/null 2>&1 &
	HPID=$!
	sleep 1.5
	read -r a0 c0 < <(stats $HPID stub_alloc)
	read -r f0 g0 < <(stats $HPID stub_free)
	sleep 1
	read -r a1 c1 < <(stats $HPID stub_alloc)
	read -r f1 g1 < <(stats $HPID stub_free)
	kill $HPID 2>/dev/null
	wait $HPID 2>/dev/null
	HPID=
	awk -v a="$((a1 - a0))" -v c="$((c1 - c0))" -v f="$((f1 - f0))" -v g="$((g1 - g0))" \
		'BEGIN { printf "%.0f %.0f\n", c ? a / c : -1, g ? f / g : -1 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }

CONFIGS=("stub:$HT:stub:" "bpf:$HT:bpf:" "stub-fp:$HT:stub:--unwind fp" "bpf-fp:$HT:bpf:--unwind fp")
[ -n "$BASE" ] && CONFIGS+=("base:$BASE:stub:" "base-fp:$BASE:stub:--unwind fp")
for ((r = 1; r <= ROUNDS; r++)); do
	for d in $DEPTHS; do
		for c in "${CONFIGS[@]}"; do
			IFS=: read -r name bin walk opts <<<"$c"
			# shellcheck disable=SC2086
			one "$bin" "$walk" "$d" $opts >>"$TMP/$name.$d"
		done
	done
	echo "walkcost: round $r/$ROUNDS" >&2
done
printf '%-10s %6s %16s %16s\n' walk depth "stub_alloc ns" "stub_free ns"
for d in $DEPTHS; do
	for c in "${CONFIGS[@]}"; do
		name=${c%%:*}
		printf '%-10s %6s %16s %16s\n' "$name" "$d" "$(cut -d' ' -f1 "$TMP/$name.$d" | median)" \
			"$(cut -d' ' -f2 "$TMP/$name.$d" | median)"
	done
done
