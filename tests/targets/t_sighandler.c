/*
 * Allocations in a signal handler (scenario sigframe): main calls
 * busy_loop, which spins in its own code until sig_handler (SIGALRM, from a
 * 1 ms interval timer) has run SIG_ALLOCS times while busy_loop was
 * running; each of those runs calls handler_alloc, which mallocs SIG_SIZE
 * bytes and keeps them.  So the stack of every one of those blocks is
 * exactly handler_alloc <- sig_handler <- the kernel's signal frame <-
 * busy_loop <- main, with busy_loop the interrupted code, not a caller.
 * Signals that come outside busy_loop allocate nothing.
 *   handler_alloc: SIG_ALLOCS x SIG_SIZE = 20 x 4321 = 86420 bytes, kept
 *   main_alloc:    1 x 999, kept (a stack without a signal frame)
 * With argument "altstack" the handler runs on an alternate signal stack
 * (sigaltstack, SA_ONSTACK): the same numbers, the frames of busy_loop and
 * main on the other stack.  With argument "lostframe" the first two runs
 * of the handler zero the interrupted rip saved in the signal frame (and
 * put it back before returning) around handler_lost's malloc: a signal
 * frame a walk cannot go past.
 *   handler_lost:  2 x 1234 = 2468 bytes, kept
 *   handler_alloc: 18 x 4321 = 77778 bytes, kept
 * Built with frame pointers (tests/) and without (tests/nofp/);
 * tests/scenarios/unwinding.sh holds the expected numbers.
 */
#define _GNU_SOURCE     /* REG_RIP */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define SIG_ALLOCS 20
#define SIG_SIZE 4321

void *volatile keep[SIG_ALLOCS + 1];
static volatile sig_atomic_t in_busy, handled;
static int lose_frames;

NOINLINE void handler_alloc(void)
{
	keep[handled] = malloc(SIG_SIZE);
}

NOINLINE void handler_lost(void)
{
	keep[handled] = malloc(1234);
}

NOINLINE void sig_handler(int sig, siginfo_t *info, void *context)
{
	volatile greg_t *rip = &((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)info;
	if (!in_busy || handled >= SIG_ALLOCS)
		return;
	if (handled < lose_frames) {
		greg_t saved = *rip;

		*rip = 0;
		handler_lost();
		*rip = saved;
	} else {
		handler_alloc();
	}
	/* After the call, so that it is no tail call: sig_handler stays a frame. */
	handled = handled + 1;
}

/* No calls: wherever the signal lands while in_busy is set, it is in this function's own code. */
NOINLINE void busy_loop(void)
{
	in_busy = 1;
	while (handled < SIG_ALLOCS)
		;
	in_busy = 0;
}

NOINLINE void main_alloc(void)
{
	keep[SIG_ALLOCS] = malloc(999);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { .it_interval = { 0, 1000 }, .it_value = { 0, 1000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sig_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (argc > 1 && !strcmp(argv[1], "lostframe"))
		lose_frames = 2;
	if (argc > 1 && !strcmp(argv[1], "altstack")) {
		static char alt[64 * 1024];
		stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };

		if (sigaltstack(&ss, NULL))
			return 2;
		sa.sa_flags |= SA_ONSTACK;
	}
	main_alloc();
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL))
		return 2;
	busy_loop();
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &it, NULL);
	return 0;
}
