//! Per-core world contexts: what the monitor saves when a world traps to EL3
//! and restores when it resumes one, and the per-core monitor stacks. The
//! exception vectors and the resume code (`entry.rs`, the only assembly)
//! use the offsets defined here; the resume entry points are declared here
//! so that the trap code needs nothing else of the assembly.
//!
//! Each core owns one context per world, and the EL1 system registers the
//! other world changes: Armv8 does not bank them between the worlds, so the
//! monitor swaps them on a world switch. Which ones, and why, is decided
//! here and nowhere else ([`LinuxEl1`], [`RtosEl1`]; docs/monitor.md has the
//! table).

use crate::shm::{CoreCounts, SwitchLog};
use core::cell::UnsafeCell;
use core::mem::offset_of;
use tandem_abi::MAX_CORES;
use tandem_monitor_core::smc::World;
use tandem_monitor_core::switch::CoreSwitch;

/// SPSR for entering EL1h (SP_EL1) with D, A, I and F masked, as the Linux boot
/// protocol requires.
pub const SPSR_EL1H_MASKED: u64 = 0x3C5;

/// SPSR for entering EL2h (SP_EL2) with D, A, I and F masked: the normal
/// world's EL2 layer, with partitions.
pub const SPSR_EL2H_MASKED: u64 = 0x3C9;

/// SCR_EL3 while Linux runs: NS, RES1 (bits 5:4), FIQ to EL3 (secure interrupts
/// reach the monitor even while Linux runs), SIF (no secure fetch from NS
/// memory), RW (lower ELs are AArch64). SMC enabled; HVC undefined (the EL2
/// layer, where there is one, takes none).
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
///
/// Linux's traps save all of them. The RTOS's traps are calls that keep
/// only what a function call keeps (`tandem_abi::smc::tos`), so they save
/// x0-x3 (the arguments), x18-x29, ELR and SPSR; the rest of its context
/// holds stale values of its own, never Linux's.
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
    /// The core this context belongs to (the monitor's own record: no world
    /// writes it), so a trap finds its core's state without asking the
    /// hardware.
    pub core: u64,
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
        core: 0,
    };

    /// The world this context runs in (SCR_EL3.NS).
    pub const fn world(&self) -> World {
        if self.scr_el3 & 1 != 0 {
            World::NonSecure
        } else {
            World::Secure
        }
    }
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

unsafe extern "C" {
    /// Restores all of `ctx` and returns to its world with `eret`.
    ///
    /// # Safety
    ///
    /// `ctx` must be the calling core's context for the world to enter, with
    /// `monitor_sp` set to the calling core's stack top, and the EL1
    /// registers must already be that world's. The current stack is
    /// abandoned.
    pub fn resume_world(ctx: *mut WorldContext) -> !;

    /// Resumes the RTOS inside its YIELD from `ctx`: the call keeps only
    /// what a function call keeps (`tos::YIELD`), so only x18-x29 come back;
    /// x0-x17 and x30 hold whatever the monitor left, which the secure world
    /// may see.
    ///
    /// # Safety
    ///
    /// As [`resume_world`], and `ctx` must be the RTOS's context saved at
    /// its YIELD.
    pub fn resume_yielded(ctx: *mut WorldContext) -> !;
}

/// Bytes of monitor stack per core.
pub const STACK_SIZE: usize = 16 * 1024;

tandem_runtime::per_core_stacks!(
    /// Per-core monitor stacks. The reset code sets each core's stack
    /// pointer here; a world's context names its top.
    pub static STACKS: STACK_SIZE, MAX_CORES
);

/// Top of `core`'s monitor stack.
pub fn stack_top(core: usize) -> u64 {
    STACKS.top(core)
}

/// Declares one world's EL1 (and EL0) system registers, kept as plain
/// `u64`s in named groups of pairs, with each group's save and restore
/// generated from the one list: a pair is two `mrs` and one `stp`, or one
/// `ldp` and two `msr`, the fewest instructions that move two system
/// registers through memory, addressed from the start of the whole state
/// so that the groups share one base register.
macro_rules! el1_state {
    (
        $(#[$meta:meta])*
        $name:ident {
            $(
                $(#[$group_meta:meta])*
                $vis:vis $save:ident / $restore:ident {
                    $($a:ident: $ra:literal, $b:ident: $rb:literal;)*
                }
            )*
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            $($(
                #[doc = concat!("`", $ra, "`")]
                $a: u64,
                #[doc = concat!("`", $rb, "`")]
                $b: u64,
            )*)*
        }

        impl $name {
            /// All zero.
            const ZERO: Self = Self { $($($a: 0, $b: 0,)*)* };

            $(
                $(#[$group_meta])*
                /// Reads the group's live registers into `self`.
                #[inline(always)]
                $vis fn $save(&mut self) {
                    let at: *mut Self = self;
                    $(
                        // SAFETY: reading EL1 registers at EL3 has no side
                        // effects; the pair goes to two adjacent fields of
                        // `*self` (checked below), 8-byte aligned.
                        unsafe {
                            core::arch::asm!(
                                concat!("mrs {x}, ", $ra),
                                concat!("mrs {y}, ", $rb),
                                "stp {x}, {y}, [{at}, #{offset}]",
                                at = in(reg) at,
                                offset = const core::mem::offset_of!($name, $a),
                                x = out(reg) _,
                                y = out(reg) _,
                                options(nostack, preserves_flags),
                            )
                        };
                    )*
                }

                /// Writes the group's values from `self` into the live
                /// registers.
                ///
                /// # Safety
                ///
                /// Only on the way back to a lower EL, with values saved
                /// from, or made for, the world about to run.
                #[inline(always)]
                $vis unsafe fn $restore(&self) {
                    let at: *const Self = self;
                    $(
                        // SAFETY: EL1 registers do not affect EL3; the
                        // caller guarantees they suit the world that runs
                        // next. The pair comes from two adjacent fields of
                        // `*self`.
                        unsafe {
                            core::arch::asm!(
                                "ldp {x}, {y}, [{at}, #{offset}]",
                                concat!("msr ", $ra, ", {x}"),
                                concat!("msr ", $rb, ", {y}"),
                                at = in(reg) at,
                                offset = const core::mem::offset_of!($name, $a),
                                x = out(reg) _,
                                y = out(reg) _,
                                options(nostack, preserves_flags, readonly),
                            )
                        };
                    )*
                }
            )*
        }

        $($(
            const _: () = assert!(
                core::mem::offset_of!($name, $b) == core::mem::offset_of!($name, $a) + 8
            );
        )*)*
    };
}

// Armv8 does not bank the EL1 registers between the worlds. The rule that
// keeps a switch short: the secure world may see Linux's state, Linux must
// never see the secure world's, so a switch saves and restores only what
// the other side changes. The groups below are the whole list; every EL1
// register not named here the RTOS never writes, so it holds Linux's value
// throughout: TTBR1, CONTEXTIDR, AMAIR, TPIDR_EL1, TPIDRRO_EL0, PAR (no AT
// instructions), CSSELR, CNTKCTL, MDSCR (MDCR_EL3.SDD keeps Linux's debug
// settings out of the secure world) and ICC_PMR_EL1 (the RTOS's interrupts,
// priority 0x20, are above any mask Linux can set). The GIC's other EL1
// registers the RTOS uses are banked by security state. FP/SIMD registers
// and FPCR/FPSR are never touched by the secure side (soft-float builds,
// `scripts/check-no-fp.sh`).
//
// Every group is moved on every switch, whether or not the RTOS turned its
// MMU on: testing for it cost more than the move it spared, and the RTOS
// turns it on in every configuration since issue 21.

el1_state! {
    /// Linux's EL1 state while the RTOS runs: everything the RTOS may
    /// change, saved and restored whole on every switch (Linux may change
    /// any of it at any time).
    LinuxEl1 {
        /// The registers both worlds set (the RTOS's counterpart is
        /// [`RtosEl1`]'s settings), and the two both change while they run.
        save_shared / restore_shared {
            sctlr_el1: "sctlr_el1", vbar_el1: "vbar_el1";
            tcr_el1: "tcr_el1", mair_el1: "mair_el1";
            sp_el1: "sp_el1", ttbr0_el1: "ttbr0_el1";
        }
        /// Registers the RTOS overwrites but never needs back: every
        /// interrupt it takes writes ELR and SPSR, its tasks' system calls
        /// (`svc`) write ESR, FAR is UNKNOWN after any exception that does
        /// not set it (it yields from its idle loop, outside any
        /// exception); what code at S-EL0 could change (its thread
        /// register) and the FP/SIMD trap control (the RTOS runs with 0, so
        /// a stray FP instruction traps instead of touching Linux's FP
        /// registers).
        save_linux_only / restore_linux_only {
            elr_el1: "elr_el1", spsr_el1: "spsr_el1";
            esr_el1: "esr_el1", far_el1: "far_el1";
            tpidr_el0: "tpidr_el0", cpacr_el1: "cpacr_el1";
        }
    }
}

impl LinuxEl1 {
    /// What a freshly started Linux sees: MMU off, FP/SIMD trapped until it
    /// enables it, everything else zero.
    pub const RESET: Self = Self {
        sctlr_el1: SCTLR_EL1_RESET,
        ..Self::ZERO
    };

    /// Saves everything the RTOS may change.
    #[inline(always)]
    pub fn save(&mut self) {
        self.save_shared();
        self.save_linux_only();
    }

    /// Puts Linux's values back wherever the RTOS may have changed them.
    ///
    /// # Safety
    ///
    /// Only on the way back to Linux.
    #[inline(always)]
    pub unsafe fn restore(&self) {
        // SAFETY: Linux's own values, about to resume Linux (the caller's
        // promise).
        unsafe {
            self.restore_shared();
            self.restore_linux_only();
        }
    }

    /// Sets every register of the groups to a fresh Linux's values.
    ///
    /// # Safety
    ///
    /// Only on the way to starting Linux at its entry.
    pub unsafe fn reset(&mut self) {
        *self = Self::RESET;
        // SAFETY: reset values for an EL1 that starts from scratch (the
        // caller's promise).
        unsafe { self.restore() };
    }
}

el1_state! {
    /// The RTOS's EL1 state while Linux runs (or the core idles).
    RtosEl1 {
        /// What the RTOS sets before its first YIELD on a core and never
        /// changes after (`tandem_abi::smc::tos`): its MMU and caches, its
        /// vectors, its translation regime's shape and memory attributes.
        /// Saved only at a YIELD that leaves the core to the monitor
        /// (`switch::Step::saves_rtos_settings`): its first on the core is
        /// one, and it changes them only before that.
        pub save_settings / restore_settings {
            sctlr_el1: "sctlr_el1", vbar_el1: "vbar_el1";
            tcr_el1: "tcr_el1", mair_el1: "mair_el1";
        }
        /// What it changes while it runs: its EL1 stack and the
        /// translation table of the address space in use (its protected
        /// tasks have their own).
        save_moving / restore_moving {
            sp_el1: "sp_el1", ttbr0_el1: "ttbr0_el1";
        }
    }
}

impl RtosEl1 {
    /// What the RTOS sees at its entry: MMU off, no vectors yet.
    pub const RESET: Self = Self {
        sctlr_el1: SCTLR_EL1_RESET,
        ..Self::ZERO
    };

    /// Saves what the RTOS changes between its YIELDs, at a YIELD.
    #[inline(always)]
    pub fn save(&mut self) {
        self.save_moving();
    }

    /// Gives the RTOS its values back, and 0 in CPACR_EL1: FP/SIMD trapped
    /// at S-EL1 and S-EL0, whatever Linux enabled.
    ///
    /// # Safety
    ///
    /// Only on the way to the RTOS, after Linux's were saved (if it ran),
    /// with its settings saved since its start.
    #[inline(always)]
    pub unsafe fn restore(&self) {
        // SAFETY: the RTOS's own values, about to resume it (the caller's
        // promise).
        unsafe {
            self.restore_settings();
            self.restore_moving();
            core::arch::asm!(
                "msr cpacr_el1, xzr",
                options(nomem, nostack, preserves_flags)
            );
        }
    }

    /// Sets the RTOS's registers for its start, and CPACR_EL1 = 0 (FP/SIMD
    /// trapped from the first instruction).
    ///
    /// # Safety
    ///
    /// Only on the way to the RTOS's entry.
    pub unsafe fn reset(&mut self) {
        *self = Self::RESET;
        // SAFETY: reset values for an EL1 that starts from scratch (the
        // caller's promise).
        unsafe { self.restore() };
    }
}

/// Everything the monitor keeps for one core.
#[repr(C)]
pub struct CoreState {
    /// Linux's context on this core.
    pub normal: WorldContext,
    /// The RTOS's context on this core.
    pub secure: WorldContext,
    /// Linux's EL1 registers while the RTOS runs.
    pub linux_el1: LinuxEl1,
    /// The RTOS's EL1 registers while Linux runs.
    pub rtos_el1: RtosEl1,
    /// World switches here, published to the shared region.
    pub switches: SwitchLog,
    /// What Linux made the monitor refuse here, and its idle wake-ups.
    pub counts: CoreCounts,
    /// Which world runs and which runs next (`tandem_monitor_core::switch`).
    pub switch: CoreSwitch,
}

impl CoreState {
    /// The context of `world` on this core.
    pub fn context(&mut self, world: World) -> *mut WorldContext {
        match world {
            World::NonSecure => &mut self.normal,
            World::Secure => &mut self.secure,
        }
    }
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
            linux_el1: LinuxEl1::RESET,
            rtos_el1: RtosEl1::RESET,
            switches: SwitchLog::ZERO,
            counts: CoreCounts::ZERO,
            switch: CoreSwitch::new(false, false),
        }
    }; MAX_CORES],
));

impl PerCore {
    /// The calling core's state.
    ///
    /// # Safety
    ///
    /// `core` must be the index of the calling core (below `MAX_CORES`: the
    /// reset code parks any other core), and the caller must not hold
    /// another reference to that core's state, its contexts included.
    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    pub unsafe fn this_core(&self, core: usize) -> &mut CoreState {
        // SAFETY: in bounds and exclusive (the caller's promise); no bounds
        // check on the world switch's path.
        unsafe { (*self.0.get()).get_unchecked_mut(core) }
    }
}
