# shellcheck shell=bash
# Area ci: --limit-peak and --limit-leak, heaptrace as a CI gate.  Over a
# limit heaptrace exits 23 and names the stacks; at or under it, the
# command's own status.  Helpers are prefixed ci_.

# ci_over_diag KEY LINE...: the run exited 23 and stderr holds each LINE
# (a fixed string) at the start of a line.
ci_over_diag() {
	local key=$1 l
	shift
	rc_diag "$key" 23
	for l in "$@"; do
		grep -qF -- "$l" "$TMP/$key.err" || echo "no line '$l' on stderr"
	done
	return 0
}

# ci_under_diag KEY WANT_RC: the run exited WANT_RC and no limit was said to be exceeded.
ci_under_diag() {
	rc_diag "$1" "$2"
	grep -q 'exceeded' "$TMP/$1.err" && grep 'exceeded' "$TMP/$1.err" | head -3
	return 0
}

# t_peak: big_fn 64 MiB allocated and freed (peak 67108864), small_fn 1 MiB
# kept (leaked 1048576); "clean" frees small_fn's block (leaked 0).
scenario_limitpeak() {
	local line d
	line=$(grep -n 'big = malloc' "$ROOT/tests/targets/t_peak.c" | cut -d: -f1)
	ht lp_at --limit-peak 64M -o /dev/null -- "$TB/t_peak"
	report "limitpeak: --limit-peak 64M, peak exactly 64 MiB: exit 0, nothing said" "$(ci_under_diag lp_at 0)"
	ht lp_over --limit-peak 67108863 -o /dev/null -- "$TB/t_peak"
	d=$(ci_over_diag lp_over "heaptrace: --limit-peak 67108863 exceeded: PID " \
		"/t_peak) peaked at 67108864 bytes in use, " \
		"heaptrace:   67108864 bytes in use: big_fn (tests/targets/t_peak.c:$line) < main (")
	[ "$(grep -c '^heaptrace:   [0-9]* bytes in use: ' "$TMP/lp_over.err")" = 1 ] ||
		d+="stacks named: $(grep -c '^heaptrace:   ' "$TMP/lp_over.err"), want big_fn's alone"$'\n'
	report "limitpeak: --limit-peak 67108863: exit 23, peak 67108864 and big_fn's stack (t_peak.c:$line) on stderr" "$d"
	ht lp_k --limit-peak 65536K -f top -o "$TMP/lp_k.top" -- "$TB/t_peak" nudge
	report "limitpeak: --limit-peak 65536K with a peak of 67117056 (nudge): exit 23" \
		"$(ci_over_diag lp_k "peaked at 67117056 bytes in use")"
	d=""
	grep -q 'peak: *67,117,056' "$TMP/lp_k.top" 2>/dev/null || d="no -f top profile with the peak in \$TMP/lp_k.top"
	report "limitpeak: the profile is still written when a limit is exceeded" "$d"
}

scenario_limitleak() {
	local line d
	line=$(grep -n 'small = malloc' "$ROOT/tests/targets/t_peak.c" | cut -d: -f1)
	ht ll_at --limit-leak 1M -o /dev/null -- "$TB/t_peak"
	report "limitleak: --limit-leak 1M, 1 MiB leaked: exit 0" "$(ci_under_diag ll_at 0)"
	ht ll_over --limit-leak 1048575 -o /dev/null -- "$TB/t_peak"
	report "limitleak: --limit-leak 1048575: exit 23, 1048576 bytes in 1 block, small_fn (t_peak.c:$line)" \
		"$(ci_over_diag ll_over "exceeded: PID " "/t_peak) leaked 1048576 bytes in 1 block:" \
			"heaptrace:   1048576 bytes leaked: small_fn (tests/targets/t_peak.c:$line) < main (")"
	ht ll_zero --limit-leak 0 -o /dev/null -- "$TB/t_peak"
	report "limitleak: --limit-leak 0 with a leak: exit 23" "$(ci_over_diag ll_zero "heaptrace: --limit-leak 0 exceeded")"
	ht ll_clean --limit-leak 0 -o /dev/null -- "$TB/t_peak" clean
	report "limitleak: --limit-leak 0 with nothing leaked (t_peak clean): exit 0" "$(ci_under_diag ll_clean 0)"
	ht ll_both --limit-leak 0 --limit-peak 1 -o /dev/null -- "$TB/t_peak"
	d=$(ci_over_diag ll_both "--limit-peak 1 exceeded" "--limit-leak 0 exceeded")
	report "limitleak: both limits exceeded: exit 23, both said" "$d"

	# The command's own status: passed through under the limits, said over them.
	ht ll_st_under --limit-leak 12500 -o /dev/null -- "$TB/t_exit" _exit
	report "limitleak: t_exit _exit (12500 leaked, status 5) under --limit-leak 12500: exit 5" "$(ci_under_diag ll_st_under 5)"
	ht ll_st_over --limit-leak 12499 -o /dev/null -- "$TB/t_exit" _exit
	report "limitleak: t_exit _exit over --limit-leak 12499: exit 23, the command's status 5 said" \
		"$(ci_over_diag ll_st_over "leaked 12500 bytes in 5 blocks:" "heaptrace: (the command's own exit status was 5)")"

	# Bad sizes: one line, exit 2, nothing traced.
	for v in 12Q -1 '' 1.5M 99999999999G; do
		ht ll_bad --limit-leak "$v" -- "$TB/t_peak"
		report "limitleak: --limit-leak '$v': one line, exit 2" "$(err_diag ll_bad 2 "--limit-leak" "not '$v'")"
	done
	ht lp_bad --limit-peak 10X -- "$TB/t_peak"
	report "limitpeak: --limit-peak 10X: one line, exit 2" "$(err_diag lp_bad 2 "--limit-peak" "10X")"
}

# t_fork with --follow-fork, per process: the parent leaks 8000 bytes
# (fork_before 1000, fork_shared 3000, fork_after 4000), the child 6000
# (child_keep; peak 6500 with child_temp's 500), the grandchild 1400.
scenario_limitfork() {
	local d p c g
	ht lf_under --follow-fork --limit-leak 8000 -o "$TMP/lf_under.heap" -- "$TB/t_fork"
	report "limitfork: --limit-leak 8000: every process under it, exit 0" "$(ci_under_diag lf_under 0)"

	ht lf_two --follow-fork --limit-leak 5999 -o "$TMP/lf_two.heap" -- "$TB/t_fork"
	c=$(sed -nE 's/^heaptrace: child PID ([0-9]+) \(of PID ([0-9]+)\).*/\1 \2/p' "$TMP/lf_two.err")
	p=$(echo "$c" | awk 'NR == 1 { print $2 }')
	g=$(echo "$c" | awk 'NR == 2 { print $1 }')
	c=$(echo "$c" | awk 'NR == 1 { print $1 }')
	d=$(ci_over_diag lf_two "--limit-leak 5999 exceeded: PID $p (" "--limit-leak 5999 exceeded: PID $c (")
	[ -n "$p" ] && [ -n "$g" ] || d+="no child lines: $(grep 'child PID' "$TMP/lf_two.err")"$'\n'
	grep -q "exceeded: PID $g " "$TMP/lf_two.err" && d+="the grandchild ($g, 1400 bytes) is said to exceed 5999"$'\n'
	grep -q "PID $p (.*) leaked 8000 bytes in 3 blocks:" "$TMP/lf_two.err" || d+="no 'PID $p leaked 8000 bytes in 3 blocks'"$'\n'
	grep -q "PID $c (.*) leaked 6000 bytes in 3 blocks:" "$TMP/lf_two.err" || d+="no 'PID $c leaked 6000 bytes in 3 blocks'"$'\n'
	grep -q "6000 bytes leaked: child_keep (" "$TMP/lf_two.err" || d+="child_keep not named"$'\n'
	report "limitfork: --limit-leak 5999: parent (8000) and child (6000) over, grandchild (1400) not; exit 23" "$d"

	ht lf_peak --follow-fork --limit-peak 6499 -o "$TMP/lf_peak.heap" -- "$TB/t_fork"
	d=$(ci_over_diag lf_peak "peaked at 8000 bytes in use" "peaked at 6500 bytes in use")
	[ "$(grep -c 'exceeded' "$TMP/lf_peak.err")" = 2 ] || d+="$(grep -c 'exceeded' "$TMP/lf_peak.err") processes over, want 2"$'\n'
	report "limitfork: --limit-peak 6499: parent (8000) and child (6500) over, grandchild (1400) not; exit 23" "$d"

	ht lf_all --follow-fork --limit-leak 1399 -o "$TMP/lf_all.heap" -- "$TB/t_fork"
	d=$(ci_over_diag lf_all "leaked 1400 bytes in 2 blocks:" "1400 bytes leaked: grandchild_keep (")
	[ "$(grep -c 'exceeded' "$TMP/lf_all.err")" = 3 ] || d+="$(grep -c 'exceeded' "$TMP/lf_all.err") processes over, want 3"$'\n'
	report "limitfork: --limit-leak 1399: all three processes over; exit 23" "$d"
}
