/*
 * Self-checking targets with known allocations for the cases exact mode's
 * batching (issue 25) must get right: scenario area "batch" (tests/scenarios/
 * batch.sh holds the expected numbers).  Every block is filled with a pattern
 * of its own address and size and checked before it is freed or resized; a
 * mode ends with "... errors 0" and exit 0, else exit 3.  No stdio (it would
 * allocate): lines go out with write().
 *
 *   t_batch fresh FIFO   Says "waiting" and waits for a line on FIFO.  Then
 *       a worker thread mallocs one block of FRESH_A bytes
 *       (fresh_leaf, called by fresh_worker), prints "ready1 NS" (NS: the
 *       wall clock, CLOCK_REALTIME, in ns, right after the malloc returned)
 *       and blocks.  The main thread blocks on FIFO too.  "next" on FIFO: the
 *       worker frees that block, mallocs FRESH_B bytes (fresh_leaf2), prints
 *       "ready2 NS" and blocks again.  "quit": exit 0.  Every thread idle.
 *   t_batch exit FIFO    8 waves of 8 threads; each thread (exit_thread):
 *       exit_keep 20 x malloc(1111) kept; exit_temp 30 x malloc(2222) freed at
 *       once; exit_rseed 10 x malloc(300), each grown by exit_realloc to 3000,
 *       5 of those freed, 5 kept; exit_handoff 5 x malloc(4321) kept; then it
 *       exits (its last call is a malloc).  After the last wave: "ready", and
 *       it waits on FIFO; then the main thread frees the handoff blocks (of
 *       exited threads), says "freed", waits again, and exits 0.  With
 *       "wait" it first says "waiting" and waits on FIFO (for heaptrace -p).
 *   t_batch fork         fork_wloop: a worker thread mallocs and frees 96 bytes
 *       20000 times, then fork_wkeep 10 x malloc(555) kept; the main thread,
 *       once the worker is 1000 pairs in: fork_burst 1000 x malloc(64) kept,
 *       fork() at once; the child: child_own 7 x malloc(1700) kept, child_tmp
 *       3 x malloc(900) freed, frees 100 of the burst's blocks (inherited),
 *       _exit(0).  The parent meanwhile: fork_post 50 x malloc(2500) kept;
 *       after the child's exit it frees 200 burst blocks and joins the worker.
 *   t_batch signals N [F]  The main thread: sig_prime (8 x malloc(80) for the
 *       SIGUSR1 handler's ring, free(malloc(48)) for the SIGALRM handler's
 *       tcache bin), then sig_loop: N rounds (and on until each handler ran 200
 *       times, at most 100 N) of malloc(100..1123)/check/free, while a timer
 *       sends SIGALRM every 200 x F us (on_alarm: malloc(48), check, free) and a
 *       thread sends the main thread SIGUSR1 every 300 x F us (F: 1) (on_usr1: frees its
 *       ring's oldest block, mallocs 80 bytes in its place).  Sizes of their
 *       own tcache bins: glibc takes no lock the interrupted code may hold.
 *       Then the 8 ring blocks are freed; prints "main M", "alarm A", "usr1 U",
 *       "inside I" (handler runs while the main thread was at its malloc) and
 *       "errors E".
 *   t_batch burst        4 threads released at once: burst_alloc 12000 x
 *       malloc(32 + 16 t) kept each (thread t = 0..3), then burst_free frees
 *       all but the last 1000: 48000 allocations and 44000 frees as fast as
 *       the threads can, far more than the event ring's 16384 slots.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

static atomic_long errors;

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(((uintptr_t)p >> 4) + n + i);
}

static void check(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(((uintptr_t)p >> 4) + n + i)) {
			atomic_fetch_add(&errors, 1);
			return;
		}
}

/* A macro: the function that uses it is the one that calls malloc, the stack's innermost frame. */
#define alloc_filled(n) ({                                      \
	size_t n_ = (n);                                         \
	unsigned char *p_ = malloc(n_);                          \
	if (p_)                                                  \
		fill(p_, n_);                                    \
	else                                                     \
		atomic_fetch_add(&errors, 1);                    \
	(void *)p_;                                              \
})

static void free_checked(void *p, size_t n)
{
	if (p)
		check(p, n);
	free(p);
}

/* "WORD N\n" without stdio. */
static void say_num(const char *word, unsigned long long n)
{
	char buf[64], dig[24];
	int d = 0;
	size_t l = strlen(word);

	if (l > 32)
		l = 32;
	memcpy(buf, word, l);
	buf[l++] = ' ';
	do {
		dig[d++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (d)
		buf[l++] = dig[--d];
	buf[l++] = '\n';
	buf[l] = '\0';
	say(buf);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static int verdict(void)
{
	say_num("errors", (unsigned long long)atomic_load(&errors));
	return atomic_load(&errors) ? 3 : 0;
}

/* ---------------------------------------------------------------- fresh */
#define FRESH_A 43210
#define FRESH_B 23456

static int fresh_pipe[2];
static void *volatile fresh_block;
static volatile size_t fresh_size;

NOINLINE static void *fresh_leaf(void) { return alloc_filled(FRESH_A); }
NOINLINE static void *fresh_leaf2(void) { return alloc_filled(FRESH_B); }

static void block_on(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0)
		;
}

NOINLINE static void *fresh_worker(void *arg)
{
	(void)arg;
	fresh_block = fresh_leaf();
	fresh_size = FRESH_A;
	say_num("ready1", now_ns());
	block_on(fresh_pipe[0]);
	free_checked(fresh_block, FRESH_A);
	fresh_block = fresh_leaf2();
	fresh_size = FRESH_B;
	say_num("ready2", now_ns());
	for (;;)
		block_on(fresh_pipe[0]);
	return NULL;
}

static int do_fresh(const char *fifo)
{
	pthread_t th;
	char line[64];

	/* The harness first learns where heaptrace serves; then the event. */
	say("waiting\n");
	wait_line(fifo);
	if (pipe(fresh_pipe) || pthread_create(&th, NULL, fresh_worker, NULL))
		return 2;
	for (;;) {
		read_fifo_line(fifo, line, sizeof(line));
		if (!strcmp(line, "next"))
			(void)!write(fresh_pipe[1], "n", 1);
		else if (!strcmp(line, "quit"))
			break;
	}
	if (fresh_block)
		check(fresh_block, fresh_size);
	return verdict();
}

/* ----------------------------------------------------------------- exit */
#define EXIT_WAVES 8
#define EXIT_THREADS 8
#define EXIT_KEEP 20
#define EXIT_TEMP 30
#define EXIT_RCHAIN 10
#define EXIT_HANDOFF 5

static void *exit_kept[EXIT_WAVES * EXIT_THREADS][EXIT_KEEP + EXIT_RCHAIN];
static void *exit_handed[EXIT_WAVES * EXIT_THREADS][EXIT_HANDOFF];

NOINLINE static void *exit_keep(void) { return alloc_filled(1111); }
NOINLINE static void *exit_temp(void) { return alloc_filled(2222); }
NOINLINE static void *exit_rseed(void) { return alloc_filled(300); }
NOINLINE static void *exit_handoff(void) { return alloc_filled(4321); }

NOINLINE static void *exit_realloc(void *p)
{
	unsigned char *q;

	check(p, 300);
	q = realloc(p, 3000);
	if (!q) {
		atomic_fetch_add(&errors, 1);
		return p;
	}
	fill(q, 3000);
	return q;
}

static void *exit_thread(void *arg)
{
	int t = (int)(uintptr_t)arg;

	for (int i = 0; i < EXIT_TEMP; i++)
		free_checked(exit_temp(), 2222);
	for (int i = 0; i < EXIT_KEEP; i++)
		exit_kept[t][i] = exit_keep();
	for (int i = 0; i < EXIT_RCHAIN; i++) {
		void *p = exit_realloc(exit_rseed());
		if (i % 2)
			free_checked(p, 3000);
		else
			exit_kept[t][EXIT_KEEP + i] = p;
	}
	/* The thread's last calls are mallocs, then it is gone. */
	for (int i = 0; i < EXIT_HANDOFF; i++)
		exit_handed[t][i] = exit_handoff();
	return NULL;
}

static int do_exit(const char *fifo, int wait_first)
{
	pthread_t th[EXIT_THREADS];

	if (wait_first) {
		say("waiting\n");
		wait_line(fifo);
	}
	for (int w = 0; w < EXIT_WAVES; w++) {
		for (int i = 0; i < EXIT_THREADS; i++)
			if (pthread_create(&th[i], NULL, exit_thread, (void *)(uintptr_t)(w * EXIT_THREADS + i)))
				return 2;
		for (int i = 0; i < EXIT_THREADS; i++)
			pthread_join(th[i], NULL);
	}
	say("ready\n");
	wait_line(fifo);
	for (int t = 0; t < EXIT_WAVES * EXIT_THREADS; t++)
		for (int i = 0; i < EXIT_HANDOFF; i++)
			free_checked(exit_handed[t][i], 4321);
	for (int t = 0; t < EXIT_WAVES * EXIT_THREADS; t++) {
		for (int i = 0; i < EXIT_KEEP; i++)
			check(exit_kept[t][i], 1111);
		for (int i = 0; i < EXIT_RCHAIN; i += 2)
			check(exit_kept[t][EXIT_KEEP + i], 3000);
	}
	say("freed\n");
	wait_line(fifo);
	return verdict();
}

/* ----------------------------------------------------------------- fork */
#define FORK_WPAIRS 20000
#define FORK_BURST 1000

static atomic_int fork_wdone;
static void *fork_wkept[10];
static void *fork_burst_blocks[FORK_BURST];
static void *fork_post_blocks[50];
static void *fork_child_blocks[7];

NOINLINE static void *fork_wloop(void) { return alloc_filled(96); }
NOINLINE static void *fork_wkeep(void) { return alloc_filled(555); }
NOINLINE static void *fork_post(void) { return alloc_filled(2500); }
NOINLINE static void *child_own(void) { return alloc_filled(1700); }
NOINLINE static void *child_tmp(void) { return alloc_filled(900); }

NOINLINE static void fork_burst(void)
{
	for (int i = 0; i < FORK_BURST; i++)
		fork_burst_blocks[i] = alloc_filled(64);
}

static void *fork_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < FORK_WPAIRS; i++) {
		free_checked(fork_wloop(), 96);
		atomic_store(&fork_wdone, i + 1);
	}
	for (int i = 0; i < 10; i++)
		fork_wkept[i] = fork_wkeep();
	return NULL;
}

static int do_fork(void)
{
	pthread_t th;
	int st;

	if (pthread_create(&th, NULL, fork_worker, NULL))
		return 2;
	while (atomic_load(&fork_wdone) < 1000)
		;
	fork_burst();
	pid_t c = fork();
	if (c < 0)
		return 2;
	if (c == 0) {
		for (int i = 0; i < 7; i++)
			fork_child_blocks[i] = child_own();
		for (int i = 0; i < 3; i++)
			free_checked(child_tmp(), 900);
		for (int i = 0; i < 100; i++)
			free_checked(fork_burst_blocks[i], 64);
		for (int i = 0; i < 7; i++)
			check(fork_child_blocks[i], 1700);
		_exit(atomic_load(&errors) ? 3 : 0);
	}
	for (int i = 0; i < 50; i++)
		fork_post_blocks[i] = fork_post();
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		atomic_fetch_add(&errors, 1);
	for (int i = 0; i < 200; i++)
		free_checked(fork_burst_blocks[i], 64);
	pthread_join(th, NULL);
	for (int i = 200; i < FORK_BURST; i++)
		check(fork_burst_blocks[i], 64);
	for (int i = 0; i < 50; i++)
		check(fork_post_blocks[i], 2500);
	for (int i = 0; i < 10; i++)
		check(fork_wkept[i], 555);
	say_num("wpairs", (unsigned long long)atomic_load(&fork_wdone));
	return verdict();
}

/* -------------------------------------------------------------- signals */
#define SIG_RING 8

static volatile sig_atomic_t n_alarm, n_usr1, n_inside, in_alloc;
static unsigned char *sig_ring[SIG_RING];
static atomic_int sig_stop;
static pthread_t sig_main;

static void on_alarm(int sig)
{
	(void)sig;
	unsigned char *p = malloc(48);
	if (p) {
		fill(p, 48);
		check(p, 48);
		free(p);
		n_alarm++;
		n_inside += in_alloc;
	} else {
		atomic_fetch_add(&errors, 1);
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	int i = n_usr1 % SIG_RING;
	/* Free first: the 80-byte tcache bin then has the chunk the malloc takes, lock-free. */
	free_checked(sig_ring[i], 80);
	sig_ring[i] = malloc(80);
	if (sig_ring[i])
		fill(sig_ring[i], 80);
	else
		atomic_fetch_add(&errors, 1);
	n_usr1++;
	n_inside += in_alloc;
}

NOINLINE static void sig_prime(void)
{
	for (int i = 0; i < SIG_RING; i++)
		sig_ring[i] = alloc_filled(80);
	free(malloc(48));
}

NOINLINE static long sig_loop(long n)
{
	long i;

	for (i = 0; (i < n || n_alarm < 200 || n_usr1 < 200) && i < 100 * n; i++) {
		size_t sz = 100 + (size_t)(i % 1024);
		/* The handlers count the runs that came while this thread was in (or about to enter) malloc. */
		in_alloc = 1;
		unsigned char *p = malloc(sz);
		in_alloc = 0;
		if (!p) {
			atomic_fetch_add(&errors, 1);
			continue;
		}
		fill(p, sz);
		free_checked(p, sz);
	}
	return i;
}

static long sig_f = 1;  /* the signals' period factor */

static void *sig_kicker(void *arg)
{
	(void)arg;
	while (!atomic_load(&sig_stop)) {
		pthread_kill(sig_main, SIGUSR1);
		usleep((useconds_t)(300 * sig_f));
	}
	return NULL;
}

static int do_signals(long n)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 200 * sig_f }, { 0, 200 * sig_f } };
	sigset_t both;
	pthread_t th;

	sigemptyset(&both);
	sigaddset(&both, SIGALRM);
	sigaddset(&both, SIGUSR1);
	sig_main = pthread_self();
	sig_prime();
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	/* The kicker thread takes neither signal: both land on the main thread. */
	pthread_sigmask(SIG_BLOCK, &both, NULL);
	if (pthread_create(&th, NULL, sig_kicker, NULL))
		return 2;
	pthread_sigmask(SIG_UNBLOCK, &both, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	long rounds = sig_loop(n);
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
	atomic_store(&sig_stop, 1);
	pthread_join(th, NULL);
	/* A signal still pending lands here; then none comes. */
	pthread_sigmask(SIG_BLOCK, &both, NULL);
	for (int i = 0; i < SIG_RING; i++)
		free_checked(sig_ring[i], 80);
	say_num("main", (unsigned long long)rounds);
	say_num("alarm", (unsigned long long)n_alarm);
	say_num("usr1", (unsigned long long)n_usr1);
	say_num("inside", (unsigned long long)n_inside);
	return verdict();
}

/* ---------------------------------------------------------------- burst */
#define BURST_THREADS 4
#define BURST_N 12000
#define BURST_KEEP 1000

static pthread_barrier_t burst_go;
static void *burst_blocks[BURST_THREADS][BURST_N];

NOINLINE static void burst_alloc(int t)
{
	for (int i = 0; i < BURST_N; i++)
		burst_blocks[t][i] = malloc(32 + 16 * (size_t)t);
}

NOINLINE static void burst_free(int t)
{
	for (int i = 0; i < BURST_N - BURST_KEEP; i++)
		free(burst_blocks[t][i]);
}

static void *burst_thread(void *arg)
{
	int t = (int)(uintptr_t)arg;

	pthread_barrier_wait(&burst_go);
	burst_alloc(t);
	for (int i = 0; i < BURST_N; i++)
		if (!burst_blocks[t][i])
			atomic_fetch_add(&errors, 1);
		else
			fill(burst_blocks[t][i], 32 + 16 * (size_t)t);
	for (int i = 0; i < BURST_N; i++)
		check(burst_blocks[t][i], 32 + 16 * (size_t)t);
	burst_free(t);
	return NULL;
}

static int do_burst(void)
{
	pthread_t th[BURST_THREADS];

	pthread_barrier_init(&burst_go, NULL, BURST_THREADS);
	for (int t = 0; t < BURST_THREADS; t++)
		if (pthread_create(&th[t], NULL, burst_thread, (void *)(uintptr_t)t))
			return 2;
	for (int t = 0; t < BURST_THREADS; t++)
		pthread_join(th[t], NULL);
	return verdict();
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "fresh"))
		return do_fresh(argv[2]);
	if ((argc == 3 || (argc == 4 && !strcmp(argv[3], "wait"))) && !strcmp(argv[1], "exit"))
		return do_exit(argv[2], argc == 4);
	if (argc == 2 && !strcmp(argv[1], "fork"))
		return do_fork();
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "signals")) {
		if (argc == 4 && atol(argv[3]) > 0)
			sig_f = atol(argv[3]);
		return do_signals(atol(argv[2]));
	}
	if (argc == 2 && !strcmp(argv[1], "burst"))
		return do_burst();
	say("usage: t_batch fresh FIFO | exit FIFO [wait] | fork | signals N [F] | burst\n");
	return 2;
}
