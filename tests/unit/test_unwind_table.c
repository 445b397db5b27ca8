/*
 * Unit test for user/unwind_table.c: rows of hand-written CFI (the fx_*
 * functions of tests/unit/unwind_fixture.c, from .eh_frame and from
 * .debug_frame), of compiled prologues, and of libc and libstdc++ checked
 * row for row against readelf's own interpretation of their CFI; then the
 * cache: round trip, files that must be ignored and rebuilt, directories
 * that must not be used.
 *
 * `test_unwind_table --dump FILE` prints FILE's rows instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "util/elfobj.h"
#include "unwind/table.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "readelf_cfi.h"

static const char *const cfa_names[] = { "rsp", "rbp", "plt", "end", "unknown", "signal" };
static const char *const rbp_names[] = { "same", "cfa", "unknown" };

static const char *row_str(const struct ht_unwind_row *r, char *buf, size_t len)
{
	if (!r)
		return "(no row)";
	snprintf(buf, len, "%s%+d rbp %s%+d",
		 r->cfa <= HT_CFA_SIGNAL ? cfa_names[r->cfa] : "?", r->cfa_off,
		 r->rbp <= HT_RBP_UNKNOWN ? rbp_names[r->rbp] : "?", r->rbp_off);
	return buf;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- fixtures and temporary cache directories -------------------------------- */

/* All paths here are short: one cut to PATH_MAX is a bug. */
static char *pathf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		abort();
	return buf;
}

static char fixtures[PATH_MAX];
static char tmp_root[] = "/tmp/test_unwind_table.XXXXXX";
static int n_caches;

static void fixture(char *buf, const char *name)
{
	pathf(buf, "%s/%s", fixtures, name);
}

/* build/unit/test_unwind_table -> build/fixtures */
static bool find_fixtures(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return false;
	exe[n] = 0;
	if (!(slash = strrchr(exe, '/')))
		return false;
	*slash = 0;
	pathf(fixtures, "%s/../fixtures", exe);
	return access(fixtures, R_OK) == 0;
}

/* A new, empty XDG_CACHE_HOME; returns the heaptrace directory inside it. */
static const char *fresh_cache(void)
{
	static char dir[PATH_MAX];
	char xdg[PATH_MAX];

	pathf(xdg, "%s/cache%d", tmp_root, ++n_caches);
	setenv("XDG_CACHE_HOME", xdg, 1);
	pathf(dir, "%s/heaptrace", xdg);
	return dir;
}

/* The only *.unwind file in dir (full path), or false. */
static bool cache_file(const char *dir, char *path)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return false;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len > 7 && !strcmp(e->d_name + len - 7, ".unwind")) {
			pathf(path, "%s/%s", dir, e->d_name);
			n++;
		}
	}
	closedir(d);
	return n == 1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* ---- helpers on tables -------------------------------------------------------- */

static bool func(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	struct elfobj o;
	bool ok;

	if (elfobj_open(&o, path, false))
		return false;
	ok = elfobj_func(&o, name, addr, size);
	elfobj_close(&o);
	return ok;
}

static bool rule_is(const struct ht_unwind_row *r, int cfa, int cfa_off, int rbp, int rbp_off)
{
	return r && r->cfa == cfa && r->cfa_off == cfa_off && r->rbp == rbp && r->rbp_off == rbp_off;
}

static void expect(const struct unwind_table *t, const char *what, const char *fn, uint64_t base,
		   unsigned off, int cfa, int cfa_off, int rbp, int rbp_off)
{
	struct ht_unwind_row want = { .cfa = cfa, .cfa_off = cfa_off, .rbp = rbp, .rbp_off = rbp_off };
	const struct ht_unwind_row *got = unwind_table_find(t, base + off);
	char a[64], b[64];

	check(rule_is(got, cfa, cfa_off, rbp, rbp_off), "%s: %s+%u: %s (got %s)", what, fn, off,
	      row_str(&want, a, sizeof(a)), row_str(got, b, sizeof(b)));
}

/* What every table promises (unwind_table.h). */
static void check_invariants(const struct unwind_table *t, const char *what)
{
	size_t bad_order = 0, repeats = 0, not_canonical = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct ht_unwind_row *r = &t->rows[i];

		if (i && r->pc <= r[-1].pc)
			bad_order++;
		if (i && r->cfa == r[-1].cfa && r->cfa_off == r[-1].cfa_off && r->rbp == r[-1].rbp &&
		    r->rbp_off == r[-1].rbp_off)
			repeats++;
		if ((r->cfa == HT_CFA_UNKNOWN || r->cfa == HT_CFA_END || r->cfa == HT_CFA_SIGNAL) &&
		    (r->cfa_off || r->rbp != HT_RBP_UNKNOWN || r->rbp_off))
			not_canonical++;
	}
	check(t->n > 0, "%s: %zu rows", what, t->n);
	check(!bad_order, "%s: pcs strictly increasing (%zu out of order)", what, bad_order);
	check(!repeats, "%s: no row repeats the previous rule (%zu do)", what, repeats);
	check(!not_canonical, "%s: unknown, end and signal rows carry no offsets (%zu do)", what, not_canonical);
	check(t->n && t->rows[t->n - 1].cfa == HT_CFA_UNKNOWN, "%s: the last row ends the CFI", what);
}

static bool same_rows(const struct unwind_table *a, const struct unwind_table *b)
{
	return a->n == b->n && (!a->n || !memcmp(a->rows, b->rows, a->n * sizeof(*a->rows)));
}

/* ---- hand-written CFI ------------------------------------------------------- */

static void check_fx(const char *path, const char *what)
{
	struct unwind_table t;
	uint64_t f, g, size;
	int r;

	fresh_cache();
	r = unwind_table_get(path, &t);
	if (!check(r == 0 && !t.from_cache, "%s: built (%s)", what, strerror(-r)))
		return;
	check_invariants(&t, what);

	if (check(func(path, "fx_frame", &f, &size), "%s: fx_frame found", what)) {
		expect(&t, what, "fx_frame", f, 0, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
		expect(&t, what, "fx_frame", f, 1, HT_CFA_RSP, 16, HT_RBP_CFA, -16);
		expect(&t, what, "fx_frame", f, 4, HT_CFA_RBP, 16, HT_RBP_CFA, -16);
		expect(&t, what, "fx_frame", f, 8, HT_CFA_RBP, 16, HT_RBP_CFA, -16);
		expect(&t, what, "fx_frame", f, 9, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
	}
	if (check(func(path, "fx_nocfi", &f, &size), "%s: fx_nocfi found", what)) {
		const struct ht_unwind_row *gap = unwind_table_find(&t, f);

		check(gap && gap->pc == f, "%s: a gap row starts where fx_frame's CFI ends", what);
		for (unsigned i = 0; i < size; i++)
			expect(&t, what, "fx_nocfi", f, i, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
	}
	if (check(func(path, "fx_outermost", &f, &size), "%s: fx_outermost found", what)) {
		expect(&t, what, "fx_outermost (ra undefined)", f, 0, HT_CFA_END, 0, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_outermost (ra undefined)", f, 2, HT_CFA_END, 0, HT_RBP_UNKNOWN, 0);
	}
	if (check(func(path, "fx_plt", &f, &size), "%s: fx_plt found", what)) {
		expect(&t, what, "fx_plt (lit11)", f, 0, HT_CFA_PLT, 8, HT_RBP_SAME, 0);
		expect(&t, what, "fx_plt (lit10)", f, 1, HT_CFA_PLT, 8, HT_RBP_SAME, 0);
		expect(&t, what, "fx_plt (lit12: not the .plt's)", f, 2, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
	}
	if (check(func(path, "fx_odd", &f, &size), "%s: fx_odd found", what)) {
		expect(&t, what, "fx_odd", f, 0, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
		expect(&t, what, "fx_odd (rbp at cfa-40000)", f, 1, HT_CFA_RSP, 16, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd (cfa offset 2^32)", f, 2, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd (cfa deref)", f, 3, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd (ra in rdx)", f, 4, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd (rbp in r9)", f, 5, HT_CFA_RSP, 16, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd (rbp val_offset)", f, 6, HT_CFA_RSP, 16, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd (cfa rbx+16)", f, 7, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_odd", f, 8, HT_CFA_RSP, 16, HT_RBP_CFA, -16);
		expect(&t, what, "fx_odd", f, 9, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
		if (check(func(path, "fx_next", &g, &size), "%s: fx_next found", what)) {
			const struct ht_unwind_row *row = unwind_table_find(&t, g);

			expect(&t, what, "fx_next", g, 0, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
			check(g == f + 10 && row && row->pc == f + 9,
			      "%s: no gap row between adjacent functions; equal rules merged", what);
		}
	}
	if (check(func(path, "fx_ra", &f, &size), "%s: fx_ra found", what))
		expect(&t, what, "fx_ra (ra at cfa-16)", f, 0, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
	if (check(func(path, "fx_ra_column", &f, &size), "%s: fx_ra_column found", what))
		expect(&t, what, "fx_ra_column (ra column rax)", f, 0, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
	/*
	 * libdw tells a signal frame by the 'S' of a "z..." augmentation,
	 * which only .eh_frame has (gas writes a bare "S" into .debug_frame):
	 * there the trampoline has no row and the walk falls back to the
	 * restorer the kernel reported (stack.bpf.h).
	 */
	int sig = strstr(what, "debug_frame") ? HT_CFA_UNKNOWN : HT_CFA_SIGNAL;
	if (check(func(path, "fx_signal", &f, &size), "%s: fx_signal found", what)) {
		/* From the byte before: a return address there is the trampoline's first byte. */
		expect(&t, what, "fx_signal-1 (signal frame)", f - 1, 0, sig, 0, HT_RBP_UNKNOWN, 0);
		expect(&t, what, "fx_signal (signal frame)", f, 7, sig, 0, HT_RBP_UNKNOWN, 0);
	}
	if (check(func(path, "fx_signal_odd", &f, &size), "%s: fx_signal_odd found", what))
		expect(&t, what, "fx_signal_odd (rip at rsp+176)", f, 0, HT_CFA_UNKNOWN, 0, HT_RBP_UNKNOWN, 0);
	unwind_table_free(&t);
}

/* Compiled prologues: -O0 keeps the frame pointer, -O2 does not. */
static void check_compiled(void)
{
	char o0[PATH_MAX], o2[PATH_MAX];
	struct unwind_table t;
	uint64_t f, size;
	uint8_t code[4];
	struct elfobj o;

	fixture(o0, "unwind_fixture_o0.so");
	fixture(o2, "unwind_fixture_o2.so");
	fresh_cache();
	if (check(unwind_table_get(o0, &t) == 0 && func(o0, "fixture_c", &f, &size), "-O0: fixture_c")) {
		bool prologue = !elfobj_open(&o, o0, false) && !elfobj_read(&o, f, code, 4) &&
				!memcmp(code, "\x55\x48\x89\xe5", 4);

		elfobj_close(&o);
		check(prologue, "-O0: fixture_c starts push rbp; mov rbp,rsp");
		expect(&t, "-O0", "fixture_c", f, 0, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
		expect(&t, "-O0", "fixture_c", f, 1, HT_CFA_RSP, 16, HT_RBP_CFA, -16);
		expect(&t, "-O0", "fixture_c", f, 4, HT_CFA_RBP, 16, HT_RBP_CFA, -16);
	}
	unwind_table_free(&t);
	if (check(unwind_table_get(o2, &t) == 0 && func(o2, "fixture_c", &f, &size), "-O2: fixture_c")) {
		size_t rsp = 0, rows = 0;

		expect(&t, "-O2", "fixture_c", f, 0, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
		for (size_t i = 0; i < t.n; i++) {
			if (t.rows[i].pc >= f && t.rows[i].pc < f + size) {
				rows++;
				rsp += t.rows[i].cfa == HT_CFA_RSP && t.rows[i].cfa_off >= 8;
			}
		}
		check(rows > 1 && rsp == rows, "-O2: fixture_c's %zu rows all rsp-based (%zu are)", rows, rsp);
	}
	unwind_table_free(&t);
}

/* ---- libc and libstdc++ against readelf ---------------------------------------- */

static bool agrees(const struct ht_unwind_row *got, const struct xrow *want)
{
	if (!got || !want)
		return !got && !want;
	if (want->exp)
		return got->cfa == HT_CFA_PLT || got->cfa == HT_CFA_UNKNOWN;
	return rule_is(got, want->r.cfa, want->r.cfa_off, want->r.rbp, want->r.rbp_off);
}

/* Both tables hold one rule between boundaries: compare at every boundary of either. */
static void check_against_readelf(const char *path, const struct unwind_table *t)
{
	struct xcfi x = { 0 };
	struct xrow *want;
	size_t n, bad = 0, plt = 0, i = 0, j = 0;
	char a[64], b[64];

	if (!check(read_readelf(path, &x), "readelf --debug-dump=frames-interp %s", path))
		goto out;
	/* Each FDE's rows (one made up for those without), and a gap row. */
	want = calloc(x.nrows + 2 * x.nfdes + 1, sizeof(*want));
	if (!want)
		abort();
	n = x_table(&x, want);
	while (i < t->n || j < n) {
		uint64_t pc = j >= n || (i < t->n && t->rows[i].pc < want[j].pc) ? t->rows[i].pc : want[j].pc;
		const struct ht_unwind_row *got = unwind_table_find(t, pc);
		const struct xrow *w = x_find(want, n, pc);

		if (!agrees(got, w) && ++bad <= 5)
			printf("#   %s 0x%" PRIx64 ": %s, readelf %s\n", path, pc, row_str(got, a, sizeof(a)),
			       !w ? "(no row)" : w->exp ? "exp" : row_str(&w->r, b, sizeof(b)));
		plt += got && got->cfa == HT_CFA_PLT && got->pc == pc;
		while (i < t->n && t->rows[i].pc <= pc)
			i++;
		while (j < n && want[j].pc <= pc)
			j++;
	}
	check(!bad && n > 0, "%s: every row agrees with readelf's (%zu rows, readelf's give %zu; %zu differ)",
	      path, t->n, n, bad);
	check(plt >= 1, "%s: .plt expression rows: %zu", path, plt);
	free(want);
out:
	free(x.rows);
	free(x.fdes);
}

static bool lib_path(const char *soname, const char *sym, char *path)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD) ?: dlopen(soname, RTLD_NOW);
	void *addr = h ? dlsym(h, sym) : NULL;
	Dl_info info;
	bool ok = addr && dladdr(addr, &info) && info.dli_fname && realpath(info.dli_fname, path);

	if (h)
		dlclose(h);
	return ok;
}

static bool section(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	struct elfobj o;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;

	if (elfobj_open(&o, path, false))
		return false;
	if (!elf_getshdrstrndx(o.elf, &shstrndx)) {
		while (!found && (scn = elf_nextscn(o.elf, scn))) {
			GElf_Shdr sh;
			const char *s;

			if (gelf_getshdr(scn, &sh) && (s = elf_strptr(o.elf, shstrndx, sh.sh_name)) &&
			    !strcmp(s, name)) {
				*addr = sh.sh_addr;
				*size = sh.sh_size;
				found = true;
			}
		}
	}
	elfobj_close(&o);
	return found;
}

/* A section's file offset and size. */
static bool section_at(const char *path, const char *name, uint64_t *off, uint64_t *size)
{
	struct elfobj o;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;

	if (elfobj_open(&o, path, false))
		return false;
	if (!elf_getshdrstrndx(o.elf, &shstrndx)) {
		while (!found && (scn = elf_nextscn(o.elf, scn))) {
			GElf_Shdr sh;
			const char *s;

			if (gelf_getshdr(scn, &sh) && (s = elf_strptr(o.elf, shstrndx, sh.sh_name)) &&
			    !strcmp(s, name)) {
				*off = sh.sh_offset;
				*size = sh.sh_size;
				found = true;
			}
		}
	}
	elfobj_close(&o);
	return found;
}

static void check_libs(const char *libc, const char *libstdcxx)
{
	struct unwind_table t;
	uint64_t f, size;

	fresh_cache();
	if (check(unwind_table_get(libc, &t) == 0, "libc: built")) {
		check_invariants(&t, "libc");
		if (check(func(libc, "malloc", &f, &size), "libc: malloc found"))
			expect(&t, "libc", "malloc", f, 0, HT_CFA_RSP, 8, HT_RBP_SAME, 0);
		if (check(section(libc, ".plt", &f, &size) && size > 32, "libc: has a .plt")) {
			/* Entry 1: the CFA grows by 8 after its push, at offset 11. */
			expect(&t, "libc .plt", "entry1", f + 16, 0, HT_CFA_PLT, 8, HT_RBP_SAME, 0);
			expect(&t, "libc .plt", "entry1", f + 16, 11, HT_CFA_PLT, 8, HT_RBP_SAME, 0);
		}
		check_against_readelf(libc, &t);
		size_t sig = 0;
		for (size_t i = 0; i < t.n; i++)
			sig += t.rows[i].cfa == HT_CFA_SIGNAL;
		check(sig == 1, "libc: one signal-frame row (__restore_rt): %zu", sig);
	}
	unwind_table_free(&t);
	if (check(unwind_table_get(libstdcxx, &t) == 0, "libstdc++: built")) {
		check_invariants(&t, "libstdc++");
		check_against_readelf(libstdcxx, &t);
	}
	unwind_table_free(&t);
}

/* ---- the cache ----------------------------------------------------------------- */

static void check_round_trip(const char *path, const char *what)
{
	struct unwind_table a, b, c;
	char file[PATH_MAX];
	const char *dir = fresh_cache();
	struct stat st;
	int r;

	r = unwind_table_get(path, &a);
	check(r == 0 && !a.from_cache, "%s: first build is not from the cache", what);
	check(cache_file(dir, file) && !stat(file, &st) && (st.st_mode & 0777) == 0600 &&
	      !stat(dir, &st) && (st.st_mode & 0777) == 0700,
	      "%s: one cache file, mode 0600, in a directory of mode 0700", what);
	r = unwind_table_get(path, &b);
	check(r == 0 && b.from_cache && same_rows(&a, &b), "%s: second from the cache, same rows", what);
	unwind_table_build(path, &c);
	check(same_rows(&a, &c) && !c.from_cache, "%s: unwind_table_build gives the same rows", what);
	unwind_table_free(&a);
	unwind_table_free(&b);
	unwind_table_free(&c);
}

/* The header unwind_table.c writes: magic[8], version, row size, n (u64), crc, pad, CFI hash (u64). */
enum { H_VERSION = 8, H_ROWSIZE = 12, H_N = 16, H_CRC = 24, H_HASH = 32, H_SIZE = 40 };

static bool patch(const char *file, long off, const void *bytes, size_t len)
{
	int fd = open(file, O_WRONLY);
	bool ok = fd >= 0 && pwrite(fd, bytes, len, off) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return ok;
}

static bool flip(const char *file, long off)
{
	int fd = open(file, O_RDWR);
	uint8_t b;
	bool ok = fd >= 0 && pread(fd, &b, 1, off) == 1 && (b ^= 0x40, pwrite(fd, &b, 1, off) == 1);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Swap the first two rows and fix the crc: a well-formed file with rows out of order. */
static bool unsort(const char *file)
{
	struct ht_unwind_row rows[2], tmp;
	struct stat st;
	uint8_t *buf;
	int fd = open(file, O_RDWR);
	bool ok = false;
	uint32_t crc;

	if (fd < 0 || fstat(fd, &st) || st.st_size < H_SIZE + 2 * (long)sizeof(rows[0]))
		goto out;
	if (pread(fd, rows, sizeof(rows), H_SIZE) != sizeof(rows))
		goto out;
	tmp = rows[0], rows[0] = rows[1], rows[1] = tmp;
	if (pwrite(fd, rows, sizeof(rows), H_SIZE) != sizeof(rows) || !(buf = malloc(st.st_size)))
		goto out;
	if (pread(fd, buf, st.st_size, 0) == st.st_size) {
		crc = crc32(0, buf + H_SIZE, st.st_size - H_SIZE);
		ok = pwrite(fd, &crc, 4, H_CRC) == 4;
	}
	free(buf);
out:
	if (fd >= 0)
		close(fd);
	return ok;
}

static void check_corrupt(const char *path)
{
	static const char *const names[] = {
		"a byte of the rows flipped", "truncated", "bad magic", "another format version",
		"another row size", "row count too large", "rows out of order, checksum right",
		"a symlink", "empty", "the hash of other CFI bytes", "writable by its group",
		"owned by another user", "a second hard link",
	};
	struct unwind_table good, t;
	char file[PATH_MAX], target[PATH_MAX];
	const char *dir = fresh_cache();

	if (!check(unwind_table_get(path, &good) == 0 && cache_file(dir, file), "corrupt: cache written"))
		return;
	pathf(target, "%s/elsewhere", tmp_root);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint32_t v32 = 99;
		uint64_t v64 = good.n + 1;
		struct stat st;
		bool done = false;

		switch (i) {
		case 0: done = flip(file, H_SIZE + 5); break;
		case 1: done = !truncate(file, H_SIZE + good.n * sizeof(good.rows[0]) / 2); break;
		case 2: done = flip(file, 0); break;
		case 3: done = patch(file, H_VERSION, &v32, 4); break;
		case 4: done = patch(file, H_ROWSIZE, &v32, 4); break;
		case 5: done = patch(file, H_N, &v64, 8); break;
		case 6: done = unsort(file); break;
		case 7: {
			/* A symlink planted where the file goes is neither followed nor written through. */
			FILE *f = fopen(target, "w");

			done = f && fputs("not a cache\n", f) >= 0 && !fclose(f) && !unlink(file) &&
			       !symlink(target, file);
			break;
		}
		case 8: done = !truncate(file, 0); break;
		case 9: done = flip(file, H_HASH + 3); break;
		case 10: done = !chmod(file, 0620); break;
		case 11:
			/* Only root can give a file away: not made, and not counted, under make check. */
			if (geteuid() != 0) {
				printf("# corrupt: %s: not made (run as root for it: make test)\n", names[i]);
				continue;
			}
			done = !chown(file, 65534, 65534);
			break;
		case 12: pathf(target, "%s/linked", dir); done = !link(file, target); break;
		}
		if (!check(done, "corrupt: %s: made", names[i]))
			continue;
		check(unwind_table_get(path, &t) == 0 && !t.from_cache && same_rows(&good, &t),
		      "corrupt: %s: ignored, rebuilt, same rows", names[i]);
		unwind_table_free(&t);
		check(!lstat(file, &st) && S_ISREG(st.st_mode) && unwind_table_get(path, &t) == 0 &&
		      t.from_cache && same_rows(&good, &t),
		      "corrupt: %s: rewritten, then read from the cache", names[i]);
		unwind_table_free(&t);
		if (i == 12)
			unlink(target);
		if (i == 7) {
			char buf[32] = "";
			FILE *f = fopen(target, "r");

			check(f && fgets(buf, sizeof(buf), f) && !strcmp(buf, "not a cache\n"),
			      "corrupt: the symlink's target is untouched");
			if (f)
				fclose(f);
		}
	}
	unwind_table_free(&good);
}

/* Places the cache must not be used from: the table is built all the same. */
static void check_unusable_dirs(const char *path)
{
	char xdg[PATH_MAX], dir[PATH_MAX];
	struct unwind_table t;
	FILE *f;

	pathf(xdg, "%s/a-file", tmp_root);
	if ((f = fopen(xdg, "w")))
		fclose(f);
	setenv("XDG_CACHE_HOME", xdg, 1);
	for (int i = 0; i < 2; i++) {
		check(unwind_table_get(path, &t) == 0 && t.n && !t.from_cache,
		      "no cache: XDG_CACHE_HOME is a file: built (%d)", i + 1);
		unwind_table_free(&t);
	}

	pathf(xdg, "%s/shared", tmp_root);
	pathf(dir, "%s/heaptrace", xdg);
	mkdir(xdg, 0700);
	mkdir(dir, 0700);
	chmod(dir, 0777);
	setenv("XDG_CACHE_HOME", xdg, 1);
	for (int i = 0; i < 2; i++) {
		check(unwind_table_get(path, &t) == 0 && t.n && !t.from_cache,
		      "no cache: a directory others can write to is not used (%d)", i + 1);
		unwind_table_free(&t);
	}
	check(!cache_file(dir, xdg), "no cache: nothing written there");

	/* The cache's key (the secret of its entries' hashes) must be ours alone, and whole. */
	for (int i = 0; i < 2; i++) {
		char key[PATH_MAX];

		pathf(dir, "%s", fresh_cache());
		unwind_table_get(path, &t);
		unwind_table_free(&t);
		pathf(key, "%s/key", dir);
		check(i ? !truncate(key, 3) : !chmod(key, 0640), "no cache: key %s: made",
		      i ? "truncated" : "readable by its group");
		for (int k = 0; k < 2; k++) {
			check(unwind_table_get(path, &t) == 0 && t.n && !t.from_cache,
			      "no cache: key %s: built (%d)", i ? "truncated" : "readable by its group", k + 1);
			unwind_table_free(&t);
		}
	}

	unsetenv("XDG_CACHE_HOME");
	pathf(xdg, "%s/home", tmp_root);
	setenv("HOME", xdg, 1);
	pathf(dir, "%s/.cache/heaptrace", xdg);
	mkdir(xdg, 0700);
	unwind_table_get(path, &t);
	unwind_table_free(&t);
	check(unwind_table_get(path, &t) == 0 && t.from_cache && cache_file(dir, xdg),
	      "no XDG_CACHE_HOME: $HOME/.cache/heaptrace is used");
	unwind_table_free(&t);
}

/*
 * A copy of an object with its build ID kept and its CFI changed (every
 * DW_CFA_def_cfa_offset 16 made 24): it shares the original's cache file
 * name, yet neither gets the other's rows.
 */
static void check_same_build_id(const char *path)
{
	char copy[PATH_MAX];
	struct unwind_table good, bad, t;
	uint64_t off, size;
	uint8_t *buf = NULL;
	size_t n = 0;
	FILE *in, *out;
	long len;

	fresh_cache();
	pathf(copy, "%s/copy.so", tmp_root);
	in = fopen(path, "rb");
	out = fopen(copy, "wb");
	if (in && !fseek(in, 0, SEEK_END) && (len = ftell(in)) > 0 && (buf = malloc(len)) && !fseek(in, 0, SEEK_SET) &&
	    fread(buf, 1, len, in) == (size_t)len && section_at(path, ".eh_frame", &off, &size) &&
	    off + size <= (uint64_t)len) {
		for (uint64_t i = off; i + 1 < off + size; i++) {
			if (buf[i] == 0x0e && buf[i + 1] == 0x10)
				buf[i + 1] = 0x18, n++;
		}
		fwrite(buf, 1, len, out);
	}
	free(buf);
	if (in)
		fclose(in);
	if (!check(out && !fclose(out) && n, "same build ID: a copy with %zu CFA offsets changed", n))
		return;
	check(unwind_table_get(path, &good) == 0 && !good.from_cache, "same build ID: the original, built");
	check(unwind_table_get(copy, &bad) == 0 && !bad.from_cache && !same_rows(&good, &bad),
	      "same build ID: the copy, built, not the original's rows");
	check(unwind_table_get(path, &t) == 0 && !t.from_cache && same_rows(&good, &t),
	      "same build ID: the original again: rebuilt, its own rows");
	unwind_table_free(&t);
	check(unwind_table_get(path, &t) == 0 && t.from_cache && same_rows(&good, &t),
	      "same build ID: the original once more: from the cache");
	unwind_table_free(&t);
	unwind_table_free(&good);
	unwind_table_free(&bad);
	unlink(copy);
}

/* The no-build-ID object keys its cache file on the file itself. */
static void check_no_build_id(const char *path)
{
	const char *dir = fresh_cache();
	char file[PATH_MAX];
	struct unwind_table t;
	const char *base;

	unwind_table_get(path, &t);
	unwind_table_free(&t);
	base = cache_file(dir, file) ? strrchr(file, '/') + 1 : "";
	check(!strncmp(base, "file-", 5), "no build ID: cache file named after the file (%s)", base);
	check(unwind_table_get(path, &t) == 0 && t.from_cache, "no build ID: read from the cache");
	unwind_table_free(&t);
}

static void check_errors(void)
{
	char nocfi[PATH_MAX], text[PATH_MAX];
	struct unwind_table t;
	int r;
	FILE *f;

	fixture(nocfi, "unwind_fixture_nocfi.so");
	r = unwind_table_get(nocfi, &t);
	check(r == 0 && t.n == 0 && !t.rows, "no CFI: 0 rows, success (%d)", r);
	unwind_table_free(&t);
	r = unwind_table_get("/nonexistent/libx.so", &t);
	check(r == -ENOENT && t.n == 0, "missing file: -ENOENT (%d)", r);
	pathf(text, "%s/text", tmp_root);
	if ((f = fopen(text, "w"))) {
		fputs("not an ELF file\n", f);
		fclose(f);
	}
	r = unwind_table_get(text, &t);
	check(r == -ENOEXEC && t.n == 0, "not ELF: -ENOEXEC (%d)", r);
}

static void timings(const char *libc, const char *libstdcxx)
{
	struct unwind_table a, b;
	double t0, t1, t2;

	fresh_cache();
	t0 = now_ms();
	unwind_table_get(libc, &a);
	unwind_table_get(libstdcxx, &b);
	t1 = now_ms();
	printf("# cold (build + cache write): libc %zu rows, libstdc++ %zu rows: %.1f ms\n", a.n, b.n, t1 - t0);
	unwind_table_free(&a);
	unwind_table_free(&b);
	t1 = now_ms();
	unwind_table_get(libc, &a);
	unwind_table_get(libstdcxx, &b);
	t2 = now_ms();
	printf("# cached: %.2f ms (%s)\n", t2 - t1, a.from_cache && b.from_cache ? "both from the cache" : "NOT cached");
	unwind_table_free(&a);
	unwind_table_free(&b);
}

static int dump(const char *path)
{
	struct unwind_table t;
	char buf[64];
	int r = unwind_table_build(path, &t);

	if (r) {
		fprintf(stderr, "%s: %s\n", path, strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < t.n; i++)
		printf("%08x %s\n", t.rows[i].pc, row_str(&t.rows[i], buf, sizeof(buf)));
	unwind_table_free(&t);
	return 0;
}

int main(int argc, char **argv)
{
	char libc[PATH_MAX], libstdcxx[PATH_MAX], path[PATH_MAX];

	if (argc == 3 && !strcmp(argv[1], "--dump"))
		return dump(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 1;
	}
	fresh_cache();          /* never the user's own */
	if (check(find_fixtures(), "fixtures in %s", fixtures)) {
		fixture(path, "unwind_fixture_o2.so");
		check_fx(path, ".eh_frame -O2");
		fixture(path, "unwind_fixture_o0.so");
		check_fx(path, ".eh_frame -O0");
		fixture(path, "unwind_fixture_dbg.so");
		check_fx(path, ".debug_frame");
		fixture(path, "unwind_fixture_dbgz.so");
		check_fx(path, ".debug_frame, compressed");
		fixture(path, "unwind_fixture_dbg.so");
		check_no_build_id(path);
		check_compiled();
		fixture(path, "unwind_fixture_o2.so");
		check_corrupt(path);
		check_same_build_id(path);
		check_unusable_dirs(path);
		check_errors();
	}
	if (check(lib_path("libc.so.6", "malloc", libc) &&
		  lib_path("libstdc++.so.6", "_ZSt9terminatev", libstdcxx), "libc and libstdc++ found")) {
		check_libs(libc, libstdcxx);
		check_round_trip(libc, "libc");
		timings(libc, libstdcxx);
	}
	nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return check_summary();
}
