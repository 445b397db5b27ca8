# shellcheck shell=bash
# Area "placement" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario placement: where the probes go (--probe-at).

# ---------------------------------------------------------------------------
# Probe placement (--probe-at=auto, the default) moves probes past leading
# instructions the kernel would single-step.  It must change nothing: for
# glibc, jemalloc and tcmalloc (preloaded), every entry point gives the same
# exact per-function sums as probes at the entries, and the known numbers.
# Placement is about uprobes: --no-inject keeps the in-process fast path
# (which takes the malloc family by default) out of it.
scenario_placement() {
	local lib name v d
	for lib in libc /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
		name=$(basename "$lib" | cut -d. -f1)
		if [ "$lib" != libc ] && [ ! -e "$lib" ]; then
			fail "placement: $lib is not installed" ""
			continue
		fi
		for v in alloc_space inuse_objects; do
			for at in auto entry; do
				if [ "$lib" = libc ]; then
					ht "pl.$name.$v.$at" -v --no-inject --probe-at=$at -f collapsed --value $v -- "$TB/t_entrypoints"
				else
					LD_PRELOAD=$lib ht "pl.$name.$v.$at" -v --no-inject --probe-at=$at -f collapsed --value $v -- "$TB/t_entrypoints"
				fi
			done
			d=$(rc_diag "pl.$name.$v.auto" 0)$(rc_diag "pl.$name.$v.entry" 0)
			if ! diff <(sums "pl.$name.$v.auto" | sort) <(sums "pl.$name.$v.entry" | sort) >"$TMP/pl.$name.$v.diff"; then
				d+="per-function sums differ (auto < > entry):"$'\n'"$(head -20 "$TMP/pl.$name.$v.diff")"
			fi
			[ -s "$TMP/pl.$name.$v.auto.out" ] || d+="empty profile"$'\n'
			report "placement: $name $v: --probe-at=auto and =entry give the same sums" "$d"
		done
		grep -q "allocator: .*${name}" "$TMP/pl.$name.alloc_space.auto.err" ||
			fail "placement: $name is the allocator traced" "$(grep allocator: "$TMP/pl.$name.alloc_space.auto.err")"
		# The entry points every allocator has, with the numbers of scenario_entrypoints.
		expect_leaf "pl.$name.alloc_space.auto" ep_malloc 4000
		expect_leaf "pl.$name.alloc_space.auto" ep_calloc 600
		expect_leaf "pl.$name.alloc_space.auto" ep_realloc_grow 5000
		expect_leaf "pl.$name.alloc_space.auto" ep_posix_memalign 2468
		expect_leaf "pl.$name.alloc_space.auto" ep_aligned_alloc 4096
		expect_leaf "pl.$name.inuse_objects.auto" ep_malloc 3
		expect_leaf "pl.$name.inuse_objects.auto" ep_valloc 1
	done
	# -v names each probe's function, offset, instruction and reason.
	d=""
	grep -q 'probe free .*= free+3 `je ' "$TMP/pl.libc.alloc_space.auto.err" ||
		d+="no 'free+3 \`je' line: $(grep 'probe free' "$TMP/pl.libc.alloc_space.auto.err")"$'\n'
	grep -q 'probe malloc .*= malloc+0 `push r12` (emulated ~0.65 us): entry: a push of a register' "$TMP/pl.libc.alloc_space.auto.err" ||
		d+="no 'malloc+0 push r12' line: $(grep 'probe malloc' "$TMP/pl.libc.alloc_space.auto.err")"$'\n'
	grep -q 'probe free .*= free+3 `je [^`]*` (emulated ~0.65 us): skips 1 instruction from `test rdi, rdi`' "$TMP/pl.libc.alloc_space.auto.err" ||
		d+="no 'free+3 je ... emulated' line: $(grep 'probe free' "$TMP/pl.libc.alloc_space.auto.err")"$'\n'
	grep -q 'probe free .*= free+0 `test rdi, rdi` (single-stepped ~13 us): entry (--probe-at=entry)' "$TMP/pl.libc.alloc_space.entry.err" ||
		d+="--probe-at=entry does not probe free+0: $(grep 'probe free' "$TMP/pl.libc.alloc_space.entry.err")"$'\n'
	report "placement: -v shows function, offset, instruction, cost and why" "$d"
}
