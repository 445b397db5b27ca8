# shellcheck shell=bash
# Area "unwinding" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# stack unwinding: scenarios stacks, unwind (--unwind on -fomit-frame-pointer
# code), dlopen, unwindcache and sigframe (through signal handlers).

# ---------------------------------------------------------------------------
# heaptrace's own frame-pointer walk (--unwind fp: one bulk copy of the
# stack, frames walked in BPF) must give exactly the stacks of the kernel's
# walk (bpf_get_stack).  ASLR is off for both runs (setarch -R) so
# addresses compare directly.  (The CFI walk, which goes further than
# frame pointers can, is checked by scenario_unwind.)
scenario_stacks() {
	local t depth m d
	for t in t_deep t_threads t_entrypoints t_ctor; do
		for depth in 127 64 5; do
			for m in walk kernel; do
				echo "setarch -R heaptrace --unwind fp --stack-capture $m --max-depth $depth -o \$TMP/st.$t.$depth.$m build/tests/$t" \
					>"$TMP/st.$t.$depth.$m.cmd"
				timeout -k 5 "$(tmo)" setarch x86_64 -R "$HT" --unwind fp --stack-capture $m --max-depth $depth \
					-o "$TMP/st.$t.$depth.$m.out" -- "$TB/$t" >/dev/null 2>"$TMP/st.$t.$depth.$m.err" </dev/null
				echo $? >"$TMP/st.$t.$depth.$m.rc"
			done
			d=$(rc_diag "st.$t.$depth.walk" 0)$(rc_diag "st.$t.$depth.kernel" 0)
			local a="$TMP/st.$t.$depth.walk.out" b="$TMP/st.$t.$depth.kernel.out"
			[ "$(grep -c '@ 0x' "$a")" -gt 0 ] || d+="no stacks in the profile"$'\n'
			if ! diff <(sed '/^MAPPED_LIBRARIES/,$d' "$a" | sort) <(sed '/^MAPPED_LIBRARIES/,$d' "$b" | sort) \
				>"$TMP/st.$t.$depth.diff"; then
				d+="profiles differ (walk < > kernel):"$'\n'"$(head -10 "$TMP/st.$t.$depth.diff")"
			fi
			# No stack is deeper than --max-depth.
			local deepest
			deepest=$(awk '/@ 0x/ { n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^0x/) n++; if (n > m) m = n } END { print m + 0 }' "$a")
			[ "$deepest" -le "$depth" ] || d+="a stack of $deepest frames with --max-depth $depth"$'\n'
			report "stacks: $t --max-depth $depth: own walk = kernel walk, frame for frame ($deepest frames deepest)" "$d"
		done
	done
}

# ---------------------------------------------------------------------------
# --unwind fp|dwarf|auto (default auto: CFI from .eh_frame / .debug_frame
# where an object has it, frame pointers elsewhere): stacks through code
# built without frame pointers.  build/tests/nofp/ holds t_entrypoints,
# t_deep and t_threads built -O2 -fomit-frame-pointer, and t_shop (C++,
# through Debian's libstdc++, whose operator new keeps no frame pointer
# either); build/tests/t_shop is t_shop with frame pointers in the program
# only (see the Makefile).  A frame-pointer walk gets the innermost frame
# (the allocator's caller) right and loses or garbles the frames above it:
# the per-function sums pass with it, the whole-stack checks need a CFI
# unwinder.  Whole stacks are checked up to main (stackval: stacks ending
# with "main;..."): what is above main is libc's, and gdb's bt stops there
# too.  The default mode (auto) runs the main checks; unwind_modes and the
# badinput rows need the --unwind option itself.
scenario_unwind() {
	local t d=""
	for t in "$TB/nofp/t_entrypoints" "$TB/nofp/t_deep" "$TB/nofp/t_threads" "$TB/nofp/t_shop" "$TB/t_shop"; do
		[ -x "$t" ] || d+="$(rel "$t") not built (make test-targets)"$'\n'
	done
	command -v gdb >/dev/null || d+="gdb is not installed: the gdb comparisons cannot run"$'\n'
	report "unwind: nofp targets and t_shop built, gdb installed" "$d"
	unwind_c
	unwind_shop
	unwind_modes
	unwind_gdb
}

# The C targets without frame pointers: the exact numbers of
# scenario_entrypoints, scenario_deep and scenario_threads, by innermost
# frame and by whole stack, and line for line the profiles of their
# frame-pointer builds.
unwind_c() {
	local nb=$TB/nofp
	profile4 uw.ep 0 "$nb/t_entrypoints"
	expect_entrypoints4 uw.ep
	expect_entrypoints4 uw.ep main
	absent4 uw.ep ep_realloc_zero ep_free_null ep_free
	leafset4 uw.ep
	# -O2 calls malloc(333) for realloc(NULL, 333): the same events.
	expect_events uw.ep.alloc_objects allocs=27 frees=10 unmatched_frees=0
	profile4 uw.epfp 0 "$TB/t_entrypoints"
	uw_same4 uw.ep uw.epfp "unwind: nofp/t_entrypoints and t_entrypoints (frame pointers): the same profiles, line for line"

	# deep_leaf's malloc(4242) is under 301 recurse frames; the default
	# --max-depth 64 keeps the innermost 64: deep_leaf and 63 recurse.
	ht uw.deep -f collapsed --value alloc_space -- "$nb/t_deep"
	check_rc uw.deep 0 "unwind: nofp/t_deep run exits 0"
	expect_leaf uw.deep deep_leaf 4242
	expect_leaf uw.deep shallow_leaf 1717
	leafset uw.deep deep_leaf shallow_leaf
	uw_expect_stack uw.deep "main;shallow_leaf" 1717
	uw_expect_line uw.deep "$(printf 'recurse;%.0s' {1..63})deep_leaf 4242"
	ht uw.deepfp -f collapsed --value alloc_space -- "$TB/t_deep"
	uw_same uw.deep uw.deepfp "unwind: nofp/t_deep and t_deep (frame pointers): the same profiles, line for line"

	# t_threads: the numbers of scenario_threads; each thr_* under worker
	# (what is above worker is libc's thread start).
	profile4 uw.thr 0 "$nb/t_threads"
	#                                                    alloc   alloc  inuse inuse
	#                                                    objects space  objects space
	expect4 uw.thr thr_churn                             20000 960000   0     0
	expect4 uw.thr thr_rseed                              2000  64000   0     0
	expect4 uw.thr thr_realloc                            2000 192000   0     0
	expect4 uw.thr thr_keep                                200  12800 200 12800
	expect4 uw.thr thr_handoff                             100  20000   0     0
	expect_stack4 uw.thr "worker;thr_churn"              20000 960000   0     0
	expect_stack4 uw.thr "worker;thr_rseed"               2000  64000   0     0
	expect_stack4 uw.thr "worker;thr_realloc"             2000 192000   0     0
	expect_stack4 uw.thr "worker;thr_keep"                 200  12800 200 12800
	expect_stack4 uw.thr "worker;thr_handoff"              100  20000   0     0
	absent_leaf4 uw.thr worker main_free_handoff main
	expect_events uw.thr.alloc_objects allocs=24304 frees=24100
	profile4 uw.thrfp 0 "$TB/t_threads"
	uw_same4 uw.thr uw.thrfp "unwind: nofp/t_threads and t_threads (frame pointers): the same profiles, line for line"
}

# t_shop (see its source), without frame pointers anywhere (nofp/t_shop)
# and with them in the program but not in libstdc++ (t_shop), where a
# frame-pointer walk loses the frame that called operator new.
unwind_shop() {
	profile4 uw.shop 0 "$TB/nofp/t_shop"
	shop_expect4 uw.shop
	profile4 uw.shopfp 0 "$TB/t_shop"
	shop_expect4 uw.shopfp
	uw_same4 uw.shop uw.shopfp "unwind: nofp/t_shop and t_shop (frame pointers): the same profiles, line for line"
}

# shop_expect4 KEY: t_shop's stacks in the four runs of profile4 KEY.
# Frames are named as heaptrace's symbolizer names them: demangled, without
# parameters ("operator new", both for operator new(unsigned long) and for
# the nothrow operator new(unsigned long, std::nothrow_t const&) that calls
# it); operator new[] is a jump to operator new in libstdc++, not a frame.
# libstdc++'s emergency exception pool (a malloc in a libstdc++ constructor,
# before main; 72704 bytes on Debian 12) is not under main and not checked.
shop_expect4() {
	local key=$1 vec="std::vector<long, std::allocator<long> >"
	#                                                                            alloc   alloc  inuse   inuse
	#                                                                            objects space  objects space
	expect_stack4 "$key" "main;shop::Widget::make;operator new"                   1000  88000   750  66000  # new Widget (88 bytes); 250 deleted
	expect_stack4 "$key" "main;shop::make_label;operator new"                       20  60000    12  36000  # new char[3000]; 8 deleted
	expect_stack4 "$key" "main;shop::Order::place;operator new;operator new"       100   5600   100   5600  # new (std::nothrow) Order (56 bytes)
	expect_stack4 "$key" "main;operator new"                                         1     24     1     24  # new Ledger (24 bytes)
	# push_back of 1000 longs: buffers of 8 x 1, 2, 4, ... 1024 bytes, the
	# last kept.  The frames between the out-of-line _M_realloc_insert (g++
	# 12; _M_realloc_append in g++ 14) and operator new are inlined allocator
	# calls, one frame each (compared exactly with gdb in unwind_gdb).
	uw_expect_re4 "$key" "(^|;)main;shop::Ledger::fill;$vec::push_back;$vec::_M_realloc_[a-z]+<[^;]*>;([^;]+;)*operator new\$" \
		11 16376 1 8192
	# All of the program's blocks, innermost frame operator new: the five
	# stacks above hold them all (1000 + 20 + 100 + 1 + 11 objects; 88000 +
	# 60000 + 5600 + 24 + 16376 bytes; in use 750 + 12 + 100 + 1 + 1,
	# 66000 + 36000 + 5600 + 24 + 8192).
	expect4 "$key" "operator new"                                                 1132 170000   864 115816
}

# --unwind itself: dwarf is auto's result here, fp is today's walk.
unwind_modes() {
	local nb=$TB/nofp
	profile4x uw.shopdw 0 --unwind dwarf -- "$nb/t_shop"
	shop_expect4 uw.shopdw
	ht uw.shopauto --unwind auto -f collapsed --value alloc_space -- "$nb/t_shop"
	check_rc uw.shopauto 0 "unwind: --unwind auto run on nofp/t_shop exits 0"
	uw_same uw.shopauto uw.shop.alloc_space "unwind: --unwind auto = the default (nofp/t_shop), line for line"
	ht uw.epdw --unwind dwarf -f collapsed --value alloc_space -- "$nb/t_entrypoints"
	check_rc uw.epdw 0 "unwind: --unwind dwarf run on nofp/t_entrypoints exits 0"
	uw_same uw.epdw uw.ep.alloc_space "unwind: --unwind dwarf = the default (nofp/t_entrypoints), line for line"

	# fp keeps the frame-pointer walk: complete stacks where every frame
	# has a frame pointer (t_entrypoints, -O0 -fno-omit-frame-pointer)...
	profile4x uw.epfpw 0 --unwind fp -- "$TB/t_entrypoints"
	expect_entrypoints4 uw.epfpw main
	# ...and, EXPECTED DIFFERENCE (documents what the mode changes), not
	# through code without them: on nofp/t_shop the innermost frame is
	# still right, the frames above operator new are not.
	ht uw.shopfpw --unwind fp -f collapsed --value alloc_space -- "$nb/t_shop"
	check_rc uw.shopfpw 0 "unwind: --unwind fp run on nofp/t_shop exits 0"
	expect_leaf uw.shopfpw "operator new" 170000
	uw_expect_stack uw.shopfpw "main;shop::Widget::make;operator new" 0 \
		"unwind: EXPECTED DIFFERENCE: --unwind fp on nofp/t_shop cannot give main;shop::Widget::make;operator new (= 0)"
}

# gdb's backtrace at one known allocation (a breakpoint on malloc when its
# size argument is SIZE), from malloc's caller up to main, against
# heaptrace's stack of the one line whose alloc_space value is that site's
# total: the site is found by its bytes, not by its frames.
unwind_gdb() {
	local nb=$TB/nofp
	uw_gdb_vs uw.gdb.widget "$nb/t_shop" 88 uw.shop.alloc_space 88000
	uw_gdb_vs uw.gdb.label "$nb/t_shop" 3000 uw.shop.alloc_space 60000
	uw_gdb_vs uw.gdb.order "$nb/t_shop" 56 uw.shop.alloc_space 5600
	uw_gdb_vs uw.gdb.vector "$nb/t_shop" 64 uw.shop.alloc_space 16376
	uw_gdb_vs uw.gdb.widgetfp "$TB/t_shop" 88 uw.shopfp.alloc_space 88000
	uw_gdb_vs uw.gdb.ep "$nb/t_entrypoints" 1000 uw.ep.alloc_space 4000
	uw_gdb_vs uw.gdb.deep "$nb/t_deep" 4242 uw.deep 4242
}

# uw_gdb KEY BINARY SIZE [GDB-COMMAND...]: BINARY under gdb -batch (the
# GDB-COMMANDs first: "set args ...", "handle ..."): run to main, break at
# malloc's entry when $rdi (the size) is SIZE, bt.  Output in KEY.out and
# KEY.err; the function names of the backtrace, frame 1 (malloc's caller)
# to main, innermost first, one a line, in KEY.frames; frame 0's in
# KEY.frame0.  gdb prints "#N  0xADDR in FUNC (ARGS) at FILE:LINE", or for
# an inlined frame or one at a line's start "#N  FUNC (ARGS) ...", and for
# code without debug information "FUNC(PARAMETER TYPES) () from LIB":
# ARGS and PARAMETER TYPES go.
uw_gdb() {
	local key=$1 bin=$2 size=$3 c pre=()
	for c in "${@:4}"; do pre+=(-ex "$c"); done
	echo "gdb -batch $(rel "$bin"): ${*:4}${4:+, }break main, run, break *malloc if \$rdi == $size, continue, bt" >"$TMP/$key.cmd"
	: >"$TMP/$key.frames"
	: >"$TMP/$key.frame0"
	if ! command -v gdb >/dev/null; then
		: >"$TMP/$key.out"
		echo "gdb not installed" >"$TMP/$key.err"
		echo 127 >"$TMP/$key.rc"
		return
	fi
	timeout -k 5 "$(tmo)" gdb -nx -batch \
		-ex 'set debuginfod enabled off' -ex 'set pagination off' -ex 'set confirm off' \
		-ex 'set width unlimited' -ex 'set startup-with-shell off' -ex 'set print frame-arguments none' \
		"${pre[@]}" -ex 'break main' -ex run -ex "break *malloc if \$rdi == $size" -ex continue -ex bt -ex kill \
		"$bin" >"$TMP/$key.out" 2>"$TMP/$key.err" </dev/null
	echo $? >"$TMP/$key.rc"
	awk -v f0="$TMP/$key.frame0" '
	/^#[0-9]+ / {
		n = substr($1, 2) + 0
		s = $0
		sub(/^#[0-9]+ +/, "", s)
		sub(/^0x[0-9a-fA-F]+ in /, "", s)
		# The name ends at " (" (its arguments); from the second character
		# on, for "(anonymous namespace)::f".
		i = index(substr(s, 2), " (")
		if (i) s = substr(s, 1, i)
		# "operator new(unsigned long)": drop a trailing parameter list.
		if (s ~ /\)$/ && s !~ /operator\(\)$/) {
			d = 0
			for (j = length(s); j > 0; j--) {
				c = substr(s, j, 1)
				if (c == ")") d++
				else if (c == "(" && --d == 0) break
			}
			if (j > 1) s = substr(s, 1, j - 1)
		}
		if (n == 0) { print s > f0; next }
		print s
		if (s == "main") exit
	}' "$TMP/$key.out" >"$TMP/$key.frames"
}

# uw_gdb_vs KEY BINARY SIZE HTKEY VALUE [GDB-COMMAND...]: uw_gdb KEY
# BINARY SIZE [GDB-COMMAND...], and the frames must be those of the line of
# $TMP/HTKEY.out with value VALUE (the only one), innermost first up to
# main.  gdb frames past heaptrace's default --max-depth (64) are not
# compared.
uw_gdb_vs() {
	local key=$1 bin=$2 size=$3 hkey=$4 value=$5 d n g h
	uw_gdb "$key" "$bin" "$size" "${@:6}"
	d=$(rc_diag "$key" 0)
	grep -q 'malloc' "$TMP/$key.frame0" ||
		d+="gdb did not stop in malloc(${size}): frame 0 '$(cat "$TMP/$key.frame0")'"$'\n'"$(grep -v '^$' "$TMP/$key.out" | tail -4)"$'\n'
	g=$(head -64 "$TMP/$key.frames")
	[ -n "$g" ] || d+="no frames from gdb's bt"$'\n'
	n=$(awk -v v="$value" 'match($0, / [0-9]+$/) && substr($0, RSTART + 1) == v' "$TMP/$hkey.out" 2>/dev/null | wc -l)
	if [ "$n" != 1 ]; then
		d+="$n lines with value $value in $hkey, want 1:"$'\n'"$(sed -n '1,8p' "$TMP/$hkey.out" 2>/dev/null)"
	else
		h=$(awk -v v="$value" 'match($0, / [0-9]+$/) && substr($0, RSTART + 1) == v {
			n = split(substr($0, 1, RSTART - 1), f, ";")
			for (i = n; i >= 1; i--) { print f[i]; if (f[i] == "main") break }
		}' "$TMP/$hkey.out")
		[ "$h" = "$g" ] || d+="gdb:       $(echo "$g" | paste -sd'|')"$'\n'"heaptrace: $(echo "$h" | paste -sd'|')"$'\n'
	fi
	report "unwind: gdb bt at malloc($size) in $(rel "$bin")${6:+ (${*:6})} = heaptrace's stack of its $value-byte line, caller to main" "$d"
}

# uw_expect_stack KEY FRAMES N [NAME]: the lines of $TMP/KEY.out whose
# stack ends with FRAMES (stackval) add up to N, in a non-empty profile.
uw_expect_stack() {
	local g d=""
	g=$(stackval "$1" "$2")
	[ -s "$TMP/$1.out" ] || d+="empty profile"$'\n'"$(ctx "$1")"$'\n'
	[ "$g" = "$3" ] || d+="got $g"$'\n'"$(sed -n '1,8p' "$TMP/$1.out")"
	report "${4:-$1: stacks ending $2 = $3}" "$d"
}

# uw_expect_line KEY LINE: LINE is a whole line of $TMP/KEY.out.
uw_expect_line() {
	local d=""
	grep -qxF -- "$2" "$TMP/$1.out" 2>/dev/null ||
		d="no such line; lines:"$'\n'"$(cut -c1-200 "$TMP/$1.out" 2>/dev/null | sed -n '1,8p')"
	report "$1: the line '$(echo "$2" | cut -c1-40)...$(echo "$2" | rev | cut -c1-40 | rev)' ($(echo "$2" | tr -cd ';' | wc -c) + 1 frames)" "$d"
}

# uw_expect_re4 KEY ERE AO AS IO IS: the lines whose stack (the line without
# its value) matches ERE add up to AO, AS, IO, IS in the four runs of profile4.
uw_expect_re4() {
	expect4_with "$1" "stacks matching /$2/" uw_re_sum "$2" "${@:3}"
}

# uw_re_sum KEY RE: the values of $TMP/KEY.out's lines whose stack matches RE, added up.
uw_re_sum() {
	awk -v re="$2" 'match($0, / [0-9]+$/) {
		if (substr($0, 1, RSTART - 1) ~ re) s += substr($0, RSTART + 1)
	} END { printf "%.0f\n", s }' "$TMP/$1.out" 2>/dev/null
}

# uw_same KEY1 KEY2 NAME: $TMP/KEY1.out and $TMP/KEY2.out hold the same
# lines (in any order), and are not empty.
uw_same_diag() {
	[ -s "$TMP/$1.out" ] || echo "$1: empty profile"
	if ! diff <(sort "$TMP/$1.out" 2>/dev/null) <(sort "$TMP/$2.out" 2>/dev/null) >"$TMP/$1.same.diff"; then
		echo "profiles differ (< $1, > $2):"
		cut -c1-160 "$TMP/$1.same.diff" | head -12
	fi
	return 0
}

uw_same() { report "$3" "$(uw_same_diag "$1" "$2")"; }

# uw_same4 KEY1 KEY2 NAME: uw_same for the four runs of profile4.
uw_same4() {
	local v d=""
	for v in $VALUES; do
		d+=$(uw_same_diag "$1.$v" "$2.$v" | sed "s/^/$v: /")
	done
	report "$3" "$d"
}

# ---------------------------------------------------------------------------
# dlopen(): a library mapped after the start gets its unwind table at the
# next memory-map refresh (user/unwind.c, unwind_maps_changed), and until
# then its frames unwind by frame pointer (counted: unwind_fp_frames).
# nofp/t_dlopen dlopen()s nofp/libt_plugin.so (sources: tests/targets/),
# both -O2 -fomit-frame-pointer:
#   plugin_early   3 x 333 =  999 bytes, right after dlopen(): no table yet
#   plugin_entry -> plugin_mid -> plugin_alloc
#                  5 x 777 = 3885 bytes, once heaptrace -v has printed
#                  "unwind tables for N objects mapped since the start"
# The target waits on a FIFO in between; the harness releases it after that
# line (or, with --unwind fp, which builds no tables, at once).  dlopen()'s
# own allocations (in ld.so, under main) are not checked.  Whole stacks are
# matched from main (what is above it is libc's), as in scenario_unwind.
DL_STACK="main;plugin_entry;plugin_mid;plugin_alloc"
DL_TABLES='^heaptrace: unwind tables for ([0-9]+) objects mapped since the start'

scenario_dlopen() {
	local t=$TB/nofp/t_dlopen lib=$TB/nofp/libt_plugin.so d="" n fp
	if [ ! -x "$t" ] || [ ! -f "$lib" ]; then
		fail "dlopen: nofp/t_dlopen and nofp/libt_plugin.so built" "not built (make test-targets)"
		return
	fi

	# The default unwinder (auto): CFI, the plugin's table once loaded.
	dl_run dl tables
	d=$(rc_diag dl 0)
	grep -q '^done$' "$TMP/dl.tout" || d+="the target did not finish: $(cat "$TMP/dl.tout")"$'\n'
	report "dlopen: heaptrace -v over nofp/t_dlopen exits 0, the target ran to its end" "$d"
	# The line came while the target was held after dlopen(), and names at
	# least the plugin.
	d=""
	[ "$DL_WAITED" = 1 ] || d+="no such line while the target waited (15 s)"$'\n'
	n=$(sed -nE "s/$DL_TABLES.*/\\1/p" "$TMP/dl.err" | head -1)
	[ "${n:-0}" -ge 1 ] || d+="objects: '${n}', want >= 1"$'\n'$(grep '^heaptrace: unwind' "$TMP/dl.err")$'\n'
	report "dlopen: -v prints 'unwind tables for N objects mapped since the start' (N = ${n:-none} >= 1) after dlopen()" "$d"
	# Complete: every byte plugin_alloc allocated is under the whole stack
	# from main, and no line of it is marked [truncated].
	uw_expect_stack dl "$DL_STACK" 3885 "dlopen: stacks ending $DL_STACK = 3885 (5 x 777, the plugin's table loaded)"
	expect_leaf dl plugin_alloc 3885
	# A walk that fails is [truncated] (stacks_truncated): only
	# plugin_early's stack, unwound before the table, may be.
	d=$(awk 'match($0, / [0-9]+$/) && /^\[truncated\];/ {
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] != "plugin_early") print
	}' "$TMP/dl.out" 2>/dev/null | cut -c1-200)
	[ -s "$TMP/dl.out" ] || d+="empty profile"
	report "dlopen: no stack is [truncated] (stacks_truncated) but plugin_early's, none of plugin_alloc's" "$d"
	# Before the table: frame 0 (the return address in plugin_early) is
	# exact, the frames above it came by frame pointer, and say so.
	expect_leaf dl plugin_early 999
	fp=$(grep -m1 '^heaptrace: events:' "$TMP/dl.err" | tr ' ' '\n' | sed -n 's/^unwind_fp_frames=//p')
	d=""
	# With the event ring, the stub hands a walk through a module it has no
	# table for to the record site, which runs once the ring before it is
	# drained: by then heaptrace may have the plugin's table, and the walk
	# is whole (main;plugin_early) instead of by frame pointer.  One of the two.
	[[ $fp =~ ^[0-9]+$ ]] && { [ "$fp" -gt 0 ] ||
		{ grep -q 'events batched' "$TMP/dl.err" && grep -qE '(^|;)main;plugin_early 999$' "$TMP/dl.out"; }; } ||
		d="unwind_fp_frames=${fp:-<missing>}: $(grep -m1 '^heaptrace: events:' "$TMP/dl.err")"
	report "dlopen: events line: unwind_fp_frames=${fp:-none} > 0 (plugin_early's frames, before the table), or batched: its whole stack" "$d"

	# --unwind fp: EXPECTED DIFFERENCE (documents what the tables change):
	# the innermost frame is still right, the frames above it are not (rbp
	# holds none of the plugin's frames).
	dl_run dlfp fp --unwind fp
	d=$(rc_diag dlfp 0)
	grep -q '^done$' "$TMP/dlfp.tout" || d+="the target did not finish: $(cat "$TMP/dlfp.tout")"$'\n'
	grep -qE "$DL_TABLES" "$TMP/dlfp.err" && d+="an 'unwind tables' line with --unwind fp"$'\n'
	report "dlopen: heaptrace --unwind fp over nofp/t_dlopen exits 0, no unwind tables" "$d"
	expect_leaf dlfp plugin_alloc 3885
	uw_expect_stack dlfp "$DL_STACK" 0 \
		"dlopen: EXPECTED DIFFERENCE: --unwind fp cannot give $DL_STACK (= 0)"

	dlopen_again
	dlopen_samepc
}

# Libraries that replace each other at the same addresses (t_dlopen LIB
# FIFO OTHER): libt_plugin.so (its stack as above), dlclose(), then
# libt_plugin_b.so where it was (its own table: a second "unwind tables"
# line; its 4 x 555 bytes are not checked: at the end, its addresses are
# libt_plugin.so's again, and so are the names), dlclose(), then
# libt_plugin.so again, where libt_plugin_b.so was ("reopened here"), known
# to heaptrace: no new table.  The BPF side caches code mappings per
# process by address; the harness gives heaptrace 3 s (maps are re-read
# every second) before the last plugin_entry, whose stack must be the one
# of the first: 2 x 3885 bytes under the same frames.
dlopen_again() {
	local key=dlre b=$TB/nofp/libt_plugin_b.so hp d=""
	if [ ! -f "$b" ]; then
		fail "dlopen: nofp/libt_plugin_b.so built" "not built (make test-targets)"
		return
	fi
	mkfifo "$TMP/$key.fifo"
	ht_bg "$key" -v -f collapsed --value alloc_space -o "$TMP/$key.out" -- \
		"$TB/nofp/t_dlopen" "$TB/nofp/libt_plugin.so" "$TMP/$key.fifo" "$b"
	hp=$HPID
	dl_swap "$key" "$hp" libt_plugin.so libt_plugin_b.so
	report "dlopen: libt_plugin.so, libt_plugin_b.so in its place, libt_plugin.so again in the other's place: exits 0" "$d"
	uw_expect_stack "$key" "$DL_STACK" 7770 \
		"dlopen: libt_plugin.so dlopen()ed again where libt_plugin_b.so was: stacks ending $DL_STACK = 7770 (twice 5 x 777)"
	d=$(awk 'match($0, / [0-9]+$/) && /^\[truncated\];/ {
		n = split(substr($0, 1, RSTART - 1), f, ";")
		if (f[n] != "plugin_early") print
	}' "$TMP/$key.out" 2>/dev/null | cut -c1-200)
	[ -s "$TMP/$key.out" ] || d+="empty profile"
	report "dlopen: libt_plugin.so again: no stack is [truncated] but plugin_early's" "$d"
}

# dl_swap KEY HP A B [here]: KEY's t_dlopen (heaptrace HP) through its steps
# (dl_steps), then to its end; what went wrong is added to d.
dl_swap() {
	local key=$1 hp=$2
	dl_steps "$@"
	kill -0 "$hp" 2>/dev/null && release "$key"
	ht_bg_wait "$key" "$hp" 30
	d+=$(rc_diag "$key" 0)
	grep -q '^done$' "$TMP/$key.tout" || d+="the target did not finish: $(cat "$TMP/$key.tout")"$'\n'
}

# dl_steps KEY HP A B [here]: A opened and its table made, B opened in its
# place (here: B must come where A was) and its table made, A opened again
# where B was, then 3 s.
dl_steps() {
	local key=$1 hp=$2 a=$3 b=$4 here=${5:-} i=150
	if ! wait_for "$TMP/$key.tout" '^opened$' 30 "$hp" || ! wait_for "$TMP/$key.err" "$DL_TABLES" 15 "$hp"; then
		d+="no table for $a"$'\n'
		return
	fi
	if ! release "$key" || ! wait_for "$TMP/$key.tout" '^other ' 15 "$hp"; then
		d+="the target did not open $b"$'\n'
		return
	fi
	[ -z "$here" ] || grep -q '^other here$' "$TMP/$key.tout" ||
		d+="$b did not come where $a was: the check cannot run"$'\n'
	while [ "$(grep -cE "$DL_TABLES" "$TMP/$key.err")" -lt 2 ] && [ $i -gt 0 ] && kill -0 "$hp" 2>/dev/null; do
		sleep 0.1
		i=$((i - 1))
	done
	[ "$(grep -cE "$DL_TABLES" "$TMP/$key.err")" -ge 2 ] || d+="no table for $b"$'\n'
	if ! release "$key" || ! wait_for "$TMP/$key.tout" '^reopened ' 15 "$hp"; then
		d+="the target did not open $a again"$'\n'
		return
	fi
	grep -q '^reopened here$' "$TMP/$key.tout" || d+="$a did not come back where $b was: the check cannot run"$'\n'
	sleep 3
}

# The stub's cache of CFI rows by pc (stub/unwind.c) across a library
# replaced by another at the same addresses, with the same code and other
# CFI (nofp/libt_cfi_a.so, then nofp/libt_cfi_b.so: tests/targets/libt_cfi.S):
# a's plugin_entry warms the cache with its return addresses (5 walks of
# the same stack); b's, once heaptrace has b's table (the index's gen has
# moved), must be walked by b's rows: its 4 x 555 bytes under the whole
# stack, not cut at plugin_mid (where a's row finds b's 0 for a return
# address).  Then a again where b was, 3 s later (as dlopen_again): 5 x
# 777.  The names at the end are a's (the same offsets): 3885 + 2220 + 3885
# = 9990 bytes under main;plugin_entry;plugin_mid;plugin_alloc.  Default
# (batched) and with a record site a call (HEAPTRACE_BATCH=0).
dlopen_samepc() {
	local a=$TB/nofp/libt_cfi_a.so b=$TB/nofp/libt_cfi_b.so key hp d batch
	if [ ! -f "$a" ] || [ ! -f "$b" ]; then
		fail "dlopen: nofp/libt_cfi_a.so and nofp/libt_cfi_b.so built" "not built (make test-targets)"
		return
	fi
	for batch in 1 0; do
		key=dlpc$batch d=""
		mkfifo "$TMP/$key.fifo"
		HEAPTRACE_BATCH=$batch ht_bg "$key" -v -f collapsed --value alloc_space -o "$TMP/$key.out" -- \
			"$TB/nofp/t_dlopen" "$a" "$TMP/$key.fifo" "$b"
		hp=$HPID
		dl_swap "$key" "$hp" libt_cfi_a.so libt_cfi_b.so here
		report "dlopen: libt_cfi_a.so, libt_cfi_b.so in its place (same code, other CFI), a again (HEAPTRACE_BATCH=$batch): exits 0" "$d"
		uw_expect_stack "$key" "$DL_STACK" 9990 \
			"dlopen: same pcs, other CFI (HEAPTRACE_BATCH=$batch): stacks ending $DL_STACK = 9990 (5 x 777, 4 x 555, 5 x 777)"
		expect_leaf "$key" plugin_alloc 9990
	done
}

# dl_run KEY tables|fp [HEAPTRACE-OPTION...]: heaptrace -v OPTIONS -f
# collapsed --value alloc_space over nofp/t_dlopen (profile in KEY.out, the
# target's output in KEY.tout); once the target has printed "opened", with
# "tables" wait for the -v line of the plugin's table (DL_WAITED=1 if it
# came), then release the target and wait for the end.
dl_run() {
	local key=$1 mode=$2 hp
	shift 2
	DL_WAITED=0
	mkfifo "$TMP/$key.fifo"
	ht_bg "$key" -v "$@" -f collapsed --value alloc_space -o "$TMP/$key.out" -- \
		"$TB/nofp/t_dlopen" "$TB/nofp/libt_plugin.so" "$TMP/$key.fifo"
	hp=$HPID
	if wait_for "$TMP/$key.tout" '^opened$' 30 "$hp"; then
		if [ "$mode" = tables ] && wait_for "$TMP/$key.err" "$DL_TABLES" 15 "$hp"; then
			DL_WAITED=1
		fi
		release "$key"
	fi
	ht_bg_wait "$key" "$hp" 30
}

# ---------------------------------------------------------------------------
# The unwind cache keys its files by build ID, and is shared by every trace
# of one user (root's by all of root's).  Anyone can make a copy of an
# object with its build ID kept and its CFI changed, and have root trace it
# (LD_LIBRARY_PATH, a program of theirs): its rows must not be what later
# traces of the genuine object get.  Here the copy is nofp/t_entrypoints
# with every DW_CFA_def_cfa_offset 16 of its .eh_frame made 24 (the same
# size, the same build ID): its own stacks come out truncated, and the
# genuine program traced next, with the same cache, must get its own
# stacks, line for line those of a run with an empty cache.
scenario_unwindcache() {
	local g=$TB/nofp/t_entrypoints c=$TMP/uwc/t_entrypoints d="" off size n
	mkdir -p "$TMP/uwc"
	cp "$g" "$c" 2>/dev/null || d+="cannot copy $(rel "$g")"$'\n'
	read -r off size < <(readelf -SW "$c" 2>/dev/null | awk '$2 == ".eh_frame" { print $5, $6 }')
	[ -n "${size:-}" ] || d+="no .eh_frame in $(rel "$c")"$'\n'
	if [ -z "$d" ]; then
		# shellcheck disable=SC2016
		n=$(perl -e 'my ($f, $o, $n) = @ARGV; open(my $h, "+<:raw", $f) or die;
			seek($h, $o, 0); read($h, my $b, $n) == $n or die;
			my $c = ($b =~ s/\x0e\x10/\x0e\x18/g); seek($h, $o, 0); print $h $b; close($h) or die;
			print "$c\n"' "$c" $((16#$off)) $((16#$size)))
		[ "${n:-0}" -gt 0 ] || d+="no DW_CFA_def_cfa_offset 16 patched"$'\n'
		[ "$(readelf -n "$c" | grep 'Build ID')" = "$(readelf -n "$g" | grep 'Build ID')" ] ||
			d+="the copy's build ID differs"$'\n'
		cmp -s "$g" "$c" && d+="the copy is the same file"$'\n'
	fi
	report "unwindcache: a copy of nofp/t_entrypoints, same build ID, ${n:-0} CFA offsets of its .eh_frame changed" "$d"

	XDG_CACHE_HOME=$TMP/uwc/cache ht uwc.copy -v -f collapsed --value alloc_space -- "$c"
	check_rc uwc.copy 0 "unwindcache: the copy is traced (its table goes to the cache)"
	# Its wrong CFI truncates every stack: the walk from each ep_* function
	# reads its return address at the wrong place.  (If the copy's rows
	# were right this test could not tell anything.)  The 20 allocations
	# of the ep_* functions main calls through a helper are cut there; the
	# 7 of those main calls itself read main's return address 8 bytes off,
	# whatever lies there: a zero ends the walk (this host), an address in
	# no object truncates it (Debian's 6.12 under QEMU), so 20 to 27.
	expect_events uwc.copy allocs=27
	n=$(grep -m1 '^heaptrace: events:' "$TMP/uwc.copy.err" | grep -o ' stacks_truncated=[0-9]*' | cut -d= -f2)
	report "uwc.copy: 20 to 27 stacks truncated, every one not through main" \
		"$([ "${n:-0}" -ge 20 ] && [ "${n:-0}" -le 27 ] || echo "stacks_truncated=${n:-<missing>}")$(
		grep -v '^\[truncated\];' "$TMP/uwc.copy.out" | grep -v '^\(\[truncated\];\)\{0,1\}main;ep_' | sed 's/^/not truncated: /')"

	XDG_CACHE_HOME=$TMP/uwc/cache ht uwc.genuine -v -f collapsed --value alloc_space -- "$g"
	check_rc uwc.genuine 0 "unwindcache: the genuine program is traced after it, with the same cache"
	expect_events uwc.genuine allocs=27 stacks_truncated=0
	report "unwindcache: -v says the cached table was built from other bytes" \
		"$(grep -q 'built from other bytes' "$TMP/uwc.genuine.err" || ctx uwc.genuine)"
	XDG_CACHE_HOME=$TMP/uwc/empty ht uwc.clean -f collapsed --value alloc_space -- "$g"
	uw_same uwc.genuine uwc.clean "unwindcache: the genuine program's stacks are those of a run with an empty cache"
	# And the stacks are whole: ep_malloc's 4 x 1000 bytes under main and
	# main's caller (libc's start), not cut at main.
	expect_leaf uwc.genuine ep_malloc 4000
	report "unwindcache: ep_malloc's stack goes on above main" \
		"$(grep -qE ';main;ep_malloc 4000$' "$TMP/uwc.genuine.out" || echo "no ...;main;ep_malloc 4000 line:"$'\n'"$(grep ep_malloc "$TMP/uwc.genuine.out")")"
}

# ---------------------------------------------------------------------------
# Signal frames (docs/unwinding.md#signal-frames): t_sighandler's handler
# allocates 20 x 4321 bytes through handler_alloc while interrupting
# busy_loop, called from main (see its source).  Every one of those bytes
# must be under the whole stack main;busy_loop;<signal handler called>;
# sig_handler;handler_alloc, as gdb's bt shows it: the CFI walk (default)
# through code with and without frame pointers, the frame-pointer walk
# (--unwind fp) where there are frame pointers, on the thread's stack and
# on an alternate signal stack (argument altstack), and no stack marked
# truncated; a signal frame that cannot be gone past ends the walk marked
# [truncated] (stacks_truncated).  Before the walks knew signal frames,
# stacks ended at [libc.so.6+0x3c050] (__restore_rt), or skipped busy_loop.
SIG_STACK="main;busy_loop;<signal handler called>;sig_handler;handler_alloc"

scenario_sigframe() {
	local bin how arg key d
	for bin in "$TB/t_sighandler" "$TB/nofp/t_sighandler"; do
		[ -x "$bin" ] || { fail "sigframe: $(rel "$bin") built" "not built (make test-targets)"; return; }
	done
	for bin in t_sighandler nofp/t_sighandler; do
		for how in auto fp; do
			# Without frame pointers only CFI gets past the handler's frame.
			[ "$bin" = nofp/t_sighandler ] && [ $how = fp ] && continue
			for arg in "" altstack; do
				key=sig.${bin//\//_}.$how${arg:+.$arg}
				ht "$key" -v --unwind $how -f collapsed --value alloc_space -- "$TB/$bin" $arg
				check_rc "$key" 0 "sigframe: --unwind $how $bin${arg:+ $arg} exits 0"
				uw_expect_stack "$key" "$SIG_STACK" 86420 \
					"sigframe: --unwind $how $bin${arg:+ $arg}: stacks ending $SIG_STACK = 86420 (20 x 4321)"
				expect_leaf "$key" handler_alloc 86420
				uw_expect_stack "$key" "main;main_alloc" 999 \
					"sigframe: --unwind $how $bin${arg:+ $arg}: stacks ending main;main_alloc = 999"
				expect_events "$key" allocs=21 stacks_truncated=0
				d=$(grep -F '[truncated]' "$TMP/$key.out" 2>/dev/null)
				report "sigframe: --unwind $how $bin${arg:+ $arg}: no [truncated] stack" "$d"
			done
		done
	done
	# The uprobe session program is another BPF object
	# (bpf/alloc_session.bpf.c) with its own copy of the walks, reading the
	# restorers the main object's signal_deliver notes (a map shared by fd):
	# --sample-rate 1 records every allocation, at its exact size.
	key=sig.session
	ht "$key" -v --no-inject --sample-rate 1 --unwind fp -f collapsed --value alloc_space -- "$TB/t_sighandler"
	check_rc "$key" 0 "sigframe: uprobe sessions (--no-inject --sample-rate 1 --unwind fp) exit 0"
	# Uprobe sessions from Linux 6.13: before, the plain return probes walk the same frames.
	if printf '6.13\n%s\n' "$(uname -r | sed 's/[^0-9.].*//')" | sort -V -C; then
		report "sigframe: uprobe sessions: the session program is what was attached" \
			"$(grep -q 'loaded the uprobe session program' "$TMP/$key.err" || ctx "$key")"
	else
		report "sigframe: no uprobe sessions before Linux 6.13: -v does not claim them" \
			"$(! grep -q 'allocators as uprobe sessions' "$TMP/$key.err" || ctx "$key")"
	fi
	uw_expect_stack "$key" "$SIG_STACK" 86420 \
		"sigframe: uprobe sessions: stacks ending $SIG_STACK = 86420 (20 x 4321)"
	expect_events "$key" allocs=21 stacks_truncated=0
	# A signal frame whose saved rip is 0 (argument lostframe: the handler
	# zeroes it around 2 of its mallocs): the walk ends there, marked.
	for bin in t_sighandler nofp/t_sighandler; do
		how=auto
		[ $bin = t_sighandler ] && how=fp
		key=sig.lost.${bin//\//_}
		ht "$key" -v --unwind $how -f collapsed --value alloc_space -- "$TB/$bin" lostframe
		check_rc "$key" 0 "sigframe: --unwind $how $bin lostframe exits 0"
		uw_expect_line "$key" "[truncated];<signal handler called>;sig_handler;handler_lost 2468"
		uw_expect_stack "$key" "$SIG_STACK" 77778 \
			"sigframe: --unwind $how $bin lostframe: stacks ending $SIG_STACK = 77778 (18 x 4321)"
		expect_events "$key" allocs=21 stacks_truncated=2
	done
	uw_gdb_vs sig.gdb "$TB/nofp/t_sighandler" 4321 sig.nofp_t_sighandler.auto 86420 \
		'handle SIGALRM nostop noprint pass'
	uw_gdb_vs sig.gdb.alt "$TB/nofp/t_sighandler" 4321 sig.nofp_t_sighandler.auto.altstack 86420 \
		'handle SIGALRM nostop noprint pass' 'set args altstack'
	uw_gdb_vs sig.gdb.fp "$TB/t_sighandler" 4321 sig.t_sighandler.fp 86420 \
		'handle SIGALRM nostop noprint pass'
}
