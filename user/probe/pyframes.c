#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/pyframes.h"
#include "util/procfs.h"

int pyframes_minor(struct elfobj *o)
{
	uint64_t va, v = 0;

	if (elfobj_object(o, "Py_Version", &va) && !elfobj_read(o, va, &v, sizeof(v)) && (v >> 24) == 3)
		return (int)(v >> 16 & 0xff);
	const char *b = strrchr(o->path, '/');
	b = b ? b + 1 : o->path;
	const char *p = strstr(b, "python3.");
	return p ? atoi(p + 8) : -1;
}

void pyframes_plan(struct cpy_frames *f, struct elfobj *o)
{
	int minor = pyframes_minor(o);
	uint64_t rt;
	int64_t off;

	memset(f, 0, sizeof(*f));
	if (minor < 0 || !(f->lay = py_layout_of(minor))) {
		if (minor < 0)
			snprintf(f->why, sizeof(f->why), "the CPython version of %s is not known", o->path);
		else
			snprintf(f->why, sizeof(f->why), "CPython 3.%d: its frames are read for 3.10 to 3.13", minor);
		return;
	}
	if (!elfobj_func(o, "_PyEval_EvalFrameDefault", &f->eval, &f->eval_size) || !f->eval_size ||
	    (off = elfobj_file_offset(o, f->eval)) < 0) {
		snprintf(f->why, sizeof(f->why), "no _PyEval_EvalFrameDefault in %s", o->path);
		return;
	}
	f->eval_off = (uint64_t)off;
	if (!elfobj_object(o, "PyCode_Type", &f->code_type)) {
		snprintf(f->why, sizeof(f->why), "no PyCode_Type in %s", o->path);
		return;
	}
	if (f->lay->tstate_current) {
		if (!elfobj_object(o, "_PyRuntime", &rt)) {
			snprintf(f->why, sizeof(f->why), "no _PyRuntime in %s", o->path);
			return;
		}
		f->tstate = rt + f->lay->tstate_current;
	} else {
		f->tls = true;
		if (!elfobj_tls(o, "_Py_tss_tstate", &f->tstate)) {
			snprintf(f->why, sizeof(f->why), "no _Py_tss_tstate in %s (stripped?)", o->path);
			return;
		}
		if (o->ehdr.e_type == ET_DYN && !elfobj_tls_modid_slot(o, &f->modid_slot) && elfobj_dynamic(o) &&
		    strstr(o->path, ".so")) {
			snprintf(f->why, sizeof(f->why), "no TLS module slot in %s", o->path);
			return;
		}
	}
	f->path = strdup(o->path);
	f->on = f->path != NULL;
	if (!f->on)
		snprintf(f->why, sizeof(f->why), "out of memory");
}

int pyframes_stub(const struct cpy_frames *f, const char *maps, struct stub_py *py, uint64_t *code_type)
{
	const struct py_layout *l = f->lay;
	memset(py, 0, sizeof(*py));
	if (!f->on || !maps)
		return -1;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	uint64_t at = fd >= 0 ? maps_file_addr(maps, fd, f->eval_off) : 0;
	if (fd >= 0)
		close(fd);
	if (!at)
		return -1;
	uint64_t bias = at - f->eval;
	*code_type = f->code_type + bias;
	*py = (struct stub_py){
		.kind = l->kind, .tstate_from = f->tls ? STUB_PY_TLS : STUB_PY_GLOBAL,
		.tstate = f->tls ? f->tstate : f->tstate + bias, .modid_got = f->modid_slot ? f->modid_slot + bias : 0,
		.modid = f->modid_slot ? 0 : 1,
		.eval_lo = at, .eval_hi = at + f->eval_size,
		.thread_id = l->thread_id, .cframe = l->cframe, .current_frame = l->current_frame,
		.frame_code = l->frame_code, .frame_instr = l->frame_instr, .frame_previous = l->frame_previous,
		.frame_mark = l->frame_mark, .code_units = l->code_units, .owner_cstack = l->owner_cstack,
		.code_name = l->code_name, .code_filename = l->code_filename, .code_firstlineno = l->code_firstlineno,
		.code_linetable = l->code_linetable, .unicode_ascii = l->unicode_ascii,
	};
	return 0;
}

void pyframes_free(struct cpy_frames *f)
{
	free(f->path);
	f->path = NULL;
	f->on = false;
}
