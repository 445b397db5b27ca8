/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The in-process fast path: the layout shared by the stub (decide.c,
 * entry.S, sites.S, compiled freestanding into a flat blob) and the injector
 * (user/inject/) that maps it into the target.
 *
 * The stub is one file (a memfd), mapped private (uprobes refuse shared
 * mappings) read+execute and never writable,
 * followed by an anonymous read-write mapping for its data:
 *
 *   +0                 the blob: fixed entry points (below), then code
 *   STUB_TRAMP_OFF     per function: entry_i (mov $i,%r11d; jmp handler)
 *                      and orig_i (the displaced prologue, relocated,
 *                      then a jump back into the function)
 *   STUB_CFG_OFF       struct stub_cfg: what each function does
 *   STUB_FAST_OFF      sampled mode: per function, a fast entry of
 *                      heaptrace's machine code (user/inject/fast.h)
 *   STUB_GADGET_OFF    the last page: heaptrace's system-call gadget, then
 *                      scratch for its remote calls (memfd names)
 *   STUB_FILE_SIZE     end of the file
 *   STUB_DATA_OFF      struct stub_data (anonymous, read-write, private:
 *                      a forked child gets its own copy)
 *
 * The code reaches its configuration and data PC-relatively, so the stub
 * works wherever it is mapped: near each allocator object, within a rel32
 * jump of the functions it serves.
 */
#ifndef HT_STUB_H
#define HT_STUB_H

#include <linux/types.h>

#include "heaptrace.h"

#define STUB_MAX_FNS 32                 /* HT_MAX_SPECS: every probe of the plan could be redirected */
#define STUB_TRAMP_OFF 0x4400
#define STUB_TRAMP_SIZE 64              /* per function: entry_i, then orig_i */
#define STUB_CFG_OFF 0x4c00            /* right after the trampolines: the config, the fast entries and the gadget's page fit in 80 KiB */
#define STUB_FILE_SIZE 0x14000
#define STUB_DATA_OFF 0x14000
#define STUB_GADGET_OFF (STUB_FILE_SIZE - 0x1000) /* the last page of the file: scratch for heaptrace's remote calls */
#define STUB_FAST_OFF 0x10000
#define STUB_FAST_SIZE 288              /* per function: a realloc's with its displaced code, 270 bytes at most */
#define STUB_FAST_HASH_K (STUB_FAST_OFF + STUB_MAX_FNS * STUB_FAST_SIZE)       /* the filter's multiplier, for them */
#define STUB_FAST_COUNTS (STUB_FAST_HASH_K + 8) /* the address of stub_data.count in the process, for them */
#define STUB_FAST_EXIT (STUB_FAST_COUNTS + 8)   /* where a realloc's fast entry returns through (user/inject/fast.h) */

/*
 * Set in the index a fast entry (user/inject/fast.h) passes to the
 * handler: its subtraction took the countdown below 0, this call is sampled.
 */
#define STUB_INDEX_PRESAMPLED 0x100

/* Fixed entry points at the start of the blob (entry.S, then sites.S). */
#define STUB_ENTRY_ALLOC 0              /* jmp stub_alloc: allocators */
#define STUB_ENTRY_FREE 8               /* jmp stub_free: free-like functions */
#define STUB_SITE_ALLOC 16              /* nop5; ret: an allocation recorded (uprobe here) */
#define STUB_SITE_FREE 24               /* nop5; ret: a free recorded (uprobe here) */

/* Nested calls are told apart per thread, by its thread pointer (%fs:0): heaptrace.h's table. */
#define STUB_DEPTH_SLOTS HT_STUB_DEPTH_SLOTS

/* Sampled blocks are kept in buckets of one cache line each. */
#define STUB_BUCKET 8

/*
 * A count of the sampled blocks whose address hashes to each byte, before
 * the set: a free of an unsampled block (nearly every free) reads one
 * byte of this instead of a bucket of the set (16 MiB at the default
 * --max-allocs: a cache miss a free in a program whose frees are spread,
 * as PostgreSQL's pfree are).  16 KiB: small enough to stay in the cache
 * of a program that touches much memory between frees, and few sampled
 * blocks share a byte (PostgreSQL at 64K holds some hundreds).
 */
#define STUB_FILTER_BITS 14
#define STUB_FILTER (1u << STUB_FILTER_BITS)
#define STUB_FILTER_MUL 0x9E3779B97F4A7C15ull   /* a block's byte: ((ptr >> granule) * this) >> (64 - STUB_FILTER_BITS) */

/*
 * A block is hashed, for the filter and the set, by its granule: its
 * address >> stub_cfg's granule_shift, log2(rate / 64) between 4 and 12,
 * so that a granule holds a sampled block once in 64 or less.  The frees
 * of blocks allocated together, which a program makes together, then
 * read one byte of the filter, where a hash of each block's own address
 * read one of its 256 lines at random: in a Python loop at 512K, that
 * byte's cache misses were 0.6% of the time, and half of them went.
 */
#define STUB_GRANULE_MAX 12

static inline __u32 stub_granule_shift(__u64 sample_rate)
{
	__u32 shift = sample_rate ? 63 - (__u32)__builtin_clzll(sample_rate) : 0;

	return shift < 4 + 6 ? 4 : shift > STUB_GRANULE_MAX + 6 ? STUB_GRANULE_MAX : shift - 6;
}

enum stub_fn_flags {
	STUB_FN_FREE = 1,               /* a free: the block is args' ptr */
	STUB_FN_NESTS = 2,              /* may call other traced functions: always called, depth kept */
	STUB_FN_RESET = 4,              /* an arena reset (--reset-sym): every call recorded, at the free site */
	STUB_FN_SIZE_FAST = 8,          /* size = size_k * argA * argB (user/inject/spec_stub.c) */
	STUB_FN_PTR_FAST = 16,          /* a free's block is arg ptr_arg */
	STUB_FN_SIZE_AT_RET = 32,       /* the size reads ret: sampled at the exit */
	STUB_FN_PAGE_ROUND = 64,        /* the size rounds up to a page (pvalloc) */
	/*
	 * A free that may hand its block's memory on to another free (pfree
	 * calling free for a large chunk, PyObject_Free): entered through
	 * STUB_ENTRY_ALLOC, called and holding a nesting slot (exact mode), so
	 * that the free it makes is its business; its stack is walked and sent
	 * with its event (an unmatched one is charged to it).
	 */
	STUB_FN_WRAPS = 128,
	/*
	 * Sampled: a wrapper whose every call goes on to a traced function
	 * (CPython's PyObject_Malloc jumping through its table slot) passes
	 * straight through its fast entry: that function samples it, once.
	 */
	STUB_FN_FORWARD = 256,
	/*
	 * Sampled: called only by the thread holding a lock of the program's
	 * own (CPython's GIL for pymalloc's object and memory domains), so
	 * that one countdown serves every thread (stub_data's gil_left): a
	 * fast entry subtracts from it without finding the thread's own.
	 */
	STUB_FN_GIL = 512,
};

/*
 * A function's descriptor: what every call reads first, in one cache
 * line (the fast forms of its size and block, precomputed by heaptrace),
 * then a copy of the BPF side's descriptor for what only recorded calls
 * need.
 */
struct stub_fn {
	__u64 orig;                     /* orig_i: the function, displaced prologue and all */
	__u32 flags;                    /* enum stub_fn_flags */
	__u8 size_a, size_b;            /* STUB_FN_SIZE_FAST: argument numbers (0: a factor of 1) */
	__u8 ptr_arg;                   /* STUB_FN_PTR_FAST: the argument number */
	__u8 old_arg;                   /* s.old_ptr_arg: the block a realloc frees */
	__u64 size_k;                   /* STUB_FN_SIZE_FAST: the constant factor */
	__u64 func_ip;                  /* where its uprobe would be: the descriptor's probe_vaddr, loaded */
	__u32 spec;                     /* index of its descriptor in the BPF side's specs */
	__u8 out_arg;                   /* s.out_ptr_arg */
	__u8 n_mem;                     /* s.n_mem */
	__u8 pad[2];
	__u32 small_max;                /* STUB_FN_NESTS: sizes 1..small_max call no traced function (CPython's pymalloc) */
	struct ht_alloc_spec s;         /* a copy of that descriptor: sizes, roles */
} __attribute__((aligned(64)));

/* The stub's own stack walk (stub/unwind.c): as --unwind says, or none (the BPF side walks). */
enum stub_walk_mode { STUB_WALK_NONE, STUB_WALK_FP, STUB_WALK_CFI };

/*
 * Python frames (stub/python.c): where CPython keeps the running thread's
 * frames, for the version heaptrace found (user/probe/pyframes.c).  Each
 * native frame of the interpreter's loop (eval_lo..eval_hi) is replaced
 * in a walked stack by the Python frames it was running, innermost first,
 * two words each (bpf/heaptrace.h's HT_PY_FRAME: the code object and its
 * line, then its identity).
 */
enum stub_py_kind {
	STUB_PY_NONE,
	STUB_PY_FRAMEOBJ,       /* 3.10: PyFrameObject, f_lasti; one a loop */
	STUB_PY_ENTRY_FLAG,     /* 3.11: _PyInterpreterFrame, prev_instr; is_entry ends a loop's frames */
	STUB_PY_OWNER,          /* 3.12, 3.13: an entry frame owned by the C stack ends them (skipped) */
};

enum stub_py_tstate {
	STUB_PY_GLOBAL,         /* *tstate: the thread holding the GIL's (3.10, 3.11); ours if its thread_id is us */
	STUB_PY_TLS,            /* the thread's own, in libpython's TLS block (3.12+): non-zero while it holds the GIL */
};

#define STUB_PY_NO_FIELD 0xffff

struct stub_py {
	__u32 kind;             /* enum stub_py_kind */
	__u32 tstate_from;      /* enum stub_py_tstate */
	__u64 tstate;           /* GLOBAL: tstate_current's address; TLS: the variable's offset in its module's block */
	__u64 modid_got;        /* TLS: the GOT slot that the loader fills with the module's dtv index; 0: modid */
	__u64 modid;            /* TLS: the executable's (1), when its TLS is the executable's own */
	__u64 eval_lo, eval_hi;         /* the interpreter loop's code (_PyEval_EvalFrameDefault) */
	__u16 thread_id;        /* PyThreadState: pthread_self() of its thread */
	__u16 cframe;           /* PyThreadState: the _PyCFrame (STUB_PY_NO_FIELD: the frame is in the state itself) */
	__u16 current_frame;    /* in the _PyCFrame (or the state): the innermost frame */
	__u16 frame_code;       /* a frame's code object */
	__u16 frame_instr;      /* its instruction: a pointer into the code (3.11+), or f_lasti (3.10) */
	__u16 frame_previous;   /* the frame it was called from */
	__u16 frame_mark;       /* ENTRY_FLAG: is_entry; OWNER: owner */
	__u16 code_units;       /* the code object's bytecode (co_code_adaptive) */
	__u8 owner_cstack;      /* OWNER: the entry frame's owner */
	__u8 pad;
	__u16 code_name, code_filename, code_firstlineno;       /* what tells one code object from another (ht_py_ident) */
	__u16 code_linetable;   /* its line table (a bytes object): 3.10's pairs, or 3.11+'s locations */
	__u16 unicode_ascii;    /* where a compact ASCII str's characters start */
	__u16 pad2[2];
};

/*
 * The names of the code objects the stub met (stub/python.c), copied at
 * the first meeting, while the code lives: an imported module's body or a
 * class body is freed as soon as it has run, before heaptrace could read
 * it.  heaptrace reads the log from the process (user/symbolize/pyframes.c).
 * An entry is published by its ident (0 until its strings are in); a name
 * or file that is not compact ASCII has its length HT_PY_NAME_UNREAD;
 * a longer one keeps its last bytes and its whole length.
 */
#define STUB_PY_LOG 2048
#define STUB_PY_SEEN_BITS 12
#define STUB_PY_NAME 96
#define STUB_PY_FILE 168

struct stub_py_code {
	__u64 ident;            /* ht_py_ident's word; 0: not (yet) written */
	__u64 code;             /* its address */
	__s32 firstlineno;
	__u16 name_len, file_len;       /* HT_PY_NAME_UNREAD: not copied */
	char name[STUB_PY_NAME];
	char file[STUB_PY_FILE];
};

#define HT_PY_NAME_UNREAD 0xffff

/*
 * The lines of instructions already found (stub/python.c): a frame's word
 * holds its line, not its instruction, so that one line makes one stack
 * (a line's instructions would make as many).  Direct-mapped by a hash of
 * the code object, its identity and the instruction; an entry is that
 * hash's high 48 bits and the line (from the code's first line, or
 * HT_PY_LINE_UNKNOWN) in one word: read and written whole.
 */
#define STUB_PY_LINE_BITS 12

struct stub_cfg {
	__u32 n_fns;
	__u32 page_size;
	__u64 sample_rate;              /* 0: exact, every call is recorded */
	/*
	 * 64 - log2(buckets) of the sampled-block set: a block's bucket is its
	 * granule's hash's top bits, as its byte of the filter is, its place
	 * in the granule XORed in (at most 256 buckets: the set has 1024 or
	 * more), so that the frees the filter lets by (a byte that a sampled
	 * block shares) read buckets near those the sampled blocks filled,
	 * not a fresh page of the set each (a page fault: a third of a Python
	 * loop's cost at 512K when a free's bucket was a hash of its own).
	 */
	__u64 set_shift;
	__u32 granule_shift;            /* stub_granule_shift() of the rate */
	__u32 granule_pad;
	__u32 walk;                     /* enum stub_walk_mode */
	__u32 max_depth;                /* --max-depth, as the BPF side's */
	__u64 min_frame_addr;           /* vm.mmap_min_addr, at least 1, as the BPF side's */
	struct stub_py py;
	struct stub_fn fns[STUB_MAX_FNS];
};

#define stub_depth ht_stub_depth

/*
 * Counters of the stub, read by heaptrace through /proc/PID/mem.  Every
 * loss is one of bpf/heaptrace.h's counters, under the same name.
 */
struct stub_counters {
	__u64 set_full;                 /* HT_SAMPLED_SET_FULL */
	__u64 depth_full;               /* HT_CALL_MAP_FULL */
	__u64 stale;                    /* HT_MISSED_RETURNS: a slot whose call never returned through the stub */
	/*
	 * 1 once a recorded call went to a record site or the ring: heaptrace
	 * checks that such calls arrive (inject_check_delivery()).  A flag,
	 * not a count: no cache line is written by every call.
	 */
	__u64 recorded;
};

/*
 * Where a thread's stack lies, for the walk's bounds (stub/unwind.c): the
 * range [lo, hi) that the stub proved readable (a system call that cannot
 * fault) from the thread's stack pointer up to its thread pointer, where
 * glibc and musl keep a thread's descriptor, at the top of its stack.
 * seq is odd while a slot is written (a reader that sees it change
 * ignores what it read).
 */
#define STUB_STACK_SLOTS 256
#define STUB_STACK_PROBES 8

struct stub_stack {
	__u64 seq;
	__u64 tp;                       /* the thread pointer; 0: free */
	__u64 lo, hi;
};

/* The stub's walk: what heaptrace tells it when it is installed. */
struct stub_walk_info {
	__u64 share;                    /* the tables' mapping (struct ht_share) in the process; 0: none */
	__u64 pid;                      /* the process's id: its own memory, read by process_vm_readv */
	__u64 main_lo, main_hi;         /* the main thread's stack ([stack]): lo moves down as it is proved */
	__u64 restorers[2];             /* libc's signal restorer: a frame the stub leaves to BPF in fp mode */
	__u64 session;                  /* one more at each installation: the pc cache's entries of another are stale */
};

/*
 * The walk's cache of CFI rows by pc (stub/unwind.c): the row binary
 * search of a frame's module is a cache miss or more at every frame of
 * every call; a program's allocations come from few return addresses.
 * Direct-mapped by pc, and keyed also by the tables' gen (a dlopen moves
 * it: an entry of another index is stale) and the installation's session
 * (a new session may map new tables whose gen starts again).  seq is odd
 * while an entry is written; a reader that sees it odd, or changed, takes
 * it for a miss.  The data is MADV_WIPEONFORK: a forked child's is empty.
 */
#define STUB_PC_CACHE_BITS 11           /* 2048 entries, 64 KiB, touched a page at a time */

struct stub_pc_entry {
	__u32 seq;
	__u32 gen;                      /* ht_share's gen it was looked up under */
	__u64 pc;                       /* the frame's pc (its row is looked up at pc - 1); 0: empty */
	__u32 session;                  /* stub_walk_info's session, low half */
	struct ht_unwind_row row;       /* no row: HT_CFA_UNKNOWN (the walk treats both alike) */
};

/*
 * Exact mode's batching (stub/ring.c): the process's event ring, and the
 * stacks already sent in it.  In the data, so a forked child (its data
 * wiped: MADV_WIPEONFORK) has no ring and records through the sites.
 * heaptrace writes it with every thread stopped: a new session bumps
 * epoch and clears sent, so that no event of its ring names a stack
 * only an earlier session was sent.
 */
#define STUB_SENT_BITS 12               /* 4096 stacks: 32 KiB, direct-mapped by hash */
#define STUB_BUSY_SLOTS 512
#define STUB_BUSY_PROBES 8

/*
 * A thread inside ring.c holds a slot of busy[] (its thread pointer, and
 * the position it took, + 1; 0: none yet), claimed as the depth slots
 * are, so that a signal handler of the same thread that comes to the ring
 * knows a position before its own will not be published until it returns:
 * it must not wait for the ring to drain past it.
 */
struct stub_busy {
	__u64 tp;
	__u64 pos;
};

struct stub_ring {
	__u64 ring;                     /* struct ht_ring in the process (slots at HT_RING_OFF); 0: no batching */
	__u32 epoch;                    /* the session that wrote ring and cleared sent */
	__u32 tid_off;                  /* the kernel tid's offset from the thread pointer; 0: ask gettid */
	struct stub_busy busy[STUB_BUSY_SLOTS] __attribute__((aligned(64)));
	__u64 sent[1u << STUB_SENT_BITS] __attribute__((aligned(64)));
};

/*
 * The threads' last walks (stub/unwind.c), by thread pointer and the
 * call's pc and stack pointer: a loop's allocations come from a few call
 * sites, again and again.  The walk is a function of its registers at
 * the entry, the tables (gen, session) and the words it read; when those
 * registers are the same and every word it read still holds what it held,
 * the walk would find the same frames.  So a walk keeps where it read and
 * what (at most STUB_MEMO_READS words, STUB_MEMO_FRAMES frames: a deeper
 * walk keeps nothing), written in the slot as it reads (the slot held,
 * seq odd, meanwhile: not on the stack, the thread's), and the next one
 * from the same registers checks those words, one load each, independent
 * of each other (the walk's are a chain: each address comes from the word
 * before), instead of walking.  rbp counts only where a step used it (a
 * frame's rule by rbp, a frame by frame pointer): code built without
 * frame pointers (CPython's loop) keeps anything in rbp, and a saved rbp
 * that no step used need only be where it was (anyval), the entry's rbp
 * not even that (entry_fp 0).  seq as the pc cache's; a slot whose walk
 * failed gets tp 0 (no match).  64 slots of 2,136 bytes: 134 KiB.
 */
#define STUB_MEMO_BITS 6
#define STUB_MEMO_SLOTS (1u << STUB_MEMO_BITS)
#define STUB_MEMO_FRAMES 64             /* churn at depth 32 is 38 */
#define STUB_MEMO_READS 96              /* a word a frame by CFI, two with rbp saved or by frame pointer */

struct stub_memo {
	__u32 seq;
	__u32 gen;                      /* the tables' (CFI) */
	__u32 session;                  /* stub_walk_info's, low half */
	__u32 nreads;                   /* words in addr/val */
	__u64 tp, pc, sp, fp;           /* the thread and the entry's registers (struct stub_regs) */
	__u32 depth, flags, fp_frames;
	__u32 entry_fp;                 /* 1: the walk used the entry's rbp (fp must match) */
	__u64 hash;
	__u64 anyval[2];                /* reads (bit i: addr[i]) whose value the walk did not use */
	__u64 pcs[STUB_MEMO_FRAMES];
	__u64 addr[STUB_MEMO_READS];
	__u64 val[STUB_MEMO_READS];
};

/*
 * Sampled: each thread's byte countdown, in a slot of its own found by
 * its thread pointer's hash (one place, no probing: a fast entry reads
 * one slot), claimed by the thread's first sampling decision in the
 * handler, and taken over in the handler by a thread that hashes alike
 * (stub/decide.c's countdown_of()).  Only its owner writes left, so no
 * lock: a locked subtraction on a line every thread writes was a third
 * of a fast entry's cost.  Touched where threads hash.
 */
#define STUB_COUNT_BITS 10              /* 64 KiB */
#define STUB_COUNT_SLOTS (1u << STUB_COUNT_BITS)

struct stub_count {
	__u64 tp;                       /* the owner's thread pointer; 0: free */
	__s64 left;                     /* bytes until its next sample */
	/*
	 * A realloc's fast entry calls the function and marks the thread
	 * inside it meanwhile: the stack pointer the function's entry has
	 * (0: none), which stub/decide.c's nested() holds as a nesting slot,
	 * and the span of its object's code: a fast entry called from there
	 * meanwhile is the realloc's business (its malloc of a block it moves;
	 * a STUB_FN_GIL entry looks for no mark: the handler's nested() tells
	 * such a call, if the countdown sends it there).
	 */
	__u64 inside;
	__u64 code_lo, code_len;
	__u64 pad[3];                   /* a cache line a thread */
};

struct stub_data {
	__u32 enabled;                  /* 0: the handlers pass every call on to the original */
	__u32 active;                   /* threads inside a called function (depth slots in use) */
	__s64 countdown;                /* bytes until the next sample, of a call whose slot another thread took meanwhile */
	__u64 prng;                     /* xorshift64* state, seeded by heaptrace */
	struct stub_counters c;
	struct stub_walk_info w;
	struct stub_depth depth[STUB_DEPTH_SLOTS];
	struct stub_stack stacks[STUB_STACK_SLOTS];
	struct stub_ring r;
	struct stub_pc_entry pc_cache[1u << STUB_PC_CACHE_BITS] __attribute__((aligned(64)));
	struct stub_memo memo[STUB_MEMO_SLOTS] __attribute__((aligned(64)));
	/*
	 * The countdown of STUB_FN_GIL functions, alone on its line (their
	 * every call writes it).  A program that breaks its lock's rule (two
	 * CPython interpreters with GILs of their own, 3.12's) may lose a
	 * subtraction now and then: its sampling, never its correctness.
	 */
	__s64 gil_left __attribute__((aligned(64)));
	__u64 gil_pad[7];
	struct stub_count count[STUB_COUNT_SLOTS] __attribute__((aligned(64)));
	__u64 py_lines[1u << STUB_PY_LINE_BITS];        /* stub/python.c's lines, 32 KiB */
	__u64 py_seen[1u << STUB_PY_SEEN_BITS];         /* idents logged (direct-mapped), 32 KiB */
	__u32 py_log_n;                 /* entries of py_log taken (past STUB_PY_LOG: the log was full) */
	__u32 py_pad;
	struct stub_py_code py_log[STUB_PY_LOG];        /* 576 KiB, touched as it fills */
	__u8 filter[STUB_FILTER];       /* sampled blocks per address hash; 255: at least (never lowered) */
	/* then the set: (set_mask + 1) * STUB_BUCKET block addresses, 0: empty */
	__u64 set[] __attribute__((aligned(64)));	/* a bucket: one cache line */
};

#define STUB_DATA_SIZE(buckets) (sizeof(struct stub_data) + (buckets) * STUB_BUCKET * sizeof(__u64))

#endif
