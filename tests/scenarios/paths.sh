# shellcheck shell=bash
# Area "paths" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario differential (issue #39, item 4).  One target of known
# allocations (tests/targets/t_paths.c, whose comment has the numbers) traced
# on every recording path, each started every way, and every output field
# compared with the ring's launched profile and with the target's truth:
#   paths: ring (the default), sites (HEAPTRACE_BATCH=0: a record site a
#          call), noinject (--no-inject: uprobes), kernel (--stack-capture
#          kernel), sampled (--sample-rate 1: every allocation sampled)
#   ways:  launched, attached (-p, before the target allocates), forked
#          (--follow-fork: a child forked, its own profile), execd
#          (--follow-fork: a child that executed the program)
# Every combination runs with -f html (counts and bytes per stack and in
# total, the stacks with file:line, temporary, realloc figures, allocs,
# frees and every loss counter, the peak's bytes and moment, each stack's
# bytes at the peak, the heap over time's highest point, the size and
# lifetime histograms, leak age: the live blocks by allocation time); every
# path launched and the ring every way with -f top too (the same, and each
# stack's lifetimes), every path launched with --collapsed; which keeps the
# area near 30-50 s on 2 busy cores.
# Each run's -v events line says which path recorded it (pt_recorder).
# What differs by design (docs/fast-path.md, "How the paths differ") is
# normalised here, and only that: the PID, the program's name as it was
# started, RSS, the peak's and the live blocks' times relative to the start
# of tracing (checked against the target's own clock instead), the sampled
# header of --sample-rate, the callers of __libc_start_call_main under
# --stack-capture kernel (frame pointers only: glibc's start-up code has
# none), and the lifetimes, checked block by block against the target's own
# timing of each block (a trap's cost moves a short lifetime up a bucket or
# more).

PATHS_PATHS="ring sites noinject kernel sampled"
PATHS_WAYS="launched attached forked execd"

# pt_run KEY PATH WAY FMT: one traced run of t_paths; its profile (the
# process that did the work) in KEY.prof, the target's report in KEY.out;
# PT_D gets a diagnostic line for each thing that went wrong.
pt_run() {
	local key=$1 path=$2 way=$3 fmt=$4 batch=1 opts=() files d="" trc arg
	case $path in
	sites) batch=0 ;;
	noinject) opts=(--no-inject) ;;
	kernel) opts=(--stack-capture kernel) ;;
	sampled) opts=(--sample-rate 1) ;;
	esac
	opts+=(-v -f "$fmt" -o "$TMP/$key.file")
	[ "$fmt" = collapsed ] || opts+=(--top 100 --value alloc_space)
	rm -f "$TMP/$key".file*
	case $way in
	launched)
		HEAPTRACE_BATCH=$batch ht "$key" "${opts[@]}" -- "$TB/t_paths" run
		d+=$(rc_diag "$key" 0)
		cp "$TMP/$key.file" "$TMP/$key.prof" 2>/dev/null
		;;
	forked | execd)
		arg=fork
		[ "$way" = execd ] && arg="exec"
		HEAPTRACE_BATCH=$batch ht "$key" --follow-fork "${opts[@]}" -- "$TB/t_paths" "$arg"
		d+=$(rc_diag "$key" 0)
		# The parent allocates nothing; the child's profile is KEY.file.PID.
		[ "$fmt" != top ] || grep -qE '^  allocated: +0 bytes in 0 objects$' "$TMP/$key.file" 2>/dev/null ||
			d+="parent's profile: $(grep 'allocated:' "$TMP/$key.file" 2>/dev/null || echo none), want 0 bytes in 0 objects"$'\n'
		files=$(cd "$TMP" && echo "$key".file.[0-9]*)
		if [ -f "$TMP/$files" ]; then
			cp "$TMP/$files" "$TMP/$key.prof"
		else
			d+="want one child profile $key.file.PID, got: $files"$'\n'
		fi
		;;
	attached)
		echo "HEAPTRACE_BATCH=$batch heaptrace $(rel "${opts[@]}") -p PID (t_paths wait FIFO)" >"$TMP/$key.cmd"
		mkfifo "$TMP/$key.fifo"
		"$TB/t_paths" wait "$TMP/$key.fifo" >"$TMP/$key.out" 2>&1 &
		TPID=$!
		if ! wait_for "$TMP/$key.out" '^ready$' 10 "$TPID"; then
			PT_D="t_paths wait did not say ready: $(cat "$TMP/$key.out")"
			kill_tree "$TPID"
			return
		fi
		HEAPTRACE_BATCH=$batch timeout -k 5 "$(tmo)" "$HT" "${opts[@]}" -p "$TPID" \
			>"$TMP/$key.hout" 2>"$TMP/$key.err" </dev/null &
		HPID=$!
		if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID([^0-9]|\$)" 30 "$HPID"; then
			PT_D="no 'tracing PID $TPID' line"$'\n'"$(ctx "$key")"
			kill_tree "$HPID" "$TPID"
			return
		fi
		release "$key" || d+="could not release the target"$'\n'
		wait_exit "$TPID" 10 || kill_tree "$TPID"
		trc=$WRC
		[ "$trc" = 0 ] || d+="target exit status $trc, want 0"$'\n'
		ht_bg_wait "$key" "$HPID" 15
		d+=$(rc_diag "$key" 0)
		cp "$TMP/$key.file" "$TMP/$key.prof" 2>/dev/null
		;;
	esac
	[ -s "$TMP/$key.prof" ] || d+="no profile"$'\n'
	grep -q '^gap C peak [0-9]' "$TMP/$key.out" 2>/dev/null || d+="the target did not report its work: $(head -3 "$TMP/$key.out")"$'\n'
	PT_D=$d
}

# pt_recorder KEY: which path recorded KEY's allocations, from its -v
# events line: "ring" (ring_events 107: 58 allocations and 51 frees, each
# realloc one event), "sites" (no ring event: the stub walked each
# allocation's stack, or left it to the BPF walk, and handed the call to a
# record site), "uprobes" (neither).  Once in a while a stack goes to the
# BPF walk (stub_walks_handed 1); the profile is the same
# (docs/fast-path.md, "How the paths differ").  Until 2026-12-04 one run
# in ~30 had ring_events 106: the maps' first refresh republished the
# tables' index unchanged, and a walk under way gave up (the ordered
# fallback to a record site).
pt_recorder() {
	local walks handed ring
	walks=$(rl_events_num "$1" stub_walks)
	handed=$(rl_events_num "$1" stub_walks_handed)
	ring=$(rl_events_num "$1" ring_events)
	if [ -z "$walks" ] || [ -z "$handed" ] || [ -z "$ring" ]; then
		echo "no events line"
	elif [ "$((walks + handed))" = 58 ] && [ "$ring" = 107 ]; then
		echo "ring"
	elif [ "$((walks + handed))" = 58 ] && [ "$ring" = 0 ]; then
		echo "sites"
	elif [ "$walks" = 0 ] && [ "$handed" = 0 ] && [ "$ring" = 0 ]; then
		echo "uprobes"
	else
		echo "stub_walks=$walks stub_walks_handed=$handed ring_events=$ring"
	fi
}

# pt_recorder_want PATH WAY: what must record PATH's allocations started
# WAY (docs/fast-path.md, "How the paths differ"): a forked child has its
# parent's stub but no ring (fork wipes the stub's data); a child that
# executed a program has a stub, CFI tables and a ring of its own, as the
# target; --stack-capture kernel turns the fast path off.  Under
# tests/run.sh --no-inject every run has uprobes.
pt_recorder_want() {
	[ -n "${HT_TEST_NO_INJECT:-}" ] && set -- noinject "$2"
	case $1/$2 in
	noinject/* | kernel/*) echo uprobes ;;
	sites/* | */forked) echo sites ;;
	*) echo ring ;;
	esac
}

# pt_compact FILE: a -f top report, one line per summary field and per
# stack ("stack FRAME@FILE:LINE;... | in use ..., allocated ... | reallocs
# ... | freed N, temporary N"), spaces squeezed; without the PID, the
# program's name, RSS, the peak's moment, the sampled header and the
# lifetimes (pt_lifetimes).
pt_compact() {
	awk '
	function flush() { if (st != "") print "stack " fr " | " st; st = ""; fr = "" }
	# The sampled header: "  sampled:   ..." and its lines indented under it.
	/^  sampled: / { cont = 1; next }
	cont && /^             [^ ]/ { next }
	{ cont = 0; gsub(/  +/, " ") }
	/^heaptrace: PID [0-9]+, / { sub(/PID [0-9]+/, "PID *"); print; next }
	/^ program: |^ rss: |^ of which: / { next }
	/^ peak: / { sub(/ bytes in use, .*/, " bytes in use") }
	/^#[0-9]+ / { flush(); st = $0; sub(/^#[0-9]+ /, "", st); next }
	st != "" && /^ (reallocs|freed|missed|unmatched)/ { sub(/; lifetimes:.*/, ""); st = st " |" $0; next }
	st != "" && /^ [^ ]/ { f = $0; sub(/^ /, "", f); sub(/ /, "@", f); fr = fr (fr == "" ? "" : ";") f; next }
	st == "" && NF { print }
	END { flush() }' "$1" 2>/dev/null
}

# pt_lifetimes FILE: "LEAF BUCKET COUNT" for each lifetime bucket of each
# stack of a -f top report (BUCKET: heaptrace's index, log2 of microseconds).
pt_lifetimes() {
	awk '
	BEGIN {
		for (i = 0; i < 32; i++) {
			us = i ? 2 ^ i : 0
			if (us < 1000) n = sprintf("%dus", us)
			else if (us < 1000000) n = sprintf("%dms", int(us / 1000))
			else n = sprintf("%ds", int(us / 1000000))
			idx[n] = i
		}
	}
	/^#[0-9]+ / { leaf = ""; life = ""; next }
	/^      freed .*lifetimes:/ { life = $0; sub(/.*lifetimes: */, "", life); next }
	/^        [^ ]/ && leaf == "" {
		leaf = $1
		n = split(life, b, " ")
		for (i = 1; i <= n; i++) {
			# The first bucket, [0, 2) us, reads "<2us" (">=0us" before).
			split(b[i], kv, ":"); sub(/^>=/, "", kv[1]); sub(/^<2us$/, "0us", kv[1])
			print leaf, (kv[1] in idx ? idx[kv[1]] : "?" kv[1]), kv[2]
		}
	}' "$1" 2>/dev/null
}

# pt_life_diag TOP|HTML FILE REPORT: a line for each stack of a -f top
# report (TOP) or for all blocks of a -f html report (HTML: its lifetimes
# histogram) whose lifetimes cannot be those of the blocks as the target
# timed them (REPORT's "life NAME LO HI": the block lived within buckets
# LO..HI); an earliest-deadline assignment of the blocks to heaptrace's
# counts, bucket by bucket.
pt_life_diag() {
	{
		sed -n 's/^life \([a-z]*\) \([0-9]*\) \([0-9]*\)$/B \1 \2 \3/p' "$3"
		if [ "$1" = TOP ]; then
			pt_lifetimes "$2" | awk '{ print "H", $0 }'
		else
			pt_html "$2" | awk '$1 == "lifetimes" { for (i = 2; i <= NF; i++) if ($i) print "H all", i - 2, $i }'
		fi
	} | awk -v all="$([ "$1" = HTML ] && echo 1)" '
	BEGIN { name["temp_fn"] = "temp"; name["held_fn"] = "held"; name["grow_seed"] = "seed"
		name["grow_fn"] = "grow"; name["peak_fn"] = "peak"; name["all"] = "all" }
	$1 == "B" { s = all ? "all" : $2; n[s]++; lo[s, n[s]] = $3; hi[s, n[s]] = $4; next }
	$1 == "H" {
		if (!($2 in name)) { print "lifetimes for " $2 ", which frees nothing"; next }
		if ($3 !~ /^[0-9]+$/ || $3 > 31) { print $2 ": an unknown lifetime bucket " $3; next }
		h[name[$2], $3] += $4; tot[name[$2]] += $4
	}
	END {
		if (!length(n)) print "the target reported no block"
		for (s in n) {
			if (tot[s] != n[s]) { print s ": " tot[s] + 0 " lifetimes, the target freed " n[s]; continue }
			for (i = 1; i <= n[s]; i++) used[s, i] = 0
			for (k = 0; k < 32; k++)
				for (c = 0; c < h[s, k]; c++) {
					best = 0
					for (i = 1; i <= n[s]; i++)
						if (!used[s, i] && lo[s, i] <= k && hi[s, i] >= k && (!best || hi[s, i] < hi[s, best]))
							best = i
					if (!best) {
						printf "%s: a lifetime in bucket %d that no block of the target had (heaptrace:", s, k
						for (j = 0; j < 32; j++) if (h[s, j]) printf " %d:%d", j, h[s, j]
						printf "; the target:"
						for (i = 1; i <= n[s]; i++) printf " %d-%d", lo[s, i], hi[s, i]
						print ")"
						k = 32
						break
					}
					used[s, best] = 1
				}
		}
	}'
}

# pt_html FILE: the facts of a -f html report, one a line: "peak BYTES MS",
# "bin MS", "counter NAME N" (allocs, frees and every loss), "sizes ...",
# "timeline max BYTES" (the highest point of the heap over time),
# "lifetimes ..." (all stacks'), "stack FRAME@FILE:LINE;... inuse_bytes=N
# ..." (innermost frame first) and "live LEAF BIN OBJECTS BYTES".
pt_html() {
	awk '
	function arr(s) { sub(/^[^[]*\[/, "", s); sub(/\].*$/, "", s); return s }
	function strs(s, a) { sub(/^[^[]*\["/, "", s); sub(/"\].*$/, "", s); return split(s, a, "\",\"") }
	/^"peak":/ { s = $0; gsub(/[^0-9.,]/, "", s); split(s, v, ","); printf "peak %s %.3f\n", v[1], v[2] * 1000 }
	/^"frames":\{"name":/ { strs($0, names) }
	/^"site":/ { strs($0, sites) }
	/^"nodes":/ { split(arr($0), nodes, ",") }
	/^"stacks":\{"leaf":/ { ns = split(arr($0), leaf, ","); instacks = 1; next }
	instacks && /^"[a-z_]+":\[/ {
		k = $0; sub(/^"/, "", k); sub(/".*/, "", k)
		split(arr($0), v, ",")
		for (i = 1; i <= ns; i++) row[i] = row[i] " " k "=" v[i]
		if ($0 ~ /\]\},?$/) instacks = 0
	}
	/^"counters":/ {
		s = $0; sub(/^"counters":\[\[/, "", s); sub(/\]\],?$/, "", s); n = split(s, c, "\\],\\[")
		for (i = 1; i <= n; i++) {
			split(c[i], f, ","); gsub(/"/, "", f[1])
			if (f[3] == 1 || f[1] == "allocs" || f[1] == "frees") print "counter", f[1], f[2]
		}
	}
	# The heap over time: its highest point (the peak goes in as a point of its own).
	/^"bytes":\[/ { n = split(arr($0), v, ","); m = 0; for (i = 1; i <= n; i++) if (v[i] + 0 > m) m = v[i] + 0; print "timeline max", m }
	/^"sizes":|^"lifetimes":/ { k = $0; sub(/^"/, "", k); sub(/".*/, "", k); s = arr($0); gsub(/,/, " ", s); print k, s }
	/^"live":/ {
		s = $0; sub(/.*"bin_ms":/, "", s); sub(/,.*/, "", s); print "bin", s
		n = split(arr(substr($0, index($0, "rows"))), lv, ",")
		for (i = 1; i + 3 <= n; i += 4) live[++nl] = lv[i] " " lv[i + 1] " " lv[i + 2] " " lv[i + 3]
	}
	END {
		for (i = 1; i <= ns; i++) {
			fr = ""
			for (nd = leaf[i]; nd > 0; nd -= nodes[2 * nd + 1]) {
				fi = nodes[2 * nd + 2] + 1
				fr = fr (fr == "" ? "" : ";") names[fi] "@" sites[fi]
			}
			nm[i - 1] = names[nodes[2 * leaf[i] + 2] + 1]
			print "stack", fr row[i]
		}
		for (i = 1; i <= nl; i++) { split(live[i], f, " "); print "live", nm[f[1]], f[2], f[3], f[4] }
	}' "$1" 2>/dev/null | sort
}

# pt_html_diag FACTS REPORT: the peak's moment and the leak ages against the
# target's clock (REPORT's "gap A C LO HI": keep_c's block was allocated LO
# to HI ns after leak_a's last one; "gap C peak LO HI": peak_fn's malloc,
# the peak, after keep_c's), in the live blocks' own bins: a bin's block
# was allocated within [BIN, BIN+1) x bin; 0.2 ms more for the clocks (the
# ring's stamps are turned into the kernel's clock before each drain run).
pt_html_diag() {
	awk '
	FILENAME == ARGV[1] && $1 == "peak" { pb = $2; pt = $3 }
	FILENAME == ARGV[1] && $1 == "bin" { w = $2 }
	FILENAME == ARGV[1] && $1 == "live" && $2 == "leak_a" && (a == "" || $3 > a) { a = $3 }
	FILENAME == ARGV[1] && $1 == "live" && $2 == "keep_c" { c = $3 }
	FILENAME == ARGV[2] && /^gap A C / { lac = $4 / 1e6; hac = $5 / 1e6 }
	FILENAME == ARGV[2] && /^gap C peak / { lcp = $4 / 1e6; hcp = $5 / 1e6 }
	END {
		e = 0.2
		if (pb != 2103202) print "peak " pb " bytes, want 2103202"
		if (w == "" || a == "" || c == "" || hac == "" || hcp == "") { print "missing: bin " w ", leak_a " a ", keep_c " c ", gaps " hac " " hcp; exit }
		age = (c - a) * w
		if (age < lac - w - e || age > hac + w + e)
			printf "leak age: keep_c %.3f ms younger than leak_a (bins %d, %d of %.3f ms), the target timed %.3f-%.3f ms\n", age, a, c, w, lac, hac
		d = pt - c * w
		if (d < lcp - e || d > w + hcp + e)
			printf "the peak at %.3f ms is %.3f ms after the start of keep_c'"'"'s bin %d (%.3f ms wide); the target made it %.3f-%.3f ms after keep_c'"'"'s malloc\n", pt, d, c, w, lcp, hcp
	}' "$1" "$2"
}

# pt_facts_cmp FACTS: the html facts every path and way must share: no
# times (the lifetimes are checked against the target's timing, the live
# blocks' bins and the peak's moment against its clock), live blocks summed
# by stack.
pt_facts_cmp() {
	awk '$1 == "live" { k = $2; o[k] += $4; b[k] += $5; next } $1 == "peak" { print $1, $2; next }
		$1 != "bin" && $1 != "lifetimes" { print }
		END { for (k in o) print "live", k, o[k], b[k] }' "$1" | sort
}

# pt_expect_ref COPIED: the reference's compact -f top (line numbers out)
# as t_paths.c makes it; COPIED: the bytes grow_fn's realloc copied (0 when
# it grew in place, 100 when it moved the block).
pt_expect_ref() {
	local c=$1 s=";work;main;__libc_start_call_main;__libc_start_main_impl;_start"
	cat <<EOF
heaptrace: PID *, stacks by alloc_space
 in use: 6,050 bytes in 7 objects
 allocated: 2,158,630 bytes in 58 objects
 stacks: 9
 temporary: 51 allocations freed right after their allocation (heaptrack's count)
 peak: 2,103,202 bytes in use
 leaked: 6,050 bytes live at the end
 reallocs: 2 reallocs of a block, $c bytes copied by those that moved it
 losses: none
stack peak_fn$s | 2,097,152 bytes (97.2%) in use 0 B / 0 obj, allocated 2,097,152 B / 1 obj | freed 1, temporary 1
stack held_fn$s | 32,768 bytes (1.5%) in use 0 B / 0 obj, allocated 32,768 B / 8 obj | freed 8, temporary 8
stack grow_fn$s | 20,000 bytes (0.9%) in use 0 B / 0 obj, allocated 20,000 B / 1 obj | reallocs 1, $c bytes copied | freed 1, temporary 1
stack leak_a$s | 3,000 bytes (0.1%) in use 3,000 B / 3 obj, allocated 3,000 B / 3 obj
stack temp_fn$s | 2,560 bytes (0.1%) in use 0 B / 0 obj, allocated 2,560 B / 40 obj | freed 40, temporary 40
stack keep_c$s | 2,000 bytes (0.1%) in use 2,000 B / 1 obj, allocated 2,000 B / 1 obj
stack leak_b$s | 1,000 bytes (0.0%) in use 1,000 B / 2 obj, allocated 1,000 B / 2 obj
stack grow_seed$s | 100 bytes (0.0%) in use 0 B / 0 obj, allocated 100 B / 1 obj | freed 1, temporary 1
stack shrink_fn$s | 50 bytes (0.0%) in use 50 B / 1 obj, allocated 50 B / 1 obj | reallocs 1, 0 bytes copied
EOF
}

# pt_nolines: a compact -f top without files and lines, frames by name.
pt_nolines() { sed -E 's/@[^;| ]*//g'; }

# pt_want FILE PATH: what PATH's compact -f top or html facts must be, given
# the reference's (FILE): the same, where PATH differs by design as it
# differs (--stack-capture kernel: no frames past __libc_start_call_main).
pt_want() {
	case $2 in
	kernel) sed -E 's/;__libc_start_main_impl@[^;| ]*;_start@[^;| ]*( )/\1/' "$1" ;;
	*) cat "$1" ;;
	esac
}

# The reference's -f html facts that t_paths.c fixes: the size histogram
# (log2 buckets: 50; 40 x 64 and 100; 2 x 500; 3 x 1000; 2000; 8 x 4096;
# 20000; 2 MiB) and each stack's bytes at the peak (peak_fn's malloc).
PATHS_SIZES="sizes 0 0 0 0 0 1 41 0 2 3 1 0 8 0 1 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
PATHS_ATPEAK="grow_fn 0
grow_seed 0
held_fn 0
keep_c 2000
leak_a 3000
leak_b 1000
peak_fn 2097152
shrink_fn 50
temp_fn 0"

# pt_ref_truth KEY: the reference (the ring, launched) against t_paths.c.
pt_ref_truth() {
	local key=$1 copied d
	copied=$(($(sed -n 's/^moved grow \([01]\)$/\1/p' "$TMP/$key.out" | head -1) * 100))
	d=$(diff <(pt_expect_ref "$copied") <(pt_nolines <"$TMP/$key.cmp"))
	report "paths: ring launched: -f top as t_paths.c makes it (6,050 bytes leaked in 7 blocks, 58 allocations, temporary 51, peak 2,103,202, 2 reallocs, 9 stacks, no loss)" "$d"
	d=$(grep -c '^stack [a-z_]*@tests/targets/t_paths.c:[0-9]*;work@tests/targets/t_paths.c:[0-9]*;main@tests/targets/t_paths.c:' "$TMP/$key.cmp")
	report "paths: ring launched: every stack has its frames' t_paths.c lines" "$([ "$d" = 9 ] || echo "$d of 9 stacks")"
	d=$(awk '$1 == "counter" && $2 != "allocs" && $2 != "frees" && $3 != 0' "$TMP/$key.h.facts")
	grep -qx 'counter allocs 58' "$TMP/$key.h.facts" || d+=$'\n'"no 'allocs 58': $(grep allocs "$TMP/$key.h.facts")"
	grep -qx 'counter frees 51' "$TMP/$key.h.facts" || d+=$'\n'"no 'frees 51': $(grep frees "$TMP/$key.h.facts")"
	grep -qx 'timeline max 2103202' "$TMP/$key.h.facts" || d+=$'\n'"the heap over time does not reach the peak: $(grep '^timeline' "$TMP/$key.h.facts")"
	grep -qx "$PATHS_SIZES" "$TMP/$key.h.facts" || d+=$'\n'"want $PATHS_SIZES"$'\n'"got  $(grep '^sizes' "$TMP/$key.h.facts")"
	d+=$(diff <(echo "$PATHS_ATPEAK") <(sed -n 's/^stack \([a-z_]*\)@.* peak_bytes=\([0-9]*\) .*/\1 \2/p' "$TMP/$key.h.facts"))
	report "paths: ring launched: -f html: allocs 58, frees 51, every loss 0, the sizes histogram, each stack's bytes at the peak, the peak in the heap over time" "$d"
	d=$(diff <(printf '%s\n' leak_a:3000 keep_c:2000 leak_b:1000 shrink_fn:50 |
		sed 's/^\(.*\):/_start;__libc_start_main_impl;__libc_start_call_main;main;work;\1 /' | sort) \
		<(sort "$TMP/$key.c.prof" 2>/dev/null))
	report "paths: ring launched: --collapsed: the four stacks that leak, 3000, 2000, 1000 and 50 bytes" "$d"
}

scenario_differential() {
	local path way key d want ref=pt_ring_launched t0=$SECONDS

	for path in $PATHS_PATHS; do
		for way in $PATHS_WAYS; do
			key=pt_${path}_$way
			# -f html every time; -f top launched, and every way on the ring.
			d=""
			if [ "$way" = launched ] || [ "$path" = ring ]; then
				pt_run "$key" "$path" "$way" top
				d=$PT_D
				pt_compact "$TMP/$key.prof" >"$TMP/$key.cmp"
			fi
			if [ "$way" = launched ]; then
				pt_run "$key.c" "$path" "$way" collapsed
				d+=${PT_D:+collapsed run: $PT_D}
			fi
			pt_run "$key.h" "$path" "$way" html
			d+=${PT_D:+html run: $PT_D}
			report "paths: $path $way: heaptrace exits 0, the target did its work, one profile of it" \
				"$d${d:+$(ctx "$key")}"
			want=$(pt_recorder_want "$path" "$way")
			d=$(pt_recorder "$key.h")
			report "paths: $path $way: recorded by the $want" "$([ "$d" = "$want" ] || echo "recorded by: $d")"
			pt_html "$TMP/$key.h.prof" >"$TMP/$key.h.facts"
			pt_facts_cmp "$TMP/$key.h.facts" >"$TMP/$key.h.fcmp"

			if [ "$key" = "$ref" ]; then
				pt_ref_truth "$key"
				cp "$TMP/$key.cmp" "$TMP/pt.ref.cmp"
				cp "$TMP/$key.h.fcmp" "$TMP/pt.ref.fcmp"
			else
				if [ -f "$TMP/$key.cmp" ]; then
					d=$(diff <(pt_want "$TMP/pt.ref.cmp" "$path") "$TMP/$key.cmp")
					if [ "$path" = sampled ]; then
						grep -q '^  sampled:   one allocation per 1 bytes on average' "$TMP/$key.prof" ||
							d+=$'\n'"no 'sampled: one allocation per 1 bytes' line"
					fi
					report "paths: $path $way: -f top equals the ring's launched$(pt_how "$path")" "$d"
				fi
				if [ -f "$TMP/$key.c.prof" ]; then
					d=$(diff <(pt_want_collapsed "$TMP/$ref.c.prof" "$path" | sort) <(sort "$TMP/$key.c.prof"))
					report "paths: $path $way: --collapsed equals the ring's launched$(pt_how "$path")" "$d"
				fi
				d=$(diff <(pt_want "$TMP/pt.ref.fcmp" "$path") "$TMP/$key.h.fcmp")
				report "paths: $path $way: -f html's stacks, live blocks, sizes, counters equal the ring's launched$(pt_how "$path")" "$d"
			fi
			if [ -f "$TMP/$key.cmp" ]; then
				report "paths: $path $way: -f top: each stack's lifetimes within the target's own timing of its blocks" \
					"$(pt_life_diag TOP "$TMP/$key.prof" "$TMP/$key.out")"
			fi
			report "paths: $path $way: -f html: the lifetimes within the target's own timing of its blocks" \
				"$(pt_life_diag HTML "$TMP/$key.h.prof" "$TMP/$key.h.out")"
			report "paths: $path $way: peak 2103202 at peak_fn's malloc, leak age as the target timed it" \
				"$(pt_html_diag "$TMP/$key.h.facts" "$TMP/$key.h.out")"
		done
	done
	echo "# paths: $((SECONDS - t0)) s"
}

# pt_want_collapsed FILE PATH: pt_want for --collapsed (outermost frame first).
pt_want_collapsed() {
	case $2 in
	kernel) sed -E 's/^_start;__libc_start_main_impl;//' "$1" ;;
	*) cat "$1" ;;
	esac
}

# pt_how PATH: how PATH's outputs differ from the ring's, by design.
pt_how() {
	case $1 in
	kernel) echo ", but its stacks end at __libc_start_call_main" ;;
	sampled) echo ", with the sampled header" ;;
	esac
}
