/*
 * Python frames: where each CPython version keeps the running thread's
 * frames and what a code object holds (the layouts of 3.10-3.13's x86-64
 * release builds, as their internal headers define them), and what an
 * interpreter's file says of where they are.  The stub reads the frames
 * (stub/python.c); user/symbolize/pyframes.c the code objects they name.
 */
#ifndef HT_PYFRAMES_H
#define HT_PYFRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "stub/stub.h"
#include "util/elfobj.h"

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

/* What the interpreter's file says (ELF virtual addresses); on false, why. */
struct cpy_frames {
	bool on;
	char why[160];
	char *path;
	const struct py_layout *lay;
	uint64_t eval, eval_size;       /* _PyEval_EvalFrameDefault */
	uint64_t tstate;                /* tstate_current's address, or the TLS variable's offset in the block */
	bool tls;
	uint64_t modid_slot;            /* TLS: the GOT slot of the module's id; 0: the executable's (module 1) */
	uint64_t code_type;             /* PyCode_Type */
};

/* o is the object that holds CPython: fill f (f->on false, f->why: Python frames are off and why). */
void pyframes_plan(struct cpy_frames *f, struct elfobj *o);

/*
 * The stub's part (struct stub_py) for a process whose memory map is maps:
 * the file's addresses moved by where it is loaded, and PyCode_Type's
 * there.  0, or -1 (py left off).
 */
int pyframes_stub(const struct cpy_frames *f, const char *maps, struct stub_py *py, uint64_t *code_type);

void pyframes_free(struct cpy_frames *f);

#endif
