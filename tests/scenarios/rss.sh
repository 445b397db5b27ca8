# shellcheck shell=bash
# Area "rss" of tests/run.sh (sourced by it; helpers in tests/lib.sh): the
# target's RSS beside the heap (/proc/PID/status), in /metrics, the -f html
# timeline, -f top and -i snapshots, and how much of it heaptrace's own
# mappings hold (counted from pagemap, checked against the target's smaps).

# t_rss (see its header) holds a 100000-byte block and 32 MiB of written
# anonymous memory while it waits: RssAnon is at least 32 MiB, and what the
# program, libc and the fast path's stub add stays under 8 MiB.
RSS_LO=$((32 << 20))
RSS_HI=$((40 << 20))

# rss_in_range WHAT VALUE: a diagnostic unless RSS_LO <= VALUE < RSS_HI.
rss_in_range() {
	[[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge "$RSS_LO" ] && [ "$2" -lt "$RSS_HI" ] ||
		echo "$1: '$2', want $RSS_LO <= anon < $RSS_HI"
}

# rss_own_smaps PID: the bytes resident in heaptrace's own mappings of PID,
# summed from the Rss: lines of /proc/PID/smaps (heaptrace counts the same
# pages through pagemap): its memfds (/memfd:heaptrace-*), CPython's page
# ([anon:heaptrace-*]) and the stub's data, the unnamed mapping right after
# the stub's file.  Empty if smaps cannot be read.
rss_own_smaps() {
	[ -r "/proc/$1/smaps" ] || return
	awk '/^[0-9a-f]+-[0-9a-f]+ / {
		split($1, a, "-"); name = $6
		ours = name ~ /^\/memfd:heaptrace-/ || name ~ /^\[anon:heaptrace-/ || (name == "" && a[1] == stub_end)
		stub_end = name ~ /^\/memfd:heaptrace-stub/ ? a[2] : ""
	}
	ours && /^Rss:/ { kb += $2 }
	END { print kb * 1024 }' "/proc/$1/smaps"
}

# rss_own_is WHAT VALUE WANT: a diagnostic line added to the caller's d
# unless VALUE (grouped digits allowed) is WANT, a number.
rss_own_is() {
	local v=${2//,/}
	[[ "$3" =~ ^[0-9]+$ ]] && [ "$v" = "$3" ] || d+="$1: '$2', want $3 (the target's smaps)"$'\n'
}

# rss_own_path WHAT VALUE: a diagnostic line added to the caller's d unless
# VALUE is > 0 on the fast path, or 0 under tests/run.sh --no-inject.
rss_own_path() {
	if [ -n "${HT_TEST_NO_INJECT:-}" ]; then
		[ "$2" = 0 ] || d+="$1: '$2', want 0 (--no-inject: heaptrace maps nothing into the target)"$'\n'
	else
		[[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || d+="$1: '$2', want > 0 (the stub's file and data, the ring)"$'\n'
	fi
}

# rss_start KEY ARGS...: heaptrace -v ARGS -- t_rss FIFO in the background,
# until the target says "ready"; 1 (reported) if it does not.  RSS_T: the
# target's pid.
rss_start() {
	local key=$1
	shift
	mkfifo "$TMP/$key.fifo"
	ht_bg "$key" -v "$@" -- "$TB/t_rss" "$TMP/$key.fifo"
	RSS_HP=$HPID
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$RSS_HP"; then
		fail "rss: $key: t_rss gets ready under heaptrace" "$(ctx "$key")"
		kill_tree "$RSS_HP"
		return 1
	fi
	RSS_T=$(pgrep -xf "$TB/t_rss $TMP/$key.fifo" | head -1)
}

# rss_finish KEY: let t_rss exit, wait for heaptrace (in this shell: it is
# its child); RSS_D: diagnostics if either did not end well.
rss_finish() {
	RSS_D=""
	release "$1" || RSS_D+="could not release the target"$'\n'
	ht_bg_wait "$1" "$RSS_HP" 30
	RSS_D+=$(rc_diag "$1" 0)
	grep -q '^done$' "$TMP/$1.tout" || RSS_D+="the target did not finish: $(cat "$TMP/$1.tout")"$'\n'
}

# /metrics and the -f html chart data, in one run.
rss_metrics_html() {
	local key=rss_html d="" port m anon file shmem own
	rss_start $key -f html -o "$TMP/$key.html" --http 127.0.0.1:0 || return
	port=$(http_port $key)
	curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$TMP/$key.metrics" 2>&1 || d+="curl /metrics failed"$'\n'
	m=$TMP/$key.metrics
	anon=$(sed -n 's/^heaptrace_rss_bytes{kind="anon"} \([0-9]*\)$/\1/p' "$m")
	file=$(sed -n 's/^heaptrace_rss_bytes{kind="file"} \([0-9]*\)$/\1/p' "$m")
	shmem=$(sed -n 's/^heaptrace_rss_bytes{kind="shmem"} \([0-9]*\)$/\1/p' "$m")
	d+=$(rss_in_range "/metrics anon" "$anon")
	[[ "$file" =~ ^[0-9]+$ ]] && [ "$file" -gt 0 ] || d+="/metrics file: '$file', want > 0 (the program's own pages)"$'\n'
	[[ "$shmem" =~ ^[0-9]+$ ]] || d+="/metrics shmem: '$shmem', want a number"$'\n'
	[ "$(grep -c '^# TYPE heaptrace_rss_bytes gauge$' "$m")" = 1 ] || d+="no single '# TYPE heaptrace_rss_bytes gauge'"$'\n'
	grep -q '^heaptrace_inuse_bytes 100000$' "$m" || d+="heaptrace_inuse_bytes is not 100000 beside it"$'\n'
	# t_rss waits, touching nothing: its pages of heaptrace's mappings stay as /metrics read them.
	RSS_OWN=$(rss_own_smaps "$RSS_T")
	own=$(sed -n 's/^heaptrace_rss_own_bytes \([0-9]*\)$/\1/p' "$m")
	rss_own_is "/metrics heaptrace_rss_own_bytes" "$own" "$RSS_OWN"
	rss_own_path "heaptrace_rss_own_bytes" "$own"
	[[ "$own" =~ ^[0-9]+$ ]] && [ "$own" -le $((anon + shmem)) ] ||
		d+="heaptrace_rss_own_bytes '$own', want <= anon + shmem ($anon + $shmem): it is counted in them"$'\n'
	[ "$(grep -c '^# TYPE heaptrace_rss_own_bytes gauge$' "$m")" = 1 ] || d+="no single '# TYPE heaptrace_rss_own_bytes gauge'"$'\n'
	grep -q '^# HELP heaptrace_rss_own_bytes .*counted in its anon and shmem' "$m" ||
		d+="the HELP of heaptrace_rss_own_bytes does not say it is counted in anon and shmem"$'\n'
	# The chart needs a sample after the mapping: 25 a second, so 0.3 s gives several.
	sleep 0.3
	rss_finish $key
	d+=$RSS_D
	[ -n "$d" ] && d+=$(cat "$m")
	report "rss: /metrics heaptrace_rss_bytes{kind=anon} of t_rss in [32, 40) MiB, file > 0, shmem, beside inuse 100000; heaptrace_rss_own_bytes ${own:-?} = the target's smaps, > 0 (fast path), <= anon + shmem" "$d"

	# The timeline's rss array: as many entries as t, numbers or null; its
	# highest is the mapping's; the summary's rss is the one read at the exit.
	local h=$TMP/$key.html nt nr max
	d=""
	nt=$(grep -o '"timeline":{"period":[^,]*,"t":\[[^]]*\]' "$h" | sed 's/.*"t":\[//; s/\]$//' | tr ',' '\n' | grep -c .)
	grep -o '"rss":\[[^]]*\]' "$h" | sed 's/.*\[//; s/\]$//' | tr ',' '\n' >"$TMP/$key.rss"
	nr=$(grep -c . "$TMP/$key.rss")
	[ "$nt" -gt 2 ] && [ "$nt" = "$nr" ] || d+="timeline: $nt times, $nr rss values; want the same number (> 2)"$'\n'
	grep -vqE '^([0-9]+|null)$' "$TMP/$key.rss" && d+="rss values that are neither numbers nor null"$'\n'
	max=$(grep -E '^[0-9]+$' "$TMP/$key.rss" | sort -n | tail -1)
	# The total includes file and shmem pages: at most 8 MiB more again.
	[[ "$max" =~ ^[0-9]+$ ]] && [ "$max" -ge "$RSS_LO" ] && [ "$max" -lt $((RSS_HI + (8 << 20))) ] ||
		d+="highest rss in the chart data: '$max', want [32, 48) MiB"$'\n'
	anon=$(grep -o '"rss":{"anon":[0-9]*,' "$h" | sed 's/.*://; s/,$//')
	d+=$(rss_in_range "summary rss anon" "$anon")
	grep -q '"rss":{"anon":[0-9]*,"file":[0-9]*,"shmem":[0-9]*,"heaptrace":[0-9]*,"at_exit":true}' "$h" ||
		d+="summary rss is not marked at_exit:true"$'\n'
	grep -q 'rss-line' "$h" || d+="the report script draws no rss-line"$'\n'
	report "rss: -f html timeline has one rss value per sample, highest in [32, 48) MiB; summary anon at exit in [32, 40) MiB" "$d"
	rss_html_own "$h"
}

# rss_html_own FILE: heaptrace's part in the report of rss_metrics_html:
# the summary's (at the exit, which touches none of its pages) and the
# timeline's last are what the target's smaps said while it waited; the
# timeline's is null where its rss is, and never above it; the page says it.
rss_html_own() {
	local h=$1 d="" own last n=0 row grouped
	own=$(rp_number "$h" heaptrace)
	rss_own_is "summary rss.heaptrace" "$own" "$RSS_OWN"
	rp_array "$h" rss >"$TMP/rss_html.rss"
	rp_array "$h" rss_heaptrace >"$TMP/rss_html.own"
	paste -d' ' "$TMP/rss_html.rss" "$TMP/rss_html.own" >"$TMP/rss_html.pairs"
	[ "$(wc -l <"$TMP/rss_html.own")" = "$(wc -l <"$TMP/rss_html.rss")" ] ||
		d+="timeline: $(wc -l <"$TMP/rss_html.own") rss_heaptrace values, $(wc -l <"$TMP/rss_html.rss") rss"$'\n'
	while read -r r o; do
		[ "$r" = null ] && [ "$o" = null ] && continue
		n=$((n + 1))
		[[ "$r$o" =~ ^[0-9]+$ ]] && [ "$o" -le "$r" ] || d+="timeline point: rss $r, rss_heaptrace $o"$'\n'
	done <"$TMP/rss_html.pairs"
	[ "$n" -gt 2 ] || d+="$n timeline points with an rss"$'\n'
	last=$(grep -v null "$TMP/rss_html.own" | tail -1)
	rss_own_is "timeline's last rss_heaptrace" "$last" "$RSS_OWN"
	if rp_dom rss_dom "$h"; then
		row=$(grep -o '<tr data-figure="rss">.*' "$TMP/rss_dom.dom" | sed 's|</tr>.*||')
		grouped=$(echo "$own" | sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta')
		[[ "$row" == *"of which heaptrace's own mappings (its stub, ring and tables) "*" ($grouped B)"* ]] ||
			d+="the page's RSS row does not say heaptrace's own $grouped B: '$row'"$'\n'
	else
		d+="chromium: $(head -3 "$TMP/rss_dom.err")"$'\n'
	fi
	report "rss: -f html rss.heaptrace ${own:-?} and the timeline's last = the target's smaps; $n points with rss_heaptrace <= rss; the page's RSS row says it" "$d"
}

# -f top -i: each snapshot's report has an rss line; one taken while t_rss
# waits has the mapping in it, the final one the RSS at the exit.
rss_top_snapshots() {
	local key=rss_top pre=$TMP/rss_top d="" c n f anon own
	rss_start $key -f top -i 0.3 -o "$pre" || return
	c=$(grep -cE '^heaptrace: snapshot [0-9]+: ' "$TMP/$key.err")
	# The next snapshot started after "ready": it saw the mapping.
	wait_for "$TMP/$key.err" "^heaptrace: snapshot $((c + 2)): " 20 "$RSS_HP" || d+="no snapshot $((c + 2))"$'\n'
	own=$(rss_own_smaps "$RSS_T")
	rss_finish $key
	d+=$RSS_D
	n=$(grep -cE '^heaptrace: snapshot [0-9]+: ' "$TMP/$key.err")
	for f in "$pre".[0-9]*.heap; do
		grep -qE '^  rss: +[0-9,]+ bytes resident' "$f" || d+="$(rel "$f"): no rss line"$'\n'
	done
	f=$(printf '%s.%04d.heap' "$pre" $((c + 2)))
	anon=$(sed -nE 's/^  rss: +[0-9,]+ bytes resident \(anon ([0-9,]+), .*/\1/p' "$f" | tr -d ,)
	d+=$(rss_in_range "snapshot $((c + 2)) anon" "$anon")
	f=$(printf '%s.%04d.heap' "$pre" "$n")
	anon=$(sed -nE 's/^  rss: +[0-9,]+ bytes resident at its exit \(anon ([0-9,]+), .*/\1/p' "$f" | tr -d ,)
	d+=$(rss_in_range "final snapshot $n (at its exit) anon" "$anon")
	for f in $(printf '%s.%04d.heap' "$pre" $((c + 2))) $(printf '%s.%04d.heap' "$pre" "$n"); do
		rss_own_is "$(rel "$f") heaptrace's own" "$(rss_top_own "$f")" "$own"
	done
	rss_own_path "the target's smaps: bytes in heaptrace's mappings" "$own"
	report "rss: -f top -i 0.3: every snapshot has an rss line; snapshot $((c + 2)) and the final one (at exit) anon in [32, 40) MiB, heaptrace's own ${own:-?} as the target's smaps said" "$d"
}

# rss_top_own FILE: the bytes of the "of which:" line under -f top's rss line.
rss_top_own() {
	sed -nE "/^  rss: /{n; s/^  of which: +([0-9,]+) bytes in heaptrace's own mappings \(its stub, ring and tables\)$/\1/p}" "$1" |
		tr -d ,
}

# --no-inject: the target holds no mapping of heaptrace's, and /metrics and
# -f top say 0.
rss_noinject() {
	local key=rss_ni d="" port m own smaps
	rss_start $key --no-inject -f top -o "$TMP/$key.txt" --http 127.0.0.1:0 || return
	port=$(http_port $key)
	m=$TMP/$key.metrics
	curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$m" 2>&1 || d+="curl /metrics failed"$'\n'
	smaps=$(rss_own_smaps "$RSS_T")
	grep -q 'heaptrace-' "/proc/$RSS_T/maps" && d+="heaptrace mappings in the target: $(grep 'heaptrace-' "/proc/$RSS_T/maps")"$'\n'
	rss_finish $key
	d+=$RSS_D
	rss_own_is "the target's smaps" "$smaps" 0
	own=$(sed -n 's/^heaptrace_rss_own_bytes \([0-9]*\)$/\1/p' "$m")
	rss_own_is "/metrics heaptrace_rss_own_bytes" "$own" 0
	rss_own_is "-f top's heaptrace's own" "$(rss_top_own "$TMP/$key.txt")" 0
	grep -qE '^  rss: +[0-9,]+ bytes resident at its exit \(anon ' "$TMP/$key.txt" || d+="-f top: no rss line at its exit"$'\n'
	report "rss: --no-inject: no heaptrace mapping in t_rss; /metrics heaptrace_rss_own_bytes 0, -f top 'of which: 0 bytes'" "$d"
}

# --follow-fork -f top: t_fork's three processes each get a report of their
# own (PREFIX, PREFIX.PID), each with its own process's RSS at its exit.
rss_follow_fork() {
	local key=rss_ff d="" f n=0 files
	ht $key --follow-fork -f top -o "$TMP/$key.txt" -- "$TB/t_fork" plain
	d=$(rc_diag $key 0)
	files=$(ls "$TMP/$key.txt" "$TMP/$key.txt".[0-9]* 2>/dev/null)
	for f in $files; do
		n=$((n + 1))
		grep -qE '^  rss: +[1-9][0-9,]* bytes resident at its exit \(anon [1-9][0-9,]*, file [0-9,]+, shmem [0-9,]+\)$' "$f" ||
			d+="$(rel "$f"): no 'rss: N bytes resident at its exit (anon A, ...)' line: $(grep '^  rss:' "$f")"$'\n'
		[[ "$(rss_top_own "$f")" =~ ^[0-9]+$ ]] || d+="$(rel "$f"): no 'of which: N bytes in heaptrace's own mappings' line"$'\n'
	done
	[ "$n" = 3 ] || d+="$n reports, want 3 (parent, child, grandchild)"$'\n'
	report "rss: --follow-fork -f top: each of t_fork's 3 processes' reports has its RSS at its exit" "$d"
}

scenario_rss() {
	rss_metrics_html
	rss_top_snapshots
	rss_noinject
	rss_follow_fork
}
