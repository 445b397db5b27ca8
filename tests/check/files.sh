#!/usr/bin/env bash
# Files stay readable: no source file of user/, stub/ or bpf/ over 800
# lines, no test file over 1,000 (split where its parts separate, along a
# seam a reader would name, as tests/unit/readelf_cfi.c was from
# test_unwind_table.c and session/attach.c from session.c).
source "$(dirname "$0")/lib.sh"
n=0
for dir in user user/*/ stub bpf; do
	dir=${dir%/}
	over=""
	for f in "$dir"/*.c "$dir"/*.h "$dir"/*.S; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		l=$(wc -l <"$f")
		[ "$l" -le 800 ] || over+="$f: $l lines"$'\n'
	done
	report "files: no source file of $dir/ is over 800 lines" "$over"
done
[ "$n" -gt 100 ] || fail "files: the source files were found" "$n files"

# docs/architecture.md's table of each folder's files names every .c and .S of the tree.
missing=""
for f in user/*.c user/*/*.c stub/*.c stub/*.S bpf/*.c; do
	grep -q "\`$(basename "$f")\`" docs/architecture.md || missing+="$f"$'\n'
done
report "files: docs/architecture.md names every .c and .S of user/, stub/ and bpf/" "$missing"
n=0
while read -r f; do
	n=$((n + 1))
	l=$(wc -l <"$f")
	report "files: $f is under 1,000 lines" "$([ "$l" -lt 1000 ] || echo "$l lines")"
done < <(find tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.sh' \) | sort)
[ "$n" -gt 50 ] || fail "files: the test files were found" "$n files"
summary
