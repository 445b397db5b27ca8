# shellcheck shell=bash
# Area "custom" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario custom: custom allocators and the malloc the target really uses.

# ---------------------------------------------------------------------------
# Custom allocators (--sym, --free-sym, --reset-sym, --no-libc) and the
# malloc the target really uses (static executable, LD_PRELOAD'ed jemalloc
# and tcmalloc, --lib).  The targets' sources derive every number.
scenario_custom() {
	custom_arena
	custom_pool
	custom_reset
	custom_wrapfree
	custom_wrapring
	custom_stubmix
	custom_stubsampled
	custom_longjmp
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

# t_wrapfree: obj_new(n) = malloc(n); obj_del(p) calls free(p);
# obj_del_tail(p) jumps to free.  Each wrapper's free is counted once, as
# the wrapper's: the free() inside it finds the block gone, and is no
# unmatched free (it was one before heaptrace knew nested frees: 11 of the
# 12 wrapper frees of the first four sites).  A block handed out again at
# the same address is freed again, from the same indirect call site, by a
# function that is no wrapper (drop_indirect): its free counts.
#   keep_objs  3 x obj_new(100), kept          alloc 3/300   in use 3/300
#   drop_objs  4 x obj_new(200), obj_del       alloc 4/800   in use 0/0
#   drop_tail  5 x obj_new(300), obj_del_tail  alloc 5/1500  in use 0/0
#   drop_plain 2 x malloc(50), obj_del         alloc 2/100   in use 0/0
#   drop_libc  1 x obj_new(70), free           alloc 1/70    in use 0/0
#   drop_indirect 2 x obj_new(400), obj_del then a plain free
#                                              alloc 2/800   in use 0/0
custom_wrapfree() {
	profile4x wrapfree 0 --sym obj_new --free-sym obj_del --free-sym obj_del_tail -- "$TB/t_wrapfree"
	#                                 alloc   alloc  inuse   inuse
	#                                 objects space  objects space
	expect4 wrapfree keep_objs          3      300    3       300
	expect4 wrapfree drop_objs          4      800    0         0
	expect4 wrapfree drop_tail          5     1500    0         0
	expect4 wrapfree drop_plain         2      100    0         0
	expect4 wrapfree drop_libc          1       70    0         0
	expect4 wrapfree drop_indirect      2      800    0         0
	absent_leaf4 wrapfree obj_new obj_del obj_del_tail del_plain
	leafset4 wrapfree
	# allocs = 3 + 4 + 5 + 2 + 1 + 2 = 17 (the mallocs inside obj_new are
	# nested); frees = 4 + 5 + 2 + 1 + 2 = 14, none unmatched.
	expect_events wrapfree.alloc_objects allocs=17 frees=14 unmatched_frees=0 missed_frees=0
}

# t_wrapso: t_wrapfree's code from a shared library near libc, so that
# one stub reaches the wrappers and the malloc family: the events go
# through the ring, the wrappers' frees are called holding a nesting slot
# (STUB_FN_WRAPS) and the free() inside one is theirs, not an unmatched
# free (11 of them without the slot).  The same numbers as t_wrapfree's,
# with the ring and with a record site a call (HEAPTRACE_BATCH=0).
custom_wrapring() {
	local b key
	for b in 1 0; do
		key=wrapring$b
		HEAPTRACE_BATCH=$b profile4x $key 0 --sym obj_new --free-sym obj_del --free-sym obj_del_tail -- "$TB/t_wrapso"
		expect4 $key keep_objs          3      300    3       300
		expect4 $key drop_objs          4      800    0         0
		expect4 $key drop_tail          5     1500    0         0
		expect4 $key drop_plain         2      100    0         0
		expect4 $key drop_libc          1       70    0         0
		expect4 $key drop_indirect      2      800    0         0
		leafset4 $key
		expect_events $key.alloc_objects allocs=17 frees=14 unmatched_frees=0 missed_frees=0
		local how
		how=$(grep -m1 -E '^heaptrace: fast path: (no batching|events batched)' "$TMP/$key.alloc_objects.err")
		# --no-inject: the same numbers through uprobes, no stub to say how.
		[ -n "${HT_TEST_NO_INJECT:-}" ] && continue
		case $b in
		1) report "custom wrapring: the wrappers and the malloc family batched in one ring" \
			"$([[ $how == "heaptrace: fast path: events batched"* ]] || echo "got: $how")" ;;
		0) report "custom wrapring: HEAPTRACE_BATCH=0: a record site a call" \
			"$([[ $how == *"no batching (HEAPTRACE_BATCH=0)"* ]] || echo "got: $how")" ;;
		esac
	done
}

# The fast path takes --sym functions too (docs/fast-path.md, "custom
# allocators"): pool_alloc and pool_free through the stub, malloc@libc.so.6
# on uprobes (another object, out of the reach of a stub near t_pool: the
# objects of the plan go to one stub in order while it can be placed within
# a jump of every one, docs/fast-path.md).  The slab malloc
# inside pool_alloc is nested in it (the uprobe's BPF program reads the
# stub's nesting table), as when all three have uprobes: custom_pool's
# numbers, plus pool_new's malloc(32): allocs = 24 + 1.  The same with
# --no-inject (make test-noinject).
custom_stubmix() {
	local d="" e=$TMP/stubmix.alloc_objects.err
	profile4x stubmix 0 --no-libc --sym 'pool_alloc:size=arg2' --sym 'malloc@libc.so.6' \
		--free-sym 'pool_free:ptr=arg2' -- "$TB/t_pool"
	#                              alloc   alloc  inuse   inuse
	#                              objects space  objects space
	expect4 stubmix pool_keep       5      500    5       500
	expect4 stubmix pool_churn     10      400    0         0
	expect4 stubmix pool_some       4      256    1        64
	expect4 stubmix slab_alloc      5      472    3        72
	expect4 stubmix pool_new        1       32    1        32
	absent_leaf4 stubmix pool_alloc
	leafset4 stubmix
	expect_events stubmix.alloc_objects allocs=25 frees=15 unmatched_frees=0 missed_frees=0
	if ! grep -q 'fast path: off (--no-inject)' "$e"; then
		grep -qE '^heaptrace: probe pool_alloc +[^ ]*/t_pool\+0x[0-9a-f]+: the fast path \(stub\)' "$e" ||
			d+="pool_alloc is not through the stub"$'\n'
		grep -qE '^heaptrace: probe pool_free +[^ ]*/t_pool\+0x[0-9a-f]+: the fast path \(stub\)' "$e" ||
			d+="pool_free is not through the stub"$'\n'
		# The executable (at 0x55...) and libc (at 0x7f...) lie further
		# apart than a rel32 jump reaches: the object with more functions
		# takes the stub, malloc goes through a page of jumps near libc.
		grep -qE '^heaptrace: probe malloc +[^ ]*/libc\.so\.6\+0x[0-9a-f]+: the fast path \(stub\)' "$e" ||
			d+="malloc is not planned for the fast path"$'\n'
		grep -qE "^heaptrace: fast path: the functions of [^ ]*/libc\.so\.6 are beyond one stub's reach with [^ ]*/t_pool's: through a page of jumps near them$" "$e" ||
			d+="no -v line: libc's functions through a page of jumps"$'\n'
		grep -qE '^heaptrace: fast path: a stub at 0x[0-9a-f]+ .*, 3 functions redirected \(1 through the page of jumps at 0x[0-9a-f]+\), events batched$' "$e" ||
			d+="not 3 functions redirected, 1 through the page of jumps, events batched"$'\n'
		d+=$(grep -E 'keeps its uprobes' "$e" | head -3 | sed 's/^/a function keeps its uprobes: /')
		[ -n "$d" ] && d+=$(grep -E '^heaptrace: (probe|fast path)' "$e" | head -8)
	fi
	report "custom stubmix: -v: pool_alloc and pool_free through the stub, malloc (in libc, beyond its reach) through a page of jumps, events batched" "$d"
}

# The stub's sampled path for --sym functions: --sample-rate 1 samples
# every allocation (a block of n >= 10 bytes with probability 1 - e^-n),
# so the counts are exact and the same as custom_pool's, custom_reset's and
# specrealloc's: allocations decided in the process, frees of sampled
# blocks (its set), the realloc role (repal frees its old block when it
# returns a new one) and resets.
custom_stubsampled() {
	profile4x spool 0 --sample-rate 1 --no-libc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' \
		-- "$TB/t_pool"
	expect4 spool pool_keep          5      500    5       500
	expect4 spool pool_churn        10      400    0         0
	expect4 spool pool_some          4      256    1        64
	expect4 spool slab_alloc         5      472    3        72
	leafset4 spool
	expect_events spool.alloc_objects allocs=24 frees=15 unmatched_frees=0 missed_frees=0 sampled_set_full=0

	profile4x sreset 0 --sample-rate 1 --no-libc --sym "$ARENA_SPEC" --reset-sym 'arena_reset:arena=arg1' \
		-- "$TB/t_reset"
	expect4 sreset ra_one          300     2400    0         0
	expect4 sreset ra_two           20      320    0         0
	expect4 sreset rb_keep         200      800  200       800
	expect4 sreset ab_shared        50      100   25        50
	expect4 sreset ra_after        600     4800  600      4800
	leafset4 sreset
	expect_events sreset.alloc_objects allocs=17 frees=0 unmatched_frees=0 missed_frees=0 \
		arena_resets=1 reset_objects=345 arena_map_full=0

	profile4x spg 0 --sample-rate 1 --no-libc --sym pal --sym 'ctx_alloc:size=arg2' \
		--sym 'repal:size=arg2,free=arg1' --free-sym pf -- "$TB/t_pgctx"
	expect4 spg top_keep             3      300    3       300
	expect4 spg tmp_keep             4      200    4       200
	expect4 spg direct_keep          2       60    2        60
	expect4 spg churn                5      200    0         0
	expect4 spg seed_tmp             1       10    0         0
	expect4 spg seed_top             1       20    0         0
	expect4 spg grow                 2     3000    2      3000
	leafset4 spg
	expect_events spg.alloc_objects allocs=18 frees=7 unmatched_frees=0 missed_frees=0 failed_allocs=0
}

# t_longjmp: xalloc longjmp'd out of (PostgreSQL's elog(ERROR) out of
# palloc), then called from above that call and at its very depth again
# (the target's comment derives the numbers).  The call that never returned
# is a missed return, noticed when a call enters above it; the calls at its
# depth afterwards are not taken for nested in it: allocs = 4.  Exact and
# sampled (--sample-rate 1: every call), with the fast path (its nesting
# slot is given up) as with --no-inject (the uprobes' depth).
custom_longjmp() {
	local rate key
	for rate in 0 1; do
		key=ljmp$rate
		ht "$key" -v --no-libc --sym xalloc $([ $rate = 1 ] && echo --sample-rate 1) -f collapsed \
			--value alloc_space -- "$TB/t_longjmp"
		check_rc "$key" 0 "custom longjmp: --sym xalloc$([ $rate = 1 ] && echo ' --sample-rate 1') exits 0"
		expect_leaf "$key" shallow 10
		expect_leaf "$key" lvl1 300
		leafset "$key" shallow lvl1
		expect_events "$key" allocs=4 missed_returns=1 unmatched_frees=0
	done
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
