/*
 * The stub's own stack walk (stub/unwind.c): how it walks, as --unwind
 * says, and its CFI tables in the target, which
 * user/unwind/ keeps filled once user/inject/ has mapped them.  HEAPTRACE_WALK=bpf (a test
 * hook) leaves every walk to the BPF side, as before the stub walked:
 * scenario stubwalk compares the two.
 */
#include <stdlib.h>
#include <string.h>

#include "session/state.h"
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
}
