//! GICv3 set up for two worlds: Linux's interrupts Non-secure Group 1, the
//! RTOS's Secure Group 1 (docs/design.md, "Worlds and interrupts"), and one Group 0
//! SGI for the monitor itself (the doorbell that wakes an idle core for
//! CPU_ON). Only the monitor can do this: the group registers are secure-only.

use arm_gic::gicv3::registers::{Gicd, GicdCtlr, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicV3, Group, SecureIntGroup, SgiTarget, SgiTargetGroup};
use arm_gic::{IntId, InterruptGroup};
use arm_sysregs::el3::accessors::write_icc_sre_el3;
use arm_sysregs::el3::registers::IccSreEl3;
use core::ptr::NonNull;
use safe_mmio::UniqueMmioPointer;
use tandem_abi::priority;
use tandem_board::BOARD;
use tandem_lock::SpinLock;

static GIC: SpinLock<Option<GicV3<'static>>> = SpinLock::new(None);

/// The monitor's doorbell: a Group 0 SGI (Group 0 is EL3's own), below every
/// RTOS interrupt (`tandem_abi::priority`): Linux can make the monitor ring
/// it at will, and while it is pending, it must hide none of the RTOS's.
const DOORBELL: IntId = IntId::sgi(BOARD.sgi.monitor);

/// Distributor setup, once, by the boot core before any other core runs Rust.
pub fn init_distributor() {
    let gicd = NonNull::new(BOARD.gicd as *mut Gicd).unwrap();
    let gicr = NonNull::new(BOARD.gicr as *mut GicrSgi).unwrap();
    // SAFETY: the board description places the distributor and the
    // redistributors here; this is the only driver instance in the monitor.
    let mut gic = unsafe { GicV3::new(UniqueMmioPointer::new(gicd), gicr, BOARD.max_cores) }
        .expect("GICv3 redistributors not where the board says");
    // All SPIs to Non-secure Group 1, affinity routing for both worlds.
    gic.distributor().configure_default_settings();
    gic.gicd_set_control(
        GicdCtlr::ARE_NS | GicdCtlr::EnableGrp0 | GicdCtlr::EnableGrp1NS | GicdCtlr::EnableGrp1S,
    );
    gic.gicd_barrier();
    *GIC.lock() = Some(gic);
}

/// Per-core setup: wake this core's redistributor (Linux cannot: GICR_WAKER is
/// secure-only), make its SGIs and PPIs Non-secure Group 1 except the secure
/// timer, and let lower ELs use the system-register CPU interface. On a core
/// Linux never runs on (`linux_here` false), Linux's group is not signalled
/// at all: an interrupt Linux routed or sent there would stay pending for
/// ever, keep the RTOS's idle core leaving and the monitor's wait waking.
pub fn init_this_core(core: usize, linux_here: bool) {
    // SAFETY: sets SRE, DFB, DIB and Enable; SRE never goes from 1 to 0.
    unsafe {
        write_icc_sre_el3(IccSreEl3::SRE | IccSreEl3::DFB | IccSreEl3::DIB | IccSreEl3::ENABLE)
    };
    let mut guard = GIC.lock();
    let gic = guard
        .as_mut()
        .expect("distributor set up before secondaries run");
    let mut redist = gic
        .redistributor(core)
        .expect("core index checked at reset");
    redist.mark_core_awake().expect("redistributor wakes");
    redist.configure_default_settings();
    redist
        .set_group(
            IntId::ppi(BOARD.secure_timer_intid - 16),
            Group::Secure(SecureIntGroup::Group1S),
        )
        .expect("secure timer is a PPI");
    for sgi in BOARD.sgi.rtos() {
        redist
            .set_group(IntId::sgi(sgi), Group::Secure(SecureIntGroup::Group1S))
            .expect("an SGI");
    }
    redist
        .set_group(DOORBELL, Group::Secure(SecureIntGroup::Group0))
        .expect("an SGI");
    redist
        .set_interrupt_priority(DOORBELL, priority::MONITOR_DOORBELL)
        .expect("an SGI");
    redist.enable_interrupt(DOORBELL, true).expect("an SGI");
    drop(guard);
    // PMR resets to 0, a Secure-range priority; while SCR_EL3.FIQ is set the
    // GIC ignores Linux's writes to a PMR in that range, so Linux could never
    // unmask its interrupts. Open it fully; each world sets its own after.
    GicCpuInterface::set_priority_mask(0xFF);
    GicCpuInterface::enable_group0(true);
    GicCpuInterface::enable_group1_non_secure(linux_here);
}

/// Waits for an RTOS interrupt alone: the priority mask lets through only
/// priorities above the monitor's doorbell (the RTOS's) while the core
/// waits, then opens fully again, as every world expects it on entry.
pub fn wait_for_rtos_interrupt() {
    GicCpuInterface::set_priority_mask(priority::MONITOR_DOORBELL);
    // SAFETY: waiting has no memory effects; the mask is restored below.
    unsafe { core::arch::asm!("isb", "dsb sy", "wfi", options(nostack)) };
    GicCpuInterface::set_priority_mask(0xFF);
}

/// Whether this core's CPU interface signals Linux's interrupts (Non-secure
/// Group 1). Linux turns it on again itself when it starts on the core (its
/// GIC driver writes ICC_IGRPEN1_EL1, Non-secure Group 1's own enable).
pub fn normal_world_interrupts(on: bool) {
    GicCpuInterface::enable_group1_non_secure(on);
}

/// Rings the doorbell of `core` so that it leaves its idle loop.
pub fn wake(core: usize) {
    let target = SgiTarget::List {
        affinity3: 0,
        affinity2: 0,
        affinity1: 0,
        target_list: 1 << core,
    };
    GicCpuInterface::send_sgi(DOORBELL, target, SgiTargetGroup::Group0).expect("an SGI");
}

/// Raises the RTOS's RPC doorbell (Secure Group 1 SGI) on `core`. From EL3
/// `CurrentGroup1` is the secure group, whatever SCR_EL3.NS holds: the RTOS
/// takes it like its own interrupts (preempting Linux there, if it runs).
pub fn ring_rpc(core: usize) {
    let target = SgiTarget::List {
        affinity3: 0,
        affinity2: 0,
        affinity1: 0,
        target_list: 1 << core,
    };
    GicCpuInterface::send_sgi(
        IntId::sgi(BOARD.sgi.rpc),
        target,
        SgiTargetGroup::CurrentGroup1,
    )
    .expect("an SGI");
}

/// First INTID with a special meaning (1020..1023: "nothing of this group").
const SPECIAL: u32 = 1020;

#[inline(always)]
fn pending(group: InterruptGroup) -> Option<IntId> {
    GicCpuInterface::get_pending_interrupt(group).filter(|i| i.raw_value() < SPECIAL)
}

/// Acknowledges this core's doorbell if it rang; true if it did. Any other
/// Group 0 interrupt (none should exist: Linux cannot make one, the group
/// registers being secure) is acknowledged and reported. An RTOS interrupt
/// pending at once ranks above the doorbell and hides it (the highest
/// pending interrupt is not of Group 0): then the doorbell stays pending
/// and is taken after the RTOS's turn.
#[inline(always)]
pub fn take_doorbell() -> bool {
    // Inline up to here: an RTOS interrupt preempting Linux finds no Group 0
    // interrupt, and that is the world switch's path.
    match pending(InterruptGroup::Group0) {
        None => false,
        Some(intid) => acknowledge_group0(intid),
    }
}

#[cold]
fn acknowledge_group0(intid: IntId) -> bool {
    match GicCpuInterface::get_and_acknowledge_interrupt(InterruptGroup::Group0) {
        Some(acked) if acked.raw_value() < SPECIAL => {
            GicCpuInterface::end_interrupt(acked, InterruptGroup::Group0);
            if acked != DOORBELL {
                crate::note!("unexpected Group 0 interrupt {acked:?}");
            }
            intid == DOORBELL && acked == DOORBELL
        }
        // An RTOS interrupt became pending between the look and the
        // acknowledge and ranks above the doorbell, which stays pending for
        // after the RTOS's turn: nothing was taken.
        _ => false,
    }
}

/// Whether an RTOS interrupt is pending on this core. Must be called with
/// SCR_EL3.NS = 0, so the Group 1 registers show the secure group.
pub fn secure_interrupt_pending() -> bool {
    pending(InterruptGroup::Group1).is_some()
}
