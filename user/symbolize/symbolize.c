/*
 * Address -> source frames via elfutils libdwfl.
 *
 * The module layout comes from a saved copy of /proc/PID/maps, so nothing
 * here needs the traced process to still be alive: ELF files and their
 * separate debug files are opened from disk by path and build id.
 */
#include "heaptrace.h"
#include "symbolize/pyframes.h"
#include "symbolize/symbolize.h"
#include "util/array.h"
#include "util/time.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Provided by libstdc++; declared here so this file stays plain C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct cache_entry {
	uint64_t pc;
	struct sym_frame *frames;
	uint32_t nframes;
	bool is_return_addr; /* part of the key: pc and pc-1 can differ in line */
	bool used;
};

struct frame_vec {
	struct sym_frame *v;
	size_t n, cap;
};

struct symbolizer {
	Dwfl *dwfl;
	struct cache_entry *cache; /* open addressing, capacity a power of two */
	size_t cache_cap, cache_len;
	char **strs; /* interned strings, same scheme */
	size_t strs_cap, strs_len;
	struct frame_vec *scratch; /* a lookup past SYM_CACHE_MAX: valid until the next one */
	uint64_t busy_ns;          /* time spent symbolizing (cache misses) */
	struct sym_frame py;       /* a Python frame's, valid until the next lookup */
	char py_unknown[48];
};

/* Returned when memory runs out, so callers can always rely on one frame. */
static const struct sym_frame unknown_frame;

static char *debuginfo_path;    /* NULL: libdwfl's default */

static Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path, /* NULL: .debug dirs and /usr/lib/debug, incl. .build-id */
};

void sym_set_debug_dir(const char *dir)
{
	/* libdwfl's default path with dir before /usr/lib/debug: the order --sym looks in (elfobj_open_debug). */
	free(debuginfo_path);
	debuginfo_path = NULL;
	if (dir && asprintf(&debuginfo_path, ":.debug:%s:/usr/lib/debug", dir) < 0)
		debuginfo_path = NULL;
}

/* ---- interned strings ---------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

static bool strs_grow(struct symbolizer *s)
{
	size_t cap = s->strs_cap ? s->strs_cap * 2 : 256;
	char **strs = calloc(cap, sizeof(*strs));

	if (!strs)
		return false;
	for (size_t i = 0; i < s->strs_cap; i++) {
		char *str = s->strs[i];
		size_t j;

		if (!str)
			continue;
		for (j = hash_bytes(str, strlen(str)) & (cap - 1); strs[j]; j = (j + 1) & (cap - 1))
			;
		strs[j] = str;
	}
	free(s->strs);
	s->strs = strs;
	s->strs_cap = cap;
	return true;
}

/* Copy of str[0..len) owned by s, shared between equal strings. */
static const char *intern_n(struct symbolizer *s, const char *str, size_t len)
{
	size_t mask, i;

	if (!str)
		return NULL;
	if ((s->strs_len + 1) * 2 > s->strs_cap && !strs_grow(s))
		return NULL;
	mask = s->strs_cap - 1;
	for (i = hash_bytes(str, len) & mask; s->strs[i]; i = (i + 1) & mask) {
		if (strncmp(s->strs[i], str, len) == 0 && s->strs[i][len] == '\0')
			return s->strs[i];
	}
	s->strs[i] = strndup(str, len);
	if (!s->strs[i])
		return NULL;
	s->strs_len++;
	return s->strs[i];
}

static const char *intern(struct symbolizer *s, const char *str)
{
	return str ? intern_n(s, str, strlen(str)) : NULL;
}

/* ---- C++ names ----------------------------------------------------------- */

static bool is_operator_at(const char *name, const char *p)
{
	char after = p[8];

	if (strncmp(p, "operator", 8) != 0)
		return false;
	if (p != name && p[-1] != ':' && p[-1] != ' ')
		return false;
	return !(after == '_' || (after >= 'a' && after <= 'z') ||
		 (after >= 'A' && after <= 'Z') || (after >= '0' && after <= '9'));
}

/*
 * The demangler prints the return type of template functions
 * ("void ns::f<int>"); it ends at the last top-level space before the name.
 * Operator names may contain spaces and brackets themselves, so the scan
 * stops at the first one.
 */
static char *skip_return_type(char *name)
{
	char *start = name;
	int depth = 0;

	for (char *p = name; *p; p++) {
		if (depth == 0 && is_operator_at(name, p))
			break;
		switch (*p) {
		case '(': case '<': case '[': case '{':
			depth++;
			break;
		case ')': case '>': case ']': case '}':
			if (depth > 0)
				depth--;
			break;
		case ' ':
			if (depth == 0)
				start = p + 1;
			break;
		}
	}
	return start;
}

/*
 * Reduce a demangled signature to the qualified name with template
 * arguments: "int ns::C<T>::f<U>(args) const [clone .cold]" -> "ns::C<T>::f<U>".
 * Profile viewers group by function, and overloads differing only in
 * parameters are rarely worth separate nodes.
 */
static char *simplify_cxx_name(char *name)
{
	char *clone = strstr(name, " [clone ");
	char *close, *p;
	int depth = 0;

	if (clone)
		*clone = '\0';
	/* Only cv/ref qualifiers can follow the parameter list. */
	close = strrchr(name, ')');
	if (!close)
		return name;
	for (p = close; p >= name; p--) {
		if (*p == ')')
			depth++;
		else if (*p == '(' && --depth == 0)
			break;
	}
	if (p <= name)
		return name;
	*p = '\0';
	if (p[-1] == '>')
		return skip_return_type(name);
	return name;
}

/* Demangled, simplified and interned; NULL when name is not a C++ symbol. */
static const char *demangle(struct symbolizer *s, const char *name)
{
	const char *result;
	char *out;
	int status;

	/* Without the prefix the demangler would happily read "i" as "int". */
	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (!out)
		return NULL;
	result = intern(s, simplify_cxx_name(out));
	free(out);
	return result;
}

static const char *symbol_name(struct symbolizer *s, const char *name)
{
	const char *demangled = demangle(s, name);

	return demangled ? demangled : intern(s, name);
}

/* ---- DWARF ---------------------------------------------------------------- */

static bool is_cplusplus(Dwarf_Die *die)
{
	Dwarf_Die cu;

	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return false;
	switch (dwarf_srclang(&cu)) {
	case DW_LANG_C_plus_plus:
	case DW_LANG_C_plus_plus_03:
	case DW_LANG_C_plus_plus_11:
	case DW_LANG_C_plus_plus_14:
		return true;
	}
	return false;
}

/* The in-class declaration that an inlined or out-of-line definition refers to. */
static Dwarf_Die declaration_of(Dwarf_Die *die)
{
	Dwarf_Die decl = *die, next;

	/* Bounded: corrupt DWARF could make the chain loop. */
	for (int i = 0; i < 8; i++) {
		Dwarf_Attribute attr;
		Dwarf_Attribute *ref = dwarf_attr(&decl, DW_AT_abstract_origin, &attr);

		if (!ref)
			ref = dwarf_attr(&decl, DW_AT_specification, &attr);
		if (!ref || !dwarf_formref_die(ref, &next))
			break;
		decl = next;
	}
	return decl;
}

/*
 * "ns::Class::name" built from the enclosing scopes of the declaration.
 * Needed for C++ DIEs without a linkage name, notably inlined constructors
 * and destructors, whose abstract DIE stands for several symbols.
 */
static const char *qualified_name(struct symbolizer *s, Dwarf_Die *die, const char *name)
{
	Dwarf_Die decl = declaration_of(die);
	Dwarf_Die *scopes = NULL;
	const char *result = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	n = dwarf_getscopes_die(&decl, &scopes);
	f = open_memstream(&buf, &len);
	if (!f) {
		free(scopes);
		return intern(s, name);
	}
	/* scopes[0] is decl itself and scopes[n-1] the unit. */
	for (int i = n - 2; i >= 1; i--) {
		int tag = dwarf_tag(&scopes[i]);
		const char *scope = dwarf_diename(&scopes[i]);

		if (tag == DW_TAG_namespace)
			fprintf(f, "%s::", scope ? scope : "(anonymous namespace)");
		else if ((tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
			  tag == DW_TAG_union_type) && scope)
			fprintf(f, "%s::", scope);
	}
	fputs(name, f);
	if (fclose(f) == 0)
		result = intern(s, buf);
	free(buf);
	free(scopes);
	return result ? result : intern(s, name);
}

static const char *die_func_name(struct symbolizer *s, Dwarf_Die *die, const char **system)
{
	Dwarf_Attribute attr;
	const char *linkage, *name;

	/* _integrate follows abstract_origin/specification to where names live. */
	linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	*system = linkage ? intern(s, linkage) : NULL;
	if (linkage) {
		const char *demangled = demangle(s, linkage);

		if (demangled)
			return demangled;
	}
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	if (!name)
		return linkage ? intern(s, linkage) : NULL;
	if (is_cplusplus(die))
		return qualified_name(s, die, name);
	return intern(s, name);
}

static bool is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/*
 * Lexical nesting of DIEs around addr, innermost first, ending at the unit.
 * dwarf_getscopes alone is not enough: for inlined code it continues into
 * the scopes of the abstract definition instead of the caller's, so only its
 * innermost DIE is used and the concrete chain is rebuilt from that.
 */
static int scope_chain(Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die **chain)
{
	Dwarf_Die *scopes = NULL, innermost;
	int n = dwarf_getscopes(cu, addr, &scopes);

	*chain = NULL;
	if (n <= 0) {
		free(scopes);
		return 0;
	}
	innermost = scopes[0];
	free(scopes);
	n = dwarf_getscopes_die(&innermost, chain);
	if (n <= 0) {
		free(*chain);
		*chain = NULL;
		return 0;
	}
	return n;
}

static void line_at(struct symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr, struct sym_frame *f)
{
	Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
	const char *file;
	int lineno = 0;

	if (!line)
		return;
	file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	if (!file)
		return;
	f->file = intern(s, file);
	f->line = lineno;
}

/* Where the caller invoked the inlined instance: the caller's file:line. */
static void call_site(struct symbolizer *s, Dwarf_Die *inlined, struct sym_frame *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word line, fileidx;
	Dwarf_Files *files;
	Dwarf_Die cu;

	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &line) == 0)
		f->line = (int)line;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &fileidx) == 0 &&
	    dwarf_diecu(inlined, &cu, NULL, NULL) &&
	    dwarf_getsrcfiles(&cu, &files, NULL) == 0)
		f->file = intern(s, dwarf_filesrc(files, fileidx, NULL, NULL));
}

static bool push_frame(struct frame_vec *fv, const struct sym_frame *f)
{
	if (ARRAY_RESERVE(fv->v, fv->cap, fv->n + 1, 4))
		return false;
	fv->v[fv->n++] = *f;
	return true;
}

/*
 * One frame per inlined call plus the containing function.  Each inlined
 * instance records where its caller called it, so a frame's location is
 * taken from the inlined DIE one level in; only the innermost frame uses
 * the line table.  Leaves fv empty when there is no DWARF for addr.
 */
static void dwarf_frames(struct symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr,
			 struct frame_vec *fv)
{
	Dwarf_Die *cu, *chain, *callee = NULL;
	Dwarf_Addr bias;
	int n;

	cu = dwfl_module_addrdie(mod, addr, &bias);
	if (!cu)
		return;
	n = scope_chain(cu, addr - bias, &chain);
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&chain[i]);
		struct sym_frame f = { 0 };

		if (!is_function_tag(tag))
			continue;
		f.func = die_func_name(s, &chain[i], &f.system);
		if (!f.system)
			f.system = f.func;
		if (callee)
			call_site(s, callee, &f);
		else
			line_at(s, mod, addr, &f);
		/* The mark is the callee's: the caller is where the code was inlined. */
		f.inlined = tag == DW_TAG_inlined_subroutine;
		if (!push_frame(fv, &f) || !f.inlined)
			break;
		callee = &chain[i];
	}
	free(chain);
}

static const char *symtab_name(struct symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr,
			       const char **system)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);

	*system = name ? intern(s, name) : NULL;
	return name ? symbol_name(s, name) : NULL;
}

/* ---- modules --------------------------------------------------------------- */

/* Basename, minus the " (deleted)" the kernel appends to replaced files. */
static const char *module_name(struct symbolizer *s, Dwfl_Module *mod, Dwarf_Addr *low)
{
	static const char deleted[] = " (deleted)";
	const char *path = dwfl_module_info(mod, NULL, low, NULL, NULL, NULL, NULL, NULL);
	const char *base, *slash;
	size_t len;

	if (!path)
		return NULL;
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	len = strlen(base);
	if (len > sizeof(deleted) - 1 &&
	    strcmp(base + len - (sizeof(deleted) - 1), deleted) == 0)
		len -= sizeof(deleted) - 1;
	return intern_n(s, base, len);
}

/*
 * The ELF virtual address of pc.  Without the ELF file (deleted, replaced)
 * the bias is unknown; the mapping start is the best guess, exact for
 * shared objects and PIEs whose first segment is at address 0.
 */
static uint64_t module_offset(Dwfl_Module *mod, uint64_t pc, Dwarf_Addr low)
{
	Dwarf_Addr bias;

	if (dwfl_module_getelf(mod, &bias))
		return pc - bias;
	return pc - low;
}

/*
 * Is the code at pc a signal return trampoline (glibc's __restore_rt, and
 * musl's and Go's alike)?  A signal handler's return address is one, and
 * the kernel's signal frame lies above it: the frame gdb shows as "<signal
 * handler called>".  Told by its code, rt_sigreturn and nothing else (mov
 * $15 into rax or eax, syscall), as gdb tells it: glibc keeps the symbol
 * out of its dynamic symbol table, and not every restorer has CFI.
 */
static bool is_sigreturn(Dwfl_Module *mod, uint64_t pc)
{
	static const uint8_t movq[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	static const uint8_t movl[] = { 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (!elf)
		return false;
	pc -= bias;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t at;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    pc < sh.sh_addr || pc >= sh.sh_addr + sh.sh_size)
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf)
			return false;
		at = pc - sh.sh_addr;
		return (at + sizeof(movq) <= d->d_size && !memcmp((uint8_t *)d->d_buf + at, movq, sizeof(movq))) ||
		       (at + sizeof(movl) <= d->d_size && !memcmp((uint8_t *)d->d_buf + at, movl, sizeof(movl)));
	}
	return false;
}

static void symbolize_pc(struct symbolizer *s, uint64_t pc, bool is_return_addr,
			 struct frame_vec *fv)
{
	/* A return address belongs to the next statement; pc-1 is the call. */
	Dwarf_Addr addr = is_return_addr && pc > 0 ? pc - 1 : pc;
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
	const char *module;
	uint64_t off;
	Dwarf_Addr low = 0;

	if (!mod)
		return;
	module = module_name(s, mod, &low);
	off = module_offset(mod, pc, low);

	/* A return address at a trampoline: a handler returns there, into the kernel's signal frame. */
	if (is_return_addr && is_sigreturn(mod, pc)) {
		struct sym_frame f = { .func = SYM_SIGNAL_FRAME, .module = module, .module_off = off };

		push_frame(fv, &f);
		return;
	}
	dwarf_frames(s, mod, addr, fv);
	if (fv->n == 0) {
		/* No DWARF, or a unit without functions (assembler sources). */
		struct sym_frame f = { 0 };

		line_at(s, mod, addr, &f);
		push_frame(fv, &f);
	}
	if (fv->n > 0 && !fv->v[fv->n - 1].func)
		fv->v[fv->n - 1].func = symtab_name(s, mod, addr, &fv->v[fv->n - 1].system);
	for (size_t i = 0; i < fv->n; i++) {
		fv->v[i].module = module;
		fv->v[i].module_off = off;
	}
}

/* ---- cache ----------------------------------------------------------------- */

static size_t hash_pc(uint64_t pc, bool is_return_addr)
{
	uint64_t h = pc ^ (uint64_t)is_return_addr;

	/* splitmix64 finalizer: pcs share high bits and low alignment. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (size_t)h;
}

static struct cache_entry *cache_slot(struct cache_entry *tab, size_t cap, uint64_t pc,
				      bool is_return_addr)
{
	size_t mask = cap - 1;
	size_t i = hash_pc(pc, is_return_addr) & mask;

	while (tab[i].used && !(tab[i].pc == pc && tab[i].is_return_addr == is_return_addr))
		i = (i + 1) & mask;
	return &tab[i];
}

static bool cache_grow(struct symbolizer *s)
{
	size_t cap = s->cache_cap ? s->cache_cap * 2 : 1024;
	struct cache_entry *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return false;
	for (size_t i = 0; i < s->cache_cap; i++) {
		struct cache_entry *e = &s->cache[i];

		if (e->used)
			*cache_slot(tab, cap, e->pc, e->is_return_addr) = *e;
	}
	free(s->cache);
	s->cache = tab;
	s->cache_cap = cap;
	return true;
}

/* ---- API ----------------------------------------------------------------- */

static int report_maps(Dwfl *dwfl, const char *maps_text)
{
	size_t len = strlen(maps_text);
	FILE *f;
	int rc;

	if (len == 0)
		return 0;
	/* Read-only stream: the cast drops const only to satisfy the prototype. */
	f = fmemopen((void *)maps_text, len, "r");
	if (!f)
		return errno;
	rc = dwfl_linux_proc_maps_report(dwfl, f);
	fclose(f);
	return rc;
}

struct symbolizer *sym_open(const char *maps_text)
{
	struct symbolizer *s;
	int rc;

	if (!maps_text) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!s->dwfl) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	dwfl_report_begin(s->dwfl);
	rc = report_maps(s->dwfl, maps_text);
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0 && rc == 0)
		rc = -1;
	if (rc != 0) {
		sym_close(s);
		/* Positive codes are errnos (ENOEXEC: malformed text); -1 is libdwfl's. */
		errno = rc > 0 ? rc : EINVAL;
		return NULL;
	}
	return s;
}

void sym_close(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cache_cap; i++)
		free(s->cache[i].frames);
	free(s->cache);
	for (size_t i = 0; i < s->strs_cap; i++)
		free(s->strs[i]);
	free(s->strs);
	if (s->scratch)
		free(s->scratch->v);
	free(s->scratch);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s);
}

double sym_busy_ms(const struct symbolizer *s)
{
	return s ? s->busy_ns / 1e6 : 0;
}

int sym_lookup(struct symbolizer *s, uint64_t pc, bool is_return_addr,
	       const struct sym_frame **frames)
{
	struct frame_vec fv = { 0 };
	struct cache_entry *e;
	uint64_t t0;

	*frames = &unknown_frame;
	/* --mmap: a mapping's kind stands in its innermost frame (bpf/heaptrace.h). */
	static const struct sym_frame kinds[] = { [HT_MAP_MMAP] = { .func = "[mmap]", .system = "[mmap]" },
						  [HT_MAP_BRK] = { .func = "[brk]", .system = "[brk]" } };
	if (ht_pc_kind(pc)) {
		*frames = &kinds[ht_pc_kind(pc)];
		return 1;
	}
	/* A Python frame (stub/python.c): its code object's names, read while it lived. */
	if (ht_pc_python(pc)) {
		s->py = (struct sym_frame){ .module = NULL };
		if (!pyf_frame(pc, &s->py.func, &s->py.file, &s->py.line)) {
			snprintf(s->py_unknown, sizeof(s->py_unknown), "<python code 0x%" PRIx64 ">", pyf_code_address(pc));
			s->py.func = s->py_unknown;
		}
		s->py.system = s->py.func;
		*frames = &s->py;
		return 1;
	}
	/*
	 * A pc in no module has nothing to keep: no entry, so a profile of
	 * made-up addresses costs no memory here (issue 19 item 7).
	 */
	if (!dwfl_addrmodule(s->dwfl, is_return_addr && pc > 0 ? pc - 1 : pc))
		return 1;
	if ((s->cache_len + 1) * 2 > s->cache_cap && s->cache_len < SYM_CACHE_MAX && !cache_grow(s))
		return 1;
	e = cache_slot(s->cache, s->cache_cap, pc, is_return_addr);
	if (e->used) {
		*frames = e->frames;
		return e->nframes;
	}

	t0 = monotonic_ns();
	if (s->cache_len >= SYM_CACHE_MAX) {
		/* Full: symbolized again each time, into one reused vector; the same frames, bounded memory. */
		if (!s->scratch && !(s->scratch = calloc(1, sizeof(*s->scratch))))
			return 1;
		s->scratch->n = 0;
		symbolize_pc(s, pc, is_return_addr, s->scratch);
		if (s->scratch->n == 0 && !push_frame(s->scratch, &unknown_frame))
			return 1;
		s->busy_ns += monotonic_ns() - t0;
		*frames = s->scratch->v;
		return s->scratch->n;
	}
	symbolize_pc(s, pc, is_return_addr, &fv);
	if (fv.n == 0 && !push_frame(&fv, &unknown_frame))
		return 1;
	if (fv.n < fv.cap) {
		/* Exactly as many as there are: most pcs have one frame. */
		struct sym_frame *v = realloc(fv.v, fv.n * sizeof(*v));
		if (v)
			fv.v = v;
	}
	*e = (struct cache_entry){
		.pc = pc,
		.is_return_addr = is_return_addr,
		.used = true,
		.nframes = fv.n,
		.frames = fv.v,
	};
	s->cache_len++;
	s->busy_ns += monotonic_ns() - t0;
	*frames = e->frames;
	return e->nframes;
}

const char *sym_frame_label(const struct sym_frame *f, uint64_t pc, char *buf, size_t len)
{
	if (!ht_pc_python(pc) || !f->file)
		return sym_frame_name(f, pc, buf, len);
	const char *b = strrchr(f->file, '/');
	snprintf(buf, len, "%s (%s:%d)", f->func, b ? b + 1 : f->file, f->line);
	return buf;
}

const char *sym_frame_name(const struct sym_frame *f, uint64_t pc, char *buf, size_t len)
{
	if (f->func)
		return f->func;
	if (f->module)
		snprintf(buf, len, "[%s+0x%" PRIx64 "]", f->module, f->module_off);
	else
		snprintf(buf, len, "[0x%" PRIx64 "]", pc);
	return buf;
}
