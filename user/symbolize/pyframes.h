/*
 * The names of Python frames (stub/python.c's words, HT_PY_FRAME): each
 * code object's qualified name, file and first line, read from the process
 * when a stack naming it is first seen (the drain sees a stack within
 * HT_RING_PERIOD_MS of its allocation), or from the stub's log of them
 * where the code is gone since, and kept for the profiles written after.
 * Process-wide: the drain thread notes, the outputs look up.
 */
#ifndef HT_SYM_PYFRAMES_H
#define HT_SYM_PYFRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "stub/stub.h"

/*
 * Where each CPython version keeps the running thread's frames and what a
 * code object holds: the layouts of 3.10-3.13's x86-64 release builds, as
 * their internal headers define them.
 */
struct py_layout {
	int minor;                      /* 3.minor */
	enum stub_py_kind kind;
	uint16_t tstate_current;        /* in _PyRuntime: the GIL holder's state (3.10, 3.11); 0: a TLS variable */
	uint16_t thread_id, cframe, current_frame;
	uint16_t frame_code, frame_instr, frame_previous, frame_mark;
	uint8_t owner_cstack;
	uint16_t code_units, code_name, code_filename, code_firstlineno, code_linetable;
	uint16_t unicode_ascii, unicode_compact;        /* where a compact string's characters start */
};

/* The layout of CPython 3.minor, or NULL: frames of another are not read. */
const struct py_layout *py_layout_of(int minor);

/*
 * pid runs CPython of layout lay, its PyCode_Type at code_type: its
 * frames' code objects can be read; log: where its stub's log of names
 * is (struct stub_data's py_log_n), 0: none.
 */
void pyf_process(pid_t pid, const struct py_layout *lay, uint64_t code_type, uint64_t log);

/* Any process of Python frames: the drain looks for their words only then. */
bool pyf_active(void);

/* The Python frames (word pairs) of a stack of pid seen: their code objects are read now, those not read yet. */
void pyf_note_stack(pid_t pid, const uint64_t *pcs, uint32_t n);

/*
 * The stacks among a ring's c slots from tail on (exact mode's batches,
 * about to be drained), of process pid: pyf_note_stack for each.
 */
struct ht_ev;
void pyf_note_ring(pid_t pid, const struct ht_ev *slots, uint64_t tail, uint32_t c);

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

/*
 * A code object named by a profile file (heaptrace diff's inputs: the
 * legacy text's PYTHON_CODE lines, proto's Functions of the [python]
 * mapping): its index in this process, the same for the same name, file
 * and first line whichever file named it (each kept to 512 bytes); 0
 * when memory runs out or 65,536 codes are known (its frames then read as
 * unnamed code).
 */
uint64_t pyf_define(const char *func, const char *file, int firstlineno);

/* The code object's address of a profile's Python frame (0: unknown). */
uint64_t pyf_code_address(uint64_t word);

/* Code objects read, and those that could not be (gone, or not a code object any more). */
void pyf_counts(uint64_t *codes, uint64_t *lost);

#endif
