/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TANDEM_HOSTILE_H
#define TANDEM_HOSTILE_H

/*
 * vectors.S: a vector table for stretches of trapped accesses, whose every
 * entry skips the faulting instruction and counts it in x17.
 */
extern char tandem_hostile_vectors[];

#endif
