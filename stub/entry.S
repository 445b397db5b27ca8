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
 * struct stub_frame, from %rsp up: target, index, rbp, rdi, rsi, rdx, rcx,
 * r8, r9, then the caller's return address (the entry's stack pointer).
 */
	.section .text.entry, "ax"
	.globl stub_entries
stub_entries:
	jmp stub_alloc			/* STUB_ENTRY_ALLOC */
	.balign 8
	jmp stub_free			/* STUB_ENTRY_FREE */
	.balign 8
	.globl ht_stub_alloc_site
ht_stub_alloc_site:			/* STUB_SITE_ALLOC: a 5-byte nop, optimized uprobes go here */
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	ret
	.balign 8
	.globl ht_stub_free_site
ht_stub_free_site:			/* STUB_SITE_FREE */
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	ret
	.balign 8

	.text
.macro SAVE_FRAME
	push %r9
	push %r8
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r11
	push $0				/* target, set by the C side */
	/* entry %rsp was 8 mod 16 (a call pushed the return address): 72 bytes later it is 0 mod 16 */
.endm

.macro RESTORE_ARGS
	mov 24(%rsp), %rdi
	mov 32(%rsp), %rsi
	mov 40(%rsp), %rdx
	mov 48(%rsp), %rcx
	mov 56(%rsp), %r8
	mov 64(%rsp), %r9
.endm

	.type stub_alloc, @function
stub_alloc:
	SAVE_FRAME
	mov %rsp, %rdi
	call stub_alloc_enter		/* 0: straight through; else call the original */
	mov (%rsp), %r11
	test %eax, %eax
	jnz 1f
	RESTORE_ARGS
	add $72, %rsp
	jmp *%r11
1:	RESTORE_ARGS
	call *%r11
	mov %rsp, %rdi
	mov %rax, %rsi
	call stub_alloc_exit		/* returns the original's return value */
	add $72, %rsp
	ret
	.size stub_alloc, .-stub_alloc

	.type stub_free, @function
stub_free:
	SAVE_FRAME
	mov %rsp, %rdi
	call stub_free_enter
	mov (%rsp), %r11
	RESTORE_ARGS
	add $72, %rsp
	jmp *%r11
	.size stub_free, .-stub_free

	.section .note.GNU-stack, "", @progbits
