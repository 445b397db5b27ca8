/* The traced process: a command launched held before exec, or a running PID; its memory map. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/log.h"
#include "process/target.h"

/* Guards t->maps between the tracing thread and HTTP request threads. */
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

char *target_maps_copy(struct target *t)
{
	pthread_mutex_lock(&maps_lock);
	char *m = t->maps ? strdup(t->maps) : NULL;
	pthread_mutex_unlock(&maps_lock);
	return m;
}

char *target_maps_now(struct target *t)
{
	char *m;

	if (__atomic_load_n(&t->maps_final, __ATOMIC_ACQUIRE))
		return target_maps_copy(t);
	m = proc_maps(t->pid);
	if (m && *m)
		return m;
	free(m);
	return target_maps_copy(t);
}

void target_refresh_maps(struct target *t)
{
	char *m;

	if (__atomic_load_n(&t->maps_final, __ATOMIC_ACQUIRE))
		return;
	m = proc_maps(t->pid);
	/* A process that is exiting or gone reads as empty: keep what we had. */
	if (!m || !*m) {
		free(m);
		return;
	}
	bool changed = !t->maps || strcmp(t->maps, m);
	pthread_mutex_lock(&maps_lock);
	free(t->maps);
	t->maps = m;
	pthread_mutex_unlock(&maps_lock);
	if (changed && t->maps_changed)
		t->maps_changed(t->maps_changed_arg, m, t->root);
}

/* PATH search the way execvp does it, but done here so the child never mallocs. */
static char *resolve_command(const char *cmd, int *err)
{
	*err = ENOENT;
	if (strchr(cmd, '/')) {
		if (access(cmd, F_OK))
			return NULL;
		*err = access(cmd, X_OK) ? EACCES : 0;
		return *err ? NULL : strdup(cmd);
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		char buf[4096];
		struct stat st;

		snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(end - p), p, end == p ? "" : "/", cmd);
		if (!stat(buf, &st) && S_ISREG(st.st_mode)) {
			if (!access(buf, X_OK)) {
				*err = 0;
				return strdup(buf);
			}
			*err = EACCES;
		}
		if (!*end)
			break;
		p = end;
	}
	return NULL;
}

/*
 * The ELF file the kernel runs for path: itself, or the interpreter of its
 * "#!" line (absolute, or relative to the current directory, as the
 * kernel opens it), recursively; a file that is neither is run by /bin/sh
 * (*sh set), as execvp and the shell do.  The kernel's own depth limit is
 * 4 interpreters.  NULL with the error printed and *rc heaptrace's exit code.
 */
static char *resolve_image(const char *cmd, const char *path, bool *sh, int *rc)
{
	char cur[4096];

	*sh = false;
	*rc = 126;
	snprintf(cur, sizeof(cur), "%s", path);
	for (int depth = 0; depth <= 4; depth++) {
		char head[256];
		ssize_t n = -1;
		int fd = open(cur, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			n = read(fd, head, sizeof(head) - 1);
			close(fd);
		}
		if (n < 0) {
			ht_err("%s: cannot read %s: %s", cmd, cur, strerror(errno));
			return NULL;
		}
		head[n] = '\0';
		if (n >= 4 && !memcmp(head, "\177ELF", 4)) {
			/* The file itself, as /proc/PID/exe will name it (and ld.so's $ORIGIN is its directory). */
			char *real = realpath(cur, NULL);
			return real ? real : strdup(cur);
		}
		if (n < 2 || head[0] != '#' || head[1] != '!') {
			/* ENOEXEC: a shell script without "#!" (or a file no shell can run: sh says so). */
			if (*sh) {
				ht_err("%s: /bin/sh is not an ELF file", cmd);
				return NULL;
			}
			*sh = true;
			snprintf(cur, sizeof(cur), "/bin/sh");
			continue;
		}
		/* "#!INTERP [ARG]": the interpreter ends at the first blank. */
		char *p = head + 2 + strspn(head + 2, " \t");
		size_t len = strcspn(p, " \t\n");
		if (!p[len] && (size_t)n == sizeof(head) - 1) {
			ht_err("%s: its #! line is too long", cmd);
			return NULL;
		}
		if (!len) {
			ht_err("%s: its #! line names no interpreter", cmd);
			return NULL;
		}
		p[len] = '\0';
		if (access(p, X_OK)) {
			/* As bash words it. */
			ht_err("%s: %s: bad interpreter: %s", cmd, p, strerror(errno));
			return NULL;
		}
		snprintf(cur, sizeof(cur), "%s", p);
	}
	ht_err("%s: too many levels of #! interpreters", cmd);
	return NULL;
}

static pid_t open_pidfd(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

int target_prepare(struct target *t, char *const argv[])
{
	int err;

	memset(t, 0, sizeof(*t));
	t->go_fd = t->pidfd = -1;
	t->launched = true;
	t->exe = resolve_command(argv[0], &err);
	if (!t->exe) {
		ht_err("%s: %s", argv[0], err == ENOENT ? "command not found" : strerror(err));
		return err == ENOENT ? 127 : 126;
	}
	bool sh;
	int rc;
	if (!(t->image = resolve_image(argv[0], t->exe, &sh, &rc)))
		return rc;
	t->script = sh || strcmp(t->image, t->exe);
	if (t->script) {
		/* A link to an ELF file is no script: the real paths are the same. */
		char *real = realpath(t->exe, NULL);
		t->script = sh || !real || strcmp(real, t->image);
		free(real);
	}
	t->name = strdup(t->exe);
	if (sh) {
		/* execvp's way: /bin/sh FILE ARG...; built now, since the child must not malloc. */
		size_t n = 0;
		while (argv[n])
			n++;
		if (!(t->sh_argv = calloc(n + 2, sizeof(char *))))
			return 1;
		t->sh_argv[0] = "/bin/sh";
		t->sh_argv[1] = t->exe;
		for (size_t i = 1; i < n; i++)
			t->sh_argv[i + 1] = argv[i];
	}
	return 0;
}

/* Whether heaptrace may set another user's ids: CAP_SETUID and CAP_SETGID, as root has them. */
static bool can_set_ids(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0;
	return (d[0].effective & (1u << CAP_SETUID)) && (d[0].effective & (1u << CAP_SETGID));
}

int target_set_user(struct target *t, const char *user)
{
	struct passwd *pw = getpwnam(user);
	char *end;

	if (!pw && *user) {
		unsigned long id;

		errno = 0;
		id = strtoul(user, &end, 10);
		if (!*end && !errno && id <= UINT32_MAX - 1)
			pw = getpwuid(id);
	}
	if (!pw) {
		ht_err("-u %s: no such user", user);
		return 1;
	}
	if (!can_set_ids()) {
		ht_err("-u %s: heaptrace may not change the command's user (it needs root, or CAP_SETUID and "
		       "CAP_SETGID)", user);
		return 1;
	}
	/* initgroups()'s list, computed here: the child must not malloc, and NSS does. */
	int n = 32;
	for (;;) {
		int want = n;
		gid_t *g = realloc(t->groups, n * sizeof(*g));

		if (!g)
			return 1;
		t->groups = g;
		if (getgrouplist(pw->pw_name, pw->pw_gid, g, &want) >= 0) {
			n = want;
			break;
		}
		if (n >= 65536) {
			ht_err("-u %s: cannot list the user's groups", user);
			return 1;
		}
		n = want > n ? want : n * 2;
	}
	t->as_user = true;
	t->uid = pw->pw_uid;
	t->gid = pw->pw_gid;
	t->n_groups = n;
	if (asprintf(&t->user_err, "heaptrace: -u %s: cannot take the user's ids\n", user) < 0)
		t->user_err = NULL;
	return 0;
}

bool target_exec(struct target *t)
{
	char *image = proc_exe(t->pid), *name = proc_program_name(t->pid);

	if (!image || !name) {
		free(image);
		free(name);
		return false;
	}
	free(t->image);
	free(t->name);
	t->image = image;
	t->name = name;
	return true;
}

int target_launch(struct target *t, char *const argv[], bool stdout_to_stderr)
{
	int pipefd[2];

	if (!t->exe) {
		int rc = target_prepare(t, argv);
		if (rc)
			return rc;
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		ht_err("pipe: %s", strerror(errno));
		return 1;
	}
	fflush(NULL);
	t->pid = fork();
	if (t->pid < 0) {
		ht_err("fork: %s", strerror(errno));
		return 1;
	}
	if (t->pid == 0) {
		char go;
		sigset_t none;

		/* heaptrace blocks the signals it waits for; the command must not inherit that. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(pipefd[1]);
		if (stdout_to_stderr)
			dup2(STDERR_FILENO, STDOUT_FILENO);
		if (t->as_user) {
			/*
			 * The command is another user's: none of heaptrace's
			 * descriptors (BPF maps and links among them) may reach
			 * it, should one lack O_CLOEXEC.  Groups first: they
			 * need the privilege the uid change gives up.
			 */
			syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
			if (setgroups(t->n_groups, t->groups) || setresgid(t->gid, t->gid, t->gid) ||
			    setresuid(t->uid, t->uid, t->uid)) {
				if (t->user_err && write(STDERR_FILENO, t->user_err, strlen(t->user_err)) < 0)
					_exit(126);
				_exit(126);
			}
		}
		/* Our probes are attached for this pid from now on: no malloc here. */
		if (read(pipefd[0], &go, 1) != 1)
			_exit(1);
		execv(t->exe, argv);
		if (errno == ENOEXEC && t->sh_argv)
			execv(t->sh_argv[0], t->sh_argv);
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(pipefd[0]);
	t->go_fd = pipefd[1];
	t->pidfd = open_pidfd(t->pid);
	return 0;
}

/* PF_KTHREAD in the flags field (the 9th) of /proc/PID/stat. */
static bool is_kernel_thread(pid_t pid)
{
	char path[64], *stat, *p;
	unsigned long flags = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!(stat = read_text_file(path)))
		return false;
	/* The command name may hold spaces and parentheses: fields start after the last ')'. */
	p = strrchr(stat, ')');
	if (p)
		sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags);
	free(stat);
	return flags & 0x00200000;
}

/*
 * Why the kernel refused access to pid's /proc files.  Root is refused too
 * when the process holds capabilities heaptrace lacks (ptrace's rule that a
 * tracer be at least as privileged), so "run as root" is only the answer
 * for a user who is not.
 */
static void denied_why(pid_t pid, char *why, size_t n)
{
	char path[64], *st, *ours;
	unsigned long long theirs = 0, mine = 0;

	if (geteuid() != 0) {
		snprintf(why, n, " (run as root or as the process's owner)");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	st = read_text_file(path);
	ours = read_text_file("/proc/self/status");
	const char *a = st ? strstr(st, "\nCapPrm:") : NULL, *b = ours ? strstr(ours, "\nCapEff:") : NULL;
	if (a && b && sscanf(a, "\nCapPrm: %llx", &theirs) == 1 && sscanf(b, "\nCapEff: %llx", &mine) == 1 &&
	    (theirs & ~mine))
		snprintf(why, n, " (even for root: PID %d holds capabilities heaptrace lacks, mask %#llx)", pid,
			 theirs & ~mine);
	else
		snprintf(why, n, " (even for root: a security module or another user namespace protects PID %d)", pid);
	free(st);
	free(ours);
}

int target_attach(struct target *t, pid_t pid)
{
	char path[64];

	memset(t, 0, sizeof(*t));
	t->go_fd = t->pidfd = -1;
	t->pid = pid;
	if (kill(pid, 0) && errno == ESRCH) {
		ht_err("no process with PID %d", pid);
		return 1;
	}
	if (is_kernel_thread(pid)) {
		ht_err("PID %d is a kernel thread: it has no user-space heap to trace", pid);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	t->exe = realpath(path, NULL);
	if (!t->exe) {
		int e = errno;
		char why[160] = "";
		if (e == EACCES || e == EPERM)
			denied_why(pid, why, sizeof(why));
		ht_err("cannot read %s: %s%s", path, strerror(e), why);
		return 1;
	}
	t->image = strdup(t->exe);
	if (!(t->name = proc_program_name(pid)))
		t->name = strdup(t->exe);
	t->pidfd = open_pidfd(pid);
	snprintf(t->root, sizeof(t->root), "/proc/%d/root", pid);
	target_refresh_maps(t);
	if (!t->maps) {
		ht_err("cannot read /proc/%d/maps", pid);
		return 1;
	}
	return 0;
}

int target_start(struct target *t)
{
	if (!t->launched || t->go_fd < 0)
		return 0;
	int r = write(t->go_fd, "g", 1) == 1 ? 0 : -1;
	close(t->go_fd);
	t->go_fd = -1;
	return r;
}

int target_exit_code(const struct target *t)
{
	if (!t->exited)
		return 0;
	if (WIFEXITED(t->status))
		return WEXITSTATUS(t->status);
	if (WIFSIGNALED(t->status))
		return 128 + WTERMSIG(t->status);
	return 1;
}

void target_free(struct target *t)
{
	if (t->go_fd >= 0)
		close(t->go_fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	free(t->exe);
	free(t->image);
	free(t->name);
	free(t->sh_argv);
	free(t->maps);
	free(t->groups);
	free(t->user_err);
	memset(t, 0, sizeof(*t));
}
