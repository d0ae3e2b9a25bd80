//! Per-core world contexts: what the monitor saves when a world traps to EL3
//! and restores when it resumes one. The exception vectors (`entry.rs`) save and
//! restore the general registers with the offsets defined here.
//!
//! Each core owns one context per world. Today only the normal world runs; the
//! secure (RTOS) context takes its place beside it.

use crate::console;
use core::cell::UnsafeCell;
use core::mem::offset_of;
use tandem_monitor_core::psci::MAX_CORES;

/// SPSR for entering EL1h (SP_EL1) with D, A, I and F masked, as the Linux boot
/// protocol requires.
pub const SPSR_EL1H_MASKED: u64 = 0x3C5;

/// SCR_EL3 while Linux runs: NS, RES1 (bits 5:4), FIQ to EL3 (secure interrupts
/// reach the monitor even while Linux runs), SIF (no secure fetch from NS
/// memory), RW (lower ELs are AArch64). SMC enabled; HVC undefined (no EL2).
pub const SCR_NORMAL_WORLD: u64 = (1 << 0) | (0b11 << 4) | (1 << 2) | (1 << 9) | (1 << 10);

/// SCTLR_EL1 handed to a freshly entered EL1: MMU and caches off, little
/// endian, RES1 bits set.
pub const SCTLR_EL1_RESET: u64 = 0x30D0_0800;

/// A world's registers as saved on a trap to EL3.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WorldContext {
    /// x0..x30.
    pub x: [u64; 31],
    /// The world's EL0 stack pointer.
    pub sp_el0: u64,
    /// Where the world resumes.
    pub elr_el3: u64,
    /// The world's PSTATE at the trap.
    pub spsr_el3: u64,
    /// SCR_EL3 while this world runs.
    pub scr_el3: u64,
    /// Top of this core's monitor stack: where Rust runs after a trap.
    pub monitor_sp: u64,
}

impl WorldContext {
    /// All registers zero.
    pub const ZERO: Self = Self {
        x: [0; 31],
        sp_el0: 0,
        elr_el3: 0,
        spsr_el3: 0,
        scr_el3: 0,
        monitor_sp: 0,
    };
}

/// Offsets the vector assembly uses (checked against the struct at compile time).
pub const CTX_SP_EL0: usize = offset_of!(WorldContext, sp_el0);
/// See [`CTX_SP_EL0`].
pub const CTX_ELR: usize = offset_of!(WorldContext, elr_el3);
/// See [`CTX_SP_EL0`].
pub const CTX_SCR: usize = offset_of!(WorldContext, scr_el3);
/// See [`CTX_SP_EL0`].
pub const CTX_MONITOR_SP: usize = offset_of!(WorldContext, monitor_sp);
const _: () = assert!(CTX_SP_EL0 == 31 * 8);
const _: () =
    assert!(CTX_ELR == CTX_SP_EL0 + 8 && offset_of!(WorldContext, spsr_el3) == CTX_ELR + 8);

/// Everything the monitor keeps for one core.
#[repr(C)]
pub struct CoreState {
    /// Linux's context on this core.
    pub normal: WorldContext,
}

/// One [`CoreState`] per core; each core touches only its own.
pub struct PerCore(UnsafeCell<[CoreState; MAX_CORES]>);

// SAFETY: each entry is only ever accessed by the core it belongs to (see
// `PerCore::this_core`), so no two cores share data through it.
unsafe impl Sync for PerCore {}

/// The per-core state, in .bss.
pub static CORES: PerCore = PerCore(UnsafeCell::new(
    [const {
        CoreState {
            normal: WorldContext::ZERO,
        }
    }; MAX_CORES],
));

impl PerCore {
    /// The calling core's state.
    ///
    /// # Safety
    ///
    /// `core` must be the index of the calling core, and the caller must not
    /// hold another reference to that core's state.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn this_core(&self, core: usize) -> &mut CoreState {
        debug_assert_eq!(core, console::core_index());
        // SAFETY: the caller guarantees exclusive access to its own core's entry.
        unsafe { &mut (*self.0.get())[core] }
    }
}
