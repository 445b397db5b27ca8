#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "heaptrace.h"
#include "heaptrace_ring.h"
#include "symbolize/pyframes.h"
#include "util/array.h"

#define MAX_PROCS 64
#define NAME_MAX_BYTES 512

/*
 * Offsets measured with offsetof() against each version's own internal
 * headers (Py_BUILD_CORE); scenario pyframes checks the frames they give
 * against tracemalloc's, line by line, on each.
 */
static const struct py_layout layouts[] = {
	{ .minor = 10, .kind = STUB_PY_FRAMEOBJ, .tstate_current = 568, .thread_id = 176,
	  .cframe = STUB_PY_NO_FIELD, .current_frame = 24, .frame_code = 32, .frame_instr = 96, .frame_previous = 24,
	  .frame_mark = STUB_PY_NO_FIELD, .code_units = 0, .code_name = 112, .code_filename = 104,
	  .code_firstlineno = 40, .code_linetable = 120, .unicode_ascii = 48, .unicode_compact = 72 },
	{ .minor = 11, .kind = STUB_PY_ENTRY_FLAG, .tstate_current = 576, .thread_id = 152, .cframe = 56,
	  .current_frame = 8, .frame_code = 32, .frame_instr = 56, .frame_previous = 48, .frame_mark = 68,
	  .code_units = 184, .code_name = 128, .code_filename = 112, .code_firstlineno = 72, .code_linetable = 136,
	  .unicode_ascii = 48, .unicode_compact = 72 },
	{ .minor = 12, .kind = STUB_PY_OWNER, .thread_id = 136, .cframe = 56, .current_frame = 0, .frame_code = 0,
	  .frame_instr = 56, .frame_previous = 8, .frame_mark = 70, .owner_cstack = 3, .code_units = 192,
	  .code_name = 128, .code_filename = 112, .code_firstlineno = 68, .code_linetable = 136,
	  .unicode_ascii = 40, .unicode_compact = 56 },
	{ .minor = 13, .kind = STUB_PY_OWNER, .thread_id = 152, .cframe = STUB_PY_NO_FIELD, .current_frame = 72,
	  .frame_code = 0, .frame_instr = 56, .frame_previous = 8, .frame_mark = 70, .owner_cstack = 3,
	  .code_units = 200, .code_name = 128, .code_filename = 112, .code_firstlineno = 68, .code_linetable = 136,
	  .unicode_ascii = 40, .unicode_compact = 56 },
};

const struct py_layout *py_layout_of(int minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

struct code {
	uint64_t addr;          /* the code object's address */
	uint64_t ident;         /* its identity word (ht_py_ident) */
	char *func, *file;      /* NULL: could not be read */
	int firstlineno;
};

static struct {
	pthread_mutex_t lock;
	struct {
		pid_t pid;
		const struct py_layout *lay;
		uint64_t code_type;
		uint64_t log;           /* its stub's py_log_n (struct stub_data), 0: none */
		uint32_t log_read;      /* entries of the log read so far */
	} procs[MAX_PROCS];
	struct stub_py_code *logged;    /* the logs' entries read, every process's */
	size_t n_logged, logged_cap;
	int n_procs;
	struct code *codes;     /* by index; a profile's word holds index + 1 */
	size_t len, codes_cap;
	uint32_t *slots;        /* open addressing over (addr, ident): index + 1, 0 free */
	size_t cap;
	uint64_t lost;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

void pyf_process(pid_t pid, const struct py_layout *lay, uint64_t code_type, uint64_t log)
{
	pthread_mutex_lock(&g.lock);
	int i;
	for (i = 0; i < g.n_procs && g.procs[i].pid != pid; i++)
		;
	if (i == g.n_procs && g.n_procs < MAX_PROCS)
		g.n_procs++;
	if (i < g.n_procs) {
		g.procs[i].pid = pid;
		g.procs[i].lay = lay;
		g.procs[i].code_type = code_type;
		g.procs[i].log = log;
		g.procs[i].log_read = 0;
	}
	pthread_mutex_unlock(&g.lock);
}

bool pyf_active(void)
{
	return __atomic_load_n(&g.n_procs, __ATOMIC_RELAXED) > 0;
}

static int rd(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static uint64_t rd64(pid_t pid, uint64_t addr, int *err)
{
	uint64_t v = 0;

	if (rd(pid, addr, &v, sizeof(v)))
		*err = 1;
	return v;
}

/* A str object's text, UTF-8; NULL: not a compact string, or unreadable. */
static char *read_str(pid_t pid, const struct py_layout *l, uint64_t s)
{
	int err = 0;
	uint64_t len = rd64(pid, s + 16, &err);
	uint32_t state = (uint32_t)rd64(pid, s + 32, &err);
	unsigned kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;

	if (err || !compact || !kind || kind == 3 || kind > 4 || len > NAME_MAX_BYTES)
		return NULL;
	uint8_t raw[NAME_MAX_BYTES * 4];
	if (rd(pid, s + (ascii ? l->unicode_ascii : l->unicode_compact), raw, len * kind))
		return NULL;
	char *out = malloc(len * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];
		if (c < 0x80) {
			*o++ = (char)c;
		} else if (c < 0x800) {
			*o++ = (char)(0xc0 | c >> 6), *o++ = (char)(0x80 | (c & 63));
		} else if (c < 0x10000) {
			*o++ = (char)(0xe0 | c >> 12), *o++ = (char)(0x80 | (c >> 6 & 63)), *o++ = (char)(0x80 | (c & 63));
		} else {
			*o++ = (char)(0xf0 | c >> 18), *o++ = (char)(0x80 | (c >> 12 & 63));
			*o++ = (char)(0x80 | (c >> 6 & 63)), *o++ = (char)(0x80 | (c & 63));
		}
	}
	*o = 0;
	return out;
}

/* The code object at c->addr, of pid: its names and first line (c->func NULL: not read). */
static void read_code(pid_t pid, const struct py_layout *l, uint64_t code_type, struct code *c)
{
	int err = 0;
	uint64_t a = c->addr;

	if (rd64(pid, a + 8, &err) != code_type || err)
		return;
	uint64_t name = rd64(pid, a + l->code_name, &err), file = rd64(pid, a + l->code_filename, &err);
	int32_t first = 0;
	if (err || rd(pid, a + l->code_firstlineno, &first, sizeof(first)))
		return;
	/* Another code object at its address since (the first one freed): not its name. */
	if (ht_py_ident(name, file, (uint32_t)first) != c->ident)
		return;
	c->func = read_str(pid, l, name);
	c->file = read_str(pid, l, file);
	if (!c->func || !c->file) {
		free(c->func), free(c->file);
		c->func = c->file = NULL;
		return;
	}
	c->firstlineno = first;
}

/* A logged string: its copied bytes, "..." before them when only its end was kept; NULL: not copied. */
static char *logged_str(const char *b, uint16_t len, size_t cap)
{
	if (len == HT_PY_NAME_UNREAD)
		return NULL;
	size_t n = len < cap ? len : cap;
	char *out = malloc(n + 4);
	if (out)
		snprintf(out, n + 4, "%s%.*s", len > cap ? "..." : "", (int)n, b);
	return out;
}

/*
 * c's names from the log of process p's stub (stub/python.c's copies,
 * made while the code lived): its entries not read yet are read first.
 */
static void from_log(int p, struct code *c)
{
	uint32_t n = 0;
	pid_t pid = g.procs[p].pid;
	uint64_t at = g.procs[p].log + offsetof(struct stub_data, py_log) - offsetof(struct stub_data, py_log_n);

	if (!g.procs[p].log || rd(pid, g.procs[p].log, &n, sizeof(n)))
		return;
	if (n > STUB_PY_LOG)
		n = STUB_PY_LOG;
	for (uint32_t i = g.procs[p].log_read; i < n; i++) {
		struct stub_py_code e;
		/* Not yet published (another thread writes it): read again at the next miss. */
		if (rd(pid, at + i * sizeof(e), &e, sizeof(e)) || !e.ident)
			break;
		if (ARRAY_RESERVE(g.logged, g.logged_cap, g.n_logged + 1, 256))
			break;
		g.logged[g.n_logged++] = e;
		g.procs[p].log_read = i + 1;
	}
	for (size_t i = g.n_logged; i-- > 0;) {
		const struct stub_py_code *e = &g.logged[i];
		if (e->code != c->addr || e->ident != c->ident)
			continue;
		c->func = logged_str(e->name, e->name_len, STUB_PY_NAME);
		c->file = logged_str(e->file, e->file_len, STUB_PY_FILE);
		if (!c->func || !c->file) {
			free(c->func), free(c->file);
			c->func = c->file = NULL;
			continue;
		}
		c->firstlineno = e->firstlineno;
		return;
	}
}

static size_t slot_of(uint64_t addr, uint64_t ident, const uint32_t *slots, size_t cap)
{
	size_t i = (size_t)(((addr >> 4) ^ ident) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);

	while (slots[i] && (g.codes[slots[i] - 1].addr != addr || g.codes[slots[i] - 1].ident != ident))
		i = (i + 1) & (cap - 1);
	return i;
}

static int grow(void)
{
	size_t cap = g.cap ? g.cap * 2 : 1024;
	uint32_t *n = calloc(cap, sizeof(*n));

	if (!n)
		return -1;
	for (size_t i = 0; i < g.len; i++)
		n[slot_of(g.codes[i].addr, g.codes[i].ident, n, cap)] = (uint32_t)i + 1;
	free(g.slots);
	g.slots = n;
	g.cap = cap;
	return 0;
}

/*
 * The entry of (addr, ident): the known one, or (*fresh) a new one of
 * those two alone while fewer than max are known; NULL when memory runs
 * out or max are known.
 */
static struct code *lookup(uint64_t addr, uint64_t ident, size_t max, bool *fresh)
{
	*fresh = false;
	if ((g.len + 1) * 2 > g.cap && grow())
		return NULL;
	size_t i = slot_of(addr, ident, g.slots, g.cap);
	if (g.slots[i])
		return &g.codes[g.slots[i] - 1];
	if (g.len >= max || (g.len == g.codes_cap && ARRAY_RESERVE(g.codes, g.codes_cap, g.len + 1, 1024)))
		return NULL;
	struct code *c = &g.codes[g.len];
	*c = (struct code){ .addr = addr, .ident = ident };
	g.slots[i] = (uint32_t)++g.len;
	*fresh = true;
	return c;
}

/* The entry of (addr, ident), made (and read from pid) if new; NULL when memory runs out. */
static struct code *entry(pid_t pid, uint64_t addr, uint64_t ident)
{
	int p;
	bool fresh;

	for (p = 0; p < g.n_procs && g.procs[p].pid != pid; p++)
		;
	/* A new entry only for a process whose layout is known. */
	struct code *c = lookup(addr, ident, p == g.n_procs ? 0 : UINT32_MAX - 1, &fresh);
	if (!c)
		return NULL;
	if (!fresh) {
		/* Not readable when first seen (a process that was exiting): this one's may be. */
		if (!c->func && p < g.n_procs) {
			read_code(pid, g.procs[p].lay, g.procs[p].code_type, c);
			if (!c->func)
				from_log(p, c);
			g.lost -= c->func != NULL;
		}
		return c;
	}
	read_code(pid, g.procs[p].lay, g.procs[p].code_type, c);
	if (!c->func)
		from_log(p, c);
	if (!c->func)
		g.lost++;
	return c;
}

void pyf_note_stack(pid_t pid, const uint64_t *pcs, uint32_t n)
{
	pthread_mutex_lock(&g.lock);
	for (uint32_t i = 0; i + 1 < n; i++)
		if (ht_pc_python(pcs[i]) && !ht_pc_py_ident(pcs[i]) && ht_pc_py_ident(pcs[i + 1]))
			entry(pid, pcs[i] & HT_PY_CODE_MASK, pcs[i + 1]);
	pthread_mutex_unlock(&g.lock);
}

uint32_t pyf_compact(uint64_t *pcs, uint32_t n)
{
	uint32_t out = 0;

	pthread_mutex_lock(&g.lock);
	for (uint32_t i = 0; i < n; i++) {
		if (!ht_pc_python(pcs[i])) {
			pcs[out++] = pcs[i];
			continue;
		}
		/* A pair's first word: its code's index in place of its address; a word alone is dropped. */
		if (ht_pc_py_ident(pcs[i]) || i + 1 == n || !ht_pc_py_ident(pcs[i + 1]))
			continue;
		size_t k = g.cap ? slot_of(pcs[i] & HT_PY_CODE_MASK, pcs[i + 1], g.slots, g.cap) : 0;
		uint64_t index = g.cap && g.slots[k] ? g.slots[k] : 0;
		pcs[out++] = (pcs[i] & ~HT_PY_CODE_MASK) | index;
		i++;
	}
	pthread_mutex_unlock(&g.lock);
	return out;
}

/*
 * The Python frames of the stacks about to be consumed: their code objects
 * are read now, while the process most likely still has them (the frames
 * were running a moment ago).
 */
void pyf_note_ring(pid_t pid, const struct ht_ev *slots, uint64_t tail, uint32_t c)
{
	uint64_t pcs[HT_MAX_STACK_DEPTH];

	for (uint32_t k = 0; k < c;) {
		const struct ht_ev *ev = &slots[(tail + k) & (HT_RING_SLOTS - 1)];
		if (ev->kind != HT_EV_STACK) {
			k++;
			continue;
		}
		uint32_t n = 0, frames = HT_RING_STACK_SLOTS(ev->depth);
		for (uint32_t j = 0; j < frames && k + 1 + j < c; j++) {
			const struct ht_ev_pcs *p = (const void *)&slots[(tail + k + 1 + j) & (HT_RING_SLOTS - 1)];
			for (uint32_t i = 0; i < HT_RING_PCS && n < ev->depth && n < HT_MAX_STACK_DEPTH; i++)
				pcs[n++] = p->pcs[i];
		}
		pyf_note_stack(pid, pcs, n);
		k += 1 + frames;
	}
}

/*
 * FNV-1a over the name, the file (each as pyf_define() keeps it, at most
 * NAME_MAX_BYTES: a file's name may be of any length) and the first
 * line: a defined code's identity (its address 0).
 */
static uint64_t named_ident(const char *func, const char *file, int firstlineno)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; func[i] && i < NAME_MAX_BYTES; i++)
		h = (h ^ (uint8_t)func[i]) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull;
	for (size_t i = 0; file[i] && i < NAME_MAX_BYTES; i++)
		h = (h ^ (uint8_t)file[i]) * 0x100000001b3ull;
	return (h ^ (uint32_t)firstlineno) * 0x100000001b3ull | 1;
}

/*
 * Code objects known, past which files read back define none: a profile
 * names thousands; memory stays bounded for any file.  (Only heaptrace
 * diff defines, and it reads no process's.)
 */
#define MAX_DEFINED (1u << 16)

uint64_t pyf_define(const char *func, const char *file, int firstlineno)
{
	uint64_t ident = named_ident(func, file, firstlineno), index = 0;
	/* Copied first: a new code is known only with its names. */
	char *f = strndup(func, NAME_MAX_BYTES), *fl = strndup(file, NAME_MAX_BYTES);
	bool fresh = false;

	pthread_mutex_lock(&g.lock);
	struct code *c = lookup(0, ident, f && fl ? MAX_DEFINED : 0, &fresh);
	if (c) {
		index = (uint64_t)(c - g.codes) + 1;
		if (fresh)
			c->func = f, c->file = fl, c->firstlineno = firstlineno;
	}
	pthread_mutex_unlock(&g.lock);
	if (!fresh)
		free(f), free(fl);
	return index;
}

bool pyf_frame(uint64_t word, const char **func, const char **file, int *line)
{
	uint64_t index = word & HT_PY_CODE_MASK;
	bool ok = false;

	pthread_mutex_lock(&g.lock);
	if (index && index <= g.len && g.codes[index - 1].func) {
		const struct code *c = &g.codes[index - 1];
		*func = c->func;
		*file = c->file;
		uint64_t rel = word >> HT_PY_LINE_SHIFT & HT_PY_LINE_UNKNOWN;
		*line = rel == HT_PY_LINE_UNKNOWN ? 0 : c->firstlineno + (int)rel;
		ok = true;
	}
	pthread_mutex_unlock(&g.lock);
	return ok;
}

uint64_t pyf_code_address(uint64_t word)
{
	uint64_t index = word & HT_PY_CODE_MASK, a = 0;

	pthread_mutex_lock(&g.lock);
	if (index && index <= g.len)
		a = g.codes[index - 1].addr;
	pthread_mutex_unlock(&g.lock);
	return a;
}

void pyf_counts(uint64_t *codes, uint64_t *lost)
{
	pthread_mutex_lock(&g.lock);
	*codes = g.len - g.lost;
	*lost = g.lost;
	pthread_mutex_unlock(&g.lock);
}
