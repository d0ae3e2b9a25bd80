//! GIC priorities of the two worlds and of the monitor's doorbell: one
//! ordering both firmware images keep (lower value, higher priority).
//!
//! The GIC signals only the highest-priority pending interrupt, and the
//! RTOS runs its tasks with FIQs (the normal world's, and the monitor's
//! Group 0 doorbell) masked, so any interrupt that may be pending on a core
//! while the RTOS works there must rank below every RTOS interrupt, or it
//! hides them until the RTOS next idles. Linux can make the monitor ring
//! the doorbell at will (CPU_ON of a core, SYSTEM_RESET), so the doorbell
//! ranks below the RTOS and above Linux: it still ends Linux's turn and
//! wakes an idle core, and never delays the RTOS (docs/security.md).
//!
//! ```text
//! 0x00 ......... 0x20 ...... 0x30 ........ 0x70 ......... 0x80 ............ 0xF8
//!               RTOS kernel  RTOS apps    monitor        Linux (Non-secure
//!               (timer,      (their SGIs  doorbell       writes land in the
//!                reschedule)  and PPIs)   (Group 0)      lower half)
//! ```

/// The RTOS kernel's interrupts: its timer and the reschedule SGI.
pub const RTOS_KERNEL: u8 = 0x20;
/// The RTOS applications' interrupts (the RPC doorbell, the demo's SGI):
/// below the kernel's, in a preemption group of their own (the RTOS sets
/// its binary point so), so its timer preempts their top halves.
pub const RTOS_APPS: u8 = 0x30;
/// The monitor's doorbell (Group 0 SGI): below every RTOS interrupt.
pub const MONITOR_DOORBELL: u8 = 0x70;
/// The highest priority a Non-secure write can give (the GIC shifts Linux's
/// priorities into the lower half when the secure world is present).
pub const NON_SECURE_HIGHEST: u8 = 0x80;
/// Priority bits QEMU's GICv3 implements for the Cortex-A53 (5: steps of 8),
/// and the GIC-600 of real Cortex-A53 SoCs; every value here is a multiple.
pub const STEP: u8 = 8;

const _: () = assert!(RTOS_KERNEL < RTOS_APPS);
const _: () = assert!(RTOS_APPS < MONITOR_DOORBELL);
const _: () = assert!(MONITOR_DOORBELL < NON_SECURE_HIGHEST);
const _: () = assert!(
    RTOS_KERNEL.is_multiple_of(STEP)
        && RTOS_APPS.is_multiple_of(STEP)
        && MONITOR_DOORBELL.is_multiple_of(STEP)
);
