# shellcheck shell=bash
# Area "formats" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# the output formats: scenarios pprof, top and proto (-f proto, --http).

# google-pprof --text [OPT] BINARY PROF, as KEY.
gpprof() {
	local key=$1 opt=$2 prof=$3 args=(--text)
	[ -n "$opt" ] && args+=("$opt")
	echo "google-pprof ${args[*]} build/tests/t_pprof $(rel "$prof")" >"$TMP/$key.cmd"
	if ! command -v google-pprof >/dev/null; then
		echo "google-pprof not installed" >"$TMP/$key.err"; : >"$TMP/$key.out"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	PPROF_TMPDIR=$TMP/pprof-tmp timeout -k 5 "$(tmo)" \
		google-pprof "${args[@]}" "$TB/t_pprof" "$prof" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
}

# go tool pprof -top [OPT] BINARY PROF, as KEY; never touches the network.
gopprof() {
	local key=$1 opt=$2 prof=$3 args=(-top)
	[ -n "$opt" ] && args+=("$opt")
	echo "go tool pprof ${args[*]} build/tests/t_pprof $(rel "$prof")" >"$TMP/$key.cmd"
	if ! command -v go >/dev/null; then
		echo "go not installed" >"$TMP/$key.err"; : >"$TMP/$key.out"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	mkdir -p "$TMP/go/home" "$TMP/go/cache" "$TMP/go/path" "$TMP/pprof-tmp"
	env HOME="$TMP/go/home" GOCACHE="$TMP/go/cache" GOPATH="$TMP/go/path" \
		GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
		PPROF_TMPDIR="$TMP/pprof-tmp" \
		timeout -k 5 "$(tmo)" go tool pprof "${args[@]}" "$TB/t_pprof" "$prof" \
		>"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
}

# order_diag FILE FIRST SECOND: a diagnostic unless FIRST is listed before SECOND.
order_diag() {
	local a b
	a=$(grep -nw "$2" "$1" | head -1 | cut -d: -f1)
	b=$(grep -nw "$3" "$1" | head -1 | cut -d: -f1)
	if [ -z "$a" ] || [ -z "$b" ] || [ "$a" -ge "$b" ]; then
		echo "$2 (line ${a:-none}) is not listed before $3 (line ${b:-none})"
	fi
}

# ---------------------------------------------------------------------------
# pprof output of t_pprof read by google-pprof and go tool pprof.
#   big_keeper 4 x 262144 kept, mid_keeper 3 x 10000 kept,
#   churn 10 x 5000 freed.
#   in use: 7 objects, 1048576 + 30000 = 1078576 bytes
#   allocated: 17 objects, 1078576 + 50000 = 1128576 bytes
scenario_pprof() {
	ht pprof -- "$TB/t_pprof"
	check_rc pprof 0 "pprof: default format run exits 0"
	no_loss_line pprof
	local prof=$TMP/pprof.out
	pprof_header "$prof" "pprof: header totals" 7 1078576 17 1128576
	# One record per stack: "inuse objs: inuse bytes [alloc objs: alloc bytes] @ pcs"
	local d=""
	pprof_has_record "$prof" 4 1048576 4 1048576 || d+="no record 4: 1048576 [4: 1048576] (big_keeper)"$'\n'
	pprof_has_record "$prof" 3 30000 3 30000 || d+="no record 3: 30000 [3: 30000] (mid_keeper)"$'\n'
	pprof_has_record "$prof" 0 0 10 50000 || d+="no record 0: 0 [10: 50000] (churn)"$'\n'
	grep -q '^MAPPED_LIBRARIES:' "$prof" || d+="no MAPPED_LIBRARIES: section"$'\n'
	grep -q "$TB/t_pprof\$" "$prof" || d+="no mapping of $TB/t_pprof"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,12p' "$prof" | sed 's/^/profile: /')
	report "pprof: per-stack records and MAPPED_LIBRARIES" "$d"

	# google-pprof --text: flat column of the function's row.
	gpprof pprof_g_is "" "$prof"
	first_func_is pprof_g_is big_keeper "google-pprof --text: big_keeper has the largest inuse space"
	gpprof pprof_g_io --inuse_objects "$prof"
	flat_is pprof_g_io big_keeper 4 "google-pprof --text --inuse_objects: big_keeper 4"
	flat_is pprof_g_io mid_keeper 3 "google-pprof --text --inuse_objects: mid_keeper 3"
	gpprof pprof_g_ao --alloc_objects "$prof"
	flat_is pprof_g_ao churn 10 "google-pprof --text --alloc_objects: churn 10"

	gopprof pprof_go_is "" "$prof"
	first_func_is pprof_go_is big_keeper "go tool pprof -top: big_keeper has the largest inuse space"
	gopprof pprof_go_io -sample_index=inuse_objects "$prof"
	flat_is pprof_go_io big_keeper 4 "go tool pprof -top -sample_index=inuse_objects: big_keeper 4"
	flat_is pprof_go_io mid_keeper 3 "go tool pprof -top -sample_index=inuse_objects: mid_keeper 3"
	gopprof pprof_go_ao -sample_index=alloc_objects "$prof"
	flat_is pprof_go_ao churn 10 "go tool pprof -top -sample_index=alloc_objects: churn 10"
}

# ---------------------------------------------------------------------------
# -f top: function names and file:line of the allocation call sites.
scenario_top() {
	local src=tests/targets/t_pprof.c big mid ch d
	big=$(site_line "$src" big_keeper)
	mid=$(site_line "$src" mid_keeper)
	ch=$(site_line "$src" churn)

	ht top -f top -- "$TB/t_pprof"
	check_rc top 0 "top: -f top run exits 0"
	d=""
	grep -qw big_keeper "$TMP/top.out" || d+="no big_keeper"$'\n'
	grep -qw mid_keeper "$TMP/top.out" || d+="no mid_keeper"$'\n'
	grep -qE "t_pprof\.c:$big([^0-9]|\$)" "$TMP/top.out" || d+="no t_pprof.c:$big (big_keeper's malloc)"$'\n'
	grep -qE "t_pprof\.c:$mid([^0-9]|\$)" "$TMP/top.out" || d+="no t_pprof.c:$mid (mid_keeper's malloc)"$'\n'
	# Totals: in use 1078576 bytes, allocated 1128576 (digits may be grouped).
	grep -qE '(^|[^0-9,.])1[,.]?078[,.]?576([^0-9,.]|$)' "$TMP/top.out" || d+="no in-use total 1078576"$'\n'
	grep -qE '(^|[^0-9,.])1[,.]?128[,.]?576([^0-9,.]|$)' "$TMP/top.out" || d+="no allocated total 1128576"$'\n'
	# Ranked by in-use space (the default value): big_keeper first.
	d+=$(order_diag "$TMP/top.out" big_keeper mid_keeper)
	[ -n "$d" ] && d+=$(sed -n '1,25p' "$TMP/top.out" | sed 's/^/top: /')
	report "top: totals, big_keeper and mid_keeper with file:line, big_keeper first" "$d"

	ht top_ao -f top --value alloc_objects -- "$TB/t_pprof"
	check_rc top_ao 0 "top: -f top --value alloc_objects run exits 0"
	d=""
	grep -qw churn "$TMP/top_ao.out" || d+="no churn"$'\n'
	grep -qE "t_pprof\.c:$ch([^0-9]|\$)" "$TMP/top_ao.out" || d+="no t_pprof.c:$ch (churn's malloc)"$'\n'
	# alloc_objects: churn 10 > big_keeper 4
	d+=$(order_diag "$TMP/top_ao.out" churn big_keeper)
	[ -n "$d" ] && d+=$(sed -n '1,25p' "$TMP/top_ao.out" | sed 's/^/top: /')
	report "top: --value alloc_objects names churn with file:line, ranked first" "$d"

	# A process that holds nothing at the end (a server between requests):
	# top ranks what was allocated and says so, rather than "no stack has any".
	cat >"$TMP/churnall.c" <<'EOC'
#include <stdlib.h>
void *volatile p;
__attribute__((noinline)) void churn_fn(void) { for (int i = 0; i < 10; i++) { p = malloc(100); free(p); } }
__attribute__((noinline)) void rare_fn(void) { for (int i = 0; i < 3; i++) { p = malloc(1000); free(p); } }
int main(void) { churn_fn(); rare_fn(); return 0; }
EOC
	if ! gcc -O0 -g -fno-omit-frame-pointer -fno-inline "$TMP/churnall.c" -o "$TMP/churnall" 2>"$TMP/churnall.cc"; then
		fail "top: build the all-freed target" "$(cat "$TMP/churnall.cc")"
		return
	fi
	ht top_free -f top -- "$TMP/churnall"
	d=$(rc_diag top_free 0)
	head -1 "$TMP/top_free.out" | grep -q 'stacks by alloc_space (nothing is in use at the end, so no inuse_space)$' ||
		d+="header: $(head -1 "$TMP/top_free.out")"$'\n'
	grep -q '^#1 *3,000 bytes .*allocated 3,000 B / 3 obj' "$TMP/top_free.out" ||
		d+="#1 is not rare_fn's 3,000 B / 3: $(grep '^#1' "$TMP/top_free.out")"$'\n'
	grep -q '^#2 *1,000 bytes .*allocated 1,000 B / 10 obj' "$TMP/top_free.out" ||
		d+="#2 is not churn_fn's 1,000 B / 10: $(grep '^#2' "$TMP/top_free.out")"$'\n'
	d+=$(order_diag "$TMP/top_free.out" rare_fn churn_fn)
	grep -q 'no stack has any' "$TMP/top_free.out" && d+="still says 'no stack has any'"$'\n'
	report "top: nothing in use at the end -> stacks by alloc_space, said in the header (rare_fn 3,000 B, churn_fn 1,000 B)" "$d"
}

# ---------------------------------------------------------------------------
# -f proto: the gzipped profile.proto heaptrace writes itself, read by
# go tool pprof with no binary at hand; --http: /debug/pprof/{,heap,allocs}
# and /metrics while tracing a t_leaker (-p), fetched by curl and by
# go tool pprof; bad --http values.
scenario_proto() {
	proto_file
	proto_http
	proto_badaddr
}

# proto_go KEY DIR ARG...: "go tool pprof ARG..." run in DIR as KEY, where no
# binary can be found: HOME, PPROF_BINARY_PATH (empty) and the temp dirs are
# empty scratch places.
proto_go() {
	local key=$1 dir=$2
	shift 2
	echo "go tool pprof $(rel "$*")" >"$TMP/$key.cmd"
	if ! command -v go >/dev/null; then
		echo "go not installed" >"$TMP/$key.err"
		: >"$TMP/$key.out"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	mkdir -p "$TMP/proto.go/home" "$TMP/proto.go/cache" "$TMP/proto.go/path" "$TMP/proto.go/tmp"
	(cd "$dir" && env HOME="$TMP/proto.go/home" GOCACHE="$TMP/proto.go/cache" GOPATH="$TMP/proto.go/path" \
		GOTOOLCHAIN=local GOPROXY=off GOFLAGS= PPROF_TMPDIR="$TMP/proto.go/tmp" PPROF_BINARY_PATH= \
		timeout -k 5 "$(tmo)" go tool pprof "$@") >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
}

# proto_raw_sums KEY: from "go tool pprof -raw" output, one line
# "FN V1 V2 V3 V4" per innermost function (the first line of a sample's
# first location) with the sample values summed, sorted.
proto_raw_sums() {
	awk '
	/^Samples:/ { sec = "s"; next }
	/^Locations/ { sec = "l"; next }
	/^Mappings/ { sec = "m"; next }
	sec == "s" && /^ *[0-9]+( +[0-9]+)*: *[0-9]/ {
		i = index($0, ":")
		nv = split(substr($0, 1, i - 1), v, " ")
		split(substr($0, i + 1), ids, " ")
		n++; leaf[n] = ids[1]; cnt[n] = nv
		for (j = 1; j <= nv; j++) val[n, j] = v[j]
	}
	sec == "l" && /^ *[0-9]+: 0x/ {
		id = $1; sub(/:$/, "", id)
		fn[id] = ($3 ~ /^M=/) ? $4 : $3
	}
	END {
		for (k = 1; k <= n; k++) {
			f = fn[leaf[k]]; nvf[f] = cnt[k]
			for (j = 1; j <= cnt[k]; j++) sum[f, j] += val[k, j]
		}
		for (f in nvf) {
			s = f
			# the four Go sample types; realloc_* (5, 6) are checked by scenario realloc
			for (j = 1; j <= nvf[f] && j <= 4; j++) s = s " " sprintf("%.0f", sum[f, j])
			print s
		}
	}' "$TMP/$1.out" 2>/dev/null | LC_ALL=C sort
}

# proto_expect_sums KEY NAME LINE...: proto_raw_sums KEY is exactly LINE...
proto_expect_sums() {
	local key=$1 name=$2 got want
	shift 2
	got=$(proto_raw_sums "$key")
	want=$(printf '%s\n' "$@" | LC_ALL=C sort)
	if [ "$got" = "$want" ]; then
		pass "$name"
	else
		fail "$name" "want (fn alloc_objects alloc_space inuse_objects inuse_space):"$'\n'"$want"$'\n'"got:"$'\n'"$got"$'\n'"$(ctx "$key")"$'\n'"$(sed -n '/^Samples/,/^Mappings/p' "$TMP/$key.out" | head -20)"
	fi
}

# proto_decode FILE: a few fields of a gzipped profile.proto, decoded from the
# wire format: "string0=[...]", "time=SECONDS", "duration_ns=N" and one
# "function NAME|SYSTEM_NAME|FILENAME" per Function message; "malformed" if
# the message does not parse.
proto_decode() {
	gzip -dc "$1" 2>/dev/null | od -An -v -tu1 | awk '
	function varint(   v, m, c) {
		v = 0; m = 1
		do { c = b[p++]; v += (c % 128) * m; m *= 128 } while (c >= 128 && p < n)
		return v
	}
	function skip(wt,   l) {
		if (wt == 0) varint()
		else if (wt == 1) p += 8
		else if (wt == 2) { l = varint(); p += l }
		else if (wt == 5) p += 4
		else bad = 1
	}
	{ for (i = 1; i <= NF; i++) b[n++] = $i + 0 }
	END {
		while (p < n && !bad) {
			key = varint(); f = int(key / 8); wt = key % 8
			if (wt == 2 && (f == 5 || f == 6)) {
				len = varint(); stop = p + len
				if (f == 6) {
					s = ""
					for (j = p; j < stop; j++) s = s sprintf("%c", b[j])
					str[ns++] = s
				} else {
					nf++
					while (p < stop && !bad) {
						k2 = varint(); f2 = int(k2 / 8); w2 = k2 % 8
						if (w2 == 0 && f2 >= 1 && f2 <= 5) fv[nf, f2] = varint(); else skip(w2)
					}
				}
				p = stop
			} else if (wt == 0 && (f == 9 || f == 10)) {
				tv[f] = varint()
			} else skip(wt)
		}
		if (bad || p != n || n == 0) { print "malformed"; exit }
		printf "string0=[%s]\n", str[0]
		printf "time=%.0f\n", int(tv[9] / 1e9)
		printf "duration_ns=%.0f\n", tv[10]
		for (i = 1; i <= nf; i++)
			printf "function %s|%s|%s\n", str[fv[i, 2] + 0], str[fv[i, 3] + 0], str[fv[i, 4] + 0]
	}'
}

# proto_gzip_diag FILE: a diagnostic unless FILE is gzip data.
proto_gzip_diag() {
	local magic
	magic=$(od -An -tx1 -N2 "$1" 2>/dev/null | tr -d ' \n')
	[ "$magic" = 1f8b ] || echo "starts with '${magic:-nothing}', not the gzip magic 1f 8b"
	gzip -t "$1" 2>/dev/null || echo "gzip -t rejects it"
}

# proto_buildid FILE: the GNU build ID of an ELF file.
proto_buildid() {
	readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'
}

# -f proto -o FILE of t_pprof, then read by go tool pprof after the binary
# is deleted.  t_pprof: big_keeper 4 x 262144 kept, mid_keeper 3 x 10000
# kept, churn 10 x 5000 freed (the numbers scenario_pprof checks in the text
# profile).
proto_file() {
	local src=tests/targets/t_pprof.c bin=$TMP/proto.bin view=$TMP/proto.view
	local big mid ch mch mmid mbig bid d line t0 t1 now dec fn
	big=$(site_line "$src" big_keeper)
	mid=$(site_line "$src" mid_keeper)
	ch=$(site_line "$src" churn)
	mch=$(grep -n '^	churn();' "$src" | head -1 | cut -d: -f1)
	mmid=$(grep -n '^	mid_keeper();' "$src" | head -1 | cut -d: -f1)
	mbig=$(grep -n '^	big_keeper();' "$src" | head -1 | cut -d: -f1)
	bid=$(proto_buildid "$TB/t_pprof")
	mkdir -p "$bin" "$view"
	cp "$TB/t_pprof" "$bin/t_pprof"

	t0=$(date +%s)
	ht proto -f proto -o "$TMP/proto.pb.gz" -- "$bin/t_pprof"
	t1=$(date +%s)
	check_rc proto 0 "proto: -f proto -o FILE run exits 0"
	d=$(proto_gzip_diag "$TMP/proto.pb.gz")
	report "proto: -f proto -o FILE is gzip data" "$d"
	ht proto_stdout -f proto -- "$TB/t_pprof"
	d=$(rc_diag proto_stdout 0)
	d+=$(proto_gzip_diag "$TMP/proto_stdout.out")
	report "proto: -f proto to standard output: exit 0, gzip data" "$d"

	# No binary at hand: the copy that ran is gone, pprof runs in a directory
	# holding only the profile, with an empty PPROF_BINARY_PATH and HOME.
	rm -rf "$bin"
	cp "$TMP/proto.pb.gz" "$view/heap.pb.gz"

	# The wire format itself: string_table[0] is "", time and duration set,
	# every function has a name and a system name (C: the same).
	dec=$(proto_decode "$TMP/proto.pb.gz")
	echo "$dec" >"$TMP/proto.decoded"
	d=""
	if [ "$dec" = malformed ] || [ -z "$dec" ]; then
		d+="the profile does not decode as a protobuf message"$'\n'
	else
		grep -qxF 'string0=[]' <<<"$dec" || d+="string_table[0] is not empty: $(grep string0 <<<"$dec")"$'\n'
		line=$(sed -n 's/^time=//p' <<<"$dec")
		now=$(date +%s)
		{ [ "${line:-0}" -ge $((t0 - 5)) ] && [ "${line:-0}" -le $((now + 5)) ]; } ||
			d+="time_nanos is $line s since the epoch, not between $t0 and $now"$'\n'
		line=$(sed -n 's/^duration_ns=//p' <<<"$dec")
		{ [ "${line:-0}" -gt 0 ] && [ "${line:-0}" -le $(((t1 - t0 + 2) * 1000000000)) ]; } ||
			d+="duration_nanos is ${line:-unset}, not within the run ($((t1 - t0)) s)"$'\n'
		for fn in big_keeper mid_keeper churn main; do
			grep -qE "^function $fn\|$fn\|([^|]*/)?tests/targets/t_pprof\.c\$" <<<"$dec" ||
				d+="no Function $fn with system name $fn and file tests/targets/t_pprof.c"$'\n'
		done
		line=$(grep '^function ' <<<"$dec" | awk -F'|' '{ n = $1; sub(/^function /, "", n) } n == "" || n != $2' | head -3)
		[ -z "$line" ] || d+="functions with no name or a system name unlike the name: $line"$'\n'
	fi
	[ -n "$d" ] && d+=$(head -12 "$TMP/proto.decoded")
	report "proto: wire format: string_table[0] empty, time and duration of the run, functions with name, system name and file" "$d"

	# -raw: sample types, default, values, functions with file:line, mappings.
	proto_go proto_raw "$view" -raw heap.pb.gz
	d=$(rc_diag proto_raw 0)
	line=$(sed -n '/^Samples:/{n;p;q}' "$TMP/proto_raw.out")
	[ "$line" = "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt] realloc_objects/count realloc_space/bytes" ] ||
		d+="sample types: '$line', want 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt] realloc_objects/count realloc_space/bytes'"$'\n'
	grep -qx 'PeriodType: space bytes' "$TMP/proto_raw.out" || d+="no 'PeriodType: space bytes'"$'\n'
	grep -qx 'Period: 1' "$TMP/proto_raw.out" || d+="no 'Period: 1'"$'\n'
	grep -qE '^Time: [0-9]{4}-' "$TMP/proto_raw.out" || d+="no Time:"$'\n'
	grep -qE '^Duration: [0-9]' "$TMP/proto_raw.out" || d+="no Duration:"$'\n'
	grep -qE '^Comment: heaptrace [0-9]' "$TMP/proto_raw.out" || d+="no comment 'heaptrace VERSION'"$'\n'
	grep -qxF "Comment: command: $bin/t_pprof" "$TMP/proto_raw.out" ||
		d+="no comment 'command: $(rel "$bin")/t_pprof': $(grep -m1 'Comment: command' "$TMP/proto_raw.out")"$'\n'
	line=$(grep -m1 '^Comment: events: ' "$TMP/proto_raw.out")
	{ grep -qw 'allocs=17' <<<"$line" && grep -qw 'frees=10' <<<"$line" && grep -qw 'unmatched_frees=0' <<<"$line"; } ||
		d+="no comment 'events: allocs=17 frees=10 ... unmatched_frees=0 ...': '$line'"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,12p' "$TMP/proto_raw.out")
	report "proto: go tool pprof -raw with no binary: 6 sample types (inuse_space default), period space/bytes, time, duration, comments heaptrace/command/events" "$d"

	proto_expect_sums proto_raw "proto: go tool pprof -raw: per-function values = t_pprof's exact numbers" \
		"big_keeper 4 1048576 4 1048576" "mid_keeper 3 30000 3 30000" "churn 10 50000 0 0"

	d=""
	for line in "big_keeper tests/targets/t_pprof.c:$big" "mid_keeper tests/targets/t_pprof.c:$mid" \
		"churn tests/targets/t_pprof.c:$ch" "main tests/targets/t_pprof.c:$mch" \
		"main tests/targets/t_pprof.c:$mmid" "main tests/targets/t_pprof.c:$mbig"; do
		grep -qE "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ ${line%% *} ([^ ]*/)?${line#* } s=" "$TMP/proto_raw.out" ||
			d+="no location '${line%% *} ${line#* }'"$'\n'
	done
	# Mappings: the executable by its path and build ID, libc by its own;
	# [FN][FL][LN]: functions, files and lines are inside.
	line=$(awk -v f="$bin/t_pprof" '/^Mappings/ { m = 1; next } m && $3 == f { print; exit }' "$TMP/proto_raw.out")
	if [ -z "$line" ]; then
		d+="no mapping of $(rel "$bin")/t_pprof"$'\n'
	else
		[ -n "$bid" ] && [ "$(awk '{ print $4 }' <<<"$line")" = "$bid" ] ||
			d+="mapping of t_pprof: build ID is not $bid (readelf -n): $line"$'\n'
		grep -qF '[FN][FL][LN]' <<<"$line" || d+="mapping of t_pprof lacks [FN][FL][LN]: $line"$'\n'
	fi
	line=$(awk '/^Mappings/ { m = 1; next } m && $3 ~ /\/libc\.so\.6$/ { print; exit }' "$TMP/proto_raw.out")
	if [ -z "$line" ]; then
		d+="no mapping of libc.so.6"$'\n'
	else
		fn=$(awk '{ print $3 }' <<<"$line")
		[ -n "$(proto_buildid "$fn")" ] && [ "$(awk '{ print $4 }' <<<"$line")" = "$(proto_buildid "$fn")" ] ||
			d+="mapping of libc: build ID is not $(proto_buildid "$fn") (readelf -n $fn): $line"$'\n'
	fi
	[ -n "$d" ] && d+=$(sed -n '/^Locations/,$p' "$TMP/proto_raw.out" | head -14)
	report "proto: go tool pprof -raw: locations with function and file:line (big_keeper :$big, mid_keeper :$mid, churn :$ch, main :$mch/:$mmid/:$mbig), mappings with path and build ID" "$d"

	# -top: default inuse_space, flat values in bytes.
	proto_go proto_top "$view" -top -unit=byte heap.pb.gz
	first_func_is proto_top big_keeper "proto: go tool pprof -top: big_keeper first (inuse_space)"
	flat_is proto_top big_keeper 1048576B "proto: go tool pprof -top -unit=byte: big_keeper 1048576B"
	flat_is proto_top mid_keeper 30000B "proto: go tool pprof -top -unit=byte: mid_keeper 30000B"
	d=""
	grep -qx 'Type: inuse_space' "$TMP/proto_top.out" || d+="no 'Type: inuse_space'"$'\n'
	grep -qE '^heaptrace [0-9]' "$TMP/proto_top.out" || d+="no 'heaptrace VERSION' comment"$'\n'
	grep -qxF "command: $bin/t_pprof" "$TMP/proto_top.out" || d+="no 'command: ...' comment"$'\n'
	grep -qE 'Total samples = 1078576B' "$TMP/proto_top.out" || d+="total is not 1078576B"$'\n'
	[ -n "$d" ] && d+=$(ctx proto_top)$'\n'$(sed -n '1,12p' "$TMP/proto_top.out")
	report "proto: go tool pprof -top: Type inuse_space, total 1078576B, comments shown" "$d"

	proto_go proto_top_ao "$view" -top -sample_index=alloc_objects heap.pb.gz
	first_func_is proto_top_ao churn "proto: go tool pprof -top -sample_index=alloc_objects: churn first"
	flat_is proto_top_ao churn 10 "proto: go tool pprof -top -sample_index=alloc_objects: churn 10"
	flat_is proto_top_ao big_keeper 4 "proto: go tool pprof -top -sample_index=alloc_objects: big_keeper 4"
	flat_is proto_top_ao mid_keeper 3 "proto: go tool pprof -top -sample_index=alloc_objects: mid_keeper 3"

	proto_go proto_top_lines "$view" -top -lines -sample_index=alloc_space -unit=byte heap.pb.gz
	d=$(rc_diag proto_top_lines 0)
	for line in "1048576B big_keeper t_pprof.c:$big" "30000B mid_keeper t_pprof.c:$mid" "50000B churn t_pprof.c:$ch"; do
		pprof_rows proto_top_lines | awk -v v="${line%% *}" -v fn="$(cut -d' ' -f2 <<<"$line")" -v fl="${line##* }" \
			'$1 == v && $(NF - 1) == fn && ($NF == fl || substr($NF, length($NF) - length(fl)) == "/" fl) { ok = 1 }
			END { exit !ok }' || d+="no row '$line'"$'\n'
	done
	[ -n "$d" ] && d+=$(sed -n '/flat%/,$p' "$TMP/proto_top_lines.out" | head -10)
	report "proto: go tool pprof -top -lines -sample_index=alloc_space: big_keeper t_pprof.c:$big 1048576B, mid_keeper :$mid 30000B, churn :$ch 50000B" "$d"

	# --value alloc_space: the default sample type.
	ht proto_as -f proto --value alloc_space -o "$TMP/proto_as.pb.gz" -- "$TB/t_pprof"
	check_rc proto_as 0 "proto: -f proto --value alloc_space run exits 0"
	cp "$TMP/proto_as.pb.gz" "$view/allocs.pb.gz" 2>/dev/null
	proto_go proto_as_raw "$view" -raw allocs.pb.gz
	line=$(sed -n '/^Samples:/{n;p;q}' "$TMP/proto_as_raw.out")
	d=$(rc_diag proto_as_raw 0)
	[ "$line" = "alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes realloc_objects/count realloc_space/bytes" ] ||
		d+="sample types: '$line'"$'\n'
	report "proto: --value alloc_space: go tool pprof -raw shows [dflt] on alloc_space" "$d"
	proto_expect_sums proto_as_raw "proto: --value alloc_space: per-function values unchanged" \
		"big_keeper 4 1048576 4 1048576" "mid_keeper 3 30000 3 30000" "churn 10 50000 0 0"
	proto_go proto_as_top "$view" -top -unit=byte allocs.pb.gz
	flat_is proto_as_top churn 50000B "proto: --value alloc_space: go tool pprof -top (no -sample_index): churn 50000B"
}

# proto_curl KEY PATH [CURL-ARG...]: GET http://127.0.0.1:$PROTO_PORT/PATH;
# body in KEY.body, "CODE CONTENT-TYPE" in KEY.code.
proto_curl() {
	local key=$1 path=$2
	shift 2
	curl -s --max-time 10 -o "$TMP/$key.body" -w '%{http_code} %{content_type}' "$@" \
		"http://127.0.0.1:$PROTO_PORT$path" >"$TMP/$key.code" 2>/dev/null
	[ -e "$TMP/$key.body" ] || : >"$TMP/$key.body"
}

proto_code() { cut -d' ' -f1 "$TMP/$1.code" 2>/dev/null; }

# proto_metric NAME: the value of the sample line "NAME VALUE" of /metrics.
proto_metric() {
	awk -v n="$1" '$1 == n && NF == 2 { print $2; exit }' "$TMP/proto_metrics.body" 2>/dev/null
}

# proto_send FIFO LINE: a command line for t_leaker (bounded: the target may
# have died, and an open for writing with no reader blocks).
proto_send() {
	# shellcheck disable=SC2016
	timeout 10 bash -c 'echo "$2" >"$1"' _ "$1" "$2"
}

# --http 127.0.0.1:PORT -p PID on t_leaker: attached at "ready", then two
# "leak" steps, each leak_fn 3 x 12345 kept, churn_one (inlined into
# churn_fn) 2 x 777 freed.  Traced heap then: in use 6 objects, 74070 bytes
# (leak_fn); allocated 10 objects, 74070 + 3108 = 77178 bytes; 4 frees;
# peak 74070 + 777 = 74847 (the churn block during step 2).
PROTO_PORT=""
proto_http() {
	local key=proto_http fifo=$TMP/proto_http.fifo view=$TMP/proto.view src=tests/targets/t_leaker.c
	local tp hp="" try port r d i line child pids=() url
	mkdir -p "$view"
	if [ ! -x "$TB/t_leaker" ]; then
		fail "proto: --http: $TB/t_leaker not built (make test-targets)" ""
		return
	fi
	mkfifo "$fifo"
	"$TB/t_leaker" "$fifo" >"$TMP/$key.tout" 2>&1 &
	tp=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$tp"; then
		fail "proto: --http: t_leaker starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tp"
		return
	fi
	# A free port: nothing listening there, and heaptrace does not find it
	# taken; otherwise the next one.
	for try in 0 1 2 3 4 5 6 7; do
		port=$((40000 + ($$ + try * 1237) % 10000))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
		echo "heaptrace -v --http 127.0.0.1:$port -p PID" >"$TMP/$key.cmd"
		timeout -k 5 "$(tmo)" "$HT" -v --http "127.0.0.1:$port" -p "$tp" \
			>"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
		hp=$!
		# Ready when the index answers (polled), or gone.
		r=1
		i=$((SECONDS + 30))
		while [ "$SECONDS" -lt "$i" ]; do
			if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
				"http://127.0.0.1:$port/debug/pprof/" 2>/dev/null)" = 200 ]; then
				r=0
				break
			fi
			kill -0 "$hp" 2>/dev/null || { r=2; break; }
			sleep 0.1
		done
		[ "$r" = 2 ] && grep -qi 'in use' "$TMP/$key.err" && { wait "$hp" 2>/dev/null; hp=""; continue; }
		break
	done
	PROTO_PORT=$port
	d=""
	if [ -z "$hp" ]; then
		d="no free port found"
	elif [ "$r" != 0 ]; then
		d="GET /debug/pprof/ never answered 200"
		kill -0 "$hp" 2>/dev/null || d+=" (heaptrace exited)"
	fi
	grep -qE "^heaptrace: tracing PID $tp([^0-9]|\$)" "$TMP/$key.err" || d+=$'\n'"no 'heaptrace: tracing PID $tp' line"
	if [ -n "$d" ]; then
		fail "proto: heaptrace -v --http 127.0.0.1:PORT -p PID attaches and serves" "$d"$'\n'"$(ctx "$key")"
		kill_tree "$hp" "$tp"
		return
	fi
	pass "proto: heaptrace -v --http 127.0.0.1:$port -p PID attaches and serves /debug/pprof/"

	d=""
	for i in 1 2; do
		if ! proto_send "$fifo" leak || ! wait_for "$TMP/$key.tout" "^step $i\$" 10 "$tp"; then
			d+="step $i did not run: $(cat "$TMP/$key.tout")"
			break
		fi
	done
	if [ -n "$d" ]; then
		fail "proto: --http: t_leaker runs two leak steps" "$d"
		kill_tree "$hp" "$tp"
		return
	fi

	# go tool pprof fetches the heap and allocs profiles over HTTP.
	url=http://127.0.0.1:$port/debug/pprof
	proto_go proto_http_top "$view" -timeout=20 -top -unit=byte "$url/heap"
	first_func_is proto_http_top leak_fn "proto: go tool pprof -top $url/heap: leak_fn first"
	flat_is proto_http_top leak_fn 74070B "proto: go tool pprof -top -unit=byte $url/heap: leak_fn 74070B"
	proto_go proto_http_raw "$view" -timeout=20 -raw "$url/allocs"
	d=$(rc_diag proto_http_raw 0)
	line=$(sed -n '/^Samples:/{n;p;q}' "$TMP/proto_http_raw.out")
	[ "$line" = "alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes realloc_objects/count realloc_space/bytes" ] ||
		d+="sample types: '$line', want alloc_space/bytes[dflt]"$'\n'
	report "proto: go tool pprof -raw $url/allocs: alloc_space is the default sample type" "$d"
	proto_expect_sums proto_http_raw "proto: go tool pprof -raw $url/allocs: leak_fn 6 74070 6 74070, churn_one 4 3108 0 0" \
		"leak_fn 6 74070 6 74070" "churn_one 4 3108 0 0"
	# churn_one is inlined into churn_fn: one location, two lines.
	d=""
	line=$(awk -v a="$(site_line "$src" churn_one)" -v b="$(site_line "$src" churn_fn)" '
		prev && $1 == "churn_fn" && $2 ~ ("t_leaker\\.c:" b "$") { ok = 1 }
		{ prev = ($0 ~ ("^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ churn_one [^ ]*t_leaker\\.c:" a " ")) }
		END { print ok + 0 }' "$TMP/proto_http_raw.out")
	[ "$line" = 1 ] || d+="no location 'churn_one t_leaker.c:$(site_line "$src" churn_one)' followed by the line 'churn_fn t_leaker.c:$(site_line "$src" churn_fn)'"$'\n'
	grep -qE "^ +[0-9]+: 0x[0-9a-f]+ M=[0-9]+ leak_fn [^ ]*t_leaker\.c:$(site_line "$src" leak_fn) " "$TMP/proto_http_raw.out" ||
		d+="no location 'leak_fn t_leaker.c:$(site_line "$src" leak_fn)'"$'\n'
	[ -n "$d" ] && d+=$(sed -n '/^Locations/,$p' "$TMP/proto_http_raw.out" | head -12)
	report "proto: --http allocs: leak_fn with file:line, inlined churn_one as two lines of one location" "$d"
	d=""
	grep -qxF "Comment: command: $TB/t_leaker $fifo" "$TMP/proto_http_raw.out" ||
		d+="want 'Comment: command: $(rel "$TB/t_leaker $fifo")', got '$(rel "$(grep -m1 '^Comment: command' "$TMP/proto_http_raw.out")")'"
	report "proto: --http -p: the command comment is the target's command line, exactly" "$d"

	# curl: index, heap (text and protobuf), allocs, metrics.
	proto_curl proto_index /debug/pprof/
	d=""
	[ "$(proto_code proto_index)" = 200 ] || d+="status $(proto_code proto_index)"$'\n'
	grep -q 'href="[^"]*heap"' "$TMP/proto_index.body" || d+="no link to heap"$'\n'
	grep -q 'href="[^"]*allocs"' "$TMP/proto_index.body" || d+="no link to allocs"$'\n'
	report "proto: GET /debug/pprof/: 200, links heap and allocs" "$d"

	proto_curl proto_dbg "/debug/pprof/heap?debug=1"
	d=""
	[ "$(proto_code proto_dbg)" = 200 ] || d+="status $(proto_code proto_dbg)"$'\n'
	head -1 "$TMP/proto_dbg.body" | grep -q '^heap profile:' || d+="does not start with 'heap profile:'"$'\n'
	pprof_has_record "$TMP/proto_dbg.body" 6 74070 6 74070 || d+="no record 6: 74070 [6: 74070] (leak_fn)"$'\n'
	pprof_has_record "$TMP/proto_dbg.body" 0 0 4 3108 || d+="no record 0: 0 [4: 3108] (churn_fn)"$'\n'
	grep -q "$TB/t_leaker\$" "$TMP/proto_dbg.body" || d+="no mapping of build/tests/t_leaker"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,5p' "$TMP/proto_dbg.body")
	report "proto: GET /debug/pprof/heap?debug=1: 200, legacy text, leak_fn 6: 74070 [6: 74070], churn 0: 0 [4: 3108]" "$d"
	pprof_header "$TMP/proto_dbg.body" "proto: GET /debug/pprof/heap?debug=1 header" 6 74070 10 77178

	for line in "/debug/pprof/heap" "/debug/pprof/heap?gc=1" "/debug/pprof/allocs"; do
		proto_curl proto_gz "$line"
		d=""
		[ "$(proto_code proto_gz)" = 200 ] || d+="status $(proto_code proto_gz)"$'\n'
		d+=$(proto_gzip_diag "$TMP/proto_gz.body")
		report "proto: GET $line: 200, gzip data (1f 8b)" "$d"
	done

	proto_curl proto_metrics /metrics
	d=""
	[ "$(proto_code proto_metrics)" = 200 ] || d+="status $(proto_code proto_metrics)"$'\n'
	for line in heaptrace_inuse_bytes=74070 heaptrace_inuse_objects=6 heaptrace_peak_inuse_bytes=74847 \
		'heaptrace_events_total{event="allocs"}=10' 'heaptrace_events_total{event="frees"}=4' \
		'heaptrace_events_total{event="unmatched_frees"}=0'; do
		r=$(proto_metric "${line%=*}")
		[ "$r" = "${line##*=}" ] || d+="${line%=*} = '${r:-<missing>}', want ${line##*=}"$'\n'
	done
	for line in heaptrace_inuse_bytes:gauge heaptrace_inuse_objects:gauge heaptrace_peak_inuse_bytes:gauge \
		heaptrace_events_total:counter heaptrace_rss_bytes:gauge; do
		grep -qx "# TYPE ${line%:*} ${line#*:}" "$TMP/proto_metrics.body" || d+="no '# TYPE ${line%:*} ${line#*:}'"$'\n'
	done
	r=$(grep -v '^#' "$TMP/proto_metrics.body" | grep -vE '^[a-z_]+(\{(event|kind)="[a-z_]+"\})? [0-9]+$' | head -3)
	[ -z "$r" ] && [ -s "$TMP/proto_metrics.body" ] || d+="malformed sample lines: $r"$'\n'
	[ -n "$d" ] && d+=$(grep -v '^#' "$TMP/proto_metrics.body" | head -8)
	report "proto: GET /metrics: 200, inuse_bytes 74070, inuse_objects 6, peak 74847, events allocs 10 frees 4 unmatched 0" "$d"

	proto_curl proto_404 /nope
	report "proto: GET /nope: 404" "$([ "$(proto_code proto_404)" = 404 ] || echo "status $(proto_code proto_404)")"
	proto_curl proto_405 /debug/pprof/heap -X POST --data x
	report "proto: POST /debug/pprof/heap: 405" "$([ "$(proto_code proto_405)" = 405 ] || echo "status $(proto_code proto_405)")"
	# shellcheck disable=SC2016
	line=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "GET / HTTP/1.1\r\nBad header\r\n\r\n" >&3; head -1 <&3' _ "$port" 2>/dev/null | tr -d '\r')
	report "proto: a request with a malformed header: 'HTTP/1.1 400 Bad Request'" \
		"$([ "$line" = "HTTP/1.1 400 Bad Request" ] || echo "first line of the answer: '$line'")"

	# Five at once: all answered, the same profile (the target is idle).
	for i in 1 2 3 4 5; do
		proto_curl "proto_conc$i" "/debug/pprof/heap?debug=1" &
		pids+=($!)
	done
	wait "${pids[@]}"
	d=""
	for i in 1 2 3 4 5; do
		[ "$(proto_code "proto_conc$i")" = 200 ] || d+="request $i: status '$(proto_code "proto_conc$i")'"$'\n'
		cmp -s "$TMP/proto_conc$i.body" "$TMP/proto_dbg.body" || d+="request $i: not the profile of the single request"$'\n'
	done
	report "proto: 5 concurrent GET /debug/pprof/heap?debug=1: all 200 with the same profile" "$d"

	# Taken port: one line, non-zero exit.
	ht proto_busy --http "127.0.0.1:$port" -- "$TB/t_pprof"
	d=$(one_line_diag proto_busy)
	[ "$RC" != 0 ] || d+="exit status 0, want non-zero"$'\n'
	grep -q "$port" "$TMP/proto_busy.err" || d+="stderr does not name the port $port"$'\n'
	report "proto: --http on a port already served: one line on stderr, non-zero exit" "$d"

	# Still serving, then SIGINT: exit 0, the final profile on stdout, the
	# target unharmed.
	d=""
	kill -0 "$hp" 2>/dev/null || d+="heaptrace is no longer running"$'\n'
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url/")" = 200 ] || d+="the index no longer answers"$'\n'
	report "proto: heaptrace --http -p (no --duration) still running and serving after every request" "$d${d:+$(ctx "$key")}"
	child=$(pgrep -P "$hp" | head -1)
	kill -INT "${child:-$hp}" 2>/dev/null
	d=""
	wait_exit "$hp" 15 || d+="heaptrace still running 15 s after SIGINT"$'\n'
	if [ "$WRC" = timeout ]; then
		kill_tree "$hp"
	fi
	echo "$WRC" >"$TMP/$key.rc"
	[ "$WRC" = 0 ] || d+="heaptrace exit status $WRC, want 0"$'\n'
	report "proto: heaptrace --http -p stops on SIGINT and exits 0" "$d${d:+$(ctx "$key")}"
	pprof_header "$TMP/$key.out" "proto: --http -p: the profile written at SIGINT" 6 74070 10 77178
	d=$(grep -i 'MHD' "$TMP/$key.err" | head -3)
	report "proto: --http -v: no libmicrohttpd warnings on stderr" "$d"

	d=""
	kill -0 "$tp" 2>/dev/null || d+="target died with heaptrace: $(cat "$TMP/$key.tout")"$'\n'
	proto_send "$fifo" quit || d+="could not send quit"$'\n'
	if wait_exit "$tp" 10; then
		[ "$WRC" = 0 ] || d+="target exit status $WRC, want 0"$'\n'
		grep -q '^bye$' "$TMP/$key.tout" || d+="target did not finish: $(cat "$TMP/$key.tout")"$'\n'
	else
		d+="target still running after quit"$'\n'
		kill_tree "$tp"
	fi
	report "proto: t_leaker survives heaptrace --http and exits 0" "$d"
}

# Bad --http values: one line on stderr, non-zero exit (2, like every bad
# option value).
proto_badaddr() {
	local v i=0 d
	for v in nonsense 127.0.0.1:99999; do
		i=$((i + 1))
		ht "proto_bad$i" --http "$v" -- "$TB/t_pprof"
		d=$(one_line_diag "proto_bad$i")
		case $RC in
		0) d+="exit status 0, want non-zero"$'\n' ;;
		124 | 137) d+="timed out"$'\n' ;;
		esac
		grep -qF -- "$v" "$TMP/proto_bad$i.err" || d+="stderr does not name '$v'"$'\n'
		report "proto: --http $v: one line on stderr, non-zero exit" "$d${d:+$(ctx "proto_bad$i")}"
		report "proto: --http $v: exit status 2, like the other bad option values" "$(rc_diag "proto_bad$i" 2)"
	done
}
