# shellcheck shell=bash
# Area "batch" of tests/run.sh (sourced by it; helpers in tests/lib.sh): what
# exact mode's batching (issue 25: the stub appends events to a ring that
# heaptrace drains) must keep exact, checked on whichever path records the
# events (the per-call record sites, the ring, --no-inject's uprobes;
# HEAPTRACE_BATCH=0 is the record sites): scenarios batchfresh (an idle
# thread's allocation visible within 100 ms), batchexit (threads that exit),
# batchfork, batchsig (signal handlers that malloc), batchfull (more events
# at once than the ring's 16384 slots) and batchkill (20 SIGKILLs of exact
# heaptrace under a self-checking target).  The targets: tests/targets/
# t_batch.c (its comment has the numbers) and t_inject churn.
#
# Snapshots are read as pprof legacy text (-f pprof, /debug/pprof/heap?debug=1:
# "IO: IB [AO: AB] @ pc..." and the memory map): bt_records names each
# record's first two frames from the binary's symbols (nm), so one snapshot
# gives all four values of every function.

# bt_records FILE BIN: one line a record of a pprof text profile, "F0 F1 IO IB
# AO AB": F0, F1 the functions of BIN holding its first two frames ("?" for a
# pc elsewhere), from the profile's MAPPED_LIBRARIES.
bt_records() {
	local bin
	bin=$(readlink -f "$2")
	nm -S --defined-only "$bin" 2>/dev/null | awk 'NF == 4 && ($3 == "T" || $3 == "t") { print $1, $2, $4 }' >"$TMP/bt.syms"
	awk -v bin="$bin" '
	function hex(s,   i, v) {
		s = tolower(s); sub(/^0x/, "", s); v = 0
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	# The function of BIN holding return address pc (looked up at pc - 1).
	function sym(pc,   i, va) {
		for (i = 1; i <= nm; i++)
			if (pc >= ms[i] && pc < me[i]) {
				va = pc - ms[i] + mo[i] - 1
				for (i = 1; i <= ns; i++) if (va >= sa[i] && va < sa[i] + sz[i]) return sn[i]
				return "?"
			}
		return "?"
	}
	FILENAME == ARGV[1] { sa[++ns] = hex($1); sz[ns] = hex($2); sn[ns] = $3; next }
	FILENAME == ARGV[2] && $NF == bin && $2 ~ /x/ {
		split($1, r, "-"); ms[++nm] = hex(r[1]); me[nm] = hex(r[2]); mo[nm] = hex($3); next
	}
	FILENAME == ARGV[3] && /^ *[0-9]+: +[0-9]+ \[ *[0-9]+: +[0-9]+\] @/ {
		line = $0; gsub(/[:@]|\[|\]/, " ", line); n = split(line, f, " ")
		print sym(hex(f[5])), (n >= 6 ? sym(hex(f[6])) : "?"), f[1], f[2], f[3], f[4]
	}' "$TMP/bt.syms" "$1" "$1"
}

# bt_fn FILE BIN FN: "IO IB AO AB" summed over the records whose first frame is FN.
bt_fn() {
	bt_records "$1" "$2" | awk -v fn="$3" '$1 == fn { for (i = 3; i <= 6; i++) s[i] += $i }
		END { printf "%.0f %.0f %.0f %.0f\n", s[3], s[4], s[5], s[6] }'
}

# bt_expect NAME FILE BIN FN "IO IB AO AB": FN's values in FILE; a diagnostic line in BD unless exact.
bt_expect() {
	local got
	got=$(bt_fn "$2" "$3" "$4")
	[ "$got" = "$5" ] || BD+="$1${1:+: }$4 $got, want $5 (inuse objects, bytes, alloc objects, bytes)$(bt_why "$2" "$3")"$'\n'
}

# bt_why FILE BIN: what FILE holds, for a diagnostic: its records, how many name a function of BIN, BIN's mappings.
bt_why() {
	local n named mapped
	n=$(grep -cE '^ *[0-9]+: +[0-9]+ \[ *[0-9]+: +[0-9]+\] @' "$1" 2>/dev/null)
	named=$(bt_records "$1" "$2" | awk '$1 != "?"' | wc -l)
	mapped=$(grep -c " $(readlink -f "$2")\$" "$1" 2>/dev/null)
	echo "; $(basename "$1"): ${n:-0} records, $named in $(basename "$2") functions, $mapped mappings of it; $(head -1 "$1" 2>/dev/null)"
}

# bt_diag TEXT: TEXT (lines) into the diagnostic BD.
bt_diag() { [ -z "$1" ] || BD+="$1"$'\n'; }

# bt_fnset FILE BIN: the functions of BIN that are first frames in FILE, sorted, on one line.
bt_fnset() {
	bt_records "$1" "$2" | awk '$1 != "?" { print $1 }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# bt_events KEY NAME=VALUE...: a diagnostic line in BD for each counter of KEY's -v events line that differs.
bt_events() {
	local key=$1 pair got
	shift
	grep -q '^heaptrace: events:' "$TMP/$key.err" 2>/dev/null || { BD+="$key: no events line on stderr"$'\n'; return; }
	for pair in "$@"; do
		got=$(rl_events_num "$key" "${pair%%=*}")
		[ "$got" = "${pair#*=}" ] || BD+="$key: ${pair%%=*}=${got:-<missing>}, want ${pair#*=}"$'\n'
	done
}

# bt_send FIFO LINE: a line to a target's FIFO (bounded: the target may have died).
bt_send() {
	# shellcheck disable=SC2016
	timeout 10 bash -c 'echo "$2" >"$1"' _ "$1" "$2"
}

# ---------------------------------------------------------------------------
# An event must be visible to --http within 100 ms, also when the thread that
# made it went idle at once (a buffer nobody flushes would keep it for good):
# t_batch fresh's worker mallocs 43210 bytes, says "ready1 NS" and blocks;
# /debug/pprof/heap?debug=1 is polled from then on, and a request begun within
# 100 ms of NS must hold the record "1: 43210 [1: 43210]" with the stack
# fresh_leaf <- fresh_worker.  Then the worker frees it and mallocs 23456
# bytes (fresh_leaf2): both the free and the new block within 100 ms.  Then
# the same under -i 0.1: every snapshot written 150 ms (100 ms and one
# snapshot's writing) or more after NS holds the block.
#
# bt_fresh_poll KEY URL T_READY_US "F0 F1" IO IB AO AB [GONE]: polls URL (for
# 2 s, at most 300 times) until a record "F0 F1 IO IB AO AB" is there (and
# GONE, another, too); LAT: ms from T_READY_US to the start of that request.
# A diagnostic in BD unless that request began within 100 ms, or (a harness
# too slow to ask sooner) was the first.
bt_fresh_poll() {
	local key=$1 url=$2 t_ready=$3 want="$4 $5 $6 $7 $8" gone=${9:-} i t0 first="" got=""
	local w4="^ *$5: +$6 \\[ *$7: +$8\\] @"
	for ((i = 0; i < 300; i++)); do
		t0=${EPOCHREALTIME/./}
		[ -z "$first" ] && first=$((t0 - t_ready))
		[ $((t0 - t_ready)) -gt 2000000 ] && break
		curl -s --max-time 2 -o "$TMP/$key.h$i" "$url"
		# The record's numbers first (cheap: the loop stays fast), then its stack.
		grep -qE "$w4" "$TMP/$key.h$i" || { sleep 0.005; continue; }
		got=$(bt_records "$TMP/$key.h$i" "$TB/t_batch" | awk -v w="$want" -v g="$gone" '
			$1 " " $2 " " $3 " " $4 " " $5 " " $6 == w { a = 1 }
			g != "" && $1 " " $2 " " $3 " " $4 " " $5 " " $6 == g { b = 1 }
			END { print (a && (g == "" || b)) ? "yes" : "no" }')
		if [ "$got" = yes ]; then
			LAT=$(((t0 - t_ready) / 1000))
			FIRST=$((first / 1000))
			[ $((t0 - t_ready)) -le 100000 ] || [ "$i" = 0 ] ||
				BD+="first seen in request $((i + 1)), begun $LAT ms after the event (the first began $FIRST ms after it)"$'\n'
			return
		fi
	done
	LAT=never
	BD+="not seen in $i requests over $(((t0 - t_ready) / 1000)) ms (want: $want${gone:+; and: $gone}); the last: $(grep -m3 '@' "$TMP/$key.h$((i - 1))")"$'\n'
}

scenario_batchfresh() {
	local key=bfresh BD="" line t1 t2 port url rfd hp lat1 lat2 lim
	mkfifo "$TMP/$key.fifo" "$TMP/$key.pipe"
	LAT=""
	echo "heaptrace -v --http 127.0.0.1:0 -o /dev/null -- t_batch fresh FIFO" >"$TMP/$key.cmd"
	lim=$(tmo)
	[ "$lim" -lt 30 ] && lim=30
	timeout -k 5 "$lim" "$HT" -v --http 127.0.0.1:0 -o /dev/null -- "$TB/t_batch" fresh "$TMP/$key.fifo" \
		>"$TMP/$key.pipe" 2>"$TMP/$key.err" </dev/null &
	hp=$!
	exec {rfd}<"$TMP/$key.pipe"
	# The port before the event: from "ready1" on, only the requests.
	read -r -t 30 -u "$rfd" line
	port=$(http_port $key)
	[ "$line" = waiting ] && bt_send "$TMP/$key.fifo" go
	read -r -t 30 -u "$rfd" line
	t1=${line#ready1 }
	if [ "${line%% *}" != ready1 ] || [ -z "$port" ]; then
		fail "batchfresh: t_batch fresh under heaptrace --http says ready1, heaptrace serves" "target: '$line'"$'\n'"$(ctx $key)"
		exec {rfd}<&-
		kill_tree "$hp"
		return
	fi
	url="http://127.0.0.1:$port/debug/pprof/heap?debug=1"
	bt_fresh_poll $key.a "$url" $((t1 / 1000)) "fresh_leaf fresh_worker" 1 43210 1 43210
	lat1="$LAT ms, the first request at $FIRST ms"
	# The worker frees it and mallocs another, then idles again.
	bt_send "$TMP/$key.fifo" next
	read -r -t 30 -u "$rfd" line
	t2=${line#ready2 }
	if [ "${line%% *}" != ready2 ]; then
		BD+="the worker did not say ready2: '$line'"$'\n'
	else
		bt_fresh_poll $key.b "$url" $((t2 / 1000)) "fresh_leaf2 fresh_worker" 1 23456 1 23456 \
			"fresh_leaf fresh_worker 0 0 1 43210"
		lat2="$LAT ms, the first request at $FIRST ms"
	fi
	bt_send "$TMP/$key.fifo" quit
	cat <&"$rfd" >"$TMP/$key.tout" 2>/dev/null
	exec {rfd}<&-
	ht_bg_wait $key "$hp" 20
	bt_diag "$(rc_diag $key 0)"
	grep -q '^errors 0$' "$TMP/$key.tout" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.tout")"$'\n'
	report "batchfresh: --http: an idle thread's malloc seen within 100 ms (${lat1:-?}), its free and next malloc too (${lat2:-?})" "$BD"

	# -i 0.1: the snapshots from 150 ms after the event on hold it.
	key=bfresh_i
	BD=""
	mkfifo "$TMP/$key.pipe" "$TMP/$key.fifo"
	timeout -k 5 "$lim" "$HT" -v -i 0.1 -f pprof -o "$TMP/$key" -- "$TB/t_batch" fresh "$TMP/$key.fifo" \
		>"$TMP/$key.pipe" 2>"$TMP/$key.err" </dev/null &
	hp=$!
	exec {rfd}<"$TMP/$key.pipe"
	read -r -t 30 -u "$rfd" line
	[ "$line" = waiting ] && bt_send "$TMP/$key.fifo" go
	read -r -t 30 -u "$rfd" line
	t1=${line#ready1 }
	[ "${line%% *}" = ready1 ] || BD+="target: '$line'"$'\n'
	sleep 0.8
	bt_send "$TMP/$key.fifo" quit
	cat <&"$rfd" >"$TMP/$key.tout" 2>/dev/null
	exec {rfd}<&-
	ht_bg_wait $key "$hp" 20
	bt_diag "$(rc_diag $key 0)"
	local f n=0 m
	for f in "$TMP/$key".[0-9]*.heap; do
		[ -e "$f" ] || continue
		m=$(stat -c %.9Y "$f" | tr -d .)
		[ "$m" -ge $((t1 + 150000000)) ] || continue
		n=$((n + 1))
		bt_records "$f" "$TB/t_batch" | grep -qx 'fresh_leaf fresh_worker 1 43210 1 43210' ||
			BD+="$(basename "$f"), written $(((m - t1) / 1000000)) ms after the event, lacks it: $(grep -m2 '@' "$f")"$'\n'
	done
	[ "$n" -ge 3 ] || BD+="$n snapshots written 150 ms or more after the event, want 3 or more: $(cd "$TMP" && echo "$key"*)"$'\n'
	report "batchfresh: -i 0.1: the $n snapshots written 150 ms or more after an idle thread's malloc hold it" "$BD"
}

# ---------------------------------------------------------------------------
# Threads that allocate, free some and exit (t_batch exit: 64 threads in 8
# waves, each one's last calls mallocs): once they are gone, a --http snapshot
# of the idle process holds every one of their events exactly (the blocks
# they kept stay live; nothing lost, nothing counted twice); then the main
# thread frees the blocks they handed off, and a snapshot and the final
# profile say so.
scenario_batchexit() {
	local key=bexit BD="" port url hp snap w
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v --http 127.0.0.1:0 -f pprof -o "$TMP/$key.prof" -- "$TB/t_batch" exit "$TMP/$key.fifo"
	hp=$HPID
	port=$(http_port $key)
	if [ -z "$port" ] || ! wait_for "$TMP/$key.tout" '^ready$' 30 "$hp"; then
		fail "batchexit: t_batch exit under heaptrace --http gets to ready" "$(ctx $key)"$'\n'"$(cat "$TMP/$key.tout")"
		kill_tree "$hp"
		return
	fi
	url="http://127.0.0.1:$port/debug/pprof/heap?debug=1"
	for snap in 1 2 final; do
		if [ $snap = final ]; then
			release $key
			ht_bg_wait $key "$hp" 30
			bt_diag "$(rc_diag $key 0)"
			cp "$TMP/$key.prof" "$TMP/$key.final" 2>/dev/null
		else
			curl -s --max-time 5 -o "$TMP/$key.$snap" "$url"
		fi
		w="320 1382720 320 1382720"
		[ $snap = 1 ] || w="0 0 320 1382720"
		bt_expect "$snap" "$TMP/$key.$snap" "$TB/t_batch" exit_keep "1280 1422080 1280 1422080"
		bt_expect "$snap" "$TMP/$key.$snap" "$TB/t_batch" exit_temp "0 0 1920 4266240"
		bt_expect "$snap" "$TMP/$key.$snap" "$TB/t_batch" exit_rseed "0 0 640 192000"
		bt_expect "$snap" "$TMP/$key.$snap" "$TB/t_batch" exit_realloc "320 960000 640 1920000"
		bt_expect "$snap" "$TMP/$key.$snap" "$TB/t_batch" exit_handoff "$w"
		[ $snap = 1 ] && { release $key; wait_for "$TMP/$key.tout" '^freed$' 10 "$hp" || BD+="the target did not say freed"$'\n'; }
	done
	grep -q '^errors 0$' "$TMP/$key.tout" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.tout")"$'\n'
	bt_events $key unmatched_frees=0 missed_frees=0 ring_lost=0
	report "batchexit: 64 threads gone: their blocks exact in a snapshot of the idle process, after the main thread frees the handed-off ones, and at the end" "$BD"

	# -p, and heaptrace stopped (SIGINT) as soon as the threads are gone: the
	# profile written at the detach holds every event of the exited threads.
	key=bexit_p
	BD=""
	mkfifo "$TMP/$key.fifo"
	"$TB/t_batch" exit "$TMP/$key.fifo" wait >"$TMP/$key.target" 2>&1 &
	local tp=$!
	if ! wait_for "$TMP/$key.target" '^waiting$' 10 "$tp"; then
		fail "batchexit: t_batch exit FIFO wait starts" "$(cat "$TMP/$key.target")"
		kill_tree "$tp"
		return
	fi
	ht_bg $key -v -f pprof -o "$TMP/$key.prof" -p "$tp"
	hp=$HPID
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $tp" 30 "$hp"; then
		fail "batchexit: heaptrace -p attaches" "$(ctx $key)"
		kill_tree "$hp" "$tp"
		return
	fi
	release $key
	wait_for "$TMP/$key.target" '^ready$' 30 "$tp" || BD+="the target did not get to ready: $(cat "$TMP/$key.target")"$'\n'
	kill -INT "$(pgrep -P "$hp" | head -1)" 2>/dev/null
	ht_bg_wait $key "$hp" 30
	bt_diag "$(rc_diag $key 0)"
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" exit_keep "1280 1422080 1280 1422080"
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" exit_temp "0 0 1920 4266240"
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" exit_rseed "0 0 640 192000"
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" exit_realloc "320 960000 640 1920000"
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" exit_handoff "320 1382720 320 1382720"
	bt_events $key unmatched_frees=0 missed_frees=0 ring_lost=0
	release $key
	wait_for "$TMP/$key.target" '^freed$' 10 "$tp" || BD+="the target did not say freed after the detach"$'\n'
	release $key
	if wait_exit "$tp" 10; then
		[ "$WRC" = 0 ] || BD+="target exit status $WRC"$'\n'
	else
		BD+="target still running 10 s after quit"$'\n'
		kill_tree "$tp"
	fi
	grep -q '^errors 0$' "$TMP/$key.target" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.target")"$'\n'
	report "batchexit: -p, SIGINT once 64 threads are gone: the profile written at the detach holds each of their events, the target runs on intact" "$BD"
}

# ---------------------------------------------------------------------------
# fork (t_batch fork): the parent bursts 1000 mallocs and forks at once while
# a worker thread mallocs and frees through the fork; the child allocates, and
# frees 100 of the burst's blocks (its copies); the parent allocates while the
# child runs, then frees 200 of the burst's.  With and without --follow-fork,
# the parent's numbers are exact; with it, the child's profile holds exactly
# its own 10 allocations (none of the parent's, before or after the fork) and
# its frees of inherited blocks are inherited_frees.
scenario_batchfork() {
	local key ff prof kid set
	for ff in off on; do
		key=bfork_$ff
		BD=""
		local opt=()
		[ $ff = on ] && opt=(--follow-fork)
		ht $key -v "${opt[@]}" -f pprof -o "$TMP/$key.prof" -- "$TB/t_batch" fork
		bt_diag "$(rc_diag $key 0)"
		grep -q '^errors 0$' "$TMP/$key.out" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.out")"$'\n'
		prof=$TMP/$key.prof
		bt_expect parent "$prof" "$TB/t_batch" fork_burst "800 51200 1000 64000"
		bt_expect parent "$prof" "$TB/t_batch" fork_post "50 125000 50 125000"
		bt_expect parent "$prof" "$TB/t_batch" fork_wloop "0 0 20000 1920000"
		bt_expect parent "$prof" "$TB/t_batch" fork_wkeep "10 5550 10 5550"
		set=$(bt_fnset "$prof" "$TB/t_batch")
		[ "$set" = "fork_burst fork_post fork_wkeep fork_wloop" ] || BD+="parent: first frames $set, want fork_burst fork_post fork_wkeep fork_wloop"$'\n'
		kid=$(sed -n 's/^heaptrace: child PID [0-9]* (of PID [0-9]*): profile in \(.*\)$/\1/p' "$TMP/$key.err")
		if [ $ff = off ]; then
			[ -z "$kid" ] || BD+="a child profile without --follow-fork: $kid"$'\n'
			bt_events $key unmatched_frees=0 inherited_frees=0 ring_lost=0
		else
			[ "$(wc -w <<<"$kid")" = 1 ] || BD+="child profiles: '$kid', want one"$'\n'
			bt_expect child "$kid" "$TB/t_batch" child_own "7 11900 7 11900"
			bt_expect child "$kid" "$TB/t_batch" child_tmp "0 0 3 2700"
			set=$(bt_fnset "$kid" "$TB/t_batch")
			[ "$set" = "child_own child_tmp" ] || BD+="child: first frames $set, want child_own child_tmp"$'\n'
			# Nothing else at all: the child starts empty.
			grep -q '^heap profile: *7: *11900 \[ *10: *14600\] @' "$kid" || BD+="child's header: $(head -1 "$kid"), want 7: 11900 [10: 14600]"$'\n'
			bt_events $key unmatched_frees=0 inherited_frees=100 ring_lost=0
		fi
		local what="the parent's numbers exact, no child profile"
		[ $ff = on ] && what="the parent's numbers exact, the child's its own 10 allocations exactly, 100 inherited frees"
		report "batchfork: --follow-fork $ff: $what" "$BD"
	done
}

# ---------------------------------------------------------------------------
# Signal handlers that malloc while the interrupted thread is in malloc/free
# loops (t_batch signals: SIGALRM every 200 us, SIGUSR1 every 300 us, fifty
# times less often on a slow machine (sig_factor in tests/lib.sh), both on
# the main thread; the target counts what it and its handlers did): every
# allocation counted exactly, the handlers' included, no block left live,
# with CFI and with --unwind fp (where the stub leaves a signal frame's walk
# to the BPF side).
scenario_batchsig() {
	local key uw m a u n ab
	for uw in dwarf fp; do
		key=bsig_$uw
		BD=""
		ht $key -v --unwind $uw -f pprof -o "$TMP/$key.prof" -- "$TB/t_batch" signals 20000 "$(sig_factor)"
		bt_diag "$(rc_diag $key 0)"
		m=$(sed -n 's/^main //p' "$TMP/$key.out")
		a=$(sed -n 's/^alarm //p' "$TMP/$key.out")
		u=$(sed -n 's/^usr1 //p' "$TMP/$key.out")
		n=$(sed -n 's/^inside //p' "$TMP/$key.out")
		grep -q '^errors 0$' "$TMP/$key.out" && [ -n "$m" ] && [ -n "$a" ] && [ -n "$u" ] ||
			BD+="target: $(tr '\n' ' ' <"$TMP/$key.out")"$'\n'
		ab=$(awk -v m="${m:-0}" 'BEGIN { for (i = 0; i < m; i++) s += 100 + i % 1024; printf "%.0f\n", s }')
		bt_expect "" "$TMP/$key.prof" "$TB/t_batch" sig_loop "0 0 ${m:-?} $ab"
		bt_expect "" "$TMP/$key.prof" "$TB/t_batch" sig_prime "0 0 9 688"
		bt_events $key unmatched_frees=0 missed_frees=0 ring_lost=0
		report "batchsig: --unwind $uw: ${m:-?} rounds of malloc/free interrupted by signal handlers that malloc: the interrupted thread's calls exact, nothing unmatched or lost" "$BD"
		# The handlers' own calls, each one, also those that interrupted a malloc (${n:-?} runs came
		# while the main thread was at its malloc).
		BD=""
		if [ -z "${HT_TEST_NO_INJECT:-}" ]; then
			bt_expect "SIGALRM's handler" "$TMP/$key.prof" "$TB/t_batch" on_alarm "0 0 ${a:-?} $((${a:-0} * 48))"
			bt_expect "SIGUSR1's handler" "$TMP/$key.prof" "$TB/t_batch" on_usr1 "0 0 ${u:-?} $((${u:-0} * 80))"
			[ -z "$BD" ] || BD+="(${n:-?} handler runs came while the main thread was at its malloc)"
			report "batchsig: --unwind $uw: ${a:-?} SIGALRM and ${u:-?} SIGUSR1 handler runs that malloc: every one of their calls counted" "$BD"
			continue
		fi
		# --no-inject: one call state per thread, so a handler's call made while its thread is
		# inside a traced allocator counts as nested in it (docs/fast-path.md): every other run counted.
		local ca cu
		ca=$(bt_fn "$TMP/$key.prof" "$TB/t_batch" on_alarm | awk '{ print $3 }')
		cu=$(bt_fn "$TMP/$key.prof" "$TB/t_batch" on_usr1 | awk '{ print $3 }')
		[ -n "$ca" ] && [ -n "$cu" ] && [ -n "$n" ] &&
			[ $((ca + cu)) -le $((${a:-0} + ${u:-0})) ] && [ $((ca + cu)) -ge $((${a:-0} + ${u:-0} - n)) ] ||
			BD+="handlers counted ${ca:-?} + ${cu:-?}, want between $((${a:-0} + ${u:-0})) - ${n:-?} (runs inside malloc) and $((${a:-0} + ${u:-0}))"$'\n'
		report "batchsig: --unwind $uw --no-inject: ${a:-?} SIGALRM and ${u:-?} SIGUSR1 handler runs: all but those inside the thread's malloc (${n:-?}) counted" "$BD"
	done
}

# ---------------------------------------------------------------------------
# More events at once than the ring holds (HT_RING_SLOTS, 16384): 4 threads
# released together make 48000 mallocs and then 44000 frees as fast as they
# can (t_batch burst); the counts are exact and nothing is lost.
scenario_batchfull() {
	local key=bfull BD="" w io ao
	ht $key -v -f pprof -o "$TMP/$key.prof" -- "$TB/t_batch" burst
	bt_diag "$(rc_diag $key 0)"
	grep -q '^errors 0$' "$TMP/$key.out" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.out")"$'\n'
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" burst_alloc "4000 224000 48000 2688000"
	bt_events $key unmatched_frees=0 missed_frees=0 live_map_full=0 ring_lost=0
	w=$(rl_events_num $key ring_full_waits)
	report "batchfull: 4 threads, 48000 mallocs and 44000 frees at full speed: exact, none lost (ring_full_waits=${w:-?})" "$BD"

	# The same under -i 0.01: snapshots taken while the burst runs (each one
	# must see every event before it, whoever drains) never count an
	# allocation twice nor take one back, and the last is exact.
	key=bfull_i
	BD=""
	mkdir -p "$TMP/$key"
	ht $key -v -i 0.01 -f pprof -o "$TMP/$key/s" -- "$TB/t_batch" burst
	bt_diag "$(rc_diag $key 0)"
	grep -q '^errors 0$' "$TMP/$key.out" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.out")"$'\n'
	local f prev=0 n=0 mid=0 last=""
	for f in "$TMP/$key"/s.[0-9]*.heap; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		last=$f
		read -r io _ ao _ <<<"$(bt_fn "$f" "$TB/t_batch" burst_alloc)"
		[ "$ao" -ge "$prev" ] && [ "$ao" -le 48000 ] && [ "$io" -le "$ao" ] ||
			BD+="$(basename "$f"): burst_alloc in use $io, allocated $ao (the snapshot before: $prev allocated)"$'\n'
		[ "$ao" -gt 0 ] && [ "$ao" -lt 48000 ] && mid=$((mid + 1))
		prev=$ao
	done
	[ -n "$last" ] && bt_expect "the last snapshot" "$last" "$TB/t_batch" burst_alloc "4000 224000 48000 2688000"
	[ "$n" -ge 2 ] || BD+="$n snapshots, want 2 or more"$'\n'
	bt_events $key unmatched_frees=0 missed_frees=0 live_map_full=0 ring_lost=0
	report "batchfull: -i 0.01: $n snapshots ($mid taken amid the burst) count no allocation twice nor take one back, the last exact" "$BD"
}

# ---------------------------------------------------------------------------
# 20 SIGKILLs of exact heaptrace (no --sample-rate) under t_inject churn (4
# threads malloc/calloc/realloc/posix_memalign/free without pause, checking
# every block's contents), each after a bounded random delay: half from the
# start (attach, installation), half from "tracing PID" on (while it records).
# After each kill the target must still serve a phase within 10 s (a stub
# that waits on a full ring for a dead heaptrace would hang it); after every
# fifth, a new exact heaptrace attaches and counts the phase exactly; at the
# end the target finds every block intact and exits 0.
scenario_batchkill() {
	local key=bkill BD="" tpid i k hp hk delay kills=0 exact=0 seed=${HEAPTRACE_TEST_SEED:-$((($$ * 7919 + $(date +%s)) % 32768))} t0=$SECONDS
	RANDOM=$seed
	mkfifo "$TMP/$key.fifo"
	"$TB/t_inject" churn "$TMP/$key.fifo" 4 >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$tpid"; then
		fail "batchkill: t_inject churn starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tpid"
		return
	fi
	for i in $(seq 1 20); do
		k=$key.$i
		delay=$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", (r % 600) / 1000 }')
		timeout -k 5 60 "$HT" -v -o /dev/null -p "$tpid" >/dev/null 2>"$TMP/$k.err" </dev/null &
		hp=$!
		# heaptrace itself, timeout's child (its process, not a fork about to exec it).
		hk=""
		for _ in $(seq 250); do
			hk=$(pgrep -x -P "$hp" heaptrace | head -1)
			[ -n "$hk" ] && break
			sleep 0.02
		done
		[ $((i % 2)) = 0 ] && wait_for "$TMP/$k.err" "^heaptrace: tracing PID $tpid" 30 "$hp"
		sleep "$delay"
		# The last one's BPF programs and links must go with it.
		[ "$i" = 20 ] && [ -n "$hk" ] && rl_bpf_ids "$hk" >"$TMP/$key.ids"
		if [ -n "$hk" ] && kill -KILL "$hk" 2>/dev/null; then
			kills=$((kills + 1))
		else
			BD+="kill $i: no heaptrace to SIGKILL after $delay s: $(tail -2 "$TMP/$k.err")"$'\n'
			kill_tree "$hp"
		fi
		wait "$hp" 2>/dev/null
		kill -0 "$tpid" 2>/dev/null || { BD+="kill $i: the target died: $(tail -2 "$TMP/$key.tout")"$'\n'; break; }
		bt_send "$TMP/$key.fifo" "phase $i"
		wait_for "$TMP/$key.tout" "^phase $i done$" 10 "$tpid" ||
			{ BD+="kill $i (after $delay s): the target did not serve a phase within 10 s"$'\n'; break; }
		[ $((i % 5)) = 0 ] || continue
		# A new exact heaptrace attaches and counts exactly.
		k=$key.x$i
		ht_bg "$k" -v -f collapsed --value inuse_space -p "$tpid"
		if ! wait_for "$TMP/$k.err" "^heaptrace: tracing PID $tpid" 30 "$HPID"; then
			BD+="after kill $i: heaptrace did not attach: $(tail -3 "$TMP/$k.err")"$'\n'
			kill_tree "$HPID"
			continue
		fi
		bt_send "$TMP/$key.fifo" "phase $((100 + i))"
		wait_for "$TMP/$key.tout" "^phase $((100 + i)) done$" 10 "$tpid" || BD+="after kill $i: the traced phase did not end"$'\n'
		kill -INT "$(pgrep -P "$HPID" | head -1)" 2>/dev/null
		ht_bg_wait "$k" "$HPID" 30
		cp "$TMP/$k.tout" "$TMP/$k.out"
		[ "$(cat "$TMP/$k.rc")" = 0 ] || BD+="after kill $i: heaptrace exit status $(cat "$TMP/$k.rc"): $(tail -2 "$TMP/$k.err")"$'\n'
		if [ "$(leafval "$k" phase_keep)" = $((100 * (1100 + i))) ]; then
			exact=$((exact + 1))
		else
			BD+="after kill $i: phase_keep inuse_space=$(leafval "$k" phase_keep), want $((100 * (1100 + i)))"$'\n'
		fi
	done
	# What the sessions left in the target (figures: a stub used again, rings).
	local maps rss
	maps=$(grep -c 'memfd:heaptrace' "/proc/$tpid/maps" 2>/dev/null)
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$tpid/status" 2>/dev/null)
	if [ -s "$TMP/$key.ids" ]; then
		bt_diag "$(rl_bpf_left "$TMP/$key.ids")"
	else
		BD+="no BPF program or link of the last killed heaptrace recorded"$'\n'
	fi
	bt_send "$TMP/$key.fifo" quit
	if wait_exit "$tpid" 30; then
		[ "$WRC" = 0 ] || BD+="target exit status $WRC"$'\n'
	else
		BD+="target still running 30 s after quit"$'\n'
		kill_tree "$tpid"
	fi
	grep -q '^bye errors=0$' "$TMP/$key.tout" || BD+="target: $(tail -2 "$TMP/$key.tout")"$'\n'
	[ "$kills" = 20 ] || BD+="$kills SIGKILLs, want 20"$'\n'
	[ "$exact" = 4 ] || BD+="$exact exact sessions after the kills, want 4"$'\n'
	report "batchkill: $kills SIGKILLs of exact heaptrace at random moments (seed $seed) under a 4-thread self-checking target: it runs on, $exact new sessions count exactly, every block intact, no BPF program or link left; then ${maps:-?} heaptrace mappings in the target, RSS ${rss:-?} KiB (in $((SECONDS - t0)) s)" "$BD"
}

# ---------------------------------------------------------------------------
# A program whose malloc is jemalloc's or tcmalloc's (preloaded here; linked,
# as Debian's redis-server links libjemalloc, is the same to the dynamic
# loader).  libc's family is traced too, and it is not dead code: jemalloc
# has no pvalloc nor reallocarray, so t_entrypoints calls glibc's, whose
# reallocarray tail-calls the interposed realloc (nested across the two
# objects); tcmalloc has no reallocarray.  Batching needs every function in
# the stub: -v must say "events batched" and name libc's functions as the
# fast path's.  One -f pprof run per path gives all four values of each
# ep_* function: the numbers of scenario_entrypoints (expect_entrypoints4
# in tests/lib.sh), custom_preload's events (jemalloc: + libstdc++'s
# emergency pool, 28 allocations and 10 frees; tcmalloc: + TCMallocGuard's
# 2, 30 and 12), and the same whole profile (records by function) on the
# ring, on the record sites (HEAPTRACE_BATCH=0) and with --no-inject.
BP_EP="ep_malloc 3 3000 4 4000
ep_calloc 1 300 2 600
ep_grow_seed 0 0 1 50
ep_realloc_grow 1 5000 1 5000
ep_shrink_seed 0 0 1 2000
ep_realloc_shrink 1 200 1 200
ep_realloc_null 1 333 1 333
ep_zero_seed 0 0 1 444
ep_big_seed 0 0 1 200000
ep_realloc_big 1 400000 1 400000
ep_reallocarray_null 1 400 1 400
ep_ra_seed 0 0 1 60
ep_reallocarray_grow 1 600 1 600
ep_posix_memalign 1 1234 2 2468
ep_posix_memalign_small 1 321 1 321
ep_aligned_alloc 1 2048 2 4096
ep_aligned_alloc_small 1 96 1 96
ep_memalign 1 777 1 777
ep_valloc 1 3000 2 6000
ep_pvalloc 1 8192 1 8192"

scenario_batchpreload() {
	local lib name key mode allocs frees fn vals BD paths=1
	# make test-noinject (every run --no-inject), or a suite run on the record
	# sites: the numbers still hold, the paths -v names are not these.
	{ [ -n "${HT_TEST_NO_INJECT:-}" ] || [ "${HEAPTRACE_BATCH:-}" = 0 ]; } && paths=
	for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
		name=$(basename "$lib" | cut -d. -f1)
		name=${name#lib}
		if [ ! -e "$lib" ]; then
			fail "batchpreload: $lib is not installed" ""
			continue
		fi
		case $name in
		jemalloc) allocs=28 frees=10 ;;
		*) allocs=30 frees=12 ;;
		esac
		for mode in ring sites noinject; do
			key=bp_${name}_$mode
			BD=""
			case $mode in
			ring) LD_PRELOAD=$lib ht $key -v -f pprof -o "$TMP/$key.prof" -- "$TB/t_entrypoints" ;;
			sites) LD_PRELOAD=$lib HEAPTRACE_BATCH=0 ht $key -v -f pprof -o "$TMP/$key.prof" -- "$TB/t_entrypoints" ;;
			noinject) LD_PRELOAD=$lib ht $key -v --no-inject -f pprof -o "$TMP/$key.prof" -- "$TB/t_entrypoints" ;;
			esac
			bt_diag "$(rc_diag $key 0)"
			while read -r fn vals; do
				bt_expect "" "$TMP/$key.prof" "$TB/t_entrypoints" "$fn" "$vals"
			done <<<"$BP_EP"
			bt_events $key allocs=$allocs frees=$frees unmatched_frees=0 missed_frees=0 call_map_full=0 ring_lost=0
			case ${paths:+$mode} in
			ring)
				grep -q '^heaptrace: fast path: a stub at .*, events batched$' "$TMP/$key.err" ||
					BD+="not batched: $(grep -m3 -E 'fast path: (no batching|a stub|not installed)|keeps its uprobes' "$TMP/$key.err")"$'\n'
				grep -qE '^heaptrace: probe reallocarray +[^ ]*/libc\.so\.6\+0x[0-9a-f]+: the fast path \(stub\)' "$TMP/$key.err" ||
					BD+="libc's reallocarray is not the stub's: $(grep -m1 'probe reallocarray' "$TMP/$key.err")"$'\n'
				[ "$(rl_events_num $key ring_events)" -gt 0 ] 2>/dev/null ||
					BD+="ring_events=$(rl_events_num $key ring_events), want some"$'\n' ;;
			sites)
				grep -q '^heaptrace: fast path: no batching (HEAPTRACE_BATCH=0)' "$TMP/$key.err" ||
					BD+="no 'no batching (HEAPTRACE_BATCH=0)' line"$'\n' ;;
			esac
			# The whole profile, record by record (first two frames named), as the ring's.
			bt_records "$TMP/$key.prof" "$TB/t_entrypoints" | sort >"$TMP/$key.recs"
			if [ "$mode" != ring ] && ! diff "$TMP/bp_${name}_ring.recs" "$TMP/$key.recs" >"$TMP/$key.diff"; then
				BD+="records differ from the ring's (< ring, > $mode):"$'\n'"$(head -10 "$TMP/$key.diff")"$'\n'
			fi
			report "batchpreload: $name preloaded, $mode: every entry point exact (libc's own reallocarray too), allocs=$allocs frees=$frees" "$BD"
		done
	done

	# Many threads under jemalloc, more events at once than the ring's
	# 16384 slots (t_batch burst, as in scenario_batchfull): exact, batched.
	lib=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
	key=bp_burst
	BD=""
	LD_PRELOAD=$lib ht $key -v -f pprof -o "$TMP/$key.prof" -- "$TB/t_batch" burst
	bt_diag "$(rc_diag $key 0)"
	grep -q '^errors 0$' "$TMP/$key.out" || BD+="target: $(tr '\n' ' ' <"$TMP/$key.out")"$'\n'
	[ -z "$paths" ] || grep -q '^heaptrace: fast path: a stub at .*, events batched$' "$TMP/$key.err" ||
		BD+="not batched: $(grep -m3 -E 'fast path: (no batching|a stub|not installed)|keeps its uprobes' "$TMP/$key.err")"$'\n'
	bt_expect "" "$TMP/$key.prof" "$TB/t_batch" burst_alloc "4000 224000 48000 2688000"
	bt_events $key unmatched_frees=0 missed_frees=0 live_map_full=0 ring_lost=0
	report "batchpreload: jemalloc preloaded, 4 threads, 48000 mallocs and 44000 frees, batched: exact, none lost" "$BD"
}
