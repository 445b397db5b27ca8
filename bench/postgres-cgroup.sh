#!/bin/bash
# A running PostgreSQL server's whole cgroup under heaptrace --cgroup: the
# postmaster and its helpers (checkpointer, walwriter, autovacuum launcher,
# ...) are moved into a cgroup v2 directory of the bench's own and are
# running when heaptrace attaches (adopted: a stub each, as the target);
# pgbench -S's backends are forked inside it afterwards (followed: a stub
# each).
# heaptrace --cgroup DIR --sample-rate 512K --merge, attached before pgbench
# starts, stopped with SIGINT after it ends.  Configurations round-robin, R
# rounds, ratios of medians:
#   bare           no heaptrace
#   cgroup_s512k   --cgroup DIR --sample-rate 512K --merge
# Each traced run is checked: no failed transaction, heaptrace exits 0,
# every process of the cgroup traced (-v: none skipped, all adopted, each
# with a stub of its own, a backend per client followed), samples of several pids in the profile (go
# tool pprof -tags, when go is installed: at 512K a helper that allocates
# little has no sample), and the server answers `select 1` afterwards.
#
# Environment: PG_SECONDS (15), PG_RUNS (3), PG_SCALE (2), PG_CLIENTS (4),
# PG_JOBS (2), PG_CONFIGS (bare cgroup_s512k), PG_KEEP (a directory to copy
# the logs and profiles to).
set -u
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=bench/lib.sh
. bench/lib.sh
# shellcheck source=bench/pg.sh
. bench/pg.sh

pg_settings pgcg
CG=/sys/fs/cgroup/unified/heaptrace-pg-$$
[ -d /sys/fs/cgroup/unified ] || CG=/sys/fs/cgroup/heaptrace-pg-$$

note() { echo "bench-postgres-cgroup: $*" >&2; }
die() { note "$*"; exit 1; }

cleanup() {
	[ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
	pg_stop
	# The server's processes leave the cgroup as they end (bounded wait).
	for _ in $(seq 50); do [ -s "$CG/cgroup.procs" ] || break; sleep 0.1; done
	[ -d "$CG" ] && { rmdir "$CG" 2>/dev/null || note "cannot remove $CG: $(tr '\n' ' ' <"$CG/cgroup.procs" 2>/dev/null)"; }
	pg_keep
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg_start
mkdir "$CG" || die "cannot make the cgroup $CG"
# The postmaster and its children (helpers), each moved in; what they fork from now on is born inside.
for p in $PM $(cat /proc/"$PM"/task/*/children 2>/dev/null); do
	# A child that ended meanwhile (the startup process, say) is no helper to move.
	echo "$p" >"$CG/cgroup.procs" 2>/dev/null || ! kill -0 "$p" 2>/dev/null || die "cannot move PID $p into $CG"
done
NPROCS=$(grep -c . "$CG/cgroup.procs")
note "$("$BIN/postgres" --version) on 127.0.0.1:$PORT, $NPROCS processes in $CG, pgbench -S -c $CLIENTS -j $JOBS, scale $SCALE, $SECS s a run"

# run CONFIG ROUND: TPS set to pgbench's tps, or empty.
run() {
	local c=$1 l="$1 round $2" err=$TMP/$1.$2.err pb=$TMP/$1.$2.pb.gz skipped adopted followed stubs
	TPS=
	case $c in
	bare) ;;
	cgroup_s512k)
		pg_trace "$l" "$err" "heaptrace: tracing PID" --cgroup "$CG" --sample-rate 512K --merge -f proto -o "$pb" || return
		sleep 1 ;;
	*) note "unknown configuration $c"; return ;;
	esac
	pg_bench "$l" "$TMP/$c.$2.pgbench"
	if [ -n "$HPID" ]; then
		pg_untrace "$l" "$err"
		pg_pids "$l" "$pb"
		# Every process of the cgroup traced: the target, the others adopted, a backend per client followed.
		skipped=$(grep -c "is not traced:" "$err")
		adopted=$(grep -c 'tracing PID .* too' "$err")
		followed=$(grep -c 'following child PID' "$err")
		stubs=$(grep -c 'tracing PID .* too (slot [0-9]*, its own stub)' "$err")
		if [ "$skipped" != 0 ] || [ $((1 + adopted)) -lt "$NPROCS" ] || [ "$followed" -lt "$CLIENTS" ] ||
			[ "$stubs" != "$adopted" ]; then
			pg_fail "$l: $NPROCS processes in the cgroup, $adopted adopted beside the target ($stubs with a stub), $followed followed, $skipped skipped"
		fi
		note "$l: adopted $adopted ($stubs with a stub of their own), followed $followed, skipped $skipped, pids with samples ${PIDS:-?}, $(grep -oE '^heaptrace: events:.*' "$err" | tail -1 | sed 's/^heaptrace: //')"
	fi
	pg_alive || pg_fail "$l: the server does not answer select 1"
}

read -ra CONFIGS <<<"${PG_CONFIGS:-bare cgroup_s512k}"
rounds "$RUNS" tps TPS
pg_table "pgbench -S -c $CLIENTS -j $JOBS -T $SECS, the server's cgroup under heaptrace --cgroup --merge, median of $RUNS rounds (tps):"
