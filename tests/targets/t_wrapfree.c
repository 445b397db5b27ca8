/*
 * Wrappers around malloc and free, traced as a custom allocator
 * (--sym obj_new --free-sym obj_del --free-sym obj_del_tail): each wrapper's
 * free passes the block on to free(), as CPython's PyObject_Free does for
 * blocks of more than 512 bytes (by way of PyMem_RawFree's tail jump).
 *
 *   void *obj_new(size_t n)     malloc(n): a malloc nested in obj_new
 *   void  obj_del(void *p)      free(p) from a call: a free nested in obj_del
 *   void  obj_del_tail(void *p) jmp free: free(p) at obj_del_tail's own stack
 *                               pointer, as a tail call leaves it
 *
 * Sites:
 *   keep_objs:  3 x obj_new(100), kept                 alloc 3/300, in use 3/300
 *   drop_objs:  4 x obj_new(200), freed with obj_del   alloc 4/800, in use 0/0
 *   drop_tail:  5 x obj_new(300), freed with obj_del_tail
 *                                                      alloc 5/1500, in use 0/0
 *   drop_plain: 2 x malloc(50), freed with obj_del     alloc 2/100, in use 0/0
 *   drop_libc:  1 x obj_new(70), freed with free() itself (no wrapper)
 *                                                      alloc 1/70, in use 0/0
 *   drop_indirect: 2 x obj_new(400), freed from one indirect call site by
 *               obj_del, then by del_plain (no wrapper) calling free: the
 *               second block has the first one's address (checked: exit
 *               status 3 otherwise), and the same return address is in
 *               obj_del's slot when free is called
 *                                                      alloc 2/800, in use 0/0
 * Frees: 4 + 5 + 2 + 1 + 2 = 14, each of a live block once.  Allocations:
 * 3 + 4 + 5 + 2 + 1 + 2 = 17.  No stdio, so nothing else allocates.
 */
#include <stddef.h>
#include <stdlib.h>

/* Built into libt_wrapfree.so too (-DWRAP_SO), where t_wrapso calls its main. */
#ifdef WRAP_SO
#define main wrapfree_main
int wrapfree_main(void);
#endif

#define NOINLINE __attribute__((noinline))

void *volatile keep[3];
void *volatile tmp;

NOINLINE void *obj_new(size_t n)
{
	return malloc(n);
}

NOINLINE void obj_del(void *p)
{
	free(p);
}

/* A tail jump whatever the optimisation level: free returns to obj_del_tail's caller. */
__attribute__((naked)) void obj_del_tail(void *p)
{
	(void)p;
	__asm__ volatile("jmp free@PLT");
}

NOINLINE void keep_objs(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = obj_new(100);
}

NOINLINE void drop_objs(void)
{
	for (int i = 0; i < 4; i++) {
		tmp = obj_new(200);
		obj_del(tmp);
	}
}

NOINLINE void drop_tail(void)
{
	for (int i = 0; i < 5; i++) {
		tmp = obj_new(300);
		obj_del_tail(tmp);
	}
}

NOINLINE void drop_plain(void)
{
	for (int i = 0; i < 2; i++) {
		tmp = malloc(50);
		obj_del(tmp);
	}
}

NOINLINE void drop_libc(void)
{
	tmp = obj_new(70);
	free(tmp);
}

NOINLINE void del_plain(void *p)
{
	free(p);
}

NOINLINE int drop_indirect(void)
{
	void (*const del[2])(void *) = { obj_del, del_plain };
	void *first = NULL;

	for (int i = 0; i < 2; i++) {
		tmp = obj_new(400);
		if (i && tmp != first)
			return -1;
		first = tmp;
		del[i](tmp);
	}
	return 0;
}

int main(void)
{
	keep_objs();
	drop_objs();
	drop_tail();
	drop_plain();
	drop_libc();
	return drop_indirect() ? 3 : 0;
}
