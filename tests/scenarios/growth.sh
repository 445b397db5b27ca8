# shellcheck shell=bash
# Area "growth" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# heaptrace diff --growth over a series of profiles (docs/output-formats.md,
# "Growth").  t_growth TICKS exits after TICKS ticks holding exactly what a
# snapshot after tick TICKS holds, so runs of 1..6 ticks with ASLR off
# (setarch -R: the same addresses every run) are a snapshot series whose
# every number is known: grow_fn +1000 B a tick for ever, cap_fn +4096 B
# in the first 3 ticks only, churn_fn 512 B freed at once.

# growth_rows KEY: the output's rows, blanks squeezed.
growth_rows() { tr -s ' ' <"$TMP/$1.out"; }

# growth_rc KEY WANT: a diagnostic unless heaptrace KEY exited WANT.
growth_rc() {
	[ "$(cat "$TMP/$1.rc")" = "$2" ] || echo "exit $(cat "$TMP/$1.rc"), want $2: $(head -2 "$TMP/$1.err")"
}

scenario_growth() {
	local n d files=() rc
	for n in 1 2 3 4 5 6; do
		echo "setarch -R heaptrace -o \$TMP/g$n.heap build/tests/t_growth $n" >"$TMP/growth_run$n.cmd"
		timeout -k 5 "$(tmo)" setarch "$(uname -m)" -R "$HT" -o "$TMP/g$n.heap" "$TB/t_growth" "$n" \
			>"$TMP/growth_run$n.out" 2>"$TMP/growth_run$n.err" </dev/null
		rc=$?
		if [ "$rc" != 0 ]; then
			fail "growth: heaptrace -o g$n.heap t_growth $n exits 0" "exit $rc: $(cat "$TMP/growth_run$n.err")"
			return
		fi
		files+=("$TMP/g$n.heap")
	done

	ht growth_all diff --growth "${files[@]}"
	d=$(growth_rc growth_all 0)
	growth_rows growth_all >"$TMP/growth_all.rows"
	for want in "growth over 6 profiles (the last 4 decide): 1 growing, 6000 bytes in use; 2 bounded; 0 new" \
		"growing +1000.0 6000 3000,4000,5000,6000 grow_fn" \
		"bounded +0.0 12288 12288,12288,12288,12288 cap_fn" \
		"bounded +0.0 0 0,0,0,0 churn_fn"; do
		grep -qxF "$want" "$TMP/growth_all.rows" || d+="no line '$want'"$'\n'
	done
	[ "$(sed -n 3p "$TMP/growth_all.rows" | awk '{ print $NF }')" = grow_fn ] || d+="grow_fn is not the first row"$'\n'
	report "growth: diff --growth over 6 snapshots: grow_fn growing at +1000 B/step, cap_fn and churn_fn bounded" \
		"$d${d:+$(cat "$TMP/growth_all.out")}"

	# One flat step at the end is not levelling off (4096, 8192, 12288, 12288); two are (8192, 12288, 12288, 12288).
	ht growth_4 diff --growth "${files[@]:0:4}"
	d=$(growth_rc growth_4 0)
	growth_rows growth_4 >"$TMP/growth_4.rows"
	for want in "growing +1000.0 4000 1000,2000,3000,4000 grow_fn" \
		"growing +2730.7 12288 4096,8192,12288,12288 cap_fn"; do
		grep -qxF "$want" "$TMP/growth_4.rows" || d+="no line '$want'"$'\n'
	done
	ht growth_5 diff --growth "${files[@]:1:4}"
	d+=$(growth_rc growth_5 0)
	grep -qxF "bounded +1365.3 12288 8192,12288,12288,12288 cap_fn" <(growth_rows growth_5) ||
		d+="snapshots 2-5: no line 'bounded +1365.3 12288 8192,12288,12288,12288 cap_fn'"$'\n'
	report "growth: cap_fn over snapshots 1-4 (one flat step last): growing; over 2-5 (two flat steps): bounded" \
		"$d${d:+$(cat "$TMP/growth_4.out" "$TMP/growth_5.out")}"

	# Newest first: every stack falls, nothing grows.
	ht growth_rev diff --growth "$TMP/g6.heap" "$TMP/g5.heap" "$TMP/g4.heap" "$TMP/g3.heap"
	d=$(growth_rc growth_rev 0)
	growth_rows growth_rev >"$TMP/growth_rev.rows"
	for want in "growth over 4 profiles (the last 4 decide): 0 growing, 0 bytes in use; 3 bounded; 0 new" \
		"bounded -1000.0 3000 6000,5000,4000,3000 grow_fn"; do
		grep -qxF "$want" "$TMP/growth_rev.rows" || d+="no line '$want'"$'\n'
	done
	report "growth: diff --growth over snapshots 6 to 3 (in-use falling): all bounded, grow_fn -1000.0 B/step" \
		"$d${d:+$(cat "$TMP/growth_rev.out")}"

	# Fewer than 4 profiles: nothing judged.
	ht growth_3 diff --growth "${files[@]:0:3}"
	d=$(growth_rc growth_3 0)
	grep -qxF "new +0.0 3000 1000,2000,3000 grow_fn" <(growth_rows growth_3) || d+="grow_fn not 'new'"$'\n'
	grep -qF "0 growing, 0 bytes in use; 0 bounded; 3 new" "$TMP/growth_3.out" || d+="$(head -1 "$TMP/growth_3.out")"
	report "growth: diff --growth over 3 snapshots: every stack 'new' (4 decide)" "$d"

	growth_snapshots
	growth_html

	ht growth_one diff --growth "$TMP/g1.heap"
	d=$(growth_rc growth_one 2)
	[ "$(cat "$TMP/growth_one.err")" = "heaptrace: diff --growth: needs two snapshot files or more, oldest first" ] ||
		d+="stderr: $(cat "$TMP/growth_one.err")"
	ht growth_missing diff --growth "$TMP/g1.heap" "$TMP/nonexistent.heap"
	d+=$(growth_rc growth_missing 1)
	grep -q "cannot read .*nonexistent.heap" "$TMP/growth_missing.err" || d+="stderr: $(cat "$TMP/growth_missing.err")"
	report "growth: diff --growth with one file: exit 2 and one line; a missing file: exit 1 naming it" "$d"
}

# -i 1 -f top on t_growth 24 250 (4 ticks a second for 6 s): every snapshot
# judges the last 4; the final one (after the exit) holds grow_fn 24,000 B,
# growing near 4,000 B/s (timing: 3,000 to 5,000 accepted), cap_fn bounded.
growth_snapshots() {
	local d last row slope
	ht growth_i -i 1 -f top -o "$TMP/gi" "$TB/t_growth" 24 250
	d=$(growth_rc growth_i 0)
	last=$(find "$TMP" -maxdepth 1 -name 'gi.0*.heap' | sort | tail -1)
	if [ -z "$last" ]; then
		report "growth: -i 1 -f top: the last snapshot judges grow_fn growing, cap_fn bounded" "${d}no snapshot files"
		return
	fi
	grep -q '^growth over 4 profiles (the last 4 decide): 1 growing, 24000 bytes in use; 2 bounded; 0 new$' "$last" ||
		d+="header: $(grep '^growth over' "$last")"$'\n'
	row=$(grep -E '^growing .* grow_fn$' "$last" | tr -s ' ')
	slope=$(echo "$row" | cut -d' ' -f2)
	awk -v s="$slope" 'BEGIN { exit !(s + 0 >= 3000 && s + 0 <= 5000) }' ||
		d+="grow_fn row: '$row', want growing at 3000..5000 B/s"$'\n'
	grep -qE '^bounded +\+0\.0 +12288 +12288,12288,12288,12288 +cap_fn$' "$last" ||
		d+="cap_fn row: $(grep 'cap_fn$' "$last")"$'\n'
	report "growth: -i 1 -f top over 6 s: the last snapshot ($(basename "$last")) judges grow_fn growing (~4000 B/s), cap_fn bounded" \
		"$d${d:+$(grep -A5 '^growth over' "$last")}"
}

# -i 1 -f html on t_growth 16 250: the last report's Growth section, in
# chromium (tests/scenarios/report.sh's rp_dom): grow_fn growing with a
# solid line through the 4 snapshots, cap_fn bounded (dashed).
growth_html() {
	local d last
	ht growth_h -i 1 -f html -o "$TMP/gh.html" "$TB/t_growth" 16 250
	d=$(growth_rc growth_h 0)
	last=$(find "$TMP" -maxdepth 1 -name 'gh.0*.html' | sort | tail -1)
	if [ -z "$last" ] || ! rp_dom growth_hd "$last"; then
		report "growth: -i 1 -f html: the Growth section" "${d}no report or no browser: $(cat "$TMP/growth_hd.err" 2>/dev/null | head -2)"
		return
	fi
	d+=$(rp_ready_diag growth_hd)
	grep -qE '<tr data-class="growing" data-name="grow_fn" data-slope="[0-9.]+"' "$TMP/growth_hd.dom" ||
		d+="no row: growing grow_fn"$'\n'
	grep -q '<tr data-class="bounded" data-name="cap_fn" data-slope="0"' "$TMP/growth_hd.dom" ||
		d+="no row: bounded cap_fn, slope 0"$'\n'
	local pts
	pts=$(grep -o '<polyline points="[^"]*"[^>]*data-name="grow_fn"' "$TMP/growth_hd.dom" | sed 's/^<polyline points="//; s/".*//' | wc -w)
	[ "$pts" = 4 ] || d+="grow_fn's line has $pts points, want 4 (the last 4 snapshots)"$'\n'
	grep -q 'stroke-dasharray="5,3" data-name="cap_fn"' "$TMP/growth_hd.dom" || d+="cap_fn's line is not dashed"$'\n'
	report "growth: -i 1 -f html: the last report draws grow_fn (growing, 4 points) and cap_fn (bounded, dashed)" "$d"
}
