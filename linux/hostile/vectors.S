/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A vector table for tandem_hostile's stretches of trapped accesses: the
 * "current EL, SPx, synchronous" entry skips the faulting instruction and
 * counts it in x17. Every other entry would be a bug there (interrupts are
 * masked, FIQs go to EL3) and does the same, which keeps the CPU alive.
 */
#include <linux/linkage.h>

	.pushsection .text.tandem_hostile_vectors, "ax"
	.balign 2048
SYM_CODE_START(tandem_hostile_vectors)
	.rept 16
	.balign 128
	mrs	x16, elr_el1
	add	x16, x16, #4
	msr	elr_el1, x16
	add	x17, x17, #1
	eret
	.endr
SYM_CODE_END(tandem_hostile_vectors)
	.popsection
