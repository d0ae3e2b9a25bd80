//! The PSCI per-core power state machine.
//!
//! ```text
//!            CPU_ON (from another core)         core picks up its entry
//!   Off ───────────────────────────────▶ OnPending ───────────────────▶ On
//!    ▲                                                                  │
//!    └───────────────────────── CPU_OFF (by the core itself) ───────────┘
//! ```
//! A core that never checked in at cold boot, or that belongs to the RTOS
//! alone, is absent for Linux: CPU_ON and AFFINITY_INFO name it as an invalid
//! parameter. The boot core checks in `OnPending` with Linux's kernel entry, so
//! the RTOS can run first and Linux starts when the RTOS first yields.
//!
//! With partitions (several Linux instances, `tandem_abi::partition`) every
//! core belongs to one instance, which has its own RAM: a Linux names only
//! its own instance's cores, starts them only inside its own RAM, and its
//! restart turns only its own cores off. Without, every core is instance 0
//! with all of normal RAM.

use tandem_abi::MAX_CORES;
use tandem_abi::partition::MAX_PARTITIONS;
use tandem_abi::smc::ret;
use tandem_board::{Board, MPIDR_AFFINITY_MASK, MemoryRange};

/// Power state of one core as PSCI sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreState {
    /// Parked in the monitor, waiting for CPU_ON.
    Off,
    /// CPU_ON accepted; the core has not yet entered the normal world.
    OnPending {
        /// Normal-world entry point.
        entry: u64,
        /// Value for x0 at entry.
        context_id: u64,
    },
    /// Running the normal world.
    On,
}

/// AFFINITY_INFO answers.
pub mod affinity {
    /// The core is on.
    pub const ON: i64 = 0;
    /// The core is off.
    pub const OFF: i64 = 1;
    /// The core is being turned on.
    pub const ON_PENDING: i64 = 2;
}

/// How a core joins at cold boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckIn {
    /// The core Linux boots on, at `entry` with x0 = `context_id` (the DTB).
    BootCore {
        /// Linux's kernel entry.
        entry: u64,
        /// x0 at entry.
        context_id: u64,
    },
    /// A core Linux may start with CPU_ON.
    Secondary,
    /// A core Linux must never see (RTOS only).
    NotForLinux,
}

/// All cores' PSCI state.
#[derive(Debug)]
pub struct PsciState {
    cores: [CoreState; MAX_CORES],
    present: [bool; MAX_CORES],
    /// The Linux instance each core belongs to.
    instance: [u8; MAX_CORES],
    /// Each instance's RAM: where its cores may start.
    ram: [MemoryRange; MAX_PARTITIONS],
    board: Board,
}

impl PsciState {
    /// Every core off and absent, until it checks in; every core in instance
    /// 0, which has all of normal RAM.
    pub const fn new(board: Board) -> Self {
        Self {
            cores: [CoreState::Off; MAX_CORES],
            present: [false; MAX_CORES],
            instance: [0; MAX_CORES],
            ram: [board.normal_ram; MAX_PARTITIONS],
            board,
        }
    }

    /// Puts `core` in Linux instance `instance` (a partition), whose RAM is
    /// `ram`. Boot core only, before any Linux runs.
    pub fn assign(&mut self, core: usize, instance: usize, ram: MemoryRange) {
        self.instance[core] = instance as u8;
        self.ram[instance] = ram;
    }

    /// The instance `core` belongs to.
    pub fn instance(&self, core: usize) -> usize {
        self.instance[core] as usize
    }

    /// A core reached the monitor at cold boot.
    pub fn check_in(&mut self, core: usize, role: CheckIn) {
        self.present[core] = role != CheckIn::NotForLinux;
        self.cores[core] = match role {
            CheckIn::BootCore { entry, context_id } => CoreState::OnPending { entry, context_id },
            CheckIn::Secondary | CheckIn::NotForLinux => CoreState::Off,
        };
    }

    /// The state of a core.
    pub fn state(&self, core: usize) -> CoreState {
        self.cores[core]
    }

    /// The core `mpidr` names, if it is present for Linux and in `caller`'s
    /// instance.
    fn present_core(&self, caller: usize, mpidr: u64) -> Result<usize, i64> {
        if mpidr & !MPIDR_AFFINITY_MASK != 0 {
            return Err(ret::INVALID_PARAMETERS);
        }
        match self.board.core_index(mpidr) {
            Some(i)
                if i < MAX_CORES
                    && self.present[i]
                    && self.instance.get(caller) == Some(&self.instance[i]) =>
            {
                Ok(i)
            }
            _ => Err(ret::INVALID_PARAMETERS),
        }
    }

    /// PSCI CPU_ON from `caller`: validate and mark the target pending.
    pub fn cpu_on(
        &mut self,
        caller: usize,
        target_mpidr: u64,
        entry: u64,
        context_id: u64,
    ) -> Result<(), i64> {
        let core = self.present_core(caller, target_mpidr)?;
        let in_linux_ram = self.ram[self.instance(core)].contains(entry, 4)
            && !self.board.shared.contains(entry & !0xFFF, 1)
            && entry.is_multiple_of(4);
        if !in_linux_ram {
            return Err(ret::INVALID_ADDRESS);
        }
        match self.cores[core] {
            CoreState::On => Err(ret::ALREADY_ON),
            CoreState::OnPending { .. } => Err(ret::ON_PENDING),
            CoreState::Off => {
                self.cores[core] = CoreState::OnPending { entry, context_id };
                Ok(())
            }
        }
    }

    /// A parked core looks for work: its entry point and context id if a
    /// CPU_ON is pending for it (and it is then `On`).
    pub fn take_pending(&mut self, core: usize) -> Option<(u64, u64)> {
        match self.cores[core] {
            CoreState::OnPending { entry, context_id } => {
                self.cores[core] = CoreState::On;
                Some((entry, context_id))
            }
            _ => None,
        }
    }

    /// PSCI CPU_OFF by `core` itself. Refused for the last core running, which
    /// could never be woken again.
    pub fn cpu_off(&mut self, core: usize) -> Result<(), i64> {
        let others_alive = (0..MAX_CORES).any(|i| {
            i != core && self.instance[i] == self.instance[core] && self.cores[i] != CoreState::Off
        });
        if self.cores[core] != CoreState::On || !others_alive {
            return Err(ret::DENIED);
        }
        self.cores[core] = CoreState::Off;
        Ok(())
    }

    /// Linux restarts (the monitor stopped it on every core of its
    /// instance): every core of the instance it may use is off again, and
    /// the boot core starts it at `entry` with x0 = `context_id`, as at cold
    /// boot. Other instances' cores keep their state.
    pub fn restart(&mut self, boot_core: usize, entry: u64, context_id: u64) {
        let instance = self.instance[boot_core];
        for ((state, present), i) in self.cores.iter_mut().zip(self.present).zip(self.instance) {
            if present && i == instance {
                *state = CoreState::Off;
            }
        }
        self.cores[boot_core] = CoreState::OnPending { entry, context_id };
    }

    /// PSCI AFFINITY_INFO from `caller`: only level 0 (a single core) is
    /// supported.
    pub fn affinity_info(
        &self,
        caller: usize,
        target_mpidr: u64,
        lowest_level: u64,
    ) -> Result<i64, i64> {
        if lowest_level != 0 {
            return Err(ret::INVALID_PARAMETERS);
        }
        let core = self.present_core(caller, target_mpidr)?;
        Ok(match self.cores[core] {
            CoreState::On => affinity::ON,
            CoreState::Off => affinity::OFF,
            CoreState::OnPending { .. } => affinity::ON_PENDING,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_board::BOARD;

    const ENTRY: u64 = 0x4020_1000;

    fn booted(cores: usize) -> PsciState {
        let mut p = PsciState::new(BOARD);
        p.check_in(
            0,
            CheckIn::BootCore {
                entry: ENTRY,
                context_id: 0x4800_0000,
            },
        );
        assert_eq!(p.take_pending(0), Some((ENTRY, 0x4800_0000)));
        for c in 1..cores {
            p.check_in(c, CheckIn::Secondary);
        }
        p
    }

    #[test]
    fn boot_core_starts_pending_and_rtos_cores_are_absent() {
        let mut p = PsciState::new(BOARD);
        p.check_in(
            0,
            CheckIn::BootCore {
                entry: ENTRY,
                context_id: 7,
            },
        );
        p.check_in(1, CheckIn::NotForLinux);
        assert_eq!(p.affinity_info(0, 0, 0), Ok(affinity::ON_PENDING));
        assert_eq!(p.affinity_info(0, 1, 0), Err(ret::INVALID_PARAMETERS));
        assert_eq!(p.cpu_on(0, 1, ENTRY, 0), Err(ret::INVALID_PARAMETERS));
        assert_eq!(p.take_pending(1), None);
        assert_eq!(p.take_pending(0), Some((ENTRY, 7)));
    }

    #[test]
    fn a_restart_turns_every_linux_core_off_and_the_boot_core_pending() {
        let mut p = booted(4);
        assert_eq!(p.cpu_on(0, 1, ENTRY, 1), Ok(()));
        assert_eq!(p.take_pending(1), Some((ENTRY, 1)));
        assert_eq!(p.cpu_on(0, 2, ENTRY, 2), Ok(()), "pending, never picked up");
        p.restart(0, 0x4020_0000, 0x4800_0000);
        assert_eq!(p.affinity_info(0, 0, 0), Ok(affinity::ON_PENDING));
        for c in 1..4 {
            assert_eq!(p.affinity_info(0, c, 0), Ok(affinity::OFF), "core {c}");
        }
        assert_eq!(p.take_pending(2), None, "the old CPU_ON is gone");
        assert_eq!(p.take_pending(0), Some((0x4020_0000, 0x4800_0000)));
        assert_eq!(
            p.cpu_on(0, 1, ENTRY, 1),
            Ok(()),
            "the new Linux starts its cores"
        );
    }

    #[test]
    fn cpu_on_then_pickup_then_off() {
        let mut p = booted(4);
        assert_eq!(p.affinity_info(0, 2, 0), Ok(affinity::OFF));
        assert_eq!(p.cpu_on(0, 2, ENTRY, 0x55), Ok(()));
        assert_eq!(p.affinity_info(0, 2, 0), Ok(affinity::ON_PENDING));
        assert_eq!(p.cpu_on(0, 2, ENTRY, 0), Err(ret::ON_PENDING));
        assert_eq!(p.take_pending(2), Some((ENTRY, 0x55)));
        assert_eq!(p.take_pending(2), None, "entry is taken once");
        assert_eq!(p.affinity_info(0, 2, 0), Ok(affinity::ON));
        assert_eq!(p.cpu_on(0, 2, ENTRY, 0), Err(ret::ALREADY_ON));
        assert_eq!(p.cpu_off(2), Ok(()));
        assert_eq!(p.affinity_info(0, 2, 0), Ok(affinity::OFF));
        assert_eq!(
            p.cpu_on(0, 2, ENTRY, 0),
            Ok(()),
            "a core comes back after CPU_OFF"
        );
    }

    #[test]
    fn hotplug_cycles_keep_state_consistent() {
        let mut p = booted(4);
        for _ in 0..10 {
            assert_eq!(p.cpu_on(0, 3, ENTRY, 3), Ok(()));
            assert_eq!(p.take_pending(3), Some((ENTRY, 3)));
            assert_eq!(p.cpu_off(3), Ok(()));
        }
        assert_eq!(p.state(3), CoreState::Off);
        assert_eq!(p.state(0), CoreState::On);
    }

    #[test]
    fn cpu_on_rejects_bad_targets_and_entries() {
        let mut p = booted(2);
        assert_eq!(
            p.cpu_on(0, 2, ENTRY, 0),
            Err(ret::INVALID_PARAMETERS),
            "core absent (-smp 2)"
        );
        assert_eq!(
            p.cpu_on(0, 0x100, ENTRY, 0),
            Err(ret::INVALID_PARAMETERS),
            "other cluster"
        );
        assert_eq!(
            p.cpu_on(0, 1 << 50, ENTRY, 0),
            Err(ret::INVALID_PARAMETERS),
            "non-affinity bits"
        );
        assert_eq!(
            p.cpu_on(0, u64::MAX, ENTRY, 0),
            Err(ret::INVALID_PARAMETERS)
        );
        assert_eq!(
            p.cpu_on(0, 1, 0x0E00_0000, 0),
            Err(ret::INVALID_ADDRESS),
            "secure RAM"
        );
        assert_eq!(p.cpu_on(0, 1, 0, 0), Err(ret::INVALID_ADDRESS), "flash");
        assert_eq!(
            p.cpu_on(0, 1, ENTRY + 2, 0),
            Err(ret::INVALID_ADDRESS),
            "misaligned"
        );
        assert_eq!(
            p.cpu_on(0, 1, BOARD.shared.base, 0),
            Err(ret::INVALID_ADDRESS),
            "shared region"
        );
        assert_eq!(
            p.cpu_on(0, 1, u64::MAX - 1, 0),
            Err(ret::INVALID_ADDRESS),
            "wraps"
        );
        assert_eq!(p.state(1), CoreState::Off, "rejected calls change nothing");
    }

    #[test]
    fn last_core_cannot_go_off() {
        let mut p = booted(2);
        assert_eq!(p.cpu_off(0), Err(ret::DENIED));
        assert_eq!(p.cpu_off(1), Err(ret::DENIED), "core 1 is not on");
        p.cpu_on(0, 1, ENTRY, 0).unwrap();
        assert_eq!(p.cpu_off(0), Ok(()), "core 1 is pending, so core 0 may go");
    }

    #[test]
    fn affinity_info_checks_level_and_target() {
        let p = booted(4);
        assert_eq!(p.affinity_info(0, 0, 0), Ok(affinity::ON));
        assert_eq!(p.affinity_info(0, 0, 1), Err(ret::INVALID_PARAMETERS));
        assert_eq!(p.affinity_info(0, 7, 0), Err(ret::INVALID_PARAMETERS));
    }

    #[test]
    fn partitions_name_start_and_restart_only_their_own_cores() {
        let mut p = booted(4);
        let a = MemoryRange {
            base: 0x4000_0000,
            size: 0x2000_0000,
        };
        let b = MemoryRange {
            base: 0x6000_0000,
            size: 0x1FC0_0000,
        };
        for c in 0..3 {
            p.assign(c, 0, a);
        }
        p.assign(3, 1, b);
        assert_eq!(
            p.cpu_on(0, 3, ENTRY, 0),
            Err(ret::INVALID_PARAMETERS),
            "A names B's core"
        );
        assert_eq!(p.affinity_info(0, 3, 0), Err(ret::INVALID_PARAMETERS));
        assert_eq!(
            p.cpu_on(0, 1, 0x6020_0000, 0),
            Err(ret::INVALID_ADDRESS),
            "A starts a core in B's RAM"
        );
        assert_eq!(p.cpu_on(0, 1, ENTRY, 0), Ok(()));
        assert_eq!(p.take_pending(1), Some((ENTRY, 0)));
        // B: its boot core, then its restart leaves A alone.
        p.restart(3, 0x6020_0000, 0x6800_0000);
        assert_eq!(p.take_pending(3), Some((0x6020_0000, 0x6800_0000)));
        assert_eq!(p.affinity_info(3, 3, 0), Ok(affinity::ON));
        assert_eq!(p.affinity_info(0, 1, 0), Ok(affinity::ON), "A's core 1 on");
        assert_eq!(
            p.cpu_off(3),
            Err(ret::DENIED),
            "B's last core: A's cores do not count"
        );
        p.restart(0, ENTRY, 0x4800_0000);
        assert_eq!(p.affinity_info(0, 1, 0), Ok(affinity::OFF));
        assert_eq!(p.affinity_info(3, 3, 0), Ok(affinity::ON), "B runs on");
    }
}
