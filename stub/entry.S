/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stub's entry points.  A traced function's first bytes are a jump to
 * its entry_i (written by user/inject/), which loads i into %r11 (scratch
 * in the System V ABI, and no argument) and jumps here.  On entry %rsp
 * points at the caller's return address and the argument registers are
 * the caller's: the handlers save them in a struct stub_frame, let C
 * decide, and then either jump to the original with every register as it
 * came (the common case: nothing is recorded, nothing else happens) or call
 * it and report the result.
 *
 * struct stub_frame, from %rsp up: the spec's reads of memory at the entry
 * (4 slots), target, index, rbp, rdi, rsi, rdx, rcx, r8, r9, rax, r10, then
 * the caller's return address (the entry's stack pointer).  %rax (a
 * variadic call's count of vector registers) and %r10 (a static chain) go
 * to the original as they came, as the argument registers do: any function
 * of the program may be redirected (--sym), not only the malloc family.
 */
	.section .text.entry, "ax"
	.globl stub_entries
stub_entries:
	jmp stub_alloc			/* STUB_ENTRY_ALLOC */
	.balign 8
	jmp stub_free			/* STUB_ENTRY_FREE */
	.balign 8
	.text
.macro SAVE_FRAME
	push %r10
	push %rax
	push %r9
	push %r8
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r11
	push $0				/* target, set by the C side */
	sub $32, %rsp			/* the spec's reads of memory */
	/* entry %rsp was 8 mod 16 (a call pushed the return address): FRAME bytes later it is 0 mod 16 */
.endm

#define FRAME 120

.macro RESTORE_ARGS
	mov 56(%rsp), %rdi
	mov 64(%rsp), %rsi
	mov 72(%rsp), %rdx
	mov 80(%rsp), %rcx
	mov 88(%rsp), %r8
	mov 96(%rsp), %r9
	mov 104(%rsp), %rax
	mov 112(%rsp), %r10
.endm

	.type stub_alloc, @function
stub_alloc:
	SAVE_FRAME
	mov %rsp, %rdi
	call stub_alloc_enter		/* 0: straight through; else call the original */
	mov 32(%rsp), %r11
	test %eax, %eax
	jnz 1f
	RESTORE_ARGS
	add $FRAME, %rsp
	jmp *%r11
1:	RESTORE_ARGS
	call *%r11
	mov %rdx, 112(%rsp)		/* a 16-byte result's second half (r10's slot is free now) */
	mov %rsp, %rdi
	mov %rax, %rsi
	call stub_alloc_exit		/* returns the original's return value */
	mov 112(%rsp), %rdx
	add $FRAME, %rsp
	ret
	.size stub_alloc, .-stub_alloc

	.type stub_free, @function
stub_free:
	SAVE_FRAME
	mov %rsp, %rdi
	call stub_free_enter
	mov 32(%rsp), %r11
	RESTORE_ARGS
	add $FRAME, %rsp
	jmp *%r11
	.size stub_free, .-stub_free

	.section .note.GNU-stack, "", @progbits
