/* The running kernel's release, for what no cheaper probe tells. */
#ifndef HT_KERNEL_H
#define HT_KERNEL_H

#include <stdbool.h>

/* Is the running kernel's release MAJOR.MINOR or later? */
bool kernel_at_least(int major, int minor);

#endif
