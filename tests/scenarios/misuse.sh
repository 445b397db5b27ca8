# shellcheck shell=bash
# Area "misuse" of tests/run.sh (sourced by it; helpers in tests/lib.sh):
# errors and bad input: one line on stderr, the right exit status:
# scenarios errors, badinput.

# free_pid: a pid no process has.
free_pid() {
	local p
	p=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
	while [ -e "/proc/$p" ]; do p=$((p - 1)); done
	echo "$p"
}

# ---------------------------------------------------------------------------
# Errors: one line on stderr, non-zero exit.
scenario_errors() {
	local name="heaptrace-no-such-command-$$" d
	ht notfound -- "$name"
	d=$(rc_diag notfound 127)
	d+=$(one_line_diag notfound)
	report "errors: command not found -> exit 127, one line on stderr" "$d"

	local pid
	pid=$(free_pid)
	ht nopid -p "$pid"
	d=""
	if [ "$RC" = 0 ] || [ "$RC" -ge 124 ]; then
		d+="exit status $RC, want a non-zero error exit"$'\n'
	fi
	d+=$(one_line_diag nopid)
	report "errors: -p $pid (no such process) -> non-zero exit, one line on stderr" "$d"

	# Without privileges the BPF load fails: the error names what is needed.
	echo "setpriv (nobody, no capabilities) heaptrace /bin/true" >"$TMP/noperm.cmd"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$HT" /bin/true >"$TMP/noperm.out" 2>"$TMP/noperm.err" </dev/null
	RC=$?
	echo "$RC" >"$TMP/noperm.rc"
	d=""
	[ "$RC" = 0 ] && d+="exit status 0, want an error exit"$'\n'
	d+=$(one_line_diag noperm)
	grep -q 'CAP_BPF' "$TMP/noperm.err" && grep -q 'CAP_PERFMON' "$TMP/noperm.err" ||
		d+="the error does not name CAP_BPF and CAP_PERFMON: $(head -1 "$TMP/noperm.err")"$'\n'
	report "errors: unprivileged -> non-zero exit, one line naming CAP_BPF and CAP_PERFMON" "$d"

	# A static program with no malloc at all: nothing to probe.
	cat >"$TMP/nomalloc.c" <<'EOC'
void _start(void)
{
	__asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall");
}
EOC
	if gcc -nostdlib -static -O1 "$TMP/nomalloc.c" -o "$TMP/nomalloc" 2>"$TMP/nomalloc.cc"; then
		ht nomalloc -- "$TMP/nomalloc"
		d=""
		[ "$RC" = 0 ] && d+="exit status 0, want an error exit"$'\n'
		d+=$(one_line_diag nomalloc)
		grep -q 'no allocator found' "$TMP/nomalloc.err" ||
			d+="stderr does not say 'no allocator found': $(head -1 "$TMP/nomalloc.err")"$'\n'
		report "errors: a program without malloc -> 'no allocator found', non-zero exit" "$d"
	else
		fail "errors: cannot build the no-malloc program" "$(cat "$TMP/nomalloc.cc")"
	fi

	# Bad options: exit 2 and one line.
	ht badfmt -f xml -- /bin/true
	d=$(rc_diag badfmt 2)
	d+=$(one_line_diag badfmt)
	report "errors: -f xml -> exit 2, one line on stderr" "$d"
	ht bothmodes -p 1 -- /bin/true
	d=$(rc_diag bothmodes 2)
	d+=$(one_line_diag bothmodes)
	report "errors: -p and a command together -> exit 2, one line on stderr" "$d"
}

# ---------------------------------------------------------------------------
# Bad input: exactly one line on stderr, the right exit status, and nothing
# traced.  A row is "ARGS|EXIT|WORDS": ARGS split at spaces (@TMP@, @TB@,
# @NOPID@ and @MARKER@ replaced); EXIT a number or "nz" (an error: 1-123);
# WORDS comma-separated, each to be on the line (case-insensitive, "A|B"
# for either).  Every command is "touch @MARKER@": it must not have run.
# Rows with "-o" must fail in under 2 s (before any tracing).
scenario_badinput() {
	local nopid t=/usr/bin/touch row args rc words key i=0 d w x t0 ms
	local marker=$TMP/bi.marker
	nopid=$(free_pid)
	cp /bin/true "$TMP/bi.noexec" && chmod 644 "$TMP/bi.noexec"
	echo keep >"$TMP/bi.victim"
	ln -s "$TMP/bi.victim" "$TMP/bi.link"
	ht bi.real -o "$TMP/bi.real.prof" -- "$TB/t_pprof"
	check_rc bi.real 0 "badinput: a real profile to start from"
	head -c 40 "$TMP/bi.real.prof" >"$TMP/bi.trunc.prof"
	: >"$TMP/bi.empty.prof"
	printf 'heap profile:    1:  99999999999999999999999 [    1:  99999999999999999999999] @ heapprofile\n' \
		>"$TMP/bi.huge.prof"
	printf '     1:  99999999999999999999999 [     1:  99999999999999999999999] @ 0x0000000000401000\n' \
		>>"$TMP/bi.huge.prof"
	printf 'heap profile:    1:  5 [    1:  5] @ heapprofile\n 99999999999999999999999: 5 [ 1: 5] @ 0x401000\n' \
		>"$TMP/bi.hugerec.prof"
	# Hostile profiles for diff: 64 MB of zeros gzipped (a bomb), counts out
	# of range, too many records, an endless line.
	head -c 67108864 /dev/zero | gzip -1 >"$TMP/bi.zeros.gz"
	printf 'heap profile:    1:  5 [    1:  5] @ heapprofile\n    -1:  5 [    1:  5] @ 0x401000\n' >"$TMP/bi.neg.prof"
	printf 'heap profile:    2:  5 [    2:  5] @ heapprofile\n' >"$TMP/bi.sum.prof"
	printf '     1: 9223372036854775807 [     1:  5] @ 0x%x\n' 4198400 4198401 >>"$TMP/bi.sum.prof"
	{ echo 'heap profile:    1:  5 [    1:  5] @ heapprofile'; seq -f '1: 1 [1: 1] @ 0x%.0f' 1 1100000; } \
		>"$TMP/bi.many.prof"
	{ printf 'heap profile:    1:  5 [    1:  5] @ heapprofile\n     1:  5 [    1:  5] @'
	  head -c 2000000 /dev/zero | tr '\0' ' '; echo ' 0x401000'; } >"$TMP/bi.longline.prof"
	[ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ] ||
		fail "badinput: PID 2 is kthreadd (a kernel thread)" "PID 2 is '$(cat /proc/2/comm 2>/dev/null)'"
	local rows=(
		"--bogus-option -- $t @MARKER@|2|unknown option,--bogus-option"
		"-x -- $t @MARKER@|2|unknown option,-x"
		"-p|2|-p,needs a value"
		"-o|2|-o,needs a value"
		"-f|2|-f,needs a value"
		"-d|2|-d,needs a value"
		"-i|2|-i,needs a value"
		"--max-allocs|2|--max-allocs,needs a value"
		"--unwind|2|--unwind,needs a value"
		"-d 0 -- $t @MARKER@|2|-d,0"
		"-d -1 -- $t @MARKER@|2|-d,-1"
		"-d abc -- $t @MARKER@|2|-d,abc"
		"-i 0 -- $t @MARKER@|2|-i,0"
		"--max-allocs 0 -- $t @MARKER@|2|--max-allocs,0"
		"--max-depth 200 -- $t @MARKER@|2|--max-depth,200"
		"--unwind bogus -- $t @MARKER@|2|--unwind,bogus"
		"--top x -- $t @MARKER@|2|--top,'x'"
		"--http nonsense -- $t @MARKER@|2|--http,nonsense"
		"--sample-rate|2|--sample-rate,needs a value"
		"--sample-rate abc -- $t @MARKER@|2|--sample-rate,'abc'"
		"--sample-rate -1 -- $t @MARKER@|2|--sample-rate,'-1'"
		"--sample-rate 64X -- $t @MARKER@|2|--sample-rate,'64X'"
		"--sample-rate 1.5K -- $t @MARKER@|2|--sample-rate,'1.5K'"
		"--sample-rate 2G -- $t @MARKER@|2|--sample-rate,'2G'"
		"--sample-rate 1073741825 -- $t @MARKER@|2|--sample-rate,'1073741825'"
		"--sample-rate 99999999999999999999 -- $t @MARKER@|2|--sample-rate,'99999999999999999999'"
		"-p @NOPID@|nz|@NOPID@"
		"-p 2|nz|kernel thread"
		"-p 0|2|-p,0"
		"-p abc|2|-p,abc"
		"-- heaptrace-no-such-command|127|heaptrace-no-such-command,not found"
		"-- @TMP@/bi.noexec|126|bi.noexec,permission denied"
		"--sym malloc:size=arg1+ -- $t @MARKER@|2|malloc:size=arg1+,expression"
		"--sym malloc:size=(arg1) -- $t @MARKER@|2|expression"
		"-o /nonexistent/dir/x -- $t @MARKER@|nz|/nonexistent/dir"
		"-i 1 -o /nonexistent/dir/x -- $t @MARKER@|nz|/nonexistent/dir"
		"-o @TMP@/bi.link -- $t @MARKER@|nz|bi.link"
		"diff @TMP@/bi.real.prof @TMP@/bi.trunc.prof|nz|bi.trunc.prof,heap profile"
		"diff @TMP@/bi.trunc.prof @TMP@/bi.real.prof|nz|bi.trunc.prof,heap profile"
		"diff @TMP@/bi.real.prof /bin/true|nz|/bin/true,heap profile"
		"diff @TMP@/bi.real.prof @TMP@/bi.empty.prof|nz|bi.empty.prof,empty"
		"diff @TMP@/bi.huge.prof @TMP@/bi.real.prof|nz|bi.huge.prof"
		"diff @TMP@/bi.real.prof @TMP@/bi.hugerec.prof|nz|bi.hugerec.prof"
		"diff @TMP@/bi.real.prof @TMP@/bi.missing.prof|nz|bi.missing.prof"
		"diff @TMP@/bi.real.prof|2|usage"
		"-p +5 -- $t @MARKER@|2|-p,'+5'"
		"-p -5 -- $t @MARKER@|2|-p,'-5'"
		"-d 0x10 -- $t @MARKER@|2|-d,'0x10'"
		"-d inf -- $t @MARKER@|2|-d,'inf'"
		"-d +1 -- $t @MARKER@|2|-d,'+1'"
		"--max-allocs +5 -- $t @MARKER@|2|--max-allocs,'+5'"
		"--sym malloc: -- $t @MARKER@|2|malloc:,nothing after ':'"
		"--sym ,,,, -- $t @MARKER@|2|is not a symbol name"
		"--sym malloc:size=arg1,size=arg2 -- $t @MARKER@|2|field 'size' given twice"
		"--sym malloc:size=arg1,,objects=1 -- $t @MARKER@|2|an empty field"
		"diff @TMP@/bi.real.prof /dev/zero|nz|/dev/zero,not a heap profile"
		"diff @TMP@/bi.real.prof @TMP@|nz|is a directory"
		"diff @TMP@/bi.real.prof @TMP@/bi.zeros.gz|nz|bi.zeros.gz,not a profile.proto inside"
		"diff @TMP@/bi.real.prof @TMP@/bi.neg.prof|nz|bi.neg.prof,negative"
		"diff @TMP@/bi.real.prof @TMP@/bi.sum.prof|nz|bi.sum.prof,past 64 bits"
		"diff @TMP@/bi.real.prof @TMP@/bi.many.prof|nz|bi.many.prof,more stacks than"
		"diff @TMP@/bi.real.prof @TMP@/bi.longline.prof|nz|bi.longline.prof,longer than"
	)
	for row in "${rows[@]}"; do
		IFS='|' read -r args rc words <<<"$row"
		i=$((i + 1))
		key=bi.$i
		args=${args//@TMP@/$TMP}
		args=${args//@TB@/$TB}
		args=${args//@NOPID@/$nopid}
		args=${args//@MARKER@/$marker}
		words=${words//@NOPID@/$nopid}
		rm -f "$marker"
		t0=$(date +%s%N)
		# shellcheck disable=SC2086
		ht $key $args
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ "$rc" = nz ]; then
			d=$(one_line_diag $key)
			{ [ "$RC" -ge 1 ] && [ "$RC" -le 123 ]; } || d+="exit status $RC, want an error (1-123)"$'\n'
			IFS=, read -r -a w <<<"$words"
			for x in "${w[@]}"; do
				local ok=0 alt y
				IFS='|' read -r -a alt <<<"$x"
				for y in "${alt[@]}"; do grep -qiF -- "$y" "$TMP/$key.err" && ok=1; done
				[ "$ok" = 1 ] || d+="stderr does not mention '$x': $(head -1 "$TMP/$key.err")"$'\n'
			done
		else
			IFS=, read -r -a w <<<"$words"
			d=$(err_diag $key "$rc" "${w[@]}")
		fi
		[ -e "$marker" ] && d+=$'\n'"the command ran (it created its marker file)"
		case " $args " in
		*" -o "*) [ "$ms" -lt 2000 ] || d+=$'\n'"took $ms ms, want under 2000 (fail before tracing)" ;;
		esac
		case $args in
		*bi.link*) [ "$(cat "$TMP/bi.victim")" = keep ] || d+=$'\n'"the symlink's target was written" ;;
		esac
		report "badinput: heaptrace $(rel "$args") -> exit $rc, one line with: $words" "$d"
	done

	# A --sym that names nothing in the program: the program runs (one it
	# executes could have the function: a wrapper script, a shim), and at its
	# end, since none had it, exit 2 with one line, and no profile.
	rm -f "$marker"
	ht bi.nosym --sym nosuchsym_xyz -- "$t" "$marker"
	d=$(err_diag bi.nosym 2 nosuchsym_xyz "$t")
	[ -e "$marker" ] || d+=$'\n'"the command did not run"
	[ -s "$TMP/bi.nosym.out" ] && d+=$'\n'"a profile was written: $(head -c 80 "$TMP/bi.nosym.out")"
	report "badinput: heaptrace --sym nosuchsym_xyz -- $t -> runs it, then exit 2, one line naming the function, no profile" "$d"
	rm -f "$marker"

	# What --max-allocs costs: beyond the machine's memory refused, a big share said.
	local mt n
	mt=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
	ht bi.kmem_over --max-allocs 4000000000 -o "$TMP/bi.kmem.heap" -- "$t" "$marker"
	d=$(one_line_diag bi.kmem_over)
	[ "$RC" != 0 ] || d+="exit status 0, want an error"$'\n'
	grep -q 'would take [0-9]* MiB of kernel memory, more than this machine' "$TMP/bi.kmem_over.err" ||
		d+="stderr: $(cat "$TMP/bi.kmem_over.err")"$'\n'
	[ -e "$marker" ] && d+="the command ran"$'\n'
	report "badinput: --max-allocs 4000000000 -> refused: more kernel memory than the machine has" "$d"
	n=$((mt * 1024 / 2 / 130))
	rm -f "$marker"
	ht bi.kmem_big --max-allocs "$n" -o "$TMP/bi.kmem.heap" -- "$t" "$marker"
	d=$(rc_diag bi.kmem_big 0)
	grep -qE "could take [0-9]+ MiB of kernel memory, [0-9]+% of this machine's" "$TMP/bi.kmem_big.err" ||
		d+="no cost line: $(cat "$TMP/bi.kmem_big.err")"$'\n'
	report "badinput: --max-allocs $n (half the memory if full) -> runs, and says what it could cost" "$d"

	# A profile with CRLF line ends is the same profile.
	sed 's/$/\r/' "$TMP/bi.real.prof" >"$TMP/bi.crlf.prof"
	ht bi.crlf diff -f collapsed "$TMP/bi.real.prof" "$TMP/bi.crlf.prof"
	ht bi.lf diff -f collapsed "$TMP/bi.real.prof" "$TMP/bi.real.prof"
	d=$(rc_diag bi.crlf 0)
	cmp -s "$TMP/bi.crlf.out" "$TMP/bi.lf.out" || d+="the CRLF diff differs from the LF one"$'\n'
	report "badinput: heaptrace diff reads a CRLF profile like the LF one" "$d"

	# A profile of made-up addresses, every frame distinct (8,000 records of
	# 64 frames, 10 MB): the output step used to keep a symbol entry per
	# address, 150 MB for -f top and 160 MB for -f collapsed; -f proto a
	# function and a string per address and the whole message twice, 116 MB.
	# Now ~26 MB (top, collapsed) and ~37 MB (proto).
	awk 'BEGIN { print "heap profile:    1:  5 [    1:  5] @ heapprofile"; a = 4096
		for (i = 0; i < 8000; i++) { l = "     1:  5 [     1:  5] @"
			for (k = 0; k < 64; k++) { l = l sprintf(" 0x%016x", a); a += 16 }
			print l } }' >"$TMP/bi.distinct.prof"
	local bound=60000 how="" rss names
	if readelf -d "$(readlink -f "$HT")" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
		bound=300000 how=" (ASan build)"
	fi
	for x in top collapsed proto; do
		/usr/bin/time -f '%M' -o "$TMP/bi.distinct.$x.rss" "$HT" diff -f "$x" "$TMP/bi.real.prof" \
			"$TMP/bi.distinct.prof" >"$TMP/bi.distinct.$x.out" 2>"$TMP/bi.distinct.$x.err"
		RC=$?
		rss=$(tail -1 "$TMP/bi.distinct.$x.rss")
		d=""
		[ "$RC" = 0 ] || d+="exit status $RC: $(head -1 "$TMP/bi.distinct.$x.err")"$'\n'
		if [ "$x" = proto ]; then
			# Names "[0x...]" for the first 65,536 of them (as for a real profile's few), then the address alone.
			gzip -t "$TMP/bi.distinct.$x.out" 2>/dev/null || d+="the output is no whole gzip stream"$'\n'
			names=$(gzip -dc "$TMP/bi.distinct.$x.out" 2>/dev/null | grep -ao '\[0x[0-9a-f]*\]' | sort -u | wc -l)
			[ "$names" = 65536 ] || d+="$names made-up names [0x...] in the output, want 65536 (of 512000 addresses)"$'\n'
		else
			grep -q '\[0x[0-9a-f]*\]' "$TMP/bi.distinct.$x.out" || d+="no raw address [0x...] in the output"$'\n'
		fi
		[ -n "$rss" ] && [ "$rss" -lt "$bound" ] || d+="peak RSS '${rss}' KiB"$'\n'
		report "badinput: diff -f $x of a 10 MB profile of distinct addresses: peak RSS ${rss:-?} KiB < $bound$how" "$d"
	done

	# Blanks around a number (the rows above are split at blanks): refused, not skipped by strtoul.
	for x in ' 5' '5 '; do
		rm -f "$marker"
		ht bi.blank -p "$x" -- "$t" "$marker"
		d=$(err_diag bi.blank 2 "-p" "'$x'")
		[ -e "$marker" ] && d+=$'\n'"the command ran (it created its marker file)"
		report "badinput: heaptrace -p '$x' -> exit 2, one line naming '$x'" "$d"
	done

	# Root refused by the kernel is not told to run as root.
	if ! readlink /proc/1/exe >/dev/null 2>&1; then
		ht bi.pid1 -p 1 -d 1
		d=$(one_line_diag bi.pid1)
		grep -q 'run as root' "$TMP/bi.pid1.err" && d+="says 'run as root' to root: $(cat "$TMP/bi.pid1.err")"$'\n'
		grep -q 'even for root' "$TMP/bi.pid1.err" || d+="no reason given: $(cat "$TMP/bi.pid1.err")"$'\n'
		report "badinput: -p 1 refused to root -> the reason, not 'run as root'" "$d"
	else
		echo "# badinput: PID 1 is readable by root here; the refused-root message is not exercised"
	fi
}

# ---------------------------------------------------------------------------
# Output files (issue: safe as root on a shared machine).  Another local user
# plants things where root heaptrace will write: a FIFO must not block it, a
# planted file in a sticky directory must not receive the profile, and a run
# that fails must leave the previous file as it was.  A profile that cannot be
# put in place is kept under its temporary name, never dropped.
scenario_outfiles() {
	local u=htout$$ dir d="" nopid f ino
	nopid=$(free_pid)
	if ! useradd -M -N -s /usr/sbin/nologin "$u" 2>"$TMP/of.useradd"; then
		fail "outfiles: create test user $u" "$(cat "$TMP/of.useradd")"
		return
	fi
	dir=$(mktemp -d /tmp/ht-sticky.XXXXXX)
	chmod 1777 "$dir"
	runuser -u "$u" -- mkfifo "$dir/fifo.heap"
	runuser -u "$u" -- sh -c "echo planted >'$dir/planted.heap'; chmod 666 '$dir/planted.heap'"

	ht of.fifo -o "$dir/fifo.heap" -- "$TB/t_pprof"
	d=$(one_line_diag of.fifo)
	{ [ "$RC" -ge 1 ] && [ "$RC" -le 123 ]; } || d+="exit status $RC, want an error (1-123)"$'\n'
	grep -q "not a regular file (another user's FIFO" "$TMP/of.fifo.err" || d+="stderr: $(head -1 "$TMP/of.fifo.err")"$'\n'
	[ -p "$dir/fifo.heap" ] || d+="the FIFO was replaced"$'\n'
	report "outfiles: -o at another user's FIFO -> refused at once (exit $RC), not blocked, FIFO untouched" "$d"

	ht of.planted -o "$dir/planted.heap" -- "$TB/t_pprof"
	d=$(one_line_diag of.planted)
	{ [ "$RC" -ge 1 ] && [ "$RC" -le 123 ]; } || d+="exit status $RC, want an error (1-123)"$'\n'
	grep -q "belongs to user $(id -u "$u") in the sticky directory" "$TMP/of.planted.err" ||
		d+="stderr: $(head -1 "$TMP/of.planted.err")"$'\n'
	[ "$(cat "$dir/planted.heap")" = planted ] || d+="the planted file was written"$'\n'
	report "outfiles: -o at another user's file in a sticky directory -> refused, the file untouched" "$d"

	# Failed runs keep what was there (a bad PID, a bad --sym).
	echo data >"$TMP/of.keep"
	ino=$(stat -c %i "$TMP/of.keep")
	ht of.nopid -o "$TMP/of.keep" -p "$nopid"
	ht of.badsym -o "$TMP/of.keep" --sym nosuchsym_xyz -- "$TB/t_pprof"
	d=""
	[ "$(cat "$TMP/of.keep")" = data ] || d+="of.keep now holds: $(head -c 80 "$TMP/of.keep")"$'\n'
	[ "$(cat "$TMP/of.nopid.rc")" != 0 ] && [ "$(cat "$TMP/of.badsym.rc")" != 0 ] ||
		d+="exit statuses $(cat "$TMP/of.nopid.rc") and $(cat "$TMP/of.badsym.rc"), want errors"$'\n'
	report "outfiles: failed runs (-p $nopid, a bad --sym) leave the previous -o file as it was" "$d"

	# A good run replaces it with a new file; nothing temporary is left.
	ht of.good -o "$TMP/of.keep" -- "$TB/t_pprof"
	d=$(rc_diag of.good 0)
	head -1 "$TMP/of.keep" | grep -q '^heap profile:' || d+="not a profile: $(head -1 "$TMP/of.keep")"$'\n'
	[ "$(stat -c %i "$TMP/of.keep")" != "$ino" ] || d+="written in place (same inode), not replaced"$'\n'
	f=$(find "$TMP" -maxdepth 1 -name '.of.keep.*')
	[ -z "$f" ] || d+="temporary files left: $f"$'\n'
	report "outfiles: a good run replaces the -o file with a new one (new inode), no temporary left" "$d"

	# One's own FIFO with no reader: SIGTERM ends the wait for one (issue 26),
	# said in a line, exit 1.  Sent every second: the first may still find
	# heaptrace tracing, which it stops; a later one finds it waiting.
	mkfifo "$TMP/of.own.fifo"
	ht_bg of.ownfifo -o "$TMP/of.own.fifo" -- "$TB/t_pprof"
	local k hpid
	for k in $(seq 1 15); do
		sleep 1
		hpid=$(ps -o pid= --ppid "$HPID" 2>/dev/null | tr -d ' ')
		[ -n "$hpid" ] || break
		kill -TERM "$hpid" 2>/dev/null
	done
	ht_bg_wait of.ownfifo "$HPID" 10
	d=""
	[ "$(cat "$TMP/of.ownfifo.rc")" = 1 ] || d+="exit status $(cat "$TMP/of.ownfifo.rc"), want 1"$'\n'
	grep -q "^heaptrace: SIGTERM while waiting for a reader of the FIFO $TMP/of.own.fifo: nothing was written, the profile is lost$" \
		"$TMP/of.ownfifo.err" || d+="stderr: $(cat "$TMP/of.ownfifo.err")"$'\n'
	grep -q "cannot write" "$TMP/of.ownfifo.err" && d+="a second line on the loss: $(grep "cannot write" "$TMP/of.ownfifo.err")"$'\n'
	[ -p "$TMP/of.own.fifo" ] || d+="the FIFO is gone"$'\n'
	report "outfiles: -o at one's own FIFO with no reader: SIGTERM ends the wait, the loss said, exit 1" "$d"

	# Under sudo the profile belongs to the user who asked for it.
	echo "SUDO_UID=$(id -u "$u") SUDO_GID=$(id -g "$u") heaptrace -o \$TMP/of.sudo.heap -- build/tests/t_pprof" \
		>"$TMP/of.sudo.cmd"
	SUDO_UID=$(id -u "$u") SUDO_GID=$(id -g "$u") "$HT" -o "$TMP/of.sudo.heap" -- "$TB/t_pprof" \
		>"$TMP/of.sudo.out" 2>"$TMP/of.sudo.err" </dev/null
	echo $? >"$TMP/of.sudo.rc"
	d=$(rc_diag of.sudo 0)
	[ "$(stat -c %U:%a "$TMP/of.sudo.heap" 2>&1)" = "$u:644" ] ||
		d+="owner and mode: $(stat -c %U:%a "$TMP/of.sudo.heap" 2>&1)"$'\n'
	report "outfiles: under sudo the profile is the invoking user's (SUDO_UID), mode 644" "$d"

	# Planted while tracing: the profile stays under its temporary name, said on stderr.
	echo "heaptrace -d 2 -o \$DIR/late.heap -- sleep 30 (user $u creates late.heap meanwhile)" >"$TMP/of.late.cmd"
	timeout -k 5 60 "$HT" -d 2 -o "$dir/late.heap" -- sleep 30 >"$TMP/of.late.out" 2>"$TMP/of.late.err" </dev/null &
	local hp=$!
	sleep 1
	runuser -u "$u" -- sh -c "echo mine >'$dir/late.heap'"
	wait "$hp"
	echo $? >"$TMP/of.late.rc"
	d=""
	[ "$(cat "$TMP/of.late.rc")" != 0 ] || d+="exit status 0, want an error"$'\n'
	[ "$(cat "$dir/late.heap")" = mine ] || d+="the planted file was replaced"$'\n'
	f=$(sed -nE 's/.*will not replace .*: the profile is in (.*)$/\1/p' "$TMP/of.late.err")
	if [ -z "$f" ] || ! head -1 "$f" 2>/dev/null | grep -q '^heap profile:'; then
		d+="no kept profile named on stderr: $(cat "$TMP/of.late.err")"$'\n'
	fi
	report "outfiles: a file planted during tracing is not replaced; the profile is kept and named" "$d"

	rm -rf "$dir"
	userdel "$u" 2>/dev/null
}
