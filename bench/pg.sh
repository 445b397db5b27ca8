# shellcheck shell=bash
# A PostgreSQL server of the benches' own (bench/postgres.sh,
# postgres-fork.sh): Debian's package, installed when missing; a data
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
