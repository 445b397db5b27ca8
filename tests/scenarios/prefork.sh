# shellcheck shell=bash
# Area "prefork" of tests/run.sh (sourced by it; helpers in tests/lib.sh and
# tests/scenarios/fork.sh): pre-fork servers (t_prefork).
# scenario forkhint: the hint about children forked and not traced.
# scenario merge: --follow-fork --merge, one profile of the process tree.
# scenario forksample: uprobe sessions under --follow-fork.
# scenario kidstub: the fast path in followed children (t_kidstub).

# ---------------------------------------------------------------------------
# Without --follow-fork, children the target forks run untraced: heaptrace
# says how many, once, at the end (t_prefork forks K workers; with "exec"
# the last one executes a program, still one child).  Threads are no
# children (t_threads starts 4), and grandchildren are not the target's
# (t_fork: one child, which forks the grandchild).  With --follow-fork no
# hint: they are traced.
scenario_forkhint() {
	local key k want d n
	for k in 4 1 3:exec; do
		key=forkhint_$k
		key=${key//:/_}
		ht $key -f collapsed -- "$TB/t_prefork" "${k%%:*}" "$([ "${k#*:}" = exec ] && echo exec || echo plain)"
		check_rc $key 0 "$key: exits 0"
		case ${k%%:*} in 1) want="1 child" ;; *) want="${k%%:*} children" ;; esac
		want="heaptrace: $want forked and not traced: --follow-fork traces them"
		n=$(grep -cxF "$want" "$TMP/$key.err")
		report "$key: '$want' once on stderr" "$([ "$n" = 1 ] || echo "$n times"$'\n'"$(ctx $key)")"
		# The profile is the parent's alone, as before.
		expect_leaf $key parent_before 2000
		expect_leaf $key parent_after 4000
	done
	key=forkhint_v
	ht $key -v -f collapsed -o "$TMP/$key.prof" -- "$TB/t_prefork" 2
	expect_events $key allocs=3 untraced_children=2
	n=$(grep -c "forked and not traced" "$TMP/$key.err")
	report "$key: -v says the hint once" "$([ "$n" = 1 ] || echo "$n times")"
	for key in forkhint_threads forkhint_fork forkhint_follow; do
		case $key in
		forkhint_threads) ht $key -f collapsed -o "$TMP/$key.prof" -- "$TB/t_threads"; want="" ;;
		forkhint_fork) ht $key -f collapsed -o "$TMP/$key.prof" -- "$TB/t_fork"
			want="heaptrace: 1 child forked and not traced: --follow-fork traces them" ;;
		forkhint_follow) (cd "$TMP" && ht $key --follow-fork -f collapsed -o "$TMP/$key.prof" -- "$TB/t_prefork" 2)
			RC=$(cat "$TMP/$key.rc"); want="" ;;
		esac
		check_rc $key 0 "$key: exits 0"
		d=$(grep "forked and not traced" "$TMP/$key.err")
		report "$key: hint '${want:-none}'" "$([ "$d" = "$want" ] || echo "got '$d'")"
	done
}

# merge_leaves FILE...: "leaf=value" of collapsed profiles, summed over the
# files by leaf, sorted, on one line.
merge_leaves() {
	awk '{ n = split($1, fr, ";"); s[fr[n]] += $2 } END { for (k in s) printf "%s=%s\n", k, s[k] }' "$@" \
		2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//'
}

# merge_want K VALUE [exec]: t_prefork K's leaves for VALUE (see its source).
merge_want() {
	local k=$1 v=$2 w=$1 ids=0 i
	[ "${3:-}" = exec ] && w=$((k - 1))
	for ((i = 0; i < w; i++)); do ids=$((ids + (i + 1) * 100)); done
	{
		[ "${3:-}" = exec ] && case $v in
			alloc_space | inuse_space) echo exec_worker=600 ;;
			*) echo exec_worker=2 ;;
		esac
		case $v in
		alloc_space) echo parent_after=4000 parent_before=2000 worker_id=$ids worker_keep=$((w * 6000)) worker_temp=$((w * 500)) ;;
		inuse_space) echo parent_after=4000 parent_before=2000 worker_id=$ids worker_keep=$((w * 6000)) ;;
		alloc_objects) echo parent_after=1 parent_before=2 worker_id=$w worker_keep=$((w * 3)) worker_temp=$w ;;
		inuse_objects) echo parent_after=1 parent_before=2 worker_id=$w worker_keep=$((w * 3)) ;;
		esac
	} | tr ' ' '\n' | grep -v '=0$' | sort | tr '\n' ' ' | sed 's/ $//'
}

# merge_pids KEY FILE: "PID alloc_space" per pid label of a --merge proto
# profile (go tool pprof -raw), sorted by PID.
merge_pids() {
	pprof_tool "$1.raw" go -raw "$2"
	awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
	     on && /^ *[0-9]+( +[0-9]+)+:/ { v = $2 }
	     on && /pid:\[/ { sub(/.*pid:\[/, ""); sub(/\].*/, ""); s[$0] += v }
	     END { for (p in s) print p, s[p] }' "$TMP/$1.raw.out" | sort -n
}

# --follow-fork --merge on t_prefork (a parent forking K workers one after
# another): one profile of the tree, whose numbers are the sums of the
# per-process profiles of a run without --merge, and t_prefork's own; a
# worker that executes the program again is named from its own memory map;
# -f proto labels each sample with its pid (go tool pprof -raw), with each
# process's own numbers; --http's /metrics and /debug/pprof/heap describe
# the same tree as the final profile.
scenario_merge() {
	local key v d f got want sep k mode pids tpid kids line
	for k in 4 3:exec; do
		mode=plain
		[ "${k#*:}" = exec ] && mode=exec
		k=${k%%:*}
		for v in alloc_space inuse_space alloc_objects inuse_objects; do
			want=$(merge_want "$k" $v $([ $mode = exec ] && echo exec))
			sep=merge_sep.$mode.$v
			(cd "$TMP" && ht $sep -v --follow-fork -f collapsed --value $v -o "$TMP/$sep.prof" -- "$TB/t_prefork" "$k" $mode)
			RC=$(cat "$TMP/$sep.rc")
			check_rc $sep 0 "$sep: exits 0"
			got=$(merge_leaves "$TMP/$sep.prof" $(fork_files $sep | cut -d' ' -f2-))
			report "$sep: the per-process profiles add up to t_prefork's: $want" \
				"$([ "$got" = "$want" ] || echo "got $got")"
			key=merge.$mode.$v
			(cd "$TMP" && ht $key -v --follow-fork --merge -f collapsed --value $v -o "$TMP/$key.prof" -- "$TB/t_prefork" "$k" $mode)
			RC=$(cat "$TMP/$key.rc")
			check_rc $key 0 "$key: exits 0"
			got=$(merge_leaves "$TMP/$key.prof")
			report "$key: the merged profile is the sum of $sep's: $want" "$([ "$got" = "$want" ] || echo "got $got"$'\n'"$(ctx $key)")"
			d=$(fork_files $key)
			[ "$(awk '{ print $1 }' "$TMP/$key.prof" | sort | uniq -d | wc -l)" = 0 ] || d+=$'\n'"a stack twice: the processes' stacks are not merged"
			report "$key: one file, each stack once" "$d"
		done
		[ $mode = plain ] && expect_events merge.plain.alloc_space allocs=23 frees=4 unmatched_frees=0 untraced_children=0
	done

	# --merge alone is bad input: one line, exit status 2, nothing run.
	key=merge_alone
	ht $key --merge -f collapsed -- "$TB/t_prefork" 2
	d=$(rc_diag $key 2)
	[ "$(wc -l <"$TMP/$key.err")" = 1 ] && grep -q -- '--merge .* needs --follow-fork' "$TMP/$key.err" ||
		d+="stderr: $(cat "$TMP/$key.err")"
	[ -s "$TMP/$key.out" ] && d+=" a profile on stdout"
	report "$key: --merge without --follow-fork: one line, exit status 2" "$d"

	# -i: each snapshot is the tree's too; the last one (at the end) holds it all.
	key=merge_snap
	mkdir -p "$TMP/$key"
	ht $key --follow-fork --merge -i 0.05 -f collapsed --value alloc_space -o "$TMP/$key/s" -- "$TB/t_prefork" 4
	check_rc $key 0 "$key: exits 0"
	f=$(find "$TMP/$key" -name 's.*.heap' | sort | tail -1)
	got=$(merge_leaves "$f")
	want=$(merge_want 4 alloc_space)
	report "$key: the last -i snapshot is the tree's: $want" "$([ "$got" = "$want" ] || echo "got '$got' in ${f:-no snapshot}")"

	# -f proto: each sample's pid label, each process's own numbers.
	key=merge_proto
	ht $key -v --follow-fork --merge -f proto -o "$TMP/$key.pb.gz" -- "$TB/t_prefork" 4
	check_rc $key 0 "$key: exits 0"
	tpid=$(sed -n 's/^heaptrace: tracing PID \([0-9]*\) .*/\1/p' "$TMP/$key.err" | head -1)
	kids=$(sed -n 's/^heaptrace: following child PID \([0-9]*\)$/\1/p' "$TMP/$key.err" | sort -n | tr '\n' ' ')
	pids=$(merge_pids $key "$TMP/$key.pb.gz")
	# The parent 6000 bytes; worker i 6000 + 500 + (i + 1) * 100, in fork order.
	want="$tpid 6000"
	local i=0
	for f in $(sed -n 's/^heaptrace: following child PID \([0-9]*\)$/\1/p' "$TMP/$key.err"); do
		want+=$'\n'"$f $((6500 + (i + 1) * 100))"
		i=$((i + 1))
	done
	want=$(echo "$want" | sort -n)
	d=""
	[ -n "$tpid" ] && [ "$(echo "$kids" | wc -w)" = 4 ] || d+="target PID '$tpid', children '$kids' from -v"$'\n'
	[ "$pids" = "$want" ] || d+="go tool pprof -raw: alloc_space by pid label:"$'\n'"$pids"$'\n'"want:"$'\n'"$want"
	report "$key: each sample's pid label; alloc_space by pid: the parent's 6000, each worker's own" "$d"
	pprof_tool $key.tags go -tags -sample_index=alloc_space "$TMP/$key.pb.gz"
	d=$(grep -c '^ *[0-9.]*[kM]\{0,1\}B ([ 0-9.]*%): [0-9]*$' "$TMP/$key.tags.out")
	report "$key: go tool pprof -tags lists 5 pids" "$([ "$d" = 5 ] || echo "$d pid rows in: $(cat "$TMP/$key.tags.out")")"
	pprof_tool $key.focus go -raw -tagfocus=pid="$tpid" "$TMP/$key.pb.gz"
	got=$(awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 } on && /^ *[0-9]+( +[0-9]+)+:/ { s += $2 } END { print s + 0 }' "$TMP/$key.focus.out")
	report "$key: -tagfocus pid=TARGET keeps the parent's 6000 bytes" "$([ "$got" = 6000 ] || echo "got $got")"

	# --http on a unix socket while t_prefork waits after its workers: the
	# profile and /metrics describe the tree, as the final profile does.
	key=merge_http
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v --follow-fork --merge --http "unix:$TMP/$key.sock" -f collapsed --value inuse_space \
		-o "$TMP/$key.prof" -- "$TB/t_prefork" 4 plain "$TMP/$key.fifo"
	local hp=$HPID
	if wait_for "$TMP/$key.tout" '^done$' 30 "$hp" && [ -S "$TMP/$key.sock" ]; then
		curl -s --max-time 5 --unix-socket "$TMP/$key.sock" http://h/metrics >"$TMP/$key.metrics"
		curl -s --max-time 5 --unix-socket "$TMP/$key.sock" 'http://h/debug/pprof/heap?debug=1' >"$TMP/$key.heap"
		release $key
		ht_bg_wait $key "$hp" 20
		check_rc $key 0 "$key: exits 0"
		local ib io al fr hb
		ib=$(awk '$1 == "heaptrace_inuse_bytes" { print $2 }' "$TMP/$key.metrics")
		io=$(awk '$1 == "heaptrace_inuse_objects" { print $2 }' "$TMP/$key.metrics")
		al=$(sed -n 's/^heaptrace_events_total{event="allocs"} //p' "$TMP/$key.metrics")
		fr=$(sed -n 's/^heaptrace_events_total{event="frees"} //p' "$TMP/$key.metrics")
		hb=$(sed -n 's/^heap profile: *\([0-9]*\): *\([0-9]*\) .*/\1 \2/p' "$TMP/$key.heap")
		got=$(awk '{ s += $2 } END { print s + 0 }' "$TMP/$key.prof")
		# 2 x 1000 + 4000, and per worker 3 x 2000 + (i + 1) * 100: 19 objects, 31000 bytes.
		d=""
		[ "$ib" = 31000 ] && [ "$io" = 19 ] || d+="/metrics inuse bytes '$ib' objects '$io', want 31000 19"$'\n'
		[ "$al" = 23 ] && [ "$fr" = 4 ] || d+="/metrics allocs '$al' frees '$fr', want 23 4"$'\n'
		[ "$hb" = "19 31000" ] || d+="/debug/pprof/heap?debug=1 header '$hb', want '19 31000'"$'\n'
		[ "$got" = 31000 ] || d+="final merged profile inuse_space $got, want 31000"$'\n'
		report "$key: /metrics, /debug/pprof/heap and the final profile: the tree's 19 objects, 31000 bytes" \
			"$d${d:+$(grep -v '^#' "$TMP/$key.metrics" | head -8)}"
	else
		fail "$key: t_prefork runs its workers under --http --merge" "$(cat "$TMP/$key.tout")"$'\n'"$(ctx $key)"
		kill_tree "$hp"
	fi
}

# fsample_weight SIZE RATE: heaptrace's Q16 weight of a SIZE-byte block at
# --sample-rate RATE (bpf/sample.h, the series branch: SIZE/RATE < 1/4).
fsample_weight() {
	local y=$(( ($1 << 24) / $2 )) y2 b1 q
	y2=$(( (y * y) >> 24 ))
	b1=$(( y / 2 + y2 / 12 - ((y2 * y2) >> 24) / 720 ))
	q=$(( ($2 << 16) / $1 ))
	echo $(( q + ((q * b1) >> 24) ))
}

# fsample_raw KEY FILE: "ALLOC_OBJECTS ALLOC_SPACE" summed over the samples of a proto profile (go tool pprof -raw).
fsample_raw() {
	pprof_tool "$1" go -raw "$2"
	awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
	     on && /^ *[0-9]+( +[0-9]+)+:/ { o += $1; b += $2 } END { print o + 0, b + 0 }' "$TMP/$1.out"
}

# fsample_exact KEY RATE MOST FILE...: each proto FILE's alloc_objects and
# alloc_space are exactly its sampled 64-byte blocks (its events' allocs)
# times their weight at --sample-rate RATE, and (with MOST) it has 1 to
# MOST - 1 samples.  The diagnosis, if not.
fsample_exact() {
	local key=$1 rate=$2 most=$3 w f allocs raw want d=""
	shift 3
	w=$(fsample_weight 64 "$rate")
	for f in "$@"; do
		allocs=$(proto_events "$f" | tr ' ' '\n' | sed -n 's/^allocs=//p')
		raw=$(fsample_raw $key.raw "$f")
		want="$(( (allocs * w + 32768) >> 16 )) $(( allocs * ((64 * w) >> 16) ))"
		[ -z "$most" ] || { [ "${allocs:-0}" -gt 0 ] && [ "$allocs" -lt "$most" ]; } ||
			d+="$(rel "$f"): ${allocs:-no} samples, want 1 to $((most - 1))"$'\n'
		[ "$raw" = "$want" ] || d+="$(rel "$f"): alloc_objects alloc_space $raw, want $want ($allocs sampled x weight $w/65536)"$'\n'
	done
	echo "$d"
}

# --sample-rate under --follow-fork with uprobes (--no-inject): --sym
# functions use uprobe sessions.  t_forkret's
# fr_alloc sees from inside which calls took a return probe (its return
# address is the kernel's trampoline).  The parent's calls, after its two
# children ended (their links closed at their exit), take one only when
# sampled: as many as its profile's sampled allocations, out of 100000.
# A child's calls run while the parent's link is on the same probe, and
# the kernel asks for the return for every link whose process is not the
# caller's: all of them take one (the limit docs/process-trees.md states).
# Every process's estimates are exactly its sampled blocks times their
# weight (all blocks are 64 bytes).  With the fast path (forksample_stub)
# fr_alloc and fr_free go through each process's own stub, which jumps to
# an unsampled call (its return address the caller's) and calls a sampled
# one (its return address in the stub, counted as a "return" by
# t_forkret): each process, the children too, sees 1 to 99 such calls of
# 100000, the parent exactly its sampled allocations; the estimates are as
# exact.
scenario_forksample() {
	local key=forksample d n=100000 rate=524288 pr pa c
	ht ${key}_stub -v --no-libc --sym fr_alloc --free-sym fr_free --follow-fork --sample-rate $rate -f proto \
		-o "$TMP/${key}_stub.pb.gz" -- "$TB/t_forkret" $n 64 2
	check_rc ${key}_stub 0 "${key}_stub: exits 0"
	if ! grep -q 'fast path: off (--no-inject)' "$TMP/${key}_stub.err"; then
		c=$(grep -cE "^(parent|child) calls $n returns [1-9][0-9]?\$" "$TMP/${key}_stub.out")
		pr=$(sed -n 's/^parent calls [0-9]* returns \([0-9]*\)$/\1/p' "$TMP/${key}_stub.out")
		pa=$(proto_events "$TMP/${key}_stub.pb.gz" | tr ' ' '\n' | sed -n 's/^allocs=//p')
		report "${key}_stub: each process's calls of fr_alloc leave its stub only when sampled (1 to 99 of $n; the parent's ${pr:-?} = its samples)" \
			"$([ "$c" = 3 ] && [ -n "$pr" ] && [ "$pr" = "$pa" ] ||
				{ echo "parent's calls out of the stub '$pr', its samples '$pa'"; cat "$TMP/${key}_stub.out"
				  grep -E 'fast path|probe fr_' "$TMP/${key}_stub.err"; })"
		d=$(fsample_exact ${key}_stub $rate "" "$TMP/${key}_stub.pb.gz" $(fork_files ${key}_stub | cut -d' ' -f2-))
		report "${key}_stub: each process's estimates are its sampled 64-byte blocks times their weight, exactly" "$d"
	fi
	ht $key -v --no-inject --no-libc --sym fr_alloc --free-sym fr_free --follow-fork --sample-rate $rate -f proto \
		-o "$TMP/$key.pb.gz" -- "$TB/t_forkret" $n 64 2
	check_rc $key 0 "$key: exits 0"
	grep -qF "heaptrace: sampling one allocation per $rate bytes on average; unsampled calls skip their return probe (uprobe sessions)" \
		"$TMP/$key.err"
	report "$key: -v says the unsampled calls skip their return probe (uprobe sessions)" "$([ $? = 0 ] || ctx $key)"
	pr=$(sed -n 's/^parent calls [0-9]* returns \([0-9]*\)$/\1/p' "$TMP/$key.out")
	pa=$(proto_events "$TMP/$key.pb.gz" | tr ' ' '\n' | sed -n 's/^allocs=//p')
	d=""
	[ -n "$pr" ] && [ "$pr" = "$pa" ] || d+="parent's return probes '$pr', its sampled allocations '$pa'"$'\n'
	[ "${pa:-0}" -gt 0 ] && [ "${pa:-0}" -lt 100 ] || d+="sampled allocations '$pa' of $n, want 1 to 99 (about 12)"$'\n'
	report "$key: the parent's $n calls take a return probe only when sampled (${pr:-?} of them)" "$d${d:+$(cat "$TMP/$key.out")}"
	c=$(grep -c "^child calls $n returns $n\$" "$TMP/$key.out")
	report "$key: each child's calls, beside the parent's link, all take one (the kernel's limit)" \
		"$([ "$c" = 2 ] || cat "$TMP/$key.out")"
	d=$(fsample_exact $key $rate "" "$TMP/$key.pb.gz" $(fork_files $key | cut -d' ' -f2-))
	report "$key: each process's estimates are its sampled 64-byte blocks times their weight, exactly" "$d"
}

# ---------------------------------------------------------------------------
# The fast path in followed children, exact and sampled.  A forked child inherits
# the redirected functions and the stub, its data zeroed (MADV_WIPEONFORK:
# the stub off); heaptrace gives each followed child a stub of its own at
# its fork, so that processes running at the same time pay no trap for an
# unrecorded call (uprobe sessions cannot: the kernel asks for the return
# of every other process's link).  t_kidstub reads its own malloc and free:
# a jump into the heaptrace-stub mapping and the stub's "on" word, int3 for
# a uprobe, or the file's bytes.  3 workers and their parent allocate at the
# same time, each 20000 blocks of 64 bytes, 2000 kept: exact (each on its
# own stub), each profile exact; sampled, each process's estimates are its sampled blocks
# times their weight, with the stub or with --no-inject.  Workers alive when
# heaptrace ends have their functions as the file has them; after a SIGKILL
# of heaptrace they keep the enabled stub (its record sites plain nops
# again) and stay correct.

# kidstub_looks FILE STATE K [WHEN]: "parent" (unless WHEN) and "worker I"
# lines of t_kidstub say malloc=STATE free=STATE; the diagnosis, if not.
kidstub_looks() {
	local f=$1 state=$2 k=$3 when=${4:-} i d=""
	[ -n "$when" ] || grep -qx "parent malloc=$state free=$state" "$f" || d+="no 'parent malloc=$state free=$state'"$'\n'
	for ((i = 0; i < k; i++)); do
		grep -qx "worker $i${when:+ $when} malloc=$state free=$state" "$f" ||
			d+="no 'worker $i${when:+ $when} malloc=$state free=$state'"$'\n'
	done
	[ -z "$d" ] || { echo "$d"; sed 's/^/output: /' "$f"; }
}

# kidstub_work KEY VALUE FILE...: each collapsed FILE has "work VALUE" as its only work stack.
kidstub_work() {
	local key=$1 want=$2 f got d=""
	shift 2
	for f in "$@"; do
		got=$(awk '{ n = split($1, fr, ";"); if (fr[n] == "work") print $2 }' "$f" 2>/dev/null)
		[ "$got" = "$want" ] || d+="$(rel "$f"): work '$got', want $want"$'\n'
	done
	echo "$d"
}

scenario_kidstub() {
	local key d v want n=20000 rate=65536 i hp
	for v in alloc_objects inuse_objects; do
		key=kidstub.$v
		want=$([ $v = alloc_objects ] && echo $n || echo $((n / 10)))
		(cd "$TMP" && ht $key -v --follow-fork -f collapsed --value $v -o "$TMP/$key.prof" -- "$TB/t_kidstub" run 3 $n)
		RC=$(cat "$TMP/$key.rc")
		check_rc $key 0 "$key: exits 0"
		d=$(grep -c '^heaptrace: fast path: PID [0-9]* has its own copy of the stub, enabled$' "$TMP/$key.err")
		report "$key: exact: -v says each of the 3 workers has its own copy of the stub" "$([ "$d" = 3 ] || ctx $key)"
		report "$key: exact: the parent and 3 workers, running at once, have malloc and free on their enabled stubs" \
			"$(kidstub_looks "$TMP/$key.out" stub-on 3)"
		d=""
		[ "$(fork_files $key | wc -l)" = 3 ] || d="$(fork_files $key | wc -l) child profiles, want 3"$'\n'
		d+=$(kidstub_work $key "$want" "$TMP/$key.prof" $(fork_files $key | cut -d' ' -f2-))
		report "$key: each of the 4 processes' profiles: work $want" "$d${d:+$(ctx $key)}"
	done
	expect_events kidstub.alloc_objects allocs=80000 frees=72000 unmatched_frees=0 missed_frees=0 call_map_full=0

	# Sampled: unsampled calls stay in each process; the estimates are exact functions of the samples.
	for v in stub noinject; do
		key=kidstub_sampled.$v
		(cd "$TMP" && ht $key -v $([ $v = noinject ] && echo --no-inject) --follow-fork --sample-rate $rate -f proto \
			-o "$TMP/$key.pb.gz" -- "$TB/t_kidstub" run 3 $n)
		RC=$(cat "$TMP/$key.rc")
		check_rc $key 0 "$key: exits 0"
		if [ $v = stub ]; then
			report "$key: each process's malloc and free go to its enabled stub" "$(kidstub_looks "$TMP/$key.out" stub-on 3)"
			d=$(grep -c '^heaptrace: fast path: PID [0-9]* has its own copy of the stub, enabled$' "$TMP/$key.err")
			report "$key: -v says each worker has its own copy of the stub" "$([ "$d" = 3 ] || ctx $key)"
		else
			report "$key: each process's malloc and free carry a uprobe (int3)" "$(kidstub_looks "$TMP/$key.out" int3 3)"
		fi
		d=$(fsample_exact $key $rate 200 "$TMP/$key.pb.gz" $(fork_files $key | cut -d' ' -f2-))
		[ "$(fork_files $key | wc -l)" = 3 ] || d+="$(fork_files $key | wc -l) child profiles, want 3"$'\n'
		report "$key: each process's estimates are its sampled 64-byte blocks times their weight" "$d"
	done

	# Workers that outlive the traced run: their functions restored when heaptrace ends.
	key=kidstub_linger
	rm -f "$TMP/$key.fifo".*
	mkfifo "$TMP/$key.fifo.0" "$TMP/$key.fifo.1"
	(cd "$TMP" && ht $key -v --follow-fork --sample-rate $rate -f collapsed -o "$TMP/$key.prof" -- \
		"$TB/t_kidstub" linger 2 $n "$TMP/$key.fifo")
	RC=$(cat "$TMP/$key.rc")
	check_rc $key 0 "$key: exits 0"
	for i in 0 1; do timeout 10 sh -c "echo go >'$TMP/$key.fifo.$i'"; done
	wait_for "$TMP/$key.out" "^worker 0 errors" 20 && wait_for "$TMP/$key.out" "^worker 1 errors" 20
	d=$(kidstub_looks "$TMP/$key.out" stub-on 2)
	d+=$(kidstub_looks "$TMP/$key.out" file 2 after)
	for i in 0 1; do grep -qx "worker $i errors 0" "$TMP/$key.out" || d+="no 'worker $i errors 0'"$'\n'; done
	[ "$(grep -c '^heaptrace: fast path: PID [0-9]*: every redirected function restored' "$TMP/$key.err")" = 2 ] ||
		d+="-v does not say twice that a worker's functions were restored"$'\n'
	report "$key: workers alive at heaptrace's end get their functions back and run on correctly" "$d"

	# heaptrace SIGKILLed while its children have their stubs: they run on, correct.
	key=kidstub_kill
	rm -f "$TMP/$key.fifo".*
	mkfifo "$TMP/$key.fifo.0" "$TMP/$key.fifo.1" "$TMP/$key.fifo.p"
	ht_bg $key --follow-fork --sample-rate $rate -f collapsed -o "$TMP/$key.prof" -- "$TB/t_kidstub" linger 2 $n "$TMP/$key.fifo" hold
	hp=$HPID
	d=""
	if wait_for "$TMP/$key.tout" "^workers done" 30 "$hp"; then
		kill -KILL "$(pgrep -P "$hp" | head -1)" 2>/dev/null
		sleep 0.2
		for i in 0 1 p; do timeout 10 sh -c "echo go >'$TMP/$key.fifo.$i'"; done
		wait_for "$TMP/$key.tout" "^worker 0 errors" 20 && wait_for "$TMP/$key.tout" "^worker 1 errors" 20
		d=$(kidstub_looks "$TMP/$key.tout" stub-on 2 after)
		for i in 0 1; do grep -qx "worker $i errors 0" "$TMP/$key.tout" || d+="no 'worker $i errors 0'"$'\n'; done
	else
		d="t_kidstub never said 'workers done': $(cat "$TMP/$key.tout")"
	fi
	ht_bg_wait $key "$hp" 20
	report "$key: heaptrace SIGKILLed: the workers keep their enabled stubs and run on correctly" "$d"
}
