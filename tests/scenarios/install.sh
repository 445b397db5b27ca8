# shellcheck shell=bash
# Area "install" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# what an operator installs: scenarios makeinstall (make install with
# DESTDIR and PREFIX) and deb (make deb, lintian, the package installed into
# a fresh root and run from there).  The man page's and completion's
# contents are checked by make check (tests/check/install.sh).

# ---------------------------------------------------------------------------
scenario_makeinstall() {
	local dest=$TMP/destdir d="" f mode
	timeout 300 make -C "$ROOT" install DESTDIR="$dest" PREFIX=/opt/ht >"$TMP/install.log" 2>&1 ||
		d+="make install failed: $(tail -3 "$TMP/install.log")"$'\n'
	for f in bin/heaptrace:755 share/man/man8/heaptrace.8:644 share/bash-completion/completions/heaptrace:644; do
		mode=$(stat -c %a "$dest/opt/ht/${f%:*}" 2>/dev/null)
		[ "$mode" = "${f#*:}" ] || d+="/opt/ht/${f%:*}: mode '$mode', want ${f#*:}"$'\n'
	done
	[ "$(find "$dest" -type f | wc -l)" = 3 ] || d+="files: $(cd "$dest" && find . -type f)"$'\n'
	report "makeinstall: make install DESTDIR=D PREFIX=/opt/ht: the binary, heaptrace(8), the completion" "$d"
}

# ---------------------------------------------------------------------------
scenario_deb() {
	local version arch deb root=$TMP/debroot d="" f lib pkg depends
	version=$("$HT" --version | sed 's/^heaptrace //')
	arch=$(dpkg --print-architecture)
	deb=$ROOT/build/heaptrace_${version}_$arch.deb
	rm -f "$deb"
	timeout 600 make -C "$ROOT" deb >"$TMP/deb.log" 2>&1
	report "deb: make deb builds build/heaptrace_${version}_$arch.deb" \
		"$([ -s "$deb" ] || echo "no package; make deb said: $(tail -5 "$TMP/deb.log")")"
	[ -s "$deb" ] || return

	dpkg-deb -c "$deb" | awk '{ print $NF }' >"$TMP/deb.files"
	for f in ./usr/bin/heaptrace ./usr/share/man/man8/heaptrace.8.gz ./usr/share/bash-completion/completions/heaptrace \
		./usr/share/doc/heaptrace/copyright ./usr/share/doc/heaptrace/changelog.gz; do
		grep -qxF "$f" "$TMP/deb.files" || d+="no $f"$'\n'
	done
	report "deb: holds the binary, the gzipped page, the completion, copyright and changelog" "$d"

	# Depends: the package of every library the binary links (NEEDED), found
	# by the file the loader maps for it (not a list kept here).
	# The packaged binary's, not $HT's (an ASan build under make check-asan links libasan).
	d=""
	depends=$(dpkg-deb -f "$deb" Depends)
	local names path bin=$TMP/debx/usr/bin/heaptrace
	rm -rf "$TMP/debx" && dpkg-deb -x "$deb" "$TMP/debx"
	names=$(sed -e 's/ *([^)]*)//g' -e 's/, */\n/g' <<<"$depends")
	while read -r lib; do
		path=$(ldd "$bin" | awk -v l="$lib" '$1 == l && $2 == "=>" { print $3 }')
		pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(realpath "$path")" 2>/dev/null)
		pkg=${pkg%%:*}
		[ -n "$pkg" ] || { d+="$lib ($path): no package holds it"$'\n'; continue; }
		grep -qxF -- "$pkg" <<<"$names" || d+="$lib is $pkg's, not in Depends"$'\n'
	done < <(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }')
	report "deb: Depends names the package of each library heaptrace links ($depends)" "$d"

	lintian --pedantic -E "$deb" >"$TMP/lintian.out" 2>&1
	report "deb: lintian --pedantic: no error or warning" \
		"$(grep -E '^(E|W):' "$TMP/lintian.out")$(grep -q '^E: .*lintian' "$TMP/lintian.out" && cat "$TMP/lintian.out")"

	# A fresh root: dpkg installs it there (its libraries are the host's), and it runs.
	rm -rf "$root"
	mkdir -p "$root"
	dpkg --root="$root" --force-depends --force-not-root -i "$deb" >"$TMP/dpkg.out" 2>&1
	report "deb: dpkg --root=FRESH -i installs it" \
		"$(dpkg --root="$root" -s heaptrace 2>&1 | grep -q '^Status: install ok installed' || cat "$TMP/dpkg.out")"
	report "deb: the installed heaptrace --version says heaptrace $version" \
		"$(v=$("$root/usr/bin/heaptrace" --version 2>&1); [ "$v" = "heaptrace $version" ] || echo "got: $v")"
	MANWIDTH=80 man --warnings -l "$root/usr/share/man/man8/heaptrace.8.gz" >"$TMP/deb.man" 2>"$TMP/deb.man.err"
	report "deb: its man page renders without a warning" \
		"$(cat "$TMP/deb.man.err")$(grep -q '^       -p, --pid PID' "$TMP/deb.man" || echo "no -p, --pid PID in the page")"
	f=$(bash -c 'source "$1"; COMP_WORDS=(heaptrace --fo); COMP_CWORD=1; _heaptrace; echo "${COMPREPLY[*]}"' c \
		"$root/usr/share/bash-completion/completions/heaptrace" 2>&1)
	report "deb: its completion answers 'heaptrace --fo' with --format --follow-fork" \
		"$([ "$f" = "--format --follow-fork" ] || echo "got: $f")"
	dpkg --root="$root" --force-depends --force-not-root -P heaptrace >"$TMP/dpkg.out" 2>&1
	report "deb: dpkg -P removes every file it installed" \
		"$(cd "$root" && find . -type f ! -path './var/*' | head -5)"
}
