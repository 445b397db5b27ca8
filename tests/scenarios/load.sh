# shellcheck shell=bash
# Area "load" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# full maps, kernel memory, start-up and long, heavy runs: scenarios limits, kmem,
# startup, stress, soak.

# rl_ht LIMIT KEY ARG...: ht with a fixed timeout of LIMIT seconds, for the
# long runs (ht's timeout shrinks to 10 s once the run is past its budget).
rl_ht() {
	local limit=$1 key=$2 t0=$SECONDS
	shift 2
	echo "heaptrace $(rel "$@")" >"$TMP/$key.cmd"
	timeout -k 5 "$limit" "$HT" "$@" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/$key.rc"
	[ $((SECONDS - t0)) -ge "$limit" ] && echo "timed out after $limit s" >>"$TMP/$key.err"
	return 0
}

# rl_peak_rss KEY: N of "heaptrace: heaptrace peak RSS: N KiB" (-v).
rl_peak_rss() {
	sed -nE 's/^heaptrace: heaptrace peak RSS: ([0-9]+) KiB.*/\1/p' "$TMP/$1.err" | head -1
}

# rl_check_rss KEY NAME: heaptrace's own peak RSS within 50 MB.  An ASan
# build (make check-asan) keeps up to 256 MB of freed memory in quarantine
# and maps shadow for all it touches, so there the bound is 300 MB: still
# far below what a real regression costs (stop 21's 37 MB frames table per
# profile reached 362 MB), while the plain build's run holds the 50 MB.
rl_check_rss() {
	local key=$1 name=$2 rss bound=50000 how=""
	if readelf -d "$(readlink -f "$HT")" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
		bound=300000 how=" (ASan build)"
	fi
	rss=$(rl_peak_rss "$key")
	report "$name: heaptrace peak RSS ${rss:-?} KiB < $bound$how" \
		"$([ -n "$rss" ] && [ "$rss" -lt "$bound" ] || echo "no 'peak RSS' line or too much: '${rss}'")"
}

# ---------------------------------------------------------------------------
# Full maps: an event that does not fit is counted as a loss, never guessed.
# t_limits live: lim_keep 100 x 100 all live, lim_release frees them,
# lim_again 30 x 300 kept.  --max-allocs 40: 40 of lim_keep's blocks are
# tracked, 60 not (live_map_full=60), but all 100 are counted allocated;
# their frees: 40 matched, 60 unmatched; then the map is empty again and
# all 30 of lim_again's are tracked.  In use 30 / 9000, allocated
# 130 / 10000 + 9000 = 19000.
# t_limits stacks: st_K does K x malloc(100 K), K = 1..10 in order.
# --max-stacks 4: st_1..st_4's stacks are stored (first seen), the 5 + ... +
# 10 = 45 allocations of st_5..st_10 have no room (stack_errors=45) and
# are counted under "[lost stack]": 100 x (25 + 36 + 49 + 64 + 81 + 100) =
# 35500 bytes; totals stay exact: 55 objects, 38500 bytes.
scenario_limits() {
	# HEAPTRACE_PAIR=0: every block through the live map.  With pairs (the default on the ring) a block
	# freed in the drain run that saw it allocated takes no live entry, so whether lim_keep's blocks
	# fill the map would depend on where the drain's runs fall (tracer/drain.c).
	HEAPTRACE_PAIR=0 ht lim_live -v --max-allocs 40 -o "$TMP/lim_live.prof" -- "$TB/t_limits" live
	check_rc lim_live 0 "limits: --max-allocs 40 run exits 0"
	expect_events lim_live allocs=130 frees=40 live_map_full=60 unmatched_frees=60 missed_frees=0 \
		stack_errors=0 site_map_full=0
	pprof_header "$TMP/lim_live.prof" "limits: --max-allocs 40: pprof header" 30 9000 130 19000

	# Without -v the events line comes because a loss counter is not 0.
	HEAPTRACE_PAIR=0 ht lim_live_c --max-allocs 40 -f collapsed --value alloc_objects -- "$TB/t_limits" live
	check_rc lim_live_c 0 "limits: --max-allocs 40 collapsed run exits 0"
	expect_leaf lim_live_c lim_keep 100
	expect_leaf lim_live_c lim_again 30
	leafset lim_live_c lim_keep lim_again
	expect_events lim_live_c live_map_full=60 unmatched_frees=60
	HEAPTRACE_PAIR=0 ht lim_live_is --max-allocs 40 -f collapsed --value inuse_space -- "$TB/t_limits" live
	expect_leaf lim_live_is lim_again 9000
	leafset lim_live_is lim_again

	HEAPTRACE_PAIR=0 ht lim_live_top --max-allocs 40 -f top -- "$TB/t_limits" live
	check_rc lim_live_top 0 "limits: --max-allocs 40 -f top exits 0"
	local l d=""
	l=$(grep -m1 '^ *losses:' "$TMP/lim_live_top.out")
	echo "$l" | grep -qw 'live_map_full=60' || d+="no live_map_full=60"$'\n'
	echo "$l" | grep -qw 'unmatched_frees=60' || d+="no unmatched_frees=60"$'\n'
	report "limits: -f top --max-allocs 40: losses: line shows live_map_full=60 unmatched_frees=60" \
		"$d${d:+losses line: \"$l\"}"

	ht lim_st -v --max-stacks 4 -o "$TMP/lim_st.prof" -- "$TB/t_limits" stacks
	check_rc lim_st 0 "limits: --max-stacks 4 run exits 0"
	expect_events lim_st allocs=55 frees=0 stack_errors=45 stack_collisions=0 site_map_full=0 live_map_full=0
	pprof_header "$TMP/lim_st.prof" "limits: --max-stacks 4: pprof header counts every allocation" 55 38500 55 38500
	ht lim_st_as --max-stacks 4 -f collapsed --value alloc_space -- "$TB/t_limits" stacks
	expect_leaf lim_st_as st_1 100
	expect_leaf lim_st_as st_2 400
	expect_leaf lim_st_as st_3 900
	expect_leaf lim_st_as st_4 1600
	expect_leaf lim_st_as "[lost stack]" 35500
	leafset lim_st_as st_1 st_2 st_3 st_4 "[lost stack]"
	expect_events lim_st_as stack_errors=45
	ht lim_st_ao --max-stacks 4 -f collapsed --value alloc_objects -- "$TB/t_limits" stacks
	expect_leaf lim_st_ao "[lost stack]" 45
	expect_leaf lim_st_ao st_4 4

	ht lim_st_top --max-stacks 4 -f top -- "$TB/t_limits" stacks
	check_rc lim_st_top 0 "limits: --max-stacks 4 -f top exits 0"
	l=$(grep -m1 '^ *losses:' "$TMP/lim_st_top.out")
	report "limits: -f top --max-stacks 4: losses: line shows stack_errors=45" \
		"$(echo "$l" | grep -qw 'stack_errors=45' || echo "losses line: '$l'")"

	# One name per counter, everywhere: docs/limits-and-safety.md's table
	# holds every loss of HT_COUNTERS (bpf/heaptrace.h) and no event, and
	# its text names every event.
	local doc=$ROOT/docs/limits-and-safety.md id name loss rows n=0
	rows=$(grep '^| `' "$doc")
	d=""
	while read -r id name loss; do
		n=$((n + 1))
		if [ "$loss" = 1 ]; then
			grep -qF "\`$name\`" <<<"$rows" || d+="loss $name ($id) is not in the table"$'\n'
		elif grep -qF "\`$name\`" <<<"$rows"; then
			d+="event $name ($id) is in the table of losses"$'\n'
		else
			grep -qF "\`$name\`" "$doc" || d+="event $name ($id) is not named"$'\n'
		fi
	done < <(sed -nE 's/^[[:space:]]*X\(([A-Z_]+), "([a-z_]+)", ([01])\).*/\1 \2 \3/p' "$ROOT/bpf/heaptrace.h")
	[ "$n" -ge 20 ] || d+="only $n counters read from bpf/heaptrace.h"$'\n'
	report "limits: docs/limits-and-safety.md names all $n counters of HT_COUNTERS, the losses in its table" "$d"
}

# ---------------------------------------------------------------------------
# t_stress: 16 threads, 2,000,000 malloc/free pairs from stress_alloc, random
# sizes and lifetimes; the target prints its own totals:
#   stress: allocs N bytes N live N live_bytes N
# heaptrace must agree exactly (stress_alloc has one stack: one record),
# lose nothing with the default limits, and stay under 100000 KiB of RSS.
# At thread exit glibc's tcache_thread_shutdown() frees again every chunk in
# the thread's tcache (already freed once) and the tcache itself (never
# allocated through malloc): counted as thread_exit_frees, not losses, so
# unmatched_frees is 0 (docs/limits-and-safety.md).
scenario_stress() {
	local key=stress d="" line allocs bytes live lbytes h io ao rss um
	rl_ht 180 $key -v -o "$TMP/$key.prof" -- "$TB/t_stress"
	check_rc $key 0 "stress: heaptrace -v -o FILE t_stress exits 0"
	line=$(grep -m1 '^stress: ' "$TMP/$key.out")
	read -r allocs bytes live lbytes <<<"$(echo "$line" |
		sed -nE 's/^stress: allocs ([0-9]+) bytes ([0-9]+) live ([0-9]+) live_bytes ([0-9]+)$/\1 \2 \3 \4/p')"
	if [ -z "$lbytes" ] || [ "$allocs" != 2000000 ]; then
		fail "stress: the target reports 2000000 allocations" "target output: '$line'"$'\n'"$(ctx $key)"
		return
	fi
	pass "stress: the target reports 2000000 allocations ($line)"
	d=""
	pprof_has_record "$TMP/$key.prof" "$live" "$lbytes" "$allocs" "$bytes" ||
		d="no record $live: $lbytes [$allocs: $bytes]"$'\n'"$(sed -n '1,6p' "$TMP/$key.prof")"
	report "stress: stress_alloc's record is exactly the target's own count: $live: $lbytes [$allocs: $bytes]" "$d"
	expect_events $key live_map_full=0 stack_collisions=0 stack_errors=0 site_map_full=0 \
		returns_without_entry=0 missed_returns=0 call_map_full=0 missed_frees=0 failed_allocs=0 arena_map_full=0
	h=$(rl_header "$TMP/$key.prof")
	io=$(echo "$h" | cut -d' ' -f1)
	ao=$(echo "$h" | cut -d' ' -f3)
	d=""
	if [ -z "$h" ]; then
		d="no pprof header"
	else
		[ "$(rl_events_num $key allocs)" = "$ao" ] || d+="allocs=$(rl_events_num $key allocs), profile: $ao allocated"$'\n'
		[ "$(rl_events_num $key frees)" = "$((ao - io))" ] ||
			d+="frees=$(rl_events_num $key frees), profile: $ao - $io = $((ao - io))"$'\n'
	fi
	um=$(rl_events_num $key unmatched_frees)
	# glibc's tcache teardown at thread exit frees what it holds: thread_exit_frees, not losses.
	[ "$um" = 0 ] || d+="unmatched_frees=${um:-<missing>}, want 0"$'\n'
	report "stress: events agree with the profile (allocs = allocated, frees = allocated - in use); unmatched_frees=0, thread_exit_frees=$(rl_events_num $key thread_exit_frees)" "$d"
	rl_check_rss $key stress

	# The same run by function name (collapsed), in use and allocated.
	local v want
	for v in inuse_space alloc_objects; do
		rl_ht 180 $key.$v -f collapsed --value $v -- "$TB/t_stress"
		check_rc $key.$v 0 "stress: -f collapsed --value $v exits 0"
		line=$(grep -m1 '^stress: ' "$TMP/$key.$v.err")
		read -r allocs bytes live lbytes <<<"$(echo "$line" |
			sed -nE 's/^stress: allocs ([0-9]+) bytes ([0-9]+) live ([0-9]+) live_bytes ([0-9]+)$/\1 \2 \3 \4/p')"
		want=$lbytes
		[ $v = alloc_objects ] && want=$allocs
		expect_leaf $key.$v stress_alloc "${want:-target-did-not-report}"
		# Without -v an events line is printed only for a loss: none is the pass.
		no_loss_line $key.$v
	done
}

# ---------------------------------------------------------------------------
# Soak: t_soak under heaptrace -i 1 -o $TMP/soak --http for at least 60 s
# of churn phases.  At each quiescent point (the target blocked on its
# FIFO, with its own live count printed) /debug/pprof/heap?debug=1 must
# show exactly the target's in-use objects and bytes: no drift, ever.  At
# the end: exit 0, snapshots numbered 0001.. without a gap (>= 55), the
# last one (written after the exit) with the final live counts, no losses,
# RSS bounded.
scenario_soak() {
	local key=soak d="" port p k=0 t0 line objs bytes hdr io ib mism=0 checks=0 n last ms0 ms maxms=0 slow=0
	for p in $(shuf -i 20000-60000 -n 50); do
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { port=$p; break; }
	done
	mkfifo "$TMP/$key.fifo"
	echo "heaptrace -v -i 1 -o \$TMP/soak --http 127.0.0.1:$port -- build/tests/t_soak \$TMP/soak.fifo" >"$TMP/$key.cmd"
	timeout -k 5 240 "$HT" -v -i 1 -o "$TMP/soak" --http "127.0.0.1:$port" -- "$TB/t_soak" "$TMP/$key.fifo" \
		>"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	# The target's lines: on heaptrace's stdout, or its stderr if heaptrace
	# sends the command's output there.
	rl_soak_wait() {
		local re=$1 n=$(($2 * 20))
		while [ "$n" -gt 0 ]; do
			grep -hE "$re" "$TMP/$key.tout" "$TMP/$key.err" 2>/dev/null | tail -1 | grep . && return 0
			kill -0 "$HPID" 2>/dev/null || break
			sleep 0.05
			n=$((n - 1))
		done
		grep -hE "$re" "$TMP/$key.tout" "$TMP/$key.err" 2>/dev/null | tail -1 | grep .
	}
	if ! rl_soak_wait '^ready$' 30 >/dev/null ||
		! wait_for "$TMP/$key.err" '^heaptrace: serving ' 30 "$HPID"; then
		fail "soak: t_soak starts under heaptrace --http 127.0.0.1:$port" "$(ctx $key)"
		kill_tree "$HPID"
		return
	fi
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 70 ]; do
		k=$((k + 1))
		ms0=$(date +%s%N)
		# shellcheck disable=SC2016
		if ! timeout 10 bash -c 'echo "$2" >"$1"' _ "$TMP/$key.fifo" "churn $k"; then
			d+="could not send phase $k to the target"$'\n'
			break
		fi
		if ! line=$(rl_soak_wait "^live $k " 30); then
			d+="no 'live $k' line from the target within 30 s"$'\n'
			break
		fi
		read -r _ _ objs bytes <<<"$line"
		hdr=$(curl -s --max-time 10 "http://127.0.0.1:$port/debug/pprof/heap?debug=1" | head -1)
		io=$(echo "$hdr" | sed -nE 's/^heap profile: *([0-9]+): *([0-9]+) \[.*/\1/p')
		ib=$(echo "$hdr" | sed -nE 's/^heap profile: *([0-9]+): *([0-9]+) \[.*/\2/p')
		checks=$((checks + 1))
		ms=$((($(date +%s%N) - ms0) / 1000000))
		[ "$ms" -gt "$maxms" ] && maxms=$ms
		[ "$ms" -gt 2000 ] && slow=$((slow + 1))
		if [ "$io $ib" != "$objs $bytes" ]; then
			mism=$((mism + 1))
			[ "$mism" -le 5 ] && d+="phase $k at $((SECONDS - t0)) s: target $objs objects $bytes bytes, /debug/pprof/heap: '$hdr'"$'\n'
		fi
	done
	local secs=$((SECONDS - t0))
	# shellcheck disable=SC2016
	timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/$key.fifo"
	[ "$secs" -ge 60 ] || d+="only $secs s of soak"$'\n'
	[ "$mism" = 0 ] || d+="$mism of $checks quiescent points disagree"$'\n'
	report "soak: $checks quiescent points over $secs s: /debug/pprof/heap in use = the target's own live objects and bytes, every time" "$d"
	echo "# soak: slowest phase + fetch took $maxms ms; $slow took over 2 s"
	d=""
	if ! wait_exit "$HPID" 30; then
		d+="heaptrace still running 30 s after quit"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 0)
	rl_soak_wait '^bye$' 1 >/dev/null || d+=$'\n'"the target did not say bye"
	report "soak: heaptrace exits 0 at the end" "$d${d:+$'\n'$(ctx $key)}"

	# Snapshots: $TMP/soak.0001.heap, ... consecutive.
	n=$(find "$TMP" -maxdepth 1 -name 'soak.[0-9]*.heap' | wc -l)
	d=""
	[ "$n" -ge 55 ] || d+="$n snapshots, want at least 55"$'\n'
	for ((i = 1; i <= n; i++)); do
		[ -e "$TMP/soak.$(printf %04d "$i").heap" ] || { d+="soak.$(printf %04d "$i").heap missing (of $n)"$'\n'; break; }
	done
	report "soak: $n snapshots soak.0001.heap .. soak.$(printf %04d "$n").heap, no gap, at least 55" "$d"
	last=$TMP/soak.$(printf %04d "$n").heap
	hdr=$(rl_header "$last")
	report "soak: the last snapshot holds the final live counts: $objs objects, $bytes bytes" \
		"$([ "${hdr% * *}" = "$objs $bytes" ] || echo "$(basename "$last"): $(head -1 "$last" 2>/dev/null)")"
	expect_events $key live_map_full=0 stack_errors=0 stack_collisions=0 site_map_full=0 \
		returns_without_entry=0 missed_returns=0 call_map_full=0 unmatched_frees=0 missed_frees=0 failed_allocs=0
	rl_check_rss $key soak
}

# ---------------------------------------------------------------------------
# Kernel memory: the BPF maps follow what the target holds.  The live map
# is levels of preallocated hash maps (bpf/live.bpf.h), made as the blocks
# grow; the other maps are sized from the options and the
# target (arena maps only with arenas).
#
# kmem_mib KEY: X of "heaptrace: kernel memory: X MiB in BPF maps" (-v).
kmem_mib() {
	sed -nE 's/^heaptrace: kernel memory: ([0-9.]+) MiB in BPF maps.*/\1/p' "$TMP/$1.err" | head -1
}

# fdinfo_memlock PID: the sum of the fdinfo memlock of the BPF maps PID holds (each map once), in bytes.
fdinfo_memlock() {
	local f t=0 m id seen=" "
	for f in /proc/"$1"/fdinfo/*; do
		grep -q '^map_type:' "$f" 2>/dev/null || continue
		# A map once, however many fds (instances of the object loaded apart share the maps).
		id=$(sed -n 's/^map_id:[[:space:]]*//p' "$f")
		[ -n "$id" ] && [[ "$seen" == *" $id "* ]] && continue
		seen+="$id "
		m=$(sed -n 's/^memlock:[[:space:]]*//p' "$f")
		t=$((t + ${m:-0}))
	done
	echo "$t"
}

# ht_pid HPID: heaptrace's pid under its timeout wrapper (ht_bg).
ht_pid() {
	pgrep -P "$1" -x heaptrace | head -1
}

# The kernel memory charged to a memory cgroup of our own (cgroup v1's
# memory.kmem.usage_in_bytes): heaptrace's maps are charged to the cgroup
# of the process that made them.  KMEM_CG: its directory, "" if none can be
# made; kmem_now: bytes.
kmem_cg_new() {
	local p
	KMEM_CG=""
	p=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
	[ -n "$p" ] && [ -f "/sys/fs/cgroup/memory$p/memory.kmem.usage_in_bytes" ] || return 1
	KMEM_CG=/sys/fs/cgroup/memory$p/heaptrace-test.$$
	mkdir "$KMEM_CG" 2>/dev/null || { KMEM_CG=""; return 1; }
}
kmem_now() { cat "$KMEM_CG/memory.kmem.usage_in_bytes"; }
kmem_cg_free() {
	[ -n "$KMEM_CG" ] || return 0
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do rmdir "$KMEM_CG" 2>/dev/null && break; sleep 0.5; done
	KMEM_CG=""
}

scenario_kmem() {
	local key=kmem.true x d hp s n k0 k1 per est
	# The levels (user/tracer/levels.c): preallocated where a ring's drain
	# reads them, 8K then 56K then threefold; with --no-inject (uprobes fill
	# them) not preallocated, 64K then threefold.
	local first=8192 levels="4 levels (8,192, 57,344, 196,608, 786,432)" n_levels=4 full_levels=3
	if [ -n "${HT_TEST_NO_INJECT:-}" ]; then
		first=65536 levels="3 levels (65,536, 196,608, 786,432)" n_levels=3 full_levels=2
	fi

	# A small target at the defaults (--max-allocs 1048576, --max-stacks 65536).
	ht $key -v -o "$TMP/$key.prof" /bin/true
	x=$(kmem_mib $key)
	d=$(rc_diag $key 0)
	{ [ -n "$x" ] && awk -v x="$x" 'BEGIN { exit !(x <= 16) }'; } || d+="kernel memory: '${x:-<none>}' MiB, want <= 16"$'\n'
	grep -q "^heaptrace: live blocks: 0 in 1 of 8 levels with room for $first (--max-allocs 1048576)" "$TMP/$key.err" ||
		d+="$(grep '^heaptrace: live blocks' "$TMP/$key.err" || echo 'no live blocks line')"$'\n'
	report "kmem: /bin/true at the defaults: -v says ${x:-?} MiB of BPF maps (<= 16), the live map 1 level of $first" "$d"

	# The same while tracing, from the kernel: the fdinfo memlock of heaptrace's maps.
	key=kmem.small
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v -o "$TMP/$key.prof" -- "$TB/t_limits" many 1000 "$TMP/$key.fifo"
	d=""
	if wait_for "$TMP/$key.tout" '^start$' 30 "$HPID" && hp=$(ht_pid "$HPID") && [ -n "$hp" ]; then
		s=$(fdinfo_memlock "$hp")
		release $key
		wait_for "$TMP/$key.tout" '^held$' 30 "$HPID" || d+="the target did not allocate"$'\n'
		release $key
	else
		d+="the target did not start under heaptrace"$'\n'"$(ctx $key)"
	fi
	ht_bg_wait $key "$HPID" 30
	x=$(kmem_mib $key)
	[ -n "$s" ] && [ "$s" -gt 0 ] && [ "$s" -le $((16 << 20)) ] || d+="fdinfo memlock of heaptrace's maps while tracing: ${s:-?} bytes, want <= 16 MiB"$'\n'
	# What -v says at the end (1000 blocks and their stack more) agrees with what the kernel said
	# (-v rounds to 0.1 MiB: 13110 KiB, 12.803 MiB, is "12.8").
	[ -n "$x" ] && [ -n "$s" ] && awk -v x="$x" -v s="$s" 'BEGIN { d = x - s / 1048576; exit !(x <= 16 && d >= -0.05 && d < 1) }' ||
		d+="-v: ${x:-?} MiB; fdinfo while tracing: $((${s:-0} >> 10)) KiB: want both <= 16 MiB, -v at most 1 MiB more"$'\n'
	report "kmem: a small target: heaptrace's maps hold $((${s:-0} >> 10)) KiB (fdinfo memlock, while tracing), -v says ${x:-?} MiB; both <= 16 MiB" "$d"

	# A million live blocks, the kernel memory of heaptrace measured by its
	# memory cgroup: what the blocks added, per block.  heaptrace is stopped
	# (SIGINT) while they are live, so its -v figures are of them too; it
	# passes the signal on to the command (exit status 130).  Per block:
	# what the blocks added (at most 130 bytes), and all the cgroup holds
	# (heaptrace, its maps, the target's kernel memory) at most 130 bytes a
	# block more than a small target's 16 MiB.
	key=kmem.1m
	n=1000000
	mkfifo "$TMP/$key.fifo"
	d=""
	if ! kmem_cg_new; then
		fail "kmem: a memory cgroup of our own (cgroup v1, memory.kmem.usage_in_bytes) for measuring kernel memory" \
			"$(grep memory /proc/self/cgroup)"
	else
		echo "heaptrace -v -o \$TMP/$key.prof -- $(rel "$TB")/t_limits many $n FIFO (in a memory cgroup)" >"$TMP/$key.cmd"
		(echo "$BASHPID" >"$KMEM_CG/cgroup.procs" &&
			exec timeout -k 5 300 "$HT" -v -o "$TMP/$key.prof" -- "$TB/t_limits" many $n "$TMP/$key.fifo" \
				>"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null) &
		HPID=$!
		if wait_for "$TMP/$key.tout" '^start$' 60 "$HPID" && hp=$(ht_pid "$HPID") && [ -n "$hp" ]; then
			sleep 0.5
			k0=$(kmem_now)
			release $key
			if wait_for "$TMP/$key.tout" '^held$' 240 "$HPID"; then
				sleep 0.5
				k1=$(kmem_now)
				s=$(fdinfo_memlock "$hp")
			else
				d+="the target did not allocate its $n blocks in 240 s"$'\n'
			fi
			kill -INT "$hp"
		else
			d+="the target did not start under heaptrace"$'\n'"$(ctx $key)"
		fi
		ht_bg_wait $key "$HPID" 60
		kmem_cg_free
		d+=$(rc_diag $key 130)
		per=""
		[ -n "${k1:-}" ] && per=$(((k1 - k0) / n))
		[ -n "$per" ] && [ "$per" -le 130 ] && [ "$per" -gt 0 ] ||
			d+="kernel memory per live block: ${per:-?} bytes (cgroup: ${k0:-?} -> ${k1:-?}), want <= 130"$'\n'
		[ -n "${k1:-}" ] && [ "$k1" -le $((130 * n + (16 << 20))) ] ||
			d+="the cgroup's kernel memory with $n blocks: ${k1:-?} bytes, want <= 130 a block + 16 MiB"$'\n'
		est=$(sed -nE 's/^heaptrace: live blocks: ([0-9]+) in ([0-9]+) of 8 levels .* ([0-9]+) bytes a block .*/\1 \2 \3/p' "$TMP/$key.err")
		[ "$(echo "$est" | cut -d' ' -f1,2)" = "$n $n_levels" ] ||
			d+="-v: $(grep '^heaptrace: live blocks' "$TMP/$key.err"), want $n in $levels"$'\n'
		# heaptrace's own figure (elements at their slab size) within 10% of the cgroup's.
		est=$(echo "$est" | cut -d' ' -f3)
		[ -n "$est" ] && [ -n "$per" ] && [ $((est * 10)) -ge $((per * 9)) ] && [ $((est * 10)) -le $((per * 11)) ] ||
			d+="-v says ${est:-?} bytes a block, the cgroup ${per:-?}: want within 10%"$'\n'
		report "kmem: $n live blocks: $per bytes each in kernel memory (memory cgroup, <= 130), $((${k1:-0} >> 20)) MiB in all; -v says $est; maps $((${s:-0} >> 20)) MiB (fdinfo)" "$d"
		expect_events $key allocs=$n frees=0 live_map_full=0 missed_frees=0
	fi

	# Every level full: --max-allocs 150000 is 8192 + 57344 + 84464 (65536 + 84464 with --no-inject); of
	# 200000 blocks 50000 find no room, exactly, and their frees are unmatched.
	key=kmem.full
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v --max-allocs 150000 -o "$TMP/$key.prof" -- "$TB/t_limits" many 200000 "$TMP/$key.fifo"
	d=""
	if wait_for "$TMP/$key.tout" '^start$' 30 "$HPID"; then
		release $key
		wait_for "$TMP/$key.tout" '^held$' 120 "$HPID" || d+="the target did not allocate"$'\n'
		release $key
	else
		d+="the target did not start under heaptrace"$'\n'
	fi
	ht_bg_wait $key "$HPID" 60
	d+=$(rc_diag $key 0)
	grep -q "^heaptrace: live blocks: 0 in $full_levels of 8 levels with room for 150000 (--max-allocs 150000)" "$TMP/$key.err" ||
		d+="$(grep '^heaptrace: live blocks' "$TMP/$key.err" || echo 'no live blocks line')"$'\n'
	report "kmem: --max-allocs 150000: the live map grew to $full_levels levels, room for 150000" "$d"
	expect_events $key allocs=200000 frees=150000 live_map_full=50000 unmatched_frees=50000 missed_frees=0
}

# ---------------------------------------------------------------------------
# Start-up: -v says where the time went; the BPF object is loaded against
# the cached cut-down kernel types, so libbpf reads no kernel BTF (its
# part of the load is 0.0 ms, measured from libbpf's own messages); only
# the programs the run attaches are loaded (and verified).
#
# ht_progs PID: the names of the BPF programs PID holds, sorted, on one line.
ht_progs() {
	local f id
	for f in /proc/"$1"/fdinfo/*; do
		id=$(sed -n 's/^prog_id:[[:space:]]*//p' "$f" 2>/dev/null)
		[ -n "$id" ] && bpftool prog show id "$id" 2>/dev/null | sed -n '1s/.* name \([^ ]*\) .*/\1/p'
	done | sort -u | tr '\n' ' '
}

scenario_startup() {
	local key d x mode want got n=0

	# A first run makes the cache's kernel types if it has none; the second takes them.
	XDG_CACHE_HOME=$TMP/su.cache ht su.first -v -o "$TMP/su.first.prof" /bin/true
	XDG_CACHE_HOME=$TMP/su.cache ht su.true -v -o "$TMP/su.true.prof" /bin/true
	d=$(rc_diag su.first 0)$(rc_diag su.true 0)
	grep -q '^heaptrace: kernel types: .* built in ' "$TMP/su.first.err" ||
		d+="the first run did not build the kernel types: $(grep 'kernel types' "$TMP/su.first.err")"$'\n'
	grep -q '^heaptrace: kernel types:' "$TMP/su.true.err" &&
		d+="the second run: $(grep '^heaptrace: kernel types:' "$TMP/su.true.err")"$'\n'
	grep -q 'cannot load the BPF object' "$TMP/su.true.err" "$TMP/su.first.err" &&
		d+="$(grep -h 'cannot load the BPF object' "$TMP/su.true.err" "$TMP/su.first.err")"$'\n'
	x=$(grep -m1 '^heaptrace: phases: ' "$TMP/su.true.err")
	for want in "plan " "unwind tables " "BPF load " "(kernel types " "kernel BTF 0.0," "maps " "CO-RE " \
		"verifier " "attach " "fast path " "traced run " "detach " "read " "symbolize " "write " " ms in all"; do
		[[ "$x" == *"$want"* ]] || d+="no '$want' in: ${x:-<no phases line>}"$'\n'
	done
	report "startup: -v's phases; the kernel types from the cache, no kernel BTF read by libbpf (kernel BTF 0.0)" "$d"

	# -v says what the verifier spent on each program it loaded (the kernel's stats).
	d=""
	for want in stub_alloc stub_free process_exec; do
		grep '^heaptrace: verifier: ' "$TMP/su.true.err" | grep -Eq "(: |, )$want [0-9]+\.[0-9] ms \([0-9]+ insns\)" ||
			d+="no '$want N ms (N insns)' in: $(grep '^heaptrace: verifier: ' "$TMP/su.true.err" | tr '\n' ' ')"$'\n'
	done
	report "startup: -v: the verifier's time and instructions for each program loaded" "$d"

	# Only what the run attaches is loaded: signal_deliver (the restorers of
	# signal handlers) for heaptrace's own walks, not for the kernel's.
	for mode in "" "--no-inject" "--no-inject --sample-rate 64K" "--stack-capture kernel"; do
		n=$((n + 1))
		key=su.progs$n
		case $mode in
		# Exact mode with a stub: the ring's drain object is loaded from start-up on (tracer/drain.c);
		# loader_state, for a loader a breakpoint could not be trusted at (session.c's arm_loader()).
		"") want="drain loader_state oom_victim process_exec process_fork signal_deliver stub_alloc stub_free thread_exit "
		    [ "${HEAPTRACE_BATCH:-}" = 0 ] && want=${want#drain } ;;
		"--no-inject") want="alloc_enter alloc_return free_enter oom_victim process_exec process_fork signal_deliver thread_exit " ;;
		"--stack-capture kernel") want="alloc_enter alloc_return free_enter oom_victim process_exec process_fork thread_exit " ;;
		*) want="alloc_session free_enter oom_victim process_exec process_fork signal_deliver thread_exit " ;;
		esac
		mkfifo "$TMP/$key.fifo"
		# shellcheck disable=SC2086 # mode: several options, or none
		ht_bg $key -v $mode -o "$TMP/$key.prof" -- "$TB/t_limits" many 10 "$TMP/$key.fifo"
		d=""
		got=""
		if wait_for "$TMP/$key.tout" '^start$' 30 "$HPID" && x=$(ht_pid "$HPID") && [ -n "$x" ]; then
			got=$(ht_progs "$x")
			release $key
			wait_for "$TMP/$key.tout" '^held$' 30 "$HPID" || d+="the target did not allocate"$'\n'
			release $key
		else
			d+="the target did not start under heaptrace"$'\n'
		fi
		ht_bg_wait $key "$HPID" 30
		d+=$(rc_diag $key 0)
		[ "$got" = "$want" ] || d+="programs: '$got', want '$want'"$'\n'
		# The uprobe programs come from their own object (its checked-once functions inlined: design.md).
		x="alloc_enter, alloc_return, free_enter"
		[ "${mode#*sample}" != "$mode" ] && x=free_enter
		if [ -n "$mode" ] && ! grep -q "^heaptrace: loaded $x in [0-9.]* ms (the uprobe programs' object)\$" \
			"$TMP/$key.err"; then
			d+="no 'loaded $x in N ms (the uprobe programs' object)' in: $(grep '^heaptrace: .*load' "$TMP/$key.err" |
				tr '\n' ' ')"$'\n'
		fi
		report "startup: ${mode:-the defaults}: BPF programs loaded: ${want% }${mode:+; the uprobe programs from their object}" "$d"
		# Sampled (one 64 KiB in): the ten 16-byte blocks are almost never recorded.
		[ -n "$mode" ] && [ "${mode#*sample}" != "$mode" ] || expect_events $key allocs=10 frees=10 unmatched_frees=0
	done
}
