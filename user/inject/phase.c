#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject/phase.h"

#define MAX_PHASES 64

static struct {
	bool read, print;
	char kill_at[64];
	long kill_nth;
	const char *names[MAX_PHASES];
	long seen[MAX_PHASES];
	int n;
} ph;

static void read_env(void)
{
	if (!ph.read) {
		const char *k = getenv("HEAPTRACE_KILL_AT"), *p = getenv("HEAPTRACE_PHASES");
		ph.read = true;
		ph.print = p && *p && strcmp(p, "0");
		if (k && *k) {
			snprintf(ph.kill_at, sizeof(ph.kill_at), "%s", k);
			char *colon = strchr(ph.kill_at, ':');
			ph.kill_nth = colon ? atol(colon + 1) : 1;
			if (colon)
				*colon = '\0';
		}
	}
}

bool inject_phases_on(void)
{
	read_env();
	return ph.print || ph.kill_at[0];
}

void inject_phase(const char *name)
{
	if (!inject_phases_on())
		return;
	int i = 0;
	while (i < ph.n && strcmp(ph.names[i], name))
		i++;
	if (i == ph.n && ph.n < MAX_PHASES)
		ph.names[ph.n++] = name;
	long nth = i < MAX_PHASES ? ++ph.seen[i] : 0;
	if (ph.print)
		fprintf(stderr, "heaptrace: phase %s %ld\n", name, nth);
	if (ph.kill_at[0] && !strcmp(ph.kill_at, name) && nth == ph.kill_nth)
		kill(getpid(), SIGKILL);
}
