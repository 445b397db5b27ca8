#!/usr/bin/env bash
# The --sym, --free-sym and --reset-sym spec parser (user/probe/symspec.c)
# from the command line: a bad spec is one line that quotes it and says
# what is wrong, exit 2; good ones are taken (parsing reaches --version).
# tests/unit/test_symspec.c checks the descriptors they parse into.
source "$(dirname "$0")/lib.sh"

# rows: OPTION|SPEC|MESSAGE after "heaptrace: --OPTION 'SPEC': "
while IFS='|' read -r opt spec msg; do
	[ -z "$opt" ] && continue
	run spec --"$opt" "$spec" /nonexistent/heaptrace-check-command
	want="heaptrace: --$opt '$spec': $msg"
	d=$(one_error spec 2)
	[ -z "$d" ] && [ "$(cat "$TMP/spec.err")" != "$want" ] && d="stderr: $(cat "$TMP/spec.err")"$'\n'"want:   $want"
	report "specs: --$opt '$spec': $msg" "$d"
done <<'ROWS'
sym||no symbol name
sym|@libc.so.6|no symbol name
sym|f@|no object after '@'
sym|f:|nothing after ':' (FIELD=EXPR,...)
sym|f:,|an empty field (FIELD=EXPR,...)
sym|f:size=arg1,|an empty field (FIELD=EXPR,...)
sym|f:bogus=1|unknown field 'bogus' (--sym takes size, objects, ptr, arena, free, out and round)
sym|f:size=|field 'size' needs a value (size=EXPR)
sym|f:size|field 'size' needs a value (size=EXPR)
sym|f:size=arg7|arg7 is out of range: arguments are arg1 to arg6
sym|f:size=arg0|arg0 is out of range: arguments are arg1 to arg6
sym|f:size=arg1,size=arg2|field 'size' given twice
sym|f:size=*(arg1|bad expression: expected ')' at 'the end'
sym|f:size=*arg1|bad expression: write *(arg1) to read memory at arg1
sym|f:size=arg1+|bad expression: expected argN, ret, a number or *(...) at 'the end'
sym|f:size=arg1)|bad expression: unexpected ')'
sym|f:size=*(arg1-x)|bad expression: *(arg1-...) takes a number
sym|f:size=99999999999999999999999|bad number in the expression
sym|f:size=1+2+3+4+5+6+7+8+9|more than 4 terms in an expression
sym|f:size=arg1*arg2*arg3*arg4*arg5|more than 4 factors in a term
sym|f:free=arg1+arg2|free takes an argument, arg1 to arg6, not 'arg1+arg2'
sym|f:free=arg9|free takes an argument, arg1 to arg6, not 'arg9'
sym|f:out=ret|out takes an argument, arg1 to arg6, not 'ret'
sym|f:round=word|round takes page, not 'word'
free-sym|f:size=arg1|unknown field 'size' (--free-sym takes ptr)
free-sym|f:arena=arg1|unknown field 'arena' (--free-sym takes ptr)
free-sym|f:ptr=ret|a free or reset has no return value: ret cannot be used
reset-sym|f:size=arg1|unknown field 'size' (--reset-sym takes arena)
reset-sym|f:ptr=arg1|unknown field 'ptr' (--reset-sym takes arena)
reset-sym|f:arena=ret|a free or reset has no return value: ret cannot be used
ROWS

# Good specs, each alone: taken.
while IFS='|' read -r opt spec; do
	[ -z "$opt" ] && continue
	run good --"$opt" "$spec" --version
	report "specs: --$opt '$spec' is taken" \
		"$([ "$RC" = 0 ] || echo "exit $RC: $(cat "$TMP/good.err")")"
done <<'ROWS'
sym|arena_alloc
sym|arena_alloc@libarena.so
sym|arena_alloc:size=arg2*arg4,objects=arg4,arena=arg1
sym|xrealloc:size=arg3,free=arg2
sym|getbuf:out=arg4,size=arg1
sym|pool_get:size=*(arg1+16),ptr=ret
sym|page_alloc:size=arg1,round=page
sym|f:size=*(ret-8)
sym|f:size=*global_size
sym|f:size=arg1*arg2+arg3*8+64
free-sym|pool_free
free-sym|pool_free:ptr=arg2
reset-sym|arena_reset:arena=arg1
ROWS
summary
