#include <stdio.h>
#include <sys/utsname.h>

#include "util/kernel.h"

bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	return !uname(&u) && sscanf(u.release, "%d.%d", &ma, &mi) == 2 && (ma > major || (ma == major && mi >= minor));
}
