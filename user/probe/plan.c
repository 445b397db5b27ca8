#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/elfobj.h"
#include "util/log.h"
#include "probe/malloc_family.h"
#include "insn/relocate.h"
#include "probe/stub_spec.h"
#include "probe/plan.h"
#include "tracer/tracer.h"
#include "unwind/procs.h"

void probes_init(struct probe_plan *plan, bool at_entry)
{
	memset(plan, 0, sizeof(*plan));
	plan->at_entry = at_entry;
}

static const char *kind_name(enum ht_spec_kind k)
{
	return k == HT_SPEC_ALLOC ? "alloc" : k == HT_SPEC_FREE ? "free" : "reset";
}

static unsigned expr_args(const struct ht_expr *e)
{
	unsigned m = 0;

	for (unsigned i = 0; i < e->n && i < HT_EXPR_TERMS; i++)
		for (unsigned j = 0; j < e->t[i].n && j < HT_EXPR_FACTORS; j++)
			if (e->t[i].f[j].kind == HT_FACTOR_ARG)
				m |= 1u << e->t[i].f[j].value;
	return m;
}

/* The argument registers the BPF programs use from a probe with this spec. */
static unsigned args_read(const struct ht_alloc_spec *s)
{
	unsigned m = expr_args(&s->size) | expr_args(&s->objects) | expr_args(&s->ptr) | expr_args(&s->arena) |
		     1u << s->old_ptr_arg | 1u << s->out_ptr_arg;

	/* *(argN+K) is read at the probe too. */
	for (unsigned k = 0; k < s->n_mem && k < HT_MAX_MEM; k++)
		m |= 1u << s->mem[k].base;
	return m;
}

static const char *plan_path(struct probe_plan *plan, const char *path)
{
	for (int i = 0; i < plan->n_paths; i++)
		if (!strcmp(plan->paths[i], path))
			return plan->paths[i];
	if (plan->n_paths == HT_MAX_SPECS)
		return NULL;
	return plan->paths[plan->n_paths++] = strdup(path);
}

static bool expr_reads_ret(const struct ht_expr *e)
{
	for (unsigned i = 0; i < e->n && i < HT_EXPR_TERMS; i++)
		for (unsigned j = 0; j < e->t[i].n && j < HT_EXPR_FACTORS; j++)
			if (e->t[i].f[j].kind == HT_FACTOR_RET || e->t[i].f[j].kind == HT_FACTOR_MEM_RET)
				return true;
	return false;
}

/* Place and record one probe; aliases (one address, two names) are probed once. */
/*
 * Can the fast path redirect this function?  Its first instructions must
 * decode and move (relocate.c), and no branch may land among them but on
 * the first: those bytes become a jump.
 */
static void check_movable(struct probe *p, struct elfobj *o, struct placer *pl)
{
	uint8_t code[64];
	size_t n = p->func_size < sizeof(code) ? p->func_size : sizeof(code), skip, undo_len;
	bool hit = false;

	if (!n || elfobj_read(o, p->func_vaddr, code, n)) {
		snprintf(p->stub_why, sizeof(p->stub_why), "its code cannot be read");
		return;
	}
	int len = relocate_choose(code, n, p->func_size, p->func_vaddr, &skip, p->stub_undo, &undo_len, p->stub_why,
				  sizeof(p->stub_why));
	if (len < 0)
		return;
	p->stub_why[0] = '\0';
	p->stub_skip = skip;
	p->stub_undo_len = undo_len;
	if (placer_branch_into(pl, p->func_vaddr, p->func_vaddr + len - 1, &hit) || hit) {
		snprintf(p->stub_why, sizeof(p->stub_why), "a branch lands inside its first %d bytes", len);
		return;
	}
	p->stub_len = len;
}

static int widen_text(const uint8_t *code, size_t len, uint64_t vaddr, void *arg)
{
	uint64_t *range = arg;

	(void)code;
	if (!range[1] || vaddr < range[0])
		range[0] = vaddr;
	if (vaddr + len > range[1])
		range[1] = vaddr + len;
	return 0;
}

static int add_probe(struct probe_plan *plan, struct elfobj *o, struct placer *pl, const char *func,
		     uint64_t vaddr, uint64_t size, const struct ht_alloc_spec *given, bool family, const char *option)
{
	struct ht_alloc_spec copy = *given, *spec = &copy;
	struct placement where;
	int64_t off;

	/* A size that only the return value tells is sampled at the return (--sample-rate). */
	copy.size_at_return = expr_reads_ret(&copy.size);
	/*
	 * A --free-sym function may pass its block on to free() (a wrapper);
	 * the malloc family's free never frees through another traced function,
	 * and is spared the cost of remembering its blocks.
	 */
	copy.free_wraps = copy.kind == HT_SPEC_FREE && !family;
	/*
	 * Uprobe sessions skip the return of an unsampled call only when
	 * nothing it calls can be traced: glibc's malloc and calloc (the stub's
	 * rule too), and a --sym function whose code makes no call and no jump
	 * out of itself (a bump allocator).  realloc(NULL, n) jumps to malloc, posix_memalign calls
	 * it, and a --sym allocator (palloc, PyObject_Malloc) may call malloc
	 * or another --sym function through a pointer: their returns are kept,
	 * so a call inside them is known to be nested for certain.  Guessing
	 * nesting from a stack slot after a skipped return hid 40-50% of
	 * PostgreSQL's palloc calls from the sampler (issue 20, item 3).
	 */
	copy.leaf = copy.kind == HT_SPEC_ALLOC &&
		    (family ? !strcmp(func, "malloc") || !strcmp(func, "calloc") : placer_is_leaf(pl, vaddr, size));
	struct ht_unwind_object_key key;

	/* A function given by an address no symbol covers: its extent is unknown, so its entry. */
	if (placer_choose(pl, vaddr, size, args_read(spec), plan->at_entry || !size, &where) ||
	    (off = elfobj_file_offset(o, where.vaddr)) < 0) {
		ht_err("%s: cannot read the code of %s at 0x%lx", o->path, func, vaddr);
		return -1;
	}
	/* --unwind: the probe's address in a process places its object's code there (no mapping lookup). */
	copy.probe_vaddr = where.vaddr;
	if (!unwind_object_key(o->path, &key)) {
		copy.obj_dev = key.dev;
		copy.obj_ino = key.ino;
	}
	/* The malloc family's frees from its own code may be a thread's cache emptied at its exit (bpf/calls.bpf.h). */
	if (family) {
		uint64_t range[2] = { 0, 0 };
		if (!elfobj_exec_segments(o, widen_text, range)) {
			copy.text_lo = range[0];
			copy.text_hi = range[1];
		}
	}
	for (int k = 0; k < plan->n; k++) {
		struct probe *p = &plan->probes[k];
		if (strcmp(p->path, o->path) || p->offset != (uint64_t)off)
			continue;
		/*
		 * One probe takes one spec: a second role for the same function
		 * would be dropped.  A function that frees a block and returns
		 * another is a realloc, one --sym with free=argN.
		 */
		if (plan->specs[p->spec].kind != spec->kind) {
			enum ht_spec_kind a = plan->specs[p->spec].kind, b = spec->kind;
			if ((a == HT_SPEC_ALLOC && b == HT_SPEC_FREE) || (a == HT_SPEC_FREE && b == HT_SPEC_ALLOC))
				ht_err("--%s %s: %s is already traced as %s: a function that frees a block and "
				       "returns another is a realloc, one --sym with free=argN (the block it "
				       "frees): --sym '%s:size=arg2,free=arg1' for f(ptr, size)",
				       option, func, p->func, a == HT_SPEC_ALLOC ? "an allocator" : "a free", func);
			else
				ht_err("--%s %s: %s is already traced as a%s %s: one function takes one role", option,
				       func, p->func, a == HT_SPEC_ALLOC ? "n" : "", kind_name(a));
			return -1;
		}
		if (memcmp(&plan->specs[p->spec], spec, sizeof(*spec)))
			ht_err("warning: %s and %s share an address but not a signature; tracing it as %s",
			       p->func, func, p->func);
		/* The same function again (a spec resolved anew after an exec) is no news. */
		if (strcmp(func, p->func))
			ht_info("%s is an alias of %s", func, p->func);
		return 0;
	}
	if (plan->n == HT_MAX_SPECS) {
		ht_err("too many probes (at most %d)", HT_MAX_SPECS);
		return -1;
	}
	struct probe *p = &plan->probes[plan->n];
	p->path = plan_path(plan, o->path);
	p->func = strdup(func);
	p->offset = off;
	p->delta = where.vaddr - vaddr;
	p->spec = plan->n;
	p->kind = spec->kind;
	p->where = where;
	p->family = family;
	p->func_vaddr = vaddr;
	p->func_size = size;
	p->stub_len = 0;
	p->stub_skip = p->stub_undo_len = 0;
	p->stub_why[0] = '\0';
	p->stub = p->attached = p->given_back = false;
	/* Any function may go through the stub (user/inject/): its spec the stub can evaluate, its first bytes movable. */
	if (family || spec_stub_ok(spec, p->stub_why, sizeof(p->stub_why)))
		check_movable(p, o, pl);
	plan->specs[plan->n++] = *spec;
	return 0;
}

int probes_add_malloc(struct probe_plan *plan, const char *path, bool require)
{
	struct elfobj o;
	struct placer *pl;
	bool have_malloc = false, have_free = false;
	int err = 0;

	if (elfobj_open(&o, path, true))
		return -1;
	if (!(pl = placer_new(&o))) {
		ht_err("cannot start the instruction decoder");
		elfobj_close(&o);
		return -1;
	}
	struct sym_spec fam;
	for (int i = 0; !err && !malloc_family(i, &fam); i++) {
		uint64_t va, size;

		if (elfobj_func(&o, fam.name, &va, &size)) {
			have_malloc |= !strcmp(fam.name, "malloc");
			have_free |= fam.spec.kind == HT_SPEC_FREE;
			err = add_probe(plan, &o, pl, fam.name, va, size, &fam.spec, true, "malloc family");
		}
		symspec_free(&fam);
	}
	placer_free(pl);
	elfobj_close(&o);
	if (!err && require && (!have_malloc || !have_free)) {
		ht_err("%s defines no %s", path, have_malloc ? "free" : "malloc");
		err = -1;
	}
	return err ? -1 : 0;
}

/* "libfoo.so" names /usr/lib/libfoo.so.1; "/usr/lib/libfoo.so.1" names only itself. */
static bool names_object(const char *want, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(want);

	if (strchr(want, '/'))
		return !strcmp(want, path);
	base = base ? base + 1 : path;
	return !strncmp(base, want, n) && (base[n] == '\0' || base[n] == '.');
}

/* "0x5c7860": a function given by its address (ELF virtual address, as nm prints it). */
static bool address_of(const char *name, uint64_t *vaddr)
{
	char *end;

	if (name[0] != '0' || (name[1] != 'x' && name[1] != 'X') || !name[2])
		return false;
	errno = 0;
	*vaddr = strtoull(name + 2, &end, 16);
	return !errno && !*end;
}

/*
 * Where s names a function in object o: its address and size (0: unknown,
 * a function given by address that no symbol covers).  A name is looked up
 * in the object's symbols, then in its separate debug info (a static
 * function of a stripped program).  1: found; 0: not in this object;
 * -1: an error, printed.
 */
static int locate(const struct sym_spec *s, const char *option, struct elfobj *o, const char *debug_dir,
		  uint64_t *va, uint64_t *size)
{
	struct elfobj dbg;
	char dpath[4200];
	uint64_t at, start, sz;
	const char *fn = NULL;
	bool by_address = address_of(s->name, &at);

	if (!by_address && elfobj_func(o, s->name, va, size))
		return 1;
	if (by_address && elfobj_func_at(o, at, &start, &sz, &fn) && start == at) {
		*va = at;
		*size = sz;
		return 1;
	}
	/* Opened only when the object's own symbols do not tell: a program's debug info can be large. */
	bool have_dbg = !elfobj_open_debug(o, debug_dir, &dbg, dpath, sizeof(dpath));
	int found = 0;

	if (by_address) {
		if (elfobj_file_offset(o, at) < 0) {
			ht_err("--%s %s: 0x%lx is in no executable segment of %s (an ELF virtual address, as nm "
			       "and objdump print it)", option, s->name, at, o->path);
			found = -1;
		} else if (elfobj_func_at(o, at, &start, &sz, &fn) ||
			   (have_dbg && elfobj_func_at(&dbg, at, &start, &sz, &fn))) {
			if (start != at) {
				ht_err("--%s %s: 0x%lx is inside %s (0x%lx), not at its entry", option, s->name, at,
				       fn ? fn : "a function", start);
				found = -1;
			} else {
				*va = at;
				*size = sz;
				found = 1;
			}
		} else {
			*va = at;
			*size = 0;
			found = 1;
		}
	} else if (have_dbg && elfobj_func(&dbg, s->name, va, size)) {
		ht_info("%s: found in the debug info %s", s->name, dpath);
		found = 1;
	}
	if (have_dbg)
		elfobj_close(&dbg);
	return found;
}

/*
 * *GLOBAL in a spec: the variable's ELF address in the function's own
 * object (its symbols, then its debug info); the BPF programs add the
 * object's load bias.  0 or -1 (printed).
 */
static int resolve_globals(const struct sym_spec *s, const char *option, struct elfobj *o, const char *debug_dir,
			   struct ht_alloc_spec *spec)
{
	for (unsigned k = 0; k < spec->n_mem && k < HT_MAX_MEM; k++) {
		uint64_t va;
		bool found;

		if (!s->mem_sym[k])
			continue;
		found = elfobj_object(o, s->mem_sym[k], &va);
		if (!found) {
			struct elfobj dbg;
			char dpath[4200];
			if (!elfobj_open_debug(o, debug_dir, &dbg, dpath, sizeof(dpath))) {
				found = elfobj_object(&dbg, s->mem_sym[k], &va);
				elfobj_close(&dbg);
			}
		}
		if (!found) {
			ht_err("--%s %s: no variable %s in %s, the function's object (a global it reads must be in "
			       "the same object)", option, s->name, s->mem_sym[k], o->path);
			return -1;
		}
		/*
		 * The stub reads the word itself, not through a probe read that
		 * fails softly: a read outside the object's loaded segments would
		 * fault in the target.  Such an offset is a mistake: say it now.
		 */
		if (!elfobj_readable(o, va + spec->mem[k].offset, 8)) {
			int64_t off = spec->mem[k].offset;
			ht_err("--%s %s: *(%s%c0x%llx) lies outside the loaded segments of %s (a read of memory at "
			       "the entry must be within the variable's object)", option, s->name, s->mem_sym[k],
			       off < 0 ? '-' : '+', (unsigned long long)(off < 0 ? -off : off), o->path);
			return -1;
		}
		spec->mem[k].offset += va;
	}
	return 0;
}

int probes_find_symbol(struct probe_plan *plan, const struct sym_spec *s, const char *option,
		       const struct objlist *objs, const char *debug_dir, char *why, size_t why_len)
{
	int matched = 0;
	char looked[PATH_MAX + 700] = "";
	size_t used = 0;
	int listed = 0;
	uint64_t at;
	bool by_address = address_of(s->name, &at);

	for (int i = 0; i < objs->n; i++) {
		const char *name = objlist_name(objs, i);
		struct elfobj o;
		uint64_t va, size;

		if (s->object ? !names_object(s->object, name) : by_address && i > 0)
			continue;
		matched++;
		/*
		 * Whole names, about 600 characters of them (the first always):
		 * the names after the first that does not fit are "and N more".
		 */
		size_t want = strlen(name) + (used ? 2 : 0);
		if (listed == matched - 1 && used + want < sizeof(looked) && (!listed || used + want < 600)) {
			used += snprintf(looked + used, sizeof(looked) - used, "%s%s", used ? ", " : "", name);
			listed++;
		}
		if (elfobj_open(&o, objs->p[i], false))
			continue;
		int found = locate(s, option, &o, debug_dir, &va, &size);
		if (found <= 0) {
			elfobj_close(&o);
			if (found < 0)
				return -1;
			continue;
		}
		struct ht_alloc_spec spec = s->spec;
		if (resolve_globals(s, option, &o, debug_dir, &spec)) {
			elfobj_close(&o);
			return -1;
		}
		struct placer *pl = placer_new(&o);
		int err = pl ? add_probe(plan, &o, pl, s->name, va, size, &spec, false, option) : -1;
		placer_free(pl);
		elfobj_close(&o);
		return err ? -1 : 1;
	}
	if (s->object && !matched)
		snprintf(why, why_len, "--%s %s: the target loads no object named %s (it has %d, from %s)", option,
			 s->name, s->object, objs->n, objs->n ? objlist_name(objs, 0) : "none");
	else if (listed < matched)
		snprintf(why, why_len, "--%s %s: no function %s in %d objects (%s and %d more); it may be static: give "
			 "it by address, 0xVADDR@OBJECT, or install the object's debug info", option, s->name, s->name,
			 matched, looked, matched - listed);
	else
		snprintf(why, why_len, "--%s %s: no function %s in %s; it may be static: give it by address, "
			 "0xVADDR@OBJECT, or install the object's debug info", option, s->name, s->name, looked);
	return 0;
}

int probes_add_symbol(struct probe_plan *plan, const struct sym_spec *s, const char *option,
		      const struct objlist *objs, const char *debug_dir)
{
	char why[PATH_MAX + 1000];
	int rc = probes_find_symbol(plan, s, option, objs, debug_dir, why, sizeof(why));

	if (!rc)
		ht_err("%s", why);
	return rc > 0 ? 0 : -1;
}

int probes_add_func(struct probe_plan *plan, const char *path, const char *func, uint64_t vaddr, uint64_t size,
		    const struct ht_alloc_spec *spec, const char *option)
{
	struct elfobj o;
	struct placer *pl;
	int err;

	if (elfobj_open(&o, path, true))
		return -1;
	pl = placer_new(&o);
	err = pl ? add_probe(plan, &o, pl, func, vaddr, size, spec, false, option) : -1;
	placer_free(pl);
	elfobj_close(&o);
	return err;
}

static enum tracer_prog entry_prog(enum ht_spec_kind k)
{
	return k == HT_SPEC_ALLOC ? PROG_ALLOC_ENTER : k == HT_SPEC_FREE ? PROG_FREE_ENTER : PROG_RESET_ENTER;
}

/* Does prog go on the probes of this kind of spec? */
static bool prog_of_kind(enum tracer_prog prog, enum ht_spec_kind k)
{
	return prog == PROG_ALLOC_RETURN || prog == PROG_ALLOC_SESSION ? k == HT_SPEC_ALLOC : entry_prog(k) == prog;
}

/*
 * One uprobe_multi link per object and program.  In a running process (-p)
 * the order matters: frees first, so that every block recorded has its
 * free seen; allocation entries last, since an entry whose return probe was
 * not attached yet would leave its thread "inside a call" for good, and
 * every later call from that depth would pass for a nested one.  A return
 * or a free seen without its entry or allocation is merely counted.
 * tracer_detach() goes in the reverse order.
 */
static int attach_multi(const struct probe_plan *plan, int from, struct tracer *tr, pid_t pid,
			bool (*want)(const struct probe *))
{
	static const enum tracer_prog plain[] = { PROG_FREE_ENTER, PROG_RESET_ENTER, PROG_ALLOC_RETURN,
						  PROG_ALLOC_ENTER };
	static const enum tracer_prog session[] = { PROG_FREE_ENTER, PROG_RESET_ENTER, PROG_ALLOC_SESSION };
	bool allocs = false;
	for (int i = from; i < plan->n; i++)
		allocs |= plan->probes[i].kind == HT_SPEC_ALLOC && want(&plan->probes[i]);
	/* The session program is loaded when first needed, and the kernel may refuse it. */
	bool sessions = allocs ? tracer_sessions(tr) : tr->session;
	const enum tracer_prog *progs = sessions ? session : plain;
	size_t nprogs = sessions ? sizeof(session) / sizeof(session[0]) : sizeof(plain) / sizeof(plain[0]);
	uint64_t offsets[HT_MAX_SPECS], cookies[HT_MAX_SPECS];

	for (size_t k = 0; k < nprogs; k++) {
		for (int o = 0; o < plan->n_paths; o++) {
			uint32_t n = 0;
			for (int i = from; i < plan->n; i++) {
				const struct probe *p = &plan->probes[i];
				if (p->path != plan->paths[o] || !prog_of_kind(progs[k], p->kind) || !want(p))
					continue;
				offsets[n] = p->offset;
				cookies[n++] = p->spec;
			}
			if (!n)
				continue;
			int err = tracer_attach_multi(tr, progs[k], plan->paths[o], offsets, cookies, n, pid);
			if (err)
				return err;
		}
	}
	return 0;
}

/* The program a probe gets in each pass: frees, then returns, then entries, as in attach_multi; -1: none. */
static int pass_prog(int pass, enum ht_spec_kind kind)
{
	if (kind != HT_SPEC_ALLOC)
		return pass == 0 ? (int)entry_prog(kind) : -1;
	return pass == 1 ? PROG_ALLOC_RETURN : pass == 2 ? PROG_ALLOC_ENTER : -1;
}

static int attach_each(const struct probe_plan *plan, int from, struct tracer *tr, pid_t pid,
		       bool (*want)(const struct probe *))
{
	for (int pass = 0; pass < 3; pass++) {
		for (int k = from; k < plan->n; k++) {
			const struct probe *p = &plan->probes[k];
			int prog = want(p) ? pass_prog(pass, p->kind) : -1;
			int err = prog < 0 ? 0 : tracer_attach(tr, prog, p->path, p->offset, p->spec, pid);
			if (err) {
				ht_err("cannot attach a uprobe to %s in %s: %s", p->func, p->path, strerror(-err));
				return err;
			}
		}
	}
	return 0;
}

static bool uprobed(const struct probe *p)
{
	return !p->stub;
}

static bool fell_back(const struct probe *p)
{
	return p->given_back && !p->stub && !p->attached;
}

static void say_stub(const struct probe *p)
{
	if (p->stub)
		ht_info("probe %-14s %s+0x%lx: the fast path (stub), %u bytes displaced, the jump at +%u", p->func,
			p->path, p->offset - p->delta, p->stub_len, p->stub_skip);
}

int probes_attach_fallback(struct probe_plan *plan, struct tracer *tr, pid_t pid)
{
	int err = tr->multi ? attach_multi(plan, 0, tr, pid, fell_back) : attach_each(plan, 0, tr, pid, fell_back);

	if (err) {
		ht_err("cannot attach uprobes: %s", strerror(-err));
		return -1;
	}
	for (int k = 0; k < plan->n; k++)
		if (fell_back(&plan->probes[k]))
			plan->probes[k].attached = true;
	return 0;
}

static bool stubbed(const struct probe *p)
{
	return p->stub;
}

int probes_attach_stubbed(const struct probe_plan *plan, struct tracer *tr, pid_t pid)
{
	int err = tr->multi ? attach_multi(plan, 0, tr, pid, stubbed) : attach_each(plan, 0, tr, pid, stubbed);

	if (err)
		ht_err("PID %d: cannot attach uprobes: %s", pid, strerror(-err));
	return err ? -1 : 0;
}

int probes_attach(struct probe_plan *plan, struct tracer *tr, pid_t pid)
{
	/* Followed children repeat the same plan; with -p the stub's record sites are attached before it. */
	bool first = !plan->said;
	int err = tr->multi ? attach_multi(plan, 0, tr, pid, uprobed) : attach_each(plan, 0, tr, pid, uprobed);

	if (err == -EOPNOTSUPP)
		return 1;
	if (err == -EPROTONOSUPPORT)
		return 2;
	if (err) {
		if (tr->multi)
			ht_err("cannot attach uprobes: %s", strerror(-err));
		return -1;
	}
	for (int k = 0; first && k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		if (p->stub) {
			say_stub(p);
			continue;
		}
		ht_info("probe %-14s %s+0x%lx = %s+%lu `%s` (%s): %s%s", p->func, p->path, p->offset, p->func,
			p->delta, p->where.insn, probe_cost_name(p->where.cost), p->where.why,
			p->kind != HT_SPEC_ALLOC ? "" :
			!tr->n_session ? " (and its return)" :
			plan->specs[p->spec].leaf ? " (a session: the return only when sampled)" :
						    " (a session: the return always, since it may call traced functions)");
	}
	if (first)
		/* Sessions as made: the program loads only when an allocator keeps its uprobe, and may not load. */
		ht_info("attached with %s", tr->n_session ? "uprobe_multi links, allocators as uprobe sessions" :
					    tr->multi ? "uprobe_multi links" : "one perf event per probe");
	plan->said = true;
	return 0;
}

int probes_attach_new(const struct probe_plan *plan, int from, struct tracer *tr, pid_t pid)
{
	int err = tr->multi ? attach_multi(plan, from, tr, pid, uprobed) : attach_each(plan, from, tr, pid, uprobed);

	if (err) {
		if (tr->multi)
			ht_err("cannot attach uprobes: %s", strerror(-err));
		return -1;
	}
	for (int k = from; k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		if (!p->stub)
			ht_info("probe %-14s %s+0x%lx = %s+%lu `%s` (%s): %s (PID %d)", p->func, p->path, p->offset,
				p->func, p->delta, p->where.insn, probe_cost_name(p->where.cost), p->where.why, pid);
	}
	return 0;
}

bool probes_have_object(const struct probe_plan *plan, const char *path)
{
	struct stat a, b;
	bool have = stat(path, &a);     /* a file we cannot see is no new object to probe */

	/* By inode: /lib/x86_64-linux-gnu/libc.so.6 and /usr/lib/... are one file, probed once. */
	for (int i = 0; i < plan->n_paths && !have; i++)
		have = !strcmp(plan->paths[i], path) ||
		       (!stat(plan->paths[i], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	return have;
}

void probes_print(const struct probe_plan *plan, FILE *f)
{
	for (int k = 0; k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		fprintf(f, "%s %s 0x%lx +%lu %s `%s` (%s) %s\n", p->func, p->path, p->offset, p->delta,
			kind_name(p->kind), p->where.insn, probe_cost_name(p->where.cost), p->where.why);
	}
}

void probes_free(struct probe_plan *plan)
{
	for (int k = 0; k < plan->n; k++)
		free(plan->probes[k].func);
	for (int i = 0; i < plan->n_paths; i++)
		free(plan->paths[i]);
	plan->n = plan->n_paths = 0;
}
