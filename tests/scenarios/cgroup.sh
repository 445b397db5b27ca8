# shellcheck shell=bash
# Area "cgroup" of tests/run.sh (sourced by it; helpers in tests/lib.sh and
# tests/scenarios/prefork.sh): processes traced beside the target
# (session/procset.c), on t_service, a pre-fork service whose processes
# say "ready PID BYTES" (what each will allocate), allocate at SIGUSR1 and
# end at SIGTERM.
# scenario pids: -p A -p B,C; -p PID --follow-fork with workers already running; an adopted process forking
# later; heaptrace SIGKILLed with stubs in all; a process's map entries given back at its end.
# scenario cgroupsvc: --cgroup, a service in it before and one moved in during the run; a pid used again.
# scenario seccomp: a service whose seccomp filter refuses the stub's memfd_create, beside one that has none.

# svc_start FILE K BASE [CGROUP [BIN [MODE]]]: a t_service (in CGROUP; MODE:
# seccomp) whose lines go to FILE; its pid in SVC.
svc_start() {
	local f=$1 k=$2 base=$3 cg=${4:-} bin=${5:-$TB/t_service} mode=${6:-}
	if [ -n "$cg" ]; then
		(echo "$BASHPID" >"$cg/cgroup.procs" && exec "$bin" "$k" "$base" ${mode:+"$mode"}) >>"$f" 2>/dev/null &
	else
		"$bin" "$k" "$base" ${mode:+"$mode"} >>"$f" 2>/dev/null &
	fi
	SVC=$!
}

# svc_pair_traced KEY CG: two t_service (bases 1 and 2; s1, s2) in CG,
# their lines in f=$TMP/KEY.svc, then heaptrace --cgroup CG --merge (HPID)
# until it has adopted them.
svc_pair_traced() {
	f=$TMP/$1.svc
	svc_start "$f" 0 1 "$2"; s1=$SVC
	svc_start "$f" 0 2 "$2"; s2=$SVC
	svc_lines "$f" ready 2 10
	ht_bg "$1" -v --cgroup "$2" --merge -f proto -o "$TMP/$1.pb.gz"
	wait_for "$TMP/$1.err" "processes traced beside" 30 "$HPID"
}

# svc_paths KEY PID...: -v said that each PID (adopted running) has a stub
# of its own, or, under --no-inject (make test-noinject), uprobes.
svc_paths() {
	local key=$1 p want d=""
	shift
	want="the fast path: a stub of its own at 0x"
	grep -q 'fast path: off (--no-inject)' "$TMP/$key.err" && want="uprobes (the fast path is off)"
	for p in "$@"; do
		[ "$(grep -c "^heaptrace: PID $p: $want" "$TMP/$key.err")" = 1 ] || d+="PID $p: no 'PID $p: $want'"$'\n'
	done
	[ -n "$d" ] && d+="$(grep -E 'fast path|too \(slot|uprobes' "$TMP/$key.err" | head -30)"
	report "$key: each of the $# processes adopted running: '$want'" "$d"
}

# map_keys HEAPTRACE_PID NAME: the keys (u32, one a line) of heaptrace's BPF
# map NAME, found by the map ids of its file descriptors (bpftool).
map_keys() {
	local f id seen=" "
	for f in /proc/"$1"/fdinfo/*; do
		id=$(awk '/^map_id:/ { print $2 }' "$f" 2>/dev/null)
		[ -n "$id" ] || continue
		# A map has several descriptors (programs loaded apart hold their own: tracer/apart.c): once.
		[[ $seen == *" $id "* ]] && continue
		seen+="$id "
		bpftool map show id "$id" 2>/dev/null | head -1 | grep -q " name $2 " || continue
		bpftool -j map dump id "$id" 2>/dev/null | grep -oE '"formatted":\{"key":[0-9]+' | grep -oE '[0-9]+$'
	done
}

# svc_others FILE PID: the pids of FILE's processes but PID (the target).
svc_others() { awk -v t="$2" '/^ready / && $2 != t { print $2 }' "$1"; }

# svc_lines FILE WORD N SECS: until FILE has N lines starting with WORD.
svc_lines() {
	local n=$(($4 * 10))
	while [ "$(grep -c "^$2 " "$1" 2>/dev/null)" != "$3" ] && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	[ "$(grep -c "^$2 " "$1" 2>/dev/null)" = "$3" ]
}

# svc_run KEY FILE N: every process of FILE allocates (SIGUSR1), all N say
# done, then heaptrace (HPID) is stopped with SIGINT and waited for.
svc_run() {
	local key=$1 f=$2 n=$3
	# shellcheck disable=SC2046
	kill -USR1 $(awk '/^ready /{ print $2 }' "$f") 2>/dev/null
	svc_lines "$f" "done" "$n" 20 || echo "only $(grep -c '^done ' "$f") of $n processes allocated" >>"$TMP/$key.diag"
	kill -INT "$HPID" 2>/dev/null
	ht_bg_wait "$key" "$HPID" 30
}

# svc_stop FILE PID...: SIGUSR1 then SIGTERM to every process of FILE (a
# t_service waits for SIGUSR1 first), and the services waited for.
svc_stop() {
	local f=$1 p
	shift
	# shellcheck disable=SC2046
	kill -USR1 $(awk '/^ready /{ print $2 }' "$f") 2>/dev/null
	sleep 0.2
	# shellcheck disable=SC2046
	kill -TERM $(awk '/^ready /{ print $2 }' "$f") 2>/dev/null
	for p in "$@"; do
		wait_exit "$p" 5 || kill_tree "$p"
	done
}

# svc_total FILE: the sum of a collapsed profile's values.
svc_total() { awk '{ s += $NF } END { print s + 0 }' "$1" 2>/dev/null; }

# svc_want FILE: "PID BYTES" of every process of FILE, sorted by PID.
svc_want() { awk '/^ready /{ print $2, $3 }' "$1" | sort -n; }

# svc_check KEY FILE N: the merged proto profile KEY.pb.gz holds each of
# FILE's N processes under its pid label with exactly its own bytes.
svc_check() {
	local key=$1 f=$2 n=$3 got want d
	want=$(svc_want "$f")
	got=$(merge_pids "$key" "$TMP/$key.pb.gz")
	d=$(rc_diag "$key" 0)$(cat "$TMP/$key.diag" 2>/dev/null)
	[ "$(echo "$want" | grep -c .)" = "$n" ] || d+="$(echo "$want" | grep -c .) processes ready, not $n"$'\n'
	[ "$got" = "$want" ] || d+="alloc_space by pid label:"$'\n'"$got"$'\n'"want:"$'\n'"$want"$'\n'"$(ctx "$key")"
	report "$key: one merged profile, the $n processes each with exactly its own bytes" "$d"
}

scenario_pids() {
	local key f a b c d
	# -p A -p B,C: three unrelated services (no workers), each with its own base.
	key=pids_list
	f=$TMP/$key.svc
	svc_start "$f" 0 1; a=$SVC
	svc_start "$f" 0 2; b=$SVC
	svc_start "$f" 0 3; c=$SVC
	svc_lines "$f" ready 3 10
	ht_bg $key -v --merge -f proto -o "$TMP/$key.pb.gz" -p "$a" -p "$b,$c"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	svc_run $key "$f" 3
	svc_check $key "$f" 3
	svc_paths $key "$b" "$c"
	pprof_tool $key.tags go -tags "$TMP/$key.pb.gz"
	d=$(grep -cE '^ +[0-9.]+kB \( *100%\): .*/t_service$' "$TMP/$key.tags.out")
	report "$key: a program label beside pid: t_service holds all (go tool pprof -tags)" \
		"$([ "$d" = 1 ] || cat "$TMP/$key.tags.out" "$TMP/$key.tags.err")"
	svc_stop "$f" "$a" "$b" "$c"

	# Without --merge, a profile per process: FILE and FILE.PID.
	key=pids_sep
	f=$TMP/$key.svc
	svc_start "$f" 0 4; a=$SVC
	svc_start "$f" 0 5; b=$SVC
	svc_lines "$f" ready 2 10
	ht_bg $key -f collapsed --value alloc_space -o "$TMP/$key.prof" -p "$a,$b"
	wait_for "$TMP/$key.err" "tracing PID" 30 "$HPID"
	sleep 1
	svc_run $key "$f" 2
	d=$(rc_diag $key 0)
	[ "$(svc_total "$TMP/$key.prof")" = 2050 ] || d+="the target's profile: $(cat "$TMP/$key.prof")"$'\n'
	[ "$(svc_total "$TMP/$key.prof.$b")" = 2060 ] || d+="PID $b's profile: $(cat "$TMP/$key.prof.$b" 2>&1)"
	report "$key: -p A,B without --merge: A's profile 2050 bytes, B's in FILE.B 2060" "$d"
	svc_stop "$f" "$a" "$b"

	# -p PID --follow-fork: the 3 workers running already are traced too.
	key=pids_tree
	f=$TMP/$key.svc
	svc_start "$f" 3 0; a=$SVC
	svc_lines "$f" ready 4 10
	ht_bg $key -v --follow-fork --merge -f proto -o "$TMP/$key.pb.gz" --http "unix:$TMP/$key.sock" -p "$a"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	# /metrics: a series per process, labelled pid and program, each with its own bytes.
	# shellcheck disable=SC2046
	kill -USR1 $(awk '/^ready /{ print $2 }' "$f") 2>/dev/null
	svc_lines "$f" "done" 4 20
	curl -s --max-time 10 --unix-socket "$TMP/$key.sock" http://x/metrics >"$TMP/$key.metrics" 2>&1
	d=$(sed -n 's/^heaptrace_process_inuse_bytes{pid="\([0-9]*\)",program="[^"]*t_service"} \([0-9]*\)$/\1 \2/p' \
		"$TMP/$key.metrics" | sort -n)
	report "$key: /metrics has heaptrace_process_inuse_bytes{pid,program} for the 4 processes, each its own bytes" \
		"$([ "$d" = "$(svc_want "$f")" ] || echo "got:"$'\n'"$d"$'\n'"want:"$'\n'"$(svc_want "$f")")"
	svc_run $key "$f" 4
	svc_check $key "$f" 4
	# shellcheck disable=SC2046
	svc_paths $key $(svc_others "$f" "$a")
	svc_stop "$f" "$a"

	# A process adopted running with a stub forks later: its children get their own copy of its stub.
	key=pids_late
	f=$TMP/$key.svc
	svc_start "$f" 0 1; a=$SVC
	svc_start "$f" 2 2 "" "$TB/t_service" late; b=$SVC
	svc_lines "$f" ready 2 10
	ht_bg $key -v --follow-fork --merge -f proto -o "$TMP/$key.pb.gz" -p "$a,$b"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	kill -USR1 "$a" "$b"
	svc_lines "$f" ready 4 10
	svc_run $key "$f" 4
	svc_check $key "$f" 4
	svc_paths $key "$b"
	d=""
	want="has its own copy of the stub, enabled"
	grep -q 'fast path: off (--no-inject)' "$TMP/$key.err" && want="(followed: the fast path is off)"
	for p in $(svc_others "$f" "$a" | grep -vx "$b"); do
		grep -q "^heaptrace: following child PID $p$" "$TMP/$key.err" || d+="worker $p: not followed"$'\n'
		[ "$want" = "(followed: the fast path is off)" ] ||
			grep -q "^heaptrace: fast path: PID $p $want" "$TMP/$key.err" || d+="worker $p: no '$want'"$'\n'
	done
	report "$key: the 2 workers forked by the adopted PID after the attach, followed: $want" \
		"$d$([ -n "$d" ] && grep -E 'PID|stub' "$TMP/$key.err" | head -20)"
	svc_stop "$f" "$a" "$b"

	# heaptrace SIGKILLed with a stub in every process: they run on, and the next one uses the stubs again, exactly.
	key=pids_kill
	f=$TMP/$key.svc
	svc_start "$f" 1 1; a=$SVC
	svc_start "$f" 1 3; b=$SVC
	svc_lines "$f" ready 4 10
	ht_bg ${key}_1 -v --follow-fork -d 60 -o "$TMP/$key.1.txt" -p "$a,$b"
	wait_for "$TMP/${key}_1.err" "processes traced beside" 30 "$HPID"
	kill -KILL "$(pgrep -P "$HPID" | head -1)" 2>/dev/null || kill -KILL "$HPID"
	wait "$HPID" 2>/dev/null
	ht_bg $key -v --follow-fork --merge -f proto -o "$TMP/$key.pb.gz" -p "$a,$b"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	svc_run $key "$f" 4
	svc_check $key "$f" 4
	# Under --no-inject: no stub, the processes run on after the SIGKILL all the same.
	want="3 4"
	grep -q 'fast path: off (--no-inject)' "$TMP/$key.err" && want="0 0"
	d="$(grep -c "stub of its own at 0x" "$TMP/${key}_1.err") $(grep -c "the stub an earlier heaptrace left at 0x.* is used again" "$TMP/$key.err")"
	report "$key: after a SIGKILL, stubs used again by the next heaptrace (adopted with a stub, used again): $want" \
		"$([ "$d" = "$want" ] || echo "got $d: $(grep -E 'used again|stub of its own|not installed|cannot' "$TMP/$key.err" "$TMP/${key}_1.err")")"
	svc_stop "$f" "$a" "$b"

	# A process that ends gives back its entries of the procs and stub_procs maps; the others keep theirs.
	key=pids_exit
	f=$TMP/$key.svc
	svc_start "$f" 0 1; a=$SVC
	svc_start "$f" 0 2; b=$SVC
	svc_lines "$f" ready 2 10
	ht_bg $key -v -f collapsed -o "$TMP/$key.prof" -p "$a,$b"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	c=$(pgrep -P "$HPID" | head -1)
	stub=1
	grep -q 'fast path: off (--no-inject)' "$TMP/$key.err" && stub=0
	d=""
	map_keys "$c" procs | grep -qx "$b" || d+="while it runs: $b not in procs"$'\n'
	[ "$(map_keys "$c" stub_procs | grep -cx "$b")" = $stub ] || d+="while it runs: $b in stub_procs, not $stub time(s)"$'\n'
	kill -USR1 "$b"
	svc_lines "$f" "done" 1 10
	kill -TERM "$b"
	wait_exit "$b" 5 || kill_tree "$b"
	for _ in $(seq 30); do map_keys "$c" procs | grep -qx "$b" || break; sleep 0.1; done
	map_keys "$c" procs | grep -qx "$b" && d+="after its end: $b still in procs"$'\n'
	map_keys "$c" stub_procs | grep -qx "$b" && d+="after its end: $b still in stub_procs"$'\n'
	[ "$(map_keys "$c" stub_procs | grep -cx "$a")" = $stub ] || d+="the target $a: in stub_procs not $stub time(s)"$'\n'
	report "$key: PID $b's entries (procs, stub_procs) while it runs, none after its end; the target's stay" "$d"
	kill -USR1 "$a"
	svc_lines "$f" "done" 2 10
	kill -INT "$HPID"
	ht_bg_wait $key "$HPID" 30
	d=$(rc_diag $key 0)
	[ "$(svc_total "$TMP/$key.prof")" = 2020 ] || d+="the target's profile: $(cat "$TMP/$key.prof")"$'\n'
	[ "$(svc_total "$TMP/$key.prof.$b")" = 2030 ] || d+="PID $b's profile: $(cat "$TMP/$key.prof.$b" 2>&1)"
	report "$key: each profile exact, the ended process's too: 2020 and 2030 bytes" "$d"
	svc_stop "$f" "$a"

	# A pid that is gone is skipped with one line; the others are traced.
	key=pids_gone
	f=$TMP/$key.svc
	svc_start "$f" 0 6; a=$SVC
	sleep 0.01 &
	b=$!
	wait "$b"
	svc_lines "$f" ready 1 10
	ht_bg $key -v --merge -f proto -o "$TMP/$key.pb.gz" -p "$a,$b"
	wait_for "$TMP/$key.err" "tracing PID" 30 "$HPID"
	sleep 1
	svc_run $key "$f" 1
	svc_check $key "$f" 1
	d=$(grep -c "PID $b (gone) is not traced: it is gone" "$TMP/$key.err")
	report "$key: a pid that is gone: one line says so" "$([ "$d" = 1 ] || ctx $key)"
	svc_stop "$f" "$a"

	# Tracing goes on past the target's end while another process lives, and ends with the last.
	key=pids_outlive
	f=$TMP/$key.svc
	svc_start "$f" 0 7; a=$SVC
	svc_start "$TMP/$key.svc2" 0 8; b=$SVC
	svc_lines "$f" ready 1 10
	svc_lines "$TMP/$key.svc2" ready 1 10
	ht_bg $key -v --merge -f proto -o "$TMP/$key.pb.gz" -p "$a,$b"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	svc_stop "$f" "$a"
	d=$(kill -0 "$HPID" 2>/dev/null || echo "heaptrace ended with the target")
	cat "$f" >>"$TMP/$key.svc2"
	kill -USR1 "$b"
	svc_lines "$TMP/$key.svc2" "done" 2 20
	kill -TERM "$b"
	ht_bg_wait $key "$HPID" 30
	report "$key: -p A,B goes on after A's end and ends by itself with B's" "$d$(rc_diag $key 0)"
	svc_check $key "$TMP/$key.svc2" 2
	wait_exit "$b" 5 || kill_tree "$b"

	# A process another debugger holds (gdb) cannot be seized: skipped with the reason, the others traced.
	key=pids_held
	f=$TMP/$key.svc
	svc_start "$f" 0 1; a=$SVC
	svc_start "$TMP/$key.svc2" 0 2; b=$SVC
	svc_lines "$f" ready 1 10
	svc_lines "$TMP/$key.svc2" ready 1 10
	timeout -k 2 30 gdb -nx -q -batch -p "$b" -ex 'shell sleep 6' >"$TMP/$key.gdb" 2>&1 &
	c=$!
	for _ in $(seq 100); do
		[ "$(awk '/^TracerPid:/ { print $2 }' /proc/"$b"/status 2>/dev/null)" -gt 0 ] 2>/dev/null && break
		sleep 0.1
	done
	ht_bg $key -v --merge -f proto -o "$TMP/$key.pb.gz" -p "$a,$b"
	wait_for "$TMP/$key.err" "tracing PID" 30 "$HPID"
	sleep 1
	svc_run $key "$f" 1
	svc_check $key "$f" 1
	d=$(grep -c "PID $b (.*t_service) is not traced: cannot ptrace it: Operation not permitted" "$TMP/$key.err")
	report "$key: a process gdb holds: one line names it and why" "$([ "$d" = 1 ] || { ctx $key; head -3 "$TMP/$key.gdb"; })"
	wait_exit "$c" 20 || kill_tree "$c"
	svc_stop "$f" "$a"
	svc_stop "$TMP/$key.svc2" "$b"

	# -p twice the same pid is bad input.
	ht pids_twice -p 1,1
	d=$(rc_diag pids_twice 2)
	grep -q -- "-p 1 is given twice" "$TMP/pids_twice.err" || d+="stderr: $(cat "$TMP/pids_twice.err")"
	report "pids_twice: -p 1,1: one line, exit status 2" "$d"
}

scenario_cgroupsvc() {
	local key=cgroup f cg s1 s2 st d name p
	cg=/sys/fs/cgroup/unified/heaptrace-test-$$
	[ -d /sys/fs/cgroup/unified ] || cg=/sys/fs/cgroup/heaptrace-test-$$
	if ! mkdir "$cg" 2>/dev/null; then
		fail "$key: cannot make a cgroup at $cg"
		return
	fi
	f=$TMP/$key.svc
	# A service (parent + 3 workers) and a static binary without symbols, in the cgroup before.
	svc_start "$f" 3 0 "$cg"; s1=$SVC
	svc_start "$TMP/$key.static" 0 0 "$cg" "$TB/t_service_static"; st=$SVC
	svc_lines "$f" ready 4 10
	svc_lines "$TMP/$key.static" ready 1 10
	ht_bg $key -v --cgroup "$cg" --merge -f proto -o "$TMP/$key.pb.gz"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	# A second one moved in while tracing, its 4 processes once all run: found at the next poll (at most a
	# second).  Moved in, not started in the cgroup: a poll that finds the parent while it forks its
	# workers, its one thread in a fork stop left to the ptrace loop, gives it uprobes (procstub.c says why).
	local before
	before=$(awk '/^ready /{ print $2 }' "$f")
	svc_start "$f" 3 5; s2=$SVC
	svc_lines "$f" ready 8 10
	for p in $(awk '/^ready /{ print $2 }' "$f"); do
		grep -qx "$p" <<<"$before" || echo "$p" >"$cg/cgroup.procs"
	done
	for _ in $(seq 30); do
		[ "$(grep -c "joined cgroup" "$TMP/$key.err")" -ge 1 ] && break
		sleep 0.1
	done
	sleep 1.2
	svc_run $key "$f" 8
	svc_check $key "$f" 8
	# The target: the oldest (lowest pid) dynamically linked process; the 7 others, joiners included, a stub each.
	# shellcheck disable=SC2046
	svc_paths $key $(svc_others "$f" "$(svc_want "$f" | head -1 | cut -d' ' -f1)")
	name=$(grep -c "PID $st (.*t_service_static) is not traced: no allocator found" "$TMP/$key.err")
	report "$key: the static binary in the cgroup is skipped and named, once" "$([ "$name" = 1 ] || ctx $key)"
	svc_stop "$f" "$s1" "$s2"
	svc_stop "$TMP/$key.static" "$st"
	d=""
	[ -s "$cg/cgroup.procs" ] && d="processes left in it: $(cat "$cg/cgroup.procs")"
	rmdir "$cg" 2>/dev/null || d+=" cannot remove $cg"
	report "$key: the test's cgroup is empty and removed" "$d"

	# A pid used again: a process of the cgroup ends, a new one gets its pid (ns_last_pid) and joins: traced too.
	key=cgroup_reuse
	cg=${cg%/*}/heaptrace-reuse-$$
	if ! mkdir "$cg" 2>/dev/null; then
		fail "$key: cannot make a cgroup at $cg"
	else
		svc_pair_traced "$key" "$cg"
		kill -USR1 "$s2"
		svc_lines "$f" "done" 1 10
		kill -TERM "$s2"
		wait_exit "$s2" 5 || kill_tree "$s2"
		sleep 0.3
		# Another process of the machine may take the pid first: a few tries.
		st=""
		for _ in 1 2 3 4 5; do
			echo $((s2 - 1)) >/proc/sys/kernel/ns_last_pid
			svc_start "$f" 0 3 "$cg"
			[ "$SVC" = "$s2" ] && { st=$SVC; break; }
			sed -i "/^ready $SVC /d" "$f"
			kill -TERM "$SVC" 2>/dev/null
			sleep 0.2
			kill -USR1 "$SVC" 2>/dev/null
			wait_exit "$SVC" 5 || kill_tree "$SVC"
		done
		if [ -z "$st" ]; then
			echo "# $key: PID $s2 was not given again in 5 tries: not run (not counted)"
			kill -INT "$HPID"
			ht_bg_wait $key "$HPID" 30
			svc_stop "$f" "$s1"
		else
			svc_lines "$f" ready 3 10
			for _ in $(seq 30); do
				grep -q "PID $st joined cgroup" "$TMP/$key.err" && break
				sleep 0.1
			done
			kill -USR1 "$s1" "$st"
			svc_lines "$f" "done" 3 20
			kill -INT "$HPID"
			ht_bg_wait $key "$HPID" 30
			want=$(awk '/^ready / { s[$2] += $3 } END { for (p in s) print p, s[p] }' "$f" | sort -n)
			got=$(merge_pids "$key" "$TMP/$key.pb.gz")
			d=$(rc_diag $key 0)
			grep -q "PID $st joined cgroup" "$TMP/$key.err" || d+="no 'PID $st joined cgroup'"$'\n'
			[ "$got" = "$want" ] || d+="by pid label:"$'\n'"$got"$'\n'"want:"$'\n'"$want"$'\n'
			report "$key: PID $st, used again by a new process of the cgroup, is traced too: the two processes' bytes under its label" "$d"
			svc_stop "$f" "$s1" "$st"
		fi
		for _ in $(seq 20); do [ -s "$cg/cgroup.procs" ] || break; sleep 0.1; done
		rmdir "$cg" 2>/dev/null || fail "$key: cannot remove $cg: $(cat "$cg/cgroup.procs" 2>/dev/null)"
	fi

	# A cgroup v1 hierarchy's directory (this machine: hybrid, pids under /sys/fs/cgroup/pids).
	key=cgroup_v1
	cg=/sys/fs/cgroup/pids/heaptrace-test-$$
	if [ ! -d /sys/fs/cgroup/pids ] || [ -e /sys/fs/cgroup/pids/cgroup.subtree_control ]; then
		echo "# $key: no cgroup v1 pids hierarchy here: not run (not counted)"
	elif ! mkdir "$cg" 2>/dev/null; then
		fail "$key: cannot make a cgroup at $cg"
	else
		svc_pair_traced "$key" "$cg"
		svc_run $key "$f" 2
		svc_check $key "$f" 2
		svc_stop "$f" "$s1" "$s2"
		rmdir "$cg" 2>/dev/null || fail "$key: cannot remove $cg: $(cat "$cg/cgroup.procs" 2>/dev/null)"
	fi

	# Not a cgroup: one line, a failure status, nothing traced.
	ht cgroup_none --cgroup "$TMP/no-such-cgroup"
	d=$(rc_diag cgroup_none 1)
	[ "$(wc -l <"$TMP/cgroup_none.err")" = 1 ] && grep -q "not a cgroup directory" "$TMP/cgroup_none.err" ||
		d+="stderr: $(cat "$TMP/cgroup_none.err")"
	report "cgroup_none: --cgroup on a directory that is no cgroup: one line, exit status 1" "$d"
}

scenario_seccomp() {
	local key=seccomp f cg s1 s2 d p want sc
	cg=/sys/fs/cgroup/unified/heaptrace-sc-$$
	[ -d /sys/fs/cgroup/unified ] || cg=/sys/fs/cgroup/heaptrace-sc-$$
	if ! mkdir "$cg" 2>/dev/null; then
		fail "$key: cannot make a cgroup at $cg"
		return
	fi
	f=$TMP/$key.svc
	# The target (the oldest) has no filter; the sandboxed service (parent + 1 worker) refuses memfd_create.
	svc_start "$f" 2 0 "$cg"; s1=$SVC
	svc_lines "$f" ready 3 10
	svc_start "$f" 1 4 "$cg" "$TB/t_service" seccomp; s2=$SVC
	svc_lines "$f" ready 5 10
	sc="$s2 $(cat /proc/"$s2"/task/*/children 2>/dev/null)"
	ht_bg $key -v --cgroup "$cg" --merge -f proto -o "$TMP/$key.pb.gz"
	wait_for "$TMP/$key.err" "processes traced beside" 30 "$HPID"
	svc_run $key "$f" 5
	svc_check $key "$f" 5
	# shellcheck disable=SC2046,SC2086
	svc_paths $key $(svc_others "$f" "$s1" | grep -vxF -f <(printf '%s\n' $sc))
	d=""
	want="is traced with uprobes, not the fast path: memfd_create in the target: Operation not permitted"
	grep -q 'fast path: off (--no-inject)' "$TMP/$key.err" && want="uprobes (the fast path is off)"
	[ "$(echo "$sc" | wc -w)" = 2 ] || d+="the sandboxed service's processes: '$sc', not 2"$'\n'
	for p in $sc; do
		[ "$(grep -c "PID $p.*$want" "$TMP/$key.err")" = 1 ] || d+="PID $p: not one '$want'"$'\n'
	done
	# What the failed installation mapped (its reservation, anonymous r-x) was unmapped again.
	for p in $sc; do
		grep -qE 'heaptrace-stub|^[0-9a-f]+-[0-9a-f]+ r-xp [0-9a-f]+ 00:00 0 *$' /proc/"$p"/maps &&
			d+="PID $p keeps a mapping of the stub: $(grep -E 'heaptrace-stub| r-xp .* 0 *$' /proc/"$p"/maps)"$'\n'
	done
	grep -q "seccomp filter not installed" "$f" && d+="t_service seccomp: its filter did not hold"$'\n'
	report "$key: the 2 sandboxed processes: one line each, uprobes and why, nothing of the stub left mapped" \
		"$d$([ -n "$d" ] && grep -E 'PID|fast path' "$TMP/$key.err" | head -30)"
	svc_stop "$f" "$s1" "$s2"
	d=""
	for _ in $(seq 20); do [ -s "$cg/cgroup.procs" ] || break; sleep 0.1; done
	[ -s "$cg/cgroup.procs" ] && d="processes left in it: $(cat "$cg/cgroup.procs")"
	rmdir "$cg" 2>/dev/null || d+=" cannot remove $cg"
	report "$key: the test's cgroup is empty and removed" "$d"
}
