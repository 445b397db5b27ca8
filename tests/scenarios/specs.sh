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
