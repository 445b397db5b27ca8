#!/bin/bash
# The SIGKILL sweep of docs/fast-path.md: heaptrace SIGKILLed at every phase
# of putting the stub in and taking it out (HEAPTRACE_KILL_AT, a test hook:
# user/inject/phase.h), KILLS times a phase, under self-checking targets:
#   -p on t_inject churn (4 threads allocate and check every block), sampled
#      (--sample-rate 64K, so that detach also gives the set's pages back),
#      one target for all kills of a phase; a kill of an installation phase
#      with another --max-allocs each time (an earlier session's stub would
#      be used again, and those phases not reached);
#   --follow-fork -p on t_forkstorm (threads + forks): the child phases.
# After every fourth kill the next heaptrace (sampled, -d 0.1, not killed)
# must attach and detach (exit 0); each target is then told to quit and must say
# "bye errors=0" (t_forkstorm: "bad 0 errors 0") and exit 0, and leave no
# core file.  One line a phase: kills, targets harmed; the table at the end.
# Usage: scripts/killsweep.sh [KILLS] [PHASE...]   (as root; build first)
set -u
cd "$(dirname "$0")/.."
HT=$PWD/build/heaptrace
TB=$PWD/build/tests
KILLS=${1:-16}
shift 2>/dev/null
TMP=$(mktemp -d /tmp/heaptrace-killsweep.XXXXXX)
ulimit -c unlimited
TPID=
cleanup() {
	[ -n "$TPID" ] && kill -KILL "$TPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

INSTALL="stopped syscall:1 reserved syscall:2 memfd written syscall:3 mapped syscall:4 closed syscall:5 data syscall:6 wipeonfork seeded sites patched:1 patched:5 patched:9 enabled"
LATER="reused remove disabled restored:1 restored:5 restored:9 syscall:2 cleared"
CHILD="child-nop5 child-sites child-seeded child-enabled"
PHASES=${*:-$INSTALL $LATER $CHILD}

start_inject() {
	rm -f "$TMP/fifo" && mkfifo "$TMP/fifo"
	(cd "$TMP" && exec "$TB/t_inject" churn "$TMP/fifo" 4 >"$TMP/target.out" 2>&1) &
	TPID=$!
	for _ in $(seq 100); do grep -q '^ready$' "$TMP/target.out" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

start_storm() {
	(cd "$TMP" && exec "$TB/t_forkstorm" 600 4 20 >"$TMP/target.out" 2>&1) &
	TPID=$!
	for _ in $(seq 100); do grep -q '^ready$' "$TMP/target.out" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

# end_target KIND: quit it and judge it; WHY: the diagnosis, empty if well.
end_target() {
	local why=""
	if [ "$1" = storm ]; then
		kill -TERM "$TPID" 2>/dev/null
	else
		timeout 10 bash -c 'echo quit >"$1"' _ "$TMP/fifo"
	fi
	for _ in $(seq 300); do kill -0 "$TPID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$TPID" 2>/dev/null; then
		why="still running"
		kill -KILL "$TPID"
	fi
	wait "$TPID"
	local rc=$?
	TPID=
	[ "$rc" = 0 ] || why+=" exit status $rc"
	grep -qE '^bye errors=0$|bad 0 errors 0$' "$TMP/target.out" || why+=" says: $(tail -1 "$TMP/target.out")"
	if ls "$TMP"/core* >/dev/null 2>&1; then
		why+=" core dumped"
		rm -f "$TMP"/core*
	fi
	WHY=$why
}

declare -A K H
total=0 harmed=0
for ph in $PHASES; do
	kind=inject args=(--sample-rate 64K)
	case $ph in child-*) kind=storm args=(--follow-fork --sample-rate 64K) ;; esac
	fresh=0
	case " $INSTALL " in *" $ph "*) fresh=1 ;; esac
	kills=0 bad=0 notes=""
	for i in $(seq "$KILLS"); do
		if [ -z "$TPID" ]; then
			if ! { [ $kind = storm ] && start_storm; } && ! { [ $kind = inject ] && start_inject; }; then
				notes+=" target did not start;"
				bad=$((bad + 1))
				break
			fi
		fi
		# An installation phase is reached only by a session that maps a stub of its own: each kill
		# another set size (--max-allocs), so that no earlier session's stub is used again.
		more=()
		[ "$fresh" = 1 ] && more=(--max-allocs $((4096 << (i % 13))))
		HEAPTRACE_KILL_AT=$ph timeout -k 5 60 "$HT" "${args[@]}" "${more[@]}" -d 0.1 -o /dev/null -p "$TPID" \
			>/dev/null 2>"$TMP/ht.err" </dev/null
		rc=$?
		[ "$rc" = 137 ] && kills=$((kills + 1))
		# The next session must work, on what the killed one left (every fourth kill: time).
		if [ $((i % 4)) = 1 ]; then
			timeout -k 5 60 "$HT" "${args[@]}" -d 0.1 -o /dev/null -p "$TPID" >/dev/null 2>"$TMP/next.err" </dev/null
			rc2=$?
			[ "$rc2" = 0 ] || { notes+=" next heaptrace exit $rc2: $(tail -1 "$TMP/next.err");"; bad=$((bad + 1)); }
		fi
		if ! kill -0 "$TPID" 2>/dev/null; then
			end_target $kind
			notes+=" target died:$WHY;"
			bad=$((bad + 1))
			continue
		fi
		if [ "$i" = "$KILLS" ]; then
			end_target $kind
			[ -z "$WHY" ] || { notes+="$WHY;"; bad=$((bad + 1)); }
		fi
	done
	K[$ph]=$kills
	H[$ph]=$bad
	total=$((total + kills))
	harmed=$((harmed + bad))
	echo "killsweep: $ph: $kills kills, $bad harmed${notes:+:$notes}"
done
echo
echo "| phase | SIGKILLs | targets harmed |"
echo "| --- | ---: | ---: |"
for ph in $PHASES; do
	echo "| \`$ph\` | ${K[$ph]} | ${H[$ph]} |"
done
echo "| all | $total | $harmed |"
[ "$harmed" = 0 ]
