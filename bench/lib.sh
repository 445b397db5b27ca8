# shellcheck shell=bash
# What the benchmarks share (bench/run.sh, redis.sh, postgres.sh,
# postgres-fork.sh): the median of a configuration's rounds, ratios of
# medians, and the one-line verdict on a target.

# median [FORMAT]: the median of the numbers on stdin, blank- or
# newline-separated (of an even count, the mean of the middle two), in
# FORMAT when given (else as read, a mean to two decimals); nothing when
# there are none.
median() {
	tr ' ' '\n' | sed '/^$/d' | sort -g |
		awk -v f="${1:-}" '{ v[NR] = $1 } END { if (NR == 0) exit 1; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			if (f != "") printf f "\n", m; else if (NR % 2) print m; else printf "%.2f\n", m }'
}

# ratio A B: A/B to two decimals, or "-" when either is missing.
ratio() {
	if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then
		awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'
	else
		printf -- "-"
	fi
}

# target LABEL VALUE OP LIMIT: one line, "ok" or "MISSED" ("n/a" without a value).
target() {
	local label=$1 value=$2 op=$3 limit=$4 verdict
	if [ "$value" = "-" ] || [ -z "$value" ]; then
		printf '  %-44s %8s   (target %s %s)  n/a\n' "$label" "-" "$op" "$limit"
		return
	fi
	verdict=$(awk -v v="$value" -v l="$limit" -v op="$op" \
		'BEGIN { ok = op == "<=" ? v <= l : op == ">=" ? v >= l : op == "<" ? v < l : v > l; print ok ? "ok" : "MISSED" }')
	printf '  %-44s %8s   (target %s %s)  %s\n' "$label" "$value" "$op" "$limit" "$verdict"
}

# rounds RUNS UNIT VAR: RUNS rounds of every configuration of CONFIGS,
# round-robin (a burst of load then hits one run of every configuration
# rather than all runs of one): `run CONFIG ROUND` sets the variable named
# VAR to the figure, empty when the run failed.  Fills ALL (each
# configuration's figures), MED (their medians) and ROUND (CONFIG,ROUND:
# the figure, for paired()).
rounds() {
	local r c runs=$1 unit=$2 var=$3
	declare -gA ALL=() MED=() ROUND=()
	for r in $(seq "$runs"); do
		for c in "${CONFIGS[@]}"; do
			run "$c" "$r"
			note "round $r: $c ${!var:-failed} $unit"
			[ -n "${!var}" ] && ALL[$c]+="${!var} " && ROUND[$c,$r]=${!var}
		done
	done
	for c in "${CONFIGS[@]}"; do MED[$c]=$(echo "${ALL[$c]:-}" | median); done
}

# paired A B RUNS: the median over rounds of A's figure / B's in the same
# round (both ran seconds apart: a machine whose speed drifts between
# rounds moves both), to three decimals; "-" without a round of both.
paired() {
	local r q=""
	for r in $(seq "$3"); do
		[ -n "${ROUND[$1,$r]:-}" ] && [ -n "${ROUND[$2,$r]:-}" ] &&
			q+="$(awk -v a="${ROUND[$1,$r]}" -v b="${ROUND[$2,$r]}" 'BEGIN { if (b > 0) printf "%.4f", a / b }') "
	done
	echo "$q" | median %.3f || printf -- "-"
}

# bench_start NAME: a bench that starts no server of its own (gcc.sh,
# python.sh): TMP (/tmp/heaptrace-NAME.*, gone at the exit), HT, note()
# ("bench-NAME: ..." on stderr), and an exit now when build/heaptrace is
# not built.
bench_start() {
	BENCH_NAME=$1
	note() { echo "bench-$BENCH_NAME: $*" >&2; }
	HT=$PWD/build/heaptrace
	TMP=$(mktemp -d "/tmp/heaptrace-$1.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT
	trap 'exit 130' INT TERM
	[ -x "$HT" ] || { note "build/heaptrace missing: make first"; exit 1; }
}
