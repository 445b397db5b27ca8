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

SECS=${PG_SECONDS:-15}
RUNS=${PG_RUNS:-3}
SCALE=${PG_SCALE:-2}
CLIENTS=${PG_CLIENTS:-4}
JOBS=${PG_JOBS:-2}
HT=$PWD/build/heaptrace
TMP=$(mktemp -d /tmp/heaptrace-pgff.XXXXXX)
HPID=
STARTED=
FAILS=0

note() { echo "bench-postgres-fork: $*" >&2; }
die() { note "$*"; exit 1; }

cleanup() {
	[ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
	pg_stop
	[ -n "${PG_KEEP:-}" ] && mkdir -p "$PG_KEEP" && cp "$TMP"/*.err "$TMP"/*.pgbench "$TMP"/*.pb.gz "$TMP/server.log" "$PG_KEEP"/ 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pg_start
note "$("$BIN/postgres" --version) on 127.0.0.1:$PORT, postmaster $PM, pgbench -S -c $CLIENTS -j $JOBS, scale $SCALE, $SECS s a run"

alive() { as_pg psql -X -At "${PG[@]}" -d postgres -c 'select 1' 2>/dev/null | grep -qx 1; }

# run CONFIG ROUND: TPS set to pgbench's tps, or empty.
run() {
	local c=$1 r=$2 args=() err=$TMP/$1.$2.err out=$TMP/$1.$2.pgbench pb=$TMP/$1.$2.pb.gz rc own n
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
		timeout -s INT -k 60 $((SECS + 120)) "$HT" -v --follow-fork --merge "${args[@]}" \
			-f proto -o "$pb" -p "$PM" 2>"$err" &
		HPID=$!
		for _ in $(seq 300); do
			grep -q "^heaptrace: tracing PID $PM" "$err" 2>/dev/null && break
			kill -0 "$HPID" 2>/dev/null || break
			sleep 0.1
		done
		grep -q "^heaptrace: tracing PID $PM" "$err" ||
			{ note "$c: heaptrace did not attach: $(tail -2 "$err")"; FAILS=$((FAILS + 1)); kill -KILL "$HPID"; wait "$HPID"; HPID=; return; }
	fi
	timeout -k 5 $((SECS + 60)) runuser -u "$PGUSER_OS" -- pgbench "${PG[@]}" -n -S -c "$CLIENTS" -j "$JOBS" -T "$SECS" postgres >"$out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { note "$c round $r: pgbench exit status $rc: $(grep -iE 'error|abort' "$out" | head -2)"; FAILS=$((FAILS + 1)); }
	n=$(awk '/number of failed transactions/ { print $5 }' "$out")
	[ "${n:-0}" = 0 ] || { note "$c round $r: $n failed transactions"; FAILS=$((FAILS + 1)); }
	TPS=$(awk '/^tps = / { printf "%.0f", $3 }' "$out")
	if [ -n "$HPID" ]; then
		kill -INT "$HPID" 2>/dev/null
		wait "$HPID"
		rc=$?
		HPID=
		[ "$rc" = 0 ] || { note "$c round $r: heaptrace exit status $rc: $(tail -2 "$err")"; FAILS=$((FAILS + 1)); TPS=; }
		own=$(grep -c "has its own copy of the stub, enabled" "$err")
		case $c in
		*noinject) ;;
		*) [ "$own" -ge "$CLIENTS" ] || { note "$c round $r: $own backends with a stub of their own (< $CLIENTS)"; FAILS=$((FAILS + 1)); } ;;
		esac
		n=
		if command -v go >/dev/null && [ -s "$pb" ]; then
			n=$(go tool pprof -tags "$pb" 2>/dev/null | awk '/^ *pid:/ { on = 1; next } /^ *[a-z_]+:/ { on = 0 } on && /: [0-9]+ *$/ { k++ } END { print k + 0 }')
			[ "$n" -ge 2 ] || { note "$c round $r: samples of $n pids in $pb"; FAILS=$((FAILS + 1)); }
		fi
		note "$c round $r: stubs $own, pids in profile ${n:-?}, $(grep -oE '^heaptrace: events:.*' "$err" | tail -1 | sed 's/^heaptrace: //')"
	fi
	alive || { note "$c round $r: the server does not answer select 1"; FAILS=$((FAILS + 1)); }
}

read -ra CONFIGS <<<"${PG_CONFIGS:-bare s512k s512k_noinject exact exact_noinject}"
rounds "$RUNS" tps TPS

echo "pgbench -S -c $CLIENTS -j $JOBS -T $SECS, postmaster under --follow-fork --merge, median of $RUNS rounds (tps):"
for c in "${CONFIGS[@]}"; do
	printf '  %-16s %8s   x bare %s   (%s)\n' "$c" "${MED[$c]:--}" "$(ratio "${MED[$c]:-}" "${MED[bare]:-}")" "${ALL[$c]:-}"
done
[ "$FAILS" = 0 ] || { note "$FAILS failed checks"; exit 1; }
