#!/bin/bash
# A compiler under --follow-fork (#39 item 3): `gcc -O2 -c` of a generated
# C file, where the work is cc1's, a program the driver executes.  Seconds
# of wall time a run; configurations round-robin, R rounds, ratios of
# medians, all from this run:
#   bare          gcc -O2 -c alone
#   cc1           heaptrace -- cc1 ... (cc1 launched directly, exact: the ring)
#   ff            heaptrace --follow-fork -- gcc -O2 -c (exact; cc1 exec'd by the driver)
#   ff_s512k      the same with --sample-rate 512K
#   ff_noinject   the same exact with --no-inject (uprobes: the trap per call)
# cc1 exec'd by a followed driver gets a stub, CFI tables and a ring of its
# own (docs/process-trees.md), so ff should cost about what cc1 does.
#
# Environment: GCC_FUNCS (150 generated functions), GCC_RUNS (3),
# GCC_CONFIGS (all of the above).
set -u
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

FUNCS=${GCC_FUNCS:-150}
RUNS=${GCC_RUNS:-3}
RUN_TIMEOUT=900
bench_start gcc
command -v gcc >/dev/null || { note "needs gcc"; exit 1; }

# FUNCS functions of loops, switches and snprintf calls: cc1 allocates
# through its own obstacks and GC pages, and malloc for the rest.
awk -v n="$FUNCS" 'BEGIN {
	print "#include <stdio.h>\n#include <string.h>"
	for (i = 0; i < n; i++) {
		printf "int f%d(int *a, int n, const char *s) {\n\tint acc = 0; char buf[64];\n", i
		for (j = 0; j < 12; j++) {
			printf "\tfor (int k = 0; k < n; k++) { if (a[k] %% %d == %d) acc += a[k] * %d; else acc += k << %d; }\n", j + 3, j % 3, j + 1, j % 5
			printf "\tswitch (acc & 7) { case 0: acc += %d; break; case 1: acc ^= %d; break; ", i, j
			printf "case 2: snprintf(buf, sizeof buf, \"%%d%%s\", acc, s); acc += (int)strlen(buf); break; default: acc -= %d; }\n", (i * j) % 97
		}
		print "\treturn acc;\n}"
	}
	print "int main(int argc, char **argv) {\n\tint a[16] = { 0 }, t = 0;"
	for (i = 0; i < n; i++)
		printf "\tt += f%d(a, argc, argv[0]);\n", i
	print "\treturn t & 1;\n}"
}' >"$TMP/big.c"

# cc1's own command line, as the driver would run it (gcc -###).
mapfile -t CC1 < <(gcc -### -O2 -c "$TMP/big.c" -o "$TMP/big.o" 2>&1 |
	awk '$1 ~ /\/cc1"?$/ { print; exit }' | xargs -n1 printf '%s\n')
[ "${#CC1[@]}" -gt 2 ] || { note "cannot find cc1's command line in gcc -###"; exit 1; }

CONFIGS=(${GCC_CONFIGS:-bare cc1 ff ff_s512k ff_noinject})
SECS=

run() {
	local name=$1 t0 t1 rc=0
	local gccv=(gcc -O2 -c "$TMP/big.c" -o "$TMP/big.o")
	t0=$(date +%s.%N)
	case $name in
	bare) timeout $RUN_TIMEOUT "${gccv[@]}" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	cc1) timeout $RUN_TIMEOUT "$HT" -o /dev/null -- "${CC1[@]}" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	ff) timeout $RUN_TIMEOUT "$HT" --follow-fork -o /dev/null -- "${gccv[@]}" >"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	ff_s512k)
		timeout $RUN_TIMEOUT "$HT" --sample-rate 512K --follow-fork -o /dev/null -- "${gccv[@]}" \
			>"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	ff_noinject)
		timeout $RUN_TIMEOUT "$HT" --no-inject --follow-fork -o /dev/null -- "${gccv[@]}" \
			>"$TMP/out" 2>"$TMP/err" || rc=$? ;;
	*) note "unknown configuration $name"; exit 2 ;;
	esac
	t1=$(date +%s.%N)
	SECS=
	if [ "$rc" -eq 0 ]; then
		SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	else
		note "$name failed (exit $rc): $(tail -2 "$TMP/err" | tr '\n' ' ')"
	fi
}

note "gcc -O2 -c of $FUNCS generated functions ($(wc -l <"$TMP/big.c") lines), $RUNS rounds"
rounds "$RUNS" s SECS

echo
echo "gcc -O2 -c, $FUNCS generated functions: seconds (median of $RUNS rounds)"
for c in "${CONFIGS[@]}"; do
	printf '  %-44s %8s   [%s]\n' "$c" "${MED[$c]:--}" "${ALL[$c]:-}"
done
echo
target "--follow-fork exact / cc1 traced directly" "$(ratio "${MED[ff]:-}" "${MED[cc1]:-}")" "<=" 1.25
printf '  %-44s %8s\n' "cc1 traced directly / bare" "$(ratio "${MED[cc1]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "--follow-fork exact / bare" "$(ratio "${MED[ff]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "--follow-fork 512K / bare" "$(ratio "${MED[ff_s512k]:-}" "${MED[bare]:-}")"
printf '  %-44s %8s\n' "--follow-fork --no-inject / exact" "$(ratio "${MED[ff_noinject]:-}" "${MED[ff]:-}")"
