/*
 * Exact mode's batching (scenario ringstub): known allocations, each kind
 * of a size of its own so that a reader of the ring (t_ringdrain) can
 * count them exactly, and every block checked.
 *
 *   t_ring FIFO [twice]   says "ready PID", waits for a line on FIFO
 *                 (twice: runs the first phase, says "half", waits again), then:
 *   1001 x 1000   malloc, one call site (one stack, sent once)
 *   1011 x 300    calloc(3, 337)
 *   1021 -> 100021 -> 0   realloc moving a block, then realloc(p, 0)
 *   1031 x 500    malloc'd here, freed by another thread
 *   1009 x 20000  malloc + free while SIGALRM fires every 100 us;
 *   1019          the handler's malloc + free (it says how many; both
 *                 sizes are served by glibc's tcache, which takes no lock)
 *   1061 x 200    a forked child's (it must write nothing to the ring)
 * then it reads its ring's header (found in /proc/self/maps) and says
 * "handler H child PID gave_up G lost L full_waits W errors E".
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"
#include "../../bpf/heaptrace.h"

#define NOINLINE __attribute__((noinline))

static volatile int errors;
static volatile int handled;
static void *volatile sink;

static void fill(unsigned char *p, size_t n, unsigned char v)
{
	memset(p, v, n);
}

static void check(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v) {
			errors++;
			return;
		}
}

NOINLINE static void *one_site(void)
{
	return malloc(1001);
}

NOINLINE static void phase_one_site(void)
{
	static void *b[1000];

	for (int i = 0; i < 1000; i++) {
		if (!(b[i] = one_site()))
			errors++;
		else
			fill(b[i], 1001, (unsigned char)i);
	}
	for (int i = 0; i < 1000; i++) {
		check(b[i], 1001, (unsigned char)i);
		free(b[i]);
	}
}

NOINLINE static void phase_calloc(void)
{
	for (int i = 0; i < 300; i++) {
		unsigned char *p = calloc(3, 337);
		if (!p) {
			errors++;
			continue;
		}
		check(p, 1011, 0);
		free(p);
	}
}

NOINLINE static void phase_realloc(void)
{
	unsigned char *p = malloc(1021), *q;

	if (!p) {
		errors++;
		return;
	}
	fill(p, 1021, 0x5a);
	/* A block too big to grow in place: it moves. */
	sink = malloc(64);
	q = realloc(p, 100021);
	if (!q) {
		errors++;
		return;
	}
	check(q, 1021, 0x5a);
	/* glibc frees it and gives NULL. */
	q = realloc(q, 0);
	if (q)
		free(q);
	free(sink);
}

static void *free_them(void *arg)
{
	void **b = arg;

	for (int i = 0; i < 500; i++) {
		check(b[i], 1031, 0x31);
		free(b[i]);
	}
	return NULL;
}

NOINLINE static void phase_other_thread(void)
{
	static void *b[500];
	pthread_t t;

	for (int i = 0; i < 500; i++) {
		if (!(b[i] = malloc(1031))) {
			errors++;
			return;
		}
		fill(b[i], 1031, 0x31);
	}
	if (pthread_create(&t, NULL, free_them, b) || pthread_join(t, NULL))
		errors++;
}

NOINLINE static void on_alarm(int sig)
{
	(void)sig;
	unsigned char *p = malloc(1019);
	if (p) {
		fill(p, 1019, 0x51);
		check(p, 1019, 0x51);
		free(p);
		handled++;
	}
}

NOINLINE static void phase_signals(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };

	/* The handler's size in this thread's tcache before the first signal. */
	free(malloc(1019));
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 20000; i++) {
		unsigned char *p = malloc(1009);
		if (!p) {
			errors++;
			continue;
		}
		fill(p, 1009, (unsigned char)i);
		check(p, 1009, (unsigned char)i);
		free(p);
	}
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
}

NOINLINE static pid_t phase_fork(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int bad = 0;
		for (int i = 0; i < 200; i++) {
			unsigned char *p = malloc(1061);
			if (!p) {
				bad++;
				continue;
			}
			fill(p, 1061, 0x61);
			check(p, 1061, 0x61);
			free(p);
		}
		_exit(bad || errors ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		errors++;
	return pid;
}

/* The ring's header, read from our own mapping of it (the stub's memfd). */
static void ring_header(struct ht_ring *out)
{
	static char maps[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY);
	ssize_t n = 0, r;

	memset(out, 0, sizeof(*out));
	while (fd >= 0 && n < (ssize_t)sizeof(maps) - 1 && (r = read(fd, maps + n, sizeof(maps) - 1 - n)) > 0)
		n += r;
	if (fd >= 0)
		close(fd);
	maps[n] = '\0';
	for (char *line = maps; line && *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = '\0';
		if (strstr(line, "memfd:heaptrace-ring")) {
			/* The last one: an earlier session's may still be mapped before it. */
			memcpy(out, (void *)(uintptr_t)strtoull(line, NULL, 16), sizeof(*out));
		}
		line = end ? end + 1 : NULL;
	}
}

int main(int argc, char **argv)
{
	char line[128];
	struct ht_ring h;

	if (argc < 2)
		return 2;
	snprintf(line, sizeof(line), "ready %d\n", getpid());
	say(line);
	wait_line(argv[1]);
	/* "twice": the 1000 mallocs of one site once more, after a line: a new session's ring must get their stack again. */
	if (argc > 2 && !strcmp(argv[2], "twice")) {
		phase_one_site();
		say("half\n");
		wait_line(argv[1]);
	}
	phase_one_site();
	phase_calloc();
	phase_realloc();
	phase_other_thread();
	phase_signals();
	pid_t kid = phase_fork();
	ring_header(&h);
	snprintf(line, sizeof(line), "handler %d child %d gave_up %llu lost %llu full_waits %llu errors %d\n", handled,
		 kid, (unsigned long long)h.gave_up, (unsigned long long)h.lost, (unsigned long long)h.full_waits, errors);
	say(line);
	return errors ? 1 : 0;
}
