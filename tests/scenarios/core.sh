# shellcheck shell=bash
# Area "core" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# the allocator entry points and how a target ends: scenarios entrypoints,
# threads, threadexit, ctor, exit, failed, deep, signal.

# ---------------------------------------------------------------------------
# t_entrypoints: every traced entry point (see the comments in the source).
scenario_entrypoints() {
	profile4 entrypoints 0 "$TB/t_entrypoints"
	expect_entrypoints4 entrypoints
	# realloc(p, 0) and free(NULL) allocate nothing; ep_free only frees.
	absent4 entrypoints ep_realloc_zero ep_free_null ep_free
	# The program has no other heap activity (no stdio): the leaves are
	# exactly the functions of expect_entrypoints4 with a non-zero value.
	leafset4 entrypoints
	# Event counters (-v, alloc_objects run): allocs = 27 (sum of the alloc
	# objects in expect_entrypoints4); frees = 5 by ep_free + 5 by realloc (grow, shrink,
	# zero, big, reallocarray grow) = 10, and 27 - 10 = 17 objects in use;
	# no unmatched frees (free(NULL) is nothing, realloc's inner free and
	# malloc are not counted twice).
	expect_events entrypoints.alloc_objects allocs=27 frees=10 unmatched_frees=0
	no_loss_line entrypoints.inuse_space

	# Default format (pprof) to a file: the header holds exact totals.
	# in use: 17 objects (third column of expect_entrypoints4);
	#   3000+300+5000+200+333+400000+400+600+1234+321+2048+96+777+3000+8192
	#   = 425501
	# allocated: 27 objects;
	#   4000+600+50+5000+2000+200+333+444+200000+400000+400+60+600+2468
	#   +321+4096+96+777+6000+8192 = 635637
	ht entrypoints.pprof -o "$TMP/entrypoints.prof" -- "$TB/t_entrypoints"
	check_rc entrypoints.pprof 0 "entrypoints: -o FILE pprof run exits 0"
	pprof_header "$TMP/entrypoints.prof" "entrypoints: pprof header totals" 17 425501 27 635637
}

# ---------------------------------------------------------------------------
# t_threads: 4 threads racing (see the source).
scenario_threads() {
	profile4 threads 0 "$TB/t_threads"
	# 4 threads x 5000 x malloc(48), all freed: 20000 objects, 960000 bytes
	expect4 threads thr_churn   20000 960000   0     0
	# 4 x 500 x malloc(32), each realloc'ed: 2000 objects, 64000 bytes
	expect4 threads thr_rseed    2000  64000   0     0
	# 4 x 500 x realloc(p, 96), freed: 2000 objects, 192000 bytes
	expect4 threads thr_realloc  2000 192000   0     0
	# 4 x 50 x malloc(64) kept: 200 objects, 12800 bytes
	expect4 threads thr_keep      200  12800 200 12800
	# 4 x 25 x malloc(200), freed by the main thread: 100 objects, 20000 bytes
	expect4 threads thr_handoff   100  20000   0     0
	# worker and main_free_handoff only free; glibc's own thread set-up
	# (DTV calloc) shows up under glibc functions and is not checked.
	absent_leaf4 threads worker main_free_handoff main
	# Event counters: allocs = 20000 + 2000 + 2000 + 200 + 100 = 24300 of
	# ours + 4 callocs by glibc (one DTV per thread, allocate_dtv; seen
	# with valgrind --trace-malloc) = 24304.  Matched frees = 20000 (churn)
	# + 2000 (realloc's free of the 32-byte blocks) + 2000 (the 96-byte
	# blocks) + 100 (handoff) = 24100.  No unmatched free: what glibc frees
	# at each thread's exit is thread_exit_frees, 9 a thread (scenario
	# threadexit says why): 4 x 9 = 36.
	expect_events threads.alloc_objects allocs=24304 frees=24100 unmatched_frees=0 thread_exit_frees=36
}

# ---------------------------------------------------------------------------
# t_threads 16: at a thread's exit glibc's tcache_thread_shutdown() calls
# free() on every chunk left in the thread's tcache (blocks the program
# freed, whose frees were counted then) and last on the tcache itself
# (allocated with _int_malloc, never through malloc).  Seen with gdb (break
# free in a worker after its function returned): 7 chunks of 112 bytes (the
# 96-byte blocks; a tcache bin holds 7), 1 of 64 (the 48-byte ones), then
# the 0x290-byte tcache: 9 frees a thread that match no block.  They are
# thread_exit_frees, not unmatched_frees, and the losses say none; the same
# through the fast path and through uprobes (--no-inject).
# How many chunks a tcache holds at the exit depends on the arenas: threads
# that share one find chunks other threads gave back in its bins, and glibc
# stashes up to 7 of a size into the tcache when it takes one.  glibc makes
# 8 arenas a CPU, so with one CPU (a guest under QEMU) the 17 threads share
# 8 of them: 151-153 such frees (seen, and on this host with
# glibc.malloc.arena_max=8), 160-176 with 1-4 arenas.  arena_max=64 gives
# each thread its own whatever the CPU count: 144.
scenario_threadexit() {
	local key path opt
	for path in stub uprobes; do
		key=threadexit.$path
		opt=()
		[ "$path" = uprobes ] && opt=(--no-inject)
		GLIBC_TUNABLES=glibc.malloc.arena_max=64 ht "$key" -v "${opt[@]}" -f top -- "$TB/t_threads" 16
		check_rc "$key" 0 "$key: heaptrace ${opt[*]} -f top -- t_threads 16 exits 0"
		# allocs = 16 x (5000 + 500 + 500 + 50 + 25) of the program + 16 DTVs.
		# frees is not checked: glibc keeps 40 MiB of thread stacks, and the
		# DTVs of the stacks it gives back (how many depends on ulimit -s)
		# are freed too.
		expect_events "$key" allocs=97216 unmatched_frees=0 thread_exit_frees=144
		local l
		l=$(sed -n 's/^  losses: *//p' "$TMP/$key.out")
		report "$key: -f top says 'losses: none'" "$([ "$l" = none ] || echo "losses line: '${l:-<none>}'")"
	done
}

# ---------------------------------------------------------------------------
# t_ctor: allocations before main and after main returns.
scenario_ctor() {
	profile4 ctor 0 "$TB/t_ctor"
	expect4 ctor preinit_alloc 1  1500 1  1500  # .preinit_array: malloc(1500)
	expect4 ctor ctor_alloc    3 12963 3 12963  # constructor: 3 x malloc(4321)
	expect4 ctor ctor_freed    2  1998 0     0  # constructor: 2 x malloc(999), freed in main
	expect4 ctor main_alloc    1   100 1   100  # malloc(100)
	expect4 ctor dtor_alloc    1  2345 1  2345  # destructor: malloc(2345)
	absent4 ctor main_free
	leafset4 ctor
	no_loss_line ctor.inuse_space
}

# ---------------------------------------------------------------------------
# t_exit: exit(3), _exit(5), the command's stdout, -o and --collapsed.
scenario_exit() {
	profile4 exit 3 "$TB/t_exit"
	expect4 exit exit_keep    5 12500 5 12500  # 5 x malloc(2500) kept
	expect4 exit exit_freed   2  1400 0     0  # 2 x malloc(700), freed
	expect4 exit atexit_alloc 1  1357 1  1357  # atexit handler: malloc(1357)
	absent4 exit exit_release
	leafset4 exit
	no_loss_line exit.inuse_space

	# Profile on stdout: the command's stdout goes to heaptrace's stderr.
	local d=""
	grep -q 't_exit: stdout marker' "$TMP/exit.alloc_objects.out" &&
		d+="the command's output is in heaptrace's stdout (the profile)"$'\n'
	grep -q 't_exit: stdout marker' "$TMP/exit.alloc_objects.err" ||
		d+="the command's output is not in heaptrace's stderr"$'\n'
	report "exit: command stdout goes to stderr when the profile goes to stdout" "$d"

	# _exit(5) skips the atexit handler.
	ht exit_ -f collapsed --value alloc_space -- "$TB/t_exit" _exit
	check_rc exit_ 5 "exit: _exit(5) -> heaptrace exits 5"
	expect_leaf exit_ exit_keep 12500
	expect_leaf exit_ exit_freed 1400
	expect_leaf exit_ atexit_alloc 0

	# No "--": COMMAND is the first non-option, and what follows it, even
	# "-v", belongs to the command (t_exit -v is _exit(5)).
	ht exit_noddash -f collapsed --value alloc_space "$TB/t_exit" -v
	check_rc exit_noddash 5 "exit: heaptrace OPTS COMMAND -v (no --) passes -v to the command: exits 5"
	expect_leaf exit_noddash exit_keep 12500
	expect_leaf exit_noddash atexit_alloc 0

	# COMMAND is looked up in PATH.
	PATH="$TB:$PATH" ht exit_path -f collapsed --value inuse_objects -- t_exit
	check_rc exit_path 3 "exit: COMMAND found through PATH: exits 3"
	expect_leaf exit_path exit_keep 5

	# -o FILE: the profile goes to FILE, the command keeps its stdout.
	ht exit_o -o "$TMP/exit_o.prof" -f collapsed --value alloc_space -- "$TB/t_exit"
	check_rc exit_o 3 "exit: -o FILE run exits 3"
	d=""
	grep -q 't_exit: stdout marker' "$TMP/exit_o.out" ||
		d+="the command's output is not on stdout with -o FILE"$'\n'
	[ -s "$TMP/exit_o.prof" ] || d+="$TMP/exit_o.prof is empty or missing"$'\n'
	report "exit: -o FILE writes the profile to FILE, command stdout stays on stdout" "$d"
	cp "$TMP/exit_o.prof" "$TMP/exit_ofile.out" 2>/dev/null || : >"$TMP/exit_ofile.out"
	expect_leaf exit_ofile exit_keep 12500
	expect_leaf exit_ofile exit_freed 1400
	expect_leaf exit_ofile atexit_alloc 1357

	# --collapsed with no --value reports inuse_space.
	ht exit_c --collapsed -- "$TB/t_exit"
	check_rc exit_c 3 "exit: --collapsed run exits 3"
	expect_leaf exit_c exit_keep 12500
	expect_leaf exit_c exit_freed 0
	expect_leaf exit_c atexit_alloc 1357
	collapsed_wellformed exit_c
}

# ---------------------------------------------------------------------------
# t_failed: failing allocations count nothing; a failed realloc or
# reallocarray leaves the old block in use.
scenario_failed() {
	profile4 failed 0 "$TB/t_failed"
	expect4 failed fail_seed 1 123 1 123  # malloc(123), kept
	absent4 failed fail_malloc fail_calloc fail_realloc fail_reallocarray \
		fail_posix_memalign fail_aligned_alloc fail_valloc fail_pvalloc
	leafset4 failed
	# 1 allocation, no free of any kind.
	# 8 failures: one per allocating entry point, realloc and reallocarray included.
	expect_events failed.alloc_objects allocs=1 frees=0 unmatched_frees=0 failed_allocs=8
	# A failed allocation is an event, not a loss: no events line without -v.
	no_loss_line failed.inuse_space
}

# ---------------------------------------------------------------------------
# t_deep: an allocation 300 calls deep, past the 127 frames of a stack trace.
scenario_deep() {
	ht deep -f collapsed --value alloc_space -- "$TB/t_deep"
	check_rc deep 0 "deep: run exits 0"
	expect_leaf deep deep_leaf 4242     # malloc(4242) under 300 x recurse
	expect_leaf deep shallow_leaf 1717  # malloc(1717) from main
	leafset deep deep_leaf shallow_leaf
	no_loss_line deep
}

# ---------------------------------------------------------------------------
# t_signal: killed by SIGKILL (137) and SIGSEGV (139); profile still written.
scenario_signal() {
	ht sigkill_as -f collapsed --value alloc_space -- "$TB/t_signal"
	check_rc sigkill_as 137 "signal: SIGKILL -> heaptrace exits 137"
	expect_leaf sigkill_as sig_keep 2222   # 2 x malloc(1111)
	expect_leaf sigkill_as sig_freed 222   # malloc(222), freed
	ht sigkill_is -f collapsed --value inuse_space -- "$TB/t_signal"
	check_rc sigkill_is 137 "signal: SIGKILL -> heaptrace exits 137 (inuse_space run)"
	expect_leaf sigkill_is sig_keep 2222
	expect_leaf sigkill_is sig_freed 0
	ht sigsegv -f collapsed --value inuse_objects -- "$TB/t_signal" segv
	check_rc sigsegv 139 "signal: SIGSEGV -> heaptrace exits 139"
	expect_leaf sigsegv sig_keep 2
	expect_leaf sigsegv sig_freed 0
}
