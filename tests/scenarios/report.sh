# shellcheck shell=bash
# Area report: -f html, opened in a real headless browser (Debian's
# chromium), and -f svg, checked by xmllint.  Helpers are prefixed rp_.

# rp_browser: the chromium binary.
rp_browser() {
	command -v chromium || command -v chromium-browser
}

# rp_dom KEY FILE [HASH]: the DOM of FILE#HASH after its scripts ran, in
# $TMP/KEY.dom (a profile directory of its own: runs do not share locks).
rp_dom() {
	local key=$1 file=$2 hash=${3:-} b
	: >"$TMP/$key.dom"
	echo "chromium --headless --dump-dom $(rel "$file")${hash:+#$hash}" >"$TMP/$key.cmd"
	b=$(rp_browser) || { echo "chromium not installed" >"$TMP/$key.err"; return 1; }
	timeout -k 5 120 "$b" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$TMP/chromium.$key" \
		--dump-dom "file://$file${hash:+#$hash}" >"$TMP/$key.dom" 2>"$TMP/$key.err" </dev/null
}

# rp_attr KEY TAG-PREFIX ATTR: ATTR of the first element of $TMP/KEY.dom
# whose start tag begins with TAG-PREFIX (e.g. '<div id="flame"').
rp_attr() {
	grep -o "$2[^>]*>" "$TMP/$1.dom" 2>/dev/null | head -1 | grep -o " $3=\"[^\"]*\"" | sed 's/^[^"]*"//; s/"$//'
}

# rp_array FILE NAME: the numbers of the JSON array "NAME":[...] of a
# report, one a line (the writer puts each array of the timeline on a line).
rp_array() {
	grep -o "\"$2\":\[[^]]*\]" "$1" 2>/dev/null | head -1 | sed 's/^[^[]*\[//; s/\]$//' | tr ',' '\n' | sed '/^$/d'
}

# rp_number FILE NAME: the first "NAME":NUMBER of a report.
rp_number() {
	grep -o "\"$2\":[-0-9.]*" "$1" 2>/dev/null | head -1 | sed 's/^[^:]*://'
}

# rp_ready KEY: the page's script ran to its end.
rp_ready_diag() {
	[ -s "$TMP/$1.dom" ] || { echo "no DOM: $(head -3 "$TMP/$1.err" 2>/dev/null)"; return; }
	grep -q '<body data-ready="1"' "$TMP/$1.dom" || echo "the page's script did not finish (no data-ready on body)"
}

# t_overtime FIFO (see its source), released twice with a second between:
#   in use at the end 21000 B / 17 (keep_fn 5000 / 1, leak_fn 16000 / 16),
#   allocated 16813216 B / 36, temporary 16 (churn_fn), peak 1074576 B
#   (phase 1's last churn), and the at-peak state too: with -f html's
#   4 KiB step, phase 1's last churn starts an epoch (5000 above the first).
#   During the wait between the phases: 26000 B in use; what phase 1
#   allocated and left live is 11000 B / 7 blocks, phase 2's 10000 B / 10.
scenario_html() {
	local f=$TMP/ov.html d n pts max dur mid first last

	mkfifo "$TMP/ov.fifo"
	# Run from the top directory (as run.sh does) by a relative name: the page shows it, the README's picture too.
	ht_bg ov -f html -o "$f" -- "${TB#"$ROOT"/}/t_overtime" "$TMP/ov.fifo"
	local hp=$HPID
	release ov
	if ! wait_for "$TMP/ov.tout" '^phase1$' 30 "$hp"; then
		fail "html: t_overtime reaches phase 1" "$(ctx ov)"
		kill_tree "$hp"
		return
	fi
	sleep 1
	release ov
	ht_bg_wait ov "$hp" 30
	check_rc ov 0 "html: -f html -o FILE exits 0"

	# Self-contained: nothing to fetch (the SVG namespace is a name, not a request).
	d=$(sed 's#http://www\.w3\.org/2000/svg##g' "$f" 2>/dev/null |
		grep -noiE '<(link|img|iframe|object|embed)[ >]|(src|href)=|@import|url\(|fetch\(|XMLHttpRequest|https?://|//cdn' | head -5)
	[ -s "$f" ] || d+="no report written"
	grep -q '^<!DOCTYPE html>' "$f" || d+="not an HTML page: $(head -c 100 "$f")"$'\n'
	report "html: one self-contained page (no link, src, href, url(), fetch or http:// in it)" "$d"

	# The data the page was given: the timeline has >= 20 points per second.
	n=$(rp_array "$f" t | wc -l)
	dur=$(rp_number "$f" duration)
	max=$(rp_array "$f" bytes | sort -n | tail -1)
	d=""
	awk -v n="$n" -v t="${dur:-0}" 'BEGIN { exit !(t > 1 && n >= 20 * t - 1) }' ||
		d+="$n samples over ${dur:-?} s: fewer than 20 a second"$'\n'
	[ "$max" = 1074576 ] || d+="highest sample ${max:-none}, want the peak, 1074576"$'\n'
	[ "$(rp_array "$f" bytes | head -1)" = 0 ] || d+="first sample $(rp_array "$f" bytes | head -1), want 0"$'\n'
	[ "$(rp_array "$f" bytes | tail -1)" = 21000 ] || d+="last sample $(rp_array "$f" bytes | tail -1), want 21000"$'\n'
	report "html: the timeline samples the whole run at >= 20 points a second, from 0 through the peak (1074576) to 21000" "$d"

	# The wait between the phases: the samples at 26000 bytes; its middle splits the run.
	first=$(paste -d' ' <(rp_array "$f" t) <(rp_array "$f" bytes) | awk '$2 == 26000 { print $1; exit }')
	last=$(paste -d' ' <(rp_array "$f" t) <(rp_array "$f" bytes) | awk '$2 == 26000 { t = $1 } END { print t }')
	mid=$(awk -v a="${first:-0}" -v b="${last:-0}" 'BEGIN { printf "%.3f", (a + b) / 2000 }')
	d=""
	awk -v a="${first:-0}" -v b="${last:-0}" 'BEGIN { exit !(b - a >= 700) }' ||
		d+="26000 bytes in use from ${first:-?} to ${last:-?} ms: no wait of a second between the phases"$'\n'
	report "html: the timeline shows the wait between the phases (26000 bytes for about a second)" "$d"

	# One page load: every view through its button, a search, a time range of phase 1.
	rp_dom ov_a "$f" "cycle&search=%5Eleak_fn%24&select=0,$mid"
	d=$(rp_ready_diag ov_a)
	pts=$(grep -o '<polyline points="[^"]*" class="bytes-line"' "$TMP/ov_a.dom" | head -1 | sed 's/.*points="//; s/".*//' | wc -w)
	[ "$pts" = "$n" ] || d+="the chart's line has $pts points, the data $n samples"$'\n'
	[ "$(rp_attr ov_a '<svg[^>]*id="chart-svg"' data-points)" = "$n" ] ||
		d+="data-points $(rp_attr ov_a '<svg[^>]*id="chart-svg"' data-points), want $n"$'\n'
	[ "$(rp_attr ov_a '<svg[^>]*id="chart-svg"' data-max)" = 1074576 ] ||
		d+="the chart's maximum is $(rp_attr ov_a '<svg[^>]*id="chart-svg"' data-max), want the peak 1074576"$'\n'
	grep -q 'id="peak-marker"' "$TMP/ov_a.dom" || d+="no peak marker"$'\n'
	report "html: the chart draws every sample ($n) and its maximum is the profile's peak, 1074576, marked" "$d"

	local want="inuse_space=21000 peak_space=1074576 alloc_space=16813216 alloc_objects=36 inuse_objects=17 temporary=16 realloc_space=0 realloc_objects=0"
	local got
	got=$(rp_attr ov_a '<div id="flame"' data-cycle)
	report "html: each view's flame graph total is the profile's counter ($want)" \
		"$([ "$got" = "$want" ] || echo "got: ${got:-nothing}")"

	d=""
	for fn in keep_fn leak_fn main _start; do
		grep -q ">$fn</div>" "$TMP/ov_a.dom" || d+="no flame graph frame $fn"$'\n'
	done
	local line
	line=$(site_line "$ROOT/tests/targets/t_overtime.c" leak_fn)
	grep -q ">leak_fn  tests/targets/t_overtime.c:$line<" "$TMP/ov_a.dom" ||
		d+="the top stacks do not give leak_fn's site tests/targets/t_overtime.c:$line"$'\n'
	grep -q 'data-counter="allocs"' "$TMP/ov_a.dom" || d+="no allocs counter"$'\n'
	[ "$(rp_attr ov_a '<div id="counters"' data-losses)" = 0 ] || d+="loss counters highlighted: $(rp_attr ov_a '<div id="counters"' data-losses)"$'\n'
	# Only counters that are not 0, and "no losses" (issue 26).
	grep -q '<span class="counter" id="no-losses"[^>]*>no losses<' "$TMP/ov_a.dom" || d+="no 'no losses' chip"$'\n'
	got=$(grep -o 'data-counter="[a-z_]*"[^>]*>[a-z_]* 0<' "$TMP/ov_a.dom" | sed 's/".*//' | paste -sd' ')
	[ -z "$got" ] || d+="counters shown at 0: $got"$'\n'
	grep -q 'class="counter loss' "$TMP/ov_a.dom" && d+="a loss counter shown: $(grep -o 'class="counter loss[^<]*' "$TMP/ov_a.dom" | head -3)"$'\n'
	report "html: the DOM names keep_fn, leak_fn and main, leak_fn's file:line, allocs; no counter at 0, 'no losses'" "$d"

	got=$(rp_attr ov_a '<span id="matched"' data-matched)
	report "html: searching ^leak_fn\$ matches its 16000 bytes in use" "$([ "$got" = 16000 ] || echo "matched ${got:-nothing}")"

	got="$(rp_attr ov_a '<div id="range"' data-bytes) $(rp_attr ov_a '<div id="range"' data-objects)"
	report "html: the range 0-${mid} s (phase 1) left 11000 bytes in 7 blocks live" \
		"$([ "$got" = "11000 7" ] || echo "got bytes, blocks: $got")"

	# Another load: the allocated view and phase 2's range.
	rp_dom ov_b "$f" "view=alloc_space&select=$mid,$dur"
	d=$(rp_ready_diag ov_b)
	[ "$(rp_attr ov_b '<div id="flame"' data-view)" = alloc_space ] || d+="view $(rp_attr ov_b '<div id="flame"' data-view)"$'\n'
	[ "$(rp_attr ov_b '<div id="flame"' data-total)" = 16813216 ] || d+="total $(rp_attr ov_b '<div id="flame"' data-total)"$'\n'
	grep -q '>churn_fn</div>' "$TMP/ov_b.dom" || d+="no churn_fn frame"$'\n'
	got="$(rp_attr ov_b '<div id="range"' data-bytes) $(rp_attr ov_b '<div id="range"' data-objects)"
	[ "$got" = "10000 10" ] || d+="range $mid-$dur s: bytes, blocks $got, want 10000 10"$'\n'
	report "html: #view=alloc_space shows 16813216 bytes with churn_fn; phase 2's range left 10000 bytes in 10 blocks" "$d"

	# The histograms: 36 allocations by size, 19 frees by lifetime.
	d=""
	[ "$(rp_attr ov_a '<div id="sizes"' data-total)" = 36 ] || d+="sizes total $(rp_attr ov_a '<div id="sizes"' data-total), want 36"$'\n'
	grep -q '<div class="row" data-bucket="9" data-count="16">' "$TMP/ov_a.dom" || d+="no 16 allocations of 512-1023 bytes (leak_fn)"$'\n'
	grep -q '<div class="row" data-bucket="12" data-count="4">' "$TMP/ov_a.dom" || d+="no 4 allocations of 4-8 KiB (keep_fn)"$'\n'
	grep -q '<div class="row" data-bucket="20" data-count="16">' "$TMP/ov_a.dom" || d+="no 16 allocations of 1-2 MiB (churn_fn)"$'\n'
	[ "$(rp_attr ov_a '<div id="lifetimes"' data-total)" = 19 ] || d+="lifetimes total $(rp_attr ov_a '<div id="lifetimes"' data-total), want 19"$'\n'
	report "html: size histogram 16 x 512 B+, 4 x 4 KiB+, 16 x 1 MiB+; 19 lifetimes" "$d"

	# A screenshot, not blank.  docs/report.png (the README's picture) is this
	# file: HEAPTRACE_KEEP_TMP=1 bash tests/run.sh html keeps it.
	local b png=$TMP/report.png colours try
	d=""
	if b=$(rp_browser); then
		# Chromium itself, on a loaded 2-core VM, now and then writes no file (CI's check-asan, once):
		# up to 3 tries for a file, and what it said if none came; the page is judged once it has one.
		for try in 1 2 3; do
			rm -f "$png"
			(cd "$TMP" && timeout -k 5 120 "$b" --headless --no-sandbox --disable-gpu --no-first-run \
				--user-data-dir="$TMP/chromium.shot" --hide-scrollbars --window-size=1200,900 \
				--run-all-compositor-stages-before-draw --virtual-time-budget=5000 \
				--screenshot="$png" "file://$f" >"$TMP/chromium.shot.log" 2>&1 </dev/null)
			[ -s "$png" ] && break
		done
		[ "$(identify -format '%wx%h' "$png" 2>/dev/null)" = 1200x900 ] ||
			d+="no 1200x900 screenshot after $try tries: $(identify "$png" 2>&1 | head -1); chromium: $(tail -3 "$TMP/chromium.shot.log")"$'\n'
		colours=$(convert "$png" -format '%k' info: 2>/dev/null)
		[ "${colours:-0}" -ge 100 ] || d+="${colours:-no} colours in the screenshot: blank"$'\n'
	else
		d="chromium not installed"
	fi
	report "html: a 1200x900 screenshot of the page has >= 100 colours (${colours:-?})" "$d"
}

# C++ names hold '<', '>' and '&': the page and the SVG must escape them.
scenario_htmlnames() {
	ht shop_h -f html -o "$TMP/shop.html" -- "$TB/t_shop"
	check_rc shop_h 0 "htmlnames: t_shop -f html exits 0"
	rp_dom shop_h "$TMP/shop.html"
	local d
	d=$(rp_ready_diag shop_h)
	grep -q '>std::vector&lt;long, std::allocator&lt;long&gt; &gt;::push_back<' "$TMP/shop_h.dom" ||
		d+="no frame std::vector<long, std::allocator<long> >::push_back"$'\n'
	report "htmlnames: C++ template names reach the page intact" "$d"
	ht shop_s -f svg -o "$TMP/shop.svg" -- "$TB/t_shop"
	d=$(rc_diag shop_s 0)
	d+=$(xmllint --noout "$TMP/shop.svg" 2>&1 | head -3)
	grep -q 'std::vector&lt;long, std::allocator&lt;long&gt; &gt;::push_back' "$TMP/shop.svg" || d+="no escaped push_back frame"$'\n'
	report "htmlnames: the SVG of t_shop is valid XML with the template names escaped" "$d"
}

# t_stacks: 65536 stacks of 16 bytes each: the size of a big report.  The
# at-peak state is the last that rose 4 KiB (-f html's step) above the
# one before: 65535 blocks, 1048560 bytes.
scenario_htmlbig() {
	local f=$TMP/big.html size d
	ht big --max-stacks 70000 -f html -o "$f" -- "$TB/t_stacks"
	check_rc big 0 "htmlbig: t_stacks (65536 stacks) -f html exits 0"
	size=$(stat -c %s "$f" 2>/dev/null || echo 0)
	d=""
	[ "$size" -gt 0 ] && [ "$size" -le $((5 * 1048576)) ] || d="$size bytes"
	report "htmlbig: the report of 65536 stacks is at most 5 MiB ($size bytes; docs/output-formats.md)" "$d"
	rp_dom big "$f" cycle
	d=$(rp_ready_diag big)
	local got want="inuse_space=1048576 peak_space=1048560 alloc_space=1048576 alloc_objects=65536 inuse_objects=65536 temporary=0 realloc_space=0 realloc_objects=0"
	got=$(rp_attr big '<div id="flame"' data-cycle)
	[ "$got" = "$want" ] || d+="view totals: ${got:-none}, want $want"$'\n'
	grep -q '>leaf_fn' "$TMP/big.dom" || d+="no leaf_fn"$'\n'
	report "htmlbig: the page loads; its views hold 65536 blocks of 16 bytes" "$d"
}

# -f svg: flamegraph.pl's picture, no script; t_overtime's numbers.
scenario_svg() {
	local d
	ht svg_in -f svg -o "$TMP/ov.svg" -- "$TB/t_overtime" -
	d=$(rc_diag svg_in 0)
	d+=$(xmllint --noout "$TMP/ov.svg" 2>&1 | head -3)
	grep -q '<title>all (21000 bytes, 100%)</title>' "$TMP/ov.svg" || d+="root is not 21000 bytes"$'\n'
	grep -q '<title>leak_fn tests/targets/t_overtime.c:[0-9]* (16000 bytes, 76.19%)</title>' "$TMP/ov.svg" ||
		d+="no leak_fn frame of 16000 bytes"$'\n'
	grep -q '<script' "$TMP/ov.svg" && d+="a script in the SVG"$'\n'
	report "svg: valid XML (xmllint); all 21000 bytes, leak_fn 16000 (76.19%), no script" "$d"

	ht svg_as -f svg --value alloc_space -o "$TMP/ov_as.svg" -- "$TB/t_overtime" -
	d=$(rc_diag svg_as 0)
	d+=$(xmllint --noout "$TMP/ov_as.svg" 2>&1 | head -3)
	grep -q '<title>all (16813216 bytes, 100%)</title>' "$TMP/ov_as.svg" || d+="root is not 16813216 bytes"$'\n'
	grep -q '<title>churn_fn tests/targets/t_overtime.c:[0-9]* (16777216 bytes, 99.79%)</title>' "$TMP/ov_as.svg" ||
		d+="no churn_fn frame of 16777216 bytes"$'\n'
	report "svg: --value alloc_space: all 16813216 bytes, churn_fn 16777216" "$d"
}

# The files heaptrace names itself from -o FILE with -f html or -f svg:
# -i snapshots, the --at-peak page and --follow-fork children's pages keep
# the extension last (report.0001.html, report.peak.html,
# report.PID.html), so that a browser opens them as pages, not as text.
# The last snapshot's chart marks every snapshot; a page whose loss
# counters are not 0 (--max-allocs 4) highlights those, and only those.
scenario_htmlfiles() {
	local d f n snaps marks got want
	rm -f "$TMP"/hf.*
	ht hf_i -i 1 --at-peak -f html -o "$TMP/hf.html" -- "$TB/t_overtime" -
	check_rc hf_i 0 "htmlfiles: -i 1 --at-peak -f html -o hf.html exits 0"
	snaps=$(cd "$TMP" && for f in hf.[0-9][0-9][0-9][0-9].html; do [ -e "$f" ] && echo "$f"; done)
	n=$(echo "$snaps" | sed '/^$/d' | wc -l)
	d=""
	[ "$n" -ge 2 ] || d+="$n snapshots hf.NNNN.html: $(cd "$TMP" && printf '%s ' hf.*)"$'\n'
	[ -s "$TMP/hf.peak.html" ] || d+="no at-peak page hf.peak.html"$'\n'
	f=$(cd "$TMP" && for f in hf.*heap* hf.html.*; do [ -e "$f" ] && printf '%s ' "$f"; done)
	[ -z "$f" ] && [ ! -e "$TMP/hf.html" ] || d+="files named otherwise: ${f}$([ -e "$TMP/hf.html" ] && echo hf.html)"$'\n'
	report "htmlfiles: -i and --at-peak pages are hf.0001.html .. hf.$(printf %04d "$n").html and hf.peak.html" "$d"
	if [ "$n" -ge 1 ]; then
		f=$TMP/$(echo "$snaps" | tail -1)
		rp_dom hf_last "$f"
		d=$(rp_ready_diag hf_last)
		marks=$(grep -o 'data-snapshot="[0-9]*"' "$TMP/hf_last.dom" | wc -l)
		[ "$marks" = "$n" ] || d+="the chart marks $marks snapshots, want $n"$'\n'
		report "htmlfiles: the last snapshot opens as a page; its chart marks all $n snapshots" "$d"
	fi
	rp_dom hf_peak "$TMP/hf.peak.html"
	report "htmlfiles: the at-peak page opens as a page" "$(rp_ready_diag hf_peak)"

	ht hf_fork --follow-fork -f html -o "$TMP/hf_tree.html" -- "$TB/t_fork"
	check_rc hf_fork 0 "htmlfiles: --follow-fork -f html -o hf_tree.html exits 0"
	d=""
	f=$(fork_files hf_fork | sed -n 1p)
	case ${f#* } in
	"$TMP/hf_tree.${f%% *}.html") ;;
	*) d+="the child's page is '${f#* }', want \$TMP/hf_tree.PID.html"$'\n' ;;
	esac
	rp_dom hf_child "${f#* }"
	d+=$(rp_ready_diag hf_child)
	grep -q '>child_keep</div>' "$TMP/hf_child.dom" || d+="no child_keep frame in the child's page"$'\n'
	report "htmlfiles: --follow-fork: the child's page is hf_tree.PID.html and opens as a page" "$d"

	ht hf_svg -i 1 -f svg -o "$TMP/hf_s.svg" -- "$TB/t_overtime" -
	d=$(rc_diag hf_svg 0)
	snaps=$(cd "$TMP" && for f in hf_s.[0-9][0-9][0-9][0-9].svg; do [ -e "$f" ] && echo "$f"; done)
	[ -n "$snaps" ] || d+="no hf_s.NNNN.svg: $(cd "$TMP" && printf '%s ' hf_s.*)"$'\n'
	for f in $snaps; do
		d+=$(xmllint --noout "$TMP/$f" 2>&1 | head -2)
	done
	report "htmlfiles: -i -f svg snapshots are hf_s.NNNN.svg, valid XML" "$d"

	ht hf_loss --max-allocs 4 -f html -o "$TMP/hf_loss.html" -- "$TB/t_overtime" -
	rp_dom hf_lossd "$TMP/hf_loss.html"
	d=$(rp_ready_diag hf_lossd)
	got=$(grep -o '<span class="counter loss lost" data-counter="[a-z_]*"[^>]*>[^<]*' "$TMP/hf_lossd.dom" |
		sed 's/.*>//; s/,//g; s/ /=/' | sort | tr '\n' ' ')
	want=$(grep -m1 '^heaptrace: events:' "$TMP/hf_loss.err" | tr ' ' '\n' | grep -E '^[a-z_]+=[1-9]' |
		grep -E "^($(grep -o 'data-counter="[a-z_]*" title="a loss' "$TMP/hf_lossd.dom" |
			sed 's/data-counter="//; s/".*//' | paste -sd'|'))=" | sort | tr '\n' ' ')
	[ -n "$got" ] && [ "$got" = "$want" ] ||
		d+="highlighted: '${got}', want the non-zero loss counters of the events line: '${want}'"$'\n'
	[[ $got == *live_map_full=* ]] || d+="live_map_full is not highlighted"$'\n'
	[ "$(rp_attr hf_lossd '<div id="counters"' data-losses)" = "$(echo "$got" | wc -w)" ] ||
		d+="data-losses $(rp_attr hf_lossd '<div id="counters"' data-losses), want $(echo "$got" | wc -w)"$'\n'
	# Shown: exactly the counters of the events line that are not 0, events and losses alike.
	got=$(grep -o 'data-counter="[a-z_]*"[^>]*>[^<]*' "$TMP/hf_lossd.dom" | sed 's/.*>//; s/,//g; s/ /=/' | sort | paste -sd' ')
	want=$(grep -m1 '^heaptrace: events:' "$TMP/hf_loss.err" | tr ' ' '\n' | grep -E '^[a-z_]+=[1-9]' | sort | paste -sd' ')
	[ "$got" = "$want" ] || d+="chips: '$got', want the events line's non-zero counters: '$want'"$'\n'
	grep -q 'id="no-losses"' "$TMP/hf_lossd.dom" && d+="'no losses' shown beside losses"$'\n'
	report "htmlfiles: --max-allocs 4: the page shows the non-zero counters and highlights exactly the losses" "$d"
}
