#!/usr/bin/env bash
# Inside a folder too, the code goes one way (docs/architecture.md): the
# folder's top file calls its helpers, and no helper calls back into it or
# into another file that reaches it.  For each folder of user/, stub/ and
# bpf/, a graph of its files: one file calls another (a global symbol one
# file's object needs and the other's defines, read with nm from build/;
# a function a header of bpf/ defines, named in another file), or includes
# it (a .c and its .h are one node; a header without a .c is a node of
# its own: a header of shared state that includes a file's header makes
# its includers depend on that file).  Any circle fails, named with the
# calls and includes that make it.
source "$(dirname "$0")/lib.sh"
command -v nm >/dev/null || { skip "circles: every folder" "nm is not installed (binutils, a build dependency)"; summary; exit; }

# The comments and strings of a C file blanked, its lines kept in place.
strip_c() {
	awk '{
		out = ""; line = $0
		while (line != "") {
			if (incomment) {
				e = index(line, "*/")
				if (!e) { line = ""; break }
				line = substr(line, e + 2); incomment = 0; continue
			}
			if (match(line, /\/\*|\/\/|"/)) {
				tok = substr(line, RSTART, RLENGTH); out = out substr(line, 1, RSTART - 1)
				line = substr(line, RSTART + RLENGTH)
				if (tok == "//") { line = ""; break }
				if (tok == "/*") { incomment = 1; out = out " "; continue }
				# a string: up to its closing quote, backslashes skipped
				while (line != "" && !match(line, /^([^"\\]|\\.)*"/)) line = ""
				if (line != "") line = substr(line, RLENGTH + 1)
				out = out "\"\""
				continue
			}
			out = out line; line = ""
		}
		print out
	}' "$1"
}

# folder_edges DIR BUILD_DIR: "FROM TO WHY" per dependency between two
# nodes of DIR, a node being NAME for NAME.c/NAME.S with NAME.h, or a
# header without a .c of the same name.
folder_edges() {
	local dir=$1 bdir=$2 f base o
	local -A node=()
	for f in "$dir"/*.c "$dir"/*.S "$dir"/*.h; do
		[ -e "$f" ] || continue
		base=$(basename "$f")
		case $base in
		*.c | *.S) node[$base]=${base%.*} ;;
		*.h) if [ -e "$dir/${base%.h}.c" ] || [ -e "$dir/${base%.h}.S" ]; then node[$base]=${base%.h}; else node[$base]=$base; fi ;;
		esac
	done
	# Includes: "NAME.h" beside the file, or "FOLDER/NAME.h" from the top of user/ (one awk for the folder).
	local files=() nodes=""
	for f in "${!node[@]}"; do
		files+=("$dir/$f")
		nodes+="$f=${node[$f]} "
	done
	awk -v folder="$(basename "$dir")" -v nodes="$nodes" '
		BEGIN { n = split(nodes, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); node[p[1]] = p[2] } }
		FNR == 1 { f = FILENAME; b = f; sub(/.*\//, "", b); from = node[b] }
		/^[ \t]*#[ \t]*include[ \t]*"/ {
			split($0, q, "\""); h = q[2]
			if (h ~ /\//) { if (substr(h, 1, length(folder) + 1) != folder "/") next; h = substr(h, length(folder) + 2) }
			if (h !~ /\// && (h in node) && node[h] != from) print from, node[h], "includes " h " (" f ":" FNR ")"
		}' "${files[@]}"
	# Calls between objects: what one needs (U) and another defines (bpf/ has none per file).
	local objs=()
	: >"$TMP/nm"
	for f in "${!node[@]}"; do
		case $f in *.c | *.S) [ -n "$bdir" ] || continue ;; *) continue ;; esac
		o=$bdir/${f%.*}.o
		if [ -e "$o" ]; then objs+=("$o"); else echo "? ? $o is not built (make)" >>"$TMP/nm"; fi
	done
	[ ${#objs[@]} = 0 ] || nm -A "${objs[@]}" | awk '{ o = $1; sub(/:.*/, "", o); sub(/.*\//, "", o); sub(/\.o$/, "", o) }
		$2 == "U" { print "U", o, $3 } NF == 3 && $2 ~ /^[A-Z]$/ && $2 != "U" && $2 != "W" { print "D", o, $3 }' >>"$TMP/nm"
	# Functions that headers of the folder define (bpf/'s code is in headers), and their callers.
	: >"$TMP/hdefs"
	for f in "${!node[@]}"; do
		case $f in *.h) ;; *) continue ;; esac
		strip_c "$dir/$f" >"$TMP/src.$f"
		# A definition: a "{" alone in the first column, its name before the first "(" of the line that begins it.
		awk -v n="${node[$f]}" -v f="$f" '
			/^[A-Za-z_]/ { start = $0 }
			/^\{/ && start ~ /\(/ { s = substr(start, 1, index(start, "(") - 1); sub(/[ \t]+$/, "", s)
				if (match(s, /[A-Za-z_][A-Za-z0-9_]*$/)) print "D", n, substr(s, RSTART), f }' "$TMP/src.$f"
	done >"$TMP/hdefs"
	cat "$TMP/hdefs" >>"$TMP/nm"
	if [ -s "$TMP/hdefs" ]; then
		for f in "${!node[@]}"; do
			# A use: NAME( of a function the folder defines, in a .c (a header's function
			# is inlined: no symbol in its object) or in a header that holds code (a
			# declaration is no call).
			case $f in
			*.h) grep -q " $f\$" "$TMP/hdefs" || continue ;;
			*.c) strip_c "$dir/$f" >"$TMP/src.$f" ;;
			*) continue ;;
			esac
			awk -v n="${node[$f]}" -v hdr="$([[ $f == *.h ]] && echo 1)" '
				FNR == NR { if ($1 == "D" && (hdr || NF == 4)) def[$3] = 1; next }
				{ line = $0
				  while (match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
					w = substr(line, RSTART, RLENGTH); sub(/[ \t]*\($/, "", w)
					if (w in def) print "U", n, w
					line = substr(line, RSTART + RLENGTH) } }' "$TMP/nm" "$TMP/src.$f"
		done >>"$TMP/nm"
	fi
	grep '^? ' "$TMP/nm" 2>/dev/null
	awk '$1 == "D" { def[$3] = $2 } $1 == "U" { use[++n] = $2 " " $3 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], u, " ")
			if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]], "calls " u[2]
		}
	}' "$TMP/nm" | sort -u
}

# circles EDGES: the circles of a graph of "FROM TO WHY" lines: a line of
# the nodes of each (sorted), then "# FROM -> TO: WHY, WHY" for each edge in it.
circles() {
	awk '{ k = $1 SUBSEP $2; e[k] = 1; v[$1]; v[$2]; w = $0; sub(/^[^ ]+ [^ ]+ /, "", w)
		why[k] = seen[k]++ ? why[k] ", " w : w }
	END {
		for (a in v) for (b in v) r[a, b] = ((a, b) in e)
		for (k in v) for (a in v) if (r[a, k]) for (b in v) if (r[k, b]) r[a, b] = 1
		for (a in v) {
			if (done[a] || !r[a, a]) continue
			n = 0
			for (b in v) if (r[a, b] && r[b, a]) { m[++n] = b; done[b] = 1 }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (m[j] < m[i]) { t = m[i]; m[i] = m[j]; m[j] = t }
			line = ""
			for (i = 1; i <= n; i++) line = line (i > 1 ? " " : "") m[i]
			print line
			for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) if ((m[i], m[j]) in e)
				print "# " m[i] " -> " m[j] ": " why[m[i], m[j]]
		}
	}' "$1"
}

n=0
for dir in user/*/ stub/ bpf/; do
	dir=${dir%/}
	ls "$dir"/*.c "$dir"/*.h >/dev/null 2>&1 || continue
	n=$((n + 1))
	bdir=build/$dir
	[ "$dir" = bpf ] && bdir=""
	folder_edges "$dir" "$bdir" >"$TMP/edges"
	d=$(grep '^? ' "$TMP/edges" | cut -d' ' -f3-)
	grep -v '^? ' "$TMP/edges" >"$TMP/graph"
	circles "$TMP/graph" >"$TMP/circles"
	[ -n "$d" ] && d+=$'\n'
	d+=$(awk '!/^#/ { print "circle: " $0; next } { print }' "$TMP/circles" | sed 's/^# /  /')
	report "circles: the files of $dir/ call and include one way ($(wc -l <"$TMP/graph") edges)" "$d"
done
[ "$n" -ge 10 ] || fail "circles: the folders were found" "$n folders"

# The check finds what it looks for: a made-up folder with a circle of calls through
# objects, one of includes through a header of shared state, and a header's function.
fake=$TMP/fake/user/f
mkdir -p "$fake" "$TMP/fake/build/user/f"
printf 'void b(void);\nvoid a(void) { b(); }\n' >"$fake/top.c"
printf 'void a(void);\nvoid b(void) { a(); }\n' >"$fake/helper.c"
printf '#include "f/state.h"\nint c;\n' >"$fake/other.c"
printf '#pragma once\n#include "f/other.h"\n' >"$fake/state.h"
printf '#pragma once\n#include "f/state.h"\n' >"$fake/other.h"
printf 'static inline int twice(int x)\n{\n\treturn 2 * x; /* once(x) */\n}\n' >"$fake/inl.h"
printf '#include "f/inl.h"\nint once(int x) { return twice(x); }\n' >"$fake/leaf.c"
for f in top helper other leaf; do
	cc -c -I"$TMP/fake/user" -o "$TMP/fake/build/user/f/$f.o" "$fake/$f.c" || fail "circles: cc builds the made-up folder"
done
(cd "$TMP/fake" && folder_edges user/f build/user/f) | grep -v '^? ' >"$TMP/fake.edges"
circles "$TMP/fake.edges" >"$TMP/fake.circles"
report "circles: the check finds two files that call each other (a made-up folder)" \
	"$(grep -qx 'helper top' "$TMP/fake.circles" && grep -q '^# helper -> top: calls a' "$TMP/fake.circles" ||
		cat "$TMP/fake.circles" "$TMP/fake.edges")"
report "circles: the check finds a circle through a header of shared state (a made-up folder)" \
	"$(grep -qx 'other state.h' "$TMP/fake.circles" || cat "$TMP/fake.circles" "$TMP/fake.edges")"
report "circles: a header's function is a call, a comment is not (a made-up folder)" \
	"$(grep -qx 'leaf inl.h calls twice' "$TMP/fake.edges" && ! grep -q 'inl.h leaf' "$TMP/fake.edges" ||
		cat "$TMP/fake.edges")"
summary
