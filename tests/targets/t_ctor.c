/*
 * Allocations before main (a .preinit_array entry and two constructors) and
 * after main returns (a destructor).  heaptrace launches the command with
 * its probes already in place, so all of them must be counted.
 *   preinit_alloc: 1 x 1500, kept
 *   ctor_alloc:    3 x 4321, kept
 *   ctor_freed:    2 x 999, freed by main_free (in main)
 *   main_alloc:    1 x 100, kept
 *   dtor_alloc:    1 x 2345, kept (runs after main returns)
 * No stdio.  tests/run.sh holds the expected numbers.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

void *volatile pre_keep;
void *volatile ctor_keep[3];
void *volatile ctor_tmp[2];
void *volatile main_keep;
void *volatile dtor_keep;

NOINLINE void preinit_alloc(void)
{
	pre_keep = malloc(1500);
}

static void preinit(int argc, char **argv, char **envp)
{
	(void)argc; (void)argv; (void)envp;
	preinit_alloc();
}

__attribute__((used, section(".preinit_array")))
static void (*const preinit_entry)(int, char **, char **) = preinit;

NOINLINE void ctor_alloc(void)
{
	for (int i = 0; i < 3; i++)
		ctor_keep[i] = malloc(4321);
}

NOINLINE void ctor_freed(void)
{
	for (int i = 0; i < 2; i++)
		ctor_tmp[i] = malloc(999);
}

__attribute__((constructor(101))) static void early_ctor(void)
{
	ctor_alloc();
}

__attribute__((constructor)) static void late_ctor(void)
{
	ctor_freed();
}

NOINLINE void main_alloc(void)
{
	main_keep = malloc(100);
}

NOINLINE void main_free(void)
{
	for (int i = 0; i < 2; i++)
		free(ctor_tmp[i]);
}

NOINLINE void dtor_alloc(void)
{
	dtor_keep = malloc(2345);
}

__attribute__((destructor)) static void dtor(void)
{
	dtor_alloc();
}

int main(void)
{
	main_alloc();
	main_free();
	return 0;
}
