# shellcheck shell=bash
# Area "attach" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario attach: heaptrace -p on a running target.

# ---------------------------------------------------------------------------
# -p mode with t_wait.  Before attach: pre_alloc 10 x 512.  Traced:
#   post_alloc 6 x 640, 2 freed (post_free)  -> alloc 6/3840, in use 4/2560
#   post_realloc_pre: realloc(pre block, 1500) -> alloc 1/1500, in use 1/1500,
#                                                 1 unmatched free
#   post_free_pre frees 3 pre blocks            -> 3 unmatched frees
#   free(NULL)                                  -> nothing
# so allocs=7, frees=2, unmatched_frees=4; pre_alloc is never seen.
# After release: final_churn 3 x malloc(77), freed (alloc 3/231), counted only
# while heaptrace is still attached.
scenario_attach() {
	# Without -v: one line says tracing has begun (scripts wait for it); -q: none.
	local sp d
	sleep 60 &
	sp=$!
	# Attached before the loader mapped libc, sleep has no allocator yet (a loaded CI machine did that).
	wait_for "/proc/$sp/maps" 'libc\.so' 10 "$sp"
	ht attach_line -d 1 -o "$TMP/attach_line.heap" -p "$sp"
	ht attach_quiet -q -d 1 -o "$TMP/attach_quiet.heap" -p "$sp"
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	d=$(rc_diag attach_line 0)$(rc_diag attach_quiet 0)
	[ "$(grep -c '' "$TMP/attach_line.err")" = 1 ] &&
		grep -qE "^heaptrace: tracing PID $sp \(sleep\), [1-9][0-9]* probes\$" "$TMP/attach_line.err" ||
		d+="stderr without -v: $(cat "$TMP/attach_line.err")"$'\n'
	[ -s "$TMP/attach_quiet.err" ] && d+="stderr with -q: $(cat "$TMP/attach_quiet.err")"$'\n'
	report "attach: -p says 'heaptrace: tracing PID N (sleep), M probes' once without -v; -q says nothing" "$d"

	# Stopped by SIGINT, inuse_space.
	if pstart attach_int -f collapsed --value inuse_space; then
		pfinish attach_int INT
		expect_leaf attach_int post_alloc 2560
		expect_leaf attach_int post_realloc_pre 1500
		leafset attach_int post_alloc post_realloc_pre
		expect_events attach_int allocs=7 frees=2 unmatched_frees=4
	fi

	# Stopped by --duration while the target is alive, alloc_objects.
	if pstart attach_dur -d 4 -f collapsed --value alloc_objects; then
		pfinish attach_dur DURATION
		expect_leaf attach_dur post_alloc 6
		expect_leaf attach_dur post_realloc_pre 1
		leafset attach_dur post_alloc post_realloc_pre
		expect_events attach_dur unmatched_frees=4
	fi

	# Stopped by the process exiting, alloc_space.
	if pstart attach_exit -f collapsed --value alloc_space; then
		pfinish attach_exit EXIT
		expect_leaf attach_exit post_alloc 3840
		expect_leaf attach_exit post_realloc_pre 1500
		expect_leaf attach_exit final_churn 231
		leafset attach_exit post_alloc post_realloc_pre final_churn
		expect_events attach_exit unmatched_frees=4
	fi

	# Stopped by SIGTERM, pprof to a file: header totals
	# in use 4 + 1 = 5 objects, 2560 + 1500 = 4060 bytes;
	# allocated 6 + 1 = 7 objects, 3840 + 1500 = 5340 bytes.
	if pstart attach_term -o "$TMP/attach_term.prof"; then
		pfinish attach_term TERM
		pprof_header "$TMP/attach_term.prof" "attach: -p pprof header totals" 5 4060 7 5340
	fi
}
