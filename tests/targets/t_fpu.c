/*
 * A self-checking target for remote system calls (scenario inject_fpu):
 * the main thread, the one heaptrace borrows for them, spends its time in a
 * loop that holds known values in every vector register (ymm0-15 with AVX,
 * else xmm0-15) and a non-default MXCSR, and checks them after each round,
 * with SIGUSR2 and SIGWINCH blocked (checked too: a signal mask).
 * A heaptrace killed in a remote call leaves the thread to give itself its
 * registers back (user/inject/sigframe.c); a lost one shows here.
 *
 *   t_fpu FIFO
 *       Prints "ready", rounds on until "quit" arrives on FIFO, then prints
 *       "bye rounds=R errors=N" and exits 0 when N is 0 (else 3).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sync.h"

static atomic_int stop;

static void *listen_quit(void *fifo)
{
	char line[64];

	do
		read_fifo_line(fifo, line, sizeof(line));
	while (strcmp(line, "quit"));
	atomic_store(&stop, 1);
	return NULL;
}

#define LOAD(i) "vmovdqu " #i "*32(%[in]), %%ymm" #i "\n\t"
#define SAVE(i) "vmovdqu %%ymm" #i ", " #i "*32(%[out])\n\t"
#define LOADX(i) "movdqu " #i "*16(%[in]), %%xmm" #i "\n\t"
#define SAVEX(i) "movdqu %%xmm" #i ", " #i "*16(%[out])\n\t"
#define ALL(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

/* One round: load, spin, read back; the MXCSR set to round toward zero meanwhile. */
static void round_avx(const uint8_t *in, uint8_t *out, uint32_t *mxcsr_seen)
{
	uint32_t rz = 0x7f80, saved;

	__asm__ volatile("stmxcsr %[saved]\n\t"
			 "ldmxcsr %[rz]\n\t" ALL(LOAD) "mov $2000000, %%ecx\n"
			 "1:\n\tdec %%ecx\n\tjnz 1b\n\t" ALL(SAVE) "stmxcsr (%[seen])\n\t"
			 "ldmxcsr %[saved]\n\t"
			 "vzeroupper\n\t"
			 : [saved] "+m"(saved)
			 : [in] "r"(in), [out] "r"(out), [rz] "m"(rz), [seen] "r"(mxcsr_seen)
			 : "rcx", "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
			   "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static void round_sse(const uint8_t *in, uint8_t *out, uint32_t *mxcsr_seen)
{
	uint32_t rz = 0x7f80, saved;

	__asm__ volatile("stmxcsr %[saved]\n\t"
			 "ldmxcsr %[rz]\n\t" ALL(LOADX) "mov $2000000, %%ecx\n"
			 "1:\n\tdec %%ecx\n\tjnz 1b\n\t" ALL(SAVEX) "stmxcsr (%[seen])\n\t"
			 "ldmxcsr %[saved]\n\t"
			 : [saved] "+m"(saved)
			 : [in] "r"(in), [out] "r"(out), [rz] "m"(rz), [seen] "r"(mxcsr_seen)
			 : "rcx", "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
			   "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

int main(int argc, char **argv)
{
	static uint8_t in[16 * 32], out[16 * 32];
	pthread_t th;
	long rounds = 0, errors = 0;
	int avx = __builtin_cpu_supports("avx");
	size_t len = avx ? sizeof(in) : sizeof(in) / 2;

	if (argc != 2) {
		say("usage: t_fpu FIFO\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 37 + 11);
	pthread_create(&th, NULL, listen_quit, argv[1]);
	sigset_t want, now;
	sigemptyset(&want);
	sigaddset(&want, SIGUSR2);
	sigaddset(&want, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &want, NULL);
	say("ready\n");
	while (!atomic_load(&stop)) {
		uint32_t seen = 0;
		memset(out, 0, sizeof(out));
		(avx ? round_avx : round_sse)(in, out, &seen);
		pthread_sigmask(SIG_BLOCK, NULL, &now);
		if (!sigismember(&now, SIGUSR2) || !sigismember(&now, SIGWINCH) || sigismember(&now, SIGUSR1)) {
			if (!errors++)
				say("first error: the signal mask changed\n");
		} else if (memcmp(in, out, len) || seen != 0x7f80) {
			char why[96];
			size_t at = 0;
			while (at < len && in[at] == out[at])
				at++;
			/* The first: which register (32 or 16 bytes each) and the MXCSR seen. */
			if (!errors++) {
				snprintf(why, sizeof(why), "first error: byte %zu (register %zu), mxcsr %#x\n", at,
					 at / (avx ? 32 : 16), seen);
				say(why);
			}
		}
		rounds++;
	}
	pthread_join(th, NULL);
	char line[96];
	snprintf(line, sizeof(line), "bye rounds=%ld errors=%ld\n", rounds, errors);
	say(line);
	return errors ? 3 : 0;
}
