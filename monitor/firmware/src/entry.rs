//! Reset entry, EL3 exception vectors, the world resume path and the stub
//! Linux's cores start through: the only assembly in the monitor.
//! Everything else is Rust.
//!
//! While a world runs, SP_EL3 points at that world's `WorldContext`
//! (`context.rs`), so a trap saves registers straight into it; the handler
//! then runs on the core's monitor stack and returns the context to resume,
//! of the same world or of the other one.
//!
//! The module uses only what the assembly names: the context layout and
//! stacks, the trap handlers, the boot entry points and the boot flag.
//! Nothing uses it back: the resume entry points are declared in
//! `context.rs`.

use crate::context::{CTX_ELR, CTX_MONITOR_SP, CTX_SCR, CTX_SP_EL0, STACK_SIZE, STACKS};
use tandem_board::{BOARD, MPIDR_AFFINITY_MASK};

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

    /* Saves x2..x30, SP_EL0, ELR and SPSR into the context SP_EL3 points
     * at (x0 and x1 are already there). */
    .macro  save_from_x2
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
    .endm

    /* Calls `handler` on the core's monitor stack with x0 = the saved
     * context, then resumes the context it returns. */
    .macro  call_handler handler
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

    /* The RTOS back inside its YIELD: only what the call preserves. */
    .global resume_yielded
resume_yielded:
    mov     sp, x0
    ldr     x1, [sp, #{ctx_scr}]
    msr     scr_el3, x1
    ldp     x0, x1, [sp, #{ctx_elr}]
    msr     elr_el3, x0
    msr     spsr_el3, x1
    ldp     x28, x29, [sp, #0xe0]
    ldp     x26, x27, [sp, #0xd0]
    ldp     x24, x25, [sp, #0xc0]
    ldp     x22, x23, [sp, #0xb0]
    ldp     x20, x21, [sp, #0xa0]
    ldp     x18, x19, [sp, #0x90]
    eret

    /* An SMC from the RTOS (the lower_sync vector saw SCR_EL3.NS = 0, x0
     * and x1 saved). Its calls preserve only what a function call does and
     * take at most three arguments (tandem_abi::smc::tos), so this saves
     * x2, x3, x18..x29, ELR and SPSR, and nothing else. */
secure_sync:
    stp     x2, x3, [sp, #0x10]
    stp     x18, x19, [sp, #0x90]
    stp     x20, x21, [sp, #0xa0]
    stp     x22, x23, [sp, #0xb0]
    stp     x24, x25, [sp, #0xc0]
    stp     x26, x27, [sp, #0xd0]
    stp     x28, x29, [sp, #0xe0]
    mrs     x0, elr_el3
    mrs     x1, spsr_el3
    stp     x0, x1, [sp, #{ctx_elr}]
    call_handler {secure_sync}

monitor_fault_entry:
    mrs     x0, esr_el3
    mrs     x1, elr_el3
    mrs     x2, far_el3
    bl      {monitor_fault}

    /* The vectors hold the save code itself, saving the branch on every
     * trap; `.org` fails the build if an entry outgrows its 0x80 bytes. The
     * entries' labels are markers for harness/tandem/pathcount.py. */
    .section .text.vectors, "ax"
    .balign 0x800
vectors:
    /* Current EL with SP_EL0, then with SP_EL3: a fault in the monitor. */
    .rept 8
    .balign 0x80
    b       monitor_fault_entry
    .endr

    /* Lower EL, AArch64, synchronous: an SMC (either world) or Linux's
     * trapped WFI. The RTOS's calls save less (secure_sync). */
    .org    vectors + 0x400
lower_sync:
    stp     x0, x1, [sp, #0x00]
    mrs     x0, scr_el3
    tbz     x0, #0, secure_sync
    save_from_x2
    call_handler {normal_sync}

    /* IRQ: never routed here (SCR_EL3.IRQ = 0). */
    .org    vectors + 0x480
lower_irq:
    stp     x0, x1, [sp, #0x00]
    save_from_x2
    call_handler {lower_irq}

    /* FIQ: only while Linux runs (SCR_EL3.FIQ is set only for it): an RTOS
     * interrupt or the monitor's doorbell. */
    .org    vectors + 0x500
lower_fiq:
    stp     x0, x1, [sp, #0x00]
    save_from_x2
    call_handler {lower_fiq}

    .org    vectors + 0x580
lower_serror:
    stp     x0, x1, [sp, #0x00]
    save_from_x2
    call_handler {lower_serror}

    /* Lower EL, AArch32: never enabled (SCR_EL3.RW = 1). */
    .org    vectors + 0x600
    .rept 4
    .balign 0x80
    b       monitor_fault_entry
    .endr
    .org    vectors + 0x800
"#,
    aff_mask = const MPIDR_AFFINITY_MASK,
    max_cores = const BOARD.max_cores,
    stacks = sym STACKS,
    stack_size = const STACK_SIZE,
    boot_ready = sym crate::power::BOOT_READY,
    boot_magic = const crate::power::BOOT_READY_MAGIC,
    primary_main = sym crate::primary_main,
    secondary_main = sym crate::secondary_main,
    monitor_fault = sym crate::trap::monitor_fault,
    normal_sync = sym crate::trap::normal_sync,
    secure_sync = sym crate::trap::secure_sync,
    lower_irq = sym crate::trap::lower_irq,
    lower_fiq = sym crate::trap::lower_fiq,
    lower_serror = sym crate::trap::lower_serror,
    ctx_sp_el0 = const CTX_SP_EL0,
    ctx_elr = const CTX_ELR,
    ctx_scr = const CTX_SCR,
    ctx_monitor_sp = const CTX_MONITOR_SP,
);

// Linux's way in on every start of a core. Copied at cold boot to the last
// page of the shared region (`linux.rs`), it runs at NS-EL1 with x19 = the
// entry, x20 = the context ID. A Linux stopped by the monitor in the middle
// of an interrupt handler (its reboot parks the other cores inside their
// stop IPI) leaves that interrupt's priority active in the core's Group 1
// CPU interface; only a Non-secure EOI drops it (EL3 cannot: its EOIs are
// Secure, and QEMU, like the architecture's intent, ignores Non-secure
// writes of the active-priority registers), and a new Linux never would,
// so it would take no interrupt on that core. The stub ends every active
// priority, then enters Linux as the boot protocol asks.
core::arch::global_asm!(
    r#"
    .section .rodata.linux_stub, "a"
    .balign 8
    .global linux_stub_start
linux_stub_start:
    mov     x3, #32                 /* at most one EOI per priority level */
1:  mrs     x2, S3_0_C12_C9_0       /* ICC_AP1R0_EL1: active priorities */
    cbz     x2, 2f
    msr     S3_0_C12_C12_1, xzr     /* ICC_EOIR1_EL1: drop the highest */
    isb
    subs    x3, x3, #1
    b.ne    1b
2:  mov     x0, x20
    mov     x1, xzr
    mov     x2, xzr
    mov     x3, xzr
    br      x19
    .global linux_stub_end
linux_stub_end:
"#
);
