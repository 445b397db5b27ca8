# shellcheck shell=bash
# Helpers of the parts of `make check` (tests/check/*.sh): each part is a
# script run from the top directory that prints "ok - NAME" or "not ok -
# NAME" and the lines of what went wrong ("#   ..."), or "skip - NAME:
# WHY" when a tool it needs is missing, then "N passed, N failed, N
# skipped"; "warning - NAME" lines are shown but not counted.  No root,
# no BPF, no network: only build/heaptrace's commands that need none, and
# files under a temporary directory.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
ROOT=$PWD
HT=${HEAPTRACE:-$ROOT/build/heaptrace}
PASS=0
FAIL=0
SKIP=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/heaptrace-check.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

pass() { PASS=$((PASS + 1)); echo "ok - $1"; }

# fail NAME [DIAG]: DIAG may hold several lines.
fail() {
	FAIL=$((FAIL + 1))
	echo "not ok - $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed -e '/^$/d' -e 's/^/#   /' | head -30
	return 0
}

# warn NAME DIAG: neither passed nor failed, but shown by run.sh as a
# failure's lines are: a target not yet met that must not stop the check.
warn() {
	echo "warning - $1"
	printf '%s\n' "$2" | sed -e '/^$/d' -e 's/^/#   /' | head -30
}

# report NAME DIAG: passes when DIAG is empty.
report() {
	if [ -z "$2" ]; then pass "$1"; else fail "$1" "$2"; fi
}

# skip NAME WHY: a check whose tool is not installed; WHY says which package has it.
skip() {
	SKIP=$((SKIP + 1))
	echo "skip - $1: $2"
}

summary() {
	echo "$PASS passed, $FAIL failed, $SKIP skipped"
	[ "$FAIL" = 0 ]
}

# run KEY ARGS...: heaptrace ARGS, stdout in $TMP/KEY.out, stderr in
# $TMP/KEY.err, exit status in RC; 10 s at most, no terminal.
run() {
	local key=$1
	shift
	timeout -k 2 10 "$HT" "$@" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	RC=$?
}

# one_error KEY STATUS: exit STATUS, nothing on stdout, exactly one
# "heaptrace: " line on stderr; what is not so, or nothing.
one_error() {
	local d=""
	[ "$RC" = "$2" ] || d+="exit status $RC, want $2"$'\n'
	[ -s "$TMP/$1.out" ] && d+="stdout: $(head -c 300 "$TMP/$1.out")"$'\n'
	[ "$(wc -l <"$TMP/$1.err")" = 1 ] || d+="stderr has $(wc -l <"$TMP/$1.err") lines, want 1"$'\n'
	grep -q '^heaptrace: ' "$TMP/$1.err" || d+="stderr does not start with 'heaptrace: '"$'\n'
	[ -n "$d" ] && d+="stderr: $(head -c 600 "$TMP/$1.err")"
	printf '%s' "$d"
}
