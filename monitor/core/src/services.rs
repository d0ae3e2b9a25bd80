//! The monitor's SMC services and their dispatch table: Arm architecture calls
//! (SMCCC 1.1), PSCI 1.1, Arm PV time (standard hypervisor service), Tandem's
//! SiP calls with SMCCC's general queries for their range (call count, UID,
//! revision), and the RTOS's Trusted-OS calls.
//!
//! The table lists every function the monitor implements, each with its
//! handler: PSCI_FEATURES answers from it, the fuzz test and the generated
//! C header (`tandem-abi-gen`) enumerate it, so the list exists once.

use crate::lifecycle::{Instances, Lifecycle};
use crate::psci::{CheckIn, PsciState, PsciView};
use crate::smc::{Args, Function, Outcome, Service, Signal, SmcCall, Table, World, owner};
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use tandem_abi::smc::*;
use tandem_board::{Board, MemoryRange};
use tandem_lock::SpinLock;

/// State the services work on, shared by every core. Only PSCI's power
/// states change at run time, so only they sit behind a lock, and no core
/// ever waits for it at EL3 on Linux's behalf: a Linux call that finds it
/// taken is issued again ([`Outcome::Retry`]), Linux's queries read a view
/// published after every change, and the RTOS's YIELD, taken on every
/// world switch, touches none of it.
#[derive(Debug)]
pub struct Monitor {
    /// PSCI power states (private: every change republishes `psci_view`).
    psci: SpinLock<PsciState>,
    /// The power states as the last change left them, read without the lock.
    psci_view: PsciView,
    /// Linux's stops and restarts (`crate::lifecycle`).
    pub lifecycle: Lifecycle,
    /// The board we run on.
    pub board: Board,
    /// PV time is offered (boot configuration feature `FEATURE_STEAL_TIME`;
    /// set once by the boot core before Linux runs).
    steal_time: AtomicBool,
    /// Cores running an RPC server (boot configuration; 0: no RPC; set
    /// like `steal_time`).
    rpc_cores: AtomicU8,
    /// Cores that may have a Linux entry waiting (CPU_ON, a restart): a
    /// hint that lets an idle core's look loop pass the PSCI lock by, which
    /// Linux's cores can keep busy with calls (`Monitor::take_pending`).
    maybe_pending: AtomicU64,
}

/// What an idle core's look for a Linux entry found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// Nothing is waiting for this core.
    Nothing,
    /// A CPU_ON (or a restart) left this entry and context ID: Linux starts.
    Entry(u64, u64),
    /// Something may wait, but another core holds the PSCI lock: look again
    /// without sleeping, after the RTOS had its turn if it has work.
    Busy,
}

impl Monitor {
    /// Fresh state for `board`: every core off, no PV time, no RPC.
    pub const fn new(board: Board) -> Self {
        Self {
            psci: SpinLock::new(PsciState::new(board)),
            psci_view: PsciView::new(),
            lifecycle: Lifecycle::new(),
            board,
            steal_time: AtomicBool::new(false),
            rpc_cores: AtomicU8::new(0),
            // The boot core starts pending: every core looks once.
            maybe_pending: AtomicU64::new(u64::MAX),
        }
    }

    /// Runs `f` on the PSCI state under its lock, waiting for the lock (cold
    /// boot, the monitor's own restarts: never on a Linux call), then
    /// publishes the view.
    fn psci_locked<R>(&self, f: impl FnOnce(&mut PsciState) -> R) -> R {
        let mut psci = self.psci.lock();
        let r = f(&mut psci);
        psci.publish(&self.psci_view);
        r
    }

    /// Runs `f` on the PSCI state if its lock is free, then publishes the
    /// view; `None` if another core holds it.
    fn psci_if_free<R>(&self, f: impl FnOnce(&mut PsciState) -> R) -> Option<R> {
        let mut psci = self.psci.try_lock()?;
        let r = f(&mut psci);
        psci.publish(&self.psci_view);
        Some(r)
    }

    /// A Linux call's change to the PSCI state, or [`Outcome::Retry`] if the
    /// lock is taken.
    fn psci_call(&self, f: impl FnOnce(&mut PsciState) -> Outcome) -> Outcome {
        self.psci_if_free(f).unwrap_or(Outcome::Retry)
    }

    /// Sets this boot's Linux instances and gives each core to its
    /// instance in PSCI. Boot core, at cold boot, before any Linux runs.
    pub fn configure_linux(&self, instances: Instances, cores: usize) {
        self.lifecycle.configure(instances);
        self.psci_locked(|p| {
            for (i, instance) in instances.iter().enumerate() {
                for c in (0..cores).filter(|&c| instance.has_core(c)) {
                    let ram = MemoryRange {
                        base: instance.ram.base,
                        size: instance.ram.size,
                    };
                    p.assign(c, i, ram);
                }
            }
            p.publish_instances(&self.psci_view);
        });
    }

    /// `core` reached the monitor at cold boot, in `role`.
    pub fn check_in(&self, core: usize, role: CheckIn) {
        self.psci_locked(|p| p.check_in(core, role));
    }

    /// The Linux entry waiting for `core`, if any (then the core is `On`).
    /// Takes the PSCI lock only when a CPU_ON or a restart since the last
    /// look may have left one, and never waits for it: an idle core waiting
    /// for its RTOS's interrupt never queues behind Linux's PSCI calls.
    pub fn take_pending(&self, core: usize) -> Pending {
        let bit = 1u64 << core;
        // Cleared before the lock: a CPU_ON accepted after this sets the bit
        // again once its state is in, and the next look finds it.
        if self.maybe_pending.fetch_and(!bit, Ordering::AcqRel) & bit == 0 {
            return Pending::Nothing;
        }
        match self.psci_if_free(|p| p.take_pending(core)) {
            Some(Some((entry, context_id))) => Pending::Entry(entry, context_id),
            Some(None) => Pending::Nothing,
            None => {
                self.maybe_pending.fetch_or(bit, Ordering::AcqRel);
                Pending::Busy
            }
        }
    }

    /// Whether another core holds the PSCI lock now: an idle core that found
    /// it taken ([`Pending::Busy`]) waits for this to clear, and for nothing
    /// else, in a short loop that also watches for its RTOS's interrupts.
    pub fn psci_busy(&self) -> bool {
        self.psci.is_locked()
    }

    /// Whether Linux must stop on `core` (its instance is being stopped).
    #[inline(always)]
    pub fn stop_requested(&self, core: usize) -> bool {
        self.lifecycle.stop_requested(core)
    }

    /// Linux on `core` asked to stop (SYSTEM_OFF, `restart` false) or to
    /// restart (SYSTEM_RESET): decides what happens. Its instance is marked
    /// stopping in PSCI (its pending CPU_ONs dropped, new ones refused) and
    /// each of its cores asked to stop, in one step under the PSCI lock, so
    /// that no core can start this Linux after it stopped there.
    fn stop_linux(&self, core: usize, restart: bool) -> Outcome {
        let Some(instance) = self.lifecycle.instance_of(core) else {
            // Only Linux's cores call; a core without one has nothing to stop.
            return Outcome::value(ret::DENIED);
        };
        let cores = self
            .lifecycle
            .instances()
            .map_or(0, |i| i.get(instance).cores);
        self.psci_call(|p| {
            if !p.stop(instance) {
                // Under way already: this core stops with the others.
                return Outcome::StopLinux { restart, wake: 0 };
            }
            self.lifecycle.request_stop(instance, cores, restart);
            Outcome::StopLinux {
                restart,
                wake: cores & !(1 << core),
            }
        })
    }

    /// Linux is off on `core` now (it was asked to stop). Returns the boot
    /// core to wake (another core), which may be waiting for this.
    pub fn linux_stopped(&self, core: usize) -> Option<usize> {
        self.lifecycle.stopped(core)
    }

    /// Instance `index` starts again from `entry` on its boot core with x0 =
    /// `context_id` (its images are copied): every other core of it is off
    /// again, its CPU_ONs accepted again. Returns its new generation.
    pub fn restart_linux(&self, index: usize, entry: u64, context_id: u64) -> u32 {
        let boot_core = self
            .lifecycle
            .instances()
            .expect("a restart follows cold boot")
            .get(index)
            .boot_core;
        let generation = self.psci_locked(|p| {
            p.restart(boot_core, entry, context_id);
            self.lifecycle.restarted(index)
        });
        self.maybe_pending
            .fetch_or(1 << boot_core, Ordering::Release);
        generation
    }

    /// Turns PV time (stolen-time accounting) on or off. Boot core only,
    /// before Linux runs.
    pub fn set_steal_time(&self, on: bool) {
        self.steal_time.store(on, Ordering::Relaxed);
    }

    /// Whether PV time is offered.
    pub fn steal_time(&self) -> bool {
        self.steal_time.load(Ordering::Relaxed)
    }

    /// Sets the cores serving RPC channels. Boot core only, before Linux runs.
    pub fn set_rpc_cores(&self, mask: u8) {
        self.rpc_cores.store(mask, Ordering::Relaxed);
    }

    fn rpc_cores(&self) -> u8 {
        self.rpc_cores.load(Ordering::Relaxed)
    }
}

const fn function(id: u32, handle: fn(&Monitor, &Args<'_>) -> Outcome) -> Function<Monitor> {
    Function { id, handle }
}

/// The dispatch table (TF-A style: one service per owner range). Searched in
/// order: the RTOS's YIELD (trusted-OS), taken on every world switch, comes
/// first; PV time, called once per core at boot, last.
pub const SERVICES: Table<Monitor> = Table::new(&[
    Service {
        name: "trusted-os",
        owners: owner::TRUSTED_OS,
        callers: &[World::Secure],
        functions: &[
            function(tos::YIELD, |_, _| Outcome::YieldToNormal),
            function(tos::STOP, |_, _| Outcome::MachineOff),
        ],
    },
    Service {
        name: "arm-arch",
        owners: owner::ARCH..=owner::ARCH,
        callers: &[World::NonSecure, World::Secure],
        functions: &[
            function(SMCCC_VERSION, |_, _| {
                Outcome::value(SMCCC_VERSION_1_1.into())
            }),
            function(SMCCC_ARCH_FEATURES, arch_features),
        ],
    },
    Service {
        name: "psci",
        owners: owner::STANDARD..=owner::STANDARD,
        callers: &[World::NonSecure],
        functions: PSCI,
    },
    Service {
        name: "tandem-sip",
        owners: owner::SIP..=owner::SIP,
        callers: &[World::NonSecure],
        functions: TANDEM_SIP,
    },
    Service {
        name: "pv-time",
        owners: owner::STANDARD_HYP..=owner::STANDARD_HYP,
        callers: &[World::NonSecure],
        functions: &[
            function(pv_time::FEATURES, pv_time_features),
            function(pv_time::ST, pv_time_st),
        ],
    },
]);

/// Tandem's SiP calls, then SMCCC's general queries for the range (the
/// call count, Tandem's UID and the revision: `tandem_abi::smc::sip_query`).
const TANDEM_SIP: &[Function<Monitor>] = &[
    function(sip::VERSION, |_, _| Outcome::value(ABI_VERSION.into())),
    function(sip::SHM_INFO, |m, _| {
        Outcome::Return([0, m.board.shared.base, m.board.shared.size, 0])
    }),
    function(sip::RPC_NOTIFY, rpc_notify),
    function(sip::RPMSG_NOTIFY, rpmsg_notify),
    function(sip_query::CALL_COUNT, sip_call_count),
    function(sip_query::CALL_UID, |_, _| {
        Outcome::Return(uid_words(TANDEM_UID).map(u64::from))
    }),
    function(sip_query::REVISION, |_, _| {
        Outcome::Return([
            (ABI_VERSION >> 16).into(),
            (ABI_VERSION & 0xFFFF).into(),
            0,
            0,
        ])
    }),
];

/// Call Count: every function ID the SiP range answers, read from the
/// table itself, so a call added there is counted without more ado.
fn sip_call_count(_: &Monitor, _: &Args<'_>) -> Outcome {
    Outcome::value(TANDEM_SIP.len() as i64)
}

/// Whether a call is the RTOS's YIELD, decided from exactly what the table
/// decides it from: the calling world, the SMC's immediate and w0 (the
/// dispatcher ignores x0's upper half, as SMCCC says). The firmware tests
/// this before the general decode, since YIELD starts every switch to
/// Linux; `the_yield_fast_path_is_the_tables_yield` checks it against
/// [`handle`] for every world, immediate and nearby function ID.
#[inline(always)]
pub const fn is_rtos_yield(from: World, imm: u16, w0: u32) -> bool {
    matches!(from, World::Secure) && imm == 0 && w0 == tos::YIELD
}

/// Handles one call with the full table.
#[inline(always)]
pub fn handle(monitor: &Monitor, call: &SmcCall<'_>) -> Outcome {
    SERVICES.dispatch(monitor, call)
}

fn result(r: Result<i64, i64>) -> Outcome {
    Outcome::value(r.unwrap_or_else(|e| e))
}

fn arch_features(m: &Monitor, call: &Args<'_>) -> Outcome {
    match call.arg(1) as u32 {
        SMCCC_VERSION | SMCCC_ARCH_FEATURES => Outcome::value(ret::SUCCESS),
        // Linux asks this before PV_TIME_FEATURES (arch/arm64/kernel/paravirt.c).
        pv_time::FEATURES | pv_time::ST if m.steal_time() => Outcome::value(ret::SUCCESS),
        // No Spectre workarounds are offered: the supported cores
        // (Cortex-A53) are not affected.
        _ => Outcome::NOT_SUPPORTED,
    }
}

/// PSCI 1.1's functions.
const PSCI: &[Function<Monitor>] = &[
    function(PSCI_VERSION, |_, _| Outcome::value(PSCI_VERSION_1_1.into())),
    function(PSCI_FEATURES, psci_features),
    function(PSCI_CPU_SUSPEND_32, cpu_suspend),
    function(PSCI_CPU_SUSPEND_64, cpu_suspend),
    function(PSCI_CPU_ON_32, cpu_on),
    function(PSCI_CPU_ON_64, cpu_on),
    function(PSCI_CPU_OFF, |m, call| {
        m.psci_call(|p| match p.cpu_off(call.core) {
            Ok(()) => Outcome::CpuOff,
            Err(e) => Outcome::value(e),
        })
    }),
    function(PSCI_AFFINITY_INFO_32, affinity_info),
    function(PSCI_AFFINITY_INFO_64, affinity_info),
    function(PSCI_MIGRATE_INFO_TYPE, |_, _| {
        Outcome::value(PSCI_MIGRATE_INFO_TYPE_NOT_PRESENT.into())
    }),
    function(PSCI_SYSTEM_OFF, system_off),
    function(PSCI_SYSTEM_RESET, |m, call| m.stop_linux(call.core, true)),
    function(PSCI_SYSTEM_RESET2_32, system_reset2),
    function(PSCI_SYSTEM_RESET2_64, system_reset2),
];

/// SYSTEM_OFF: Linux alone stops (its power-off) and the RTOS runs on,
/// unless the boot configuration (or its partition) says its power-off
/// ends the machine.
fn system_off(m: &Monitor, call: &Args<'_>) -> Outcome {
    let ends_machine = m
        .lifecycle
        .instance_of(call.core)
        .zip(m.lifecycle.instances())
        .is_some_and(|(i, all)| all.get(i).off_stops_machine);
    if ends_machine {
        Outcome::MachineOff
    } else {
        m.stop_linux(call.core, false)
    }
}

/// SYSTEM_RESET2: the one architectural reset type, a warm reset, which
/// the monitor carries out as SYSTEM_RESET; no vendor types.
fn system_reset2(m: &Monitor, call: &Args<'_>) -> Outcome {
    const SYSTEM_WARM_RESET: u32 = 0;
    if call.arg(1) as u32 == SYSTEM_WARM_RESET {
        m.stop_linux(call.core, true)
    } else {
        Outcome::value(ret::INVALID_PARAMETERS)
    }
}

/// PSCI_FEATURES: PSCI's own functions as the table lists them, and
/// SMCCC_VERSION, which PSCI 1.1 says it reports too.
fn psci_features(_: &Monitor, call: &Args<'_>) -> Outcome {
    let queried = call.arg(1) as u32;
    if queried == SMCCC_VERSION || PSCI.iter().any(|f| f.id == queried) {
        Outcome::value(ret::SUCCESS)
    } else {
        Outcome::NOT_SUPPORTED
    }
}

/// CPU_SUSPEND (mandatory since PSCI 0.2), original power_state format
/// (PSCI_FEATURES says so: flags 0): StateID in bits 15:0, StateType in
/// bit 16 (0 standby, 1 power down), PowerLevel in bits 25:24, the rest
/// zero. The platform has one state, the core's standby (StateID 0, level
/// 0): it returns once an interrupt is pending, the RTOS running meanwhile
/// if it shares the core. Power-down states, which would lose the core's
/// context, are not offered (a device tree names the states a platform
/// has; Tandem's lists none, so Linux's cpuidle keeps to WFI).
fn cpu_suspend(_: &Monitor, call: &Args<'_>) -> Outcome {
    const STANDBY_CORE: u32 = 0;
    // Only the 32-bit power_state counts; junk above it is ignored like
    // every other 32-bit argument.
    if call.arg(1) as u32 == STANDBY_CORE {
        Outcome::Standby
    } else {
        Outcome::INVALID_PARAMETERS
    }
}

fn cpu_on(m: &Monitor, call: &Args<'_>) -> Outcome {
    // A CPU_ON that changes nothing (a core on already: the common answer
    // in a storm of them) is answered without the lock.
    if let Some(e) = m
        .psci_view
        .cpu_on_unchanged(&m.board, call.core, call.arg(1), call.arg(2))
    {
        return Outcome::value(e);
    }
    m.psci_call(
        |p| match p.cpu_on(call.core, call.arg(1), call.arg(2), call.arg(3)) {
            // Accepted: the target is a present core.
            Ok(()) => match m.board.core_index(call.arg(1)) {
                Some(target) => {
                    m.maybe_pending.fetch_or(1 << target, Ordering::Release);
                    Outcome::ReturnAndSignal([0; 4], Signal::wake(target))
                }
                None => Outcome::value(ret::INTERNAL_FAILURE),
            },
            Err(e) => Outcome::value(e),
        },
    )
}

/// AFFINITY_INFO, from the published view: Linux polls it (a core going
/// off), and a storm of it from other cores must not hold anyone at EL3.
fn affinity_info(m: &Monitor, call: &Args<'_>) -> Outcome {
    result(
        m.psci_view
            .affinity_info(&m.board, call.core, call.arg(1), call.arg(2)),
    )
}

/// Arm PV time (DEN0057A). Off unless the boot configuration asks for it:
/// then every call answers NOT_SUPPORTED, which is how Linux learns there is
/// no stolen time to account.
fn pv_time_features(m: &Monitor, call: &Args<'_>) -> Outcome {
    match call.arg(1) as u32 {
        pv_time::FEATURES | pv_time::ST if m.steal_time() => Outcome::value(ret::SUCCESS),
        _ => Outcome::NOT_SUPPORTED,
    }
}

/// The calling core's stolen-time record; a core Linux does not run on has
/// none (not reachable from Linux today, but the answer must not point at a
/// record nobody keeps).
fn pv_time_st(m: &Monitor, call: &Args<'_>) -> Outcome {
    if !m.steal_time() {
        return Outcome::NOT_SUPPORTED;
    }
    let on = call.core < m.board.max_cores && m.psci_view.is_on(call.core);
    if !on {
        return Outcome::INVALID_PARAMETERS;
    }
    Outcome::Return([
        m.board.shared.base + tandem_abi::shm::steal_offset(call.core) as u64,
        0,
        0,
        0,
    ])
}

/// RPC_NOTIFY: the channel number is the whole of x1; junk above it is an
/// error, not a channel.
fn rpc_notify(m: &Monitor, call: &Args<'_>) -> Outcome {
    let servers = m.rpc_cores();
    if servers == 0 {
        return Outcome::NOT_SUPPORTED;
    }
    match usize::try_from(call.arg(1))
        .ok()
        .and_then(|ch| tandem_abi::rpc::server_core(servers, ch))
    {
        Some(core) => Outcome::ReturnAndSignal([0; 4], Signal::rpc(core)),
        None => Outcome::INVALID_PARAMETERS,
    }
}

/// RPMSG_NOTIFY: the RPC doorbell on the RPMsg core (`rpmsg::core`), which
/// looks at its rings and control words; x1 (what changed) must be a vring
/// or the control words, the whole of x1 as for RPC_NOTIFY.
fn rpmsg_notify(m: &Monitor, call: &Args<'_>) -> Outcome {
    let Some(core) = tandem_abi::rpmsg::core(m.rpc_cores()) else {
        return Outcome::NOT_SUPPORTED;
    };
    if call.arg(1) > u64::from(tandem_abi::rpmsg::NOTIFY_CONTROL) {
        return Outcome::INVALID_PARAMETERS;
    }
    Outcome::ReturnAndSignal([0; 4], Signal::rpc(core))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smc::FunctionId;
    use tandem_abi::boot::{Policies, Policy};
    use tandem_abi::image::Span;
    use tandem_board::BOARD;

    /// `fid` with x1.. = `args` from `from` on `core`, imm16 0.
    fn call_from(m: &Monitor, from: World, core: usize, fid: u32, args: &[u64]) -> Outcome {
        let mut regs = [0; 8];
        regs[0] = fid.into();
        regs[1..=args.len()].copy_from_slice(args);
        handle(m, &SmcCall::new(&regs, 0, from, core))
    }

    /// Linux's RAM in these tests: all of the board's normal RAM.
    fn normal_ram() -> Span {
        Span {
            base: BOARD.normal_ram.base,
            size: BOARD.normal_ram.size,
        }
    }

    /// A monitor after cold boot: one Linux on cores 0-3 (its SYSTEM_OFF
    /// stopping it alone unless `off_stops_machine`), started on core 0.
    fn booted_with(off_stops_machine: bool) -> Monitor {
        let m = Monitor::new(BOARD);
        let policies = Policies::uniform(4, Policy::Shared);
        m.configure_linux(
            Instances::new(&policies, None, normal_ram(), off_stops_machine),
            4,
        );
        m.check_in(
            0,
            CheckIn::BootCore {
                entry: 0x4020_0000,
                context_id: 0,
            },
        );
        assert_eq!(m.take_pending(0), Pending::Entry(0x4020_0000, 0));
        for c in 1..4 {
            m.check_in(c, CheckIn::Secondary);
        }
        m
    }

    fn booted() -> Monitor {
        booted_with(false)
    }

    #[test]
    fn an_idle_core_looks_past_the_psci_lock_until_a_cpu_on() {
        let m = std::sync::Arc::new(booted());
        // Every core's first look may find the boot entry; then none.
        assert_eq!(m.take_pending(2), Pending::Nothing);
        // Linux's cores hold the lock (a storm of PSCI calls): an idle
        // core's look must not wait for it.
        let held = m.psci.lock();
        let (tx, rx) = std::sync::mpsc::channel();
        let looker = std::sync::Arc::clone(&m);
        std::thread::spawn(move || tx.send(looker.take_pending(2)).unwrap());
        let looked = rx.recv_timeout(std::time::Duration::from_secs(2));
        drop(held);
        assert_eq!(
            looked,
            Ok(Pending::Nothing),
            "the look waited for the PSCI lock"
        );
        // After a CPU_ON the look takes the lock and finds the entry, once.
        assert!(matches!(
            smc(&m, PSCI_CPU_ON_64, &[2, 0x4030_0000, 9]),
            Outcome::ReturnAndSignal(..)
        ));
        assert_eq!(m.take_pending(2), Pending::Entry(0x4030_0000, 9));
        assert_eq!(m.take_pending(2), Pending::Nothing);
        // A restart leaves the boot core's entry to its look.
        m.restart_linux(0, 0x4020_0000, 0x4800_0000);
        assert_eq!(m.take_pending(0), Pending::Entry(0x4020_0000, 0x4800_0000));
    }

    #[test]
    fn no_linux_call_waits_for_the_psci_lock_at_el3() {
        let m = std::sync::Arc::new(booted());
        assert!(matches!(
            smc(&m, PSCI_CPU_ON_64, &[2, 0x4030_0000, 9]),
            Outcome::ReturnAndSignal(..)
        ));
        // Another core holds the lock, as a storm of calls keeps it. The
        // calls are made on another thread (another core): one that waited
        // for the lock would never answer, and the test says so.
        let held = m.psci.lock();
        let caller = std::sync::Arc::clone(&m);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let m = &*caller;
            let mut answers = std::vec::Vec::new();
            // Changes are issued again later: the caller's core returns to
            // its world (where the RTOS's interrupts are taken) instead of
            // spinning at EL3.
            for (core, fid, args) in [
                (0, PSCI_CPU_ON_64, &[1u64, 0x4030_0000, 0][..]),
                (0, PSCI_CPU_OFF, &[][..]),
                (1, PSCI_SYSTEM_RESET, &[][..]),
                (1, PSCI_SYSTEM_OFF, &[][..]),
                (1, PSCI_SYSTEM_RESET2_64, &[0, 0][..]),
                // Queries are answered from the published view.
                (0, PSCI_AFFINITY_INFO_64, &[2, 0][..]),
                (0, PSCI_AFFINITY_INFO_64, &[0, 0][..]),
                (0, PSCI_AFFINITY_INFO_64, &[1, 0][..]),
                // A CPU_ON of a core on (pending) already changes nothing.
                (0, PSCI_CPU_ON_64, &[2, 0x4030_0000, 0][..]),
            ] {
                answers.push((fid, call_from(m, World::NonSecure, core, fid, args)));
            }
            m.set_steal_time(true);
            answers.push((pv_time::ST, smc_on(m, 0, pv_time::ST, 0)));
            tx.send(answers).unwrap();
        });
        let answers = rx.recv_timeout(std::time::Duration::from_secs(5));
        let Ok(answers) = answers else {
            drop(held);
            panic!("a Linux call waited at EL3 for the PSCI lock another core holds");
        };
        for (fid, answer) in &answers[..5] {
            assert_eq!(*answer, Outcome::Retry, "{fid:#x}");
        }
        let values: std::vec::Vec<_> = answers[5..9].iter().map(|(_, a)| *a).collect();
        assert_eq!(
            values,
            [2, 0, 1, ret::ON_PENDING].map(Outcome::value),
            "AFFINITY_INFO of cores 2, 0, 1; CPU_ON of 2"
        );
        assert!(matches!(answers[9].1, Outcome::Return([a, 0, 0, 0]) if a != 0));
        // An idle core's look says it must come back, and keeps the hint.
        assert_eq!(m.take_pending(2), Pending::Busy);
        drop(held);
        assert_eq!(m.take_pending(2), Pending::Entry(0x4030_0000, 9));
    }

    #[test]
    fn the_table_is_consistent() {
        let services = SERVICES.services();
        for (i, s) in services.iter().enumerate() {
            for (j, f) in s.functions.iter().enumerate() {
                let fid = FunctionId(f.id);
                assert!(
                    fid.is_fast() && fid.reserved_bits() == 0,
                    "{}: {:#x}",
                    s.name,
                    f.id
                );
                assert!(s.owners.contains(&fid.owner()), "{}: {:#x}", s.name, f.id);
                let twice = services[i..]
                    .iter()
                    .flat_map(|t| t.functions)
                    .skip(j + 1)
                    .any(|g| g.id == f.id);
                assert!(!twice, "{:#x} listed twice", f.id);
            }
            for t in &services[i + 1..] {
                let overlap =
                    t.owners.start() <= s.owners.end() && s.owners.start() <= t.owners.end();
                assert!(!overlap, "{} and {} share owners", s.name, t.name);
            }
        }
        // What Linux can call: PSCI, SMCCC, Tandem's SiP calls and PV time.
        assert_eq!(SERVICES.implemented(World::NonSecure).count(), 25);
        assert!(
            SERVICES
                .implemented(World::NonSecure)
                .all(|id| id != tos::YIELD)
        );
    }

    #[test]
    fn the_rtos_may_stop_the_machine_and_linux_may_not() {
        let m = booted();
        let stop = |from| call_from(&m, from, 0, tos::STOP, &[]);
        assert_eq!(stop(World::Secure), Outcome::MachineOff);
        assert_eq!(stop(World::NonSecure), Outcome::NOT_SUPPORTED);
    }

    #[test]
    fn only_the_rtos_may_yield_and_linux_may_not_pretend() {
        let m = booted();
        let secure = |fid| call_from(&m, World::Secure, 1, fid, &[]);
        assert_eq!(secure(tos::YIELD), Outcome::YieldToNormal);
        assert_eq!(
            call_from(&m, World::NonSecure, 1, tos::YIELD, &[]),
            Outcome::NOT_SUPPORTED
        );
        assert_eq!(secure(tos::YIELD + 2), Outcome::NOT_SUPPORTED);
        assert_eq!(
            secure(PSCI_CPU_OFF),
            Outcome::NOT_SUPPORTED,
            "PSCI is Linux's"
        );
    }

    #[test]
    fn the_yield_fast_path_is_the_tables_yield() {
        let m = booted();
        // Every function ID one bit away from YIELD (the SMCCC fields it
        // encodes: fast, SMC64, owner, reserved, number), YIELD with x0's
        // upper half set, and every other function the table lists.
        let near = (0..32).map(|bit| u64::from(tos::YIELD ^ 1 << bit));
        let wide = [
            u64::from(tos::YIELD),
            0xFFFF_FFFF_0000_0000 | u64::from(tos::YIELD),
        ];
        let listed = SERVICES
            .services()
            .iter()
            .flat_map(|s| s.functions)
            .map(|f| u64::from(f.id));
        let mut yields = 0;
        for x0 in near.chain(wide).chain(listed) {
            for from in [World::Secure, World::NonSecure] {
                for imm in [0, 1, 0x8000, 0xFFFF] {
                    let mut regs = [0; 8];
                    regs[0] = x0;
                    let table = handle(&m, &SmcCall::new(&regs, imm, from, 1));
                    let fast = is_rtos_yield(from, imm, x0 as u32);
                    assert_eq!(
                        fast,
                        table == Outcome::YieldToNormal,
                        "x0 {x0:#x} from {from:?}, imm {imm:#x}"
                    );
                    yields += usize::from(fast);
                }
            }
        }
        // From the secure world with immediate 0 only: YIELD (twice, once
        // from the table's list) and YIELD with x0's upper half set.
        assert_eq!(yields, 3);
    }

    fn smc(m: &Monitor, fid: u32, args: &[u64]) -> Outcome {
        call_from(m, World::NonSecure, 0, fid, args)
    }

    #[test]
    fn versions() {
        let m = booted();
        assert_eq!(smc(&m, PSCI_VERSION, &[]), Outcome::value(0x1_0001));
        assert_eq!(smc(&m, SMCCC_VERSION, &[]), Outcome::value(0x1_0001));
        assert_eq!(
            smc(&m, sip::VERSION, &[]),
            Outcome::value(ABI_VERSION.into())
        );
        assert_eq!(smc(&m, PSCI_MIGRATE_INFO_TYPE, &[]), Outcome::value(2));
    }

    #[test]
    fn features_discovery_as_linux_does_it() {
        let m = booted();
        // Linux asks PSCI_FEATURES(SMCCC_VERSION) before using SMCCC 1.1.
        assert_eq!(
            smc(&m, PSCI_FEATURES, &[SMCCC_VERSION.into()]),
            Outcome::value(0)
        );
        // PSCI 1.1's SYSTEM_SUSPEND (SMC64), not offered.
        const SYSTEM_SUSPEND_64: u32 = 0xC400_000E;
        // CPU_SUSPEND: original power_state format, no OS-initiated mode.
        assert_eq!(
            smc(&m, PSCI_FEATURES, &[PSCI_CPU_SUSPEND_64.into()]),
            Outcome::value(0)
        );
        assert_eq!(
            smc(&m, PSCI_FEATURES, &[SYSTEM_SUSPEND_64.into()]),
            Outcome::NOT_SUPPORTED
        );
        // The queried ID is a 32-bit argument: junk above bit 31 is ignored.
        assert_eq!(
            smc(&m, PSCI_FEATURES, &[(1 << 40) | u64::from(PSCI_CPU_OFF)]),
            Outcome::value(0)
        );
        assert_eq!(
            smc(&m, SMCCC_ARCH_FEATURES, &[SMCCC_ARCH_WORKAROUND_1.into()]),
            Outcome::NOT_SUPPORTED
        );
    }

    #[test]
    fn cpu_suspend_offers_the_core_standby_state_only() {
        let m = booted();
        for fid in [PSCI_CPU_SUSPEND_32, PSCI_CPU_SUSPEND_64] {
            assert_eq!(smc(&m, fid, &[0, 0x4020_0000, 7]), Outcome::Standby);
            // Junk above the 32-bit power_state is ignored.
            assert_eq!(smc(&m, fid, &[1 << 40]), Outcome::Standby);
            for power_state in [1 << 16, 1 << 24, 1, 0xFFFF, 1 << 30, u64::from(u32::MAX)] {
                assert_eq!(
                    smc(&m, fid, &[power_state]),
                    Outcome::INVALID_PARAMETERS,
                    "{power_state:#x}"
                );
            }
        }
        // The RTOS has no PSCI.
        assert_eq!(
            call_from(&m, World::Secure, 0, PSCI_CPU_SUSPEND_64, &[0]),
            Outcome::NOT_SUPPORTED
        );
    }

    #[test]
    fn cpu_on_wakes_and_off_parks() {
        let m = booted();
        assert_eq!(
            smc(&m, PSCI_CPU_ON_64, &[1, 0x4020_0000, 9]),
            Outcome::ReturnAndSignal([0; 4], Signal::wake(1))
        );
        assert_eq!(
            smc(&m, PSCI_CPU_ON_64, &[1, 0x4020_0000, 9]),
            Outcome::value(ret::ON_PENDING)
        );
        assert_eq!(m.take_pending(1), Pending::Entry(0x4020_0000, 9));
        let off = call_from(&m, World::NonSecure, 1, PSCI_CPU_OFF, &[]);
        assert_eq!(off, Outcome::CpuOff);
        assert_eq!(smc(&m, PSCI_AFFINITY_INFO_64, &[1, 0]), Outcome::value(1));
    }

    #[test]
    fn linux_power_off_stops_linux_alone_unless_it_ends_the_machine() {
        let m = booted();
        assert_eq!(
            smc(&m, PSCI_SYSTEM_OFF, &[]),
            Outcome::StopLinux {
                restart: false,
                wake: 0b1110
            }
        );
        let m = booted_with(true);
        assert_eq!(smc(&m, PSCI_SYSTEM_OFF, &[]), Outcome::MachineOff);
        assert!(!m.stop_requested(0), "the machine ends: nothing to stop");
    }

    #[test]
    fn system_calls() {
        for (fid, args) in [
            (PSCI_SYSTEM_RESET, &[][..]),
            (PSCI_SYSTEM_RESET2_64, &[0, 0][..]),
            (PSCI_SYSTEM_RESET2_32, &[0, 7][..]),
        ] {
            let m = booted();
            // From core 2: the stop starts there, the others are woken.
            assert_eq!(
                call_from(&m, World::NonSecure, 2, fid, args),
                Outcome::StopLinux {
                    restart: true,
                    wake: 0b1011
                },
                "{fid:#x}"
            );
            assert!((0..4).all(|c| m.stop_requested(c)));
            // A second reset while it stops changes nothing (wakes nobody).
            assert_eq!(
                smc(&m, PSCI_SYSTEM_RESET, &[]),
                Outcome::StopLinux {
                    restart: true,
                    wake: 0
                }
            );
        }
        let m = booted();
        for bad in [1, 0x8000_0000, 0x8000_0001] {
            assert_eq!(
                smc(&m, PSCI_SYSTEM_RESET2_64, &[bad, 0]),
                Outcome::value(ret::INVALID_PARAMETERS),
                "reset type {bad:#x}"
            );
        }
        assert_eq!(
            smc(&m, sip::SHM_INFO, &[]),
            Outcome::Return([0, BOARD.shared.base, BOARD.shared.size, 0])
        );
    }

    fn smc_on(m: &Monitor, core: usize, fid: u32, arg: u64) -> Outcome {
        call_from(m, World::NonSecure, core, fid, &[arg])
    }

    #[test]
    fn pv_time_is_discovered_as_linux_does_it_when_on() {
        use tandem_abi::shm::steal_offset;
        let m = booted();
        m.set_steal_time(true);
        // arch/arm64/kernel/paravirt.c: ARCH_FEATURES(PV_TIME_FEATURES), then
        // PV_TIME_FEATURES(PV_TIME_ST), then PV_TIME_ST on each core.
        let ok = Outcome::value(ret::SUCCESS);
        assert_eq!(
            smc_on(&m, 0, SMCCC_ARCH_FEATURES, pv_time::FEATURES.into()),
            ok
        );
        assert_eq!(smc_on(&m, 0, pv_time::FEATURES, pv_time::ST.into()), ok);
        assert_eq!(
            smc_on(&m, 0, pv_time::FEATURES, pv_time::FEATURES.into()),
            ok
        );
        assert_eq!(
            smc_on(&m, 0, pv_time::FEATURES, 0xC500_0022),
            Outcome::NOT_SUPPORTED
        );
        let record = |core: usize| BOARD.shared.base + steal_offset(core) as u64;
        assert_eq!(
            smc_on(&m, 0, pv_time::ST, 0),
            Outcome::Return([record(0), 0, 0, 0])
        );
        assert_eq!(
            smc(&m, PSCI_CPU_ON_64, &[2, 0x4020_0000, 0]),
            Outcome::ReturnAndSignal([0; 4], Signal::wake(2))
        );
        assert_eq!(m.take_pending(2), Pending::Entry(0x4020_0000, 0));
        assert_eq!(
            smc_on(&m, 2, pv_time::ST, 0),
            Outcome::Return([record(2), 0, 0, 0])
        );
        // A core Linux does not run on (off, or beyond the board) has no record.
        assert_eq!(smc_on(&m, 1, pv_time::ST, 0), Outcome::INVALID_PARAMETERS);
        assert_eq!(smc_on(&m, 9, pv_time::ST, 0), Outcome::INVALID_PARAMETERS);
        // SMC32 forms and unknown numbers in the owner: not supported.
        assert_eq!(smc_on(&m, 0, 0x8500_0021, 0), Outcome::NOT_SUPPORTED);
        assert_eq!(smc_on(&m, 0, 0xC500_0000, 0), Outcome::NOT_SUPPORTED);
        // Only Linux may ask.
        let st = |from| call_from(&m, from, 0, pv_time::ST, &[]);
        assert_eq!(st(World::Secure), Outcome::NOT_SUPPORTED);
        assert_eq!(st(World::NonSecure), Outcome::Return([record(0), 0, 0, 0]));
    }

    #[test]
    fn the_sip_range_answers_smcccs_general_queries() {
        let m = booted();
        // Call UID: Tandem's, in w0..w3 as SMCCC packs a UUID.
        let uid = uid_words(TANDEM_UID).map(u64::from);
        assert_eq!(smc(&m, sip_query::CALL_UID, &[]), Outcome::Return(uid));
        assert_eq!(
            uid[0], 0xebd0_47b6,
            "b647d0eb-...: bytes 0..3 little-endian"
        );
        // Revision: the ABI version, major in w0 and minor in w1.
        assert_eq!(
            smc(&m, sip_query::REVISION, &[]),
            Outcome::Return([
                u64::from(ABI_VERSION >> 16),
                u64::from(ABI_VERSION & 0xFFFF),
                0,
                0
            ])
        );
        // Call Count: what the range answers, counted independently of
        // the handler: every ID with the SiP owner that is implemented.
        let sip_ids = SERVICES
            .implemented(World::NonSecure)
            .filter(|&id| FunctionId(id).owner() == owner::SIP)
            .count();
        assert_eq!(sip_ids, 7);
        assert_eq!(
            smc(&m, sip_query::CALL_COUNT, &[]),
            Outcome::value(sip_ids as i64)
        );
        // 0xFF02 is reserved, and the queries are SMC32 only: their SMC64
        // forms (the IDs 0xC200_FF0x) are not defined.
        for id in [
            0x8200_FF02,
            0x8200_FF04,
            0xC200_FF00,
            0xC200_FF01,
            0xC200_FF03,
        ] {
            assert_eq!(smc(&m, id, &[]), Outcome::NOT_SUPPORTED, "{id:#x}");
        }
        // Linux's; the RTOS has its own range.
        assert_eq!(
            call_from(&m, World::Secure, 0, sip_query::CALL_UID, &[]),
            Outcome::NOT_SUPPORTED
        );
        // Arguments change nothing (SMC32: junk in x1.. is ignored).
        assert_eq!(
            smc(&m, sip_query::CALL_UID, &[u64::MAX, 7, 9]),
            Outcome::Return(uid)
        );
    }

    #[test]
    fn rpc_notify_rings_the_channels_server() {
        let m = booted();
        assert_eq!(
            smc(&m, sip::RPC_NOTIFY, &[0]),
            Outcome::NOT_SUPPORTED,
            "no server configured"
        );
        m.set_rpc_cores(0b1010);
        assert_eq!(
            smc(&m, sip::RPC_NOTIFY, &[0]),
            Outcome::ReturnAndSignal([0; 4], Signal::rpc(1))
        );
        assert_eq!(
            smc(&m, sip::RPC_NOTIFY, &[3]),
            Outcome::ReturnAndSignal([0; 4], Signal::rpc(3))
        );
        for bad in [4, u64::MAX, 1 << 32] {
            assert_eq!(
                smc(&m, sip::RPC_NOTIFY, &[bad]),
                Outcome::INVALID_PARAMETERS,
                "{bad:#x}"
            );
        }
        // SMC32 form: not ours.
        assert_eq!(
            smc(&m, sip::RPC_NOTIFY & !(1 << 30), &[0]),
            Outcome::NOT_SUPPORTED
        );
        // The RTOS may not ring itself through Linux's service.
        assert_eq!(
            call_from(&m, World::Secure, 1, sip::RPC_NOTIFY, &[0]),
            Outcome::NOT_SUPPORTED
        );
    }

    #[test]
    fn rpmsg_notify_rings_the_lowest_rpc_core() {
        let m = booted();
        assert_eq!(
            smc(&m, sip::RPMSG_NOTIFY, &[0]),
            Outcome::NOT_SUPPORTED,
            "no RPC server, so no RPMsg"
        );
        m.set_rpc_cores(0b1010);
        for what in [0, 1, 2] {
            assert_eq!(
                smc(&m, sip::RPMSG_NOTIFY, &[what]),
                Outcome::ReturnAndSignal([0; 4], Signal::rpc(1)),
                "{what}"
            );
        }
        for bad in [3, u64::MAX, 1 << 32] {
            assert_eq!(
                smc(&m, sip::RPMSG_NOTIFY, &[bad]),
                Outcome::INVALID_PARAMETERS,
                "{bad:#x}"
            );
        }
        assert_eq!(
            call_from(&m, World::Secure, 1, sip::RPMSG_NOTIFY, &[0]),
            Outcome::NOT_SUPPORTED,
            "Linux's service only"
        );
    }

    #[test]
    fn pv_time_is_absent_when_off() {
        let m = booted();
        for (fid, arg) in [
            (SMCCC_ARCH_FEATURES, pv_time::FEATURES),
            (pv_time::FEATURES, pv_time::ST),
            (pv_time::ST, 0),
        ] {
            assert_eq!(
                smc(&m, fid, &[arg.into()]),
                Outcome::NOT_SUPPORTED,
                "{fid:#x}"
            );
        }
    }

    /// xorshift64*: a tiny deterministic generator for the fuzz loop.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[test]
    fn random_calls_never_panic_and_unknown_ids_are_not_supported() {
        let known = |fid: u32| SERVICES.implemented(World::NonSecure).any(|id| id == fid);
        let mut seed = 0x1234_5678_9ABC_DEF0u64;
        let m = booted();
        m.set_steal_time(true);
        m.set_rpc_cores(0b0010);
        for i in 0..200_000 {
            // Half fully random IDs, half in the owner ranges we serve.
            let fid = if i % 2 == 0 {
                next(&mut seed) as u32
            } else {
                let owner = [0u32, 2, 4, 5][(next(&mut seed) % 4) as usize];
                // Low function numbers, or SMCCC's general queries
                // (0xFF00..=0xFF0F), in either calling convention.
                let number = if next(&mut seed).is_multiple_of(4) {
                    0xFF00 | (next(&mut seed) as u32 & 0xF)
                } else {
                    next(&mut seed) as u32 & 0xFF
                };
                0x8000_0000 | (owner << 24) | (next(&mut seed) as u32 & 0x4000_0000) | number
            };
            let args: [u64; 7] = core::array::from_fn(|_| next(&mut seed));
            let imm = if next(&mut seed).is_multiple_of(16) {
                next(&mut seed) as u16
            } else {
                0
            };
            let mut regs = [u64::from(fid); 8];
            regs[1..].copy_from_slice(&args);
            let out = handle(&m, &SmcCall::new(&regs, imm, World::NonSecure, 0));
            if !known(fid) || imm != 0 {
                assert_eq!(out, Outcome::NOT_SUPPORTED, "fid {fid:#x} imm {imm}");
            }
        }
    }
}
