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

    /// When the RTOS's timer on this core fires (the generic counter's
    /// value), if it is armed.
    fn rtos_timer() -> Option<u64>;

    /// Waits until an interrupt is pending on this core.
    fn wait_for_interrupt();

    /// Waits until an interrupt of the RTOS's is pending on this core,
    /// ignoring the normal world's and the monitor's doorbell meanwhile
    /// (they stay pending): for the moment before the RTOS's timer fires,
    /// which nothing else may then delay.
    fn wait_for_rtos_interrupt();

    /// Rings the monitor's doorbell of `core`, which may be waiting in the
    /// monitor (PSCI CPU_ON) or parked.
    fn wake(core: usize);

    /// Raises the RTOS's RPC doorbell on `core` (Linux called a channel).
    fn ring_rpc(core: usize);

    /// Linux was stopped on this core, or turned it off (CPU_OFF), and will
    /// not run here until it starts afresh: its interrupts (its timers'
    /// above all, which it may have left armed, or any a hostile Linux
    /// routed here) must no longer wake the core, or the monitor's idle
    /// loop, and the RTOS's, would spin.
    fn linux_stopped_here();

    /// Powers the machine off.
    fn system_off() -> !;

    /// Resets the machine; every core starts again at its reset vector.
    fn system_reset() -> !;
}
