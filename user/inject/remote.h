/*
 * Working inside another process: every thread stopped (ptrace), its
 * memory written through /proc/PID/mem (as debuggers and the kernel's own
 * uprobes do: the target's text never becomes writable), and system calls
 * made on its behalf by one of its stopped threads.
 */
#ifndef HT_REMOTE_H
#define HT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct remote_thread {
	pid_t tid;
	bool seized;            /* seized here: detached when done (else heaptrace's ptrace loop owns it) */
	bool stopped;
	bool group_stop;        /* its stop was a group-stop (job control): traced, it is resumed listening */
	bool loops;             /* traced, stopped at a fork, clone or exec event left to heaptrace's ptrace loop */
	uint64_t requeue;       /* signals (bit sig - 1) taken from it during a remote call, sent again at the resume */
	struct user_regs_struct regs;
};

struct remote {
	pid_t pid;
	int mem_fd;                     /* /proc/PID/mem, read-write */
	struct remote_thread *t;
	size_t n, cap;
	uint64_t syscall_insn;          /* the address of a `syscall` instruction in the target */
	uint64_t gadget;                /* REMOTE_GADGET_SIZE bytes of ours to make system calls from; 0: none yet */
	uint64_t frame_syscall;         /* before the gadget: `syscall; ret` in libc, a signal frame under it */
	uint64_t frame_restorer;        /* libc's rt_sigreturn restorer (inject/sigframe.h) */
	bool looked;                    /* the three above were looked for (in one pass: remote.c) */
	int exit_status;                /* the process ended while being stopped: its wait status */
	bool exited;
};

/*
 * Stop every thread of pid.  traced(arg, tid) says whether heaptrace's
 * ptrace loop already traces a thread (launched commands, --follow-fork):
 * those are interrupted and continued, the others seized and detached.
 * 0, or -errno with the reason printed at -v.
 */
int remote_stop(struct remote *r, pid_t pid, bool (*traced)(void *arg, pid_t tid), void *arg);

/* One thread that is already stopped in a ptrace stop of heaptrace's (a breakpoint at exec). */
int remote_adopt(struct remote *r, pid_t pid, pid_t tid);

/* Let every thread go, registers as they were; a seized one is detached. */
void remote_resume(struct remote *r);

/*
 * Where remote system calls run once the process has memory of ours
 * (r->gadget, REMOTE_GADGET_SIZE bytes in a mapping of ours, written
 * anew before each call): a `syscall`, then code that gives the thread its
 * own registers back and jumps to where it was.  heaptrace takes the
 * registers back itself after the `syscall`; the rest runs only if it was
 * killed in between, and then the thread goes on as if nothing happened
 * (the call's effect stays).  Without it, a SIGKILL there leaves the thread
 * to resume with borrowed registers in the middle of someone else's code.
 */
#define REMOTE_GADGET_SIZE 0x118

/* The gadget for the thread remote_syscall borrows, as it would write it (REMOTE_GADGET_SIZE bytes). */
void remote_fill_gadget(struct remote *r, uint8_t *g);

/*
 * Whether a stopped thread can make a call for us: false when each is in
 * an event stop left to heaptrace's ptrace loop (loops), a process caught
 * while it forks.
 */
bool remote_can_call(struct remote *r);

/*
 * A system call made by the first thread in an interrupt stop; its result
 * (or -errno) in *ret.  0 or -errno (-ESRCH: every thread is in an event
 * stop of the ptrace loop's).
 */
int remote_syscall(struct remote *r, long nr, const long args[6], long *ret);

/* The same with the arguments in line: the call's result; *err 0, or -errno (the call's or the failure's). */
long remote_call(struct remote *r, long nr, long a, long b, long c, long d, long e, long f, int *err);

int remote_write(struct remote *r, uint64_t addr, const void *buf, size_t len);
int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len);

/* Write every stopped thread's registers back now (the caller resumes it: remote_adopt). */
int remote_sync(struct remote *r);

/* Run one instruction of the first thread, from its registers; 0 or -errno. */
int remote_step(struct remote *r);

/*
 * Each stopped thread (not one at a ptrace event or in a group-stop) whose
 * instruction pointer is in [lo, hi), stepped until it leaves, at most max
 * instructions each.  0, or -1 if a thread is still there.
 */
int remote_step_out(struct remote *r, uint64_t lo, uint64_t hi, int max);

/* Is any stopped thread's instruction pointer in [lo, hi)? */
bool remote_pc_in(const struct remote *r, uint64_t lo, uint64_t hi);

void remote_free(struct remote *r);

/* libc's rt_sigreturn restorer in the process (0: none found), looked for once. */
uint64_t remote_restorer(struct remote *r);

#endif
