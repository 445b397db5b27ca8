/* libFuzzer target: the profile readers behind `heaptrace diff` (text and gzipped protobuf). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile p, d;
	char *maps, path[64];
	int fd = memfd_create("profile", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!profile_read_text(path, &p, &maps)) {
			if (!profile_diff(&p, &p, &d))
				profile_free(&d);
			profile_free(&p);
			free(maps);
		}
	}
	close(fd);
	if (!profile_read_proto(data, size, "fuzz", &p, &maps)) {
		profile_free(&p);
		free(maps);
	}
	return 0;
}
