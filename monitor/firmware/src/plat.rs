//! QEMU virt's behaviour behind `tandem_monitor_core::platform::Platform`:
//! the generic counter, the GICv3 (the monitor's doorbell, the RTOS's
//! interrupts) and the PL061 lines wired to QEMU's power controller. The
//! trap code reaches the hardware only through this.

use crate::context::SCR_SECURE_WORLD;
use crate::{gic, power};
use arm_sysregs::el0::accessors::{write_cntp_ctl_el0, write_cntv_ctl_el0};
use arm_sysregs::el0::registers::{CntpCtlEl0, CntvCtlEl0};
use arm_sysregs::el3::accessors::write_scr_el3;
use arm_sysregs::el3::registers::ScrEl3;
use tandem_monitor_core::platform::Platform;

/// QEMU's `virt` board with GICv3 and a secure PL061.
pub struct QemuVirt;

impl Platform for QemuVirt {
    #[inline(always)]
    fn now() -> u64 {
        arm_sysregs::el0::accessors::read_cntpct_el0().bits()
    }

    #[inline(always)]
    fn take_doorbell() -> bool {
        gic::take_doorbell()
    }

    fn secure_interrupt_pending() -> bool {
        // The Group 1 registers show the group of the current security
        // state: the secure one while SCR_EL3.NS = 0.
        // SAFETY: EL3 runs the same with either SCR value, and every return
        // to a lower EL writes the resumed world's own SCR_EL3.
        unsafe { write_scr_el3(ScrEl3::from_bits_retain(SCR_SECURE_WORLD)) };
        gic::secure_interrupt_pending()
    }

    fn rtos_timer() -> Option<u64> {
        let (cval, ctl): (u64, u64);
        // SAFETY: reading the secure physical timer's registers has no side
        // effects; EL3 may read them whatever SCR_EL3.ST says.
        unsafe {
            core::arch::asm!(
                "mrs {}, cntps_cval_el1",
                "mrs {}, cntps_ctl_el1",
                out(reg) cval,
                out(reg) ctl,
                options(nomem, nostack)
            )
        };
        // Enabled, and not masked (IMASK): it will interrupt.
        (ctl & 0b11 == 0b01).then_some(cval)
    }

    fn wait_for_interrupt() {
        // SAFETY: waiting has no memory effects. Any pending GIC interrupt
        // wakes WFI, even one PSTATE masks at EL3.
        unsafe { core::arch::asm!("dsb sy", "wfi", options(nostack)) };
    }

    fn wait_for_rtos_interrupt() {
        gic::wait_for_rtos_interrupt();
    }

    fn wake(core: usize) {
        // Linux-only cores park with WFE, cores with an RTOS wait with WFI
        // for the doorbell: signal both.
        // SAFETY: barrier and event signal only.
        unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };
        gic::wake(core);
    }

    fn ring_rpc(core: usize) {
        gic::ring_rpc(core);
    }

    fn linux_stopped_here() {
        // Linux's EL1 timers off, and its interrupt group no longer
        // signalled here; a new Linux sets up both again.
        write_cntv_ctl_el0(CntvCtlEl0::empty());
        write_cntp_ctl_el0(CntpCtlEl0::empty());
        gic::normal_world_interrupts(false);
    }

    fn system_off() -> ! {
        power::system_off()
    }

    fn system_reset() -> ! {
        power::system_reset()
    }
}
