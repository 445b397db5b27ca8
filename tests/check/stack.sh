#!/usr/bin/env bash
# The BPF programs' stack, before any kernel sees them: each program's
# deepest chain of bpf-to-bpf calls (and bpf_loop callbacks), every frame
# rounded up to 32 bytes as 6.1's verifier counts it, fits the 512 bytes
# the verifier allows without a private stack (scripts/bpf_stack.py, which
# names the chain and each frame's bytes); chains over 448, the margin the
# programs aim to keep for what a change adds, are named as a warning.
# The depths it reads from the instructions are checked against clang's
# own frame sizes (the Makefile's build/check/*.stack.o), so that an
# access the reader misses shows here rather than at a load.
source "$(dirname "$0")/lib.sh"

BUDGET=512 AIM=448
names=()
for src in bpf/*.bpf.c; do
	names+=("$(basename "$src" .bpf.c)")
done
names+=(heaptrace_uprobes) # heaptrace.bpf.c again, -DHT_UPROBE_OBJECT (Makefile)
objs=() missing=""
for n in "${names[@]}"; do
	for f in "build/$n.bpf.o" "build/check/$n.stack.o"; do
		[ -f "$f" ] || missing+="$f is not built (make check builds it)"$'\n'
	done
	objs+=("build/$n.bpf.o")
done
# Only the uprobe programs load from the uprobes' object (tracer.c: TRACER_UPROBE_PROGS); its others are never verified.
objs=("${objs[@]/%heaptrace_uprobes.bpf.o/heaptrace_uprobes.bpf.o:alloc_enter,alloc_return,free_enter,reset_enter}")
if [ -n "$missing" ]; then
	fail "stack: the objects are there" "$missing"
	summary
	exit
fi
if ! command -v python3 >/dev/null; then
	skip "stack: every program's deepest call chain fits the verifier's $BUDGET bytes" \
		"python3 is not installed (apt-get install python3, or make deps)"
	summary
	exit
fi

python3 scripts/bpf_stack.py --budget "$BUDGET" --warn "$AIM" --frames "${objs[@]}" >"$TMP/chains" 2>"$TMP/err"
rc=$?
if [ "$rc" -gt 1 ]; then
	fail "stack: scripts/bpf_stack.py reads the objects" "$(cat "$TMP/err")"
else
	report "stack: every program's deepest call chain fits the verifier's $BUDGET bytes" \
		"$(sed -n 's/^bpf_stack: over the [0-9]*-byte stack: //p' "$TMP/err")"
	over=$(sed -n 's/^bpf_stack: warning: over [0-9]* bytes: //p' "$TMP/err")
	[ -n "$over" ] && warn "stack: chains over $AIM bytes (the aim)" "$over"
fi

# Per function, "NAME BYTES" from the instructions and from clang, compared.
: >"$TMP/differ"
for n in "${names[@]}"; do
	awk -v o="build/$n.bpf.o:" '/^[^ ]/ { in_o = $0 == o } in_o && $1 == "frame" { print $2, $3 }' \
		"$TMP/chains" | sort >"$TMP/$n.ours"
	llvm-readelf --stack-sizes "build/check/$n.stack.o" 2>&1 |
		awk 'NF == 2 && $1 ~ /^[0-9]+$/ { print $2, $1 }' | sort >"$TMP/$n.clang"
	[ -s "$TMP/$n.ours" ] || echo "build/$n.bpf.o: no function's depth read" >>"$TMP/differ"
	join -a1 -a2 -e '?' -o 0,1.2,2.2 "$TMP/$n.ours" "$TMP/$n.clang" |
		awk -v o="build/$n.bpf.o" '
			$2 == "?" { print o ": " $1 ": clang has a frame of " $3 " bytes for it, the object no such function"; next }
			$3 == "?" { print o ": " $1 ": in the object, not in clang'"'"'s frame sizes"; next }
			$2 != $3 { print o ": " $1 " reaches " $2 " bytes below r10, clang gave it a frame of " $3 }' \
		>>"$TMP/differ"
done
report "stack: each function's depth read from its instructions is clang's frame size" "$(cat "$TMP/differ")"
summary
