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
//!
//! While the monitor stops an instance ([`PsciState::stop`], its reboot or
//! power-off: `crate::lifecycle`), the instance's CPU_ONs are refused and
//! any it had pending are dropped, so no core can start the old Linux after
//! it stopped there; [`PsciState::restart`] ends that.
//!
//! Changes happen under the monitor's PSCI lock; Linux's queries
//! (AFFINITY_INFO, PV_TIME_ST, a CPU_ON of a core already on) are answered
//! from a [`PsciView`] published after every change, without the lock, so
//! no storm of calls from other cores can hold a core at EL3.

use core::sync::atomic::{AtomicU8, AtomicU64, Ordering};
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
#[derive(Clone, Debug)]
pub struct PsciState {
    cores: [CoreState; MAX_CORES],
    present: [bool; MAX_CORES],
    /// The Linux instance each core belongs to.
    instance: [u8; MAX_CORES],
    /// Each instance's RAM: where its cores may start.
    ram: [MemoryRange; MAX_PARTITIONS],
    /// Each instance being stopped by the monitor (until its restart).
    stopping: [bool; MAX_PARTITIONS],
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
            stopping: [false; MAX_PARTITIONS],
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
    /// Refused (INTERNAL_FAILURE) while the monitor stops the instance.
    pub fn cpu_on(
        &mut self,
        caller: usize,
        target_mpidr: u64,
        entry: u64,
        context_id: u64,
    ) -> Result<(), i64> {
        let core = self.present_core(caller, target_mpidr)?;
        if !valid_entry(&self.board, self.ram[self.instance(core)], entry) {
            return Err(ret::INVALID_ADDRESS);
        }
        if self.stopping[self.instance(core)] {
            return Err(ret::INTERNAL_FAILURE);
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
        if self.stopping[self.instance(core)] {
            return None;
        }
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
        if self.cores[core] != CoreState::On || !others_alive || self.stopping[self.instance(core)]
        {
            return Err(ret::DENIED);
        }
        self.cores[core] = CoreState::Off;
        Ok(())
    }

    /// The monitor stops `instance` (its reboot or power-off): every core
    /// of it is off for PSCI, the CPU_ONs it had pending are dropped and
    /// new ones refused until [`Self::restart`]. Returns false if it was
    /// being stopped already (a second request changes nothing).
    pub fn stop(&mut self, instance: usize) -> bool {
        if self.stopping[instance] {
            return false;
        }
        self.stopping[instance] = true;
        for ((state, present), i) in self.cores.iter_mut().zip(self.present).zip(self.instance) {
            if present && usize::from(i) == instance {
                *state = CoreState::Off;
            }
        }
        true
    }

    /// Whether the monitor is stopping (or has stopped) `instance`.
    pub fn stopping(&self, instance: usize) -> bool {
        self.stopping[instance]
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
        self.stopping[usize::from(instance)] = false;
        self.cores[boot_core] = CoreState::OnPending { entry, context_id };
    }

    /// Publishes every core's state to `view`, for the lock-free queries
    /// (after every change: a few stores).
    pub fn publish(&self, view: &PsciView) {
        for core in 0..MAX_CORES {
            let code = match (self.present[core], self.cores[core]) {
                (false, _) => view::ABSENT,
                (true, CoreState::Off) => view::OFF,
                (true, CoreState::OnPending { .. }) => view::ON_PENDING,
                (true, CoreState::On) => view::ON,
            };
            view.state[core].store(code, Ordering::Release);
        }
    }

    /// Publishes which instance each core is in and each instance's RAM to
    /// `view` (after [`Self::assign`], at cold boot).
    pub fn publish_instances(&self, view: &PsciView) {
        for (core, instance) in self.instance.iter().enumerate() {
            view.instance[core].store(*instance, Ordering::Release);
        }
        for (i, ram) in self.ram.iter().enumerate() {
            view.ram_base[i].store(ram.base, Ordering::Release);
            view.ram_size[i].store(ram.size, Ordering::Release);
        }
    }

    /// PSCI AFFINITY_INFO from `caller`: only level 0 (a single core) is
    /// supported. (Linux's calls are answered by [`PsciView::affinity_info`],
    /// which must agree with this; the tests check it.)
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

/// Whether `entry` may start a core of an instance with RAM `ram`: inside
/// it, word aligned, and not in the shared region.
fn valid_entry(board: &Board, ram: MemoryRange, entry: u64) -> bool {
    ram.contains(entry, 4) && !board.shared.contains(entry & !0xFFF, 1) && entry.is_multiple_of(4)
}

/// [`PsciView`]'s state codes.
mod view {
    pub const ABSENT: u8 = 0;
    pub const OFF: u8 = 1;
    pub const ON_PENDING: u8 = 2;
    pub const ON: u8 = 3;
}

/// Every core's PSCI state as the last change under the lock left it, read
/// without the lock. A query answered from it may be a moment old, as any
/// answer about another core is by the time its caller reads it.
#[derive(Debug)]
pub struct PsciView {
    state: [AtomicU8; MAX_CORES],
    instance: [AtomicU8; MAX_CORES],
    /// Each instance's RAM (set at cold boot, before Linux runs).
    ram_base: [AtomicU64; MAX_PARTITIONS],
    ram_size: [AtomicU64; MAX_PARTITIONS],
}

impl PsciView {
    /// Every core absent, as [`PsciState::new`].
    pub const fn new() -> Self {
        Self {
            state: [const { AtomicU8::new(view::ABSENT) }; MAX_CORES],
            instance: [const { AtomicU8::new(0) }; MAX_CORES],
            ram_base: [const { AtomicU64::new(0) }; MAX_PARTITIONS],
            ram_size: [const { AtomicU64::new(0) }; MAX_PARTITIONS],
        }
    }

    fn code(&self, core: usize) -> u8 {
        self.state[core].load(Ordering::Acquire)
    }

    /// The core `mpidr` names, if it is present for Linux and in `caller`'s
    /// instance (as [`PsciState`] checks it).
    fn present_core(&self, board: &Board, caller: usize, mpidr: u64) -> Result<usize, i64> {
        if mpidr & !MPIDR_AFFINITY_MASK != 0 {
            return Err(ret::INVALID_PARAMETERS);
        }
        match board.core_index(mpidr) {
            Some(i)
                if i < MAX_CORES
                    && caller < MAX_CORES
                    && self.code(i) != view::ABSENT
                    && self.instance[caller].load(Ordering::Acquire)
                        == self.instance[i].load(Ordering::Acquire) =>
            {
                Ok(i)
            }
            _ => Err(ret::INVALID_PARAMETERS),
        }
    }

    /// AFFINITY_INFO, as [`PsciState::affinity_info`] answers it.
    pub fn affinity_info(
        &self,
        board: &Board,
        caller: usize,
        target_mpidr: u64,
        lowest_level: u64,
    ) -> Result<i64, i64> {
        if lowest_level != 0 {
            return Err(ret::INVALID_PARAMETERS);
        }
        let core = self.present_core(board, caller, target_mpidr)?;
        Ok(match self.code(core) {
            view::ON => affinity::ON,
            view::ON_PENDING => affinity::ON_PENDING,
            _ => affinity::OFF,
        })
    }

    /// Whether `core` runs Linux (`On`).
    pub fn is_on(&self, core: usize) -> bool {
        core < MAX_CORES && self.code(core) == view::ON
    }

    /// The answer to a CPU_ON that changes nothing, as [`PsciState::cpu_on`]
    /// gives it, if it is one: a bad target or entry, or a target on or
    /// pending already (a storm of CPU_ONs of a core that is on then never
    /// takes the lock). `None`: only the locked call can answer.
    pub fn cpu_on_unchanged(
        &self,
        board: &Board,
        caller: usize,
        target_mpidr: u64,
        entry: u64,
    ) -> Option<i64> {
        let core = match self.present_core(board, caller, target_mpidr) {
            Ok(core) => core,
            Err(e) => return Some(e),
        };
        let instance = usize::from(self.instance[core].load(Ordering::Acquire));
        let ram = MemoryRange {
            base: self.ram_base[instance].load(Ordering::Acquire),
            size: self.ram_size[instance].load(Ordering::Acquire),
        };
        if !valid_entry(board, ram, entry) {
            return Some(ret::INVALID_ADDRESS);
        }
        match self.code(core) {
            view::ON => Some(ret::ALREADY_ON),
            view::ON_PENDING => Some(ret::ON_PENDING),
            _ => None,
        }
    }
}

impl Default for PsciView {
    fn default() -> Self {
        Self::new()
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

    /// xorshift64*: a tiny deterministic generator.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[test]
    fn the_published_view_answers_as_the_locked_state_does() {
        let mut seed = 0xFEED_5EED_u64;
        for round in 0..200 {
            let mut p = booted(4);
            if round % 2 == 0 {
                // Two partitions: A on cores 0-2, B on core 3.
                let a = MemoryRange {
                    base: 0x4000_0000,
                    size: 0x2000_0000,
                };
                for c in 0..3 {
                    p.assign(c, 0, a);
                }
                p.assign(
                    3,
                    1,
                    MemoryRange {
                        base: 0x6000_0000,
                        size: 0x1FC0_0000,
                    },
                );
            }
            let view = PsciView::new();
            for _ in 0..200 {
                // A random change, then the view published as after every one.
                let r = next(&mut seed);
                let core = (r % 4) as usize;
                let target = r >> 8 & 0x7;
                let entry = [ENTRY, 0x6020_0000, 0x0E00_0000, ENTRY + 2][(r >> 16 & 3) as usize];
                match r >> 20 & 7 {
                    0 | 1 => {
                        let _ = p.cpu_on(core, target, entry, 0);
                    }
                    2 => {
                        let _ = p.take_pending(core);
                    }
                    3 => {
                        let _ = p.cpu_off(core);
                    }
                    4 if r >> 24 & 7 == 0 => {
                        let _ = p.stop(p.instance(core));
                    }
                    5 if r >> 24 & 3 == 0 => p.restart(core, ENTRY, 0),
                    _ => {}
                }
                p.publish(&view);
                p.publish_instances(&view);
                for caller in 0..5 {
                    for mpidr in [0, 1, 2, 3, 4, 0x100, 1 << 40] {
                        for level in [0, 1] {
                            assert_eq!(
                                view.affinity_info(&BOARD, caller, mpidr, level),
                                p.affinity_info(caller, mpidr, level),
                                "AFFINITY_INFO({mpidr:#x}, {level}) from {caller}"
                            );
                        }
                        for entry in [ENTRY, 0x6020_0000, 0x0E00_0000, ENTRY + 2] {
                            if let Some(answer) =
                                view.cpu_on_unchanged(&BOARD, caller, mpidr, entry)
                            {
                                let mut copy = p.clone();
                                assert_eq!(
                                    copy.cpu_on(caller, mpidr, entry, 0),
                                    Err(answer),
                                    "CPU_ON({mpidr:#x}, {entry:#x}) from {caller}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
