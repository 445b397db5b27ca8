# shellcheck shell=bash
# shellcheck disable=SC2034 # scenario_fork sets RC (see ht) without reading it
# Area "fork" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario fork: --follow-fork.

# ---------------------------------------------------------------------------
# Forks (t_fork: parent -> child -> grandchild, see its source).  Without
# --follow-fork only the target is traced and its numbers are exact; with
# it, each child has its own profile (FILE.PID), the child's free of a
# block it inherited is counted as inherited_frees (not a loss), and the
# parent's numbers are the same.  Also in -p mode, with an exec in the
# grandchild, and with heaptrace SIGKILLed while it holds the tree.  Each
# profile carries its own process's event and loss counters; the -v events
# line the whole session's.

# fork_files KEY: "PID PATH" per child profile announced on KEY's stderr.
fork_files() {
	sed -n 's/^heaptrace: child PID \([0-9]*\) (of PID [0-9]*): profile in \(.*\)$/\1 \2/p' "$TMP/$1.err"
}

# fork_file KEY WHO: the profile of WHO (parent: -o $TMP/KEY.prof; child,
# grandchild: as announced on KEY's stderr).
fork_file() {
	case $2 in
	parent) echo "$TMP/$1.prof" ;;
	child) fork_files "$1" | sed -n 1p | cut -d' ' -f2- ;;
	grandchild) fork_files "$1" | sed -n 2p | cut -d' ' -f2- ;;
	esac
}

# fork_expect KEY VALUE WHO EXPECTED: the collapsed profile of WHO (parent,
# child, grandchild) holds exactly EXPECTED ("leaf=value ..." sorted).
fork_expect() {
	local key=$1 value=$2 who=$3 want=$4 f got
	f=$(fork_file "$key" "$who")
	got=$(awk '{ n = split($1, fr, ";"); printf "%s=%s\n", fr[n], $2 }' "$f" 2>/dev/null | sort | tr '\n' ' ')
	[ "${got% }" = "$want" ] && pass "$key: $who's $value profile: $want" ||
		fail "$key: $who's $value profile: $want" "got '${got% }' from ${f:-no file}"$'\n'"$(ctx "$key")"
}

# proto_events FILE: the "events: ..." comment of a gzipped profile.proto
# (a string of its string table), without the "events: ".
proto_events() {
	gzip -dc "$1" 2>/dev/null | od -An -v -tu1 | awk '
	function varint(   v, m, c) {
		v = 0; m = 1
		do { c = b[p++]; v += (c % 128) * m; m *= 128 } while (c >= 128 && p < n)
		return v
	}
	{ for (i = 1; i <= NF; i++) b[n++] = $i + 0 }
	END {
		while (p < n) {
			key = varint(); wt = key % 8
			if (wt == 0) varint()
			else if (wt == 1) p += 8
			else if (wt == 5) p += 4
			else if (wt != 2) exit
			else {
				len = varint(); s = ""
				if (int(key / 8) == 6)
					for (j = p; j < p + len; j++) s = s sprintf("%c", b[j])
				if (s ~ /^events: /) { print substr(s, 9); exit }
				p += len
			}
		}
	}'
}

# fork_counts KEY WHO WHAT LINE NAME=VALUE...: each NAME has VALUE in LINE
# ("name=N name=N ...", what WHAT of WHO's profile shows).
fork_counts() {
	local key=$1 who=$2 what=$3 line=$4 pair got d=""
	shift 4
	for pair in "$@"; do
		got=$(echo "$line" | tr ' ' '\n' | sed -n "s/^${pair%%=*}=//p" | head -1)
		[ "$got" = "${pair#*=}" ] || d+="${pair%%=*}=${got:-<missing>}, want ${pair#*=}"$'\n'
	done
	[ -n "$d" ] && d+="$what: '$line' in $(fork_file "$key" "$who")"
	report "$key: $who's $what: $*" "$d"
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

# fork_attach KEY HEAPTRACE-ARG...: "heaptrace -v --follow-fork ARGS -o
# $TMP/KEY.prof -p PID" attached to a waiting t_fork, which is then let go;
# reports that both exit 0.  Fails (status 1) if it could not attach.
fork_attach() {
	local key=$1 d
	shift
	fork_start "$key" || return 1
	echo "heaptrace -v --follow-fork $* -o \$TMP/$key.prof -p PID" >"$TMP/$key.cmd"
	timeout -k 5 "$(tmo)" "$HT" -v --follow-fork "$@" -o "$TMP/$key.prof" \
		-p "$TPID" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null &
	HPID=$!
	if ! wait_for "$TMP/$key.err" "^heaptrace: tracing PID $TPID" 30 "$HPID"; then
		fail "$key: heaptrace -p --follow-fork attaches" "$(ctx "$key")"
		kill_tree "$HPID" "$TPID"
		return 1
	fi
	release "$key"
	wait_exit "$TPID" 10
	d=$([ "$WRC" = 0 ] || echo "target exit status $WRC")
	wait_exit "$HPID" 15
	[ "$WRC" = 0 ] || d+=" heaptrace exit status $WRC"
	report "$key: target and heaptrace -p --follow-fork exit 0" "$d${d:+$(ctx "$key")}"
}

scenario_fork() {
	local key v d f got who want want_p want_c want_g counts=()
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

	# -f proto: each profile's "events:" comment counts its own process's
	# allocations and frees (3, 4 and 2; the child's free of child_temp's
	# block and of the inherited one); the -v events line all of them.
	key=fork_events
	ht $key -v --follow-fork -f proto -o "$TMP/$key.prof" -- "$TB/t_fork"
	check_rc $key 0 "$key: exits 0"
	expect_events $key allocs=9 frees=1 unmatched_frees=0 inherited_frees=1
	for who in parent child grandchild; do
		case $who in
		parent) counts=(allocs=3 frees=0 inherited_frees=0) ;;
		child) counts=(allocs=4 frees=1 inherited_frees=1) ;;
		grandchild) counts=(allocs=2 frees=0 inherited_frees=0) ;;
		esac
		fork_counts $key $who "events comment" "$(proto_events "$(fork_file $key $who)")" \
			"${counts[@]}" unmatched_frees=0
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
	if fork_attach $key -f collapsed --value alloc_space; then
		fork_expect $key alloc_space parent "fork_after=4000 fork_before=1000 fork_shared=3000"
		fork_expect $key alloc_space child "child_keep=6000 child_temp=500"
		fork_expect $key alloc_space grandchild "grandchild_keep=1400"
	fi

	# Each profile's counters are its own process's: the child alone frees
	# the 2 fork_pre blocks allocated before heaptrace attached (-p), so its
	# -f top losses line shows unmatched_frees=2 and the others' none; the
	# -v events line holds the session's: those 2, and the 3 + 4 + 2
	# allocations.
	key=fork_losses
	if fork_attach $key -f top; then
		expect_events $key allocs=9 frees=1 unmatched_frees=2 inherited_frees=1
		for who in parent child grandchild; do
			want=none
			[ $who = child ] && want=unmatched_frees=2
			f=$(fork_file $key $who)
			got=$(sed -n 's/^  losses: *//p' "$f" 2>/dev/null)
			if [ "$got" = "$want" ]; then
				pass "$key: $who's -f top losses: $want"
			else
				fail "$key: $who's -f top losses: $want" "got '${got:-no losses line}' in ${f:-no file}"
			fi
		done
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
