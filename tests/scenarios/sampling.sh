# shellcheck shell=bash
# Area "sampling" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario sample: --sample-rate.

# ---------------------------------------------------------------------------
# --sample-rate: t_sample's churn (see its source: ~234,000 allocations,
# 1.9 GB, six functions with their own size mixes, a quarter of each kept)
# traced exactly and sampled at R = 64 KiB.  The exact numbers are what the
# target prints.  Sampling is random (bpf_get_prandom_u32), so the
# tolerances are set from the estimators' variance, var = sum (1 - p)/p x
# s^2 for bytes (x 1 for objects), p = 1 - exp(-s/R), over the target's
# blocks: one standard deviation is about 0.6% of alloc_space, 0.9% of
# alloc_objects, 1.2% of inuse_space and 1.8% of inuse_objects, so the
# limits of the issue (5% allocated, 10% in use, 5 points of share) are 5
# deviations or more: a check fails by chance less than once in a million.
SAMPLE_FNS="s_small s_fixed s_medium s_large s_grow s_huge"
scenario_sample() {
	if [ ! -x "$TB/t_sample" ]; then
		fail "sample: $TB/t_sample not built (make test-targets)" ""
		return
	fi
	# The truth: the target's own counts (it is deterministic).
	"$TB/t_sample" >"$TMP/sample.truth" 2>&1
	[ "$(grep -c ' allocs ' "$TMP/sample.truth")" = 6 ] ||
		fail "sample: t_sample prints its six functions' counts" "$(head -5 "$TMP/sample.truth")"
	sample_exact
	# On the fast path (the default) unsampled calls never leave the process.
	# With --no-inject: uprobe sessions from kernel 6.13 on (6.12 has kprobe
	# sessions, not uprobe ones), with --follow-fork too (scenario
	# forksample: when they skip returns there).
	local kernel session="unsampled calls skip their return probe (uprobe sessions)"
	local plain="unsampled calls still take their return probe"
	kernel=$(uname -r | sed 's/[^0-9.].*//')
	printf '6.13\n%s\n' "$kernel" | sort -V -C || session=$plain
	[ -n "${HT_TEST_NO_INJECT:-}" ] || session="unsampled calls stay in the process (the fast path)"
	sample_estimates sample_s "sampled" "$session" --sample-rate 64K
	sample_estimates sample_f "sampled, --follow-fork" "$session" --follow-fork --sample-rate 64K
	sample_zero
	sample_readers
}

# sample_truth FN VALUE: FN's exact VALUE from the target's own line.
sample_truth() {
	awk -v fn="$1" -v v="$2" '$1 == fn {
		print (v == "alloc_objects" ? $3 : v == "alloc_space" ? $5 : v == "inuse_objects" ? $7 : $9) }' \
		"$TMP/sample.truth"
}

sample_truth_total() {
	local fn t=0
	for fn in $SAMPLE_FNS; do t=$((t + $(sample_truth "$fn" "$1"))); done
	echo "$t"
}

# Exact mode: every function's four counters exactly as the target counts.
sample_exact() {
	local fn v args
	profile4x sample_x 0 -- "$TB/t_sample"
	for fn in $SAMPLE_FNS; do
		args=()
		for v in $VALUES; do args+=("$(sample_truth "$fn" "$v")"); done
		expect4 sample_x "$fn" "${args[@]}"
	done
	leafset4 sample_x
	expect_events sample_x.alloc_objects allocs=234200 frees=$((234200 - 53550)) unmatched_frees=0 missed_frees=0
}

# sample_estimates KEY NAME HOW HEAPTRACE-OPTION...: the four collapsed
# runs with those options, against the truth: totals within 5% (allocated)
# and 10% (in use), each function's share of alloc_objects, alloc_space and
# inuse_space within 5 points.  HOW: what -v says of return probes.
sample_estimates() {
	local key=$1 name=$2 how=$3 v fn d got want lim
	shift 3
	profile4x "$key" 0 "$@" -- "$TB/t_sample"
	d=""
	grep -qF "heaptrace: sampling one allocation per 65536 bytes on average; $how" "$TMP/$key.alloc_objects.err" ||
		d="-v says: $(grep -i 'sampling\|uprobe' "$TMP/$key.alloc_objects.err" | head -5)"
	report "sample: $name: -v says '$how'" "$d"
	for v in $VALUES; do
		d=""
		got=$(awk 'match($0, / [0-9]+$/) { s += substr($0, RSTART + 1) } END { printf "%.0f\n", s }' "$TMP/$key.$v.out")
		want=$(sample_truth_total "$v")
		case $v in alloc_*) lim=5 ;; *) lim=10 ;; esac
		awk -v g="$got" -v w="$want" -v l="$lim" 'BEGIN { exit !(w > 0 && (g - w) / w * 100 <= l && (w - g) / w * 100 <= l) }' ||
			d="estimate $got, exact $want ($(awk -v g="$got" -v w="$want" 'BEGIN { printf "%+.2f%%", (g / w - 1) * 100 }'))"
		report "sample: $name: total $v within $lim% of exact $want (got $got)" "$d"
		[ "$v" = inuse_objects ] && continue
		d=""
		for fn in $SAMPLE_FNS; do
			local g w
			g=$(leafval "$key.$v" "$fn")
			w=$(sample_truth "$fn" "$v")
			d+=$(awk -v fn="$fn" -v g="$g" -v G="$got" -v w="$w" -v W="$want" 'BEGIN {
				sg = 100 * g / G; sw = 100 * w / W
				if (sg - sw > 5 || sw - sg > 5) printf "%s: share %.2f%%, exact %.2f%%\n", fn, sg, sw }')
		done
		report "sample: $name: each function's share of $v within 5 points of exact" "$d"
	done
	# Nothing but the six functions; no losses; the event counters count the sampled allocations.
	leafset "$key.alloc_space" $SAMPLE_FNS
	no_loss_line "$key.alloc_space"
	local allocs
	allocs=$(grep -m1 '^heaptrace: events:' "$TMP/$key.alloc_objects.err" | tr ' ' '\n' | sed -n 's/^allocs=//p')
	d=""
	# sum (1 - exp(-s/R)) over the target's allocations: 19872, sd 121.
	{ [ "${allocs:-0}" -ge 19270 ] && [ "${allocs:-0}" -le 20480 ]; } ||
		d="allocs=${allocs:-<missing>}, want 19872 +- 600 sampled allocations"
	report "sample: $name: -v events count the sampled allocations (19872 +- 600)" "$d"
}

# --sample-rate 0 is exact mode: the pprof header holds the exact totals.
sample_zero() {
	ht sample_0 --sample-rate 0 -o "$TMP/sample_0.prof" -- "$TB/t_sample"
	check_rc sample_0 0 "sample: --sample-rate 0 run exits 0"
	pprof_header "$TMP/sample_0.prof" "sample: --sample-rate 0 is exact" \
		"$(sample_truth_total inuse_objects)" "$(sample_truth_total inuse_space)" \
		"$(sample_truth_total alloc_objects)" "$(sample_truth_total alloc_space)"
}

# sample_flat KEY FN: FN's flat value in a go tool pprof / google-pprof text report.
sample_flat() {
	pprof_rows "$1" | awk -v fn="$2" '$NF == fn { v = $1; gsub(/[^0-9.]/, "", v); print v; exit }'
}

# The heap_v2 profile, read by go tool pprof and google-pprof.  One traced
# run serves, while the target waits at its end, the legacy text
# (/debug/pprof/heap?debug=1: raw sampled counts, @ heap_v2/65536) and the
# protobuf (heaptrace's own estimates), and then writes -f collapsed
# alloc_space: all three of the same state.  The readers unsample each
# record by its average size: their totals must be what the raw records
# predict, google-pprof and go must agree, and their per-function values
# must be heaptrace's estimates, to 2% for bytes; for objects the average
# size stands for every block only where a stack has one size (s_fixed,
# s_grow, s_huge): s_small's 1-4 KiB blocks weigh R/s each, and the
# average underestimates their sum of 1/s by about 15%.
sample_readers() {
	local key=sample_h fifo=$TMP/sample_h.fifo port hp v fn d opt g p c
	mkfifo "$fifo"
	ht_bg $key -v --sample-rate 64K --http 127.0.0.1:0 -f collapsed --value alloc_space \
		-o "$TMP/$key.collapsed" -- "$TB/t_sample" "$fifo"
	hp=$HPID
	if ! wait_for "$TMP/$key.tout" '^ready$' 60 "$hp"; then
		fail "sample: heap_v2: the traced t_sample gets to its end" "$(ctx $key)"$'\n'"$(tail -3 "$TMP/$key.tout")"
		kill_tree "$hp"
		return
	fi
	port=$(sed -n 's|^heaptrace: serving .* on http://127\.0\.0\.1:\([0-9]*\)/$|\1|p' "$TMP/$key.err")
	curl -s --max-time 30 -o "$TMP/$key.heap" "http://127.0.0.1:${port:-0}/debug/pprof/heap?debug=1"
	curl -s --max-time 30 -o "$TMP/$key.pb.gz" "http://127.0.0.1:${port:-0}/debug/pprof/heap"
	release $key
	ht_bg_wait $key "$hp" 60
	d=$(rc_diag $key 0)
	grep -qE '^heap profile: +[0-9]+: +[0-9]+ \[ *[0-9]+: +[0-9]+\] @ heap_v2/65536$' "$TMP/$key.heap" ||
		d+="first line of /debug/pprof/heap?debug=1: $(head -1 "$TMP/$key.heap")"$'\n'
	[ -s "$TMP/$key.collapsed" ] || d+="no collapsed profile"$'\n'
	report "sample: heap_v2: one run serves the heap_v2 text and the protobuf, and writes collapsed" "$d"

	# What every reader of heap_v2 computes from the raw records (go's scaleHeapSample).
	awk '/^MAPPED_LIBRARIES:/ { exit }
	NR > 1 && /@/ {
		gsub(/[\[\]:]/, " ")
		n[1] = $3; s[1] = $4; n[2] = $1; s[2] = $2
		for (k = 1; k <= 2; k++) if (n[k] > 0 && s[k] > 0) {
			sc = 1 / (1 - exp(-(s[k] / n[k]) / 65536))
			o[k] += int(n[k] * sc); b[k] += int(s[k] * sc)
		}
	}
	END { printf "alloc_objects %.0f\nalloc_space %.0f\ninuse_objects %.0f\ninuse_space %.0f\n", o[1], b[1], o[2], b[2] }' \
		"$TMP/$key.heap" >"$TMP/$key.predicted"
	for v in $VALUES; do
		pprof_tool "$key.go.$v" go -top -nodefraction=0 -unit=B -sample_index=$v "$TB/t_sample" "$TMP/$key.heap"
		case $v in *_space) opt=(--show_bytes "--$v") ;; *) opt=("--$v") ;; esac
		pprof_tool "$key.g.$v" perl --text "${opt[@]}" "$TB/t_sample" "$TMP/$key.heap"
		pprof_tool "$key.pb.$v" go -top -nodefraction=0 -unit=B -sample_index=$v "$TMP/$key.pb.gz"
		d=$(rc_diag "$key.go.$v" 0)$(rc_diag "$key.g.$v" 0)$(rc_diag "$key.pb.$v" 0)
		g=$(sed -n 's/.* of \([0-9]*\)B* total.*/\1/p' "$TMP/$key.go.$v.out" | head -1)
		p=$(awk -v v=$v '$1 == v { print $2 }' "$TMP/$key.predicted")
		awk -v g="${g:-0}" -v p="${p:-0}" 'BEGIN { exit !(p > 0 && (g - p) / p < 1e-6 && (p - g) / p < 1e-6) }' ||
			d+="go tool pprof's total ${g:-<none>}, predicted from the raw records ${p:-<none>}"$'\n'
		for fn in $SAMPLE_FNS; do
			local gv pv cv
			gv=$(sample_flat "$key.go.$v" "$fn")
			pv=$(sample_flat "$key.g.$v" "$fn")
			cv=$(sample_flat "$key.pb.$v" "$fn")
			awk -v a="${gv:-0}" -v b="${pv:-0}" 'BEGIN { exit !(a > 0 && b - a <= 1 + a * 1e-5 && a - b <= 1 + a * 1e-5) }' ||
				d+="$fn: google-pprof ${pv:-<none>}, go tool pprof ${gv:-<none>}"$'\n'
			case "$v:$fn" in
			*_space:* | *_objects:s_fixed | *_objects:s_grow | *_objects:s_huge) ;;
			*) continue ;;
			esac
			awk -v a="${gv:-0}" -v c="${cv:-0}" 'BEGIN { exit !(c > 0 && (a - c) / c <= 0.02 && (c - a) / c <= 0.02) }' ||
				d+="$fn: go tool pprof on heap_v2 ${gv:-<none>}, heaptrace's estimate ${cv:-<none>}"$'\n'
		done
		report "sample: heap_v2 $v: go tool pprof = prediction, google-pprof = go, both = heaptrace's estimates (2%)" "$d"
	done
	# The protobuf holds the estimates -f collapsed writes.
	d=""
	cp "$TMP/$key.collapsed" "$TMP/$key.out"
	for fn in $SAMPLE_FNS; do
		c=$(leafval $key "$fn")
		v=$(sample_flat "$key.pb.alloc_space" "$fn")
		[ "$c" = "$v" ] || d+="$fn: collapsed $c, protobuf $v"$'\n'
	done
	report "sample: the protobuf's alloc_space per function = the collapsed output's" "$d"
}

# ---------------------------------------------------------------------------
# t_stale (see its source): a custom allocator's unsampled call returns, and
# a deeper call of it comes while the dead call's return address is still
# in its stack slot.  Before issue 20's fix, uprobe sessions took that for
# a call nested in the skipped one and dropped it: big_site's 1000 calls,
# which any rate samples (2^40 bytes each: weight 1), counted 0, as
# PostgreSQL's palloc lost 40-50% of its calls.  Exact, sampled, and
# sampled under --follow-fork (its own way to sessions): big_site 1000
# objects, 1000 x 2^40 bytes; small_site's 0-byte calls are never sampled,
# even at --sample-rate 1, whose countdown is 0 at 63% of its draws (the
# stub sampled 639 of them so before it took bpf/sample.h's rule).
scenario_stale() {
	local key m opts
	for m in exact sampled rate1 followfork; do
		case $m in
		exact) opts=() ;;
		sampled) opts=(--sample-rate 64K) ;;
		rate1) opts=(--sample-rate 1) ;;
		followfork) opts=(--sample-rate 64K --follow-fork) ;;
		esac
		key=stale.$m
		ht $key.o "${opts[@]}" --sym 'ctx_alloc:size=arg2' -f collapsed --value alloc_objects -- "$TB/t_stale"
		check_rc $key.o 0 "stale: $m (${opts[*]:-no options}) --sym ctx_alloc over t_stale exits 0"
		expect_leaf $key.o big_site 1000
		ht $key.b "${opts[@]}" --sym 'ctx_alloc:size=arg2' -f collapsed --value alloc_space -- "$TB/t_stale"
		expect_leaf $key.b big_site $((1000 << 40))
		if [ $m = exact ]; then
			expect_leaf $key.o small_site 1000
			leafset $key.o big_site small_site
		else
			leafset $key.o big_site
		fi
	done
	# Which returns a session skips: ctx_alloc makes no call (a leaf: only
	# when sampled); deep calls big_site, so may reach a traced function.
	# Uprobe sessions: --no-inject (the stub takes these functions otherwise).
	ht stale.leaf -v --no-inject --no-libc --sym 'ctx_alloc:size=arg2' --sym 'deep:size=1' --sample-rate 64K \
		-o "$TMP/stale.leaf.prof" -- "$TB/t_stale"
	local d="" leaf="(a session: the return only when sampled)" calls="(a session: the return always, since it may call traced functions)"
	# Before Linux 6.13 no uprobe sessions: every call takes its return probe.
	printf '6.13\n%s\n' "$(uname -r | sed 's/[^0-9.].*//')" | sort -V -C || { leaf="(and its return)"; calls=$leaf; }
	grep -qF "$leaf" <<<"$(grep '^heaptrace: probe ctx_alloc ' "$TMP/stale.leaf.err")" ||
		d+="ctx_alloc: $(grep '^heaptrace: probe ctx_alloc' "$TMP/stale.leaf.err")"$'\n'
	grep -qF "$calls" <<<"$(grep '^heaptrace: probe deep ' "$TMP/stale.leaf.err")" ||
		d+="deep: $(grep '^heaptrace: probe deep' "$TMP/stale.leaf.err")"$'\n'
	report "stale: -v: ctx_alloc (no call) skips unsampled returns, deep (calls big_site) keeps them (where uprobe sessions exist)" "$d"
}
