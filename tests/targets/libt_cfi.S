/*
 * Two plugins for t_dlopen whose code is the same, byte for byte, but for
 * constants, and whose CFI differs at the same addresses: libt_cfi_a.so,
 * and libt_cfi_b.so (-DVARIANT_B), which t_dlopen opens where the first
 * was (scenario dlopen, dlopen_samepc).  A return address in plugin_mid is
 * then the same pc in both, with another frame size: a walk that used the
 * first library's row for it (a cache of rows by pc that outlived the
 * index it was read from: stub/unwind.c) would read the return address at
 * the first one's CFA - 8, where the second keeps a 0: its stack would end
 * there, plugin_alloc;plugin_mid, without plugin_entry and main.
 *
 *   plugin_early   3 x malloc(333), kept (t_dlopen calls it at once)
 *   plugin_entry -> plugin_mid -> plugin_alloc
 *                  a: 5 x malloc(777) = 3885 bytes, b: 4 x malloc(555) = 2220
 *
 * Assembly, so that the offsets are the same in both: every instruction
 * that differs has the same length (imm32 and disp8 forms).  No frame
 * pointers (rbp is never touched: a frame-pointer walk skips these frames).
 */
#ifdef VARIANT_B
#define COUNT 4
#define SIZE 555
#define FRAME 0x58      /* CFA = rsp + 0x70 in plugin_mid's body */
#define ZERO_AT 0x28    /* variant a's CFA - 8 (0x30 - 8): a 0 there */
#else
#define COUNT 5
#define SIZE 777
#define FRAME 0x18      /* CFA = rsp + 0x30 */
#define ZERO_AT 0x10    /* a local of its own */
#endif

	.text

	.globl plugin_early
	.type plugin_early, @function
plugin_early:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	xor %ebx, %ebx
1:	movl $333, %edi
	call malloc@PLT
	leaq plugin_early_blocks(%rip), %rcx
	movq %rax, (%rcx,%rbx,8)
	inc %ebx
	cmp $3, %ebx
	jl 1b
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size plugin_early, . - plugin_early

	.hidden plugin_alloc
	.type plugin_alloc, @function
plugin_alloc:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	movslq %edi, %rbx
	movl $SIZE, %edi
	call malloc@PLT
	leaq plugin_blocks(%rip), %rcx
	movq %rax, (%rcx,%rbx,8)
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size plugin_alloc, . - plugin_alloc

	.hidden plugin_mid
	.type plugin_mid, @function
plugin_mid:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	push %r12
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r12, -24
	.byte 0x48, 0x83, 0xec, FRAME           /* sub $FRAME, %rsp (imm8 in both) */
	.cfi_adjust_cfa_offset FRAME
	.byte 0x48, 0xc7, 0x44, 0x24, ZERO_AT   /* movq $0, ZERO_AT(%rsp) (disp8 in both) */
	.long 0
	mov %edi, %r12d
	xor %ebx, %ebx
1:	cmp %r12d, %ebx
	jge 2f
	mov %ebx, %edi
	call plugin_alloc       /* the return address: the same pc in both, other CFI */
	inc %ebx
	jmp 1b
2:	mov %ebx, %eax
	.byte 0x48, 0x83, 0xc4, FRAME           /* add $FRAME, %rsp */
	.cfi_adjust_cfa_offset -FRAME
	pop %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size plugin_mid, . - plugin_mid

	.globl plugin_entry
	.type plugin_entry, @function
plugin_entry:
	.cfi_startproc
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	movl $COUNT, %edi
	call plugin_mid
	cmpl $COUNT, %eax
	setne %al
	movzbl %al, %eax
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size plugin_entry, . - plugin_entry

	.bss
	.align 8
	.type plugin_blocks, @object
	.size plugin_blocks, 64
plugin_blocks:
	.zero 64
	.type plugin_early_blocks, @object
	.size plugin_early_blocks, 24
plugin_early_blocks:
	.zero 24

	.section .note.GNU-stack, "", @progbits
