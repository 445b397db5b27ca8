/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The contract between the BPF programs and the user-space loader: every map
 * key and value, the allocator descriptors passed through attach cookies, and
 * the loss counters.  Both sides compile this file, so a layout change cannot
 * drift between them.
 */
#ifndef HEAPTRACE_H
#define HEAPTRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "sample.h"

#define HT_MAX_SPECS 32         /* allocator descriptors, indexed by attach cookie */
#define HT_MAX_STACK_DEPTH 127  /* PERF_MAX_STACK_DEPTH: the most --max-depth allows */
#define HT_DEFAULT_MAX_DEPTH 64
#define HT_DEFAULT_MAX_LIVE 1048576
#define HT_DEFAULT_MAX_STACKS 65536

/*
 * Processes traced at once: the target (slot 0) and, with --follow-fork,
 * the processes it forks.  Counters of each are kept apart by slot, since
 * a parent and its child hand out the same addresses.
 */
#define HT_MAX_PROCS 256

/*
 * The signal loader_state sends a process a followed parent executed, at
 * its loader's _dl_debug_state (user/session/procstub.c): SIGURG, ignored
 * by default, so that it is nothing to the process should heaptrace be
 * gone before the signal arrives (a tracer sees it even so).
 */
#define HT_LOADER_SIGNAL 23

/* A followed child (procs map, keyed by tgid). */
struct ht_proc {
	__u32 slot;
	__u32 parent;           /* the parent's slot: blocks the child inherited are live there */
};

/*
 * The frame-pointer walk copies this much of the stack above the stack
 * pointer in one read and walks frames inside the copy; frames beyond it
 * cost one read each.  Power of two.
 */
#define HT_STACK_COPY_BYTES 1024

/*
 * Stacks are keyed by a 64-bit hash of their frames.  This one stands for
 * allocations whose stack could not be stored (map full, or a hash that
 * collided with a different stack): they are still counted, under a pseudo
 * stack, so totals stay exact; the failure is counted in HT_STACK_COLLISIONS or HT_STACK_ERRORS.
 */
#define HT_STACK_LOST 0ull

/*
 * --mmap: a mapping's stack has, in place of its innermost frame (the pc
 * in the C library's syscall wrapper), a pc of its kind, which no user
 * address can be: every reader names it "[mmap]" or "[brk]" (a frame of
 * its own in every output, kept through text and proto files and diffs).
 * Kinds are 1..HT_PC_KINDS; the pc is HT_PC_KIND_BASE + kind * 16.
 */
enum ht_map_kind { HT_MAP_NONE, HT_MAP_MMAP, HT_MAP_BRK, HT_PC_KINDS = HT_MAP_BRK };
#define HT_PC_KIND_BASE 0xffffffffffff0000ull
#define HT_PC_KIND(kind) (HT_PC_KIND_BASE + (__u64)(kind) * 16)

/* The kind of a pc made by HT_PC_KIND, else HT_MAP_NONE. */
static inline __u32 ht_pc_kind(__u64 pc)
{
	__u64 k = (pc - HT_PC_KIND_BASE) / 16;

	return pc > HT_PC_KIND_BASE && !(pc & 15) && k <= HT_PC_KINDS ? (__u32)k : HT_MAP_NONE;
}

/* How stacks are captured (rodata stack_mode). */
enum ht_stack_mode {
	HT_STACK_WALK,          /* our frame-pointer walk over one bulk copy of the stack */
	HT_STACK_KERNEL,        /* bpf_get_stack(), the kernel's own walk: for comparison */
	HT_STACK_DWARF,         /* CFI tables (--unwind dwarf), frame pointers where a pc has none */
};

/* ht_stack.flags */
#define HT_STACK_TRUNCATED 1    /* the walk failed before the outermost frame: unreadable frame, code of no file */
#define HT_STACK_MAX_DEPTH 2    /* more frames than --max-depth: the outermost are cut */

/*
 * A Python frame among a stack's frames (stub/python.c puts them in place
 * of the interpreter loop's native frame): two words, both with bit 63
 * set, which no user address has.  The first: the code object's address
 * in the low 47 bits, and in bits 47-61 the line it runs, counted from the
 * code's first line (HT_PY_LINE_UNKNOWN: none, or too far).  The second
 * (bit 62 set): what tells that code object from another that takes its
 * address once it is freed (pymalloc reuses blocks at once): its name's
 * and file's addresses and first line, mixed.  heaptrace names the pair
 * (user/symbolize/pyframes.c) and, in a profile, makes it one word: the
 * first's line and the index of the code it read.
 */
#define HT_PY_FRAME (1ull << 63)
#define HT_PY_IDENT (1ull << 62)
#define HT_PY_CODE_MASK ((1ull << 47) - 1)
#define HT_PY_LINE_SHIFT 47
#define HT_PY_LINE_UNKNOWN 0x7fffull

static inline __u64 ht_py_ident(__u64 name, __u64 file, __u32 firstlineno)
{
	__u64 h = name * 0x9e3779b97f4a7c15ull ^ file * 0xc2b2ae3d27d4eb4full ^ firstlineno;

	return HT_PY_FRAME | HT_PY_IDENT | (h >> 3);	/* below HT_PC_KIND_BASE */
}

static inline int ht_pc_python(__u64 pc)
{
	return (pc & HT_PY_FRAME) && pc < HT_PC_KIND_BASE;
}

static inline int ht_pc_py_ident(__u64 pc)
{
	return ht_pc_python(pc) && (pc & HT_PY_IDENT);
}

struct ht_stack {
	__u32 depth;
	__u32 flags;
	__u64 pcs[HT_MAX_STACK_DEPTH];  /* return addresses, innermost first */
};

/*
 * A user's size/objects/ptr/arena expression (--sym SPEC), compiled to a sum
 * of products of arguments, numbers and the return value.  No code is
 * generated per spec: the BPF programs evaluate this.
 */
#define HT_EXPR_TERMS 4
#define HT_EXPR_FACTORS 4

/*
 * MEM: 8 bytes of the target's memory read at the entry (a block's header
 * before it is freed, the global current context as the call starts),
 * saved beside the arguments; MEM_RET: read at the return, at ret + value.
 */
enum ht_factor_kind { HT_FACTOR_CONST, HT_FACTOR_ARG, HT_FACTOR_RET, HT_FACTOR_MEM, HT_FACTOR_MEM_RET };

struct ht_factor {
	__u64 value;        /* CONST: the number; ARG: its number, 1-6; MEM: the read, 0-3; MEM_RET: the offset */
	__u32 kind;
	__u32 pad;
};

/* A spec's reads of target memory at the entry, *(argN + offset) or *GLOBAL. */
#define HT_MAX_MEM 4
/* Saved at an entry: args[1..6] the argument registers, args[8 + k] the spec's read k. */
#define HT_ARG_SLOTS 12

struct ht_mem_read {
	__u64 offset;       /* added to argN; with base 0, the global's ELF address in the probed object */
	__u8 base;          /* 1-6: argN; 0: a global, moved by the object's load bias */
	__u8 pad[7];
};

struct ht_term {
	struct ht_factor f[HT_EXPR_FACTORS];
	__u32 n;
	__u32 pad;
};

struct ht_expr {
	struct ht_term t[HT_EXPR_TERMS];
	__u32 n;            /* 0: absent, evaluates to 0 */
	__u32 pad;
};

enum ht_spec_kind { HT_SPEC_ALLOC, HT_SPEC_FREE, HT_SPEC_RESET };

/*
 * An allocator entry point: how its arguments and return value describe
 * the request.  Indexed by attach cookie.  Allocations evaluate their
 * expressions at the return (arguments are saved at the entry), frees and
 * resets at the entry.  With --sample-rate an allocation's size is
 * evaluated at the entry, to decide there whether its return is needed at
 * all, unless the size expression reads ret (size_at_return).
 */
struct ht_alloc_spec {
	struct ht_expr size;        /* bytes */
	struct ht_expr objects;     /* objects the call allocates (1 for malloc) */
	struct ht_expr ptr;         /* the block: ret for malloc, arg1 for free */
	struct ht_expr arena;       /* arena identity, for --reset-sym; absent: none */
	__u32 kind;                 /* enum ht_spec_kind */
	__u8 old_ptr_arg;           /* block being resized (realloc): freed when the call succeeds */
	__u8 out_ptr_arg;           /* pointer is returned through *argN (posix_memalign) */
	__u8 page_round;            /* size rounds up to a whole page (pvalloc) */
	__u8 size_at_return;        /* the size expression reads ret: sampling is decided at the return */
	/*
	 * A --free-sym function, which may hand its block on to another traced
	 * free (CPython's PyObject_Free calls free() for large blocks): its
	 * thread remembers the block, so that the inner free of it is not
	 * taken for the free of a block never seen (nested_in_free()).
	 */
	__u8 free_wraps;
	/*
	 * Calls no traced function (malloc, calloc): with uprobe sessions an
	 * unsampled call skips its return.  Any other call keeps its return,
	 * which ends it: what it calls meanwhile is nested, for certain.
	 */
	__u8 leaf;
	__u8 pad[6];
	/*
	 * --unwind dwarf: where the probe is in its object (ELF address) and
	 * the object (struct ht_unwind_object_key): the probe's address in the
	 * process gives the object's load bias without bpf_find_vma.
	 */
	__u64 probe_vaddr;
	__u64 obj_dev, obj_ino;
	/*
	 * The malloc family: the ELF addresses of its object's code.  A free
	 * of no known block called from there may be the allocator emptying
	 * a thread's cache at the thread's exit (see hold_free()); 0, 0: none.
	 */
	__u64 text_lo, text_hi;
	struct ht_mem_read mem[HT_MAX_MEM];
	__u32 n_mem;
	__u32 pad2;
};

/* What an allocator's entry left for its return (ht_call.state). */
enum ht_call_state {
	HT_CALL_RECORD,         /* record the allocation: exact mode, or sampled */
	HT_CALL_DECIDE,         /* sample at the return: the size expression reads ret */
	HT_CALL_FREE_OLD,       /* not sampled, but the block realloc resizes was: free it if the call succeeds */
	HT_CALL_SKIP,           /* not sampled: the return only ends the call (skipped for a leaf in a session) */
};

/* Per-thread (task storage) state between an allocator's entry and its return probe. */
struct ht_call {
	__u64 args[HT_ARG_SLOTS];   /* args[1..6] and the spec's memory reads at the entry (save_args) */
	__u64 sp;           /* stack pointer at the outermost entry */
	__u32 spec;
	__u32 depth;        /* 0: not in a call; >1: calls nested inside it (realloc -> malloc) */
	/* --sample-rate */
	__u64 until_sample; /* bytes the thread allocates before its next sampled allocation */
	__u64 trampoline;   /* the process's uretprobe trampoline, 0: not known yet */
	__u8 state;         /* enum ht_call_state */
	__u8 sampler_ready; /* until_sample has been drawn */
	__u16 pad;
	__u32 pad2;
	/*
	 * The last free of a free_wraps function (see nested_in_free()): the
	 * block, and the stack pointer and return address at its entry.
	 */
	__u64 free_ptr;     /* 0: none */
	__u64 free_sp;
	__u64 free_ra;
	__u32 free_spec;
	__u32 held_frees;   /* unmatched frees by the allocator's own code, not counted yet: see hold_free() */
};

/*
 * In-use counters per (arena, stack), so that a reset can release an arena's
 * blocks from their stacks' counters without visiting every live block.
 * Each arena's pairs are a list (struct ht_arena.head, ht_arena_site.next),
 * so that a reset visits its own arena's pairs only: its cost is the
 * number of distinct stacks that allocated from the arena since its last
 * reset, not the size of the map (PostgreSQL resets per-tuple contexts,
 * mostly empty, thousands of times a second).
 */
struct ht_arena_site_key {
	__u64 arena;
	__u64 stack;
	__u32 proc;
	__u32 pad;
};

/* An arena of one process (arenas map: its generation). */
struct ht_arena_key {
	__u64 arena;
	__u32 proc;
	__u32 pad;
};

/*
 * An arena's state (arenas map): its generation, and the list of its
 * (arena, stack) counters, newest first, linked by stack hash.  The list is
 * walked for exactly `sites` steps, so a stack hash needs no end marker.
 */
struct ht_arena {
	__u64 head;         /* the stack of the newest (arena, stack) pair; valid if sites > 0 */
	__u32 gen;          /* a reset starts a new generation: blocks of older ones are dead */
	__u32 sites;        /* pairs in the list */
};

/* The most (arena, stack) pairs one reset releases (bpf_loop steps); the rest count as arena_index_lost. */
#define HT_RESET_WALK_MAX 65536

/*
 * A live block's key: its address in one process, the process slot in the
 * top byte (user addresses leave it zero; XOR keeps any 64-bit --sym
 * pointer value distinct).  Eight bytes, not sixteen: the live map is
 * heaptrace's largest memory cost.
 */
static inline __u64 ht_live_key(__u64 addr, __u32 proc)
{
	return addr ^ ((__u64)proc << 56);
}

static inline __u32 ht_live_key_proc(__u64 key)
{
	return key >> 56;
}

struct ht_arena_site {
	__u64 next;                     /* the arena's next (older) pair's stack: see struct ht_arena */
	__s64 inuse_blocks;             /* blocks, for reset_frees */
	__s64 inuse_objects;
	__s64 inuse_bytes;
	__s64 est_inuse_objects;        /* estimates, as in struct ht_site */
	__s64 est_inuse_bytes;
};

/*
 * A live block, keyed by its address.  With --sample-rate only sampled
 * blocks are live.  Its weight is not kept: ht_weight_q16(size,
 * --sample-rate) is a function of the size alone, so a free, a reset or an
 * exec takes off exactly what the allocation added and the counters cannot
 * drift.  32 bytes, the most that keeps a live-map element in the kernel's
 * 96-byte slab class (the 48-byte hash element header, the 8-byte key and
 * the allocator's 8-byte link: 120 bytes per block at a million, 152 with
 * 48 bytes), since the live map is heaptrace's largest memory cost.
 */
struct ht_block {
	__u64 size;
	__u64 time_ns;      /* bpf_ktime_get_ns() at allocation */
	__u64 stack;        /* stack hash */
	__u32 objects;
	__u32 flags;        /* HT_BLOCK_* */
};

/* ht_block.flags */
#define HT_BLOCK_ARENA 1    /* allocated from an arena: see arena_blocks */
#define HT_BLOCK_MAP 2      /* --mmap: a mapping or a piece of the program break (bpf/maps.bpf.h) */

/* An arena's block (arena_blocks, by the block's live key): only blocks with arenas pay for it. */
struct ht_arena_block {
	__u64 arena;        /* arena identity */
	__u32 gen;          /* the arena's generation at allocation: older ones were reset */
	__u32 pad;
};

/*
 * The live map is up to HT_LIVE_LEVELS hash maps (levels) that user space
 * creates as the live set grows, so that its kernel memory follows what the
 * target holds: a preallocated level (a ring's drain fills it: its
 * elements and its buckets, 16 bytes each, take their memory when it is
 * made) is made only when the blocks need it.  The first holds
 * HT_LIVE_FIRST_LEVEL blocks (or
 * --max-allocs), the second seven times as many (64K blocks in two
 * levels), each next one three times as many as all before it, the last
 * whatever --max-allocs leaves.
 */
#define HT_LIVE_LEVELS 8
#define HT_LIVE_FIRST_LEVEL 8192
/* The first level where uprobes fill the levels, not preallocated (user/tracer/levels.c), then threefold. */
#define HT_LIVE_FIRST_LEVEL_GROWN 65536

/*
 * The live map's counting filter (bpf/live.bpf.h, live_filter): for each
 * of HT_LIVE_FILTER_SLOTS slots, how many live keys hash to it.  A count
 * of 0 means no live block has a key of that slot, so a paired allocation
 * of the drain (which only takes a stale block out) skips the live map's
 * lookup, which almost always misses.  Counters of 32 bits, 16 to a cell
 * (an ARRAY's lookup is inlined by the verifier; its values are rounded up
 * to 8 bytes, which 4-byte values would double): 256 KiB.
 */
#define HT_LIVE_FILTER_BITS 16
#define HT_LIVE_FILTER_SLOTS (1u << HT_LIVE_FILTER_BITS)
#define HT_LIVE_FILTER_LANES 16

struct ht_live_filter_cell {
	__u32 n[HT_LIVE_FILTER_LANES];
};

/* A live key's slot: the top bits of a product by an odd constant, which every bit of the key moves. */
static inline __u32 ht_live_filter_slot(__u64 key)
{
	return (key * 0x9e3779b97f4a7c15ull) >> (64 - HT_LIVE_FILTER_BITS);
}

/* Per-stack counters are keyed by the stack hash and the process's slot; frames by the hash alone. */
struct ht_site_key {
	__u64 stack;
	__u32 proc;
	__u32 pad;
};

/* Lifetimes of freed blocks, log2 buckets of microseconds: [2^i, 2^(i+1)) us, the first from 0. */
#define HT_LIFE_BUCKETS 32

/*
 * A thread's last recorded allocation (task storage), for heaptrack's
 * "temporary": see follows_last_alloc() in account.bpf.h.  set is cleared by the
 * thread's next recorded free; a flag, because every stack hash (even
 * HT_STACK_LOST) and every size (malloc(0)) is a value.
 */
struct ht_last_alloc {
	__u64 stack;
	__u64 size;
	__u32 set;
	__u32 pad;
};

/* Allocation sizes, log2 buckets of bytes: [2^i, 2^(i+1)), the first from 0, the last open-ended. */
#define HT_SIZE_BUCKETS 40

/*
 * Per-stack counters.  inuse_* and alloc_* count the allocations recorded:
 * all of them in exact mode, the sampled ones with --sample-rate (the raw
 * counts a heap_v2 profile holds).  est_* are the estimates: each recorded
 * allocation adds its weight (HT_WEIGHT_ONE in exact mode, so est_* then
 * equal the raw counts).  Weights are computed in BPF at the allocation
 * rather than in user space from the sizes, because in-use needs the
 * weights of the blocks still live, and a stack's blocks have many sizes.
 * Objects estimates are Q16 (HT_WEIGHT_SHIFT); bytes estimates are bytes.
 */
struct ht_site {
	__s64 inuse_objects;
	__s64 inuse_bytes;
	__u64 alloc_objects;
	__u64 alloc_bytes;
	__s64 est_inuse_objects;        /* Q16 */
	__s64 est_inuse_bytes;
	__u64 est_alloc_objects;        /* Q16 */
	__u64 est_alloc_bytes;
	/*
	 * The in-use estimates at the last peak (see struct ht_totals): copied
	 * lazily, by the first change after the peak epoch moved on.  Valid
	 * when epoch equals the global epoch; otherwise the site has not
	 * changed since the peak and est_inuse_* are its values at the peak.
	 */
	__s64 peak_objects;             /* Q16 */
	__s64 peak_bytes;
	__u64 epoch;
	__u64 temporary;                /* frees right after an allocation of this stack and size (heaptrack's) */
	__u32 lifetimes[HT_LIFE_BUCKETS];   /* blocks freed, by lifetime */
	/* Why blocks of this stack ended other than by a free (-f top shows them): */
	__u32 reset_frees;              /* blocks freed by arena resets */
	__u32 missed_frees;             /* blocks whose address came back while live: their free went unseen */
	/* A site of its own (no allocations) for the stack of a free: frees of blocks never seen allocated. */
	__u32 unmatched_frees;
	__u32 pad;
	/*
	 * Recorded reallocs of a block of this stack's (realloc(NULL, n) is an
	 * allocation, not one), and the bytes copied by those that moved it:
	 * the old size or the new, the smaller, when the address changed and
	 * the old block was live (known size).  Raw counts, as alloc_*.
	 */
	__u64 realloc_objects;
	__u64 realloc_bytes;
};

/*
 * Process-wide totals (an array element per process slot) of the in-use
 * estimates (exact counts in exact mode; inuse_objects is Q16).  The peak
 * of in-use bytes is exact in exact mode; the at-peak profile is the state
 * when in-use last rose more than the peak step above the previous at-peak
 * state (each such rise starts a new epoch).
 */
struct ht_totals {
	__s64 inuse_bytes;
	__s64 inuse_objects;
	__u64 peak_bytes;
	__u64 peak_ns;                  /* bpf_ktime_get_ns()'s clock: the allocation that reached the peak */
	__u64 epoch;
	__u64 epoch_bytes;              /* in-use bytes when the current epoch started */
	__u64 epoch_ns;
	__u64 execs;                    /* this process's execve()s (its HT_EXECS too) */
	__u64 exec_dropped;
	/*
	 * Allocations by size (-f html's histogram): Q16 estimates, like
	 * inuse_objects.  Process-wide, not per stack: a stack's sizes vary
	 * (a growing buffer), and its mean would hide that.
	 */
	__u64 alloc_sizes[HT_SIZE_BUCKETS];
	__u64 alloc_bytes;              /* bytes allocated in all (an estimate when sampled): --interval-bytes */
};

/*
 * --unwind dwarf: each executable object's .eh_frame / .debug_frame CFI,
 * compiled in user space (user/unwind_table.c) into rows sorted by pc.  A
 * row holds from its pc to the next row's.  x86-64 only: the return
 * address is always at CFA - 8, so a row says how to find the CFA and the
 * caller's rbp, and nothing else.
 */
enum ht_cfa_kind {
	HT_CFA_RSP,             /* CFA = rsp + cfa_off */
	HT_CFA_RBP,             /* CFA = rbp + cfa_off */
	HT_CFA_PLT,             /* .plt's expression: rsp + 8, + 8 more when (pc & 15) >= 11 */
	HT_CFA_END,             /* return address undefined: the outermost frame (_start, clone) */
	HT_CFA_UNKNOWN,         /* no CFI here (a gap between functions) or an expression: use rbp as a frame pointer */
	HT_CFA_SIGNAL,          /* the signal return trampoline (__restore_rt): the interrupted registers are in
				   the kernel's signal frame at rsp (HT_SIGFRAME_*); no offsets */
};

/*
 * The kernel's x86-64 signal frame (struct rt_sigframe) as a handler's
 * return address (the restorer, glibc's __restore_rt) finds it: rsp points
 * just past that return address, at the struct ucontext; its uc_mcontext
 * (struct sigcontext, at 40) holds the interrupted registers.  These are
 * the offsets from rsp that glibc's CFI for __restore_rt gives and the
 * user-space ABI fixes (checked against <sys/ucontext.h> in
 * user/unwind/table.c).
 */
#define HT_SIGFRAME_RBP 120     /* 40 + 80: uc_mcontext.rbp */
#define HT_SIGFRAME_RSP 160     /* 40 + 120 */
#define HT_SIGFRAME_RIP 168     /* 40 + 128 */

/*
 * Stacks hold return addresses, which every reader looks up at pc - 1 (the
 * call).  The instruction a signal interrupted is no return address: its
 * frame holds it + 1, so that pc - 1 is that instruction, for heaptrace's
 * walk and symbolizer and for pprof alike.
 */
#define HT_SIGFRAME_PC(rip) ((rip) + 1)

enum ht_rbp_kind {
	HT_RBP_SAME,            /* rbp still holds the caller's value */
	HT_RBP_CFA,             /* the caller's rbp is saved at CFA + rbp_off */
	HT_RBP_UNKNOWN,         /* neither: the caller's rbp is lost (frames above can still unwind by CFI) */
};

struct ht_unwind_row {
	__u32 pc;               /* ELF virtual address (objects are < 4 GiB) */
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 cfa;               /* enum ht_cfa_kind */
	__u8 rbp;               /* enum ht_rbp_kind */
};

/*
 * An object's table, found from a code address's mapping (bpf_find_vma):
 * keyed by the mapped file's device and inode, so the BPF side needs no
 * per-process list from user space and unwinds a launched command's first
 * allocation, a forked child's, and a dlopen()ed library's once its table
 * is loaded.
 */
struct ht_unwind_object_key {
	__u64 dev;              /* kernel dev_t: major << 20 | minor */
	__u64 ino;
};

struct ht_unwind_object {
	__u64 delta;            /* p_vaddr - p_offset of the executable segment */
	__u64 text_lo, text_hi; /* ELF addresses of its code: the executable segments' span */
	__u32 row_begin;        /* index in the unwind_rows map */
	__u32 row_count;
};

/* A mapping of code, cached per process by the BPF side as its stacks meet it. */
struct ht_unwind_module {
	__u64 start, end;       /* [start, end) in the process */
	__u64 bias;             /* process address - ELF virtual address */
	__u32 row_begin;
	__u32 row_count;        /* 0: no table (frames here unwind by frame pointer) */
	__u32 ready;            /* written last: the entry is complete */
	__u32 pad;
};

#define HT_UNWIND_MAX_MODULES 32        /* per process; more evict round-robin */

struct ht_unwind_proc {
	__u32 n;                /* entries ever added; mods[i % HT_UNWIND_MAX_MODULES] */
	__u32 pad;              /* user space flushes a cache by zeroing it (dlclose, new tables) */
	struct ht_unwind_module mods[HT_UNWIND_MAX_MODULES];
};

/*
 * The in-process fast path (stub/, user/inject/): the stub that heaptrace
 * maps into the target decides in the target whether a call is recorded,
 * and only then calls one of its record sites (a 5-byte nop carrying a
 * uprobe) with a pointer to this record, built on its stack.  sp and fp are
 * the stack and frame pointers at the allocator's entry, so the stack is
 * walked exactly as from a return probe: from the return address at sp.
 */
enum ht_stub_flags {
	HT_STUB_SAMPLED = 1,    /* record the block the call returned (else: only free the old one) */
	HT_STUB_UNWALKED = 2,   /* the stub could not walk this stack (stub/unwind.c says when): BPF walks */
};

struct ht_stub_record {
	/*
	 * As a probe saves them (HT_ARG_SLOTS): args[1..6] the integer argument
	 * registers at the entry, args[8 + k] the spec's read k of a global at
	 * the entry (the stub reads only globals, which cannot fault; a free's
	 * or a reset's record is made at its entry, where BPF reads the rest:
	 * user/probe/stub_spec.c)
	 */
	__u64 args[HT_ARG_SLOTS];
	__u64 ret;              /* the return value (allocations) */
	__u64 sp;               /* the stack pointer at the entry: the caller's return address is at sp */
	__u64 fp;               /* rbp at the entry */
	__u64 func_ip;          /* the function's probe address, as bpf_get_func_ip gives it: its object's bias */
	__u32 spec;             /* the function's descriptor: index into the specs, like an attach cookie */
	__u32 flags;            /* enum ht_stub_flags */
	__u64 stack;            /* a struct ht_stub_stack the stub walked (stub/unwind.c); 0: BPF walks */
};

/*
 * The stack of a recorded allocation, walked in the process by the stub
 * (stub/unwind.c) exactly as the BPF walk of --unwind would walk it: the
 * BPF side hashes and stores these frames instead of walking.
 */
struct ht_stub_stack {
	__u32 depth;            /* frames in pcs */
	__u32 flags;            /* HT_STACK_TRUNCATED, HT_STACK_MAX_DEPTH */
	__u32 fp_frames;        /* --unwind dwarf: frames unwound by frame pointer (HT_UNWIND_FP_FRAMES) */
	__u32 pad;
	__u64 hash;             /* ht_stack_hash of the frames: the BPF side reads them only for a new stack */
	__u64 pcs[HT_MAX_STACK_DEPTH];
};

/* A stack's key in the stacks map: FNV-1a over its frames, 0 kept free for HT_STACK_LOST. */
static inline __u64 ht_stack_hash_step(__u64 h, __u64 pc)
{
	return (h ^ pc) * 0x100000001b3ull;
}

#define HT_STACK_HASH_SEED 0xcbf29ce484222325ull

static inline __u64 ht_stack_hash_end(__u64 h)
{
	h ^= h >> 29;
	return h ? h : 1;
}

/*
 * The CFI tables in the target, for the stub's walk: one memfd that
 * heaptrace writes and the target maps read-only (shared, so that
 * heaptrace's later writes reach it, and a forked child reads it too).
 * The header, then the rows (struct ht_unwind_row, the BPF array's rows
 * at the same indices) from HT_SHARE_ROWS_OFF.  The index of code
 * mappings changes while threads walk (a dlopen): there are two, and
 * gen says which one is in force (gen & 1).  heaptrace writes the other
 * one and then moves gen on; a walk that sees gen change while it ran
 * throws its result away (the BPF side walks instead), since the next
 * change rewrites the index it read.  Rows are only ever appended.
 */
#define HT_SHARE_MODULES 128

struct ht_share_index {
	__u32 n;                /* modules in mods */
	__u32 pad;
	struct ht_unwind_module mods[HT_SHARE_MODULES];   /* sorted by start; ready unused */
};

struct ht_share {
	__u32 gen;
	__u32 rows;             /* rows the file holds */
	struct ht_share_index index[2];
};

#define HT_SHARE_ROWS_OFF ((sizeof(struct ht_share) + 4095) & ~4095ul)

/* The event ring (exact mode's batching): its events, its header, the drain's threads. */
#include "heaptrace_ring.h"

/*
 * The stub's nesting table (struct stub_data's depth[], stub/stub.h): a
 * thread inside a call the stub called (not passed through) holds a slot,
 * its thread pointer (%fs:0, the kernel's thread.fsbase) and the call's
 * entry stack pointer, within HT_STUB_PROBES slots of its hash.  The BPF
 * side reads it too: a call traced by uprobes made inside such a call
 * (a redirected --sym allocator calling one that keeps uprobes) is nested
 * in it, as in a call the uprobes traced.
 */
#define HT_STUB_DEPTH_SLOTS 512
#define HT_STUB_PROBES 16

struct ht_stub_depth {
	__u64 thread;                   /* thread pointer; 0: free slot */
	__u64 sp;                       /* the call's entry stack pointer; 0: not yet published */
};

static inline __u32 ht_stub_depth_hash(__u64 tp)
{
	return ((tp >> 6) * 0x9E3779B97F4A7C15ull) >> 40;
}

/* Where a process's stub keeps them (stub_procs, by tgid): its active count and its table. */
struct ht_stub_proc {
	__u64 active;                   /* address of stub_data.active (__u32): 0, no thread is inside a call */
	__u64 depth;                    /* address of stub_data.depth[0] */
};

/*
 * Event and loss counters: a per-CPU array of HT_COUNTER_MAX counters per
 * process slot, indexed by slot * HT_COUNTER_MAX + enum ht_counter, so that
 * each profile reports its own process's and the events line of -v their
 * sum.  One row each: the identifier (HT_<ID>), the one name it has
 * everywhere (the events line of -v, the top report, /metrics, the docs),
 * and whether it is a loss (shown whenever it is non-zero) or an event
 * (shown with -v).  Every list of counters in user space is generated from
 * this table.
 */
#define HT_COUNTERS(X)                                                                                          \
	X(ALLOCS, "allocs", 0)                  /* allocations counted */                                       \
	X(FREES, "frees", 0)                    /* frees matched to a live block */                             \
	X(LIVE_MAP_FULL, "live_map_full", 1)    /* block not tracked: live map full (its free is unmatched) */  \
	X(STACK_COLLISIONS, "stack_collisions", 1)      /* two different stacks hashed alike */                 \
	X(STACK_ERRORS, "stack_errors", 1)      /* stack map full, or the kernel's walk failed */               \
	X(SITE_MAP_FULL, "site_map_full", 1)    /* per-stack counter map full */                                \
	X(RETURNS_WITHOUT_ENTRY, "returns_without_entry", 1)    /* return probe with no recorded entry */       \
	X(MISSED_RETURNS, "missed_returns", 1)  /* entry replaced: a previous call never returned */            \
	X(CALL_MAP_FULL, "call_map_full", 1)    /* no per-thread call state (out of memory): not traced */      \
	X(UNMATCHED_FREES, "unmatched_frees", 1)        /* free of a block never seen allocated */              \
	X(MISSED_FREES, "missed_frees", 1)      /* address handed out again while still live */                \
	X(FAILED_ALLOCS, "failed_allocs", 0)    /* allocator returned NULL */                                   \
	X(ARENA_RESETS, "arena_resets", 0)      /* arena resets */                                              \
	X(RESET_FREES, "reset_frees", 0)        /* blocks freed by arena resets: not frees, not losses */       \
	X(RESET_OBJECTS, "reset_objects", 0)    /* objects released by arena resets */                          \
	X(ARENA_MAP_FULL, "arena_map_full", 1)  /* arena bookkeeping map full: a reset cannot release these */  \
	X(EXECS, "execs", 0)                    /* the process executed a new program */                        \
	X(EXEC_DROPPED, "exec_dropped", 0)      /* live blocks of the old program, gone with it */              \
	X(INHERITED_FREES, "inherited_frees", 0)        /* a child freed a block its parent allocated */        \
	X(STACKS_TRUNCATED, "stacks_truncated", 1)      /* the stack walk failed early (HT_STACK_TRUNCATED) */  \
	X(STACKS_AT_MAX_DEPTH, "stacks_at_max_depth", 0)        /* stack cut at --max-depth: asked for */       \
	X(UNWIND_FP_FRAMES, "unwind_fp_frames", 0)      /* --unwind dwarf: frames unwound by frame pointer */  \
	X(SAMPLED_SET_FULL, "sampled_set_full", 1)      /* a sampled allocation not recorded: the stub's set was full */ \
	X(THREAD_EXIT_FREES, "thread_exit_frees", 0)    /* at a thread's exit, the allocator freeing its own cache */ \
	X(ARENA_INDEX_LOST, "arena_index_lost", 1)      /* (arena, stack) pairs a reset could not find or reach: their blocks stay in use */ \
	X(SPEC_READ_FAULTS, "spec_read_faults", 1)      /* a spec's *(...) read of target memory failed: 0 used */ \
	X(UNTRACED_CHILDREN, "untraced_children", 0)    /* without --follow-fork: the target forked a child */ \
	X(OOM_KILLS, "oom_kills", 0)    /* the kernel's OOM killer chose this process (oom:mark_victim) */ \
	X(MAPS, "maps", 0)      /* --mmap: anonymous mmaps, mremaps and brk growths counted as blocks */ \
	X(ALLOCATOR_MAPS, "allocator_maps", 0)  /* --mmap: mapping calls the allocator made for itself: not counted */ \
	X(MAP_INDEX_LOST, "map_index_lost", 1)  /* --mmap: a mapping's range not indexed or not reached: its munmap is not seen */ \
	X(STUB_WALKS, "stub_walks", 0)  /* stacks the stub walked in the process (the fast path) */ \
	X(STUB_WALKS_HANDED, "stub_walks_handed", 0)    /* stacks the stub left to the BPF walk (stub/unwind.c) */ \
	X(RING_EVENTS, "ring_events", 0)        /* events drained from the process's ring (exact mode's batching) */ \
	X(RING_FULL_WAITS, "ring_full_waits", 0)        /* a call waited for heaptrace to drain a full ring */ \
	X(RING_LOST, "ring_lost", 1)    /* events the stub could not put in the ring: heaptrace was gone, or it stopped draining */ \
	X(STUB_UNDELIVERED, "stub_undelivered", 1)      /* processes whose fast path recorded calls that never reached heaptrace: tracing stopped */

#define HT_COUNTER_ENUM(id, name, loss) HT_##id,
enum ht_counter { HT_COUNTERS(HT_COUNTER_ENUM) HT_COUNTER_MAX };
#undef HT_COUNTER_ENUM

#endif /* HEAPTRACE_H */
