//! The RTOS's hardware layer on QEMU virt: the secure GIC CPU interface and
//! redistributor, the secure physical timer, the world-switch SMC.

use arm_gic::gicv3::registers::{Gicd, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicV3};
use arm_gic::{IntId, InterruptGroup};
use core::ptr::NonNull;
use safe_mmio::UniqueMmioPointer;
use spin::mutex::SpinMutex;
use tandem_abi::smc::tos;
use tandem_board::BOARD;

/// The RTOS's tick: the secure physical timer.
pub const TIMER: IntId = IntId::ppi(BOARD.secure_timer_intid - 16);
/// Priority of RTOS interrupts: in the secure half, above anything of Linux's.
const PRIORITY: u8 = 0x20;

static GIC: SpinMutex<Option<GicV3<'static>>> = SpinMutex::new(None);

/// Generic counter now (ticks since reset).
pub fn now() -> u64 {
    let t: u64;
    // SAFETY: reading the counter has no side effects.
    unsafe { core::arch::asm!("isb", "mrs {}, cntpct_el0", out(reg) t, options(nomem, nostack)) };
    t
}

/// Global setup, by the first core in.
pub fn init_global() {
    let gicd = NonNull::new(BOARD.gicd as *mut Gicd).unwrap();
    let gicr = NonNull::new(BOARD.gicr as *mut GicrSgi).unwrap();
    // SAFETY: the board places the GIC here; this is the RTOS's only driver
    // instance, and it touches only the RTOS's own (Secure Group 1)
    // interrupts, which the monitor configured as such.
    let gic = unsafe { GicV3::new(UniqueMmioPointer::new(gicd), gicr, BOARD.max_cores) }
        .expect("GICv3 where the board says");
    *GIC.lock() = Some(gic);
}

/// Per-core setup: the secure CPU interface and this core's timer PPI.
pub fn init_core(core: usize) {
    GicCpuInterface::enable_system_register_el1();
    let mut guard = GIC.lock();
    let gic = guard.as_mut().expect("global setup done first");
    gic.set_interrupt_priority(TIMER, Some(core), PRIORITY)
        .expect("a PPI");
    gic.enable_interrupt(TIMER, Some(core), true)
        .expect("a PPI");
    drop(guard);
    GicCpuInterface::enable_group1(true);
}

/// Arms the secure timer to fire at counter value `at`.
pub fn set_timer(at: u64) {
    // SAFETY: the secure physical timer is the RTOS's (SCR_EL3.ST = 1).
    unsafe {
        core::arch::asm!("msr cntps_cval_el1, {}", "msr cntps_ctl_el1, {}", "isb",
            in(reg) at, in(reg) 1u64, options(nomem, nostack))
    };
}

/// The highest-priority pending RTOS interrupt, acknowledged.
pub fn acknowledge() -> Option<IntId> {
    GicCpuInterface::get_and_acknowledge_interrupt(InterruptGroup::Group1)
}

/// Ends an acknowledged interrupt.
pub fn end(intid: IntId) {
    GicCpuInterface::end_interrupt(intid, InterruptGroup::Group1);
}

/// Gives the core to Linux until an RTOS interrupt is pending (SafeG's
/// switch): returns then, with IRQs still masked.
pub fn yield_to_linux() {
    // SAFETY: the YIELD call preserves every register but x0..x3 (SMCCC), and
    // memory is untouched by it apart from what Linux does to its own.
    unsafe {
        core::arch::asm!("smc #0", inout("x0") u64::from(tos::YIELD) => _,
            out("x1") _, out("x2") _, out("x3") _, options(nostack))
    };
}

/// Lets pending interrupts in, then masks them again.
pub fn take_interrupts() {
    // SAFETY: the IRQ vector saves and restores everything it touches.
    unsafe {
        core::arch::asm!(
            "msr daifclr, #2",
            "isb",
            "msr daifset, #2",
            options(nostack)
        )
    };
}
