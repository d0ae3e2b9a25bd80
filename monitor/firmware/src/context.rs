//! Per-core world contexts: what the monitor saves when a world traps to EL3
//! and restores when it resumes one. The exception vectors (`entry.rs`) save and
//! restore the general registers with the offsets defined here.
//!
//! Each core owns one context per world, and one copy of the EL1 system
//! registers per world: Armv8 does not bank them between the worlds, so the
//! monitor swaps them on every world switch. Their list is [`El1Regs`], here
//! and nowhere else.

use crate::console;
use crate::shm::SwitchLog;
use core::cell::UnsafeCell;
use core::mem::offset_of;
use tandem_abi::MAX_CORES;
use tandem_monitor_core::steal::StealClock;

/// SPSR for entering EL1h (SP_EL1) with D, A, I and F masked, as the Linux boot
/// protocol requires.
pub const SPSR_EL1H_MASKED: u64 = 0x3C5;

/// SCR_EL3 while Linux runs: NS, RES1 (bits 5:4), FIQ to EL3 (secure interrupts
/// reach the monitor even while Linux runs), SIF (no secure fetch from NS
/// memory), RW (lower ELs are AArch64). SMC enabled; HVC undefined (no EL2).
pub const SCR_NORMAL_WORLD: u64 = (1 << 0) | (0b11 << 4) | (1 << 2) | (1 << 9) | (1 << 10);

/// SCR_EL3.TWI (bit 12; 13 is TWE): Linux's WFI traps to EL3. Set only with stolen-time
/// accounting on, which must know when Linux is idle (then the RTOS steals
/// nothing from it); the monitor then waits in Linux's place.
pub const SCR_TWI: u64 = 1 << 12;

/// SCR_EL3 while the RTOS runs: secure, RES1, SIF, RW, and ST (the RTOS owns
/// the secure physical timer). IRQ and FIQ stay at S-EL1: the RTOS takes its
/// own interrupts (as IRQs) and keeps FIQs (Linux's, while it runs) masked, so
/// they wait until it yields.
pub const SCR_SECURE_WORLD: u64 = (0b11 << 4) | (1 << 9) | (1 << 10) | (1 << 11);

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

/// Declares the EL1 state that the two worlds share in hardware and the
/// monitor keeps per world, with save and restore generated from one list.
macro_rules! el1_registers {
    ($($field:ident: $register:literal,)*) => {
        /// EL1 (and EL0) system registers of one world.
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct El1Regs {
            $(
                #[doc = concat!("`", $register, "`")]
                pub $field: u64,
            )*
        }

        impl El1Regs {
            /// Reads the live registers into `self`.
            #[inline(always)]
            pub fn save(&mut self) {
                $(
                    // SAFETY: reading an EL1 register at EL3 has no side effects.
                    unsafe {
                        core::arch::asm!(concat!("mrs {}, ", $register), out(reg) self.$field,
                            options(nomem, nostack, preserves_flags))
                    };
                )*
            }

            /// Writes `self` into the live registers.
            ///
            /// # Safety
            ///
            /// Only on the way back to a lower EL, with values saved from, or
            /// made for, the world about to run.
            #[inline(always)]
            pub unsafe fn restore(&self) {
                $(
                    // SAFETY: EL1 registers do not affect EL3; the caller
                    // guarantees they suit the world that runs next.
                    unsafe {
                        core::arch::asm!(concat!("msr ", $register, ", {}"), in(reg) self.$field,
                            options(nomem, nostack, preserves_flags))
                    };
                )*
            }
        }
    };
}

el1_registers! {
    sctlr_el1: "sctlr_el1",
    cpacr_el1: "cpacr_el1",
    ttbr0_el1: "ttbr0_el1",
    ttbr1_el1: "ttbr1_el1",
    tcr_el1: "tcr_el1",
    mair_el1: "mair_el1",
    amair_el1: "amair_el1",
    vbar_el1: "vbar_el1",
    contextidr_el1: "contextidr_el1",
    tpidr_el0: "tpidr_el0",
    tpidrro_el0: "tpidrro_el0",
    tpidr_el1: "tpidr_el1",
    sp_el1: "sp_el1",
    elr_el1: "elr_el1",
    spsr_el1: "spsr_el1",
    esr_el1: "esr_el1",
    far_el1: "far_el1",
    afsr0_el1: "afsr0_el1",
    afsr1_el1: "afsr1_el1",
    par_el1: "par_el1",
    csselr_el1: "csselr_el1",
    cntkctl_el1: "cntkctl_el1",
    mdscr_el1: "mdscr_el1",
    // ICC_PMR_EL1: one priority mask for both worlds in the GIC.
    icc_pmr_el1: "s3_0_c4_c6_0",
}

impl El1Regs {
    /// What a world sees when first entered: MMU off, FP/SIMD trapped (the
    /// RTOS must not use it; Linux enables it itself), priority mask open.
    pub const RESET: Self = {
        // SAFETY: El1Regs is plain u64s; all-zero is a valid value.
        let mut r: Self = unsafe { core::mem::zeroed() };
        r.sctlr_el1 = SCTLR_EL1_RESET;
        r.icc_pmr_el1 = 0xFF;
        r
    };
}

/// Everything the monitor keeps for one core.
#[repr(C)]
pub struct CoreState {
    /// Linux's context on this core.
    pub normal: WorldContext,
    /// The RTOS's context on this core.
    pub secure: WorldContext,
    /// Linux's EL1 registers while the RTOS runs.
    pub normal_el1: El1Regs,
    /// The RTOS's EL1 registers while Linux runs.
    pub secure_el1: El1Regs,
    /// World switches here, published to the shared region.
    pub switches: SwitchLog,
    /// The RTOS runs on this core (its policy, cached off the switch path).
    pub rtos: bool,
    /// Stolen-time accounting is on (boot configuration, cached likewise).
    pub steal_time: bool,
    /// Time the RTOS took from Linux here (used only with `steal_time`).
    pub steal: StealClock,
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
            secure: WorldContext::ZERO,
            normal_el1: El1Regs::RESET,
            secure_el1: El1Regs::RESET,
            switches: SwitchLog::ZERO,
            rtos: false,
            steal_time: false,
            steal: StealClock::ZERO,
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
