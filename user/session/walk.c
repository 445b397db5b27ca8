/*
 * The stub's own stack walk (stub/unwind.c): how it walks, as --unwind
 * says, and its CFI tables in the target, which
 * user/unwind/ keeps filled once user/inject/ has mapped them.  HEAPTRACE_WALK=bpf (a test
 * hook) leaves every walk to the BPF side, as before the stub walked:
 * scenario stubwalk compares the two.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "session/state.h"
#include "profile/profile.h"
#include "symbolize/pyframes.h"
#include "util/log.h"

static void shared(void *arg, const struct inject *in, struct ht_share *map, uint32_t rows, const char *maps)
{
	struct session *s = arg;
	char root[64];

	session_proc_root(s, in->pid, root, sizeof(root));
	unwind_share(&s->uw, in->slot, map, rows, maps, root);
}

/*
 * A stub of another process (procstub.c), walking as the target's: with
 * CFI tables, a mapping of its own in it, indexed with its own code.
 */
void session_walk_share(struct session *s, struct inject *kid, uint32_t slot)
{
	kid->slot = slot;
	if (kid->walk != STUB_WALK_CFI)
		return;
	kid->share_rows = s->in.share_rows;
	kid->on_share = shared;
	kid->on_share_arg = s;
}

/* A process whose stub reads Python frames: their code objects are read from it (user/symbolize/pyframes.c). */
static void python_read(void *arg, const struct inject *in)
{
	(void)arg;
	pyf_process(in->pid, in->pyf->lay, in->py_code_type,
		    in->base + STUB_DATA_OFF + offsetof(struct stub_data, py_log_n));
	ht_info("Python frames: read in PID %d (CPython 3.%d)", in->pid, in->pyf->lay->minor);
}

/* What a stub of another process (procstub.c) takes of the target's Python frames. */
void session_walk_python(const struct session *s, struct inject *kid)
{
	kid->pyf = s->in.pyf;
	kid->on_python = s->in.on_python;
	kid->on_python_arg = s->in.on_python_arg;
}

/*
 * pid is about to exit: the code objects of the Python frames its stacks
 * hold are read now, the last moment they can be (a sampled stack went
 * through the record site, past the drain).
 */
void session_python_exiting(struct session *s, pid_t pid)
{
	if (!pyf_active())
		return;
	tracer_drain(&s->tr);
	profile_note_python(&s->tr, pid);
}

void session_plan_walk(struct session *s)
{
	const char *how = getenv("HEAPTRACE_WALK");
	struct inject *in = &s->in;

	in->walk = s->cfg.stack_mode == HT_STACK_DWARF ? STUB_WALK_CFI :
		   s->cfg.stack_mode == HT_STACK_WALK ? STUB_WALK_FP : STUB_WALK_NONE;
	/*
	 * Sampled too: a recorded sample then goes to the ring as an exact
	 * event does, with no kernel entry (at 4K over 528-byte blocks, one
	 * call in eight is recorded: a trap each cost more than exact mode).
	 */
	if (how && !strcmp(how, "bpf"))
		in->walk = STUB_WALK_NONE;
	else if (how && strcmp(how, "stub"))
		ht_err("HEAPTRACE_WALK=%s: not bpf or stub; the stub walks", how);
	in->max_depth = s->cfg.max_depth;
	in->min_frame_addr = tracer_min_frame_addr(&s->tr);
	in->share_rows = in->walk == STUB_WALK_CFI ? tracer_unwind_capacity(&s->tr) : 0;
	in->on_share = shared;
	in->on_share_arg = s;
	/*
	 * Python frames are the stub's to read: none where the BPF side walks.
	 * HEAPTRACE_PYFRAMES=off (make bench-python's hook) leaves them out,
	 * to measure what they cost.
	 */
	const char *py = getenv("HEAPTRACE_PYFRAMES");
	in->pyf = in->walk != STUB_WALK_NONE && !(py && !strcmp(py, "off")) ? &s->specs.py.frames : NULL;
	in->on_python = python_read;
	in->on_python_arg = s;
	in->pyt = &s->pyt;
}
