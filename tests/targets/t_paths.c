/*
 * The differential test's target (area paths): one known mix of heap
 * events, the same whichever way it is started, so that every recording
 * path and every way of starting must report the same profile.
 * Usage: t_paths run | wait FIFO | fork | exec
 *   run:  the work below, then its report
 *   wait: says "ready", waits for a line on FIFO (heaptrace -p attaches
 *         meanwhile), then the same
 *   fork: a child does the same (the parent allocates nothing and exits
 *         with the child's status)
 *   exec: a child executes this program with "run" (/proc/self/exe)
 * Every way calls work() from the same line of main, so the stacks are the
 * same in all of them.
 *
 * The work, in this order (tests/scenarios/paths.sh holds the numbers):
 *   leak_a:      3 x malloc(1000), kept                    (leak age anchor A)
 *   temp_fn:     40 x malloc(64), each freed at once       temporary 40
 *   grow_seed:   malloc(100), then
 *   grow_fn:     realloc(p, 20000)                         a realloc of a block
 *   shrink_fn:   realloc(p, 50), kept                      another, in place
 *   held_fn:     8 x malloc(4096), each freed after 5 ms   lifetimes ~5 ms
 *   leak_b:      2 x calloc(5, 100), kept, 30 ms later
 *   keep_c:      malloc(2000), kept                        (anchor C)
 *   peak_fn:     malloc(2 MiB) right after keep_c, freed 20 ms later: the
 *                peak of in-use bytes is reached at its allocation
 * In use at the end: 3000 + 50 + 1000 + 2000 = 6050 bytes in 7 blocks.
 *
 * Then the report, one line each (no stdio, so nothing else allocates):
 *   "life temp|held|seed|grow|peak LO HI" for each freed block (temp_fn's,
 *       held_fn's, grow_seed's, grow_fn's, peak_fn's): the log2
 *       microsecond buckets (heaptrace's lifetimes: bpf/account.bpf.h's
 *       life_bucket) of the shortest and the longest time the block can
 *       have lived: from malloc's return to free's call, and from malloc's
 *       call to free's return (every path times a block within those,
 *       whatever its traps cost)
 *   "moved grow 0|1": whether grow_fn's realloc moved the block
 *   "gap A C LO HI": the nanoseconds from leak_a's last malloc to keep_c's
 *       malloc (how much older A's last block is than C's), at least (from
 *       the first's return to the second's call) and at most (from call to
 *       return: a recording's trap, the target preempted in it)
 *   "gap C peak LO HI": the same from keep_c's malloc to peak_fn's
 * Its blocks: freed ones in sink (volatile), kept ones in a, b, c, grown.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

#define N_TEMP 40
#define N_HELD 8

void *volatile a[3], *volatile b[2], *volatile c, *volatile grown, *volatile sink;

static uint64_t t_temp[N_TEMP][4], t_held[N_HELD][4], t_seed[4], t_grow[4], t_big[4], t_a[2], t_c[2];
static int moved;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

/* t[0] malloc called, t[1] malloc returned, t[2] free called, t[3] free returned. */
NOINLINE void leak_a(void)
{
	for (int i = 0; i < 3; i++) {
		t_a[0] = now_ns();
		a[i] = malloc(1000);
		t_a[1] = now_ns();
	}
}

NOINLINE void temp_fn(int i)
{
	t_temp[i][0] = now_ns();
	sink = malloc(64);
	t_temp[i][1] = now_ns();
	t_temp[i][2] = now_ns();
	free(sink);
	t_temp[i][3] = now_ns();
}

NOINLINE void *grow_seed(void) { return malloc(100); }
NOINLINE void *grow_fn(void *p) { return realloc(p, 20000); }
NOINLINE void *shrink_fn(void *p) { return realloc(p, 50); }

NOINLINE void held_fn(int i)
{
	t_held[i][0] = now_ns();
	sink = malloc(4096);
	t_held[i][1] = now_ns();
	nap_ms(5);
	t_held[i][2] = now_ns();
	free(sink);
	t_held[i][3] = now_ns();
}

NOINLINE void leak_b(void)
{
	for (int i = 0; i < 2; i++)
		b[i] = calloc(5, 100);
}

NOINLINE void keep_c(void)
{
	t_c[0] = now_ns();
	c = malloc(2000);
	t_c[1] = now_ns();
}

NOINLINE void peak_fn(void)
{
	t_big[0] = now_ns();
	sink = malloc(2u << 20);
	t_big[1] = now_ns();
	nap_ms(20);
	t_big[2] = now_ns();
	free(sink);
	t_big[3] = now_ns();
}

NOINLINE void work(void)
{
	leak_a();
	for (int i = 0; i < N_TEMP; i++)
		temp_fn(i);
	t_seed[0] = now_ns();
	void *p = grow_seed();
	t_seed[1] = now_ns();
	t_seed[2] = t_grow[0] = now_ns();
	void *q = grow_fn(p);
	t_seed[3] = t_grow[1] = now_ns();
	moved = q != p;
	t_grow[2] = now_ns();
	grown = shrink_fn(q);
	t_grow[3] = now_ns();
	for (int i = 0; i < N_HELD; i++)
		held_fn(i);
	nap_ms(30);
	leak_b();
	keep_c();
	peak_fn();
}

/* n in decimal. */
static void say_u(uint64_t n)
{
	char buf[24];
	int k = sizeof(buf);

	buf[--k] = '\0';
	do
		buf[--k] = (char)('0' + n % 10);
	while ((n /= 10) && k > 0);
	say(buf + k);
}

/* "WORD N\n". */
static void say_num(const char *word, uint64_t n)
{
	say(word);
	say(" ");
	say_u(n);
	say("\n");
}

/* bpf/account.bpf.h's life_bucket(): log2 of the microseconds, 0 below 2 us. */
static unsigned bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned k = 0;

	while (us >>= 1)
		k++;
	return k < 31 ? k : 31;
}

static void say_life(const char *what, const uint64_t t[4])
{
	say("life ");
	say(what);
	say(" ");
	say_u(bucket(t[2] - t[1]));
	say(" ");
	say_u(bucket(t[3] - t[0]));
	say("\n");
}

/* "gap WHAT LO HI": the nanoseconds between two calls, at least and at most (x: before, after the first). */
static void say_gap(const char *what, const uint64_t x[2], const uint64_t y[2])
{
	say("gap ");
	say(what);
	say(" ");
	say_u(y[0] - x[1]);
	say(" ");
	say_u(y[1] - x[0]);
	say("\n");
}

static void report(void)
{
	for (int i = 0; i < N_TEMP; i++)
		say_life("temp", t_temp[i]);
	for (int i = 0; i < N_HELD; i++)
		say_life("held", t_held[i]);
	say_life("seed", t_seed);
	say_life("grow", t_grow);
	say_life("peak", t_big);
	say_num("moved grow", (uint64_t)moved);
	say_gap("A C", t_a, t_c);
	say_gap("C peak", t_c, t_big);
}

int main(int argc, char **argv)
{
	int st;

	if (argc > 2 && !strcmp(argv[1], "wait")) {
		say("ready\n");
		wait_line(argv[2]);
	} else if (argc > 1 && (!strcmp(argv[1], "fork") || !strcmp(argv[1], "exec"))) {
		pid_t k = fork();
		if (k < 0)
			return 1;
		if (k == 0 && !strcmp(argv[1], "exec")) {
			char *args[] = { argv[0], "run", NULL };
			execv("/proc/self/exe", args);
			_exit(127);
		}
		if (k > 0)
			return waitpid(k, &st, 0) == k && WIFEXITED(st) ? WEXITSTATUS(st) : 3;
	} else if (argc != 2 || strcmp(argv[1], "run")) {
		return 2;
	}
	work();
	report();
	return 0;
}
