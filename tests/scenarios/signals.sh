# shellcheck shell=bash
# Area "signals" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario stopsignals: SIGINT, SIGTERM and SIGHUP to heaptrace, several at
# once, while the profile is written, from timeout(1) and from a closing
# terminal; scenario jobcontrol: Ctrl-Z, fg, bg, SIGSTOP and SIGCONT reach
# the traced command as without heaptrace (launch mode, -p, --follow-fork).
#
# The target is t_jobs (see its source):
#   every mode: job_keep 4 x 1000 kept, job_temp 1 x 500 freed
#   hold:       waits for a line, then job_after 3 x 300 kept, exit 7
#   wide:       wide_leaf 1024 x 16 kept under 1024 different stacks (the
#               collapsed profile is about 280 KB), then as hold
#   fork:       waits for a line, forks; the child: child_keep 2 x 2000
#               kept, waits for a line, exits 0; then job_after, exit 7
# Profiles are -f collapsed --value alloc_space.

# sg_state PID: the state letter of PID (S, R, T, t, ...), or "gone".
sg_state() {
	local s
	s=$(sed -n 's/^State:[[:space:]]*\([A-Za-z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	echo "${s:-gone}"
}

# sg_settle STATES NAME:PID...: nothing when the state of each PID is one
# of STATES ("SR": running or asleep, "tT": stopped) within 3 s and still
# 0.3 s later; else a line for each that is not.
sg_settle() {
	local want=$1 n=30 a bad
	shift
	while :; do
		bad=""
		for a in "$@"; do
			[[ $want == *"$(sg_state "${a#*:}")"* ]] || bad+=" $a"
		done
		if [ -z "$bad" ]; then
			sleep 0.3
			for a in "$@"; do
				[[ $want == *"$(sg_state "${a#*:}")"* ]] || bad+=" $a"
			done
			[ -z "$bad" ] && return 0
		fi
		[ "$n" -le 0 ] && break
		sleep 0.1
		n=$((n - 1))
	done
	for a in $bad; do
		echo "${a%%:*} (PID ${a#*:}) is in state $(sg_state "${a#*:}"), want one of $want"
	done
}

# sg_running NAME:PID...: each runs (or sleeps), see sg_settle.
sg_running() {
	sg_settle SR "$@"
}

# sg_stopped NAME:PID...: each is stopped (T, or t: in a ptrace stop).
sg_stopped() {
	sg_settle tT "$@"
}

# sg_wchan PID REGEX SECS: until the kernel function PID sleeps in matches.
sg_wchan() {
	local n=$(($3 * 10))
	while [ "$n" -gt 0 ]; do
		grep -qE "$2" "/proc/$1/wchan" 2>/dev/null && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# sg_pid REGEX: the PID whose command line matches REGEX (pgrep -f -o).
sg_pid() {
	pgrep -o -f "$1"
}

# sg_cleanup KEY: SIGKILL whatever still runs of KEY's heaptrace and
# target (found by KEY's FIFO on their command lines): a heaptrace that
# died leaves its command waiting on the FIFO.
sg_cleanup() {
	local p
	for p in $(pgrep -f -- "$TMP/$1\.fifo"); do
		kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# sg_add TEXT: TEXT, unless empty, as a line of the caller's diagnostic d.
sg_add() {
	[ -z "$1" ] || d+="$1"$'\n'
}

# sg_release KEY: one line to KEY's FIFO; a diagnostic if nobody reads it in 10 s.
sg_release() {
	release "$1" || echo "could not release the target (FIFO not read in 10 s)"
}

# sg_lines KEY: how many times heaptrace said "writing profile, please wait".
sg_lines() {
	grep -c '^heaptrace: writing profile, please wait$' "$TMP/$1.err" 2>/dev/null
}

# sg_profile KEY FILE LEAF=VALUE...: FILE (a collapsed profile) is exactly
# these innermost frames with these sums.
sg_profile() {
	local key=$1 f=$2 want got
	shift 2
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	want=${want% }
	got=$(awk 'match($0, / [0-9]+$/) {
		v = substr($0, RSTART + 1) + 0
		n = split(substr($0, 1, RSTART - 1), fr, ";")
		s[fr[n]] += v
	} END { for (k in s) printf "%s=%.0f\n", k, s[k] }' "$f" 2>/dev/null | sort | tr '\n' ' ')
	if [ "${got% }" = "$want" ]; then
		pass "$key: profile $want"
	else
		fail "$key: profile $want" "got '${got% }' from $(rel "$f")"$'\n'"$(ctx "$key")"
	fi
}

# ---------------------------------------------------------------------------
# A pseudo-terminal with an interactive bash, for real job control: the
# keys typed (Ctrl-Z) make the terminal signal the foreground job, and fg,
# bg are bash's.  script(1) holds the terminal; what bash shows is in
# KEY.pty.

# pty_start KEY: sets SPID (the timeout wrapper of script) and PTY_FD.
pty_start() {
	mkfifo "$TMP/$1.in"
	exec {PTY_FD}<>"$TMP/$1.in"
	HISTFILE=/dev/null timeout -k 5 90 script -qfc "bash --norc --noprofile -i" /dev/null \
		<"$TMP/$1.in" >"$TMP/$1.pty" 2>&1 &
	SPID=$!
}

# pty_type TEXT: keys to the terminal (printf format: \n, \032 for Ctrl-Z).
pty_type() {
	# shellcheck disable=SC2059
	printf "$1" >&"$PTY_FD"
	sleep 0.3
}

pty_end() {
	pty_type 'exit\n'
	kill_tree "$SPID"
	exec {PTY_FD}>&-
}

scenario_stopsignals() {
	stopsignals_during_write 2 INT
	sg_cleanup sgwrite2
	stopsignals_during_write 3 TERM HUP
	sg_cleanup sgwrite3
	stopsignals_back_to_back
	sg_cleanup sgb2b
	sg_cleanup sgb2bp
	stopsignals_after_write
	sg_cleanup sgafter
	stopsignals_timeout
	sg_cleanup sgtimeout
	stopsignals_hangup shell
	sg_cleanup sghup_shell
	stopsignals_hangup leader
	sg_cleanup sghup_leader
}

# Launch mode, t_jobs wide: SIGINT to heaptrace, then, while heaptrace is
# blocked writing its profile into a full pipe, SIG... (1 or 2 more
# signals).  heaptrace says "writing profile, please wait" once, writes the
# whole profile, passes the first signal on to the command (killed by it)
# and exits 130.
stopsignals_during_write() {
	local key=sgwrite$1 d="" hp pfd rfd cat_pid sig more
	shift
	more=$(printf ', SIG%s' "$@")
	mkfifo "$TMP/$key.fifo" "$TMP/$key.pipe"
	exec {pfd}<>"$TMP/$key.pipe"
	# (our end of the pipe, which keeps the open below from blocking, is not theirs)
	ht_bg "$key" -v -f collapsed --value alloc_space -o "$TMP/$key.pipe" -- "$TB/t_jobs" wide "$TMP/$key.fifo" {pfd}>&-
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		fail "$key: the target starts under heaptrace" "$(ctx "$key")"
		kill_tree "$HPID"
		exec {pfd}>&-
		return
	fi
	hp=$(pgrep -P "$HPID")
	kill -INT "$hp"
	if sg_wchan "$hp" 'pipe_write' 15; then
		for sig in "$@"; do
			kill -"$sig" "$hp"
		done
		sleep 0.5
		kill -0 "$hp" 2>/dev/null || sg_add "heaptrace ended on the signals that came while it wrote the profile"
	else
		sg_add "heaptrace not blocked writing the profile into the full pipe 15 s after SIGINT: $(cat "/proc/$hp/wchan" 2>/dev/null)"
	fi
	# A reader before our end goes (no SIGPIPE); then heaptrace's end alone keeps the pipe open.
	exec {rfd}<"$TMP/$key.pipe"
	exec {pfd}>&-
	timeout 30 cat <&"$rfd" >"$TMP/$key.out" &
	cat_pid=$!
	exec {rfd}<&-
	ht_bg_wait "$key" "$HPID" 20
	wait "$cat_pid"
	sg_add "$(rc_diag "$key" 130)"
	[ "$(sg_lines "$key")" = 1 ] || sg_add "'writing profile, please wait' said $(sg_lines "$key") times, want 1"
	report "$key: launch mode, SIGINT, then${more#,} while the profile is written: heaptrace says 'writing profile, please wait' once, the command gets the SIGINT, exit 130" \
		"$d"
	sg_profile "$key" "$TMP/$key.out" wide_leaf=16384 job_keep=4000 job_temp=500
	report "$key: the profile has all 1024 + 2 stacks" \
		"$(l=$(grep -c ' [0-9]*$' "$TMP/$key.out"); [ "$l" = 1026 ] || echo "$l lines")"
}

# "kill -INT $p; kill -INT $p": the second one a moment after the first
# must not cost the profile (launch mode: t_jobs hold, exit 130; -p:
# t_wait, exit 0, the target runs on).
stopsignals_back_to_back() {
	local key=sgb2b d="" hp
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -f collapsed --value alloc_space -o "$TMP/$key.prof" -- "$TB/t_jobs" hold "$TMP/$key.fifo"
	if wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		hp=$(pgrep -P "$HPID")
		kill -INT "$hp"
		kill -INT "$hp"
		ht_bg_wait $key "$HPID" 20
		report "$key: launch mode, two SIGINTs back to back: exit 130" "$(rc_diag $key 130)"
		sg_profile $key "$TMP/$key.prof" job_keep=4000 job_temp=500
	else
		fail "$key: the target starts under heaptrace" "$(ctx $key)"
		kill_tree "$HPID"
	fi

	key=sgb2bp
	pstart $key -f collapsed --value alloc_space || return
	hp=$(pgrep -P "$HPID")
	kill -INT "$hp"
	kill -INT "$hp"
	wait_exit "$HPID" 20 || kill_tree "$HPID"
	d=""
	sg_add "$(rl_rc $key 0)"
	target_finishes $key
	report "$key: -p, two SIGINTs back to back: heaptrace exits 0, the target runs on and exits 0" "$d$FIN"
	sg_profile $key "$TMP/$key.out" post_alloc=3840 post_realloc_pre=1500
}

# Launch mode, t_jobs hold catch (the command survives SIGHUP, SIGINT and
# SIGTERM): SIGTERM to heaptrace, which writes the profile, passes the
# SIGTERM on and waits for the command.  Then SIGTERM, SIGINT and SIGHUP
# to heaptrace: passed on, as the first one was; heaptrace waits on, says
# nothing, and exits with the command's 7 once it ends.
stopsignals_after_write() {
	local key=sgafter d="" hp sig
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v -f collapsed --value alloc_space -o "$TMP/$key.prof" -- "$TB/t_jobs" hold "$TMP/$key.fifo" catch
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		fail "$key: the target starts under heaptrace" "$(ctx $key)"
		kill_tree "$HPID"
		return
	fi
	hp=$(pgrep -P "$HPID")
	kill -TERM "$hp"
	# Written, and waiting for the command (waitpid: do_wait).
	if wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 15 "$HPID" && sg_wchan "$hp" 'do_wait' 10; then
		for sig in TERM INT HUP; do
			kill -$sig "$hp"
			sleep 0.1
		done
		sleep 0.5
		kill -0 "$hp" 2>/dev/null || sg_add "heaptrace ended on a signal while it waited for the command"
	else
		sg_add "heaptrace did not write the profile and wait for the command 15 s after SIGTERM"
	fi
	sg_add "$(sg_release $key)"
	ht_bg_wait $key "$HPID" 15
	sg_add "$(rc_diag $key 7)"
	grep -qx 'signals: HUP INT TERM' "$TMP/$key.tout" ||
		sg_add "the command got $(grep '^signals:' "$TMP/$key.tout" || echo 'no signal'), want 'signals: HUP INT TERM'"
	grep -q '^bye$' "$TMP/$key.tout" || sg_add "the command did not run to its end: $(cat "$TMP/$key.tout")"
	[ "$(sg_lines $key)" = 0 ] || sg_add "'writing profile, please wait' said $(sg_lines $key) times after the profile was written"
	report "$key: launch mode, SIGTERM, INT, HUP after the profile is written: passed on to the command, heaptrace waits for it, exit 7" \
		"$d"
	sg_profile $key "$TMP/$key.prof" job_keep=4000 job_temp=500
}

# timeout -s INT 5 heaptrace ... t_jobs hold catch: timeout sends SIGINT
# to heaptrace and to its process group (so heaptrace gets two, the
# command one), then SIGCONT to both.  The command catches SIGINT and waits
# on; heaptrace writes the profile, passes its SIGINT on and waits for the
# command, which runs to its end once released: exit 7, timeout's too
# (--preserve-status).
stopsignals_timeout() {
	local key=sgtimeout d=""
	mkfifo "$TMP/$key.fifo"
	echo "timeout --preserve-status -s INT 5 heaptrace -v -f collapsed --value alloc_space -o \$TMP/$key.prof -- build/tests/t_jobs hold \$TMP/$key.fifo catch" >"$TMP/$key.cmd"
	timeout -k 5 30 timeout --preserve-status -s INT 5 "$HT" -v -f collapsed --value alloc_space \
		-o "$TMP/$key.prof" -- "$TB/t_jobs" hold "$TMP/$key.fifo" catch >"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 20 "$HPID" ||
		sg_add "no 'wrote the profile' line 20 s after the start"
	grep -q '^ready$' "$TMP/$key.tout" || sg_add "the target did not start within the 5 s"
	sg_add "$(sg_release $key)"
	ht_bg_wait $key "$HPID" 30
	sg_add "$(rc_diag $key 7)"
	grep -qx 'signals: INT' "$TMP/$key.tout" ||
		sg_add "the command got $(grep '^signals:' "$TMP/$key.tout" || echo 'no signal'), want 'signals: INT'"
	grep -q '^bye$' "$TMP/$key.tout" || sg_add "the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "$key: timeout -s INT 5 heaptrace CMD (CMD catches SIGINT): profile written, CMD runs to its end once released, exit 7" "$d"
	sg_profile $key "$TMP/$key.prof" job_keep=4000 job_temp=500
}

# The terminal closes (script(1), which holds it, is killed) while
# heaptrace runs t_jobs hold in it.  "shell": started from an interactive
# bash, which sends the foreground job SIGHUP as it goes, and the kernel
# SIGHUP and SIGCONT after; "leader": heaptrace leads the terminal's
# session itself (exec), so the hangup's SIGHUP reaches heaptrace alone,
# which passes it on.  Either way the profile is written, and the command
# ends with heaptrace.
stopsignals_hangup() {
	local how=$1 key=sghup_$1 d="" script hp app cmd
	mkfifo "$TMP/$key.fifo"
	cmd="$HT -v -f collapsed --value alloc_space -o $TMP/$key.prof -- $TB/t_jobs hold $TMP/$key.fifo"
	echo "heaptrace -v -f collapsed --value alloc_space -o \$TMP/$key.prof -- build/tests/t_jobs hold \$TMP/$key.fifo (in a terminal, $how)" >"$TMP/$key.cmd"
	if [ "$how" = shell ]; then
		pty_start "$key"
		pty_type "$cmd >$TMP/$key.tout 2>$TMP/$key.err\n"
	else
		exec {PTY_FD}>/dev/null
		SHELL=/bin/sh timeout -k 5 90 script -qfc "exec $cmd >$TMP/$key.tout 2>$TMP/$key.err" /dev/null \
			</dev/null >"$TMP/$key.pty" 2>&1 &
		SPID=$!
	fi
	if ! wait_for "$TMP/$key.tout" '^ready$' 30; then
		fail "$key: the target starts under heaptrace in the terminal" "$(ctx "$key")"$'\n'"$(head -5 "$TMP/$key.pty")"
		pty_end
		return
	fi
	hp=$(sg_pid "^$HT -v .*-o $TMP/$key.prof")
	app=$(sg_pid "^$TB/t_jobs hold $TMP/$key.fifo")
	script=$(pgrep -P "$SPID")
	kill -KILL "$script"
	# (the wrapper dies of the SIGKILL too: no "Killed" notice)
	wait_exit "$SPID" 10 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$hp" 2>/dev/null || kill -0 "$app" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$hp" 2>/dev/null && sg_add "heaptrace still running 10 s after its terminal closed"
	kill -0 "$app" 2>/dev/null && sg_add "the command still running 10 s after its terminal closed"
	grep -q '^heaptrace: wrote the profile' "$TMP/$key.err" || sg_add "no 'wrote the profile' line"
	report "$key: the terminal closes ($how): heaptrace writes the profile, the command and heaptrace end" \
		"$d${d:+$(ctx "$key")}"
	sg_profile "$key" "$TMP/$key.prof" job_keep=4000 job_temp=500
	exec {PTY_FD}>&-
}

scenario_jobcontrol() {
	local k
	jobcontrol_launch
	jobcontrol_launch_fork
	jobcontrol_p
	jobcontrol_p_fork
	jobcontrol_p_stopped_at_end
	jobcontrol_launch_stopped_at_end
	for k in jclaunch jclfork jcp jcpfork jcpstop jclstop; do
		sg_cleanup $k
	done
}

# jc_outside KEY NAME:PID...: SIGCONT alone, then SIGSTOP and SIGCONT, sent
# from outside to each; report each step.
jc_outside() {
	local key=$1 a d=""
	shift
	for a in "$@"; do kill -CONT "${a#*:}"; done
	sleep 0.3
	report "$key: SIGCONT alone: ${*%%:*} run on" "$(sg_running "$@")"
	for a in "$@"; do kill -STOP "${a#*:}"; done
	d=""
	sg_add "$(sg_stopped "$@")"
	for a in "$@"; do kill -CONT "${a#*:}"; done
	sg_add "$(sg_running "$@")"
	report "$key: SIGSTOP, SIGCONT from outside: ${*%%:*} stop, then run on" "$d"
}

# jc_keys KEY NAME:PID...: Ctrl-Z (each stops), fg (each runs on), Ctrl-Z,
# bg, typed in the terminal; a check each.
jc_keys() {
	local key=$1 d
	shift
	pty_type '\032'
	report "$key: Ctrl-Z: ${*%%:*} stop" "$(sg_stopped "$@")"
	pty_type 'fg\n'
	report "$key: fg: ${*%%:*} run on" "$(sg_running "$@")"
	pty_type '\032'
	d=""
	sg_add "$(sg_stopped "$@")"
	pty_type 'bg\n'
	sg_add "$(sg_running "$@")"
	report "$key: Ctrl-Z then bg: ${*%%:*} stop, then run on" "$d"
}

# jc_rc KEY WANT: the status sh wrote to KEY.rc (sh -c '...; echo $? >KEY.rc'), within 15 s.
jc_rc() {
	wait_for "$TMP/$1.rc" '^[0-9]+$' 15
	WRC=$(cat "$TMP/$1.rc" 2>/dev/null)
	[ "$WRC" = "$2" ] || echo "exit status ${WRC:-none}, want $2"
}

# Launch mode, in a terminal: sh -c 'heaptrace ... t_jobs hold; echo $?'.
# SIGCONT alone and SIGSTOP + SIGCONT to the command; Ctrl-Z stops sh,
# heaptrace and the command; fg and bg continue them.  Then the command
# runs to its end, traced: job_after is in the profile.
jobcontrol_launch() {
	local key=jclaunch hp app sh d
	mkfifo "$TMP/$key.fifo"
	echo "heaptrace -f collapsed --value alloc_space -o \$TMP/$key.prof -- build/tests/t_jobs hold \$TMP/$key.fifo (in a terminal)" >"$TMP/$key.cmd"
	pty_start $key
	pty_type "sh -c '$HT -f collapsed --value alloc_space -o $TMP/$key.prof -- $TB/t_jobs hold $TMP/$key.fifo >$TMP/$key.tout 2>$TMP/$key.err; echo \$? >$TMP/$key.rc'\n"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30; then
		fail "$key: the target starts under heaptrace in the terminal" "$(ctx $key)"$'\n'"$(head -5 "$TMP/$key.pty")"
		pty_end
		return
	fi
	hp=$(sg_pid "^$HT -f .*-o $TMP/$key.prof")
	app=$(sg_pid "^$TB/t_jobs hold $TMP/$key.fifo")
	sh=$(sg_pid "^sh -c $HT .*-o $TMP/$key.prof")
	jc_outside $key "command:$app"
	jc_keys $key "sh:$sh" "heaptrace:$hp" "command:$app"
	d=""
	sg_add "$(sg_release $key)"
	sg_add "$(jc_rc $key 7)"
	grep -q '^bye$' "$TMP/$key.tout" || sg_add "the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "$key: then the command runs to its end, heaptrace exits 7" "$d"
	sg_profile $key "$TMP/$key.prof" job_keep=4000 job_temp=500 job_after=900
	pty_end
}

# The same with --follow-fork and t_jobs fork, the child waiting: each of
# the command and its child gets SIGCONT alone, SIGSTOP + SIGCONT; Ctrl-Z,
# fg and bg reach all of them.  Each profile is whole.
jobcontrol_launch_fork() {
	local key=jclfork hp app child sh d cf
	mkfifo "$TMP/$key.fifo"
	echo "heaptrace --follow-fork -f collapsed --value alloc_space -o \$TMP/$key.prof -- build/tests/t_jobs fork \$TMP/$key.fifo (in a terminal)" >"$TMP/$key.cmd"
	pty_start $key
	pty_type "sh -c '$HT --follow-fork -f collapsed --value alloc_space -o $TMP/$key.prof -- $TB/t_jobs fork $TMP/$key.fifo >$TMP/$key.tout 2>$TMP/$key.err; echo \$? >$TMP/$key.rc'\n"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30; then
		fail "$key: the target starts under heaptrace in the terminal" "$(ctx $key)"$'\n'"$(head -5 "$TMP/$key.pty")"
		pty_end
		return
	fi
	d=""
	sg_add "$(sg_release $key)"
	if ! wait_for "$TMP/$key.tout" '^child ready$' 15; then
		fail "$key: the command forks a child that says ready" "$d$(ctx $key)"
		pty_end
		return
	fi
	hp=$(sg_pid "^$HT --follow-fork .*-o $TMP/$key.prof")
	app=$(sg_pid "^$TB/t_jobs fork $TMP/$key.fifo")
	child=$(pgrep -P "$app")
	sh=$(sg_pid "^sh -c $HT .*-o $TMP/$key.prof")
	jc_outside $key "command:$app" "child:$child"
	jc_keys $key "sh:$sh" "heaptrace:$hp" "command:$app" "child:$child"
	d=""
	sg_add "$(sg_release $key)"
	sg_add "$(jc_rc $key 7)"
	grep -q '^bye$' "$TMP/$key.tout" || sg_add "the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "$key: then the command and its child run to their end, heaptrace exits 7" "$d"
	sg_profile $key "$TMP/$key.prof" job_keep=4000 job_temp=500 job_after=900
	cf=$TMP/$key.prof.$child
	sg_profile $key.child "$cf" child_keep=4000
	pty_end
}

# -p, in a terminal: sh -c 't_jobs hold; echo $?' is the job; heaptrace -p
# runs outside it.  SIGCONT alone, SIGSTOP + SIGCONT, Ctrl-Z, fg and bg
# reach the command; it runs to its end (7) and heaptrace exits 0.
jobcontrol_p() {
	local key=jcp app sh d
	mkfifo "$TMP/$key.fifo"
	pty_start $key
	pty_type "sh -c '$TB/t_jobs hold $TMP/$key.fifo >$TMP/$key.tout; echo \$? >$TMP/$key.rc'\n"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30; then
		fail "$key: the target starts in the terminal" "$(head -5 "$TMP/$key.pty")"
		pty_end
		return
	fi
	app=$(sg_pid "^$TB/t_jobs hold $TMP/$key.fifo")
	sh=$(sg_pid "^sh -c $TB/t_jobs hold $TMP/$key.fifo")
	ht_bg $key -v -f collapsed --value alloc_space -o "$TMP/$key.prof" -p "$app"
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $app([^0-9]|\$)" 30 "$HPID"; then
		fail "$key: heaptrace -p attaches" "$(ctx $key)"
		kill_tree "$HPID"
		pty_end
		return
	fi
	jc_outside $key "command:$app"
	jc_keys $key "sh:$sh" "command:$app"
	d=""
	sg_add "$(sg_release $key)"
	sg_add "$(jc_rc $key 7)"
	ht_bg_wait $key "$HPID" 15
	sg_add "$(rc_diag $key 0)"
	report "$key: then the command runs to its end (7), heaptrace -p exits 0" "$d"
	sg_profile $key "$TMP/$key.prof" job_after=900
	pty_end
}

# -p --follow-fork, in a terminal (heaptrace is the tracer of the command
# and its child): as jobcontrol_p, with the child.
jobcontrol_p_fork() {
	local key=jcpfork app child sh d
	mkfifo "$TMP/$key.fifo"
	pty_start $key
	pty_type "sh -c '$TB/t_jobs fork $TMP/$key.fifo >$TMP/$key.tout; echo \$? >$TMP/$key.rc'\n"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30; then
		fail "$key: the target starts in the terminal" "$(head -5 "$TMP/$key.pty")"
		pty_end
		return
	fi
	app=$(sg_pid "^$TB/t_jobs fork $TMP/$key.fifo")
	sh=$(sg_pid "^sh -c $TB/t_jobs fork $TMP/$key.fifo")
	ht_bg $key -v --follow-fork -f collapsed --value alloc_space -o "$TMP/$key.prof" -p "$app"
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $app([^0-9]|\$)" 30 "$HPID"; then
		fail "$key: heaptrace -p --follow-fork attaches" "$(ctx $key)"
		kill_tree "$HPID"
		pty_end
		return
	fi
	d=""
	sg_add "$(sg_release $key)"
	if ! wait_for "$TMP/$key.tout" '^child ready$' 15; then
		fail "$key: the command forks a child that says ready" "$d$(ctx $key)"
		kill_tree "$HPID"
		pty_end
		return
	fi
	child=$(pgrep -P "$app")
	jc_outside $key "command:$app" "child:$child"
	jc_keys $key "sh:$sh" "command:$app" "child:$child"
	d=""
	sg_add "$(sg_release $key)"
	sg_add "$(jc_rc $key 7)"
	ht_bg_wait $key "$HPID" 15
	sg_add "$(rc_diag $key 0)"
	report "$key: then the command and its child run to their end (7), heaptrace -p exits 0" "$d"
	sg_profile $key "$TMP/$key.prof" job_after=900
	sg_profile $key.child "$TMP/$key.prof.$child" child_keep=4000
	pty_end
}

# -p (t_wait), the target stopped (SIGSTOP) when heaptrace is stopped
# (SIGINT): heaptrace takes its fast path out and exits 0, and the target
# is still stopped; SIGCONT lets it run to its end.
jobcontrol_p_stopped_at_end() {
	local key=jcpstop d="" hp
	pstart $key -f collapsed --value alloc_space || return
	hp=$(pgrep -P "$HPID")
	# shellcheck disable=SC2153 # pstart sets TPID
	kill -STOP "$TPID"
	d=""
	sg_add "$(sg_stopped "target:$TPID")"
	kill -INT "$hp"
	wait_exit "$HPID" 15 || kill_tree "$HPID"
	sg_add "$(rl_rc $key 0)"
	sg_add "$(sg_stopped "target:$TPID")"
	report "$key: -p, target stopped when heaptrace stops: heaptrace exits 0, the target stays stopped" "$d"
	kill -CONT "$TPID"
	d=""
	sg_add "$(sg_running "target:$TPID")"
	target_finishes $key
	report "$key: then SIGCONT: the target runs to its end, exit 0" "$d$FIN"
	sg_profile $key "$TMP/$key.out" post_alloc=3840 post_realloc_pre=1500
}

# Launch mode -d 3, the command (t_jobs hold) stopped by SIGSTOP when the
# duration ends: the profile is written and the command stays stopped
# while heaptrace waits for it; SIGCONT lets it run to its end (7).
jobcontrol_launch_stopped_at_end() {
	local key=jclstop d="" app
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v -d 3 -f collapsed --value alloc_space -o "$TMP/$key.prof" -- "$TB/t_jobs" hold "$TMP/$key.fifo"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		fail "$key: the target starts under heaptrace" "$(ctx $key)"
		kill_tree "$HPID"
		return
	fi
	app=$(sg_pid "^$TB/t_jobs hold $TMP/$key.fifo")
	kill -STOP "$app"
	d=""
	sg_add "$(sg_stopped "command:$app")"
	wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 15 "$HPID" ||
		sg_add "no 'wrote the profile' line 15 s after the start with -d 3"
	sg_add "$(sg_stopped "command:$app")"
	report "$key: launch mode, command stopped when -d ends: the profile is written, the command stays stopped" "$d"
	kill -CONT "$app"
	d=""
	sg_add "$(sg_running "command:$app")"
	sg_add "$(sg_release $key)"
	ht_bg_wait $key "$HPID" 15
	sg_add "$(rc_diag $key 7)"
	report "$key: then SIGCONT: the command runs to its end, heaptrace exits 7" "$d"
	sg_profile $key "$TMP/$key.prof" job_keep=4000 job_temp=500
}
