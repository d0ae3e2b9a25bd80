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

tandem_runtime::global_asm!(
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
    install_vectors 3, vectors
    core_stack x19, {stacks}, {stack_size}, x2, x0
    cbnz    x19, secondary_wait

    /* Boot core: zero .bss, copy .data from flash, then Rust. Core 0
     * always boots first, so no hand-shake decides it. */
    zero_bss x0, x1
    ldr     x0, =__data_start
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
    park

    /* Saves x2..x30, SP_EL0, ELR and SPSR into the context SP_EL3 points
     * at (x0 and x1 are already there). */
    .macro  save_from_x2
    save_x2_x29 sp
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

    /* SP_EL3 = the context at x0; its SCR_EL3, ELR_EL3 and SPSR_EL3
     * back in place. */
    .macro  enter_context
    mov     sp, x0
    ldr     x1, [sp, #{ctx_scr}]
    msr     scr_el3, x1
    ldp     x0, x1, [sp, #{ctx_elr}]
    msr     elr_el3, x0
    msr     spsr_el3, x1
    .endm

    .global resume_world
resume_world:
    enter_context
    ldp     x30, x0, [sp, #{ctx_sp_el0} - 8]
    msr     sp_el0, x0
    restore_x0_x29 sp
    eret

    /* The RTOS back inside its YIELD: only what the call preserves. */
    .global resume_yielded
resume_yielded:
    enter_context
    restore_x18_x29 sp
    eret

    /* An SMC from the RTOS (the lower_sync vector saw SCR_EL3.NS = 0, x0
     * and x1 saved). Its calls preserve only what a function call does and
     * take at most three arguments (tandem_abi::smc::tos), so this saves
     * x2, x3, x18..x29, ELR and SPSR, and nothing else. */
secure_sync:
    stp     x2, x3, [sp, #0x10]
    save_x18_x29 sp
    mrs     x0, elr_el3
    mrs     x1, spsr_el3
    stp     x0, x1, [sp, #{ctx_elr}]
    call_handler {secure_sync}

monitor_fault_entry:
    fault_entry 3, {monitor_fault}

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
