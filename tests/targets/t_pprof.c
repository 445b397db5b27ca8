/*
 * A small single-threaded profile for the pprof / top output checks, with
 * one clearly dominant in-use site.
 *   big_keeper: 4 x 262144, kept          (largest in-use space)
 *   mid_keeper: 3 x 10000, kept
 *   churn:      10 x 5000, each freed at once by churn itself
 * Totals: in use 7 objects, 1048576 + 30000 = 1078576 bytes;
 *         allocated 17 objects, 1078576 + 50000 = 1128576 bytes.
 * No stdio, so nothing else allocates.  The "@site" comments mark the call
 * lines that tests/run.sh looks for in the top report.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

void *volatile big[4];
void *volatile mid[3];
void *volatile tmp;

NOINLINE void big_keeper(void)
{
	for (int i = 0; i < 4; i++)
		big[i] = malloc(262144); /* @site big_keeper */
}

NOINLINE void mid_keeper(void)
{
	for (int i = 0; i < 3; i++)
		mid[i] = malloc(10000); /* @site mid_keeper */
}

NOINLINE void churn(void)
{
	for (int i = 0; i < 10; i++) {
		tmp = malloc(5000); /* @site churn */
		free(tmp);
	}
}

int main(void)
{
	churn();
	mid_keeper();
	big_keeper();
	return 0;
}
