#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/elfobj.h"
#include "util/log.h"

int elfobj_open(struct elfobj *o, const char *path, bool complain)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		if (complain)
			ht_err("cannot open %s: %s", path, strerror(e));
		return -e;
	}
	o->elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF || !gelf_getehdr(o->elf, &o->ehdr)) {
		if (complain)
			ht_err("%s is not an ELF file", path);
		elfobj_close(o);
		return -ENOEXEC;
	}
	o->path = strdup(path);
	return 0;
}

void elfobj_close(struct elfobj *o)
{
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

static Elf_Scn *find_section(struct elfobj *o, Elf64_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(o->elf, scn))) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}

/*
 * A symbol table's defined functions, data objects or thread-local
 * variables, one at a time: sym_open() then sym_next() until it returns
 * false; sym_name() names one.
 */
enum sym_kind {
	SYM_FUNC,               /* STT_FUNC and STT_GNU_IFUNC */
	SYM_DATA,               /* STT_OBJECT */
	SYM_TLS,                /* STT_TLS: the value is an offset in the TLS block, 0 too */
};

struct sym_iter {
	struct elfobj *o;
	Elf_Data *data;
	GElf_Shdr shdr;
	size_t i, n;
	enum sym_kind kind;
};

static bool sym_open(struct sym_iter *it, struct elfobj *o, Elf64_Word type, enum sym_kind kind)
{
	Elf_Scn *scn = find_section(o, type, &it->shdr);

	it->o = o;
	it->i = it->n = 0;
	it->kind = kind;
	if (!scn || !(it->data = elf_getdata(scn, NULL)) || !it->shdr.sh_entsize)
		return false;
	it->n = it->shdr.sh_size / it->shdr.sh_entsize;
	return true;
}

static bool sym_next(struct sym_iter *it, GElf_Sym *sym)
{
	while (it->i < it->n) {
		if (!gelf_getsym(it->data, it->i++, sym) || sym->st_shndx == SHN_UNDEF)
			continue;
		int t = GELF_ST_TYPE(sym->st_info);
		if (it->kind == SYM_TLS ? t == STT_TLS :
		    sym->st_value && (it->kind == SYM_DATA ? t == STT_OBJECT : t == STT_FUNC || t == STT_GNU_IFUNC))
			return true;
	}
	return false;
}

static const char *sym_name(const struct sym_iter *it, const GElf_Sym *sym)
{
	return elf_strptr(it->o->elf, it->shdr.sh_link, sym->st_name);
}

static bool search_symtab(struct elfobj *o, Elf64_Word type, const char *name, enum sym_kind kind,
			  uint64_t *vaddr, uint64_t *size)
{
	struct sym_iter it;
	GElf_Sym sym;

	if (!sym_open(&it, o, type, kind))
		return false;
	while (sym_next(&it, &sym)) {
		const char *s = sym_name(&it, &sym);
		if (s && !strcmp(s, name)) {
			*vaddr = sym.st_value;
			*size = sym.st_size;
			return true;
		}
	}
	return false;
}

bool elfobj_func(struct elfobj *o, const char *name, uint64_t *vaddr, uint64_t *size)
{
	return search_symtab(o, SHT_SYMTAB, name, SYM_FUNC, vaddr, size) ||
	       search_symtab(o, SHT_DYNSYM, name, SYM_FUNC, vaddr, size);
}

bool elfobj_object(struct elfobj *o, const char *name, uint64_t *vaddr)
{
	uint64_t size;

	return search_symtab(o, SHT_SYMTAB, name, SYM_DATA, vaddr, &size) ||
	       search_symtab(o, SHT_DYNSYM, name, SYM_DATA, vaddr, &size);
}

bool elfobj_tls(struct elfobj *o, const char *name, uint64_t *off)
{
	uint64_t size;

	return search_symtab(o, SHT_SYMTAB, name, SYM_TLS, off, &size) ||
	       search_symtab(o, SHT_DYNSYM, name, SYM_TLS, off, &size);
}

bool elfobj_tls_modid_slot(struct elfobj *o, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(o->elf, scn))) {
		Elf_Data *d;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_RELA || !shdr.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Rela r;
			if (gelf_getrela(d, i, &r) && GELF_R_TYPE(r.r_info) == R_X86_64_DTPMOD64 && !GELF_R_SYM(r.r_info)) {
				*vaddr = r.r_offset;
				return true;
			}
		}
	}
	return false;
}

static void best_start_in(struct elfobj *o, Elf64_Word type, uint64_t vaddr, uint64_t *best)
{
	struct sym_iter it;
	GElf_Sym sym;

	if (!sym_open(&it, o, type, SYM_FUNC))
		return;
	while (sym_next(&it, &sym))
		if (sym.st_value <= vaddr && sym.st_value > *best)
			*best = sym.st_value;
}

bool elfobj_func_start_before(struct elfobj *o, uint64_t vaddr, uint64_t *start)
{
	uint64_t best = 0;

	best_start_in(o, SHT_SYMTAB, vaddr, &best);
	best_start_in(o, SHT_DYNSYM, vaddr, &best);
	*start = best;
	return best != 0;
}

/*
 * The PT_LOAD segment with all of flags whose file image (in_file) or memory
 * image holds [vaddr, vaddr + len).
 */
static bool segment_of(struct elfobj *o, uint64_t vaddr, uint64_t len, Elf64_Word flags, bool in_file,
		       GElf_Phdr *ph)
{
	size_t n;

	if (elf_getphdrnum(o->elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(o->elf, i, ph) || ph->p_type != PT_LOAD || (ph->p_flags & flags) != flags)
			continue;
		uint64_t size = in_file ? ph->p_filesz : ph->p_memsz;
		if (vaddr >= ph->p_vaddr && vaddr + len <= ph->p_vaddr + size)
			return true;
	}
	return false;
}

int64_t elfobj_file_offset(struct elfobj *o, uint64_t vaddr)
{
	GElf_Phdr ph;

	return segment_of(o, vaddr, 1, PF_X, true, &ph) ? (int64_t)(vaddr - ph.p_vaddr + ph.p_offset) : -1;
}

int elfobj_read(struct elfobj *o, uint64_t vaddr, void *buf, size_t len)
{
	GElf_Phdr ph;

	if (!segment_of(o, vaddr, len, PF_X, true, &ph))
		return -1;
	return pread(o->fd, buf, len, vaddr - ph.p_vaddr + ph.p_offset) == (ssize_t)len ? 0 : -1;
}

bool elfobj_readable(struct elfobj *o, uint64_t vaddr, uint64_t len)
{
	GElf_Phdr ph;

	return segment_of(o, vaddr, len, PF_R, false, &ph);
}

int elfobj_exec_segments(struct elfobj *o,
			 int (*fn)(const uint8_t *code, size_t len, uint64_t vaddr, void *arg), void *arg)
{
	size_t n;

	if (elf_getphdrnum(o->elf, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(o->elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		const uint8_t *code = (const uint8_t *)elf_rawfile(o->elf, NULL);
		size_t size;
		if (!code || !elf_rawfile(o->elf, &size) || ph.p_offset + ph.p_filesz > size)
			return -1;
		int r = fn(code + ph.p_offset, ph.p_filesz, ph.p_vaddr, arg);
		if (r)
			return r;
	}
	return 0;
}

size_t elfobj_build_id(struct elfobj *o, uint8_t *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(o->elf, scn))) {
		Elf_Data *data;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
			continue;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4))
				continue;
			size_t n = nh.n_descsz < len ? nh.n_descsz : len;
			memcpy(buf, (char *)data->d_buf + desc_off, n);
			return n;
		}
	}
	return 0;
}

Elf_Scn *elfobj_section(struct elfobj *o, const char *name, Elf_Scn *after, GElf_Shdr *sh)
{
	Elf_Scn *scn = after;
	size_t shstrndx;

	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		const char *n;

		if (gelf_getshdr(scn, sh) && (n = elf_strptr(o->elf, shstrndx, sh->sh_name)) && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* The .gnu_debuglink section's file name, or NULL. */
static const char *debuglink(struct elfobj *o)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elfobj_section(o, ".gnu_debuglink", scn, &shdr))) {
		Elf_Data *data = elf_getdata(scn, NULL);

		if (data && data->d_size && memchr(data->d_buf, '\0', data->d_size))
			return data->d_buf;
	}
	return NULL;
}

/* Has path a symbol table, and the build ID of the object (if it has one)? */
static bool debug_file_of(const char *path, const uint8_t *id, size_t id_len, struct elfobj *dbg)
{
	uint8_t got[64];
	GElf_Shdr shdr;

	if (access(path, R_OK) || elfobj_open(dbg, path, false))
		return false;
	/* A debug file of another build would give wrong addresses. */
	if ((!id_len || (elfobj_build_id(dbg, got, sizeof(got)) == id_len && !memcmp(got, id, id_len))) &&
	    find_section(dbg, SHT_SYMTAB, &shdr))
		return true;
	elfobj_close(dbg);
	return false;
}

int elfobj_open_debug(struct elfobj *o, const char *debug_dir, struct elfobj *dbg, char *path, size_t len)
{
	const char *roots[2] = { debug_dir, "/usr/lib/debug" };
	uint8_t id[64];
	size_t id_len = elfobj_build_id(o, id, sizeof(id));
	const char *link = debuglink(o);
	char *dir = strdup(o->path), *slash = strrchr(dir, '/');

	if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	for (int r = 0; r < 2; r++) {
		if (!roots[r])
			continue;
		/* ROOT/.build-id/xx/yyyy.debug, as gdb and debuginfod lay them out. */
		if (id_len >= 2) {
			int n = snprintf(path, len, "%s/.build-id/%02x/", roots[r], id[0]);
			for (size_t i = 1; i < id_len && n > 0 && (size_t)n < len; i++)
				n += snprintf(path + n, len - n, "%02x", id[i]);
			if (n > 0 && (size_t)n < len && (size_t)snprintf(path + n, len - n, ".debug") < len - n &&
			    debug_file_of(path, id, id_len, dbg))
				goto found;
		}
		/* ROOT/DIR/LINK: /usr/lib/debug/usr/bin/prog.debug for /usr/bin/prog. */
		if (link && (size_t)snprintf(path, len, "%s%s/%s", roots[r], dir, link) < len &&
		    debug_file_of(path, id, id_len, dbg))
			goto found;
	}
	/* DIR/LINK and DIR/.debug/LINK, beside the object. */
	if (link && (size_t)snprintf(path, len, "%s/%s", dir, link) < len && strcmp(path, o->path) &&
	    debug_file_of(path, id, id_len, dbg))
		goto found;
	if (link && (size_t)snprintf(path, len, "%s/.debug/%s", dir, link) < len && debug_file_of(path, id, id_len, dbg))
		goto found;
	free(dir);
	return -1;
found:
	free(dir);
	return 0;
}

bool elfobj_func_at(struct elfobj *o, uint64_t vaddr, uint64_t *start, uint64_t *size, const char **name)
{
	for (int k = 0; k < 2; k++) {
		struct sym_iter it;
		GElf_Sym sym;

		if (!sym_open(&it, o, k ? SHT_DYNSYM : SHT_SYMTAB, SYM_FUNC))
			continue;
		while (sym_next(&it, &sym)) {
			if (vaddr < sym.st_value || vaddr >= sym.st_value + (sym.st_size ? sym.st_size : 1))
				continue;
			*start = sym.st_value;
			*size = sym.st_size;
			*name = sym_name(&it, &sym);
			return true;
		}
	}
	return false;
}

bool elfobj_dynamic(struct elfobj *o)
{
	size_t n;

	if (elf_getphdrnum(o->elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(o->elf, i, &ph) && ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

int elfobj_dyninfo(struct elfobj *o, struct elf_dyninfo *d)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(o, SHT_DYNAMIC, &shdr);
	Elf_Data *data;

	memset(d, 0, sizeof(*d));
	if (!scn || !(data = elf_getdata(scn, NULL)) || !shdr.sh_entsize)
		return 0;
	size_t n = shdr.sh_size / shdr.sh_entsize;
	d->needed = calloc(n + 1, sizeof(*d->needed));
	if (!d->needed)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Dyn dyn;
		if (!gelf_getdyn(data, i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		const char *s = NULL;
		if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_RUNPATH || dyn.d_tag == DT_RPATH)
			s = elf_strptr(o->elf, shdr.sh_link, dyn.d_un.d_val);
		if (!s)
			continue;
		if (dyn.d_tag == DT_NEEDED)
			d->needed[d->n_needed++] = strdup(s);
		else if (dyn.d_tag == DT_RUNPATH)
			d->runpath = strdup(s);
		else
			d->rpath = strdup(s);
	}
	return 0;
}

void elfobj_dyninfo_free(struct elf_dyninfo *d)
{
	for (int i = 0; i < d->n_needed; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->runpath);
	free(d->rpath);
	memset(d, 0, sizeof(*d));
}
