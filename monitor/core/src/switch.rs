//! The world switch of one core as a pure state machine: which world runs
//! next, whose EL1 state must be saved, which switch to trace and what
//! stolen time to publish, for every event the firmware decodes. The
//! firmware only decodes traps into [`Event`]s and carries out the [`Step`]
//! it gets back, so Tandem's central rule lives here, host-tested against a
//! reference model: the RTOS always first on the cores it owns, Linux in the
//! gaps (SafeG), the core idle in the monitor when neither has work.
//!
//! | event | while | goes to |
//! |---|---|---|
//! | `Reset` | anything | `Rtos` (started) on a core with the RTOS, else `Deciding` |
//! | `Fiq`, not the doorbell | `Linux`, a core with the RTOS | `Rtos` |
//! | `LinuxWfi`, an RTOS interrupt ended the wait | `Linux`, a core with the RTOS | `Rtos` |
//! | `Yield` | `Rtos` | `Linux` (resumed), else `Deciding` (a CPU_ON that is due starts from the look that follows) |
//! | `CpuOff` | `Linux` | `Deciding` |
//! | `StopLinux` | `Linux` | `Deciding`, Linux off and its state dropped |
//! | `StopLinux` | anything else | unchanged, Linux off (a due CPU_ON dropped) |
//! | `Look` | `Deciding`, `Idle` | `Rtos` if an RTOS interrupt is pending, else `Idle` waiting for the RTOS alone if its timer is about to fire, else `Linux` (started) if a CPU_ON is due, else `Idle` |
//! | anything else | | unchanged: the world that trapped resumes |
//!
//! A CPU_ON reaches its core through `Look`: the monitor's doorbell ends
//! the core's wait (or the RTOS there yields), and the firmware takes the
//! entry from PSCI.
//!
//! Linux's state on the core is Off, Pending (a CPU_ON's entry, taken from
//! PSCI but not yet started: the RTOS runs first if it has work) or On.

use crate::smc::World;
use crate::steal::StealClock;
use tandem_abi::shm::{TRACE_TO_IDLE, TRACE_TO_LINUX, TRACE_TO_RTOS};

/// Where Linux starts on a core: a CPU_ON's entry, or the boot core's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxEntry {
    /// Entry point at NS-EL1.
    pub entry: u64,
    /// x0 at entry.
    pub context_id: u64,
}

/// Linux on this core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Linux {
    /// Not started, or off after CPU_OFF.
    Off,
    /// To start at [`CoreSwitch::entry`] when the RTOS next leaves the core
    /// (a CPU_ON taken from PSCI, not started yet: the RTOS runs first if
    /// it has work).
    Pending,
    /// Started; its context is live or saved.
    On,
}

/// What a core is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Running {
    /// The RTOS runs (from its last YIELD, or fresh).
    Rtos,
    /// Linux runs.
    Linux,
    /// In the monitor, about to look for work (no world runs).
    Deciding,
    /// In the monitor, waiting for an interrupt (traced as idle).
    Idle,
}

/// What the firmware saw, decoded from a trap or its idle loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The core reached the monitor at cold boot.
    Reset,
    /// An FIQ trapped while Linux ran; `doorbell` if it was the monitor's own
    /// doorbell (which only the idle loop waits for), else an RTOS interrupt.
    Fiq {
        /// The monitor's doorbell rang.
        doorbell: bool,
    },
    /// The RTOS called YIELD: it has nothing to run here.
    Yield,
    /// Linux executed WFI (trapped with stolen-time accounting on) and the
    /// monitor waited in its place; `secure_pending` if an RTOS interrupt
    /// ended the wait.
    LinuxWfi {
        /// An RTOS interrupt is pending.
        secure_pending: bool,
    },
    /// Linux turned this core off (PSCI CPU_OFF, accepted).
    CpuOff,
    /// Linux must stop here at once, wherever it is (the monitor restarts
    /// Linux alone: its reboot, or a power-off the RTOS outlives). Its
    /// state is dropped, not saved; it starts again only through a CPU_ON.
    StopLinux,
    /// What the firmware found when asked to look ([`Next::Look`]): the
    /// entry of a CPU_ON for this core, taken from PSCI (this is how a
    /// CPU_ON reaches its core), whether an RTOS interrupt is pending, and
    /// whether the RTOS's timer fires sooner than starting Linux and
    /// turning back takes (the board's `rtos_leave_ns`, the RTOS's own rule
    /// for leaving the core): then Linux waits, as the RTOS would have,
    /// rather than have the timer find the core at EL3 with interrupts
    /// masked, however often Linux turns the core on and off.
    Look {
        /// The entry of a CPU_ON for this core, if one was pending.
        pending: Option<LinuxEntry>,
        /// An RTOS interrupt is pending.
        secure_pending: bool,
        /// The RTOS's timer fires within `rtos_leave_ns`.
        rtos_soon: bool,
    },
}

/// What runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Resume the world that trapped, as it was.
    Same,
    /// Start the RTOS from its entry (cold boot).
    StartRtos,
    /// Resume the RTOS inside its last YIELD (its EL1 state restored).
    Rtos,
    /// Resume Linux where it left (its EL1 state restored).
    Linux,
    /// Start Linux fresh at [`CoreSwitch::linux_entry`].
    StartLinux,
    /// Look for work and report with [`Event::Look`].
    Look,
    /// Wait for an interrupt, then look again.
    Wait,
    /// Wait for an interrupt of the RTOS's alone, then look again: its
    /// timer is about to fire, and nothing the normal world asks for (a
    /// CPU_ON's doorbell) may make the core busy then.
    WaitForRtos,
}

/// What the firmware must do for one event, in this order: save the EL1
/// state of `save`, publish `stolen`, record `trace`, run `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The world that stops running here and whose EL1 state must be saved.
    pub save: Option<World>,
    /// What runs next.
    pub next: Next,
    /// The switch to record in the core's trace ring (`abi::shm::TRACE_*`).
    pub trace: Option<u64>,
    /// The stolen total grew to this many counter ticks (publish it).
    pub stolen: Option<u64>,
}

impl Step {
    const SAME: Step = Step {
        save: None,
        next: Next::Same,
        trace: None,
        stolen: None,
    };

    /// Whether the RTOS's settings (the EL1 registers it sets before its
    /// first YIELD on a core and never changes after, `tandem_abi::smc::
    /// tos`) are saved with the rest of its state: at every YIELD but the
    /// one that resumes Linux. The RTOS's first YIELD on a core is never
    /// that one (Linux is not on yet: it starts from a look, after a YIELD
    /// that left the core to the monitor), so the settings are saved
    /// before the RTOS is first resumed, and the world switch moves only
    /// what changes. The model check asserts it.
    #[inline(always)]
    pub fn saves_rtos_settings(&self) -> bool {
        matches!(self.save, Some(World::Secure)) && !matches!(self.next, Next::Linux)
    }
}

/// One core's world switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreSwitch {
    running: Running,
    linux: Linux,
    /// The RTOS runs on this core (its policy).
    rtos: bool,
    /// Stolen-time accounting is on.
    steal_on: bool,
    /// Where Linux starts while [`Linux::Pending`]. Kept beside the state
    /// rather than in it, so that the YIELD path tests one byte.
    entry: LinuxEntry,
    steal: StealClock,
}

impl CoreSwitch {
    /// A core before its cold boot: the RTOS on it or not, stolen-time
    /// accounting on or not.
    pub const fn new(rtos: bool, steal_on: bool) -> Self {
        Self {
            running: Running::Deciding,
            linux: Linux::Off,
            rtos,
            steal_on,
            entry: LinuxEntry {
                entry: 0,
                context_id: 0,
            },
            steal: StealClock::ZERO,
        }
    }

    /// Whether the RTOS runs on this core.
    pub const fn rtos(&self) -> bool {
        self.rtos
    }

    /// What the core is doing.
    pub const fn running(&self) -> Running {
        self.running
    }

    /// Whether Linux has started here and not turned the core off.
    pub const fn linux_on(&self) -> bool {
        matches!(self.linux, Linux::On)
    }

    /// Stolen counter ticks so far.
    pub const fn stolen_ticks(&self) -> u64 {
        self.steal.stolen_ticks()
    }

    /// Where Linux starts on [`Next::StartLinux`]: the last CPU_ON's entry
    /// taken from PSCI.
    pub const fn linux_entry(&self) -> LinuxEntry {
        self.entry
    }

    /// The RTOS takes the core at `now`; `linux_runnable`: Linux was running
    /// code (not waiting in WFI, not off), so the time is stolen from it.
    #[inline(always)]
    fn rtos_takes(
        &mut self,
        now: u64,
        linux_runnable: bool,
        save: Option<World>,
        next: Next,
    ) -> Step {
        if self.steal_on {
            self.steal.rtos_takes(now, linux_runnable);
        }
        self.running = Running::Rtos;
        Step {
            save,
            next,
            trace: Some(TRACE_TO_RTOS),
            stolen: None,
        }
    }

    /// Linux runs next: resumed, or started at its pending entry.
    #[inline(always)]
    fn linux_takes(&mut self, save: Option<World>, stolen: Option<u64>) -> Step {
        let next = match self.linux {
            Linux::On => Next::Linux,
            Linux::Pending | Linux::Off => Next::StartLinux,
        };
        self.linux = Linux::On;
        self.running = Running::Linux;
        Step {
            save,
            next,
            trace: Some(TRACE_TO_LINUX),
            stolen,
        }
    }

    /// The next step for `event` at counter `now`. Events that cannot happen
    /// in the current state (a firmware bug) change nothing and resume
    /// whatever trapped.
    // Inlined: each trap handler passes a constant event, so only its own
    // arm of the match is left on the world-switch path.
    #[inline(always)]
    pub fn step(&mut self, event: Event, now: u64) -> Step {
        match (event, self.running) {
            (Event::Reset, _) => {
                *self = Self::new(self.rtos, self.steal_on);
                if self.rtos {
                    // Linux has not started here: nothing to steal from.
                    self.rtos_takes(now, false, None, Next::StartRtos)
                } else {
                    self.look()
                }
            }
            (Event::Fiq { doorbell: false }, Running::Linux) if self.rtos => {
                // Linux was running code, not waiting: with stolen-time
                // accounting its WFI traps instead (`LinuxWfi`).
                self.rtos_takes(now, true, Some(World::NonSecure), Next::Rtos)
            }
            (
                Event::LinuxWfi {
                    secure_pending: true,
                },
                Running::Linux,
            ) if self.rtos => self.rtos_takes(now, false, Some(World::NonSecure), Next::Rtos),
            (Event::Yield, Running::Rtos) => {
                let stolen = (self.steal_on && self.steal.rtos_leaves(now))
                    .then(|| self.steal.stolen_ticks());
                if self.linux == Linux::On {
                    self.linux_takes(Some(World::Secure), stolen)
                } else {
                    // Off, or to start: a fresh start is decided by a look,
                    // which waits if the RTOS's timer is about to fire.
                    Step {
                        save: Some(World::Secure),
                        stolen,
                        ..self.look()
                    }
                }
            }
            (Event::CpuOff | Event::StopLinux, Running::Linux) => {
                self.linux = Linux::Off;
                self.look()
            }
            (Event::StopLinux, _) => {
                self.linux = Linux::Off;
                Step::SAME
            }
            (
                Event::Look {
                    pending,
                    secure_pending,
                    rtos_soon,
                },
                Running::Deciding | Running::Idle,
            ) => {
                if let (Some(e), Linux::Off) = (pending, self.linux) {
                    self.linux = Linux::Pending;
                    self.entry = e;
                }
                if self.rtos && secure_pending {
                    // The RTOS first, even before a Linux that is due to start.
                    self.rtos_takes(now, false, None, Next::Rtos)
                } else if self.rtos && rtos_soon {
                    self.idle(Next::WaitForRtos)
                } else if self.linux == Linux::Pending {
                    self.linux_takes(None, None)
                } else {
                    self.idle(Next::Wait)
                }
            }
            _ => Step::SAME,
        }
    }

    /// The core waits in the monitor (`next`: for what), traced as idle once.
    fn idle(&mut self, next: Next) -> Step {
        let trace = (self.running != Running::Idle).then_some(TRACE_TO_IDLE);
        self.running = Running::Idle;
        Step {
            save: None,
            next,
            trace,
            stolen: None,
        }
    }

    /// Leaves the core to the monitor to look for work.
    #[inline(always)]
    fn look(&mut self) -> Step {
        self.running = Running::Deciding;
        Step {
            next: Next::Look,
            ..Step::SAME
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    const BOOT: LinuxEntry = LinuxEntry {
        entry: 0x4020_0000,
        context_id: 0x4800_0000,
    };

    fn look(pending: Option<LinuxEntry>, secure_pending: bool) -> Event {
        Event::Look {
            pending,
            secure_pending,
            rtos_soon: false,
        }
    }

    #[test]
    fn the_boot_core_runs_the_rtos_first_then_linux() {
        let mut c = CoreSwitch::new(true, false);
        let s = c.step(Event::Reset, 0);
        assert_eq!((s.next, s.trace), (Next::StartRtos, Some(TRACE_TO_RTOS)));
        let s = c.step(Event::Yield, 10);
        assert_eq!((s.save, s.next), (Some(World::Secure), Next::Look));
        assert_eq!(s.trace, None, "nothing traced until the core settles");
        let s = c.step(look(Some(BOOT), false), 11);
        assert_eq!((s.next, s.trace), (Next::StartLinux, Some(TRACE_TO_LINUX)));
        assert_eq!(c.linux_entry(), BOOT);
        assert!(c.linux_on());
        // An RTOS interrupt preempts Linux; its YIELD resumes Linux.
        let s = c.step(Event::Fiq { doorbell: false }, 20);
        assert_eq!(
            (s.save, s.next, s.trace),
            (Some(World::NonSecure), Next::Rtos, Some(TRACE_TO_RTOS))
        );
        let s = c.step(Event::Yield, 30);
        assert_eq!(
            (s.save, s.next, s.trace),
            (Some(World::Secure), Next::Linux, Some(TRACE_TO_LINUX))
        );
        // The doorbell while Linux runs is not for it.
        assert_eq!(c.step(Event::Fiq { doorbell: true }, 40), Step::SAME);
    }

    #[test]
    fn an_rtos_interrupt_goes_before_a_linux_that_is_due_to_start() {
        let mut c = CoreSwitch::new(true, false);
        c.step(Event::Reset, 0);
        c.step(Event::Yield, 1);
        let s = c.step(look(Some(BOOT), true), 2);
        assert_eq!(s.next, Next::Rtos);
        assert!(!c.linux_on());
        // Its YIELD leaves the start to the look that follows.
        let s = c.step(Event::Yield, 3);
        assert_eq!((s.save, s.next), (Some(World::Secure), Next::Look));
        assert_eq!(c.step(look(None, false), 4).next, Next::StartLinux);
        assert_eq!(c.linux_entry(), BOOT, "the entry was kept");
    }

    #[test]
    fn linux_does_not_start_just_before_the_rtoss_timer() {
        let mut c = CoreSwitch::new(true, false);
        c.step(Event::Reset, 0);
        c.step(Event::Yield, 1);
        let soon = Event::Look {
            pending: Some(BOOT),
            secure_pending: false,
            rtos_soon: true,
        };
        let s = c.step(soon, 2);
        assert_eq!((s.next, s.trace), (Next::WaitForRtos, Some(TRACE_TO_IDLE)));
        assert!(!c.linux_on());
        // The timer fires: the RTOS first; Linux starts at the look after
        // it yields, unless the timer is due again by then.
        assert_eq!(c.step(look(None, true), 3).next, Next::Rtos);
        assert_eq!(c.step(Event::Yield, 4).next, Next::Look);
        let soon_again = Event::Look {
            pending: None,
            secure_pending: false,
            rtos_soon: true,
        };
        assert_eq!(c.step(soon_again, 5).next, Next::WaitForRtos);
        assert_eq!(c.step(look(None, false), 6).next, Next::StartLinux);
        assert_eq!(c.linux_entry(), BOOT, "the entry was kept");
        // A core without the RTOS has no timer to wait for.
        let mut l = CoreSwitch::new(false, false);
        l.step(Event::Reset, 0);
        assert_eq!(l.step(soon, 1).next, Next::StartLinux);
    }

    #[test]
    fn an_idle_core_waits_and_traces_idle_once() {
        let mut c = CoreSwitch::new(true, false);
        c.step(Event::Reset, 0);
        c.step(Event::Yield, 1);
        let s = c.step(look(None, false), 2);
        assert_eq!((s.next, s.trace), (Next::Wait, Some(TRACE_TO_IDLE)));
        let s = c.step(look(None, false), 3);
        assert_eq!((s.next, s.trace), (Next::Wait, None));
        let s = c.step(look(None, true), 4);
        assert_eq!((s.save, s.next), (None, Next::Rtos), "Linux never ran");
    }

    #[test]
    fn a_linux_only_core_starts_when_asked_and_parks_after_cpu_off() {
        let mut c = CoreSwitch::new(false, false);
        assert_eq!(c.step(Event::Reset, 0).next, Next::Look);
        assert_eq!(c.step(look(None, true), 1).next, Next::Wait, "no RTOS here");
        let s = c.step(look(Some(BOOT), false), 2);
        assert_eq!((s.next, c.linux_entry()), (Next::StartLinux, BOOT));
        assert_eq!(c.step(Event::Fiq { doorbell: false }, 3), Step::SAME);
        assert_eq!(c.step(Event::CpuOff, 4).next, Next::Look);
        assert!(!c.linux_on());
        let s = c.step(look(None, false), 5);
        assert_eq!((s.next, s.trace), (Next::Wait, Some(TRACE_TO_IDLE)));
    }

    #[test]
    fn a_stopped_linux_is_dropped_wherever_it_was_and_the_rtos_runs_on() {
        let mut c = CoreSwitch::new(true, false);
        c.step(Event::Reset, 0);
        c.step(Event::Yield, 1);
        c.step(look(Some(BOOT), false), 2);
        // Stopped while it runs: nothing saved, the core looks for work.
        let s = c.step(Event::StopLinux, 3);
        assert_eq!((s.save, s.next, s.trace), (None, Next::Look, None));
        assert!(!c.linux_on());
        assert_eq!(c.step(look(None, true), 4).next, Next::Rtos);
        assert_eq!(c.step(Event::Yield, 5).next, Next::Look, "Linux is gone");
        // Started again by a CPU_ON, at the new entry, fresh.
        let again = LinuxEntry {
            entry: 0x4020_0000,
            context_id: 0x4800_0000,
        };
        assert_eq!(c.step(look(Some(again), false), 6).next, Next::StartLinux);
        // Stopped while the RTOS has the core: the RTOS goes on, and its
        // YIELD no longer resumes the old Linux.
        c.step(Event::Fiq { doorbell: false }, 7);
        assert_eq!(c.step(Event::StopLinux, 8), Step::SAME);
        assert_eq!(c.step(Event::Yield, 9).next, Next::Look);
        // A CPU_ON taken but not started is dropped too.
        c.step(look(Some(again), true), 10);
        assert_eq!(c.step(Event::StopLinux, 11), Step::SAME);
        assert_eq!(c.step(Event::Yield, 12).next, Next::Look);
    }

    #[test]
    fn linux_waiting_in_wfi_is_not_robbed() {
        let mut c = CoreSwitch::new(true, true);
        c.step(Event::Reset, 0);
        c.step(Event::Yield, 100);
        c.step(look(Some(BOOT), false), 100);
        assert_eq!(
            c.step(
                Event::LinuxWfi {
                    secure_pending: false
                },
                150
            ),
            Step::SAME
        );
        let s = c.step(
            Event::LinuxWfi {
                secure_pending: true,
            },
            200,
        );
        assert_eq!((s.save, s.next), (Some(World::NonSecure), Next::Rtos));
        assert_eq!(c.step(Event::Yield, 300).stolen, None, "Linux was idle");
        c.step(Event::Fiq { doorbell: false }, 400);
        assert_eq!(c.step(Event::Yield, 450).stolen, Some(50));
        assert_eq!(c.stolen_ticks(), 50);
    }

    #[test]
    fn events_that_cannot_happen_change_nothing() {
        let mut c = CoreSwitch::new(true, true);
        c.step(Event::Reset, 0);
        let before = c;
        for e in [
            Event::Fiq { doorbell: false },
            Event::LinuxWfi {
                secure_pending: true,
            },
            Event::CpuOff,
            look(Some(BOOT), true),
        ] {
            assert_eq!(c.step(e, 5), Step::SAME, "{e:?} while the RTOS runs");
            assert_eq!(c, before);
        }
    }

    // ----- The model check -----

    /// xorshift64*: a tiny deterministic generator.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The reference model: the same rules written as the docs state them,
    /// one world at a time, with the registers the firmware would move.
    #[derive(Debug)]
    struct Model {
        rtos: bool,
        steal_on: bool,
        /// Which world runs: `None` while the core is in the monitor.
        world: Option<World>,
        idle: bool,
        linux_on: bool,
        linux_entry: Option<LinuxEntry>,
        /// Where Linux was last started, and whether the stolen total grew
        /// on the last event: what the machine must report.
        started_at: Option<LinuxEntry>,
        stolen_grew: bool,
        /// When the RTOS took the core from a Linux that was running code.
        stolen_since: Option<u64>,
        stolen: u64,
        /// Whose values the EL1 registers hold, and each world's copies:
        /// a version that grows whenever the world runs.
        live: Option<World>,
        version: [u64; 2],
        saved: [u64; 2],
        rtos_started: bool,
        /// The RTOS's settings were saved since it started (at a YIELD
        /// whose step says so): it must not be resumed before.
        rtos_settings_saved: bool,
    }

    fn side(w: World) -> usize {
        match w {
            World::NonSecure => 0,
            World::Secure => 1,
        }
    }

    impl Model {
        fn new(rtos: bool, steal_on: bool) -> Self {
            Self {
                rtos,
                steal_on,
                world: None,
                idle: false,
                linux_on: false,
                linux_entry: None,
                started_at: None,
                stolen_grew: false,
                stolen_since: None,
                stolen: 0,
                live: None,
                version: [0; 2],
                saved: [0; 2],
                rtos_started: false,
                rtos_settings_saved: false,
            }
        }

        /// Applies the machine's step to the model's registers, checking
        /// that nothing is lost: a world's state is saved only while it is
        /// live, and a world resumes only with the state it left with.
        fn carry_out(&mut self, s: &Step) {
            if let Some(w) = s.save {
                assert_eq!(
                    self.live,
                    Some(w),
                    "saved {w:?} while another's state was live"
                );
                self.saved[side(w)] = self.version[side(w)];
            }
            if s.saves_rtos_settings() {
                self.rtos_settings_saved = true;
            }
            let resumed = match s.next {
                Next::Rtos => {
                    assert!(self.rtos_started, "resumed an RTOS that never started");
                    assert!(
                        self.rtos_settings_saved,
                        "resumed the RTOS before its settings were saved"
                    );
                    Some(World::Secure)
                }
                Next::Linux => {
                    assert!(self.linux_on, "resumed a Linux that is not on here");
                    Some(World::NonSecure)
                }
                Next::StartRtos => {
                    self.rtos_started = true;
                    self.rtos_settings_saved = false;
                    self.saved[1] = self.version[1];
                    Some(World::Secure)
                }
                Next::StartLinux => {
                    self.saved[0] = self.version[0];
                    Some(World::NonSecure)
                }
                Next::Same | Next::Look | Next::Wait | Next::WaitForRtos => None,
            };
            if let Some(w) = resumed {
                assert_eq!(
                    self.saved[side(w)],
                    self.version[side(w)],
                    "{w:?} resumed without the state it left with"
                );
                self.live = Some(w);
            }
            // Whatever runs changes its own registers.
            if let Some(w) = self.world
                && self.live == Some(w)
            {
                self.version[side(w)] += 1;
            }
        }

        /// What the rules say: the world that runs next, the switch traced.
        fn expect(&mut self, e: Event, now: u64) -> (Option<World>, Option<u64>) {
            self.started_at = None;
            self.stolen_grew = false;
            let expected = self.rules(e, now);
            if self.world.is_some() {
                self.idle = false;
            }
            expected
        }

        fn rules(&mut self, e: Event, now: u64) -> (Option<World>, Option<u64>) {
            let world = self.world;
            let rtos_takes = |m: &mut Self, runnable: bool| {
                if m.steal_on && runnable {
                    m.stolen_since = Some(now);
                }
                m.world = Some(World::Secure);
                m.idle = false;
                (m.world, Some(TRACE_TO_RTOS))
            };
            match e {
                Event::Reset => {
                    let (rtos, steal_on) = (self.rtos, self.steal_on);
                    *self = Self::new(rtos, steal_on);
                    if rtos {
                        rtos_takes(self, false)
                    } else {
                        (None, None)
                    }
                }
                Event::Fiq { doorbell } => {
                    if world == Some(World::NonSecure) && self.rtos && !doorbell {
                        rtos_takes(self, true)
                    } else {
                        (world, None)
                    }
                }
                Event::LinuxWfi { secure_pending } => {
                    if world == Some(World::NonSecure) && self.rtos && secure_pending {
                        rtos_takes(self, false)
                    } else {
                        (world, None)
                    }
                }
                Event::Yield if world == Some(World::Secure) => {
                    if let Some(since) = self.stolen_since.take() {
                        self.stolen_grew = now > since;
                        self.stolen += now.saturating_sub(since);
                    }
                    if self.linux_on {
                        self.world = Some(World::NonSecure);
                        (self.world, Some(TRACE_TO_LINUX))
                    } else {
                        self.world = None;
                        (None, None)
                    }
                }
                Event::CpuOff if world == Some(World::NonSecure) => {
                    self.linux_on = false;
                    self.world = None;
                    (None, None)
                }
                Event::StopLinux => {
                    self.linux_on = false;
                    self.linux_entry = None;
                    if world == Some(World::NonSecure) {
                        self.world = None;
                        (None, None)
                    } else {
                        (world, None)
                    }
                }
                Event::Look {
                    pending,
                    secure_pending,
                    rtos_soon,
                } if world.is_none() => {
                    if !self.linux_on && self.linux_entry.is_none() {
                        self.linux_entry = pending;
                    }
                    if self.rtos && secure_pending {
                        rtos_takes(self, false)
                    } else if self.rtos && rtos_soon {
                        // The core waits for the RTOS's timer, an entry kept.
                        let trace = (!self.idle).then_some(TRACE_TO_IDLE);
                        self.idle = true;
                        (None, trace)
                    } else if let Some(e) = self.linux_entry.take() {
                        self.started_at = Some(e);
                        self.linux_on = true;
                        self.world = Some(World::NonSecure);
                        (self.world, Some(TRACE_TO_LINUX))
                    } else {
                        let trace = (!self.idle).then_some(TRACE_TO_IDLE);
                        self.idle = true;
                        (None, trace)
                    }
                }
                _ => (world, None),
            }
        }
    }

    /// An event that can happen now (the firmware only yields for the
    /// RTOS, looks while in the monitor, ...), or, one time in 16, any event.
    fn random_event(seed: &mut u64, running: Running) -> Event {
        let r = next(seed);
        let pending = (r & 0x30 == 0).then_some(LinuxEntry {
            entry: 0x4020_0000 + (r >> 40 & 0xFF) * 4,
            context_id: r >> 20 & 0xFFFF,
        });
        let bit = |k: u32| r >> k & 1 != 0;
        let any = r & 0xF00 == 0;
        match (running, any) {
            (Running::Rtos, false) => Event::Yield,
            (Running::Linux, false) => match r % 16 {
                0 => Event::CpuOff,
                8 => Event::StopLinux,
                1 | 2 => Event::LinuxWfi {
                    secure_pending: bit(13),
                },
                _ => Event::Fiq { doorbell: bit(13) },
            },
            (Running::Deciding | Running::Idle, false) => Event::Look {
                pending,
                secure_pending: bit(14),
                rtos_soon: bit(17),
            },
            (_, true) => match r % 7 {
                0 if bit(15) && bit(16) => Event::Reset,
                1 => Event::Yield,
                2 => Event::CpuOff,
                3 => Event::Fiq { doorbell: bit(13) },
                4 => Event::LinuxWfi {
                    secure_pending: bit(13),
                },
                5 => Event::StopLinux,
                _ => Event::Look {
                    pending,
                    secure_pending: bit(14),
                    rtos_soon: bit(17),
                },
            },
        }
    }

    #[test]
    fn random_events_match_the_reference_model() {
        let mut seed = 0x5EED_0F7A_4D00_u64;
        let mut events = 0;
        for core in 0..40 {
            let (rtos, steal_on) = (core % 4 != 3, core % 2 == 0);
            let mut c = CoreSwitch::new(rtos, steal_on);
            let mut m = Model::new(rtos, steal_on);
            let mut now = 0u64;
            let mut e = Event::Reset;
            for _ in 0..5_000 {
                now += next(&mut seed) % 1_000;
                let before = c.running();
                let s = c.step(e, now);
                let (world, trace) = m.expect(e, now);
                m.carry_out(&s);
                events += 1;
                let what = format!("core {core}, {e:?} in {before:?}: {s:?}");
                let running = match c.running() {
                    Running::Rtos => Some(World::Secure),
                    Running::Linux => Some(World::NonSecure),
                    Running::Deciding | Running::Idle => None,
                };
                assert_eq!(running, world, "{what}");
                assert_eq!(s.trace, trace, "{what}");
                assert_eq!(c.linux_on(), m.linux_on, "{what}");
                assert_eq!(c.stolen_ticks(), m.stolen, "{what}");
                assert_eq!(s.stolen.is_some(), m.stolen_grew, "{what}");
                if let Some(t) = s.stolen {
                    assert_eq!(t, m.stolen, "{what}");
                }
                // Linux starts where the CPU_ON it was given said, and only
                // when the rules start it.
                let started = (s.next == Next::StartLinux).then(|| c.linux_entry());
                assert_eq!(started, m.started_at, "{what}");
                // The RTOS first: an RTOS interrupt on one of its cores
                // never lets another world run.
                let rtos_due = matches!(
                    e,
                    Event::Look {
                        secure_pending: true,
                        ..
                    } | Event::LinuxWfi {
                        secure_pending: true
                    } | Event::Fiq { doorbell: false }
                );
                if rtos && rtos_due && s.next != Next::Same {
                    assert_eq!(s.next, Next::Rtos, "{what}");
                }
                if !rtos {
                    assert!(!matches!(s.next, Next::Rtos | Next::StartRtos), "{what}");
                }
                // Nor does Linux start on it just before the RTOS's timer.
                if rtos
                    && matches!(
                        e,
                        Event::Look {
                            rtos_soon: true,
                            ..
                        }
                    )
                {
                    assert_ne!(s.next, Next::StartLinux, "{what}");
                }
                e = random_event(&mut seed, c.running());
            }
        }
        assert!(events >= 100_000, "{events}");
    }
}
