#!/bin/bash
# heaptrace test harness.
#
# Run one area:      bash tests/run.sh sampling    (or: make test T=sampling)
# Run one scenario:  bash tests/run.sh sample      (or: make test T=sample)
# List them:         bash tests/run.sh --list      ("AREA SCENARIO" in run order)
#
# Runs the programs of tests/targets (built into build/tests by
# `make test-targets`) under build/heaptrace and checks exact per-function
# numbers, exit statuses, -p attach mode and the pprof / top outputs.
# Each check prints "ok - NAME" or "not ok - NAME" with "#" diagnostics; the
# last line is "N passed, N failed" and the exit status is non-zero if any
# check failed.  A check that cannot run fails.  Must run as root.
#
# The scenarios live in tests/scenarios/AREA.sh, one file per area (each
# scenario_NAME function a file defines is of its area); shared helpers in
# tests/lib.sh.
#
# Usage: tests/run.sh [--list] [--no-inject] [--skip NAME]... [NAME...]
#   NAME is a scenario or an area; default: all, in the order of SCENARIOS
#   below (an area's scenarios also run in that order).  --skip NAME leaves
#   out a scenario or area.  An unknown name is an error (exit 2).
#   --no-inject runs every heaptrace with --no-inject (uprobes only), so
#   the same checks hold for both paths (`make test-noinject`).
# HEAPTRACE_KEEP_TMP=1 keeps the scratch directory with every output.
set -u
# Symbols come from local files only: no debuginfod lookups during tests.
unset DEBUGINFOD_URLS

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd)
HT=${HEAPTRACE:-$ROOT/build/heaptrace}   # override only to test the harness
TB=$ROOT/build/tests
TMP=$(mktemp -d "${TMPDIR:-/tmp}/heaptrace-test.XXXXXX") || exit 1
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"

trap cleanup EXIT
trap 'exit 130' INT TERM

VALUES="alloc_objects alloc_space inuse_objects inuse_space"

SCENARIOS="unit placement stacks entrypoints custom presets threads threadexit ctor exit failed deep unwind unwindcache dlopen signal errors attach pprof top proto inline valgrind faults limits kmem startup badinput outfiles stress soak liveview overtime temporary fork script spawn progname runas pexec wrapspec sample stopsignals jobcontrol inject inject_cycles inject_untouched inject_symkill inject_fpu inject_othertool inject_footprint html htmlnames htmlbig svg htmlfiles limitpeak limitleak limitfork httpauth httpflood delta growth stale ctxreset ctxmany ctxstray probecost sigframe specrealloc specaddr specmem forkhint merge forksample kidstub forkstorm makeinstall deb pids cgroupsvc seccomp rss suppress realloc oomkill oomfork intervalbytes volumepaths usr1snap rsssnap oomfallback mmapexact mmapsampled mmapoutputs stubwalk batchfresh batchexit batchfork batchsig batchfull batchpreload batchkill ringdrain ringdrainnopair ringstub ringfp ringgiveup ringreuse undelivered differential pyframes"

# The areas: AREA_OF[SCENARIO] is the file (tests/scenarios/AREA.sh) that
# defines scenario_SCENARIO.
declare -A AREA_OF=()
for f in "$ROOT"/tests/scenarios/*.sh; do
	# shellcheck source=/dev/null
	. "$f"
	for s in $(compgen -A function scenario_); do
		[ -n "${AREA_OF[${s#scenario_}]:-}" ] || AREA_OF[${s#scenario_}]=$(basename "$f" .sh)
	done
done
unset f s

# harness_error MESSAGE: one line on stderr, exit 2.
harness_error() {
	echo "tests/run.sh: $1" >&2
	exit 2
}

# The harness must be consistent: every scenario listed and in an area, and
# an area named like a scenario holds that scenario alone.
for s in "${!AREA_OF[@]}"; do
	[[ " $SCENARIOS " == *" $s "* ]] || harness_error "scenario_$s is not in SCENARIOS"
	[ -z "${AREA_OF[${AREA_OF[$s]}]:-}" ] || [ "${AREA_OF[$s]}" = "$s" ] ||
		harness_error "area ${AREA_OF[$s]} (of scenario $s) has the name of a scenario"
done
for s in $SCENARIOS; do
	[ -n "${AREA_OF[$s]:-}" ] || harness_error "scenario $s is in SCENARIOS but no tests/scenarios/*.sh defines scenario_$s"
done
unset s

# expand NAME: the scenarios NAME stands for (itself, or its area's), in
# SCENARIOS order; fails on an unknown name.
expand() {
	local s found=1
	for s in $SCENARIOS; do
		if [ "$s" = "$1" ] || [ "${AREA_OF[$s]}" = "$1" ]; then
			echo "$s"
			found=0
		fi
	done
	return $found
}

main() {
	local s a k names=() skip=() run=() areas
	while [ $# -gt 0 ]; do
		case $1 in
		--list)
			for s in $SCENARIOS; do echo "${AREA_OF[$s]} $s"; done
			exit 0 ;;
		--skip)
			[ $# -ge 2 ] || harness_error "--skip needs a scenario or area name"
			skip+=("$2")
			shift ;;
		--no-inject)
			# Every heaptrace the scenarios start, through one wrapper; not the diff command.
			printf '#!/bin/sh\ncase "${1:-}" in diff|trace) exec "%s" "$@" ;; esac\nexec "%s" --no-inject "$@"\n' \
				"$HT" "$HT" >"$TMP/heaptrace-no-inject"
			chmod +x "$TMP/heaptrace-no-inject"
			HT=$TMP/heaptrace-no-inject
			export HT_TEST_NO_INJECT=1 ;;
		-*) harness_error "unknown option $1 (usage: tests/run.sh [--list] [--no-inject] [--skip NAME]... [NAME...])" ;;
		*) names+=("$1") ;;
		esac
		shift
	done
	[ ${#names[@]} -eq 0 ] && read -r -a names <<<"$SCENARIOS"
	areas=$(printf '%s\n' "${AREA_OF[@]}" | sort -u | tr '\n' ' ')
	for a in "${names[@]}" "${skip[@]}"; do
		expand "$a" >/dev/null ||
			harness_error "unknown scenario or area '$a' (areas: ${areas% }; scenarios: $SCENARIOS)"
	done
	# Each scenario once, in the order given; none of the skipped ones.
	for a in "${names[@]}"; do
		for s in $(expand "$a"); do
			[[ " ${run[*]} " == *" $s "* ]] && continue
			for k in "${skip[@]}"; do
				[[ $'\n'"$(expand "$k")"$'\n' == *$'\n'"$s"$'\n'* ]] && continue 2
			done
			run+=("$s")
		done
	done
	prerequisites
	for s in "${run[@]}"; do
		echo "# --- $s"
		"scenario_$s"
	done
	if [ "$FAIL" -gt 0 ]; then
		echo "# --- the failures again"
		printf '%s\n' "${FAILURES[@]}"
	fi
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ]
}

main "$@"
