#!/bin/bash
# A real server under heaptrace -p: one PostgreSQL 15 backend (Debian's
# package) on 127.0.0.1, driven by pgbench with one connection.  A backend is
# forked per connection, so each run starts pgbench -c 1, finds its backend in
# pg_stat_activity, attaches heaptrace to it and reads pgbench's per-second
# progress: the throughput is the mean of the seconds after "tracing PID"
# (attach and its first second are outside it), the same seconds for bare.
# Configurations run round-robin, R rounds; ratios are of medians:
#   bare            no heaptrace
#   malloc_exact    heaptrace -p (the malloc family: what palloc gets from malloc)
#   palloc_exact    --no-libc and the palloc specs of docs/postgresql.md
#   palloc_exact_sites  the same with HEAPTRACE_BATCH=0: a record site a call,
#                   not the ring (the events lines of the two side by side)
#   palloc_sampled  the same with --sample-rate 64K
#   palloc_nofree   palloc_sampled without --free-sym pfree (its uprobe was
#                   single-stepped: docs/postgresql.md)
#   palloc_exact_noinject, palloc_sampled_noinject
#                   the same with --no-inject: uprobes only, as before the
#                   stub took the palloc family (issue 24)
#
# Environment: PG_SECONDS (20: each pgbench run), PG_RUNS (1), PG_SCALE (2),
# PG_MODE (select: pgbench -S; tpcb: the default TPC-B-like script),
# PG_CONFIGS (all of the above), BENCH_HEAPTRACE (build/heaptrace) to measure
# another build with the same script (HEAPTRACE_WALK=bpf: the BPF side walks).
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
# shellcheck source=bench/pg.sh
. bench/pg.sh

SECS=${PG_SECONDS:-20}
RUNS=${PG_RUNS:-1}
SCALE=${PG_SCALE:-2}
MODE=${PG_MODE:-select}
HT=${BENCH_HEAPTRACE:-$PWD/build/heaptrace}
TMP=$(mktemp -d /tmp/heaptrace-pg.XXXXXX)
HPID=
STARTED=
declare -A HOW=() LOSS=()

note() { echo "bench-postgres: $*" >&2; }
die() { note "$*"; exit 1; }

cleanup() {
	[ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
	pg_stop
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg_start
note "$("$BIN/postgres" --version) on 127.0.0.1:$PORT, pgbench scale $SCALE, $MODE, $SECS s a run"

SPECS=(--no-libc --sym palloc:size=arg1 --sym palloc0:size=arg1
	--sym MemoryContextAlloc:size=arg2 --sym MemoryContextAllocZero:size=arg2
	--sym MemoryContextAllocZeroAligned:size=arg2 --sym MemoryContextAllocExtended:size=arg2
	--free-sym pfree:ptr=arg1)
ARGS=()
[ "$MODE" = select ] && ARGS=(-S)

backend() {
	as_pg psql -X -At "${PG[@]}" -d postgres -c \
		"select pid from pg_stat_activity where application_name = 'pgbench' and query like '%abalance%' and pid <> pg_backend_pid()" 2>/dev/null
}

# run CONFIG: TPS set to the mean throughput while traced, or empty.
run() {
	local args=() prog=$TMP/$1.progress err=$TMP/$1.err pb pid= t0 t1 from
	TPS=
	case $1 in
	bare) ;;
	malloc_exact) args=() ;;
	palloc_exact) args=("${SPECS[@]}") ;;
	palloc_exact_sites) args=("${SPECS[@]}") ;;
	palloc_sampled) args=("${SPECS[@]}" --sample-rate 64K) ;;
	palloc_nofree) args=("${SPECS[@]::${#SPECS[@]}-2}" --sample-rate 64K) ;;
	palloc_exact_noinject) args=("${SPECS[@]}" --no-inject) ;;
	palloc_sampled_noinject) args=("${SPECS[@]}" --sample-rate 64K --no-inject) ;;
	esac
	# The last run's backend may still be listed while it exits.
	for _ in $(seq 100); do
		[ -z "$(backend)" ] && break
		sleep 0.05
	done
	t0=$(date +%s.%N)
	as_pg pgbench "${PG[@]}" -n -c 1 -T "$SECS" -P 1 "${ARGS[@]}" postgres >/dev/null 2>"$prog" &
	pb=$!
	for _ in $(seq 100); do
		pid=$(backend)
		[ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ] || { note "$1: no pgbench backend"; wait "$pb"; return; }
	from=1
	if [ "$1" != bare ]; then
		# palloc_exact_sites: a record site a call (no ring), to set the ring's figures beside.
		local envs=()
		[ "$1" = palloc_exact_sites ] && envs=(HEAPTRACE_BATCH=0)
		env "${envs[@]}" timeout -k 5 $((SECS + 60)) "$HT" -v "${args[@]}" -o "$TMP/$1.heap" -p "$pid" 2>"$err" &
		HPID=$!
		for _ in $(seq 300); do
			grep -q "^heaptrace: tracing PID $pid" "$err" 2>/dev/null && break
			kill -0 "$HPID" 2>/dev/null || break
			sleep 0.1
		done
		grep -q "^heaptrace: tracing PID $pid" "$err" || { note "$1: heaptrace did not attach: $(tail -2 "$err")"; wait "$pb"; return; }
		t1=$(date +%s.%N)
		from=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a + 1.5 }')
	fi
	wait "$pb"
	if [ -n "$HPID" ]; then
		# The backend exits with pgbench's connection, and heaptrace with it.
		wait "$HPID"
		local rc=$?
		HPID=
		[ "$rc" = 0 ] || { note "$1: heaptrace exit status $rc: $(tail -1 "$err")"; return; }
		# Exact mode batches its events in the process, or says why not.
		case $1 in
		*_exact | *_exact_sites) HOW[$1]=$(grep -m1 -E '^heaptrace: fast path: (no batching|events batched|not installed)' "$err") ;;
		esac
		# What the run could not match: the same figures whichever path recorded the events.
		LOSS[$1]=$(grep -m1 '^heaptrace: events:' "$err" | grep -oE ' (allocs|frees|unmatched_frees|missed_frees|stack_errors|ring_lost|live_map_full)=[0-9]+' | tr -d '\n')
		# The palloc family through the stub, unless --no-inject: a row of uprobes would pass for one.
		case $1 in
		palloc_exact | palloc_exact_sites | palloc_sampled | palloc_nofree)
			grep -q '^heaptrace: probe palloc .*the fast path (stub)' "$err" ||
				{ note "$1: palloc is not through the stub: $(grep -m2 'fast path' "$err" | tr '\n' ' ')"; return; } ;;
		esac
	fi
	# Bare uses the same seconds as a traced run would: from 3 s on.
	[ "$1" = bare ] && from=3
	TPS=$(awk -v from="$from" '/^progress:/ { t = $2 + 0; if (t > from) { s += $4; n++ } }
		END { if (n >= 3) printf "%.0f", s / n }' "$prog")
	[ -n "$TPS" ] || note "$1: under 3 seconds traced (PG_SECONDS=$SECS)"
}

read -ra CONFIGS <<<"${PG_CONFIGS:-bare malloc_exact palloc_exact palloc_exact_sites palloc_sampled palloc_nofree palloc_exact_noinject palloc_sampled_noinject}"
rounds "$RUNS" tps TPS

echo "pgbench -c 1 $([ "$MODE" = select ] && echo -S || echo TPC-B) -T $SECS, one backend traced, median of $RUNS rounds (tps):"
for c in "${CONFIGS[@]}"; do
	printf '  %-24s %8s   x bare %s\n' "$c" "${MED[$c]:--}" "$(ratio "${MED[$c]:-}" "${MED[bare]:-}")"
done
for c in "${!HOW[@]}"; do
	echo "$c, as -v said in the last round: ${HOW[$c]#heaptrace: }"
done
for c in "${!LOSS[@]}"; do
	echo "$c, its events in the last round:${LOSS[$c]}"
done
# The palloc family through the stub (issue 24): the targets, and the gain over uprobes.
target "palloc sampled / bare" "$(ratio "${MED[palloc_sampled]:-}" "${MED[bare]:-}")" ">=" 0.85
target "palloc exact / bare" "$(ratio "${MED[palloc_exact]:-}" "${MED[bare]:-}")" ">=" 0.08
# Issue 25's: exact mode at heaptrack's cost.
target "malloc exact / bare (issue 25)" "$(ratio "${MED[malloc_exact]:-}" "${MED[bare]:-}")" ">=" 0.90
target "palloc exact / bare (issue 25)" "$(ratio "${MED[palloc_exact]:-}" "${MED[bare]:-}")" ">=" 0.30
printf '  %-44s %8s\n' "palloc exact: the ring / a record site a call" \
	"$(ratio "${MED[palloc_exact]:-}" "${MED[palloc_exact_sites]:-}")"
printf '  %-44s %8s\n' "palloc exact: fast path / --no-inject" \
	"$(ratio "${MED[palloc_exact]:-}" "${MED[palloc_exact_noinject]:-}")"
printf '  %-44s %8s\n' "palloc sampled: fast path / --no-inject" \
	"$(ratio "${MED[palloc_sampled]:-}" "${MED[palloc_sampled_noinject]:-}")"
