/*
 * Targets for scenario_faults (tests/run.sh holds the expected numbers).
 * No stdio anywhere: every heap block of the process is one of these.
 *
 *   t_faults hold FIFO [ignterm]
 *       hold_keep:  4 x malloc(1000), kept
 *       hold_temp:  1 x malloc(500), freed (hold_release)
 *       prints "ready", blocks until a line is written to FIFO; with
 *       "ignterm", SIGTERM is ignored first.  Then
 *       hold_after: 3 x malloc(300), kept; prints "bye", exits 7.
 *
 *   t_faults fork
 *       parent_before: 5 x malloc(111), kept
 *       fork(); the child: child_alloc 7 x malloc(222) kept, child_free
 *       frees 2 of parent_before's blocks (its copies), exit(0)
 *       the parent waits for the child (exit status 0 or it exits 9), then
 *       parent_after: 3 x malloc(333), kept; exit 0.
 *
 *   t_faults exec PROGRAM [ARG...]
 *       exec_before: 2 x malloc(1234), kept; then execv(PROGRAM, ARG...)
 *
 *   t_faults dlopen [LIB...]
 *       dl_before: malloc(100), kept
 *       for each LIB (e.g. libjemalloc.so.2): dlopen, its malloc(12345)
 *       and free through dlsym (dl_other_malloc), dlclose
 *       (libjemalloc.so.2 uses initial-exec TLS: a late dlopen needs
 *       GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536)
 *       dl_after: 2 x malloc(200), kept; exit 0
 *
 *   t_faults threads
 *       200 threads, 8 alive at a time (created, then all joined), each:
 *       th_keep: 3 x malloc(100), kept (freed by nobody)
 *       th_temp: 2 x malloc(50), freed before the thread exits
 *       i.e. th_keep 600 objects / 60000 bytes in use, th_temp 400 / 20000
 *       allocated, 0 in use.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))


/* ---- hold ---- */
void *volatile hold_blocks[8];
void *volatile hold_tmp;

NOINLINE void hold_keep(void)
{
	for (int i = 0; i < 4; i++)
		hold_blocks[i] = malloc(1000);
}

NOINLINE void hold_temp(void)
{
	hold_tmp = malloc(500);
}

NOINLINE void hold_release(void)
{
	free(hold_tmp);
}

NOINLINE void hold_after(void)
{
	for (int i = 0; i < 3; i++)
		hold_blocks[4 + i] = malloc(300);
}

static int do_hold(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	if (argc > 3 && strcmp(argv[3], "ignterm") == 0)
		signal(SIGTERM, SIG_IGN);
	hold_keep();
	hold_temp();
	hold_release();
	say("ready\n");
	wait_line(argv[2]);
	hold_after();
	say("bye\n");
	return 7;
}

/* ---- fork ---- */
void *volatile parent_blocks[5];
void *volatile child_blocks[7];
void *volatile after_blocks[3];

NOINLINE void parent_before(void)
{
	for (int i = 0; i < 5; i++)
		parent_blocks[i] = malloc(111);
}

NOINLINE void child_alloc(void)
{
	for (int i = 0; i < 7; i++)
		child_blocks[i] = malloc(222);
}

NOINLINE void child_free(void)
{
	free(parent_blocks[0]);
	free(parent_blocks[1]);
}

NOINLINE void parent_after(void)
{
	for (int i = 0; i < 3; i++)
		after_blocks[i] = malloc(333);
}

static int do_fork(void)
{
	int st;
	pid_t pid;

	parent_before();
	pid = fork();
	if (pid < 0)
		return 8;
	if (pid == 0) {
		child_alloc();
		child_free();
		exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 9;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 9;
	parent_after();
	return 0;
}

/* ---- exec ---- */
void *volatile exec_blocks[2];

NOINLINE void exec_before(void)
{
	for (int i = 0; i < 2; i++)
		exec_blocks[i] = malloc(1234);
}

static int do_exec(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	exec_before();
	execv(argv[2], argv + 2);
	return 127;
}

/* ---- dlopen ---- */
void *volatile dl_blocks[3];

NOINLINE void dl_before(void)
{
	dl_blocks[0] = malloc(100);
}

NOINLINE int dl_other_malloc(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	void *(*jm)(size_t);
	void (*jf)(void *);
	void *volatile p;

	if (!h) {
		say(dlerror());
		say("\n");
		return -1;
	}
	jm = (void *(*)(size_t))dlsym(h, "malloc");
	jf = (void (*)(void *))dlsym(h, "free");
	if (!jm || !jf)
		return -1;
	p = jm(12345);
	if (!p)
		return -1;
	memset(p, 1, 12345);
	jf(p);
	return dlclose(h) ? -1 : 0;
}

NOINLINE void dl_after(void)
{
	for (int i = 0; i < 2; i++)
		dl_blocks[1 + i] = malloc(200);
}

static int do_dlopen(int argc, char **argv)
{
	dl_before();
	for (int i = 2; i < argc; i++)
		if (dl_other_malloc(argv[i]))
			return 3;
	dl_after();
	say("dlopen: ok\n");
	return 0;
}

/* ---- threads ---- */
#define THREADS 200
#define BATCH 8
void *volatile th_blocks[THREADS][3];

NOINLINE void th_keep(int t)
{
	for (int i = 0; i < 3; i++)
		th_blocks[t][i] = malloc(100);
}

NOINLINE void th_temp(void)
{
	for (int i = 0; i < 2; i++) {
		void *volatile p = malloc(50);
		free(p);
	}
}

static void *th_main(void *arg)
{
	int t = (int)(long)arg;

	th_temp();
	th_keep(t);
	return NULL;
}

static int do_threads(void)
{
	pthread_t th[BATCH];

	for (int t = 0; t < THREADS; t += BATCH) {
		for (int i = 0; i < BATCH; i++)
			if (pthread_create(&th[i], NULL, th_main, (void *)(long)(t + i)) != 0)
				return 4;
		for (int i = 0; i < BATCH; i++)
			pthread_join(th[i], NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "hold") == 0)
		return do_hold(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "fork") == 0)
		return do_fork();
	if (argc >= 2 && strcmp(argv[1], "exec") == 0)
		return do_exec(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "dlopen") == 0)
		return do_dlopen(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "threads") == 0)
		return do_threads();
	say("usage: t_faults hold FIFO [ignterm] | fork | exec PROGRAM [ARG...] | dlopen [LIB...] | threads\n");
	return 2;
}
