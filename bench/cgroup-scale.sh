#!/bin/bash
# What tracing a cgroup of N processes costs (issue 28): N idle
# tests/targets/t_service 0 processes in a cgroup v2 directory of the
# bench's own, heaptrace -v --cgroup DIR --merge -d 1 (exact) attached to
# them, each process adopted with a stub of its own (or --no-inject with
# SCALE_OPTS).  For each N, from heaptrace's -v lines: the adoption of the
# N-1 beside the target (in all and a process), the stubs, the kernel
# memory of the BPF maps and programs, heaptrace's RSS before and after the
# adoption and its peak, and the run's wall time.
# Environment: SCALE_NS ("10 100"), SCALE_OPTS (more heaptrace options).
set -u
cd "$(dirname "$0")/.." || exit 1
HT=$PWD/build/heaptrace
SVC=$PWD/build/tests/t_service
TMP=$(mktemp -d /tmp/heaptrace-scale.XXXXXX)
CG=/sys/fs/cgroup/unified/heaptrace-scale-$$
[ -d /sys/fs/cgroup/unified ] || CG=/sys/fs/cgroup/heaptrace-scale-$$
PIDS=()

note() { echo "cgroup-scale: $*" >&2; }

stop_all() {
	[ ${#PIDS[@]} -gt 0 ] && kill -USR1 "${PIDS[@]}" 2>/dev/null && sleep 0.3 && kill -TERM "${PIDS[@]}" 2>/dev/null
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	PIDS=()
}
cleanup() {
	stop_all
	for _ in $(seq 50); do [ -s "$CG/cgroup.procs" ] || break; sleep 0.1; done
	[ -d "$CG" ] && { rmdir "$CG" 2>/dev/null || note "cannot remove $CG"; }
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ ! -x "$HT" ] || [ ! -x "$SVC" ]; then
	note "build first: make all test-targets"
	exit 1
fi
mkdir "$CG" || { note "cannot make the cgroup $CG"; exit 1; }
echo "| N | adoption of the N-1 beside the target | a process | with a stub | kernel memory (maps + programs) | programs | links | RSS before -> after adoption | a process | peak RSS | wall |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in ${SCALE_NS:-10 100}; do
	: >"$TMP/svc"
	for _ in $(seq "$n"); do
		(echo "$BASHPID" >"$CG/cgroup.procs" && exec "$SVC" 0 0) >>"$TMP/svc" 2>/dev/null &
		PIDS+=($!)
	done
	for _ in $(seq 100); do [ "$(grep -c '^ready ' "$TMP/svc")" = "$n" ] && break; sleep 0.1; done
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	timeout -s INT -k 30 120 "$HT" -v --cgroup "$CG" --merge -d 1 ${SCALE_OPTS:-} -f proto -o "$TMP/p.pb.gz" 2>"$TMP/err"
	rc=$?
	t1=$(date +%s.%N)
	[ "$rc" = 0 ] || note "N=$n: heaptrace exit status $rc: $(tail -3 "$TMP/err")"
	e=$TMP/err
	adopt=$(sed -n 's/.*processes traced beside PID [0-9]*, attached in \([0-9.]*\) ms.*/\1/p' "$e")
	each=$(sed -n 's/.*adopting took [0-9.]* ms, \([0-9.]*\) ms a process.*/\1/p' "$e")
	stubs=$(grep -c 'too (slot [0-9]*, its own stub)' "$e")
	kmem=$(sed -n 's/.*kernel memory for [0-9]* processes: \([0-9.]*\) MiB in maps, \([0-9.]*\) KiB in \([0-9]*\) programs, \([0-9]*\) links.*/\1 MiB + \2 KiB|\3|\4/p' "$e")
	rss=$(sed -n 's/.*heaptrace RSS: \([0-9]*\) KiB before adopting [0-9]* processes, \([0-9]*\) after (\([0-9.-]*\) KiB a process).*/\1 -> \2 KiB|\3 KiB/p' "$e")
	peak=$(sed -n 's/.*heaptrace peak RSS: \([0-9]*\) KiB.*/\1/p' "$e")
	skipped=$(grep -c 'is not traced:' "$e")
	IFS='|' read -r kmaps kprogs klinks <<<"${kmem:-?|?|?}"
	IFS='|' read -r rssab rsseach <<<"${rss:-?|?}"
	printf '| %s | %s ms | %s ms | %s of %s | %s | %s | %s | %s | %s | %s KiB | %.2f s |\n' "$n" "${adopt:-?}" \
		"${each:-?}" "$stubs" "$((n - 1))" "$kmaps" "$kprogs" "$klinks" "$rssab" "$rsseach" "${peak:-?}" \
		"$(echo "$t1 - $t0" | bc)"
	[ "$skipped" = 0 ] || note "N=$n: $skipped processes skipped: $(grep 'is not traced' "$e" | head -3)"
	[ -n "${SCALE_KEEP:-}" ] && cp "$e" "$SCALE_KEEP.$n.err"
	stop_all
done
