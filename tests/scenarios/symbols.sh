# shellcheck shell=bash
# Area "symbols" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# what every output format names a frame, judged by eu-addr2line and
# binutils' addr2line on the same addresses (scenario inline).

# ---------------------------------------------------------------------------
# t_inline (-O2 -g), every block kept:
#   inner inlined into outer                                3 x 1111
#   leaf_alloc (t_inline.h) inlined into mid, into nest     5 x 2222
#   printf's stdio buffer, under glibc's own inline frames  1 x 4096
# The judges' frames for each address of these three stacks (the function,
# the line within it, each inlined frame's caller after it) must be the
# frames of every format: top (with its "(inlined)" marks), collapsed, the
# Line entries of -f proto, and what google-pprof makes of the legacy text.
#
# Stacks are named by their in-use objects and bytes ("5 11110") and
# written one frame a line, innermost first, as "KEY<TAB>N<TAB>NAME<TAB>
# FILE:LINE<TAB>INLINED": N numbers the addresses of the stack (frames of
# one address share it), FILE is a base name ("?" and line 0: none), and
# INLINED is 1 for a frame inlined into the next one.
INL_KEYS=("5 11110" "3 3333" "1 4096")

# inl_vaddr FILE OFFSET: the ELF virtual address at file offset OFFSET, from
# the PT_LOAD segment holding it; empty when none does.
inl_vaddr() {
	local type o v p n rest
	while read -r type o v p n rest; do
		[ "$type" = LOAD ] || continue
		if [ $(($2)) -ge $((o)) ] && [ $(($2)) -lt $((o + n)) ]; then
			printf '0x%x\n' $(($2 - o + v))
			return
		fi
	done < <(readelf -lW "$1" 2>/dev/null)
}

# inl_judge TOOL FILE VADDR: "NAME<TAB>FILE:LINE" per frame at VADDR, innermost
# first, as "TOOL -i -f" prints them (TOOL eu-addr2line or addr2line):
# base names, no column, no discriminator; "?:0" where it knows no line.
inl_judge() {
	"$1" -i -f -e "$2" "$3" 2>/dev/null | awk '
		NR % 2 == 1 { name = $0; sub(/ inlined at .*/, "", name); next }
		{
			loc = $0; sub(/ \(discriminator [0-9]+\)$/, "", loc)
			if (loc ~ /:[0-9]+:[0-9]+$/) sub(/:[0-9]+$/, "", loc)   # eu-addr2line: a column
			line = loc; sub(/^.*:/, "", line); file = loc; sub(/:[^:]*$/, "", file)
			sub(/^.*\//, "", file)
			if (line !~ /^[0-9]+$/ || line == 0 || file == "" || file == "??") { file = "?"; line = 0 }
			print name "\t" file ":" line
		}'
}

# inl_raw_frames RAW: the three stacks of a "go tool pprof -raw" listing in
# the frame format above, with "<TAB>SYSTEM_NAME" (empty when it is the
# name) and "<TAB>MAPPING_FILE<TAB>ADDRESS<TAB>MAPPING_START<TAB>MAPPING_OFFSET"
# of the location appended.
inl_raw_frames() {
	awk '
	/^Samples:/ { sec = "s"; next }
	/^Locations/ { sec = "l"; next }
	/^Mappings/ { sec = "m"; next }
	function frame(s,   sys, m) {
		# "NAME FILE:LINE s=N" or "...s=N(SYSTEM_NAME)"; NAME may hold spaces.
		sys = ""
		if (match(s, /s=[0-9]+\(.*\)$/)) { sys = substr(s, RSTART, RLENGTH); sub(/^s=[0-9]+\(/, "", sys); sub(/\)$/, "", sys) }
		sub(/ s=[0-9]+(\(.*\))?$/, "", s)
		m = match(s, / [^ ]*$/)
		name = substr(s, 1, m - 1); loc = substr(s, m + 1)
		line = loc; sub(/^.*:/, "", line); file = loc; sub(/:[^:]*$/, "", file); sub(/^.*\//, "", file)
		if (line !~ /^[0-9]+$/ || line == 0 || file == "") { file = "?"; line = 0 }
		nl[id]++; lname[id, nl[id]] = name; lloc[id, nl[id]] = file ":" line; lsys[id, nl[id]] = sys
	}
	sec == "s" && /^ *[0-9]+( +[0-9]+)*: *[0-9]/ {
		i = index($0, ":"); split(substr($0, 1, i - 1), v, " ")
		ns++; skey[ns] = v[3] " " v[4]; sids[ns] = substr($0, i + 1)
	}
	sec == "l" && /^ *[0-9]+: 0x/ {
		id = $1; sub(/:$/, "", id); addr[id] = $2; map[id] = $3; sub(/^M=/, "", map[id])
		s = $0; sub(/^ *[0-9]+: 0x[0-9a-f]+ M=[0-9]+ ?/, "", s)
		if (s != "") frame(s)
		next
	}
	sec == "l" && /^             [^ ]/ { s = $0; sub(/^ +/, "", s); frame(s); next }
	sec == "m" && /^[0-9]+: 0x/ {
		split($2, r, "/"); mstart[$1 + 0] = r[1]; moff[$1 + 0] = r[3]; mfile[$1 + 0] = $3
	}
	END {
		for (k = 1; k <= ns; k++) {
			n = split(sids[k], ids, " ")
			for (j = 1; j <= n; j++) {
				id = ids[j]; m = map[id] + 0
				for (l = 1; l <= nl[id]; l++)
					print skey[k] "\t" j "\t" lname[id, l] "\t" lloc[id, l] "\t" (l < nl[id]) "\t" lsys[id, l] "\t" mfile[m] "\t" addr[id] "\t" mstart[m] "\t" moff[m]
			}
		}
	}' "$1"
}

# inl_expect RAWFRAMES: the judges' frames for the addresses of RAWFRAMES
# (eu-addr2line's, in the frame format), and on standard error what
# binutils' addr2line says otherwise (names, lines) or what cannot be judged.
inl_expect() {
	local key n file addr start moff off va eu bu
	awk -F'\t' '!seen[$1 "\t" $2]++ { print $1 "\t" $2 "\t" $7 "\t" $8 "\t" $9 "\t" $10 }' "$1" |
		while IFS=$'\t' read -r key n file addr start moff; do
			off=$((addr - start + moff))
			va=$(inl_vaddr "$file" "$off")
			if [ -z "$va" ]; then
				echo "$key #$n: offset $off is in no segment of $file" >&2
				continue
			fi
			eu=$(inl_judge eu-addr2line "$file" "$va")
			bu=$(inl_judge addr2line "$file" "$va")
			# binutils puts some lines in another file (the includer) than
			# elfutils does: the two must agree on names and line numbers.
			[ "$(sed 's/\t.*:/\t/' <<<"$eu")" = "$(sed 's/\t.*:/\t/' <<<"$bu")" ] ||
				echo "$key #$n ($file $va): eu-addr2line and addr2line disagree:"$'\n'"$eu"$'\n'"--"$'\n'"$bu" >&2
			[ -n "$eu" ] || echo "$key #$n: eu-addr2line has nothing for $file $va" >&2
			awk -F'\t' -v k="$key" -v n="$n" '{ a[NR] = $0 } END { for (i = 1; i <= NR; i++) print k "\t" n "\t" a[i] "\t" (i < NR) }' <<<"$eu"
		done
}

# inl_compare WANT GOT ALIASES FIELDS (files): a diagnostic per stack where GOT's
# frames differ from WANT's (both in the frame format).  FIELDS: "names"
# compares names only, in the order of the stack; "all" also lines and
# inline marks.  A judge's name J matches a name N when N is J, or ALIASES
# (lines "J<TAB>N") pairs them: proto's system name is the linkage name the
# judges print (glibc's __GI_ aliases), its name the source's.
inl_compare() {
	local key want got
	for key in "${INL_KEYS[@]}"; do
		want=$(awk -F'\t' -v k="$key" -v f="$4" '$1 == k { print $3 "\t" (f == "all" ? $4 "\t" $5 : "") }' "$1")
		got=$(awk -F'\t' -v k="$key" -v f="$4" '$1 == k { print $3 "\t" (f == "all" ? $4 "\t" $5 : "") }' "$2")
		[ -n "$want" ] || { echo "stack $key: no judged frames"; continue; }
		awk -F'\t' -v key="$key" '
			FILENAME == ARGV[1] { alias[$1 "\t" $2] = 1; next }
			FILENAME == ARGV[2] { w[++nw] = $0; next }
			{ g[++ng] = $0 }
			END {
				bad = nw != ng
				for (i = 1; i <= nw && !bad; i++) {
					split(w[i], a, "\t"); split(g[i], b, "\t")
					if (a[1] != b[1] && !((a[1] "\t" b[1]) in alias)) bad = 1
					if (a[2] != b[2] || a[3] != b[3]) bad = 1
				}
				if (!bad) exit
				print "stack " key ": want (name, file:line, inlined) innermost first:"
				for (i = 1; i <= nw; i++) print "  " w[i]
				print "got:"
				for (i = 1; i <= ng; i++) print "  " g[i]
			}' "$3" <(echo "$want") <(echo "$got")
	done
}

# inl_top_frames TOP: the three stacks of a -f top report in the frame
# format (N is 0: top does not say which frames share an address).
inl_top_frames() {
	awk '
	/^#[0-9]+ / {
		key = ""
		if (match($0, /in use [0-9,]+ B \/ [0-9,]+ obj/)) {
			split(substr($0, RSTART, RLENGTH), f, " "); b = f[3]; o = f[6]
			gsub(/,/, "", b); gsub(/,/, "", o); key = o " " b
		}
		next
	}
	key != "" && /^        [^ ]/ {
		s = substr($0, 9); inl = sub(/^\(inlined\) /, "", s)
		i = index(s, "  ")
		name = i ? substr(s, 1, i - 1) : s; loc = i ? substr(s, i + 2) : ""
		if (loc ~ /^\(/ || loc == "") loc = "?:0"
		else sub(/^.*\//, "", loc)
		print key "\t0\t" name "\t" loc "\t" inl
		next
	}
	/^$/ { key = "" }' "$1"
}

# inl_collapsed_frames FILE VALUEKEYS: the stacks of collapsed output in the
# frame format (names only), a stack named by its value: VALUEKEYS lines
# "VALUE<TAB>KEY".
inl_collapsed_frames() {
	awk -F'\t' 'NR == FNR { key[$1] = $2; next }
		{
			v = $0; sub(/^.* /, "", v); s = $0; sub(/ [^ ]*$/, "", s)
			if (!(v in key)) next
			n = split(s, f, ";")
			for (i = n; i >= 1; i--) print key[v] "\t0\t" f[i] "\t?:0\t0"
		}' "$2" "$1"
}

# inl_gpprof_diag COLLAPSED WANT: a diagnostic per stack where google-pprof's
# --collapsed names (outermost first, "NAME<0x...>" for nm's start address,
# "NAME[inline]" for an inlined frame) are not the judges'.  google-pprof
# asks addr2line for inline frames only in objects where it finds _fini,
# otherwise for the innermost frame alone, so each address may give either.
inl_gpprof_diag() {
	local key want
	for key in "${INL_KEYS[@]}"; do
		want=$(awk -F'\t' -v k="$key" '$1 == k { print $2 "\t" $3 }' "$2")
		awk -v key="$key" -v bytes="${key#* }" '
			NR == FNR { split($0, a, "\t"); if (!(a[1] in cnt)) np++; cnt[a[1]]++; nm[a[1], cnt[a[1]]] = a[2]; next }
			{
				v = $0; sub(/^.* /, "", v)
				if (v != bytes) next
				s = $0; sub(/ [^ ]*$/, "", s); found = 1
				ng = split(s, g, ";")
				for (i = 1; i <= ng; i++) gsub(/<[0-9a-fA-Fx]+>/, "", g[i])
				# Outermost address first: its frames outermost first.
				i = 1; bad = ""
				for (p = np; p >= 1 && !bad; p--) {
					full = 1
					for (j = cnt[p]; j >= 1; j--)
						if (g[i + cnt[p] - j] != nm[p, j] (j < cnt[p] ? "[inline]" : "")) full = 0
					if (full) i += cnt[p]
					else if (g[i] == nm[p, 1]) i++
					else bad = "address #" p ": got \"" g[i] "\", want " (cnt[p] > 1 ? "the frames " : "") "\"" nm[p, cnt[p]] "\"" (cnt[p] > 1 ? " ... \"" nm[p, 1] "[inline]\" or \"" nm[p, 1] "\" alone" : "")
				}
				if (!bad && i != ng + 1) bad = "more frames than the judges have"
				if (bad) print "stack " key " (" bytes " bytes): " bad ": " $0
			}
			END { if (!found) print "stack " key ": no line with value " bytes }' <(echo "$want") "$1"
	done
}

scenario_inline() {
	local view=$TMP/inl.view d f k src=tests/targets/t_inline.c
	if [ ! -x "$TB/t_inline" ]; then
		fail "inline: $TB/t_inline not built (make test-targets)" ""
		return
	fi
	for f in eu-addr2line addr2line readelf; do
		command -v "$f" >/dev/null || { fail "inline: $f is installed (the judges: make deps)" ""; return; }
	done
	mkdir -p "$view"

	# The addresses to judge: -f proto's locations, read by go tool pprof.
	ht inl_proto -f proto -o "$TMP/inl.pb.gz" -- "$TB/t_inline"
	check_rc inl_proto 0 "inline: -f proto run of t_inline exits 0"
	proto_go inl_raw "$view" -raw "$TMP/inl.pb.gz"
	inl_raw_frames "$TMP/inl_raw.out" >"$TMP/inl.raw"
	d=$(rc_diag inl_raw 0)
	for k in "${INL_KEYS[@]}"; do
		grep -q "^$k	" "$TMP/inl.raw" || d+="no sample with in-use $k"$'\n'
	done
	report "inline: go tool pprof -raw: t_inline's stacks: 5 x 2222, 3 x 1111, 1 x 4096 (stdio)" "$d"

	inl_expect "$TMP/inl.raw" >"$TMP/inl.want" 2>"$TMP/inl.judges"
	d=$(cat "$TMP/inl.judges")
	# The stacks are what t_inline does, by the judges too.
	for f in "5 11110	1	leaf_alloc	t_inline.h:$(site_line tests/targets/t_inline.h leaf_alloc)	1" \
		"5 11110	1	mid	t_inline.c:$(site_line "$src" mid)	1" \
		"5 11110	1	nest	t_inline.c:$(site_line "$src" nest)	0" \
		"3 3333	1	inner	t_inline.c:$(site_line "$src" inner)	1" \
		"3 3333	1	outer	t_inline.c:$(site_line "$src" outer)	0"; do
		grep -qxF "$f" "$TMP/inl.want" || d+="the judges have no frame '$f'"$'\n'
	done
	# glibc's frames: with libc6-dbg, their lines and inline frames.
	awk -F'\t' '$1 == "1 4096" && $5 == 1' "$TMP/inl.want" | grep -q . ||
		d+="the judges see no inline frame in glibc's stdio stack (no libc6-dbg?)"$'\n'
	[ -n "$d" ] && d+=$(cat "$TMP/inl.want")
	report "inline: eu-addr2line and addr2line agree; inline frames in t_inline and in glibc" "$d"

	# -f proto: Line entries, one per frame, innermost first.  The judges
	# print linkage names: a function's system name, where it has one.
	awk -F'\t' '$6 != "" { print $6 "\t" $3 }' "$TMP/inl.raw" | sort -u >"$TMP/inl.alias"
	cut -f1-5 "$TMP/inl.raw" >"$TMP/inl.proto"
	d=$(inl_compare "$TMP/inl.want" "$TMP/inl.proto" "$TMP/inl.alias" all)
	report "inline: -f proto: each location's lines are the judges' frames (name or system name, file:line), innermost first" "$d"

	# go tool pprof -top names glibc's frames from the profile alone.
	proto_go inl_gotop "$view" -top -unit=byte "$TMP/inl.pb.gz"
	flat_is inl_gotop _IO_file_doallocate 4096B "inline: go tool pprof -top on -f proto: the libc frame _IO_file_doallocate 4096B, by name"
	d=$(grep -F '[libc.so.6]' "$TMP/inl_gotop.out")
	report "inline: go tool pprof -top on -f proto: no frame named [libc.so.6]" "$d"

	# -f top: every frame, its file:line, "(inlined)" on the inlined ones.
	# The stdio buffer's stack is the one under test: the built-in
	# suppressions would take it out of -f top's in-use stacks.
	ht inl_top -f top --no-default-suppressions -- "$TB/t_inline"
	check_rc inl_top 0 "inline: -f top run of t_inline exits 0"
	inl_top_frames "$TMP/inl_top.out" >"$TMP/inl.top"
	d=$(inl_compare "$TMP/inl.want" "$TMP/inl.top" "$TMP/inl.alias" all)
	report "inline: -f top: the judges' frames, \"(inlined)\" on each frame inlined into the next" "$d"

	# --collapsed: the judges' names, outermost first.
	ht inl_col --collapsed -- "$TB/t_inline"
	check_rc inl_col 0 "inline: --collapsed run of t_inline exits 0"
	printf '11110\t5 11110\n3333\t3 3333\n4096\t1 4096\n' >"$TMP/inl.values"
	inl_collapsed_frames "$TMP/inl_col.out" "$TMP/inl.values" >"$TMP/inl.col"
	d=$(inl_compare "$TMP/inl.want" "$TMP/inl.col" "$TMP/inl.alias" names)
	report "inline: --collapsed: the judges' names, inline frames expanded, outermost first" "$d"

	# The legacy text, symbolized by google-pprof (addr2line underneath).
	ht inl_text -o "$TMP/inl.heap" -- "$TB/t_inline"
	check_rc inl_text 0 "inline: -f pprof run of t_inline exits 0"
	pprof_tool inl_gp perl --collapsed --show_bytes "$TB/t_inline" "$TMP/inl.heap"
	d=$(rc_diag inl_gp 0)
	d+=$(inl_gpprof_diag "$TMP/inl_gp.out" "$TMP/inl.want")
	report "inline: google-pprof --collapsed on the legacy text: the judges' names at every address" "$d"
}
