#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <bpf/btf.h>

#include "tracer/ktypes.h"
#include "util/cache.h"
#include "util/log.h"

/*
 * Every kernel struct member the BPF object reads (bpf/calls.bpf.h,
 * bpf/unwind.bpf.h, bpf/sigframe.bpf.h, bpf/maps.bpf.h, heaptrace.bpf.c's process_fork,
 * and the PT_REGS_ macros on struct pt_regs), structs in an order where a
 * struct embedded in another comes first.  A read missing here fails the
 * load's CO-RE relocation; heaptrace then loads with the whole kernel BTF
 * and says so (-v), and tests/scenarios/load.sh (scenario startup) fails.
 */
static const char *const fields[] = {
	"pt_regs.*",
	"thread_struct.fsbase",
	"task_struct.mm", "task_struct.pid", "task_struct.tgid", "task_struct.thread",
	"uprobes_state.xol_area",
	"xol_area.vaddr",
	"mm_struct.start_code", "mm_struct.end_code", "mm_struct.exe_file", "mm_struct.uprobes_state",
	"mm_struct.brk",
	"vm_area_struct.vm_start", "vm_area_struct.vm_end", "vm_area_struct.vm_pgoff", "vm_area_struct.vm_file",
	"file.f_inode",
	"inode.i_sb", "inode.i_ino",
	"super_block.s_dev",
	"sigaction.sa_handler", "sigaction.sa_flags", "sigaction.sa_restorer",
	"k_sigaction.sa",
};

/* FNV-1a, continued from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (const unsigned char *c = p; n--; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h;
}

/* type, past typedefs and qualifiers. */
static __s32 resolve(const struct btf *b, __s32 id)
{
	const struct btf_type *t;

	while (id > 0 && (t = btf__type_by_id(b, id)) &&
	       (btf_is_typedef(t) || btf_is_const(t) || btf_is_volatile(t) || btf_is_restrict(t) ||
		btf_kind(t) == BTF_KIND_TYPE_TAG))
		id = t->type;
	return id;
}

/*
 * The member name of struct or union id, searched through its anonymous
 * members as a CO-RE access does: its type and bit offset from the
 * struct's start.  -1 if none.
 */
static int find_member(const struct btf *b, __s32 id, const char *name, __s32 *type, __u32 *bits)
{
	const struct btf_type *t = btf__type_by_id(b, id);
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(b, m->name_off);
		__u32 off = btf_member_bit_offset(t, i);
		if (n && *n) {
			if (strcmp(n, name))
				continue;
			if (btf_member_bitfield_size(t, i))
				return -1;
			*type = m->type;
			*bits = off;
			return 0;
		}
		__s32 inner = resolve(b, m->type);
		const struct btf_type *it = btf__type_by_id(b, inner);
		if (it && btf_is_composite(it) && !find_member(b, inner, name, type, bits)) {
			*bits += off;
			return 0;
		}
	}
	return -1;
}

/* The cut-down copy of vmlinux's member type: an int as it is, any pointer as void *, a struct of ours by name. */
static int member_type(struct btf *out, const struct btf *vm, __s32 vtype)
{
	__s32 id = resolve(vm, vtype);
	const struct btf_type *t = btf__type_by_id(vm, id);

	if (!t)
		return -1;
	if (btf_is_ptr(t))
		return btf__add_ptr(out, 0);
	if (btf_is_int(t))
		return btf__add_int(out, btf__name_by_offset(vm, t->name_off), t->size, btf_int_encoding(t));
	if (btf_is_enum(t))
		return btf__add_int(out, "int", t->size, BTF_INT_SIGNED);
	if (btf_is_composite(t)) {
		/* Embedded: already in out, since fields[] lists it before its container. */
		__s32 mine = btf__find_by_name_kind(out, btf__name_by_offset(vm, t->name_off),
						    btf_is_struct(t) ? BTF_KIND_STRUCT : BTF_KIND_UNION);
		return mine > 0 ? mine : -1;
	}
	return -1;
}

/* The struct and its listed members (all for "S.*", plain ones) from vm into out.  0 or -1. */
static int add_struct(struct btf *out, const struct btf *vm, const char *sname)
{
	__s32 sid = btf__find_by_name_kind(vm, sname, BTF_KIND_STRUCT);
	char prefix[80];
	struct {
		const char *name;
		int type;
		__u32 bits;
	} m[64];
	int n = 0;

	if (sid < 0)
		return -1;
	snprintf(prefix, sizeof(prefix), "%s.", sname);
	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++) {
		if (strncmp(fields[i], prefix, strlen(prefix)))
			continue;
		const char *mname = fields[i] + strlen(prefix);
		if (!strcmp(mname, "*")) {
			/* Every plain member: integer registers (the rest are not read). */
			const struct btf_type *t = btf__type_by_id(vm, sid);
			const struct btf_member *bm = btf_members(t);
			for (int k = 0; k < btf_vlen(t) && n < 64; k++, bm++) {
				const struct btf_type *mt = btf__type_by_id(vm, resolve(vm, bm->type));
				const char *nm = btf__name_by_offset(vm, bm->name_off);
				if (!nm || !*nm || !mt || !btf_is_int(mt) || btf_member_bitfield_size(t, k))
					continue;
				m[n].name = nm;
				m[n].bits = btf_member_bit_offset(t, k);
				if ((m[n].type = member_type(out, vm, bm->type)) < 0)
					return -1;
				n++;
			}
			continue;
		}
		__s32 vtype;
		if (n == 64 || find_member(vm, sid, mname, &vtype, &m[n].bits))
			return -1;
		m[n].name = mname;
		if ((m[n].type = member_type(out, vm, vtype)) < 0)
			return -1;
		n++;
	}
	if (btf__add_struct(out, sname, btf__type_by_id(vm, sid)->size) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (btf__add_field(out, m[i].name, m[i].type, m[i].bits, 0))
			return -1;
	return 0;
}

static int build(int dfd, const char *name)
{
	struct btf *vm = btf__load_vmlinux_btf(), *out = btf__new_empty();
	size_t n = sizeof(fields) / sizeof(*fields);
	int rc = -1;

	if (!vm || !out)
		goto done;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(fields[i], "."), k = 0;
		char sname[64];
		/* Each struct once, where it first appears. */
		while (k < i && (strcspn(fields[k], ".") != len || strncmp(fields[k], fields[i], len)))
			k++;
		if (k < i)
			continue;
		snprintf(sname, sizeof(sname), "%.*s", (int)len, fields[i]);
		if (add_struct(out, vm, sname)) {
			ht_info("kernel types: struct %s or a member of it is not in this kernel's BTF as heaptrace reads it",
				sname);
			goto done;
		}
	}
	__u32 size;
	const void *raw = btf__raw_data(out, &size);
	rc = raw ? cache_write(dfd, name, raw, size) : -1;
done:
	btf__free(out);
	btf__free(vm);
	return rc;
}

/* The cache file's name: this kernel (release, build, BTF size) and the list of members; another of either, another file. */
static int file_name(char *name, size_t len)
{
	struct utsname u;
	struct stat st;
	uint64_t h = 0xcbf29ce484222325ull;

	if (uname(&u) || stat("/sys/kernel/btf/vmlinux", &st))
		return -1;
	h = fnv(h, u.release, strlen(u.release));
	h = fnv(h, u.version, strlen(u.version));
	h = fnv(h, &st.st_size, sizeof(st.st_size));
	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
		h = fnv(h, fields[i], strlen(fields[i]) + 1);
	snprintf(name, len, "kernel-%016llx.btf", (unsigned long long)h);
	return 0;
}

void ktypes_forget(void)
{
	char dir[4096], name[128];
	int dfd;

	if (file_name(name, sizeof(name)) || (dfd = cache_dir_open(dir, sizeof(dir))) < 0)
		return;
	if (!unlinkat(dfd, name, 0))
		ht_info("kernel types: %s/%s removed: the next run builds it again", dir, name);
	close(dfd);
}

int ktypes_path(char *path, size_t len, bool *built, int *fdp)
{
	char dir[4096], name[128];
	struct stat st;
	int dfd, rc = -1;

	*built = false;
	if (file_name(name, sizeof(name)) || (dfd = cache_dir_open(dir, sizeof(dir))) < 0)
		return -1;
	if (faccessat(dfd, name, R_OK, AT_SYMLINK_NOFOLLOW)) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (build(dfd, name)) {
			ht_info("kernel types: cannot build %s/%s: the whole kernel BTF is read", dir, name);
			goto out;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ht_info("kernel types: %s/%s built in %.1f ms (from the kernel's whole BTF, once for this kernel)", dir,
			name, (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
		*built = true;
	}
	/* Read through the fd checked here, not by name again: the types steer the BPF object's reads. */
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 ||
	    (st.st_mode & 022)) {
		ht_info("kernel types: %s/%s is not ours alone: the whole kernel BTF is read", dir, name);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	*fdp = fd;
	rc = 0;
out:
	close(dfd);
	return rc;
}
