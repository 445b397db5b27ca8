/* Address -> function, file:line, inline frames, via elfutils libdwfl. */
#ifndef HT_SYMBOLIZE_H
#define HT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;

/* One source-level frame.  Strings are owned by the symbolizer and stay valid
 * until sym_close(). */
struct sym_frame {
	const char *func;    /* demangled function name, NULL when unknown */
	const char *system;  /* the name as linked (mangled for C++), NULL when unknown */
	const char *file;    /* source file, NULL when unknown */
	int line;            /* 0 when unknown */
	bool inlined;        /* func was inlined into its caller, the next frame when there is one */
	const char *module;  /* basename of the mapped object, NULL when the pc is in no module */
	uint64_t module_off; /* pc relative to the module's load bias (ELF virtual address) */
};

/*
 * Build a symbolizer for a process from the text of its /proc/PID/maps as it
 * was captured while the process lived, so symbolization works after exit.
 * Returns NULL with errno set on failure.
 */
struct symbolizer *sym_open(const char *maps_text);

/*
 * --debug-dir: separate debug info is looked for in dir before
 * /usr/lib/debug by every symbolizer opened after this (process-wide, as
 * libdwfl's search path is).
 */
void sym_set_debug_dir(const char *dir);
void sym_close(struct symbolizer *s);

/*
 * Expand pc into its source frames, innermost (deepest inline) first, as
 * eu-addr2line -i -f prints them: frames[0] is the function the code at pc
 * is from and the line there; each next frame is the function that the one
 * before was inlined into (inlined set on the one before) and the line of
 * that call; the last is the function the machine code belongs to.
 * is_return_addr: pc is a return address, so pc-1 is looked up, which lands
 * on the call instruction rather than the one after it.  Always yields at
 * least one frame (an unknown pc gives func == NULL).  Results are cached per
 * pc, up to SYM_CACHE_MAX pcs (past that they are symbolized again each
 * time: the same frames, memory bounded whatever a profile holds); a pc in
 * no module takes no entry.  *frames is valid until the next sym_lookup or
 * sym_close.  Returns the number of frames.
 */
int sym_lookup(struct symbolizer *s, uint64_t pc, bool is_return_addr,
	       const struct sym_frame **frames);

/* Distinct pcs a symbolizer keeps: ~100 bytes each, ~25 MiB at most. */
#define SYM_CACHE_MAX (256u * 1024)

/* The time the symbolizer's lookups have spent symbolizing so far (misses), ms. */
double sym_busy_ms(const struct symbolizer *s);

/*
 * The name of a signal handler's return address, the signal return
 * trampoline (glibc's __restore_rt): above it is the kernel's signal
 * frame, and above that the code the signal interrupted.  gdb's name.
 */
#define SYM_SIGNAL_FRAME "<signal handler called>"

/* "func" or "[module+0xoff]" or "[0xpc]": the name flame graphs show. */
const char *sym_frame_name(const struct sym_frame *f, uint64_t pc, char *buf, size_t len);

/*
 * sym_frame_name, but a Python frame (a pc of HT_PY_FRAME) is
 * "qualname (file.py:LINE)", its file's base name, as py-spy and Austin
 * name them: a frame of a collapsed stack or a flame graph is one line.
 */
const char *sym_frame_label(const struct sym_frame *f, uint64_t pc, char *buf, size_t len);

#endif
