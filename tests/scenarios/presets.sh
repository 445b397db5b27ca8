# shellcheck shell=bash
# Area "presets" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario presets: --preset python and --preset jemalloc, built-in
# --sym/--free-sym specs for the allocators of runtimes, on Debian's own
# binaries (python3, libjemalloc2).

scenario_presets() {
	presets_list
	presets_jemalloc
	presets_python
	presets_python_objects
	presets_python_attach
	presets_python_attach_sampled
	presets_errors
}

# --preset list prints each preset as the options it stands for.
presets_list() {
	local d=""
	ht plist --preset list
	d+=$(rc_diag plist 0)
	grep -qxF -- "  --sym 'PyObject_Malloc:size=arg1'" "$TMP/plist.out" ||
		d+=$'\n'"no \"  --sym 'PyObject_Malloc:size=arg1'\" line"
	grep -qxF -- "  --free-sym 'sdallocx:ptr=arg1'" "$TMP/plist.out" ||
		d+=$'\n'"no \"  --free-sym 'sdallocx:ptr=arg1'\" line"
	[ -n "$d" ] && d+=$'\n'"$(head -20 "$TMP/plist.out")"
	report "presets list: --preset list exits 0 and prints the specs as options" "$d"
}

# preset_options NAME: the options --preset list prints for preset NAME as
# arguments, one a line: "--sym", then its spec without the quotes.
preset_options() {
	awk -v want="--preset $1:" '
		/^--preset / { on = index($0, want) == 1; next }
		on && /^  --/ { gsub(/'\''/, ""); print $1; print $2 }' "$TMP/plist.out"
}

# t_jemalloc calls jemalloc's own API (mallocx, rallocx, xallocx, sdallocx,
# dallocx); jemalloc is also its malloc.  The numbers are derived in
# tests/targets/t_jemalloc.c.  Besides main's sites, libstdc++ (which
# Debian's libjemalloc.so.2 loads) mallocs its emergency exception pool,
# 72704 bytes, kept: allocs = 19 + 1 = 20; frees = 12.
presets_jemalloc() {
	local lib=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 opts=()
	if [ ! -e "$lib" ] || [ ! -x "$TB/t_jemalloc" ]; then
		fail "presets jemalloc: $lib (libjemalloc2) or $TB/t_jemalloc missing" ""
		return
	fi
	profile4x pjem 0 --preset jemalloc -- "$TB/t_jemalloc"
	#                              alloc   alloc  inuse   inuse
	#                              objects space  objects space
	expect4 pjem jx_keep             3      300    3       300
	expect4 pjem jx_align            2      128    2       128
	expect4 pjem jx_sized            4      800    0         0
	expect4 pjem jx_dalloc           5      200    0         0
	expect4 pjem jx_rseed            1     1000    0         0
	expect4 pjem jx_rallocx          1     5000    1      5000
	expect4 pjem jx_xseed            1      100    0         0
	expect4 pjem jx_xallocx          1      112    1       112
	expect4 pjem jx_malloc           1       24    0         0
	# Every stack: main's sites above, and libstdc++'s pool.
	expect_total pjem.alloc_objects 20
	expect_total pjem.alloc_space $((300 + 128 + 800 + 200 + 1000 + 5000 + 100 + 112 + 24 + 72704))
	expect_total pjem.inuse_objects 8
	expect_total pjem.inuse_space $((300 + 128 + 5000 + 112 + 72704))
	expect_events pjem.alloc_objects allocs=20 frees=12 unmatched_frees=0 missed_frees=0

	# Without the preset only malloc is seen (and its block is never freed,
	# by dallocx): the preset is what finds the others.
	ht pjem0 -v -f collapsed --value alloc_objects -- "$TB/t_jemalloc"
	check_rc pjem0 0 "presets jemalloc: without --preset exits 0"
	expect_leaf pjem0 jx_malloc 1
	expect_leaf pjem0 jx_keep 0
	expect_leaf pjem0 jx_rallocx 0
	expect_events pjem0 allocs=2 frees=0 unmatched_frees=0 missed_frees=0

	# The preset is exactly the options --preset list prints for it.
	mapfile -t opts < <(preset_options jemalloc)
	ht pjemcopy -f collapsed --value alloc_space "${opts[@]}" -- "$TB/t_jemalloc"
	if [ "${#opts[@]}" = 10 ] && [ -s "$TMP/pjemcopy.out" ] && cmp -s "$TMP/pjemcopy.out" "$TMP/pjem.alloc_space.out"; then
		pass "presets jemalloc: the 5 options --preset list prints give the profile of --preset jemalloc"
	else
		fail "presets jemalloc: the options --preset list prints give the profile of --preset jemalloc" \
			"options: ${opts[*]}"$'\n'"$(ctx pjemcopy)"$'\n'"$(diff "$TMP/pjem.alloc_space.out" "$TMP/pjemcopy.out" | head -8)"
	fi
}

# pprof_records FILE IO IB AO AB: the innermost return addresses of the
# records of a legacy pprof text profile with these counts, one a line.
# The text holds the first address minus one, as its readers expect (they
# add it back): printed here plus one.
pprof_records() {
	local a
	awk -v want="$2 $3 $4 $5" '
		/ @ / {
			line = $0
			gsub(/[\[\]:@]/, " ", line)
			split(line, f, " ")
			if (f[1] " " f[2] " " f[3] " " f[4] == want) print f[5]
		}' "$1" 2>/dev/null | while read -r a; do printf '0x%016x\n' $((a + 1)); done
}

# called_before EXE ADDR: the name of the function called by the
# instruction that ends at ADDR (a return address), from objdump.
called_before() {
	objdump -d --no-show-raw-insn --start-address=$(($2 - 5)) --stop-address=$(($2)) "$1" 2>/dev/null |
		sed -n 's/.*call .*<\([^>@+]*\)[@+>].*/\1/p' | tail -1
}

# Debian's python3 (3.11, not PIE): bytes(n) is one PyObject_Calloc(1,
# 33 + n) call from the interpreter (a call of the exported function, not
# one of its inlined copies), so
#   keep_them(3000): 3000 x bytes(200)  -> 3000 blocks of 233 bytes
#   keep_big(700):    700 x bytes(1000) ->  700 blocks of 1033 bytes
# both from one native stack (the same bytecode, the same C path), two
# with Python frames (keep_them's line, keep_big's); kept, and os._exit()
# skips the interpreter's finalisation, which would free them.  With
# --preset python those stacks hold exactly 3000 x 233 = 699000 bytes and
# 700 x 1033 = 723100, allocated and in use, and each innermost return
# address follows a call of PyObject_Calloc.  The 1033-byte
# blocks are larger than pymalloc's 512 and PyObject_Calloc gets them from
# calloc, a nested call: no second record for them (700: 723100).
# Without the preset, the 233-byte blocks come from pymalloc's arenas
# (mmap) and are not seen at all; the 1033-byte ones are seen at calloc,
# called from inside PyObject_Calloc: 700 objects, 723100 bytes.
PY_KEEP='
import os
def keep_them(n):
    return [bytes(200) for _ in range(n)]
def keep_big(n):
    return [bytes(1000) for _ in range(n)]
kept = keep_them(3000)
big = keep_big(700)
os._exit(0)
'
presets_python() {
	local py exe d addr
	py=/usr/bin/python3
	exe=$(readlink -f "$py")
	if [ ! -x "$exe" ] || ! nm -D "$exe" 2>/dev/null | grep -q ' T PyObject_Calloc$'; then
		fail "presets python: Debian's python3 ($py, package python3) with PyObject_Calloc" "$(ls -l "$py" 2>&1)"
		return
	fi
	# -I -S: no site packages, no environment, so that nothing else runs.
	ht ppy -v --preset python -o "$TMP/ppy.heap" -- "$py" -I -S -c "$PY_KEEP"
	d=$(rc_diag ppy 0)
	# Python frames (docs/python.md) tell keep_them's line from keep_big's: two stacks of the one C path.
	local want
	for want in "3000 699000" "700 723100"; do
		set -- $want
		addr=$(pprof_records "$TMP/ppy.heap" "$1" "$2" "$1" "$2")
		if [ "$(echo "$addr" | grep -c .)" != 1 ]; then
			d+=$'\n'"want one record $1: $2 [$1: $2], got ${addr:-none}; the largest:"
			d+=$'\n'"$(grep ' @ ' "$TMP/ppy.heap" | sort -rn | head -3 | cut -c1-100)"
		elif [ "$(called_before "$exe" "$addr")" != PyObject_Calloc ]; then
			# The 1033-byte blocks counted at calloc (a nested call) would have calloc's caller here.
			d+=$'\n'"$1: $2: its innermost frame $addr follows a call of '$(called_before "$exe" "$addr")', not PyObject_Calloc"
		fi
	done
	report "presets python: --preset python: 3000 objects (699,000 bytes) and 700 (723,100), one stack each, under PyObject_Calloc" "$d"

	ht ppy0 -v -o "$TMP/ppy0.heap" -- "$py" -I -S -c "$PY_KEEP"
	d=$(rc_diag ppy0 0)
	grep -qE '^ *(3000|3700): ' "$TMP/ppy0.heap" &&
		d+=$'\n'"pymalloc's blocks are seen without the preset: $(grep -E '^ *(3000|3700): ' "$TMP/ppy0.heap" | cut -c1-80)"
	addr=$(pprof_records "$TMP/ppy0.heap" 700 723100 700 723100)
	if [ "$(echo "$addr" | grep -c .)" != 1 ]; then
		d+=$'\n'"want one record 700: 723100 [700: 723100], got ${addr:-none}"
	elif [ "$(called_before "$exe" "$addr")" != calloc ]; then
		d+=$'\n'"its innermost frame $addr follows a call of '$(called_before "$exe" "$addr")', not calloc"
	fi
	report "presets python: without --preset, only the 700 blocks of 1033 bytes, at calloc" "$d"
}

# Debian's python3 is built with LTO and PGO: the code compares each
# allocator table slot (_PyObject.malloc, ...) with its default function
# and runs an inlined copy of it when equal, so nearly no object
# allocation calls a function (issue 24, item 3: 2207 allocations for
# 200,000 str objects, 200578 unmatched frees).  The preset finds the
# slots from the wrappers' code and, while tracing, points them at jumps
# to the same functions.  PY_STR keeps 40,000 str objects made by one
# concatenation each ("0a" .. "39999a"), from one native stack (leaf
# PyUnicode_Concat; startup leaves 4 small strs at other stacks with that
# leaf), then os._exit(): exactly 40000 objects in use there,
# of sum(sys.getsizeof(s)) bytes (the size asked of the allocator: a
# compact ASCII str's header, its characters and a NUL; computed with the
# same python).  (200,000, as in the issue, take ~50 s a run on a loaded
# 2-core VM; the numbers scale: docs/custom-allocators.md has them.)
PY_N=40000
PY_STR="
import os
x = [str(i) + 'a' for i in range($PY_N)]
os._exit(0)
"
# py_str_runs KEY [HEAPTRACE-OPTION...] -- CMD...: KEY.inuse_objects, KEY.inuse_space, KEY.alloc_objects (-v).
py_str_runs() {
	local key=$1 v d="" verbose opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	for v in inuse_objects inuse_space alloc_objects; do
		verbose=()
		[ "$v" = alloc_objects ] && verbose=(-v)
		ht "$key.$v" "${verbose[@]}" "${opts[@]}" -f collapsed --value "$v" -- "$@"
		d+=$(rc_diag "$key.$v" 0)
	done
	report "$key: 3 runs exit 0" "$d"
}

# py_str_check KEY: the PY_N strs at PyUnicode_Concat in KEY.inuse_objects/_space, and few losses.
py_str_check() {
	local key=$1 want_space d="" o s ev allocs frees unmatched
	want_space=$(/usr/bin/python3 -I -S -c "import sys; print(sum(sys.getsizeof(str(i) + 'a') for i in range($PY_N)))")
	# The stack with the most objects at PyUnicode_Concat (startup makes a few elsewhere), in both files.
	local stack
	stack=$(awk '/;PyUnicode_Concat [0-9]+$/ { if ($NF + 0 > max) { max = $NF + 0; line = $0 } }
		END { sub(/ [0-9]+$/, "", line); print line }' "$TMP/$key.inuse_objects.out")
	o=$(grep -F -- "$stack " "$TMP/$key.inuse_objects.out" | awk '{ print $NF }' | head -1)
	s=$(grep -F -- "$stack " "$TMP/$key.inuse_space.out" | awk '{ print $NF }' | head -1)
	[ "$o" = "$PY_N" ] || d+="in use at PyUnicode_Concat: $o objects, want $PY_N"$'\n'
	[ "$s" = "$want_space" ] || d+="in use at PyUnicode_Concat: $s bytes, want $want_space"$'\n'
	ev=$(grep -m1 '^heaptrace: events:' "$TMP/$key.alloc_objects.err")
	allocs=$(echo "$ev" | sed -n 's/.* allocs=\([0-9]*\).*/\1/p')
	frees=$(echo "$ev" | sed -n 's/.* frees=\([0-9]*\).*/\1/p')
	unmatched=$(echo "$ev" | sed -n 's/.* unmatched_frees=\([0-9]*\).*/\1/p')
	# Each str(i) + "a" allocates str(i) and the result, and frees str(i).
	[ "${allocs:-0}" -ge $((2 * PY_N)) ] || d+="allocs=${allocs:-?}, want >= $((2 * PY_N))"$'\n'
	[ "${frees:-0}" -ge "$PY_N" ] || d+="frees=${frees:-?}, want >= $PY_N"$'\n'
	[ -n "$unmatched" ] && [ $((unmatched * 20)) -lt "${frees:-0}" ] ||
		d+="unmatched_frees=${unmatched:-?} is not under 5% of frees=${frees:-?}"$'\n'
	report "$key: $PY_N strs in use at PyUnicode_Concat, $want_space bytes; allocs >= $((2 * PY_N)), unmatched frees < 5%" "$d"
}

presets_python_objects() {
	local py=/usr/bin/python3 d shim=$TMP/python-shim
	py_str_runs ppys --preset python -- "$py" -I -S -c "$PY_STR"
	py_str_check ppys
	d=""
	grep -qE '^heaptrace: preset python: PyObject_Malloc calls through the table slot 0x[0-9a-f]+ of /usr/bin/python3.11, which holds 0x[0-9a-f]+; the code compares the slot with it and inlines it when equal' \
		"$TMP/ppys.alloc_objects.err" || d+="no -v line on PyObject_Malloc's table slot"$'\n'
	grep -qE '^heaptrace: python: PID [0-9]+: 8 allocator table slots point at jumps to their own functions' \
		"$TMP/ppys.alloc_objects.err" || d+="no -v line: 8 slots point at jumps"$'\n'
	report "presets python: -v says which table slots were found (the wrappers' code) and that 8 were redirected" "$d"
	# The functions behind the slots (LTO locals without a symbol: their
	# extent from their FDE) and the wrappers ride the fast path; on
	# Debian's non-PIE python3.11, more than 2 GiB from libc, the
	# interpreter's twelve take the stub and libc's nine go through a page
	# of jumps near libc: none keeps its uprobes, and events are batched.
	d=""
	local fns
	fns=$(grep -cE '^heaptrace: probe 0x[0-9a-f]+ +/usr/bin/python3.11\+0x[0-9a-f]+: the fast path \(stub\)' "$TMP/ppys.alloc_objects.err")
	[ "$fns" = 4 ] || d+="$fns of the 4 functions behind the table slots on the fast path: $(grep -E '^heaptrace: (probe|fast path: )0x' "$TMP/ppys.alloc_objects.err" | head -4)"$'\n'
	d+=$(grep -E '^heaptrace: fast path: .*(in /usr/bin/python3.11 keeps|0x[0-9a-f]+ keeps)' "$TMP/ppys.alloc_objects.err" |
		head -3 | sed 's/^/a function of the interpreter keeps its uprobes: /')
	grep -qE '^heaptrace: fast path: a stub at 0x[0-9a-f]+ .*, 21 functions redirected \(9 through the page of jumps at 0x[0-9a-f]+\), events batched$' "$TMP/ppys.alloc_objects.err" ||
		d+="not 21 functions redirected, 9 through the page of jumps, events batched: $(grep 'fast path: a stub at' "$TMP/ppys.alloc_objects.err")"$'\n'
	grep -qE '^heaptrace: fast path: the functions of /lib/x86_64-linux-gnu/libc.so.6 are beyond one stub.s reach with /usr/bin/python3.11.s: through a page of jumps near them$' "$TMP/ppys.alloc_objects.err" ||
		d+="no -v line: libc's functions through a page of jumps"$'\n'
	d+=$(grep -E 'keeps its uprobes' "$TMP/ppys.alloc_objects.err" | head -3 | sed 's/^/a function keeps its uprobes: /')
	report "presets python: the interpreter's 12 allocator functions on the stub (the 4 behind the slots by their FDE's extent), libc's 9 through a page of jumps, events batched" "$d"

	# The same through a #!/usr/bin/env bash shim that execs it (a pyenv shim's shape).
	printf '#!/usr/bin/env bash\nexec %s "$@"\n' "$py" >"$shim"
	chmod +x "$shim"
	py_str_runs ppysh --preset python -- "$shim" -I -S -c "$PY_STR"
	py_str_check ppysh

	# --no-inject writes nothing into the target: the inlined copies stay
	# unseen, and -v says so (nearly no str is seen: PyUnicode_Concat's stack
	# is absent or small).
	ht ppysn -v --no-inject --preset python -f collapsed --value inuse_objects -- "$py" -I -S -c "$PY_STR"
	d=$(rc_diag ppysn 0)
	[ "$(leafval ppysn PyUnicode_Concat)" -lt 1000 ] 2>/dev/null ||
		d+="PyUnicode_Concat holds $(leafval ppysn PyUnicode_Concat) objects without the redirection"$'\n'
	grep -q 'those calls are not seen (--no-inject' "$TMP/ppysn.err" || d+="-v does not say the inlined calls are not seen"$'\n'
	report "presets python: --no-inject: no redirection, -v says the inlined calls are not seen" "$d"
}

# -p on a self-checking python (it checks every str it made and prints
# the object allocator's malloc, from PyMem_GetAllocator, at its start and
# end), attached twice for a second (-d 1): each session redirects the 8
# slots through the same page (a later heaptrace finds the first's), puts
# them back at its end, and the process ends well with its allocator as it
# was.
# ppa_start KEY: the python below started on $TMP/KEY.py, PPA_PID, once it printed its start.
ppa_start() {
	cat >"$TMP/$1.py" <<'PYEOF'
import ctypes, sys, time
class A(ctypes.Structure):
    _fields_ = [(n, ctypes.c_void_p) for n in ("ctx", "malloc", "calloc", "realloc", "free")]
def obj_malloc():
    a = A()
    ctypes.pythonapi.PyMem_GetAllocator(2, ctypes.byref(a))  # PYMEM_DOMAIN_OBJ
    return a.malloc
print("start", hex(obj_malloc()), flush=True)
keep = []
for r in range(110):
    y = [str(i) + "b" for i in range(20000)]
    assert all(s == str(i) + "b" for i, s in enumerate(y)), "a str changed"
    keep.append(y)
    del keep[:-3]
    time.sleep(0.1)
print("end", hex(obj_malloc()), flush=True)
PYEOF
	/usr/bin/python3 -I -S "$TMP/$1.py" >"$TMP/$1.out" 2>&1 &
	PPA_PID=$!
	wait_for "$TMP/$1.out" '^start' 10 "$PPA_PID"
}

# ppa_end KEY: adds to the caller's d unless python KEY (PPA_PID, a
# child of this shell: not called in a subshell) ended well, with the
# allocator it started with.
ppa_end() {
	local start end
	wait_exit "$PPA_PID" 30
	[ "$WRC" = 0 ] || d+="python exited $WRC: $(tail -3 "$TMP/$1.out")"$'\n'
	start=$(sed -n 's/^start //p' "$TMP/$1.out")
	end=$(sed -n 's/^end //p' "$TMP/$1.out")
	[ -n "$start" ] && [ "$start" = "$end" ] || d+="the allocator was $start at the start, $end at the end"$'\n'
}

# ppa_kill KEY PATTERN ARGS...: heaptrace ARGS in the background,
# SIGKILLed once its stderr says PATTERN; prints a diagnostic line if it
# never did.
ppa_kill() {
	local key=$1 pat=$2 hp
	shift 2
	ht_bg "$key" "$@"
	hp=$HPID
	if wait_for "$TMP/$key.err" "$pat" 20 "$hp"; then
		sleep 0.3
		kill -KILL "$(pgrep -P "$hp" | head -1)" 2>/dev/null
	else
		printf '%s\n' "the session to kill never said '$pat': $(grep -E 'python:|fast path' "$TMP/$key.err" | tail -3)"
	fi
	wait "$hp" 2>/dev/null
}

presets_python_attach() {
	local d="" pp i
	ppa_start ppa
	pp=$PPA_PID
	for i in 1 2; do
		ht "ppa$i" -v -d 1 --preset python -f collapsed -p "$pp"
		d+=$(rc_diag "ppa$i" 0)
	done
	# Killed with its jumps in the slots: the next session takes them over and gives them back.
	d+=$(ppa_kill ppa3 'tracing PID' -d 20 --preset python -o /dev/null -p "$pp")
	ht ppa4 -v -d 1 --preset python -o /dev/null -p "$pp"
	d+=$(rc_diag ppa4 0)
	grep -q '8 allocator table slots point at jumps' "$TMP/ppa4.err" &&
		grep -q '8 allocator table slots restored$' "$TMP/ppa4.err" ||
		d+="after the SIGKILL: the slots were not taken over and restored: $(grep 'python:' "$TMP/ppa4.err" | head -3)"$'\n'
	# libc lies beyond the stub's reach: its functions go through a page of
	# jumps, which each later session finds and uses again with the stub.
	local maps n
	maps=$(cat "/proc/$pp/maps")
	for n in stub jumps; do
		[ "$(grep -c "memfd:heaptrace-$n" <<<"$maps")" = 1 ] || d+="$(grep -c "memfd:heaptrace-$n" <<<"$maps") heaptrace-$n mappings after 4 sessions, want 1"$'\n'
	done
	for i in 2 4; do
		grep -qE 'fast path: the stub an earlier heaptrace left at 0x[0-9a-f]+ is used again' "$TMP/ppa$i.err" &&
			grep -qE ', 21 functions redirected \(9 through the page of jumps at 0x[0-9a-f]+\)' "$TMP/ppa$i.err" ||
			d+="session $i: the stub and its page of jumps not used again: $(grep 'fast path' "$TMP/ppa$i.err" | tail -3)"$'\n'
	done
	ppa_end ppa
	local p1 p2
	p1=$(sed -n 's/.*8 allocator table slots point at jumps .*(page \(0x[0-9a-f]*\)).*/\1/p' "$TMP/ppa1.err")
	p2=$(sed -n 's/.*8 allocator table slots point at jumps .*(page \(0x[0-9a-f]*\)).*/\1/p' "$TMP/ppa2.err")
	[ -n "$p1" ] && [ "$p1" = "$p2" ] || d+="pages: '$p1' then '$p2', want one page, the same"$'\n'
	for i in 1 2; do
		grep -q '8 allocator table slots restored$' "$TMP/ppa$i.err" || d+="session $i: no '8 allocator table slots restored'"$'\n'
	done
	report "presets python: -p twice on a self-checking python, then a session SIGKILLed and one after it: redirected through one page, taken over, restored, one stub and one page of jumps used again, the process ends well" "$d"
}

# The same python, sampled: the slots point at their functions' fast
# entries in the stub (malloc, calloc, realloc and free of both domains), and go
# back at the end.  A sampled session SIGKILLed leaves them in the stub;
# a --no-inject session after it puts the functions back (a uprobe on a
# function would miss calls made through a slot that skips its entry),
# and a sampled one after that points them again.  The allocator the
# process reads at its end is the one it read at its start.
presets_python_attach_sampled() {
	local d="" pp i
	ppa_start pps
	pp=$PPA_PID
	ht pps1 -v -d 1 --preset python --sample-rate 512K -o /dev/null -p "$pp"
	d+=$(rc_diag pps1 0)
	d+=$(ppa_kill pps2 'slots point at their functions' -v -d 20 --preset python --sample-rate 512K -o /dev/null -p "$pp")
	ht pps3 -v -d 1 --preset python --no-inject -o /dev/null -p "$pp"
	ht pps4 -v -d 1 --preset python --sample-rate 512K -o /dev/null -p "$pp"
	for i in 1 2 4; do
		grep -q 'PID [0-9]*: 8 allocator table slots point at their functions. fast entries$' "$TMP/pps$i.err" ||
			d+="session $i: not 8 slots at fast entries: $(grep 'python:' "$TMP/pps$i.err" | head -3)"$'\n'
	done
	for i in 1 4; do
		grep -q '8 allocator table slots restored$' "$TMP/pps$i.err" || d+="session $i: no '8 allocator table slots restored'"$'\n'
	done
	d+=$(rc_diag pps3 0)
	[ "$(grep -c 'allocator table slot of Py[A-Za-z]*_[A-Za-z]* still pointed into an earlier heaptrace.s stub: restored' "$TMP/pps3.err")" = 8 ] ||
		d+="--no-inject after the SIGKILL: not 8 slots restored: $(grep -c 'still pointed' "$TMP/pps3.err") ($(grep -E 'slot|python:' "$TMP/pps3.err" | head -3))"$'\n'
	ppa_end pps
	report "presets python: -p sampled on a self-checking python: the slots at the fast entries and back; SIGKILLed, a --no-inject session after it restores them; the process ends well" "$d"
}

presets_errors() {
	ht perr.name --preset nosuch -- "$TB/t_arena"
	report "presets errors: --preset nosuch -> exit 2, one line naming it and the presets" \
		"$(err_diag perr.name 2 nosuch python jemalloc)"
	ht perr.sym --preset jemalloc -- "$TB/t_arena"
	report "presets errors: --preset jemalloc on a program without jemalloc -> exit 2, one line naming mallocx" \
		"$(err_diag perr.sym 2 'preset jemalloc' mallocx t_arena)"
}
