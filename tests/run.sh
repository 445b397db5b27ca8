#!/bin/bash
# heaptrace test harness.
#
# Runs the programs of tests/targets (built into build/tests by
# `make test-targets`) under build/heaptrace and checks exact per-function
# numbers, exit statuses, -p attach mode and the pprof / top outputs.
# Each check prints "ok - NAME" or "not ok - NAME" with "#" diagnostics; the
# last line is "N passed, N failed" and the exit status is non-zero if any
# check failed.  A check that cannot run fails.  Must run as root.
#
# Usage: tests/run.sh [SCENARIO...]   (default: all; see SCENARIOS below)
# HEAPTRACE_KEEP_TMP=1 keeps the scratch directory with every output.
set -u
# Symbols come from local files only: no debuginfod lookups during tests.
unset DEBUGINFOD_URLS

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd)
HT=${HEAPTRACE:-$ROOT/build/heaptrace}   # override only to test the harness
TB=$ROOT/build/tests
TMP=$(mktemp -d "${TMPDIR:-/tmp}/heaptrace-test.XXXXXX") || exit 1
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"

trap cleanup EXIT
trap 'exit 130' INT TERM

VALUES="alloc_objects alloc_space inuse_objects inuse_space"

# ---------------------------------------------------------------------------
# t_entrypoints: every traced entry point (see the comments in the source).
scenario_entrypoints() {
	profile4 entrypoints 0 "$TB/t_entrypoints"
	expect_entrypoints4 entrypoints
	# realloc(p, 0) and free(NULL) allocate nothing; ep_free only frees.
	absent4 entrypoints ep_realloc_zero ep_free_null ep_free
	# The program has no other heap activity (no stdio): the leaves are
	# exactly the functions of expect_entrypoints4 with a non-zero value.
	leafset4 entrypoints
	# Event counters (-v, alloc_objects run): allocs = 27 (sum of the alloc
	# objects in expect_entrypoints4); frees = 5 by ep_free + 5 by realloc (grow, shrink,
	# zero, big, reallocarray grow) = 10, and 27 - 10 = 17 objects in use;
	# no unmatched frees (free(NULL) is nothing, realloc's inner free and
	# malloc are not counted twice).
	expect_events entrypoints.alloc_objects allocs=27 frees=10 unmatched_frees=0
	no_loss_line entrypoints.inuse_space

	# Default format (pprof) to a file: the header holds exact totals.
	# in use: 17 objects (third column of expect_entrypoints4);
	#   3000+300+5000+200+333+400000+400+600+1234+321+2048+96+777+3000+8192
	#   = 425501
	# allocated: 27 objects;
	#   4000+600+50+5000+2000+200+333+444+200000+400000+400+60+600+2468
	#   +321+4096+96+777+6000+8192 = 635637
	ht entrypoints.pprof -o "$TMP/entrypoints.prof" -- "$TB/t_entrypoints"
	check_rc entrypoints.pprof 0 "entrypoints: -o FILE pprof run exits 0"
	pprof_header "$TMP/entrypoints.prof" "entrypoints: pprof header totals" 17 425501 27 635637
}

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
# Custom allocators (--sym, --free-sym, --reset-sym, --no-libc) and the
# malloc the target really uses (static executable, LD_PRELOAD'ed jemalloc
# and tcmalloc, --lib).  The targets' sources derive every number.
scenario_custom() {
	custom_arena
	custom_pool
	custom_reset
	custom_static
	custom_preload
	custom_errors
}

# The arena_alloc(arena_t *a, size_t size, size_t align, size_t count) shape.
ARENA_SPEC='arena_alloc:size=arg2*arg4,objects=arg4,arena=arg1'

# t_arena: a(n) = n ints, then b(n); main: a(2Mi), a(2Mi), b(3Mi), nothing
# freed.  Bytes = 4 x ints, objects = ints (objects=arg4):
#   main;a;b  2 x 2Mi = 4194304 objects, 16777216 bytes (16 MiB)
#   main;a    2 x 2Mi = 4194304 objects, 16777216 bytes (16 MiB)
#   main;b    1 x 3Mi = 3145728 objects, 12582912 bytes (12 MiB)
#   innermost a: 4194304 / 16777216; innermost b: 7340032 / 29360128
#   total:    11Mi = 11534336 objects, 44 MiB = 46137344 bytes, all in use
# With libc probed as well: arena_new's malloc(32) adds 1 object, 32 bytes;
# the chunk mallocs inside arena_alloc are nested calls, not counted.
custom_arena() {
	ht arena.pprof --no-libc --sym "$ARENA_SPEC" -o "$TMP/arena.prof" -- "$TB/t_arena"
	check_rc arena.pprof 0 "custom arena: --no-libc --sym '$ARENA_SPEC' -o FILE exits 0"
	pprof_first_line "$TMP/arena.prof" "custom arena: --no-libc pprof header" \
		"heap profile: 11534336: 46137344 [11534336: 46137344] @ heapprofile"

	profile4x arena 0 --no-libc --sym "$ARENA_SPEC" -- "$TB/t_arena"
	#                                alloc    alloc     inuse    inuse
	#                                objects  space     objects  space
	expect_stack4 arena "main;a;b"   4194304 16777216 4194304 16777216
	expect_stack4 arena "main;a"     4194304 16777216 4194304 16777216
	expect_stack4 arena "main;b"     3145728 12582912 3145728 12582912
	expect4 arena a                  4194304 16777216 4194304 16777216
	expect4 arena b                  7340032 29360128 7340032 29360128
	# --no-libc: arena_new's malloc and the chunk mallocs are not traced.
	absent4 arena arena_new
	leafset4 arena
	# allocs counts calls: 5 arena_alloc calls (a, b, a, b, b).
	expect_events arena.alloc_objects allocs=5 frees=0 unmatched_frees=0 missed_frees=0 failed_allocs=0

	# libc probed too: the same arena numbers, plus arena_new.
	ht arenac.pprof --sym "$ARENA_SPEC" -o "$TMP/arenac.prof" -- "$TB/t_arena"
	check_rc arenac.pprof 0 "custom arena: --sym '$ARENA_SPEC' (and libc) -o FILE exits 0"
	# 11534336 + 1 objects, 46137344 + 32 bytes
	pprof_first_line "$TMP/arenac.prof" "custom arena: with libc, pprof header" \
		"heap profile: 11534337: 46137376 [11534337: 46137376] @ heapprofile"
	profile4x arenac 0 --sym "$ARENA_SPEC" -- "$TB/t_arena"
	expect_stack4 arenac "main;a;b"  4194304 16777216 4194304 16777216
	expect_stack4 arenac "main;a"    4194304 16777216 4194304 16777216
	expect_stack4 arenac "main;b"    3145728 12582912 3145728 12582912
	expect4 arenac a                 4194304 16777216 4194304 16777216
	expect4 arenac b                 7340032 29360128 7340032 29360128
	expect4 arenac arena_new         1       32       1       32
	# The chunk mallocs (3 x 16 MiB + 16) would have arena_alloc innermost.
	absent_leaf4 arenac arena_alloc
	leafset4 arenac
	# 5 arena_alloc calls + arena_new's malloc = 6; the 3 chunk mallocs are
	# nested in arena_alloc.
	expect_events arenac.alloc_objects allocs=6 frees=0 unmatched_frees=0 missed_frees=0 failed_allocs=0

	# '*' before '+', NUMBER terms.  5 calls, n = 2Mi, 2Mi (b), 2Mi, 2Mi (b),
	# 3Mi (sum 11Mi = 11534336): size = 16 + 4n -> 80 + 46137344 = 46137424;
	# objects = 1 + 2n -> 5 + 23068672 = 23068677.  (Left to right it would
	# be (16 + 4) x n = 230686720 bytes and (1 + n) x 2 = 23068682 objects.)
	ht arena.expr --no-libc --sym 'arena_alloc:size=16+arg2*arg4,objects=1+arg4*2,arena=arg1' \
		-o "$TMP/arena_expr.prof" -- "$TB/t_arena"
	check_rc arena.expr 0 "custom arena: --sym 'arena_alloc:size=16+arg2*arg4,objects=1+arg4*2,...' exits 0"
	pprof_header "$TMP/arena_expr.prof" "custom arena: size=16+arg2*arg4, objects=1+arg4*2 (* before +)" \
		23068677 46137424 23068677 46137424
}

# t_pool: pool_alloc(pool, size) / pool_free(pool, ptr); slab_alloc(size) =
# pool_alloc(the_pool, size), slab_free(ptr) = pool_free(the_pool, ptr).
#   pool_keep    5 x 100, kept             alloc 5/500   in use 5/500
#   pool_churn  10 x 40, each freed        alloc 10/400  in use 0/0
#   pool_some    4 x 64, pool_release frees 3   alloc 4/256   in use 1/64
#   slab_keep    3 x slab_alloc(24), kept  alloc 3/72    in use 3/72
#   slab_churn   2 x slab_alloc(200), freed with slab_free  alloc 2/400  in use 0/0
#   pool_new     malloc(32), kept (traced only with libc)
# The slab (malloc(16384)) is allocated inside pool_alloc: nested.
custom_pool() {
	profile4x pool 0 --no-libc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' -- "$TB/t_pool"
	#                              alloc   alloc  inuse   inuse
	#                              objects space  objects space
	expect4 pool pool_keep          5      500    5       500
	expect4 pool pool_churn        10      400    0         0
	expect4 pool pool_some          4      256    1        64
	# slab_alloc is not traced here: slab_keep's and slab_churn's pool_alloc
	# calls are made from slab_alloc: 3 x 24 + 2 x 200 = 472 bytes, 72 kept.
	expect4 pool slab_alloc         5      472    3        72
	absent4 pool pool_new pool_release slab_free
	leafset4 pool
	# allocs = 5 + 10 + 4 + 3 + 2 = 24 pool_alloc calls (1 object each);
	# frees = 10 + 3 + 2 = 15 pool_free calls, each of a live block (slots
	# are reused, so a missed free would show as missed_frees).
	expect_events pool.alloc_objects allocs=24 frees=15 unmatched_frees=0 missed_frees=0

	# libc too, --sym repeated, slab_alloc with the default spec (size=arg1,
	# ptr=ret): the pool_alloc inside slab_alloc is nested, counted once as
	# slab_alloc; the slab malloc inside pool_alloc is nested too.
	profile4x poolc 0 --sym slab_alloc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' \
		-- "$TB/t_pool"
	expect4 poolc pool_keep         5      500    5       500
	expect4 poolc pool_churn       10      400    0         0
	expect4 poolc pool_some         4      256    1        64
	expect4 poolc slab_keep         3       72    3        72
	expect4 poolc slab_churn        2      400    0         0
	expect4 poolc pool_new          1       32    1        32
	absent_leaf4 poolc slab_alloc pool_alloc
	absent4 poolc pool_release slab_free
	leafset4 poolc
	# allocs = 5 + 10 + 4 (pool_alloc) + 3 + 2 (slab_alloc) + 1 (malloc) = 25
	expect_events poolc.alloc_objects allocs=25 frees=15 unmatched_frees=0 missed_frees=0
}

# t_reset: arenas A and B; arena_reset(&A) frees every block of A.
#   ra_one    3 x (8 x 100) in A    300 objects, 2400 bytes; reset -> 0 in use
#   rb_keep   4 x (4 x 50)  in B    200 objects,  800 bytes; kept
#   ra_two    2 x (16 x 10) in A     20 objects,  320 bytes; reset -> 0 in use
#   ab_shared (2 x 25) in A and in B from one call site, i.e. one stack:
#                                    50 objects,  100 bytes; reset -> B's
#                                    25 objects, 50 bytes in use
#   ra_after  6 x (8 x 100) in A    600 objects, 4800 bytes; kept; 4 of its
#             blocks get addresses the reset freed (the target checks it)
# In use: 200 + 25 + 600 = 825 objects, 800 + 50 + 4800 = 5650 bytes;
# allocated: 300 + 20 + 200 + 50 + 600 = 1170 objects,
#            2400 + 320 + 800 + 100 + 4800 = 8420 bytes.
# A and B are globals and the chunks are malloc'd inside arena_alloc, so
# probing libc as well adds nothing.
custom_reset() {
	local reset='arena_reset:arena=arg1'
	profile4x reset 0 --no-libc --sym "$ARENA_SPEC" --reset-sym "$reset" -- "$TB/t_reset"
	#                              alloc   alloc  inuse   inuse
	#                              objects space  objects space
	expect4 reset ra_one          300     2400    0         0
	expect4 reset ra_two           20      320    0         0
	expect4 reset rb_keep         200      800  200       800
	expect4 reset ab_shared        50      100   25        50
	expect4 reset ra_after        600     4800  600      4800
	absent4 reset reset_a
	leafset4 reset
	# Reused addresses were freed by the reset first: no missed frees.
	# allocs = 3 + 4 + 2 + 2 + 6 = 17 arena_alloc calls; a reset is counted
	# as arena_resets=1, reset_objects = 300 + 20 + 25 = 345 objects
	# (ra_one's, ra_two's and ab_shared's in A), not as frees.
	expect_events reset.alloc_objects allocs=17 frees=0 unmatched_frees=0 missed_frees=0 \
		arena_resets=1 reset_objects=345 arena_map_full=0

	ht resetc -v --sym "$ARENA_SPEC" --reset-sym "$reset" -o "$TMP/resetc.prof" -- "$TB/t_reset"
	check_rc resetc 0 "custom reset: with libc too, -o FILE exits 0"
	pprof_header "$TMP/resetc.prof" "custom reset: with libc too, pprof header" 825 5650 1170 8420
	# the same events: A's 2 chunk mallocs and B's 1 are nested in arena_alloc
	expect_events resetc allocs=17 frees=0 unmatched_frees=0 missed_frees=0 \
		arena_resets=1 reset_objects=345 arena_map_full=0

	# The check above can fail: without --reset-sym, ra_after's 4 reused
	# addresses are handed out while heaptrace still holds them live.
	ht resetless -v --no-libc --sym "$ARENA_SPEC" -f collapsed --value alloc_objects -- "$TB/t_reset"
	check_rc resetless 0 "custom reset: without --reset-sym exits 0"
	expect_events resetless allocs=17 missed_frees=4 arena_resets=0 reset_objects=0
}

# tests/static/t_static.c built with gcc -static: malloc is inside the
# executable.
#   st_malloc   3 x malloc(1000), st_free frees 1   alloc 3/3000  in use 2/2000
#   st_calloc   2 x calloc(7, 30)                   alloc 2/420   in use 2/420
#   st_seed     malloc(100), realloc'ed              alloc 1/100   in use 0/0
#   st_realloc  realloc(p, 3000)                     alloc 1/3000  in use 1/3000
# glibc's static start-up mallocs 5 blocks before main (_dl_get_origin,
# _dl_new_object, 2 x _dl_init_paths, _dl_find_object_init; seen with gdb),
# kept (with LD_LIBRARY_PATH empty; set, _dl_init_paths allocates more).
# Their sizes depend on the executable's path, so only objects are totalled:
#   allocated 7 + 5 = 12 objects, in use 5 + 5 = 10 objects;
#   frees: st_free 1 + realloc's free of st_seed's block 1 = 2.
custom_static() {
	local exe=$TMP/t_static d
	if ! gcc -static -O0 -g -fno-omit-frame-pointer -fno-inline -o "$exe" "$ROOT/tests/static/t_static.c" \
		2>"$TMP/t_static.cc"; then
		fail "custom static: gcc -static tests/static/t_static.c" "$(cat "$TMP/t_static.cc")"
		return
	fi
	LD_LIBRARY_PATH='' profile4 static 0 "$exe"
	expect4 static st_malloc        3     3000    2      2000
	expect4 static st_calloc        2      420    2       420
	expect4 static st_seed          1      100    0         0
	expect4 static st_realloc       1     3000    1      3000
	absent4 static st_free
	expect_events static.alloc_objects allocs=12 frees=2 unmatched_frees=0 missed_frees=0
	expect_total static.alloc_objects 12
	expect_total static.inuse_objects 10
	d=""
	grep -qE "^heaptrace: allocator: .*/t_static\$" "$TMP/static.alloc_objects.err" ||
		d+="no 'allocator: .../t_static' line: $(grep 'allocator:' "$TMP/static.alloc_objects.err")"$'\n'
	grep -qE "^heaptrace: probe malloc +[^ ]*/t_static\+0x" "$TMP/static.alloc_objects.err" ||
		d+="no 'probe malloc .../t_static+0x...' line: $(grep 'probe malloc' "$TMP/static.alloc_objects.err")"$'\n'
	report "custom static: -v names the executable as the allocator and probes its malloc" "$d"
}

# t_entrypoints under LD_PRELOAD'ed jemalloc and tcmalloc_minimal: the same
# numbers as scenario_entrypoints.  jemalloc has no pvalloc: t_entrypoints'
# pvalloc is glibc's, so ep_pvalloc is counted only if libc is probed too;
# glibc's reallocarray tail-calls realloc@plt, i.e. the preloaded realloc.
# Events (-v, alloc_objects): the 27 allocations and 10 frees of
# scenario_entrypoints, plus, from the preloaded libraries' start-up:
#   jemalloc: libstdc++'s emergency exception pool, malloc(72704), kept
#             -> allocs = 28, frees = 10
#   tcmalloc: the same pool, and TCMallocGuard's 2 x 1 byte, both freed
#             -> allocs = 30, frees = 12
custom_preload() {
	local lib name key allocs frees d
	for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
		name=$(basename "$lib" | cut -d. -f1)
		key=pre_${name#lib}
		if [ ! -e "$lib" ]; then
			fail "custom preload: $lib is not installed" ""
			continue
		fi
		LD_PRELOAD=$lib profile4 "$key" 0 "$TB/t_entrypoints"
		expect_entrypoints4 "$key"
		absent4 "$key" ep_realloc_zero ep_free_null ep_free
		case $name in
		libjemalloc) allocs=28 frees=10 ;;
		*) allocs=30 frees=12 ;;
		esac
		expect_events "$key.alloc_objects" allocs=$allocs frees=$frees unmatched_frees=0 missed_frees=0
		d=""
		grep -qE "^heaptrace: allocator: .*/$name\.so[.0-9]*\$" "$TMP/$key.alloc_objects.err" ||
			d+="no 'allocator: .../$name.so' line: $(grep 'allocator:' "$TMP/$key.alloc_objects.err")"$'\n'
		grep -qE "^heaptrace: probe malloc +[^ ]*/$name\.so[.0-9]*\+0x" "$TMP/$key.alloc_objects.err" ||
			d+="no 'probe malloc .../$name.so+0x...' line"$'\n'
		grep -qE '^heaptrace: probe .*/libc\.so\.6\+0x' "$TMP/$key.alloc_objects.err" ||
			d+="no 'probe ... libc.so.6' line: libc is not probed"$'\n'
		[ -n "$d" ] && d+=$(grep -E '^heaptrace: (allocator|probe)' "$TMP/$key.alloc_objects.err" | head -20)
		report "custom preload: -v names $name as the allocator and probes libc.so.6 too" "$d"
	done

	# --lib overrides the choice: under LD_PRELOAD'ed jemalloc, --lib libc
	# probes only libc: jemalloc's malloc (ep_malloc) is not seen; glibc's
	# own entry points are: pvalloc (ep_pvalloc, 8192) and reallocarray,
	# which tail-calls jemalloc's realloc (ep_reallocarray_null 400,
	# ep_reallocarray_grow 600, whose old block came from jemalloc's malloc:
	# 1 unmatched free).  allocs = 3, frees = 0.
	lib=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
	local libc
	libc=$(ldd "$TB/t_entrypoints" | awk '$1 == "libc.so.6" { print $3 }')
	LD_PRELOAD=$lib ht prelib -v --lib "$libc" -f collapsed --value alloc_space -- "$TB/t_entrypoints"
	check_rc prelib 0 "custom preload: --lib $libc under LD_PRELOAD=libjemalloc exits 0"
	expect_leaf prelib ep_pvalloc 8192
	expect_leaf prelib ep_reallocarray_null 400
	expect_leaf prelib ep_reallocarray_grow 600
	expect_leaf prelib ep_malloc 0
	leafset prelib ep_pvalloc ep_reallocarray_null ep_reallocarray_grow
	expect_events prelib allocs=3 frees=0 unmatched_frees=1 missed_frees=0
	d=""
	grep -qE '^heaptrace: allocator: .*/libc\.so\.6$' "$TMP/prelib.err" ||
		d+="no 'allocator: .../libc.so.6' line: $(grep 'allocator:' "$TMP/prelib.err")"$'\n'
	grep -qE '^heaptrace: (allocator|probe) .*jemalloc' "$TMP/prelib.err" &&
		d+="jemalloc is probed: $(grep -E '^heaptrace: (allocator|probe) .*jemalloc' "$TMP/prelib.err" | head -3)"$'\n'
	report "custom preload: --lib libc.so.6 overrides the preloaded jemalloc (-v)" "$d"
}

# Bad specs and missing symbols: one line on stderr naming the problem,
# exit status 2 (README: "are one line and exit status 2").
custom_errors() {
	ht cerr.nosym --sym nosuchsym -- "$TB/t_arena"
	report "custom errors: --sym nosuchsym -> exit 2, one line naming it and where it looked (t_arena)" \
		"$(err_diag cerr.nosym 2 nosuchsym t_arena)"
	ht cerr.arg7 --sym 'arena_alloc:size=arg7' -- "$TB/t_arena"
	report "custom errors: --sym 'arena_alloc:size=arg7' (argN out of range) -> exit 2, one line" \
		"$(err_diag cerr.arg7 2 arg7)"
	ht cerr.arg0 --sym 'arena_alloc:size=arg0' -- "$TB/t_arena"
	report "custom errors: --sym 'arena_alloc:size=arg0' (argN is 1-based) -> exit 2, one line" \
		"$(err_diag cerr.arg0 2 arg0)"
	ht cerr.expr --sym 'arena_alloc:size=arg2**arg4' -- "$TB/t_arena"
	report "custom errors: --sym 'arena_alloc:size=arg2**arg4' (bad expression) -> exit 2, one line" \
		"$(err_diag cerr.expr 2 'arg2**arg4|expression')"
	ht cerr.empty --sym 'arena_alloc:size=' -- "$TB/t_arena"
	report "custom errors: --sym 'arena_alloc:size=' (field needs a value) -> exit 2, one line" \
		"$(err_diag cerr.empty 2 size)"
	ht cerr.field --sym 'arena_alloc:bogus=arg1' -- "$TB/t_arena"
	report "custom errors: --sym 'arena_alloc:bogus=arg1' (unknown field) -> exit 2, one line" \
		"$(err_diag cerr.field 2 bogus)"
	ht cerr.ret --free-sym 'pool_free:ptr=ret' -- "$TB/t_pool"
	report "custom errors: --free-sym 'pool_free:ptr=ret' (no ret for a free) -> exit 2, one line" \
		"$(err_diag cerr.ret 2 ret)"
	ht cerr.lib --sym 'arena_alloc@nosuchlib.so' -- "$TB/t_arena"
	report "custom errors: --sym 'arena_alloc@nosuchlib.so' -> exit 2, one line naming nosuchlib.so" \
		"$(err_diag cerr.lib 2 nosuchlib.so)"
	ht cerr.resetfield --reset-sym 'arena_reset:size=arg1' -- "$TB/t_reset"
	report "custom errors: --reset-sym 'arena_reset:size=arg1' (a reset has only arena) -> exit 2, one line" \
		"$(err_diag cerr.resetfield 2 size)"
}

# ---------------------------------------------------------------------------
# t_threads: 4 threads racing (see the source).
scenario_threads() {
	profile4 threads 0 "$TB/t_threads"
	# 4 threads x 5000 x malloc(48), all freed: 20000 objects, 960000 bytes
	expect4 threads thr_churn   20000 960000   0     0
	# 4 x 500 x malloc(32), each realloc'ed: 2000 objects, 64000 bytes
	expect4 threads thr_rseed    2000  64000   0     0
	# 4 x 500 x realloc(p, 96), freed: 2000 objects, 192000 bytes
	expect4 threads thr_realloc  2000 192000   0     0
	# 4 x 50 x malloc(64) kept: 200 objects, 12800 bytes
	expect4 threads thr_keep      200  12800 200 12800
	# 4 x 25 x malloc(200), freed by the main thread: 100 objects, 20000 bytes
	expect4 threads thr_handoff   100  20000   0     0
	# worker and main_free_handoff only free; glibc's own thread set-up
	# (DTV calloc) shows up under glibc functions and is not checked.
	absent_leaf4 threads worker main_free_handoff main
	# Event counters: allocs = 20000 + 2000 + 2000 + 200 + 100 = 24300 of
	# ours + 4 callocs by glibc (one DTV per thread, allocate_dtv; seen
	# with valgrind --trace-malloc) = 24304.  Matched frees = 20000 (churn)
	# + 2000 (realloc's free of the 32-byte blocks) + 2000 (the 96-byte
	# blocks) + 100 (handoff) = 24100.  unmatched_frees is not checked: at
	# thread exit glibc's tcache_thread_shutdown() calls free() on every
	# chunk left in the thread's tcache (already freed once) and on the
	# tcache itself (allocated with _int_malloc, never through malloc), so
	# it is legitimately non-zero here.
	expect_events threads.alloc_objects allocs=24304 frees=24100
}

# ---------------------------------------------------------------------------
# t_ctor: allocations before main and after main returns.
scenario_ctor() {
	profile4 ctor 0 "$TB/t_ctor"
	expect4 ctor preinit_alloc 1  1500 1  1500  # .preinit_array: malloc(1500)
	expect4 ctor ctor_alloc    3 12963 3 12963  # constructor: 3 x malloc(4321)
	expect4 ctor ctor_freed    2  1998 0     0  # constructor: 2 x malloc(999), freed in main
	expect4 ctor main_alloc    1   100 1   100  # malloc(100)
	expect4 ctor dtor_alloc    1  2345 1  2345  # destructor: malloc(2345)
	absent4 ctor main_free
	leafset4 ctor
	no_loss_line ctor.inuse_space
}

# ---------------------------------------------------------------------------
# t_exit: exit(3), _exit(5), the command's stdout, -o and --collapsed.
scenario_exit() {
	profile4 exit 3 "$TB/t_exit"
	expect4 exit exit_keep    5 12500 5 12500  # 5 x malloc(2500) kept
	expect4 exit exit_freed   2  1400 0     0  # 2 x malloc(700), freed
	expect4 exit atexit_alloc 1  1357 1  1357  # atexit handler: malloc(1357)
	absent4 exit exit_release
	leafset4 exit
	no_loss_line exit.inuse_space

	# Profile on stdout: the command's stdout goes to heaptrace's stderr.
	local d=""
	grep -q 't_exit: stdout marker' "$TMP/exit.alloc_objects.out" &&
		d+="the command's output is in heaptrace's stdout (the profile)"$'\n'
	grep -q 't_exit: stdout marker' "$TMP/exit.alloc_objects.err" ||
		d+="the command's output is not in heaptrace's stderr"$'\n'
	report "exit: command stdout goes to stderr when the profile goes to stdout" "$d"

	# _exit(5) skips the atexit handler.
	ht exit_ -f collapsed --value alloc_space -- "$TB/t_exit" _exit
	check_rc exit_ 5 "exit: _exit(5) -> heaptrace exits 5"
	expect_leaf exit_ exit_keep 12500
	expect_leaf exit_ exit_freed 1400
	expect_leaf exit_ atexit_alloc 0

	# No "--": COMMAND is the first non-option, and what follows it, even
	# "-v", belongs to the command (t_exit -v is _exit(5)).
	ht exit_noddash -f collapsed --value alloc_space "$TB/t_exit" -v
	check_rc exit_noddash 5 "exit: heaptrace OPTS COMMAND -v (no --) passes -v to the command: exits 5"
	expect_leaf exit_noddash exit_keep 12500
	expect_leaf exit_noddash atexit_alloc 0

	# COMMAND is looked up in PATH.
	PATH="$TB:$PATH" ht exit_path -f collapsed --value inuse_objects -- t_exit
	check_rc exit_path 3 "exit: COMMAND found through PATH: exits 3"
	expect_leaf exit_path exit_keep 5

	# -o FILE: the profile goes to FILE, the command keeps its stdout.
	ht exit_o -o "$TMP/exit_o.prof" -f collapsed --value alloc_space -- "$TB/t_exit"
	check_rc exit_o 3 "exit: -o FILE run exits 3"
	d=""
	grep -q 't_exit: stdout marker' "$TMP/exit_o.out" ||
		d+="the command's output is not on stdout with -o FILE"$'\n'
	[ -s "$TMP/exit_o.prof" ] || d+="$TMP/exit_o.prof is empty or missing"$'\n'
	report "exit: -o FILE writes the profile to FILE, command stdout stays on stdout" "$d"
	cp "$TMP/exit_o.prof" "$TMP/exit_ofile.out" 2>/dev/null || : >"$TMP/exit_ofile.out"
	expect_leaf exit_ofile exit_keep 12500
	expect_leaf exit_ofile exit_freed 1400
	expect_leaf exit_ofile atexit_alloc 1357

	# --collapsed with no --value reports inuse_space.
	ht exit_c --collapsed -- "$TB/t_exit"
	check_rc exit_c 3 "exit: --collapsed run exits 3"
	expect_leaf exit_c exit_keep 12500
	expect_leaf exit_c exit_freed 0
	expect_leaf exit_c atexit_alloc 1357
	collapsed_wellformed exit_c
}

# ---------------------------------------------------------------------------
# t_failed: failing allocations count nothing; a failed realloc or
# reallocarray leaves the old block in use.
scenario_failed() {
	profile4 failed 0 "$TB/t_failed"
	expect4 failed fail_seed 1 123 1 123  # malloc(123), kept
	absent4 failed fail_malloc fail_calloc fail_realloc fail_reallocarray \
		fail_posix_memalign fail_aligned_alloc fail_valloc fail_pvalloc
	leafset4 failed
	# 1 allocation, no free of any kind.
	# 8 failures: one per allocating entry point, realloc and reallocarray included.
	expect_events failed.alloc_objects allocs=1 frees=0 unmatched_frees=0 failed_allocs=8
	# A failed allocation is an event, not a loss: no events line without -v.
	no_loss_line failed.inuse_space
}

# ---------------------------------------------------------------------------
# t_deep: an allocation 300 calls deep, past the 127 frames of a stack trace.
scenario_deep() {
	ht deep -f collapsed --value alloc_space -- "$TB/t_deep"
	check_rc deep 0 "deep: run exits 0"
	expect_leaf deep deep_leaf 4242     # malloc(4242) under 300 x recurse
	expect_leaf deep shallow_leaf 1717  # malloc(1717) from main
	leafset deep deep_leaf shallow_leaf
	no_loss_line deep
}

# ---------------------------------------------------------------------------
# t_signal: killed by SIGKILL (137) and SIGSEGV (139); profile still written.
scenario_signal() {
	ht sigkill_as -f collapsed --value alloc_space -- "$TB/t_signal"
	check_rc sigkill_as 137 "signal: SIGKILL -> heaptrace exits 137"
	expect_leaf sigkill_as sig_keep 2222   # 2 x malloc(1111)
	expect_leaf sigkill_as sig_freed 222   # malloc(222), freed
	ht sigkill_is -f collapsed --value inuse_space -- "$TB/t_signal"
	check_rc sigkill_is 137 "signal: SIGKILL -> heaptrace exits 137 (inuse_space run)"
	expect_leaf sigkill_is sig_keep 2222
	expect_leaf sigkill_is sig_freed 0
	ht sigsegv -f collapsed --value inuse_objects -- "$TB/t_signal" segv
	check_rc sigsegv 139 "signal: SIGSEGV -> heaptrace exits 139"
	expect_leaf sigsegv sig_keep 2
	expect_leaf sigsegv sig_freed 0
}

# ---------------------------------------------------------------------------
# Errors: one line on stderr, non-zero exit.
scenario_errors() {
	local name="heaptrace-no-such-command-$$" d
	ht notfound -- "$name"
	d=$(rc_diag notfound 127)
	d+=$(one_line_diag notfound)
	report "errors: command not found -> exit 127, one line on stderr" "$d"

	local pid
	pid=$(free_pid)
	ht nopid -p "$pid"
	d=""
	if [ "$RC" = 0 ] || [ "$RC" -ge 124 ]; then
		d+="exit status $RC, want a non-zero error exit"$'\n'
	fi
	d+=$(one_line_diag nopid)
	report "errors: -p $pid (no such process) -> non-zero exit, one line on stderr" "$d"

	# Without privileges the BPF load fails: the error names what is needed.
	echo "setpriv (nobody, no capabilities) heaptrace /bin/true" >"$TMP/noperm.cmd"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$HT" /bin/true >"$TMP/noperm.out" 2>"$TMP/noperm.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/noperm.rc"
	d=""
	[ "$RC" = 0 ] && d+="exit status 0, want an error exit"$'\n'
	d+=$(one_line_diag noperm)
	grep -q 'CAP_BPF' "$TMP/noperm.err" && grep -q 'CAP_PERFMON' "$TMP/noperm.err" ||
		d+="the error does not name CAP_BPF and CAP_PERFMON: $(head -1 "$TMP/noperm.err")"$'\n'
	report "errors: unprivileged -> non-zero exit, one line naming CAP_BPF and CAP_PERFMON" "$d"

	# A static program with no malloc at all: nothing to probe.
	cat >"$TMP/nomalloc.c" <<'EOC'
void _start(void)
{
	__asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
}
EOC
	if gcc -nostdlib -static -O1 "$TMP/nomalloc.c" -o "$TMP/nomalloc" 2>"$TMP/nomalloc.cc"; then
		ht nomalloc -- "$TMP/nomalloc"
		d=""
		[ "$RC" = 0 ] && d+="exit status 0, want an error exit"$'\n'
		d+=$(one_line_diag nomalloc)
		grep -q 'no allocator found' "$TMP/nomalloc.err" ||
			d+="stderr does not say 'no allocator found': $(head -1 "$TMP/nomalloc.err")"$'\n'
		report "errors: a program without malloc -> 'no allocator found', non-zero exit" "$d"
	else
		fail "errors: cannot build the no-malloc program" "$(cat "$TMP/nomalloc.cc")"
	fi

	# Bad options: exit 2 and one line.
	ht badfmt -f xml -- /bin/true
	d=$(rc_diag badfmt 2)
	d+=$(one_line_diag badfmt)
	report "errors: -f xml -> exit 2, one line on stderr" "$d"
	ht bothmodes -p 1 -- /bin/true
	d=$(rc_diag bothmodes 2)
	d+=$(one_line_diag bothmodes)
	report "errors: -p and a command together -> exit 2, one line on stderr" "$d"
}

# ---------------------------------------------------------------------------
# -p mode with t_wait.  Before attach: pre_alloc 10 x 512.  Traced:
#   post_alloc 6 x 640, 2 freed (post_free)  -> alloc 6/3840, in use 4/2560
#   post_realloc_pre: realloc(pre block, 1500) -> alloc 1/1500, in use 1/1500,
#                                                 1 unmatched free
#   post_free_pre frees 3 pre blocks            -> 3 unmatched frees
#   free(NULL)                                  -> nothing
# so allocs=7, frees=2, unmatched_frees=4; pre_alloc is never seen.
# After release: final_churn 3 x malloc(77), freed (alloc 3/231), counted only
# while heaptrace is still attached.
scenario_attach() {
	# Stopped by SIGINT, inuse_space.
	if pstart attach_int -f collapsed --value inuse_space; then
		pfinish attach_int INT
		expect_leaf attach_int post_alloc 2560
		expect_leaf attach_int post_realloc_pre 1500
		leafset attach_int post_alloc post_realloc_pre
		expect_events attach_int allocs=7 frees=2 unmatched_frees=4
	fi

	# Stopped by --duration while the target is alive, alloc_objects.
	if pstart attach_dur -d 4 -f collapsed --value alloc_objects; then
		pfinish attach_dur DURATION
		expect_leaf attach_dur post_alloc 6
		expect_leaf attach_dur post_realloc_pre 1
		leafset attach_dur post_alloc post_realloc_pre
		expect_events attach_dur unmatched_frees=4
	fi

	# Stopped by the process exiting, alloc_space.
	if pstart attach_exit -f collapsed --value alloc_space; then
		pfinish attach_exit EXIT
		expect_leaf attach_exit post_alloc 3840
		expect_leaf attach_exit post_realloc_pre 1500
		expect_leaf attach_exit final_churn 231
		leafset attach_exit post_alloc post_realloc_pre final_churn
		expect_events attach_exit unmatched_frees=4
	fi

	# Stopped by SIGTERM, pprof to a file: header totals
	# in use 4 + 1 = 5 objects, 2560 + 1500 = 4060 bytes;
	# allocated 6 + 1 = 7 objects, 3840 + 1500 = 5340 bytes.
	if pstart attach_term -o "$TMP/attach_term.prof"; then
		pfinish attach_term TERM
		pprof_header "$TMP/attach_term.prof" "attach: -p pprof header totals" 5 4060 7 5340
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
			for (j = 1; j <= nvf[f]; j++) s = s " " sprintf("%.0f", sum[f, j])
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
	[ "$line" = "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]" ] ||
		d+="sample types: '$line', want 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]'"$'\n'
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
	report "proto: go tool pprof -raw with no binary: 4 sample types (inuse_space default), period space/bytes, time, duration, comments heaptrace/command/events" "$d"

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
	[ "$line" = "alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes" ] ||
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
	[ "$line" = "alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes" ] ||
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
		heaptrace_events_total:counter; do
		grep -qx "# TYPE ${line%:*} ${line#*:}" "$TMP/proto_metrics.body" || d+="no '# TYPE ${line%:*} ${line#*:}'"$'\n'
	done
	r=$(grep -v '^#' "$TMP/proto_metrics.body" | grep -vE '^[a-z_]+(\{event="[a-z_]+"\})? [0-9]+$' | head -3)
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
	# Uprobe sessions from kernel 6.13 on; --follow-fork always keeps return probes.
	local kernel session="unsampled calls skip their return probe (uprobe sessions)"
	local plain="unsampled calls still take their return probe"
	kernel=$(uname -r | sed 's/[^0-9.].*//')
	printf '6.13\n%s\n' "$kernel" | sort -V -C || session=$plain
	sample_estimates sample_s "sampled" "$session" --sample-rate 64K
	sample_estimates sample_f "sampled, --follow-fork" "$plain" --follow-fork --sample-rate 64K
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
# Unit tests of single modules (tests/unit, built into build/unit): each is a
# program whose own last line is "N passed, N failed".
scenario_unit() {
	local u name d
	for u in "$ROOT"/build/unit/*; do
		[ -x "$u" ] || continue
		name=$(basename "$u")
		timeout -k 5 "$(tmo)" "$u" >"$TMP/unit.$name.out" 2>&1
		RC=$?
		d=""
		[ "$RC" = 0 ] || d+="exit status $RC"$'\n'
		tail -1 "$TMP/unit.$name.out" | grep -Eq '^[0-9]+ passed, 0 failed$' ||
			d+="last line: $(tail -1 "$TMP/unit.$name.out")"$'\n'
		[ -n "$d" ] && d+=$(grep '^not ok' "$TMP/unit.$name.out" | head -10)
		report "unit: $name ($(tail -1 "$TMP/unit.$name.out"))" "$d"
	done
	[ -e "$ROOT/build/unit/test_symbolize" ] || fail "unit: build/unit/test_symbolize not built" ""
	[ -e "$ROOT/build/unit/test_sample" ] || fail "unit: build/unit/test_sample not built" ""
}

# ---------------------------------------------------------------------------
# heaptrace's own memory under valgrind: no invalid access, no definite leak,
# and the same exact numbers as without it.  tests/valgrind.supp holds only
# valgrind's gaps in modelling bpf(2) attributes.
scenario_valgrind() {
	if ! command -v valgrind >/dev/null; then
		fail "valgrind: not installed" ""
		return
	fi
	local d=""
	echo "valgrind heaptrace -f collapsed --value alloc_space -- build/tests/t_entrypoints" >"$TMP/vg.cmd"
	timeout -k 5 120 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--suppressions="$ROOT/tests/valgrind.supp" \
		"$HT" -f collapsed --value alloc_space -- "$TB/t_entrypoints" \
		>"$TMP/vg.out" 2>"$TMP/vg.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/vg.rc"
	[ "$RC" = 0 ] || d+="exit status $RC (99: valgrind found errors)"$'\n'
	grep -q '^==[0-9]*== ' "$TMP/vg.err" && d+=$(grep '^==[0-9]*== ' "$TMP/vg.err" | head -20)$'\n'
	report "valgrind: heaptrace -f collapsed on t_entrypoints is memcheck-clean" "$d"
	expect_leaf vg ep_malloc 4000
	expect_leaf vg ep_pvalloc 8192
	expect_leaf vg ep_realloc_big 400000
}

# ---------------------------------------------------------------------------
# Probe placement (--probe-at=auto, the default) moves probes past leading
# instructions the kernel would single-step.  It must change nothing: for
# glibc, jemalloc and tcmalloc (preloaded), every entry point gives the same
# exact per-function sums as probes at the entries, and the known numbers.
scenario_placement() {
	local lib name v d
	for lib in libc /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
		name=$(basename "$lib" | cut -d. -f1)
		if [ "$lib" != libc ] && [ ! -e "$lib" ]; then
			fail "placement: $lib is not installed" ""
			continue
		fi
		for v in alloc_space inuse_objects; do
			for at in auto entry; do
				if [ "$lib" = libc ]; then
					ht "pl.$name.$v.$at" -v --probe-at=$at -f collapsed --value $v -- "$TB/t_entrypoints"
				else
					LD_PRELOAD=$lib ht "pl.$name.$v.$at" -v --probe-at=$at -f collapsed --value $v -- "$TB/t_entrypoints"
				fi
			done
			d=$(rc_diag "pl.$name.$v.auto" 0)$(rc_diag "pl.$name.$v.entry" 0)
			if ! diff <(sums "pl.$name.$v.auto" | sort) <(sums "pl.$name.$v.entry" | sort) >"$TMP/pl.$name.$v.diff"; then
				d+="per-function sums differ (auto < > entry):"$'\n'"$(head -20 "$TMP/pl.$name.$v.diff")"
			fi
			[ -s "$TMP/pl.$name.$v.auto.out" ] || d+="empty profile"$'\n'
			report "placement: $name $v: --probe-at=auto and =entry give the same sums" "$d"
		done
		grep -q "allocator: .*${name}" "$TMP/pl.$name.alloc_space.auto.err" ||
			fail "placement: $name is the allocator traced" "$(grep allocator: "$TMP/pl.$name.alloc_space.auto.err")"
		# The entry points every allocator has, with the numbers of scenario_entrypoints.
		expect_leaf "pl.$name.alloc_space.auto" ep_malloc 4000
		expect_leaf "pl.$name.alloc_space.auto" ep_calloc 600
		expect_leaf "pl.$name.alloc_space.auto" ep_realloc_grow 5000
		expect_leaf "pl.$name.alloc_space.auto" ep_posix_memalign 2468
		expect_leaf "pl.$name.alloc_space.auto" ep_aligned_alloc 4096
		expect_leaf "pl.$name.inuse_objects.auto" ep_malloc 3
		expect_leaf "pl.$name.inuse_objects.auto" ep_valloc 1
	done
	# -v names each probe's function, offset, instruction and reason.
	d=""
	grep -q 'probe free .*= free+3 `je ' "$TMP/pl.libc.alloc_space.auto.err" ||
		d+="no 'free+3 \`je' line: $(grep 'probe free' "$TMP/pl.libc.alloc_space.auto.err")"$'\n'
	grep -q 'probe malloc .*= malloc+0 `push r12`: entry: a push of a register, emulated' "$TMP/pl.libc.alloc_space.auto.err" ||
		d+="no 'malloc+0 push r12' line: $(grep 'probe malloc' "$TMP/pl.libc.alloc_space.auto.err")"$'\n'
	grep -q 'probe free .*= free+0 `test rdi, rdi`: entry (--probe-at=entry)' "$TMP/pl.libc.alloc_space.entry.err" ||
		d+="--probe-at=entry does not probe free+0: $(grep 'probe free' "$TMP/pl.libc.alloc_space.entry.err")"$'\n'
	report "placement: -v shows function, offset, instruction and why" "$d"
}

# ---------------------------------------------------------------------------
# heaptrace's own frame-pointer walk (--unwind fp: one bulk copy of the
# stack, frames walked in BPF) must give exactly the stacks of the kernel's
# walk (bpf_get_stack).  ASLR is off for both runs (setarch -R) so
# addresses compare directly.  (The CFI walk, which goes further than
# frame pointers can, is checked by scenario_unwind.)
scenario_stacks() {
	local t depth m d
	for t in t_deep t_threads t_entrypoints t_ctor; do
		for depth in 127 64 5; do
			for m in walk kernel; do
				echo "setarch -R heaptrace --unwind fp --stack-capture $m --max-depth $depth -o \$TMP/st.$t.$depth.$m build/tests/$t" \
					>"$TMP/st.$t.$depth.$m.cmd"
				timeout -k 5 "$(tmo)" setarch x86_64 -R "$HT" --unwind fp --stack-capture $m --max-depth $depth \
					-o "$TMP/st.$t.$depth.$m.out" -- "$TB/$t" >/dev/null 2>"$TMP/st.$t.$depth.$m.err" </dev/null
				echo $? >"$TMP/st.$t.$depth.$m.rc"
			done
			d=$(rc_diag "st.$t.$depth.walk" 0)$(rc_diag "st.$t.$depth.kernel" 0)
			local a="$TMP/st.$t.$depth.walk.out" b="$TMP/st.$t.$depth.kernel.out"
			[ "$(grep -c '@ 0x' "$a")" -gt 0 ] || d+="no stacks in the profile"$'\n'
			if ! diff <(sed '/^MAPPED_LIBRARIES/,$d' "$a" | sort) <(sed '/^MAPPED_LIBRARIES/,$d' "$b" | sort) \
				>"$TMP/st.$t.$depth.diff"; then
				d+="profiles differ (walk < > kernel):"$'\n'"$(head -10 "$TMP/st.$t.$depth.diff")"
			fi
			# No stack is deeper than --max-depth.
			local deepest
			deepest=$(awk '/@ 0x/ { n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^0x/) n++; if (n > m) m = n } END { print m + 0 }' "$a")
			[ "$deepest" -le "$depth" ] || d+="a stack of $deepest frames with --max-depth $depth"$'\n'
			report "stacks: $t --max-depth $depth: own walk = kernel walk, frame for frame ($deepest frames deepest)" "$d"
		done
	done
}

# ---------------------------------------------------------------------------
# --unwind fp|dwarf|auto (default auto: CFI from .eh_frame / .debug_frame
# where an object has it, frame pointers elsewhere): stacks through code
# built without frame pointers.  build/tests/nofp/ holds t_entrypoints,
# t_deep and t_threads built -O2 -fomit-frame-pointer, and t_shop (C++,
# through Debian's libstdc++, whose operator new keeps no frame pointer
# either); build/tests/t_shop is t_shop with frame pointers in the program
# only (see the Makefile).  A frame-pointer walk gets the innermost frame
# (the allocator's caller) right and loses or garbles the frames above it:
# the per-function sums pass with it, the whole-stack checks need a CFI
# unwinder.  Whole stacks are checked up to main (stackval: stacks ending
# with "main;..."): what is above main is libc's, and gdb's bt stops there
# too.  The default mode (auto) runs the main checks; unwind_modes and the
# badinput rows need the --unwind option itself.
scenario_unwind() {
	local t d=""
	for t in "$TB/nofp/t_entrypoints" "$TB/nofp/t_deep" "$TB/nofp/t_threads" "$TB/nofp/t_shop" "$TB/t_shop"; do
		[ -x "$t" ] || d+="$(rel "$t") not built (make test-targets)"$'\n'
	done
	command -v gdb >/dev/null || d+="gdb is not installed: the gdb comparisons cannot run"$'\n'
	report "unwind: nofp targets and t_shop built, gdb installed" "$d"
	unwind_c
	unwind_shop
	unwind_modes
	unwind_gdb
}

# The C targets without frame pointers: the exact numbers of
# scenario_entrypoints, scenario_deep and scenario_threads, by innermost
# frame and by whole stack, and line for line the profiles of their
# frame-pointer builds.
unwind_c() {
	local nb=$TB/nofp
	profile4 uw.ep 0 "$nb/t_entrypoints"
	expect_entrypoints4 uw.ep
	expect_entrypoints4 uw.ep main
	absent4 uw.ep ep_realloc_zero ep_free_null ep_free
	leafset4 uw.ep
	# -O2 calls malloc(333) for realloc(NULL, 333): the same events.
	expect_events uw.ep.alloc_objects allocs=27 frees=10 unmatched_frees=0
	profile4 uw.epfp 0 "$TB/t_entrypoints"
	uw_same4 uw.ep uw.epfp "unwind: nofp/t_entrypoints and t_entrypoints (frame pointers): the same profiles, line for line"

	# deep_leaf's malloc(4242) is under 301 recurse frames; the default
	# --max-depth 64 keeps the innermost 64: deep_leaf and 63 recurse.
	ht uw.deep -f collapsed --value alloc_space -- "$nb/t_deep"
	check_rc uw.deep 0 "unwind: nofp/t_deep run exits 0"
	expect_leaf uw.deep deep_leaf 4242
	expect_leaf uw.deep shallow_leaf 1717
	leafset uw.deep deep_leaf shallow_leaf
	uw_expect_stack uw.deep "main;shallow_leaf" 1717
	uw_expect_line uw.deep "$(printf 'recurse;%.0s' {1..63})deep_leaf 4242"
	ht uw.deepfp -f collapsed --value alloc_space -- "$TB/t_deep"
	uw_same uw.deep uw.deepfp "unwind: nofp/t_deep and t_deep (frame pointers): the same profiles, line for line"

	# t_threads: the numbers of scenario_threads; each thr_* under worker
	# (what is above worker is libc's thread start).
	profile4 uw.thr 0 "$nb/t_threads"
	#                                                    alloc   alloc  inuse inuse
	#                                                    objects space  objects space
	expect4 uw.thr thr_churn                             20000 960000   0     0
	expect4 uw.thr thr_rseed                              2000  64000   0     0
	expect4 uw.thr thr_realloc                            2000 192000   0     0
	expect4 uw.thr thr_keep                                200  12800 200 12800
	expect4 uw.thr thr_handoff                             100  20000   0     0
	expect_stack4 uw.thr "worker;thr_churn"              20000 960000   0     0
	expect_stack4 uw.thr "worker;thr_rseed"               2000  64000   0     0
	expect_stack4 uw.thr "worker;thr_realloc"             2000 192000   0     0
	expect_stack4 uw.thr "worker;thr_keep"                 200  12800 200 12800
	expect_stack4 uw.thr "worker;thr_handoff"              100  20000   0     0
	absent_leaf4 uw.thr worker main_free_handoff main
	expect_events uw.thr.alloc_objects allocs=24304 frees=24100
	profile4 uw.thrfp 0 "$TB/t_threads"
	uw_same4 uw.thr uw.thrfp "unwind: nofp/t_threads and t_threads (frame pointers): the same profiles, line for line"
}

# t_shop (see its source), without frame pointers anywhere (nofp/t_shop)
# and with them in the program but not in libstdc++ (t_shop), where a
# frame-pointer walk loses the frame that called operator new.
unwind_shop() {
	profile4 uw.shop 0 "$TB/nofp/t_shop"
	shop_expect4 uw.shop
	profile4 uw.shopfp 0 "$TB/t_shop"
	shop_expect4 uw.shopfp
	uw_same4 uw.shop uw.shopfp "unwind: nofp/t_shop and t_shop (frame pointers): the same profiles, line for line"
}

# shop_expect4 KEY: t_shop's stacks in the four runs of profile4 KEY.
# Frames are named as heaptrace's symbolizer names them: demangled, without
# parameters ("operator new", both for operator new(unsigned long) and for
# the nothrow operator new(unsigned long, std::nothrow_t const&) that calls
# it); operator new[] is a jump to operator new in libstdc++, not a frame.
# libstdc++'s emergency exception pool (a malloc in a libstdc++ constructor,
# before main; 72704 bytes on Debian 12) is not under main and not checked.
shop_expect4() {
	local key=$1 vec="std::vector<long, std::allocator<long> >"
	#                                                                            alloc   alloc  inuse   inuse
	#                                                                            objects space  objects space
	expect_stack4 "$key" "main;shop::Widget::make;operator new"                   1000  88000   750  66000  # new Widget (88 bytes); 250 deleted
	expect_stack4 "$key" "main;shop::make_label;operator new"                       20  60000    12  36000  # new char[3000]; 8 deleted
	expect_stack4 "$key" "main;shop::Order::place;operator new;operator new"       100   5600   100   5600  # new (std::nothrow) Order (56 bytes)
	expect_stack4 "$key" "main;operator new"                                         1     24     1     24  # new Ledger (24 bytes)
	# push_back of 1000 longs: buffers of 8 x 1, 2, 4, ... 1024 bytes, the
	# last kept.  The frames between the out-of-line _M_realloc_insert (g++
	# 12; _M_realloc_append in g++ 14) and operator new are inlined allocator
	# calls, one frame each (compared exactly with gdb in unwind_gdb).
	uw_expect_re4 "$key" "(^|;)main;shop::Ledger::fill;$vec::push_back;$vec::_M_realloc_[a-z]+<[^;]*>;([^;]+;)*operator new\$" \
		11 16376 1 8192
	# All of the program's blocks, innermost frame operator new: the five
	# stacks above hold them all (1000 + 20 + 100 + 1 + 11 objects; 88000 +
	# 60000 + 5600 + 24 + 16376 bytes; in use 750 + 12 + 100 + 1 + 1,
	# 66000 + 36000 + 5600 + 24 + 8192).
	expect4 "$key" "operator new"                                                 1132 170000   864 115816
}

# --unwind itself: dwarf is auto's result here, fp is today's walk.
unwind_modes() {
	local nb=$TB/nofp
	profile4x uw.shopdw 0 --unwind dwarf -- "$nb/t_shop"
	shop_expect4 uw.shopdw
	ht uw.shopauto --unwind auto -f collapsed --value alloc_space -- "$nb/t_shop"
	check_rc uw.shopauto 0 "unwind: --unwind auto run on nofp/t_shop exits 0"
	uw_same uw.shopauto uw.shop.alloc_space "unwind: --unwind auto = the default (nofp/t_shop), line for line"
	ht uw.epdw --unwind dwarf -f collapsed --value alloc_space -- "$nb/t_entrypoints"
	check_rc uw.epdw 0 "unwind: --unwind dwarf run on nofp/t_entrypoints exits 0"
	uw_same uw.epdw uw.ep.alloc_space "unwind: --unwind dwarf = the default (nofp/t_entrypoints), line for line"

	# fp keeps the frame-pointer walk: complete stacks where every frame
	# has a frame pointer (t_entrypoints, -O0 -fno-omit-frame-pointer)...
	profile4x uw.epfpw 0 --unwind fp -- "$TB/t_entrypoints"
	expect_entrypoints4 uw.epfpw main
	# ...and, EXPECTED DIFFERENCE (documents what the mode changes), not
	# through code without them: on nofp/t_shop the innermost frame is
	# still right, the frames above operator new are not.
	ht uw.shopfpw --unwind fp -f collapsed --value alloc_space -- "$nb/t_shop"
	check_rc uw.shopfpw 0 "unwind: --unwind fp run on nofp/t_shop exits 0"
	expect_leaf uw.shopfpw "operator new" 170000
	uw_expect_stack uw.shopfpw "main;shop::Widget::make;operator new" 0 \
		"unwind: EXPECTED DIFFERENCE: --unwind fp on nofp/t_shop cannot give main;shop::Widget::make;operator new (= 0)"
}

# gdb's backtrace at one known allocation (a breakpoint on malloc when its
# size argument is SIZE), from malloc's caller up to main, against
# heaptrace's stack of the one line whose alloc_space value is that site's
# total: the site is found by its bytes, not by its frames.
unwind_gdb() {
	local nb=$TB/nofp
	uw_gdb_vs uw.gdb.widget "$nb/t_shop" 88 uw.shop.alloc_space 88000
	uw_gdb_vs uw.gdb.label "$nb/t_shop" 3000 uw.shop.alloc_space 60000
	uw_gdb_vs uw.gdb.order "$nb/t_shop" 56 uw.shop.alloc_space 5600
	uw_gdb_vs uw.gdb.vector "$nb/t_shop" 64 uw.shop.alloc_space 16376
	uw_gdb_vs uw.gdb.widgetfp "$TB/t_shop" 88 uw.shopfp.alloc_space 88000
	uw_gdb_vs uw.gdb.ep "$nb/t_entrypoints" 1000 uw.ep.alloc_space 4000
	uw_gdb_vs uw.gdb.deep "$nb/t_deep" 4242 uw.deep 4242
}

# uw_gdb KEY BINARY SIZE: BINARY under gdb -batch: run to main, break at
# malloc's entry when $rdi (the size) is SIZE, bt.  Output in KEY.out and
# KEY.err; the function names of the backtrace, frame 1 (malloc's caller)
# to main, innermost first, one a line, in KEY.frames; frame 0's in
# KEY.frame0.  gdb prints "#N  0xADDR in FUNC (ARGS) at FILE:LINE", or for
# an inlined frame or one at a line's start "#N  FUNC (ARGS) ...", and for
# code without debug information "FUNC(PARAMETER TYPES) () from LIB":
# ARGS and PARAMETER TYPES go.
uw_gdb() {
	local key=$1 bin=$2 size=$3
	echo "gdb -batch $(rel "$bin"): break main, run, break *malloc if \$rdi == $size, continue, bt" >"$TMP/$key.cmd"
	: >"$TMP/$key.frames"
	: >"$TMP/$key.frame0"
	if ! command -v gdb >/dev/null; then
		: >"$TMP/$key.out"
		echo "gdb not installed" >"$TMP/$key.err"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	timeout -k 5 "$(tmo)" gdb -nx -batch \
		-ex 'set debuginfod enabled off' -ex 'set pagination off' -ex 'set confirm off' \
		-ex 'set width unlimited' -ex 'set startup-with-shell off' -ex 'set print frame-arguments none' \
		-ex 'break main' -ex run -ex "break *malloc if \$rdi == $size" -ex continue -ex bt -ex kill \
		"$bin" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
	awk -v f0="$TMP/$key.frame0" '
	/^#[0-9]+ / {
		n = substr($1, 2) + 0
		s = $0
		sub(/^#[0-9]+ +/, "", s)
		sub(/^0x[0-9a-fA-F]+ in /, "", s)
		# The name ends at " (" (its arguments); from the second character
		# on, for "(anonymous namespace)::f".
		i = index(substr(s, 2), " (")
		if (i) s = substr(s, 1, i)
		# "operator new(unsigned long)": drop a trailing parameter list.
		if (s ~ /\)$/ && s !~ /operator\(\)$/) {
			d = 0
			for (j = length(s); j > 0; j--) {
				c = substr(s, j, 1)
				if (c == ")") d++
				else if (c == "(" && --d == 0) break
			}
			if (j > 1) s = substr(s, 1, j - 1)
		}
		if (n == 0) { print s > f0; next }
		print s
		if (s == "main") exit
	}' "$TMP/$key.out" >"$TMP/$key.frames"
}

# uw_gdb_vs KEY BINARY SIZE HTKEY VALUE: uw_gdb KEY BINARY SIZE, and the
# frames must be those of the line of $TMP/HTKEY.out with value VALUE (the
# only one), innermost first up to main.  gdb frames past heaptrace's
# default --max-depth (64) are not compared.
uw_gdb_vs() {
	local key=$1 bin=$2 size=$3 hkey=$4 value=$5 d n g h
	uw_gdb "$key" "$bin" "$size"
	d=$(rc_diag "$key" 0)
	grep -q 'malloc' "$TMP/$key.frame0" ||
		d+="gdb did not stop in malloc(${size}): frame 0 '$(cat "$TMP/$key.frame0")'"$'\n'"$(grep -v '^$' "$TMP/$key.out" | tail -4)"$'\n'
	g=$(head -64 "$TMP/$key.frames")
	[ -n "$g" ] || d+="no frames from gdb's bt"$'\n'
	n=$(awk -v v="$value" 'match($0, / [0-9]+$/) && substr($0, RSTART + 1) == v' "$TMP/$hkey.out" 2>/dev/null | wc -l)
	if [ "$n" != 1 ]; then
		d+="$n lines with value $value in $hkey, want 1:"$'\n'"$(sed -n '1,8p' "$TMP/$hkey.out" 2>/dev/null)"
	else
		h=$(awk -v v="$value" 'match($0, / [0-9]+$/) && substr($0, RSTART + 1) == v {
			n = split(substr($0, 1, RSTART - 1), f, ";")
			for (i = n; i >= 1; i--) { print f[i]; if (f[i] == "main") break }
		}' "$TMP/$hkey.out")
		[ "$h" = "$g" ] || d+="gdb:       $(echo "$g" | paste -sd'|')"$'\n'"heaptrace: $(echo "$h" | paste -sd'|')"$'\n'
	fi
	report "unwind: gdb bt at malloc($size) in $(rel "$bin") = heaptrace's stack of its $value-byte line, caller to main" "$d"
}

# uw_expect_stack KEY FRAMES N [NAME]: the lines of $TMP/KEY.out whose
# stack ends with FRAMES (stackval) add up to N, in a non-empty profile.
uw_expect_stack() {
	local g d=""
	g=$(stackval "$1" "$2")
	[ -s "$TMP/$1.out" ] || d+="empty profile"$'\n'"$(ctx "$1")"$'\n'
	[ "$g" = "$3" ] || d+="got $g"$'\n'"$(sed -n '1,8p' "$TMP/$1.out")"
	report "${4:-$1: stacks ending $2 = $3}" "$d"
}

# uw_expect_line KEY LINE: LINE is a whole line of $TMP/KEY.out.
uw_expect_line() {
	local d=""
	grep -qxF -- "$2" "$TMP/$1.out" 2>/dev/null ||
		d="no such line; lines:"$'\n'"$(cut -c1-200 "$TMP/$1.out" 2>/dev/null | sed -n '1,8p')"
	report "$1: the line '$(echo "$2" | cut -c1-40)...$(echo "$2" | rev | cut -c1-40 | rev)' ($(echo "$2" | tr -cd ';' | wc -c) + 1 frames)" "$d"
}

# uw_expect_re4 KEY ERE AO AS IO IS: the lines whose stack (the line without
# its value) matches ERE add up to AO, AS, IO, IS in the four runs of profile4.
uw_expect_re4() {
	expect4_with "$1" "stacks matching /$2/" uw_re_sum "$2" "${@:3}"
}

# uw_re_sum KEY RE: the values of $TMP/KEY.out's lines whose stack matches RE, added up.
uw_re_sum() {
	awk -v re="$2" 'match($0, / [0-9]+$/) {
		if (substr($0, 1, RSTART - 1) ~ re) s += substr($0, RSTART + 1)
	} END { printf "%.0f\n", s }' "$TMP/$1.out" 2>/dev/null
}

# uw_same KEY1 KEY2 NAME: $TMP/KEY1.out and $TMP/KEY2.out hold the same
# lines (in any order), and are not empty.
uw_same_diag() {
	[ -s "$TMP/$1.out" ] || echo "$1: empty profile"
	if ! diff <(sort "$TMP/$1.out" 2>/dev/null) <(sort "$TMP/$2.out" 2>/dev/null) >"$TMP/$1.same.diff"; then
		echo "profiles differ (< $1, > $2):"
		cut -c1-160 "$TMP/$1.same.diff" | head -12
	fi
	return 0
}

uw_same() { report "$3" "$(uw_same_diag "$1" "$2")"; }

# uw_same4 KEY1 KEY2 NAME: uw_same for the four runs of profile4.
uw_same4() {
	local v d=""
	for v in $VALUES; do
		d+=$(uw_same_diag "$1.$v" "$2.$v" | sed "s/^/$v: /")
	done
	report "$3" "$d"
}

# ---------------------------------------------------------------------------
# dlopen(): a library mapped after the start gets its unwind table at the
# next memory-map refresh (user/unwind.c, unwind_maps_changed), and until
# then its frames unwind by frame pointer (counted: unwind_fp_frames).
# nofp/t_dlopen dlopen()s nofp/libt_plugin.so (sources: tests/targets/),
# both -O2 -fomit-frame-pointer:
#   plugin_early   3 x 333 =  999 bytes, right after dlopen(): no table yet
#   plugin_entry -> plugin_mid -> plugin_alloc
#                  5 x 777 = 3885 bytes, once heaptrace -v has printed
#                  "unwind tables for N objects mapped since the start"
# The target waits on a FIFO in between; the harness releases it after that
# line (or, with --unwind fp, which builds no tables, at once).  dlopen()'s
# own allocations (in ld.so, under main) are not checked.  Whole stacks are
# matched from main (what is above it is libc's), as in scenario_unwind.
DL_STACK="main;plugin_entry;plugin_mid;plugin_alloc"
DL_TABLES='^heaptrace: unwind tables for ([0-9]+) objects mapped since the start'

scenario_dlopen() {
	local t=$TB/nofp/t_dlopen lib=$TB/nofp/libt_plugin.so d="" n fp
	if [ ! -x "$t" ] || [ ! -f "$lib" ]; then
		fail "dlopen: nofp/t_dlopen and nofp/libt_plugin.so built" "not built (make test-targets)"
		return
	fi

	# The default unwinder (auto): CFI, the plugin's table once loaded.
	dl_run dl tables
	d=$(rc_diag dl 0)
	grep -q '^done$' "$TMP/dl.tout" || d+="the target did not finish: $(cat "$TMP/dl.tout")"$'\n'
	report "dlopen: heaptrace -v over nofp/t_dlopen exits 0, the target ran to its end" "$d"
	# The line came while the target was held after dlopen(), and names at
	# least the plugin.
	d=""
	[ "$DL_WAITED" = 1 ] || d+="no such line while the target waited (15 s)"$'\n'
	n=$(sed -nE "s/$DL_TABLES.*/\\1/p" "$TMP/dl.err" | head -1)
	[ "${n:-0}" -ge 1 ] || d+="objects: '${n}', want >= 1"$'\n'$(grep '^heaptrace: unwind' "$TMP/dl.err")$'\n'
	report "dlopen: -v prints 'unwind tables for N objects mapped since the start' (N = ${n:-none} >= 1) after dlopen()" "$d"
	# Complete: every byte plugin_alloc allocated is under the whole stack
	# from main, and no line of it is marked [truncated].
	uw_expect_stack dl "$DL_STACK" 3885 "dlopen: stacks ending $DL_STACK = 3885 (5 x 777, the plugin's table loaded)"
	expect_leaf dl plugin_alloc 3885
	# A walk that fails is [truncated] (stacks_truncated): only
	# plugin_early's stack, unwound before the table, may be.
	d=$(awk 'match($0, / [0-9]+$/) && /^\[truncated\];/ {
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] != "plugin_early") print
	}' "$TMP/dl.out" 2>/dev/null | cut -c1-200)
	[ -s "$TMP/dl.out" ] || d+="empty profile"
	report "dlopen: no stack is [truncated] (stacks_truncated) but plugin_early's, none of plugin_alloc's" "$d"
	# Before the table: frame 0 (the return address in plugin_early) is
	# exact, the frames above it came by frame pointer, and say so.
	expect_leaf dl plugin_early 999
	fp=$(grep -m1 '^heaptrace: events:' "$TMP/dl.err" | tr ' ' '\n' | sed -n 's/^unwind_fp_frames=//p')
	d=""
	[[ $fp =~ ^[0-9]+$ ]] && [ "$fp" -gt 0 ] ||
		d="unwind_fp_frames=${fp:-<missing>}: $(grep -m1 '^heaptrace: events:' "$TMP/dl.err")"
	report "dlopen: events line: unwind_fp_frames=${fp:-none} > 0 (plugin_early's frames, before the table)" "$d"

	# --unwind fp: EXPECTED DIFFERENCE (documents what the tables change):
	# the innermost frame is still right, the frames above it are not (rbp
	# holds none of the plugin's frames).
	dl_run dlfp fp --unwind fp
	d=$(rc_diag dlfp 0)
	grep -q '^done$' "$TMP/dlfp.tout" || d+="the target did not finish: $(cat "$TMP/dlfp.tout")"$'\n'
	grep -qE "$DL_TABLES" "$TMP/dlfp.err" && d+="an 'unwind tables' line with --unwind fp"$'\n'
	report "dlopen: heaptrace --unwind fp over nofp/t_dlopen exits 0, no unwind tables" "$d"
	expect_leaf dlfp plugin_alloc 3885
	uw_expect_stack dlfp "$DL_STACK" 0 \
		"dlopen: EXPECTED DIFFERENCE: --unwind fp cannot give $DL_STACK (= 0)"

	dlopen_again
}

# Libraries that replace each other at the same addresses (t_dlopen LIB
# FIFO OTHER): libt_plugin.so (its stack as above), dlclose(), then
# libt_plugin_b.so where it was (its own table: a second "unwind tables"
# line; its 4 x 555 bytes are not checked: at the end, its addresses are
# libt_plugin.so's again, and so are the names), dlclose(), then
# libt_plugin.so again, where libt_plugin_b.so was ("reopened here"), known
# to heaptrace: no new table.  The BPF side caches code mappings per
# process by address; the harness gives heaptrace 3 s (maps are re-read
# every second) before the last plugin_entry, whose stack must be the one
# of the first: 2 x 3885 bytes under the same frames.
dlopen_again() {
	local key=dlre b=$TB/nofp/libt_plugin_b.so hp d=""
	if [ ! -f "$b" ]; then
		fail "dlopen: nofp/libt_plugin_b.so built" "not built (make test-targets)"
		return
	fi
	mkfifo "$TMP/$key.fifo"
	ht_bg "$key" -v -f collapsed --value alloc_space -o "$TMP/$key.out" -- \
		"$TB/nofp/t_dlopen" "$TB/nofp/libt_plugin.so" "$TMP/$key.fifo" "$b"
	hp=$HPID
	if ! wait_for "$TMP/$key.tout" '^opened$' 30 "$hp" || ! wait_for "$TMP/$key.err" "$DL_TABLES" 15 "$hp"; then
		d+="no table for libt_plugin.so"$'\n'
	elif ! release "$key" || ! wait_for "$TMP/$key.tout" '^other$' 15 "$hp"; then
		d+="the target did not open libt_plugin_b.so"$'\n'
	else
		local i=150
		while [ "$(grep -cE "$DL_TABLES" "$TMP/$key.err")" -lt 2 ] && [ $i -gt 0 ] && kill -0 "$hp" 2>/dev/null; do
			sleep 0.1
			i=$((i - 1))
		done
		[ "$(grep -cE "$DL_TABLES" "$TMP/$key.err")" -ge 2 ] || d+="no table for libt_plugin_b.so"$'\n'
		if ! release "$key" || ! wait_for "$TMP/$key.tout" '^reopened ' 15 "$hp"; then
			d+="the target did not open libt_plugin.so again"$'\n'
		else
			grep -q '^reopened here$' "$TMP/$key.tout" ||
				d+="libt_plugin.so did not come back where libt_plugin_b.so was: the check cannot run"$'\n'
			sleep 3
		fi
	fi
	kill -0 "$hp" 2>/dev/null && release "$key"
	ht_bg_wait "$key" "$hp" 30
	d+=$(rc_diag "$key" 0)
	grep -q '^done$' "$TMP/$key.tout" || d+="the target did not finish: $(cat "$TMP/$key.tout")"$'\n'
	report "dlopen: libt_plugin.so, libt_plugin_b.so in its place, libt_plugin.so again in the other's place: exits 0" "$d"
	uw_expect_stack "$key" "$DL_STACK" 7770 \
		"dlopen: libt_plugin.so dlopen()ed again where libt_plugin_b.so was: stacks ending $DL_STACK = 7770 (twice 5 x 777)"
	d=$(awk 'match($0, / [0-9]+$/) && /^\[truncated\];/ {
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] != "plugin_early") print
	}' "$TMP/$key.out" 2>/dev/null | cut -c1-200)
	[ -s "$TMP/$key.out" ] || d+="empty profile"
	report "dlopen: libt_plugin.so again: no stack is [truncated] but plugin_early's" "$d"
}

# dl_run KEY tables|fp [HEAPTRACE-OPTION...]: heaptrace -v OPTIONS -f
# collapsed --value alloc_space over nofp/t_dlopen (profile in KEY.out, the
# target's output in KEY.tout); once the target has printed "opened", with
# "tables" wait for the -v line of the plugin's table (DL_WAITED=1 if it
# came), then release the target and wait for the end.
dl_run() {
	local key=$1 mode=$2 hp
	shift 2
	DL_WAITED=0
	mkfifo "$TMP/$key.fifo"
	ht_bg "$key" -v "$@" -f collapsed --value alloc_space -o "$TMP/$key.out" -- \
		"$TB/nofp/t_dlopen" "$TB/nofp/libt_plugin.so" "$TMP/$key.fifo"
	hp=$HPID
	if wait_for "$TMP/$key.tout" '^opened$' 30 "$hp"; then
		if [ "$mode" = tables ] && wait_for "$TMP/$key.err" "$DL_TABLES" 15 "$hp"; then
			DL_WAITED=1
		fi
		release "$key"
	fi
	ht_bg_wait "$key" "$hp" 30
}

# ---------------------------------------------------------------------------
# Reliability and safety (faults, limits, badinput, stress, soak).  Helpers
# are prefixed rl_.

# rl_ht LIMIT KEY ARG...: ht with a fixed timeout of LIMIT seconds, for the
# long runs (ht's timeout shrinks to 10 s once the run is past its budget).
rl_ht() {
	local limit=$1 key=$2 t0=$SECONDS
	shift 2
	echo "heaptrace $(rel "$@")" >"$TMP/$key.cmd"
	timeout -k 5 "$limit" "$HT" "$@" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/$key.rc"
	[ $((SECONDS - t0)) -ge "$limit" ] && echo "timed out after $limit s" >>"$TMP/$key.err"
	return 0
}

# rl_launch KEY ARG...: heaptrace ARG... in the background (stdout KEY.tout,
# stderr KEY.err); HPID is its timeout wrapper.
rl_launch() {
	local key=$1
	shift
	echo "heaptrace $(rel "$@")" >"$TMP/$key.cmd"
	timeout -k 5 60 "$HT" "$@" >"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
}

# rl_wait_exit PID SECS: wait_exit without the shell's "Killed" notice for
# a job that died of SIGKILL.
rl_wait_exit() {
	local n=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		WRC=timeout
		return 1
	fi
	wait "$1" 2>/dev/null
	WRC=$?
	return 0
}

# rl_htpid: the heaptrace process under the timeout wrapper HPID.
rl_htpid() {
	pgrep -P "$HPID" | head -1
}

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

# rl_peak_rss KEY: N of "heaptrace: heaptrace peak RSS: N KiB" (-v).
rl_peak_rss() {
	sed -nE 's/^heaptrace: heaptrace peak RSS: ([0-9]+) KiB.*/\1/p' "$TMP/$1.err" | head -1
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

scenario_faults() {
	faults_target_killed
	faults_pterm
	faults_lterm
	faults_lterm_ignored
	faults_duration
	faults_tracer_killed
	faults_tracer_killed_busy
	faults_fork
	faults_exec
	faults_dlopen
	faults_threads
}

# -p, the target (t_wait, see scenario_attach) killed by SIGKILL after its
# traced phase: heaptrace says the process exited, writes the profile and
# exits 0.  Allocated while attached: post_alloc 6 x 640 (2 freed),
# post_realloc_pre 1 x 1500: in use 5 objects, 2560 + 1500 = 4060 bytes;
# allocated 7 objects, 3840 + 1500 = 5340 bytes.  The maps were read while
# the process was alive.
faults_target_killed() {
	local key=fpkill d=""
	pstart $key -o "$TMP/$key.prof" || return
	kill -KILL "$TPID"
	wait "$TPID" 2>/dev/null
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after the target was killed"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 0)
	grep -q 'exited' "$TMP/$key.err" || d+=$'\n'"no line on stderr saying that the process exited"
	report "faults: -p, target SIGKILLed: heaptrace exits 0 and says the process exited" "$d${d:+$'\n'$(ctx $key)}"
	pprof_header "$TMP/$key.prof" "faults: -p, target SIGKILLed: profile of what was allocated while attached" \
		5 4060 7 5340
	d=""
	grep -q '^MAPPED_LIBRARIES:' "$TMP/$key.prof" 2>/dev/null || d+="no MAPPED_LIBRARIES: section"$'\n'
	grep -q "$TB/t_wait\$" "$TMP/$key.prof" 2>/dev/null || d+="no mapping of $TB/t_wait"$'\n'
	grep -qE '/libc\.so\.6$' "$TMP/$key.prof" 2>/dev/null || d+="no mapping of libc.so.6"$'\n'
	report "faults: -p, target SIGKILLed: MAPPED_LIBRARIES lists t_wait and libc" "$d"
}

# -p, heaptrace gets SIGTERM: it detaches, writes the profile, exits 0, and
# the target runs on (pfinish); final_churn, after the detach, is not seen.
faults_pterm() {
	local key=fpterm
	pstart $key -f collapsed --value alloc_space || return
	pfinish $key TERM
	expect_leaf $key post_alloc 3840
	expect_leaf $key post_realloc_pre 1500
	leafset $key post_alloc post_realloc_pre
	expect_events $key allocs=7 frees=2 unmatched_frees=4 missed_returns=0 returns_without_entry=0
}

# t_faults hold before the FIFO is written: hold_keep 4 x 1000 kept,
# hold_temp 1 x 500 freed (alloc_space: 4000 and 500); hold_after runs only
# once released.
faults_hold_start() {
	local key=$1
	shift
	mkfifo "$TMP/$key.fifo"
	rl_launch "$key" -v -o "$TMP/$key.prof" -f collapsed --value alloc_space "$@"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID"; then
		fail "$key: the target starts under heaptrace and says ready" "$(ctx "$key")"$'\n'"target: $(cat "$TMP/$key.tout")"
		kill_tree "$HPID"
		return 1
	fi
	return 0
}

# Launch mode, SIGTERM to heaptrace: it detaches, writes the profile, passes
# the signal on to the command (t_faults hold, default action) and exits
# with the command's status, like time(1): 128 + 15 = 143.
faults_lterm() {
	local key=flterm d=""
	faults_hold_start $key -- "$TB/t_faults" hold "$TMP/$key.fifo" || return
	kill -TERM "$(rl_htpid)"
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after SIGTERM"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 143)
	report "faults: launch mode, SIGTERM to heaptrace: exits 143, the status of the command killed by the SIGTERM passed on" \
		"$d${d:+$'\n'$(ctx $key)}"
	cp "$TMP/$key.prof" "$TMP/$key.out" 2>/dev/null
	expect_leaf $key hold_keep 4000
	expect_leaf $key hold_temp 500
	leafset $key hold_keep hold_temp
}

# Launch mode, SIGTERM to heaptrace, the command ignores SIGTERM: heaptrace
# detaches and writes the profile at once, then waits for the command
# (README: the command runs to its end), and exits with its status, 7.
# hold_after, allocated after the detach, is not in the profile.
faults_lterm_ignored() {
	local key=fltermign d=""
	faults_hold_start $key -- "$TB/t_faults" hold "$TMP/$key.fifo" ignterm || return
	kill -TERM "$(rl_htpid)"
	wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 15 "$HPID" ||
		d+="no 'wrote the profile' line 15 s after SIGTERM"$'\n'
	kill -0 "$HPID" 2>/dev/null || d+="heaptrace did not wait for the command"$'\n'
	cp "$TMP/$key.prof" "$TMP/$key.early.out" 2>/dev/null || : >"$TMP/$key.early.out"
	release $key || d+="could not release the target"$'\n'
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after the command was released"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 7)
	grep -q '^bye$' "$TMP/$key.tout" || d+=$'\n'"the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "faults: launch mode, SIGTERM to heaptrace, command ignores it: profile written at once, command runs to its end, exit 7" \
		"$d${d:+$'\n'$(ctx $key)}"
	expect_leaf $key.early hold_keep 4000
	cp "$TMP/$key.prof" "$TMP/$key.out" 2>/dev/null
	expect_leaf $key hold_keep 4000
	expect_leaf $key hold_temp 500
	leafset $key hold_keep hold_temp
}

# Launch mode, -d 1: tracing stops after 1 s, the profile is written, and
# heaptrace still waits for the command (README), then exits 7.
faults_duration() {
	local key=fldur d=""
	faults_hold_start $key -d 1 -- "$TB/t_faults" hold "$TMP/$key.fifo" || return
	wait_for "$TMP/$key.err" '^heaptrace: wrote the profile' 15 "$HPID" ||
		d+="no 'wrote the profile' line 15 s after the start with -d 1"$'\n'
	kill -0 "$HPID" 2>/dev/null || d+="heaptrace did not wait for the command"$'\n'
	release $key || d+="could not release the target"$'\n'
	if ! wait_exit "$HPID" 15; then
		d+="heaptrace still running 15 s after the command was released"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 7)
	grep -q '^bye$' "$TMP/$key.tout" || d+=$'\n'"the command did not run to its end: $(cat "$TMP/$key.tout")"
	report "faults: launch mode -d 1: profile written after 1 s, command runs to its end, heaptrace exits 7" \
		"$d${d:+$'\n'$(ctx $key)}"
	cp "$TMP/$key.prof" "$TMP/$key.out" 2>/dev/null
	expect_leaf $key hold_keep 4000
	expect_leaf $key hold_temp 500
	leafset $key hold_keep hold_temp
}

# heaptrace -p killed by SIGKILL (no chance to detach): the kernel drops
# its probes with its file descriptors.  The target runs its last phase
# (final_churn's mallocs and frees, where the probes were) and exits 0; the
# programs and links heaptrace held (its fdinfo) are gone, and no uprobe
# of heaptrace is left in tracefs.
faults_tracer_killed() {
	local key=fhkill d="" ht
	pstart $key -f collapsed || return
	ht=$(rl_htpid)
	rl_bpf_ids "$ht" >"$TMP/$key.ids"
	grep -q '^prog ' "$TMP/$key.ids" && grep -q '^link ' "$TMP/$key.ids" ||
		d+="heaptrace holds no BPF program or link (fdinfo): $(tr '\n' ' ' <"$TMP/$key.ids")"$'\n'
	# disowned: no "Killed" notice from the shell for the timeout wrapper
	disown "$HPID" 2>/dev/null
	kill -KILL "$ht"
	rl_wait_exit "$HPID" 15 || kill_tree "$HPID"
	target_finishes $key
	d+=$FIN
	report "faults: heaptrace -p SIGKILLed: the target runs on, finishes and exits 0" "$d"
	d=$(rl_bpf_left "$TMP/$key.ids")
	d+=$(rl_uprobe_events)
	report "faults: heaptrace -p SIGKILLed: its $(grep -c '^prog ' "$TMP/$key.ids") programs and $(grep -c '^link ' "$TMP/$key.ids") links are released, no uprobe_events entry" "$d"
}

# The same while the target is busy: t_stress (16 threads, 4000000
# malloc/free pairs, deterministic) attached with -p, heaptrace SIGKILLed
# after 1 s of tracing, with return probes pending on the threads' stacks.
# The target must finish with exactly the output of an untraced run.
faults_tracer_killed_busy() {
	local key=fhbusy d="" ht want
	want=$("$TB/t_stress" 16 4000000)
	echo "heaptrace -v -o /dev/null -p PID (t_stress 16 4000000, SIGKILLed after 1 s)" >"$TMP/$key.cmd"
	mkfifo "$TMP/$key.fifo"
	"$TB/t_stress" 16 4000000 "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	TPID=$!
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$TPID"; then
		fail "$key: t_stress starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$TPID"
		return
	fi
	timeout -k 5 60 "$HT" -v -o /dev/null -p "$TPID" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID([^0-9]|\$)" 30 "$HPID"; then
		fail "$key: heaptrace -p attaches to t_stress" "$(ctx $key)"
		kill_tree "$HPID" "$TPID"
		return
	fi
	ht=$(rl_htpid)
	rl_bpf_ids "$ht" >"$TMP/$key.ids"
	release $key || d+="could not release the target"$'\n'
	sleep 1
	grep -q '^stress:' "$TMP/$key.tout" &&
		d+="the target finished within 1 s under tracing: the kill came too late to test anything"$'\n'
	# disowned: no "Killed" notice from the shell for the timeout wrapper
	disown "$HPID" 2>/dev/null
	kill -KILL "$ht"
	rl_wait_exit "$HPID" 15 || kill_tree "$HPID"
	if wait_exit "$TPID" 60; then
		[ "$WRC" = 0 ] || d+="target exit status $WRC, want 0"$'\n'
		[ "$(grep '^stress:' "$TMP/$key.tout")" = "$want" ] ||
			d+="target output '$(grep -v '^ready$' "$TMP/$key.tout")', want '$want' (untraced run)"$'\n'
	else
		d+="target still running 60 s after heaptrace was killed"$'\n'
		kill_tree "$TPID"
	fi
	report "faults: heaptrace -p SIGKILLed while 16 threads allocate: the target finishes, exit 0, same output as untraced" "$d"
	report "faults: heaptrace -p SIGKILLed while 16 threads allocate: its programs and links are released" \
		"$(rl_bpf_left "$TMP/$key.ids")"
}

# t_faults fork: the child (another process) is not traced; the parent's
# counts are exact.
#   parent_before 5 x 111 kept (the child frees 2 of its copies: not seen)
#   parent_after  3 x 333 kept, after the child exited
#   child_alloc   7 x 222 in the child: absent
faults_fork() {
	profile4 ffork 0 "$TB/t_faults" fork
	#                             alloc   alloc  inuse   inuse
	#                             objects space  objects space
	expect4 ffork parent_before   5       555    5       555
	expect4 ffork parent_after    3       999    3       999
	absent4 ffork child_alloc child_free
	leafset4 ffork
	expect_events ffork.alloc_objects allocs=8 frees=0 unmatched_frees=0 missed_frees=0
}

# t_faults exec build/tests/t_pprof: exec_before 2 x 1234 kept, then execv.
# The new image uses the same libc, whose probes stay: t_pprof's
# allocations (see scenario_pprof) are counted exactly.
#   big_keeper 4 x 262144 kept, mid_keeper 3 x 10000 kept, churn 10 x 5000 freed
# Allocated, both images: 2 + 17 = 19 objects, 2468 + 1128576 = 1131044 bytes.
# In use after the exec: only t_pprof's 7 objects, 1078576 bytes: exec
# discarded the old image's heap with its two blocks.
faults_exec() {
	profile4 fexec 0 "$TB/t_faults" exec "$TB/t_pprof"
	expect4 fexec big_keeper      4 1048576    4 1048576
	expect4 fexec mid_keeper      3   30000    3   30000
	expect4 fexec churn          10   50000    0       0
	expect_events fexec.alloc_objects allocs=19 frees=10 unmatched_frees=0 missed_frees=0
	ht fexec.pprof -o "$TMP/fexec.prof" -- "$TB/t_faults" exec "$TB/t_pprof"
	check_rc fexec.pprof 0 "fexec: pprof run exits 0"
	local h
	h=$(rl_header "$TMP/fexec.prof")
	report "fexec: pprof header: 19 objects, 1131044 bytes allocated (before and after the exec)" \
		"$([ "${h#* * }" = "19 1131044" ] || echo "header: $(head -1 "$TMP/fexec.prof")")"
	report "fexec: pprof header: in use 7 objects, 1078576 bytes (the pre-exec heap is gone)" \
		"$([ "${h% * *}" = "7 1078576" ] || echo "header: $(head -1 "$TMP/fexec.prof")"$'\n'"$(grep -E '^ +[0-9]+: +[0-9]+ \[ *[0-9]+: +[0-9]+\] @ *$' "$TMP/fexec.prof" | sed 's/^/record without frames: /')")"
}

# t_faults dlopen: malloc(100) (dl_before), then dlopen of jemalloc and
# tcmalloc (late: jemalloc needs static TLS room), each one's own malloc
# and free through dlsym, dlclose, then 2 x malloc(200) (dl_after).  The
# late allocators are not probed (their calls are not counted); nothing
# breaks, and libc's counts stay exact.
faults_dlopen() {
	local lib libs=() d
	for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
		[ -e "/usr/lib/x86_64-linux-gnu/$lib" ] && libs+=("$lib")
	done
	[ ${#libs[@]} -gt 0 ] || fail "faults: dlopen: neither libjemalloc.so.2 nor libtcmalloc_minimal.so.4 installed" ""
	GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 \
		ht fdlopen -v -f collapsed --value alloc_space -- "$TB/t_faults" dlopen "${libs[@]}"
	d=$(rc_diag fdlopen 0)
	grep -q '^dlopen: ok$' "$TMP/fdlopen.err" || d+=$'\n'"the target did not finish its dlopen/dlclose (${libs[*]})"
	report "faults: dlopen and dlclose of ${libs[*]} while traced: target and heaptrace exit 0" "$d"
	expect_leaf fdlopen dl_before 100
	expect_leaf fdlopen dl_after 400
	expect_events fdlopen unmatched_frees=0 missed_frees=0 returns_without_entry=0 missed_returns=0 \
		stack_errors=0 live_map_full=0
}

# t_faults threads: 200 short-lived threads (8 at a time), each
# th_keep 3 x 100 kept, th_temp 2 x 50 freed.  No call state goes stale
# (missed_returns) and no return comes without its entry, and the event
# counters agree with the profile: allocs = allocated objects,
# frees = allocated - in use.  (glibc's DTVs are allocated too; their
# number is glibc's business, so it is taken from the profile.)
faults_threads() {
	local key=fthreads h ao io d=""
	profile4 $key 0 "$TB/t_faults" threads
	expect4 $key th_keep 600 60000 600 60000
	expect4 $key th_temp 400 20000   0     0
	expect_events $key.alloc_objects missed_returns=0 returns_without_entry=0 call_map_full=0 \
		live_map_full=0 stack_errors=0 stack_collisions=0 site_map_full=0 missed_frees=0 failed_allocs=0
	ht $key.pprof -v -o "$TMP/$key.prof" -- "$TB/t_faults" threads
	check_rc $key.pprof 0 "$key: pprof run exits 0"
	h=$(rl_header "$TMP/$key.prof")
	io=$(echo "$h" | cut -d' ' -f1)
	ao=$(echo "$h" | cut -d' ' -f3)
	if [ -z "$h" ]; then
		d="no pprof header: $(head -1 "$TMP/$key.prof")"
	else
		[ "$(rl_events_num $key.pprof allocs)" = "$ao" ] ||
			d+="allocs=$(rl_events_num $key.pprof allocs), profile: $ao objects allocated"$'\n'
		[ "$(rl_events_num $key.pprof frees)" = "$((ao - io))" ] ||
			d+="frees=$(rl_events_num $key.pprof frees), profile: $ao - $io = $((ao - io))"$'\n'
	fi
	report "$key: events allocs and frees agree with the profile's allocated and in-use objects" "$d"
}

# ---------------------------------------------------------------------------
# Full maps: an event that does not fit is counted as a loss, never guessed.
# t_limits live: lim_keep 100 x 100 all live, lim_release frees them,
# lim_again 30 x 300 kept.  --max-allocs 40: 40 of lim_keep's blocks are
# tracked, 60 not (live_map_full=60), but all 100 are counted allocated;
# their frees: 40 matched, 60 unmatched; then the map is empty again and
# all 30 of lim_again's are tracked.  In use 30 / 9000, allocated
# 130 / 10000 + 9000 = 19000.
# t_limits stacks: st_K does K x malloc(100 K), K = 1..10 in order.
# --max-stacks 4: st_1..st_4's stacks are stored (first seen), the 5 + ... +
# 10 = 45 allocations of st_5..st_10 have no room (stack_errors=45) and
# are counted under "[lost stack]": 100 x (25 + 36 + 49 + 64 + 81 + 100) =
# 35500 bytes; totals stay exact: 55 objects, 38500 bytes.
scenario_limits() {
	ht lim_live -v --max-allocs 40 -o "$TMP/lim_live.prof" -- "$TB/t_limits" live
	check_rc lim_live 0 "limits: --max-allocs 40 run exits 0"
	expect_events lim_live allocs=130 frees=40 live_map_full=60 unmatched_frees=60 missed_frees=0 \
		stack_errors=0 site_map_full=0
	pprof_header "$TMP/lim_live.prof" "limits: --max-allocs 40: pprof header" 30 9000 130 19000

	# Without -v the events line comes because a loss counter is not 0.
	ht lim_live_c --max-allocs 40 -f collapsed --value alloc_objects -- "$TB/t_limits" live
	check_rc lim_live_c 0 "limits: --max-allocs 40 collapsed run exits 0"
	expect_leaf lim_live_c lim_keep 100
	expect_leaf lim_live_c lim_again 30
	leafset lim_live_c lim_keep lim_again
	expect_events lim_live_c live_map_full=60 unmatched_frees=60
	ht lim_live_is --max-allocs 40 -f collapsed --value inuse_space -- "$TB/t_limits" live
	expect_leaf lim_live_is lim_again 9000
	leafset lim_live_is lim_again

	ht lim_live_top --max-allocs 40 -f top -- "$TB/t_limits" live
	check_rc lim_live_top 0 "limits: --max-allocs 40 -f top exits 0"
	local l d=""
	l=$(grep -m1 '^ *losses:' "$TMP/lim_live_top.out")
	echo "$l" | grep -qw 'live_map_full=60' || d+="no live_map_full=60"$'\n'
	echo "$l" | grep -qw 'unmatched_frees=60' || d+="no unmatched_frees=60"$'\n'
	report "limits: -f top --max-allocs 40: losses: line shows live_map_full=60 unmatched_frees=60" \
		"$d${d:+losses line: \"$l\"}"

	ht lim_st -v --max-stacks 4 -o "$TMP/lim_st.prof" -- "$TB/t_limits" stacks
	check_rc lim_st 0 "limits: --max-stacks 4 run exits 0"
	expect_events lim_st allocs=55 frees=0 stack_errors=45 stack_collisions=0 site_map_full=0 live_map_full=0
	pprof_header "$TMP/lim_st.prof" "limits: --max-stacks 4: pprof header counts every allocation" 55 38500 55 38500
	ht lim_st_as --max-stacks 4 -f collapsed --value alloc_space -- "$TB/t_limits" stacks
	expect_leaf lim_st_as st_1 100
	expect_leaf lim_st_as st_2 400
	expect_leaf lim_st_as st_3 900
	expect_leaf lim_st_as st_4 1600
	expect_leaf lim_st_as "[lost stack]" 35500
	leafset lim_st_as st_1 st_2 st_3 st_4 "[lost stack]"
	expect_events lim_st_as stack_errors=45
	ht lim_st_ao --max-stacks 4 -f collapsed --value alloc_objects -- "$TB/t_limits" stacks
	expect_leaf lim_st_ao "[lost stack]" 45
	expect_leaf lim_st_ao st_4 4

	ht lim_st_top --max-stacks 4 -f top -- "$TB/t_limits" stacks
	check_rc lim_st_top 0 "limits: --max-stacks 4 -f top exits 0"
	l=$(grep -m1 '^ *losses:' "$TMP/lim_st_top.out")
	report "limits: -f top --max-stacks 4: losses: line shows stack_errors=45" \
		"$(echo "$l" | grep -qw 'stack_errors=45' || echo "losses line: '$l'")"
}

# ---------------------------------------------------------------------------
# Bad input: exactly one line on stderr, the right exit status, and nothing
# traced.  A row is "ARGS|EXIT|WORDS": ARGS split at spaces (@TMP@, @TB@,
# @NOPID@ and @MARKER@ replaced); EXIT a number or "nz" (an error: 1-123);
# WORDS comma-separated, each to be on the line (case-insensitive, "A|B"
# for either).  Every command is "touch @MARKER@": it must not have run.
# Rows with "-o" must fail in under 2 s (before any tracing).
scenario_badinput() {
	local nopid t=/usr/bin/touch row args rc words key i=0 d w x t0 ms
	local marker=$TMP/bi.marker
	nopid=$(free_pid)
	cp /bin/true "$TMP/bi.noexec" && chmod 644 "$TMP/bi.noexec"
	echo keep >"$TMP/bi.victim"
	ln -s "$TMP/bi.victim" "$TMP/bi.link"
	ht bi.real -o "$TMP/bi.real.prof" -- "$TB/t_pprof"
	check_rc bi.real 0 "badinput: a real profile to start from"
	head -c 40 "$TMP/bi.real.prof" >"$TMP/bi.trunc.prof"
	: >"$TMP/bi.empty.prof"
	printf 'heap profile:    1:  99999999999999999999999 [    1:  99999999999999999999999] @ heapprofile\n' \
		>"$TMP/bi.huge.prof"
	printf '     1:  99999999999999999999999 [     1:  99999999999999999999999] @ 0x0000000000401000\n' \
		>>"$TMP/bi.huge.prof"
	printf 'heap profile:    1:  5 [    1:  5] @ heapprofile\n 99999999999999999999999: 5 [ 1: 5] @ 0x401000\n' \
		>"$TMP/bi.hugerec.prof"
	[ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ] ||
		fail "badinput: PID 2 is kthreadd (a kernel thread)" "PID 2 is '$(cat /proc/2/comm 2>/dev/null)'"
	local rows=(
		"--bogus-option -- $t @MARKER@|2|unknown option,--bogus-option"
		"-x -- $t @MARKER@|2|unknown option,-x"
		"-p|2|-p,needs a value"
		"-o|2|-o,needs a value"
		"-f|2|-f,needs a value"
		"-d|2|-d,needs a value"
		"-i|2|-i,needs a value"
		"--max-allocs|2|--max-allocs,needs a value"
		"--unwind|2|--unwind,needs a value"
		"-d 0 -- $t @MARKER@|2|-d,0"
		"-d -1 -- $t @MARKER@|2|-d,-1"
		"-d abc -- $t @MARKER@|2|-d,abc"
		"-i 0 -- $t @MARKER@|2|-i,0"
		"--max-allocs 0 -- $t @MARKER@|2|--max-allocs,0"
		"--max-depth 200 -- $t @MARKER@|2|--max-depth,200"
		"--unwind bogus -- $t @MARKER@|2|--unwind,bogus"
		"--top x -- $t @MARKER@|2|--top,'x'"
		"--http nonsense -- $t @MARKER@|2|--http,nonsense"
		"--sample-rate|2|--sample-rate,needs a value"
		"--sample-rate abc -- $t @MARKER@|2|--sample-rate,'abc'"
		"--sample-rate -1 -- $t @MARKER@|2|--sample-rate,'-1'"
		"--sample-rate 64X -- $t @MARKER@|2|--sample-rate,'64X'"
		"--sample-rate 1.5K -- $t @MARKER@|2|--sample-rate,'1.5K'"
		"--sample-rate 2G -- $t @MARKER@|2|--sample-rate,'2G'"
		"--sample-rate 1073741825 -- $t @MARKER@|2|--sample-rate,'1073741825'"
		"--sample-rate 99999999999999999999 -- $t @MARKER@|2|--sample-rate,'99999999999999999999'"
		"-p @NOPID@|nz|@NOPID@"
		"-p 2|nz|kernel thread"
		"-p 0|2|-p,0"
		"-p abc|2|-p,abc"
		"-- heaptrace-no-such-command|127|heaptrace-no-such-command,not found"
		"-- @TMP@/bi.noexec|126|bi.noexec,permission denied"
		"--sym nosuchsym_xyz -- $t @MARKER@|2|nosuchsym_xyz"
		"--sym malloc:size=arg1+ -- $t @MARKER@|2|malloc:size=arg1+,expression"
		"--sym malloc:size=(arg1) -- $t @MARKER@|2|expression"
		"-o /nonexistent/dir/x -- $t @MARKER@|nz|/nonexistent/dir"
		"-i 1 -o /nonexistent/dir/x -- $t @MARKER@|nz|/nonexistent/dir"
		"-o @TMP@/bi.link -- $t @MARKER@|nz|bi.link"
		"diff @TMP@/bi.real.prof @TMP@/bi.trunc.prof|nz|bi.trunc.prof,heap profile"
		"diff @TMP@/bi.trunc.prof @TMP@/bi.real.prof|nz|bi.trunc.prof,heap profile"
		"diff @TMP@/bi.real.prof /bin/true|nz|/bin/true,heap profile"
		"diff @TMP@/bi.real.prof @TMP@/bi.empty.prof|nz|bi.empty.prof,empty"
		"diff @TMP@/bi.huge.prof @TMP@/bi.real.prof|nz|bi.huge.prof"
		"diff @TMP@/bi.real.prof @TMP@/bi.hugerec.prof|nz|bi.hugerec.prof"
		"diff @TMP@/bi.real.prof @TMP@/bi.missing.prof|nz|bi.missing.prof"
		"diff @TMP@/bi.real.prof|2|usage"
	)
	for row in "${rows[@]}"; do
		IFS='|' read -r args rc words <<<"$row"
		i=$((i + 1))
		key=bi.$i
		args=${args//@TMP@/$TMP}
		args=${args//@TB@/$TB}
		args=${args//@NOPID@/$nopid}
		args=${args//@MARKER@/$marker}
		words=${words//@NOPID@/$nopid}
		rm -f "$marker"
		t0=$(date +%s%N)
		# shellcheck disable=SC2086
		ht $key $args
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ "$rc" = nz ]; then
			d=$(one_line_diag $key)
			{ [ "$RC" -ge 1 ] && [ "$RC" -le 123 ]; } || d+="exit status $RC, want an error (1-123)"$'\n'
			IFS=, read -r -a w <<<"$words"
			for x in "${w[@]}"; do
				local ok=0 alt y
				IFS='|' read -r -a alt <<<"$x"
				for y in "${alt[@]}"; do grep -qiF -- "$y" "$TMP/$key.err" && ok=1; done
				[ "$ok" = 1 ] || d+="stderr does not mention '$x': $(head -1 "$TMP/$key.err")"$'\n'
			done
		else
			IFS=, read -r -a w <<<"$words"
			d=$(err_diag $key "$rc" "${w[@]}")
		fi
		[ -e "$marker" ] && d+=$'\n'"the command ran (it created its marker file)"
		case " $args " in
		*" -o "*) [ "$ms" -lt 2000 ] || d+=$'\n'"took $ms ms, want under 2000 (fail before tracing)" ;;
		esac
		case $args in
		*bi.link*) [ "$(cat "$TMP/bi.victim")" = keep ] || d+=$'\n'"the symlink's target was written" ;;
		esac
		report "badinput: heaptrace $(rel "$args") -> exit $rc, one line with: $words" "$d"
	done
}

# ---------------------------------------------------------------------------
# t_stress: 16 threads, 2,000,000 malloc/free pairs from stress_alloc, random
# sizes and lifetimes; the target prints its own totals:
#   stress: allocs N bytes N live N live_bytes N
# heaptrace must agree exactly (stress_alloc has one stack: one record),
# lose nothing with the default limits, and stay under 100000 KiB of RSS.
# unmatched_frees is not 0: at thread exit glibc's tcache_thread_shutdown()
# frees again every chunk in the thread's tcache (already freed once) and
# the tcache itself (never allocated through malloc); a tcache holds at most
# 7 chunks in each of 64 bins: at most 16 x (7 x 64 + 1) = 7184.
scenario_stress() {
	local key=stress d="" line allocs bytes live lbytes h io ao rss um
	rl_ht 180 $key -v -o "$TMP/$key.prof" -- "$TB/t_stress"
	check_rc $key 0 "stress: heaptrace -v -o FILE t_stress exits 0"
	line=$(grep -m1 '^stress: ' "$TMP/$key.out")
	read -r allocs bytes live lbytes <<<"$(echo "$line" |
		sed -nE 's/^stress: allocs ([0-9]+) bytes ([0-9]+) live ([0-9]+) live_bytes ([0-9]+)$/\1 \2 \3 \4/p')"
	if [ -z "$lbytes" ] || [ "$allocs" != 2000000 ]; then
		fail "stress: the target reports 2000000 allocations" "target output: '$line'"$'\n'"$(ctx $key)"
		return
	fi
	pass "stress: the target reports 2000000 allocations ($line)"
	d=""
	pprof_has_record "$TMP/$key.prof" "$live" "$lbytes" "$allocs" "$bytes" ||
		d="no record $live: $lbytes [$allocs: $bytes]"$'\n'"$(sed -n '1,6p' "$TMP/$key.prof")"
	report "stress: stress_alloc's record is exactly the target's own count: $live: $lbytes [$allocs: $bytes]" "$d"
	expect_events $key live_map_full=0 stack_collisions=0 stack_errors=0 site_map_full=0 \
		returns_without_entry=0 missed_returns=0 call_map_full=0 missed_frees=0 failed_allocs=0 arena_map_full=0
	h=$(rl_header "$TMP/$key.prof")
	io=$(echo "$h" | cut -d' ' -f1)
	ao=$(echo "$h" | cut -d' ' -f3)
	d=""
	if [ -z "$h" ]; then
		d="no pprof header"
	else
		[ "$(rl_events_num $key allocs)" = "$ao" ] || d+="allocs=$(rl_events_num $key allocs), profile: $ao allocated"$'\n'
		[ "$(rl_events_num $key frees)" = "$((ao - io))" ] ||
			d+="frees=$(rl_events_num $key frees), profile: $ao - $io = $((ao - io))"$'\n'
	fi
	um=$(rl_events_num $key unmatched_frees)
	{ [ -n "$um" ] && [ "$um" -le 7184 ]; } || d+="unmatched_frees=${um:-<missing>}, want at most 7184 (glibc's tcache teardown)"$'\n'
	report "stress: events agree with the profile (allocs = allocated, frees = allocated - in use); unmatched_frees=$um <= 7184" "$d"
	rss=$(rl_peak_rss $key)
	report "stress: heaptrace peak RSS ${rss:-?} KiB < 100000" \
		"$([ -n "$rss" ] && [ "$rss" -lt 100000 ] || echo "no 'peak RSS' line or too much: '${rss}'")"

	# The same run by function name (collapsed), in use and allocated.
	local v want
	for v in inuse_space alloc_objects; do
		rl_ht 180 $key.$v -f collapsed --value $v -- "$TB/t_stress"
		check_rc $key.$v 0 "stress: -f collapsed --value $v exits 0"
		line=$(grep -m1 '^stress: ' "$TMP/$key.$v.err")
		read -r allocs bytes live lbytes <<<"$(echo "$line" |
			sed -nE 's/^stress: allocs ([0-9]+) bytes ([0-9]+) live ([0-9]+) live_bytes ([0-9]+)$/\1 \2 \3 \4/p')"
		want=$lbytes
		[ $v = alloc_objects ] && want=$allocs
		expect_leaf $key.$v stress_alloc "${want:-target-did-not-report}"
		expect_events $key.$v live_map_full=0 missed_returns=0 returns_without_entry=0
	done
}

# ---------------------------------------------------------------------------
# Soak: t_soak under heaptrace -i 1 -o $TMP/soak --http for at least 60 s
# of churn phases.  At each quiescent point (the target blocked on its
# FIFO, with its own live count printed) /debug/pprof/heap?debug=1 must
# show exactly the target's in-use objects and bytes: no drift, ever.  At
# the end: exit 0, snapshots numbered 0001.. without a gap (>= 55), the
# last one (written after the exit) with the final live counts, no losses,
# RSS bounded.
scenario_soak() {
	local key=soak d="" port p k=0 t0 line objs bytes hdr io ib mism=0 checks=0 n last ms0 ms maxms=0 slow=0
	for p in $(shuf -i 20000-60000 -n 50); do
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { port=$p; break; }
	done
	mkfifo "$TMP/$key.fifo"
	echo "heaptrace -v -i 1 -o \$TMP/soak --http 127.0.0.1:$port -- build/tests/t_soak \$TMP/soak.fifo" >"$TMP/$key.cmd"
	timeout -k 5 240 "$HT" -v -i 1 -o "$TMP/soak" --http "127.0.0.1:$port" -- "$TB/t_soak" "$TMP/$key.fifo" \
		>"$TMP/$key.tout" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	# The target's lines: on heaptrace's stdout, or its stderr if heaptrace
	# sends the command's output there.
	rl_soak_wait() {
		local re=$1 n=$(($2 * 20))
		while [ "$n" -gt 0 ]; do
			grep -hE "$re" "$TMP/$key.tout" "$TMP/$key.err" 2>/dev/null | tail -1 | grep . && return 0
			kill -0 "$HPID" 2>/dev/null || break
			sleep 0.05
			n=$((n - 1))
		done
		grep -hE "$re" "$TMP/$key.tout" "$TMP/$key.err" 2>/dev/null | tail -1 | grep .
	}
	if ! rl_soak_wait '^ready$' 30 >/dev/null ||
		! wait_for "$TMP/$key.err" '^heaptrace: serving ' 30 "$HPID"; then
		fail "soak: t_soak starts under heaptrace --http 127.0.0.1:$port" "$(ctx $key)"
		kill_tree "$HPID"
		return
	fi
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 70 ]; do
		k=$((k + 1))
		ms0=$(date +%s%N)
		# shellcheck disable=SC2016
		if ! timeout 10 bash -c 'echo "$2" >"$1"' _ "$TMP/$key.fifo" "churn $k"; then
			d+="could not send phase $k to the target"$'\n'
			break
		fi
		if ! line=$(rl_soak_wait "^live $k " 30); then
			d+="no 'live $k' line from the target within 30 s"$'\n'
			break
		fi
		read -r _ _ objs bytes <<<"$line"
		hdr=$(curl -s --max-time 10 "http://127.0.0.1:$port/debug/pprof/heap?debug=1" | head -1)
		io=$(echo "$hdr" | sed -nE 's/^heap profile: *([0-9]+): *([0-9]+) \[.*/\1/p')
		ib=$(echo "$hdr" | sed -nE 's/^heap profile: *([0-9]+): *([0-9]+) \[.*/\2/p')
		checks=$((checks + 1))
		ms=$((($(date +%s%N) - ms0) / 1000000))
		[ "$ms" -gt "$maxms" ] && maxms=$ms
		[ "$ms" -gt 2000 ] && slow=$((slow + 1))
		if [ "$io $ib" != "$objs $bytes" ]; then
			mism=$((mism + 1))
			[ "$mism" -le 5 ] && d+="phase $k at $((SECONDS - t0)) s: target $objs objects $bytes bytes, /debug/pprof/heap: '$hdr'"$'\n'
		fi
	done
	local secs=$((SECONDS - t0))
	# shellcheck disable=SC2016
	timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/$key.fifo"
	[ "$secs" -ge 60 ] || d+="only $secs s of soak"$'\n'
	[ "$mism" = 0 ] || d+="$mism of $checks quiescent points disagree"$'\n'
	report "soak: $checks quiescent points over $secs s: /debug/pprof/heap in use = the target's own live objects and bytes, every time" "$d"
	echo "# soak: slowest phase + fetch took $maxms ms; $slow took over 2 s"
	d=""
	if ! wait_exit "$HPID" 30; then
		d+="heaptrace still running 30 s after quit"$'\n'
		kill_tree "$HPID"
	fi
	d+=$(rl_rc $key 0)
	rl_soak_wait '^bye$' 1 >/dev/null || d+=$'\n'"the target did not say bye"
	report "soak: heaptrace exits 0 at the end" "$d${d:+$'\n'$(ctx $key)}"

	# Snapshots: $TMP/soak.0001.heap, ... consecutive.
	n=$(find "$TMP" -maxdepth 1 -name 'soak.[0-9]*.heap' | wc -l)
	d=""
	[ "$n" -ge 55 ] || d+="$n snapshots, want at least 55"$'\n'
	for ((i = 1; i <= n; i++)); do
		[ -e "$TMP/soak.$(printf %04d "$i").heap" ] || { d+="soak.$(printf %04d "$i").heap missing (of $n)"$'\n'; break; }
	done
	report "soak: $n snapshots soak.0001.heap .. soak.$(printf %04d "$n").heap, no gap, at least 55" "$d"
	last=$TMP/soak.$(printf %04d "$n").heap
	hdr=$(rl_header "$last")
	report "soak: the last snapshot holds the final live counts: $objs objects, $bytes bytes" \
		"$([ "${hdr% * *}" = "$objs $bytes" ] || echo "$(basename "$last"): $(head -1 "$last" 2>/dev/null)")"
	expect_events $key live_map_full=0 stack_errors=0 stack_collisions=0 site_map_full=0 \
		returns_without_entry=0 missed_returns=0 call_map_full=0 unmatched_frees=0 missed_frees=0 failed_allocs=0
	local rss
	rss=$(rl_peak_rss $key)
	report "soak: heaptrace peak RSS ${rss:-?} KiB < 100000" \
		"$([ -n "$rss" ] && [ "$rss" -lt 100000 ] || echo "no 'peak RSS' line or too much: '${rss}'")"
}

# ---------------------------------------------------------------------------
# Heap over time: -i snapshots, --diff, heaptrace diff, pprof -base on two
# snapshots, --at-peak / --peak-step, the -f top summary, --min-age.
# Exact numbers come from the sources of t_overtime, t_peak and t_minage;
# timing can only change how many snapshots there are, never a checked
# number: the harness releases t_overtime's phases through a FIFO and uses
# only snapshots taken while the target is blocked (or after it exited).
scenario_overtime() {
	overtime_snapshots
	overtime_top
	overtime_single
	overtime_peak
	overtime_minage
	overtime_diff_errors
}

# t_overtime FIFO, -i 0.5 --diff --at-peak --peak-step 500 -o PREFIX, -v.
#   snapshot 1       taken before the first release: nothing allocated yet
#   release          phase 1: keep_fn 4 x 5000 kept, 6 ticks (leak_fn 1000
#                    kept, churn_fn 1 MiB freed at once), prints "phase1"
#   snapshot S       the first whose read started after "phase1": with c
#                    snapshot lines seen after "phase1", snapshot c+1 may have
#                    read the maps before it, c+2 cannot (ticks run one after
#                    another); the target stays blocked until S is written
#   release          phase 2: drop_fn frees 3 keep_fn blocks, 10 ticks, exit
#   snapshot N       the final one, after the exit
# In use: S: keep 4/20000 + leak 6/6000 = 10/26000; N: keep 1/5000 + leak
# 16/16000 = 17/21000.  Allocated: S: 4 + 6 + 6 objects, 20000 + 6000 +
# 6 x 1048576 = 6317456 bytes; N: 4 + 16 + 16 = 36 objects, 20000 + 16000 +
# 16 x 1048576 = 16813216 bytes.
OT_SRC=tests/targets/t_overtime.c
overtime_snapshots() {
	local pre=$TMP/ot d="" c s n i hp
	mkfifo "$TMP/ot.fifo"
	ht_bg ot -v -i 0.5 --diff --at-peak --peak-step 500 -o "$pre" -- "$TB/t_overtime" "$TMP/ot.fifo"
	hp=$HPID
	if ! wait_snaps ot 1 30 "$hp"; then
		fail "overtime: snapshot 1 is written while the target waits" "$(ctx ot)"
		kill_tree "$hp"
		return
	fi
	if ! release ot || ! wait_for "$TMP/ot.tout" '^phase1$' 20 "$hp"; then
		fail "overtime: the target runs phase 1" "target output: $(cat "$TMP/ot.tout")"$'\n'"$(ctx ot)"
		kill_tree "$hp"
		return
	fi
	c=$(snap_count ot)
	s=$((c + 2))
	if ! wait_snaps ot "$s" 20 "$hp"; then
		fail "overtime: snapshot $s is written while the target waits after phase 1" "$(ctx ot)"
		kill_tree "$hp"
		return
	fi
	release ot || d+="could not release phase 2"$'\n'
	ht_bg_wait ot "$hp" 30
	d+=$(rc_diag ot 0)
	grep -q '^phase2$' "$TMP/ot.tout" || d+="the target did not finish: $(cat "$TMP/ot.tout")"$'\n'
	report "overtime: heaptrace -i 0.5 -o PREFIX over t_overtime exits 0 (the command's status)" "$d"

	# One -v line per snapshot, numbered 1..N in order, each naming
	# PREFIX.NNNN.heap; exactly these files exist, N > S (the final one), and
	# -o PREFIX itself is no file.
	n=$(snap_count ot)
	d=""
	local want="" got files
	for ((i = 1; i <= n; i++)); do
		want+=$(printf '%d %s.%04d.heap' "$i" "$pre" "$i")$'\n'
	done
	got=$(sed -nE 's/^heaptrace: snapshot ([0-9]+): ([^,]*), [0-9]+ stacks, -?[0-9]+ bytes in use, [0-9]+ ms$/\1 \2/p' \
		"$TMP/ot.err")$'\n'
	[ "$got" = "$want" ] || d+="snapshot lines (number, path) are not 1..$n in order:"$'\n'"$(rel "$got" | head -5)"$'\n'
	files=$(printf '%s\n' "$pre".[0-9]*.heap | sed -E 's/.*\.([0-9]+)\.heap$/\1/' | sort | tr '\n' ' ')
	[ "$files" = "$(seq -f '%04g' 1 "$n" | tr '\n' ' ')" ] ||
		d+="files PREFIX.*.heap: $files; want 0001 to $(printf '%04d' "$n")"$'\n'
	[ "$n" -gt "$s" ] || d+="$n snapshots, want more than $s (the final one comes after snapshot $s)"$'\n'
	[ -e "$pre" ] && d+="-o PREFIX created a file named PREFIX itself"$'\n'
	report "overtime: -v names snapshots 1..N ($n) in order, files PREFIX.0001.heap..PREFIX.$(printf '%04d' "$n").heap, the final one after snapshot $s" "$d"
	local fs fn
	fs=$(printf '%s.%04d.heap' "$pre" "$s")
	fn=$(printf '%s.%04d.heap' "$pre" "$n")

	# Snapshot 1: nothing allocated; S: after phase 1; N: the end.
	d=""
	[ "$(snap_line ot 1)" = "0 stacks, 0 bytes in use" ] || d+="snapshot 1: $(snap_line ot 1)"$'\n'
	[ "$(snap_line ot "$s")" = "3 stacks, 26000 bytes in use" ] || d+="snapshot $s: $(snap_line ot "$s")"$'\n'
	[ "$(snap_line ot "$n")" = "3 stacks, 21000 bytes in use" ] || d+="snapshot $n: $(snap_line ot "$n")"$'\n'
	report "overtime: -v lines: snapshot 1 '0 stacks, 0 bytes', $s '3 stacks, 26000 bytes', $n '3 stacks, 21000 bytes'" "$d"
	# Snapshots write allocated counts equal to the in-use ones (or 0) with a
	# leading zero, so go tool pprof keeps four sample types and -base works.
	pprof_header "$pre.0001.heap" "overtime: snapshot 1 (pprof) header" 0 0 00 00
	pprof_header "$fs" "overtime: snapshot $s (after phase 1) header" 10 26000 16 6317456
	pprof_header "$fn" "overtime: snapshot $n (final) header" 17 21000 36 16813216

	# heaptrace diff FIRST LAST (-f top): leak_fn grew 16 x 1000 = 16000,
	# keep_fn 5000 (1 block of 5000 left), churn_fn 0.
	local leak_line
	leak_line=$(site_line "$OT_SRC" leak_fn)
	ht ot_dtop diff "$pre.0001.heap" "$fn"
	d=$(rc_diag ot_dtop 0)
	[ "$(head -1 "$TMP/ot_dtop.out")" = "heaptrace diff: stacks by growth of inuse_space, largest first" ] ||
		d+="first line: $(head -1 "$TMP/ot_dtop.out")"$'\n'
	grep -qE '^#1 +16,000 bytes ' "$TMP/ot_dtop.out" || d+="no '#1   16,000 bytes' entry"$'\n'
	[ "$(grep -A1 -E '^#1 ' "$TMP/ot_dtop.out" | sed -n 2p | sed -E 's/^ +//')" = "leak_fn  $OT_SRC:$leak_line" ] ||
		d+="#1's first frame is not 'leak_fn  $OT_SRC:$leak_line'"$'\n'
	grep -qE '^#2 +5,000 bytes ' "$TMP/ot_dtop.out" || d+="no '#2   5,000 bytes' entry (keep_fn)"$'\n'
	grep -qw churn_fn "$TMP/ot_dtop.out" && d+="churn_fn is listed: its in-use did not grow"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,14p' "$TMP/ot_dtop.out")
	report "overtime: heaptrace diff FIRST LAST: #1 leak_fn +16,000 bytes at $OT_SRC:$leak_line, #2 keep_fn +5,000, no churn_fn" "$d"

	# heaptrace diff S N -f collapsed: signed deltas: leak_fn +10 x 1000,
	# keep_fn -3 x 5000, churn_fn 0 (left out).
	ht ot_dcol diff "$fs" "$fn" -f collapsed
	d=$(rc_diag ot_dcol 0)
	[ "$(signed_leafval ot_dcol leak_fn)" = 10000 ] || d+="leak_fn $(signed_leafval ot_dcol leak_fn), want 10000"$'\n'
	[ "$(signed_leafval ot_dcol keep_fn)" = -15000 ] || d+="keep_fn $(signed_leafval ot_dcol keep_fn), want -15000"$'\n'
	grep -q 'churn_fn' "$TMP/ot_dcol.out" && d+="a churn_fn line: a 0 delta must be left out"$'\n'
	[ "$(grep -c '' "$TMP/ot_dcol.out")" = 2 ] || d+="$(grep -c '' "$TMP/ot_dcol.out") lines, want 2"$'\n'
	grep -qE '(^|;)main;tick;leak_fn 10000$' "$TMP/ot_dcol.out" || d+="no '...;main;tick;leak_fn 10000' line"$'\n'
	[ -n "$d" ] && d+=$(cat "$TMP/ot_dcol.out")
	report "overtime: heaptrace diff S N -f collapsed: leak_fn 10000, keep_fn -15000, no churn_fn line" "$d"

	# --value: allocations between FIRST and LAST: 16 leak_fn, 16 churn_fn, 4 keep_fn.
	ht ot_dao diff "$pre.0001.heap" "$fn" -f collapsed --value alloc_objects
	d=$(rc_diag ot_dao 0)
	for i in leak_fn:16 churn_fn:16 keep_fn:4; do
		[ "$(signed_leafval ot_dao "${i%:*}")" = "${i#*:}" ] ||
			d+="${i%:*} $(signed_leafval ot_dao "${i%:*}"), want ${i#*:}"$'\n'
	done
	report "overtime: heaptrace diff FIRST LAST -f collapsed --value alloc_objects: leak_fn 16, churn_fn 16, keep_fn 4" "$d"

	# heaptrace diff S N -f pprof: growth only.  leak_fn 10: 10000 [10: 10000];
	# churn_fn 0: 0 [10: 10485760] (allocated, nothing kept); keep_fn shrank
	# and allocated nothing: left out.  Totals 10: 10000 [20: 10495760].
	ht ot_dpp diff "$fs" "$fn" -f pprof
	d=$(rc_diag ot_dpp 0)
	cp "$TMP/ot_dpp.out" "$TMP/ot_dpp.heap"
	pprof_has_record "$TMP/ot_dpp.heap" 10 10000 10 10000 || d+="no record 10: 10000 [10: 10000] (leak_fn)"$'\n'
	pprof_has_record "$TMP/ot_dpp.heap" 0 0 10 10485760 || d+="no record 0: 0 [10: 10485760] (churn_fn)"$'\n'
	[ "$(grep -c '@ 0x' "$TMP/ot_dpp.heap")" = 2 ] || d+="$(grep -c '@ 0x' "$TMP/ot_dpp.heap") records, want 2"$'\n'
	grep -qE '(^|[^0-9x])-[0-9]' "$TMP/ot_dpp.heap" && d+="a negative count"$'\n'
	grep -q '^MAPPED_LIBRARIES:' "$TMP/ot_dpp.heap" || d+="no MAPPED_LIBRARIES:"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,5p' "$TMP/ot_dpp.heap")
	report "overtime: heaptrace diff S N -f pprof: leak_fn and churn_fn records, keep_fn (shrank) left out, nothing negative" "$d"
	pprof_header "$TMP/ot_dpp.heap" "overtime: heaptrace diff S N -f pprof header" 10 10000 20 10495760

	# pprof readers on two snapshots.  S -> N: leak_fn +10000 bytes.
	pprof_tool ot_go_sn go -top -unit=B -base "$fs" "$TB/t_overtime" "$fn"
	first_func_is ot_go_sn leak_fn "overtime: go tool pprof -top -base S BINARY N: leak_fn first"
	flat_is ot_go_sn leak_fn 10000B "overtime: go tool pprof -top -base S BINARY N: leak_fn flat 10000B"
	d=$(pprof_rows ot_go_sn | awk '$NF == "churn_fn" && $1 != "0" && $1 != "0B"')
	report "overtime: go tool pprof -top -base S BINARY N: churn_fn has no in-use growth" "$d"
	# FIRST -> LAST: leak_fn +16000 bytes, keep_fn +5000.  FIRST is empty:
	# go's legacy-profile reader gives a profile whose header has no
	# allocations beyond the in-use ones ("0: 0 [0: 0]", or nothing freed
	# yet) 2 sample types instead of 4, and -base then fails with
	# "inconsistent samples type count: 4 != 2"; the snapshots must still be
	# comparable.
	pprof_tool ot_go_fl go -top -unit=B -base "$pre.0001.heap" "$TB/t_overtime" "$fn"
	first_func_is ot_go_fl leak_fn "overtime: go tool pprof -top -base FIRST BINARY LAST: leak_fn first"
	flat_is ot_go_fl leak_fn 16000B "overtime: go tool pprof -top -base FIRST BINARY LAST: leak_fn flat 16000B"
	pprof_tool ot_gp_fl perl --text --show_bytes --base="$pre.0001.heap" "$TB/t_overtime" "$fn"
	first_func_is ot_gp_fl leak_fn "overtime: google-pprof --text --base=FIRST BINARY LAST: leak_fn first"
	flat_is ot_gp_fl leak_fn 16000 "overtime: google-pprof --text --show_bytes --base=FIRST BINARY LAST: leak_fn 16000"
	# The growth-only diff profile is itself a profile pprof reads.
	pprof_tool ot_go_dpp go -top -unit=B "$TB/t_overtime" "$TMP/ot_dpp.heap"
	first_func_is ot_go_dpp leak_fn "overtime: go tool pprof -top on 'heaptrace diff -f pprof': leak_fn first"

	# --diff: after each snapshot but the first a line "growth +N
	# inuse_space since the last snapshot", then up to 5 "+N  FUNCTION".
	# How the growth splits between snapshots depends on timing; the sums
	# do not: growth lines add up to LAST - FIRST = 21000, leak_fn's to
	# 16 x 1000 (it only grows), keep_fn's to 4 x 5000 (it grows in phase 1
	# only, and never has more than 2 other stacks to compete with).
	d=""
	local ng
	ng=$(grep -cE '^heaptrace: growth [-+][0-9]+ inuse_space since the last snapshot$' "$TMP/ot.err")
	[ "$ng" = $((n - 1)) ] || d+="$ng growth lines, want $((n - 1)) (one per snapshot but the first)"$'\n'
	d+=$(awk '
		/^heaptrace: snapshot [0-9]+: / { split($3, a, ":"); want = a[1] + 0 > 1; next_is_snap = 1; got = 0; next }
		next_is_snap { next_is_snap = 0; got = /^heaptrace: growth /
			if (got != want) printf "after snapshot %d: %s\n", a[1], $0 }' "$TMP/ot.err")
	local sum leak keep
	sum=$(sed -nE 's/^heaptrace: growth ([-+][0-9]+) inuse_space since the last snapshot$/\1/p' "$TMP/ot.err" |
		awk '{ s += $1 } END { print s + 0 }')
	leak=$(sed -nE 's/^heaptrace:   \+([0-9]+)  leak_fn$/\1/p' "$TMP/ot.err" | awk '{ s += $1 } END { print s + 0 }')
	keep=$(sed -nE 's/^heaptrace:   \+([0-9]+)  keep_fn$/\1/p' "$TMP/ot.err" | awk '{ s += $1 } END { print s + 0 }')
	[ "$sum" = 21000 ] || d+="growth lines add up to $sum, want 21000"$'\n'
	[ "$leak" = 16000 ] || d+="'+N  leak_fn' lines add up to $leak, want 16000"$'\n'
	[ "$keep" = 20000 ] || d+="'+N  keep_fn' lines add up to $keep, want 20000"$'\n'
	[ -n "$d" ] && d+=$(grep -E '^heaptrace: (snapshot|growth|  )' "$TMP/ot.err" | head -12)
	report "overtime: --diff: a growth line after each snapshot but the first, adding up to 21000; leak_fn +16000, keep_fn +20000 in all" "$d"

	# --at-peak with -i: PREFIX.peak.heap.  The peak is phase 1's last
	# churn: keep 20000 + leak 6000 + churn 1048576 = 1074576.  With
	# --peak-step 500 every tick's rise (1000) starts a new at-peak state, so
	# the at-peak profile is the state at the peak itself: 4 + 6 + 1 = 11
	# objects, 1074576 bytes (allocated counters are the final ones).
	d=""
	grep -qE "^heaptrace: at-peak profile: $pre\\.peak\\.heap \\(peak 1074576 bytes in use, [0-9]+\\.[0-9]+ s after the start\\)\$" \
		"$TMP/ot.err" || d+="no at-peak line for PREFIX.peak.heap, peak 1074576: $(grep 'at-peak' "$TMP/ot.err")"
	report "overtime: --at-peak -i: 'at-peak profile: PREFIX.peak.heap (peak 1074576 bytes in use, T s after the start)'" "$d"
	pprof_header "$pre.peak.heap" "overtime: at-peak profile (--peak-step 500) header" 11 1074576 36 16813216
	ht ot_dpeak diff "$pre.0001.heap" "$pre.peak.heap" -f collapsed
	expect_leaf ot_dpeak leak_fn 6000
	expect_leaf ot_dpeak keep_fn 20000
	expect_leaf ot_dpeak churn_fn 1048576
}

# t_overtime - (no FIFO, the phases back to back) -f top --value alloc_objects:
#   temporary: the 16 churn_fn blocks, each freed right after its malloc;
#   keep_fn's 3 freed blocks lived >= 6 ticks of 100 ms: not temporary.
#   peak 1074576 (see overtime_snapshots); leaked: 21000 bytes.
overtime_top() {
	local d e
	ht ot_top -f top --value alloc_objects -- "$TB/t_overtime" -
	check_rc ot_top 0 "overtime: -f top over t_overtime exits 0"
	d=""
	grep -qE '^  temporary: +16 allocations freed within 1 ms$' "$TMP/ot_top.out" ||
		d+="no 'temporary: 16 allocations freed within 1 ms': $(grep 'temporary:' "$TMP/ot_top.out")"$'\n'
	grep -qE '^  peak: +1,074,576 bytes in use, [0-9]+\.[0-9]+ s after tracing started$' "$TMP/ot_top.out" ||
		d+="no 'peak: 1,074,576 bytes in use, T s after tracing started': $(grep 'peak:' "$TMP/ot_top.out")"$'\n'
	grep -qE '^  leaked: +21,000 bytes live at the end$' "$TMP/ot_top.out" ||
		d+="no 'leaked: 21,000 bytes live at the end': $(grep 'leaked:' "$TMP/ot_top.out")"$'\n'
	grep -qE '^  in use: +21,000 bytes in 17 objects$' "$TMP/ot_top.out" || d+="no 'in use: 21,000 bytes in 17 objects'"$'\n'
	grep -qE '^  allocated: +16,813,216 bytes in 36 objects$' "$TMP/ot_top.out" ||
		d+="no 'allocated: 16,813,216 bytes in 36 objects'"$'\n'
	[ -n "$d" ] && d+=$(sed -n '1,10p' "$TMP/ot_top.out")
	report "overtime: -f top summary: temporary 16, peak 1,074,576, leaked 21,000 (thousands separators)" "$d"

	# churn_fn: 16 allocated, none in use, freed 16, all 16 temporary.
	e=$(top_entry "$TMP/ot_top.out" churn_fn)
	d=""
	echo "$e" | head -1 | grep -qE '^#[0-9]+ +16 objects \([0-9.]+%\) +in use 0 B / 0 obj, allocated 16,777,216 B / 16 obj$' ||
		d+="entry: $(echo "$e" | head -1)"$'\n'
	echo "$e" | sed -n 2p | grep -qE '^      freed 16, temporary \(< 1 ms\) 16; lifetimes:( >=[0-9]+(us|ms|s):[0-9]+)+$' ||
		d+="freed line: $(echo "$e" | sed -n 2p)"$'\n'
	[ "$(lifetimes_sum "$(echo "$e" | sed -n 2p)")" = 16 ] || d+="lifetime counts add up to $(lifetimes_sum "$(echo "$e" | sed -n 2p)"), want 16"$'\n'
	report "overtime: -f top: churn_fn allocated 16, in use 0, freed 16, temporary 16, lifetimes add up to 16" "$d"

	# leak_fn: 16 in use, never freed: no freed line.
	e=$(top_entry "$TMP/ot_top.out" leak_fn)
	d=""
	echo "$e" | head -1 | grep -qE '^#[0-9]+ +16 objects \([0-9.]+%\) +in use 16,000 B / 16 obj, allocated 16,000 B / 16 obj$' ||
		d+="entry: $(echo "$e" | head -1)"$'\n'
	[ "$(echo "$e" | grep -c freed)" = 0 ] || d+="a freed line: $(echo "$e" | sed -n 2p)"$'\n'
	report "overtime: -f top: leak_fn 16 objects, 16,000 B in use, no freed line" "$d"

	# keep_fn: 4 allocated, 1 in use, freed 3 after >= 600 ms each: no
	# temporary, every lifetime in a bucket of 524 ms (2^19 us) or more.
	e=$(top_entry "$TMP/ot_top.out" keep_fn)
	d=""
	echo "$e" | head -1 | grep -qE '^#[0-9]+ +4 objects \([0-9.]+%\) +in use 5,000 B / 1 obj, allocated 20,000 B / 4 obj$' ||
		d+="entry: $(echo "$e" | head -1)"$'\n'
	echo "$e" | sed -n 2p | grep -qE '^      freed 3, temporary \(< 1 ms\) 0; lifetimes:( >=(524ms|[0-9]+s):[0-9]+)+$' ||
		d+="freed line: $(echo "$e" | sed -n 2p)"$'\n'
	[ "$(lifetimes_sum "$(echo "$e" | sed -n 2p)")" = 3 ] || d+="lifetime counts add up to $(lifetimes_sum "$(echo "$e" | sed -n 2p)"), want 3"$'\n'
	report "overtime: -f top: keep_fn freed 3, temporary 0, lifetimes >= 524ms adding up to 3" "$d"
}

# Without -o the prefix is heaptrace.PID in the current directory; with an
# interval longer than the run there is exactly one snapshot, the final one,
# and so no --diff growth line.  The at-peak profile is
# heaptrace.PID.peak.heap.  With the default step (at least 1 MiB) the
# at-peak state is the first to reach 1 MiB, phase 1's first churn: keep 4 /
# 20000, leak 1 / 1000, churn 1 / 1048576 = 6 / 1069576, while the peak
# number stays exact: 1074576.
overtime_single() {
	local dir=$TMP/ot1 pid d files
	mkdir -p "$dir"
	(cd "$dir" && ht ot1 -v -i 3600 --diff --at-peak -- "$TB/t_overtime" -)
	pid=$(sed -nE 's/^heaptrace: tracing PID ([0-9]+) .*/\1/p' "$TMP/ot1.err" | head -1)
	d=$(rc_diag ot1 0)
	files=$(cd "$dir" && printf '%s ' *)
	[ "$files" = "heaptrace.$pid.0001.heap heaptrace.$pid.peak.heap " ] ||
		d+="files: $files; want heaptrace.$pid.0001.heap heaptrace.$pid.peak.heap"$'\n'
	[ "$(snap_count ot1)" = 1 ] || d+="$(snap_count ot1) snapshot lines, want 1"$'\n'
	grep -qE "^heaptrace: snapshot 1: heaptrace\\.$pid\\.0001\\.heap, 3 stacks, 21000 bytes in use, [0-9]+ ms\$" "$TMP/ot1.err" ||
		d+="no 'snapshot 1: heaptrace.$pid.0001.heap, 3 stacks, 21000 bytes in use' line: $(grep 'snapshot' "$TMP/ot1.err")"$'\n'
	grep -q '^heaptrace: growth' "$TMP/ot1.err" && d+="a growth line with a single snapshot"$'\n'
	grep -qE "^heaptrace: at-peak profile: heaptrace\\.$pid\\.peak\\.heap \\(peak 1074576 bytes in use, [0-9]+\\.[0-9]+ s after the start\\)\$" \
		"$TMP/ot1.err" || d+="at-peak line: $(grep 'at-peak' "$TMP/ot1.err")"$'\n'
	report "overtime: -i 3600 without -o: only heaptrace.PID.0001.heap (final) and heaptrace.PID.peak.heap in the current directory, no growth line" "$d"
	pprof_header "$dir/heaptrace.$pid.0001.heap" "overtime: heaptrace.PID.0001.heap header" 17 21000 36 16813216
	pprof_header "$dir/heaptrace.$pid.peak.heap" "overtime: at-peak profile with the default step header (peak stays 1074576)" \
		6 1069576 36 16813216
}

# t_peak: big_fn malloc(64 MiB) and free, small_fn malloc(1 MiB) kept; with
# "nudge" top_fn malloc(63 MiB + 8192) kept after that.
#   peak 67108864 (64 MiB); nudge: 1048576 + 66068480 = 67117056
#   allocated: 2 objects, 67108864 + 1048576 = 68157440 bytes
overtime_peak() {
	local d
	# Collapsed to a file: the at-peak profile goes to FILE.peak.
	ht pk --at-peak -f collapsed -o "$TMP/pk.final" -- "$TB/t_peak"
	d=$(rc_diag pk 0)
	grep -qE "^heaptrace: at-peak profile: $TMP/pk\\.final\\.peak \\(peak 67108864 bytes in use, [0-9]+\\.[0-9]+ s after the start\\)\$" \
		"$TMP/pk.err" || d+="at-peak line: $(grep 'at-peak' "$TMP/pk.err")"$'\n'
	report "overtime: t_peak --at-peak -o FILE: 'at-peak profile: FILE.peak (peak 67108864 bytes in use, T s after the start)'" "$d"
	cp "$TMP/pk.final" "$TMP/pk_final.out" 2>/dev/null
	cp "$TMP/pk.final.peak" "$TMP/pk_atpeak.out" 2>/dev/null
	expect_leaf pk_final small_fn 1048576
	leafset pk_final small_fn
	expect_leaf pk_atpeak big_fn 67108864
	leafset pk_atpeak big_fn

	ht pk_top -f top -- "$TB/t_peak"
	d=$(rc_diag pk_top 0)
	grep -qE '^  peak: +67,108,864 bytes in use, [0-9]+\.[0-9]+ s after tracing started$' "$TMP/pk_top.out" ||
		d+="peak line: $(grep 'peak:' "$TMP/pk_top.out")"$'\n'
	grep -qE '^  leaked: +1,048,576 bytes live at the end$' "$TMP/pk_top.out" ||
		d+="leaked line: $(grep 'leaked:' "$TMP/pk_top.out")"$'\n'
	grep -qE '^  temporary: +1 allocations freed within 1 ms$' "$TMP/pk_top.out" ||
		d+="temporary line: $(grep 'temporary:' "$TMP/pk_top.out")"$'\n'
	report "overtime: t_peak -f top: peak 67,108,864, leaked 1,048,576, temporary 1" "$d"

	# pprof: at-peak in use 1: 67108864 (small_fn 0), allocated 2: 68157440.
	ht pk_pp --at-peak -o "$TMP/pk.prof" -- "$TB/t_peak"
	pprof_header "$TMP/pk.prof.peak" "overtime: t_peak at-peak pprof header" 1 67108864 2 68157440
	pprof_header "$TMP/pk.prof" "overtime: t_peak final pprof header" 1 1048576 2 68157440

	# nudge, default step (5% of 64 MiB = 3355443 > 8192): the peak number
	# moves to 67117056, the at-peak state stays big_fn's.
	ht pkn --at-peak -f collapsed -o "$TMP/pkn.final" -- "$TB/t_peak" nudge
	d=$(rc_diag pkn 0)
	grep -qE "^heaptrace: at-peak profile: $TMP/pkn\\.final\\.peak \\(peak 67117056 bytes in use, " "$TMP/pkn.err" ||
		d+="at-peak line: $(grep 'at-peak' "$TMP/pkn.err")"$'\n'
	report "overtime: t_peak nudge: the peak is exact, 67117056" "$d"
	cp "$TMP/pkn.final.peak" "$TMP/pkn_atpeak.out" 2>/dev/null
	expect_leaf pkn_atpeak big_fn 67108864
	leafset pkn_atpeak big_fn

	# nudge, --peak-step 4096: the rise of 8192 makes a new at-peak state:
	# small_fn 1048576 + top_fn 66068480, big_fn freed.
	ht pks --at-peak --peak-step 4096 -f collapsed -o "$TMP/pks.final" -- "$TB/t_peak" nudge
	d=$(rc_diag pks 0)
	grep -qE "^heaptrace: at-peak profile: $TMP/pks\\.final\\.peak \\(peak 67117056 bytes in use, " "$TMP/pks.err" ||
		d+="at-peak line: $(grep 'at-peak' "$TMP/pks.err")"$'\n'
	report "overtime: t_peak nudge --peak-step 4096: the peak is exact, 67117056" "$d"
	cp "$TMP/pks.final.peak" "$TMP/pks_atpeak.out" 2>/dev/null
	expect_leaf pks_atpeak small_fn 1048576
	expect_leaf pks_atpeak top_fn 66068480
	leafset pks_atpeak small_fn top_fn
}

# t_minage FIFO: old_fn 5 x 4096, "old", wait, young_fn 7 x 3000, exit.
# The harness waits 3 s after "old" before the release, so old blocks are
# at least 3 s old at the end; young ones are as old as heaptrace takes to
# see the exit (milliseconds).  --min-age 2: in use only old_fn, 5 / 20480;
# allocated unchanged: 12 objects, 20480 + 21000 = 41480 bytes.  Three runs
# side by side: collapsed, pprof, top.
overtime_minage() {
	local k d hp=() i=0
	for k in ma_col ma_pp ma_top; do
		mkfifo "$TMP/$k.fifo"
	done
	ht_bg ma_col --max-allocs 4096 --min-age 2 -f collapsed -o "$TMP/ma_col.out" -- "$TB/t_minage" "$TMP/ma_col.fifo"
	hp+=("$HPID")
	ht_bg ma_pp --max-allocs 4096 --min-age 2 -o "$TMP/ma_pp.heap" -- "$TB/t_minage" "$TMP/ma_pp.fifo"
	hp+=("$HPID")
	ht_bg ma_top --max-allocs 4096 --min-age 2 -f top -o "$TMP/ma_top.out" -- "$TB/t_minage" "$TMP/ma_top.fifo"
	hp+=("$HPID")
	d=""
	for k in ma_col ma_pp ma_top; do
		wait_for "$TMP/$k.tout" '^old$' 30 "${hp[$i]}" || d+="$k: no 'old' from the target: $(ctx "$k")"$'\n'
		i=$((i + 1))
	done
	if [ -n "$d" ]; then
		fail "overtime: --min-age: the targets allocate their old blocks" "$d"
		kill_tree "${hp[@]}"
		return
	fi
	sleep 3
	i=0
	for k in ma_col ma_pp ma_top; do
		release "$k"
		ht_bg_wait "$k" "${hp[$i]}" 20
		check_rc "$k" 0 "overtime: --min-age 2 ($k) exits 0"
		i=$((i + 1))
	done
	expect_leaf ma_col old_fn 20480
	expect_leaf ma_col young_fn 0
	leafset ma_col old_fn
	pprof_header "$TMP/ma_pp.heap" "overtime: --min-age 2 pprof header (in use: old blocks only; allocated: all)" 5 20480 12 41480
	d=""
	grep -qE '^  leaked: +20,480 bytes live at the end \(blocks at least --min-age old\)$' "$TMP/ma_top.out" ||
		d+="leaked line: $(grep 'leaked:' "$TMP/ma_top.out")"$'\n'
	grep -qE '^  in use: +20,480 bytes in 5 objects$' "$TMP/ma_top.out" || d+="in use line: $(grep 'in use:' "$TMP/ma_top.out")"$'\n'
	grep -qE '^  allocated: +41,480 bytes in 12 objects$' "$TMP/ma_top.out" || d+="allocated line: $(grep 'allocated:' "$TMP/ma_top.out")"$'\n'
	grep -qw young_fn "$TMP/ma_top.out" && d+="young_fn is listed"$'\n'
	report "overtime: --min-age 2 -f top: leaked 20,480 (old blocks), in use 20,480 / 5, allocated 41,480 / 12, no young_fn" "$d"
}

# heaptrace diff on what is not a pair of heap profiles: one line, non-zero
# exit, nothing on stdout.  GOOD is a valid profile (diffed with itself it
# exits 0), so each error comes from the other file.
overtime_diff_errors() {
	local good=$TMP/de_good.heap k d rc
	printf 'heap profile:      1:      100 [     1:      100] @ heapprofile\n     1:      100 [     1:      100] @ 0x0000000000401000\n' >"$good"
	printf 'hello\n' >"$TMP/de_notprof.txt"
	: >"$TMP/de_empty.heap"
	printf 'heap profile:      1:        2 [     3:        4] @ heapprofile\ngarbage\n' >"$TMP/de_badrec.heap"
	ht de_good diff "$good" "$good" -f collapsed
	check_rc de_good 0 "overtime: heaptrace diff GOOD GOOD exits 0 (GOOD is a profile)"
	ht de_missing diff "$TMP/de_nonexistent.heap" "$good"
	ht de_missing2 diff "$good" "$TMP/de_nonexistent.heap"
	ht de_text diff "$TMP/de_notprof.txt" "$good"
	ht de_elf diff "$good" "$TB/t_overtime"
	ht de_empty diff "$TMP/de_empty.heap" "$good"
	ht de_badrec diff "$good" "$TMP/de_badrec.heap"
	ht de_dir diff "$TMP/" "$good"
	for k in de_missing de_missing2 de_text de_elf de_empty de_badrec de_dir; do
		d=""
		rc=$(cat "$TMP/$k.rc")
		{ [ "$rc" = 0 ] || [ "$rc" -ge 124 ]; } && d+="exit status $rc, want a non-zero error exit"$'\n'
		d+=$(one_line_diag "$k")
		[ -s "$TMP/$k.out" ] && d+="output on stdout: $(head -2 "$TMP/$k.out")"$'\n'
		report "overtime: $(sed 's/^heaptrace //' "$TMP/$k.cmd"): one line, non-zero exit, no output" "$d"
	done
	# The bad file is named in the error.
	d=""
	grep -q 'de_nonexistent.heap' "$TMP/de_missing.err" || d+="de_missing: $(cat "$TMP/de_missing.err")"$'\n'
	grep -q 'de_nonexistent.heap' "$TMP/de_missing2.err" || d+="de_missing2: $(cat "$TMP/de_missing2.err")"$'\n'
	grep -q 'de_notprof.txt' "$TMP/de_text.err" || d+="de_text: $(cat "$TMP/de_text.err")"$'\n'
	grep -q 't_overtime' "$TMP/de_elf.err" || d+="de_elf: $(cat "$TMP/de_elf.err")"$'\n'
	report "overtime: heaptrace diff errors name the file at fault" "$d"
}

# ---------------------------------------------------------------------------
# -f top with -i on a terminal: a live view redrawn in place (like top), with
# the growth since the previous redraw, instead of snapshot files.
scenario_liveview() {
	local d="" dir="$TMP/live" redraws
	mkdir -p "$dir"
	echo "script -qc 'heaptrace -f top -i 0.3 -- build/tests/t_overtime -'" >"$TMP/live.cmd"
	(cd "$dir" && timeout -k 5 60 script -qec "$HT -f top -i 0.3 -- $TB/t_overtime -" "$TMP/live.out" \
		</dev/null >/dev/null 2>&1)
	RC=$?
	echo "$RC" >"$TMP/live.rc"
	[ "$RC" = 0 ] || d+="exit status $RC"$'\n'
	redraws=$(grep -o $'\033\[H\033\[J' "$TMP/live.out" | wc -l)
	# t_overtime runs 16 ticks of 100 ms: at least 4 redraws at 0.3 s, plus the final one.
	[ "$redraws" -ge 5 ] || d+="$redraws redraws (clear-screen sequences), want at least 5"$'\n'
	grep -q 'heaptrace: PID [0-9]*, stacks by inuse_space' "$TMP/live.out" || d+="no top header"$'\n'
	grep -q 'leak_fn' "$TMP/live.out" || d+="leak_fn never shown"$'\n'
	grep -q 'heaptrace: growth +1000 inuse_space since the last snapshot' "$TMP/live.out" ||
		grep -q 'heaptrace: growth +[0-9]* inuse_space since the last snapshot' "$TMP/live.out" ||
		d+="no growth line"$'\n'
	# The final redraw holds the whole run: leak_fn's 16 x 1000 bytes.
	tail -c 4000 "$TMP/live.out" | grep -q '16,000 bytes' || d+="the last redraw does not show leak_fn's 16,000 bytes"$'\n'
	ls "$dir"/heaptrace.*.heap >/dev/null 2>&1 && d+="snapshot files were written: $(ls "$dir")"$'\n'
	report "liveview: -f top -i on a terminal redraws in place, no snapshot files" "$d"
}

# ---------------------------------------------------------------------------
# Forks (t_fork: parent -> child -> grandchild, see its source).  Without
# --follow-fork only the target is traced and its numbers are exact; with
# it, each child has its own profile (FILE.PID), the child's free of a
# block it inherited is counted as inherited_frees (not a loss), and the
# parent's numbers are the same.  Also in -p mode, with an exec in the
# grandchild, and with heaptrace SIGKILLed while it holds the tree.

# fork_files KEY: "PID PATH" per child profile announced on KEY's stderr.
fork_files() {
	sed -n 's/^heaptrace: child PID \([0-9]*\) (of PID [0-9]*): profile in \(.*\)$/\1 \2/p' "$TMP/$1.err"
}

# fork_expect KEY VALUE WHO EXPECTED: the collapsed profile of WHO (parent,
# child, grandchild) holds exactly EXPECTED ("leaf=value ..." sorted).
fork_expect() {
	local key=$1 value=$2 who=$3 want=$4 f got
	case $who in
	parent) f=$TMP/$key.prof ;;
	child) f=$(fork_files "$key" | sed -n 1p | cut -d' ' -f2-) ;;
	grandchild) f=$(fork_files "$key" | sed -n 2p | cut -d' ' -f2-) ;;
	esac
	got=$(awk '{ n = split($1, fr, ";"); printf "%s=%s\n", fr[n], $2 }' "$f" 2>/dev/null | sort | tr '\n' ' ')
	[ "${got% }" = "$want" ] && pass "$key: $who's $value profile: $want" ||
		fail "$key: $who's $value profile: $want" "got '${got% }' from ${f:-no file}"$'\n'"$(ctx "$key")"
}

# fork_start KEY: t_fork waiting on KEY's FIFO (TPID), for heaptrace -p.
fork_start() {
	mkfifo "$TMP/$1.fifo"
	"$TB/t_fork" plain "$TMP/$1.fifo" >"$TMP/$1.tout" 2>&1 &
	TPID=$!
	wait_for "$TMP/$1.tout" '^ready$' 10 "$TPID" && return 0
	fail "$1: t_fork starts" "$(cat "$TMP/$1.tout")"
	kill_tree "$TPID"
	return 1
}

scenario_fork() {
	local key v d want_p want_c want_g
	for v in alloc_space inuse_space; do
		case $v in
		alloc_space)
			want_p="fork_after=4000 fork_before=1000 fork_shared=3000"
			want_c="child_keep=6000 child_temp=500"
			want_g="grandchild_keep=1400" ;;
		inuse_space)
			want_p="fork_after=4000 fork_before=1000 fork_shared=3000"
			want_c="child_keep=6000"
			want_g="grandchild_keep=1400" ;;
		esac
		# Without --follow-fork: the target alone.
		key=fork_off.$v
		ht $key -v -f collapsed --value $v -o "$TMP/$key.prof" -- "$TB/t_fork"
		check_rc $key 0 "$key: exits 0"
		fork_expect $key $v parent "$want_p"
		d=$(fork_files $key)
		report "$key: no child profile without --follow-fork" "$d"
		[ $v = alloc_space ] && expect_events $key allocs=3 frees=0 unmatched_frees=0 inherited_frees=0

		key=fork_on.$v
		(cd "$TMP" && ht $key -v --follow-fork -f collapsed --value $v -o "$TMP/$key.prof" -- "$TB/t_fork")
		RC=$(cat "$TMP/$key.rc")
		check_rc $key 0 "$key: exits 0"
		d=$(fork_files $key | wc -l)
		report "$key: two child profiles (child, grandchild)" "$([ "$d" = 2 ] || echo "$d announced")"
		fork_expect $key $v parent "$want_p"
		fork_expect $key $v child "$want_c"
		fork_expect $key $v grandchild "$want_g"
		# 3 + 4 + 2 allocations; the child's own free of child_temp's block,
		# and its free of the inherited fork_shared block.
		[ $v = alloc_space ] && expect_events $key allocs=9 frees=1 unmatched_frees=0 inherited_frees=1
	done

	# stdout profile: children go to heaptrace.PID.collapsed in the current directory.
	key=fork_cwd
	mkdir -p "$TMP/cwd"
	(cd "$TMP/cwd" && ht $key --follow-fork -f collapsed --value alloc_space -- "$TB/t_fork")
	d=""
	for f in $(fork_files $key | cut -d' ' -f2-); do
		case $f in heaptrace.[0-9]*.collapsed) ;; *) d+="child profile named $f"$'\n' ;; esac
		[ -s "$TMP/cwd/$f" ] || d+="$f missing or empty in the current directory"$'\n'
	done
	[ "$(fork_files $key | wc -l)" = 2 ] || d+="$(fork_files $key | wc -l) child profiles, want 2"
	report "$key: child profiles of a stdout run are heaptrace.PID.collapsed in the current directory" "$d"

	# The grandchild execs /bin/true: reported as that child's exec; the others unchanged.
	key=fork_exec
	ht $key --follow-fork -f collapsed --value alloc_space -o "$TMP/$key.prof" -- "$TB/t_fork" exec
	check_rc $key 0 "$key: exits 0"
	fork_expect $key alloc_space parent "fork_after=4000 fork_before=1000 fork_shared=3000"
	fork_expect $key alloc_space child "child_keep=6000 child_temp=500"
	local gpid
	gpid=$(fork_files $key | sed -n 2p | cut -d' ' -f1)
	d=""
	grep -q "^heaptrace: child PID $gpid executed a new program" "$TMP/$key.err" ||
		d+="no 'child PID $gpid executed a new program' line"$'\n'
	grep -q "^heaptrace: PID [0-9]* executed a new program" "$TMP/$key.err" &&
		d+="the exec was reported as the target's"$'\n'
	report "$key: the grandchild's exec is reported as its own" "$d${d:+$(ctx $key)}"

	# -p: attach to a waiting t_fork, then let it fork.
	key=fork_p
	if fork_start $key; then
		echo "heaptrace -v --follow-fork -f collapsed --value alloc_space -p PID" >"$TMP/$key.cmd"
		timeout -k 5 "$(tmo)" "$HT" -v --follow-fork -f collapsed --value alloc_space -o "$TMP/$key.prof" \
			-p "$TPID" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
		HPID=$!
		if wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID" 30 "$HPID"; then
			release $key
			wait_exit "$TPID" 10
			d=$([ "$WRC" = 0 ] || echo "target exit status $WRC")
			wait_exit "$HPID" 15
			[ "$WRC" = 0 ] || d+=" heaptrace exit status $WRC"
			report "$key: target and heaptrace -p --follow-fork exit 0" "$d${d:+$(ctx $key)}"
			fork_expect $key alloc_space parent "fork_after=4000 fork_before=1000 fork_shared=3000"
			fork_expect $key alloc_space child "child_keep=6000 child_temp=500"
			fork_expect $key alloc_space grandchild "grandchild_keep=1400"
		else
			fail "$key: heaptrace -p --follow-fork attaches" "$(ctx $key)"
			kill_tree "$HPID" "$TPID"
		fi
	fi

	# heaptrace SIGKILLed while it is the tree's tracer: the kernel lets
	# the target go (its forks are not held), and no probe stays behind.
	key=fork_kill
	if fork_start $key; then
		"$HT" -v --follow-fork -o "$TMP/$key.prof" -p "$TPID" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
		HPID=$!
		if wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID" 30 "$HPID"; then
			rl_bpf_ids "$HPID" >"$TMP/$key.ids"
			kill -KILL "$HPID"
			wait "$HPID" 2>/dev/null
			target_finishes $key
			d=$FIN
			report "$key: heaptrace --follow-fork SIGKILLed: the target forks, runs on and exits 0" "$d"
			d=$(rl_bpf_left "$TMP/$key.ids")
			d+=$(rl_uprobe_events)
			report "$key: no program, link or uprobe_events entry of the killed heaptrace is left" "$d"
		else
			fail "$key: heaptrace -p --follow-fork attaches" "$(ctx $key)"
			kill_tree "$HPID" "$TPID"
		fi
	fi
}

SCENARIOS="unit placement stacks entrypoints custom threads ctor exit failed deep unwind dlopen signal errors attach pprof top proto valgrind faults limits badinput stress soak liveview overtime fork sample"

main() {
	local s
	local run=("$@")
	[ ${#run[@]} -eq 0 ] && read -r -a run <<<"$SCENARIOS"
	prerequisites
	for s in "${run[@]}"; do
		if ! declare -F "scenario_$s" >/dev/null; then
			fail "unknown scenario $s" "known: $SCENARIOS"
			continue
		fi
		echo "# --- $s"
		"scenario_$s"
	done
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ]
}

main "$@"
