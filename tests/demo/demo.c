/*
 * The bundled demo for `make demo`: a tiny "request handler" with a cache
 * that keeps what it stores, a parser that leaks a buffer per request it
 * rejects, and short-lived scratch memory.  heaptrace should show the cache
 * and the leak holding the heap, and the scratch buffers as churn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char *key;
	char *value;
	struct entry *next;
};

static struct entry *cache;
static volatile unsigned checksum;

__attribute__((noinline)) static void cache_put(const char *key, size_t value_len)
{
	struct entry *e = malloc(sizeof(*e));

	e->key = strdup(key);
	e->value = calloc(1, value_len);
	e->next = cache;
	cache = e;
}

__attribute__((noinline)) static char *parse_request(int i)
{
	char *buf = malloc(512);

	snprintf(buf, 512, "GET /item/%d", i);
	if (i % 10 == 0)
		return NULL; /* rejected: buf leaks */
	return buf;
}

__attribute__((noinline)) static void render(int i)
{
	char *scratch = malloc(4096);

	memset(scratch, 'x', 4096);
	scratch[i % 4096] = 0;
	checksum += strlen(scratch); /* keeps the compiler from eliding the buffer */
	free(scratch);
}

__attribute__((noinline)) static void handle(int i)
{
	char *req = parse_request(i);

	if (req) {
		cache_put(req, 1000 + i % 7 * 100);
		render(i);
		free(req);
	}
}

int main(void)
{
	for (int i = 0; i < 1000; i++)
		handle(i);
	printf("handled 1000 requests\n");
	return 0;
}
