# shellcheck shell=bash
# Area "prefork" of tests/run.sh (sourced by it; helpers in tests/lib.sh and
# tests/scenarios/fork.sh): pre-fork servers (t_prefork).
# scenario forkhint: the hint about children forked and not traced.
# scenario merge: --follow-fork --merge, one profile of the process tree.

# ---------------------------------------------------------------------------
# Without --follow-fork, children the target forks run untraced: heaptrace
# says how many, once, at the end (t_prefork forks K workers; with "exec"
# the last one executes a program, still one child).  Threads are no
# children (t_threads starts 4), and grandchildren are not the target's
# (t_fork: one child, which forks the grandchild).  With --follow-fork no
# hint: they are traced.
scenario_forkhint() {
	local key k want d n
	for k in 4 1 3:exec; do
		key=forkhint_$k
		key=${key//:/_}
		ht $key -f collapsed -- "$TB/t_prefork" "${k%%:*}" "$([ "${k#*:}" = exec ] && echo exec || echo plain)"
		check_rc $key 0 "$key: exits 0"
		case ${k%%:*} in 1) want="1 child" ;; *) want="${k%%:*} children" ;; esac
		want="heaptrace: $want forked and not traced: --follow-fork traces them"
		n=$(grep -cxF "$want" "$TMP/$key.err")
		report "$key: '$want' once on stderr" "$([ "$n" = 1 ] || echo "$n times"$'\n'"$(ctx $key)")"
		# The profile is the parent's alone, as before.
		expect_leaf $key parent_before 2000
		expect_leaf $key parent_after 4000
	done
	key=forkhint_v
	ht $key -v -f collapsed -o "$TMP/$key.prof" -- "$TB/t_prefork" 2
	expect_events $key allocs=3 untraced_children=2
	n=$(grep -c "forked and not traced" "$TMP/$key.err")
	report "$key: -v says the hint once" "$([ "$n" = 1 ] || echo "$n times")"
	for key in forkhint_threads forkhint_fork forkhint_follow; do
		case $key in
		forkhint_threads) ht $key -f collapsed -o "$TMP/$key.prof" -- "$TB/t_threads"; want="" ;;
		forkhint_fork) ht $key -f collapsed -o "$TMP/$key.prof" -- "$TB/t_fork"
			want="heaptrace: 1 child forked and not traced: --follow-fork traces them" ;;
		forkhint_follow) (cd "$TMP" && ht $key --follow-fork -f collapsed -o "$TMP/$key.prof" -- "$TB/t_prefork" 2)
			RC=$(cat "$TMP/$key.rc"); want="" ;;
		esac
		check_rc $key 0 "$key: exits 0"
		d=$(grep "forked and not traced" "$TMP/$key.err")
		report "$key: hint '${want:-none}'" "$([ "$d" = "$want" ] || echo "got '$d'")"
	done
}
