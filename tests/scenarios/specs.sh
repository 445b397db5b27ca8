# shellcheck shell=bash
# Area "specs" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# the allocator spec language on a PostgreSQL-shaped allocator (issue 20,
# item 5): the realloc role, functions by address and from separate debug
# info, expressions that read the target's memory.

# t_pgctx: a PostgreSQL-shaped context allocator (the target's comment
# derives every number): pal (palloc), ctx_alloc (MemoryContextAlloc),
# repal (repalloc: a new block in the old one's context, the old one pf'd
# inside it), pf (pfree).
#   top_keep    3 x pal(100), kept             alloc 3/300   in use 3/300
#   tmp_keep    4 x pal(50), kept              alloc 4/200   in use 4/200
#   direct_keep 2 x ctx_alloc(ctx, 30), kept   alloc 2/60    in use 2/60
#   churn       5 x pal(40), each pf'd         alloc 5/200   in use 0/0
#   seed_tmp    pal(10), repal'd               alloc 1/10    in use 0/0
#   seed_top    ctx_alloc(ctx, 20), repal'd    alloc 1/20    in use 0/0
#   grow        repal(.., 1000), repal(.., 2000), kept
#                                              alloc 2/3000  in use 2/3000
PG_SPECS=(--sym pal --sym 'ctx_alloc:size=arg2' --sym 'repal:size=arg2,free=arg1' --free-sym pf)

# The realloc role (issue 20, 5b): repal is one --sym with free=arg1, which
# frees the old block and allocates the new one, as libc's realloc is
# traced.  The same function as --sym and --free-sym is refused: one probe
# has one spec, and the second role used to be dropped with a warning about
# aliases.
scenario_specrealloc() {
	local mode
	for mode in nolibc libc; do
		local key=pgre_$mode opts=("${PG_SPECS[@]}")
		[ $mode = nolibc ] && opts=(--no-libc "${opts[@]}")
		profile4x "$key" 0 "${opts[@]}" -- "$TB/t_pgctx"
		#                             alloc   alloc  inuse   inuse
		#                             objects space  objects space
		expect4 "$key" top_keep        3      300    3       300
		expect4 "$key" tmp_keep        4      200    4       200
		expect4 "$key" direct_keep     2       60    2        60
		expect4 "$key" churn           5      200    0         0
		expect4 "$key" seed_tmp        1       10    0         0
		expect4 "$key" seed_top        1       20    0         0
		expect4 "$key" grow            2     3000    2      3000
		leafset4 "$key"
		# allocs = 3 + 4 + 2 + 5 + 2 + 2 = 18; frees = 5 pf + 2 by repal; the
		# mallocs and frees inside (libc traced too) are nested: counted once.
		expect_events "$key.alloc_objects" allocs=18 frees=7 unmatched_frees=0 missed_frees=0 failed_allocs=0
	done

	# Without free=arg1 the old blocks stay in use: the field is what frees them.
	ht pgre_nofree --no-libc --sym pal --sym 'ctx_alloc:size=arg2' --sym 'repal:size=arg2' --free-sym pf \
		-f collapsed --value inuse_space -v -- "$TB/t_pgctx"
	check_rc pgre_nofree 0 "specrealloc: repal without free=arg1 exits 0"
	expect_leaf pgre_nofree seed_tmp 10
	expect_leaf pgre_nofree seed_top 20
	expect_events pgre_nofree allocs=18 frees=5

	ht pgre_both --no-libc --sym pal --sym 'repal:size=arg2' --free-sym repal -- "$TB/t_pgctx"
	report "specrealloc: --sym repal --free-sym repal -> exit 2, one line naming free=argN (the realloc role)" \
		"$(err_diag pgre_both 2 '--free-sym repal' 'realloc' "--sym 'repal:size=arg2,free=arg1'")"
	ht pgre_both2 --no-libc --free-sym pf --sym pf -- "$TB/t_pgctx"
	report "specrealloc: --free-sym pf --sym pf -> exit 2, one line naming free=argN" \
		"$(err_diag pgre_both2 2 '--sym pf' 'free=argN')"
	ht pgre_reset --no-libc --sym 'ctx_alloc:size=arg2,arena=arg1' --reset-sym 'ctx_alloc' -- "$TB/t_pgctx"
	report "specrealloc: --sym ctx_alloc --reset-sym ctx_alloc -> exit 2, one line: one role" \
		"$(err_diag pgre_reset 2 '--reset-sym ctx_alloc' 'one role')"
}

# The numbers of t_pgctx as seen from set_alloc, the static function every
# allocation goes through (its caller is the innermost frame), with pf as
# the free: repal is not traced, so its pf of the old block is a free.
#   top_keep;pal          3 / 300    in use 3 / 300
#   tmp_keep;pal          4 / 200    in use 4 / 200
#   direct_keep;ctx_alloc 2 / 60     in use 2 / 60
#   churn;pal             5 / 200    in use 0
#   seed_tmp;pal          1 / 10     in use 0
#   seed_top;ctx_alloc    1 / 20     in use 0
#   grow;repal            2 / 3000   in use 2 / 3000
# allocs = 18, frees = 5 (churn) + 2 (repal's pf) = 7; in use 11 / 3560,
# allocated 18 / 3790.
spec_static_expect() {
	local key=$1
	#                                               alloc   alloc  inuse   inuse
	#                                               objects space  objects space
	expect_stack4 "$key" "top_keep;pal"             3      300    3       300
	expect_stack4 "$key" "tmp_keep;pal"             4      200    4       200
	expect_stack4 "$key" "direct_keep;ctx_alloc"    2       60    2        60
	expect_stack4 "$key" "churn;pal"                5      200    0         0
	expect_stack4 "$key" "seed_tmp;pal"             1       10    0         0
	expect_stack4 "$key" "seed_top;ctx_alloc"       1       20    0         0
	expect_stack4 "$key" "grow;repal"               2     3000    2      3000
	# innermost: pal 3+4+5+1 = 13 / 710, in use 7 / 500; ctx_alloc 3 / 80,
	# in use 2 / 60; repal 2 / 3000 in use.
	expect4 "$key" pal                              13     710    7       500
	expect4 "$key" ctx_alloc                         3      80    2        60
	expect4 "$key" repal                             2    3000    2      3000
	leafset4 "$key"
	expect_events "$key.alloc_objects" allocs=18 frees=7 unmatched_frees=0 missed_frees=0
}

# Functions by address and static functions from separate debug info
# (issue 20, 5c).  t_pgctx stripped (no .symtab: set_alloc, static, is in
# no symbol table of the program), its debug info apart: beside it through
# .gnu_debuglink, or under a --debug-dir in the build-id layout
# (DIR/.build-id/xx/yyyy.debug), the layout of /usr/lib/debug, which the
# test does not write to.  Addresses are the unstripped build's nm values
# (ELF virtual addresses).
scenario_specaddr() {
	local src=$TB/t_pgctx d=$TMP/specaddr id sa pf
	rm -rf "$d"
	mkdir -p "$d/link" "$d/bare" "$d/root"
	if ! objcopy --only-keep-debug "$src" "$d/link/t_pgctx.debug" ||
		! strip --strip-all -o "$d/link/t_pgctx" "$src" ||
		! objcopy --add-gnu-debuglink="$d/link/t_pgctx.debug" "$d/link/t_pgctx" ||
		! strip --strip-all -o "$d/bare/t_pgctx" "$src"; then
		fail "specaddr: objcopy/strip of $src" ""
		return
	fi
	id=$(readelf -n "$src" | awk '/Build ID:/ { print $3 }')
	sa=$(nm "$src" | awk '$3 == "set_alloc" { print $1 }' | sed 's/^0*//')
	pf=$(nm "$src" | awk '$3 == "pf" { print $1 }' | sed 's/^0*//')
	if [ -z "$id" ] || [ -z "$sa" ] || [ -z "$pf" ] || [ -n "$(nm "$d/bare/t_pgctx" 2>/dev/null)" ]; then
		fail "specaddr: build ID '$id', nm set_alloc '$sa', pf '$pf', stripped copy without symbols" ""
		return
	fi
	mkdir -p "$d/root/.build-id/${id:0:2}"
	cp "$d/link/t_pgctx.debug" "$d/root/.build-id/${id:0:2}/${id:2}.debug"

	# By name, from the debug file the program's .gnu_debuglink names.
	profile4x pgdl 0 --no-libc --sym 'set_alloc:size=arg2' --free-sym pf -- "$d/link/t_pgctx"
	spec_static_expect pgdl
	report "specaddr: -v says set_alloc was found in the debug info beside the program" \
		"$(grep -q "set_alloc: found in the debug info $d/link/t_pgctx.debug" "$TMP/pgdl.alloc_objects.err" ||
			grep -i 'debug\|set_alloc' "$TMP/pgdl.alloc_objects.err" | head -3)"

	# By name, from DIR/.build-id/ under --debug-dir (the program has no debuglink).
	profile4x pgbid 0 --debug-dir "$d/root" --no-libc --sym 'set_alloc:size=arg2' --free-sym pf -- "$d/bare/t_pgctx"
	spec_static_expect pgbid
	report "specaddr: -v says set_alloc was found in --debug-dir's .build-id/${id:0:2}/${id:2}.debug" \
		"$(grep -q "set_alloc: found in the debug info $d/root/.build-id/${id:0:2}/${id:2}.debug" \
			"$TMP/pgbid.alloc_objects.err" || grep -i 'debug\|set_alloc' "$TMP/pgbid.alloc_objects.err" | head -3)"

	# By address, in a program with no symbols and no debug info at all: the
	# probes go on the entries; the stacks have no names, so the totals.
	ht pgaddr -v --no-libc --sym "0x$sa@t_pgctx:size=arg2" --free-sym "0x$pf" -o "$d/addr.prof" -- "$d/bare/t_pgctx"
	check_rc pgaddr 0 "specaddr: --sym 0x$sa@t_pgctx (set_alloc) --free-sym 0x$pf (pf) exits 0"
	pprof_header "$d/addr.prof" "specaddr: by address, no symbols: in use 11 / 3560, allocated 18 / 3790" \
		11 3560 18 3790
	expect_events pgaddr allocs=18 frees=7 unmatched_frees=0 missed_frees=0
	# And with names to read: the same stacks as by name.
	profile4x pgaddrn 0 --no-libc --sym "0x$sa:size=arg2" --free-sym "0x$pf@t_pgctx" -- "$d/link/t_pgctx"
	spec_static_expect pgaddrn

	# Errors: one line, exit 2.
	ht pgnofn --no-libc --sym 'set_alloc:size=arg2' -- "$d/bare/t_pgctx"
	report "specaddr: a static function without debug info -> exit 2, one line: may be static, give it by address" \
		"$(err_diag pgnofn 2 'no function set_alloc' 'static' '0xVADDR@OBJECT' "$d/bare/t_pgctx")"
	ht pginside --no-libc --sym "0x$(printf '%x' $((0x$sa + 1)))" -- "$src"
	report "specaddr: an address inside set_alloc -> exit 2, one line: not at its entry" \
		"$(err_diag pginside 2 'inside set_alloc' 'not at its entry')"
	ht pgnoexec --no-libc --sym 0x7fff0000 -- "$src"
	report "specaddr: an address in no executable segment -> exit 2, one line" \
		"$(err_diag pgnoexec 2 '0x7fff0000' 'no executable segment' 'virtual address')"
	# The list of objects looked in: whole paths, then "and N more".  The
	# program's path is about 560 characters: it is listed, libc fits in
	# the ~600 characters, ld.so does not.  Printed, a path that long is
	# shortened around "..." (its start and its end, util/log.c).
	local long
	long=$d/$(printf 'd%.0s' {1..200})/$(printf 'e%.0s' {1..200})/$(printf 'f%.0s' {1..120})
	mkdir -p "$long"
	cp "$src" "$long/t_pgctx"
	ht pglong --sym nosuch -- "$long/t_pgctx"
	local d2
	d2=$(err_diag pglong 2 "no function nosuch in 3 objects (${long:0:60}" "ffffffffff/t_pgctx, " '...' \
		'libc.so.6 and 1 more)' 'static')
	report "specaddr: a long list of objects is cut between names: ... and 1 more" "$d2"
}

# Expressions that read the target's memory (issue 20, 5a), as PostgreSQL
# needs: palloc's context is the global CurrentMemoryContext, a block's
# context is the 8 bytes before it.  Arenas are checked through resets: a
# reset of one context releases exactly that context's blocks, which only
# the reads can tell (t_pgctx's comment derives the numbers).
#   pal        arena=*CurrentMemoryContext   (read at the entry, by symbol)
#   ctx_alloc  arena=arg1
#   repal      arena=*(arg1-8)               (the old block's context, read
#                                             at the entry, before pf frees it)
#              or *(ret-8)                   (the new block's, at the return)
#   ctx_reset  the --reset-sym
# With "reset" (tmp reset: tmp_keep's 4 and grow's 1000-byte block, 5
# objects) and "resettop" (top reset: top_keep's 3, direct_keep's 2 and
# grow's 2000-byte block, 6 objects); tmp_after: 2 x pal(70) in tmp, after.
PGM_SPECS=(--no-libc --sym 'pal:arena=*CurrentMemoryContext' --sym 'ctx_alloc:size=arg2,arena=arg1'
	--free-sym pf --reset-sym ctx_reset)
scenario_specmem() {
	profile4x pgm_tmp 0 "${PGM_SPECS[@]}" --sym 'repal:size=arg2,free=arg1,arena=*(arg1-8)' -- "$TB/t_pgctx" reset
	#                                  alloc   alloc  inuse   inuse
	#                                  objects space  objects space
	expect4 pgm_tmp top_keep            3      300    3       300
	expect4 pgm_tmp tmp_keep            4      200    0         0
	expect4 pgm_tmp direct_keep         2       60    2        60
	expect4 pgm_tmp churn               5      200    0         0
	expect4 pgm_tmp seed_tmp            1       10    0         0
	expect4 pgm_tmp seed_top            1       20    0         0
	expect4 pgm_tmp grow                2     3000    1      2000
	expect4 pgm_tmp tmp_after           2      140    2       140
	leafset4 pgm_tmp
	# allocs = 18 + 2; frees = 5 pf + 2 by repal; the reset released tmp's 5.
	expect_events pgm_tmp.alloc_objects allocs=20 frees=7 unmatched_frees=0 missed_frees=0 arena_resets=1 \
		reset_objects=5 spec_read_faults=0

	profile4x pgm_top 0 "${PGM_SPECS[@]}" --sym 'repal:size=arg2,free=arg1,arena=*(arg1-8)' -- "$TB/t_pgctx" resettop
	expect4 pgm_top top_keep            3      300    0         0
	expect4 pgm_top tmp_keep            4      200    4       200
	expect4 pgm_top direct_keep         2       60    0         0
	expect4 pgm_top churn               5      200    0         0
	expect4 pgm_top seed_tmp            1       10    0         0
	expect4 pgm_top seed_top            1       20    0         0
	expect4 pgm_top grow                2     3000    1      1000
	expect4 pgm_top tmp_after           2      140    2       140
	leafset4 pgm_top
	expect_events pgm_top.alloc_objects allocs=20 frees=7 unmatched_frees=0 missed_frees=0 arena_resets=1 \
		reset_objects=6 spec_read_faults=0

	# repal's context read from the new block at the return: the same.
	ht pgm_ret -v "${PGM_SPECS[@]}" --sym 'repal:size=arg2,free=arg1,arena=*(ret-8)' -f collapsed \
		--value inuse_space -- "$TB/t_pgctx" resettop
	check_rc pgm_ret 0 "specmem: repal arena=*(ret-8) exits 0"
	expect_leaf pgm_ret grow 1000
	expect_leaf pgm_ret tmp_keep 200
	expect_leaf pgm_ret tmp_after 140
	leafset pgm_ret grow tmp_keep tmp_after
	expect_events pgm_ret allocs=20 frees=7 reset_objects=6 spec_read_faults=0

	# Without the global read, pal's blocks have no arena: the tmp reset
	# releases only grow's block (its context read through *(arg1-8)).
	ht pgm_noglobal -v --no-libc --sym pal --sym 'ctx_alloc:size=arg2,arena=arg1' --free-sym pf \
		--reset-sym ctx_reset --sym 'repal:size=arg2,free=arg1,arena=*(arg1-8)' -f collapsed \
		--value inuse_space -- "$TB/t_pgctx" reset
	check_rc pgm_noglobal 0 "specmem: pal without arena= exits 0"
	expect_leaf pgm_noglobal tmp_keep 200
	expect_events pgm_noglobal allocs=20 frees=7 reset_objects=1

	# Errors: one line, exit 2.
	ht pgm_nosym --no-libc --sym 'pal:arena=*NoSuchGlobal' -- "$TB/t_pgctx"
	report "specmem: *NoSuchGlobal -> exit 2, one line naming it" \
		"$(err_diag pgm_nosym 2 'no variable NoSuchGlobal')"
	# The stub reads a global itself: an offset past the object's segments would fault in the target.
	ht pgm_farglobal --no-libc --sym 'pal:arena=*(CurrentMemoryContext+0x40000000)' -- "$TB/t_pgctx"
	report "specmem: *(CurrentMemoryContext+1G) -> exit 2, one line: outside the loaded segments" \
		"$(err_diag pgm_farglobal 2 'lies outside')"
	ht pgm_bare --no-libc --sym 'repal:size=arg2,arena=*arg1' -- "$TB/t_pgctx"
	report "specmem: *arg1 -> exit 2, one line: write *(arg1)" "$(err_diag pgm_bare 2 'write *(arg1)')"
	ht pgm_freeret --no-libc --free-sym 'pf:ptr=*(ret-8)' -- "$TB/t_pgctx"
	report "specmem: --free-sym with *(ret-8) -> exit 2, one line: no ret in a free" \
		"$(err_diag pgm_freeret 2 'ret cannot be used')"
	ht pgm_many --no-libc --sym 'repal:size=*(arg1-8)+*(arg1-16)+*(arg2),objects=*(arg3)+*(arg4)' -- "$TB/t_pgctx"
	report "specmem: 5 reads at the entry -> exit 2, one line: more than 4" \
		"$(err_diag pgm_many 2 'more than 4 reads')"
}
