#!/bin/bash
# heaptrace's per-allocation overhead, as ratios to floors and peers, in one run.
#
# Every configuration runs bench/churn (a malloc/free ring at the bottom of D
# frames) and takes churn's own ns_per_pair, which times only its loop, so
# tool start-up and profile writing are not counted.  Configurations run
# round-robin, R rounds, and the table reports each one's median: on a noisy
# 2-core machine a burst of load then hits one run of every configuration
# rather than all runs of one.  Ratios are of medians.
#
# Floors, at the very sites heaptrace chooses (heaptrace --list-probes):
#   trap floor        plain tracefs uprobes, no BPF: the kernel's trap cost
#   trap+stack floor  BPF that only walks the user stack at the return probe
#   entry floor       plain tracefs uprobes at function entries, where
#                     memleak-style tools probe (some entries are single-stepped)
#   entry-only floor  BPF that does nothing, at heaptrace's entry sites only,
#                     no return probes: what a tool that decides everything at
#                     the entry pays at least; heaptrace --sample-rate's
#                     unsampled calls skip their returns (uprobe sessions) and
#                     come close to it
#
# Environment: BENCH_PAIRS (200000), BENCH_RUNS (5), BENCH_DEPTH (8),
# BENCH_THREADS (1), BENCH_LIVE_SET (1024), BENCH_SIZE (64),
# BENCH_LIVE (1000000) and BENCH_STACKS (100000) for the profile-size test,
# BENCH_STARTUP_RUNS (11) for start-up, BENCH_PEERS=0 to skip bpftrace and
# heaptrack, BENCH_HEAPTRACE (build/heaptrace) to measure another build
# with the same script, BENCH_RESET_CALLS (5000) and BENCH_RESET_OTHERS
# (60000) for the context resets, BENCH_ONLY=resets to measure those alone
# (BENCH_ONLY=startup: start-up alone, BENCH_BASE's alternating with it),
# BENCH_CONFIGS="bare heaptrace_ff ..." to run only those rows of the table,
# BENCH_BASE=PATH/heaptrace to add rows under another build (e.g. main's:
# -f html, to see what the timeline's RSS sampling costs; exact CFI and
# --unwind fp at depths 8 and 32, against the stub's walk in the process).
# The *_kwalk rows leave the stack walk to the BPF side (HEAPTRACE_WALK=bpf).
#
# tracefs uprobe events are system-wide and outlive us: every exit path,
# including Ctrl-C and errors, goes through cleanup, which removes them.
set -u

cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

PAIRS=${BENCH_PAIRS:-200000}
RUNS=${BENCH_RUNS:-5}
DEPTH=${BENCH_DEPTH:-8}
THREADS=${BENCH_THREADS:-1}
LIVE_SET=${BENCH_LIVE_SET:-1024}
SIZE=${BENCH_SIZE:-64}
LIVE_N=${BENCH_LIVE:-1000000}
LIVE_STACKS=${BENCH_STACKS:-100000}
PEERS=${BENCH_PEERS:-1}
STARTUP_N=${BENCH_STARTUP_RUNS:-11}

RESET_CALLS=${BENCH_RESET_CALLS:-5000}
RESET_OTHERS=${BENCH_RESET_OTHERS:-60000}
ONLY=${BENCH_ONLY:-}

HT=${BENCH_HEAPTRACE:-$PWD/build/heaptrace}
BASE_HT=${BENCH_BASE:-}
CHURN=$PWD/build/bench/churn
RESETS=$PWD/build/bench/resets
FLOOR=$PWD/build/bench/floor
CHURN_ARGS=(--pairs "$PAIRS" --live-set "$LIVE_SET" --depth "$DEPTH" --threads "$THREADS" --size "$SIZE")
CHURN_ARGS16=(--pairs "$PAIRS" --live-set "$LIVE_SET" --depth 16 --threads "$THREADS" --size "$SIZE")
CHURN_ARGS32=(--pairs "$PAIRS" --live-set "$LIVE_SET" --depth 32 --threads "$THREADS" --size "$SIZE")
# A custom allocator with register arguments, leaves: pool_alloc(pool, size) / pool_free(pool, ptr, size).
POOL_ARGS=("${CHURN_ARGS[@]}" --pool)
POOL_SPEC=(--no-libc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2')
RUN_TIMEOUT=300   # seconds: a wedged tool must not hang the bench

TRACEFS=/sys/kernel/tracing
GROUP=heaptrace_bench
TMP=$(mktemp -d /tmp/heaptrace-bench.XXXXXX)
BG_PIDS=()        # background processes we started, ended by cleanup
ORIG_TRACING_ON=  # restored whenever our events go
NS=               # run_config's result

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

# ---------------------------------------------------------------- tracefs floors

# Names of our events currently defined, one per line.
our_events() {
	[ -r "$TRACEFS/uprobe_events" ] || return 0
	sed -n "s|^[pr]:$GROUP/\([^ ]*\) .*|\1|p" "$TRACEFS/uprobe_events"
}

uprobes_remove() {
	[ -r "$TRACEFS/uprobe_events" ] || return 0
	# An enabled event cannot be deleted (EBUSY): disable the group first.
	[ -e "$TRACEFS/events/$GROUP/enable" ] && echo 0 > "$TRACEFS/events/$GROUP/enable" 2>/dev/null
	local ev
	for ev in $(our_events); do
		echo "-:$GROUP/$ev" >> "$TRACEFS/uprobe_events" 2>/dev/null
	done
	[ -n "$ORIG_TRACING_ON" ] && echo "$ORIG_TRACING_ON" > "$TRACEFS/tracing_on"
}

# uprobes_add PROBES_FILE: an entry event at each site, a return event at each
# alloc site, as heaptrace places its programs; tracing off, so a hit costs the
# trap and the event dispatch and writes nothing.
uprobes_add() {
	local func path off delta kind rest
	while read -r func path off delta kind rest; do
		echo "p:$GROUP/$func $path:$off" >> "$TRACEFS/uprobe_events" || return 1
		if [ "$kind" = alloc ]; then
			echo "r:$GROUP/${func}_ret $path:$off" >> "$TRACEFS/uprobe_events" || return 1
		fi
	done < "$1"
	echo 0 > "$TRACEFS/tracing_on"
	echo 1 > "$TRACEFS/events/$GROUP/enable"
}

# Hits of our malloc event (or of EVENT) so far (uprobe_profile: event, hits, misses).
malloc_hits() {
	awk -v ev="${1:-malloc}" '$2 == ev { print $3 }' "$TRACEFS/uprobe_profile" 2>/dev/null | head -1
}

cleanup() {
	local pid child
	for pid in "${BG_PIDS[@]}"; do
		# heaptrace's launched churn would outlive it, holding its blocks, paused.
		for child in $(pgrep -P "$pid"); do
			kill -KILL "$child" 2>/dev/null
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	uprobes_remove
	if [ -n "$(our_events)" ]; then
		echo "bench: WARNING: could not remove tracefs events: $(our_events | tr '\n' ' ')" >&2
		rm -rf "$TMP"
		exit 1
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- setup

[ "$(id -u)" -eq 0 ] || die "needs root (BPF, tracefs)"
for f in "$HT" "$CHURN" "$FLOOR" "$RESETS"; do
	[ -x "$f" ] || die "$f missing: run 'make bench'"
done
if [ ! -w "$TRACEFS/uprobe_events" ]; then
	mount -t tracefs nodev "$TRACEFS" 2>/dev/null || die "cannot mount tracefs on $TRACEFS"
fi
ORIG_TRACING_ON=$(cat "$TRACEFS/tracing_on")
# Left over by a run killed with SIGKILL: they would trap every libc user.
uprobes_remove

"$HT" --list-probes "$CHURN" > "$TMP/probes.auto" || die "heaptrace --list-probes failed"
"$HT" --list-probes --probe-at=entry "$CHURN" > "$TMP/probes.entry" || die "heaptrace --list-probes --probe-at=entry failed"
LIBC=$(awk '$1 == "malloc" { print $2 }' "$TMP/probes.auto")
"$HT" --list-probes "${POOL_SPEC[@]}" "$CHURN" > "$TMP/probes.pool" || die "heaptrace --list-probes ${POOL_SPEC[*]} failed"
[ -n "$LIBC" ] || die "no malloc probe in heaptrace --list-probes"

# A memleak-equivalent bpftrace script: the size at malloc entry per thread;
# at return, address -> size and bytes per user stack; forget the block at free.
BT_SCRIPT="
uprobe:$LIBC:malloc /pid == cpid/ { @size[tid] = arg0; }
uretprobe:$LIBC:malloc /pid == cpid/ {
	\$s = @size[tid];
	delete(@size[tid]);
	if (retval != 0) {
		@addr[retval] = \$s;
		@bytes[ustack] = sum(\$s);
	}
}
uprobe:$LIBC:free /pid == cpid/ { delete(@addr[arg0]); }
END { clear(@size); clear(@addr); clear(@bytes); }
"

# ---------------------------------------------------------------- one run

# run_config NAME: one churn run under NAME; sets NS to its ns_per_pair, or
# fails with the reason in $TMP/NAME.err.  Not run in a subshell: the events it
# adds must be visible to cleanup if we are interrupted.
run_config() {
	local name=$1 out=$TMP/$1.out err=$TMP/$1.err rc=0 hits0 hits1
	: > "$out"
	case $name in
	bare)
		timeout $RUN_TIMEOUT "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	trap|entry)
		local probes=$TMP/probes.auto
		[ "$name" = entry ] && probes=$TMP/probes.entry
		uprobes_add "$probes" 2> "$err" || { uprobes_remove; return 1; }
		hits0=$(malloc_hits)
		timeout $RUN_TIMEOUT "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2>> "$err" || rc=$?
		hits1=$(malloc_hits)
		uprobes_remove
		# The floor is only a floor if its probes really fired.
		if [ "$rc" -eq 0 ] && [ $(( ${hits1:-0} - ${hits0:-0} )) -lt "$PAIRS" ]; then
			echo "malloc uprobe fired $(( ${hits1:-0} - ${hits0:-0} )) times for $PAIRS pairs" >> "$err"
			rc=1
		fi ;;
	stack)
		timeout $RUN_TIMEOUT "$FLOOR" "$TMP/probes.auto" "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	entryonly)
		timeout $RUN_TIMEOUT "$FLOOR" --entry-only "$TMP/probes.auto" "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace)
		timeout $RUN_TIMEOUT "$HT" -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_html)
		# -f html: the timeline's sampler reads the BPF totals and /proc/PID/status (RSS) 25 times a second.
		timeout $RUN_TIMEOUT "$HT" -f html -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_html_base)
		# The same under BENCH_BASE (another build, e.g. one without RSS sampling): what a change to the sampler costs.
		timeout $RUN_TIMEOUT "$BASE_HT" -f html -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_mmap | heaptrace_s512k_mmap)
		# --mmap: the mapping syscalls' tracepoints; churn's steady loop makes none, so this is their idle cost.
		timeout $RUN_TIMEOUT "$HT" --mmap $([ $name = heaptrace_s512k_mmap ] && echo --sample-rate 512k) \
			-o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_noinject)
		timeout $RUN_TIMEOUT "$HT" --no-inject -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_s512k_noinject)
		timeout $RUN_TIMEOUT "$HT" --no-inject --sample-rate 512k -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_entry)
		timeout $RUN_TIMEOUT "$HT" --no-inject --probe-at=entry -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_fp)
		timeout $RUN_TIMEOUT "$HT" --unwind fp -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_nostamp)
		# The ring's events without the time of their call (HEAPTRACE_STAMP=0): the drain's pass time, as before.
		HEAPTRACE_STAMP=0 timeout $RUN_TIMEOUT "$HT" -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" ||
			rc=$? ;;
	heaptrace_sites | heaptrace_fp_sites)
		# Exact without the ring: one record site (a trap) per call, as before batching (HEAPTRACE_BATCH=0).
		local smode=auto
		[ $name = heaptrace_fp_sites ] && smode=fp
		HEAPTRACE_BATCH=0 timeout $RUN_TIMEOUT "$HT" --unwind $smode -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_kwalk | heaptrace_fp_kwalk | dwarf32_kwalk | fp32_kwalk)
		# The stack walked by the BPF side, as before the stub walked it (HEAPTRACE_WALK=bpf).
		local kargs=("${CHURN_ARGS[@]}") kmode=auto
		case $name in *32*) kargs=("${CHURN_ARGS32[@]}") ;; esac
		case $name in *fp*) kmode=fp ;; esac
		HEAPTRACE_WALK=bpf timeout $RUN_TIMEOUT "$HT" --unwind $kmode -o /dev/null -- "$CHURN" "${kargs[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	dwarf32 | fp32)
		timeout $RUN_TIMEOUT "$HT" --unwind "${name%32}" -o /dev/null -- "$CHURN" "${CHURN_ARGS32[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_base | heaptrace_fp_base | dwarf32_base | fp32_base)
		# BENCH_BASE's build (e.g. main's) in the same rounds.
		local bargs=("${CHURN_ARGS[@]}") bmode=auto
		case $name in *32*) bargs=("${CHURN_ARGS32[@]}") ;; esac
		case $name in *fp*) bmode=fp ;; esac
		timeout $RUN_TIMEOUT "$BASE_HT" --unwind $bmode -o /dev/null -- "$CHURN" "${bargs[@]}" > "$out" 2> "$err" || rc=$? ;;
	dwarf16|fp16)
		# The CFI walk against the frame-pointer walk at depth 16 (churn keeps frame pointers, so both are complete).
		timeout $RUN_TIMEOUT "$HT" --unwind "${name%16}" -o /dev/null -- "$CHURN" "${CHURN_ARGS16[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_noinject_base)
		timeout $RUN_TIMEOUT "$BASE_HT" --no-inject -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_s512k_base)
		timeout $RUN_TIMEOUT "$BASE_HT" --sample-rate 512K -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_s512k | heaptrace_s64k | heaptrace_s4k)
		timeout $RUN_TIMEOUT "$HT" --sample-rate "${name#heaptrace_s}" -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_s512k_kid | heaptrace_s512k_kid_noinject)
		# churn's loop in a forked child while its parent waits (a pre-fork worker), both followed:
		# the fast path gives the child a stub of its own; with uprobes, the parent's link on the
		# same probes asks for every call's return (docs/process-trees.md).
		timeout $RUN_TIMEOUT "$HT" $([ $name = heaptrace_s512k_kid_noinject ] && echo --no-inject) \
			--sample-rate 512k --follow-fork -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" --fork \
			> "$out" 2> "$err" || rc=$? ;;
	heaptrace_s512k_exec)
		# churn executed by a followed shell's child: the new image gets a stub of its own once
		# its loader is done (docs/fast-path.md); before it had uprobes, and the shell's link
		# asked for every call's return (12,089-25,588 ns a pair).
		timeout $RUN_TIMEOUT "$HT" --sample-rate 512k --follow-fork -o /dev/null -- \
			sh -c '"$0" "$@"; true' "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_exec)
		# The same exact: the new image's stub walks with CFI tables and batches in a ring of its own.
		timeout $RUN_TIMEOUT "$HT" --follow-fork -o /dev/null -- \
			sh -c '"$0" "$@"; true' "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_ff)
		timeout $RUN_TIMEOUT "$HT" --follow-fork -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrace_s512k_ff | heaptrace_s512k_ff_noinject)
		# --follow-fork, churn alone on its probes: with uprobes, sessions skip the unsampled returns.
		timeout $RUN_TIMEOUT "$HT" $([ $name = heaptrace_s512k_ff_noinject ] && echo --no-inject) \
			--sample-rate 512k --follow-fork -o /dev/null -- "$CHURN" "${CHURN_ARGS[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	pool_bare)
		timeout $RUN_TIMEOUT "$CHURN" "${POOL_ARGS[@]}" > "$out" 2> "$err" || rc=$? ;;
	pool_trap)
		# The trap floor at the sites heaptrace chooses for pool_alloc and pool_free.
		uprobes_add "$TMP/probes.pool" 2> "$err" || { uprobes_remove; return 1; }
		hits0=$(malloc_hits pool_alloc)
		timeout $RUN_TIMEOUT "$CHURN" "${POOL_ARGS[@]}" > "$out" 2>> "$err" || rc=$?
		hits1=$(malloc_hits pool_alloc)
		uprobes_remove
		if [ "$rc" -eq 0 ] && [ $(( ${hits1:-0} - ${hits0:-0} )) -lt "$PAIRS" ]; then
			echo "pool_alloc uprobe fired $(( ${hits1:-0} - ${hits0:-0} )) times for $PAIRS pairs" >> "$err"
			rc=1
		fi ;;
	pool_heaptrace | pool_heaptrace_noinject | pool_heaptrace_s512k | pool_heaptrace_s512k_noinject)
		local popts=("${POOL_SPEC[@]}")
		case $name in *noinject) popts+=(--no-inject) ;; esac
		case $name in *s512k*) popts+=(--sample-rate 512k) ;; esac
		timeout $RUN_TIMEOUT "$HT" -v "${popts[@]}" -o /dev/null -- "$CHURN" "${POOL_ARGS[@]}" > "$out" 2> "$err" || rc=$?
		# Exact: every pair recorded (the warm-up's too), none lost; through the stub unless --no-inject.
		case $name in
		pool_heaptrace) grep -q " allocs=$((PAIRS + LIVE_SET + 10000)) frees=$((PAIRS + 10000)) " "$err" ||
			{ echo "not every pool pair recorded: $(grep 'events:' "$err" | cut -c1-80)" >> "$err"; rc=1; } ;;
		esac
		case $name in
		*noinject) ;;
		*) grep -q 'probe pool_alloc .*the fast path (stub)' "$err" && grep -q 'probe pool_free .*the fast path (stub)' "$err" ||
			{ echo "pool_alloc and pool_free not both through the stub" >> "$err"; rc=1; } ;;
		esac ;;
	bpftrace)
		timeout $RUN_TIMEOUT bpftrace -o "$TMP/bpftrace.maps" -e "$BT_SCRIPT" \
			-c "$CHURN ${CHURN_ARGS[*]}" > "$out" 2> "$err" || rc=$? ;;
	heaptrack)
		rm -rf "$TMP/heaptrack"
		timeout $RUN_TIMEOUT heaptrack -o "$TMP/heaptrack/churn" "$CHURN" "${CHURN_ARGS[@]}" \
			> "$out" 2> "$err" || rc=$? ;;
	esac
	NS=$(awk '$1 == "ns_per_pair" { print $2 }' "$out")
	if [ "$rc" -ne 0 ] || [ -z "$NS" ]; then
		echo "exit $rc" >> "$err"
		return 1
	fi
}

# ---------------------------------------------------------------- context resets

# --reset-sym's cost per call (bench/resets.c): a reset of an empty context
# and of one with 64 live blocks from 4 stacks, while RESET_OTHERS blocks of
# 600 other contexts fill the arena maps, against the trap floor (a plain
# tracefs uprobe at the same site) and no tracing.  Round-robin, median of
# RUNS; CPU time of the thread, so load on the machine does not count.
RESET_SPEC=(--no-libc --sym 'ctx_alloc:size=arg2,arena=arg1' --reset-sym 'ctx_reset:arena=arg1')
reset_bench() {
	local r c out err rc probes=$TMP/probes.reset hits0 hits1 k
	"$HT" --list-probes "${RESET_SPEC[@]}" "$RESETS" | awk '$1 == "ctx_reset"' > "$probes"
	[ -s "$probes" ] || { note "no ctx_reset probe in heaptrace --list-probes: resets skipped"; return 1; }
	note "context resets, $RUNS runs of $RESET_CALLS calls, $RESET_OTHERS other blocks"
	for ((r = 1; r <= RUNS; r++)); do
		for c in bare trap heaptrace; do
			out=$TMP/reset_$c.out err=$TMP/reset_$c.err rc=0
			local args=(--calls "$RESET_CALLS" --others "$RESET_OTHERS")
			case $c in
			bare) timeout $RUN_TIMEOUT "$RESETS" "${args[@]}" > "$out" 2> "$err" || rc=$? ;;
			trap)
				uprobes_add "$probes" 2> "$err" || { uprobes_remove; continue; }
				hits0=$(awk '$2 == "ctx_reset" { print $3 }' "$TRACEFS/uprobe_profile")
				timeout $RUN_TIMEOUT "$RESETS" "${args[@]}" > "$out" 2>> "$err" || rc=$?
				hits1=$(awk '$2 == "ctx_reset" { print $3 }' "$TRACEFS/uprobe_profile")
				uprobes_remove
				# A floor only if its probe fired: 2 x calls resets.
				[ $(( ${hits1:-0} - ${hits0:-0} )) -ge $((2 * RESET_CALLS)) ] || rc=1 ;;
			heaptrace)
				timeout $RUN_TIMEOUT "$HT" -v "${RESET_SPEC[@]}" -o /dev/null -- "$RESETS" "${args[@]}" \
					> "$out" 2> "$err" || rc=$?
				# Every reset seen, none of its pairs lost (older builds have no arena_index_lost).
				grep -q " arena_resets=$((2 * RESET_CALLS)) " "$err" && ! grep -q "arena_index_lost=[1-9]" "$err" ||
					rc=1 ;;
			esac
			if [ "$rc" -ne 0 ]; then
				note "reset run $c failed: $(tail -2 "$err" | tr '\n' ' ')"
				continue
			fi
			for k in empty live; do
				awk -v k="${k}_ns_per_call" '$1 == k { print $2 }' "$out" >> "$TMP/results.reset_${c}_$k"
			done
		done
	done
	echo "context resets (--reset-sym; $RESET_OTHERS blocks of 600 other contexts live; thread CPU time, median of $RUNS):"
	printf '  %-34s %10s %10s %12s\n' "reset of a context, ns per call" "bare" "trap floor" "heaptrace"
	for k in empty live; do
		local b t h
		b=$( [ -s "$TMP/results.reset_bare_$k" ] && median < "$TMP/results.reset_bare_$k")
		t=$( [ -s "$TMP/results.reset_trap_$k" ] && median < "$TMP/results.reset_trap_$k")
		h=$( [ -s "$TMP/results.reset_heaptrace_$k" ] && median < "$TMP/results.reset_heaptrace_$k")
		printf '  %-34s %10s %10s %12s\n' "$([ $k = empty ] && echo "empty" || echo "64 live blocks, 4 stacks")" \
			"${b:--}" "${t:--}" "${h:--}"
		target "$k: heaptrace / trap floor (plain uprobe)" "$(ratio "${h:-}" "${t:-}")" "<=" 1.5
	done
	echo
}

# ---------------------------------------------------------------- machine

# Start-up: heaptrace -o /dev/null /bin/true from exec to exit (bash's
# time: wall, and heaptrace's CPU), then where one -v run spent it.  With
# BENCH_BASE, that build's runs alternate with this one's.
startup_bench() {
	local r
	note "start-up: heaptrace /bin/true, $STARTUP_N runs${BASE_HT:+, alternating with BENCH_BASE}"
	: > "$TMP/startup.times"
	: > "$TMP/startup_base.times"
	: > "$TMP/startup_ni.times"
	: > "$TMP/startup_ni_base.times"
	for ((r = 1; r <= STARTUP_N; r++)); do
		{ TIMEFORMAT='%R %U %S'; time "$HT" -o /dev/null /bin/true > /dev/null 2>&1; } 2>> "$TMP/startup.times"
		[ -z "$BASE_HT" ] ||
			{ TIMEFORMAT='%R %U %S'; time "$BASE_HT" -o /dev/null /bin/true > /dev/null 2>&1; } 2>> "$TMP/startup_base.times"
		# --no-inject: the uprobe programs, from their own object (inlined: more for the verifier).
		{ TIMEFORMAT='%R %U %S'; time "$HT" --no-inject -o /dev/null /bin/true > /dev/null 2>&1; } 2>> "$TMP/startup_ni.times"
		[ -z "$BASE_HT" ] || { TIMEFORMAT='%R %U %S'; time "$BASE_HT" --no-inject -o /dev/null /bin/true > /dev/null 2>&1; } \
			2>> "$TMP/startup_ni_base.times"
	done
	STARTUP_NI=$(awk '{ printf "%.1f\n", $1 * 1000 }' "$TMP/startup_ni.times" | median)
	STARTUP_NI_BASE=$(awk '{ printf "%.1f\n", $1 * 1000 }' "$TMP/startup_ni_base.times" | median)
	STARTUP_WALL=$(awk '{ printf "%.1f\n", $1 * 1000 }' "$TMP/startup.times" | median)
	STARTUP_CPU=$(awk '{ printf "%.1f\n", ($2 + $3) * 1000 }' "$TMP/startup.times" | median)
	STARTUP_BASE=$(awk '{ printf "%.1f\n", $1 * 1000 }' "$TMP/startup_base.times" | median)
	"$HT" -v -o /dev/null /bin/true > /dev/null 2> "$TMP/startup.err"
	PHASES=$(sed -n 's/^heaptrace: phases: //p' "$TMP/startup.err")
	VERIFIER=$(sed -n 's/^heaptrace: verifier: //p' "$TMP/startup.err" | paste -sd ';' -)
	SMALL_KMEM=$(sed -n 's/^heaptrace: kernel memory: //p' "$TMP/startup.err")
}

startup_print() {
	echo "start-up (heaptrace -o /dev/null /bin/true, median of $STARTUP_N runs):"
	target "wall, ms" "${STARTUP_WALL:--}" "<=" 150
	[ -z "$BASE_HT" ] || printf '  %-44s %8s   (this build / it: %s)\n' "wall, BENCH_BASE's build (alternating), ms" \
		"${STARTUP_BASE:-n/a}" "$(ratio "${STARTUP_WALL:-}" "${STARTUP_BASE:-}")"
	printf '  %-44s %8s\n' "heaptrace's CPU (user + system), ms" "${STARTUP_CPU:-n/a}"
	printf '  %-44s %8s\n' "wall, --no-inject, ms" "${STARTUP_NI:-n/a}"
	[ -z "$BASE_HT" ] || printf '  %-44s %8s   (this build / it: %s)\n' "wall, --no-inject, BENCH_BASE's build, ms" \
		"${STARTUP_NI_BASE:-n/a}" "$(ratio "${STARTUP_NI:-}" "${STARTUP_NI_BASE:-}")"
	printf '  %-44s %s\n' "phases of one -v run" "${PHASES:-n/a}"
	printf '  %-44s %s\n' "the verifier, per program (same run)" "${VERIFIER:-n/a}"
	target "kernel memory of /bin/true's maps, MiB" "$(echo "$SMALL_KMEM" | sed -n 's/^\([0-9.]*\) MiB.*/\1/p')" "<=" 16
	printf '  %-44s %s\n' "the -v line" "${SMALL_KMEM:-n/a}"
}
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>/dev/null | head -1)
echo "heaptrace bench, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), kernel $(uname -r), $glibc"
echo "churn: $PAIRS malloc+free pairs, live set $LIVE_SET, depth $DEPTH, $THREADS thread(s), $SIZE bytes; median of $RUNS runs, round-robin"
echo "probes (auto):  $(awk '{ printf "%s%s ", $1, $4 }' "$TMP/probes.auto")"
echo "probes (entry): $(awk '{ printf "%s%s ", $1, $4 }' "$TMP/probes.entry")"
"$HT" -v --sample-rate 512K -o /dev/null -- "$CHURN" --pairs 1000 > /dev/null 2> "$TMP/sampling.err"
echo "--sample-rate: $(sed -n 's/^heaptrace: sampling one allocation per [0-9]* bytes on average; //p' "$TMP/sampling.err")"
echo
[ "$ONLY" = resets ] && { reset_bench; exit 0; }
[ "$ONLY" = startup ] && { startup_bench; startup_print; exit 0; }
[ -n "$ONLY" ] && die "BENCH_ONLY=$ONLY: only 'resets' and 'startup' are known"

# ---------------------------------------------------------------- the table

CONFIGS=(bare trap stack entry entryonly heaptrace heaptrace_nostamp heaptrace_sites heaptrace_kwalk heaptrace_html heaptrace_mmap heaptrace_noinject heaptrace_fp heaptrace_fp_sites heaptrace_fp_kwalk heaptrace_entry fp16 dwarf16 dwarf32 dwarf32_kwalk fp32 fp32_kwalk heaptrace_s512k heaptrace_s512k_mmap heaptrace_s512k_noinject heaptrace_s64k heaptrace_s4k heaptrace_ff heaptrace_s512k_ff heaptrace_s512k_ff_noinject heaptrace_s512k_kid heaptrace_s512k_kid_noinject heaptrace_s512k_exec heaptrace_exec pool_bare pool_trap pool_heaptrace pool_heaptrace_noinject pool_heaptrace_s512k pool_heaptrace_s512k_noinject)
# BENCH_CONFIGS="bare heaptrace_ff ...": only those rows (the ratios of rows not run print as "-").
[ -n "${BENCH_CONFIGS:-}" ] && read -r -a CONFIGS <<<"$BENCH_CONFIGS"
[ -n "$BASE_HT" ] && [[ " ${CONFIGS[*]} " != *" heaptrace_html_base "* ]] && [ -z "${BENCH_CONFIGS:-}" ] &&
	CONFIGS+=(heaptrace_html_base heaptrace_base heaptrace_fp_base dwarf32_base fp32_base heaptrace_noinject_base
		heaptrace_s512k_base)
if [ "$PEERS" != 0 ] && [ -z "${BENCH_CONFIGS:-}" ]; then
	command -v bpftrace > /dev/null && CONFIGS+=(bpftrace) || note "bpftrace not installed: skipped"
	command -v heaptrack > /dev/null && CONFIGS+=(heaptrack) || note "heaptrack not installed: skipped"
fi
declare -A LABEL=(
	[bare]="bare (no tracing)"
	[trap]="trap floor (tracefs uprobes)"
	[stack]="trap+stack floor (BPF stackid)"
	[entry]="entry floor (tracefs at entries)"
	[heaptrace]="heaptrace (fast path, CFI)"
	[heaptrace_html]="  -f html (timeline, RSS 25/s)"
	[heaptrace_html_base]="  -f html, BENCH_BASE's build"
	[heaptrace_mmap]="  --mmap (mapping syscalls too)"
	[heaptrace_s512k_mmap]="  --mmap --sample-rate 512K"
	[heaptrace_noinject]="heaptrace --no-inject (uprobes)"
	[heaptrace_s512k_noinject]="  same, --no-inject (uprobe sessions)"
	[heaptrace_fp]="heaptrace --unwind fp"
	[heaptrace_nostamp]="  same, events not stamped (the drain's time)"
	[heaptrace_sites]="  same, a record site a call (no ring)"
	[heaptrace_fp_sites]="  same, a record site a call (no ring)"
	[heaptrace_kwalk]="  same, the BPF side walks"
	[heaptrace_fp_kwalk]="  same, the BPF side walks"
	[dwarf32]="heaptrace (CFI), depth 32"
	[dwarf32_kwalk]="  same, the BPF side walks"
	[fp32]="heaptrace --unwind fp, depth 32"
	[fp32_kwalk]="  same, the BPF side walks"
	[heaptrace_base]="heaptrace (CFI), BENCH_BASE's build"
	[heaptrace_fp_base]="  --unwind fp, BENCH_BASE's build"
	[dwarf32_base]="  CFI, depth 32, BENCH_BASE's"
	[fp32_base]="  --unwind fp, depth 32, BENCH_BASE's"
	[heaptrace_noinject_base]="  --no-inject, BENCH_BASE's build"
	[heaptrace_s512k_base]="  --sample-rate 512K, BENCH_BASE's"
	[fp16]="heaptrace --unwind fp, depth 16"
	[dwarf16]="heaptrace --unwind dwarf, depth 16"
	[entryonly]="entry-only floor (BPF, no returns)"
	[heaptrace_s512k]="heaptrace --sample-rate 512K"
	[heaptrace_s64k]="heaptrace --sample-rate 64K"
	[heaptrace_s4k]="heaptrace --sample-rate 4K (a sample in 64 calls)"
	[heaptrace_ff]="heaptrace --follow-fork (exact)"
	[heaptrace_s512k_ff]="  --follow-fork --sample-rate 512K"
	[heaptrace_s512k_ff_noinject]="    same, --no-inject (sessions)"
	[heaptrace_s512k_kid]="  the same, in a forked worker"
	[heaptrace_s512k_kid_noinject]="    same, --no-inject (returns: the parent's link)"
	[heaptrace_s512k_exec]="  the same, exec'd by a followed shell"
	[heaptrace_exec]="  --follow-fork exact, exec'd by a shell"
	[heaptrace_entry]="heaptrace --no-inject --probe-at=entry"
	[pool_bare]="pool allocator (--pool), bare"
	[pool_trap]="  trap floor at its sites"
	[pool_heaptrace]="  heaptrace --sym (fast path)"
	[pool_heaptrace_noinject]="    same, --no-inject (uprobes)"
	[pool_heaptrace_s512k]="  heaptrace --sym --sample-rate 512K"
	[pool_heaptrace_s512k_noinject]="    same, --no-inject (uprobes)"
	[bpftrace]="bpftrace memleak-style"
	[heaptrack]="heaptrack (LD_PRELOAD)"
)
declare -A FAILS=()

for ((r = 1; r <= RUNS; r++)); do
	printf 'bench: round %d/%d:' "$r" "$RUNS" >&2
	for c in "${CONFIGS[@]}"; do
		printf ' %s' "$c" >&2
		if run_config "$c"; then
			echo "$NS" >> "$TMP/results.$c"
		else
			FAILS[$c]=$(( ${FAILS[$c]:-0} + 1 ))
			cp "$TMP/$c.err" "$TMP/lastfail.$c"
			printf '(failed)' >&2
		fi
	done
	echo >&2
done

declare -A MED=()
for c in "${CONFIGS[@]}"; do
	[ -s "$TMP/results.$c" ] && MED[$c]=$(median < "$TMP/results.$c")
done


printf '%-34s %10s %8s %8s %10s %5s\n' "configuration" "ns/pair" "x bare" "x trap" "x trap+stk" "runs"
for c in "${CONFIGS[@]}"; do
	n=$(cat "$TMP/results.$c" 2>/dev/null | wc -l)
	if [ -z "${MED[$c]:-}" ]; then
		printf '%-34s %10s %8s %8s %10s %5s\n' "${LABEL[$c]}" "FAILED" "-" "-" "-" "0/$RUNS"
		continue
	fi
	printf '%-34s %10.1f %8s %8s %10s %5s\n' "${LABEL[$c]}" "${MED[$c]}" \
		"$(ratio "${MED[$c]}" "${MED[bare]:-}")" "$(ratio "${MED[$c]}" "${MED[trap]:-}")" \
		"$(ratio "${MED[$c]}" "${MED[stack]:-}")" "$n/$RUNS"
done
echo

diff_ns() {
	if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'
	else
		printf -- "-"
	fi
}

# ns per call of the fast path's unsampled calls: a pair is a malloc and a free.
per_call() {
	[ -n "$1" ] && [ -n "$2" ] || { echo -; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a - b) / 2 }'
}

echo "exact mode against heaptrack (in process, LD_PRELOAD), depth $DEPTH:"
target "exact (CFI, the ring) / heaptrack" "$(ratio "${MED[heaptrace]:-}" "${MED[heaptrack]:-}")" "<=" 1.0
target "exact --unwind fp / heaptrack" "$(ratio "${MED[heaptrace_fp]:-}" "${MED[heaptrack]:-}")" "<=" 1.0
printf '  %-44s %8s   (%s ns a pair)\n' "exact: events stamped / not (HEAPTRACE_STAMP=0)" \
	"$(ratio "${MED[heaptrace]:-}" "${MED[heaptrace_nostamp]:-}")" "$(diff_ns "${MED[heaptrace]:-}" "${MED[heaptrace_nostamp]:-}")"
printf '  %-44s %8s\n' "exact: the ring / a record site a call" "$(ratio "${MED[heaptrace]:-}" "${MED[heaptrace_sites]:-}")"
printf '  %-44s %8s\n' "--unwind fp: the ring / a record site a call" \
	"$(ratio "${MED[heaptrace_fp]:-}" "${MED[heaptrace_fp_sites]:-}")"
echo
echo "the in-process fast path (the default; --no-inject: uprobes only), depth $DEPTH:"
target "exact: heaptrace / trap floor" "$(ratio "${MED[heaptrace]:-}" "${MED[trap]:-}")" "<=" 1.0
target "512K: unsampled path, ns per call above bare" \
	"$(per_call "${MED[heaptrace_s512k]:-}" "${MED[bare]:-}")" "<=" 20
printf '  %-44s %8s\n' "exact: heaptrace / --no-inject" "$(ratio "${MED[heaptrace]:-}" "${MED[heaptrace_noinject]:-}")"
printf '  %-44s %8s\n' "512K: heaptrace / --no-inject" \
	"$(ratio "${MED[heaptrace_s512k]:-}" "${MED[heaptrace_s512k_noinject]:-}")"
printf '  %-44s %8s\n' "512K: heaptrace / bare" "$(ratio "${MED[heaptrace_s512k]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "-f html (timeline + RSS sampling) / heaptrace" \
	"$(ratio "${MED[heaptrace_html]:-}" "${MED[heaptrace]:-}")"
printf '  %-44s %8s\n' "exact: --mmap / without" "$(ratio "${MED[heaptrace_mmap]:-}" "${MED[heaptrace]:-}")"
printf '  %-44s %8s\n' "512K: --mmap / without" "$(ratio "${MED[heaptrace_s512k_mmap]:-}" "${MED[heaptrace_s512k]:-}")"
printf '  %-44s %8s\n' "-f html: this build / BENCH_BASE's" \
	"$(ratio "${MED[heaptrace_html]:-}" "${MED[heaptrace_html_base]:-}")"
printf '  %-44s %8s\n' "--no-inject: this build / BENCH_BASE's" \
	"$(ratio "${MED[heaptrace_noinject]:-}" "${MED[heaptrace_noinject_base]:-}")"
printf '  %-44s %8s\n' "512K: this build / BENCH_BASE's" \
	"$(ratio "${MED[heaptrace_s512k]:-}" "${MED[heaptrace_s512k_base]:-}")"
echo
echo "the stack walked in the process by the stub / by the BPF side (HEAPTRACE_WALK=bpf) / BENCH_BASE's build:"
for w in "heaptrace heaptrace_kwalk heaptrace_base CFI, depth $DEPTH" "heaptrace_fp heaptrace_fp_kwalk heaptrace_fp_base fp, depth $DEPTH" \
	"dwarf32 dwarf32_kwalk dwarf32_base CFI, depth 32" "fp32 fp32_kwalk fp32_base fp, depth 32"; do
	read -r a b c what <<<"$w"
	printf '  %-44s %8s %8s\n' "$what: stub / BPF, stub / base" "$(ratio "${MED[$a]:-}" "${MED[$b]:-}")" \
		"$(ratio "${MED[$a]:-}" "${MED[$c]:-}")"
done
echo
echo "a custom allocator, pool_alloc(pool, size) / pool_free(pool, ptr, size) (churn --pool; ${POOL_SPEC[*]}), depth $DEPTH:"
target "pool exact: heaptrace / its trap floor" "$(ratio "${MED[pool_heaptrace]:-}" "${MED[pool_trap]:-}")" "<=" 1.0
target "pool 512K: ns a pair above bare" "$(diff_ns "${MED[pool_heaptrace_s512k]:-}" "${MED[pool_bare]:-}")" "<=" 50
printf '  %-44s %8s\n' "pool exact: heaptrace / --no-inject" \
	"$(ratio "${MED[pool_heaptrace]:-}" "${MED[pool_heaptrace_noinject]:-}")"
printf '  %-44s %8s\n' "pool 512K: heaptrace / --no-inject" \
	"$(ratio "${MED[pool_heaptrace_s512k]:-}" "${MED[pool_heaptrace_s512k_noinject]:-}")"
printf '  %-44s %8s\n' "pool 512K: heaptrace / bare" "$(ratio "${MED[pool_heaptrace_s512k]:-}" "${MED[pool_bare]:-}")"
echo
echo "uprobes (--no-inject), depth $DEPTH:"
target "--no-inject / trap+stack floor" "$(ratio "${MED[heaptrace_noinject]:-}" "${MED[stack]:-}")" "<=" 1.15
target "--no-inject / trap floor" "$(ratio "${MED[heaptrace_noinject]:-}" "${MED[trap]:-}")" "<=" 1.4
target "entry floor / --no-inject" "$(ratio "${MED[entry]:-}" "${MED[heaptrace_noinject]:-}")" ">=" 5
target "CFI / frame-pointer unwinding, depth 16" "$(ratio "${MED[dwarf16]:-}" "${MED[fp16]:-}")" "<=" 1.5
printf '  %-44s %8s ns\n' "--no-inject above the trap+stack floor, per pair" \
	"$(diff_ns "${MED[heaptrace_noinject]:-}" "${MED[stack]:-}")"
printf '  %-44s %8s ns\n' "--no-inject above the trap floor, per pair" \
	"$(diff_ns "${MED[heaptrace_noinject]:-}" "${MED[trap]:-}")"
echo
echo "sampling (--sample-rate):"
target "--sample-rate 512K / heaptrace (exact)" "$(ratio "${MED[heaptrace_s512k]:-}" "${MED[heaptrace]:-}")" "<=" 0.6
target "--sample-rate 64K / heaptrace (exact)" "$(ratio "${MED[heaptrace_s64k]:-}" "${MED[heaptrace]:-}")" "<=" 0.6
# Recorded samples ride the ring as exact events do: finer sampling never costs more than exact.
target "--sample-rate 4K / heaptrace (exact)" "$(ratio "${MED[heaptrace_s4k]:-}" "${MED[heaptrace]:-}")" "<=" 1.0
target "--sample-rate 512K / entry-only floor" "$(ratio "${MED[heaptrace_s512k]:-}" "${MED[entryonly]:-}")" "<=" 1.25
printf '  %-44s %8s\n' "--no-inject 512K / entry-only floor (sessions)" \
	"$(ratio "${MED[heaptrace_s512k_noinject]:-}" "${MED[entryonly]:-}")"
printf '  %-44s %8s\n' "--sample-rate 64K / entry-only floor" "$(ratio "${MED[heaptrace_s64k]:-}" "${MED[entryonly]:-}")"
printf '  %-44s %8s\n' "--follow-fork: 512K / exact" \
	"$(ratio "${MED[heaptrace_s512k_ff]:-}" "${MED[heaptrace_ff]:-}")"
printf '  %-44s %8s\n' "--follow-fork: 512K in a forked child / exact" \
	"$(ratio "${MED[heaptrace_s512k_kid]:-}" "${MED[heaptrace_ff]:-}")"
printf '  %-44s %8s\n' "  the same, --no-inject / the fast path" \
	"$(ratio "${MED[heaptrace_s512k_kid_noinject]:-}" "${MED[heaptrace_s512k_kid]:-}")"
printf '  %-44s %8s\n' "  --no-inject: in a forked child / alone" \
	"$(ratio "${MED[heaptrace_s512k_kid_noinject]:-}" "${MED[heaptrace_s512k_ff_noinject]:-}")"
printf '  %-44s %8s\n' "--follow-fork: 512K exec'd by a shell / exact" \
	"$(ratio "${MED[heaptrace_s512k_exec]:-}" "${MED[heaptrace_ff]:-}")"
# cc1 under gcc: an exec'd program's own tables and ring make it cost what the target does.
target "--follow-fork: exact exec'd by a shell / exact" "$(ratio "${MED[heaptrace_exec]:-}" "${MED[heaptrace_ff]:-}")" "<=" 1.25
printf '  %-44s %8s ns\n' "--sample-rate 512K above the entry-only floor" \
	"$(diff_ns "${MED[heaptrace_s512k]:-}" "${MED[entryonly]:-}")"
for c in "${!FAILS[@]}"; do
	echo "  note: $c failed ${FAILS[$c]} of $RUNS runs; last error: $(grep -v '^$' "$TMP/lastfail.$c" | tail -3 | tr '\n' ' ')"
done
echo

# ---------------------------------------------------------------- other measurements

reset_bench

# wait_for FILE PATTERN SECONDS: until a line of FILE matches, polling.
wait_for() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# stop_bg PID SIGNAL: signal one of our background processes and reap it; one
# still there after 60 s is hung and is ended, with what it launched.
stop_bg() {
	local pid=$1 i child keep=() p
	kill -"$2" "$pid" 2>/dev/null
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		note "PID $pid did not stop on SIG$2: killed"
		for child in $(pgrep -P "$pid"); do
			kill -KILL "$child" 2>/dev/null
		done
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	for p in "${BG_PIDS[@]}"; do [ "$p" != "$pid" ] && keep+=("$p"); done
	BG_PIDS=("${keep[@]}")
}

# CFI table building for libc + libstdc++ (and t_shop's other objects: libm,
# libgcc_s, ld.so): cold with an empty cache, then from the cache.
if [ -x build/tests/nofp/t_shop ]; then
	note "unwind tables, cold and cached, $RUNS runs"
	: > "$TMP/results.cold"; : > "$TMP/results.cached"
	for ((r = 1; r <= RUNS; r++)); do
		rm -rf "$TMP/xdg"
		for k in cold cached; do
			XDG_CACHE_HOME=$TMP/xdg "$HT" -v --unwind dwarf -o /dev/null -- build/tests/nofp/t_shop \
				> /dev/null 2> "$TMP/tables.err"
			sed -n 's/.*unwind tables: .* built in \([0-9.]*\) ms.*/\1/p' "$TMP/tables.err" >> "$TMP/results.$k"
		done
	done
	TABLES=$(sed -n 's/^heaptrace: unwind tables: //p' "$TMP/tables.err")
	COLD=$( [ -s "$TMP/results.cold" ] && median < "$TMP/results.cold")
	CACHED=$( [ -s "$TMP/results.cached" ] && median < "$TMP/results.cached")
else
	note "build/tests/nofp/t_shop missing (make test-targets): unwind table timings skipped"
fi

startup_bench

# Attach time: heaptrace -p against a churn that is busy allocating.
note "attach time, $RUNS runs"
: > "$TMP/results.attach"
for ((r = 1; r <= RUNS; r++)); do
	"$CHURN" --pairs 1000000000 --live-set "$LIVE_SET" --depth "$DEPTH" --size "$SIZE" > /dev/null 2>&1 &
	cpid=$!; BG_PIDS+=("$cpid")
	sleep 0.2
	"$HT" -v -p "$cpid" -o /dev/null > /dev/null 2> "$TMP/attach.err" &
	hpid=$!; BG_PIDS+=("$hpid")
	if wait_for "$TMP/attach.err" "attached in" 30; then
		sed -n 's/.*attached in \([0-9.]*\) ms.*/\1/p' "$TMP/attach.err" >> "$TMP/results.attach"
	else
		note "attach run $r: $(tail -2 "$TMP/attach.err" | tr '\n' ' ')"
	fi
	stop_bg "$hpid" INT
	stop_bg "$cpid" INT
done
ATTACH=$( [ -s "$TMP/results.attach" ] && median < "$TMP/results.attach")

# A big profile: LIVE_N live blocks from LIVE_STACKS stacks.  heaptrace must
# see the allocations happen, so it launches churn and stops (SIGINT) once
# churn says everything is allocated; then it reads the maps and writes.
note "profile of $LIVE_N live blocks from $LIVE_STACKS stacks"
"$HT" -v --max-stacks 131072 -o "$TMP/live.prof" -- \
	"$CHURN" --live "$LIVE_N" --stacks "$LIVE_STACKS" --size "$SIZE" > "$TMP/live.out" 2> "$TMP/live.err" &
hpid=$!; BG_PIDS+=("$hpid")
wait_for "$TMP/live.out" "^ready" 600 ||
	note "churn --live never got ready: $(tail -2 "$TMP/live.err" | tr '\n' ' ')"
stop_bg "$hpid" INT
READ_MS=$(sed -n 's/.*read \([0-9]*\) stacks from the maps in \([0-9.]*\) ms.*/\2/p' "$TMP/live.err")
READ_N=$(sed -n 's/.*read \([0-9]*\) stacks from the maps in.*/\1/p' "$TMP/live.err")
WRITE_MS=$(sed -n 's/.*wrote the profile in \([0-9.]*\) ms.*/\1/p' "$TMP/live.err")
KMEM=$(sed -n 's/^heaptrace: kernel memory: //p' "$TMP/live.err")
LIVE=$(sed -n 's/^heaptrace: live blocks: //p' "$TMP/live.err")
PER_BLOCK=$(echo "$LIVE" | sed -n 's/.*: [0-9.]* MiB, \([0-9]*\) bytes a block.*/\1/p')
RSS=$(sed -n 's/^heaptrace: heaptrace peak RSS: //p' "$TMP/live.err")
EVENTS=$(sed -n 's/^heaptrace: events: //p' "$TMP/live.err")
PROF_STACKS=$(grep -c ' @ 0x' "$TMP/live.prof" 2>/dev/null)

# The per-CPU scratch areas that keep every program within 512 bytes of
# stack (docs/kernels.md): a lookup's cost beside the stack pointer it replaced.
LOOKUP=$("$PWD/build/bench/lookup" 2> "$TMP/lookup.err")
LOOKUP_PCPU=$(echo "$LOOKUP" | sed -n 's/^percpu \([0-9.]*\) stack.*/\1/p')
LOOKUP_STACK=$(echo "$LOOKUP" | sed -n 's/.* stack \([0-9.]*\)$/\1/p')

startup_print
echo
echo "other measurements:"
echo "  (heaptrace -v, with $LIVE_N live blocks from $LIVE_STACKS stacks, --max-stacks 131072)"
printf '  %-44s %s\n' "kernel memory" "${KMEM:-n/a}"
printf '  %-44s %s\n' "live blocks" "${LIVE:-n/a}"
target "kernel memory per live block, bytes" "${PER_BLOCK:--}" "<=" 130
printf '  %-44s %s\n' "heaptrace peak RSS" "${RSS:-n/a}"
if [ -n "$READ_MS" ] && [ -n "$WRITE_MS" ]; then
	printf '  %-44s %s ms (%s stacks; %s in the profile)\n' "read the maps" "$READ_MS" "$READ_N" "${PROF_STACKS:-0}"
	printf '  %-44s %s ms\n' "write the pprof profile" "$WRITE_MS"
	target "read + write, ms" "$(awk -v a="$READ_MS" -v b="$WRITE_MS" 'BEGIN { printf "%.1f", a + b }')" "<" 1000
else
	printf '  %-44s failed: %s\n' "read + write" "$(tail -2 "$TMP/live.err" | tr '\n' ' ')"
fi
[ -n "$EVENTS" ] && printf '  %-44s %s\n' "events of that run" "$EVENTS"
target "attach to a running churn, ms (median)" "${ATTACH:--}" "<" 300
printf '  %-44s %s\n' "unwind tables of t_shop (cached run)" "${TABLES:-n/a}"
target "CFI tables, libc+libstdc++ & co, cold, ms" "${COLD:--}" "<" 200
target "CFI tables, the same from the cache, ms" "${CACHED:--}" "<" 10
if [ -n "$LOOKUP_PCPU" ] && [ -n "$LOOKUP_STACK" ]; then
	printf '  %-44s %s (per-CPU scratch) / %s (stack), %s above\n' "a BPF loop step touching 64 bytes, ns" \
		"$LOOKUP_PCPU" "$LOOKUP_STACK" "$(awk -v a="$LOOKUP_PCPU" -v b="$LOOKUP_STACK" 'BEGIN { printf "%.2f", a - b }')"
else
	printf '  %-44s failed: %s\n' "per-CPU scratch lookup" "$(tail -1 "$TMP/lookup.err")"
fi
