//! Spin locks for the monitor and the RTOS: fair (tickets, first come first
//! served) and their waiters execute `yield`.
//!
//! Fair because Linux shares the monitor's locks: with a test-and-set lock
//! three Linux cores calling the monitor in a loop can keep taking a lock
//! an RTOS core waits for, for as long as they like; with tickets the RTOS
//! core waits for at most one holder per other core.
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

/// A fair spin lock whose waiters yield.
pub type SpinLock<T> = spin::mutex::TicketMutex<T, Yield>;
