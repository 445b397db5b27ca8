/*
 * The first remote system call of an installation runs before any memory
 * of ours exists in the target, so from a `syscall` of the process's own
 * code, with borrowed registers.  A heaptrace killed there cannot give them
 * back, and the kernel resumes the thread with them.  So the call is made
 * from a `syscall; ret` of libc, with the stack pointer on a signal frame
 * that holds the thread's own registers, signal mask and FPU state, and a
 * return address at libc's signal restorer: left alone, the thread makes
 * the call, returns into rt_sigreturn, and the kernel puts everything back
 * as after any signal handler.  heaptrace, alive, reads the result at the
 * call's exit stop and sets the registers back itself; the frame is left
 * below the thread's stack pointer (and red zone), unused.
 */
#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "inject/sigframe.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#endif
#define SW_RESERVED_AT 464          /* struct _fpx_sw_bytes in the fxsave area */
#define XSTATE_MAX 16384

/* The kernel's x86-64 struct sigcontext (uapi asm/sigcontext.h), by fields. */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved1[8];
};

/* struct rt_sigframe as rt_sigreturn reads it: at the stack pointer less 8. */
struct k_rt_sigframe {
	uint64_t pretcode;              /* popped by the `ret`: the restorer */
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, pad;
	uint64_t ss_size;
	struct k_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
	uint8_t info[128];              /* siginfo: not read back */
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "struct sigcontext");
_Static_assert(__builtin_offsetof(struct k_rt_sigframe, uc_mcontext) == 48 &&
	       __builtin_offsetof(struct k_rt_sigframe, uc_sigmask) == 304, "struct rt_sigframe");

/* The frame's place below the FPU state (64-byte aligned): the frame starts 16-byte aligned. */
#define FRAME_ROOM ((sizeof(struct k_rt_sigframe) + 15) & ~(size_t)15)
_Static_assert(FRAME_ROOM + XSTATE_MAX + 4 <= SIGFRAME_MAX, "a frame's room");

#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4

/* The XSAVE header's XSTATE_BV, after the legacy area: the components not in their initial state. */
#define XSTATE_BV_AT 512
/* AMX's tile data: a component a process has only once it asked (arch_prctl ARCH_REQ_XCOMP_PERM). */
#define XFEATURE_XTILE_DATA 18

/*
 * The size of the standard-format XSAVE image of the components in
 * xfeatures: the end of the last one (CPUID leaf 0xd gives each one's
 * offset and size), the legacy area and the header at least.
 */
static uint32_t xstate_size_of(uint64_t xfeatures)
{
	uint32_t size = 512 + 64;

	for (unsigned i = 2; i < 64; i++) {
		unsigned a, b, c, d;
		if (!(xfeatures >> i & 1) || !__get_cpuid_count(0xd, i, &a, &b, &c, &d))
			continue;
		if (b + a > size)
			size = b + a;
	}
	return size;
}

static const uint8_t restorer_code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 }; /* mov $15,%rax; syscall */
static const uint8_t syscall_ret_code[] = { 0x0f, 0x05, 0xc3 };                                  /* syscall; ret */

static uint64_t find_in(const uint8_t *buf, size_t len, uint64_t at, const uint8_t *code, size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (!memcmp(buf + i, code, n))
			return at + i;
	return 0;
}

void sigframe_scan(const uint8_t *code, size_t len, uint64_t at, struct sigframe_gadgets *g)
{
	if (!g->restorer)
		g->restorer = find_in(code, len, at, restorer_code, sizeof(restorer_code));
	if (!g->syscall_ret)
		g->syscall_ret = find_in(code, len, at, syscall_ret_code, sizeof(syscall_ret_code));
}

int sigframe_build(pid_t tid, const struct user_regs_struct *regs, const struct sigframe_gadgets *g, uint8_t *buf,
		   uint64_t *at, size_t *len)
{
	uint8_t *xs = buf + FRAME_ROOM;
	struct iovec iov = { xs, XSTATE_MAX };
	uint64_t mask = 0;
	uint32_t xsize = 512;

	if (ptrace(PTRACE_GETSIGMASK, tid, sizeof(mask), &mask))
		return -errno;
	if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov)) {
		/* No XSAVE: the legacy area, which the kernel restores as such (no magic). */
		iov.iov_len = 512;
		if (ptrace(PTRACE_GETFPREGS, tid, 0, xs))
			return -errno;
	} else {
		/*
		 * ptrace gives the XSAVE image with the enabled-feature mask (XCR0)
		 * where a signal frame has its software bytes: those made here as
		 * the kernel makes them for a handler, so that rt_sigreturn restores
		 * every component (without them it takes the legacy area only, and
		 * the upper halves of the vector registers would be lost).  Only
		 * the components the process has: rt_sigreturn takes the legacy
		 * area alone from a frame larger than the thread's own XSAVE size
		 * too, and ptrace gives every component the CPU has, AMX's tile
		 * data included (8 KiB), which a process has only once it asked for
		 * it (the kernel then sizes its state for it; seen in use here by
		 * its bit in XSTATE_BV): on an Intel machine with AMX the frame of
		 * 11,008 bytes was refused, and the thread came back with the upper
		 * halves of its ymm registers zeroed.
		 */
		uint64_t xcr0, bv;
		memcpy(&xcr0, xs + SW_RESERVED_AT, 8);
		memcpy(&bv, xs + XSTATE_BV_AT, 8);
		uint64_t xfeatures = bv >> XFEATURE_XTILE_DATA & 1 ? xcr0 : xcr0 & ~(1ull << XFEATURE_XTILE_DATA);
		xsize = xstate_size_of(xfeatures);
		if (xsize > iov.iov_len)
			xsize = (uint32_t)iov.iov_len;
		uint32_t sw[12] = { FP_XSTATE_MAGIC1, xsize + 4 };
		memcpy(&sw[2], &xfeatures, 8);
		sw[4] = xsize;
		memcpy(xs + SW_RESERVED_AT, sw, sizeof(sw));
	}
	uint32_t magic2 = FP_XSTATE_MAGIC2;
	memcpy(xs + xsize, &magic2, 4);

	/* Below the red zone: the FPU state (XRSTOR wants 64-byte alignment), the frame below it. */
	uint64_t fp = (regs->rsp - 128 - (xsize + 4)) & ~63ull;
	struct k_rt_sigframe f;
	memset(&f, 0, sizeof(f));
	f.pretcode = g->restorer;
	f.uc_flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	/* Not a valid mode: sigaltstack() fails on it and rt_sigreturn leaves the thread's own be. */
	f.ss_flags = 3;
	struct k_sigcontext *c = &f.uc_mcontext;
	c->r8 = regs->r8, c->r9 = regs->r9, c->r10 = regs->r10, c->r11 = regs->r11;
	c->r12 = regs->r12, c->r13 = regs->r13, c->r14 = regs->r14, c->r15 = regs->r15;
	c->rdi = regs->rdi, c->rsi = regs->rsi, c->rbp = regs->rbp, c->rbx = regs->rbx;
	c->rdx = regs->rdx, c->rax = regs->rax, c->rcx = regs->rcx, c->rsp = regs->rsp;
	c->rip = regs->rip, c->eflags = regs->eflags;
	c->cs = regs->cs, c->ss = regs->ss;
	c->fpstate = fp;
	f.uc_sigmask = mask;
	memset(buf, 0, FRAME_ROOM);
	memcpy(buf, &f, sizeof(f));
	*at = fp - FRAME_ROOM;
	*len = FRAME_ROOM + xsize + 4;
	return 0;
}
