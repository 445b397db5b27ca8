/* The traced process: launching a command or adopting a PID, and its memory map. */
#ifndef HT_TARGET_H
#define HT_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

#include "util/procfs.h"

struct target {
	pid_t pid;
	bool launched;      /* our child, held before execve until target_start() */
	int go_fd;          /* launched: writing to it lets the child exec */
	int pidfd;          /* readable once the process has exited */
	char *exe;          /* executable path (launched: resolved from PATH, maybe a script or a link; -p: the real file) */
	/*
	 * The ELF file the process runs: launched, the command itself or the
	 * interpreter its "#!" line names (resolved like the kernel does) or
	 * /bin/sh for a script without one, as execvp runs it; after an exec,
	 * the new program's file.
	 */
	char *image;
	bool script;        /* launched: image is an interpreter the command names (#!), or /bin/sh */
	char *name;         /* the program as the user knows it (the path it was executed by), for profiles and -v */
	char **sh_argv;     /* launched: /bin/sh FILE ARG..., for a file the kernel cannot execute (ENOEXEC) */
	char *maps;         /* /proc/PID/maps as last captured while the process lived */
	/*
	 * Set once maps was read at the exit's stop (PTRACE_EVENT_EXIT), the
	 * last moment the mappings are whole; cleared by an exec.  Later reads
	 * may find the mappings half torn down (the kernel reads them without
	 * the lock that exit_mmap takes): seen as 35 lines of 156, and every
	 * stack in libraries no longer listed lost from a --merge profile.
	 */
	bool maps_final;
	bool exited;        /* we reaped it (launched) or saw it go (-p) */
	int status;         /* launched: wait status once exited */
	/* Called when a refresh finds a changed memory map (dlopen): --unwind dwarf's new tables. */
	void (*maps_changed)(void *arg, const char *maps, const char *root);
	void *maps_changed_arg;
	char root[32];      /* prefix that reaches its files: "/proc/PID/root" (-p), "" (launched) */
	/* -u: the launched command's ids, resolved before the fork (the child must not malloc). */
	bool as_user;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int n_groups;
	char *user_err;     /* the line the child writes when it cannot take them */
};

/*
 * Fork argv as a child that waits, before execve, until target_start(), so the
 * probes are in place before its first instruction (process/tracee.h then
 * seizes it).
 * Returns 0, or an exit code for heaptrace (127 command not found, 126 not
 * executable, 1 otherwise) with the error already printed.
 */
int target_launch(struct target *t, char *const argv[], bool stdout_to_stderr);

/*
 * The first half of target_launch: resolve the command as the shell would
 * (PATH, then "#!" interpreters, recursively, or /bin/sh), start nothing.
 */
int target_prepare(struct target *t, char *const argv[]);
/*
 * -u USER: the launched command will run with USER's uid, gid and groups
 * (as initgroups gives them); heaptrace keeps its own.  USER is a name or
 * a number.  0, or 1 with the error printed (no such user, or heaptrace
 * may not change ids).
 */
int target_set_user(struct target *t, const char *user);
int target_attach(struct target *t, pid_t pid);
int target_start(struct target *t);
void target_free(struct target *t);

/* Re-read the memory map; keeps the previous one if the process is gone. */
void target_refresh_maps(struct target *t);

/* A copy of the memory map text, safe while another thread refreshes it (--http). */
char *target_maps_copy(struct target *t);

/*
 * The memory map as it is now, read afresh without touching t->maps (safe
 * from another thread): a profile served over --http names the libraries
 * mapped when it was read, not at the last refresh, which can predate a
 * launched command's exec.  The last copy if the process is gone.
 */
char *target_maps_now(struct target *t);

/*
 * The process executed a new program (it is stopped at the exec): its
 * image and name from /proc.  Returns true when that read worked.
 */
bool target_exec(struct target *t);

/* heaptrace's exit code for a launched command's wait status, like time(1). */
int target_exit_code(const struct target *t);

#endif
