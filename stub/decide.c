// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The in-process fast path, running inside the traced program.  It is
 * compiled freestanding (no libc, no TLS of its own, no floating point,
 * position independent) and must be async-signal-safe, thread-safe and
 * reentrant: it runs on every malloc and free of the target, from any
 * thread, from signal handlers, in forked children.  So: no locks, only
 * atomics; no state but its data page and the caller's stack.
 *
 * What it decides: with --sample-rate, whether a call is sampled (a
 * byte countdown a thread: Poisson sampling over each thread's stream of
 * bytes is as memoryless as over the program's) and
 * whether a free is of a sampled block (a set of their addresses); in
 * exact mode, nothing: everything is recorded.  Only a recorded call
 * reaches a record site, where heaptrace's uprobe and BPF program walk the
 * stack and account it.  When heaptrace is gone (SIGKILL), the record sites
 * are plain nops: the stub keeps running the original code.
 */
#include "stub.h"
#include "ring.h"
#include "unwind.h"

struct stub_frame {
	__u64 mem[HT_MAX_MEM];  /* the spec's reads of memory, made at the entry */
	__u64 target;           /* where the handler goes next: the original function */
	__u64 index;            /* i of entry_i; bit 32 and up: what the entry decided */
	__u64 fp;
	__u64 args[6];
	__u64 rax, r10;         /* given back to the original as they came */
	__u64 ret_addr;         /* the caller's return address: its address is the entry's sp */
};

_Static_assert(__builtin_offsetof(struct stub_frame, target) == 32 &&
	       __builtin_offsetof(struct stub_frame, args) == 56 &&
	       __builtin_offsetof(struct stub_frame, ret_addr) == 120, "entry.S's frame");

enum { MODE_PASS, MODE_CALL, MODE_RECORD, MODE_FREE_OLD };

/* PC-relative: the linker script puts them at fixed offsets from the code. */
extern const struct stub_cfg stub_cfg __attribute__((visibility("hidden")));
extern struct stub_data stub_data __attribute__((visibility("hidden")));

#define HIDDEN __attribute__((visibility("hidden")))
HIDDEN void ht_stub_alloc_site(const struct ht_stub_record *r);
HIDDEN void ht_stub_free_site(const struct ht_stub_record *r);

/*
 * The record sites are nops in assembly: tell the compiler that they read
 * the record, and that memory may change (the BPF side reads, never writes).
 */
static __attribute__((noinline)) void note_recorded(void)
{
	if (!stub_data.c.recorded)
		stub_data.c.recorded = 1;
}

static inline void site(void (*fn)(const struct ht_stub_record *), const struct ht_stub_record *r)
{
	note_recorded();
	__asm__ volatile("call *%1"
			 : "+D"(r)
			 : "r"(fn), "m"(*r)
			 : "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc");
}

static inline __u64 thread_pointer(void)
{
	__u64 tp;

	/* x86-64 psABI: %fs:0 holds the thread pointer itself, in glibc and musl alike. */
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/*
 * A spec's sum of products, as bpf/request.bpf.h evaluates it.  The stub is
 * given only specs whose size and block it can evaluate
 * (user/inject/spec_stub.c): no read of memory at the return.
 */
static __u64 eval(const struct ht_expr *e, const __u64 *args, __u64 ret)
{
	__u64 sum = 0;

	for (__u32 i = 0; i < e->n && i < HT_EXPR_TERMS; i++) {
		__u64 prod = 1;
		for (__u32 j = 0; j < e->t[i].n && j < HT_EXPR_FACTORS; j++) {
			const struct ht_factor *f = &e->t[i].f[j];
			prod *= f->kind == HT_FACTOR_CONST ? f->value :
				f->kind == HT_FACTOR_RET   ? ret :
				f->kind == HT_FACTOR_MEM   ? args[8 + (f->value & 3)] :
				f->kind == HT_FACTOR_ARG   ? args[f->value & 7] : 0;
		}
		sum += prod;
	}
	return sum;
}

/*
 * The spec's reads of memory at the entry: globals of the function's own
 * object only (the BPF side's rule: its ELF address moved by the object's
 * load bias, the function's address less its ELF address), which are
 * mapped as long as the function is, so reading them cannot fault.  Reads
 * through an argument are never given to the stub.
 */
static void read_mems(const struct stub_fn *fn, __u64 *mem)
{
	__u64 bias = fn->func_ip - fn->s.probe_vaddr;

	for (__u32 k = 0; k < fn->n_mem && k < HT_MAX_MEM; k++)
		mem[k] = fn->s.mem[k].base ? 0 : *(const volatile __u64 *)(bias + fn->s.mem[k].offset);
}

/* args[1..6] and the reads args[8..11], as the BPF side numbers them. */
static void load_args(__u64 *a, const struct stub_frame *f)
{
	a[0] = 0;
	for (int i = 0; i < 6; i++)
		a[i + 1] = f->args[i];
	a[7] = 0;
	for (int k = 0; k < HT_MAX_MEM; k++)
		a[8 + k] = f->mem[k];
}

/* Argument n (1-6) as the call came. */
static __u64 arg_of(const struct stub_frame *f, __u8 n)
{
	return n >= 1 && n <= 6 ? f->args[n - 1] : 0;
}

/* The request's size: the fast form when heaptrace found one (nearly every spec), else the spec's sum. */
static __u64 fn_size(const struct stub_fn *fn, const struct stub_frame *f, __u64 ret)
{
	__u64 size, page = stub_cfg.page_size;

	if (fn->flags & STUB_FN_SIZE_FAST) {
		size = fn->size_k;
		if (fn->size_a)
			size *= arg_of(f, fn->size_a);
		if (fn->size_b)
			size *= arg_of(f, fn->size_b);
	} else {
		__u64 args[HT_ARG_SLOTS];
		load_args(args, f);
		size = eval(&fn->s.size, args, ret);
	}
	return fn->flags & STUB_FN_PAGE_ROUND ? (size + page - 1) & ~(page - 1) : size;
}

static __u32 rand32(void)
{
	/* xorshift64*: racy updates between threads only mix the state further. */
	__u64 x = __atomic_load_n(&stub_data.prng, __ATOMIC_RELAXED);

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	__atomic_store_n(&stub_data.prng, x, __ATOMIC_RELAXED);
	return (x * 0x2545F4914F6CDD1Dull) >> 32;
}

/* The next draw of a countdown, after a sample. */
static void resample(__s64 *left)
{
	__atomic_store_n(left, (__s64)ht_sample_interval(stub_cfg.sample_rate, rand32()), __ATOMIC_RELAXED);
}

/*
 * The thread's countdown (struct stub_count): its slot, claimed now if
 * another thread's or free, and given a first draw (a thread that ended
 * leaves its slot behind; two live threads that hash alike take it in
 * turn, through here).  The countdown is memoryless, so a new draw loses
 * nothing; an owner's subtraction in a fast entry that crosses the store
 * of a thread taking its slot over can be lost, once in a while.  The
 * fast entries (user/inject/fast.c) hash the thread pointer as this does.
 */
static struct stub_count *count_of(__u64 tp)
{
	return &stub_data.count[(tp * STUB_FILTER_MUL) >> (64 - STUB_COUNT_BITS)];
}

static __s64 *countdown_of(__u64 tp)
{
	struct stub_count *c = count_of(tp);
	__u64 owner = __atomic_load_n(&c->tp, __ATOMIC_RELAXED);

	if (owner == tp && tp)
		return &c->left;
	if (!tp || !__atomic_compare_exchange_n(&c->tp, &owner, tp, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return &stub_data.countdown;
	/* Not inside the former owner's realloc: its fast entry clears the mark only while the slot is its own. */
	__atomic_store_n(&c->inside, 0, __ATOMIC_RELAXED);
	resample(&c->left);
	return &c->left;
}

/* A function's countdown: the thread's, or the one of the lock's holder (STUB_FN_GIL). */
static __s64 *left_of(const struct stub_fn *fn, __u64 tp)
{
	return fn->flags & STUB_FN_GIL ? &stub_data.gil_left : countdown_of(tp);
}

/*
 * The Poisson byte countdown: is an allocation of size bytes sampled?  As
 * bpf/sample.h's ht_countdown(): when the countdown is less than the size,
 * so never one of 0 bytes (a countdown of 0 is drawn once in about rate
 * draws: `<=` here sampled t_stale's 0-byte calls a run in 70).  Atomic
 * even on the thread's own slot: a signal handler's allocation may come
 * between a load and a store.
 */
static int sampled(const struct stub_fn *fn, __u64 tp, __u64 size)
{
	if (!size)
		return 0;
	__s64 *left = left_of(fn, tp);

	if (__atomic_sub_fetch(left, (__s64)size, __ATOMIC_RELAXED) >= 0)
		return 0;
	resample(left);
	return 1;
}

/* --- the set of sampled blocks: one cache line per bucket, no probing past it --- */

static __u64 *bucket_of(__u64 ptr)
{
	/* One bucket (exact mode): a shift of 64 would be none on x86. */
	if (stub_cfg.set_shift >= 64)
		return stub_data.set;
	/*
	 * Its granule's hash (as its filter byte), then its place in the
	 * granule: the granule's blocks in buckets of their own, as many as a
	 * hash of each block's address gave them (t_stale's 1000 sampled
	 * 16-byte blocks, 32 to a granule at 64K), and the buckets a free the
	 * filter lets by reads, the granule's, near those its sampled blocks
	 * filled.
	 */
	__u64 h = (ptr >> stub_cfg.granule_shift) * STUB_FILTER_MUL;
	__u64 in = (ptr >> 4) & ((1ull << (stub_cfg.granule_shift - 4)) - 1);

	return &stub_data.set[((h >> stub_cfg.set_shift) ^ in) * STUB_BUCKET];
}

static __u8 *filter_of(__u64 ptr)
{
	return &stub_data.filter[((ptr >> stub_cfg.granule_shift) * STUB_FILTER_MUL) >> (64 - STUB_FILTER_BITS)];
}

/*
 * The filter's count of ptr's hash: raised after a block enters the set,
 * lowered after one leaves it, so that a block in the set always has a
 * count (a free of it follows its allocation's return).  At 255 it stays:
 * the count is lost, the set is asked every time.
 */
static void filter_add(__u64 ptr, int up)
{
	__u8 *c = filter_of(ptr), v = __atomic_load_n(c, __ATOMIC_RELAXED);

	while (v != 255 && (up || v) &&
	       !__atomic_compare_exchange_n(c, &v, (__u8)(up ? v + 1 : v - 1), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static int filter_may_have(__u64 ptr)
{
	return __atomic_load_n(filter_of(ptr), __ATOMIC_RELAXED) != 0;
}

/* A full bucket: the allocation is not recorded (its free could not be told), and counted. */
static int set_add(__u64 ptr)
{
	__u64 *b = bucket_of(ptr);

	for (int i = 0; i < STUB_BUCKET; i++) {
		__u64 empty = 0;
		if (__atomic_compare_exchange_n(&b[i], &empty, ptr, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			filter_add(ptr, 1);
			return 1;
		}
	}
	__atomic_add_fetch(&stub_data.c.set_full, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Take ptr out of the set; whether it was there. */
static int set_take(__u64 ptr)
{
	if (!filter_may_have(ptr))
		return 0;
	__u64 *b = bucket_of(ptr);

	for (int i = 0; i < STUB_BUCKET; i++) {
		__u64 want = ptr;
		if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == ptr &&
		    __atomic_compare_exchange_n(&b[i], &want, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			filter_add(ptr, 0);
			return 1;
		}
	}
	return 0;
}

static int set_has(__u64 ptr)
{
	if (!filter_may_have(ptr))
		return 0;
	__u64 *b = bucket_of(ptr);

	for (int i = 0; i < STUB_BUCKET; i++)
		if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == ptr)
			return 1;
	return 0;
}

/*
 * --- per-thread nesting: a thread inside a called (not passed-through)
 * traced function holds a slot (its thread pointer, the call's entry stack
 * pointer).  A signal handler is a nested execution of the same thread: it
 * may run between any two instructions here, so a slot is claimed by one
 * compare-and-swap and only published (sp) once claimed, and a handler
 * never takes over its interrupted thread's slot: it claims another.  A
 * thread's slots lie within STUB_PROBES of its hash, all of which a lookup
 * reads (a freed slot leaves no hole that could hide another).
 */
#define STUB_PROBES HT_STUB_PROBES
#define depth_hash ht_stub_depth_hash

/*
 * A call below a call of its own thread is inside it when it returns into
 * an allocator's code (realloc calling malloc, libc's strdup) or the
 * stub's (its call of the original, which jumped to another) or, for a
 * function whose code heaptrace did not bound (a --sym allocator, which
 * calls malloc from the program's own code), always.  Else it was made by
 * a signal handler that interrupted the call: a request of its own, which
 * would otherwise be lost (an allocation), or leave a block live (a free).
 */
extern const char stub_file[] __attribute__((visibility("hidden")));   /* stub.lds: the file's first byte */

static int returns_into_allocator(__u64 ra)
{
	/* The stub's own call of an original that tail-jumps to another traced function (valloc to memalign). */
	if (ra - (__u64)stub_file < STUB_FILE_SIZE)
		return 1;
	for (__u32 i = 0; i < stub_cfg.n_fns && i < STUB_MAX_FNS; i++) {
		const struct stub_fn *fn = &stub_cfg.fns[i];
		__u64 bias = fn->func_ip - fn->s.probe_vaddr;
		if (!fn->s.text_hi || (ra - bias >= fn->s.text_lo && ra - bias < fn->s.text_hi))
			return 1;
	}
	return 0;
}

/* Is the thread inside such a call, at or above sp (tail-jumped: at the same sp)? */
static int nested(__u64 tp, __u64 sp)
{
	/*
	 * Inside a realloc its fast entry called (struct stub_count's inside):
	 * as a nesting slot.  A call above it is no longer inside (the mark of
	 * a call that never returned: it goes).
	 */
	struct stub_count *c = count_of(tp);
	__u64 in = __atomic_load_n(&c->inside, __ATOMIC_RELAXED);
	if (in && __atomic_load_n(&c->tp, __ATOMIC_RELAXED) == tp) {
		if (sp == in || (sp < in && returns_into_allocator(*(const __u64 *)sp)))
			return 1;
		if (sp > in)
			__atomic_compare_exchange_n(&c->inside, &in, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	/*
	 * A count, not a scan of the thread's slots: those lie in 4 cache lines
	 * that a program touching much memory between calls (PostgreSQL) has
	 * lost, where the count's line is enabled's, read by every handler's
	 * call.
	 */
	if (!__atomic_load_n(&stub_data.active, __ATOMIC_RELAXED))
		return 0;
	__u32 h = depth_hash(tp);
	for (__u32 i = 0; i < STUB_PROBES; i++) {
		struct stub_depth *d = &stub_data.depth[(h + i) % STUB_DEPTH_SLOTS];
		__u64 at;
		if (__atomic_load_n(&d->thread, __ATOMIC_RELAXED) != tp || !(at = __atomic_load_n(&d->sp, __ATOMIC_RELAXED)))
			continue;
		if (sp == at || (sp < at && returns_into_allocator(*(const __u64 *)sp)))
			return 1;
		if (sp < at)
			continue;       /* a signal handler's call, below its interrupted call */
		/*
		 * A call of this thread above that call's entry: that call ended
		 * without returning through the stub (a longjmp out of it, as
		 * PostgreSQL's elog(ERROR) makes, an exception unwinding it), and
		 * its slot would hold every deeper call of the thread for nested
		 * from now on.  It goes, counted as the uprobes' missed_returns
		 * are.  Only this thread writes its slots (its signal handlers run
		 * below it, but on an alternate stack placed higher: that is the
		 * one case in which a live call's slot goes, and only nesting
		 * inside it is lost).
		 */
		if (__atomic_compare_exchange_n(&d->sp, &at, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			__atomic_store_n(&d->thread, 0, __ATOMIC_RELEASE);
			__atomic_sub_fetch(&stub_data.active, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&stub_data.c.stale, 1, __ATOMIC_RELAXED);
		}
	}
	return 0;
}

static int enter(__u64 tp, __u64 sp)
{
	__u32 h = depth_hash(tp);

	for (__u32 i = 0; i < STUB_PROBES; i++) {
		struct stub_depth *d = &stub_data.depth[(h + i) % STUB_DEPTH_SLOTS];
		__u64 free_slot = 0;
		if (__atomic_compare_exchange_n(&d->thread, &free_slot, tp, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			__atomic_store_n(&d->sp, sp, __ATOMIC_RELEASE);
			__atomic_add_fetch(&stub_data.active, 1, __ATOMIC_RELAXED);
			return 1;
		}
	}
	__atomic_add_fetch(&stub_data.c.depth_full, 1, __ATOMIC_RELAXED);
	return 0;
}

static void leave(__u64 tp, __u64 sp)
{
	__u32 h = depth_hash(tp);

	for (__u32 i = 0; i < STUB_PROBES; i++) {
		struct stub_depth *d = &stub_data.depth[(h + i) % STUB_DEPTH_SLOTS];
		__u64 at = sp;
		/*
		 * By compare-and-swap, as nested() takes a stale slot: a signal
		 * handler of this thread running on an alternate stack (above sp)
		 * may take this very slot between a check and a store here, and
		 * the count must go down once, and the slot not be freed again
		 * after another thread has claimed it.
		 */
		if (__atomic_load_n(&d->thread, __ATOMIC_RELAXED) == tp &&
		    __atomic_compare_exchange_n(&d->sp, &at, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			__atomic_store_n(&d->thread, 0, __ATOMIC_RELEASE);
			__atomic_sub_fetch(&stub_data.active, 1, __ATOMIC_RELAXED);
			return;
		}
	}
}

/* --- the handlers --- */

static int wrap_free_enter(struct stub_frame *f, const struct stub_fn *fn, __u64 tp);

int stub_alloc_enter(struct stub_frame *f)
{
	const struct stub_fn *fn = &stub_cfg.fns[f->index & (STUB_MAX_FNS - 1)];
	__u64 tp;
	int mode;

	f->target = fn->orig;
	tp = thread_pointer();
	if (!__atomic_load_n(&stub_data.enabled, __ATOMIC_RELAXED))
		goto no_request;
	if (fn->flags & STUB_FN_FREE) {
		if (fn->n_mem)
			read_mems(fn, f->mem);
		return wrap_free_enter(f, fn, tp);
	}
	if (nested(tp, (__u64)&f->ret_addr)) {
		/*
		 * realloc(NULL, n) jumping to malloc: the outer call is the
		 * request.  One that a fast entry's countdown sent here (it
		 * took the countdown below 0) draws it again, not left below 0
		 * for the next request to take; so does a call while the stub
		 * is off.  Such calls' bytes come off the countdown as a
		 * request's do, which changes no request's chance: the
		 * countdown is memoryless (exponential), a fresh draw too.
		 */
no_request:
		if (f->index & STUB_INDEX_PRESAMPLED)
			resample(left_of(fn, tp));
		return 0;
	}
	if (fn->n_mem)
		read_mems(fn, f->mem);
	__u64 size = 0;
	/* A fast entry's subtraction went below 0 (user/inject/fast.h): sampled, the countdown drawn again here. */
	if (f->index & STUB_INDEX_PRESAMPLED) {
		resample(left_of(fn, tp));
		mode = MODE_RECORD;
	} else if (!stub_cfg.sample_rate || (!(fn->flags & STUB_FN_SIZE_AT_RET) && sampled(fn, tp, size = fn_size(fn, f, 0))))
		mode = MODE_RECORD;
	else if (fn->flags & STUB_FN_SIZE_AT_RET)
		mode = MODE_CALL;       /* decided at the exit */
	else if (fn->old_arg && set_has(arg_of(f, fn->old_arg)))
		mode = MODE_FREE_OLD;   /* an unsampled realloc of a sampled block: the old one goes */
	else if ((fn->flags & STUB_FN_NESTS) && size - 1 >= fn->small_max)
		mode = MODE_CALL;       /* what it calls must not be sampled again */
	else
		return 0;
	if (!enter(tp, (__u64)&f->ret_addr))
		return 0;
	f->index |= (__u64)mode << 32;
	return 1;
}

__u64 stub_alloc_exit(struct stub_frame *f, __u64 ret)
{
	const struct stub_fn *fn = &stub_cfg.fns[f->index & (STUB_MAX_FNS - 1)];
	int mode = f->index >> 32;
	struct ht_stub_record r;
	__u64 ptr, size;

	__u64 tp = thread_pointer();

	leave(tp, (__u64)&f->ret_addr);
	/* An unsampled call held only for what it calls: nothing more to do. */
	if (mode == MODE_CALL && !(fn->flags & STUB_FN_SIZE_AT_RET))
		return ret;
	size = fn_size(fn, f, ret);
	if (mode == MODE_CALL && sampled(fn, tp, size))
		mode = MODE_RECORD;
	if (mode == MODE_CALL)
		return ret;
	load_args(r.args, f);
	if (fn->out_arg)
		ptr = (int)ret == 0 ? *(const __u64 *)arg_of(f, fn->out_arg) : 0;
	else
		ptr = eval(&fn->s.ptr, r.args, ret);
	if (stub_cfg.sample_rate) {
		__u64 old = fn->old_arg ? arg_of(f, fn->old_arg) : 0;
		/* The same rule as the BPF side: the old block is gone when a new one came, or size 0 freed it. */
		if (old && (ptr || !size))
			set_take(old);
		if (mode == MODE_RECORD && ptr && !set_add(ptr))
			mode = MODE_FREE_OLD;
	}
	/*
	 * The ring (ring.c), exact or sampled, but for a stack the stub cannot
	 * walk: the site, in order.  A sampled block's old one an unsampled
	 * realloc freed goes the same way, after the block's own event.
	 */
	if (ring_of()) {
		__u64 old = fn->old_arg ? arg_of(f, fn->old_arg) : 0;
		struct ht_ev ev = { .kind = HT_EV_ALLOC, .flags = mode == MODE_RECORD ? HT_STUB_SAMPLED : 0,
				    .spec = (__u16)fn->spec };
		struct stub_regs regs = { f->ret_addr, (__u64)&f->ret_addr + 8, f->fp };
		ev.ptr = ptr;
		ev.size = size;
		/* finish_alloc's rule: the old block is gone when a new one came, or size 0 freed it. */
		ev.old = old && (ptr || !size) ? old : 0;
		ev.objects = eval(&fn->s.objects, r.args, ret);
		ev.arena = eval(&fn->s.arena, r.args, ret);
		/* A failed call makes no block, an unsampled one keeps none: no stack. */
		if (!ring_put(&ev, ptr && mode == MODE_RECORD ? &regs : 0, thread_pointer()))
			return ret;
	}
	r.ret = ret;
	r.sp = (__u64)&f->ret_addr;
	r.fp = f->fp;
	r.func_ip = fn->func_ip;
	r.spec = fn->spec;
	r.flags = mode == MODE_RECORD ? HT_STUB_SAMPLED : 0;
	r.stack = 0;
	/* Only a block recorded needs its stack; one the stub cannot walk, the BPF side walks. */
	struct ht_stub_stack st;
	if (mode == MODE_RECORD && stub_cfg.walk) {
		struct stub_regs regs = { f->ret_addr, r.sp + 8, f->fp };
		if (!stub_walk(&regs, thread_pointer(), &st, 1))
			r.stack = (__u64)&st;
		else
			r.flags |= HT_STUB_UNWALKED;
	}
	site(ht_stub_alloc_site, &r);
	return ret;
}

/*
 * A free's record, after the checks of whether it is one: to the ring (with
 * its stack when regs: a wrapping free's, for an unmatched one), or to the
 * free site.
 */
static void free_record(struct stub_frame *f, const struct stub_fn *fn, __u64 ptr, const struct stub_regs *regs)
{
	struct ht_stub_record r;

	load_args(r.args, f);
	if (ring_of()) {
		struct ht_ev ev = { .kind = fn->flags & STUB_FN_RESET ? HT_EV_RESET : HT_EV_FREE, .spec = (__u16)fn->spec };
		if (fn->flags & STUB_FN_RESET) {
			ev.arena = eval(&fn->s.arena, r.args, 0);
			regs = 0;
		} else {
			/* from_allocator's test (bpf/calls.bpf.h): the caller is the allocator's own code. */
			__u64 ra = f->ret_addr - (fn->func_ip - fn->s.probe_vaddr);
			ev.ptr = ptr;
			ev.flags = fn->s.text_hi && ra >= fn->s.text_lo && ra < fn->s.text_hi ? HT_EV_FREE_IN_ALLOCATOR : 0;
		}
		if (!ring_put(&ev, regs, thread_pointer()))
			return;
	}
	r.ret = 0;
	r.sp = (__u64)&f->ret_addr;
	r.fp = f->fp;
	r.func_ip = fn->func_ip;
	r.spec = fn->spec;
	r.flags = 0;
	r.stack = 0;
	site(ht_stub_free_site, &r);
}

/* The block a free frees (0: none, or one the stub need not record), and whether it is recorded. */
static __u64 free_ptr(struct stub_frame *f, const struct stub_fn *fn)
{
	struct ht_stub_record r;
	__u64 ptr;

	if (fn->flags & STUB_FN_PTR_FAST) {
		ptr = arg_of(f, fn->ptr_arg);
	} else {
		load_args(r.args, f);
		ptr = eval(&fn->s.ptr, r.args, 0);
	}
	/* Sampling: a block whose hash no sampled block has is none (one byte read, most frees end here). */
	if (!ptr || (stub_cfg.sample_rate && !filter_may_have(ptr)))
		return 0;
	/* A free inside a called allocator is its business (realloc(p, 0) frees p). */
	if (nested(thread_pointer(), (__u64)&f->ret_addr))
		return 0;
	if (stub_cfg.sample_rate && !set_take(ptr))
		return 0;
	return ptr;
}

/*
 * A wrapping free (STUB_FN_WRAPS), from stub_alloc_enter(): recorded as a
 * free, then, in exact mode, called with a nesting slot held, so that the
 * free of its chunk it makes inside (an allocation made inside a traced
 * allocator's call, never recorded) is not taken for an unmatched one.
 * The BPF side told that free apart by the wrapper's entry kept in the
 * thread's call state, which a drained event has no thread for.
 * Sampled, a free of a block never sampled is passed through, as it was.
 */
static int wrap_free_enter(struct stub_frame *f, const struct stub_fn *fn, __u64 tp)
{
	__u64 ptr = free_ptr(f, fn);
	struct stub_regs regs = { f->ret_addr, (__u64)&f->ret_addr + 8, f->fp };

	if (!ptr)
		return 0;
	free_record(f, fn, ptr, stub_cfg.walk ? &regs : 0);
	if (stub_cfg.sample_rate || !enter(tp, (__u64)&f->ret_addr))
		return 0;
	f->index |= (__u64)MODE_CALL << 32;
	return 1;
}

int stub_free_enter(struct stub_frame *f)
{
	const struct stub_fn *fn = &stub_cfg.fns[f->index & (STUB_MAX_FNS - 1)];
	__u64 ptr = 0;

	f->target = fn->orig;
	if (!__atomic_load_n(&stub_data.enabled, __ATOMIC_RELAXED))
		return 0;
	if (fn->n_mem)
		read_mems(fn, f->mem);
	/* A reset frees blocks of every sampled size, wherever it is called from, as its uprobe sees them: always. */
	if (!(fn->flags & STUB_FN_RESET) && !(ptr = free_ptr(f, fn)))
		return 0;
	free_record(f, fn, ptr, 0);
	return 0;
}
