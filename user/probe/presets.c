#include <stdio.h>
#include <string.h>

#include "probe/presets.h"

#define MAX_SPECS 8

/*
 * Each preset adds to the malloc family (unless --no-libc): the runtime's
 * own allocator serves some requests from memory it got from malloc or
 * mmap, and passes others on to malloc.  A malloc made inside a traced
 * allocator call counts once, as that call; a free made inside a --free-sym
 * function of the same block counts once, as that function's.
 */
static const struct preset {
	const char *name;
	const char *option;     /* in messages: "--preset python PyObject_Malloc: ..." */
	const char *title;
	const char *notes;
	bool cpython;           /* the functions behind CPython's allocator tables too (probe/cpython.c) */
	struct {
		enum ht_spec_kind kind;
		const char *spec;
	} specs[MAX_SPECS];
} presets[] = {
	{
		"python", "preset python",
		"CPython's object allocator (pymalloc) and the PyMem_* domain",
		"pymalloc serves requests of up to 512 bytes from arenas of its own and passes larger\n"
		"ones on to malloc.  PyMem_Raw* are malloc, calloc, realloc and free by default: the\n"
		"malloc family has them.  Also probed: the functions behind the wrappers' allocator\n"
		"tables (_PyObject, _PyMem; _PyRuntime.allocators in 3.12+), found from the wrappers'\n"
		"code; where an LTO+PGO build (Debian's) inlines them, their table slots are pointed at\n"
		"a jump to the same function while tracing, unless --no-inject (docs/custom-allocators.md).",
		true,
		{
			{ HT_SPEC_ALLOC, "PyObject_Malloc:size=arg1" },
			{ HT_SPEC_ALLOC, "PyObject_Calloc:size=arg1*arg2" },
			{ HT_SPEC_ALLOC, "PyObject_Realloc:size=arg2,free=arg1" },
			{ HT_SPEC_FREE, "PyObject_Free:ptr=arg1" },
			{ HT_SPEC_ALLOC, "PyMem_Malloc:size=arg1" },
			{ HT_SPEC_ALLOC, "PyMem_Calloc:size=arg1*arg2" },
			{ HT_SPEC_ALLOC, "PyMem_Realloc:size=arg2,free=arg1" },
			{ HT_SPEC_FREE, "PyMem_Free:ptr=arg1" },
		},
	},
	{
		"jemalloc", "preset jemalloc",
		"jemalloc's own API, beside the malloc family",
		"xallocx resizes in place and returns the block's real size: the block is counted again\n"
		"at that size.  nallocx and sallocx only compute sizes.",
		false,
		{
			{ HT_SPEC_ALLOC, "mallocx:size=arg1" },
			{ HT_SPEC_ALLOC, "rallocx:size=arg2,free=arg1" },
			{ HT_SPEC_ALLOC, "xallocx:size=ret,ptr=arg1,free=arg1" },
			{ HT_SPEC_FREE, "sdallocx:ptr=arg1" },
			{ HT_SPEC_FREE, "dallocx:ptr=arg1" },
		},
	},
};

#define N_PRESETS (int)(sizeof(presets) / sizeof(presets[0]))

int preset_spec(const char *name, int i, const char **text, enum ht_spec_kind *kind, const char **option)
{
	for (int p = 0; p < N_PRESETS; p++) {
		if (strcmp(presets[p].name, name))
			continue;
		if (i < 0 || i >= MAX_SPECS || !presets[p].specs[i].spec)
			return 1;
		*text = presets[p].specs[i].spec;
		*kind = presets[p].specs[i].kind;
		*option = presets[p].option;
		return 0;
	}
	return -1;
}

static const char *option_of(enum ht_spec_kind kind)
{
	return kind == HT_SPEC_ALLOC ? "--sym" : kind == HT_SPEC_FREE ? "--free-sym" : "--reset-sym";
}

void presets_print(FILE *f)
{
	for (int p = 0; p < N_PRESETS; p++) {
		fprintf(f, "%s--preset %s: %s\n", p ? "\n" : "", presets[p].name, presets[p].title);
		for (int i = 0; i < MAX_SPECS && presets[p].specs[i].spec; i++)
			fprintf(f, "  %s '%s'\n", option_of(presets[p].specs[i].kind), presets[p].specs[i].spec);
		for (const char *l = presets[p].notes, *e; *l; l = *e ? e + 1 : e) {
			e = strchrnul(l, '\n');
			fprintf(f, "  # %.*s\n", (int)(e - l), l);
		}
	}
}

bool preset_cpython(const char *option)
{
	for (int p = 0; p < N_PRESETS; p++)
		if (presets[p].cpython && option && !strcmp(option, presets[p].option))
			return true;
	return false;
}

const char *preset_name(int i)
{
	return i >= 0 && i < N_PRESETS ? presets[i].name : NULL;
}

const char *preset_names(void)
{
	static char names[128];

	if (!names[0])
		for (int p = 0; p < N_PRESETS; p++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", p ? ", " : "",
				 presets[p].name);
	return names;
}
