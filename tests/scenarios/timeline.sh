# shellcheck shell=bash
# Area "timeline" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# the heap over time: scenarios overtime (-i snapshots, --diff, --at-peak,
# --min-age, -f top) and liveview (-f top -i on a terminal).

# snap_count KEY: the number of "heaptrace: snapshot N: " lines (-v) in KEY.err.
snap_count() {
	local n
	n=$(grep -cE '^heaptrace: snapshot [0-9]+: ' "$TMP/$1.err" 2>/dev/null)
	echo "${n:-0}"
}

# wait_snaps KEY N SECS PID: until KEY.err has N snapshot lines; gives up
# after SECS seconds or once PID has exited.
wait_snaps() {
	local n=$(($3 * 10))
	while [ "$n" -gt 0 ]; do
		[ "$(snap_count "$1")" -ge "$2" ] && return 0
		kill -0 "$4" 2>/dev/null || break
		sleep 0.1
		n=$((n - 1))
	done
	[ "$(snap_count "$1")" -ge "$2" ]
}

# snap_line KEY N: "K stacks, B bytes in use" of the -v line of snapshot N.
snap_line() {
	sed -nE "s/^heaptrace: snapshot $2: [^,]*, ([0-9]+ stacks, -?[0-9]+ bytes in use), [0-9]+ ms\$/\\1/p" \
		"$TMP/$1.err" | head -1
}

# signed_leafval KEY FN: like leafval, for lines whose value may be negative
# ("a;b;fn -15000", heaptrace diff -f collapsed).
signed_leafval() {
	awk -v fn="$2" '
	match($0, / -?[0-9]+$/) {
		v = substr($0, RSTART + 1) + 0
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] == fn) s += v
	}
	END { printf "%.0f\n", s }' "$TMP/$1.out" 2>/dev/null
}

# top_entry FILE FN: the ranked entry of a -f top report whose innermost
# frame is FN: its "#N ..." line and, when it has one, its "freed ..." line,
# one per output line.
top_entry() {
	awk -v fn="$2" '
	/^#[0-9]+ / { head = $0; freed = ""; first = 1; next }
	/^      freed / { freed = $0; next }
	/^        / && first {
		first = 0
		name = $0
		sub(/^ +/, "", name)
		sub(/  .*$/, "", name)
		if (name == fn) {
			print head
			if (freed != "") print freed
			exit
		}
	}' "$1" 2>/dev/null
}

# lifetimes_sum LINE: the sum of the "<2us:COUNT" and ">=BUCKET:COUNT"
# counts of a "freed F, temporary T; lifetimes: ..." line.
lifetimes_sum() {
	echo "$1" | tr ' ' '\n' | sed -nE 's/^(<2us|>=[0-9]+(us|ms|s)):([0-9]+)$/\3/p' |
		awk '{ s += $1 } END { print s + 0 }'
}

# ---------------------------------------------------------------------------
# Heap over time: -i snapshots, --diff, heaptrace diff, pprof -base on two
# snapshots, --at-peak / --peak-step, the -f top summary, --min-age.
# Exact numbers come from the sources of t_overtime, t_peak and t_minage;
# timing can only change how many snapshots there are, never a checked
# number: the harness releases t_overtime's phases through a FIFO and uses
# only snapshots taken while the target is blocked (or after it exited).
scenario_overtime() {
	overtime_snapshots
	overtime_top
	overtime_single
	overtime_peak
	overtime_minage
	overtime_diff_errors
	overtime_lifetimes
	overtime_diff_runs
}

# heaptrace diff of two runs of t_twice (a PIE: ASLR maps it and libc
# elsewhere each run): 5 then 10 blocks of keep_fn kept, as many of temp_fn
# freed at once.  Stacks match by their frames, not their addresses: keep_fn
# grew by 5 x 4096 in use, both by 5 allocations; backwards, everything is
# negative, printed signed.
overtime_diff_runs() {
	local d f
	ht dr_a -o "$TMP/dr_a.heap" -- "$TB/t_twice" 5
	ht dr_b -o "$TMP/dr_b.heap" -- "$TB/t_twice" 10
	d=$(rc_diag dr_a 0)$(rc_diag dr_b 0)
	[ "$(grep -m1 't_twice$' "$TMP/dr_a.heap" | cut -d- -f1)" != "$(grep -m1 't_twice$' "$TMP/dr_b.heap" | cut -d- -f1)" ] ||
		d+="both runs mapped t_twice at the same address: ASLR off?"$'\n'
	report "overtime: diff of runs: t_twice 5 and t_twice 10 traced, mapped at two addresses" "$d"

	ht dr_col diff -f collapsed "$TMP/dr_a.heap" "$TMP/dr_b.heap"
	d=$(rc_diag dr_col 0)
	grep -qE '(^|;)main;keep_fn 20480$' "$TMP/dr_col.out" || d+="no '...;main;keep_fn 20480' line"$'\n'
	[ "$(grep -c '' "$TMP/dr_col.out")" = 1 ] || d+="$(grep -c '' "$TMP/dr_col.out") lines, want 1"$'\n'
	grep -q '0x' "$TMP/dr_col.out" && d+="an address where a frame was named"$'\n'
	[ -s "$TMP/dr_col.err" ] && d+="stderr: $(head -2 "$TMP/dr_col.err")"$'\n'
	[ -n "$d" ] && d+=$(cat "$TMP/dr_col.out")
	report "overtime: diff of runs -f collapsed: one line, ...;main;keep_fn 20480, every frame named" "$d"

	ht dr_back diff -f collapsed --value alloc_objects "$TMP/dr_b.heap" "$TMP/dr_a.heap"
	d=$(rc_diag dr_back 0)
	for f in keep_fn temp_fn; do
		[ "$(signed_leafval dr_back $f)" = -5 ] || d+="$f $(signed_leafval dr_back $f), want -5"$'\n'
	done
	[ "$(grep -c '' "$TMP/dr_back.out")" = 2 ] || d+="$(grep -c '' "$TMP/dr_back.out") lines, want 2"$'\n'
	report "overtime: diff of runs backwards --value alloc_objects: keep_fn -5, temp_fn -5" "$d"

	ht dr_top diff --value alloc_objects "$TMP/dr_b.heap" "$TMP/dr_a.heap"
	d=$(rc_diag dr_top 0)
	grep -qE '^  allocated: +-20,980 bytes in -10 objects$' "$TMP/dr_top.out" ||
		d+="no 'allocated: -20,980 bytes in -10 objects'"$'\n'
	[ "$(grep -cE '^#[12] +-5 objects \(-50\.0%\) +in use -?[0-9,]+ B / -?[0-9]+ obj, allocated -[0-9,]+ B / -5 obj$' "$TMP/dr_top.out")" = 2 ] ||
		d+="not two entries '#N -5 objects (-50.0%) ... allocated ... / -5 obj'"$'\n'
	grep -q '18446744' "$TMP/dr_top.out" && d+="a negative count printed unsigned"$'\n'
	[ "$(grep -A1 -E '^#[12] ' "$TMP/dr_top.out" | grep -cE '^ +(keep_fn|temp_fn)  tests/targets/t_twice.c:[0-9]+$')" = 2 ] ||
		d+="not two entries whose first frames are keep_fn and temp_fn at t_twice.c"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,12p' "$TMP/dr_top.out")
	report "overtime: diff of runs backwards -f top: -5 objects (-50.0%) each, signed, frames named" "$d"

	ht dr_pp diff -f pprof "$TMP/dr_a.heap" "$TMP/dr_b.heap"
	d=$(rc_diag dr_pp 0)
	cp "$TMP/dr_pp.out" "$TMP/dr_pp.heap"
	pprof_has_record "$TMP/dr_pp.heap" 5 20480 5 20480 || d+="no record 5: 20480 [5: 20480] (keep_fn)"$'\n'
	pprof_has_record "$TMP/dr_pp.heap" 0 0 5 500 || d+="no record 0: 0 [5: 500] (temp_fn)"$'\n'
	[ "$(grep -c '@ 0x' "$TMP/dr_pp.heap")" = 2 ] || d+="$(grep -c '@ 0x' "$TMP/dr_pp.heap") records, want 2"$'\n'
	report "overtime: diff of runs -f pprof: keep_fn 5: 20480 [5: 20480], temp_fn 0: 0 [5: 500], nothing else" "$d"

	ht dr_proto diff -f proto "$TMP/dr_a.heap" "$TMP/dr_b.heap"
	d=$(rc_diag dr_proto 0)
	cp "$TMP/dr_proto.out" "$TMP/dr_proto.pb.gz"
	pprof_tool dr_go go -traces "$TMP/dr_proto.pb.gz"
	[ "$(cat "$TMP/dr_go.rc")" = 0 ] || d+="go tool pprof -traces: exit $(cat "$TMP/dr_go.rc"): $(head -2 "$TMP/dr_go.err")"$'\n'
	grep -qE '^ +20kB +keep_fn$' "$TMP/dr_go.out" || d+="go tool pprof: no '20kB keep_fn' trace"$'\n'
	[ -n "$d" ] && d+=$(head -20 "$TMP/dr_go.out")
	report "overtime: diff of runs -f proto: go tool pprof -traces shows keep_fn +20kB" "$d"
}

# t_lifetimes: held_fn's 20 blocks each live >= 5 ms (nanosleep), brief_fn's
# 200 are freed at once.  Every path gives held_fn's lifetimes in buckets of
# 4 ms or more: the ring's events carry the time of their call (the stub
# stamps them), not the drain's pass; HEAPTRACE_BATCH=0 (a record site a
# call) and --no-inject take the kernel's time at the probe.
overtime_lifetimes() {
	local mode key e d
	for mode in ring sites noinject; do
		key=lt_$mode
		case $mode in
		ring) ht $key -v -f top -- "$TB/t_lifetimes" ;;
		sites) HEAPTRACE_BATCH=0 ht $key -v -f top -- "$TB/t_lifetimes" ;;
		noinject) ht $key --no-inject -v -f top -- "$TB/t_lifetimes" ;;
		esac
		d=$(rc_diag $key 0)
		n=$(rl_events_num $key ring_events)
		if [ $mode = ring ]; then
			[ "${n:-0}" -ge 440 ] || d+="ring_events=${n:-?}, want >= 440 (the ring's path)"$'\n'
		else
			[ "${n:-0}" = 0 ] || d+="ring_events=$n, want 0"$'\n'
		fi
		e=$(top_entry "$TMP/$key.out" held_fn)
		echo "$e" | sed -n 2p | grep -qE '^      freed 20, temporary [0-9]+; lifetimes:( >=([4-9]ms|[0-9]{2,}ms|[0-9]+s):[0-9]+)+$' ||
			d+="held_fn's freed line: $(echo "$e" | sed -n 2p)"$'\n'
		[ "$(lifetimes_sum "$(echo "$e" | sed -n 2p)")" = 20 ] || d+="held_fn's lifetimes add up to $(lifetimes_sum "$(echo "$e" | sed -n 2p)"), want 20"$'\n'
		e=$(top_entry "$TMP/$key.out" brief_fn)
		echo "$e" | sed -n 2p | grep -qE '^      freed 200, ' || d+="brief_fn's freed line: $(echo "$e" | sed -n 2p)"$'\n'
		[ "$(lifetimes_sum "$(echo "$e" | sed -n 2p)")" = 200 ] || d+="brief_fn's lifetimes add up to $(lifetimes_sum "$(echo "$e" | sed -n 2p)"), want 200"$'\n'
		report "overtime: lifetimes ($mode): held_fn's 20 blocks held 5 ms each in buckets >= 4ms, brief_fn's 200 counted" "$d"
	done
}

# t_overtime FIFO, -i 0.5 --diff --at-peak --peak-step 500 -o PREFIX, -v.
#   snapshot 1       taken before the first release: nothing allocated yet
#   release          phase 1: keep_fn 4 x 5000 kept, 6 ticks (leak_fn 1000
#                    kept, churn_fn 1 MiB freed at once), prints "phase1"
#   snapshot S       the first whose read started after "phase1": with c
#                    snapshot lines seen after "phase1", snapshot c+1 may have
#                    read the maps before it, c+2 cannot (ticks run one after
#                    another); the target stays blocked until S is written
#   release          phase 2: drop_fn frees 3 keep_fn blocks, 10 ticks, exit
#   snapshot N       the final one, after the exit
# In use: S: keep 4/20000 + leak 6/6000 = 10/26000; N: keep 1/5000 + leak
# 16/16000 = 17/21000.  Allocated: S: 4 + 6 + 6 objects, 20000 + 6000 +
# 6 x 1048576 = 6317456 bytes; N: 4 + 16 + 16 = 36 objects, 20000 + 16000 +
# 16 x 1048576 = 16813216 bytes.
OT_SRC=tests/targets/t_overtime.c
overtime_snapshots() {
	local pre=$TMP/ot d="" c s n i hp
	mkfifo "$TMP/ot.fifo"
	ht_bg ot -v -i 0.5 --diff --at-peak --peak-step 500 -o "$pre" -- "$TB/t_overtime" "$TMP/ot.fifo"
	hp=$HPID
	if ! wait_snaps ot 1 30 "$hp"; then
		fail "overtime: snapshot 1 is written while the target waits" "$(ctx ot)"
		kill_tree "$hp"
		return
	fi
	if ! release ot || ! wait_for "$TMP/ot.tout" '^phase1$' 20 "$hp"; then
		fail "overtime: the target runs phase 1" "target output: $(cat "$TMP/ot.tout")"$'\n'"$(ctx ot)"
		kill_tree "$hp"
		return
	fi
	c=$(snap_count ot)
	s=$((c + 2))
	if ! wait_snaps ot "$s" 20 "$hp"; then
		fail "overtime: snapshot $s is written while the target waits after phase 1" "$(ctx ot)"
		kill_tree "$hp"
		return
	fi
	release ot || d+="could not release phase 2"$'\n'
	ht_bg_wait ot "$hp" 30
	d+=$(rc_diag ot 0)
	grep -q '^phase2$' "$TMP/ot.tout" || d+="the target did not finish: $(cat "$TMP/ot.tout")"$'\n'
	report "overtime: heaptrace -i 0.5 -o PREFIX over t_overtime exits 0 (the command's status)" "$d"

	# One -v line per snapshot, numbered 1..N in order, each naming
	# PREFIX.NNNN.heap; exactly these files exist, N > S (the final one), and
	# -o PREFIX itself is no file.
	n=$(snap_count ot)
	d=""
	local want="" got files
	for ((i = 1; i <= n; i++)); do
		want+=$(printf '%d %s.%04d.heap' "$i" "$pre" "$i")$'\n'
	done
	got=$(sed -nE 's/^heaptrace: snapshot ([0-9]+): ([^,]*), [0-9]+ stacks, -?[0-9]+ bytes in use, [0-9]+ ms$/\1 \2/p' \
		"$TMP/ot.err")$'\n'
	[ "$got" = "$want" ] || d+="snapshot lines (number, path) are not 1..$n in order:"$'\n'"$(rel "$got" | head -5)"$'\n'
	files=$(printf '%s\n' "$pre".[0-9]*.heap | sed -E 's/.*\.([0-9]+)\.heap$/\1/' | sort | tr '\n' ' ')
	[ "$files" = "$(seq -f '%04g' 1 "$n" | tr '\n' ' ')" ] ||
		d+="files PREFIX.*.heap: $files; want 0001 to $(printf '%04d' "$n")"$'\n'
	[ "$n" -gt "$s" ] || d+="$n snapshots, want more than $s (the final one comes after snapshot $s)"$'\n'
	[ -e "$pre" ] && d+="-o PREFIX created a file named PREFIX itself"$'\n'
	report "overtime: -v names snapshots 1..N ($n) in order, files PREFIX.0001.heap..PREFIX.$(printf '%04d' "$n").heap, the final one after snapshot $s" "$d"
	local fs fn
	fs=$(printf '%s.%04d.heap' "$pre" "$s")
	fn=$(printf '%s.%04d.heap' "$pre" "$n")

	# Snapshot 1: nothing allocated; S: after phase 1; N: the end.
	d=""
	[ "$(snap_line ot 1)" = "0 stacks, 0 bytes in use" ] || d+="snapshot 1: $(snap_line ot 1)"$'\n'
	[ "$(snap_line ot "$s")" = "3 stacks, 26000 bytes in use" ] || d+="snapshot $s: $(snap_line ot "$s")"$'\n'
	[ "$(snap_line ot "$n")" = "3 stacks, 21000 bytes in use" ] || d+="snapshot $n: $(snap_line ot "$n")"$'\n'
	report "overtime: -v lines: snapshot 1 '0 stacks, 0 bytes', $s '3 stacks, 26000 bytes', $n '3 stacks, 21000 bytes'" "$d"
	# Snapshots write allocated counts equal to the in-use ones (or 0) with a
	# leading zero, so go tool pprof keeps four sample types and -base works.
	pprof_header "$pre.0001.heap" "overtime: snapshot 1 (pprof) header" 0 0 00 00
	pprof_header "$fs" "overtime: snapshot $s (after phase 1) header" 10 26000 16 6317456
	pprof_header "$fn" "overtime: snapshot $n (final) header" 17 21000 36 16813216

	# heaptrace diff FIRST LAST (-f top): leak_fn grew 16 x 1000 = 16000,
	# keep_fn 5000 (1 block of 5000 left), churn_fn 0.
	local leak_line
	leak_line=$(site_line "$OT_SRC" leak_fn)
	ht ot_dtop diff "$pre.0001.heap" "$fn"
	d=$(rc_diag ot_dtop 0)
	[ "$(head -1 "$TMP/ot_dtop.out")" = "heaptrace diff: stacks by growth of inuse_space, largest first" ] ||
		d+="first line: $(head -1 "$TMP/ot_dtop.out")"$'\n'
	grep -qE '^#1 +16,000 bytes ' "$TMP/ot_dtop.out" || d+="no '#1   16,000 bytes' entry"$'\n'
	[ "$(grep -A1 -E '^#1 ' "$TMP/ot_dtop.out" | sed -n 2p | sed -E 's/^ +//')" = "leak_fn  $OT_SRC:$leak_line" ] ||
		d+="#1's first frame is not 'leak_fn  $OT_SRC:$leak_line'"$'\n'
	grep -qE '^#2 +5,000 bytes ' "$TMP/ot_dtop.out" || d+="no '#2   5,000 bytes' entry (keep_fn)"$'\n'
	grep -qw churn_fn "$TMP/ot_dtop.out" && d+="churn_fn is listed: its in-use did not grow"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,14p' "$TMP/ot_dtop.out")
	report "overtime: heaptrace diff FIRST LAST: #1 leak_fn +16,000 bytes at $OT_SRC:$leak_line, #2 keep_fn +5,000, no churn_fn" "$d"

	# heaptrace diff S N -f collapsed: signed deltas: leak_fn +10 x 1000,
	# keep_fn -3 x 5000, churn_fn 0 (left out).
	ht ot_dcol diff "$fs" "$fn" -f collapsed
	d=$(rc_diag ot_dcol 0)
	[ "$(signed_leafval ot_dcol leak_fn)" = 10000 ] || d+="leak_fn $(signed_leafval ot_dcol leak_fn), want 10000"$'\n'
	[ "$(signed_leafval ot_dcol keep_fn)" = -15000 ] || d+="keep_fn $(signed_leafval ot_dcol keep_fn), want -15000"$'\n'
	grep -q 'churn_fn' "$TMP/ot_dcol.out" && d+="a churn_fn line: a 0 delta must be left out"$'\n'
	[ "$(grep -c '' "$TMP/ot_dcol.out")" = 2 ] || d+="$(grep -c '' "$TMP/ot_dcol.out") lines, want 2"$'\n'
	grep -qE '(^|;)main;tick;leak_fn 10000$' "$TMP/ot_dcol.out" || d+="no '...;main;tick;leak_fn 10000' line"$'\n'
	[ -n "$d" ] && d+=$(cat "$TMP/ot_dcol.out")
	report "overtime: heaptrace diff S N -f collapsed: leak_fn 10000, keep_fn -15000, no churn_fn line" "$d"

	# --value: allocations between FIRST and LAST: 16 leak_fn, 16 churn_fn, 4 keep_fn.
	ht ot_dao diff "$pre.0001.heap" "$fn" -f collapsed --value alloc_objects
	d=$(rc_diag ot_dao 0)
	for i in leak_fn:16 churn_fn:16 keep_fn:4; do
		[ "$(signed_leafval ot_dao "${i%:*}")" = "${i#*:}" ] ||
			d+="${i%:*} $(signed_leafval ot_dao "${i%:*}"), want ${i#*:}"$'\n'
	done
	report "overtime: heaptrace diff FIRST LAST -f collapsed --value alloc_objects: leak_fn 16, churn_fn 16, keep_fn 4" "$d"

	# heaptrace diff S N -f pprof: growth only.  leak_fn 10: 10000 [10: 10000];
	# churn_fn 0: 0 [10: 10485760] (allocated, nothing kept); keep_fn shrank
	# and allocated nothing: left out.  Totals 10: 10000 [20: 10495760].
	ht ot_dpp diff "$fs" "$fn" -f pprof
	d=$(rc_diag ot_dpp 0)
	cp "$TMP/ot_dpp.out" "$TMP/ot_dpp.heap"
	pprof_has_record "$TMP/ot_dpp.heap" 10 10000 10 10000 || d+="no record 10: 10000 [10: 10000] (leak_fn)"$'\n'
	pprof_has_record "$TMP/ot_dpp.heap" 0 0 10 10485760 || d+="no record 0: 0 [10: 10485760] (churn_fn)"$'\n'
	[ "$(grep -c '@ 0x' "$TMP/ot_dpp.heap")" = 2 ] || d+="$(grep -c '@ 0x' "$TMP/ot_dpp.heap") records, want 2"$'\n'
	grep -qE '(^|[^0-9x])-[0-9]' "$TMP/ot_dpp.heap" && d+="a negative count"$'\n'
	grep -q '^MAPPED_LIBRARIES:' "$TMP/ot_dpp.heap" || d+="no MAPPED_LIBRARIES:"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,5p' "$TMP/ot_dpp.heap")
	report "overtime: heaptrace diff S N -f pprof: leak_fn and churn_fn records, keep_fn (shrank) left out, nothing negative" "$d"
	pprof_header "$TMP/ot_dpp.heap" "overtime: heaptrace diff S N -f pprof header" 10 10000 20 10495760

	# pprof readers on two snapshots.  S -> N: leak_fn +10000 bytes.
	pprof_tool ot_go_sn go -top -unit=B -base "$fs" "$TB/t_overtime" "$fn"
	first_func_is ot_go_sn leak_fn "overtime: go tool pprof -top -base S BINARY N: leak_fn first"
	flat_is ot_go_sn leak_fn 10000B "overtime: go tool pprof -top -base S BINARY N: leak_fn flat 10000B"
	d=$(pprof_rows ot_go_sn | awk '$NF == "churn_fn" && $1 != "0" && $1 != "0B"')
	report "overtime: go tool pprof -top -base S BINARY N: churn_fn has no in-use growth" "$d"
	# FIRST -> LAST: leak_fn +16000 bytes, keep_fn +5000.  FIRST is empty:
	# go's legacy-profile reader gives a profile whose header has no
	# allocations beyond the in-use ones ("0: 0 [0: 0]", or nothing freed
	# yet) 2 sample types instead of 4, and -base then fails with
	# "inconsistent samples type count: 4 != 2"; the snapshots must still be
	# comparable.
	pprof_tool ot_go_fl go -top -unit=B -base "$pre.0001.heap" "$TB/t_overtime" "$fn"
	first_func_is ot_go_fl leak_fn "overtime: go tool pprof -top -base FIRST BINARY LAST: leak_fn first"
	flat_is ot_go_fl leak_fn 16000B "overtime: go tool pprof -top -base FIRST BINARY LAST: leak_fn flat 16000B"
	pprof_tool ot_gp_fl perl --text --show_bytes --base="$pre.0001.heap" "$TB/t_overtime" "$fn"
	first_func_is ot_gp_fl leak_fn "overtime: google-pprof --text --base=FIRST BINARY LAST: leak_fn first"
	flat_is ot_gp_fl leak_fn 16000 "overtime: google-pprof --text --show_bytes --base=FIRST BINARY LAST: leak_fn 16000"
	# The growth-only diff profile is itself a profile pprof reads.
	pprof_tool ot_go_dpp go -top -unit=B "$TB/t_overtime" "$TMP/ot_dpp.heap"
	first_func_is ot_go_dpp leak_fn "overtime: go tool pprof -top on 'heaptrace diff -f pprof': leak_fn first"

	# --diff: after each snapshot but the first a line "growth +N
	# inuse_space since the last snapshot", then up to 5 "+N  FUNCTION".
	# How the growth splits between snapshots depends on timing; the sums
	# do not: growth lines add up to LAST - FIRST = 21000, leak_fn's to
	# 16 x 1000 (it only grows), keep_fn's to 4 x 5000 (it grows in phase 1
	# only, and never has more than 2 other stacks to compete with).
	d=""
	local ng
	ng=$(grep -cE '^heaptrace: growth [-+][0-9]+ inuse_space since the last snapshot$' "$TMP/ot.err")
	[ "$ng" = $((n - 1)) ] || d+="$ng growth lines, want $((n - 1)) (one per snapshot but the first)"$'\n'
	d+=$(awk '
		/^heaptrace: snapshot [0-9]+: / { split($3, a, ":"); want = a[1] + 0 > 1; next_is_snap = 1; got = 0; next }
		next_is_snap { next_is_snap = 0; got = /^heaptrace: growth /
			if (got != want) printf "after snapshot %d: %s\n", a[1], $0 }' "$TMP/ot.err")
	local sum leak keep
	sum=$(sed -nE 's/^heaptrace: growth ([-+][0-9]+) inuse_space since the last snapshot$/\1/p' "$TMP/ot.err" |
		awk '{ s += $1 } END { print s + 0 }')
	leak=$(sed -nE 's/^heaptrace:   \+([0-9]+)  leak_fn$/\1/p' "$TMP/ot.err" | awk '{ s += $1 } END { print s + 0 }')
	keep=$(sed -nE 's/^heaptrace:   \+([0-9]+)  keep_fn$/\1/p' "$TMP/ot.err" | awk '{ s += $1 } END { print s + 0 }')
	[ "$sum" = 21000 ] || d+="growth lines add up to $sum, want 21000"$'\n'
	[ "$leak" = 16000 ] || d+="'+N  leak_fn' lines add up to $leak, want 16000"$'\n'
	[ "$keep" = 20000 ] || d+="'+N  keep_fn' lines add up to $keep, want 20000"$'\n'
	[ -n "$d" ] && d+=$(grep -E '^heaptrace: (snapshot|growth|  )' "$TMP/ot.err" | head -12)
	report "overtime: --diff: a growth line after each snapshot but the first, adding up to 21000; leak_fn +16000, keep_fn +20000 in all" "$d"

	# --at-peak with -i: PREFIX.peak.heap.  The peak is phase 1's last
	# churn: keep 20000 + leak 6000 + churn 1048576 = 1074576.  With
	# --peak-step 500 every tick's rise (1000) starts a new at-peak state, so
	# the at-peak profile is the state at the peak itself: 4 + 6 + 1 = 11
	# objects, 1074576 bytes (allocated counters are the final ones).
	d=""
	grep -qE "^heaptrace: at-peak profile: $pre\\.peak\\.heap \\(peak 1074576 bytes in use, [0-9]+\\.[0-9]+ s after the start\\)\$" \
		"$TMP/ot.err" || d+="no at-peak line for PREFIX.peak.heap, peak 1074576: $(grep 'at-peak' "$TMP/ot.err")"
	report "overtime: --at-peak -i: 'at-peak profile: PREFIX.peak.heap (peak 1074576 bytes in use, T s after the start)'" "$d"
	pprof_header "$pre.peak.heap" "overtime: at-peak profile (--peak-step 500) header" 11 1074576 36 16813216
	ht ot_dpeak diff "$pre.0001.heap" "$pre.peak.heap" -f collapsed
	expect_leaf ot_dpeak leak_fn 6000
	expect_leaf ot_dpeak keep_fn 20000
	expect_leaf ot_dpeak churn_fn 1048576
}

# t_overtime - (no FIFO, the phases back to back) -f top --value alloc_objects:
#   temporary: the 16 churn_fn blocks, each freed right after its malloc;
#   drop_fn frees keep_fn's 3 blocks after churn_fn's last free: none.
#   peak 1074576 (see overtime_snapshots); leaked: 21000 bytes.
overtime_top() {
	local d e
	ht ot_top -f top --value alloc_objects -- "$TB/t_overtime" -
	check_rc ot_top 0 "overtime: -f top over t_overtime exits 0"
	d=""
	grep -qE "^  temporary: +16 allocations freed right after their allocation \(heaptrack's count\)$" "$TMP/ot_top.out" ||
		d+="no 'temporary: 16 allocations freed right after ...': $(grep 'temporary:' "$TMP/ot_top.out")"$'\n'
	grep -qE '^  peak: +1,074,576 bytes in use, [0-9]+\.[0-9]+ s after tracing started$' "$TMP/ot_top.out" ||
		d+="no 'peak: 1,074,576 bytes in use, T s after tracing started': $(grep 'peak:' "$TMP/ot_top.out")"$'\n'
	grep -qE '^  leaked: +21,000 bytes live at the end$' "$TMP/ot_top.out" ||
		d+="no 'leaked: 21,000 bytes live at the end': $(grep 'leaked:' "$TMP/ot_top.out")"$'\n'
	grep -qE '^  in use: +21,000 bytes in 17 objects$' "$TMP/ot_top.out" || d+="no 'in use: 21,000 bytes in 17 objects'"$'\n'
	grep -qE '^  allocated: +16,813,216 bytes in 36 objects$' "$TMP/ot_top.out" ||
		d+="no 'allocated: 16,813,216 bytes in 36 objects'"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,10p' "$TMP/ot_top.out")
	report "overtime: -f top summary: temporary 16, peak 1,074,576, leaked 21,000 (thousands separators)" "$d"

	# churn_fn: 16 allocated, none in use, freed 16, all 16 temporary.
	e=$(top_entry "$TMP/ot_top.out" churn_fn)
	d=""
	echo "$e" | head -1 | grep -qE '^#[0-9]+ +16 objects \([0-9.]+%\) +in use 0 B / 0 obj, allocated 16,777,216 B / 16 obj$' ||
		d+="entry: $(echo "$e" | head -1)"$'\n'
	echo "$e" | sed -n 2p | grep -qE '^      freed 16, temporary 16; lifetimes:( <2us:[0-9]+)?( >=[0-9]+(us|ms|s):[0-9]+)*$' ||
		d+="freed line: $(echo "$e" | sed -n 2p)"$'\n'
	[ "$(lifetimes_sum "$(echo "$e" | sed -n 2p)")" = 16 ] || d+="lifetime counts add up to $(lifetimes_sum "$(echo "$e" | sed -n 2p)"), want 16"$'\n'
	report "overtime: -f top: churn_fn allocated 16, in use 0, freed 16, temporary 16, lifetimes add up to 16" "$d"

	# leak_fn: 16 in use, never freed: no freed line.
	e=$(top_entry "$TMP/ot_top.out" leak_fn)
	d=""
	echo "$e" | head -1 | grep -qE '^#[0-9]+ +16 objects \([0-9.]+%\) +in use 16,000 B / 16 obj, allocated 16,000 B / 16 obj$' ||
		d+="entry: $(echo "$e" | head -1)"$'\n'
	[ "$(echo "$e" | grep -c freed)" = 0 ] || d+="a freed line: $(echo "$e" | sed -n 2p)"$'\n'
	report "overtime: -f top: leak_fn 16 objects, 16,000 B in use, no freed line" "$d"

	# keep_fn: 4 allocated, 1 in use, freed 3 after >= 600 ms each (after
	# other frees: no temporary), every lifetime in a bucket of 524 ms
	# (2^19 us) or more.
	e=$(top_entry "$TMP/ot_top.out" keep_fn)
	d=""
	echo "$e" | head -1 | grep -qE '^#[0-9]+ +4 objects \([0-9.]+%\) +in use 5,000 B / 1 obj, allocated 20,000 B / 4 obj$' ||
		d+="entry: $(echo "$e" | head -1)"$'\n'
	echo "$e" | sed -n 2p | grep -qE '^      freed 3, temporary 0; lifetimes:( >=(524ms|[0-9]+s):[0-9]+)+$' ||
		d+="freed line: $(echo "$e" | sed -n 2p)"$'\n'
	[ "$(lifetimes_sum "$(echo "$e" | sed -n 2p)")" = 3 ] || d+="lifetime counts add up to $(lifetimes_sum "$(echo "$e" | sed -n 2p)"), want 3"$'\n'
	report "overtime: -f top: keep_fn freed 3, temporary 0, lifetimes >= 524ms adding up to 3" "$d"
}

# Without -o the prefix is heaptrace.PID in the current directory; with an
# interval longer than the run there is exactly one snapshot, the final one,
# and so no --diff growth line.  The at-peak profile is
# heaptrace.PID.peak.heap.  With the default step (at least 1 MiB) the
# at-peak state is the first to reach 1 MiB, phase 1's first churn: keep 4 /
# 20000, leak 1 / 1000, churn 1 / 1048576 = 6 / 1069576, while the peak
# number stays exact: 1074576.
overtime_single() {
	local dir=$TMP/ot1 pid d files
	mkdir -p "$dir"
	(cd "$dir" && ht ot1 -v -i 3600 --diff --at-peak -- "$TB/t_overtime" -)
	pid=$(sed -nE 's/^heaptrace: tracing PID ([0-9]+) .*/\1/p' "$TMP/ot1.err" | head -1)
	d=$(rc_diag ot1 0)
	files=$(cd "$dir" && printf '%s ' *)
	[ "$files" = "heaptrace.$pid.0001.heap heaptrace.$pid.peak.heap " ] ||
		d+="files: $files; want heaptrace.$pid.0001.heap heaptrace.$pid.peak.heap"$'\n'
	[ "$(snap_count ot1)" = 1 ] || d+="$(snap_count ot1) snapshot lines, want 1"$'\n'
	grep -qE "^heaptrace: snapshot 1: heaptrace\\.$pid\\.0001\\.heap, 3 stacks, 21000 bytes in use, [0-9]+ ms\$" "$TMP/ot1.err" ||
		d+="no 'snapshot 1: heaptrace.$pid.0001.heap, 3 stacks, 21000 bytes in use' line: $(grep 'snapshot' "$TMP/ot1.err")"$'\n'
	grep -q '^heaptrace: growth' "$TMP/ot1.err" && d+="a growth line with a single snapshot"$'\n'
	grep -qE "^heaptrace: at-peak profile: heaptrace\\.$pid\\.peak\\.heap \\(peak 1074576 bytes in use, [0-9]+\\.[0-9]+ s after the start\\)\$" \
		"$TMP/ot1.err" || d+="at-peak line: $(grep 'at-peak' "$TMP/ot1.err")"$'\n'
	report "overtime: -i 3600 without -o: only heaptrace.PID.0001.heap (final) and heaptrace.PID.peak.heap in the current directory, no growth line" "$d"
	pprof_header "$dir/heaptrace.$pid.0001.heap" "overtime: heaptrace.PID.0001.heap header" 17 21000 36 16813216
	pprof_header "$dir/heaptrace.$pid.peak.heap" "overtime: at-peak profile with the default step header (peak stays 1074576)" \
		6 1069576 36 16813216
}

# t_peak: big_fn malloc(64 MiB) and free, small_fn malloc(1 MiB) kept; with
# "nudge" top_fn malloc(63 MiB + 8192) kept after that.
#   peak 67108864 (64 MiB); nudge: 1048576 + 66068480 = 67117056
#   allocated: 2 objects, 67108864 + 1048576 = 68157440 bytes
overtime_peak() {
	local d
	# Collapsed to a file: the at-peak profile goes to FILE.peak.
	ht pk --at-peak -f collapsed -o "$TMP/pk.final" -- "$TB/t_peak"
	d=$(rc_diag pk 0)
	grep -qE "^heaptrace: at-peak profile: $TMP/pk\\.final\\.peak \\(peak 67108864 bytes in use, [0-9]+\\.[0-9]+ s after the start\\)\$" \
		"$TMP/pk.err" || d+="at-peak line: $(grep 'at-peak' "$TMP/pk.err")"$'\n'
	report "overtime: t_peak --at-peak -o FILE: 'at-peak profile: FILE.peak (peak 67108864 bytes in use, T s after the start)'" "$d"
	cp "$TMP/pk.final" "$TMP/pk_final.out" 2>/dev/null
	cp "$TMP/pk.final.peak" "$TMP/pk_atpeak.out" 2>/dev/null
	expect_leaf pk_final small_fn 1048576
	leafset pk_final small_fn
	expect_leaf pk_atpeak big_fn 67108864
	leafset pk_atpeak big_fn

	ht pk_top -f top -- "$TB/t_peak"
	d=$(rc_diag pk_top 0)
	grep -qE '^  peak: +67,108,864 bytes in use, [0-9]+\.[0-9]+ s after tracing started$' "$TMP/pk_top.out" ||
		d+="peak line: $(grep 'peak:' "$TMP/pk_top.out")"$'\n'
	grep -qE '^  leaked: +1,048,576 bytes live at the end$' "$TMP/pk_top.out" ||
		d+="leaked line: $(grep 'leaked:' "$TMP/pk_top.out")"$'\n'
	grep -qE '^  temporary: +1 allocations freed right after their allocation' "$TMP/pk_top.out" ||
		d+="temporary line: $(grep 'temporary:' "$TMP/pk_top.out")"$'\n'
	report "overtime: t_peak -f top: peak 67,108,864, leaked 1,048,576, temporary 1" "$d"

	# pprof: at-peak in use 1: 67108864 (small_fn 0), allocated 2: 68157440.
	ht pk_pp --at-peak -o "$TMP/pk.prof" -- "$TB/t_peak"
	pprof_header "$TMP/pk.prof.peak" "overtime: t_peak at-peak pprof header" 1 67108864 2 68157440
	pprof_header "$TMP/pk.prof" "overtime: t_peak final pprof header" 1 1048576 2 68157440

	# nudge, default step (5% of 64 MiB = 3355443 > 8192): the peak number
	# moves to 67117056, the at-peak state stays big_fn's.
	ht pkn --at-peak -f collapsed -o "$TMP/pkn.final" -- "$TB/t_peak" nudge
	d=$(rc_diag pkn 0)
	grep -qE "^heaptrace: at-peak profile: $TMP/pkn\\.final\\.peak \\(peak 67117056 bytes in use, " "$TMP/pkn.err" ||
		d+="at-peak line: $(grep 'at-peak' "$TMP/pkn.err")"$'\n'
	report "overtime: t_peak nudge: the peak is exact, 67117056" "$d"
	cp "$TMP/pkn.final.peak" "$TMP/pkn_atpeak.out" 2>/dev/null
	expect_leaf pkn_atpeak big_fn 67108864
	leafset pkn_atpeak big_fn

	# nudge, --peak-step 4096: the rise of 8192 makes a new at-peak state:
	# small_fn 1048576 + top_fn 66068480, big_fn freed.
	ht pks --at-peak --peak-step 4096 -f collapsed -o "$TMP/pks.final" -- "$TB/t_peak" nudge
	d=$(rc_diag pks 0)
	grep -qE "^heaptrace: at-peak profile: $TMP/pks\\.final\\.peak \\(peak 67117056 bytes in use, " "$TMP/pks.err" ||
		d+="at-peak line: $(grep 'at-peak' "$TMP/pks.err")"$'\n'
	report "overtime: t_peak nudge --peak-step 4096: the peak is exact, 67117056" "$d"
	cp "$TMP/pks.final.peak" "$TMP/pks_atpeak.out" 2>/dev/null
	expect_leaf pks_atpeak small_fn 1048576
	expect_leaf pks_atpeak top_fn 66068480
	leafset pks_atpeak small_fn top_fn
}

# t_minage FIFO: old_fn 5 x 4096, "old", wait, young_fn 7 x 3000, exit.
# The harness waits 3 s after "old" before the release, so old blocks are
# at least 3 s old at the end; young ones are as old as heaptrace takes to
# see the exit (milliseconds).  --min-age 2: in use only old_fn, 5 / 20480;
# allocated unchanged: 12 objects, 20480 + 21000 = 41480 bytes.  Three runs
# side by side: collapsed, pprof, top.
overtime_minage() {
	local k d hp=() i=0
	for k in ma_col ma_pp ma_top; do
		mkfifo "$TMP/$k.fifo"
	done
	ht_bg ma_col --max-allocs 4096 --min-age 2 -f collapsed -o "$TMP/ma_col.out" -- "$TB/t_minage" "$TMP/ma_col.fifo"
	hp+=("$HPID")
	ht_bg ma_pp --max-allocs 4096 --min-age 2 -o "$TMP/ma_pp.heap" -- "$TB/t_minage" "$TMP/ma_pp.fifo"
	hp+=("$HPID")
	ht_bg ma_top --max-allocs 4096 --min-age 2 -f top -o "$TMP/ma_top.out" -- "$TB/t_minage" "$TMP/ma_top.fifo"
	hp+=("$HPID")
	d=""
	for k in ma_col ma_pp ma_top; do
		wait_for "$TMP/$k.tout" '^old$' 30 "${hp[$i]}" || d+="$k: no 'old' from the target: $(ctx "$k")"$'\n'
		i=$((i + 1))
	done
	if [ -n "$d" ]; then
		fail "overtime: --min-age: the targets allocate their old blocks" "$d"
		kill_tree "${hp[@]}"
		return
	fi
	sleep 3
	i=0
	for k in ma_col ma_pp ma_top; do
		release "$k"
		ht_bg_wait "$k" "${hp[$i]}" 20
		check_rc "$k" 0 "overtime: --min-age 2 ($k) exits 0"
		i=$((i + 1))
	done
	expect_leaf ma_col old_fn 20480
	expect_leaf ma_col young_fn 0
	leafset ma_col old_fn
	pprof_header "$TMP/ma_pp.heap" "overtime: --min-age 2 pprof header (in use: old blocks only; allocated: all)" 5 20480 12 41480
	d=""
	grep -qE '^  leaked: +20,480 bytes live at the end \(blocks at least --min-age old\)$' "$TMP/ma_top.out" ||
		d+="leaked line: $(grep 'leaked:' "$TMP/ma_top.out")"$'\n'
	grep -qE '^  in use: +20,480 bytes in 5 objects$' "$TMP/ma_top.out" || d+="in use line: $(grep 'in use:' "$TMP/ma_top.out")"$'\n'
	grep -qE '^  allocated: +41,480 bytes in 12 objects$' "$TMP/ma_top.out" || d+="allocated line: $(grep 'allocated:' "$TMP/ma_top.out")"$'\n'
	grep -qw young_fn "$TMP/ma_top.out" && d+="young_fn is listed"$'\n'
	report "overtime: --min-age 2 -f top: leaked 20,480 (old blocks), in use 20,480 / 5, allocated 41,480 / 12, no young_fn" "$d"
}

# heaptrace diff on what is not a pair of heap profiles: one line, non-zero
# exit, nothing on stdout.  GOOD is a valid profile (diffed with itself it
# exits 0), so each error comes from the other file.
overtime_diff_errors() {
	local good=$TMP/de_good.heap k d rc
	printf 'heap profile:      1:      100 [     1:      100] @ heapprofile\n     1:      100 [     1:      100] @ 0x0000000000401000\n' >"$good"
	printf 'hello\n' >"$TMP/de_notprof.txt"
	: >"$TMP/de_empty.heap"
	printf 'heap profile:      1:        2 [     3:        4] @ heapprofile\ngarbage\n' >"$TMP/de_badrec.heap"
	ht de_good diff "$good" "$good" -f collapsed
	check_rc de_good 0 "overtime: heaptrace diff GOOD GOOD exits 0 (GOOD is a profile)"
	ht de_missing diff "$TMP/de_nonexistent.heap" "$good"
	ht de_missing2 diff "$good" "$TMP/de_nonexistent.heap"
	ht de_text diff "$TMP/de_notprof.txt" "$good"
	ht de_elf diff "$good" "$TB/t_overtime"
	ht de_empty diff "$TMP/de_empty.heap" "$good"
	ht de_badrec diff "$good" "$TMP/de_badrec.heap"
	ht de_dir diff "$TMP/" "$good"
	for k in de_missing de_missing2 de_text de_elf de_empty de_badrec de_dir; do
		d=""
		rc=$(cat "$TMP/$k.rc")
		{ [ "$rc" = 0 ] || [ "$rc" -ge 124 ]; } && d+="exit status $rc, want a non-zero error exit"$'\n'
		d+=$(one_line_diag "$k")
		[ -s "$TMP/$k.out" ] && d+="output on stdout: $(head -2 "$TMP/$k.out")"$'\n'
		report "overtime: $(sed 's/^heaptrace //' "$TMP/$k.cmd"): one line, non-zero exit, no output" "$d"
	done
	# The bad file is named in the error.
	d=""
	grep -q 'de_nonexistent.heap' "$TMP/de_missing.err" || d+="de_missing: $(cat "$TMP/de_missing.err")"$'\n'
	grep -q 'de_nonexistent.heap' "$TMP/de_missing2.err" || d+="de_missing2: $(cat "$TMP/de_missing2.err")"$'\n'
	grep -q 'de_notprof.txt' "$TMP/de_text.err" || d+="de_text: $(cat "$TMP/de_text.err")"$'\n'
	grep -q 't_overtime' "$TMP/de_elf.err" || d+="de_elf: $(cat "$TMP/de_elf.err")"$'\n'
	report "overtime: heaptrace diff errors name the file at fault" "$d"
}

# ---------------------------------------------------------------------------
# -f top with -i on a terminal: a live view redrawn in place (like top), with
# the growth since the previous redraw, instead of snapshot files.
scenario_liveview() {
	local d="" dir="$TMP/live" redraws
	mkdir -p "$dir"
	echo "script -qc 'heaptrace -f top -i 0.1 -- build/tests/t_overtime -'" >"$TMP/live.cmd"
	(cd "$dir" && timeout -k 5 60 script -qec "$HT -f top -i 0.1 -- $TB/t_overtime -" "$TMP/live.out" \
		</dev/null >/dev/null 2>&1)
	RC=$?
	echo "$RC" >"$TMP/live.rc"
	[ "$RC" = 0 ] || d+="exit status $RC"$'\n'
	redraws=$(grep -o $'\033\[H\033\[J' "$TMP/live.out" | wc -l)
	# t_overtime runs 16 ticks of 100 ms: up to 16 redraws at 0.1 s plus the final one;
	# at least 5 leaves room for a loaded machine.
	[ "$redraws" -ge 5 ] || d+="$redraws redraws (clear-screen sequences), want at least 5"$'\n'
	grep -q 'heaptrace: PID [0-9]*, stacks by inuse_space' "$TMP/live.out" || d+="no top header"$'\n'
	grep -q 'leak_fn' "$TMP/live.out" || d+="leak_fn never shown"$'\n'
	grep -q 'heaptrace: growth +1000 inuse_space since the last snapshot' "$TMP/live.out" ||
		grep -q 'heaptrace: growth +[0-9]* inuse_space since the last snapshot' "$TMP/live.out" ||
		d+="no growth line"$'\n'
	# The final redraw holds the whole run: leak_fn's 16 x 1000 bytes.
	tail -c 4000 "$TMP/live.out" | grep -q '16,000 bytes' || d+="the last redraw does not show leak_fn's 16,000 bytes"$'\n'
	ls "$dir"/heaptrace.*.heap >/dev/null 2>&1 && d+="snapshot files were written: $(ls "$dir")"$'\n'
	report "liveview: -f top -i on a terminal redraws in place, no snapshot files" "$d"
}
