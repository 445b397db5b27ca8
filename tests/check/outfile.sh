#!/usr/bin/env bash
# -o at a FIFO of one's own is written in place, when its reader comes; with
# none, SIGTERM or SIGINT ends the wait: one line says the output is lost,
# exit status 1.  Driven by --list-probes, which writes into -o like a
# profile and needs no root (the traced session's wait is the root suite's,
# scenario outfiles).
source "$(dirname "$0")/lib.sh"
mkfifo "$TMP/fifo"
run stdout --list-probes "$HT"
[ "$RC" = 0 ] && [ -s "$TMP/stdout.out" ] || fail "outfile: --list-probes $HT writes its list" "exit $RC: $(cat "$TMP/stdout.err")"

for sig in TERM INT; do
	start=$SECONDS
	# env: SIGINT is ignored in a background job of a script (make check &), and heaptrace keeps an ignored one so.
	timeout -k 5 --preserve-status -s "$sig" 1 env --default-signal=INT,TERM "$HT" --list-probes -o "$TMP/fifo" "$HT" \
		>"$TMP/$sig.out" 2>"$TMP/$sig.err" </dev/null
	RC=$?
	d=$(one_error "$sig" 1)
	want="heaptrace: SIG$sig while waiting for a reader of the FIFO $TMP/fifo: nothing was written, the profile is lost"
	[ -z "$d" ] && [ "$(cat "$TMP/$sig.err")" != "$want" ] && d="stderr: $(cat "$TMP/$sig.err")"$'\n'"want:   $want"
	[ $((SECONDS - start)) -le 3 ] || d+="took $((SECONDS - start)) s"$'\n'
	[ -p "$TMP/fifo" ] || d+="the FIFO is gone"$'\n'
	report "outfile: -o FIFO with no reader, SIG$sig: ends at once, one line, exit 1" "$d"
done

# A reader that comes late gets the whole output.
(sleep 0.5; cat "$TMP/fifo" >"$TMP/late.read") &
reader=$!
run late --list-probes -o "$TMP/fifo" "$HT"
wait "$reader"
report "outfile: -o FIFO, its reader 0.5 s late: the whole list, exit 0" \
	"$([ "$RC" = 0 ] || echo "exit $RC: $(cat "$TMP/late.err")")$(cmp "$TMP/late.read" "$TMP/stdout.out" 2>&1)"
summary
