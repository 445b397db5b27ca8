/*
 * The names of Python frames (stub/python.c's words, HT_PY_FRAME): each
 * code object's qualified name, file and line table, read from the process
 * when a stack naming it is first seen (while the code is alive: the drain
 * sees a stack within HT_RING_PERIOD_MS of its allocation), kept for the
 * profiles written after, and a frame's line found from its instruction.
 * Process-wide: the drain thread notes, the outputs look up.
 */
#ifndef HT_SYM_PYFRAMES_H
#define HT_SYM_PYFRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct py_layout;

/* pid runs CPython of layout lay, its PyCode_Type at code_type: its frames' code objects can be read. */
void pyf_process(pid_t pid, const struct py_layout *lay, uint64_t code_type);

/* Any process of Python frames: the drain looks for their words only then. */
bool pyf_active(void);

/* The Python frames (word pairs) of a stack of pid seen: their code objects are read now, those not read yet. */
void pyf_note_stack(pid_t pid, const uint64_t *pcs, uint32_t n);

/*
 * A stack's Python frames as a profile holds them: each pair of words one
 * word, its code's index (+ 1; 0: never noted) in place of its address.
 * The new depth.
 */
uint32_t pyf_compact(uint64_t *pcs, uint32_t n);

/*
 * A profile's Python frame: qualified name, file, line (0: unknown).
 * false: its code object could not be read (gone before it was seen:
 * counted by pyf_counts()).
 */
bool pyf_frame(uint64_t word, const char **func, const char **file, int *line);

/* The code object's address of a profile's Python frame (0: unknown). */
uint64_t pyf_code_address(uint64_t word);

/* Code objects read, and those that could not be (gone, or not a code object any more). */
void pyf_counts(uint64_t *codes, uint64_t *lost);

#endif
