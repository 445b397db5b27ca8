/*
 * An allocator the fast path cannot take whole (scenario fastpath): this
 * executable defines malloc and free itself (so it is the allocator
 * heaptrace traces), and a branch elsewhere lands on malloc's second
 * instruction, inside the bytes a jump to the stub would replace.  malloc
 * must keep its uprobes (and -v say why), free goes to the stub, and the
 * counts stay exact: um_alloc allocates 10 x 100 bytes and um_free frees 4.
 * No stdio: its buffers would allocate.
 */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

static unsigned char arena[1 << 20] __attribute__((aligned(16)));
static size_t used;
static long frees;

void *bump_malloc(size_t n)
{
	size_t at = used;

	n = (n + 15) & ~(size_t)15;
	if (at + n > sizeof(arena))
		return NULL;
	used += n;
	return arena + at;
}

/*
 * malloc: a nop, then the jump that does the work; malloc_again (never
 * called) jumps to that second instruction, so malloc+1 is a branch target.
 */
__asm__(".text\n"
	".globl malloc\n"
	".type malloc, @function\n"
	"malloc:\n"
	"	nop\n"
	"1:	.byte 0xe9\n"                     /* jmp rel32: malloc is 6 bytes long */
	"	.long bump_malloc - . - 4\n"
	".size malloc, .-malloc\n"
	".globl malloc_again\n"
	".type malloc_again, @function\n"
	"malloc_again:\n"
	"	jmp 1b\n"
	".size malloc_again, .-malloc_again\n");

void *malloc(size_t n);

void free(void *p)
{
	if (p)
		frees++;
}

/* What libc may call in this process; none of it is used by the test's counts. */
void *calloc(size_t n, size_t m)
{
	unsigned char *p = malloc(n * m);
	for (size_t i = 0; p && i < n * m; i++)
		p[i] = 0;
	return p;
}

void *realloc(void *old, size_t n)
{
	unsigned char *p = malloc(n);
	if (p && old)
		for (size_t i = 0; i < n && (unsigned char *)old + i < arena + used; i++)
			p[i] = ((unsigned char *)old)[i];
	return p;
}

void *volatile blocks[10];

NOINLINE void um_alloc(void)
{
	for (int i = 0; i < 10; i++)
		blocks[i] = malloc(100);
}

NOINLINE void um_free(void)
{
	for (int i = 0; i < 4; i++)
		free(blocks[i]);
}

int main(void)
{
	um_alloc();
	um_free();
	say(frees == 4 ? "bye\n" : "wrong\n");
	return frees == 4 ? 0 : 1;
}
