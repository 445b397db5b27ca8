#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <sys/types.h>

#include "util/array.h"
#include "util/procfs.h"

char *read_text_file(const char *path)
{
	return read_file_len(path, NULL);
}

char *read_file_len(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 0;
	char *buf = NULL;

	if (fd < 0)
		return NULL;
	for (;;) {
		/* Room to read at least a byte, and the terminating NUL. */
		if (ARRAY_RESERVE(buf, cap, len + 2, 65536))
			goto fail;
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	if (size)
		*size = len;
	return buf;
fail:
	close(fd);
	free(buf);
	if (size)
		*size = 0;
	return NULL;
}

bool maps_next(const char **pos, struct map_entry *e)
{
	while (*pos && **pos) {
		const char *line = *pos, *nl = strchrnul(line, '\n');
		size_t len = nl - line < (long)sizeof(e->path) - 1 ? (size_t)(nl - line) : sizeof(e->path) - 1;
		int n = 0;

		*pos = *nl ? nl + 1 : nl;
		/* A copy of the one line, so no conversion can run on into the next. */
		memcpy(e->path, line, len);
		e->path[len] = '\0';
		if (sscanf(e->path, "%lx-%lx %7s %lx %lx:%lx %lu %n", &e->lo, &e->hi, e->perms, &e->offset, &e->dev_major,
			   &e->dev_minor, &e->ino, &n) < 7 || !n)
			continue;
		memmove(e->path, e->path + n, len - n + 1);
		return true;
	}
	return false;
}

char *proc_exe(pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

char *proc_getenv(pid_t pid, const char *name)
{
	char path[64];
	size_t len, nl = strlen(name);
	char *env, *r = NULL;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	if (!(env = read_file_len(path, &len)))
		return NULL;
	for (char *v = env; v < env + len; v += strlen(v) + 1) {
		if (!strncmp(v, name, nl) && v[nl] == '=') {
			r = strdup(v + nl + 1);
			break;
		}
	}
	free(env);
	return r;
}

/* path's last component is the kernel's comm of a process that executed it (15 characters at most). */
static bool names_comm(const char *path, const char *comm)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return *comm && !strncmp(b, comm, 15) && strlen(comm) == (strlen(b) < 15 ? strlen(b) : 15);
}

char *proc_program_name(pid_t pid)
{
	char path[64], *comm, *args, *exe, *r = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!(comm = read_text_file(path)))
		return proc_exe(pid);
	comm[strcspn(comm, "\n")] = '\0';
	/*
	 * The kernel names a process (comm) after the file it was executed
	 * by, symbolic link or script, not the one it runs: the argument that
	 * bears that name is the path the user knows.  A script's interpreter
	 * comes before it: "/bin/sh ./run.sh", "/usr/bin/env python3 ./x.py".
	 */
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	args = read_file_len(path, &len);
	int i = 0;
	for (char *a = args; a && a < args + len && i < 4 && !r; a += strlen(a) + 1, i++)
		if (names_comm(a, comm))
			r = strdup(a);
	free(args);
	if (!r && (exe = proc_exe(pid))) {
		if (names_comm(exe, comm))
			r = exe;
		else
			free(exe);
	}
	if (!r)
		r = strdup(comm);
	free(comm);
	return r;
}

/*
 * Who ran heaptrace: under sudo (root with SUDO_UID and SUDO_GID set), the
 * user who ran sudo; otherwise the real user.
 */
void invoking_user(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	unsigned long su, sg;
	char *e1 = NULL, *e2 = NULL;

	*uid = getuid(), *gid = getgid();
	if (*uid || !u || !g || !*u || !*g)
		return;
	errno = 0;
	su = strtoul(u, &e1, 10), sg = strtoul(g, &e2, 10);
	if (!errno && !*e1 && !*e2 && su < UINT32_MAX && sg < UINT32_MAX)
		*uid = su, *gid = sg;
}

uint64_t maps_exec_addr(const char *maps, dev_t dev, ino_t ino, uint64_t off)
{
	for (const char *line = maps; line && *line;) {
		unsigned long lo, hi, moff, inode;
		unsigned maj, min;
		char perms[8];
		const char *nl = strchrnul(line, '\n');

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &moff, &maj, &min, &inode) == 7 &&
		    inode == ino && makedev(maj, min) == dev && perms[2] == 'x' && off >= moff && off < moff + (hi - lo))
			return lo + (off - moff);
		line = *nl ? nl + 1 : nl;
	}
	return 0;
}

/*
 * The device and inode a mapping of fd's file shows in /proc/PID/maps: on
 * overlayfs (a container's root, say) they are the layer's that holds the
 * file, not the overlay's that fstat() gives.  Read off a mapping of our
 * own; fstat()'s where the file cannot be mapped.
 */
static void map_id(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	long page = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, page > 0 ? page : 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	char *maps = m != MAP_FAILED ? proc_maps(getpid()) : NULL;
	bool found = false;

	for (const char *line = maps; line && *line && !found;) {
		unsigned long lo, inode;
		unsigned maj, min;
		const char *nl = strchrnul(line, '\n');
		if (sscanf(line, "%lx-%*x %*s %*x %x:%x %lu", &lo, &maj, &min, &inode) == 4 && lo == (unsigned long)m) {
			*dev = makedev(maj, min);
			*ino = inode;
			found = true;
		}
		line = *nl ? nl + 1 : nl;
	}
	free(maps);
	if (m != MAP_FAILED)
		munmap(m, page > 0 ? page : 4096);
	if (!found && !fstat(fd, &st)) {
		*dev = st.st_dev;
		*ino = st.st_ino;
	}
}

uint64_t maps_file_addr(const char *maps, int fd, uint64_t off)
{
	dev_t dev = 0;
	ino_t ino = 0;

	map_id(fd, &dev, &ino);
	return ino ? maps_exec_addr(maps, dev, ino, off) : 0;
}

bool path_map_id(const char *path, dev_t *dev, ino_t *ino)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*ino = 0;
	if (fd >= 0) {
		map_id(fd, dev, ino);
		close(fd);
	}
	return *ino != 0;
}

uint64_t maps_path_addr(const char *maps, const char *path, uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t addr = fd >= 0 ? maps_file_addr(maps, fd, off) : 0;

	if (fd >= 0)
		close(fd);
	return addr;
}

char *proc_maps(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	return read_text_file(path);
}

int proc_take_threads(pid_t pid, int (*take)(void *arg, pid_t tid), void *arg)
{
	char path[64];
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	for (bool took = true; took && err >= 0;) {
		took = false;
		DIR *d = opendir(path);
		if (!d)
			return -errno;
		for (struct dirent *e; err >= 0 && (e = readdir(d));) {
			pid_t tid = atoi(e->d_name);
			if (tid > 0 && (err = take(arg, tid)) > 0)
				took = true;
		}
		closedir(d);
	}
	return err < 0 ? err : 0;
}

bool proc_status_num(pid_t pid, const char *field, int base, unsigned long long *v)
{
	char path[64], key[40], *text, *at, *end = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	/* A field starts a line (Name: is the first, never asked for). */
	snprintf(key, sizeof(key), "\n%s", field);
	if (!(text = read_text_file(path)))
		return false;
	if ((at = strstr(text, key)))
		*v = strtoull(at += strlen(key), &end, base);
	bool found = at && end != at;
	free(text);
	return found;
}
