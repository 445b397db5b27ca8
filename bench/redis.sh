#!/bin/bash
# A real server under heaptrace -p: redis-server (Debian's, jemalloc) on
# 127.0.0.1, driven by redis-benchmark with a fixed request count.  Each
# configuration is a throughput in requests per second; configurations run
# round-robin, R rounds, and the ratios are of medians, all from this run:
#   bare              redis alone
#   sampled           heaptrace --sample-rate 512K -p (the fast path: the default)
#   exact             heaptrace -p
#   sampled_noinject  the same with --no-inject (uprobes only: what it was)
#   exact_noinject
# heaptrace attaches to the running server before each benchmark and is
# stopped (SIGINT) after it, so attach and detach are outside the timing.
#
# Environment: REDIS_REQUESTS (200000), REDIS_RUNS (3), REDIS_CLIENTS (50),
# REDIS_TESTS (set,get,lpush,lpop,incr), REDIS_CONFIGS (all of the above).
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

REQUESTS=${REDIS_REQUESTS:-200000}
RUNS=${REDIS_RUNS:-3}
CLIENTS=${REDIS_CLIENTS:-50}
TESTS=${REDIS_TESTS:-set,get,lpush,lpop,incr}
HT=$PWD/build/heaptrace
TMP=$(mktemp -d /tmp/heaptrace-redis.XXXXXX)
SERVER=
HPID=
HOW=

note() { echo "bench-redis: $*" >&2; }
die() { note "$*"; exit 1; }

cleanup() {
	[ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
	[ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	note "installing redis-server and redis-tools"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null ||
		die "cannot install redis-server"
fi
[ -x "$HT" ] || die "$HT not built (make)"

# A free port on loopback.
PORT=
for p in $(shuf -i 20000-60000 -n 50); do
	ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { PORT=$p; break; }
done
[ -n "$PORT" ] || die "no free port"

redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --daemonize no \
	--dir "$TMP" --logfile "$TMP/redis.log" &
SERVER=$!
for _ in $(seq 50); do
	redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG && break
	sleep 0.1
done
redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG || die "redis-server did not start"
note "redis-server $(redis-server --version | grep -o 'v=[^ ]*') on 127.0.0.1:$PORT, allocator: $(grep -o 'libjemalloc[^ ]*' /proc/$SERVER/maps | head -1)"

# bench: total requests per second over the tests (the mean of redis-benchmark's per-test rates).
bench() {
	timeout 300 redis-benchmark -h 127.0.0.1 -p "$PORT" -n "$REQUESTS" -c "$CLIENTS" -t "$TESTS" --csv 2>/dev/null |
		awk -F'"' 'NR > 1 && $4 != "" { s += $4; n++ } END { if (n) printf "%.0f", s / n }'
}

# run CONFIG: one benchmark under CONFIG; RPS set, or empty on failure.
run() {
	local args=() err=$TMP/$1.err
	RPS=
	case $1 in
	bare) ;;
	sampled) args=(--sample-rate 512K) ;;
	exact) args=() ;;
	sampled_noinject) args=(--no-inject --sample-rate 512K) ;;
	exact_noinject) args=(--no-inject) ;;
	esac
	if [ "$1" != bare ]; then
		timeout -k 5 600 "$HT" -v "${args[@]}" -o "$TMP/$1.heap" -p "$SERVER" 2>"$err" &
		HPID=$!
		for _ in $(seq 300); do
			grep -q "^heaptrace: tracing PID $SERVER" "$err" 2>/dev/null && break
			kill -0 "$HPID" 2>/dev/null || break
			sleep 0.1
		done
		grep -q "^heaptrace: tracing PID $SERVER" "$err" || { note "$1: heaptrace did not attach: $(tail -2 "$err")"; return; }
	fi
	RPS=$(bench)
	if [ -n "$HPID" ]; then
		kill -INT "$(pgrep -P "$HPID" | head -1)" 2>/dev/null
		wait "$HPID"
		local rc=$?
		HPID=
		[ "$rc" = 0 ] || { note "$1: heaptrace exit status $rc"; RPS=; }
		[ "$1" = exact ] && HOW=$(grep -m1 -E '^heaptrace: fast path: (a stub at|not installed)' "$err")
	fi
	kill -0 "$SERVER" 2>/dev/null || die "redis-server died under $1"
}

read -ra CONFIGS <<<"${REDIS_CONFIGS:-bare sampled exact sampled_noinject exact_noinject}"
rounds "$RUNS" requests/s RPS

echo "redis-benchmark -n $REQUESTS -c $CLIENTS -t $TESTS, median of $RUNS rounds (requests/s):"
for c in "${CONFIGS[@]}"; do
	printf '  %-18s %10s   x bare %s\n' "$c" "${MED[$c]:--}" "$(ratio "${MED[$c]:-}" "${MED[bare]:-}")"
done
# Exact mode is fast only when it batches its events in the process: every
# function of jemalloc's and of libc's family in the stub.
[ -n "$HOW" ] && echo "exact, as -v said in the last round: ${HOW#heaptrace: }"
echo "targets (issue 25):"
target "--sample-rate 512K / bare" "$(ratio "${MED[sampled]:-}" "${MED[bare]:-}")" ">=" 0.95
target "exact / bare" "$(ratio "${MED[exact]:-}" "${MED[bare]:-}")" ">=" 0.90
printf '  %-44s %8s\n' "--no-inject 512K / bare (uprobes only)" "$(ratio "${MED[sampled_noinject]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "--no-inject exact / bare" "$(ratio "${MED[exact_noinject]:-}" "${MED[bare]:-}")"
