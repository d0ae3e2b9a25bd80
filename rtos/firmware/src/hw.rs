//! The RTOS's hardware layer on QEMU virt: the secure GIC CPU interface and
//! redistributor, the secure physical timer, the world-switch SMC. Public
//! for applications: the counter, SGIs, Linux's doorbell.

use arm_gic::gicv3::registers::{Gicd, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicV3, SgiTarget, SgiTargetGroup};
use arm_gic::{IntId, InterruptGroup};
use core::ptr::NonNull;
use safe_mmio::UniqueMmioPointer;
use tandem_abi::priority;
use tandem_abi::smc::tos;
use tandem_board::BOARD;
use tandem_lock::SpinLock;

/// The RTOS's tick: the secure physical timer.
pub const TIMER: IntId = IntId::ppi(BOARD.secure_timer_intid - 16);
/// Cross-core reschedule request.
pub const RESCHEDULE: IntId = IntId::sgi(BOARD.sgi.reschedule);
/// GICD_ISPENDR<n>: set-pending registers of the distributor.
const GICD_ISPENDR: usize = 0x200;
/// Priority of the kernel's interrupts (its timer, the reschedule SGI): in
/// the secure half, above anything of Linux's and the monitor's doorbell
/// (`tandem_abi::priority`).
const PRIORITY: u8 = priority::RTOS_KERNEL;
/// Priority of the applications' interrupts: still above anything of
/// Linux's, but below the kernel's, so that when both are pending the timer
/// is taken first, and that the timer preempts an application's top half
/// (a preemption group of its own: see `init_core`), however often and
/// however long Linux makes an application's interrupt run (the RPC
/// doorbell rings for every RPC_NOTIFY).
const APP_PRIORITY: u8 = priority::RTOS_APPS;

static GIC: SpinLock<Option<GicV3<'static>>> = SpinLock::new(None);

/// The core this runs on.
pub fn core_index() -> usize {
    let mpidr: u64;
    // SAFETY: reading MPIDR has no side effects.
    unsafe { core::arch::asm!("mrs {}, mpidr_el1", out(reg) mpidr, options(nomem, nostack)) };
    (mpidr & 0xFF) as usize
}

/// Generic counter now (ticks since reset).
pub fn now() -> u64 {
    let t: u64;
    // SAFETY: reading the counter has no side effects.
    unsafe { core::arch::asm!("isb", "mrs {}, cntpct_el0", out(reg) t, options(nomem, nostack)) };
    t
}

/// Runs `passes` passes of a loop of two instructions (a count down and a
/// branch) that reads neither memory nor the counter: busy work between
/// two reads of the counter. Under QEMU's `-icount` each counter read is
/// an I/O access that ends its translation block, so a loop of nothing
/// but reads costs the host several times what this loop does (numbers in
/// docs/rtos.md, "Periodic workload"). Always inlined: in a job's body, which the path count
/// (harness/tandem/instruments/pathcount.py) leaves uncounted by its
/// function's span.
#[inline(always)]
pub fn count_down(passes: u64) {
    if passes == 0 {
        return;
    }
    // SAFETY: a register count down and a branch back: no memory, no stack,
    // no state outside the one register, which the asm owns.
    unsafe {
        core::arch::asm!(
            "2: subs {n}, {n}, #1",
            "b.ne 2b",
            n = inout(reg) passes => _,
            options(nomem, nostack)
        )
    };
}

/// Global setup, by the first core in.
pub(crate) fn init_global() {
    let gicd = NonNull::new(BOARD.gicd as *mut Gicd).unwrap();
    let gicr = NonNull::new(BOARD.gicr as *mut GicrSgi).unwrap();
    // SAFETY: the board places the GIC here; this is the RTOS's only driver
    // instance, and it touches only the RTOS's own (Secure Group 1)
    // interrupts, which the monitor configured as such.
    let gic = unsafe { GicV3::new(UniqueMmioPointer::new(gicd), gicr, BOARD.max_cores) }
        .expect("GICv3 where the board says");
    *GIC.lock() = Some(gic);
}

/// A private interrupt (SGI or PPI) by its INTID.
const fn private(intid: u32) -> IntId {
    if intid < 16 {
        IntId::sgi(intid)
    } else {
        IntId::ppi(intid - 16)
    }
}

/// Per-core setup: the secure CPU interface, this core's timer PPI, the
/// reschedule SGI and the private interrupts the applications own
/// (`apps`, INTIDs below 32: checked with the table).
pub(crate) fn init_core(core: usize, apps: impl Iterator<Item = u32>) {
    GicCpuInterface::enable_system_register_el1();
    let mut guard = GIC.lock();
    let gic = guard.as_mut().expect("global setup done first");
    let kernel = [TIMER, RESCHEDULE].map(|i| (i, PRIORITY));
    for (intid, priority) in kernel
        .into_iter()
        .chain(apps.map(|i| (private(i), APP_PRIORITY)))
    {
        gic.set_interrupt_priority(intid, Some(core), priority)
            .expect("a private interrupt");
        gic.enable_interrupt(intid, Some(core), true)
            .expect("a private interrupt");
    }
    drop(guard);
    // Binary point 0 (the GIC raises it to its minimum, 2 on QEMU):
    // preemption groups as fine as the GIC has, so PRIORITY preempts
    // APP_PRIORITY. Secure Group 1's own register, at S-EL1.
    // SAFETY: configures this core's CPU interface only.
    unsafe { core::arch::asm!("msr icc_bpr1_el1, xzr", "isb", options(nomem, nostack)) };
    GicCpuInterface::enable_group1(true);
}

/// Arms the secure timer to fire at counter value `at`, or stops it.
pub(crate) fn set_timer(at: Option<u64>) {
    let (cval, ctl) = match at {
        Some(t) => (t, 1u64),
        None => (u64::MAX, 0),
    };
    // SAFETY: the secure physical timer is the RTOS's (SCR_EL3.ST = 1).
    unsafe {
        core::arch::asm!("msr cntps_cval_el1, {}", "msr cntps_ctl_el1, {}", "isb",
            in(reg) cval, in(reg) ctl, options(nomem, nostack))
    };
}

/// When the secure timer is armed to fire (`None`: stopped).
pub(crate) fn timer_deadline() -> Option<u64> {
    let (cval, ctl): (u64, u64);
    // SAFETY: reading the RTOS's own timer registers has no side effects.
    unsafe {
        core::arch::asm!("mrs {}, cntps_cval_el1", "mrs {}, cntps_ctl_el1",
            out(reg) cval, out(reg) ctl, options(nomem, nostack))
    };
    (ctl & 1 != 0).then_some(cval)
}

/// The secure timer's compare value (when its interrupt was due).
pub(crate) fn timer_compare() -> u64 {
    let cval: u64;
    // SAFETY: reading the RTOS's own timer register has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntps_cval_el1", out(reg) cval, options(nomem, nostack)) };
    cval
}

fn send(intid: IntId, core: usize) {
    let target = SgiTarget::List {
        affinity3: 0,
        affinity2: 0,
        affinity1: 0,
        target_list: 1 << core,
    };
    GicCpuInterface::send_sgi(intid, target, SgiTargetGroup::CurrentGroup1).expect("an SGI");
}

/// Asks `core` to run its scheduler (the kernel changed what should run there).
pub(crate) fn send_reschedule(core: usize) {
    send(RESCHEDULE, core);
}

/// Raises SGI `sgi` (an application's, from the board file) on `core`.
pub fn send_sgi(sgi: u32, core: usize) {
    send(IntId::sgi(sgi), core);
}

/// Pends Linux's doorbell SPI (the RPC completion interrupt). The `arm-gic`
/// crate has no set-pending call, so this writes GICD_ISPENDR itself: one
/// write-one-to-set, which touches no other interrupt's state and needs no
/// lock.
pub fn raise_linux_doorbell() {
    let intid = 32 + BOARD.doorbell_spi as usize;
    let reg = (BOARD.gicd as usize + GICD_ISPENDR + intid / 32 * 4) as *mut u32;
    // SAFETY: the board places the distributor at `gicd`, and ISPENDR<n>
    // for an SPI the board declares is inside it; the secure world may pend
    // any interrupt. The barrier makes the RPC answer visible to Linux
    // before its interrupt can be taken.
    unsafe {
        core::arch::asm!("dsb sy", options(nostack));
        reg.write_volatile(1 << (intid % 32));
    }
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
    // SAFETY: the YIELD call preserves what a function call preserves
    // (x18-x29, SP; `tos::YIELD`), so the monitor keeps no more of the RTOS
    // than that; memory is untouched by it apart from what Linux does to
    // its own.
    unsafe {
        core::arch::asm!("smc #0", inout("x0") u64::from(tos::YIELD) => _,
            clobber_abi("C"), options(nostack))
    };
}

/// Waits here, at S-EL1, with IRQs open, until the counter reaches `due`
/// (an idle core's next timer event, too near to leave the core): the
/// timer's interrupt, or any other of the RTOS's, is taken at once. A
/// pending FIQ of the normal world's (the monitor's doorbell, Linux's
/// interrupts), which the RTOS leaves masked, ends every WFI at once, so
/// the wait may spin; it lasts at most the board's `rtos_leave_ns`.
pub fn wait_until(due: u64) {
    with_interrupts(|| {
        while now() < due {
            wait_for_interrupt();
        }
    });
}

/// Waits here, at S-EL1, until an interrupt is pending (masked or not).
pub fn wait_for_interrupt() {
    // SAFETY: waiting has no memory effects; the RTOS's WFI is not trapped
    // (SCR_EL3.TWI is set for Linux only).
    unsafe { core::arch::asm!("dsb sy", "wfi", options(nostack)) };
}

/// Runs `f` with IRQs masked on this core, restoring the previous mask after.
/// Every lock an interrupt handler may take is taken this way, or a handler
/// could spin forever on a lock its own core holds.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    let daif: u64;
    // SAFETY: reading and setting the interrupt mask of this core only.
    unsafe {
        core::arch::asm!("mrs {}, daif", "msr daifset, #2", out(reg) daif, options(nomem, nostack))
    };
    let r = f();
    // SAFETY: restores the mask read above.
    unsafe { core::arch::asm!("msr daif, {}", in(reg) daif, options(nomem, nostack)) };
    r
}

/// Runs `f` with IRQs open on this core (an interrupt handler: they were
/// masked, and the GIC lets in only priorities above the one being
/// handled), masking them again after.
pub fn with_interrupts<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: the IRQ vector saves and restores everything it touches; no
    // `nomem`, so that memory accesses stay on their side of it.
    unsafe { core::arch::asm!("msr daifclr, #2", "isb", options(nostack)) };
    let r = f();
    // SAFETY: masks them again, as on entry.
    unsafe { core::arch::asm!("msr daifset, #2", options(nostack)) };
    r
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

/// Powers the machine off through the monitor: the RTOS cannot run as
/// configured, and has logged why.
pub(crate) fn stop() -> ! {
    // SAFETY: the monitor answers STOP by powering off; it never returns.
    unsafe { core::arch::asm!("smc #0", in("x0") u64::from(tos::STOP), options(nostack)) };
    loop {
        core::hint::spin_loop();
    }
}
