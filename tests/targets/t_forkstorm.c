/*
 * A multithreaded pre-fork process that forks while its threads allocate
 * (scenario forkstorm: the fast path under --follow-fork, attach/detach,
 * SIGKILLs of heaptrace at every phase, foreign uprobes).
 *
 *   t_forkstorm SECONDS THREADS [KIDS_PER_SECOND]
 *       THREADS threads call calloc, malloc, realloc and free without
 *       pause, each on its own blocks: a block is filled with a pattern of
 *       its own when it is made and checked whole before it is realloc'd
 *       (its old bytes) and before it is freed; calloc's zeroes are checked
 *       first.  Meanwhile the main thread forks children, in turn:
 *         0  a child that allocates and checks for a few ms, then _exit()s
 *         1  a child that execs this program ("child": allocates, checks)
 *         2  a child that execs /bin/true
 *         3  posix_spawn() of this program (a vfork-like clone: it shares
 *            the parent's memory until its exec)
 *         4  a child that forks a grandchild of kind 0 and waits for it
 *       and waits for each (a child killed by a signal or exiting non-zero
 *       is bad).  SECONDS later (or at SIGTERM): "forkstorm children C bad B errors E"
 *       ("bad" lists the first statuses), every block freed; exit 0 only
 *       if B and E are 0.  It prints "ready" once its threads run.
 * No stdio: its buffers would allocate.
 */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sync.h"

#define SLOTS 256

extern char **environ;

struct block {
	unsigned char *p;
	size_t n;
	unsigned char seed;
};

static atomic_long errors;
static atomic_int stop;
static volatile sig_atomic_t ending;

static void on_term(int sig)
{
	(void)sig;
	ending = 1;
}
static char self[4096];

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(struct block *b)
{
	for (size_t i = 0; i < b->n; i++)
		b->p[i] = (unsigned char)(b->seed + i * 7);
}

/* Bytes [0, n) of b as fill() left them? */
static void check(const struct block *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b->p[i] != (unsigned char)(b->seed + i * 7)) {
			atomic_fetch_add(&errors, 1);
			return;
		}
}

/* One step on a random slot: make, remake or free its block. */
static void step(struct block *slots, uint64_t *rng)
{
	uint64_t r = xorshift(rng);
	struct block *b = &slots[r % SLOTS];
	size_t n = 1 + (r >> 8) % 700;

	if (!b->p) {
		if ((r >> 20) & 1) {
			b->p = calloc(1, n);
			for (size_t i = 0; b->p && i < n; i++)
				if (b->p[i]) {
					atomic_fetch_add(&errors, 1);
					break;
				}
		} else {
			b->p = malloc(n);
		}
		if (!b->p) {
			atomic_fetch_add(&errors, 1);
			return;
		}
		b->n = n;
		b->seed = (unsigned char)(r >> 32);
		fill(b);
	} else if ((r >> 21) & 1) {
		check(b, b->n);
		unsigned char *q = realloc(b->p, n);
		if (!q) {
			atomic_fetch_add(&errors, 1);
			return;
		}
		b->p = q;
		check(b, n < b->n ? n : b->n);
		b->n = n;
		fill(b);
	} else {
		check(b, b->n);
		free(b->p);
		b->p = NULL;
	}
}

static void release(struct block *slots)
{
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].p) {
			check(&slots[i], slots[i].n);
			free(slots[i].p);
			slots[i].p = NULL;
		}
}

static void *worker(void *arg)
{
	uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uintptr_t)arg;
	struct block *slots = calloc(SLOTS, sizeof(*slots));

	if (!slots) {
		atomic_fetch_add(&errors, 1);
		return NULL;
	}
	while (!atomic_load(&stop))
		step(slots, &rng);
	release(slots);
	free(slots);
	return NULL;
}

/* A child's work: n steps on blocks of its own, then its verdict as its status. */
static int child_work(long n, uint64_t seed)
{
	static struct block slots[SLOTS];
	uint64_t rng = seed | 1;

	for (long i = 0; i < n; i++)
		step(slots, &rng);
	release(slots);
	return atomic_load(&errors) ? 3 : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One child of kind k; its pid, or -1. */
static pid_t spawn_kid(int k, long i)
{
	char *argv_child[] = { self, "child", NULL }, *argv_true[] = { "/bin/true", NULL };
	pid_t pid;

	if (k == 3)
		return posix_spawn(&pid, self, NULL, NULL, argv_child, environ) ? -1 : pid;
	pid = fork();
	if (pid)
		return pid;
	switch (k) {
	case 0:
		_exit(child_work(2000, (uint64_t)i * 2654435761u));
	case 1:
		execv(self, argv_child);
		_exit(5);
	case 2:
		execv("/bin/true", argv_true);
		_exit(5);
	default: {
		pid_t g = fork();
		int st;
		if (!g)
			_exit(child_work(1000, (uint64_t)i * 40503u));
		if (g < 0 || waitpid(g, &st, 0) != g)
			_exit(6);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "child"))
		return child_work(3000, (uint64_t)getpid());
	if (argc < 3)
		return 2;
	double secs = atof(argv[1]), rate = argc > 3 ? atof(argv[3]) : 50;
	int threads = atoi(argv[2]), bad = 0;
	long kids = 0;
	char line[512], statuses[256] = "";
	pthread_t th[16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0 || threads < 1 || threads > 16 || rate <= 0)
		return 2;
	self[n] = '\0';
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
			return 2;
	signal(SIGTERM, on_term);
	say("ready\n");
	double end = now() + secs;
	while (now() < end && !ending) {
		pid_t pid = spawn_kid((int)(kids % 5), kids);
		int st;

		if (pid < 0) {
			bad++;
		} else {
			while (waitpid(pid, &st, 0) < 0)
				;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				size_t len = strlen(statuses);
				if (bad++ < 8)
					snprintf(statuses + len, sizeof(statuses) - len, " kind%ld:%s%d", kids % 5,
						 WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			}
		}
		kids++;
		usleep((useconds_t)(1e6 / rate));
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	snprintf(line, sizeof(line), "forkstorm children %ld bad %d errors %ld%s\n", kids, bad, atomic_load(&errors),
		 statuses);
	say(line);
	return bad || atomic_load(&errors) ? 3 : 0;
}
