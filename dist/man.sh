#!/bin/sh
# heaptrace(8) from its template (dist/heaptrace.8.in), the option tables
# of the binary (heaptrace --dump-options: the same rows that parse and
# print --help) and the usage examples of README.md.
# usage: dist/man.sh HEAPTRACE README TEMPLATE > heaptrace.8
set -e
bin=$1 readme=$2 template=$3
version=$("$bin" --version | sed 's/^heaptrace //')
# The date of the last commit, so that a rebuild of the same source gives the same page.
date=$(git log -1 --format=%cs 2>/dev/null || true)
[ -n "$date" ] || date=$(date -u +%Y-%m-%d)
dump=$(mktemp "${TMPDIR:-/tmp}/heaptrace-options.XXXXXX")
trap 'rm -f "$dump"' EXIT
"$bin" --dump-options >"$dump"
awk -v version="$version" -v date="$date" -v dump="$dump" -v readme="$readme" '
# Text for roff: backslashes and dashes (\- is the minus of options,
# copied as "-"), a break point after a comma inside a word, and no line
# that starts like a request.
function esc(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	gsub(/,/, ",\\:", s)   # a place to break a long spec, no hyphen shown
	gsub(/,\\: /, ", ", s)
	return s ~ /^[.'"'"']/ ? "\\&" s : s
}
# --help lines joined into a paragraph; a spec broken after a comma
# (NAME:size=EXPR,\nfree=argN) is joined without a space.
function join(prev, line) {
	if (prev == "") return line
	return prev ~ /,$/ && line ~ /^[a-z]+=/ ? prev line : prev " " line
}
function flush_option() {
	if (opt == "") return
	text = text == "" ? "" : esc(text)
	if (dflt != "-") text = text " (default " esc(dflt) ")"
	out[cmd, "options"] = out[cmd, "options"] ".TP\n" tag "\n" text "\n"
	opt = ""
}
BEGIN {
	while ((getline l < dump) > 0) {
		n = split(l, f, "\t")
		if (f[1] == "command") { flush_option(); cmd = f[2]; continue }
		if (f[1] == "usage") {
			if (f[2] ~ /^(usage:)? +heaptrace /) {
				sub(/^(usage:)? +/, "", f[2])
				if (cmd == "trace") synopsis = synopsis (synopsis == "" ? "" : ".br\n") "\\fB" esc(f[2]) "\\fR\n"
			} else
				out[cmd, "desc"] = out[cmd, "desc"] esc(f[2]) "\n"
			continue
		}
		if (f[1] == "epilogue") { out[cmd, "desc"] = out[cmd, "desc"] esc(f[2]) "\n"; continue }
		if (f[1] == "option") {
			flush_option()
			opt = f[2]; dflt = f[5]; text = ""
			tag = (f[3] != "-" ? "\\fB\\-" f[3] "\\fR, " : "") "\\fB\\-\\-" esc(f[2]) "\\fR"
			if (f[4] != "-") tag = tag " \\fI" esc(f[4]) "\\fR"
			continue
		}
		if (f[1] == "help") { text = join(text, f[2]); continue }
	}
	flush_option()
	# Examples: the command lines of the code blocks of the README between
	# "## Usage" and the next section, with their "# comments".
	while ((getline l < readme) > 0) {
		if (l ~ /^## /) { in_usage = l == "## Usage"; continue }
		if (!in_usage) continue
		if (l ~ /^```/) { in_block = !in_block; continue }
		if (!in_block) continue
		if (cont != "") { sub(/^ +/, "", l); l = cont l; cont = "" }
		else if (l !~ /^(sudo )?heaptrace /) continue
		if (l ~ /\\$/) { sub(/ *\\$/, " ", l); cont = l; continue }
		comment = ""
		if (match(l, / +# /)) { comment = substr(l, RSTART + RLENGTH); l = substr(l, 1, RSTART - 1) }
		examples = examples (comment != "" ? ".TP\n" : ".PP\n") "\\fB" esc(l) "\\fR\n" (comment != "" ? esc(comment) "\n" : "")
	}
	if (examples == "") { print "man.sh: no examples in " readme > "/dev/stderr"; exit 1 }
	if (out["trace", "options"] == "" || out["diff", "options"] == "") { print "man.sh: no options dumped" > "/dev/stderr"; exit 1 }
}
/^@SYNOPSIS@$/ { printf "%s", synopsis; next }
/^@DESCRIPTION [a-z]+@$/ { c = $2; sub(/@$/, "", c); printf "%s", out[c, "desc"]; next }
/^@OPTIONS [a-z]+@$/ { c = $2; sub(/@$/, "", c); printf "%s", out[c, "options"]; next }
/^@EXAMPLES@$/ { printf "%s", examples; next }
{ gsub(/@VERSION@/, version); gsub(/@DATE@/, date); print }
' "$template"
