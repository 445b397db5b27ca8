/* The traced process: launching a command or adopting a PID, and its memory map. */
#ifndef HT_TARGET_H
#define HT_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

struct follow;

struct target {
	pid_t pid;
	bool launched;      /* our child, held before execve until target_start() */
	int go_fd;          /* launched: writing to it lets the child exec */
	int pidfd;          /* readable once the process has exited */
	char *exe;          /* executable path (launched: resolved from PATH) */
	char *maps;         /* /proc/PID/maps as last captured while the process lived */
	bool exited;        /* we reaped it (launched) or saw it go (-p) */
	int status;         /* launched: wait status once exited */
	struct follow *follow;  /* --follow-fork (set before target_launch / follow_seize) */
	bool seized;        /* we are its ptrace tracer */
	/* Called when a refresh finds a changed memory map (dlopen): --unwind dwarf's new tables. */
	void (*maps_changed)(void *arg, const char *maps, const char *root);
	void *maps_changed_arg;
	char root[32];      /* prefix that reaches its files: "/proc/PID/root" (-p), "" (launched) */
};

/*
 * Fork argv as a child that waits, before execve, until target_start(), so the
 * probes are in place before its first instruction.  The child is ptrace-seized
 * only to stop it at exit, when its memory map can still be read.
 * Returns 0, or an exit code for heaptrace (127 command not found, 126 not
 * executable, 1 otherwise) with the error already printed.
 */
int target_launch(struct target *t, char *const argv[], bool stdout_to_stderr);

/* The first half of target_launch: resolve the command, start nothing. */
int target_prepare(struct target *t, char *const argv[]);
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
 * Handle what waitpid reports for a launched child without blocking (or
 * blocking, when wait is set) : ptrace exit stops (capture the maps, let it
 * go), signal stops (deliver the signal), and its end (sets exited/status).
 */
void target_reap(struct target *t, bool wait);

/* heaptrace's exit code for a launched command's wait status, like time(1). */
int target_exit_code(const struct target *t);

/* One line of a /proc/PID/maps text. */
struct map_entry {
	unsigned long lo, hi, offset;
	char perms[8];
	char path[4200];        /* "" for anonymous memory */
};

/* The next parsable line of maps text at *pos, advancing it; false at the end. */
bool maps_next(const char **pos, struct map_entry *e);

/* Read a whole (proc) file; NULL on error. */
char *read_text_file(const char *path);

#endif
