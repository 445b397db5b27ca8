#!/usr/bin/env bash
# The include graph of user/ goes one way (docs/architecture.md): no two
# folders include each other, and no longer circle of folders either; no
# circle of headers; and no circle of modules (a folder's NAME.c with its
# NAME.h) that a header takes part in: exec.h including session.h while
# session.c includes exec.h is one.  Two .c files that call each other
# through one-way headers are not, nor a folder's private header with no
# .c of its own (tracer/internal.h, session/state.h).  Read from the
# #include "dir/name.h" lines; a header outside user/ (bpf/, build/) is no
# part of the graph.  Each circle is named with the lines that make it.
source "$(dirname "$0")/lib.sh"

# Edges "FROM_FILE LINE HEADER", HEADER under user/, of the tree in the current directory.
edges() {
	local f
	for f in user/*.c user/*/*.c user/*/*.h; do
		[ -e "$f" ] || continue
		awk -v f="$f" '/^[ \t]*#[ \t]*include[ \t]*"/ {
			split($0, q, "\""); h = q[2]
			if (h ~ /\//) print f, FNR, "user/" h }' "$f"
	done | while read -r f n h; do
		[ -e "$h" ] && echo "$f $n $h"
	done
}
edges >"$TMP/edges"
[ -s "$TMP/edges" ] || fail "includes: user/ has #include \"dir/name.h\" lines" "none found"

# circles LEVEL [EDGES]: the strongly connected parts of the graph of folders,
# modules or headers, one line each ("a b c"), then "# a -> b: FILE:LINE"
# for the include lines between them and "# pair a <-> b" for each two
# that include each other directly.
circles() {
	local tree=${3:-.}
	awk -v level="$1" -v cs=" $(cd "$tree" && echo user/*/*.c) " '
	function node(p) {
		sub(/^user\//, "", p)
		if (level == "folder") return p ~ /\// ? substr(p, 1, index(p, "/") - 1) : "user"
		if (level == "module") sub(/\.[ch]$/, "", p)
		return p
	}
	# a module is a .c and its header: a header alone is private to its folder
	function module(p) { sub(/\.[ch]$/, ".c", p); return index(cs, " " p " ") }
	level == "header" && $1 !~ /\.h$/ { next }
	level == "module" && !(module($1) && module($3)) { next }
	node($1) != node($3) { print node($1), node($3), $1 ":" $2 }' \
		"${2:-$TMP/edges}" >"$TMP/$1.edges"
	# Reachability by closure (a few dozen nodes), then the circles: nodes that reach each other.
	awk '{ e[$1, $2] = 1; v[$1]; v[$2]; site[$1, $2] = site[$1, $2] " " $3 }
	END {
		for (a in v) for (b in v) r[a, b] = ((a, b) in e)
		for (k in v) for (a in v) if (r[a, k]) for (b in v) if (r[k, b]) r[a, b] = 1
		for (a in v) {
			if (done[a] || !r[a, a]) continue
			line = ""; n = 0; by_header = 0
			for (b in v) if (r[a, b] && r[b, a]) { members[++n] = b; done[b] = 1 }
			for (i = 1; i <= n; i++) for (j = 1; j <= n; j++)
				by_header += (members[i], members[j]) in e && site[members[i], members[j]] ~ /\.h:/
			if (level == "module" && !by_header) continue
			# sorted, for a stable message
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (members[j] < members[i]) { t = members[i]; members[i] = members[j]; members[j] = t }
			for (i = 1; i <= n; i++) line = line (i > 1 ? " " : "") members[i]
			print line
			for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) if ((members[i], members[j]) in e)
				print "#", members[i], "->", members[j] ":" site[members[i], members[j]]
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if ((members[i], members[j]) in e && (members[j], members[i]) in e)
					print "# pair", members[i], "<->", members[j]
		}
	}' level="$1" "$TMP/$1.edges"
}

for level in folder module header; do
	circles "$level" >"$TMP/$level.circles"
	pairs=$(sed -n 's/^# pair //p' "$TMP/$level.circles" | paste -sd, | sed 's/,/, /g')
	grep -v '^#' "$TMP/$level.circles" | sort >"$TMP/$level.sets"
	if [ "$level" = folder ]; then
		# One check per folder: is it in a circle?
		for d in user/*/; do
			d=$(basename "$d")
			c=$(grep -E "(^| )$d( |\$)" "$TMP/folder.sets" | head -1)
			diag=""
			[ -n "$c" ] && diag="folders in one circle: ${c// /, } (two that include each other: ${pairs:-none})"$'\n'$(awk -v d="$d" 'substr($0, 1, 1) != "#" { on = 0 } substr($0, 1, 1) != "#" && (" " $0 " ") ~ (" " d " ") { on = 1; next } on && !/^# pair/' "$TMP/folder.circles" | sed 's/^# //')
			report "includes: user/$d/ is in no circle of folders" "$diag"
		done
	else
		diag=""
		[ -s "$TMP/$level.sets" ] && diag="two that include each other: ${pairs:-none}"$'\n'$(grep -v '^# pair' "$TMP/$level.circles" | sed 's/^# //')
		if [ "$level" = module ]; then
			report "includes: no circle of modules of user/ with a header in it" "$diag"
		else
			report "includes: no circle of headers of user/" "$diag"
		fi
	fi
done

# The check itself finds what it looks for: a made-up tree with one circle of each kind.
mkdir -p "$TMP/fake/user/a" "$TMP/fake/user/b"
printf '#include "b/y.h"\n' >"$TMP/fake/user/a/x.h"
printf '#include "a/x.h"\n#include "b/z.h"\n' >"$TMP/fake/user/b/y.h"
printf '#include "b/y.h"\n' >"$TMP/fake/user/b/z.h"
printf '#include "b/z.h"\n' >"$TMP/fake/user/b/y.c"
printf '#include "util/none.h"\n#include "heaptrace.h"\n' >"$TMP/fake/user/b/w.c"
: >"$TMP/fake/user/a/x.c"
: >"$TMP/fake/user/b/z.c"
# Not circles: two .c files through one-way headers, a private header.
mkdir -p "$TMP/fake/user/c" "$TMP/fake/user/d"
printf '#include "c/q.h"\n' >"$TMP/fake/user/c/p.c"
printf '#include "c/p.h"\n' >"$TMP/fake/user/c/q.c"
: >"$TMP/fake/user/c/p.h"
: >"$TMP/fake/user/c/q.h"
printf '#include "d/d.h"\n' >"$TMP/fake/user/d/internal.h"
printf '#include "d/internal.h"\n' >"$TMP/fake/user/d/d.c"
: >"$TMP/fake/user/d/d.h"
(cd "$TMP/fake" && edges) >"$TMP/fake.edges"
circles folder "$TMP/fake.edges" "$TMP/fake" >"$TMP/fake.folder"
circles module "$TMP/fake.edges" "$TMP/fake" >"$TMP/fake.module"
circles header "$TMP/fake.edges" "$TMP/fake" >"$TMP/fake.header"
report "includes: the check finds two folders that include each other (a made-up tree)" \
	"$(grep -qx '# pair a <-> b' "$TMP/fake.folder" || cat "$TMP/fake.folder" "$TMP/fake.edges")"
report "includes: the check finds two modules that include each other (a made-up tree)" \
	"$(grep -qx 'a/x b/y b/z' "$TMP/fake.module" || cat "$TMP/fake.module")"
report "includes: two .c files through one-way headers and a private header are no circle (a made-up tree)" \
	"$(grep -E '(^| )(c|d)/' "$TMP/fake.module" "$TMP/fake.folder" "$TMP/fake.header")"
report "includes: the check finds a circle of three headers (a made-up tree)" \
	"$(grep -qx 'a/x.h b/y.h b/z.h' "$TMP/fake.header" || cat "$TMP/fake.header")"
summary
