/*
 * The Python frames of a profile file read back (heaptrace diff): the
 * file's code indices, which the process that wrote it numbered, become
 * this process's (symbolize/pyframes.h's pyf_define), one index for one
 * name, file and first line whichever file named it, so that two files'
 * frames of the same code compare equal.
 */
#ifndef HT_PROFILE_PYCODE_H
#define HT_PROFILE_PYCODE_H

#include <stddef.h>
#include <stdint.h>

struct pycode_map {
	struct pycode_pair {
		uint64_t from, to;      /* the file's index, this process's */
	} *v;                           /* by from, once sorted */
	size_t n, cap;
	int sorted;
};

/* The file's code index from: func, file, first line.  -1: out of memory. */
int pycode_add(struct pycode_map *m, uint64_t from, const char *func, const char *file, int firstlineno);

/* A pc of the file: a Python frame's word with this process's index (0: a code the file did not name), else pc. */
uint64_t pycode_word(struct pycode_map *m, uint64_t pc);

void pycode_free(struct pycode_map *m);

#endif
