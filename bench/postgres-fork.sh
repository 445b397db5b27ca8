#!/bin/bash
# A pre-fork server under --follow-fork: heaptrace --follow-fork --merge -p on
# PostgreSQL 15's postmaster (Debian's package, 127.0.0.1), while pgbench -S
# with PG_CLIENTS connections runs; each connection forks a backend, which is
# followed.  heaptrace is attached before pgbench starts and stopped with
# SIGINT after it ends.  The throughput is pgbench's own "tps = ..." (without
# the initial connection time).  Configurations run round-robin, R rounds;
# ratios are of medians:
#   bare             no heaptrace
#   s512k            --sample-rate 512K (fast path: a stub per backend)
#   s512k_noinject   the same with --no-inject (uprobes only)
#   exact            no sampling (fast path)
#   exact_noinject   no sampling, --no-inject
# Each traced run is checked: pgbench reports no failed transactions,
# heaptrace exits 0, its -v log has a "has its own copy of the stub" line per
# followed backend (fast-path runs), the profile has samples of several pids
# (go tool pprof -tags, when go is installed), and the server answers
# `select 1` afterwards.  The losses of the -v events line are printed.
#
# Environment: PG_SECONDS (15: each pgbench run), PG_RUNS (3), PG_SCALE (2),
# PG_CLIENTS (4), PG_JOBS (2), PG_CONFIGS (all of the above), PG_KEEP (a
# directory to copy the logs and profiles to).
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
# shellcheck source=bench/pg.sh
. bench/pg.sh

pg_settings pgff

note() { echo "bench-postgres-fork: $*" >&2; }
die() { note "$*"; exit 1; }

cleanup() {
	[ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
	pg_stop
	pg_keep
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg_start
note "$("$BIN/postgres" --version) on 127.0.0.1:$PORT, postmaster $PM, pgbench -S -c $CLIENTS -j $JOBS, scale $SCALE, $SECS s a run"

# run CONFIG ROUND: TPS set to pgbench's tps, or empty.
run() {
	local c=$1 l="$1 round $2" args=() err=$TMP/$1.$2.err pb=$TMP/$1.$2.pb.gz own
	TPS=
	case $c in
	bare) ;;
	s512k) args=(--sample-rate 512K) ;;
	s512k_noinject) args=(--sample-rate 512K --no-inject) ;;
	exact) args=() ;;
	exact_noinject) args=(--no-inject) ;;
	*) note "unknown configuration $c"; return ;;
	esac
	if [ "$c" != bare ]; then
		pg_trace "$l" "$err" "heaptrace: tracing PID $PM" --follow-fork --merge "${args[@]}" -f proto -o "$pb" -p "$PM" || return
	fi
	pg_bench "$l" "$TMP/$c.$2.pgbench"
	if [ -n "$HPID" ]; then
		pg_untrace "$l" "$err"
		own=$(grep -c "has its own copy of the stub, enabled" "$err")
		case $c in
		*noinject) ;;
		*) [ "$own" -ge "$CLIENTS" ] || pg_fail "$l: $own backends with a stub of their own (< $CLIENTS)" ;;
		esac
		pg_pids "$l" "$pb"
		note "$l: stubs $own, pids in profile ${PIDS:-?}, $(grep -oE '^heaptrace: events:.*' "$err" | tail -1 | sed 's/^heaptrace: //')"
	fi
	pg_alive || pg_fail "$l: the server does not answer select 1"
}

read -ra CONFIGS <<<"${PG_CONFIGS:-bare s512k s512k_noinject exact exact_noinject}"
rounds "$RUNS" tps TPS
pg_table "pgbench -S -c $CLIENTS -j $JOBS -T $SECS, postmaster under --follow-fork --merge, median of $RUNS rounds (tps):"
