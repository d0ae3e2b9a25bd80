//! Reset entry, EL3 exception vectors and the world resume path: the only
//! assembly in the monitor. Everything else is Rust.
//!
//! While a world runs, SP_EL3 points at that world's [`WorldContext`], so a
//! trap saves registers straight into it; the handler then runs on the core's
//! monitor stack and returns the context to resume (today always the same
//! world; with the RTOS it may be the other one).

use crate::context::{CTX_ELR, CTX_MONITOR_SP, CTX_SCR, CTX_SP_EL0, WorldContext};
use core::sync::atomic::AtomicU32;
use tandem_abi::MAX_CORES;
use tandem_board::{BOARD, MPIDR_AFFINITY_MASK};

/// Bytes of monitor stack per core.
pub const STACK_SIZE: usize = 16 * 1024;

/// Per-core monitor stacks, in the NOLOAD `.stacks` section.
#[unsafe(link_section = ".stacks")]
pub static mut STACKS: [[u8; STACK_SIZE]; MAX_CORES] = [[0; STACK_SIZE]; MAX_CORES];

/// Set to [`BOOT_READY_MAGIC`] by the boot core once .data and .bss are set up;
/// the other cores wait for it before running any Rust.
pub static BOOT_READY: AtomicU32 = AtomicU32::new(0);
/// See [`BOOT_READY`].
pub const BOOT_READY_MAGIC: u32 = 0x7A4D_0001;

/// Top of `core`'s monitor stack.
pub fn stack_top(core: usize) -> u64 {
    let base = core::ptr::addr_of!(STACKS) as u64;
    base + ((core + 1) * STACK_SIZE) as u64
}

unsafe extern "C" {
    /// Restores `ctx` and returns to its world with `eret`.
    ///
    /// # Safety
    ///
    /// `ctx` must be the calling core's context for the world to enter, with
    /// `monitor_sp` set to the calling core's stack top. The current stack is
    /// abandoned.
    pub fn resume_world(ctx: *mut WorldContext) -> !;
}

core::arch::global_asm!(
    r#"
    .section .text.entry, "ax"
    .global _start
_start:
    /* Every core lands here at EL3, MMU and caches off. */
    mrs     x19, mpidr_el1
    ldr     x1, ={aff_mask}
    and     x19, x19, x1
    cmp     x19, #{max_cores}
    b.hs    park_forever            /* not a core this firmware knows */

    ldr     x0, =vectors
    msr     vbar_el3, x0
    isb

    ldr     x2, ={stacks}
    mov     x1, #{stack_size}
    madd    x0, x19, x1, x1
    add     x0, x0, x2
    mov     sp, x0

    cbnz    x19, secondary_wait

    /* Boot core: zero .bss, copy .data from flash, then Rust. */
    ldr     x0, =__bss_start
    ldr     x1, =__bss_end
0:  cmp     x0, x1
    b.hs    1f
    str     xzr, [x0], #8
    b       0b
1:  ldr     x0, =__data_start
    ldr     x1, =__data_end
    ldr     x2, =__data_lma
2:  cmp     x0, x1
    b.hs    3f
    ldr     x3, [x2], #8
    str     x3, [x0], #8
    b       2b
3:  mov     x0, x19
    bl      {primary_main}
    b       park_forever

secondary_wait:
    ldr     x1, ={boot_ready}
    ldr     w3, ={boot_magic}
4:  wfe
    ldr     w2, [x1]
    cmp     w2, w3
    b.ne    4b
    mov     x0, x19
    bl      {secondary_main}

park_forever:
    wfe
    b       park_forever

    /* Save the interrupted world into the context SP_EL3 points at, switch
     * to the monitor stack, call the handler, resume what it returns. */
    .macro  world_trap handler
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
    mrs     x0, sp_el0
    stp     x30, x0, [sp, #{ctx_sp_el0} - 8]
    mrs     x0, elr_el3
    mrs     x1, spsr_el3
    stp     x0, x1, [sp, #{ctx_elr}]
    mov     x0, sp
    ldr     x1, [sp, #{ctx_monitor_sp}]
    mov     sp, x1
    bl      \handler
    b       resume_world
    .endm

    .global resume_world
resume_world:
    mov     sp, x0
    ldr     x1, [sp, #{ctx_scr}]
    msr     scr_el3, x1
    ldp     x0, x1, [sp, #{ctx_elr}]
    msr     elr_el3, x0
    msr     spsr_el3, x1
    ldp     x30, x0, [sp, #{ctx_sp_el0} - 8]
    msr     sp_el0, x0
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
    eret

monitor_fault_entry:
    mrs     x0, esr_el3
    mrs     x1, elr_el3
    mrs     x2, far_el3
    bl      {monitor_fault}

lower_sync:
    world_trap {lower_sync}
lower_irq:
    world_trap {lower_irq}
lower_fiq:
    world_trap {lower_fiq}
lower_serror:
    world_trap {lower_serror}

    .section .text.vectors, "ax"
    .balign 0x800
vectors:
    /* Current EL with SP_EL0, then with SP_EL3: a fault in the monitor. */
    .rept 8
    .balign 0x80
    b       monitor_fault_entry
    .endr
    /* Lower EL, AArch64. */
    .balign 0x80
    b       lower_sync
    .balign 0x80
    b       lower_irq
    .balign 0x80
    b       lower_fiq
    .balign 0x80
    b       lower_serror
    /* Lower EL, AArch32: never enabled (SCR_EL3.RW = 1). */
    .rept 4
    .balign 0x80
    b       monitor_fault_entry
    .endr
"#,
    aff_mask = const MPIDR_AFFINITY_MASK,
    max_cores = const BOARD.max_cores,
    stacks = sym STACKS,
    stack_size = const STACK_SIZE,
    boot_ready = sym BOOT_READY,
    boot_magic = const BOOT_READY_MAGIC,
    primary_main = sym crate::primary_main,
    secondary_main = sym crate::secondary_main,
    monitor_fault = sym crate::trap::monitor_fault,
    lower_sync = sym crate::trap::lower_sync,
    lower_irq = sym crate::trap::lower_irq,
    lower_fiq = sym crate::trap::lower_fiq,
    lower_serror = sym crate::trap::lower_serror,
    ctx_sp_el0 = const CTX_SP_EL0,
    ctx_elr = const CTX_ELR,
    ctx_scr = const CTX_SCR,
    ctx_monitor_sp = const CTX_MONITOR_SP,
);
