/* The parts of /metrics that describe each process of a --merge tree. */
#ifndef HT_METRICS_H
#define HT_METRICS_H

#include <stdio.h>
#include <sys/types.h>

#include "profile/profile.h"

/* heaptrace_process_inuse_bytes{pid,program}: the target (pid, name) and each process of src's tree. */
void metrics_by_process(FILE *m, const struct profile_source *src, pid_t pid, const char *name);

#endif
