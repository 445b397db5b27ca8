/*
 * Runs a fuzz target over saved inputs (the corpus seeds and every input
 * that once crashed it), for `make test` without libFuzzer: one line per
 * input and "N passed, N failed".  Built with ASan and UBSan, so a
 * regression aborts here as it did under the fuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	/* Without arguments: the directories the build named (seeds and regressions). */
	char *defaults[] = { argv[0], REPLAY_CORPUS, REPLAY_REGRESSIONS };
	int n = 0;

	if (argc < 2) {
		argc = 3;
		argv = defaults;
	}
	for (int a = 1; a < argc; a++) {
		DIR *d = opendir(argv[a]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
			FILE *f = fopen(path, "rb");
			if (!f)
				continue;
			uint8_t *buf = malloc(1 << 20);
			size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
			fclose(f);
			LLVMFuzzerTestOneInput(buf, len);
			free(buf);
			printf("ok - replay %s\n", path);
			n++;
		}
		if (d)
			closedir(d);
	}
	printf("%d passed, 0 failed\n", n);
	return 0;
}
