//! The periodic workload (paper 000's dummy task): when the workload blob
//! selects it, one cyclic handler on a chosen core releases PERIODIC, which
//! busy-waits a set time, optionally switching between two amounts of work
//! every so many ms (a load that changes). With `dispatch = migrate` each
//! job starts on a core where Linux holds no spin lock (paper 000's rule);
//! with `migrate-strict`, where it neither holds one nor spins for one.
//! Every job counts, on its core, whether it preempted Linux holding or
//! spinning for a lock (the core record's `dispatch_preempted_*`).
//!
//! PERIODIC times its own dispatch: the release stamps the counter, the
//! job's first instruction stamps it again, and the difference goes into
//! the core's dispatch histogram (E3 of the `lhp` experiment).

mod params {
    include!(concat!(env!("OUT_DIR"), "/periodic.rs"));
}

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tandem_board::BOARD;
use tandem_rtos_firmware::hw;
use tandem_rtos_firmware::stats::{self, LinuxLocks};
use tandem_rtos_kernel::app::{App, Cyclic, Entry, Refusal, Start, Task, TaskIdentity};
use tandem_rtos_kernel::placement::pick_core;
use tandem_rtos_kernel::{CyclicConfig, Kernel, TaskConfig, TaskId, TaskState};

/// The release period until the workload sets it: 1 ms.
const PERIOD: u64 = BOARD.counter_hz / 1000;
/// Its only task and cyclic handler.
const PERIODIC: u8 = 0;
const RELEASE: u8 = 0;

/// The application.
pub const APP: App = App {
    name: params::NAME,
    tasks: &[Task {
        config: TaskConfig {
            name: "periodic",
            core: 0,
            priority: 3,
            autostart: false,
        },
        entry: Entry::Kernel(run_periodic),
    }],
    // Set up at start when the workload selects this application.
    cyclics: &[Cyclic {
        config: CyclicConfig {
            name: "periodic",
            core: 0,
            period: PERIOD,
            phase: PERIOD,
            start: false,
        },
        task: PERIODIC,
        before: Some(before_release),
    }],
    params: params::PARAMS,
    start: Some(start),
    ..App::EMPTY
};

/// The workload, once chosen (read by the handler and the task).
struct Periodic {
    migrate: AtomicBool,
    /// With `migrate`: also keep off cores where Linux spins for a lock.
    avoid_waiting: AtomicBool,
    /// Cores the task may start on (the RTOS's cores).
    candidates: AtomicU64,
    work: AtomicU64,
    alt_work: AtomicU64,
    /// 0: the work never changes.
    alt_every: AtomicU64,
    /// Counter when the workload started (alternation phases count from it).
    epoch: AtomicU64,
    /// Counter at the last activation request that found the task dormant,
    /// until its job starts (for the dispatch histogram; 0: none to time).
    requested: AtomicU64,
}

static STATE: Periodic = Periodic {
    migrate: AtomicBool::new(false),
    avoid_waiting: AtomicBool::new(false),
    candidates: AtomicU64::new(0),
    work: AtomicU64::new(0),
    alt_work: AtomicU64::new(0),
    alt_every: AtomicU64::new(0),
    epoch: AtomicU64::new(0),
    requested: AtomicU64::new(0),
};

/// Passes of hw::count_down between two reads of the counter in a job's
/// work: 256 instructions, 256 ns of per-core timing's clock (one
/// instruction a ns, plus any stalls the memory model charges), a quarter
/// of its default quantum: the job ends at most that late.
const WORK_PASSES: u64 = 128;

const fn us_to_ticks(us: u32) -> u64 {
    us as u64 * BOARD.counter_hz / 1_000_000
}

/// Checks the parameters against each other and the platform, then sets the
/// handler on its core and starts it.
fn start(s: &mut Start<'_>) -> Result<(), Refusal> {
    if !s.selected() {
        return Ok(());
    }
    let core = s.param("core");
    if s.platform.cores & (1 << core) == 0 {
        return Err(Refusal {
            param: "core",
            value: core.into(),
            want: "a core running the RTOS",
        });
    }
    let period_us = s.param("period_us");
    for name in ["work_us", "alt_work_us"] {
        let work = s.param(name);
        if work >= period_us {
            return Err(Refusal {
                param: name,
                value: work.into(),
                want: "shorter than period_us",
            });
        }
    }
    let period = us_to_ticks(period_us);
    let now = s.platform.now;
    let p = &STATE;
    let dispatch = s.param("dispatch");
    p.migrate.store(
        dispatch == params::DISPATCH_MIGRATE || dispatch == params::DISPATCH_MIGRATE_STRICT,
        Ordering::Relaxed,
    );
    p.avoid_waiting.store(
        dispatch == params::DISPATCH_MIGRATE_STRICT,
        Ordering::Relaxed,
    );
    p.candidates.store(s.platform.cores, Ordering::Relaxed);
    p.work
        .store(us_to_ticks(s.param("work_us")), Ordering::Relaxed);
    p.alt_work
        .store(us_to_ticks(s.param("alt_work_us")), Ordering::Relaxed);
    p.alt_every.store(
        u64::from(s.param("alt_every_ms")) * BOARD.counter_hz / 1000,
        Ordering::Relaxed,
    );
    p.epoch.store(now, Ordering::Relaxed);
    let (task, release, core) = (s.ids.task(PERIODIC), s.ids.cyclic(RELEASE), core as u8);
    // The core runs the RTOS (checked above): none of these can fail.
    let k = &mut *s.kernel;
    k.set_cyclic(release, core, period, period)
        .expect("a stopped cyclic on an RTOS core");
    k.migrate(task, core).expect("an RTOS core");
    k.start_cyclic(release, now).expect("cyclic exists");
    Ok(())
}

/// Before each release (the handler's core, kernel locked): with
/// `migrate`, first moves PERIODIC (if it is not running still) to a core
/// where Linux holds no lock. The handler itself never moves and never
/// waits for Linux.
fn before_release(k: &mut Kernel, task: TaskId) {
    let p = &STATE;
    let dormant = k.state(task) == Ok(TaskState::Dormant);
    // Only a request that starts a job from dormancy is timed: one that
    // finds the last job pending or running queues behind it (an overrun)
    // and waits for that job, not for the dispatch. The clock starts before
    // the choice of core, which is part of what `migrate` costs.
    if dormant {
        stamp_request(&p.requested);
    }
    if p.migrate.load(Ordering::Relaxed) && dormant {
        let last = k.task_core(task).unwrap_or(0);
        let avoid_waiting = p.avoid_waiting.load(Ordering::Relaxed);
        let target =
            pick_core(
                last,
                p.candidates.load(Ordering::Relaxed),
                |c| match stats::linux_locks(c as usize) {
                    LinuxLocks::Holding => true,
                    LinuxLocks::Waiting => avoid_waiting,
                    LinuxLocks::Free => false,
                },
            );
        if target != last {
            // A candidate core of the RTOS: migrate cannot fail.
            let _ = k.migrate(task, target);
        }
    }
}

/// Notes when a timed activation was requested. Never inlined: its first
/// instruction is the `requested` marker of E3's per-core instruction count
/// (harness `tandem/pathcount.py` finds it by this name), as `run_periodic`'s
/// is the `started` marker.
#[inline(never)]
fn stamp_request(requested: &AtomicU64) {
    requested.store(hw::now(), Ordering::Relaxed);
}

/// PERIODIC's body: counts its dispatch latency, then busy-waits its work.
fn run_periodic(_: TaskIdentity) {
    let start = hw::now();
    let p = &STATE;
    // The core it runs on: no need to take the kernel lock to ask.
    let core = tandem_rtos_firmware::core_index();
    // Linux cannot run here while this job does: its lock words still say
    // what it was doing when the RTOS took the core.
    stats::started(core, stats::linux_locks(core));
    let requested = p.requested.swap(0, Ordering::Relaxed);
    if requested != 0 {
        let wait = stats::handoff_wait(core, requested, start);
        stats::dispatch(core, start.saturating_sub(requested).saturating_sub(wait));
    }
    let every = p.alt_every.load(Ordering::Relaxed);
    let alternate = every != 0 && (start - p.epoch.load(Ordering::Relaxed)) / every % 2 == 1;
    let work = if alternate {
        p.alt_work.load(Ordering::Relaxed)
    } else {
        p.work.load(Ordering::Relaxed)
    };
    // Work, not a wait: no spin-loop hint (YIELD), which tells a
    // per-core-timing QEMU that the core waits for another (patch 0003).
    // The counter is read once every WORK_PASSES passes of a plain loop
    // (hw::count_down), so the job ends at most one stretch late.
    while hw::now().wrapping_sub(start) < work {
        hw::count_down(WORK_PASSES);
    }
}
