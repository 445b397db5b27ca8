# shellcheck shell=bash
# A PostgreSQL server of the benches' own (bench/postgres.sh,
# postgres-fork.sh, postgres-cgroup.sh): Debian's package, installed when missing; a data
# directory in $TMP; 127.0.0.1 on a free port; fsync off (the disk is not
# what is measured); pgbench's tables at scale $SCALE.  The caller sets
# TMP, SCALE and HT, defines note and die, and calls pg_stop from its
# cleanup.  pg_start sets BIN, PORT, PG (the connection options), PM (the
# postmaster's pid) and STARTED.

# The server runs as an unprivileged user: initdb refuses root.
PGUSER_OS=postgres
as_pg() { runuser -u "$PGUSER_OS" -- "$@"; }

pg_stop() {
	[ -n "${STARTED:-}" ] && as_pg "$BIN/pg_ctl" -D "$TMP/data" -m immediate stop >/dev/null 2>&1
}

pg_start() {
	BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	if [ -z "$BIN" ] || ! command -v pgbench >/dev/null; then
		note "installing postgresql"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib >/dev/null ||
			die "cannot install postgresql"
		BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	fi
	[ -x "$BIN/postgres" ] || die "no postgres under /usr/lib/postgresql"
	id "$PGUSER_OS" >/dev/null 2>&1 || die "no user $PGUSER_OS (the Debian package creates it)"
	[ -x "$HT" ] || die "$HT not built (make)"
	chmod 755 "$TMP"
	mkdir "$TMP/data" && chown "$PGUSER_OS" "$TMP/data" "$TMP" || die "cannot make $TMP/data"

	PORT=
	for p in $(shuf -i 20000-60000 -n 50); do
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { PORT=$p; break; }
	done
	[ -n "$PORT" ] || die "no free port"

	as_pg "$BIN/initdb" -D "$TMP/data" -A trust -U postgres >"$TMP/initdb.log" 2>&1 || die "initdb failed: $(tail -1 "$TMP/initdb.log")"
	as_pg "$BIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w -t 30 \
		-o "-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$TMP -c fsync=off -c synchronous_commit=off" \
		start >/dev/null || die "postgres did not start: $(tail -2 "$TMP/server.log")"
	STARTED=1
	PG=(-h 127.0.0.1 -p "$PORT" -U postgres)
	as_pg pgbench "${PG[@]}" -i -q -s "$SCALE" postgres >"$TMP/init.log" 2>&1 || die "pgbench -i failed"
	PM=$(head -1 "$TMP/data/postmaster.pid")
}

# What postgres-fork.sh and postgres-cgroup.sh share: pgbench -S with
# CLIENTS connections, heaptrace attached before it and stopped with SIGINT
# after it, each run checked.  pg_settings NAME sets SECS RUNS SCALE CLIENTS
# JOBS (PG_SECONDS PG_RUNS PG_SCALE PG_CLIENTS PG_JOBS), HT, and TMP
# (/tmp/heaptrace-NAME.*); FAILS counts the failed checks.
pg_settings() {
	SECS=${PG_SECONDS:-15}
	RUNS=${PG_RUNS:-3}
	SCALE=${PG_SCALE:-2}
	CLIENTS=${PG_CLIENTS:-4}
	JOBS=${PG_JOBS:-2}
	HT=$PWD/build/heaptrace
	TMP=$(mktemp -d "/tmp/heaptrace-$1.XXXXXX")
	HPID=
	STARTED=
	FAILS=0
}

# pg_fail MESSAGE: a failed check, said and counted.
pg_fail() {
	note "$*"
	FAILS=$((FAILS + 1))
}

# pg_keep: with PG_KEEP, the logs and profiles copied there (from the cleanup).
pg_keep() {
	[ -n "${PG_KEEP:-}" ] && mkdir -p "$PG_KEEP" &&
		cp "$TMP"/*.err "$TMP"/*.pgbench "$TMP"/*.pb.gz "$TMP/server.log" "$PG_KEEP"/ 2>/dev/null
}

pg_alive() { as_pg psql -X -At "${PG[@]}" -d postgres -c 'select 1' 2>/dev/null | grep -qx 1; }

# pg_trace LABEL ERR LINE ARG...: heaptrace -v ARG... in the background
# (HPID, its stderr in ERR) until ERR has a line that starts with LINE;
# 1 (a failed check, heaptrace killed) when it does not in 30 s.
pg_trace() {
	local label=$1 err=$2 line=$3
	shift 3
	timeout -s INT -k 60 $((SECS + 120)) "$HT" -v "$@" 2>"$err" &
	HPID=$!
	for _ in $(seq 300); do
		grep -q "^$line" "$err" 2>/dev/null && return 0
		kill -0 "$HPID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "^$line" "$err" && return 0
	pg_fail "$label: heaptrace did not attach: $(tail -2 "$err")"
	kill -KILL "$HPID"
	wait "$HPID"
	HPID=
	return 1
}

# pg_bench LABEL OUT: pgbench -S (its output in OUT); TPS set to its tps.
pg_bench() {
	local label=$1 out=$2 rc n
	timeout -k 5 $((SECS + 60)) runuser -u "$PGUSER_OS" -- pgbench "${PG[@]}" -n -S -c "$CLIENTS" -j "$JOBS" -T "$SECS" postgres >"$out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || pg_fail "$label: pgbench exit status $rc: $(grep -iE 'error|abort' "$out" | head -2)"
	n=$(awk '/number of failed transactions/ { print $5 }' "$out")
	[ "${n:-0}" = 0 ] || pg_fail "$label: $n failed transactions"
	TPS=$(awk '/^tps = / { printf "%.0f", $3 }' "$out")
}

# pg_untrace LABEL ERR: heaptrace stopped with SIGINT; not exit 0: a failed check, no TPS.
pg_untrace() {
	local rc
	kill -INT "$HPID" 2>/dev/null
	wait "$HPID"
	rc=$?
	HPID=
	[ "$rc" = 0 ] || { pg_fail "$1: heaptrace exit status $rc: $(tail -2 "$2")"; TPS=; }
}

# pg_pids LABEL PB: PIDS set to how many pids have samples in the profile PB
# (go tool pprof -tags), fewer than 2 a failed check; empty without go.
pg_pids() {
	PIDS=
	command -v go >/dev/null && [ -s "$2" ] || return 0
	PIDS=$(go tool pprof -tags "$2" 2>/dev/null | awk '/^ *pid:/ { on = 1; next } /^ *[a-z_]+:/ { on = 0 } on && /: [0-9]+ *$/ { k++ } END { print k + 0 }')
	[ "$PIDS" -ge 2 ] || pg_fail "$1: samples of $PIDS pids in $2"
}

# pg_table TITLE: each configuration's median and its ratio to bare; exit 1 after a failed check.
pg_table() {
	local c
	echo "$1"
	for c in "${CONFIGS[@]}"; do
		printf '  %-16s %8s   x bare %s   (%s)\n' "$c" "${MED[$c]:--}" "$(ratio "${MED[$c]:-}" "${MED[bare]:-}")" "${ALL[$c]:-}"
	done
	[ "$FAILS" = 0 ] || { note "$FAILS failed checks"; exit 1; }
}
