//! What the monitor needs of a board beyond its description as data
//! (`tandem_board::Board`): the few operations whose code differs from board
//! to board, in one small interface (TF-A's `plat_psci_ops` in spirit). The
//! firmware implements it once per board; the trap code calls nothing else
//! of the hardware while deciding and carrying out a world switch.
//!
//! The operations take no `self`: each stands for the one interrupt
//! controller, timer or power controller of the machine, so calls compile
//! to the register accesses themselves.

/// A board's behaviour.
pub trait Platform {
    /// The generic counter now (the time base of traces and stolen time).
    fn now() -> u64;

    /// Acknowledges the monitor's doorbell if it rang on this core, and says
    /// whether it did.
    fn take_doorbell() -> bool;

    /// Whether an RTOS interrupt is pending on this core.
    fn secure_interrupt_pending() -> bool;

    /// Waits until an interrupt is pending on this core.
    fn wait_for_interrupt();

    /// Rings the monitor's doorbell of `core`, which may be waiting in the
    /// monitor (PSCI CPU_ON) or parked.
    fn wake(core: usize);

    /// Raises the RTOS's RPC doorbell on `core` (Linux called a channel).
    fn ring_rpc(core: usize);

    /// Linux was stopped on this core and will not run here until it starts
    /// afresh: its interrupts (its timers' above all, which it left armed)
    /// must no longer wake the core, or the monitor's idle loop would spin.
    fn linux_stopped_here();

    /// Powers the machine off.
    fn system_off() -> !;

    /// Resets the machine; every core starts again at its reset vector.
    fn system_reset() -> !;
}
