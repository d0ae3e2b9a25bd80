//! The frame an exception saves: the interrupted context's registers, as
//! the vector code (`entry.rs`) lays them out on the current stack. A task
//! switch is returning another task's frame.

/// Registers saved when an exception interrupts the RTOS.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// x0..x30.
    pub x: [u64; 31],
    /// Counter value at the third instruction of an IRQ (0 for other
    /// exceptions): what interrupt latency is measured to.
    pub entered: u64,
    /// Where to resume.
    pub elr: u64,
    /// PSTATE to resume with.
    pub spsr: u64,
    /// The S-EL0 stack pointer (a protected task's; unused by the others).
    pub sp_el0: u64,
    /// Keeps the frame a multiple of 16 bytes.
    pub pad: u64,
}

pub(crate) const FRAME_SIZE: usize = core::mem::size_of::<Frame>();
const _: () = assert!(FRAME_SIZE == 36 * 8 && FRAME_SIZE.is_multiple_of(16));
