//! The RTOS's image header, reset entry and S-EL1 exception vectors: the only
//! assembly in the RTOS. An interrupt saves the whole interrupted context as a
//! frame on the current stack and hands the frame to Rust, which returns the
//! frame to resume.

use crate::frame::FRAME_SIZE;
use crate::{exceptions, start};
use tandem_abi::MAX_CORES;
use tandem_abi::image::RTOS_MAGIC;
use tandem_runtime::FirstCore;

/// Bytes of stack per core: the idle context, interrupt handling, and, on the
/// first core, building the kernel state (several KiB, moved by value).
const STACK_SIZE: usize = 64 * 1024;

tandem_runtime::per_core_stacks!(
    /// Per-core stacks: each core's idle context and interrupt handling.
    static STACKS: STACK_SIZE, MAX_CORES
);

/// The first core's hand-shake (`tandem_runtime::FirstCore`), in .data so
/// it is valid before .bss is zeroed.
static INIT_STATE: FirstCore = FirstCore::new();

tandem_runtime::global_asm!(
    r#"
    /* The monitor checks the header (RTOS_MAGIC), then enters at _start. */
    image_start {magic}
    /* x0 = core index, x1 = shared region, x2 = RTOS cores, from the monitor. */
    mov     x19, x0
    mov     x20, x1
    mov     x21, x2
    core_stack x19, {stacks}, {stack_size}, x2, x4
    install_vectors 1, vectors

    /* The first core in zeroes .bss; the others wait for it. x3 tells
     * rtos_main which of the two this core was. */
    first_core_or_wait {init_state}, first_core
    mov     x3, #0
    b       run
first_core:
    zero_bss x10, x11
    mov     w8, #{ready}
    release_waiting_cores {init_state}, w8
    mov     x3, #1
run:
    mov     x0, x19
    mov     x1, x20
    mov     x2, x21
    bl      {rtos_main}
    park

    .macro  save_frame
    sub     sp, sp, #{frame_size}
    stp     x0, x1, [sp, #0x00]
    str     xzr, [sp, #0xf8]
    save_frame_from_x2
    .endm

    /* Everything but x0, x1 and `entered`. */
    .macro  save_frame_from_x2
    save_x2_x29 sp
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
    return_from_frame {frame_size}

unexpected_entry:
    fault_entry 1, {fault}

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
    ready = const FirstCore::READY,
    rtos_main = sym start::rtos_main,
    irq_handler = sym exceptions::irq_handler,
    sync_handler = sym exceptions::sync_handler,
    fault = sym exceptions::fault,
    frame_size = const FRAME_SIZE,
);
