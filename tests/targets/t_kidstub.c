/*
 * The fast path in --follow-fork children, seen from inside (scenario
 * kidstub).  A process can read its own code: a function the stub serves
 * starts with a jump into the "/memfd:heaptrace-stub" mapping, whose data
 * (STUB_DATA_OFF after it) starts with the word that turns it on; a
 * uprobe shows as an int3 among its first bytes; an untouched function
 * has its file's bytes.
 *
 *   t_kidstub run K N
 *       The parent forks K workers; the K + 1 processes start together (a
 *       pipe barrier) and run at the same time.  Each says how its malloc
 *       and free look ("parent malloc=stub-on free=stub-on", "worker 2 ..."),
 *       then work(): N blocks of 64 bytes, each malloc'd, filled and
 *       checked, every tenth kept (N / 10), the others freed.  Exits 0 when
 *       every worker did and no block was found damaged.
 *   t_kidstub linger K N FIFO [hold]
 *       The same, but the workers outlive the parent: each then waits for a
 *       line on FIFO.I (I = 0 .. K-1), says again how malloc and free look
 *       ("worker I after malloc=file free=file"), works once more and says
 *       "worker I errors E".  The parent exits once its own work and every
 *       worker's first is done; with "hold", only after a line on FIFO.p.
 * No stdio (its buffers would allocate).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
/* stub/stub.h's, given by the Makefile: the data mapping follows the stub's file. */
#ifndef STUB_DATA_OFF
#error "STUB_DATA_OFF: build with the Makefile, which takes it from stub/stub.h"
#endif

static char maps[1 << 16];
static long errors;
void *volatile kept[100000];

/* The mapping holding addr in /proc/self/maps: its start, file offset and path (into path). */
static int mapping_of(uintptr_t addr, uintptr_t *lo, uint64_t *off, char *path, size_t len)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t n = 0, r;

	if (fd < 0)
		return -1;
	while (n < (ssize_t)sizeof(maps) - 1 && (r = read(fd, maps + n, sizeof(maps) - 1 - n)) > 0)
		n += r;
	close(fd);
	maps[n] = '\0';
	for (char *line = maps; *line;) {
		char *nl = strchr(line, '\n'), *e;
		if (nl)
			*nl = '\0';
		uintptr_t a = strtoul(line, &e, 16), b = strtoul(e + 1, &e, 16);
		uint64_t o = strtoull(e + 6, &e, 16);   /* " rwxp " */
		if (addr >= a && addr < b) {
			char *p = strchr(e, '/');
			*lo = a;
			*off = o;
			snprintf(path, len, "%s", p ? p : "");
			return 0;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return -1;
}

static const char *state(const void *fn)
{
	const unsigned char *p = fn;
	char path[512];
	unsigned char file[16];
	uintptr_t lo;
	uint64_t off;

	if (p[0] == 0xcc)
		return "int3";
	/* The jump: at the entry, or after a first instruction of at most 4 bytes that the stub undoes. */
	for (int k = 0; k <= 4; k++) {
		if (p[k] != 0xe9)
			continue;
		int32_t rel;
		memcpy(&rel, p + k + 1, 4);
		uintptr_t to = (uintptr_t)p + k + 5 + rel;
		if (mapping_of(to, &lo, &off, path, sizeof(path)) || !strstr(path, "heaptrace-stub")) {
			if (!k)
				return "jump";
			continue;
		}
		return *(volatile uint32_t *)(lo + STUB_DATA_OFF) ? "stub-on" : "stub-off";
	}
	if (mapping_of((uintptr_t)p, &lo, &off, path, sizeof(path)))
		return "unmapped";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, file, sizeof(file), (off_t)(off + ((uintptr_t)p - lo))) : -1;
	if (fd >= 0)
		close(fd);
	if (n != sizeof(file))
		return "unreadable";
	/* A uprobe placed past the entry (heaptrace picks a cheap site): an int3 where the file differs. */
	for (size_t i = 0; i < sizeof(file); i++)
		if (file[i] != p[i])
			return p[i] == 0xcc ? "int3" : "other";
	return "file";
}

static void look(const char *who)
{
	void *(*volatile m)(size_t) = malloc;
	void (*volatile f)(void *) = free;
	char line[256];

	snprintf(line, sizeof(line), "%s malloc=%s free=%s\n", who, state((void *)m), state((void *)f));
	say(line);
}

NOINLINE void work(long n)
{
	long k = 0;

	for (long i = 0; i < n; i++) {
		unsigned char *b = malloc(64);
		if (!b) {
			errors++;
			continue;
		}
		memset(b, (int)(i & 0xff), 64);
		for (int j = 0; j < 64; j++)
			errors += b[j] != (unsigned char)(i & 0xff);
		if (i % 10 == 9 && k < (long)(sizeof(kept) / sizeof(kept[0])))
			kept[k++] = b;
		else
			free(b);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "run") && strcmp(argv[1], "linger")) ||
	    (!strcmp(argv[1], "linger") && argc < 5))
		return 2;
	int k = atoi(argv[2]), fds[2], done[2];
	long n = atol(argv[3]);
	bool linger = !strcmp(argv[1], "linger");
	char who[64], fifo[4200], line[64];
	pid_t kids[64];

	if (k < 1 || k > 64 || pipe(fds) || pipe(done))
		return 2;
	for (int i = 0; i < k; i++) {
		if ((kids[i] = fork()) < 0)
			return 2;
		if (!kids[i]) {
			char go;
			close(fds[1]);
			if (read(fds[0], &go, 1) != 1)
				_exit(4);
			snprintf(who, sizeof(who), "worker %d", i);
			look(who);
			work(n);
			if (linger) {
				if (write(done[1], "d", 1) != 1)
					_exit(4);
				snprintf(fifo, sizeof(fifo), "%s.%d", argv[4], i);
				read_fifo_line(fifo, NULL, 0);
				snprintf(who, sizeof(who), "worker %d after", i);
				look(who);
				work(n);
				snprintf(line, sizeof(line), "worker %d errors %ld\n", i, errors);
				say(line);
			}
			_exit(errors ? 3 : 0);
		}
	}
	/* All at once: every worker and the parent allocate at the same time. */
	for (int i = 0; i < k; i++)
		if (write(fds[1], "g", 1) != 1)
			return 2;
	look("parent");
	work(n);
	if (linger) {
		char d;
		for (int i = 0; i < k; i++)
			if (read(done[0], &d, 1) != 1)
				return 2;
		say("workers done\n");
		if (argc > 5 && !strcmp(argv[5], "hold")) {
			snprintf(fifo, sizeof(fifo), "%s.p", argv[4]);
			read_fifo_line(fifo, NULL, 0);
		}
		return errors ? 3 : 0;
	}
	int bad = 0;
	for (int i = 0; i < k; i++) {
		int st;
		bad |= waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad || errors ? 3 : 0;
}
