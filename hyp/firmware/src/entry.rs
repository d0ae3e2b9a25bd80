//! The EL2 layer's image header, entry, exception vectors and the way into
//! a partition's Linux: the only assembly in the layer.
//!
//! The monitor enters at the image's base at EL2 on every start of a core
//! in a partition (cold boot, a partition's restart, PSCI CPU_ON), MMU off,
//! with x0 = Linux's entry, x1 = Linux's x0 and x2 = 1 when this starts the
//! partition (its boot core at cold boot or a restart), else 0. The first
//! core ever to arrive zeroes .bss and builds every map (`crate::init`);
//! the others wait for it. A trap from a partition saves its x0-x30 in a
//! frame on the core's stack, which the Rust handler reads and writes; the
//! handler's return resumes the partition with the frame's registers.
//! Nothing uses this module back: the start-up state and `enter_el1` are
//! declared in the crate's root.

use crate::trap::Frame;
use tandem_abi::MAX_CORES;
use tandem_abi::image::HYP_MAGIC;
use tandem_board::MPIDR_AFFINITY_MASK;

/// Bytes of stack per core: a trap's frame and its handler.
pub const STACK_SIZE: usize = 16 * 1024;

/// Per-core stacks, in the NOLOAD `.stacks` section.
#[unsafe(link_section = ".stacks")]
static mut STACKS: [[u8; STACK_SIZE]; MAX_CORES] = [[0; STACK_SIZE]; MAX_CORES];

core::arch::global_asm!(
    r#"
    .section .text.header, "ax"
    .global _start
    /* Image header (abi::image::RtosImageHeader with HYP_MAGIC). */
    b       _start
    .word   0
    .quad   {magic}
    .quad   __image_size
    .quad   __ram_size

_start:
    mov     x19, x0
    mov     x20, x1
    mov     x22, x2
    mrs     x21, mpidr_el1
    ldr     x3, ={aff_mask}
    and     x21, x21, x3
    cmp     x21, #{max_cores}
    b.hs    9f                      /* no core of this machine */
    ldr     x2, ={stacks}
    mov     x3, #{stack_size}
    madd    x4, x21, x3, x3
    add     x4, x4, x2
    mov     sp, x4
    ldr     x5, =vectors
    msr     vbar_el2, x5
    isb

    /* The first core ever zeroes .bss and builds the maps; the others
     * wait for it (MMU off: the state is read and written uncached). */
    ldr     x6, ={init_state}
0:  ldaxr   w7, [x6]
    cmp     w7, #1
    b.ne    3f
    mov     w8, #2
    stxr    w9, w8, [x6]
    cbnz    w9, 0b
    ldr     x10, =__bss_start
    ldr     x11, =__bss_end
1:  cmp     x10, x11
    b.hs    2f
    str     xzr, [x10], #8
    b       1b
2:  mov     x0, x21
    bl      {init}
    ldr     x6, ={init_state}
    stlr    w0, [x6]
    dsb     sy
    sev
    b       5f
3:  clrex
4:  ldar    w7, [x6]
    cmp     w7, #{ready}
    b.hs    5f
    wfe
    b       4b
5:  mov     x0, x21
    mov     x1, x19
    mov     x2, x20
    mov     x3, x22
    bl      {hyp_main}
9:  wfe
    b       9b

    /* Into a partition's Linux at EL1h, every exception masked, MMU off
     * (the monitor reset its EL1 registers): x0 = entry, x1 = its x0. */
    .global enter_el1
enter_el1:
    msr     elr_el2, x0
    mov     x2, #0x3c5
    msr     spsr_el2, x2
    mov     x0, x1
    mov     x1, xzr
    mov     x2, xzr
    mov     x3, xzr
    eret

    /* A trap from the partition: its x0-x30 into a frame on this core's
     * stack, the handler, then back with the frame's registers. */
guest_sync:
    sub     sp, sp, #{frame_size}
    stp     x0, x1, [sp, #0x00]
    stp     x2, x3, [sp, #0x10]
    stp     x4, x5, [sp, #0x20]
    stp     x6, x7, [sp, #0x30]
    stp     x8, x9, [sp, #0x40]
    stp     x10, x11, [sp, #0x50]
    stp     x12, x13, [sp, #0x60]
    stp     x14, x15, [sp, #0x70]
    stp     x16, x17, [sp, #0x80]
    stp     x18, x19, [sp, #0x90]
    stp     x20, x21, [sp, #0xa0]
    stp     x22, x23, [sp, #0xb0]
    stp     x24, x25, [sp, #0xc0]
    stp     x26, x27, [sp, #0xd0]
    stp     x28, x29, [sp, #0xe0]
    str     x30, [sp, #0xf0]
    mov     x0, sp
    bl      {guest_trap}
    ldr     x30, [sp, #0xf0]
    ldp     x28, x29, [sp, #0xe0]
    ldp     x26, x27, [sp, #0xd0]
    ldp     x24, x25, [sp, #0xc0]
    ldp     x22, x23, [sp, #0xb0]
    ldp     x20, x21, [sp, #0xa0]
    ldp     x18, x19, [sp, #0x90]
    ldp     x16, x17, [sp, #0x80]
    ldp     x14, x15, [sp, #0x70]
    ldp     x12, x13, [sp, #0x60]
    ldp     x10, x11, [sp, #0x50]
    ldp     x8, x9, [sp, #0x40]
    ldp     x6, x7, [sp, #0x30]
    ldp     x4, x5, [sp, #0x20]
    ldp     x2, x3, [sp, #0x10]
    ldp     x0, x1, [sp, #0x00]
    add     sp, sp, #{frame_size}
    eret

    /* Anything else: a fault in the layer itself, or an exception the
     * layer's settings never route here. */
unexpected_entry:
    mrs     x0, esr_el2
    mrs     x1, elr_el2
    mrs     x2, far_el2
    bl      {unexpected}

    .section .text.vectors, "ax"
    .balign 0x800
vectors:
    .rept 8
    .balign 0x80
    b       unexpected_entry
    .endr
    .org    vectors + 0x400
    b       guest_sync
    .rept 7
    .balign 0x80
    b       unexpected_entry
    .endr
    .org    vectors + 0x800
"#,
    magic = const HYP_MAGIC,
    aff_mask = const MPIDR_AFFINITY_MASK,
    max_cores = const MAX_CORES,
    stacks = sym STACKS,
    stack_size = const STACK_SIZE,
    init_state = sym crate::INIT_STATE,
    ready = const crate::READY,
    init = sym crate::init,
    hyp_main = sym crate::hyp_main,
    guest_trap = sym crate::trap::guest_trap,
    unexpected = sym crate::trap::unexpected,
    frame_size = const core::mem::size_of::<Frame>(),
);
