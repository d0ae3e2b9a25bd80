//! Spin locks for the monitor and the RTOS whose waiters execute `yield`.
//!
//! Test-and-set, not tickets: with tickets a waiter whose turn has come but
//! whose vCPU the host has descheduled holds up every waiter behind it (in
//! host timing, with more vCPUs than host cores, the RTOS then missed
//! hundreds of thousands of releases). Unfairness is kept away from the RTOS
//! instead: an idle RTOS core does not take the monitor's PSCI lock unless
//! a CPU_ON may be waiting for it (`Monitor::take_pending`), and the world
//! switch takes no lock at all.
//!
//! On hardware `yield` is a hint; under QEMU's single-threaded TCG (the
//! `virtual` timing mode) it ends the waiting vCPU's time slice, so the core
//! holding the lock runs sooner instead of the waiter burning a whole
//! round-robin slice (lock-holder preemption, one level down). Multi-threaded
//! TCG treats it as a no-op.
#![no_std]

/// Relax strategy: one `yield` per failed attempt.
pub struct Yield;

impl spin::relax::RelaxStrategy for Yield {
    #[inline(always)]
    fn relax() {
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `yield` is a hint with no architectural effect.
        unsafe {
            core::arch::asm!("yield", options(nomem, nostack, preserves_flags))
        };
        #[cfg(not(target_arch = "aarch64"))]
        core::hint::spin_loop();
    }
}

/// A spin lock whose waiters yield.
pub type SpinLock<T> = spin::mutex::SpinMutex<T, Yield>;
