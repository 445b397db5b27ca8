#include <capstone/capstone.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/cpython.h"
#include "probe/symspec.h"
#include "unwind/table.h"
#include "util/elfobj.h"
#include "util/log.h"

/* The wrappers, and the spec of the function behind each: it takes the table's context first. */
static const struct {
	const char *wrapper;
	enum ht_spec_kind kind;
	const char *spec;       /* FUNC is filled in */
	int member;             /* the slot's place in PyMemAllocatorEx, after ctx */
} wrappers[] = {
	{ "PyObject_Malloc", HT_SPEC_ALLOC, "size=arg2", 1 },
	{ "PyObject_Calloc", HT_SPEC_ALLOC, "size=arg2*arg3", 2 },
	{ "PyObject_Realloc", HT_SPEC_ALLOC, "size=arg3,free=arg2", 3 },
	{ "PyObject_Free", HT_SPEC_FREE, "ptr=arg2", 4 },
	{ "PyMem_Malloc", HT_SPEC_ALLOC, "size=arg2", 1 },
	{ "PyMem_Calloc", HT_SPEC_ALLOC, "size=arg2*arg3", 2 },
	{ "PyMem_Realloc", HT_SPEC_ALLOC, "size=arg3,free=arg2", 3 },
	{ "PyMem_Free", HT_SPEC_FREE, "ptr=arg2", 4 },
};

#define N_WRAPPERS (int)(sizeof(wrappers) / sizeof(wrappers[0]))

/*
 * What a register holds while the wrapper's first instructions are
 * followed: the 8 bytes at an address (LOADED), or an address (ADDRESS).
 * The address is off, plus the pointer stored at got when got is set (a
 * global reached through the GOT, as 3.12's _PyRuntime in a shared
 * libpython).
 */
enum held { NOTHING, LOADED, ADDRESS };

struct where {
	uint64_t got;
	int64_t off;
};

struct reg {
	enum held held;
	struct where at;
};

/* The 16 general registers, by any of their names. */
static int gpr(x86_reg r)
{
	static const x86_reg names[16][4] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL },
		{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL },
		{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL },
		{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL },
		{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B },
		{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B },
	};

	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 4; j++)
			if (names[i][j] == r)
				return i;
	return -1;
}

/* A memory operand's address, when it is known: rip-relative, or off a register that holds a loaded pointer. */
static bool mem_where(const cs_insn *insn, const cs_x86_op *op, const struct reg *regs, struct where *w)
{
	if (op->type != X86_OP_MEM || op->mem.index != X86_REG_INVALID || op->mem.segment != X86_REG_INVALID)
		return false;
	if (op->mem.base == X86_REG_RIP) {
		*w = (struct where){ 0, (int64_t)(insn->address + insn->size) + op->mem.disp };
		return true;
	}
	int b = gpr(op->mem.base);
	/* A pointer loaded from a fixed place (a GOT entry): the table is at it, plus disp. */
	if (b < 0 || regs[b].held != LOADED || regs[b].at.got)
		return false;
	*w = (struct where){ (uint64_t)regs[b].at.off, op->mem.disp };
	return true;
}

struct found {
	struct where slot;
	uint64_t compared;      /* the value the code compares the slot with (0: none) */
	bool have_slot;
	bool tail;              /* it jumps through the slot (its caller's frame is the function's) */
};

/*
 * Follow the wrapper's instructions in order (no branch taken) until it
 * calls or jumps through a table's slot or compares one with a function:
 * mov SLOT(%rip),%rax; cmp $FUNC,%rax (LTO+PGO), jmp *SLOT(%rip),
 * mov GOT(%rip),%rax; jmp *OFF(%rax) (a shared 3.12).
 */
static bool find_slot(csh cs, const uint8_t *code, size_t len, uint64_t addr, struct found *f)
{
	struct reg regs[16] = { 0 };
	cs_insn *insn = cs_malloc(cs);
	const uint8_t *p = code;
	bool done = false;

	memset(f, 0, sizeof(*f));
	for (int n = 0; !done && n < 96 && cs_disasm_iter(cs, &p, &len, &addr, insn); n++) {
		const cs_x86 *x = &insn->detail->x86;
		const cs_x86_op *a = x->op_count > 0 ? &x->operands[0] : NULL, *b = x->op_count > 1 ? &x->operands[1] : NULL;
		struct where w;
		int d = a && a->type == X86_OP_REG ? gpr(a->reg) : -1;

		if ((insn->id == X86_INS_JMP || insn->id == X86_INS_CALL) && a) {
			if (mem_where(insn, a, regs, &w)) {
				f->slot = w;
				f->have_slot = done = true;
				f->tail = insn->id == X86_INS_JMP;
			} else if (d >= 0 && regs[d].held == LOADED) {
				f->slot = regs[d].at;
				f->have_slot = done = true;
				f->tail = insn->id == X86_INS_JMP;
			} else if (insn->id == X86_INS_JMP && a->type == X86_OP_IMM) {
				break;  /* into other code: what follows is not the wrapper's path */
			}
			continue;
		}
		if (insn->id == X86_INS_CMP && a && b) {
			int e = b->type == X86_OP_REG ? gpr(b->reg) : -1;
			if (d >= 0 && regs[d].held == LOADED && b->type == X86_OP_IMM) {
				f->slot = regs[d].at;
				f->compared = (uint64_t)b->imm;
			} else if (d >= 0 && e >= 0 && regs[d].held == LOADED && regs[e].held == ADDRESS &&
				   !regs[e].at.got) {
				f->slot = regs[d].at;
				f->compared = (uint64_t)regs[e].at.off;
			} else if (d >= 0 && e >= 0 && regs[e].held == LOADED && regs[d].held == ADDRESS &&
				   !regs[d].at.got) {
				f->slot = regs[e].at;
				f->compared = (uint64_t)regs[d].at.off;
			} else if (a->type == X86_OP_MEM && b->type == X86_OP_IMM && mem_where(insn, a, regs, &w)) {
				f->slot = w;
				f->compared = (uint64_t)b->imm;
			} else {
				continue;
			}
			f->have_slot = done = true;
			continue;
		}
		if ((insn->id == X86_INS_MOV || insn->id == X86_INS_LEA) && d >= 0 && a->size == 8 && b &&
		    mem_where(insn, b, regs, &w)) {
			regs[d] = (struct reg){ insn->id == X86_INS_MOV ? LOADED : ADDRESS, w };
			continue;
		}
		if (insn->id == X86_INS_RET)
			break;
		/* Anything else that writes a register makes it unknown. */
		cs_regs rd, wr;
		uint8_t nrd, nwr;
		if (cs_regs_access(cs, insn, rd, &nrd, wr, &nwr) == CS_ERR_OK)
			for (int i = 0; i < nwr; i++)
				if (gpr(wr[i]) >= 0)
					regs[gpr(wr[i])].held = NOTHING;
	}
	cs_free(insn, 1);
	return f->have_slot;
}

/*
 * The pointer the loaded object holds at vaddr: a relocation's value there
 * (R_X86_64_RELATIVE: its addend; one against a defined symbol: the
 * symbol's value plus the addend), else the file's bytes.  0 or -1.
 */
static int read_pointer(struct elfobj *o, uint64_t vaddr, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(o->elf, scn))) {
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(data = elf_getdata(scn, NULL)) ||
		    !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			if (!gelf_getrela(data, i, &r) || r.r_offset != vaddr)
				continue;
			uint32_t type = GELF_R_TYPE(r.r_info), sym = GELF_R_SYM(r.r_info);
			if (type == R_X86_64_RELATIVE) {
				*value = r.r_addend;
				return 0;
			}
			if (type != R_X86_64_64 && type != R_X86_64_GLOB_DAT && type != R_X86_64_JUMP_SLOT)
				return -1;
			/* Against a symbol: it must be defined here (ours, not interposed from elsewhere). */
			Elf_Scn *ss = elf_getscn(o->elf, sh.sh_link);
			Elf_Data *sd = ss ? elf_getdata(ss, NULL) : NULL;
			GElf_Sym s;
			if (!sd || !gelf_getsym(sd, sym, &s) || s.st_shndx == SHN_UNDEF)
				return -1;
			*value = s.st_value + r.r_addend;
			return 0;
		}
	}
	size_t n;
	if (elf_getphdrnum(o->elf, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(o->elf, i, &ph) || ph.p_type != PT_LOAD || vaddr < ph.p_vaddr ||
		    vaddr + 8 > ph.p_vaddr + ph.p_filesz)
			continue;
		return pread(o->fd, value, 8, vaddr - ph.p_vaddr + ph.p_offset) == 8 ? 0 : -1;
	}
	return -1;
}

static bool have_object(const struct cpy_tables *t, const char *path)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->s[i].path, path))
			return true;
	return false;
}

/*
 * What the stub may take for granted of a wrapper and the function behind
 * its slot (struct probe's small_max and forwards): pymalloc (the object
 * has _PyObject_DebugMallocStats only when built with it) serves sizes 1
 * to 512 from its arenas, calling no traced function (its arenas come
 * from mmap; it falls back to malloc only when one cannot be had), and
 * only to the thread holding the GIL (the object and memory domains'
 * rule since 3.6), so its allocations share one countdown; a
 * wrapper that only jumps through its slot hands every call on to a
 * traced function, the one that does the sampling, with the caller's
 * frame, while its slot holds that function or pytables.c's jump to it
 * (another allocator set there at run time may call nothing traced); one
 * that inlines a copy of the function while the slot holds it, only while
 * the slot holds the jump.  Either calls the function as the slot's
 * (ctx, args...): PyMemAllocatorEx's context, the word before the
 * table's first slot, then its own arguments.
 */
static void mark_stub_hints(struct probe_plan *plan, struct elfobj *o, bool pymalloc, int w, uint64_t func,
			    uint64_t slot, const struct found *f)
{
	for (int k = 0; k < plan->n; k++) {
		struct probe *p = &plan->probes[k];
		if (strcmp(p->path, o->path))
			continue;
		if (p->func_vaddr == func && pymalloc && wrappers[w].kind == HT_SPEC_ALLOC &&
		    !strstr(wrappers[w].spec, "free=")) {
			p->small_max = CPY_SMALL_REQUEST;
			p->gil = true;
		}
		if (strcmp(p->func, wrappers[w].wrapper))
			continue;
		p->forwards = f->compared == func || (!f->compared && f->tail);
		p->fwd_slot = p->forwards ? slot : 0;
		p->fwd_func = !f->compared && f->tail ? func : 0;
		p->fwd_impl = p->forwards ? func : 0;
		p->fwd_member = p->forwards ? wrappers[w].member : 0;
		p->fwd_ctx = p->forwards ? slot - 8 * (uint64_t)wrappers[w].member : 0;
	}
}

/* One wrapper: its slot and the function it holds, probed.  1: done, 0: not found (said), -1: error. */
static int plan_wrapper(struct cpy_tables *t, struct probe_plan *plan, struct elfobj *o, bool pymalloc, csh cs,
			int w, const char *option)
{
	uint64_t va, size, slot, func, start, fsize;
	uint8_t code[512];
	struct found f;
	const char *name = NULL;

	if (!elfobj_func(o, wrappers[w].wrapper, &va, &size))
		return 0;
	size = size && size < sizeof(code) ? size : sizeof(code);
	while (size && elfobj_read(o, va, code, size))
		size /= 2;
	if (!size || !find_slot(cs, code, size, va, &f)) {
		ht_info("%s: %s: no call through an allocator table found in its code: only the wrapper is probed",
			option, wrappers[w].wrapper);
		return 0;
	}
	uint64_t base = 0;
	if (f.slot.got && read_pointer(o, f.slot.got, &base)) {
		ht_info("%s: %s: the table's address at 0x%lx cannot be read from %s", option, wrappers[w].wrapper,
			f.slot.got, o->path);
		return 0;
	}
	slot = base + f.slot.off;
	if (read_pointer(o, slot, &func) || !func || elfobj_file_offset(o, func) < 0) {
		ht_info("%s: %s: its table slot 0x%lx in %s holds no function of the file", option,
			wrappers[w].wrapper, slot, o->path);
		return 0;
	}
	char fname[64], text[160], err[256];
	if (elfobj_func_at(o, func, &start, &fsize, &name) && start == func && name) {
		snprintf(fname, sizeof(fname), "%s", name);
	} else {
		snprintf(fname, sizeof(fname), "0x%lx", func);
		/* Its extent from its FDE: the fast path must know where its code ends (plan.c's check_movable). */
		if (unwind_fde_extent(o->path, func, &start, &fsize) || start != func)
			fsize = 0;
	}
	char via[64] = "";
	if (f.slot.got)
		snprintf(via, sizeof(via), ", found through the GOT entry 0x%lx", f.slot.got);
	ht_info("%s: %s calls through the table slot 0x%lx of %s%s, which holds %s%s", option, wrappers[w].wrapper,
		slot, o->path, via, fname,
		f.compared == func ? "; the code compares the slot with it and inlines it when equal (LTO+PGO)" : "");
	/* The spec, parsed as a --sym would be, then placed at the function's address. */
	snprintf(text, sizeof(text), "%s:%s", fname, wrappers[w].spec);
	struct sym_spec s;
	if (symspec_parse(text, wrappers[w].kind, &s, err, sizeof(err))) {
		ht_err("%s: %s", option, err);  /* a bug in the table above */
		return -1;
	}
	int rc = probes_add_func(plan, o->path, fname, func, fsize, &s.spec, option);
	symspec_free(&s);
	if (rc)
		return -1;
	mark_stub_hints(plan, o, pymalloc, w, func, slot, &f);
	if (t->n < CPY_MAX_SLOTS)
		t->s[t->n++] = (struct cpy_slot){ .path = strdup(o->path), .wrapper = wrappers[w].wrapper,
						  .slot = slot, .func = func, .func_off = elfobj_file_offset(o, func),
						  .inlined = f.compared == func };
	return 1;
}

/* Where o's interpreter keeps its frames (t->frames), planned once: said (option, then what), or why they are off. */
static void plan_frames(struct cpy_tables *t, struct elfobj *o, const char *option, const char *what)
{
	if (t->frames.on || *t->frames.why)
		return;
	pyframes_plan(&t->frames, o);
	if (t->frames.on)
		ht_info("%s: Python frames of CPython 3.%d (%s)%s", option, t->frames.lay->minor, o->path, what);
	else
		ht_err("%s: Python frames are off: %s; stacks stay native", option, t->frames.why);
}

int cpython_plan(struct cpy_tables *t, struct probe_plan *plan, const struct objlist *objs, const char *option)
{
	csh cs;
	uint64_t va, size;

	for (int i = 0; i < objs->n; i++) {
		struct elfobj o;
		if (elfobj_open(&o, objs->p[i], false))
			continue;
		if (!elfobj_func(&o, "PyObject_Malloc", &va, &size)) {
			elfobj_close(&o);
			continue;
		}
		int rc = 1, found = 0;
		if (have_object(t, o.path)) {
			elfobj_close(&o);
			return 1;
		}
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
			ht_err("cannot start the instruction decoder");
			elfobj_close(&o);
			return -1;
		}
		cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
		/*
		 * Built with pymalloc, whose threshold is 512 bytes since 3.8 (256
		 * before: sizes up to 512 called malloc), and it the default: not a
		 * free-threaded build (3.13t: mimalloc, no GIL; it alone has
		 * _Py_MergeZeroLocalRefcount).
		 */
		bool pymalloc = elfobj_func(&o, "_PyObject_DebugMallocStats", &va, &size) && pyframes_minor(&o) >= 8 &&
				!elfobj_func(&o, "_Py_MergeZeroLocalRefcount", &va, &size);
		for (int w = 0; w < N_WRAPPERS && rc >= 0; w++)
			if ((rc = plan_wrapper(t, plan, &o, pymalloc, cs, w, option)) > 0)
				found++;
		cs_close(&cs);
		plan_frames(t, &o, option, "");
		elfobj_close(&o);
		if (rc < 0)
			return -1;
		/* One wrapper that inlines is enough to know the build does (Debian's PyObject_Calloc has no compare). */
		bool inlined = false;
		for (int k = 0; k < t->n; k++)
			inlined |= !strcmp(t->s[k].path, objs->p[i]) && t->s[k].inlined;
		for (int k = 0; k < t->n; k++)
			if (!strcmp(t->s[k].path, objs->p[i]))
				t->s[k].inlined = inlined;
		if (!found)
			ht_info("%s: no allocator table found behind CPython's wrappers in %s", option, objs->p[i]);
		return 1;
	}
	return 0;
}

int cpython_frames(struct cpy_tables *t, const struct objlist *objs)
{
	uint64_t va, size;

	if (t->frames.on || *t->frames.why)
		return 1;
	for (int i = 0; i < objs->n; i++) {
		/* The program, or a library named for Python (libpython3.X.so, embedded or not): not every object's symbols. */
		const char *base = strrchr(objs->p[i], '/');
		if (i && !strstr(base ? base + 1 : objs->p[i], "python"))
			continue;
		struct elfobj o;
		if (elfobj_open(&o, objs->p[i], false))
			continue;
		if (!elfobj_func(&o, "_PyEval_EvalFrameDefault", &va, &size) ||
		    !elfobj_func(&o, "PyObject_Malloc", &va, &size)) {
			elfobj_close(&o);
			continue;
		}
		plan_frames(t, &o, "python",
			    " in the malloc family's stacks; --preset python counts its own allocator's objects too");
		elfobj_close(&o);
		return 1;
	}
	return 0;
}

void cpython_free(struct cpy_tables *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->s[i].path);
	t->n = 0;
	pyframes_free(&t->frames);
}
