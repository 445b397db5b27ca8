/*
 * The kernel types heaptrace's BPF object reads with CO-RE, cut down from
 * the kernel's BTF to the members it reads and cached per kernel, so that
 * a load does not parse the kernel's whole BTF (5 MB, 126,000 types) on
 * every run.
 */
#ifndef HT_KTYPES_H
#define HT_KTYPES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A path to this kernel's cut-down BTF (built now and cached if it was
 * not), into path: /proc/self/fd/N of *fd, which the caller closes once
 * the BPF object is loaded.  *built says whether it was built now.  -1
 * (said with -v) when there is none: libbpf then reads the kernel's whole
 * BTF.
 */
int ktypes_path(char *path, size_t len, bool *built, int *fd);

/* The cached cut-down BTF did not serve a load: away with it. */
void ktypes_forget(void);

#endif
