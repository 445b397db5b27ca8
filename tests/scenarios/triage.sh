# shellcheck shell=bash
# Area triage: which live blocks matter (--suppressions) and what reallocs
# cost (realloc_objects, realloc_space).  Helpers are prefixed tr_.

# tr_has KEY FILE LINE...: each LINE (a fixed string) is in $TMP/KEY.FILE.
tr_has() {
	local f=$TMP/$1.$2 l
	shift 2
	for l in "$@"; do
		grep -qF -- "$l" "$f" 2>/dev/null || echo "no '$l' in $(rel "$f")"
	done
	return 0
}

# t_suppress: keep_cache 1000, vendor_init 2000 (vendor_cache.c), real_leak
# 3000 bytes kept; stdout's buffer (its size on its stderr) by stdio.
scenario_suppress() {
	local d buf
	printf '# LSan format\n\nleak:keep_cache\n  leak:vendor_*.c  \n' >"$TMP/sup.supp"
	ht sup --suppressions "$TMP/sup.supp" --limit-leak 0 -f top -o "$TMP/sup.top" -- "$TB/t_suppress"
	buf=$(sed -n 's/^stdout buffer //p' "$TMP/sup.err")
	d=$(rc_diag sup 23)
	d+=$(tr_has sup err "leaked 3000 bytes in 1 block:" "heaptrace:   3000 bytes leaked: real_leak (tests/targets/t_suppress.c:" \
		"heaptrace: suppressed: $((3000 + buf)) bytes in 3 blocks of 3 stacks (--suppressions)")
	[ "$(grep -c '^heaptrace:   [0-9]* bytes leaked: ' "$TMP/sup.err")" = 1 ] || d+=$'\n'"stacks named: not real_leak's alone"
	report "suppress: function, file pattern and the built-in list: exit 23 naming real_leak alone, suppressed $((3000 + buf)) in 3" "$d"
	d=$(tr_has sup top "  leaked:             3,000 bytes live at the end" "blocks of 3 stacks (--suppressions: not leaks)")
	[ "$(grep -c '^#' "$TMP/sup.top")" = 1 ] || d+=$'\n'"-f top shows $(grep -c '^#' "$TMP/sup.top") leak stacks, want 1 (real_leak)"
	report "suppress: -f top: leaked 3,000, one leak stack, the suppressed line" "$d"
	ht supp --suppressions "$TMP/sup.supp" -f proto -o "$TMP/supp.pb.gz" -- "$TB/t_suppress"
	d=$(rc_diag supp 0)
	zcat "$TMP/supp.pb.gz" 2>/dev/null | grep -aqF "suppressed: $((3000 + buf)) bytes in 3 blocks of 3 stacks" ||
		d+=$'\n'"no suppressed comment in the proto profile"
	report "suppress: -f proto: a comment says what was suppressed" "$d"

	ht supnd --suppressions "$TMP/sup.supp" --no-default-suppressions --limit-leak 0 -o /dev/null -- "$TB/t_suppress"
	d=$(rc_diag supnd 23)
	d+=$(tr_has supnd err "leaked $((3000 + buf)) bytes in 2 blocks:" "heaptrace: suppressed: 3000 bytes in 2 blocks of 2 stacks")
	report "suppress: --no-default-suppressions: stdout's $buf-byte buffer is a leak again" "$d"

	ht supnone --limit-leak 0 -o /dev/null -- "$TB/t_suppress"
	d=$(rc_diag supnone 23)
	d+=$(tr_has supnone err "leaked 6000 bytes in 3 blocks:" "heaptrace: suppressed: $buf bytes in 1 block of 1 stack")
	report "suppress: the built-in list alone takes stdout's buffer (_IO_file_doallocate)" "$d"

	# A module: the executable's name (every stack runs through main), and its path.
	printf 'leak:^t_suppress$\n' >"$TMP/mod.supp"
	ht supmod --suppressions "$TMP/mod.supp" --limit-leak 0 -o /dev/null -- "$TB/t_suppress"
	d=$(rc_diag supmod 0)
	d+=$(tr_has supmod err "heaptrace: suppressed: $((6000 + buf)) bytes in 4 blocks of 4 stacks")
	report "suppress: module by file name (^t_suppress\$): everything suppressed, exit 0" "$d"
	printf 'leak:*/tests/t_suppress$\n' >"$TMP/path.supp"
	ht suppath --suppressions "$TMP/path.supp" --no-default-suppressions --limit-leak 0 -o /dev/null -- "$TB/t_suppress"
	d=$(rc_diag suppath 0)
	d+=$(tr_has suppath err "heaptrace: suppressed: $((6000 + buf)) bytes in 4 blocks of 4 stacks")
	report "suppress: module by path (*/tests/t_suppress\$): exit 0" "$d"

	# A bad file: file:line, exit 2, the target never started.
	printf 'leak:ok\n\nrace:foo\n' >"$TMP/bad.supp"
	ht supbad --suppressions "$TMP/bad.supp" -- "$TB/t_suppress"
	d=$(rc_diag supbad 2)
	d+=$(tr_has supbad err "heaptrace: $TMP/bad.supp:3: unknown suppression type 'race' (only leak:PATTERN)")
	grep -q 'stdout buffer' "$TMP/supbad.err" && d+=$'\n'"the target ran"
	report "suppress: a bad line: file:line, exit 2, the target not started" "$d"
}

# t_realloc: grow_vector's 6 reallocs moved, copying 64512 bytes; shrink's 2 stayed.
scenario_realloc() {
	local d
	ht rea -f collapsed --value realloc_objects -o "$TMP/rea.col" -- "$TB/t_realloc"
	d=$(rc_diag rea 0)
	d+=$(tr_has rea col "main;grow_vector 6" "main;shrink 2")
	[ "$(wc -l <"$TMP/rea.col")" = 2 ] || d+=$'\n'"$(wc -l <"$TMP/rea.col") stacks, want 2"
	report "realloc: --value realloc_objects: grow_vector 6, shrink 2" "$d"
	ht reb -f collapsed --value realloc_space -o "$TMP/reb.col" -- "$TB/t_realloc"
	d=$(rc_diag reb 0)
	d+=$(tr_has reb col "main;grow_vector 64512")
	[ "$(wc -l <"$TMP/reb.col")" = 1 ] || d+=$'\n'"$(wc -l <"$TMP/reb.col") stacks, want grow_vector's alone (shrink copied nothing)"
	report "realloc: --value realloc_space: grow_vector 64512 bytes copied, shrink 0" "$d"
	ht rec -f top --value realloc_space -o "$TMP/rec.top" -- "$TB/t_realloc"
	d=$(rc_diag rec 0)
	d+=$(tr_has rec top "  reallocs:               8 reallocs of a block, 64,512 bytes copied by those that moved it" \
		"#1   64,512 bytes (100.0%)" "     reallocs 6, 64,512 bytes copied")
	report "realloc: -f top: 8 reallocs, 64,512 bytes copied" "$d"
	ht red -f proto -o "$TMP/red.pb.gz" -- "$TB/t_realloc"
	d=$(rc_diag red 0)
	zcat "$TMP/red.pb.gz" 2>/dev/null | grep -aq realloc_space || d+="no realloc_space sample type in the proto profile"
	report "realloc: -f proto has the realloc_objects/realloc_space sample types" "$d"
	ht ree -f html -o "$TMP/ree.html" -- "$TB/t_realloc"
	d=$(rc_diag ree 0)
	d+=$(tr_has ree html '"realloc":{"objects":8,"bytes":64512}' "id: 'realloc_space'")
	report "realloc: -f html: the totals (8, 64512) and the realloc views" "$d"
}
