/* Reading /proc: whole files, and the lines of a memory map. */
#ifndef HT_PROCFS_H
#define HT_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of a /proc/PID/maps text. */
struct map_entry {
	unsigned long lo, hi, offset;
	unsigned long dev_major, dev_minor, ino;        /* the file's device (hex) and inode; 0 for anonymous memory */
	char perms[8];
	char path[4200];        /* "" for anonymous memory */
};

/* The next parsable line of maps text at *pos, advancing it; false at the end. */
bool maps_next(const char **pos, struct map_entry *e);

/* Where maps text maps the file (dev, ino) at offset off in executable memory: that address, or 0. */
uint64_t maps_exec_addr(const char *maps, dev_t dev, ino_t ino, uint64_t off);

/*
 * The same for the file open at fd, or at path, as its mappings show it
 * (on overlayfs, not as fstat() does).
 */
uint64_t maps_file_addr(const char *maps, int fd, uint64_t off);
uint64_t maps_path_addr(const char *maps, const char *path, uint64_t off);
/* The device and inode a mapping of path shows (map_id()); false if it cannot be opened. */
bool path_map_id(const char *path, dev_t *dev, ino_t *ino);

/* /proc/PID/maps, whole; NULL on error ("" for a process that is exiting or gone). */
char *proc_maps(pid_t pid);

/* Read a whole (proc) file; NULL on error.  The size is not returned: proc files hold no NUL. */
char *read_text_file(const char *path);

/* The same, NULs and all (cmdline, environ): *size bytes, then a NUL; size may be NULL. */
char *read_file_len(const char *path, size_t *size);

/*
 * A number of /proc/PID/status (field with its colon, "Threads:"), in
 * base (10, or 16 for the signal masks); false when unreadable or absent.
 */
bool proc_status_num(pid_t pid, const char *field, int base, unsigned long long *v);

/* The file a process runs (/proc/PID/exe), as the process's mount namespace names it; NULL if gone. */
char *proc_exe(pid_t pid);

/* A variable of a process's environment; NULL when unset or unreadable. */
char *proc_getenv(pid_t pid, const char *name);

/*
 * The program a process runs, named as its user knows it: the path it was
 * executed by (a symbolic link, a script), from its arguments, when it
 * bears the process's name (comm); else the file it runs if that does;
 * else its comm.  NULL when the process is gone.
 */
char *proc_program_name(pid_t pid);

/*
 * Every thread of pid, threads it starts meanwhile included: take(arg, tid)
 * for each one /proc/PID/task lists, round after round until a round takes
 * none, since a thread may start another until it is stopped itself.  take
 * returns 1 (taken), 0 (passed over: one it has already, or gone: an
 * exiting thread stays listed a while) or a negative value, which ends the
 * walk.  0, that value, or -errno (the list cannot be read).
 */
int proc_take_threads(pid_t pid, int (*take)(void *arg, pid_t tid), void *arg);

/*
 * Who ran heaptrace: under sudo (root with SUDO_UID and SUDO_GID set), the
 * user who ran sudo; otherwise the real user.  Files heaptrace makes for
 * that user (profiles, the --http socket) are theirs.
 */
void invoking_user(uid_t *uid, gid_t *gid);

#endif
