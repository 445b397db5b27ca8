# shellcheck shell=bash
# Area "mmap" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# --mmap on t_mmap (see its header for what each function keeps).
#
# Scenario mmapexact, in 4 modes (the fast path or --no-inject, exact or
# --sample-rate 64K, at which every mapping of t_mmap, 1 MiB and more, is
# sampled with probability 1 - e^-16 or more, and weighs 1 in Q16): the
# in-use bytes by stack, exactly: map_big's [mmap] 64 MiB, grow_brk's
# [brk] 8 MiB (the only [brk]: glibc's own heap growth by brk is the
# allocator's), big_malloc's malloc 1 MiB and no [mmap] under it (glibc's
# mmap of the chunk is the allocator's), map_part's 8 MiB left of 16 after
# a hole and a tail were unmapped, map_grow's 12 MiB after mremap from 4,
# map_file (a file) and map_gone (unmapped whole) nothing in use;
# alloc_space: map_gone's 16 MiB and map_grow's 4 + 12 MiB were allocated.
# Events: allocator_maps=2 (glibc's mmap of the 1 MiB chunk and its first
# brk for the main arena), maps=9 (t_mmap's 6 and the dynamic loader's 3).
#
# Scenario mmapsampled: t_jemalloc (mmap_jemalloc below), then
# --sample-rate 1G, with and without --no-inject:
# glibc's two mappings are made inside unsampled allocator calls, which
# leave no call state (the stub passes them straight through; a uprobe
# session skips their returns): allocator_maps=2 still, by the CFI walk's
# frames, and none under big_malloc.
#
# Scenario mmapoutputs: the same mappings in -f top, -f proto (go tool
# pprof), -f html, heaptrace diff of text and proto files, -i snapshots and
# /metrics (in use while t_mmap waits = the final profile's), and
# --limit-peak (the peak holds map_gone's 16 MiB before its munmap).

MIB=1048576

# mmap_stackval KEY FN LEAF: the sum of $TMP/KEY.out's collapsed lines that
# pass through main, have FN as a frame and LEAF as the innermost frame.
mmap_stackval() {
	awk -v fn="$2" -v leaf="$3" '
	match($0, / -?[0-9]+$/) {
		v = substr($0, RSTART + 1) + 0
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] != leaf) next
		m = 0; k = 0
		for (i = 1; i <= n; i++) { if (f[i] == "main") m = 1; if (f[i] == fn) k = 1 }
		if (m && k) s += v
	}
	END { printf "%.0f\n", s }' "$TMP/$1.out" 2>/dev/null
}

# mmap_leafsum KEY LEAF: the sum over every line whose innermost frame is LEAF.
mmap_leafsum() {
	awk -v leaf="$2" 'match($0, / -?[0-9]+$/) {
		v = substr($0, RSTART + 1) + 0
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] == leaf) s += v
	} END { printf "%.0f\n", s }' "$TMP/$1.out" 2>/dev/null
}

# mmap_expect KEY FN LEAF WANT: a diagnostic unless mmap_stackval is WANT.
mmap_expect() {
	local got
	got=$(mmap_stackval "$1" "$2" "$3")
	[ "$got" = "$4" ] || echo "$2 ... $3: $got bytes, want $4"
}

# mmap_events KEY NAME...: NAME=VALUE pairs of the -v events line.
mmap_event() {
	grep -m1 '^heaptrace: events:' "$TMP/$1.err" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

mmap_exact_mode() {
	local key=$1 d="" got
	shift
	ht "$key" --mmap -v --collapsed "$@" -- "$TB/t_mmap"
	d=$(rc_diag "$key" 0)
	d+=$(mmap_expect "$key" map_big "[mmap]" $((64 * MIB)))$'\n'
	d+=$(mmap_expect "$key" grow_brk "[brk]" $((8 * MIB)))$'\n'
	d+=$(mmap_expect "$key" big_malloc big_malloc $((1 * MIB)))$'\n'
	d+=$(mmap_expect "$key" big_malloc "[mmap]" 0)$'\n'
	d+=$(mmap_expect "$key" map_part "[mmap]" $((8 * MIB)))$'\n'
	d+=$(mmap_expect "$key" map_grow "[mmap]" $((12 * MIB)))$'\n'
	d+=$(mmap_expect "$key" map_file "[mmap]" 0)$'\n'
	d+=$(mmap_expect "$key" map_gone "[mmap]" 0)$'\n'
	got=$(mmap_leafsum "$key" "[brk]")
	[ "$got" = $((8 * MIB)) ] || d+="[brk] in all: $got bytes, want $((8 * MIB)) (grow_brk's alone)"$'\n'
	# The cut-down kernel types hold what maps.bpf.h reads (mm->brk): no load with the kernel's whole BTF.
	grep -q "cannot load the BPF object with the kernel types" "$TMP/$key.err" &&
		d+="the load fell back to the kernel's whole BTF (user/tracer/ktypes.c lacks a field)"$'\n'
	for ev in allocator_maps=2 map_index_lost=0; do
		got=$(mmap_event "$key" "${ev%%=*}")
		[ "$got" = "${ev#*=}" ] || d+="events: ${ev%%=*}=$got, want ${ev#*=}"$'\n'
	done
	d=$(grep -v '^$' <<<"$d")
	report "$key: --mmap${*:+ $*}: 64 MiB map_big, 8 MiB grow_brk [brk], 1 MiB big_malloc (no [mmap]), 8 MiB map_part, 12 MiB map_grow, no file map, allocator_maps=2" "$d${d:+$'\n'$(ctx "$key")}"
}

scenario_mmapexact() {
	local key d
	mmap_exact_mode mmap_exact
	mmap_exact_mode mmap_exact_ni --no-inject
	mmap_exact_mode mmap_sampled --sample-rate 64K
	mmap_exact_mode mmap_sampled_ni --sample-rate 64K --no-inject
	# The event count and what was allocated: map_gone's 16 MiB, map_grow's 4 then 12 MiB.
	key=mmap_exact
	got=$(mmap_event "$key" maps)
	d=""
	[ "$got" = 9 ] || d+="events: maps=$got, want 9 (t_mmap's 6, the dynamic loader's 3)"$'\n'
	ht mmap_alloc --mmap --collapsed --value alloc_space -- "$TB/t_mmap"
	d+=$(rc_diag mmap_alloc 0)
	d+=$(mmap_expect mmap_alloc map_gone "[mmap]" $((16 * MIB)))
	d+=$(mmap_expect mmap_alloc map_grow "[mmap]" $((16 * MIB)))
	d+=$(mmap_expect mmap_alloc map_part "[mmap]" $((16 * MIB)))
	report "mmap: maps=9; --value alloc_space: map_gone 16 MiB, map_grow 4 + 12 MiB, map_part 16 MiB allocated" "$d"

	# t_entrypoints' mmapped malloc and realloc by mremap are glibc's: no mapping under main, the heap as without --mmap.
	for key in mmap_ep mmap_ep_ni; do
		if [ $key = mmap_ep ]; then
			ht $key --mmap --collapsed -- "$TB/t_entrypoints"
		else
			ht $key --mmap --collapsed --no-inject -- "$TB/t_entrypoints"
		fi
		d=$(rc_diag $key 0)
		d+=$(mmap_expect $key main "[mmap]" 0)
		d+=$(mmap_expect $key main "[brk]" 0)
		d+=$(mmap_expect $key ep_realloc_big ep_realloc_big 400000)
		report "$key: t_entrypoints under --mmap: no [mmap] or [brk] under main; ep_realloc_big (mremap inside realloc) 400000" "$d"
	done
}

# jemalloc (t_jemalloc, linked against libjemalloc.so.2): its extents are
# mapped from its own library, in exact and sampled mode, with and without
# the fast path: no mapping but the dynamic loader's, and jx_rallocx's 5000 bytes as
# without --mmap (presets.sh).
mmap_jemalloc() {
	local key d lib=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 args
	if [ ! -e "$lib" ] || [ ! -x "$TB/t_jemalloc" ]; then
		fail "mmap: jemalloc: $lib (libjemalloc2) or $TB/t_jemalloc missing" ""
		return
	fi
	for key in mmap_jem mmap_jem_ni mmap_jem_s mmap_jem_s_ni; do
		args=(--mmap -v --collapsed --preset jemalloc)
		case $key in *_s*) args+=(--sample-rate 64K) ;; esac
		case $key in *_ni) args+=(--no-inject) ;; esac
		ht $key "${args[@]}" -- "$TB/t_jemalloc"
		d=$(rc_diag $key 0)
		d+=$(mmap_expect $key main "[mmap]" 0)
		d+=$(mmap_expect $key main "[brk]" 0)
		# Nor anywhere else but under the dynamic loader (jemalloc maps its first extents before main).
		d+=$(grep -E ';\[(mmap|brk)\] [0-9]+$' "$TMP/$key.out" | grep -v '^_start;_dl_start;' | sed 's/^/not the loader'"'"'s: /')
		[ "$(mmap_event $key allocator_maps)" -ge 1 ] 2>/dev/null || d+="allocator_maps=$(mmap_event $key allocator_maps), want >= 1"$'\n'
		case $key in *_s*) ;; *) d+=$(mmap_expect $key jx_rallocx jx_rallocx 5000) ;; esac
		report "$key: --mmap ${args[*]:4}: jemalloc's extents are the allocator's: no [mmap] or [brk] under main" "$d${d:+$'\n'$(ctx $key)}"
	done
}

scenario_mmapsampled() {
	mmap_jemalloc
	local key d got
	for key in mmap_1g mmap_1g_ni; do
		if [ "$key" = mmap_1g ]; then
			ht "$key" --mmap -v --collapsed --sample-rate 1G -- "$TB/t_mmap"
		else
			ht "$key" --mmap -v --collapsed --sample-rate 1G --no-inject -- "$TB/t_mmap"
		fi
		d=$(rc_diag "$key" 0)
		got=$(mmap_event "$key" allocator_maps)
		[ "$got" = 2 ] || d+="events: allocator_maps=$got, want 2 (glibc's mmap of the 1 MiB chunk, its first brk)"$'\n'
		d+=$(mmap_expect "$key" big_malloc "[mmap]" 0)
		report "$key: --sample-rate 1G: glibc's mappings in unsampled calls are the allocator's (allocator_maps=2), none under big_malloc" "$d"
	done
	# Without CFI to tell them by, sampled --mmap is refused.
	ht mmap_fp --mmap --sample-rate 64K --unwind fp -- "$TB/t_mmap"
	d=$(rc_diag mmap_fp 2)
	grep -q "^heaptrace: --mmap with --sample-rate .*--unwind fp" "$TMP/mmap_fp.err" || d+="no one-line reason: $(head -2 "$TMP/mmap_fp.err")"
	report "mmap: --mmap --sample-rate --unwind fp: exit 2 with the reason" "$d"
}

scenario_mmapoutputs() {
	local key=mmap_top d="" f port m inuse final
	ht $key --mmap -f top -o "$TMP/$key.txt" -- "$TB/t_mmap"
	d=$(rc_diag $key 0)
	grep -A1 '^#1 ' "$TMP/$key.txt" | grep -q '^ *\[mmap\]$' || d+="-f top: #1 is not [mmap]"$'\n'
	grep -A2 '^#1 ' "$TMP/$key.txt" | grep -q '^ *map_big ' || d+="-f top: #1's caller is not map_big"$'\n'
	grep -q '^#1  *67,108,864 bytes' "$TMP/$key.txt" || d+="-f top: #1 is not 67,108,864 bytes"$'\n'
	grep -q '^ *\[brk\]$' "$TMP/$key.txt" || d+="-f top: no [brk] frame"$'\n'
	report "mmap: -f top: #1 is 67,108,864 bytes, [mmap] under map_big; a [brk] stack" "$d${d:+$(ctx $key)}"

	key=mmap_proto
	ht $key --mmap -f proto -o "$TMP/$key.pb.gz" -- "$TB/t_mmap"
	d=$(rc_diag $key 0)
	pprof_tool $key go -top -unit=B -nodefraction=0 "$TMP/$key.pb.gz"
	f=$TMP/$key.out
	grep -qE '^ *8388608B .* \[brk\]$' "$f" || d+="go tool pprof: no flat 8388608B [brk]"$'\n'
	grep -qE '^ *0 .* 67108864B .* map_big$' "$f" || d+="go tool pprof: map_big's cum is not 67108864B"$'\n'
	grep -qE '^ *1048576B .* big_malloc$' "$f" || d+="go tool pprof: big_malloc's flat is not 1048576B"$'\n'
	report "mmap: -f proto in go tool pprof: [brk] 8 MiB flat, map_big 64 MiB cum, big_malloc 1 MiB" "$d${d:+$(cat "$f")}"

	# heaptrace diff reads both text and proto back: the kinds survive (ASLR makes every stack new).
	d=""
	ht mmap_t0 -o "$TMP/mmap_t0.heap" -- "$TB/t_mmap"
	ht mmap_t1 --mmap -o "$TMP/mmap_t1.heap" -- "$TB/t_mmap"
	ht mmap_dtext diff -f collapsed "$TMP/mmap_t0.heap" "$TMP/mmap_t1.heap"
	d+=$(rc_diag mmap_dtext 0)
	d+=$(mmap_expect mmap_dtext map_big "[mmap]" $((64 * MIB)))
	ht mmap_dproto diff -f collapsed "$TMP/mmap_proto.pb.gz" "$TMP/mmap_proto.pb.gz"
	d+=$(rc_diag mmap_dproto 0)
	ht mmap_dproto2 diff -f collapsed "$TMP/mmap_t0.heap" "$TMP/mmap_proto.pb.gz"
	d+=$(mmap_expect mmap_dproto2 grow_brk "[brk]" $((8 * MIB)))
	report "mmap: heaptrace diff of pprof text and proto files keeps [mmap] 64 MiB and [brk] 8 MiB" "$d"

	# --limit-peak sees them: the peak holds map_gone's 16 MiB beside the rest, map_big named first.
	key=mmap_limit
	ht $key --mmap --limit-peak 50M -o /dev/null -- "$TB/t_mmap"
	d=$(rc_diag $key 23)
	grep -A1 -- '--limit-peak 52428800 exceeded' "$TMP/$key.err" | grep -q '^heaptrace:   67108864 bytes in use: \[mmap\] < map_big ' ||
		d+="the first stack named is not map_big's 64 MiB [mmap]"$'\n'
	grep -q '^heaptrace:   16777216 bytes in use: \[mmap\] < anon .* < map_gone ' "$TMP/$key.err" ||
		d+="map_gone's 16 MiB is not among the stacks at the peak"$'\n'
	report "mmap: --limit-peak 50M exits 23, naming map_big's 64 MiB [mmap] first and map_gone's 16 MiB at the peak" "$d${d:+$(ctx $key)}"

	key=mmap_html
	ht $key --mmap -f html -o "$TMP/$key.html" -- "$TB/t_mmap"
	d=$(rc_diag $key 0)
	grep -q '"\[mmap\]"' "$TMP/$key.html" || d+="no \"[mmap]\" frame in the report's data"$'\n'
	grep -q '"\[brk\]"' "$TMP/$key.html" || d+="no \"[brk]\" frame in the report's data"$'\n'
	report "mmap: -f html: the report's data has [mmap] and [brk] frames" "$d"

	# -i snapshots and /metrics while t_mmap waits: what the final profile says.
	key=mmap_live
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v --mmap -f collapsed -i 0.2 -o "$TMP/$key" --http 127.0.0.1:0 -- "$TB/t_mmap" "$TMP/$key.fifo"
	d=""
	if wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		wait_for "$TMP/$key.err" '^heaptrace: snapshot 2: ' 20 "$HPID" || d+="no snapshot 2"$'\n'
		port=$(http_port $key)
		m=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics")
		inuse=$(sed -n 's/^heaptrace_inuse_bytes \([0-9]*\)$/\1/p' <<<"$m")
		release $key
	else
		d+="t_mmap did not get ready"$'\n'
	fi
	ht_bg_wait $key "$HPID" 30
	d+=$(rc_diag $key 0)
	f=$(find "$TMP" -maxdepth 1 -name "$key.0*" | sort | tail -1)
	cp "$f" "$TMP/mmap_snap.out" 2>/dev/null
	d+=$(mmap_expect mmap_snap map_big "[mmap]" $((64 * MIB)))
	d+=$(mmap_expect mmap_snap grow_brk "[brk]" $((8 * MIB)))
	final=$(awk '{ s += $NF } END { printf "%.0f", s }' "$TMP/mmap_snap.out")
	[ -n "$inuse" ] && [ "$inuse" = "$final" ] ||
		d+="/metrics heaptrace_inuse_bytes '$inuse', want the final snapshot's $final"$'\n'
	[ "${final:-0}" -ge $((93 * MIB)) ] || d+="final in use $final, want at least 93 MiB (64 + 8 + 1 + 8 + 12)"$'\n'
	report "mmap: -i snapshots have [mmap] 64 MiB and [brk] 8 MiB; /metrics in use = the last snapshot's (>= 93 MiB)" "$d${d:+$(ctx $key)}"
}
