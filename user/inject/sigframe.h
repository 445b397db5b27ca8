/*
 * A signal frame on a stopped thread's stack, so that a remote system call
 * made from the process's own code gives the thread back its registers
 * even if heaptrace dies in it (sigframe.c).
 */
#ifndef HT_SIGFRAME_H
#define HT_SIGFRAME_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct sigframe_gadgets {
	uint64_t syscall_ret;   /* `syscall; ret` in libc */
	uint64_t restorer;      /* `mov $15,%rax; syscall`: libc's rt_sigreturn restorer */
};

/* Both in the process's libc: 0, or -ENOENT (a static program: no frame). */
int sigframe_find(pid_t pid, int mem_fd, struct sigframe_gadgets *g);

/*
 * Through mem_fd (/proc/PID/mem): the frame for the thread tid whose registers to give back are regs (a
 * restart already made), written below its red zone; the stack pointer to
 * make the call with in *sp.  0 or -errno.
 */
int sigframe_push(int mem_fd, pid_t tid, const struct user_regs_struct *regs, const struct sigframe_gadgets *g,
		  uint64_t *sp);

#endif
