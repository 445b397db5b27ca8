#!/usr/bin/env bash
# --suppressions FILE: LeakSanitizer's format read at option time, so a bad
# file is one line naming FILE:LINE and exit status 2 before anything is
# traced (no root needed).  Matching is checked by scenario suppress.
source "$(dirname "$0")/lib.sh"
NOCMD=/nonexistent/heaptrace-check-command

# bad NAME TEXT WANT: a file holding TEXT is refused with the line WANT.
bad() {
	printf '%b' "$2" >"$TMP/$1.supp"
	run "$1" --suppressions "$TMP/$1.supp" -- "$NOCMD"
	report "suppress: $1: exit 2, '$(rel_tmp "$3")'" "$(one_error "$1" 2)$(grep -qxF -- "$3" "$TMP/$1.err" ||
		echo "stderr: $(cat "$TMP/$1.err"), want $3")"
}
rel_tmp() { local s=$1; echo "${s//$TMP\//\$TMP/}"; }

bad nocolon '# c\n\nleak_foo\n' "heaptrace: $TMP/nocolon.supp:3: not a suppression: 'leak_foo' (LeakSanitizer's format: leak:PATTERN)"
bad type 'leak:a\nrace:b\n' "heaptrace: $TMP/type.supp:2: unknown suppression type 'race' (only leak:PATTERN)"
bad empty '  leak:   \n' "heaptrace: $TMP/empty.supp:1: leak: with no pattern (it would suppress every leak; '*' says so)"
bad nul 'leak:a\0b\n' "heaptrace: $TMP/nul.supp: not a text file (a NUL byte at offset 6)"
run missing --suppressions "$TMP/none.supp" -- "$NOCMD"
report "suppress: a missing file: exit 2, named" "$(one_error missing 2)$(grep -qxF -- \
	"heaptrace: --suppressions $TMP/none.supp: No such file or directory" "$TMP/missing.err" ||
	echo "stderr: $(cat "$TMP/missing.err")")"

# Comments, blank lines, blanks around a line and CRLF are taken; each file counts its own lines.
printf '# LSan\r\n\r\n  leak:foo*bar$  \r\nleak:^libz.so\n' >"$TMP/good.supp"
printf '\nrace:x\n' >"$TMP/second.supp"
run two --suppressions "$TMP/good.supp" --suppressions "$TMP/second.supp" -- "$NOCMD"
report "suppress: a good file then a bad one: the bad one's line 2 named" "$(one_error two 2)$(grep -qxF -- \
	"heaptrace: $TMP/second.supp:2: unknown suppression type 'race' (only leak:PATTERN)" "$TMP/two.err" ||
	echo "stderr: $(cat "$TMP/two.err")")"
summary
