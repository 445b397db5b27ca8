# shellcheck shell=bash
# Area "temporary" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# heaptrack's "temporary" count in -f top, judged by heaptrack itself.

# The sites of t_temporary and their temporary frees (see its header): one
# "SITE COUNT" a line, single-threaded run.
TEMP_SITES="first 0
churn 100
pair_a 0
pair_b 0
lifo_a 0
lifo_b 10
batch 5
realloc_m 10
realloc_r 10
calloc 10
reallocnull 10
memalign 10
nullfree 10"
TEMP_TOTAL=175

# top_temporary FILE: "LINE COUNT" for each entry of a -f top report whose
# innermost frame is in t_temporary.c: its call line and the temporary
# count of its "freed" line (0 without one: nothing freed).
top_temporary() {
	awk '
	function flush() { if (line != "") print line, tmp; line = "" }
	/^#[0-9]+ / { flush(); tmp = 0; first = 1; next }
	/^      freed / {
		if (match($0, /, temporary [0-9]+;/)) tmp = substr($0, RSTART + 12, RLENGTH - 13) + 0
		else tmp = "unparsed"
		next
	}
	/^        / && first {
		first = 0
		if (match($0, /t_temporary\.c:[0-9]+$/)) line = substr($0, RSTART + 14)
	}
	END { flush() }' "$1" 2>/dev/null
}

# heaptrack_temporary FILE: "LINE COUNT" for each location in t_temporary.c
# of heaptrack_print -T's "MOST TEMPORARY ALLOCATIONS" ("N temporary
# allocations of M allocations in total (P%) from", then the function, then
# "  at FILE:LINE"; the indented "from:" entries are its backtraces).
heaptrack_temporary() {
	awk '
	/^[0-9]+ temporary allocations of [0-9]+ allocations in total \(.*\) from$/ { n = $1; want = 2; next }
	want == 2 { want = 1; next }
	want == 1 {
		want = 0
		if (match($0, /^  at .*t_temporary\.c:[0-9]+$/)) {
			l = $0
			sub(/^.*:/, "", l)
			print l, n
		}
	}' "$1" 2>/dev/null
}

# heaptrack_calls FILE FUNCTION: the allocation calls heaptrack_print -a
# lists from FUNCTION ("N calls to allocation functions with ... from", then
# the function), 0 if none.
heaptrack_calls() {
	awk -v fn="$2" '
	/^[0-9]+ calls to allocation functions with .* from$/ { n = $1; want = 1; next }
	want { want = 0; if ($0 == fn) s += n }
	END { print s + 0 }' "$1" 2>/dev/null
}

# run_heaptrack KEY ARG...: heaptrack -o $TMP/KEY ARG..., then
# heaptrack_print -T -a of its data file into KEY.out.
run_heaptrack() {
	local key=$1 data
	shift
	echo "heaptrack $(rel "$@") && heaptrack_print -T" >"$TMP/$key.cmd"
	if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
		echo "heaptrack not installed (make deps)" >"$TMP/$key.err"; : >"$TMP/$key.out"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	timeout -k 5 "$(tmo)" heaptrack -o "$TMP/$key" "$@" >"$TMP/$key.rec" 2>&1 </dev/null
	data=$(sed -nE 's/^ *heaptrack --analyze "(.*)"$/\1/p' "$TMP/$key.rec" | head -1)
	if [ -z "$data" ] || [ ! -s "$data" ]; then
		echo "heaptrack left no data file: $(tail -3 "$TMP/$key.rec")" >"$TMP/$key.err"; : >"$TMP/$key.out"
		echo 1 >"$TMP/$key.rc"
		return
	fi
	timeout -k 5 "$(tmo)" heaptrack_print -f "$data" -T 1 -a 1 -p 0 -l 0 -n 1000 -s 1 \
		>"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
}

# temp_compare WHAT GOT_FILE SITE:COUNT...: a diagnostic line for each site
# whose count in GOT_FILE ("LINE COUNT" lines; absent: 0) is not COUNT.
temp_compare() {
	local what=$1 got=$2 sc site want line have
	shift 2
	for sc in "$@"; do
		site=${sc%:*} want=${sc#*:}
		line=$(site_line "$SRC_TEMP" "$site")
		have=$(awk -v l="$line" '$1 == l { s += $2; n++ } END { print n ? s : 0 }' "$got")
		[ "$have" = "$want" ] || echo "$what: $site (line $line): temporary $have, want $want"
	done
}

# ---------------------------------------------------------------------------
# t_temporary: each pattern's temporary count, in heaptrace's -f top and in
# heaptrack_print of a heaptrack run of the same program; the two agree
# site by site and in total.  The threaded run shows the one difference,
# chosen: heaptrace judges each thread's frees against its own allocations,
# heaptrack against all threads' in one order.
scenario_temporary() {
	SRC_TEMP=$ROOT/tests/targets/t_temporary.c
	local d want=() w s n sum

	while read -r s n; do want+=("$s:$n"); done <<<"$TEMP_SITES"

	ht tt -f top --top 100 --value alloc_objects -- "$TB/t_temporary"
	check_rc tt 0 "temporary: -f top over t_temporary exits 0"
	d=""
	grep -qE "^  temporary: +$TEMP_TOTAL allocations freed right after their allocation \(heaptrack's count\)$" \
		"$TMP/tt.out" || d+="summary: $(grep 'temporary:' "$TMP/tt.out")"$'\n'
	top_temporary "$TMP/tt.out" >"$TMP/tt.sites"
	d+=$(temp_compare heaptrace "$TMP/tt.sites" "${want[@]}")
	[ -n "$d" ] && d+=$'\n'"$(ctx tt)"
	report "temporary: heaptrace -f top: $TEMP_TOTAL in all, per site: ${want[*]}" "$d"

	run_heaptrack tk "$TB/t_temporary"
	d=$(rc_diag tk 0)
	[ -n "$d" ] && d+=$'\n'
	heaptrack_temporary "$TMP/tk.out" >"$TMP/tk.sites"
	d+=$(temp_compare heaptrack "$TMP/tk.sites" "${want[@]}")
	sum=$(awk '{ s += $2 } END { print s + 0 }' "$TMP/tk.sites")
	[ "$sum" = "$TEMP_TOTAL" ] || d+=$'\n'"heaptrack: $sum temporary in t_temporary.c, want $TEMP_TOTAL"
	[ -n "$d" ] && d+=$'\n'"$(ctx tk)"
	report "temporary: heaptrack_print -T of the same program: the same $TEMP_TOTAL, site by site" "$d"

	# heaptrace and heaptrack, line against line, whatever the expectation:
	# every line with a count in either.
	d=""
	for w in $(cut -d' ' -f1 "$TMP/tt.sites" "$TMP/tk.sites" | sort -un); do
		s=$(awk -v l="$w" '$1 == l { s += $2 } END { print s + 0 }' "$TMP/tt.sites")
		n=$(awk -v l="$w" '$1 == l { s += $2 } END { print s + 0 }' "$TMP/tk.sites")
		[ "$s" = "$n" ] || d+="t_temporary.c:$w: heaptrace $s, heaptrack $n"$'\n'
	done
	[ -s "$TMP/tt.sites" ] || d+="no t_temporary.c entries in heaptrace's report"$'\n'
	report "temporary: heaptrace equals heaptrack at every line of t_temporary.c" "$d"

	# Every allocation sampled (--sample-rate 1: size s is missed with
	# probability exp(-s), at most exp(-16) for a freed block here): the
	# sampled path keeps the same count.
	ht tts -f top --top 100 --value alloc_objects --sample-rate 1 -- "$TB/t_temporary"
	d=$(rc_diag tts 0)
	[ -n "$d" ] && d+=$'\n'
	grep -qE "^  temporary: +$TEMP_TOTAL allocations freed right after" "$TMP/tts.out" ||
		d+="summary: $(grep 'temporary:' "$TMP/tts.out")"$'\n'
	top_temporary "$TMP/tts.out" >"$TMP/tts.sites"
	d+=$(temp_compare "heaptrace --sample-rate 1" "$TMP/tts.sites" "${want[@]}")
	[ -n "$d" ] && d+=$'\n'"$(ctx tts)"
	report "temporary: --sample-rate 1 (every allocation sampled): the same $TEMP_TOTAL, per site" "$d"

	# Threads taking turns: per thread, both frees follow their own
	# thread's allocation (10 each); in heaptrack's one order, neither.
	ht ttt -f top --top 100 --value alloc_objects -- "$TB/t_temporary" threads
	d=$(rc_diag ttt 0)
	[ -n "$d" ] && d+=$'\n'
	top_temporary "$TMP/ttt.out" >"$TMP/ttt.sites"
	d+=$(temp_compare heaptrace "$TMP/ttt.sites" thr:10 side:10)
	[ -n "$d" ] && d+=$'\n'"$(ctx ttt)"
	report "temporary: threads taking turns: heaptrace counts per thread, thr_fn 10, side_fn 10" "$d"

	# A thread's first allocation on a coroutine's stack (the stub leaves
	# its walk to a record site), freed right after through the ring: one
	# last allocation for the thread whichever path recorded it.
	ht ttco -v -f top --top 100 --value alloc_objects -- "$TB/t_temporary" coroutine
	d=$(rc_diag ttco 0)
	[ -n "$d" ] && d+=$'\n'
	top_temporary "$TMP/ttco.out" >"$TMP/ttco.sites"
	d+=$(temp_compare heaptrace "$TMP/ttco.sites" co:1)
	grep -qE "^  temporary: +1 allocations freed right after their allocation" "$TMP/ttco.out" ||
		d+="summary: $(grep 'temporary:' "$TMP/ttco.out")"$'\n'
	if [ -z "${HT_TEST_NO_INJECT:-}" ] && [ "${HEAPTRACE_BATCH:-}" != 0 ]; then
		n=$(rl_events_num ttco stub_walks_handed)
		[ "${n:-0}" -ge 1 ] || d+="stub_walks_handed=${n:-?}: the coroutine's walk was not left to a record site"$'\n'
	fi
	[ -n "$d" ] && d+=$'\n'"$(ctx ttco)"
	report "temporary: a thread's first allocation by a record site (a coroutine's stack), its free through the ring: temporary 1" "$d"

	run_heaptrack tkt "$TB/t_temporary" threads
	d=$(rc_diag tkt 0)
	[ -n "$d" ] && d+=$'\n'
	heaptrack_temporary "$TMP/tkt.out" >"$TMP/tkt.sites"
	d+=$(temp_compare heaptrack "$TMP/tkt.sites" thr:0 side:0)
	# Not zero for want of data: heaptrack saw both functions' 10 calls.
	for s in thr_fn side_fn; do
		n=$(heaptrack_calls "$TMP/tkt.out" "$s")
		[ "$n" = 10 ] || d+="heaptrack: $n allocation calls from $s, want 10"$'\n'
	done
	[ -n "$d" ] && d+=$'\n'"$(ctx tkt)"
	report "temporary: threads taking turns: heaptrack's one global order counts thr_fn 0, side_fn 0" "$d"
}
