/* libFuzzer target: the --sym / --free-sym / --reset-sym parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe/symspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	char err[512];

	if (!text)
		return 0;
	for (int kind = HT_SPEC_ALLOC; kind <= HT_SPEC_RESET; kind++) {
		struct sym_spec s;
		if (!symspec_parse(text, kind, &s, err, sizeof(err))) {
			/* A spec that parses holds bounded expressions. */
			if (s.spec.size.n > HT_EXPR_TERMS || s.spec.ptr.n > HT_EXPR_TERMS)
				abort();
			symspec_free(&s);
		}
	}
	free(text);
	return 0;
}
