/*
 * floor: run a command under the trap+stack floor (floor.bpf.c) attached at
 * the sites heaptrace chooses, to measure what heaptrace adds over it.
 *
 *   floor [--entry-only] PROBES_FILE COMMAND [ARG...]
 *
 * PROBES_FILE is the output of `heaptrace --list-probes COMMAND`: one line per
 * function, `FUNC PATH 0xOFFSET +DELTA alloc|free ...`.  An alloc site gets an
 * entry and a return probe, a free site an entry probe, exactly as heaptrace
 * does, and through the same uprobe_multi links (user/tracer/uprobe_multi.c), limited
 * to the command's PID.  --entry-only leaves out the return probes: the floor
 * of a tool that decides everything at the entry, which heaptrace
 * --sample-rate approaches when unsampled calls skip their returns.  The
 * command is held before execve until every probe is in place; floor exits
 * with its status (128+signal if it was killed).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>

#include "floor.skel.h"
#include "tracer/uprobe_multi.h"

#define MAX_SITES 64

struct site {
	char path[4096];
	uint64_t offset;
	int is_free;
};

static int read_sites(const char *file, struct site *sites, int max)
{
	char line[8192], func[256], kind[16];
	FILE *f = fopen(file, "r");
	int n = 0;

	if (!f) {
		fprintf(stderr, "floor: %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && n < max) {
		struct site *s = &sites[n];
		if (sscanf(line, "%255s %4095s %" SCNx64 " %*s %15s", func, s->path, &s->offset, kind) != 4)
			continue;
		s->is_free = !strcmp(kind, "free");
		n++;
	}
	fclose(f);
	if (!n)
		fprintf(stderr, "floor: no probe sites in %s\n", file);
	return n ? n : -1;
}

/*
 * One link per program and file, like heaptrace's attach_multi: the cost of
 * dispatching among several consumers of one uprobe is part of what we copy.
 */
static int attach(struct floor *skel, const struct site *sites, int n, pid_t pid, bool entry_only, int *fds,
		  int *nfds)
{
	for (int first = 0; first < n; first++) {
		int seen = 0;
		for (int j = 0; j < first; j++)
			seen |= !strcmp(sites[j].path, sites[first].path);
		if (seen)
			continue;

		struct bpf_program *progs[] = { skel->progs.floor_enter, skel->progs.floor_return,
						skel->progs.floor_free };
		for (int k = 0; k < 3; k++) {
			uint64_t offsets[MAX_SITES];
			uint32_t cnt = 0;
			if (k == 1 && entry_only)
				continue;
			for (int j = first; j < n; j++)
				if (!strcmp(sites[j].path, sites[first].path) && sites[j].is_free == (k == 2))
					offsets[cnt++] = sites[j].offset;
			if (!cnt)
				continue;
			int fd = uprobe_multi_attach(bpf_program__fd(progs[k]), sites[first].path, offsets,
						     NULL, cnt, k == 1, pid);
			if (fd < 0) {
				fprintf(stderr, "floor: uprobe_multi on %s: %s\n", sites[first].path,
					strerror(-fd));
				return -1;
			}
			fds[(*nfds)++] = fd;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct site sites[MAX_SITES];
	int go[2], fds[3 * MAX_SITES], nfds = 0, status;
	struct floor *skel = NULL;
	bool entry_only = argc > 1 && !strcmp(argv[1], "--entry-only");
	pid_t pid;

	argc -= entry_only;
	argv += entry_only;
	if (argc < 3) {
		fprintf(stderr, "usage: floor [--entry-only] PROBES_FILE COMMAND [ARG...]\n");
		return 2;
	}
	int n = read_sites(argv[1], sites, MAX_SITES);
	if (n < 0 || pipe(go))
		return 1;

	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		char c;
		close(go[1]);
		/* EOF without a byte means the parent gave up: do not run unprobed. */
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		close(go[0]);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "floor: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	close(go[0]);

	skel = floor__open();
	if (!skel)
		goto fail;
	/* libbpf 1.1 knows no uprobe.multi section: set the attach type by hand, as heaptrace does. */
	bpf_program__set_expected_attach_type(skel->progs.floor_enter, HT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(skel->progs.floor_return, HT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(skel->progs.floor_free, HT_BPF_TRACE_UPROBE_MULTI);
	if (floor__load(skel)) {
		fprintf(stderr, "floor: cannot load the BPF programs (root needed)\n");
		goto fail;
	}
	if (attach(skel, sites, n, pid, entry_only, fds, &nfds))
		goto fail;
	if (write(go[1], "g", 1) != 1)
		goto fail;
	close(go[1]);

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			goto fail;
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	floor__destroy(skel);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

fail:
	/* Closing the pipe unsent ends the held child; reap it. */
	close(go[1]);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	floor__destroy(skel);
	return 1;
}
