#!/usr/bin/env bash
# Test files stay readable: none over 1,000 lines (split where its parts
# separate, as tests/unit/readelf_cfi.c was from test_unwind_table.c).
source "$(dirname "$0")/lib.sh"
n=0
while read -r f; do
	n=$((n + 1))
	l=$(wc -l <"$f")
	report "files: $f is under 1,000 lines" "$([ "$l" -lt 1000 ] || echo "$l lines")"
done < <(find tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.sh' \) | sort)
[ "$n" -gt 50 ] || fail "files: the test files were found" "$n files"
summary
