/*
 * An object loaded beside the main one with the main object's maps (by
 * fd): the stub's programs apart, the uprobe programs' object, the session
 * program and the drain's object all count and record into the same maps,
 * which requires their globals where the main object has them.
 */
#include <errno.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeletons: they name our shared structs */
#include "heaptrace.skel.h"
#include "tracer/internal.h"
#include "tracer/uprobe_multi.h"
#include "util/log.h"

/* libbpf 1.1 has no uprobe.multi nor uprobe.session section: the attach types by hand. */
void tracer_set_attach_types(struct bpf_object *obj, bool multi)
{
	struct bpf_program *p;

	if (!multi)
		return;
	bpf_object__for_each_program(p, obj)
		if (bpf_program__type(p) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(p, strcmp(bpf_program__name(p), "alloc_session") ?
								 HT_BPF_TRACE_UPROBE_MULTI :
								 HT_BPF_TRACE_UPROBE_SESSION);
}

/* An internal map's section (".bss" of "heaptrac.bss"); another map's name. */
static const char *map_key(const struct bpf_map *m)
{
	const char *n = bpf_map__name(m), *dot = strchr(n, '.');

	return dot && n[0] != '.' ? dot : n;
}

static struct bpf_map *map_like(struct bpf_object *obj, const struct bpf_map *m)
{
	struct bpf_map *x;

	bpf_object__for_each_map(x, obj)
		if (!strcmp(map_key(x), map_key(m)))
			return x;
	return NULL;
}

/*
 * Does every global of obj's data sections sit where it does in main's
 * (obj's programs read them in main's maps)?
 */
static bool same_globals(struct bpf_object *main, struct bpf_object *obj)
{
	const struct btf *bm = bpf_object__btf(main), *bo = bpf_object__btf(obj);

	for (__u32 id = 1; bm && bo && id < (__u32)btf__type_cnt(bo); id++) {
		const struct btf_type *t = btf__type_by_id(bo, id);
		const char *sec = btf__name_by_offset(bo, t->name_off);
		if (!btf_is_datasec(t) || (strncmp(sec, ".bss", 4) && strncmp(sec, ".data", 5) && strncmp(sec, ".rodata", 7)))
			continue;
		__s32 other = btf__find_by_name_kind(bm, sec, BTF_KIND_DATASEC);
		if (other < 0)
			return false;
		const struct btf_type *u = btf__type_by_id(bm, other);
		const struct btf_var_secinfo *v = btf_var_secinfos(t);
		for (int i = 0; i < btf_vlen(t); i++, v++) {
			const char *name = btf__name_by_offset(bo, btf__type_by_id(bo, v->type)->name_off);
			const struct btf_var_secinfo *w = btf_var_secinfos(u);
			int k = 0;
			for (; k < btf_vlen(u); k++, w++)
				if (!strcmp(name, btf__name_by_offset(bm, btf__type_by_id(bm, w->type)->name_off)))
					break;
			if (k == btf_vlen(u) || w->offset != v->offset || w->size != v->size) {
				ht_info("BPF objects: %s of %s is not where the main object has it", name, sec);
				return false;
			}
		}
	}
	return bm && bo;
}

bool tracer_shares_map(const struct tracer *tr, const struct bpf_map *m)
{
	return map_like(tr->skel->obj, m) != NULL;
}

int tracer_share_maps(struct tracer *tr, struct bpf_object *obj)
{
	struct bpf_map *m;

	if (!same_globals(tr->skel->obj, obj)) {
		ht_err("BPF objects built apart: their globals differ; cannot load %s", bpf_object__name(obj));
		return -EINVAL;
	}
	/* A map the main object does not have is the object's own (drain.bpf.c's ring_stacks). */
	bpf_object__for_each_map(m, obj) {
		struct bpf_map *mine = map_like(tr->skel->obj, m);
		int err = mine ? bpf_map__reuse_fd(m, bpf_map__fd(mine)) : 0;
		if (err)
			return err;
	}
	return 0;
}

/*
 * Load the program named want (and the uprobe programs of the list the
 * first load left out) into an object that has the main object's maps, by
 * fd: the programs it loads count and record into the same maps.
 */
int tracer_load_into(struct tracer *tr, struct bpf_object *obj, struct bpf_object_skeleton *s, const char *want,
		     const char *const *also, struct tracer_times *times)
{
	struct bpf_program *p;
	int err = tracer_share_maps(tr, obj);

	if (err)
		return err;
	tracer_set_attach_types(obj, tr->multi);
	bpf_object__for_each_program(p, obj) {
		bool load = !strcmp(bpf_program__name(p), want);
		for (int i = 0; also && also[i]; i++)
			load |= !strcmp(bpf_program__name(p), also[i]);
		bpf_program__set_autoload(p, load);
	}
	return tracer_timed_load(times, s);
}
