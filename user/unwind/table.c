#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ucontext.h>

#include "unwind/cache.h"
#include "unwind/table.h"
#include "util/array.h"
#include "util/elfobj.h"
#include "util/log.h"

/* DWARF register numbers on x86-64. */
#define DWREG_RBP 6
#define DWREG_RSP 7
#define DWREG_RIP 16

/* The signal frame's registers are where the BPF walk reads them: rsp + 40 is the ucontext's start. */
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]) == HT_SIGFRAME_RBP, "sigcontext rbp");
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]) == HT_SIGFRAME_RSP, "sigcontext rsp");
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]) == HT_SIGFRAME_RIP, "sigcontext rip");

/* ---- rows ------------------------------------------------------------------ */

struct rowbuf {
	struct ht_unwind_row *v;
	size_t n, cap;
};

static bool same_rule(const struct ht_unwind_row *a, const struct ht_unwind_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp == b->rbp && a->rbp_off == b->rbp_off;
}

/*
 * Append the rule that holds from pc on.  Rows arrive in pc order; one at
 * the pc of the last replaces it (that row held for no address: the later
 * rule wins, deterministically), and one that repeats the last rule only
 * extends it.  Rows beyond 4 GiB cannot be stored and are left out.
 */
static int rows_push(struct rowbuf *b, uint64_t pc, struct ht_unwind_row r)
{
	if (pc > UINT32_MAX)
		return 0;
	while (b->n && b->v[b->n - 1].pc >= pc)
		b->n--;
	if (b->n && same_rule(&b->v[b->n - 1], &r))
		return 0;
	if (ARRAY_RESERVE(b->v, b->cap, b->n + 1, 1024))
		return -ENOMEM;
	r.pc = (uint32_t)pc;
	b->v[b->n++] = r;
	return 0;
}

static struct ht_unwind_row unknown_row(void)
{
	return (struct ht_unwind_row){ .cfa = HT_CFA_UNKNOWN, .rbp = HT_RBP_UNKNOWN };
}

/* ---- translating one libdw frame state --------------------------------------- */

/* DW_OP_bregN / DW_OP_bregx: register and offset. */
static bool op_breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	return false;
}

static bool op_is_breg(const Dwarf_Op *op, unsigned reg, int64_t off)
{
	unsigned r;
	int64_t o;

	return op_breg(op, &r, &o) && r == reg && o == off;
}

/*
 * The lazy-binding .plt's CFA as GNU ld writes it: rsp + 8, plus 8 once
 * the entry has pushed its relocation index, i.e. when (rip & 15) >= N.
 * N is 11 in the classic 16-byte entry (jmp *GOT is 6 bytes, push 5) and
 * 10 in the IBT entry (endbr64 4, push 5, bnd jmp): both thresholds agree
 * at every instruction boundary of both layouts (0, 6, 11 and 0, 4, 9,
 * 15), so HT_CFA_PLT's single test (>= 11) evaluates either exactly.
 */
static bool is_plt_expr(const Dwarf_Op *ops, size_t n)
{
	return n == 9 && op_is_breg(&ops[0], DWREG_RSP, 8) && op_is_breg(&ops[1], DWREG_RIP, 0) &&
	       ops[2].atom == DW_OP_lit15 && ops[3].atom == DW_OP_and &&
	       (ops[4].atom == DW_OP_lit11 || ops[4].atom == DW_OP_lit10) &&
	       ops[5].atom == DW_OP_ge && ops[6].atom == DW_OP_lit3 && ops[7].atom == DW_OP_shl &&
	       ops[8].atom == DW_OP_plus;
}

static void cfa_rule(Dwarf_Frame *f, struct ht_unwind_row *r)
{
	Dwarf_Op *ops;
	size_t n;
	unsigned reg;
	int64_t off;

	if (dwarf_frame_cfa(f, &ops, &n) != 0 || n == 0)
		return;
	if (is_plt_expr(ops, n)) {
		r->cfa = HT_CFA_PLT;
		r->cfa_off = 8;
		return;
	}
	if (n != 1 || !op_breg(&ops[0], &reg, &off) || off < INT32_MIN || off > INT32_MAX)
		return;
	if (reg == DWREG_RSP || reg == DWREG_RBP) {
		r->cfa = reg == DWREG_RSP ? HT_CFA_RSP : HT_CFA_RBP;
		r->cfa_off = (int32_t)off;
	}
}

/*
 * A register's rule as "saved at CFA + off".  libdw gives that as
 * DW_OP_call_frame_cfa, then DW_OP_plus_uconst with the (signed) offset
 * unless it is 0; a val_offset rule ends in DW_OP_stack_value and is not
 * this.
 */
static bool saved_at_cfa(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n < 1 || n > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

enum ra_kind { RA_AT_CFA_MINUS_8, RA_UNDEFINED, RA_OTHER };

/*
 * Where the CIE's return address column (rip's, 16, in practice) is saved.
 * libdw: *nops 0 with *ops pointing at ops_mem is "undefined", with *ops
 * NULL "same value".
 */
static enum ra_kind ra_rule(Dwarf_Frame *f, int ra_reg)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	if (ra_reg < 0 || dwarf_frame_register(f, ra_reg, mem, &ops, &n) != 0)
		return RA_OTHER;
	if (n == 0)
		return ops ? RA_UNDEFINED : RA_OTHER;
	return saved_at_cfa(ops, n, &off) && off == -8 ? RA_AT_CFA_MINUS_8 : RA_OTHER;
}

/*
 * Registers a CIE does not mention follow the ABI's default, which libdw
 * takes from its x86-64 backend (callee-saved: same value).  Were that
 * default missing, libdw would call them undefined; an explicit
 * DW_CFA_undefined for rbp does not occur outside outermost frames, whose
 * rbp nobody reads, so undefined counts as same value too.
 */
static void rbp_rule(Dwarf_Frame *f, struct ht_unwind_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	if (dwarf_frame_register(f, DWREG_RBP, mem, &ops, &n) != 0)
		return;
	if (n == 0) {
		r->rbp = HT_RBP_SAME;
	} else if (saved_at_cfa(ops, n, &off) && off >= INT16_MIN && off <= INT16_MAX) {
		r->rbp = HT_RBP_CFA;
		r->rbp_off = (int16_t)off;
	}
}

/*
 * A register saved at rsp + off, as a signal frame's CFI says it
 * (DW_CFA_expression DW_OP_breg7 off).  libdw hands the expression back
 * after a DW_OP_call_frame_cfa of its own, which the address ignores.
 */
static bool saved_at_rsp(Dwarf_Frame *f, int reg, int64_t off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(f, reg, mem, &ops, &n) != 0 || !ops || !n)
		return false;
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		n--;
	}
	return n == 1 && op_is_breg(&ops[0], DWREG_RSP, off);
}

/*
 * The kernel's signal frame, as the signal return trampoline's CFI
 * describes it (glibc's __restore_rt: an FDE whose CIE has the 'S'
 * augmentation; CFA = *(rsp + 160), every register saved at rsp + its
 * place in the struct sigcontext).  The BPF walk reads rip, rsp and rbp
 * from the places the ABI fixes (HT_SIGFRAME_*), so the row says "signal
 * frame" only when the CFI puts them exactly there.
 */
static bool sigframe_rule(Dwarf_Frame *f, int ra_reg)
{
	Dwarf_Op *ops;
	size_t n;

	if (ra_reg != DWREG_RIP || dwarf_frame_cfa(f, &ops, &n) != 0 || n != 2 ||
	    !op_is_breg(&ops[0], DWREG_RSP, HT_SIGFRAME_RSP) || ops[1].atom != DW_OP_deref)
		return false;
	return saved_at_rsp(f, DWREG_RIP, HT_SIGFRAME_RIP) && saved_at_rsp(f, DWREG_RSP, HT_SIGFRAME_RSP) &&
	       saved_at_rsp(f, DWREG_RBP, HT_SIGFRAME_RBP);
}

static struct ht_unwind_row translate(Dwarf_Frame *f, int ra_reg, bool signal)
{
	struct ht_unwind_row r = unknown_row();

	if (signal) {
		if (sigframe_rule(f, ra_reg))
			r.cfa = HT_CFA_SIGNAL;
		return r;
	}
	switch (ra_rule(f, ra_reg)) {
	case RA_UNDEFINED:
		r.cfa = HT_CFA_END;
		return r;
	case RA_OTHER:
		return r;
	case RA_AT_CFA_MINUS_8:
		break;
	}
	cfa_rule(f, &r);
	if (r.cfa == HT_CFA_UNKNOWN)
		return unknown_row();
	rbp_rule(f, &r);
	return r;
}

/*
 * The rows of [start, limit): libdw runs the FDE's program up to each
 * address asked for and says where that row ends.
 */
static int fde_rows(Dwarf_CFI *cfi, uint64_t start, uint64_t limit, struct rowbuf *b)
{
	uint64_t addr = start;

	while (addr < limit && addr <= UINT32_MAX) {
		Dwarf_Frame *f;
		Dwarf_Addr s, e;
		struct ht_unwind_row r;
		bool signal = false;
		int err, ra_reg;

		if (dwarf_cfi_addrframe(cfi, addr, &f) != 0)
			return rows_push(b, addr, unknown_row());
		ra_reg = dwarf_frame_info(f, &s, &e, &signal);
		r = translate(f, ra_reg, signal);
		free(f);
		if ((err = rows_push(b, addr, r)))
			return err;
		if (e <= addr)
			return rows_push(b, addr + 1, unknown_row());
		addr = e;
	}
	return 0;
}

/* ---- enumerating FDEs ------------------------------------------------------- */

struct fde_range {
	uint64_t start, end;
};

struct cfi_section {
	Elf_Data *data;
	uint64_t addr;          /* sh_addr: where pc-relative pointers count from */
	bool eh;                /* .eh_frame, not .debug_frame */
	const unsigned char *ident;
};

struct cie_enc {
	Dwarf_Off off;
	int enc;                /* the FDE pointer encoding, -1: unusable */
};

static bool read_leb128(const uint8_t **pp, const uint8_t *end, bool is_signed, uint64_t *val)
{
	const uint8_t *p = *pp;
	unsigned shift = 0;
	uint64_t v = 0;
	uint8_t byte;

	do {
		if (p >= end || shift > 63)
			return false;
		byte = *p++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
	} while (byte & 0x80);
	if (is_signed && shift < 64 && (byte & 0x40))
		v |= ~0ull << shift;
	*pp = p;
	*val = v;
	return true;
}

/* The value's format (the low 4 bits of a DW_EH_PE_* encoding), as stored. */
static bool read_raw(const uint8_t **pp, const uint8_t *end, uint8_t enc, uint64_t *val)
{
	static const uint8_t size[16] = {
		[DW_EH_PE_absptr] = 8, [DW_EH_PE_udata2] = 2, [DW_EH_PE_udata4] = 4,
		[DW_EH_PE_udata8] = 8, [DW_EH_PE_sdata2] = 2, [DW_EH_PE_sdata4] = 4,
		[DW_EH_PE_sdata8] = 8,
	};
	size_t len = size[enc & 0x0f];
	uint64_t v = 0;

	if ((enc & 0x0f) == DW_EH_PE_uleb128 || (enc & 0x0f) == DW_EH_PE_sleb128)
		return read_leb128(pp, end, enc & DW_EH_PE_signed, val);
	if (!len || (size_t)(end - *pp) < len)
		return false;
	memcpy(&v, *pp, len);   /* little-endian: checked with the machine */
	if ((enc & DW_EH_PE_signed) && len < 8 && (v >> (8 * len - 1)) & 1)
		v |= ~0ull << (8 * len);
	*pp += len;
	*val = v;
	return true;
}

/* A DW_EH_PE_* encoded address; pcrel counts from field_addr, the value's own address. */
static bool read_encoded(const uint8_t **pp, const uint8_t *end, uint8_t enc, uint64_t field_addr,
			 uint64_t *val)
{
	if ((enc & DW_EH_PE_indirect) || !read_raw(pp, end, enc, val))
		return false;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return true;
	case DW_EH_PE_pcrel:
		*val += field_addr;
		return true;
	default:
		return false;   /* relative to bases an FDE's start never uses */
	}
}

/*
 * How the CIE's FDEs encode their pointers: the 'R' augmentation, found by
 * walking the augmentation string over its data.  -1 when it cannot be
 * found (an augmentation that is not self-sized, or unknown before 'R').
 */
static int cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *a = cie->augmentation;
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;
	uint64_t ignored;

	if (!a || !*a)
		return DW_EH_PE_absptr;
	if (a[0] != 'z' || !p)
		return -1;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return p < end ? *p : -1;
		case 'L':
			if (p >= end)
				return -1;
			p++;
			break;
		case 'P':
			if (p >= end)
				return -1;
			p++;
			if (!read_raw(&p, end, p[-1], &ignored))
				return -1;
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

/* The CIEs met so far, with their FDEs' pointer encodings. */
struct cies {
	struct cie_enc *v;
	size_t n, cap;
};

static int cie_lookup(const struct cfi_section *sec, struct cies *c, Dwarf_Off off)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	int enc = -1;

	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].off == off)
			return c->v[i].enc;
	}
	if (dwarf_next_cfi(sec->ident, sec->data, sec->eh, off, &next, &e) == 0 && dwarf_cfi_cie_p(&e))
		enc = cie_fde_encoding(&e.cie);
	if (!ARRAY_RESERVE(c->v, c->cap, c->n + 1, 16))
		c->v[c->n++] = (struct cie_enc){ off, enc };
	return enc;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;      /* the longest first */
}

/* Every FDE's [start, end), sorted by start; empty ones and ones we cannot decode left out. */
static int collect_fdes(const struct cfi_section *sec, struct fde_range **out, size_t *nout)
{
	struct cies cies = { 0 };
	struct fde_range *v = NULL;
	size_t n = 0, cap = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	int r = 0;

	while (dwarf_next_cfi(sec->ident, sec->data, sec->eh, off, &next, &e) == 0) {
		const uint8_t *base = sec->data->d_buf;
		const uint8_t *p = e.fde.start;
		uint64_t start, len;
		int enc;

		off = next;
		if (dwarf_cfi_cie_p(&e) || (enc = cie_lookup(sec, &cies, e.fde.CIE_pointer)) < 0)
			continue;
		if (!read_encoded(&p, e.fde.end, enc, sec->addr + (p - base), &start) ||
		    !read_raw(&p, e.fde.end, enc, &len) || !len || start + len < start)
			continue;
		if (ARRAY_RESERVE(v, cap, n + 1, 256)) {
			r = -ENOMEM;
			break;
		}
		v[n++] = (struct fde_range){ start, start + len };
		if (next == (Dwarf_Off)-1)
			break;
	}
	free(cies.v);
	if (r) {
		free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), fde_cmp);
	*out = v;
	*nout = n;
	return 0;
}

/*
 * Each FDE's rows, then, unless the next FDE starts right where it ends, an
 * HT_CFA_UNKNOWN row at its end.  FDEs that overlap (malformed) are cut
 * at the next one's start; of two with one start, the longer is kept.
 */
static int compile(Dwarf_CFI *cfi, const struct cfi_section *sec, struct rowbuf *b)
{
	struct fde_range *f = NULL;
	size_t n = 0;
	int r = collect_fdes(sec, &f, &n);

	for (size_t i = 0; !r && i < n; i++) {
		uint64_t next = UINT64_MAX;

		if (i && f[i].start == f[i - 1].start)
			continue;
		for (size_t j = i + 1; j < n; j++) {
			if (f[j].start != f[i].start) {
				next = f[j].start;
				break;
			}
		}
		r = fde_rows(cfi, f[i].start, f[i].end < next ? f[i].end : next, b);
		if (!r && f[i].end < next)
			r = rows_push(b, f[i].end, unknown_row());
	}
	free(f);
	return r;
}

/* ---- the object ------------------------------------------------------------- */

static bool has_contents(const GElf_Shdr *sh)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size;
}

/* .eh_frame if the object has one with contents, else .debug_frame; NULL: no CFI. */
static Elf_Scn *cfi_scn(struct elfobj *o, bool *eh)
{
	Elf_Scn *scn = NULL, *debug = NULL;
	GElf_Shdr sh;

	while ((scn = elfobj_section(o, ".eh_frame", scn, &sh))) {
		if (has_contents(&sh)) {
			*eh = true;
			return scn;
		}
	}
	while ((scn = elfobj_section(o, ".debug_frame", scn, &sh))) {
		if (has_contents(&sh))
			debug = scn;
	}
	*eh = false;
	return debug;
}

static bool is_x86_64(const struct elfobj *o)
{
	return o->ehdr.e_machine == EM_X86_64 && o->ehdr.e_ident[EI_CLASS] == ELFCLASS64 &&
	       o->ehdr.e_ident[EI_DATA] == ELFDATA2LSB;
}

/* The section's data and address, for collect_fdes(); false when unreadable. */
static bool section_of(struct elfobj *o, Elf_Scn *scn, bool eh, struct cfi_section *sec)
{
	GElf_Shdr sh;

	*sec = (struct cfi_section){ .eh = eh, .ident = o->ehdr.e_ident };
	if (!(sec->data = elf_getdata(scn, NULL)) || !gelf_getshdr(scn, &sh))
		return false;
	sec->addr = sh.sh_addr;
	return true;
}

static int build_rows(struct elfobj *o, Elf_Scn *scn, bool eh, struct unwind_table *out)
{
	struct cfi_section sec;
	struct rowbuf b = { 0 };
	Dwarf *dw = NULL;
	Dwarf_CFI *cfi;
	GElf_Shdr sh;
	int r;

	if (!eh) {
		/* libdw reads .debug_frame through the same Elf: decompress it once, for both. */
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return -EINVAL;
		dw = dwarf_begin_elf(o->elf, DWARF_C_READ, NULL);
	}
	cfi = eh ? dwarf_getcfi_elf(o->elf) : dw ? dwarf_getcfi(dw) : NULL;
	if (!cfi || !section_of(o, scn, eh, &sec)) {
		r = -EINVAL;
		goto out;
	}
	r = compile(cfi, &sec, &b);
out:
	if (eh && cfi)
		dwarf_cfi_end(cfi);
	if (dw)
		dwarf_end(dw);
	if (r) {
		free(b.v);
		return r;
	}
	out->rows = b.v;
	out->n = b.n;
	return 0;
}

/* ---- API ------------------------------------------------------------------- */

static int open_object(const char *path, struct elfobj *o, Elf_Scn **scn, bool *eh)
{
	int r = elfobj_open(o, path, false);

	if (r)
		return r;
	if (!is_x86_64(o)) {
		elfobj_close(o);
		return -ENOEXEC;
	}
	*scn = cfi_scn(o, eh);
	return 0;
}

/* The table, through the cache when cached (else without reading or writing it). */
static int table_get(const char *path, struct unwind_table *out, bool cached)
{
	struct unwind_cache c = { .dfd = -1 };
	struct elfobj o;
	Elf_Scn *scn;
	bool eh;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = open_object(path, &o, &scn, &eh)))
		return r;
	if (!scn)               /* nothing to build: not worth a cache file */
		goto out;
	/* Opened before building: building decompresses a compressed .debug_frame in place. */
	if (cached)
		unwind_cache_open(&c, &o, scn, eh);
	if (unwind_cache_load(&c, out)) {
		r = build_rows(&o, scn, eh, out);
		if (!r)
			unwind_cache_store(&c, out);
	}
	unwind_cache_close(&c);
out:
	elfobj_close(&o);
	return r;
}

int unwind_table_build(const char *path, struct unwind_table *out)
{
	return table_get(path, out, false);
}

int unwind_table_get(const char *path, struct unwind_table *out)
{
	return table_get(path, out, true);
}

int unwind_fde_extent(const char *path, uint64_t vaddr, uint64_t *start, uint64_t *size)
{
	struct cfi_section sec;
	struct fde_range *f = NULL;
	struct elfobj o;
	Elf_Scn *scn;
	size_t n = 0;
	bool eh;
	int r;

	if ((r = open_object(path, &o, &scn, &eh)))
		return r;
	r = -ENOENT;
	if (scn && eh && section_of(&o, scn, eh, &sec)) {
		if (collect_fdes(&sec, &f, &n))
			n = 0;
		for (size_t i = 0; i < n; i++)
			if (vaddr >= f[i].start && vaddr < f[i].end) {
				*start = f[i].start;
				*size = f[i].end - f[i].start;
				r = 0;
				break;
			}
		free(f);
	}
	elfobj_close(&o);
	return r;
}

void unwind_table_free(struct unwind_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct ht_unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->n;

	if (pc > UINT32_MAX)
		return t->n ? &t->rows[t->n - 1] : NULL;
	/* The last row with row.pc <= pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}
