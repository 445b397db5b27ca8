/*
 * Unit test for user/symbolize.c: symbolizes addresses of this very program
 * (plain, return-address, inlined and nested-inlined code), of libc and
 * libstdc++, and addresses in no module, from a copy of /proc/self/maps.
 *
 * gcc -O0 -g -fno-omit-frame-pointer -Iuser tests/unit/test_symbolize.c \
 *     user/symbolize.c -o build/unit/test_symbolize -ldw -lelf -lstdc++
 *
 * Built at -O0 so line numbers are predictable; always_inline still inlines.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "symbolize/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls, lx;

	if (!s)
		return false;
	ls = strlen(s);
	lx = strlen(suffix);
	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static const char *show(const char *s)
{
	return s ? s : "(null)";
}

static void dump(const struct sym_frame *f, int n, uint64_t pc)
{
	char buf[256];

	for (int i = 0; i < n; i++)
		printf("#   [%d] %s at %s:%d in %s+0x%" PRIx64 "\n", i,
		       sym_frame_name(&f[i], pc, buf, sizeof(buf)), show(f[i].file), f[i].line,
		       show(f[i].module), f[i].module_off);
}

/* ---- code to symbolize ---------------------------------------------------- */

static const int target_line = __LINE__ + 1;
__attribute__((noinline)) int target_fn(int x) { return x * 3 + 1; }

__attribute__((noinline)) static uint64_t return_address(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static int caller_line;
__attribute__((noinline)) static uint64_t caller_fn(void)
{
	uint64_t ra = return_address(); caller_line = __LINE__;
	return ra;
}

static int inline_line, inline_caller_line;
static inline __attribute__((always_inline)) uint64_t inline_fn(void)
{
	uint64_t ra = return_address(); inline_line = __LINE__;
	return ra;
}

__attribute__((noinline)) static uint64_t inline_caller(void)
{
	uint64_t ra = inline_fn(); inline_caller_line = __LINE__;
	return ra;
}

static int inner_line, outer_line, nested_caller_line;
static inline __attribute__((always_inline)) uint64_t nested_inner(void)
{
	uint64_t ra = return_address(); inner_line = __LINE__;
	return ra;
}

static inline __attribute__((always_inline)) uint64_t nested_outer(void)
{
	uint64_t ra = nested_inner(); outer_line = __LINE__;
	return ra;
}

__attribute__((noinline)) static uint64_t nested_caller(void)
{
	uint64_t ra = nested_outer(); nested_caller_line = __LINE__;
	return ra;
}

/* ---- helpers -------------------------------------------------------------- */

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

/* What the symbolizer should subtract: the loader's l_addr for the object. */
static uint64_t load_bias(const void *addr)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return 0;
	return lm->l_addr;
}

struct build_id_query {
	const char *name;
	char hex[128];
};

static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct build_id_query *q = arg;

	(void)size;
	if (!strstr(info->dlpi_name, q->name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const unsigned char *desc =
				(const unsigned char *)p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(p + sizeof(*nh), "GNU", 4) == 0 && nh->n_descsz < 60) {
				for (unsigned j = 0; j < nh->n_descsz; j++)
					sprintf(q->hex + 2 * j, "%02x", desc[j]);
				return 1;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

/* Whether a separate debug file for the loaded object is installed. */
static bool has_debug_file(const char *name)
{
	struct build_id_query q = { .name = name };
	char path[256];

	if (!dl_iterate_phdr(find_build_id, &q))
		return false;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", q.hex, q.hex + 2);
	return access(path, R_OK) == 0;
}

static const char *exe_name(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	const char *slash;

	if (n < 0)
		return "?";
	path[n] = '\0';
	slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_plain_function(struct symbolizer *s)
{
	uint64_t pc = (uint64_t)(uintptr_t)&target_fn;
	const struct sym_frame *f;
	int n = sym_lookup(s, pc, false, &f);

	dump(f, n, pc);
	check(n == 1 && str_eq(f[0].func, "target_fn"), "function entry: target_fn");
	check(ends_with(f[0].file, "/test_symbolize.c") && f[0].line == target_line,
	      "function entry: test_symbolize.c:%d (got %s:%d)", target_line, show(f[0].file),
	      f[0].line);
	check(str_eq(f[0].module, exe_name()), "function entry: module %s", exe_name());
	check(f[0].module_off == pc - load_bias(&target_fn),
	      "function entry: module_off 0x%" PRIx64, pc - load_bias(&target_fn));
}

static void test_return_address(struct symbolizer *s)
{
	uint64_t pc = caller_fn();
	const struct sym_frame *f, *again;
	int n = sym_lookup(s, pc, true, &f);

	dump(f, n, pc);
	check(n == 1 && str_eq(f[0].func, "caller_fn") && f[0].line == caller_line,
	      "return address: caller_fn line %d (got %d)", caller_line, n ? f[0].line : 0);
	check(sym_lookup(s, pc, true, &again) == n && again == f, "return address: cached");
}

static void on_signal(int sig)
{
	(void)sig;
}

/*
 * A signal handler's return address, libc's restorer (which the kernel
 * hands back in sa_restorer): gdb's "<signal handler called>", in libc.
 * Looked up as an instruction of its own it is no such frame.
 */
static void test_signal_frame(struct symbolizer *s)
{
	struct sigaction sa = { .sa_handler = on_signal }, old;
	const struct sym_frame *f;
	uint64_t pc;
	int n;

	sigemptyset(&sa.sa_mask);
	if (!check(!sigaction(SIGUSR2, &sa, NULL) && !sigaction(SIGUSR2, NULL, &old) && old.sa_restorer,
		   "signal frame: libc's restorer from sigaction"))
		return;
	pc = (uint64_t)(uintptr_t)old.sa_restorer;
	n = sym_lookup(s, pc, true, &f);
	dump(f, n, pc);
	check(n == 1 && str_eq(f[0].func, SYM_SIGNAL_FRAME) && str_eq(f[0].module, "libc.so.6") && !f[0].file,
	      "signal frame: the restorer as a return address is '%s' in libc.so.6 (got %s)", SYM_SIGNAL_FRAME,
	      show(n ? f[0].func : NULL));
	n = sym_lookup(s, pc - 1, true, &f);
	check(n >= 1 && !str_eq(f[0].func, SYM_SIGNAL_FRAME), "signal frame: the byte before it is not");
}

static void test_inline(struct symbolizer *s)
{
	uint64_t pc = inline_caller();
	const struct sym_frame *f;
	int n = sym_lookup(s, pc, true, &f);

	dump(f, n, pc);
	if (!check(n == 2, "inline: 2 frames (got %d)", n))
		return;
	check(str_eq(f[0].func, "inline_fn") && f[0].line == inline_line &&
	      ends_with(f[0].file, "/test_symbolize.c"),
	      "inline: inner inline_fn line %d (got %s:%d)", inline_line, show(f[0].func),
	      f[0].line);
	check(str_eq(f[1].func, "inline_caller") && f[1].line == inline_caller_line &&
	      ends_with(f[1].file, "/test_symbolize.c"),
	      "inline: outer inline_caller line %d (got %s:%d)", inline_caller_line,
	      show(f[1].func), f[1].line);
	check(str_eq(f[0].module, exe_name()) && f[1].module_off == f[0].module_off,
	      "inline: module on every frame");
	check(f[0].inlined && !f[1].inlined,
	      "inline: inline_fn marked inlined, inline_caller not (got %d, %d)", f[0].inlined,
	      f[1].inlined);
}

static void test_nested_inline(struct symbolizer *s)
{
	uint64_t pc = nested_caller();
	const struct sym_frame *f;
	int n = sym_lookup(s, pc, true, &f);

	dump(f, n, pc);
	if (!check(n == 3, "nested inline: 3 frames (got %d)", n))
		return;
	check(str_eq(f[0].func, "nested_inner") && f[0].line == inner_line &&
	      str_eq(f[1].func, "nested_outer") && f[1].line == outer_line &&
	      str_eq(f[2].func, "nested_caller") && f[2].line == nested_caller_line,
	      "nested inline: nested_inner:%d < nested_outer:%d < nested_caller:%d", inner_line,
	      outer_line, nested_caller_line);
	check(f[0].inlined && f[1].inlined && !f[2].inlined,
	      "nested inline: the two inlined frames marked, nested_caller not (got %d %d %d)",
	      f[0].inlined, f[1].inlined, f[2].inlined);
}

static void test_libc(struct symbolizer *s)
{
	void *sym = dlsym(RTLD_DEFAULT, "printf");
	uint64_t pc = (uint64_t)(uintptr_t)sym;
	const struct sym_frame *f;
	int n = sym_lookup(s, pc, false, &f);

	dump(f, n, pc);
	check(str_eq(f[0].func, "printf") || str_eq(f[0].func, "__printf") ||
	      str_eq(f[0].func, "_IO_printf"),
	      "libc: printf (got %s)", show(f[0].func));
	check(str_eq(f[0].module, "libc.so.6"), "libc: module libc.so.6 (got %s)",
	      show(f[0].module));
	check(f[0].module_off == pc - load_bias(sym), "libc: module_off 0x%" PRIx64,
	      pc - load_bias(sym));
	if (has_debug_file("libc.so.6"))
		check(ends_with(f[0].file, "printf.c") && f[0].line > 0,
		      "libc: source from /usr/lib/debug/.build-id (got %s:%d)", show(f[0].file),
		      f[0].line);
	else
		printf("# libc debug file not installed, source check skipped\n");
}

static void test_cxx(struct symbolizer *s, void *libstdcxx)
{
	static const struct {
		const char *symbol, *expect;
	} cases[] = {
		{ "_ZNSt9bad_allocD1Ev", "std::bad_alloc::~bad_alloc" },
		{ "_ZNSolsEi", "std::ostream::operator<<" },
		{ "_Znwm", "operator new" },
		{ "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_appendEPKcm",
		  "std::__cxx11::basic_string<char, std::char_traits<char>, "
		  "std::allocator<char> >::_M_append" },
		{ "_ZSt16__ostream_insertIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_PKS3_l",
		  "std::__ostream_insert<char, std::char_traits<char> >" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *sym = libstdcxx ? dlsym(libstdcxx, cases[i].symbol) : NULL;
		uint64_t pc = (uint64_t)(uintptr_t)sym;
		const struct sym_frame *f;
		int n;

		if (!check(sym != NULL, "c++: dlsym %s", cases[i].symbol))
			continue;
		n = sym_lookup(s, pc, false, &f);
		dump(f, n, pc);
		check(str_eq(f[n - 1].func, cases[i].expect) &&
		      f[0].module && strncmp(f[0].module, "libstdc++.so.6", 14) == 0,
		      "c++: %s -> %s (got %s)", cases[i].symbol, cases[i].expect,
		      show(f[n - 1].func));
	}
}

static void test_unknown(struct symbolizer *s)
{
	void *heap = malloc(64);
	uint64_t pcs[] = { 0x10, (uint64_t)(uintptr_t)heap };
	char buf[64];

	for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++) {
		const struct sym_frame *f;
		int n = sym_lookup(s, pcs[i], true, &f);
		char want[32];

		snprintf(want, sizeof(want), "[0x%" PRIx64 "]", pcs[i]);
		check(n == 1 && !f[0].module && !f[0].func && !f[0].file &&
		      strcmp(sym_frame_name(&f[0], pcs[i], buf, sizeof(buf)), want) == 0,
		      "unknown pc 0x%" PRIx64 ": no module, name %s", pcs[i], want);
	}
	free(heap);
}

static void test_frame_name(void)
{
	struct sym_frame f = { .module = "libx.so", .module_off = 0x1234 };
	char buf[64];

	check(strcmp(sym_frame_name(&f, 0x7f0000001234, buf, sizeof(buf)), "[libx.so+0x1234]") == 0,
	      "frame name: [module+0xoff] without a function");
	f.func = "fn";
	check(strcmp(sym_frame_name(&f, 0, buf, sizeof(buf)), "fn") == 0,
	      "frame name: function when known");
}

/* Maps of a process that is gone, with entries that have no usable file. */
static void test_synthetic_maps(void)
{
	static const char maps[] =
		"555555554000-555555555000 r--p 00000000 08:01 4242 /nonexistent/libgone.so (deleted)\n"
		"555555555000-555555556000 r-xp 00001000 08:01 4242 /nonexistent/libgone.so (deleted)\n"
		"555555556000-555555577000 rw-p 00000000 00:00 0          [heap]\n"
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
		"7f0000001000-7f0000002000 rw-s 00000000 00:05 77 /memfd:buf (deleted)\n"
		"7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0          [vvar]\n"
		"7ffff7fc5000-7ffff7fc7000 r-xp 00000000 00:00 0          [vdso]\n"
		"7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0          [stack]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";
	struct symbolizer *s = sym_open(maps);
	const struct sym_frame *f;
	char buf[64];
	int n;

	if (!check(s != NULL, "synthetic maps: open (%s)", s ? "ok" : strerror(errno)))
		return;
	n = sym_lookup(s, 0x555555555100, true, &f);
	check(n == 1 && str_eq(f[0].module, "libgone.so") && !f[0].func &&
	      f[0].module_off == 0x1100 &&
	      strcmp(sym_frame_name(&f[0], 0x555555555100, buf, sizeof(buf)),
		     "[libgone.so+0x1100]") == 0,
	      "synthetic maps: deleted library gives [libgone.so+0x1100] (got %s)",
	      sym_frame_name(&f[0], 0x555555555100, buf, sizeof(buf)));
	n = sym_lookup(s, 0x7ffff7fc5100, true, &f);
	check(n == 1 && !f[0].module, "synthetic maps: vdso pc has no module");
	n = sym_lookup(s, 0x555555560000, false, &f);
	check(n == 1 && !f[0].module, "synthetic maps: heap pc has no module");
	sym_close(s);

	s = sym_open("");
	check(s && sym_lookup(s, 0x1000, false, &f) == 1 && !f[0].module,
	      "empty maps: opens, nothing resolves");
	sym_close(s);

	errno = 0;
	s = sym_open("this is not a maps file\n");
	check(!s && errno != 0, "garbage maps: NULL with errno (%s)", strerror(errno));
	sym_close(s);
}

int main(void)
{
	/* Loaded before the maps are read so it appears in them. */
	void *libstdcxx = dlopen("libstdc++.so.6", RTLD_NOW);
	char *maps = read_all("/proc/self/maps");
	struct symbolizer *s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!maps || !(s = sym_open(maps))) {
		printf("not ok - sym_open(/proc/self/maps): %s\n", strerror(errno));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	free(maps);

	test_plain_function(s);
	test_return_address(s);
	test_signal_frame(s);
	test_inline(s);
	test_nested_inline(s);
	test_libc(s);
	test_cxx(s, libstdcxx);
	test_unknown(s);
	test_frame_name();
	test_synthetic_maps();

	sym_close(s);
	if (libstdcxx)
		dlclose(libstdcxx);
	return check_summary();
}
