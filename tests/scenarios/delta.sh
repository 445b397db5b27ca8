# shellcheck shell=bash
# Area "delta" of tests/run.sh (sourced by it; helpers in tests/lib.sh and
# tests/scenarios/http.sh): /debug/pprof/allocs?seconds=N and heap?seconds=N,
# the change over the next N seconds (docs/output-formats.md, "Delta
# profiles"), read back with go tool pprof -raw.  t_leaker allocates only
# in the steps the test sends it, so each window's counts are exact.

# delta_raw KEY PROFILE: go tool pprof -raw of PROFILE into KEY.raw; its
# sample lines' first four values (alloc_objects alloc_space inuse_objects
# inuse_space; the realloc types follow), sorted, into KEY.samples.
delta_raw() {
	local key=$1
	mkdir -p "$TMP/go/home" "$TMP/go/cache" "$TMP/go/path" "$TMP/pprof-tmp"
	env HOME="$TMP/go/home" GOCACHE="$TMP/go/cache" GOPATH="$TMP/go/path" \
		GOTOOLCHAIN=local GOPROXY=off GOFLAGS= PPROF_TMPDIR="$TMP/pprof-tmp" \
		timeout -k 5 "$(tmo)" go tool pprof -raw "$2" >"$TMP/$key.raw" 2>"$TMP/$key.rawerr" </dev/null
	awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && /:/ { sub(/:.*/, ""); print $1, $2, $3, $4 }' \
		"$TMP/$key.raw" | sort >"$TMP/$key.samples"
}

# delta_window KEY URL STEPS: GET URL (a delta of 4 s) in the background; once
# its window has begun, STEPS leak steps of t_leaker.  Sets DELTA_DIAG.
delta_window() {
	local key=$1 url=$2 steps=$3 i code
	DELTA_DIAG=""
	curl -s --max-time 15 -o "$TMP/$key.pb" -w '%{http_code} %{time_total}\n' "$url" >"$TMP/$key.res" &
	local cp=$!
	# The window has begun once the client's slot is taken (a second delta
	# is refused) and a plain profile queued after it is answered (one
	# queue, in order: the delta's first profile was taken before it).
	sleep 0.5
	for i in $(seq 50); do
		code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "${url%%\?*}?seconds=1")
		[ "$code" = 429 ] && break
		sleep 0.1
	done
	[ "$code" = 429 ] || DELTA_DIAG+="a second delta from the same client: status $code, want 429"$'\n'
	code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code} %{time_total}' "${url%%\?*}?debug=1")
	case $code in
	"200 0."* | "200 1."*) ;;
	*) DELTA_DIAG+="a plain profile during the window: '$code', want 200 within 2 s"$'\n' ;;
	esac
	for i in $(seq "$steps"); do
		http_send "$TMP/delta.fifo" leak
	done
	wait "$cp"
	read -r code _ <"$TMP/$key.res"
	[ "$code" = 200 ] || DELTA_DIAG+="the delta: status $code, want 200"$'\n'
}

scenario_delta() {
	local key=delta url d code body q
	if ! command -v go >/dev/null; then
		fail "delta: go tool pprof (golang-go, scripts/deps.sh) is not installed" ""
		return
	fi
	http_attach $key 1 --http 127.0.0.1:0 || return
	url=http://127.0.0.1:$HTTP_PORT/debug/pprof

	d=""
	for q in "allocs?seconds=0" "allocs?seconds=abc" "heap?seconds=-1" "heap?seconds=2x" "allocs?seconds=301" \
		"heap?seconds=2&debug=1"; do
		body=$(curl -s --max-time 5 -w ' %{http_code}' "$url/$q")
		case $q in
		*301) want='"seconds" exceeds heaptrace'"'"'s limit of 300 400' ;;
		*debug=1) want='seconds and debug params are incompatible 400' ;;
		*) want='invalid value for "seconds": must be a positive integer 400' ;;
		esac
		[ "$(echo $body)" = "$want" ] || d+="$q: '$(echo $body)', want '$want'"$'\n'
	done
	report "delta: seconds=0, abc, -1, 2x, 301, and with debug=1: 400 and a one-line reason" "$d"

	# Step 1 was before the window: allocs?seconds=4 holds steps 2 and 3 only.
	delta_window delta_a "$url/allocs?seconds=4" 2
	delta_raw delta_a "$TMP/delta_a.pb"
	d=$DELTA_DIAG
	printf '4 3108 0 0\n6 74070 6 74070\n' >"$TMP/delta_a.want"
	cmp -s "$TMP/delta_a.samples" "$TMP/delta_a.want" ||
		d+="samples: $(tr '\n' ';' <"$TMP/delta_a.samples") want 4 3108 0 0 (churn_fn); 6 74070 6 74070 (leak_fn)"$'\n'
	grep -q '^alloc_objects/count alloc_space/bytes\[dflt\] inuse_objects/count inuse_space/bytes' \
		"$TMP/delta_a.raw" || d+="no sample types line with alloc_space the default: $(grep -m1 / "$TMP/delta_a.raw")"$'\n'
	grep -qE '^Duration: 4\.0[0-9]' "$TMP/delta_a.raw" || d+="$(grep -m1 Duration "$TMP/delta_a.raw"), want 4.0x"$'\n'
	grep -q ' leak_fn ' "$TMP/delta_a.raw" || d+="leak_fn not among the locations"$'\n'
	report "delta: allocs?seconds=4 over 2 leak steps (go tool pprof -raw): leak_fn 6 objects 74070 B, churn 4 x 777 B" "$d"

	# heap?seconds=4 over one step: the in-use change is leak_fn's alone.
	delta_window delta_h "$url/heap?seconds=4" 1
	delta_raw delta_h "$TMP/delta_h.pb"
	d=$DELTA_DIAG
	printf '2 1554 0 0\n3 37035 3 37035\n' >"$TMP/delta_h.want"
	cmp -s "$TMP/delta_h.samples" "$TMP/delta_h.want" ||
		d+="samples: $(tr '\n' ';' <"$TMP/delta_h.samples") want 2 1554 0 0; 3 37035 3 37035"$'\n'
	grep -q 'inuse_space/bytes\[dflt\]' "$TMP/delta_h.raw" || d+="inuse_space is not the default sample type"$'\n'
	report "delta: heap?seconds=4 over 1 leak step: leak_fn +3 objects +37035 B in use, churn 2 x 777 B allocated and freed" "$d"

	# The window after: nothing happened, nothing to show.
	code=$(curl -s --max-time 10 -o "$TMP/delta_e.pb" -w '%{http_code}' "$url/allocs?seconds=1")
	delta_raw delta_e "$TMP/delta_e.pb"
	d=""
	[ "$code" = 200 ] || d+="status $code, want 200"$'\n'
	[ -s "$TMP/delta_e.samples" ] && d+="samples: $(tr '\n' ';' <"$TMP/delta_e.samples")"$'\n'
	grep -q '^Samples:' "$TMP/delta_e.raw" || d+="not a profile: $(head -3 "$TMP/delta_e.raw")"$'\n'
	report "delta: allocs?seconds=1 without a step: 200, a profile without samples" "$d"

	body=$(curl -s --max-time 5 "http://127.0.0.1:$HTTP_PORT/metrics" | grep -c '^heaptrace_')
	report "delta: /metrics still answers" "$([ "${body:-0}" -gt 0 ] || echo "no heaptrace_ metric")"

	# heaptrace stopping in a window: the client hears so at once.
	curl -s --max-time 15 -w ' %{http_code}' "$url/allocs?seconds=60" >"$TMP/delta_s.res" &
	local cp=$!
	sleep 1
	http_detach $key
	wait "$cp"
	d=$HTTP_DIAG
	[ "$(echo $(cat "$TMP/delta_s.res"))" = "heaptrace is stopping 503" ] ||
		d+="the waiting delta got '$(cat "$TMP/delta_s.res")', want 'heaptrace is stopping' 503"$'\n'
	report "delta: SIGINT during a 60 s window: heaptrace exits 0, the delta gets 503 at once" "$d"
}
