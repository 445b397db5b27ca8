# shellcheck shell=bash
# Area "faults" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario faults: the target or heaptrace killed, stopped or changing
# under the tracer.

# rl_launch KEY ARG...: heaptrace ARG... in the background (stdout KEY.tout,
# stderr KEY.err); HPID is its timeout wrapper.
rl_launch() {
	local key=$1
	shift
	echo "heaptrace $(rel "$@")" >"$TMP/$key.cmd"
	timeout -k 5 60 "$HT" "$@" >"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
}

# rl_wait_exit PID SECS: wait_exit without the shell's "Killed" notice for
# a job that died of SIGKILL.
rl_wait_exit() {
	local n=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		WRC=timeout
		return 1
	fi
	wait "$1" 2>/dev/null
	WRC=$?
	return 0
}

# rl_htpid: the heaptrace process under the timeout wrapper HPID.
rl_htpid() {
	pgrep -P "$HPID" | head -1
}

scenario_faults() {
	faults_target_killed
	faults_pterm
	faults_lterm
	faults_lterm_ignored
	faults_duration
	faults_tracer_killed
	faults_tracer_killed_busy
	faults_fork
	faults_exec
	faults_dlopen
	faults_threads
}

# -p, the target (t_wait, see scenario_attach) killed by SIGKILL after its
# traced phase: heaptrace says the process exited, writes the profile and
# exits 0.  Allocated while attached: post_alloc 6 x 640 (2 freed),
# post_realloc_pre 1 x 1500: in use 5 objects, 2560 + 1500 = 4060 bytes;
# allocated 7 objects, 3840 + 1500 = 5340 bytes.  The maps were read while
# the process was alive.
faults_target_killed() {
	local key=fpkill d=""
	pstart $key -o "$TMP/$key.prof" || return
	kill -KILL "$TPID"
	wait "$TPID" 2>/dev/null
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after the target was killed"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 0)
	grep -q 'exited' "$TMP/$key.err" || d+=$'\n'"no line on stderr saying that the process exited"
	report "faults: -p, target SIGKILLed: heaptrace exits 0 and says the process exited" "$d${d:+$'\n'$(ctx $key)}"
	pprof_header "$TMP/$key.prof" "faults: -p, target SIGKILLed: profile of what was allocated while attached" \
		5 4060 7 5340
	d=""
	grep -q '^MAPPED_LIBRARIES:' "$TMP/$key.prof" 2>/dev/null || d+="no MAPPED_LIBRARIES: section"$'\n'
	grep -q "$TB/t_wait\$" "$TMP/$key.prof" 2>/dev/null || d+="no mapping of $TB/t_wait"$'\n'
	grep -qE '/libc\.so\.6$' "$TMP/$key.prof" 2>/dev/null || d+="no mapping of libc.so.6"$'\n'
	report "faults: -p, target SIGKILLed: MAPPED_LIBRARIES lists t_wait and libc" "$d"
}

# -p, heaptrace gets SIGTERM: it detaches, writes the profile, exits 0, and
# the target runs on (pfinish); final_churn, after the detach, is not seen.
faults_pterm() {
	local key=fpterm
	pstart $key -f collapsed --value alloc_space || return
	pfinish $key TERM
	expect_leaf $key post_alloc 3840
	expect_leaf $key post_realloc_pre 1500
	leafset $key post_alloc post_realloc_pre
	expect_events $key allocs=7 frees=2 unmatched_frees=4 missed_returns=0 returns_without_entry=0
}

# t_faults hold before the FIFO is written: hold_keep 4 x 1000 kept,
# hold_temp 1 x 500 freed (alloc_space: 4000 and 500); hold_after runs only
# once released.
faults_hold_start() {
	local key=$1
	shift
	mkfifo "$TMP/$key.fifo"
	rl_launch "$key" -v -o "$TMP/$key.prof" -f collapsed --value alloc_space "$@"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		fail "$key: the target starts under heaptrace and says ready" "$(ctx "$key")"$'\n'"target: $(cat "$TMP/$key.tout")"
		kill_tree "$HPID"
		return 1
	fi
	return 0
}

# Launch mode, SIGTERM to heaptrace: it detaches, writes the profile, passes
# the signal on to the command (t_faults hold, default action) and exits
# with the command's status, like time(1): 128 + 15 = 143.
faults_lterm() {
	local key=flterm d=""
	faults_hold_start $key -- "$TB/t_faults" hold "$TMP/$key.fifo" || return
	kill -TERM "$(rl_htpid)"
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after SIGTERM"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 143)
	report "faults: launch mode, SIGTERM to heaptrace: exits 143, the status of the command killed by the SIGTERM passed on" \
		"$d${d:+$'\n'$(ctx $key)}"
	cp "$TMP/$key.prof" "$TMP/$key.out" 2>/dev/null
	expect_leaf $key hold_keep 4000
	expect_leaf $key hold_temp 500
	leafset $key hold_keep hold_temp
}

# Launch mode, SIGTERM to heaptrace, the command ignores SIGTERM: heaptrace
# detaches and writes the profile at once, then waits for the command
# (README: the command runs to its end), and exits with its status, 7.
# hold_after, allocated after the detach, is not in the profile.
faults_lterm_ignored() {
	local key=fltermign d=""
	faults_hold_start $key -- "$TB/t_faults" hold "$TMP/$key.fifo" ignterm || return
	kill -TERM "$(rl_htpid)"
	wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 15 "$HPID" ||
		d+="no 'wrote the profile' line 15 s after SIGTERM"$'\n'
	kill -0 "$HPID" 2>/dev/null || d+="heaptrace did not wait for the command"$'\n'
	cp "$TMP/$key.prof" "$TMP/$key.early.out" 2>/dev/null || : >"$TMP/$key.early.out"
	release $key || d+="could not release the target"$'\n'
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after the command was released"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 7)
	grep -q '^bye$' "$TMP/$key.tout" || d+=$'\n'"the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "faults: launch mode, SIGTERM to heaptrace, command ignores it: profile written at once, command runs to its end, exit 7" \
		"$d${d:+$'\n'$(ctx $key)}"
	expect_leaf $key.early hold_keep 4000
	cp "$TMP/$key.prof" "$TMP/$key.out" 2>/dev/null
	expect_leaf $key hold_keep 4000
	expect_leaf $key hold_temp 500
	leafset $key hold_keep hold_temp
}

# Launch mode, -d 1: tracing stops after 1 s, the profile is written, and
# heaptrace still waits for the command (README), then exits 7.
faults_duration() {
	local key=fldur d=""
	faults_hold_start $key -d 1 -- "$TB/t_faults" hold "$TMP/$key.fifo" || return
	wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 15 "$HPID" ||
		d+="no 'wrote the profile' line 15 s after the start with -d 1"$'\n'
	kill -0 "$HPID" 2>/dev/null || d+="heaptrace did not wait for the command"$'\n'
	release $key || d+="could not release the target"$'\n'
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after the command was released"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 7)
	grep -q '^bye$' "$TMP/$key.tout" || d+=$'\n'"the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "faults: launch mode -d 1: profile written after 1 s, command runs to its end, heaptrace exits 7" \
		"$d${d:+$'\n'$(ctx $key)}"
	cp "$TMP/$key.prof" "$TMP/$key.out" 2>/dev/null
	expect_leaf $key hold_keep 4000
	expect_leaf $key hold_temp 500
	leafset $key hold_keep hold_temp
}

# heaptrace -p killed by SIGKILL (no chance to detach): the kernel drops
# its probes with its file descriptors.  The target runs its last phase
# (final_churn's mallocs and frees, where the probes were) and exits 0; the
# programs and links heaptrace held (its fdinfo) are gone, and no uprobe
# of heaptrace is left in tracefs.
faults_tracer_killed() {
	local key=fhkill d="" ht
	pstart $key -f collapsed || return
	ht=$(rl_htpid)
	rl_bpf_ids "$ht" >"$TMP/$key.ids"
	grep -q '^prog ' "$TMP/$key.ids" && grep -q '^link ' "$TMP/$key.ids" ||
		d+="heaptrace holds no BPF program or link (fdinfo): $(tr '\n' ' ' <"$TMP/$key.ids")"$'\n'
	# disowned: no "Killed" notice from the shell for the timeout wrapper
	disown "$HPID" 2>/dev/null
	kill -KILL "$ht"
	rl_wait_exit "$HPID" 15 || kill_tree "$HPID"
	target_finishes $key
	d+=$FIN
	report "faults: heaptrace -p SIGKILLed: the target runs on, finishes and exits 0" "$d"
	d=$(rl_bpf_left "$TMP/$key.ids")
	d+=$(rl_uprobe_events)
	report "faults: heaptrace -p SIGKILLed: its $(grep -c '^prog ' "$TMP/$key.ids") programs and $(grep -c '^link ' "$TMP/$key.ids") links are released, no uprobe_events entry" "$d"
}

# The same while the target is busy: t_stress (16 threads, 4000000
# malloc/free pairs, deterministic) attached with -p, heaptrace SIGKILLed
# after 1 s of tracing, with return probes pending on the threads' stacks.
# The target must finish with exactly the output of an untraced run.
faults_tracer_killed_busy() {
	local key=fhbusy d="" ht want
	want=$("$TB/t_stress" 16 4000000)
	echo "heaptrace -v -o /dev/null -p PID (t_stress 16 4000000, SIGKILLed after 1 s)" >"$TMP/$key.cmd"
	mkfifo "$TMP/$key.fifo"
	"$TB/t_stress" 16 4000000 "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	TPID=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$TPID"; then
		fail "$key: t_stress starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$TPID"
		return
	fi
	timeout -k 5 60 "$HT" -v -o /dev/null -p "$TPID" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID([^0-9]|\$)" 30 "$HPID"; then
		fail "$key: heaptrace -p attaches to t_stress" "$(ctx $key)"
		kill_tree "$HPID" "$TPID"
		return
	fi
	ht=$(rl_htpid)
	rl_bpf_ids "$ht" >"$TMP/$key.ids"
	release $key || d+="could not release the target"$'\n'
	sleep 1
	grep -q '^stress:' "$TMP/$key.tout" &&
		d+="the target finished within 1 s under tracing: the kill came too late to test anything"$'\n'
	# disowned: no "Killed" notice from the shell for the timeout wrapper
	disown "$HPID" 2>/dev/null
	kill -KILL "$ht"
	rl_wait_exit "$HPID" 15 || kill_tree "$HPID"
	if wait_exit "$TPID" 60; then
		[ "$WRC" = 0 ] || d+="target exit status $WRC, want 0"$'\n'
		[ "$(grep '^stress:' "$TMP/$key.tout")" = "$want" ] ||
			d+="target output '$(grep -v '^ready$' "$TMP/$key.tout")', want '$want' (untraced run)"$'\n'
	else
		d+="target still running 60 s after heaptrace was killed"$'\n'
		kill_tree "$TPID"
	fi
	report "faults: heaptrace -p SIGKILLed while 16 threads allocate: the target finishes, exit 0, same output as untraced" "$d"
	report "faults: heaptrace -p SIGKILLed while 16 threads allocate: its programs and links are released" \
		"$(rl_bpf_left "$TMP/$key.ids")"
}

# t_faults fork: the child (another process) is not traced; the parent's
# counts are exact.
#   parent_before 5 x 111 kept (the child frees 2 of its copies: not seen)
#   parent_after  3 x 333 kept, after the child exited
#   child_alloc   7 x 222 in the child: absent
faults_fork() {
	profile4 ffork 0 "$TB/t_faults" fork
	#                             alloc   alloc  inuse   inuse
	#                             objects space  objects space
	expect4 ffork parent_before   5       555    5       555
	expect4 ffork parent_after    3       999    3       999
	absent4 ffork child_alloc child_free
	leafset4 ffork
	expect_events ffork.alloc_objects allocs=8 frees=0 unmatched_frees=0 missed_frees=0
}

# t_faults exec build/tests/t_pprof: exec_before 2 x 1234 kept, then execv.
# The new image uses the same libc, whose probes stay: t_pprof's
# allocations (see scenario_pprof) are counted exactly.
#   big_keeper 4 x 262144 kept, mid_keeper 3 x 10000 kept, churn 10 x 5000 freed
# The events line counts both images: 2 + 17 = 19 allocations.  The
# profile is the program that runs last (issue #15: a launched command is
# followed into what it executes, and the old program's stacks would be
# symbolized against the new one's map): allocated 17 objects, 1128576
# bytes; in use only t_pprof's 7 objects, 1078576 bytes.
faults_exec() {
	profile4 fexec 0 "$TB/t_faults" exec "$TB/t_pprof"
	expect4 fexec big_keeper      4 1048576    4 1048576
	expect4 fexec mid_keeper      3   30000    3   30000
	expect4 fexec churn          10   50000    0       0
	expect_events fexec.alloc_objects allocs=19 frees=10 unmatched_frees=0 missed_frees=0
	ht fexec.pprof -o "$TMP/fexec.prof" -- "$TB/t_faults" exec "$TB/t_pprof"
	check_rc fexec.pprof 0 "fexec: pprof run exits 0"
	local h
	h=$(rl_header "$TMP/fexec.prof")
	report "fexec: pprof header: 17 objects, 1128576 bytes allocated (the program that runs last)" \
		"$([ "${h#* * }" = "17 1128576" ] || echo "header: $(head -1 "$TMP/fexec.prof")")"
	report "fexec: pprof header: in use 7 objects, 1078576 bytes (the pre-exec heap is gone)" \
		"$([ "${h% * *}" = "7 1078576" ] || echo "header: $(head -1 "$TMP/fexec.prof")"$'\n'"$(grep -E '^ +[0-9]+: +[0-9]+ \[ *[0-9]+: +[0-9]+\] @ *$' "$TMP/fexec.prof" | sed 's/^/record without frames: /')")"
}

# t_faults dlopen: malloc(100) (dl_before), then dlopen of jemalloc and
# tcmalloc (late: jemalloc needs static TLS room), each one's own malloc
# and free through dlsym, dlclose, then 2 x malloc(200) (dl_after).  The
# late allocators are not probed (their calls are not counted); nothing
# breaks, and libc's counts stay exact.
faults_dlopen() {
	local lib libs=() d
	for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
		[ -e "/usr/lib/x86_64-linux-gnu/$lib" ] && libs+=("$lib")
	done
	[ ${#libs[@]} -gt 0 ] || fail "faults: dlopen: neither libjemalloc.so.2 nor libtcmalloc_minimal.so.4 installed" ""
	GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 \
		ht fdlopen -v -f collapsed --value alloc_space -- "$TB/t_faults" dlopen "${libs[@]}"
	d=$(rc_diag fdlopen 0)
	grep -q '^dlopen: ok$' "$TMP/fdlopen.err" || d+=$'\n'"the target did not finish its dlopen/dlclose (${libs[*]})"
	report "faults: dlopen and dlclose of ${libs[*]} while traced: target and heaptrace exit 0" "$d"
	expect_leaf fdlopen dl_before 100
	expect_leaf fdlopen dl_after 400
	expect_events fdlopen unmatched_frees=0 missed_frees=0 returns_without_entry=0 missed_returns=0 \
		stack_errors=0 live_map_full=0
}

# t_faults threads: 200 short-lived threads (8 at a time), each
# th_keep 3 x 100 kept, th_temp 2 x 50 freed.  No call state goes stale
# (missed_returns) and no return comes without its entry, and the event
# counters agree with the profile: allocs = allocated objects,
# frees = allocated - in use.  (glibc's DTVs are allocated too; their
# number is glibc's business, so it is taken from the profile.)
faults_threads() {
	local key=fthreads h ao io d=""
	profile4 $key 0 "$TB/t_faults" threads
	expect4 $key th_keep 600 60000 600 60000
	expect4 $key th_temp 400 20000   0     0
	expect_events $key.alloc_objects missed_returns=0 returns_without_entry=0 call_map_full=0 \
		live_map_full=0 stack_errors=0 stack_collisions=0 site_map_full=0 missed_frees=0 failed_allocs=0
	ht $key.pprof -v -o "$TMP/$key.prof" -- "$TB/t_faults" threads
	check_rc $key.pprof 0 "$key: pprof run exits 0"
	h=$(rl_header "$TMP/$key.prof")
	io=$(echo "$h" | cut -d' ' -f1)
	ao=$(echo "$h" | cut -d' ' -f3)
	if [ -z "$h" ]; then
		d="no pprof header: $(head -1 "$TMP/$key.prof")"
	else
		[ "$(rl_events_num $key.pprof allocs)" = "$ao" ] ||
			d+="allocs=$(rl_events_num $key.pprof allocs), profile: $ao objects allocated"$'\n'
		[ "$(rl_events_num $key.pprof frees)" = "$((ao - io))" ] ||
			d+="frees=$(rl_events_num $key.pprof frees), profile: $ao - $io = $((ao - io))"$'\n'
	fi
	report "$key: events allocs and frees agree with the profile's allocated and in-use objects" "$d"
}
