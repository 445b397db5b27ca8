/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The record sites: where a recorded call reaches heaptrace, a 5-byte nop
 * each, which an optimized uprobe turns into a call into the kernel's
 * trampoline.  decide.c calls them; they follow the entry points in
 * .text.entry (entry.o links first), at the offsets stub.h fixes.
 */
	.section .text.entry, "ax"
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

	.section .note.GNU-stack, "", @progbits
