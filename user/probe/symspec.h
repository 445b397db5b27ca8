/*
 * --sym / --free-sym / --reset-sym specifications:
 *   SPEC := NAME[@OBJECT][:FIELD=EXPR[,FIELD=EXPR]...]
 *   EXPR := sums of products of argN (1-6), numbers, ret and reads of the
 *           target's memory, *(argN+N), *(ret-N), *GLOBAL; '*' binds tighter than '+'
 * compiled into the ht_alloc_spec descriptors the BPF programs evaluate.
 */
#ifndef HT_SYMSPEC_H
#define HT_SYMSPEC_H

#include <stddef.h>

#include "heaptrace.h"

struct sym_spec {
	char *name;
	char *object;                   /* @OBJECT, or NULL: the executable, then libraries */
	struct ht_alloc_spec spec;
	/*
	 * spec.mem[k] reads a global by name (*NAME, *(NAME+N)): resolved in
	 * the function's object when it is probed (probes_add_symbol).
	 */
	char *mem_sym[HT_MAX_MEM];
};

/*
 * Parse one SPEC of the given kind, with the defaults filled in (size=arg1,
 * objects=1, ptr=ret for --sym; ptr=arg1 for --free-sym; arena=arg1 for
 * --reset-sym).  Returns 0, or -1 with a one-line reason in err.
 */
int symspec_parse(const char *text, enum ht_spec_kind kind, struct sym_spec *out, char *err, size_t len);
void symspec_free(struct sym_spec *s);

#endif
