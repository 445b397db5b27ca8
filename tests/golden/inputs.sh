#!/usr/bin/env bash
# Makes the golden tests' inputs (run once, by hand; the results are checked
# in): tests/golden/app from app.c, and the profiles of it, whose stacks
# are return addresses found in its disassembly.  The expected outputs are
# made from these by `make golden` (tests/check/golden.sh --update).
# The profiles name the program /proc/self/cwd/tests/golden/app: an
# absolute path that is the checkout's own in a heaptrace started from its
# top directory, wherever that is.
set -euo pipefail
cd "$(dirname "$0")/../.."
G=tests/golden
gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -ffreestanding -nostdlib -static -no-pie \
	-fno-pic -fno-asynchronous-unwind-tables -Wl,--build-id=none -fdebug-prefix-map="$PWD"=. \
	-Wall -Wextra -Werror -o $G/app $G/app.c

# The return address of each call in FUNCTION, in order: the instruction after it.
rets() {
	objdump -d --no-show-raw-insn $G/app |
		awk -v fn="<$1>:" '$2 == fn { on = 1; next } /^$/ { on = 0 }
			on && c { sub(":", "", $1); print "0x" $1; c = 0 } on && /call/ { c = 1 }'
}
read -r pf pr < <(rets parse_request | xargs)
read -r cp1 cp2 < <(rets cache_put | xargs)
rd=$(rets render)
read -r h1 h2 h3 < <(rets handle | xargs)
st=$(rets _start)

# heaptrace's text: the first address of a stack minus one (user/output/pprof_text.c).
rec() {
	local io=$1 ib=$2 ao=$3 ab=$4 first=$5
	shift 5
	printf '%6d: %8d [%6d: %8d] @' "$io" "$ib" "$ao" "$ab"
	[ -n "$first" ] && printf ' 0x%016x' $((first - 1))
	for a in "$@"; do printf ' 0x%016x' $((a)); done
	printf '\n'
}
maps() {
	printf '\nMAPPED_LIBRARIES:\n'
	printf '00400000-00401000 r--p 00000000 00:00 1                          /proc/self/cwd/tests/golden/app\n'
	printf '00401000-00402000 r-xp 00001000 00:00 1                          /proc/self/cwd/tests/golden/app\n'
	printf '00402000-00413000 rw-p 00000000 00:00 0                          [heap]\n'
	printf '7f0000000000-7f0000100000 r-xp 00000000 00:00 0                  \n'
	printf '7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                  [stack]\n'
}
jit=0x7f0000001234

# The header's totals are the records' sums; R is heapprofile or heap_v2/RATE.
header() {
	awk -v r="$1" '{ sub(/@.*/, ""); gsub(/[\[\]:]/, " "); io += $1; ib += $2; ao += $3; ab += $4 }
		END { printf "heap profile: %6d: %8d [%6d: %8d] @ %s\n", io, ib, ao, ab, r }'
}
profile() {
	local recs
	recs=$(cat)
	header "$1" <<<"$recs"
	printf '%s\n' "$recs"
	maps
}

# OLD: five stacks; NEW: one grew, one shrank, one went, one came, one the same.
{
	rec 100 20100 1000 201000 "$pf" "$h1" "$st"
	rec 1 512 1000 512000 "$pr" "$h1" "$st"
	rec 900 21600 900 21600 "$cp1" "$h2" "$st"
	rec 100 130300 300 390900 "$cp2" "$h2" "$st"
	rec 32 4096 32 4096 "$jit" "$h1" "$st"
} | profile heapprofile >$G/old.heap
{
	rec 200 40200 2000 402000 "$pf" "$h1" "$st"
	rec 1 512 2000 1024000 "$pr" "$h1" "$st"
	rec 900 21600 900 21600 "$cp1" "$h2" "$st"
	rec 1000 1303001 1200 1564201 "$cp2" "$h2" "$st"
	rec 2 1179648 5 1556480 "$rd" "$h3" "$st"
	rec 3 72 3 72 ""
} | profile heapprofile >$G/new.heap
# Sampled (--sample-rate 512K): raw counts, which every reader scales up.
{
	rec 2 1000000 10 5000000 "$rd" "$h3" "$st"
	rec 10 200000 30 1000000 "$cp2" "$h2" "$st"
} | profile heap_v2/524288 >$G/sampled.heap
printf 'heap profile: %6d: %8d [%6d: %8d] @ heapprofile\n' 0 0 0 0 >$G/empty.heap
# The same as NEW in -f proto, as heaptrace writes it.
build/heaptrace diff $G/empty.heap $G/new.heap -f proto >$G/new.pb.gz
