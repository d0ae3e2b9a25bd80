//! The RTOS's image header, reset entry and S-EL1 exception vectors: the only
//! assembly in the RTOS. An interrupt saves the whole interrupted context as a
//! frame on the current stack and hands the frame to Rust, which returns the
//! frame to resume.

use crate::frame::FRAME_SIZE;
use crate::{exceptions, start};
use tandem_abi::MAX_CORES;
use tandem_abi::image::RTOS_MAGIC;

/// Bytes of stack per core: the idle context, interrupt handling, and, on the
/// first core, building the kernel state (several KiB, moved by value).
const STACK_SIZE: usize = 64 * 1024;

/// Per-core stacks, in the NOLOAD `.stacks` section.
#[unsafe(link_section = ".stacks")]
static mut STACKS: [[u8; STACK_SIZE]; MAX_CORES] = [[0; STACK_SIZE]; MAX_CORES];

/// Start-up handshake between cores, in .data so it is valid before .bss is
/// zeroed: 1 untouched, 2 being initialised by the first core in, 3 ready.
#[unsafe(no_mangle)]
pub static INIT_STATE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(1);

core::arch::global_asm!(
    r#"
    .section .text.header, "ax"
    .global _start
    /* Image header (abi::image::RtosImageHeader); the monitor enters here. */
    b       _start
    .word   0
    .quad   {magic}
    .quad   __image_size
    .quad   __ram_size

_start:
    /* x0 = core index, x1 = shared region, x2 = RTOS cores, from the monitor. */
    mov     x19, x0
    mov     x20, x1
    mov     x21, x2
    ldr     x2, ={stacks}
    mov     x3, #{stack_size}
    madd    x4, x19, x3, x3
    add     x4, x4, x2
    mov     sp, x4
    ldr     x5, =vectors
    msr     vbar_el1, x5
    isb

    /* The first core in zeroes .bss; the others wait for it. */
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
2:  mov     w8, #3
    stlr    w8, [x6]
    sev
    mov     x3, #1
    b       5f
3:  clrex
4:  ldar    w7, [x6]
    cmp     w7, #3
    b.eq    6f
    wfe
    b       4b
6:  mov     x3, #0
5:  mov     x0, x19
    mov     x1, x20
    mov     x2, x21
    bl      {rtos_main}
7:  wfe
    b       7b

    .macro  save_frame
    sub     sp, sp, #{frame_size}
    stp     x0, x1, [sp, #0x00]
    str     xzr, [sp, #0xf8]
    save_frame_from_x2
    .endm

    /* Everything but x0, x1 and `entered`. */
    .macro  save_frame_from_x2
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
    mrs     x0, elr_el1
    mrs     x1, spsr_el1
    str     x30, [sp, #0xf0]
    stp     x0, x1, [sp, #0x100]
    mrs     x0, sp_el0
    str     x0, [sp, #0x110]
    mov     x0, sp
    .endm

irq_entry:
    sub     sp, sp, #{frame_size}
    stp     x0, x1, [sp, #0x00]
    mrs     x0, cntpct_el0
    str     x0, [sp, #0xf8]
    save_frame_from_x2
    bl      {irq_handler}
    b       restore_frame

sync_entry:
    save_frame
    bl      {sync_handler}
    b       restore_frame

    /* x0 = the frame to resume. */
restore_frame:
    mov     sp, x0
    ldr     x0, [sp, #0x110]
    msr     sp_el0, x0
    ldp     x0, x1, [sp, #0x100]
    msr     elr_el1, x0
    msr     spsr_el1, x1
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

unexpected_entry:
    mrs     x0, esr_el1
    mrs     x1, elr_el1
    mrs     x2, far_el1
    bl      {fault}

    .section .text.vectors, "ax"
    .balign 0x800
vectors:
    /* Current EL with SP_EL0: never used. */
    .rept 4
    .balign 0x80
    b       unexpected_entry
    .endr
    /* Current EL with SP_EL1: the RTOS itself. */
    .balign 0x80
    b       sync_entry
    .balign 0x80
    b       irq_entry
    .balign 0x80
    b       unexpected_entry        /* FIQs (Linux's) stay masked */
    .balign 0x80
    b       unexpected_entry
    /* Lower EL, AArch64: protected tasks (S-EL0). Their frame goes on
       their kernel stack (SP_EL1 is its top while they run). */
    .balign 0x80
    b       sync_entry
    .balign 0x80
    b       irq_entry
    .balign 0x80
    b       unexpected_entry        /* FIQs stay masked at S-EL0 too */
    .balign 0x80
    b       unexpected_entry
    /* Lower EL, AArch32: none. */
    .rept 4
    .balign 0x80
    b       unexpected_entry
    .endr
"#,
    magic = const RTOS_MAGIC,
    stacks = sym STACKS,
    stack_size = const STACK_SIZE,
    init_state = sym INIT_STATE,
    rtos_main = sym start::rtos_main,
    irq_handler = sym exceptions::irq_handler,
    sync_handler = sym exceptions::sync_handler,
    fault = sym exceptions::fault,
    frame_size = const FRAME_SIZE,
);
