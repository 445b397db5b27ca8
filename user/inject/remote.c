#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject/phase.h"
#include "inject/remote.h"
#include "inject/sigframe.h"
#include "util/array.h"
#include "util/log.h"
#include "util/procfs.h"

static struct remote_thread *find(struct remote *r, pid_t tid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].tid == tid)
			return &r->t[i];
	return NULL;
}

static struct remote_thread *add(struct remote *r, pid_t tid)
{
	if (ARRAY_RESERVE(r->t, r->cap, r->n + 1, 16))
		return NULL;
	r->t[r->n] = (struct remote_thread){ .tid = tid };
	return &r->t[r->n++];
}

static void drop(struct remote *r, struct remote_thread *t)
{
	*t = r->t[--r->n];
}

static int open_mem(struct remote *r, pid_t pid)
{
	char path[64];

	r->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	r->mem_fd = open(path, O_RDWR | O_CLOEXEC);
	return r->mem_fd < 0 ? -errno : 0;
}

/* waitpid for one thread, through EINTR: 0, or -errno. */
static int wait_tid(pid_t tid, int *st)
{
	while (waitpid(tid, st, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* A wait status as waitpid gives it, from what waitid says. */
static int wait_status(const siginfo_t *si)
{
	switch (si->si_code) {
	case CLD_EXITED:
		return (si->si_status & 0xff) << 8;
	case CLD_KILLED:
		return si->si_status & 0x7f;
	case CLD_DUMPED:
		return (si->si_status & 0x7f) | 0x80;
	default:
		/* Stopped or trapped: the signal, and a ptrace event above it. */
		return (si->si_status & 0xffff) << 8 | 0x7f;
	}
}

/*
 * The next wait status of an interrupted thread, only looked at (WNOWAIT:
 * the next wait takes it), bounded: a thread that never reports (its stop
 * was taken by someone else) must not hang heaptrace's stop, which a
 * supervisor then ends with SIGKILL, leaving every jump behind.
 */
static int peek_tid_bounded(pid_t tid, int *st, int *waited_ms)
{
	for (;;) {
		siginfo_t si = { 0 };
		int rc = waitid(P_PID, tid, &si, WEXITED | WSTOPPED | __WALL | WNOHANG | WNOWAIT);
		if (!rc && si.si_pid) {
			*st = wait_status(&si);
			return 0;
		}
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (*waited_ms >= 5000)
			return -ETIMEDOUT;
		usleep(*waited_ms < 20 ? 200 : 2000);
		*waited_ms += *waited_ms < 20 ? 1 : 2;
	}
}

/*
 * A fork, vfork, clone or exec of a thread that heaptrace's ptrace loop
 * traces is for that loop to see: the new process waits in its first stop
 * until the loop has attached it, and an exec is followed there.  Taken
 * and continued here, the event was lost: the child stayed stopped for
 * good, and a vfork's parent, waiting for its child where no interrupt
 * reaches it, never stopped (remote_stop timed out: a -p --follow-fork
 * attach to a process that runs posix_spawn).
 */
static bool for_the_loop(const struct remote_thread *t, int st)
{
	int event = st >> 16;

	return !t->seized && WIFSTOPPED(st) && (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
						event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_EXEC);
}

/*
 * Wait until an interrupted thread is in its interrupt stop, or in an
 * event stop of the ptrace loop's (for_the_loop: left untaken, it stays
 * there until that loop continues it).  A signal that arrives first is
 * delivered; a thread that exits meanwhile is forgotten.  1: stopped, 0:
 * gone, -errno (-ETIMEDOUT: no stop in 5 s).
 */
static int wait_stopped(struct remote *r, struct remote_thread *t)
{
	int waited_ms = 0;

	for (;;) {
		int st, err = peek_tid_bounded(t->tid, &st, &waited_ms);

		if (err)
			return err;
		if (for_the_loop(t, st)) {
			t->loops = true;
			return 1;
		}
		if ((err = wait_tid(t->tid, &st)))
			return err;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (t->tid == r->pid) {
				r->exited = true;
				r->exit_status = st;
			}
			return 0;
		}
		if (!WIFSTOPPED(st))
			continue;
		int event = st >> 16, sig = WSTOPSIG(st);
		if (event == PTRACE_EVENT_STOP) {
			/* Stopped by job control (SIGSTOP, SIGTSTP, ...) too: it stays so at the resume. */
			t->group_stop = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
			return 1;
		}
		if (event == PTRACE_EVENT_EXIT) {
			ptrace(PTRACE_CONT, t->tid, 0, 0);
			continue;
		}
		/*
		 * A signal on its way to the thread before the stop: delivered
		 * now, with its own siginfo (its sender, its code), not taken and
		 * sent again from here; the interrupt's stop comes after it, with
		 * the thread at its handler's first instruction.
		 */
		ptrace(PTRACE_CONT, t->tid, 0, !event && (sig & 0x7f) != SIGTRAP ? sig : 0);
	}
}

/* 1: stopped, 0: gone (an exiting thread stays listed in /proc/PID/task a while), -errno. */
static int stop_one(struct remote *r, pid_t tid, bool traced)
{
	struct remote_thread *t = add(r, tid);

	if (!t)
		return -ENOMEM;
	if (!traced) {
		if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD)) {
			int e = errno;
			drop(r, t);
			return e == ESRCH ? 0 : -e;
		}
		t->seized = true;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
		int e = errno;
		if (t->seized)
			ptrace(PTRACE_DETACH, tid, 0, 0);
		drop(r, t);
		return e == ESRCH ? 0 : -e;
	}
	int w = wait_stopped(r, t);
	if (w <= 0) {
		drop(r, t);
		return w;
	}
	t->stopped = true;
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs))
		return -errno;
	return 1;
}

/* A round of remote_stop: one thread of the process (proc_take_threads). */
struct stop_round {
	struct remote *r;
	bool (*traced)(void *arg, pid_t tid);
	void *arg;
};

static int stop_listed(void *arg, pid_t tid)
{
	struct stop_round *a = arg;

	/*
	 * Only a thread stopped now is news: one that is gone (exiting, still
	 * listed) would make the rounds go on for good (heaptrace busy at 100%
	 * until SIGKILLed).
	 */
	return find(a->r, tid) ? 0 : stop_one(a->r, tid, a->traced && a->traced(a->arg, tid));
}

int remote_stop(struct remote *r, pid_t pid, bool (*traced)(void *arg, pid_t tid), void *arg)
{
	struct stop_round a = { r, traced, arg };
	int err;

	memset(r, 0, sizeof(*r));
	if ((err = open_mem(r, pid)) || (err = proc_take_threads(pid, stop_listed, &a)))
		return err;
	if (r->exited || !r->n)
		return -ESRCH;
	return 0;
}

int remote_adopt(struct remote *r, pid_t pid, pid_t tid)
{
	int err;

	memset(r, 0, sizeof(*r));
	if ((err = open_mem(r, pid)))
		return err;
	struct remote_thread *t = add(r, tid);
	if (!t)
		return -ENOMEM;
	t->stopped = true;
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs))
		return -errno;
	return 0;
}

void remote_resume(struct remote *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct remote_thread *t = &r->t[i];

		if (!t->stopped || t->loops) {
			/* One in an event stop of the ptrace loop's: that loop continues it (its registers are untouched). */
			t->stopped = false;
			continue;
		}
		ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs);
		/*
		 * A detached thread goes back to its group-stop by itself; a
		 * traced one listens for SIGCONT (unless it made a system call
		 * for us since: only the stop of a PTRACE_EVENT_STOP can listen).
		 */
		if (t->seized)
			ptrace(PTRACE_DETACH, t->tid, 0, 0);
		else if (!t->group_stop || ptrace(PTRACE_LISTEN, t->tid, 0, 0))
			ptrace(PTRACE_CONT, t->tid, 0, 0);
		/* An event stop cannot carry a signal on: send them again. */
		for (int sig = 1; sig <= 64; sig++)
			if (t->requeue & (1ull << (sig - 1)))
				syscall(SYS_tgkill, r->pid, t->tid, sig);
		t->requeue = 0;
		t->stopped = false;
	}
}

int remote_write(struct remote *r, uint64_t addr, const void *buf, size_t len)
{
	ssize_t w = pwrite(r->mem_fd, buf, len, (off_t)addr);

	return w == (ssize_t)len ? 0 : w < 0 ? -errno : -EIO;
}

int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(r->mem_fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* The first `syscall` instruction of code (len bytes at address at), or 0. */
static uint64_t syscall_in(const uint8_t *code, size_t len, uint64_t at)
{
	const uint8_t *p = len > 1 ? memmem(code, len, "\x0f\x05", 2) : NULL;

	return p ? at + (uint64_t)(p - code) : 0;
}

/*
 * Where the first remote calls run from, in one pass over the maps: libc's
 * `syscall; ret` and signal restorer, for a signal frame under the call
 * (sigframe.c), read in windows until both are found, the first `syscall`
 * of the windows read on the way noted; else (a static program) the first
 * `syscall` of the vDSO, whose fallbacks have some, and which every
 * process maps.  Once: no syscall_insn after it, no remote call.
 */
static void find_syscalls(struct remote *r)
{
	struct sigframe_gadgets g = { 0 };
	struct map_entry e;
	uint64_t vdso_lo = 0, vdso_hi = 0;
	uint8_t buf[65536];

	r->looked = true;
	char *maps = proc_maps(r->pid);
	if (!maps)
		return;
	for (const char *pos = maps; maps_next(&pos, &e) && (!g.restorer || !g.syscall_ret);) {
		if (e.perms[2] == 'x' && !strcmp(e.path, "[vdso]"))
			vdso_lo = e.lo, vdso_hi = e.hi;
		if (e.perms[2] != 'x' || !strstr(e.path, "libc.so"))
			continue;
		/* Windows that overlap by a pattern's length less one, so none is split. */
		for (uint64_t at = e.lo; at < e.hi && (!g.restorer || !g.syscall_ret); at += sizeof(buf) - 16) {
			size_t len = e.hi - at < sizeof(buf) ? e.hi - at : sizeof(buf);
			if (remote_read(r, at, buf, len))
				break;
			sigframe_scan(buf, len, at, &g);
			if (!r->syscall_insn)
				r->syscall_insn = syscall_in(buf, len, at);
			if (len < sizeof(buf))
				break;
		}
	}
	free(maps);
	if (g.restorer && g.syscall_ret) {
		r->frame_syscall = g.syscall_ret;
		r->frame_restorer = g.restorer;
	} else {
		ht_info("PID %d: no `syscall; ret` and signal restorer in its libc: the first remote call "
			"has no signal frame under it", r->pid);
	}
	if (!r->syscall_insn && vdso_hi) {
		size_t len = vdso_hi - vdso_lo < sizeof(buf) ? vdso_hi - vdso_lo : sizeof(buf);
		if (!remote_read(r, vdso_lo, buf, len))
			r->syscall_insn = syscall_in(buf, len, vdso_lo);
	}
}

uint64_t remote_restorer(struct remote *r)
{
	if (!r->looked)
		find_syscalls(r);
	return r->frame_restorer;
}

/* The gadget's code, as assembled (its data follows at 0x88: fill_gadget). */
static const uint8_t gadget_code[] = {
	0x0f, 0x05, /* syscall */
	0xfc, /* cld */
	0x8a, 0x05, 0x7f, 0x00, 0x00, 0x00, /* mov  0x7f(%rip),%al */
	0x04, 0x40, /* add  $0x40,%al */
	0x8a, 0x25, 0x78, 0x00, 0x00, 0x00, /* mov  0x78(%rip),%ah */
	0x9e, /* sahf */
	0x4c, 0x8b, 0x3d, 0x77, 0x00, 0x00, 0x00, /* mov  0x77(%rip),%r15 */
	0x4c, 0x8b, 0x35, 0x78, 0x00, 0x00, 0x00, /* mov  0x78(%rip),%r14 */
	0x4c, 0x8b, 0x2d, 0x79, 0x00, 0x00, 0x00, /* mov  0x79(%rip),%r13 */
	0x4c, 0x8b, 0x25, 0x7a, 0x00, 0x00, 0x00, /* mov  0x7a(%rip),%r12 */
	0x48, 0x8b, 0x2d, 0x7b, 0x00, 0x00, 0x00, /* mov  0x7b(%rip),%rbp */
	0x48, 0x8b, 0x1d, 0x7c, 0x00, 0x00, 0x00, /* mov  0x7c(%rip),%rbx */
	0x4c, 0x8b, 0x1d, 0x7d, 0x00, 0x00, 0x00, /* mov  0x7d(%rip),%r11 */
	0x4c, 0x8b, 0x15, 0x7e, 0x00, 0x00, 0x00, /* mov  0x7e(%rip),%r10 */
	0x4c, 0x8b, 0x0d, 0x7f, 0x00, 0x00, 0x00, /* mov  0x7f(%rip),%r9 */
	0x4c, 0x8b, 0x05, 0x80, 0x00, 0x00, 0x00, /* mov  0x80(%rip),%r8 */
	0x48, 0x8b, 0x0d, 0x81, 0x00, 0x00, 0x00, /* mov  0x81(%rip),%rcx */
	0x48, 0x8b, 0x15, 0x82, 0x00, 0x00, 0x00, /* mov  0x82(%rip),%rdx */
	0x48, 0x8b, 0x35, 0x83, 0x00, 0x00, 0x00, /* mov  0x83(%rip),%rsi */
	0x48, 0x8b, 0x3d, 0x84, 0x00, 0x00, 0x00, /* mov  0x84(%rip),%rdi */
	0x48, 0x8b, 0x05, 0x85, 0x00, 0x00, 0x00, /* mov  0x85(%rip),%rax */
	0x48, 0x8b, 0x25, 0x86, 0x00, 0x00, 0x00, /* mov  0x86(%rip),%rsp */
	0xff, 0x25, 0x88, 0x00, 0x00, 0x00, /* jmp  *0x88(%rip) */
};
_Static_assert(sizeof(gadget_code) == 0x88, "the gadget's code as assembled");

/*
 * The gadget for thread registers regs: its code, then OF and the low flags
 * byte, then r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rcx rdx rsi rdi rax rsp
 * rip (already restarted: restart_now).
 */
static void restart_now(struct user_regs_struct *regs)
{
	long err = (long)regs->rax;

	if ((long)regs->orig_rax >= 0 && (err == -512 || err == -513 || err == -514 || err == -516)) {
		regs->rip -= 2;
		regs->rax = err == -516 ? 219 /* restart_syscall */ : regs->orig_rax;
		regs->orig_rax = -1;
	}
}

static void fill_gadget(uint8_t *g, const struct user_regs_struct *regs)
{
	uint64_t rip = regs->rip, rax = regs->rax;
	const uint64_t v[] = { regs->r15, regs->r14, regs->r13, regs->r12, regs->rbp, regs->rbx, regs->r11, regs->r10,
			       regs->r9,  regs->r8,  regs->rcx, regs->rdx, regs->rsi, regs->rdi, rax,	    regs->rsp,
			       rip };
	_Static_assert(0x90 + sizeof(v) == REMOTE_GADGET_SIZE, "the gadget's layout");
	memset(g, 0, REMOTE_GADGET_SIZE);
	memcpy(g, gadget_code, sizeof(gadget_code));
	if (regs->eflags & (1u << 10))
		g[2] = 0xfd;                    /* std */
	g[0x88] = regs->eflags & (1u << 11) ? 0x40 : 0;
	g[0x89] = (uint8_t)regs->eflags;
	memcpy(g + 0x90, v, sizeof(v));
}

/* The thread remote calls borrow: the first in an interrupt stop (an event stop is the ptrace loop's). */
static struct remote_thread *syscall_thread(struct remote *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].stopped && !r->t[i].loops)
			return &r->t[i];
	return NULL;
}

bool remote_can_call(struct remote *r)
{
	return syscall_thread(r) != NULL;
}

void remote_fill_gadget(struct remote *r, uint8_t *g)
{
	struct remote_thread *t = syscall_thread(r);

	if (t) {
		restart_now(&t->regs);
		fill_gadget(g, &t->regs);
	}
}

int remote_syscall(struct remote *r, long nr, const long args[6], long *ret)
{
	struct remote_thread *t = syscall_thread(r);
	int err;

	if (!t)
		return -ESRCH;
	/*
	 * Not the gadget while a thread is inside it: a heaptrace killed in a
	 * remote call left that thread to run the gadget's code, which reads
	 * the registers written there for it; writing another call's over them
	 * would give it those.  The signal frame serves instead.
	 */
	uint64_t gadget = r->gadget && !remote_pc_in(r, r->gadget, r->gadget + REMOTE_GADGET_SIZE) ? r->gadget : 0;
	if (!gadget && !r->looked)
		find_syscalls(r);
	if (!gadget && !r->syscall_insn)
		return -ENOENT;
	/*
	 * Its registers come back at a system call's exit stop, where the
	 * kernel no longer restarts the call they were interrupted in: the
	 * restart made now, as the kernel would have made it.
	 */
	restart_now(&t->regs);

	struct user_regs_struct regs = t->regs;
	regs.rip = r->syscall_insn;
	if (!gadget && r->frame_syscall) {
		struct sigframe_gadgets g = { r->frame_syscall, r->frame_restorer };
		uint8_t frame[SIGFRAME_MAX];
		uint64_t sp;
		size_t len;
		/* A stack with no room below it (the frame did not fit) makes the call as before. */
		if (!sigframe_build(t->tid, &t->regs, &g, frame, &sp, &len) && !remote_write(r, sp, frame, len)) {
			regs.rip = r->frame_syscall;
			regs.rsp = sp;
		}
	}
	if (gadget) {
		uint8_t g[REMOTE_GADGET_SIZE];
		fill_gadget(g, &t->regs);
		if ((err = remote_write(r, gadget, g, sizeof(g))))
			return err;
		regs.rip = gadget;
	}
	regs.rax = nr;
	/* No system call restart for this one: the interrupted call's own restart is in t->regs. */
	regs.orig_rax = -1;
	regs.rdi = args[0];
	regs.rsi = args[1];
	regs.rdx = args[2];
	regs.r10 = args[3];
	regs.r8 = args[4];
	regs.r9 = args[5];
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &regs))
		return -errno;
	/* From here until its registers are back the thread holds borrowed ones (docs/fast-path.md). */
	inject_phase("syscall");
	/*
	 * Run to the call's entry and exit stops, not one single step: a
	 * single step leaves the trap flag forced on the thread until the next
	 * resume, and a heaptrace killed before that resume would leave the
	 * thread to die of SIGTRAP after its next instruction.
	 */
	if (ptrace(PTRACE_SYSCALL, t->tid, 0, 0))
		return -errno;
	for (int stops = 0;;) {
		/*
		 * The stop reached, not yet reaped: a heaptrace killed here
		 * leaves the stop's code (SIGTRAP) with the thread, and the
		 * kernel sends it that as a signal when it resumes: the
		 * process died of SIGTRAP.  With PTRACE_O_TRACESYSGOOD (every
		 * seize of ours) the code is SIGTRAP | 0x80, no signal, and
		 * the kernel sends nothing.  Phases of their own for scenario
		 * inject_fpu.
		 */
		siginfo_t si;
		if (inject_phases_on() && !waitid(P_PID, t->tid, &si, WSTOPPED | WEXITED | WNOWAIT | __WALL))
			inject_phase(stops ? "syscall-exit-unreaped" : "syscall-entry-unreaped");
		int st, err = wait_tid(t->tid, &st);

		if (err)
			return err;
		if (!WIFSTOPPED(st)) {
			t->stopped = false;
			return -ESRCH;
		}
		/* Entry, then exit; not a PTRACE_EVENT_STOP with SIGTRAP (a SIGCONT's notification). */
		if ((WSTOPSIG(st) & 0x7f) == SIGTRAP && !(st >> 16)) {
			inject_phase(++stops == 1 ? "syscall-entry" : "syscall-exit");
			if (stops == 2)
				break;
		} else if (!(st >> 16)) {
			/* Another signal first (the thread holds our registers): kept for the resume, go on. */
			t->requeue |= 1ull << ((WSTOPSIG(st) - 1) & 63);
		}
		if (ptrace(PTRACE_SYSCALL, t->tid, 0, 0))
			return -errno;
	}
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &regs))
		return -errno;
	*ret = regs.rax;
	/* The thread's own registers come back at the resume; until then it stays where it is. */
	return ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) ? -errno : 0;
}

int remote_sync(struct remote *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].stopped && !r->t[i].loops && ptrace(PTRACE_SETREGS, r->t[i].tid, 0, &r->t[i].regs))
			return -errno;
	return 0;
}

/* One instruction of t, its registers as they are in t->regs, then read back. */
static int step_thread(struct remote_thread *t)
{
	int st, err;

	if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) || ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0))
		return -errno;
	if ((err = wait_tid(t->tid, &st)))
		return err;
	if (!WIFSTOPPED(st))
		return -ESRCH;
	if (WSTOPSIG(st) != SIGTRAP && !(st >> 16))
		t->requeue |= 1ull << ((WSTOPSIG(st) - 1) & 63);
	return ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) ? -errno : 0;
}

int remote_step(struct remote *r)
{
	return step_thread(&r->t[0]);
}

int remote_step_out(struct remote *r, uint64_t lo, uint64_t hi, int max)
{
	bool left = false;

	for (size_t i = 0; i < r->n; i++) {
		struct remote_thread *t = &r->t[i];
		/* A thread at a ptrace event or in a group-stop is not ours to run. */
		bool ours = t->stopped && !t->loops && !t->group_stop;
		for (int k = 0; ours && t->regs.rip >= lo && t->regs.rip < hi && k < max; k++)
			if (step_thread(t))
				break;
		left |= t->stopped && t->regs.rip >= lo && t->regs.rip < hi;
	}
	return left ? -1 : 0;
}

bool remote_pc_in(const struct remote *r, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].stopped && r->t[i].regs.rip >= lo && r->t[i].regs.rip < hi)
			return true;
	return false;
}

void remote_free(struct remote *r)
{
	if (r->mem_fd > 0)
		close(r->mem_fd);
	free(r->t);
	memset(r, 0, sizeof(*r));
}

long remote_call(struct remote *r, long nr, long a, long b, long c, long d, long e, long f, int *err)
{
	long args[6] = { a, b, c, d, e, f }, ret = -ENOSYS;

	*err = remote_syscall(r, nr, args, &ret);
	if (!*err && ret < 0 && ret > -4096)
		*err = (int)ret;
	return ret;
}
