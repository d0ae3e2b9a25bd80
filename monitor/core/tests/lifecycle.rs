//! Linux's stop and restart protocol (`lifecycle`, `psci`, `services`) under
//! real concurrency and against a reference model: the power-changing calls
//! with valid targets (CPU_ON of a core Linux has off, CPU_OFF,
//! SYSTEM_RESET, SYSTEM_OFF) from every core at once, as a hostile Linux
//! makes them, with each core's look loop carried out as the firmware does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread;
use tandem_abi::boot::{Policies, Policy};
use tandem_abi::image::Span;
use tandem_abi::smc::{
    PSCI_AFFINITY_INFO_64, PSCI_CPU_OFF, PSCI_CPU_ON_64, PSCI_SYSTEM_OFF, PSCI_SYSTEM_RESET, ret,
};
use tandem_board::BOARD;
use tandem_monitor_core::lifecycle::Instances;
use tandem_monitor_core::psci::CheckIn;
use tandem_monitor_core::services::{Monitor, Pending, handle};
use tandem_monitor_core::smc::{Outcome, SmcCall, World};

const CORES: usize = 4;
/// Where every Linux starts its cores (a valid entry in Linux's RAM).
const ENTRY: u64 = 0x4020_0000;
/// The boot core's entry after a restart carries this context ID; a
/// CPU_ON's carries the generation of the Linux that made it.
const BOOT: u64 = 0;

/// xorshift64*: a tiny deterministic generator per thread.
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn normal_ram() -> Span {
    Span {
        base: BOARD.normal_ram.base,
        size: BOARD.normal_ram.size,
    }
}

/// A monitor after cold boot with one Linux on cores 0-3, its boot core's
/// entry not yet taken.
fn booted() -> Monitor {
    let m = Monitor::new(BOARD);
    let policies = Policies::uniform(CORES, Policy::Shared);
    m.configure_linux(Instances::new(&policies, None, normal_ram(), false), CORES);
    m.check_in(
        0,
        CheckIn::BootCore {
            entry: ENTRY,
            context_id: BOOT,
        },
    );
    for c in 1..CORES {
        m.check_in(c, CheckIn::Secondary);
    }
    m
}

fn call(m: &Monitor, core: usize, fid: u32, args: &[u64]) -> Outcome {
    let mut regs = [0; 8];
    regs[0] = fid.into();
    regs[1..=args.len()].copy_from_slice(args);
    handle(m, &SmcCall::new(&regs, 0, World::NonSecure, core))
}

/// The machine the cores share: which Linux runs on each core (its
/// generation; 0: none), each core's doorbell, and what went wrong.
struct Machine {
    monitor: Monitor,
    running: [AtomicU32; CORES],
    doorbell: [AtomicBool; CORES],
    restarts: AtomicU64,
    starts: AtomicU64,
    /// Stop the random calls: the last phase checks every core comes up.
    quiet: AtomicBool,
}

impl Machine {
    fn new() -> Self {
        Self {
            monitor: booted(),
            running: [const { AtomicU32::new(0) }; CORES],
            doorbell: [const { AtomicBool::new(false) }; CORES],
            restarts: AtomicU64::new(0),
            starts: AtomicU64::new(0),
            quiet: AtomicBool::new(false),
        }
    }

    fn ring(&self, core: usize) {
        self.doorbell[core].store(true, Ordering::Release);
    }

    /// The firmware's `stop_here`: Linux is off on `core`.
    fn stop_here(&self, core: usize) {
        self.running[core].store(0, Ordering::Release);
        if let Some(boot) = self.monitor.linux_stopped(core) {
            self.ring(boot);
        }
    }

    /// One pass of `core`'s look loop (the core runs no Linux).
    fn look(&self, core: usize) {
        let m = &self.monitor;
        self.doorbell[core].swap(false, Ordering::AcqRel);
        if m.stop_requested(core) {
            self.stop_here(core);
        }
        if let Some(instance) = m.lifecycle.restart_due(core) {
            // The firmware copies the images now: no core may run this
            // Linux, old or new (the copy's SAFETY).
            for (c, running) in self.running.iter().enumerate() {
                let g = running.load(Ordering::Acquire);
                assert_eq!(
                    g,
                    0,
                    "core {c} runs Linux {g} while generation {}'s images are copied; stop flags {:?}",
                    m.lifecycle.generation(0),
                    (0..CORES).map(|c| m.stop_requested(c)).collect::<Vec<_>>()
                );
            }
            m.restart_linux(instance, ENTRY, BOOT);
            self.restarts.fetch_add(1, Ordering::Relaxed);
        }
        if let Pending::Entry(entry, context) = m.take_pending(core) {
            assert_eq!(entry, ENTRY);
            let generation = m.lifecycle.generation(0);
            // A CPU_ON starts only for the Linux that made it: one made by
            // a Linux the monitor has since stopped is gone with it.
            assert!(
                context == BOOT && core == 0 || context == u64::from(generation),
                "core {core} starts an entry of generation {context} in generation {generation}"
            );
            self.running[core].store(generation, Ordering::Release);
            self.starts.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One random step of the Linux running on `core`, as hostile as its
    /// calls can be (valid targets, so they change state).
    fn linux_step(&self, core: usize, generation: u32, seed: &mut u64) {
        let m = &self.monitor;
        // An interrupt first: the monitor's doorbell stops it if asked.
        if self.doorbell[core].swap(false, Ordering::AcqRel) && m.stop_requested(core) {
            self.stop_here(core);
            return;
        }
        let r = next(seed);
        let target = (r >> 8) as usize % CORES;
        let outcome = match r % 64 {
            // SYSTEM_OFF would end the race (that Linux stays off): the
            // model test below covers it.
            0 if !self.quiet.load(Ordering::Relaxed) => call(m, core, PSCI_SYSTEM_RESET, &[]),
            2..=9 if !self.quiet.load(Ordering::Relaxed) => call(m, core, PSCI_CPU_OFF, &[]),
            10..=40 => call(
                m,
                core,
                PSCI_CPU_ON_64,
                &[target as u64, ENTRY, generation.into()],
            ),
            _ => call(m, core, PSCI_AFFINITY_INFO_64, &[target as u64, 0]),
        };
        match outcome {
            Outcome::ReturnAndSignal(r, signal) => {
                assert_eq!(r[0], 0);
                self.ring(signal.core());
            }
            Outcome::CpuOff => self.running[core].store(0, Ordering::Release),
            Outcome::StopLinux { wake, .. } => {
                for c in (0..CORES).filter(|&c| wake >> c & 1 != 0) {
                    self.ring(c);
                }
                self.stop_here(core);
            }
            Outcome::Return(r) => {
                let answer = r[0] as i64;
                assert!(
                    answer >= 0
                        || [
                            ret::ALREADY_ON,
                            ret::ON_PENDING,
                            ret::DENIED,
                            ret::INTERNAL_FAILURE
                        ]
                        .contains(&answer),
                    "core {core}: answer {answer}"
                );
            }
            // Issued again at the next step, as the SMC instruction is.
            Outcome::Retry => {}
            other => panic!("core {core}: unexpected {other:?}"),
        }
    }

    /// One step of `core`: Linux's if it runs there, else its look loop's.
    fn step(&self, core: usize, seed: &mut u64) {
        match self.running[core].load(Ordering::Acquire) {
            0 => self.look(core),
            generation => self.linux_step(core, generation, seed),
        }
    }
}

#[test]
fn cpu_ons_racing_resets_never_leave_an_old_linux_running_and_every_restart_comes_up() {
    // Every core steps until enough restarts raced its calls (or time is
    // up): a core that stopped early would leave the others waiting for it.
    const RESTARTS: u64 = 300;
    let machine = Arc::new(Machine::new());
    let done = Arc::new(AtomicBool::new(false));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let threads: Vec<_> = (0..CORES)
        .map(|core| {
            let (machine, done) = (Arc::clone(&machine), Arc::clone(&done));
            thread::spawn(move || {
                let mut seed = 0x5EED_0000 + core as u64;
                while !done.load(Ordering::Relaxed) {
                    machine.step(core, &mut seed);
                    if machine.restarts.load(Ordering::Relaxed) >= RESTARTS
                        || std::time::Instant::now() > deadline
                    {
                        done.store(true, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no invariant broke on any core");
    }
    let restarts = machine.restarts.load(Ordering::Relaxed);
    assert!(
        restarts >= RESTARTS,
        "only {restarts} restarts in five minutes"
    );
    // Quiet: no more resets or CPU_OFFs. The last Linux comes up on every
    // core: its CPU_ONs are served.
    machine.quiet.store(true, Ordering::Relaxed);
    let m = &machine.monitor;
    let mut seed = 1;
    for _ in 0..10_000 {
        for core in 0..CORES {
            machine.step(core, &mut seed);
        }
    }
    let generation = m.lifecycle.generation(0);
    let running: Vec<u32> = machine
        .running
        .iter()
        .map(|r| r.load(Ordering::Acquire))
        .collect();
    assert!(
        running.iter().all(|&g| g == generation),
        "after {restarts} restarts, generation {generation}: cores run {running:?}"
    );
    println!(
        "{restarts} restarts, {} starts, generation {generation}, cores {running:?}",
        machine.starts.load(Ordering::Relaxed)
    );
}

/// The reference model of one Linux on CORES cores, as the docs state its
/// rules: PSCI states, and whether the monitor is stopping it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Model {
    /// Off, pending (an entry waits), on.
    state: [u8; CORES],
    stopping: bool,
    /// Cores asked to stop that have not yet.
    to_stop: [bool; CORES],
    restart: bool,
}

const OFF: u8 = 0;
const PENDING: u8 = 1;
const ON: u8 = 2;

impl Model {
    fn booted() -> Self {
        Self {
            state: [ON, OFF, OFF, OFF],
            stopping: false,
            to_stop: [false; CORES],
            restart: false,
        }
    }

    fn cpu_on(&mut self, target: usize) -> Outcome {
        if self.stopping && self.state[target] == OFF {
            return Outcome::value(ret::INTERNAL_FAILURE);
        }
        match self.state[target] {
            ON => Outcome::value(ret::ALREADY_ON),
            PENDING => Outcome::value(ret::ON_PENDING),
            _ => {
                self.state[target] = PENDING;
                Outcome::ReturnAndSignal([0; 4], tandem_monitor_core::smc::Signal::wake(target))
            }
        }
    }

    fn cpu_off(&mut self, core: usize) -> Outcome {
        let others = (0..CORES).any(|c| c != core && self.state[c] != OFF);
        if self.state[core] != ON || !others || self.stopping {
            return Outcome::value(ret::DENIED);
        }
        self.state[core] = OFF;
        Outcome::CpuOff
    }

    fn stop(&mut self, core: usize, restart: bool) -> Outcome {
        if self.stopping {
            return Outcome::StopLinux { restart, wake: 0 };
        }
        self.stopping = true;
        self.restart = restart;
        self.state = [OFF; CORES];
        self.to_stop = [true; CORES];
        Outcome::StopLinux {
            restart,
            wake: 0b1111 & !(1 << core),
        }
    }

    fn affinity(&self, target: usize) -> Outcome {
        Outcome::value(match self.state[target] {
            ON => 0,
            PENDING => 2,
            _ => 1,
        })
    }
}

#[test]
fn power_changing_calls_with_valid_targets_answer_as_the_model_says() {
    let mut seed = 0xC0FF_EE00_u64;
    let mut restarts = 0;
    for _ in 0..200 {
        let m = booted();
        assert_eq!(m.take_pending(0), Pending::Entry(ENTRY, BOOT));
        let mut model = Model::booted();
        // Where Linux runs: a core asked to stop runs on until it does.
        let mut running = [true, false, false, false];
        for _ in 0..500 {
            let r = next(&mut seed);
            let core = (r % CORES as u64) as usize;
            let target = (r >> 8) as usize % CORES;
            let (outcome, want) = match r >> 16 & 31 {
                // The monitor's own steps: a core looks for its entry, a
                // core asked to stop stops, the boot core restarts Linux.
                0..=5 => {
                    let got = m.take_pending(core);
                    let want = match (model.stopping, model.state[core]) {
                        (false, PENDING) => {
                            model.state[core] = ON;
                            running[core] = true;
                            Pending::Entry(ENTRY, 7)
                        }
                        _ => Pending::Nothing,
                    };
                    assert_eq!(got, want, "look on {core}: {model:?}");
                    continue;
                }
                6..=8 => {
                    assert_eq!(m.stop_requested(core), model.to_stop[core], "{model:?}");
                    if model.to_stop[core] {
                        m.linux_stopped(core);
                        model.to_stop[core] = false;
                        running[core] = false;
                    }
                    let due = m.lifecycle.restart_due(0);
                    let want = model.stopping && model.restart && !model.to_stop.contains(&true);
                    assert_eq!(due.is_some(), want, "{model:?}");
                    if want {
                        m.restart_linux(0, ENTRY, BOOT);
                        restarts += 1;
                        model = Model {
                            state: [PENDING, OFF, OFF, OFF],
                            ..Model::booted()
                        };
                        assert_eq!(m.take_pending(0), Pending::Entry(ENTRY, BOOT));
                        model.state[0] = ON;
                        running[0] = true;
                    }
                    continue;
                }
                // Linux's calls, from a core it runs on (also one the
                // monitor asked to stop that has not yet).
                _ if !running[core] => continue,
                9..=19 => (
                    call(&m, core, PSCI_CPU_ON_64, &[target as u64, ENTRY, 7]),
                    model.cpu_on(target),
                ),
                20..=24 => (call(&m, core, PSCI_CPU_OFF, &[]), model.cpu_off(core)),
                25 => (
                    call(&m, core, PSCI_SYSTEM_RESET, &[]),
                    model.stop(core, true),
                ),
                26 if r >> 40 & 3 == 0 => (
                    call(&m, core, PSCI_SYSTEM_OFF, &[]),
                    model.stop(core, false),
                ),
                _ => (
                    call(&m, core, PSCI_AFFINITY_INFO_64, &[target as u64, 0]),
                    model.affinity(target),
                ),
            };
            assert_eq!(
                outcome,
                want,
                "core {core}, call {:#x}: {model:?}",
                r >> 16 & 31
            );
            if matches!(outcome, Outcome::CpuOff | Outcome::StopLinux { .. }) {
                running[core] = false;
                model.to_stop[core] = false;
                if matches!(outcome, Outcome::StopLinux { .. }) {
                    m.linux_stopped(core);
                }
            }
        }
    }
    assert!(restarts > 50, "{restarts} restarts");
}

/// A restart is refused (its images unusable): the Linux stays off and its
/// cores cannot be turned on.
#[test]
fn a_linux_whose_restart_is_refused_stays_off() {
    let m = booted();
    assert_eq!(m.take_pending(0), Pending::Entry(ENTRY, BOOT));
    assert!(matches!(
        call(&m, 0, PSCI_SYSTEM_RESET, &[]),
        Outcome::StopLinux { restart: true, .. }
    ));
    for c in 0..CORES {
        m.linux_stopped(c);
    }
    assert_eq!(m.lifecycle.restart_due(0), Some(0));
    m.lifecycle.restart_refused(0);
    assert_eq!(m.lifecycle.restart_due(0), None);
    assert_eq!(m.take_pending(0), Pending::Nothing);
    assert_eq!(
        call(&m, 0, PSCI_CPU_ON_64, &[1, ENTRY, 0]),
        Outcome::value(ret::INTERNAL_FAILURE)
    );
}
