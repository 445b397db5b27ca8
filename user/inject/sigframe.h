/*
 * A signal frame on a stopped thread's stack, so that a remote system call
 * made from the process's own code gives the thread back its registers
 * even if heaptrace dies in it (sigframe.c).
 */
#ifndef HT_SIGFRAME_H
#define HT_SIGFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct sigframe_gadgets {
	uint64_t syscall_ret;   /* `syscall; ret` in libc */
	uint64_t restorer;      /* `mov $15,%rax; syscall`: libc's rt_sigreturn restorer */
};

/* Look through code (len bytes of the process's libc at address at) for what g still lacks. */
void sigframe_scan(const uint8_t *code, size_t len, uint64_t at, struct sigframe_gadgets *g);

/* Room for a frame: the frame, then the XSAVE state (up to 16 KiB) and its end marker. */
#define SIGFRAME_MAX (512 + 16384 + 4)

/*
 * The frame for the thread tid whose registers to give back are regs (a
 * restart already made), placed below its red zone: *len bytes of buf
 * (SIGFRAME_MAX) to write at *at, which is also the stack pointer to make
 * the call with.  0 or -errno.
 */
int sigframe_build(pid_t tid, const struct user_regs_struct *regs, const struct sigframe_gadgets *g, uint8_t *buf,
		   uint64_t *at, size_t *len);

#endif
