# shellcheck shell=bash
# Area "contexts" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario ctxreset: memory contexts (--reset-sym) as PostgreSQL uses them,
# many contexts, nested ones, and resets by the thousand, most of them of
# empty contexts (each must cost a probe, not a walk of every arena);
# scenario ctxmany: more contexts than the arena maps hold, the loss counted;
# scenario ctxstray: the stacks of unmatched frees.

# t_ctx: a PostgreSQL-style context allocator (its source derives every
# number): 40 contexts keep 100 blocks each; 1000 resets of an empty
# context among those 4000 live blocks; a parent with 2 children deleted
# (ctx_delete is a reset that frees the context too); 200 rounds of
# 3 allocations, a ctx_free and a reset; a reset whose addresses are handed
# out again.  One object a block.
#   keep_many    4000 x 16 bytes, kept        alloc 4000/64000 in use 4000/64000
#   nest_parent    10 x 32, deleted           alloc   10/320   in use 0/0
#   nest_child     20 x 8 + 5 x 64, deleted   alloc   25/480   in use 0/0
#   tuple_alloc   600 x 24, 200 freed, 400 reset  alloc 600/14400 in use 0/0
#   refill_one      5 x 40, reset             alloc    5/200   in use 0/0
#   refill_two      3 x 40 at refill_one's addresses, kept     in use 3/120
# allocs = 4643, frees = 200, arena_resets = 1000 + 3 + 200 + 1 = 1204,
# reset_frees = 35 + 400 + 5 = 440; none a loss.
CTX_SPEC=(--no-libc --sym 'ctx_alloc:size=arg2,arena=arg1' --free-sym 'ctx_free:ptr=arg1'
	--reset-sym 'ctx_reset:arena=arg1')
scenario_ctxreset() {
	profile4x ctx 0 "${CTX_SPEC[@]}" --reset-sym 'ctx_delete:arena=arg1' -- "$TB/t_ctx"
	#                            alloc   alloc  inuse   inuse
	#                            objects space  objects space
	expect4 ctx keep_many        4000    64000  4000    64000
	expect4 ctx nest_parent        10      320     0        0
	expect4 ctx nest_child         25      480     0        0
	expect4 ctx tuple_alloc       600    14400     0        0
	expect4 ctx refill_one          5      200     0        0
	expect4 ctx refill_two          3      120     3      120
	absent4 ctx empty_resets nest_delete
	leafset4 ctx
	expect_events ctx.alloc_objects allocs=4643 frees=200 unmatched_frees=0 missed_frees=0 \
		arena_resets=1204 reset_frees=440 reset_objects=440 arena_map_full=0 arena_index_lost=0

	# -f top: blocks freed by resets are counted as such, not as losses, and per stack.
	ht ctxtop "${CTX_SPEC[@]}" --reset-sym 'ctx_delete:arena=arg1' -f top --value alloc_objects -- "$TB/t_ctx"
	check_rc ctxtop 0 "ctxreset: -f top exits 0"
	local line
	line=$(sed -n 's/^  resets: *//p' "$TMP/ctxtop.out")
	report "ctxreset: -f top: 'resets: 440 blocks freed by 1,204 arena resets (not losses)'" \
		"$([ "$line" = "440 blocks freed by 1,204 arena resets (not losses)" ] || echo "got '${line:-no resets line}'")"
	line=$(sed -n 's/^  losses: *//p' "$TMP/ctxtop.out")
	report "ctxreset: -f top: losses: none" "$([ "$line" = none ] || echo "got '${line:-no losses line}'")"
	# Per stack: tuple_alloc's first and third blocks (2 stacks) 200 each, and so on.
	line=$(ctx_top_marks ctxtop "freed by arena resets")
	report "ctxreset: -f top: freed by resets per stack" \
		"$([ "$line" = "nest_child=20 nest_child=5 nest_parent=10 refill_one=5 tuple_alloc=200 tuple_alloc=200" ] ||
			echo "got '$line'")"

	# Without ctx_delete traced its blocks stay live, and 2 of their
	# addresses come back (t_ctx.c says which): missed frees, which -f top
	# charges to the stacks that allocated them.
	ht ctxmiss -v "${CTX_SPEC[@]}" -f top --value alloc_objects -- "$TB/t_ctx"
	check_rc ctxmiss 0 "ctxreset: without ctx_delete, -f top exits 0"
	expect_events ctxmiss allocs=4643 frees=200 unmatched_frees=0 missed_frees=2 \
		arena_resets=1201 reset_frees=405 arena_index_lost=0
	line=$(ctx_top_marks ctxmiss "missed frees")
	report "ctxreset: -f top names the stacks of the missed frees" \
		"$([ "$line" = "nest_child=1 nest_parent=1" ] || echo "got '$line'")"
	grep -q '^             missed_frees: blocks of 2 stacks' "$TMP/ctxmiss.out"
	report "ctxreset: -f top's losses say where the missed frees are" \
		"$([ $? = 0 ] || grep -A2 '^  losses' "$TMP/ctxmiss.out")"
}

# t_ctx many 70000: 70,000 contexts of one 8-byte block each, each reset.
# The arena maps hold 65,536 arenas: the other 4,464 blocks join no arena,
# counted as arena_map_full at their allocation and again at their reset
# (2 x 4,464 = 8,928), and stay in use (4,464 x 8 = 35,712 bytes): a loss,
# counted, where the maps are full.
scenario_ctxmany() {
	ht ctxmany -v --no-libc --sym 'ctx_alloc:size=arg2,arena=arg1' --reset-sym 'ctx_reset:arena=arg1' \
		-f collapsed --value inuse_space -- "$TB/t_ctx" many 70000
	check_rc ctxmany 0 "ctxmany: 70,000 contexts exit 0"
	expect_events ctxmany allocs=70000 arena_resets=70000 reset_frees=65536 arena_map_full=8928 \
		arena_index_lost=0 missed_frees=0
	expect_leaf ctxmany many_alloc 35712
}

# t_ctx stray: 4 ctx_free calls of blocks never allocated, 3 from
# stray_free and 1 from stray_other; keep_one's block is allocated and
# freed.  -f top names the stacks of the unmatched frees, the most first.
scenario_ctxstray() {
	ht ctxstray -v "${CTX_SPEC[@]}" -f top --value alloc_objects -- "$TB/t_ctx" stray
	check_rc ctxstray 0 "ctxstray: exits 0"
	expect_events ctxstray allocs=1 frees=1 unmatched_frees=4 missed_frees=0
	local line
	line=$(ctx_top_marks ctxstray "unmatched frees")
	report "ctxstray: -f top names the stacks of the unmatched frees" \
		"$([ "$line" = "stray_free=3 stray_other=1" ] || echo "got '$line'")"
	grep -q '^             unmatched_frees: 4 of them from 2 stacks' "$TMP/ctxstray.out"
	report "ctxstray: -f top's losses count them by stack" \
		"$([ $? = 0 ] || grep -A2 '^  losses' "$TMP/ctxstray.out")"
	# They are not allocations: the one stack of the profile is keep_one's.
	grep -q '^  stacks: *1$' "$TMP/ctxstray.out"
	report "ctxstray: the unmatched frees' stacks are no allocation stacks" \
		"$([ $? = 0 ] || grep '^  stacks' "$TMP/ctxstray.out")"
}

# ctx_top_marks KEY LABEL: "FUNCTION=N" for each stack of -f top with a
# "LABEL N" line, its innermost frame's function, sorted.
ctx_top_marks() {
	awk -v label="$2" '
		index($0, "      " label " ") == 1 { n = substr($0, length(label) + 8); sub(/[^0-9].*/, "", n); want = 1; next }
		want && /^        / { print $1 "=" n; want = 0 }' "$TMP/$1.out" | sort | tr '\n' ' ' | sed 's/ $//'
}
