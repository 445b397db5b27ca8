/*
 * Shared objects for tests/unit/test_unwind_table.c, built by the Makefile
 * into build/fixtures/ (not build/unit/: every executable there is run as
 * a test):
 *
 *   unwind_fixture_o2.so     -O2 -fomit-frame-pointer: .eh_frame
 *   unwind_fixture_o0.so     -O0 -fno-omit-frame-pointer: .eh_frame
 *   unwind_fixture_dbg.so    .debug_frame only (no .eh_frame), no build ID
 *   unwind_fixture_dbgz.so   the same, with .debug_frame compressed (-gz)
 *   unwind_fixture_nocfi.so  -DFIXTURE_NO_CFI: no CFI at all
 *
 * The fx_* functions are assembly with hand-written CFI, so the rows the
 * test expects follow from the directives here and nothing else; the
 * byte offsets in their comments are the instructions' lengths.  Nothing
 * here calls into libc, so the objects link with -nostdlib.
 */

int (*volatile fixture_callee)(int);

/* -O0: push rbp; mov rbp,rsp.  -O2: a callee-saved register kept across a call. */
__attribute__((noinline)) int fixture_c(int x)
{
	int a = fixture_callee(x);
	int b = fixture_callee(a + x);

	return a * x + b;
}

#ifndef FIXTURE_NO_CFI
#define FN(name) ".globl " #name "\n.type " #name ",@function\n" #name ":\n"
#define END(name) ".size " #name ", .-" #name "\n"

__asm__(
	".text\n"
	".p2align 4\n"

	/* A frame-pointer frame, rbp restored before the ret. */
	FN(fx_frame)
	".cfi_startproc\n"
	"push %rbp\n"                   /* +0 */
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"              /* +1 */
	".cfi_def_cfa_register %rbp\n"
	"sub $32, %rsp\n"               /* +4 */
	"leave\n"                       /* +8 */
	".cfi_def_cfa %rsp, 8\n"
	".cfi_restore %rbp\n"
	"ret\n"                         /* +9 */
	".cfi_endproc\n"
	END(fx_frame)

	/* Code with no CFI between two functions with CFI: a gap. */
	FN(fx_nocfi)
	"nop\n nop\n nop\n nop\n ret\n"
	END(fx_nocfi)

	/* The outermost frame: return address undefined. */
	FN(fx_outermost)
	".cfi_startproc\n"
	".cfi_undefined %rip\n"
	"xor %ebp, %ebp\n"              /* +0 */
	"hlt\n"                         /* +2 */
	".cfi_endproc\n"
	END(fx_outermost)

	/* GNU ld's .plt CFA expression, then its IBT variant (lit10), then one that is not it (lit12). */
	FN(fx_plt)
	".cfi_startproc\n"
	".cfi_escape 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22\n"
	"nop\n"                         /* +0 */
	".cfi_escape 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22\n"
	"nop\n"                         /* +1 */
	".cfi_escape 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3c, 0x2a, 0x33, 0x24, 0x22\n"
	"ret\n"                         /* +2 */
	".cfi_endproc\n"
	END(fx_plt)

	/* Rules the table cannot express. */
	FN(fx_odd)
	".cfi_startproc\n"
	"push %rbp\n"                   /* +0 */
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -40000\n"    /* rbp beyond s16: HT_RBP_UNKNOWN */
	"nop\n"                         /* +1 */
	".cfi_escape 0x0e, 0x80, 0x80, 0x80, 0x80, 0x10\n"  /* DW_CFA_def_cfa_offset 2^32: beyond s32 */
	"nop\n"                         /* +2 */
	".cfi_def_cfa_offset 16\n"
	".cfi_escape 0x0f, 4, 0x77, 0xa0, 0x01, 0x06\n"  /* CFA = *(rsp + 160) */
	"nop\n"                         /* +3 */
	".cfi_def_cfa %rsp, 16\n"
	".cfi_register %rip, %rdx\n"    /* return address in a register */
	"nop\n"                         /* +4 */
	".cfi_offset %rip, -8\n"
	".cfi_register %rbp, %r9\n"     /* rbp in a register */
	"nop\n"                         /* +5 */
	".cfi_val_offset %rbp, -16\n"   /* rbp's value, not its place */
	"nop\n"                         /* +6 */
	".cfi_offset %rbp, -16\n"
	".cfi_def_cfa %rbx, 16\n"       /* CFA from another register */
	"nop\n"                         /* +7 */
	".cfi_def_cfa %rsp, 16\n"
	"pop %rbp\n"                    /* +8 */
	".cfi_def_cfa_offset 8\n"
	".cfi_restore %rbp\n"
	"ret\n"                         /* +9 */
	".cfi_endproc\n"
	END(fx_odd)

	/* Directly after fx_odd: no gap row between them. */
	FN(fx_next)
	".cfi_startproc\n"
	"ret\n"
	".cfi_endproc\n"
	END(fx_next)

	/*
	 * The return address elsewhere than CFA - 8; then a return address
	 * column other than rip's, with no rule (rip's CIE rule, CFA - 8, must
	 * not be taken for it).
	 */
	FN(fx_ra)
	".cfi_startproc\n"
	".cfi_offset %rip, -16\n"
	"nop\n"                         /* +0 */
	".cfi_endproc\n"
	END(fx_ra)
	FN(fx_ra_column)
	".cfi_startproc\n"
	".cfi_return_column %rax\n"
	"nop\n"                         /* +0 */
	".cfi_endproc\n"
	END(fx_ra_column)

	/*
	 * A signal return trampoline as glibc's __restore_rt describes
	 * itself ('S' augmentation): CFA = *(rsp + 160); rip, rsp and rbp
	 * saved at rsp + 168, 160 and 120 (DW_CFA_expression DW_OP_breg7).
	 * The FDE starts a byte early, as glibc's does, so that the lookup at
	 * a return address - 1 finds it.  Then the same with rip elsewhere:
	 * not where the kernel puts it, so no signal-frame row.
	 */
	".cfi_startproc simple\n"
	".cfi_signal_frame\n"
	".cfi_escape 0x0f, 4, 0x77, 0xa0, 0x01, 0x06\n"    /* CFA = *(rsp + 160) */
	".cfi_escape 0x10, 16, 3, 0x77, 0xa8, 0x01\n"      /* rip at rsp + 168 */
	".cfi_escape 0x10, 7, 3, 0x77, 0xa0, 0x01\n"       /* rsp at rsp + 160 */
	".cfi_escape 0x10, 6, 3, 0x77, 0xf8, 0x00\n"       /* rbp at rsp + 120 */
	"nop\n"
	FN(fx_signal)
	"mov $15, %rax\n"               /* +0: rt_sigreturn */
	"syscall\n"                     /* +7 */
	".cfi_endproc\n"
	END(fx_signal)
	"nop\n"
	".cfi_startproc simple\n"
	".cfi_signal_frame\n"
	".cfi_escape 0x0f, 4, 0x77, 0xa0, 0x01, 0x06\n"
	".cfi_escape 0x10, 16, 3, 0x77, 0xb0, 0x01\n"      /* rip at rsp + 176 */
	".cfi_escape 0x10, 7, 3, 0x77, 0xa0, 0x01\n"
	".cfi_escape 0x10, 6, 3, 0x77, 0xf8, 0x00\n"
	FN(fx_signal_odd)
	"mov $15, %rax\n"
	"syscall\n"
	".cfi_endproc\n"
	END(fx_signal_odd)
);
#endif
