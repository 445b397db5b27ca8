# shellcheck shell=bash
# What the benchmarks share (bench/run.sh, redis.sh, postgres.sh,
# postgres-fork.sh): the median of a configuration's rounds, ratios of
# medians, and the one-line verdict on a target.

# median: the median of the numbers on stdin, blank- or newline-separated
# (of an even count, the mean of the middle two); nothing when there are none.
median() {
	tr ' ' '\n' | sed '/^$/d' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
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
