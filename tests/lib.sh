# shellcheck shell=bash
# Helpers shared by the areas of tests/run.sh, tests/scenarios/*.sh (those of
# one area are in its file).  Sourced; expects ROOT, HT, TB, TMP, VALUES.
#
# Every run of heaptrace is named by a KEY; its files are $TMP/KEY.out
# (stdout), $TMP/KEY.err (stderr) and $TMP/KEY.cmd (the command line).

PASS=0
FAIL=0
declare -A EXPLEAF=()   # "KEY.VALUE" -> expected non-zero leaves
START=$SECONDS
# seconds; later runs get shorter timeouts past it.  HT_TEST_BUDGET: more
# for a slower machine (make test-kernels's emulated guests).
BUDGET=${HT_TEST_BUDGET:-170}

# kill_tree PID...: SIGKILL children of this shell (background jobs) and
# what they started: heaptrace runs under "timeout", which leads its own
# process group, so that whole group goes.  A pid that is not a child of
# this shell is left alone: it may have been reused.
kill_tree() {
	local p
	for p in "$@"; do
		[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$$" ] || continue
		if [ "$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')" = "$p" ]; then
			kill -KILL -- "-$p" 2>/dev/null
		else
			kill -KILL "$p" 2>/dev/null
		fi
		wait "$p" 2>/dev/null
	done
	return 0
}

# At exit, only background jobs of this shell that are still running (no
# stale pid that may have been reused).
cleanup() {
	# shellcheck disable=SC2046
	kill_tree $(jobs -p)
	if [ "${HEAPTRACE_KEEP_TMP:-0}" = 1 ]; then
		echo "# outputs kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}

pass() { PASS=$((PASS + 1)); echo "ok - $1"; }

# fail NAME [DIAG]: DIAG may hold several lines.
# The failures are listed again above the summary line: CI keeps only the
# tail of a long run, and a failure 2000 lines up was otherwise lost.
FAILURES=()
fail() {
	FAIL=$((FAIL + 1))
	echo "not ok - $1"
	FAILURES+=("not ok - $1")
	if [ -n "${2:-}" ]; then
		local diag
		diag=$(printf '%s\n' "$2" | sed -e '/^$/d' -e 's/^/#   /' | head -40)
		printf '%s\n' "$diag"
		FAILURES+=("$(printf '%s\n' "$diag" | head -6)")
	fi
}

# report NAME DIAG: passes when DIAG is empty.
report() {
	if [ -z "$2" ]; then pass "$1"; else fail "$1" "$2"; fi
}

# Timeout for the next command: 60 s; 20 s once a run has timed out, and
# 10 s once the time budget is used up, so a tracer that hangs everywhere
# fails the whole run in bounded time.  HT_TEST_SLOW multiplies each (a
# slower machine: make test-kernels's emulated guests).
TIMEOUTS=0
tmo() {
	local slow=${HT_TEST_SLOW:-1}
	if [ $((SECONDS - START)) -ge "$BUDGET" ]; then
		echo $((10 * slow))
	elif [ "$TIMEOUTS" -gt 0 ]; then
		echo $((20 * slow))
	else
		echo $((60 * slow))
	fi
}

# The period factor of the signal-storm targets (t_inject and t_batch
# signals N F): 1, and 50 on a slow machine.  Emulated (HT_TEST_SLOW > 1),
# a trap costs a hundred times what it does on the host or more: a handler
# that traps (--unwind fp leaves a signal frame's walk to the BPF side),
# signalled every 200 us, takes all the thread's time and the loop never
# reaches its count (t_batch at 10 still ran past 180 s on Debian's 6.1).
sig_factor() {
	if [ "${HT_TEST_SLOW:-1}" -gt 1 ]; then echo 50; else echo 1; fi
}

rel() { local s=$*; s=${s//$TB\//build\/tests\/}; s=${s//$TMP\//\$TMP\/}; echo "$s"; }

# ht KEY ARG...: run heaptrace; exit status in RC.
ht() {
	local key=$1
	shift
	echo "heaptrace $(rel "$@")" >"$TMP/$key.cmd"
	if [ ! -x "$HT" ]; then
		: >"$TMP/$key.out"
		echo "test harness: $HT not built" >"$TMP/$key.err"
		RC=255
		echo "$RC" >"$TMP/$key.rc"
		return
	fi
	local limit t0=$SECONDS bin=$HT
	# An LD_PRELOAD meant for the target also loads into heaptrace, and an
	# allocator preloaded ahead of ASan's runtime breaks an ASan build: under
	# make check-asan these runs use the plain build (the plain make test
	# covers them too).
	[ -n "${LD_PRELOAD:-}" ] && [ -n "${HEAPTRACE_PRELOAD_BIN:-}" ] && bin=$HEAPTRACE_PRELOAD_BIN
	limit=$(tmo)
	timeout -k 5 "$limit" "$bin" "$@" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/$key.rc"
	if [ $((SECONDS - t0)) -ge "$limit" ]; then
		TIMEOUTS=$((TIMEOUTS + 1))
		echo "timed out after $limit s" >>"$TMP/$key.err"
	fi
}

# Diagnostic context for a run: its command line and the head of its stderr.
ctx() {
	local key=$1
	[ -f "$TMP/$key.cmd" ] && echo "command: $(cat "$TMP/$key.cmd")"
	[ -f "$TMP/$key.rc" ] && echo "exit status: $(cat "$TMP/$key.rc")"
	[ -s "$TMP/$key.err" ] && sed -n '1,8p' "$TMP/$key.err" | sed 's/^/stderr: /'
	return 0
}

# rc_diag KEY WANT: a diagnostic unless the last run's status is WANT.
rc_diag() {
	local got
	got=$(cat "$TMP/$1.rc" 2>/dev/null || echo none)
	if [ "$got" != "$2" ]; then
		[ "$got" = 124 ] && echo "timed out"
		echo "exit status $got, want $2"
		ctx "$1"
	fi
}

check_rc() { report "$3" "$(rc_diag "$1" "$2")"; }

# one_line_diag KEY: stderr must be exactly one non-empty line.
one_line_diag() {
	local n
	n=$(grep -c '' "$TMP/$1.err")
	if [ "$n" != 1 ] || ! grep -q '[^[:space:]]' "$TMP/$1.err"; then
		echo "stderr has $n lines, want exactly one:"
		sed -n '1,6p' "$TMP/$1.err" | sed 's/^/stderr: /'
	fi
}

# Collapsed output checks: every line "frame;...;frame VALUE" with VALUE > 0.
collapsed_diag() {
	local f=$TMP/$1.out bad
	bad=$(grep -nvE '^[^ ].* [0-9]+$' "$f" | head -3)
	[ -n "$bad" ] && echo "malformed collapsed lines: $bad"
	bad=$(grep -nE ' 0+$' "$f" | head -3)
	[ -n "$bad" ] && echo "lines with value 0: $bad"
	return 0
}

collapsed_wellformed() {
	local d
	d=$(collapsed_diag "$1")
	[ -s "$TMP/$1.out" ] || d+=$'\n'"empty output"
	report "$1: collapsed output well-formed, no zero lines" "$d"
}

# sums KEY: "leaf<TAB>sum" over the lines of $TMP/KEY.out, keyed by the
# innermost frame.
sums() {
	awk '
	match($0, / [0-9]+$/) {
		v = substr($0, RSTART + 1) + 0
		n = split(substr($0, 1, RSTART - 1), f, ";")
		s[f[n]] += v
	}
	END { for (k in s) printf "%s\t%.0f\n", k, s[k] }' "$TMP/$1.out" 2>/dev/null
}

# leafval KEY FN: sum of the lines whose innermost frame is FN (0 if none).
leafval() {
	sums "$1" | awk -F'\t' -v fn="$2" '$1 == fn { v = $2 } END { print (v == "" ? 0 : v) }'
}

# has_frame KEY FN: FN is a frame anywhere in $TMP/KEY.out.
has_frame() {
	awk -v fn="$2" '{
		sub(/ [0-9]+$/, "")
		n = split($0, f, ";")
		for (i = 1; i <= n; i++) if (f[i] == fn) { found = 1; exit }
	} END { exit !found }' "$TMP/$1.out" 2>/dev/null
}

# profile4 KEY WANT_RC CMD...: four runs of "heaptrace -f collapsed --value V
# -- CMD", one per value, as KEY.V; -v only on the alloc_objects run.
profile4() {
	local key=$1 want=$2
	shift 2
	profile4x "$key" "$want" -- "$@"
}

# profile4x KEY WANT_RC [HEAPTRACE-OPTION...] -- CMD...: profile4 with
# heaptrace options (--sym, --no-libc, ...) before the command.
profile4x() {
	local key=$1 want=$2 v d="" verbose opts=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	for v in $VALUES; do
		verbose=()
		[ "$v" = alloc_objects ] && verbose=(-v)
		ht "$key.$v" "${verbose[@]}" "${opts[@]}" -f collapsed --value "$v" -- "$@"
		d+=$(rc_diag "$key.$v" "$want")
		d+=$(collapsed_diag "$key.$v" | sed "s/^/$v: /")
		[ -s "$TMP/$key.$v.out" ] || d+=$'\n'"$v: empty profile"
	done
	report "$key: 4 collapsed runs (one per --value) exit $want, well-formed, no zero lines" "$d"
}

# expect4 KEY FN AO AS IO IS: FN's sums in the four runs of profile4.
expect4() {
	local key=$1 fn=$2 v g want got="" wants="" bad=0 i=3
	for v in $VALUES; do
		want=${!i}
		i=$((i + 1))
		g=$(leafval "$key.$v" "$fn")
		got+=" $v=$g"
		wants+=" $v=$want"
		[ "$g" = "$want" ] || bad=1
		[ "$want" != 0 ] && EXPLEAF[$key.$v]+=" $fn"
	done
	if [ "$bad" = 0 ]; then
		pass "$key: $fn$wants"
	else
		fail "$key: $fn$wants" "got$got"
	fi
}

# absent4 KEY FN...: FN is no frame in any of the four runs.
absent4() {
	local key=$1 fn v d
	shift
	for fn in "$@"; do
		d=""
		for v in $VALUES; do
			[ -s "$TMP/$key.$v.out" ] || d+="$v: empty profile"$'\n'
			has_frame "$key.$v" "$fn" && d+="$v: $(grep -m2 -E "(^|;)$fn( |;)" "$TMP/$key.$v.out")"$'\n'
		done
		report "$key: $fn appears in no stack" "$d"
	done
}

# absent_leaf4 KEY FN...: FN is the innermost frame of no line.
absent_leaf4() {
	local key=$1 fn v d
	shift
	for fn in "$@"; do
		d=""
		for v in $VALUES; do
			[ -s "$TMP/$key.$v.out" ] || d+="$v: empty profile"$'\n'
			[ "$(leafval "$key.$v" "$fn")" = 0 ] ||
				d+="$v: $(grep -m2 -E ";$fn [0-9]+\$|^$fn [0-9]+\$" "$TMP/$key.$v.out")"$'\n'
		done
		report "$key: $fn is no innermost frame" "$d"
	done
}

# stackval KEY FRAMES: sum of the lines of $TMP/KEY.out whose stack ends
# with FRAMES, whole frames, innermost last ("main;a;b" matches
# "__libc_start_call_main;main;a;b" but not "main;x;a;b" nor "xmain;a;b").
stackval() {
	awk -v suf="$2" '
	match($0, / [0-9]+$/) {
		v = substr($0, RSTART + 1) + 0
		st = substr($0, 1, RSTART - 1)
		if (st == suf || substr(st, length(st) - length(suf)) == ";" suf)
			s += v
	}
	END { printf "%.0f\n", s }' "$TMP/$1.out" 2>/dev/null
}

# expect_stack4 KEY FRAMES AO AS IO IS: the sums of the stacks ending with
# FRAMES (see stackval) in the four runs of profile4.
expect_stack4() {
	expect4_with "$1" "stacks ending $2" stackval "$2" "${@:3}"
}

# expect4_with KEY LABEL GETTER ARG AO AS IO IS: "GETTER KEY.V ARG" prints
# the value of each of the four runs of profile4, which must be AO ... IS.
expect4_with() {
	local key=$1 label=$2 get=$3 arg=$4 v g want got="" wants="" bad=0 i=5
	for v in $VALUES; do
		want=${!i}
		i=$((i + 1))
		g=$("$get" "$key.$v" "$arg")
		got+=" $v=${g:-none}"
		wants+=" $v=$want"
		[ "$g" = "$want" ] || bad=1
	done
	if [ "$bad" = 0 ]; then
		pass "$key: $label$wants"
	else
		fail "$key: $label$wants" "got$got"$'\n'"$(sed -n '1,8p' "$TMP/$key.inuse_space.out" | sed 's/^/inuse_space: /')"
	fi
}

# expect_total KEY N: the values of all lines of $TMP/KEY.out add up to N.
expect_total() {
	local g
	g=$(awk 'match($0, / [0-9]+$/) { s += substr($0, RSTART + 1) } END { printf "%.0f\n", s }' \
		"$TMP/$1.out" 2>/dev/null)
	if [ -s "$TMP/$1.out" ] && [ "$g" = "$2" ]; then
		pass "$1: all stacks add up to $2"
	else
		fail "$1: all stacks add up to $2" "got ${g:-nothing}"$'\n'"$(ctx "$1")"
	fi
}

# pprof_first_line FILE NAME LINE: the first line of FILE is exactly LINE.
pprof_first_line() {
	local first
	first=$(head -1 "$1" 2>/dev/null)
	if [ "$first" = "$3" ]; then
		pass "$2: '$3'"
	else
		fail "$2: '$3'" "first line: '$first'"
	fi
}

# err_diag KEY WANT_RC WORD...: the run exited WANT_RC with exactly one
# line on stderr holding every WORD, case-insensitive (fixed strings; "A|B"
# accepts either).
err_diag() {
	local key=$1 want=$2 w x alt ok
	shift 2
	rc_diag "$key" "$want"
	one_line_diag "$key"
	for w in "$@"; do
		ok=0
		IFS='|' read -r -a alt <<<"$w"
		for x in "${alt[@]}"; do
			grep -qiF -- "$x" "$TMP/$key.err" && ok=1
		done
		[ "$ok" = 1 ] || echo "stderr does not mention '${alt[*]}': $(head -1 "$TMP/$key.err")"
	done
	return 0
}

# leafset KEY FN...: the innermost frames of $TMP/KEY.out are exactly FN...
leafset() {
	local key=$1 got want
	shift
	got=$(sums "$key" | cut -f1 | sort | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
	if [ "$got" = "$want" ]; then
		pass "$key: innermost frames are exactly: $want"
	else
		fail "$key: innermost frames are exactly: $want" "got: $got"
	fi
}

leafset4() {
	local v
	for v in $VALUES; do
		# shellcheck disable=SC2086
		leafset "$1.$v" ${EXPLEAF[$1.$v]:-}
	done
}

# expect_leaf KEY FN N (N = 0 also needs a non-empty profile, so that a
# failed run cannot pass it)
expect_leaf() {
	local g
	g=$(leafval "$1" "$2")
	if [ "$3" = 0 ] && [ ! -s "$TMP/$1.out" ]; then
		fail "$1: $2 = $3" "empty profile"$'\n'"$(ctx "$1")"
	elif [ "$g" = "$3" ]; then
		pass "$1: $2 = $3"
	else
		fail "$1: $2 = $3" "got $g"$'\n'"$(ctx "$1")"
	fi
}

# expect_events KEY NAME=VALUE...: the "heaptrace: events:" line on stderr.
expect_events() {
	local key=$1 line n pair name want got d=""
	shift
	n=$(grep -c '^heaptrace: events:' "$TMP/$key.err" 2>/dev/null)
	line=$(grep -m1 '^heaptrace: events:' "$TMP/$key.err" 2>/dev/null)
	[ "$n" = 1 ] || d+="$n 'heaptrace: events:' lines on stderr, want 1"$'\n'
	for pair in "$@"; do
		name=${pair%%=*}
		want=${pair#*=}
		got=$(echo "$line" | tr ' ' '\n' | sed -n "s/^$name=//p" | head -1)
		[ "$got" = "$want" ] || d+="$name=${got:-<missing>}, want $want"$'\n'
	done
	[ -n "$d" ] && d+="line: $line"
	report "$key: events line $*" "$d"
}

# no_loss_line KEY: without -v, no events line means no loss counter moved.
no_loss_line() {
	local d
	d=$(grep '^heaptrace: events:' "$TMP/$1.err" 2>/dev/null)
	[ -s "$TMP/$1.out" ] || d+="empty profile: the run failed"$'\n'"$(ctx "$1")"
	report "$1: no loss counters (no events line without -v)" "$d"
}

# pprof_header FILE NAME IO IB AO AB: the first line of a pprof heap profile.
pprof_header() {
	local f=$1 name=$2 first d=""
	first=$(head -1 "$f" 2>/dev/null)
	local re='^heap profile: *([0-9]+): *([0-9]+) \[ *([0-9]+): *([0-9]+)\] @ heapprofile[[:space:]]*$'
	if [[ $first =~ $re ]]; then
		local got="${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}"
		[ "$got" = "$3 $4 $5 $6" ] || d="got $got, want $3 $4 $5 $6 (inuse objs, bytes, alloc objs, bytes)"
	else
		d="first line is not a heap profile header: '$first'"
	fi
	report "$name: $3: $4 [$5: $6]" "$d"
}

# pprof_has_record FILE IO IB AO AB: a sample line with these counts.
pprof_has_record() {
	grep -qE "^ *$2: +$3 \[ *$4: +$5\] @( 0x[0-9a-fA-F]+)+[[:space:]]*\$" "$1" 2>/dev/null
}

# Rows of pprof text reports: "flat flat% sum% cum cum% name".
pprof_rows() {
	awk '$1 ~ /^[0-9.]+[A-Za-z]*$/ && $2 ~ /^[0-9.]+%$/ && $3 ~ /^[0-9.]+%$/' "$TMP/$1.out"
}

# first_func_is KEY FN NAME: FN is the first row of the report.
first_func_is() {
	local top
	top=$(pprof_rows "$1" | head -1 | awk '{ print $NF }')
	if [ "$top" = "$2" ]; then
		pass "$3"
	else
		fail "$3" "first row names '$top'"$'\n'"$(ctx "$1")"$'\n'"$(sed -n '1,10p' "$TMP/$1.out")"
	fi
}

# flat_is KEY FN N NAME: FN's row has flat value N.
flat_is() {
	local got
	got=$(pprof_rows "$1" | awk -v fn="$2" '$NF == fn { print $1; exit }')
	if [ "$got" = "$3" ]; then
		pass "$4"
	else
		fail "$4" "$2 flat = '${got:-<no row>}'"$'\n'"$(ctx "$1")"$'\n'"$(sed -n '1,10p' "$TMP/$1.out")"
	fi
}

# site_line SRC FN: the line number of the "@site FN" marker in SRC.
site_line() {
	grep -n "@site $2 \*/" "$1" | head -1 | cut -d: -f1
}

# wait_for FILE REGEX SECS [PID]: until FILE has a line matching REGEX;
# gives up after SECS seconds or once PID has exited.
wait_for() {
	local f=$1 re=$2 n=$(($3 * 10)) pid=${4:-}
	while [ "$n" -gt 0 ]; do
		grep -qE "$re" "$f" 2>/dev/null && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			grep -qE "$re" "$f" 2>/dev/null
			return
		fi
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# http_port KEY: the TCP port KEY's heaptrace serves on over plain HTTP (from $TMP/KEY.err), within 30 s.
http_port() {
	wait_for "$TMP/$1.err" '^heaptrace: serving .* on http://127\.0\.0\.1:[0-9]+/' 30 >/dev/null
	sed -n 's|^heaptrace: serving .* on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/$1.err" | head -1
}

# wait_exit PID SECS: until PID (a child) has exited; status in WRC.
wait_exit() {
	local n=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		WRC=timeout
		return 1
	fi
	wait "$1"
	WRC=$?
	return 0
}

# release KEY: write a line to the target's FIFO (bounded: the target may
# have died, and an open for writing with no reader blocks).
release() {
	# shellcheck disable=SC2016
	timeout 10 bash -c 'echo go >"$1"' _ "$TMP/$1.fifo"
}

# pstart KEY HEAPTRACE-ARGS...: start t_wait, let it allocate its
# pre-attach blocks, attach "heaptrace -v ARGS -p PID" (stdout KEY.out,
# stderr KEY.err), wait for "tracing PID", then let the target run its traced
# phase.  Sets TPID, HPID (the timeout wrapper of heaptrace).
pstart() {
	local key=$1 d=""
	shift
	echo "heaptrace -v $(rel "$*") -p PID" >"$TMP/$key.cmd"
	mkfifo "$TMP/$key.fifo"
	"$TB/t_wait" "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	TPID=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$TPID"; then
		fail "$key: t_wait target starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$TPID"
		return 1
	fi
	if [ ! -x "$HT" ]; then
		fail "$key: heaptrace -p attaches" "$HT not built"
		kill_tree "$TPID"
		return 1
	fi
	timeout -k 5 "$(tmo)" "$HT" -v "$@" -p "$TPID" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID([^0-9]|\$)" 30 "$HPID"; then
		d="no 'heaptrace: tracing PID $TPID' line on stderr"
		kill -0 "$HPID" 2>/dev/null || d+=" (heaptrace exited)"
		fail "$key: heaptrace -v -p $TPID attaches and says 'tracing PID'" "$d"$'\n'"$(ctx "$key")"
		kill_tree "$HPID" "$TPID"
		return 1
	fi
	pass "$key: heaptrace -v -p $TPID attaches and says 'tracing PID'"
	if ! release "$key" || ! wait_for "$TMP/$key.tout" '^done$' 10 "$TPID"; then
		fail "$key: target runs its traced phase" "target output: $(cat "$TMP/$key.tout")"
		kill_tree "$HPID" "$TPID"
		return 1
	fi
	return 0
}

# pfinish KEY INT|TERM|DURATION|EXIT: stop heaptrace that way, check that it
# exits 0 and that the target survives it (or, for EXIT, that heaptrace
# notices the exit), then let the target finish.
pfinish() {
	local key=$1 how=$2 d="" child
	case $how in
	INT | TERM)
		child=$(pgrep -P "$HPID" | head -1)
		kill -"$how" "${child:-$HPID}" 2>/dev/null
		wait_exit "$HPID" 15 || d+="heaptrace still running 15 s after SIG$how"$'\n'
		;;
	DURATION)
		wait_exit "$HPID" 15 || d+="heaptrace still running 15 s after the traced phase (-d 4)"$'\n'
		;;
	EXIT)
		release "$key" || d+="could not release the target"$'\n'
		wait_exit "$TPID" 10 || d+="target still running after release"$'\n'
		local trc=$WRC
		[ "$trc" = 0 ] || d+="target exit status $trc, want 0"$'\n'
		grep -q '^bye$' "$TMP/$key.tout" || d+="target did not finish: $(cat "$TMP/$key.tout")"$'\n'
		wait_exit "$HPID" 15 || d+="heaptrace still running 15 s after the target exited"$'\n'
		;;
	esac
	if [ "$WRC" = timeout ]; then
		kill_tree "$HPID"
		wait "$HPID" 2>/dev/null
	fi
	echo "$WRC" >"$TMP/$key.rc"
	[ "$WRC" = 0 ] || d+="heaptrace exit status $WRC, want 0"$'\n'
	case $how in
	INT | TERM) report "$key: heaptrace -p stops on SIG$how and exits 0" "$d${d:+$(ctx "$key")}" ;;
	DURATION) report "$key: heaptrace -p -d 4 stops by itself and exits 0" "$d${d:+$(ctx "$key")}" ;;
	EXIT) report "$key: heaptrace -p exits 0 when the target exits" "$d${d:+$(ctx "$key")}" ;;
	esac
	[ "$how" = EXIT ] && return 0

	# The target must outlive heaptrace and still work after the detach.
	d=""
	kill -0 "$TPID" 2>/dev/null || d+="target died with heaptrace: $(cat "$TMP/$key.tout")"$'\n'
	target_finishes "$key"
	report "$key: target survives heaptrace and exits 0 after the detach" "$d$FIN"
}

# target_finishes KEY: release the target ($TPID); FIN says what is wrong
# unless it then runs to its end ("bye") and exits 0 within 10 s.  (Not in
# a command substitution: only this shell can wait for the target.)
target_finishes() {
	FIN=""
	release "$1" || FIN+="could not release the target"$'\n'
	if wait_exit "$TPID" 10; then
		[ "$WRC" = 0 ] || FIN+="target exit status $WRC, want 0"$'\n'
		grep -q '^bye$' "$TMP/$1.tout" || FIN+="target did not finish: $(cat "$TMP/$1.tout")"$'\n'
	else
		FIN+="target (or its children) still running 10 s after release"$'\n'
		kill_tree "$TPID"
	fi
}

prerequisites() {
	local d="" t
	[ "$(id -u)" = 0 ] || d+="not running as root"$'\n'
	[ -x "$HT" ] || d+="$HT not built (make)"$'\n'
	for t in t_entrypoints t_threads t_ctor t_exit t_failed t_deep t_signal t_wait t_pprof t_arena t_pool t_reset t_jobs; do
		[ -x "$TB/$t" ] || d+="$TB/$t not built (make test-targets)"$'\n'
	done
	report "setup: root, build/heaptrace and build/tests/* present" "$d"
}

# ---------------------------------------------------------------------------
# heaptrace in the background, and the pprof tools (areas sampling, timeline,
# unwinding).

# ht_bg KEY ARG...: start heaptrace ARG... in the background, like ht: the
# command line in KEY.cmd, stdout in KEY.tout (a launched command's output
# when the profile goes to files), stderr in KEY.err.  Sets HPID (the
# timeout wrapper, which leads the process group of heaptrace and its
# command).  At least 30 s, even once the suite's time budget is used up.
ht_bg() {
	local key=$1 limit
	shift
	echo "heaptrace $(rel "$@")" >"$TMP/$key.cmd"
	limit=$(tmo)
	[ "$limit" -lt 30 ] && limit=30
	timeout -k 5 "$limit" "$HT" "$@" >"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
}

# ht_bg_wait KEY PID SECS: wait for the background heaptrace PID (of
# ht_bg); its exit status goes to KEY.rc ("timeout" if it had to be killed).
ht_bg_wait() {
	if ! wait_exit "$2" "$3"; then
		kill_tree "$2"
		echo "still running after $3 s: killed" >>"$TMP/$1.err"
	fi
	echo "$WRC" >"$TMP/$1.rc"
}

# pprof_tool KEY TOOL ARG...: "go tool pprof ARG..." (TOOL go) or
# "google-pprof ARG..." (TOOL perl), as KEY, never touching the network.
pprof_tool() {
	local key=$1 tool=$2 cmd
	shift 2
	if [ "$tool" = go ]; then cmd=(go tool pprof); else cmd=(google-pprof); fi
	echo "${cmd[*]} $(rel "$@")" >"$TMP/$key.cmd"
	if ! command -v "${cmd[0]}" >/dev/null; then
		echo "${cmd[0]} not installed" >"$TMP/$key.err"
		: >"$TMP/$key.out"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	mkdir -p "$TMP/go/home" "$TMP/go/cache" "$TMP/go/path" "$TMP/pprof-tmp"
	env HOME="$TMP/go/home" GOCACHE="$TMP/go/cache" GOPATH="$TMP/go/path" \
		GOTOOLCHAIN=local GOPROXY=off GOFLAGS= PPROF_TMPDIR="$TMP/pprof-tmp" \
		timeout -k 5 "$(tmo)" "${cmd[@]}" "$@" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
}

# ---------------------------------------------------------------------------
# t_entrypoints's numbers (scenarios entrypoints, custom, unwind).

# expect_entrypoints4 KEY [CALLERS]: every function of t_entrypoints in the
# four runs of profile4 KEY; with CALLERS, the sums of the whole stacks
# "CALLERS;FUNCTION" (expect_stack4) instead of the innermost frames.
expect_entrypoints4() {
	local key=$1 callers=${2:-}
	#                                               alloc   alloc    inuse   inuse
	#                                               objects space    objects space
	ep_check "$key" "$callers" ep_malloc              4    4000     3    3000  # 4 x malloc(1000), ep_free frees 1
	ep_check "$key" "$callers" ep_calloc              2     600     1     300  # 2 x calloc(10, 30), 1 freed
	ep_check "$key" "$callers" ep_grow_seed           1      50     0       0  # malloc(50), then realloc'ed
	ep_check "$key" "$callers" ep_realloc_grow        1    5000     1    5000  # realloc(p, 5000)
	ep_check "$key" "$callers" ep_shrink_seed         1    2000     0       0  # malloc(2000), then realloc'ed
	ep_check "$key" "$callers" ep_realloc_shrink      1     200     1     200  # realloc(p, 200), in place
	ep_check "$key" "$callers" ep_realloc_null        1     333     1     333  # realloc(NULL, 333) = malloc
	ep_check "$key" "$callers" ep_zero_seed           1     444     0       0  # malloc(444), freed by realloc(p, 0)
	ep_check "$key" "$callers" ep_big_seed            1  200000     0       0  # mmapped malloc(200000)
	ep_check "$key" "$callers" ep_realloc_big         1  400000     1  400000  # realloc(p, 400000): mremap
	ep_check "$key" "$callers" ep_reallocarray_null   1     400     1     400  # reallocarray(NULL, 16, 25)
	ep_check "$key" "$callers" ep_ra_seed             1      60     0       0  # malloc(60), then reallocarray'ed
	ep_check "$key" "$callers" ep_reallocarray_grow   1     600     1     600  # reallocarray(p, 30, 20)
	ep_check "$key" "$callers" ep_posix_memalign      2    2468     1    1234  # 2 x posix_memalign(64, 1234), 1 freed
	ep_check "$key" "$callers" ep_posix_memalign_small 1    321     1     321  # posix_memalign(16, 321): malloc inside
	ep_check "$key" "$callers" ep_aligned_alloc       2    4096     1    2048  # 2 x aligned_alloc(256, 2048), 1 freed
	ep_check "$key" "$callers" ep_aligned_alloc_small 1      96     1      96  # aligned_alloc(16, 96): malloc inside
	ep_check "$key" "$callers" ep_memalign            1     777     1     777  # memalign(128, 777)
	ep_check "$key" "$callers" ep_valloc              2    6000     1    3000  # 2 x valloc(3000), 1 freed
	ep_check "$key" "$callers" ep_pvalloc             1    8192     1    8192  # pvalloc(5000) -> 2 pages
}

# ep_check KEY CALLERS FUNCTION AO AS IO IS: expect4 KEY FUNCTION ..., or with
# CALLERS, expect_stack4 KEY "CALLERS;FUNCTION" ...
ep_check() {
	local key=$1 callers=$2 fn=$3
	shift 3
	if [ -n "$callers" ]; then
		expect_stack4 "$key" "$callers;$fn" "$@"
	else
		expect4 "$key" "$fn" "$@"
	fi
}

# ---------------------------------------------------------------------------
# Reliability and safety (faults, limits, badinput, stress, soak, fork).
# Helpers are prefixed rl_; those of one area are in its file.

# rl_rc KEY WANT: "exit status X, want WANT" unless WRC is WANT; records it.
rl_rc() {
	echo "$WRC" >"$TMP/$1.rc"
	[ "$WRC" = "$2" ] || echo "exit status $WRC, want $2"
}

# rl_events_num KEY NAME: a counter of the events line on KEY.err.
rl_events_num() {
	grep -m1 '^heaptrace: events:' "$TMP/$1.err" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# rl_header FILE: "IO IB AO AB" from the first line of a pprof heap profile.
rl_header() {
	head -1 "$1" 2>/dev/null |
		sed -nE 's/^heap profile: *([0-9]+): *([0-9]+) \[ *([0-9]+): *([0-9]+)\] @ heapprofile.*/\1 \2 \3 \4/p'
}

# rl_bpf_ids PID: "prog N" and "link N" for every BPF program and link
# PID holds open (its fdinfo), one a line.
rl_bpf_ids() {
	grep -h -E '^(prog_id|link_id):' /proc/"$1"/fdinfo/* 2>/dev/null |
		awk '{ sub(/_id:/, "", $1); print $1, $2 }' | sort -u
}

# rl_bpf_left IDS_FILE: which of those programs and links still exist, and
# links of those programs (bpftool), after up to 5 s for the kernel to
# release them; empty when none.
rl_bpf_left() {
	local ids=$1 progs links left
	for _ in $(seq 50); do
		progs=$(bpftool -j prog show 2>/dev/null | grep -oE '"id":[0-9]+' | cut -d: -f2)
		links=$(bpftool -j link show 2>/dev/null | grep -oE '"(id|prog_id)":[0-9]+')
		left=$(while read -r kind id; do
			case $kind in
			prog)
				printf '%s\n' "$progs" | grep -qx "$id" && echo "program $id still loaded"
				printf '%s\n' "$links" | grep -qx "\"prog_id\":$id" && echo "a link of program $id still exists"
				;;
			link)
				printf '%s\n' "$links" | grep -qx "\"id\":$id" && echo "link $id still exists"
				;;
			esac
		done <"$ids")
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "$left"
	bpftool link show 2>/dev/null | head -20
}

# rl_uprobe_events: lines of the kprobe/uprobe tracefs list naming heaptrace.
rl_uprobe_events() {
	local tr=/sys/kernel/tracing
	[ -e "$tr/uprobe_events" ] || mount -t tracefs nodev "$tr" 2>/dev/null
	if [ ! -r "$tr/uprobe_events" ]; then
		echo "cannot read $tr/uprobe_events"
		return
	fi
	grep -i heaptrace "$tr/uprobe_events" | sed 's/^/uprobe_events: /'
}
