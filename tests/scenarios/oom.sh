# shellcheck shell=bash
# Area "oom" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario oomkill: t_oom grow in a 40 MiB memory cgroup the test makes (v1
# memory controller or cgroup2, whichever has it), traced with -p -f top,
# is OOM-killed: heaptrace says so on stderr and in the profile, whose one
# stack is grow_heap's 1 MiB blocks; --snapshot-at-rss 16 MiB wrote one
# snapshot before the kill.  Scenario intervalbytes: t_oom steps allocates
# 3 x 1 MiB, waiting between steps: --interval-bytes 1048576 writes exactly
# 3 numbered snapshots, the k-th holding k MiB in use; with -i, --at-peak
# and --diff, one sequence (4 with -i's final one).  Scenario usr1snap:
# each SIGUSR1 to heaptrace writes exactly one snapshot.  Scenario oomfork
# and rsssnap: below.

# oom_cgroup NAME: make a memory cgroup with a 40 MiB limit; its directory
# in OOM_CG, the file to put a process in in OOM_PROCS.  1 when none can be made.
oom_cgroup() {
	OOM_CG=""
	if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] && mkdir "/sys/fs/cgroup/memory/$1" 2>/dev/null; then
		OOM_CG=/sys/fs/cgroup/memory/$1
		echo $((40 << 20)) >"$OOM_CG/memory.limit_in_bytes" || return 1
		echo $((40 << 20)) >"$OOM_CG/memory.memsw.limit_in_bytes" 2>/dev/null   # with swap accounting: no swap either
	else
		local root
		for root in /sys/fs/cgroup/unified /sys/fs/cgroup; do
			grep -qw memory "$root/cgroup.controllers" 2>/dev/null || continue
			echo +memory >"$root/cgroup.subtree_control" 2>/dev/null
			mkdir "$root/$1" 2>/dev/null || continue
			OOM_CG=$root/$1
			echo $((40 << 20)) >"$OOM_CG/memory.max" || return 1
			echo 0 >"$OOM_CG/memory.swap.max" 2>/dev/null
			break
		done
	fi
	[ -n "$OOM_CG" ] && OOM_PROCS=$OOM_CG/cgroup.procs
}

# oom_limited: "yes" when this shell's memory cgroup has a limit (then
# --snapshot-at-rss watches that cgroup's usage, not the target's RSS).
oom_limited() {
	local cg lim
	cg=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)
	if [ -n "$cg" ]; then
		lim=$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes" 2>/dev/null)
	else
		cg=$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup)
		lim=$(cat "/sys/fs/cgroup/unified$cg/memory.max" "/sys/fs/cgroup$cg/memory.max" 2>/dev/null | head -1)
	fi
	if [[ $lim =~ ^[0-9]+$ ]] && [ "$lim" -lt $((1 << 62)) ]; then echo yes; else echo no; fi
}

# scenario oomfallback: oomkill again with the oom:mark_victim tracepoint
# left out (HEAPTRACE_TEST_NO_OOM_TRACEPOINT=1, user/tracer/tracer.c): the
# kill is told by the target's end and its memory cgroup's oom_kill count
# (session/oom.c), with the same checks, and -v says the tracepoint is out.
scenario_oomkill() { oom_kill_run oomkill ""; }
scenario_oomfallback() { oom_kill_run oomfallback 1; }

# oom_kill_run KEY NO_TRACEPOINT: scenario oomkill (NO_TRACEPOINT empty) or oomfallback.
oom_kill_run() {
	local key=$1 fb=$2 d="" tpid hpid cg=ht_oom_test_$$ n b
	if ! oom_cgroup "$cg"; then
		fail "$key: a memory cgroup can be made" "neither /sys/fs/cgroup/memory nor a cgroup2 with memory"
		return
	fi
	mkfifo "$TMP/$key.fifo"
	# shellcheck disable=SC2016
	sh -c 'echo $$ >"$1"; exec "$2" grow "$3"' _ "$OOM_PROCS" "$TB/t_oom" "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if wait_for "$TMP/$key.tout" '^ready$' 10 "$tpid"; then
		echo "${fb:+HEAPTRACE_TEST_NO_OOM_TRACEPOINT=1 }heaptrace ${fb:+-v }-f top -o $key.txt --snapshot-at-rss 16777216 -p PID" >"$TMP/$key.cmd"
		# shellcheck disable=SC2086  # ${fb:+-v}: no word at all without it
		HEAPTRACE_TEST_NO_OOM_TRACEPOINT=$fb timeout -k 5 "$(tmo)" "$HT" ${fb:+-v} -f top -o "$TMP/$key.txt" \
			--snapshot-at-rss 16777216 -p "$tpid" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
		hpid=$!
		if wait_for "$TMP/$key.err" "^heaptrace: tracing PID $tpid" 30 "$hpid"; then
			release "$key"
			wait_exit "$tpid" 30 || d+="the target still runs 30 s after it began to grow"$'\n'
			wait_exit "$hpid" 30 || d+="heaptrace still runs 30 s after"$'\n'
			echo "$WRC" >"$TMP/$key.rc"
		else
			d+="heaptrace did not attach"$'\n'
		fi
	else
		d+="t_oom did not start: $(cat "$TMP/$key.tout")"$'\n'
	fi
	kill_tree "${hpid:-}" "$tpid"
	rmdir "$OOM_CG" 2>/dev/null || d+="cannot remove the cgroup $OOM_CG"$'\n'
	grep -q '^survived$' "$TMP/$key.tout" && d+="t_oom was not killed in a 40 MiB cgroup"$'\n'
	[ -z "$d" ] && d=$(rc_diag "$key" 0)
	grep -q "^heaptrace: PID $tpid (.*) was killed by the kernel's OOM killer" "$TMP/$key.err" ||
		d+="stderr does not say the OOM killer killed PID $tpid"$'\n'
	if [ -n "$fb" ]; then
		grep -q "^heaptrace: HEAPTRACE_TEST_NO_OOM_TRACEPOINT: the OOM killer is watched through the cgroup's events only$" \
			"$TMP/$key.err" || d+="-v does not say the tracepoint was left out"$'\n'
		grep -q "^heaptrace: memory cgroup: .*; events /sys/fs/cgroup/.*$cg/memory\.\(oom_control\|events\)$" "$TMP/$key.err" ||
			d+="-v does not name the test's cgroup's events file"$'\n'
	fi
	report "$key: the OOM kill is said on stderr${fb:+ (by the memory cgroup events, no tracepoint)}, heaptrace exits 0" "$d${d:+$(ctx "$key")}"
	d=""
	grep -q "^  OOM: *killed by the kernel's OOM killer" "$TMP/$key.txt" 2>/dev/null ||
		d+="no OOM line in the -f top profile"$'\n'
	# The one stack: grow_heap's, every block 1 MiB, at least the 16 MiB the snapshot saw.
	n=$(grep -c '^#[0-9]' "$TMP/$key.txt" 2>/dev/null)
	[ "$n" = 1 ] || d+="$n stacks in the profile, want 1"$'\n'
	grep -A1 '^#1 ' "$TMP/$key.txt" 2>/dev/null | grep -q '^ *grow_heap ' || d+="the top stack is not grow_heap's"$'\n'
	b=$(sed -n 's/^#1 .*in use \([0-9,]*\) B \/ \([0-9]*\) obj.*/\1 \2/p' "$TMP/$key.txt" | tr -d ,)
	read -r bytes objs <<<"$b"
	if [ -z "${objs:-}" ] || [ "$bytes" != $((objs << 20)) ] || [ "$objs" -lt 16 ] || [ "$objs" -gt 40 ]; then
		d+="in use: '$b', want 16 to 40 blocks of 1 MiB"$'\n'
	fi
	report "$key: the -f top profile says OOM and names grow_heap's 1 MiB blocks" "$d${d:+$(ctx "$key")}"
	d=""
	n=$(find "$TMP" -maxdepth 1 -name "$key.*000[0-9]*" | wc -l)
	[ "$n" = 1 ] || d+="$n snapshots, want 1"$'\n'
	grep -q "^heaptrace: memory cgroup usage at [0-9]* bytes (--snapshot-at-rss 16777216): snapshot 1$" "$TMP/$key.err" ||
		d+="stderr does not say the snapshot at 16 MiB"$'\n'
	report "$key: --snapshot-at-rss wrote one snapshot before the kill" "$d${d:+$(ctx "$key")}"
}

# oom_steps KEY N SIGNALS HEAPTRACE-ARGS...: heaptrace ARGS -- t_oom steps
# FIFO N SIZE (OOM_STEP, default 1048576), released step by step (0.4 s
# apart); with SIGNALS=usr1, a SIGUSR1 to heaptrace before each release.
# Sets HPID; KEY.rc.
oom_steps() {
	local key=$1 n=$2 sig=$3 i hp
	shift 3
	mkfifo "$TMP/$key.fifo"
	ht_bg "$key" "$@" -- "$TB/t_oom" steps "$TMP/$key.fifo" "$n" "${OOM_STEP:-1048576}"
	# shellcheck disable=SC2153  # HPID: set by ht_bg
	wait_for "$TMP/$key.tout" '^ready$' 20 "$HPID" || return 1
	hp=$(pgrep -P "$HPID" | head -1)
	for ((i = 1; i <= n + 1; i++)); do
		if [ "$sig" = usr1 ]; then
			kill -USR1 "${hp:-$HPID}"
			wait_for "$TMP/$key.err" "^heaptrace: SIGUSR1: snapshot $i\$" 10 "$HPID" || return 1
		fi
		release "$key"
		[ "$i" -gt "$n" ] || wait_for "$TMP/$key.tout" "^step$i\$" 10 "$HPID" || return 1
		sleep 0.4
	done
	ht_bg_wait "$key" "$HPID" 30
}

scenario_intervalbytes() {
	local key=intervalbytes d="" n k got
	oom_steps "$key" 3 none -o "$TMP/$key.txt" --interval-bytes 1048576 || d+="the steps did not run"$'\n'
	[ -z "$d" ] && d=$(rc_diag "$key" 0)
	n=$(find "$TMP" -maxdepth 1 -name "$key.txt.0*" | wc -l)
	[ "$n" = 3 ] || d+="$n snapshots, want 3"$'\n'
	for k in 1 2 3; do
		got=$(sed -n '1s/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p' "$TMP/$key.txt.000$k.heap" 2>/dev/null)
		[ "$got" = $((k << 20)) ] || d+="snapshot $k: '$got' bytes in use, want $((k << 20))"$'\n'
	done
	report "$key: 3 x 1 MiB with --interval-bytes 1048576 writes 3 snapshots of 1, 2, 3 MiB" "$d${d:+$(ctx "$key")}"

	# With -i (its final snapshot is the 4th), --at-peak and --diff: one sequence, the peak, the growth.
	key=intervalmix
	d=""
	oom_steps "$key" 3 none -o "$TMP/$key" -i 100 --at-peak --diff --interval-bytes 1048576 ||
		d+="the steps did not run"$'\n'
	[ -z "$d" ] && d=$(rc_diag "$key" 0)
	n=$(find "$TMP" -maxdepth 1 -name "$key.0*.heap" | wc -l)
	[ "$n" = 4 ] || d+="$n snapshots, want 4 (3 by volume, -i's final one)"$'\n'
	[ -s "$TMP/$key.peak.heap" ] || d+="no $key.peak.heap"$'\n'
	n=$(grep -c '^heaptrace:   +1048576  step_alloc$' "$TMP/$key.err")
	[ "$n" = 2 ] || d+="--diff: $n lines '+1048576  step_alloc', want 2"$'\n'
	report "$key: --interval-bytes with -i, --at-peak, --diff: 4 snapshots, the peak, 2 growths" "$d${d:+$(ctx "$key")}"
}

# scenario rsssnap: 3 x 8 MiB, written (resident), with --snapshot-at-rss
# 12 MiB and no cgroup limit: one snapshot, taken between the 2nd step's
# malloc and the 3rd: 16 MiB in use.
scenario_rsssnap() {
	local key=rsssnap d="" n got
	OOM_STEP=$((8 << 20)) oom_steps "$key" 3 none -o "$TMP/$key.txt" --snapshot-at-rss $((12 << 20)) ||
		d+="the steps did not run"$'\n'
	[ -z "$d" ] && d=$(rc_diag "$key" 0)
	n=$(find "$TMP" -maxdepth 1 -name "$key.txt.0*" | wc -l)
	[ "$n" = 1 ] || d+="$n snapshots, want 1"$'\n'
	# Where heaptrace itself runs in a memory cgroup with a limit, its usage is the measure: when the snapshot comes is not ours to know.
	if [ "$(oom_limited)" = yes ]; then
		grep -q "^heaptrace: memory cgroup usage at [0-9]* bytes (--snapshot-at-rss 12582912): snapshot 1$" \
			"$TMP/$key.err" || d+="stderr does not say the cgroup usage snapshot"$'\n'
	else
		got=$(sed -n '1s/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p' "$TMP/$key.txt.0001.heap" 2>/dev/null)
		[ "$got" = $((16 << 20)) ] || d+="the snapshot holds '$got' bytes in use, want $((16 << 20))"$'\n'
		grep -q "^heaptrace: RSS at [0-9]* bytes (--snapshot-at-rss 12582912): snapshot 1$" "$TMP/$key.err" ||
			d+="stderr does not say the RSS snapshot"$'\n'
	fi
	report "$key: --snapshot-at-rss 12 MiB over 3 x 8 MiB: one snapshot, of 16 MiB" "$d${d:+$(ctx "$key")}"
}

scenario_usr1snap() {
	local key=usr1snap d="" n
	oom_steps "$key" 2 usr1 -o "$TMP/$key.txt" || d+="the steps or the signals did not run"$'\n'
	[ -z "$d" ] && d=$(rc_diag "$key" 0)
	n=$(find "$TMP" -maxdepth 1 -name "$key.txt.0*" | wc -l)
	[ "$n" = 3 ] || d+="$n snapshots after 3 SIGUSR1, want 3"$'\n'
	[ -s "$TMP/$key.txt" ] || d+="no final profile in -o"$'\n'
	n=$(grep -c "SIGUSR1: snapshot" "$TMP/$key.err")
	[ "$n" = 3 ] || d+="stderr says $n SIGUSR1 snapshots, want 3"$'\n'
	report "$key: each SIGUSR1 writes one snapshot, the final profile as usual" "$d${d:+$(ctx "$key")}"
}

# scenario oomfork: t_oom forkgrow in a 40 MiB cgroup, traced with
# --follow-fork -f html --http unix:SOCK -p PARENT: the child is OOM-killed;
# while the parent still runs /metrics counts the kill; stderr names the
# child; the child's report has oom_kills 1 and says OOM, the parent's 0.
scenario_oomfork() {
	local key=oomfork d="" tpid hpid cg=ht_oomfork_test_$$ kid m
	if ! oom_cgroup "$cg"; then
		fail "$key: a memory cgroup can be made" "neither /sys/fs/cgroup/memory nor a cgroup2 with memory"
		return
	fi
	mkfifo "$TMP/$key.fifo"
	# shellcheck disable=SC2016
	sh -c 'echo $$ >"$1"; exec "$2" forkgrow "$3"' _ "$OOM_PROCS" "$TB/t_oom" "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	tpid=$!
	if wait_for "$TMP/$key.tout" '^ready$' 10 "$tpid"; then
		echo "heaptrace --follow-fork -f html -o $key.html --http unix:$key.sock -p PID" >"$TMP/$key.cmd"
		timeout -k 5 "$(tmo)" "$HT" --follow-fork -f html -o "$TMP/$key.html" --http "unix:$TMP/$key.sock" \
			-p "$tpid" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
		hpid=$!
		if wait_for "$TMP/$key.err" "^heaptrace: tracing PID $tpid" 30 "$hpid"; then
			release "$key"
			if wait_for "$TMP/$key.tout" '^child-killed$' 30 "$tpid"; then
				m=$(curl -s --max-time 10 --unix-socket "$TMP/$key.sock" http://heaptrace/metrics)
				grep -qx 'heaptrace_oom_kills_total 1' <<<"$m" ||
					d+="/metrics: '$(grep oom <<<"$m")', want heaptrace_oom_kills_total 1"$'\n'
			else
				d+="the child was not killed: $(cat "$TMP/$key.tout")"$'\n'
			fi
			release "$key"
			wait_exit "$tpid" 20 || d+="the parent still runs"$'\n'
			wait_exit "$hpid" 30 || d+="heaptrace still runs 30 s after"$'\n'
			echo "$WRC" >"$TMP/$key.rc"
		else
			d+="heaptrace did not attach"$'\n'
		fi
	else
		d+="t_oom did not start: $(cat "$TMP/$key.tout")"$'\n'
	fi
	kill_tree "${hpid:-}" "$tpid"
	rmdir "$OOM_CG" 2>/dev/null || d+="cannot remove the cgroup $OOM_CG"$'\n'
	[ -z "$d" ] && d=$(rc_diag "$key" 0)
	kid=$(sed -n "s/^heaptrace: child PID \([0-9]*\) (of PID $tpid): profile in .*/\1/p" "$TMP/$key.err" | head -1)
	if [ -z "$kid" ]; then
		d+="no child profile said on stderr"$'\n'
	else
		grep -q "^heaptrace: PID $kid (.*) was killed by the kernel's OOM killer" "$TMP/$key.err" ||
			d+="stderr does not say the OOM killer killed child $kid"$'\n'
		grep -q "^heaptrace: PID $tpid (.*) was killed" "$TMP/$key.err" && d+="stderr says the parent was killed"$'\n'
		grep -q '\["oom_kills",1,0\]' "$TMP/$key.$kid.html" 2>/dev/null ||
			d+="the child's report $key.$kid.html has no oom_kills 1"$'\n'
		grep -q '\["oom_kills",0,0\]' "$TMP/$key.html" 2>/dev/null ||
			d+="the parent's report $key.html has no oom_kills 0"$'\n'
	fi
	report "$key: --follow-fork: the child's OOM kill in /metrics, on stderr and in its own report only" "$d${d:+$(ctx "$key")}"
}

# volume_snaps KEY: the snapshots' "objects bytes" allocated (-o
# $TMP/KEY.d/p), in order, one a line.
volume_snaps() {
	local f
	for f in $(find "$TMP/$1.d" -name 'p.0*' | sort); do
		sed -n '1s/^heap profile: *[0-9]*: *[0-9]* \[ *\([0-9]*\): *\([0-9]*\)\].*/\1 \2/p' "$f"
	done
}

# scenario volumepaths: --interval-bytes counts every path's allocations.
# t_volume makes nothing but N x SIZE pairs.  Burst (100,000 x 528 bytes
# as fast as the ring takes them, 4 MiB multiples): the ring is drained up
# to each multiple, so the 12 snapshots hold exactly the allocations up to
# it (the k-th: ceil(k x 4 MiB / 528) objects), though the program runs
# far ahead of heaptrace's poll and ends 10 ms after its last multiple.
# Paced (40,000 x 1,320 bytes, 5 ms asleep every 800: a multiple every 20
# ms at least), every path writes the same 12, the k-th between k and
# k + 1 multiples: the ring, the stub unbatched, --no-inject, the kernel's
# stack capture, --sample-rate 1.
scenario_volumepaths() {
	local key d="" every=4194304 k n b want got path env args VOLUME_N
	key=volumeburst
	mkdir -p "$TMP/$key.d"
	ht $key --interval-bytes $every -o "$TMP/$key.d/p" "$TB/t_volume" 100000 528
	d=$(rc_diag $key 0)
	got=$(volume_snaps $key)
	VOLUME_N=$(find "$TMP/$key.d" -name 'p.0*' | wc -l)
	[ "$VOLUME_N" = 12 ] || d+="$VOLUME_N snapshots, want 12"$'\n'
	want=$(for k in $(seq 1 12); do n=$(((k * every + 527) / 528)); echo "$n $((n * 528))"; done)
	if [ "$VOLUME_N" = 12 ] && [ "$got" != "$want" ] && [ -z "${HT_TEST_NO_INJECT:-}" ]; then
		d+="snapshots' allocated 'objects bytes': $(echo $got), want $(echo $want)"$'\n'
	fi
	grep -q '^heap profile: *0: *0 \[100000: 52800000\]' "$TMP/$key.d/p" || d+="the final profile: $(head -1 "$TMP/$key.d/p")"$'\n'
	report "$key: --interval-bytes 4 MiB over a burst of 100,000 x 528 bytes: 12 snapshots, each at its multiple" \
		"$d${d:+$(ctx $key)}"

	for path in ring unbatched noinject kernel sampled1; do
		key=volume$path d="" env="" args=""
		case $path in
		unbatched) env=HEAPTRACE_BATCH=0 ;;
		noinject) args=--no-inject ;;
		kernel) args="--stack-capture kernel" ;;
		sampled1) args="--sample-rate 1" ;;
		esac
		mkdir -p "$TMP/$key.d"
		# shellcheck disable=SC2086
		if [ -n "$env" ]; then
			HEAPTRACE_BATCH=0 ht $key $args --interval-bytes $every -o "$TMP/$key.d/p" "$TB/t_volume" 40000 1320 800 5
		else
			ht $key $args --interval-bytes $every -o "$TMP/$key.d/p" "$TB/t_volume" 40000 1320 800 5
		fi
		d=$(rc_diag $key 0)
		got=$(volume_snaps $key)
		VOLUME_N=$(find "$TMP/$key.d" -name 'p.0*' | wc -l)
		[ "$VOLUME_N" = 12 ] || d+="$VOLUME_N snapshots, want 12"$'\n'
		k=0
		while read -r _ b; do
			k=$((k + 1))
			[ "$b" -ge $((k * every)) ] && [ "$b" -lt $(((k + 1) * every)) ] ||
				d+="snapshot $k: $b bytes allocated, want [$((k * every)), $(((k + 1) * every)))"$'\n'
		done <<<"$got"
		grep -q '^heap profile: *0: *0 \[ *40000: *52800000\]' "$TMP/$key.d/p" ||
			d+="the final profile: $(head -1 "$TMP/$key.d/p")"$'\n'
		report "$key: --interval-bytes 4 MiB over 40,000 x 1,320 bytes paced, ${args:-${env:-the ring}}: 12 snapshots" \
			"$d${d:+$(ctx $key)}"
	done
}
