# shellcheck shell=bash
# Area "pyframes" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# scenario pyframes: --preset python's stacks with Python frames in place
# of CPython's loop (stub/python.c), on Debian's python3.11 (LTO+PGO, not
# PIE) and pyenv's 3.10, 3.12 and 3.13 (libpython shared), each judged
# against tracemalloc on the same script, line by line.

# The CPythons whose frames are read: the interpreter, then its name.
PF_PYTHONS=(/usr/bin/python3.11 /root/.pyenv/versions/3.10.13/bin/python3
	/root/.pyenv/versions/3.12.1/bin/python3 /root/.pyenv/versions/3.13.0/bin/python3)

# pf_lines COL FILE: "LINE BYTES" of a collapsed profile, each stack's bytes
# on the line of its innermost Python frame ("name (file:line)") when that
# frame is FILE's (tracemalloc's statistics('lineno') of one frame).
pf_lines() {
	awk -v F="$2" '{
		v = $NF; $NF = ""; n = split($0, fr, ";")
		for (i = n; i > 0; i--)
			if (fr[i] ~ /\([^()]*:[0-9]+\) *$/) {
				m = fr[i]; sub(/.*\(/, "", m); sub(/\) *$/, "", m)
				if (index(m, F ":") == 1) { sub(/.*:/, "", m); s[m] += v }
				break
			}
	} END { for (k in s) print k, s[k] }' "$1" | sort -n
}

# The line of TAG ("# @TAG") in t_pyknown.py.
pf_at() { grep -n "# @$1\b" "$PF_SCRIPT" | cut -d: -f1; }

scenario_pyframes() {
	PF_SCRIPT=$TMP/t_pyknown.py
	cp "$ROOT/tests/targets/t_pyknown.py" "$PF_SCRIPT"
	cp "$ROOT/tests/targets/pytm.py" "$TMP/pytm.py"
	local py v key d tm
	# Each run writes tens of thousands of stacks, symbolized through
	# libpython's DWARF (pyenv's builds keep it): 5-9 s on a 2-core VM, 11 s
	# under ASan, past the 10 s a run gets once the suite's budget is spent
	# (lib.sh's tmo).  Three times that (the functions below see it too).
	local HT_TEST_SLOW=$((${HT_TEST_SLOW:-1} * 3))
	for py in "${PF_PYTHONS[@]}"; do
		v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
		key=pf${v//./}
		if [ -z "$v" ]; then
			fail "pyframes: $py runs (the machine's CPythons: Debian's python3.11, pyenv's 3.10, 3.12, 3.13)" "$(ls -l "$py" 2>&1)"
			continue
		fi
		ht "$key" -v --preset python -f collapsed -o "$TMP/$key.col" -- "$py" "$PF_SCRIPT" 50
		d=$(rc_diag "$key" 0)
		grep -q "^heaptrace: preset python: Python frames of CPython $v " "$TMP/$key.err" ||
			d+=$'\n'"-v does not say 'Python frames of CPython $v'"
		report "pyframes $v: heaptrace --preset python -f collapsed -- $py t_pyknown.py exits 0, Python frames read" "$d"
		pf_lines "$TMP/$key.col" t_pyknown.py >"$TMP/$key.lines"
		"$py" -X tracemalloc=1 "$PF_SCRIPT" 50 tm | sed -n 's/^TM t_pyknown.py:\([0-9]*\) \([0-9]*\) .*/\1 \2/p' | sort -n >"$TMP/$key.tm"
		pf_expect "$key" "$v" blob 5002850 "50 bytearray(100000): 50 x 100,001 bytes and 50 objects of 56"
		pf_expect "$key" "$v" worker 1200740 "4 threads' bytearray(300000): 4 x (300,001 + 56), and the list's growth by 4 (512)"
		pf_tracemalloc "$key" "$v"
		pf_stack "$key" "$v"
	done
	pf_pprof
	pf_diff
	pf_http
	pf_sampled
	pf_realloc
	pf_fork
	pf_attach
	pf_shim
	pf_plain
	pf_off
}

# Sampled at 16K through realloc's fast entry (tests/targets/t_pyrealloc.py):
# strs grown by += (pymalloc's realloc, which calls its malloc and free
# when the block moves), from the main thread and 4 threads at once, and
# bytearrays grown past 512 bytes (handed on to libc's realloc), each
# thread marked inside its realloc meanwhile; the script checks every
# block it built (exit 1).  Each line's estimate within 20% of
# tracemalloc's in-use (4 standard deviations and more: 600-650 samples a
# line); a realloc whose inner calls counted again would show twice its
# bytes.
pf_realloc() {
	local py v key d at got tm tag
	cp "$ROOT/tests/targets/t_pyrealloc.py" "$TMP/t_pyrealloc.py"
	for py in /usr/bin/python3.11 /root/.pyenv/versions/3.12.1/bin/python3; do
		v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
		key=pfr${v//./}
		ht "$key" -v --preset python --sample-rate 16K -f collapsed -o "$TMP/$key.col" -- "$py" "$TMP/t_pyrealloc.py"
		d=$(rc_diag "$key" 0)
		pf_lines "$TMP/$key.col" t_pyrealloc.py >"$TMP/$key.lines"
		"$py" -X tracemalloc=1 "$TMP/t_pyrealloc.py" tm | sed -n 's/^TM t_pyrealloc.py:\([0-9]*\) \([0-9]*\) .*/\1 \2/p' >"$TMP/$key.tm"
		for tag in strs arrays; do
			at=$(grep -n "# @$tag\b" "$TMP/t_pyrealloc.py" | cut -d: -f1)
			got=$(awk -v l="$at" '$1 == l { print $2 }' "$TMP/$key.lines")
			tm=$(awk -v l="$at" '$1 == l { print $2 }' "$TMP/$key.tm")
			awk -v h="${got:-0}" -v t="${tm:-0}" 'BEGIN { exit !(t > 0 && h >= t * 0.8 && h <= t * 1.2) }' ||
				d+="line $at ($tag): heaptrace ${got:-nothing} bytes, tracemalloc ${tm:-nothing}"$'\n'
		done
		report "pyframes $v: sampled at 16K through realloc's fast entry: each realloc line within 20% of tracemalloc's in-use" "$d"
	done
}

# --follow-fork: multiprocessing's forked workers (tests/targets/t_pyfork.py)
# get their stub's copy, their Python frames read from their memory at
# their exit; each line's bytes, allocated, in the merged profile.
pf_fork() {
	local py v key d got at
	cp "$ROOT/tests/targets/t_pyfork.py" "$TMP/t_pyfork.py"
	for py in /usr/bin/python3.11 /root/.pyenv/versions/3.12.1/bin/python3; do
		v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
		key=pff${v//./}
		ht "$key" --preset python --follow-fork --merge -f collapsed --value alloc_space -o "$TMP/$key.col" -- \
			"$py" "$TMP/t_pyfork.py"
		d=$(rc_diag "$key" 0)
		at=$(grep -n '# @child' "$TMP/t_pyfork.py" | cut -d: -f1)
		got=$(awk -v f="child_work (t_pyfork.py:$at);" 'index($0, f) && /;PyByteArray_Resize [0-9]+$/ { s += $NF } END { print s + 0 }' "$TMP/$key.col")
		[ "$got" = 2000010 ] || d+="child_work (t_pyfork.py:$at) ... PyByteArray_Resize: $got bytes, want 2000010 (2 workers x 5 x 200,001)"$'\n'
		at=$(grep -n '# @parent' "$TMP/t_pyfork.py" | cut -d: -f1)
		got=$(awk -v f="<module> (t_pyfork.py:$at);" 'index($0, f) { s += $NF } END { print s + 0 }' "$TMP/$key.col")
		[ "$got" = 1000570 ] || d+="<module> (t_pyfork.py:$at): $got bytes, want 1000570 (10 x (100,001 + 56))"$'\n'
		report "pyframes $v: --follow-fork: a multiprocessing pool's forked workers' line and the parent's, with their bytes" "$d"
	done
}

# Sampled (--sample-rate 1: a block of n bytes is sampled with probability
# 1 - e^-n and weighs n / that, n for every block of these lines) through
# the fast entries (user/inject/fast.h): the interpreter's wrappers forward
# to the functions behind their slots, which sample sizes of 1-512 bytes
# without holding a nesting slot; the same bytes at the same lines as exact.
pf_sampled() {
	local py v key d n
	for py in /usr/bin/python3.11 /root/.pyenv/versions/3.12.1/bin/python3; do
		v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
		key=pfs${v//./}
		ht "$key" -v --preset python --sample-rate 1 -f collapsed -o "$TMP/$key.col" -- "$py" "$PF_SCRIPT" 50
		d=$(rc_diag "$key" 0)
		n=$(sed -nE 's/^heaptrace: fast path: a stub at .*, unsampled calls stay in the process \(([0-9]+) decided by fast entries, ([0-9]+) on the GIL.s one countdown\)$/\1 \2/p' "$TMP/$key.err")
		[ "$n" = "16 2" ] || d+="functions with fast entries, and on the GIL's countdown: '${n:-none}', want '16 2' (malloc, calloc, realloc, free, the 8 wrappers, the 4 pymalloc functions behind them; pymalloc's malloc and calloc on one countdown)"$'\n'
		report "pyframes $v: --sample-rate 1 exits 0, 16 functions decided by fast entries, pymalloc's malloc and calloc on the GIL's one countdown" "$d"
		pf_lines "$TMP/$key.col" t_pyknown.py >"$TMP/$key.lines"
		pf_expect "$key" "$v sampled" blob 5002850 "--sample-rate 1: every block of the line, weighing its size"
		pf_expect "$key" "$v sampled" worker 1200740 "--sample-rate 1: the 4 threads' blocks and the list's growth"
	done
}

# pf_expect KEY VERSION TAG BYTES WHAT: the line of TAG holds BYTES in use.
pf_expect() {
	local key=$1 v=$2 at got
	at=$(pf_at "$3")
	got=$(awk -v l="$at" '$1 == l { print $2 }' "$TMP/$key.lines")
	report "pyframes $v: line $at ($3) holds $4 bytes in use ($5)" \
		"$([ "$got" = "$4" ] || echo "line $at: ${got:-nothing} bytes; lines: $(tr '\n' ' ' <"$TMP/$key.lines")")"
}

# Every line of the script that holds 1% or more of what tracemalloc saw of it: heaptrace's bytes within 5%.
pf_tracemalloc() {
	local key=$1 v=$2 d
	d=$(awk 'NR == FNR { h[$1] = $2; next } { t[$1] = $2; sum += $2 }
		END {
			for (l in t) {
				if (t[l] * 100 < sum) continue
				n++
				if (h[l] < t[l] * 0.95 || h[l] > t[l] * 1.05)
					printf "line %s: heaptrace %d bytes, tracemalloc %d\n", l, h[l], t[l]
			}
			if (n < 4) printf "%d lines of 1%% or more in tracemalloc, want 4 or more\n", n
		}' "$TMP/$key.lines" "$TMP/$key.tm")
	report "pyframes $v: every line with 1% or more of the script's heap within 5% of tracemalloc's in-use" \
		"${d:+$d$'\n'tracemalloc: $(tr '\n' ' ' <"$TMP/$key.tm")}"
}

# The Python frames sit where the loop ran them, innermost first, native frames kept above and below.
pf_stack() {
	local key=$1 v=$2 d="" call blob main worker
	call=$(grep -n '^main(int' "$PF_SCRIPT" | cut -d: -f1)
	blob=$(pf_at blob) main=$(pf_at main_blob) worker=$(pf_at worker)
	# 3.10 runs each Python call in a loop of its own: its native call frames stay between them;
	# it names a function without its class (no co_qualname before 3.11).
	grep -qE "PyEval_EvalCode;.*<module> \(t_pyknown.py:$call\);([^;(]*;)*main \(t_pyknown.py:$main\);([^;(]*;)*blob \(t_pyknown.py:$blob\);[^;(]*;([^;(]*;)*PyByteArray_Resize [0-9]+$" \
		"$TMP/$key.col" || d+="no stack PyEval_EvalCode;...;<module> (t_pyknown.py:$call);main (...:$main);blob (...:$blob);<C>...;PyByteArray_Resize"$'\n'
	grep -qE "(Thread\.)?run \(threading\.py:[0-9]+\);([^;(]*;)*worker \(t_pyknown.py:$worker\);([^;(]*;)*PyByteArray_Resize 1200004$" \
		"$TMP/$key.col" || d+="no stack Thread.run (threading.py:N);worker (t_pyknown.py:$worker);...;PyByteArray_Resize 1200004 (4 threads)"$'\n'
	# No loop frame left native: every stack is the stub's walk, also of libc's functions on
	# Debian's python3.11 (not PIE, more than 2 GiB from libc: through a page of jumps).
	local left
	left=$(awk '/_PyEval_EvalFrameDefault/ { s += $NF } END { print s + 0 }' "$TMP/$key.col")
	[ "$left" != 0 ] && d+="a native _PyEval_EvalFrameDefault is left: $left bytes"$'\n'
	report "pyframes $v: Python frames in place of the loop's native frames, innermost first, each thread its own" "$d"
}

# pprof's proto: function, file and line, as go tool pprof -list reads them.
pf_pprof() {
	local d blob
	blob=$(pf_at blob)
	ht pfproto --preset python -f proto -o "$TMP/pf.pb.gz" -- /usr/bin/python3.11 "$PF_SCRIPT" 50
	d=$(rc_diag pfproto 0)
	go tool pprof -list '^blob$' -sample_index=inuse_space "$TMP/pf.pb.gz" >"$TMP/pf.list" 2>&1
	grep -qE "^ROUTINE =+ blob in $PF_SCRIPT$" "$TMP/pf.list" || d+="no 'ROUTINE ... blob in $PF_SCRIPT'"$'\n'
	# 5,002,850 bytes: pprof's 4.77MB.
	grep -qE "^ +\. +4\.77MB +$blob: +return bytearray\(n\)" "$TMP/pf.list" ||
		d+="line $blob not listed with 4.77MB: $(head -14 "$TMP/pf.list")"$'\n'
	report "pyframes: -f proto: go tool pprof -list blob shows its line $blob with the 5,002,850 bytes" "$d"
}

# heaptrace diff from a legacy text snapshot (20 rounds) to pf_pprof's
# proto (50): each file's Python frames keep their names (the text's
# PYTHON_CODE lines, the proto's Functions), and the same code compares
# equal across the two runs, whose code indices differ: line blob grows by
# 30 x (100,001 + 56) bytes and 30 x 2 blocks.
pf_diff() {
	local d blob got
	blob=$(pf_at blob)
	ht pfdiff --preset python -o "$TMP/pf20.heap" -- /usr/bin/python3.11 "$PF_SCRIPT" 20
	d=$(rc_diag pfdiff 0)
	grep -qE "^[0-9a-f]+ [0-9]+ blob	$PF_SCRIPT\$" "$TMP/pf20.heap" ||
		d+="no PYTHON_CODE line 'INDEX FIRSTLINE blob<tab>$PF_SCRIPT' after the memory map"$'\n'
	"$HT" diff -f collapsed "$TMP/pf20.heap" "$TMP/pf.pb.gz" >"$TMP/pfdiff.col" 2>"$TMP/pfdiff.err" ||
		d+="heaptrace diff exits $?: $(head -3 "$TMP/pfdiff.err")"$'\n'
	got=$(pf_lines "$TMP/pfdiff.col" t_pyknown.py | awk -v l="$blob" '$1 == l { print $2 }')
	[ "$got" = 3001710 ] || d+="line $blob: ${got:-no} bytes of growth, want 3001710; $(grep -c 'python code' "$TMP/pfdiff.col") stacks of unnamed code"$'\n'
	"$HT" diff -f top "$TMP/pf20.heap" "$TMP/pf.pb.gz" >"$TMP/pfdiff.top" 2>&1
	sed -n '/^#1 /,/^#2 /p' "$TMP/pfdiff.top" >"$TMP/pfdiff.top1"
	grep -qE "^#1 +3,000,030 bytes" "$TMP/pfdiff.top1" && grep -qE "^ +blob +$PF_SCRIPT:$blob\$" "$TMP/pfdiff.top1" ||
		d+="-f top: not #1 3,000,030 bytes (30 buffers) with blob at $PF_SCRIPT:$blob: $(head -12 "$TMP/pfdiff.top")"$'\n'
	report "pyframes: heaptrace diff of a text snapshot and a proto profile: blob's line $blob grew by 3,001,710 bytes, named" "$d"
}

# /debug/pprof/heap of a running interpreter (--http, Debian's 3.11, no
# preset): go tool pprof -list names the Python function and its line,
# which holds the bytearray's 300,001 bytes (malloc's buffer).
pf_http() {
	local d="" hp port hold lim rc
	cat >"$TMP/pfh.py" <<PYEOF
import os, time
def hold():
    return bytearray(300000)  # @hold
keep = hold()
print("ready", flush=True)
for _ in range(200):
    if os.path.exists("$TMP/pfh.stop"):
        break
    time.sleep(0.05)
os._exit(0)
PYEOF
	hold=$(grep -n '# @hold' "$TMP/pfh.py" | cut -d: -f1)
	echo "heaptrace -v --http 127.0.0.1:0 -o /dev/null -- python3.11 pfh.py" >"$TMP/pfh.cmd"
	lim=$(tmo)
	[ "$lim" -lt 30 ] && lim=30
	timeout -k 5 "$lim" "$HT" -v --http 127.0.0.1:0 -o /dev/null -- /usr/bin/python3.11 "$TMP/pfh.py" \
		>"$TMP/pfh.out" 2>"$TMP/pfh.err" </dev/null &
	hp=$!
	wait_for "$TMP/pfh.out" '^ready' 30 "$hp"
	port=$(http_port pfh)
	if [ -z "$port" ]; then
		d+="heaptrace does not say where it serves: $(tail -3 "$TMP/pfh.err")"$'\n'
	else
		curl -s --max-time 10 -o "$TMP/pfh.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap" ||
			d+="curl /debug/pprof/heap failed"$'\n'
		go tool pprof -list '^hold$' -sample_index=inuse_space "$TMP/pfh.pb.gz" >"$TMP/pfh.list" 2>&1
		grep -qE "^ROUTINE =+ hold in $TMP/pfh.py$" "$TMP/pfh.list" &&
			grep -qE "^ +\. +29[0-9]\.[0-9]+kB +$hold: +return bytearray\(300000\)" "$TMP/pfh.list" ||
			d+="go tool pprof -list hold: not its line $hold with 300,001 bytes: $(head -12 "$TMP/pfh.list")"$'\n'
	fi
	: >"$TMP/pfh.stop"
	wait "$hp"
	rc=$?
	[ "$rc" = 0 ] || d+="heaptrace exits $rc: $(tail -3 "$TMP/pfh.err")"$'\n'
	report "pyframes: --http /debug/pprof/heap of a running python3.11: go tool pprof -list hold shows line $hold with its 300,001 bytes" "$d"
}

# A CPython whose frames are not read (3.9): one line says so and why; native stacks.
pf_off() {
	local py=/root/.pyenv/versions/3.9.18/bin/python3 d n
	ht pfoff --preset python -f collapsed -o "$TMP/pfoff.col" -- "$py" -c 'x = bytearray(1000)'
	d=$(rc_diag pfoff 0)
	n=$(grep -c 'Python frames are off' "$TMP/pfoff.err")
	grep -qx "heaptrace: preset python: Python frames are off: CPython 3.9: its frames are read for 3.10 to 3.13; stacks stay native" \
		"$TMP/pfoff.err" && [ "$n" = 1 ] || d+="want one line 'Python frames are off: CPython 3.9: ...', got $n: $(grep 'Python' "$TMP/pfoff.err")"$'\n'
	grep -q '_PyEval_EvalFrameDefault' "$TMP/pfoff.col" || d+="no native _PyEval_EvalFrameDefault frame in its stacks"$'\n'
	report "pyframes: CPython 3.9 (pyenv): one line says Python frames are off and why, stacks stay native" "$d"
}

# -p on a running interpreter (3.12: its thread state is libpython's TLS):
# the ticks it makes after the attach, each at its line with its own frames.
pf_attach() {
	local d="" pp out=$TMP/pfa.out tick n
	cat >"$TMP/pfa.py" <<'PYEOF'
import os, time
keep = [None] * 100
def tick(i):
    keep[i] = bytearray(50000)  # @tick: 50,001 bytes and the 56-byte object
print("ready", flush=True)
for i in range(80):
    tick(i)
    time.sleep(0.05)
os._exit(0)
PYEOF
	tick=$(grep -n '# @tick' "$TMP/pfa.py" | cut -d: -f1)
	/root/.pyenv/versions/3.12.1/bin/python3 "$TMP/pfa.py" >"$out" 2>&1 &
	pp=$!
	wait_for "$out" '^ready' 10 "$pp"
	ht pfa --preset python -f collapsed -o "$TMP/pfa.col" -p "$pp"
	d=$(rc_diag pfa 0)
	wait "$pp" 2>/dev/null
	n=$(pf_lines "$TMP/pfa.col" pfa.py | awk -v l="$tick" '$1 == l { print $2 }')
	[ -n "$n" ] && [ $((n % 50057)) = 0 ] && [ "$n" -ge $((10 * 50057)) ] ||
		d+="line $tick: ${n:-no} bytes, want a multiple of 50,057, 10 ticks or more"$'\n'
	grep -qE "tick \(pfa.py:$tick\);([^;(]*;)*PyByteArray_Resize [0-9]+$" "$TMP/pfa.col" ||
		d+="no stack ...;tick (pfa.py:$tick);...;PyByteArray_Resize"$'\n'
	report "pyframes: -p on a running python3.12: each tick after the attach at its line ($n bytes: 50,057 a tick)" "$d"
}

# A script run by its #! line through env and pyenv's shim (bash scripts
# that execute the real interpreter): the program heaptrace traces last is
# CPython, whose functions join the stub at that exec; its frames as when
# launched directly.
pf_shim() {
	local d="" sh=$TMP/pfshim.py shims=/root/.pyenv/shims v blob
	{ echo '#!/usr/bin/env python3'; cat "$PF_SCRIPT"; } >"$sh"
	chmod +x "$sh"
	v=$(PATH=$shims:$PATH python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
	blob=$(grep -n '# @blob' "$sh" | cut -d: -f1)
	PATH=$shims:$PATH ht pfshim -v --preset python -f collapsed -o "$TMP/pfshim.col" -- "$sh" 50
	d=$(rc_diag pfshim 0)
	[ -n "$v" ] || d+="no python3 among pyenv's shims ($shims)"$'\n'
	grep -q "^heaptrace: Python frames: read in PID [0-9]* (CPython $v)" "$TMP/pfshim.err" ||
		d+="-v does not say 'Python frames: read in PID N (CPython $v)'"$'\n'
	local got
	got=$(pf_lines "$TMP/pfshim.col" pfshim.py | awk -v l="$blob" '$1 == l { print $2 }')
	[ "$got" = 5002850 ] || d+="line $blob: ${got:-no} bytes, want 5002850; $(grep -E 'Python frames|fast path: a stub' "$TMP/pfshim.err" | tr '\n' ' '); the biggest stacks' innermost Python frames: $(awk '{ n = split($0, f, ";"); p = "none"; for (i = n; i > 0; i--) if (f[i] ~ /\(.*:[0-9]+\)|python code/) { p = f[i]; break }; print $NF, p }' "$TMP/pfshim.col" | sort -n | tail -3 | tr '\n' ' ')"$'\n'
	report "pyframes: #!/usr/bin/env python3 through pyenv's shim ($v): line $blob holds 5002850 bytes, Python frames read" "$d"
}

# Without --preset python: the malloc family alone (pymalloc's objects are
# the preset's to count), its stacks with Python frames all the same, on
# Debian's python3.11 (not PIE) and pyenv's 3.13 (libpython's TLS).
pf_plain() {
	local py v d blob worker got
	blob=$(pf_at blob) worker=$(pf_at worker)
	for py in /usr/bin/python3.11 /root/.pyenv/versions/3.13.0/bin/python3; do
		v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
		ht "pfplain$v" -v -f collapsed -o "$TMP/pfplain$v.col" -- "$py" "$PF_SCRIPT" 50
		d=$(rc_diag "pfplain$v" 0)
		# The object whose code runs them: the program, or pyenv's libpython.
		grep -qE "^heaptrace: python: Python frames of CPython $v \(($py|.*/libpython$v\.so\.1\.0)\) in the malloc family's stacks" \
			"$TMP/pfplain$v.err" || d+="-v does not say 'python: Python frames of CPython $v ($py or its libpython)'"$'\n'
		pf_lines "$TMP/pfplain$v.col" t_pyknown.py >"$TMP/pfplain$v.lines"
		# bytearray's buffers past 512 bytes are malloc's; its 56-byte objects pymalloc's, not counted here.
		got=$(awk -v l="$blob" '$1 == l { print $2 }' "$TMP/pfplain$v.lines")
		[ "$got" = 5000050 ] || d+="line $blob (blob): ${got:-no} bytes, want 5000050 (50 x 100,001)"$'\n'
		got=$(awk -v l="$worker" '$1 == l { print $2 }' "$TMP/pfplain$v.lines")
		[ "$got" = 1200004 ] || d+="line $worker (worker): ${got:-no} bytes, want 1200004 (4 x 300,001)"$'\n'
		grep -qE "(Thread\.)?run \(threading\.py:[0-9]+\);([^;(]*;)*worker \(t_pyknown.py:$worker\);([^;(]*;)*PyByteArray_Resize;([^;]*;)*[^;]* 1200004$" \
			"$TMP/pfplain$v.col" || d+="no stack Thread.run (threading.py:N);worker (t_pyknown.py:$worker);...;PyByteArray_Resize;... 1200004"$'\n'
		report "pyframes $v: without --preset python, malloc's stacks have Python frames: line $blob holds 5,000,050 bytes, line $worker 1,200,004" "$d"
	done
	# A multiprocessing pool's forked workers (--follow-fork) the same way: their buffers, not pymalloc's objects.
	local at
	cp "$ROOT/tests/targets/t_pyfork.py" "$TMP/t_pyfork.py"
	ht pfplainfork --follow-fork --merge -f collapsed --value alloc_space -o "$TMP/pfplainfork.col" -- \
		/usr/bin/python3.11 "$TMP/t_pyfork.py"
	d=$(rc_diag pfplainfork 0)
	for at in child:2000010 parent:1000010; do
		got=$(pf_lines "$TMP/pfplainfork.col" t_pyfork.py |
			awk -v l="$(grep -n "# @${at%%:*}" "$TMP/t_pyfork.py" | cut -d: -f1)" '$1 == l { print $2 }')
		[ "$got" = "${at#*:}" ] || d+="line @${at%%:*}: ${got:-no} bytes allocated, want ${at#*:}"$'\n'
	done
	report "pyframes 3.11: without --preset python, --follow-fork: the pool's workers' line 2,000,010 bytes, the parent's 1,000,010" "$d"
}
