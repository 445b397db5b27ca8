/* Just enough of an ELF file for probe placement and dependency resolution. */
#ifndef HT_ELFOBJ_H
#define HT_ELFOBJ_H

#include <stdbool.h>
#include <stdint.h>
#include <gelf.h>

struct elfobj {
	char *path;
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
};

/* Returns 0, or -errno with a message already printed when complain is set. */
int elfobj_open(struct elfobj *o, const char *path, bool complain);
void elfobj_close(struct elfobj *o);

/*
 * Find a defined function symbol by name (.symtab first, then .dynsym, so a
 * stripped library still resolves).  Gives its virtual address and size.
 */
bool elfobj_func(struct elfobj *o, const char *name, uint64_t *vaddr, uint64_t *size);

/* A defined data symbol (STT_OBJECT) by name: its virtual address. */
bool elfobj_object(struct elfobj *o, const char *name, uint64_t *vaddr);

/* A thread-local variable (STT_TLS, .symtab then .dynsym): its offset in the object's TLS block. */
bool elfobj_tls(struct elfobj *o, const char *name, uint64_t *off);

/*
 * Where the loader puts the object's own TLS module id (a GOT slot of an
 * R_X86_64_DTPMOD64 relocation with no symbol: the local-dynamic model's).
 */
bool elfobj_tls_modid_slot(struct elfobj *o, uint64_t *vaddr);

/*
 * The highest function symbol start <= vaddr (.symtab and .dynsym): a known
 * instruction boundary to decode from.  False when there is none.
 */
bool elfobj_func_start_before(struct elfobj *o, uint64_t vaddr, uint64_t *start);

/* The file offset a uprobe takes for a virtual address; -1 when unmapped. */
int64_t elfobj_file_offset(struct elfobj *o, uint64_t vaddr);

/* Copy len bytes of the file image at a virtual address; 0 or -1. */
int elfobj_read(struct elfobj *o, uint64_t vaddr, void *buf, size_t len);

/* [vaddr, vaddr+len) lies in one loaded, readable segment: a read there cannot fault. */
bool elfobj_readable(struct elfobj *o, uint64_t vaddr, uint64_t len);

/* Visit each executable PT_LOAD segment's file image. */
int elfobj_exec_segments(struct elfobj *o,
			 int (*fn)(const uint8_t *code, size_t len, uint64_t vaddr, void *arg), void *arg);

/*
 * The first section named name after `after` (NULL: the first of all), its
 * header in *sh; NULL when there is none.  Passing the last one back walks
 * every section of that name.
 */
Elf_Scn *elfobj_section(struct elfobj *o, const char *name, Elf_Scn *after, GElf_Shdr *sh);

/* The GNU build ID note, as bytes (up to len); its length, or 0 when there is none. */
size_t elfobj_build_id(struct elfobj *o, uint8_t *buf, size_t len);

/*
 * The object's separate debug info (its symbol table, static functions
 * included), found as gdb finds it: by build ID, ROOT/.build-id/xx/yyyy.debug,
 * then by .gnu_debuglink, ROOT/DIR/LINK, DIR/LINK and DIR/.debug/LINK, for
 * ROOT debug_dir (may be NULL) then /usr/lib/debug, DIR the object's
 * directory.  A file whose build ID differs from the object's is not it.
 * 0 with dbg open and its path in path, or -1.
 */
int elfobj_open_debug(struct elfobj *o, const char *debug_dir, struct elfobj *dbg, char *path, size_t len);

/* The function symbol whose extent holds vaddr (.symtab, then .dynsym): its start, size and name. */
bool elfobj_func_at(struct elfobj *o, uint64_t vaddr, uint64_t *start, uint64_t *size, const char **name);

/* Has a PT_INTERP, i.e. is dynamically linked. */
bool elfobj_dynamic(struct elfobj *o);

/* What the dynamic loader reads from an object: copies, freed by elfobj_dyninfo_free. */
struct elf_dyninfo {
	char **needed;      /* DT_NEEDED in order */
	int n_needed;
	char *runpath;      /* DT_RUNPATH or NULL */
	char *rpath;        /* DT_RPATH or NULL (ignored by ld.so when runpath is set) */
};

int elfobj_dyninfo(struct elfobj *o, struct elf_dyninfo *out);
void elfobj_dyninfo_free(struct elf_dyninfo *d);

#endif
