# shellcheck shell=bash
# Area "ring" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# exact mode's batching, the producer's side (stub/ring.c,
# user/inject/ring.c).  heaptrace maps the ring but does not drain it
# (HEAPTRACE_RING_NODRAIN=1, a test hook); tests/targets/t_ringdrain reads
# it as the drain would, and prints what it read per size of block, so the
# event stream of tests/targets/t_ring's known allocations is checked
# exactly: ringstub (kinds, sizes, realloc's old block, frees in another
# thread, signal handlers that malloc, a fork's child writing nothing, each
# stack sent once), ringfp (--unwind fp: the handler's stacks cannot be
# walked by the stub: no deadlock over a producer it interrupted),
# ringgiveup (no reader: the producer gives up after HT_RING_GIVE_UP_MS
# and the target completes) and ringreuse (a SIGKILLed heaptrace's ring is
# used again by the next session).  heaptrace's own counts come once the
# drain (ring-drain) is in: the exactness of every other area.

# ring_run KEY READER HEAPTRACE-ARGS...: launch t_ring under heaptrace -v
# with the ring not drained; READER 1: t_ringdrain reads it (KEY.drain);
# then the target runs its phases.  Sets RC (heaptrace's) and ELAPSED (s
# from the release to heaptrace's exit, 0.1 s steps).
ring_run() {
	local key=$1 reader=$2 hpid dpid="" t0 n
	shift 2
	mkfifo "$TMP/$key.fifo"
	echo "heaptrace -v $(rel "$*") -- build/tests/t_ring FIFO" >"$TMP/$key.cmd"
	HEAPTRACE_RING_NODRAIN=1 timeout -k 5 "$(tmo)" "$HT" -v "$@" -o /dev/null -- "$TB/t_ring" "$TMP/$key.fifo" \
		>"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	hpid=$!
	RC=255
	ELAPSED=0
	if ! wait_for "$TMP/$key.tout" '^ready [0-9]+$' 30 "$hpid"; then
		fail "$key: t_ring starts under heaptrace" "$(ctx "$key")"
		kill_tree "$hpid"
		return 1
	fi
	RPID=$(sed -n 's/^ready //p' "$TMP/$key.tout")
	if [ "$reader" = 1 ]; then
		timeout -k 5 60 "$TB/t_ringdrain" "$RPID" >"$TMP/$key.drain" 2>"$TMP/$key.drainerr" &
		dpid=$!
		wait_for "$TMP/$key.drain" '^ready$' 10 "$dpid" || fail "$key: t_ringdrain maps the ring" "$(cat "$TMP/$key.drainerr")"
	fi
	t0=$(date +%s%N)
	release "$key"
	wait "$hpid"
	RC=$?
	ELAPSED=$((($(date +%s%N) - t0) / 100000000))
	if [ -n "$dpid" ]; then
		wait "$dpid"
		n=$?
		[ "$n" = 0 ] || fail "$key: t_ringdrain exits 0" "status $n: $(cat "$TMP/$key.drainerr")"
	fi
	return 0
}

# ring_row KEY SIZE FIELD: FIELD of t_ringdrain's "size SIZE ..." line (empty: none).
ring_row() {
	awk -v s="$2" -v f="$3" '$1 == "size" && $2 == s { for (i = 3; i < NF; i += 2) if ($i == f) print $(i + 1) }' \
		"$TMP/$1.drain"
}

# ring_val KEY FIELD: FIELD of t_ringdrain's "realloc ..." and "events ..." lines, of t_ring's last line.
ring_val() {
	local f
	for f in "$TMP/$1.drain" "$TMP/$1.tout"; do
		[ -f "$f" ] && awk -v f="$2" '$1 == "events" || $1 == "handler" || $1 == "realloc" {
			for (i = $1 == "realloc" ? 2 : 1; i < NF; i += 2) if ($i == f) print $(i + 1) }' "$f"
	done | head -1
}

# ring_expect KEY SIZE FIELD=VALUE...: t_ringdrain's row of SIZE says so.
ring_expect() {
	local key=$1 size=$2 kv d="" v
	shift 2
	for kv in "$@"; do
		v=$(ring_row "$key" "$size" "${kv%%=*}")
		[ "$v" = "${kv#*=}" ] || d+="size $size: ${kv%%=*}=${v:-none}, want ${kv#*=}"$'\n'
	done
	echo "$d"
}

# The target's own line: every block intact, and what it read in its ring's header.
ring_target_ok() {
	local key=$1 gave=$2 d=""
	[ "$RC" = 0 ] || d+="heaptrace exit status $RC"$'\n'
	grep -qE "^handler [0-9]+ child [0-9]+ gave_up $gave lost [0-9]+ full_waits [0-9]+ errors 0$" "$TMP/$key.tout" ||
		d+="t_ring's report: $(tail -1 "$TMP/$key.tout") (want gave_up $gave, errors 0)"$'\n'
	echo "$d"
}

# ---------------------------------------------------------------------------
scenario_ringstub() {
	local key=ring_stub d h a
	# --max-depth 2: every stack the stub can walk (the handler's: its frame and the restorer).
	ring_run $key 1 --max-depth 2 || return
	report "ringstub: t_ring exits 0 with its blocks intact, the ring never given up" "$(ring_target_ok $key 0)"
	d=""
	grep -qE '^heaptrace: fast path: events batched in a ring at 0x[0-9a-f]+ \(thread ids read from the thread pointer\)$' \
		"$TMP/$key.err" || d+="no 'events batched in a ring' line: $(grep 'fast path' "$TMP/$key.err")"
	report "ringstub: -v says the events are batched, thread ids read from the thread pointer" "$d"
	# HEAPTRACE_BATCH=0: the record sites, as before; no ring mapped.
	HEAPTRACE_BATCH=0 HEAPTRACE_RING_NODRAIN=1 ht ring_off -v -o /dev/null -- "$TB/t_entrypoints"
	d=$(rc_diag ring_off 0)
	grep -q '^heaptrace: fast path: no batching (HEAPTRACE_BATCH=0): one record site per recorded call$' "$TMP/ring_off.err" ||
		d+="no 'no batching (HEAPTRACE_BATCH=0)' line: $(grep 'fast path' "$TMP/ring_off.err")"$'\n'
	grep -q 'events batched' "$TMP/ring_off.err" && d+="a ring with HEAPTRACE_BATCH=0"$'\n'
	report "ringstub: HEAPTRACE_BATCH=0 turns batching off (-v says why), exit 0" "$d"
	report "ringstub: 1000 mallocs from one call site: 1000 events, one stack, sent once, the main thread's" \
		"$(ring_expect $key 1001 allocs=1000 frees=1000 stacks=1 sent=1 main_tid=1000 other_tid=0)"
	report "ringstub: 300 callocs: 300 events of 1011 bytes" "$(ring_expect $key 1011 allocs=300 frees=300 stacks=1 sent=1)"
	d=$(ring_expect $key 1021 allocs=1 frees=0)$(ring_expect $key 100021 allocs=1)
	[ "$(ring_val $key moved)" = 1 ] || d+="realloc to 100021 bytes: moved=$(ring_val $key moved), want 1 (old = the 1021-byte block, a new ptr)"$'\n'
	[ "$(ring_val $key zero)" = 1 ] || d+="realloc(p, 0): zero=$(ring_val $key zero), want 1 (old = p, ptr 0, size 0)"$'\n'
	report "ringstub: realloc's old block and new one, and realloc(p, 0), as finish_alloc's rule" "$d"
	report "ringstub: 500 blocks freed by another thread: their frees carry its id" \
		"$(ring_expect $key 1031 allocs=500 frees=500 other_tid=500 main_tid=500)"
	report "ringstub: 20000 mallocs under SIGALRM every 100 us: all 20000, one stack" \
		"$(ring_expect $key 1009 allocs=20000 frees=20000 stacks=1 sent=1)"
	h=$(ring_val $key handler)
	a=$(ring_row $key 1019 allocs)
	d=""
	# The primer (one malloc of main's) and the handler's: a handler inside main's malloc is nested in it (as uprobes' depth).
	[ -n "$h" ] && [ "$h" -ge 20 ] || d+="the handler ran ${h:-?} times, want 20 or more"$'\n'
	[ -n "$a" ] && [ "$a" -ge 1 ] && [ $((a - 1)) -le "${h:-0}" ] && [ $((a - 1)) -ge $((${h:-0} / 2)) ] ||
		d+="1019-byte allocs ${a:-none}, want 1 + at most the handler's ${h:-?} (and at least half)"$'\n'
	[ "$(ring_row $key 1019 frees)" = "$a" ] || d+="1019-byte frees $(ring_row $key 1019 frees), want $a"$'\n'
	report "ringstub: signal handlers that malloc: their events in the ring, balanced" "$d"
	d=""
	[ -z "$(ring_row $key 1061 allocs)" ] || d+="the forked child's 1061-byte blocks are in the parent's ring: $(ring_row $key 1061 allocs)"$'\n'
	report "ringstub: a forked child writes nothing to its parent's ring (its data wiped: no ring)" "$d"
	d=""
	for f in skips=0 unknown_stacks=0 unwalked=0 bad_frees=0 bad_stacks=0 gave_up=0 lost=0; do
		[ "$(ring_val $key "${f%%=*}")" = "${f#*=}" ] || d+="${f%%=*}=$(ring_val $key "${f%%=*}"), want ${f#*=}"$'\n'
	done
	report "ringstub: every event's stack was sent before it, frames hashing to their hash; nothing skipped or lost" "$d"
}

scenario_ringfp() {
	local key=ring_fp d h a b u
	# --unwind fp: a handler's stack passes a signal frame, which the stub leaves to BPF.
	ring_run $key 1 --unwind fp --max-depth 8 || return
	report "ringfp: t_ring exits 0 with its blocks intact (no wait of a handler on its own thread's slot)" \
		"$(ring_target_ok $key 0)"
	report "ringfp: the main loop's 20000 mallocs exact in the ring" "$(ring_expect $key 1009 allocs=20000 frees=20000)"
	h=$(ring_val $key handler)
	a=$(ring_row $key 1019 allocs)
	u=$(ring_val $key unwalked)
	b=$(sed -n 's/^heaptrace: events: allocs=\([0-9]*\) .*/\1/p' "$TMP/$key.err")
	d=""
	# Handler's events: through the record site in order (BPF walks), or, over a producer it interrupted, in the ring without a stack.
	[ -n "$b" ] && [ -n "$a" ] && [ -n "$h" ] && [ $((a - 1 + b)) -le "$h" ] && [ $((a - 1 + b)) -ge $((h / 2)) ] ||
		d+="ring ${a:-?} - 1 + record sites ${b:-?} 1019-byte allocs, want at most the handler's ${h:-?} calls (and half)"$'\n'
	[ "$(ring_val $key unknown_stacks)" = 0 ] || d+="unknown_stacks=$(ring_val $key unknown_stacks)"$'\n'
	report "ringfp: the handler's unwalkable stacks go to the record site in order, or stackless into the ring (${u:-?})" "$d"
}

scenario_ringgiveup() {
	local key=ring_giveup d lost
	ring_run $key 0 --max-depth 2 || return
	report "ringgiveup: no reader: t_ring exits 0 with its blocks intact, the stub gave up" "$(ring_target_ok $key 1)"
	d=""
	lost=$(ring_val $key lost)
	[ -n "$lost" ] && [ "$lost" -gt 1000 ] || d+="lost=${lost:-?}, want the events after the ring filled (> 1000)"$'\n'
	[ "$(ring_val $key full_waits)" -ge 1 ] 2>/dev/null || d+="full_waits=$(ring_val $key full_waits), want >= 1"$'\n'
	# HT_RING_GIVE_UP_MS (1 s) of waiting, once; then the target runs on untraced.
	[ "$ELAPSED" -ge 10 ] && [ "$ELAPSED" -le 60 ] || d+="the run took $ELAPSED/10 s, want 1 to 6 s"$'\n'
	report "ringgiveup: the producer waited HT_RING_GIVE_UP_MS once, counted full_waits and lost" "$d"
}

scenario_ringreuse() {
	local key=ring_reuse d="" tpid hpid dpid n
	mkfifo "$TMP/$key.fifo"
	"$TB/t_ring" "$TMP/$key.fifo" twice >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if ! wait_for "$TMP/$key.tout" '^ready [0-9]+$' 10 "$tpid"; then
		fail "ringreuse: t_ring starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tpid"
		return
	fi
	# A session with a ring: 1000 mallocs of one site go in (no reader), then heaptrace is SIGKILLed.
	HEAPTRACE_RING_NODRAIN=1 timeout -k 5 "$(tmo)" "$HT" -v --max-depth 2 -o /dev/null -p "$tpid" >/dev/null 2>"$TMP/$key.err1" &
	hpid=$!
	wait_for "$TMP/$key.err1" 'events batched in a ring' 30 "$hpid" || d+="the first session has no ring: $(grep 'fast path' "$TMP/$key.err1")"$'\n'
	release "$key"
	wait_for "$TMP/$key.tout" '^half$' 10 "$tpid" || d+="t_ring's first phase did not end: $(cat "$TMP/$key.tout")"$'\n'
	# heaptrace itself, not its timeout wrapper.
	kill -KILL $(pgrep -P "$hpid") 2>/dev/null
	wait "$hpid" 2>/dev/null
	# The next session takes the same ring, reset past what the dead one left, its cache of stacks sent emptied.
	HEAPTRACE_RING_NODRAIN=1 timeout -k 5 "$(tmo)" "$HT" -v --max-depth 2 -o /dev/null -p "$tpid" >/dev/null 2>"$TMP/$key.err" &
	hpid=$!
	wait_for "$TMP/$key.err" 'tracing PID' 30 "$hpid" || d+="the second session does not attach"$'\n'
	grep -q 'fast path: the ring an earlier heaptrace left at 0x[0-9a-f]* is used again' "$TMP/$key.err" ||
		d+="no 'the ring an earlier heaptrace left ... is used again': $(grep 'fast path' "$TMP/$key.err")"$'\n'
	n=$(grep -c 'memfd:heaptrace-ring' "/proc/$tpid/maps")
	[ "$n" = 1 ] || d+="$n ring mappings in the target, want 1"$'\n'
	report "ringreuse: after a SIGKILL, the next session uses the same ring again" "$d"
	timeout -k 5 60 "$TB/t_ringdrain" "$tpid" >"$TMP/$key.drain" 2>"$TMP/$key.drainerr" &
	dpid=$!
	wait_for "$TMP/$key.drain" '^ready$' 10 "$dpid"
	release "$key"
	wait_exit "$tpid" 30
	RC=$WRC
	kill -INT "$hpid" 2>/dev/null
	wait "$hpid" 2>/dev/null
	wait "$dpid"
	report "ringreuse: t_ring exits 0 with its blocks intact" "$(ring_target_ok $key 0)"
	# The first 1000 were the dead session's (passed over); the second 1000's stack is sent again.
	report "ringreuse: the reset ring's stream is exact: the same site's 1000 mallocs, its stack sent again once" \
		"$(ring_expect $key 1001 allocs=1000 frees=1000 stacks=1 sent=1)$(ring_expect $key 1009 allocs=20000 frees=20000)"
	d=""
	for f in skips=0 unknown_stacks=0 bad_frees=0 bad_stacks=0 gave_up=0 lost=0; do
		[ "$(ring_val $key "${f%%=*}")" = "${f#*=}" ] || d+="${f%%=*}=$(ring_val $key "${f%%=*}"), want ${f#*=}"$'\n'
	done
	report "ringreuse: no event names a stack only the dead session was sent; nothing lost" "$d"
}
