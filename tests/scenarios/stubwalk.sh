# shellcheck shell=bash
# Area "stubwalk" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# the stub's own stack walk (stub/unwind.c), which walks a recorded call's
# stack in the process instead of the BPF side.  Scenario stubwalk: it never
# faults the process (t_stubwalk: small thread stacks, deep recursion, signal
# handlers that malloc on the thread's stack and on an alternate one,
# makecontext coroutines, garbage in rbp), and it gives exactly the BPF
# walk's stacks and counters (HEAPTRACE_WALK=bpf leaves every walk to BPF,
# as before the stub walked), and --no-inject's.

# sw_events KEY: the events line without the counters of who walked, and of
# the ring that carried the events (HEAPTRACE_WALK=bpf: the stub does not
# walk, so it does not batch either).
sw_events() {
	grep -m1 '^heaptrace: events:' "$TMP/$1.err" | tr ' ' '\n' | grep -vE '^(stub_walks|ring_)' | tr '\n' ' '
}

# sw_same KEY_A KEY_B WHAT: the same collapsed profiles (sorted) and the same events.
sw_same() {
	local d
	d=$(rc_diag "$1" 0)$(rc_diag "$2" 0)
	[ -s "$TMP/$1.out" ] || d+="empty profile"$'\n'
	if ! diff <(sort "$TMP/$1.out") <(sort "$TMP/$2.out") >"$TMP/$1.diff"; then
		d+="profiles differ (< $1, > $2):"$'\n'"$(head -8 "$TMP/$1.diff")"$'\n'
	fi
	[ "$(sw_events "$1")" = "$(sw_events "$2")" ] ||
		d+="events differ:"$'\n'"< $(sw_events "$1")"$'\n'"> $(sw_events "$2")"$'\n'
	report "$3" "$d"
}

# sw_walked KEY: the stub walked stacks (else the comparison would compare BPF with BPF).
sw_walked() {
	local n
	n=$(rl_events_num "$1" stub_walks)
	report "$1: the stub walked stacks in the process (stub_walks=$n)" \
		"$([ "${n:-0}" -gt 0 ] || echo "stub_walks=${n:-?}, want > 0"$'\n'"$(ctx "$1")")"
}

scenario_stubwalk() {
	local t mode key opts name d n
	# Never a fault: every kind of stack, both builds, both walks; the target checks its blocks.
	for t in "$TB/t_stubwalk" "$TB/nofp/t_stubwalk"; do
		for mode in auto fp; do
			name=$(basename "$(dirname "$t")")_$mode
			key=sw_safe_$name
			ht $key -v --unwind $mode -f collapsed --value alloc_objects -- "$t"
			d=$(rc_diag $key 0)
			grep -q '^ok$' "$TMP/$key.err" || d+="the target did not end with ok: $(grep -E '^(ok|failed)$' "$TMP/$key.err")"$'\n'
			report "stubwalk: $(rel "$t") --unwind $mode: exits 0, every block intact" "$d"
			sw_walked $key
			n=$(rl_events_num $key stub_walks_handed)
			report "$key: the alternate signal stack's and the coroutines' stacks are left to BPF (stub_walks_handed=$n)" \
				"$([ "${n:-0}" -ge 20 ] || echo "stub_walks_handed=${n:-?}, want >= 20")"
			expect_leaf $key rbp_alloc 35
			expect_leaf $key deep 5
			expect_leaf $key thread_alloc 200
			expect_leaf $key sig_alloc 20
			expect_leaf $key co_alloc 40
		done
	done
	# The same stacks and counters as the BPF walk's, frame for frame (ASLR off for both).
	for t in nofp/t_deep nofp/t_entrypoints nofp/t_shop nofp/t_threads nofp/t_sighandler t_sighandler t_shop \
		"t_sighandler altstack" "t_sighandler lostframe" t_samesp nofp/t_samesp; do
		for mode in auto fp; do
			[ $mode = fp ] && [[ "$t" != t_* ]] && continue
			opts=(-v --unwind $mode -f collapsed)
			[ $mode = auto ] && opts=(-v -f collapsed)
			name=${t//\//_}
			name=${name// /_}_$mode
			for w in stub bpf; do
				echo "HEAPTRACE_WALK=$w setarch -R heaptrace ${opts[*]} -- build/tests/$t" >"$TMP/sw_$w.$name.cmd"
				# shellcheck disable=SC2086
				HEAPTRACE_WALK=$w timeout -k 5 "$(tmo)" setarch x86_64 -R "$HT" "${opts[@]}" -- "$TB"/$t \
					>"$TMP/sw_$w.$name.out" 2>"$TMP/sw_$w.$name.err" </dev/null
				echo $? >"$TMP/sw_$w.$name.rc"
			done
			sw_same sw_stub.$name sw_bpf.$name "stubwalk: $t --unwind $mode: the stub's walk = the BPF walk, stacks and events"
			sw_walked sw_stub.$name
		done
	done
	# The thread's memo of its last walk: walks from the same registers whose
	# stacks differ above (t_samesp), each stack its own bytes.
	for key in sw_stub.t_samesp_auto sw_stub.t_samesp_fp sw_stub.nofp_t_samesp_auto; do
		uw_expect_stack $key "main;near_a;leaf" 20000 "$key: main;near_a;leaf = 20000 (200 x 100)"
		uw_expect_stack $key "main;near_b;leaf" 40000 "$key: main;near_b;leaf = 40000 (200 x 200)"
		uw_expect_stack $key "main;far_a;mid1;mid2;leaf" 60000 "$key: main;far_a;mid1;mid2;leaf = 60000 (200 x 300)"
		uw_expect_stack $key "main;far_b;mid1;mid2;leaf" 80000 "$key: main;far_b;mid1;mid2;leaf = 80000 (200 x 400)"
	done
	# And --no-inject's (uprobes, the BPF walk from the return probe).
	key=sw_noinj
	HEAPTRACE_WALK=stub timeout -k 5 "$(tmo)" setarch x86_64 -R "$HT" --no-inject -v -f collapsed -- "$TB/nofp/t_shop" \
		>"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
	d=$(rc_diag $key 0)
	diff <(sort "$TMP/sw_stub.nofp_t_shop_auto.out") <(sort "$TMP/$key.out") >/dev/null ||
		d+="profiles differ: $(diff <(sort "$TMP/sw_stub.nofp_t_shop_auto.out") <(sort "$TMP/$key.out") | head -6)"
	report "stubwalk: nofp/t_shop: the stub's walk = --no-inject's, line for line" "$d"
}
