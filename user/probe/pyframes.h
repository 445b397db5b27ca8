/*
 * Python frames: what an interpreter's file says of where its frames are
 * (its version's layout: user/symbolize/pyframes.h), and the stub's part
 * of it for a process (stub/python.c reads the frames).
 */
#ifndef HT_PYFRAMES_H
#define HT_PYFRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "stub/stub.h"
#include "symbolize/pyframes.h"
#include "util/elfobj.h"

/* What the interpreter's file says (ELF virtual addresses); on false, why. */
struct cpy_frames {
	bool on;
	char why[160];
	char *path;
	const struct py_layout *lay;
	uint64_t eval, eval_size;       /* _PyEval_EvalFrameDefault */
	uint64_t eval_off;              /* its file offset: where the process has it tells the load bias */
	uint64_t tstate;                /* tstate_current's address, or the TLS variable's offset in the block */
	bool tls;
	uint64_t modid_slot;            /* TLS: the GOT slot of the module's id; 0: the executable's (module 1) */
	uint64_t code_type;             /* PyCode_Type */
};

/* o is the object that holds CPython: fill f (f->on false, f->why: Python frames are off and why). */
void pyframes_plan(struct cpy_frames *f, struct elfobj *o);

/* 3.minor of the interpreter o: Py_Version (3.11+, PY_VERSION_HEX), else the file's name (libpython3.10.so, python3.10); -1: unknown. */
int pyframes_minor(struct elfobj *o);

/*
 * The stub's part (struct stub_py) for a process whose memory map is maps:
 * the file's addresses moved by where it is loaded, and PyCode_Type's
 * there.  0, or -1 (py left off).
 */
int pyframes_stub(const struct cpy_frames *f, const char *maps, struct stub_py *py, uint64_t *code_type);

void pyframes_free(struct cpy_frames *f);

#endif
