# shellcheck shell=bash
# Area "fastpath" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# the in-process fast path (user/inject/, stub/), which heaptrace installs by
# default: scenarios inject (what is redirected, what falls back and why,
# signal handlers that malloc) and inject_cycles (attach and detach 50 times
# to one running multithreaded target, then SIGKILL heaptrace 20 times).
# Exactness with the fast path on is what every other area checks too;
# `make test-noinject` runs the exact areas again with --no-inject.

# ---------------------------------------------------------------------------
scenario_inject() {
	local key d n h m allocs frees
	# The malloc family of glibc goes to the stub; -v says so.
	key=fp_ep
	ht $key -v -f collapsed --value alloc_objects -- "$TB/t_entrypoints"
	check_rc $key 0 "inject: t_entrypoints under heaptrace -v exits 0"
	d=""
	grep -qE '^heaptrace: fast path: a stub at 0x[0-9a-f]+ \(/proc/self/fd/[0-9]+\), 9 functions redirected' \
		"$TMP/$key.err" || d+="no 'fast path: a stub at ..., 9 functions redirected' line: $(grep 'fast path' "$TMP/$key.err")"$'\n'
	for f in malloc calloc realloc reallocarray posix_memalign aligned_alloc valloc pvalloc free; do
		grep -qE "^heaptrace: probe $f +[^ ]*libc\.so\.6\+0x[0-9a-f]+: the fast path \(stub\), [0-9]+ bytes displaced" \
			"$TMP/$key.err" || d+="$f is not taken by the stub"$'\n'
	done
	report "inject: glibc's 9 malloc-family functions go to the stub (memalign is an alias)" "$d"
	expect_leaf $key ep_malloc 4
	expect_leaf $key ep_realloc_null 1
	expect_leaf $key ep_posix_memalign 2
	expect_events $key allocs=27 frees=10 unmatched_frees=0 missed_frees=0 missed_returns=0 sampled_set_full=0

	# A function whose first bytes cannot move keeps its uprobes, says why,
	# and the counts stay exact across the two paths (malloc: uprobes, free: stub).
	key=fp_um
	ht $key -v -f collapsed --value inuse_space -- "$TB/t_unmovable"
	check_rc $key 0 "inject: t_unmovable exits 0"
	d=""
	grep -q '^heaptrace: fast path: malloc keeps its uprobes: a branch lands inside its first 6 bytes$' "$TMP/$key.err" ||
		d+="no 'malloc keeps its uprobes: a branch lands inside its first 6 bytes': $(grep 'fast path: malloc' "$TMP/$key.err")"$'\n'
	grep -qE '^heaptrace: probe free +[^ ]*t_unmovable\+0x[0-9a-f]+: the fast path \(stub\)' "$TMP/$key.err" ||
		d+="free of t_unmovable is not taken by the stub"$'\n'
	grep -qE '^heaptrace: probe malloc +[^ ]*t_unmovable\+0x[0-9a-f]+ = malloc\+0 `nop`' "$TMP/$key.err" ||
		d+="malloc of t_unmovable has no uprobe at malloc+0"$'\n'
	report "inject: a prologue a branch lands in falls back to uprobes, and -v says why" "$d"
	expect_leaf $key um_alloc 600
	expect_events $key allocs=10 frees=4 unmatched_frees=0 missed_frees=0

	# Signal handlers that malloc, 5,000 times a second (100 on a slow machine: sig_factor), in exact and sampled mode.
	for mode in exact sampled; do
		key=fp_sig_$mode
		if [ $mode = exact ]; then
			ht $key -v -f collapsed --value alloc_objects -- "$TB/t_inject" signals 10000 "$(sig_factor)"
		else
			ht $key -v --sample-rate 1 -f collapsed --value alloc_objects -- "$TB/t_inject" signals 10000 "$(sig_factor)"
		fi
		check_rc $key 0 "inject: $mode: t_inject signals exits 0 (its blocks intact)"
		m=$(sed -n 's/^main \([0-9]*\) handler [0-9]* errors 0$/\1/p' "$TMP/$key.err")
		h=$(sed -n 's/^main [0-9]* handler \([0-9]*\) errors 0$/\1/p' "$TMP/$key.err")
		allocs=$(rl_events_num $key allocs)
		frees=$(rl_events_num $key frees)
		d=""
		[ -n "$h" ] && [ "$h" -ge 200 ] || d+="the handler ran ${h:-?} times, want 200 or more: $(grep handler "$TMP/$key.err")"$'\n'
		[ -n "$m" ] && [ "$(leafval $key signal_loop)" = "$m" ] ||
			d+="signal_loop alloc_objects=$(leafval $key signal_loop), want the target's ${m:-?} rounds"$'\n'
		n=$(leafval $key on_alarm)
		[ "$n" -le "${h:-0}" ] || d+="on_alarm alloc_objects=$n, more than the handler's ${h:-?} calls"$'\n'
		[ -n "$allocs" ] && [ -n "$m" ] && [ "$allocs" = "$frees" ] && [ "$allocs" = $((m + n + 1)) ] ||
			d+="events allocs=${allocs:-?} frees=${frees:-?}, want both ${m:-?} (main) + $n (handler) + 1 (the primer)"$'\n'
		report "inject: $mode: signal handlers that malloc: the main loop's calls exact, the handler's balanced" "$d"
	done
}

# ---------------------------------------------------------------------------
# t_inject churn: 4 threads allocate without pause and check every block;
# heaptrace attaches (-p), the target runs one phase (100 x malloc(1000+K)
# in phase_keep), heaptrace stops on SIGINT: 50 times over one process,
# each profile exact; then 20 times heaptrace is SIGKILLed instead (its
# stub stays behind, the next one restores the jumps it finds); at the end
# the target's own check finds no damaged block and it exits 0.
scenario_inject_cycles() {
	local key=fp_cyc d="" i tpid hpid bad=0 kills=0 first="" k
	mkfifo "$TMP/$key.fifo"
	"$TB/t_inject" churn "$TMP/$key.fifo" 4 >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$tpid"; then
		fail "inject_cycles: t_inject churn starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tpid"
		return
	fi
	for i in $(seq 1 70); do
		k=$key.$i
		timeout -k 5 60 "$HT" -v -f collapsed --value inuse_space -p "$tpid" >"$TMP/$k.out" 2>"$TMP/$k.err" </dev/null &
		hpid=$!
		if ! wait_for "$TMP/$k.err" "^heaptrace: tracing PID $tpid" 30 "$hpid"; then
			d+="cycle $i: heaptrace did not attach: $(tail -3 "$TMP/$k.err")"$'\n'
			kill_tree "$hpid"
			bad=$((bad + 1))
			[ "$bad" -gt 3 ] && break
			continue
		fi
		# shellcheck disable=SC2016
		timeout 10 bash -c 'echo "phase $2" >"$1"' _ "$TMP/$key.fifo" "$i"
		if ! wait_for "$TMP/$key.tout" "^phase $i done$" 20 "$tpid"; then
			d+="cycle $i: the target did not finish its phase"$'\n'
			kill_tree "$hpid"
			break
		fi
		if [ "$i" -le 50 ]; then
			# heaptrace itself, not its timeout wrapper (which would send the signal twice).
			kill -INT "$(pgrep -P "$hpid" | head -1)" 2>/dev/null || kill -INT "$hpid"
			wait_exit "$hpid" 30 || { d+="cycle $i: heaptrace still running 30 s after SIGINT"$'\n'; kill_tree "$hpid"; }
			[ "$WRC" = 0 ] || d+="cycle $i: heaptrace exit status $WRC"$'\n'
			grep -q '^heaptrace: fast path: a stub at' "$TMP/$k.err" || d+="cycle $i: no fast path: $(grep 'fast path' "$TMP/$k.err" | head -2)"$'\n'
			[ "$(leafval "$k" phase_keep)" = $((100 * (1000 + i))) ] ||
				d+="cycle $i: phase_keep inuse_space=$(leafval "$k" phase_keep), want $((100 * (1000 + i)))"$'\n'
		else
			# SIGKILL: nothing is written; the target must run on.
			kill -KILL "$(pgrep -P "$hpid" | head -1)" 2>/dev/null || kill -KILL "$hpid"
			wait "$hpid" 2>/dev/null
			kills=$((kills + 1))
		fi
		kill -0 "$tpid" 2>/dev/null || { d+="cycle $i: the target died: $(tail -3 "$TMP/$key.tout")"$'\n'; break; }
	done
	report "inject_cycles: 50 attach/detach cycles on a running 4-thread target: each profile exact (phase_keep = 100 x (1000+K) bytes)" "$d"
	# After the SIGKILLs, one more heaptrace finds the jumps of the killed one and restores them.
	k=$key.last
	ht_bg "$k" -v -f collapsed --value inuse_space -p "$tpid"
	wait_for "$TMP/$k.err" "^heaptrace: tracing PID $tpid" 30 "$HPID"
	timeout 10 bash -c 'echo "phase 99" >"$1"' _ "$TMP/$key.fifo"
	wait_for "$TMP/$key.tout" "^phase 99 done$" 20 "$tpid"
	kill -INT "$(pgrep -P "$HPID" | head -1)" 2>/dev/null
	ht_bg_wait "$k" "$HPID" 30
	cp "$TMP/$k.tout" "$TMP/$k.out"         # ht_bg's stdout: the profile
	d=""
	[ "$kills" = 20 ] || d+="$kills SIGKILLs, want 20"$'\n'
	grep -q "still jumped to an earlier heaptrace's stub: restored" "$TMP/$k.err" ||
		d+="no 'earlier heaptrace's stub: restored' line: $(grep 'fast path' "$TMP/$k.err" | head -3)"$'\n'
	[ "$(leafval "$k" phase_keep)" = $((100 * 1099)) ] || d+="phase_keep inuse_space=$(leafval "$k" phase_keep), want 109900"$'\n'
	report "inject_cycles: 20 SIGKILLs of heaptrace later the target runs on, and the next heaptrace restores the old jumps and counts exactly" "$d"
	# The target's own verdict.
	timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/$key.fifo"
	d=""
	if wait_exit "$tpid" 20; then
		[ "$WRC" = 0 ] || d+="target exit status $WRC"$'\n'
	else
		d+="target still running 20 s after quit"$'\n'
		kill_tree "$tpid"
	fi
	grep -q '^bye errors=0$' "$TMP/$key.tout" || d+="target: $(tail -2 "$TMP/$key.tout")"$'\n'
	report "inject_cycles: the target checked every block it ever allocated: none damaged, exit 0" "$d"
}

# ---------------------------------------------------------------------------
# t_forkstorm: 4 threads calloc/malloc/realloc/free and check every block
# while the main thread forks (plain children, exec, posix_spawn, a
# grandchild) and checks every child's status.  Exact --follow-fork with a
# stub per child, launched; then -p on one running process: exact attach/
# detach cycles, heaptrace SIGKILLed at every phase (attach, install, run)
# and SIGINTed during its installation, and after each kill a --no-inject
# heaptrace: its uprobes must not go on the killed one's jumps (the kernel's
# int3 over a jump crashed PostgreSQL's postmaster at calloc+3).  Every
# process of the tree checks itself: no damaged block, no child killed.
scenario_forkstorm() {
	local key=fs_launch d="" n tpid hpid i k delay kills=0 restored=0 t0=$SECONDS
	ht $key -v --follow-fork -f collapsed -o "$TMP/$key.prof" -- "$TB/t_forkstorm" 3 4 10
	check_rc $key 0 "forkstorm: launched under exact --follow-fork: exit 0"
	grep -qE '^forkstorm children [1-9][0-9]* bad 0 errors 0$' "$TMP/$key.out" ||
		d+="target: $(tail -2 "$TMP/$key.out")"$'\n'
	grep -q '^heaptrace: fast path: a stub at' "$TMP/$key.err" || d+="no stub: $(grep 'fast path' "$TMP/$key.err" | head -2)"$'\n'
	n=$(grep -c 'has its own copy of the stub, enabled' "$TMP/$key.err")
	[ "$n" -ge 1 ] || d+="no child had a stub of its own"$'\n'
	grep -q 'fast path: off' "$TMP/$key.err" && d+="$(grep 'fast path: off' "$TMP/$key.err")"$'\n'
	report "forkstorm: exact --follow-fork, launched: the fast path in the target and $n children, every block and child intact" "$d"

	key=fs_p
	d=""
	# Its lifetime outlasts the 18 rounds on a slow machine too (in Debian's 6.12 under QEMU 13 rounds took 120 s).
	"$TB/t_forkstorm" $((120 * ${HT_TEST_SLOW:-1})) 4 20 >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$tpid"; then
		fail "forkstorm: t_forkstorm starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tpid"
		return
	fi
	for i in $(seq 1 18); do
		k=$key.$i
		kill -0 "$tpid" 2>/dev/null || { d+="round $i: the target died: $(tail -2 "$TMP/$key.tout")"$'\n'; break; }
		if [ "$i" -le 2 ]; then
			# Attach, trace the tree 1 s, detach.
			ht "$k" -v --follow-fork -d 1 -f collapsed -o "$TMP/$k.prof" -p "$tpid"
			[ "$(cat "$TMP/$k.rc")" = 0 ] || d+="round $i: heaptrace exit status $(cat "$TMP/$k.rc"): $(tail -2 "$TMP/$k.err")"$'\n'
			grep -q '^heaptrace: fast path: a stub at' "$TMP/$k.err" || d+="round $i: no stub: $(grep 'fast path' "$TMP/$k.err" | head -2)"$'\n'
			continue
		fi
		# SIGKILL (or, one round in four, SIGINT): in odd rounds at a delay that walks through
		# the attach and the installation, in even ones a while after the stub is in.
		delay=$(awk -v i="$i" 'BEGIN { printf "%.3f", (i % 7) * 0.1 + 0.02 }')
		"$HT" -v --follow-fork -f collapsed -o "$TMP/$k.prof" -p "$tpid" >"$TMP/$k.out" 2>"$TMP/$k.err" </dev/null &
		hpid=$!
		[ $((i % 2)) = 0 ] && wait_for "$TMP/$k.err" "^heaptrace: tracing PID $tpid" 30 "$hpid"
		sleep "$delay"
		if [ $((i % 4)) = 0 ]; then
			kill -INT "$hpid" 2>/dev/null
			wait_exit "$hpid" 30 || { d+="round $i: heaptrace still running 30 s after SIGINT"$'\n'; kill -KILL "$hpid"; wait "$hpid"; }
		else
			kill -KILL "$hpid" 2>/dev/null
			wait "$hpid" 2>/dev/null
			kills=$((kills + 1))
		fi
		# The next heaptrace without a stub of its own: the old jumps go before its uprobes.
		if [ $((i % 4)) = 2 ] || [ $((i % 4)) = 3 ]; then
			ht "$k.n" -v --follow-fork --no-inject -d 0.5 -f collapsed -o "$TMP/$k.n.prof" -p "$tpid"
			[ "$(cat "$TMP/$k.n.rc")" = 0 ] || d+="round $i: --no-inject heaptrace exit status $(cat "$TMP/$k.n.rc"): $(tail -2 "$TMP/$k.n.err")"$'\n'
			grep -q "still jumped to an earlier heaptrace's stub: restored" "$TMP/$k.n.err" && restored=$((restored + 1))
		fi
	done
	kill -TERM "$tpid" 2>/dev/null
	if wait_exit "$tpid" 30; then
		[ "$WRC" = 0 ] || d+="target exit status $WRC: $(tail -1 "$TMP/$key.tout")"$'\n'
	else
		d+="target still running 30 s after SIGTERM"$'\n'
		kill_tree "$tpid"
	fi
	grep -qE '^forkstorm children [1-9][0-9]* bad 0 errors 0$' "$TMP/$key.tout" || d+="target: $(tail -1 "$TMP/$key.tout")"$'\n'
	[ "$kills" -ge 10 ] || d+="$kills SIGKILLs, want 10 or more"$'\n'
	[ "$restored" -ge 1 ] || d+="no --no-inject heaptrace found a killed one's jumps to restore"$'\n'
	report "forkstorm: -p, 2 exact --follow-fork cycles, $kills SIGKILLs and SIGINTs through attach/install/run, $restored --no-inject sessions after them restoring the old jumps: the tree intact ($(tail -1 "$TMP/$key.tout" | cut -d' ' -f2-3)) in $((SECONDS - t0)) s" "$d"
}

# ---------------------------------------------------------------------------
# What can fail without touching the target fails before it is stopped: an
# --http port in use, an --http socket in a directory that does not exist.
# The target keeps no stub mapping, heaptrace exits 1 with one line.
scenario_inject_untouched() {
	local key d tpid port spec i
	mkfifo "$TMP/fp_unt.fifo"
	"$TB/t_inject" churn "$TMP/fp_unt.fifo" 2 >"$TMP/fp_unt.tout" 2>&1 &
	tpid=$!
	if ! wait_for "$TMP/fp_unt.tout" '^ready$' 10 "$tpid"; then
		fail "inject_untouched: t_inject churn starts" "$(cat "$TMP/fp_unt.tout")"
		kill_tree "$tpid"
		return
	fi
	# A port in use: a listener of our own.
	python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"$TMP/fp_unt.port" &
	local lpid=$!
	for i in $(seq 50); do [ -s "$TMP/fp_unt.port" ] && break; sleep 0.1; done
	port=$(cat "$TMP/fp_unt.port")
	i=0
	for spec in "127.0.0.1:$port" unix:/nonexistent/dir/s; do
		i=$((i + 1))
		key=fp_unt_$i
		d=""
		ht $key --http "$spec" -o "$TMP/$key.prof" -p "$tpid"
		[ "$(cat "$TMP/$key.rc")" = 1 ] || d+="exit status $(cat "$TMP/$key.rc"), want 1"$'\n'
		[ "$(wc -l <"$TMP/$key.err")" = 1 ] && grep -q "^heaptrace: .*${spec#unix:}" "$TMP/$key.err" ||
			d+="want one error line naming $spec: $(cat "$TMP/$key.err")"$'\n'
		grep -q heaptrace-stub "/proc/$tpid/maps" && d+="the target has a stub mapping: $(grep heaptrace-stub "/proc/$tpid/maps")"$'\n'
		[ -e "$TMP/$key.prof" ] && d+="a profile was written"$'\n'
		report "inject_untouched: --http $(rel "$spec") that cannot listen: exit 1, one error, the target untouched (no stub, no profile)" "$d"
	done
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/fp_unt.fifo"
	wait_exit "$tpid" 20 || kill_tree "$tpid"
}

# ---------------------------------------------------------------------------
# Periodic attaching, as an always-on profiler does: 30 sampled sessions of
# -d 0.2 on one running 4-thread target.  The first maps a stub; the others
# use it again, and each gives the sampled set's pages back at its end: the
# target's mappings stay those after the first session, and its RSS within
# one stub's worth (the 64 KiB stub file and the data's first pages) of
# where it started (the old build: a new stub and ~1 MB more each time).
scenario_inject_footprint() {
	local key=fp_fp d="" tpid i k rss0 rss1="" rss maps1="" maps stubs reused=0 t0=$SECONDS
	mkfifo "$TMP/$key.fifo"
	"$TB/t_inject" churn "$TMP/$key.fifo" 4 >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$tpid"; then
		fail "inject_footprint: t_inject churn starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tpid"
		return
	fi
	sleep 0.5
	rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$tpid/status")
	for i in $(seq 1 30); do
		k=$key.$i
		ht "$k" -v --sample-rate 64K -d 0.2 -o "$TMP/$k.prof" -p "$tpid"
		[ "$(cat "$TMP/$k.rc")" = 0 ] || { d+="session $i: exit status $(cat "$TMP/$k.rc"): $(tail -2 "$TMP/$k.err")"$'\n'; break; }
		if grep -q 'fast path: the stub an earlier heaptrace left at 0x[0-9a-f]* is used again' "$TMP/$k.err"; then
			reused=$((reused + 1))
		elif [ "$i" -gt 1 ]; then
			d+="session $i made a stub of its own: $(grep -E 'fast path|stub' "$TMP/$k.err" | head -4 | tr '\n' ' ')"$'\n'
		fi
		if [ "$i" = 1 ]; then
			rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$tpid/status")
			maps1="$(wc -l <"/proc/$tpid/maps") $(grep -A1 'memfd:heaptrace-stub' "/proc/$tpid/maps" | cut -d' ' -f1 | tr '\n' ' ')"
		fi
	done
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$tpid/status")
	maps="$(wc -l <"/proc/$tpid/maps") $(grep -A1 'memfd:heaptrace-stub' "/proc/$tpid/maps" | cut -d' ' -f1 | tr '\n' ' ')"
	stubs=$(grep -c 'memfd:heaptrace-stub' "/proc/$tpid/maps")
	[ "$stubs" = 1 ] || d+="$stubs stub mappings, want 1"$'\n'
	[ "$reused" = 29 ] || d+="$reused sessions used the stub again, want 29"$'\n'
	[ "$maps" = "$maps1" ] || d+="mappings (count, stub and data) after the first session: $maps1; at the end: $maps"$'\n'
	# Sampled sessions batch through the ring and the stub walks with the
	# CFI tables, as exact ones: the ring (1 MiB, used again by each
	# session, its positions going on, so its pages are touched once round)
	# and the tables' pages (~600 KiB for libc) come once; beyond them,
	# nothing may grow from session to session.
	[ $((rss - rss0)) -le 2048 ] ||
		d+="RSS grew from $rss0 KiB to $rss KiB (after the first session: ${rss1:-?}), want at most 2048 KiB (the ring's 1024, the tables')"$'\n'
	timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/$key.fifo"
	if wait_exit "$tpid" 20; then
		[ "$WRC" = 0 ] || d+="target exit status $WRC"$'\n'
	else
		kill_tree "$tpid"
	fi
	grep -q '^bye errors=0$' "$TMP/$key.tout" || d+="target: $(tail -2 "$TMP/$key.tout")"$'\n'
	report "inject_footprint: 30 sampled attaches of -d 0.2: one stub mapping, the same number of mappings, RSS $rss0 -> $rss KiB (after the first: ${rss1:-?}), no block damaged, in $((SECONDS - t0)) s" "$d"
}

# --sym functions go through the stub too, so a stub session SIGKILLed
# leaves jumps on them; the next session without a stub of its own
# (--no-inject) must put the file's bytes back before its uprobes go on
# (the kernel would put its int3 on the jump: the calloc+3 crash).  Rounds
# on bench/churn's pool allocator (pool_alloc/pool_free, register
# arguments); the old build's target died of SIGSEGV in each.  Two kinds of
# round: --no-libc (the pool's functions jump to the stub), and libc traced
# too (its nine take the stub, more than 2 GiB from the program: the pool's
# jump to a page of jumps near it, which the next session must know as
# heaptrace's).
scenario_inject_symkill() {
	local key=symkill round d="" tp hp kid kind spec
	local pool=(--sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2')
	local churn=$ROOT/build/bench/churn
	if [ ! -x "$churn" ]; then
		fail "inject_symkill: $churn not built (make test-targets)" ""
		return
	fi
	local tested_stub=0 tested_jumps=0
	# A round whose attach found a thread inside pool_alloc's first bytes
	# (a tight loop calls it) leaves it uprobes: nothing to test, another round.
	for round in 1 2 3 4 5 6 7 8 9 10; do
		[ "$tested_stub" -ge 1 ] && [ "$tested_jumps" -ge 1 ] && break
		if [ "$tested_stub" -lt 1 ]; then kind=stub spec=(--no-libc "${pool[@]}"); else kind=jumps spec=("${pool[@]}"); fi
		"$churn" --pool --pairs 4000000000 >"$TMP/$key.$round.tout" 2>&1 &
		tp=$!
		sleep 0.3
		ht_bg "$key.$round.a" -v "${spec[@]}" --sample-rate 64K -o /dev/null -p "$tp"
		hp=$HPID
		if ! wait_for "$TMP/$key.$round.a.err" 'tracing PID' 20 "$hp"; then
			d+="round $round ($kind): the stub session did not start: $(tail -2 "$TMP/$key.$round.a.err")"$'\n'
			kill_tree "$hp" "$tp"
			break
		fi
		if grep -q 'fast path: pool_alloc keeps its uprobes' "$TMP/$key.$round.a.err"; then
			kill_tree "$hp" "$tp"
			continue
		fi
		if [ "$kind" = jumps ] && ! grep -qE 'fast path: a stub at 0x[0-9a-f]+ .*, 11 functions redirected \(2 through the page of jumps at 0x[0-9a-f]+\)' "$TMP/$key.$round.a.err"; then
			d+="round $round: not 11 functions redirected, 2 through a page of jumps: $(grep 'fast path' "$TMP/$key.$round.a.err" | tail -3 | tr '\n' ' ')"$'\n'
			kill_tree "$hp" "$tp"
			break
		fi
		[ "$kind" = stub ] && tested_stub=$((tested_stub + 1)) || tested_jumps=$((tested_jumps + 1))
		sleep 0.5
		kid=$(pgrep -P "$hp" | head -1)
		[ -n "$kid" ] && kill -KILL "$kid"
		wait "$hp" 2>/dev/null
		grep -q "memfd:heaptrace-$kind" "/proc/$tp/maps" || d+="round $round: no heaptrace-$kind mapping in the target after the kill"$'\n'
		ht "$key.$round.b" --no-inject "${spec[@]}" -d 1 -o /dev/null -p "$tp"
		[ "$(cat "$TMP/$key.$round.b.rc")" = 0 ] || d+="round $round ($kind): the --no-inject session exited $(cat "$TMP/$key.$round.b.rc"): $(tail -2 "$TMP/$key.$round.b.err")"$'\n'
		sleep 0.5
		if kill -0 "$tp" 2>/dev/null; then
			kill_tree "$tp"
		else
			wait "$tp"
			d+="round $round ($kind): the target died after the --no-inject session, status $?"$'\n'
		fi
	done
	[ "$tested_stub" -ge 1 ] && [ "$tested_jumps" -ge 1 ] ||
		d+="rounds with pool_alloc on the fast path in 10: $tested_stub through the stub, $tested_jumps through a page of jumps; want 1 each"$'\n'
	report "inject_symkill: a --sym session SIGKILLed (the pool's functions jumping to the stub, then to a page of jumps), then --no-inject on the same --sym: the target runs on" "$d"
}

# The first remote call of an installation runs from libc's own `syscall;
# ret` over a signal frame of the thread's registers (user/inject/sigframe.c):
# heaptrace SIGKILLed inside it, the thread gives itself back its registers,
# vector registers (ymm upper halves), MXCSR and signal mask included.
# t_fpu's main thread (the one borrowed) holds all of them in a spin loop
# and checks them each round; the old way, the thread resumed in libc with
# borrowed registers and died of SIGSEGV.
scenario_inject_fpu() {
	local key=fpu d="" i rc
	rm -f "$TMP/$key.fifo" && mkfifo "$TMP/$key.fifo"
	"$TB/t_fpu" "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	local tp=$!
	if ! wait_for "$TMP/$key.tout" '^ready' 10 "$tp"; then
		fail "inject_fpu: t_fpu did not start" "$(cat "$TMP/$key.tout")"
		kill_tree "$tp"
		return
	fi
	# Four times with the registers borrowed, before the call; then in its
	# entry and exit stops (the thread then resumes from a system call's
	# stop with no tracer), and in the exit stop of the second call, the
	# gadget's; then with those stops reached but not yet reaped (before
	# PTRACE_O_TRACESYSGOOD the thread resumed with the stop's SIGTRAP as
	# a signal and the process died of it: forkstorm's exec'd children).
	local at=(syscall:1 syscall:1 syscall:1 syscall:1 syscall-entry:1 syscall-exit:1 syscall-exit:2
		syscall-entry-unreaped:1 syscall-exit-unreaped:1 syscall-exit-unreaped:2 syscall-entry-unreaped:3)
	for i in $(seq 1 ${#at[@]}); do
		HEAPTRACE_KILL_AT=${at[i - 1]} timeout -k 5 60 "$HT" -d 0.1 -o /dev/null -p "$tp" >/dev/null 2>"$TMP/$key.$i.err"
		rc=$?
		[ "$rc" = 137 ] || d+="kill $i: heaptrace exited $rc, not killed at ${at[i - 1]}: $(tail -1 "$TMP/$key.$i.err")"$'\n'
		kill -0 "$tp" 2>/dev/null || { d+="kill $i: the target died"$'\n'; break; }
	done
	ht "$key.after" -d 0.2 -o /dev/null -p "$tp"
	[ "$(cat "$TMP/$key.after.rc")" = 0 ] || d+="the next session exited $(cat "$TMP/$key.after.rc"): $(tail -2 "$TMP/$key.after.err")"$'\n'
	timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/$key.fifo"
	wait "$tp"
	rc=$?
	grep -q '^bye rounds=[1-9][0-9]* errors=0$' "$TMP/$key.tout" && [ "$rc" = 0 ] ||
		d+="target: status $rc, says: $(tr '\n' ' ' <"$TMP/$key.tout")"$'\n'
	report "inject_fpu: 11 SIGKILLs inside remote calls (4 before the first, in its entry and exit stops, in the second's exit stop, and 4 with such a stop not yet reaped): the borrowed thread keeps its vector registers, MXCSR and signal mask" "$d"
}

# Another tool's uprobe on a function the stub took (bpftrace on malloc and
# free, while heaptrace runs and after it was SIGKILLed with its jumps left):
# the jump comes after the first instruction where a pre-stub can undo it,
# so the kernel's breakpoint at the entry runs the file's first instruction
# and resumes on the jump.  Before, the target died of SIGTRAP or SIGSEGV
# (the kernel resumed inside the jump).  bpftrace must count calls, and the
# self-checking target must end with every block intact.
scenario_inject_othertool() {
	local key=othertool d="" libc rc n
	libc=$(awk '$NF ~ /\/libc\.so\.6$/ { print $NF; exit }' /proc/self/maps)
	rm -f "$TMP/$key.fifo" && mkfifo "$TMP/$key.fifo"
	"$TB/t_inject" churn "$TMP/$key.fifo" 4 >"$TMP/$key.tout" 2>&1 &
	local tp=$!
	if ! wait_for "$TMP/$key.tout" '^ready' 10 "$tp"; then
		fail "inject_othertool: t_inject did not start" "$(cat "$TMP/$key.tout")"
		kill_tree "$tp"
		return
	fi
	local bt="uprobe:$libc:malloc { @m = count(); } uprobe:$libc:free { @f = count(); } interval:s:1 { exit(); }"
	ht_bg "$key.a" -v -d 30 -o /dev/null -p "$tp"
	local hp=$HPID
	if ! wait_for "$TMP/$key.a.err" 'tracing PID' 20 "$hp"; then
		fail "inject_othertool: heaptrace did not start" "$(tail -3 "$TMP/$key.a.err")"
		kill_tree "$hp" "$tp"
		return
	fi
	grep -qE 'probe malloc .*the jump at \+[1-9]' "$TMP/$key.a.err" ||
		d+="malloc's jump is not after its first instruction: $(grep 'probe malloc' "$TMP/$key.a.err")"$'\n'
	for round in during killed; do
		timeout -k 5 30 bpftrace -e "$bt" >"$TMP/$key.$round.bt" 2>&1
		rc=$?
		n=$(awk '/^@m:/ { print $2 }' "$TMP/$key.$round.bt")
		[ "$rc" = 0 ] && [ "${n:-0}" -gt 0 ] || d+="$round: bpftrace exited $rc, counted '${n}' mallocs: $(tail -2 "$TMP/$key.$round.bt")"$'\n'
		kill -0 "$tp" 2>/dev/null || { d+="$round: the target died"$'\n'; break; }
		if [ "$round" = during ]; then
			# HPID is timeout's: heaptrace is its child.
			kill -KILL "$(pgrep -P "$hp" | head -1)" 2>/dev/null
			wait "$hp" 2>/dev/null
			grep -q 'memfd:heaptrace-stub' "/proc/$tp/maps" || d+="no stub left after the SIGKILL"$'\n'
		fi
	done
	if kill -0 "$tp" 2>/dev/null; then
		ht "$key.b" -d 0.5 -o /dev/null -p "$tp"
		[ "$(cat "$TMP/$key.b.rc")" = 0 ] || d+="the next session exited $(cat "$TMP/$key.b.rc"): $(tail -2 "$TMP/$key.b.err")"$'\n'
		timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/$key.fifo"
	fi
	wait "$tp"
	rc=$?
	grep -q '^bye errors=0$' "$TMP/$key.tout" && [ "$rc" = 0 ] || d+="target: status $rc, says: $(tr '\n' ' ' <"$TMP/$key.tout")"$'\n'
	report "inject_othertool: bpftrace on malloc/free beside the stub and after heaptrace's SIGKILL: it counts, the target runs on intact" "$d"
}

# The fast path's recorded calls must arrive, or heaptrace says so and
# stops (#38: an empty profile in silence was the worst outcome).  The
# tests' kernel whose uprobes never fire at the record sites is
# HEAPTRACE_TEST_NO_SITES=1; HEAPTRACE_BATCH=0 sends every call to them.
scenario_undelivered() {
	local key d
	key=undeliv_sites
	HEAPTRACE_BATCH=0 HEAPTRACE_TEST_NO_SITES=1 ht $key -v -f top -- "$TB/t_trickle" 300
	check_rc $key 1 "undelivered: record sites that never fire: heaptrace exits 1"
	d=""
	grep -qE "^heaptrace: fast path: PID [0-9]+'s recorded calls do not reach heaptrace on Linux [^ ]+ \(none in a second\): stopping" \
		"$TMP/$key.err" || d+="no 'recorded calls do not reach heaptrace' line: $(grep 'fast path' "$TMP/$key.err")"$'\n'
	grep -q 'stub_undelivered' "$TMP/$key.out" || d+="-f top does not name stub_undelivered among the losses"$'\n'
	report "undelivered: one line says why tracing stopped, the report names the loss" "$d"
	expect_events $key allocs=0 frees=0 stub_undelivered=1

	# The same kernel with the ring: events come through the drain, not the sites: no alarm.
	key=undeliv_ring
	HEAPTRACE_TEST_NO_SITES=1 ht $key -v -f top -- "$TB/t_trickle" 300
	check_rc $key 0 "undelivered: record sites that never fire, events batched: exits 0"
	# An event the stub hands to a record site beside the ring (the
	# designed fallback, docs/fast-path.md "How the paths differ": about
	# one ring run in 30) is swallowed by this test kernel's dead sites:
	# one allocation fewer and its free unmatched, at most once.  Seen in
	# CI under ASan (stop 45: allocs=299 unmatched_frees=1 ring_events=599).
	local line a u
	line=$(grep -m1 '^heaptrace: events:' "$TMP/$key.err")
	a=$(echo "$line" | tr ' ' '\n' | sed -n 's/^allocs=//p')
	u=$(echo "$line" | tr ' ' '\n' | sed -n 's/^unmatched_frees=//p')
	if [ "${a:-0}" = 299 ] && [ "${u:-0}" = 1 ]; then
		expect_events $key allocs=299 frees=299 unmatched_frees=1 stub_undelivered=0 ring_lost=0
	else
		expect_events $key allocs=300 frees=300 unmatched_frees=0 stub_undelivered=0 ring_lost=0
	fi

	# And a working kernel: every call, no alarm.
	key=undeliv_none
	HEAPTRACE_BATCH=0 ht $key -v -f top -- "$TB/t_trickle" 300
	check_rc $key 0 "undelivered: record sites that fire: exits 0"
	expect_events $key allocs=300 frees=300 unmatched_frees=0 stub_undelivered=0
}
