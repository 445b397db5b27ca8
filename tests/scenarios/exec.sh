# shellcheck shell=bash
# Area "exec" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# following execve (user/session/exec.c): scenarios script (a launched
# command started as the shell would: PATH, "#!" interpreters, wrappers),
# spawn (--follow-fork children that execute another program) and progname
# (a process named as its user knows it), runas (-u USER), pexec (-p on a
# process that executes another program) and wrapspec (--sym and --preset
# resolved in the program a wrapper script executes).

# ---------------------------------------------------------------------------
# A launched command that is no ELF file runs as the shell would run it, and
# the profile is the program that finally runs: the scripts below exec
# t_entrypoints, whose numbers (expect_entrypoints4) must be exact, with no
# other innermost frame: the interpreter's stacks are left out
# (leafset4).  Events lines are not checked: they count the interpreter's
# allocations too.
#   ep.sh        #!/bin/sh, exec t_entrypoints
#   ep-env       #!/usr/bin/env sh (an interpreter run by an interpreter),
#                found on PATH, exec t_entrypoints; with --no-inject
#   ep-nohash    no "#!" line: execvp and the shell run it with /bin/sh
#   env FOO=1 t_entrypoints: a wrapper that is an ELF program itself
#   ep-static.sh exec t_entrypoints built -static (here, as custom_static
#                builds t_static), whose malloc is in the executable: probes
#                for another allocator object at the exec
#   bad-interp   #!/nonexistent: 126 and one line, as bash says it
scenario_script() {
	local d key
	mkdir -p "$TMP/bin"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$TB/t_entrypoints" >"$TMP/ep.sh"
	printf '#!/usr/bin/env sh\nexec "%s" "$@"\n' "$TB/t_entrypoints" >"$TMP/bin/ep-env"
	printf 'exec "%s" "$@"\n' "$TB/t_entrypoints" >"$TMP/ep-nohash"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$TMP/t_entrypoints.static" >"$TMP/ep-static.sh"
	printf '#!/nonexistent/interp\nexit 0\n' >"$TMP/bad-interp"
	chmod +x "$TMP/ep.sh" "$TMP/bin/ep-env" "$TMP/ep-nohash" "$TMP/ep-static.sh" "$TMP/bad-interp"

	profile4 sc.sh 0 "$TMP/ep.sh"
	expect_entrypoints4 sc.sh
	leafset4 sc.sh
	# -v (the alloc_objects run) says which image is traced, first and after the exec.
	key=sc.sh.alloc_objects
	d=""
	grep -qE "^heaptrace: tracing PID [0-9]+ \\($TMP/ep.sh, run by /[^ ]*sh\\), attached" "$TMP/$key.err" ||
		d+="no 'tracing PID N (\$TMP/ep.sh, run by /.../sh)': $(grep -m1 'tracing PID' "$TMP/$key.err")"$'\n'
	grep -qxE "heaptrace: tracing PID [0-9]+: now $TB/t_entrypoints" "$TMP/$key.err" ||
		d+="no 'tracing PID N: now $(rel "$TB")/t_entrypoints'"$'\n'
	grep -q 'executed a new program' "$TMP/$key.err" && d+="the script's own exec was reported as news"$'\n'
	report "script: -v says 'tracing PID N (ep.sh, run by .../sh)', then 'now .../t_entrypoints'; no exec warning" "$d"

	PATH="$TMP/bin:$PATH" profile4x sc.env 0 --no-inject -- ep-env
	expect_entrypoints4 sc.env
	leafset4 sc.env

	profile4 sc.nohash 0 "$TMP/ep-nohash"
	expect_entrypoints4 sc.nohash
	leafset4 sc.nohash

	profile4 sc.wrap 0 env FOO=1 "$TB/t_entrypoints"
	expect_entrypoints4 sc.wrap
	leafset4 sc.wrap

	# Static glibc allocates for itself before main (not checked): whole stacks from main.
	gcc -static -O0 -g -fno-omit-frame-pointer -fno-inline -o "$TMP/t_entrypoints.static" \
		"$ROOT/tests/targets/t_entrypoints.c" 2>"$TMP/t_entrypoints.static.cc" ||
		fail "script: gcc -static tests/targets/t_entrypoints.c" "$(cat "$TMP/t_entrypoints.static.cc")"
	profile4 sc.static 0 "$TMP/ep-static.sh"
	expect_entrypoints4 sc.static main
	d=$(grep -m1 '^heaptrace: events:' "$TMP/sc.static.alloc_objects.err")
	if [ -z "$d" ]; then
		d="no events line"$'\n'$(ctx sc.static.alloc_objects)
	else
		d=$(grep -oE ' (unmatched_frees|missed_frees|returns_without_entry)=[1-9][0-9]*' <<<"$d")
	fi
	report "script: static/t_entrypoints via a script: no unmatched frees, missed frees or returns without entry (no probe twice)" "$d"

	# The command's status is heaptrace's: the script's own.
	printf '#!/bin/sh\nexit 7\n' >"$TMP/exit7.sh"
	chmod +x "$TMP/exit7.sh"
	ht sc.exit7 -o /dev/null -- "$TMP/exit7.sh"
	check_rc sc.exit7 7 "script: a script's exit status 7 is heaptrace's"

	ht sc.bad -o /dev/null -- "$TMP/bad-interp"
	report "script: #!/nonexistent/interp: exit 126, one line: bad interpreter" \
		"$(err_diag sc.bad 126 'bad-interp' '/nonexistent/interp: bad interpreter')"
}

# ---------------------------------------------------------------------------
# --follow-fork children that execute another program, the way a compiler
# driver runs cc1 (t_spawn vfork|fork PROG, see its source): the child gets
# the new program's CFI tables, so the -O2 -fomit-frame-pointer programs of
# build/tests/nofp/ have whole stacks in its profile, as when launched
# (scenario unwind's numbers); the parent keeps its own (spawn_keep).
spawn_child_file() {
	fork_files "$1" | sed -n 1p | cut -d' ' -f2-
}

# spawn_run KEY MODE PROG: heaptrace -v --follow-fork, collapsed alloc_space,
# over t_spawn MODE PROG; the parent's profile in KEY.prof, the child's
# copied to KEY.child.out (for the helpers that read KEY.out).
spawn_run() {
	local key=$1 f
	ht "$key" -v --follow-fork -f collapsed --value alloc_space -o "$TMP/$key.prof" -- "$TB/t_spawn" "$2" "$3"
	f=$(spawn_child_file "$key")
	if [ -n "$f" ] && [ -f "$f" ]; then cp "$f" "$TMP/$key.child.out"; else : >"$TMP/$key.child.out"; fi
	cp "$TMP/$key.prof" "$TMP/$key.parent.out" 2>/dev/null || : >"$TMP/$key.parent.out"
}

scenario_spawn() {
	local key d deep
	deep="$(printf 'recurse;%.0s' {1..63})deep_leaf 4242"
	for mode in vfork fork; do
		key=sp.$mode
		spawn_run $key $mode "$TB/nofp/t_deep"
		check_rc $key 0 "spawn: t_spawn $mode nofp/t_deep under --follow-fork exits 0"
		d=$([ "$(fork_files $key | wc -l)" = 1 ] || echo "$(fork_files $key | wc -l) child profiles, want 1")
		grep -qxE "heaptrace: following child PID [0-9]+: now $TB/nofp/t_deep" "$TMP/$key.err" ||
			d+=$'\n'"no 'following child PID N: now $(rel "$TB")/nofp/t_deep'"
		report "$key: one child profile; -v says the child now runs nofp/t_deep" "$d"
		# The exec'd program gets a stub of its own (procstub_arm), not uprobes.
		if [ -z "${HT_TEST_NO_INJECT:-}" ]; then
			d=$(grep -cE '^heaptrace: PID [0-9]+: the fast path: a stub of its own at 0x[0-9a-f]+, 9 functions redirected$' \
				"$TMP/$key.err")
			report "$key: the exec'd nofp/t_deep gets a stub of its own" \
				"$([ "$d" = 1 ] || echo "$d lines 'PID N: the fast path: a stub of its own', want 1")"
		fi
		# t_deep's numbers (scenario unwind): the deep line is 64 frames, the
		# innermost of 301; shallow_leaf's stack reaches main.
		uw_expect_line $key.child "$deep"
		uw_expect_stack $key.child "main;shallow_leaf" 1717
		leafset $key.child deep_leaf shallow_leaf
		d=$(grep '^\[truncated\]' "$TMP/$key.child.out" | cut -c1-160)
		report "$key: no stack of the child is [truncated]" "$d"
		expect_events $key stacks_truncated=0
		uw_expect_stack $key.parent "main;spawn_keep" 1111
		leafset $key.parent spawn_keep
	done

	# A whole program: t_entrypoints' exact numbers, innermost frames and whole stacks from main.
	key=sp.ep
	spawn_run $key vfork "$TB/nofp/t_entrypoints"
	check_rc $key 0 "spawn: t_spawn vfork nofp/t_entrypoints under --follow-fork exits 0"
	d=""
	for f in "ep_malloc 4000" "ep_calloc 600" "ep_realloc_grow 5000" "ep_realloc_big 400000" "ep_posix_memalign 2468" \
		"ep_aligned_alloc 4096" "ep_valloc 6000" "ep_pvalloc 8192"; do
		[ "$(stackval $key.child "main;${f% *}")" = "${f#* }" ] ||
			d+="stacks ending main;${f% *}: $(stackval $key.child "main;${f% *}"), want ${f#* }"$'\n'
	done
	[ -n "$d" ] && d+=$(head -5 "$TMP/$key.child.out")
	report "$key: the child's whole stacks from main (alloc_space): ep_malloc 4000 ... ep_pvalloc 8192" "$d"

	# --sym resolved in the program a child executes (issue 24, item 4):
	# t_spawn has no pool_alloc, t_pool has; custom_pool's numbers
	# (alloc_space) in the child's profile, nothing in the parent's
	# (--no-libc), and no error at the end.
	key=sp.sym
	ht "$key" -v --follow-fork --no-libc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' \
		-f collapsed --value alloc_space -o "$TMP/$key.prof" -- "$TB/t_spawn" vfork "$TB/t_pool"
	check_rc $key 0 "spawn: --follow-fork --sym pool_alloc over t_spawn vfork t_pool exits 0"
	local f
	f=$(spawn_child_file "$key")
	if [ -n "$f" ] && [ -f "$f" ]; then cp "$f" "$TMP/$key.child.out"; else : >"$TMP/$key.child.out"; fi
	expect_leaf $key.child pool_keep 500
	expect_leaf $key.child pool_churn 400
	expect_leaf $key.child pool_some 256
	expect_leaf $key.child slab_alloc 472
	leafset $key.child pool_keep pool_churn pool_some slab_alloc
}

# ---------------------------------------------------------------------------
# A program run by a symbolic link to it ($TMP/my-prog -> t_entrypoints; for
# -p, $TMP/my-server -> t_wait): heaptrace names it by the link, as the
# user typed it (the top report's "program:" line, -v), and keeps the real
# file in the memory map it writes (pprof's MAPPED_LIBRARIES).
scenario_progname() {
	local key d tp hp
	ln -sf "$TB/t_entrypoints" "$TMP/my-prog"
	ln -sf "$TB/t_wait" "$TMP/my-server"

	key=pn.top
	ht $key -v -f top -- "$TMP/my-prog"
	check_rc $key 0 "progname: heaptrace -f top \$TMP/my-prog exits 0"
	d=""
	[ "$(sed -n 2p "$TMP/$key.out")" = "  program:   $TMP/my-prog" ] ||
		d+="line 2 of the report: '$(sed -n 2p "$TMP/$key.out")', want '  program:   \$TMP/my-prog'"$'\n'
	grep -qE "^heaptrace: tracing PID [0-9]+ \\($TMP/my-prog -> $TB/t_entrypoints\\)," "$TMP/$key.err" ||
		d+="no 'tracing PID N (\$TMP/my-prog -> $(rel "$TB")/t_entrypoints)': $(grep -m1 'tracing PID' "$TMP/$key.err")"$'\n'
	report "progname: the top report says 'program: \$TMP/my-prog'; -v names the link and the file" "$d"

	key=pn.pprof
	ht $key -o "$TMP/$key.heap" -- "$TMP/my-prog"
	d=$(rc_diag $key 0)
	grep -qE " $TB/t_entrypoints\$" "$TMP/$key.heap" || d+="MAPPED_LIBRARIES does not name $(rel "$TB")/t_entrypoints"$'\n'
	grep -q "my-prog" "$TMP/$key.heap" && d+="MAPPED_LIBRARIES names the link"$'\n'
	report "progname: the pprof profile's memory map names the real file, not the link" "$d"

	# -p: t_wait started by the link; its comm and argv[0] are the link's.
	key=pn.p
	mkfifo "$TMP/$key.fifo"
	"$TMP/my-server" "$TMP/$key.fifo" >"$TMP/$key.tout" 2>&1 &
	tp=$!
	# shellcheck disable=SC2034 # read by target_finishes (tests/lib.sh)
	TPID=$tp
	if ! wait_for "$TMP/$key.tout" '^ready$' 10 "$tp"; then
		fail "progname: \$TMP/my-server (t_wait) starts" "$(cat "$TMP/$key.tout")"
		kill_tree "$tp"
		return
	fi
	echo "heaptrace -v -f top -o \$TMP/$key.out -p PID" >"$TMP/$key.cmd"
	timeout -k 5 "$(tmo)" "$HT" -v -f top -o "$TMP/$key.out" -p "$tp" 2>"$TMP/$key.err" </dev/null &
	hp=$!
	d=""
	if wait_for "$TMP/$key.err" "^heaptrace: tracing PID $tp " 30 "$hp"; then
		release $key
		wait_for "$TMP/$key.tout" '^done$' 10 "$tp" || d+="the target did not run its traced phase"$'\n'
		kill -INT "$hp"
		wait_exit "$hp" 15 || { kill_tree "$hp"; d+="heaptrace still running 15 s after SIGINT"$'\n'; }
	else
		d+="heaptrace did not attach"$'\n'
		kill_tree "$hp"
	fi
	target_finishes $key
	d+=$FIN
	grep -qE "^heaptrace: tracing PID $tp \\($TMP/my-server -> $TB/t_wait\\)," "$TMP/$key.err" ||
		d+="no 'tracing PID $tp (\$TMP/my-server -> $(rel "$TB")/t_wait)': $(grep -m1 'tracing PID' "$TMP/$key.err")"$'\n'
	[ "$(sed -n 2p "$TMP/$key.out")" = "  program:   $TMP/my-server" ] ||
		d+="line 2 of the report: '$(sed -n 2p "$TMP/$key.out")', want '  program:   \$TMP/my-server'"$'\n'
	report "progname: -p on a process started by a link: -v and the top report name the link (\$TMP/my-server)" "$d"
}

# ---------------------------------------------------------------------------
# -u USER: the launched command runs with USER's uid, gid and groups (as
# initgroups gives them), heaptrace keeps root's and traces it exactly.
# The user and its two groups are made here (useradd) and removed at the
# end.  The command is a shell that prints its process's Uid, Gid and
# Groups lines of /proc/PID/status and its descriptors with builtins only
# (no fork), then execs t_entrypoints (a copy in a directory the user can
# reach): the same process, so the same ids, and the profile is
# t_entrypoints', whose numbers must be exact.  Both paths: the fast path
# (its stub is mapped from a memfd the target itself creates, as the user)
# and uprobes.  -u with -p, and an unknown user, are one-line errors.
scenario_runas() {
	local u=ht19u$$ d="" dir key opt opts v stub=1 want got
	[[ $HT == */heaptrace-no-inject ]] && stub=0
	dir=$(mktemp -d /tmp/heaptrace-runas.XXXXXX) && chmod 755 "$dir" && cp "$TB/t_entrypoints" "$dir/" ||
		d+="cannot copy t_entrypoints to a directory the user can reach"$'\n'
	if ! groupadd "${u}p" || ! groupadd "${u}s" || ! useradd -M -g "${u}p" -G "${u}s" -s /usr/sbin/nologin "$u"; then
		d+="cannot create the user $u (useradd, groupadd)"$'\n'
	fi
	report "runas: a user $u with groups ${u}p (primary) and ${u}s" "$d"
	if [ -z "$d" ]; then
		# shellcheck disable=SC2016
		local sh='while read -r l; do case $l in Uid:*|Gid:*|Groups:*) echo "$l";; esac; done </proc/$$/status
for f in /proc/$$/fd/*; do printf "%s " "${f##*/}"; done; echo; exec "$1"'
		for opt in "" --no-inject; do
			key=runas${opt:+.noinject}
			opts=(-u "$u")
			[ -n "$opt" ] && opts+=("$opt")
			profile4x "$key" 0 "${opts[@]}" -- /bin/sh -c "$sh" sh "$dir/t_entrypoints"
			expect_entrypoints4 "$key"
			expect_entrypoints4 "$key" main
			leafset4 "$key"
			# The shell frees nothing it did not allocate: no vforked child here.
			expect_events "$key.alloc_objects" unmatched_frees=0
			# The command's stdout (the profile takes heaptrace's) is in .err.
			want="Uid: $(id -u "$u") $(id -u "$u") $(id -u "$u") $(id -u "$u")"
			want+=$'\n'"Gid: $(id -g "$u") $(id -g "$u") $(id -g "$u") $(id -g "$u")"
			want+=$'\n'"Groups: $(id -G "$u" | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')"
			for v in $VALUES; do
				got=$(grep -E '^(Uid|Gid):' "$TMP/$key.$v.err" | tr -s '\t ' ' ')
				got+=$'\n'"Groups: $(sed -n 's/^Groups:[[:space:]]*//p' "$TMP/$key.$v.err" | tr -s ' \t' '\n' |
					sed '/^$/d' | sort -n | tr '\n' ' ' | sed 's/ $//')"
				report "$key.$v: the command runs as $u: its uid, gid and groups" \
					"$([ "$got" = "$want" ] || printf 'got:\n%s\nwant:\n%s\n' "$got" "$want")"
			done
			# 0-2, and 3: the directory the listing reads; none of heaptrace's.
			got=$(grep -m1 -E '^[0-9]+( [0-9]+)* ?$' "$TMP/$key.alloc_objects.err" | sed 's/ $//')
			report "$key: the command holds descriptors 0 1 2 (and 3, its listing's) only" \
				"$([ "$got" = "0 1 2 3" ] || echo "descriptors: '$got'")"
			# The program it executed got the fast path (a stub installed after its exec).
			if [ -z "$opt" ] && [ "$stub" = 1 ]; then
				report "$key: t_entrypoints, run as $u, gets the fast path" \
					"$(sed -n '/tracing PID [0-9]*: now/,$p' "$TMP/$key.alloc_objects.err" |
						grep -q 'fast path: a stub at' || echo "no 'fast path: a stub' line after the exec"$'\n'"$(ctx "$key.alloc_objects")")"
			fi
		done
	fi
	ht runas.nouser -u "$u-none" -- /bin/true
	report "runas: -u with an unknown user: exit 1, one line" "$(err_diag runas.nouser 1 "$u-none" "no such user")"
	ht runas.pid -u "$u" -p $$
	report "runas: -u with -p: exit 2, one line" "$(err_diag runas.pid 2 "-u" "-p")"
	userdel "$u" 2>/dev/null
	groupdel "${u}s" 2>/dev/null
	groupdel "${u}p" 2>/dev/null
	[ -n "${dir:-}" ] && rm -rf "$dir"
	report "runas: the user $u and its groups are removed" \
		"$(getent passwd "$u"; getent group "${u}p" "${u}s")"
}

# ---------------------------------------------------------------------------
# Exec is followed everywhere (issue 24, item 4).
#
# pexec4 KEY [HEAPTRACE-OPTION...] -- CMD...: for each --value, a bash that
# waits on a FIFO and then execs CMD, attached with heaptrace -p (-v for
# alloc_objects) and let go once heaptrace says it is tracing: the profile
# must be CMD's, which heaptrace only sees after the exec.  Outputs
# KEY.VALUE.out and .err, as profile4x's.
pexec4() {
	local key=$1 v d="" opts=() bp hp verbose
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	for v in $VALUES; do
		rm -f "$TMP/$key.fifo"
		mkfifo "$TMP/$key.fifo"
		bash -c 'read -r _ <"$0"; exec "$@"' "$TMP/$key.fifo" "$@" &
		bp=$!
		verbose=()
		[ "$v" = alloc_objects ] && verbose=(-v)
		echo "heaptrace ${verbose[*]} ${opts[*]} -f collapsed --value $v -p PID" >"$TMP/$key.$v.cmd"
		timeout -k 5 "$(tmo)" "$HT" "${verbose[@]}" "${opts[@]}" -f collapsed --value "$v" -p "$bp" \
			>"$TMP/$key.$v.out" 2>"$TMP/$key.$v.err" </dev/null &
		hp=$!
		if ! wait_for "$TMP/$key.$v.err" "^heaptrace: tracing PID $bp([^0-9]|\$)" 30 "$hp"; then
			d+="$v: no 'tracing PID $bp' line: $(head -3 "$TMP/$key.$v.err")"$'\n'
			kill_tree "$hp" "$bp"
			continue
		fi
		echo go >"$TMP/$key.fifo"
		wait "$hp"
		local rc=$?
		wait "$bp" 2>/dev/null
		[ "$rc" = 0 ] || d+="$v: heaptrace exited $rc: $(tail -2 "$TMP/$key.$v.err")"$'\n'
		d+=$(collapsed_diag "$key.$v" | sed "s/^/$v: /")
		[ -s "$TMP/$key.$v.out" ] || d+="$v: empty profile"$'\n'
	done
	report "$key: 4 runs of heaptrace -p on a bash that execs $(rel "$1"): exit 0, well-formed profiles" "$d"
}

# -p on a process that executes a known program: the profile is the new
# program's, exact (t_entrypoints, expect_entrypoints4), named after it,
# with its own allocator and stub (the fast path is installed again in the
# new image); bash's own stacks are left out (leafset4).  And with
# --no-inject (uprobes only).
scenario_pexec() {
	local key d
	pexec4 px -- "$TB/t_entrypoints"
	expect_entrypoints4 px
	leafset4 px
	key=px.alloc_objects
	d=""
	grep -qE "^heaptrace: tracing PID [0-9]+: now $TB/t_entrypoints" "$TMP/$key.err" ||
		d+="no 'tracing PID N: now .../t_entrypoints': $(grep -m1 'now ' "$TMP/$key.err")"$'\n'
	grep -qE "executed 1 programs; the profile is the last one's" "$TMP/$key.err" ||
		d+="no 'executed 1 programs; the profile is the last one's'"$'\n'
	[ "$(grep -c 'fast path: a stub at' "$TMP/$key.err")" = 2 ] ||
		d+="want 2 stubs (bash's, then t_entrypoints'), got: $(grep -c 'fast path: a stub at' "$TMP/$key.err")"$'\n'
	report "pexec: -v says 'now .../t_entrypoints', the exec, and a stub in each image" "$d"

	pexec4 pxn --no-inject -- "$TB/t_entrypoints"
	expect_entrypoints4 pxn
	leafset4 pxn

	# --sym given to -p, resolved in the program the process executes:
	# bash has no pool_alloc; t_pool does (custom_pool's numbers).
	pexec4 pxsym --no-libc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' -- "$TB/t_pool"
	expect4 pxsym pool_keep          5      500    5       500
	expect4 pxsym pool_churn        10      400    0         0
	expect4 pxsym pool_some          4      256    1        64
	expect4 pxsym slab_alloc         5      472    3        72
	leafset4 pxsym
	expect_events pxsym.alloc_objects allocs=24 frees=15 unmatched_frees=0 missed_frees=0
}

# --sym, --free-sym and --preset through a wrapper that is no program of
# its own: #!/usr/bin/env bash, then exec the real one (a pyenv shim's
# shape).  env and bash have no pool_alloc: the specs wait for t_pool,
# and its numbers are custom_pool's, exact.  A spec no program has is an
# error at the end (exit 2, one line naming the programs searched); a
# preset's missing functions are one line too.
scenario_wrapspec() {
	local w=$TMP/pool-wrapper.sh
	printf '#!/usr/bin/env bash\nexec "%s" "$@"\n' "$TB/t_pool" >"$w"
	chmod +x "$w"
	profile4x wsym 0 --no-libc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' -- "$w"
	#                              alloc   alloc  inuse   inuse
	#                              objects space  objects space
	expect4 wsym pool_keep          5      500    5       500
	expect4 wsym pool_churn        10      400    0         0
	expect4 wsym pool_some          4      256    1        64
	expect4 wsym slab_alloc         5      472    3        72
	leafset4 wsym
	expect_events wsym.alloc_objects allocs=24 frees=15 unmatched_frees=0 missed_frees=0
	grep -qE "^heaptrace: --sym pool_alloc: found in $TB/t_pool\$" "$TMP/wsym.alloc_objects.err"
	report "wrapspec: -v says '--sym pool_alloc: found in .../t_pool'" \
		"$([ $? = 0 ] || grep -m3 'pool_alloc' "$TMP/wsym.alloc_objects.err")"

	# With libc too (custom_pool's poolc numbers): the wrapper's own mallocs are left out with its stacks.
	profile4x wsymc 0 --sym slab_alloc --sym 'pool_alloc:size=arg2' --free-sym 'pool_free:ptr=arg2' -- "$w"
	expect4 wsymc pool_keep         5      500    5       500
	expect4 wsymc pool_churn       10      400    0         0
	expect4 wsymc pool_some         4      256    1        64
	expect4 wsymc slab_keep         3       72    3        72
	expect4 wsymc slab_churn        2      400    0         0
	expect4 wsymc pool_new          1       32    1        32
	leafset4 wsymc

	ht wnone --sym nosuch_alloc -f collapsed -- "$w"
	report "wrapspec: a spec no program has -> exit 2 at the end, one line naming the 3 programs searched" \
		"$(err_diag wnone 2 'no function nosuch_alloc in any of the 3 programs' /usr/bin/env bash "$TB/t_pool")"
	# Like any failed run, no profile.
	[ -s "$TMP/wnone.out" ]
	report "wrapspec: with the missing spec, no profile is written" \
		"$([ $? != 0 ] || echo "stdout: $(head -c 100 "$TMP/wnone.out")")"
	ht wjem --preset jemalloc -f collapsed -- "$w"
	report "wrapspec: --preset jemalloc through the wrapper, no jemalloc anywhere -> exit 2, one line" \
		"$(err_diag wjem 2 'preset jemalloc: none of its functions' mallocx dallocx 'any of the 3 programs')"
}
