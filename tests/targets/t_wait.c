/*
 * Target for heaptrace -p.  Usage: t_wait FIFO
 *
 *   1. pre_alloc: 10 x 512, allocated before the tracer attaches.
 *   2. prints "ready", then blocks until a line is written to FIFO (the
 *      harness attaches heaptrace first).
 *   3. traced phase:
 *        post_alloc:       6 x 640
 *        post_free:        frees 2 of the post_alloc blocks
 *        post_free_pre:    frees 3 pre_alloc blocks      -> 3 unmatched frees
 *        post_realloc_pre: realloc(pre block, 1500)      -> 1 unmatched free
 *                                                           + 1 x 1500 allocated
 *        post_free_null:   free(NULL)                    -> nothing
 *   4. prints "done", then blocks on FIFO again, so the harness can stop
 *      heaptrace (SIGINT, SIGTERM or --duration) while the process is still
 *      alive.
 *   5. when released: final_churn: 3 x malloc(77), each freed at once
 *      (counted only if heaptrace is still attached), prints "bye", exits 0.
 * Blocking is in open()/read() on the FIFO: no CPU is burnt.  No stdio, so
 * the traced phase has no other heap activity.  tests/run.sh holds the
 * expected numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

#define PRE 10
#define POST 6

void *volatile pre[PRE];
void *volatile post[POST];
void *volatile null_block;
void *volatile churn_sink;

NOINLINE void pre_alloc(void)
{
	for (int i = 0; i < PRE; i++)
		pre[i] = malloc(512);
}

NOINLINE void post_alloc(void)
{
	for (int i = 0; i < POST; i++)
		post[i] = malloc(640);
}

NOINLINE void post_free(void)
{
	free(post[0]);
	free(post[1]);
}

NOINLINE void post_free_pre(void)
{
	for (int i = 0; i < 3; i++)
		free(pre[i]);
}

NOINLINE void post_realloc_pre(void)
{
	pre[3] = realloc(pre[3], 1500);
}

NOINLINE void post_free_null(void)
{
	free(null_block);
}

NOINLINE void final_churn(void)
{
	for (int i = 0; i < 3; i++) {
		churn_sink = malloc(77);
		if (churn_sink == NULL)
			_exit(3);
		free(churn_sink);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		say("usage: t_wait FIFO\n");
		return 2;
	}
	pre_alloc();
	say("ready\n");
	wait_line(argv[1]);
	post_alloc();
	post_free();
	post_free_pre();
	post_realloc_pre();
	post_free_null();
	say("done\n");
	wait_line(argv[1]);
	final_churn();
	say("bye\n");
	return 0;
}
