//! The demo application, statically configured: on each of 4 cores a 1 ms
//! cyclic handler releasing a job that does a fixed amount of work; an
//! interrupt-to-task path (PING raises an SGI on PONG's core, whose handler
//! wakes PONG); a cross-core semaphore hand-off (PONG signals, PING waits);
//! and a status task that prints one line per second and publishes per-core
//! statistics to the shared region.
//!
//! Or, when the boot configuration asks for the periodic workload (paper
//! 000's dummy task), the jobs' handlers stay stopped and one cyclic handler
//! on a chosen core releases PERIODIC, which busy-waits a set time; with the
//! `migrate` dispatch policy it starts on a core where Linux holds no lock.
//!
//! On the cores the boot configuration names, an RPC server task answers
//! Linux's calls (`crate::rpc`), below every periodic job in priority.

use crate::{hw, log, rpc, sched, stats, syscall};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tandem_abi::boot::{Dispatch, Workload};
use tandem_board::BOARD;
use tandem_rtos_kernel::placement::pick_core;
use tandem_rtos_kernel::{
    Config, CyclicConfig, CyclicId, Kernel, SemaphoreConfig, SemaphoreId, TaskConfig, TaskId,
    TaskState,
};

/// Cores the demo spreads over.
pub const DEMO_CORES: usize = 4;
/// The period of every job: 1 ms.
pub const PERIOD: u64 = BOARD.counter_hz / 1000;
/// Iterations of the work loop per job: a few thousand instructions, a few
/// microseconds in virtual timing (about 5 % of a core with the job's own
/// overhead).
pub const WORK_ITERATIONS: u64 = 1_000;

/// Job task of core `c` is `TaskId(c)`.
pub const PING: TaskId = TaskId(4);
/// Woken by PING's interrupt on its own core; hands the semaphore back.
pub const PONG: TaskId = TaskId(5);
/// Prints the status line.
pub const STATUS: TaskId = TaskId(6);
/// The periodic workload's task.
pub const PERIODIC: TaskId = TaskId(7);
/// The RPC server of core `c` is `TaskId(RPC_SERVER0.0 + c)`.
pub const RPC_SERVER0: TaskId = TaskId(8);
/// Priority of the RPC servers: below every job (4), PERIODIC (3) and PING
/// (8), so calls from Linux never delay the RTOS's own deadlines.
const RPC_PRIORITY: u8 = 10;
/// Its cyclic handler.
pub const PERIODIC_RELEASE: CyclicId = CyclicId(DEMO_CORES as u8);
/// PONG -> PING.
pub const HANDOFF: SemaphoreId = SemaphoreId(0);

/// A task's code.
pub struct TaskDef {
    /// What runs when the task is activated.
    pub body: Body,
}

/// Where a task runs.
#[derive(Clone, Copy)]
pub enum Body {
    /// At S-EL1, in the kernel's address space: this function; returning
    /// ends the task (ext_tsk).
    Kernel(fn()),
    /// At S-EL0 in its own address space (the `ctxsw` workload): code and
    /// pages set up by [`crate::protect`].
    Protected,
}

/// The protected tasks: the hand-off pair (the first waits first), and the
/// one that makes a stray access.
pub const PROTECTED_TASKS: [TaskId; crate::protect::PROTECTED] =
    [TaskId(12), TaskId(13), TaskId(14)];
/// Slot of the stray task in [`PROTECTED_TASKS`].
pub const STRAY_SLOT: usize = 2;

/// The configured name of `t`.
pub fn task_name(t: TaskId) -> &'static str {
    TASK_CONFIG.get(t.0 as usize).map_or("?", |c| c.name)
}

const fn protected(name: &'static str) -> TaskConfig {
    TaskConfig {
        name,
        core: 0,
        priority: 12,
        autostart: false,
    }
}

const fn job(core: u8) -> TaskConfig {
    TaskConfig {
        name: "job",
        core,
        priority: 4,
        autostart: false,
    }
}

/// Each core's releases are offset by a quarter period from the previous
/// core's, so the cores do not all enter the kernel at the same instant.
const fn release(core: u8) -> CyclicConfig {
    let phase = PERIOD + core as u64 * PERIOD / DEMO_CORES as u64;
    CyclicConfig {
        name: "release",
        core,
        period: PERIOD,
        phase,
        start: true,
    }
}

const fn rpc_server(core: u8) -> TaskConfig {
    TaskConfig {
        name: "rpc",
        core,
        priority: RPC_PRIORITY,
        autostart: false,
    }
}

const TASK_CONFIG: [TaskConfig; 15] = [
    job(0),
    job(1),
    job(2),
    job(3),
    TaskConfig {
        name: "ping",
        core: 0,
        priority: 8,
        autostart: true,
    },
    TaskConfig {
        name: "pong",
        core: 1,
        priority: 2,
        autostart: true,
    },
    TaskConfig {
        name: "status",
        core: 0,
        priority: 15,
        autostart: true,
    },
    TaskConfig {
        name: "periodic",
        core: 0,
        priority: 3,
        autostart: false,
    },
    rpc_server(0),
    rpc_server(1),
    rpc_server(2),
    rpc_server(3),
    protected("chg_a"),
    protected("chg_b"),
    protected("stray"),
];

/// Task bodies, in `TASK_CONFIG` order.
pub const TASKS: [TaskDef; 15] = [
    TaskDef {
        body: Body::Kernel(run_job),
    },
    TaskDef {
        body: Body::Kernel(run_job),
    },
    TaskDef {
        body: Body::Kernel(run_job),
    },
    TaskDef {
        body: Body::Kernel(run_job),
    },
    TaskDef {
        body: Body::Kernel(ping),
    },
    TaskDef {
        body: Body::Kernel(pong),
    },
    TaskDef {
        body: Body::Kernel(status),
    },
    TaskDef {
        body: Body::Kernel(run_periodic),
    },
    TaskDef {
        body: Body::Kernel(rpc::server),
    },
    TaskDef {
        body: Body::Kernel(rpc::server),
    },
    TaskDef {
        body: Body::Kernel(rpc::server),
    },
    TaskDef {
        body: Body::Kernel(rpc::server),
    },
    TaskDef {
        body: Body::Protected,
    },
    TaskDef {
        body: Body::Protected,
    },
    TaskDef {
        body: Body::Protected,
    },
];

const CYCLICS: [CyclicConfig; DEMO_CORES + 1] = [
    release(0),
    release(1),
    release(2),
    release(3),
    // Set up at boot when the periodic workload is chosen.
    CyclicConfig {
        name: "periodic",
        core: 0,
        period: PERIOD,
        phase: PERIOD,
        start: false,
    },
];

/// The periodic workload, once chosen (read by handlers and the task).
struct Periodic {
    on: AtomicBool,
    migrate: AtomicBool,
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

static PERIODIC_STATE: Periodic = Periodic {
    on: AtomicBool::new(false),
    migrate: AtomicBool::new(false),
    candidates: AtomicU64::new(0),
    work: AtomicU64::new(0),
    alt_work: AtomicU64::new(0),
    alt_every: AtomicU64::new(0),
    epoch: AtomicU64::new(0),
    requested: AtomicU64::new(0),
};

const fn us_to_ticks(us: u32) -> u64 {
    us as u64 * BOARD.counter_hz / 1_000_000
}
const SEMAPHORES: [SemaphoreConfig; 1] = [SemaphoreConfig { initial: 0, max: 1 }];

/// The whole static configuration.
pub static CONFIG: Config = Config {
    cores: DEMO_CORES,
    tasks: &TASK_CONFIG,
    cyclics: &CYCLICS,
    semaphores: &SEMAPHORES,
    flags: &[],
    dataqueues: &[],
};

const _: () = assert!(CONFIG.check().is_ok(), "the RTOS configuration is invalid");
const _: () = assert!(TASKS.len() == TASK_CONFIG.len());
const _: () = assert!(RPC_SERVER0.0 as usize + rpc::SERVERS == PROTECTED_TASKS[0].0 as usize);
const _: () = assert!(PROTECTED_TASKS[2].0 as usize + 1 == TASKS.len());

/// Places the tasks on the cores the RTOS really has (`mask`) before any of
/// them runs: jobs stay with their core, PING and STATUS go to the first
/// RTOS core, PONG to the second (or the first, if it is alone). With the
/// periodic workload, the jobs' handlers stay stopped and PERIODIC's starts.
/// The RPC servers of the cores in `rpc_cores` start (they sleep until called).
pub fn place(mask: u64, workload: Workload, rpc_cores: u8, now: u64) {
    let cores: [u8; 2] = {
        let first = mask.trailing_zeros() as u8;
        let rest = mask & !(1 << first);
        [
            first,
            if rest == 0 {
                first
            } else {
                rest.trailing_zeros() as u8
            },
        ]
    };
    sched::with_kernel(|k| {
        for (task, core) in [(PING, cores[0]), (STATUS, cores[0]), (PONG, cores[1])] {
            k.migrate(task, core)
                .expect("tasks exist and cores are in range");
        }
        for c in 0..rpc::SERVERS {
            if rpc_cores & (1 << c) != 0 {
                // The boot configuration keeps server cores to RTOS cores.
                let server = TaskId(RPC_SERVER0.0 + c as u8);
                k.activate(server).expect("server task exists");
            }
        }
        let periodic = matches!(workload, Workload::Periodic { .. });
        for c in 0..DEMO_CORES {
            if periodic || mask & (1 << c) == 0 {
                k.stop_cyclic(CyclicId(c as u8)).expect("cyclic exists");
            }
        }
        if let Workload::Ctxsw { core, stray, .. } = workload {
            // The pair in order: the first to run waits for the second's
            // hand-off. The checked boot configuration names an RTOS core.
            let count = if stray { 3 } else { 2 };
            for &t in &PROTECTED_TASKS[..count] {
                k.migrate(t, core as u8).expect("checked workload");
                k.activate(t).expect("a dormant task");
            }
        }
        if let Workload::Periodic {
            core,
            period_us,
            work_us,
            dispatch,
            alt_work_us,
            alt_every_ms,
        } = workload
        {
            let period = us_to_ticks(period_us);
            let p = &PERIODIC_STATE;
            p.migrate
                .store(dispatch == Dispatch::Migrate, Ordering::Relaxed);
            p.candidates.store(mask, Ordering::Relaxed);
            p.work.store(us_to_ticks(work_us), Ordering::Relaxed);
            p.alt_work
                .store(us_to_ticks(alt_work_us), Ordering::Relaxed);
            p.alt_every.store(
                u64::from(alt_every_ms) * BOARD.counter_hz / 1000,
                Ordering::Relaxed,
            );
            p.epoch.store(now, Ordering::Relaxed);
            p.on.store(true, Ordering::Release);
            // The boot configuration was checked: the core runs the RTOS.
            k.set_cyclic(PERIODIC_RELEASE, core as u8, period, period)
                .expect("checked workload");
            k.migrate(PERIODIC, core as u8).expect("checked workload");
            k.start_cyclic(PERIODIC_RELEASE, now)
                .expect("cyclic exists");
        }
    });
}

/// A cyclic handler fired on `core` (interrupt context, kernel locked).
pub fn cyclic(k: &mut Kernel, core: usize, c: CyclicId) {
    stats::released(core);
    if c == PERIODIC_RELEASE {
        release_periodic(k);
        return;
    }
    // A job still running at its next release is a deadline miss; the
    // kernel counts it (overrun) and the request queues or is refused.
    let _ = k.activate(TaskId(c.0));
}

/// Releases PERIODIC: with `migrate`, first moves it (if it is not running
/// still) to a core where Linux holds no lock. The handler itself never
/// moves and never waits for Linux.
fn release_periodic(k: &mut Kernel) {
    let p = &PERIODIC_STATE;
    let dormant = k.state(PERIODIC) == Ok(TaskState::Dormant);
    // Only a request that starts a job from dormancy is timed: one that
    // finds the last job pending or running queues behind it (an overrun)
    // and waits for that job, not for the dispatch. The clock starts before
    // the choice of core, which is part of what `migrate` costs.
    if dormant {
        stamp_request(&p.requested);
    }
    if p.migrate.load(Ordering::Relaxed) && dormant {
        let last = k.task_core(PERIODIC).unwrap_or(0);
        let target = pick_core(last, p.candidates.load(Ordering::Relaxed), |c| {
            stats::linux_holds_lock(c as usize)
        });
        if target != last {
            // A candidate core of the RTOS: migrate cannot fail.
            let _ = k.migrate(PERIODIC, target);
        }
    }
    // Still running at its next release: an overrun (deadline miss), counted
    // by the kernel.
    let _ = k.activate(PERIODIC);
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
fn run_periodic() {
    let start = hw::now();
    let p = &PERIODIC_STATE;
    // The core it runs on: no need to take the kernel lock to ask.
    let core = crate::core_index();
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
    while hw::now().wrapping_sub(start) < work {
        core::hint::spin_loop();
    }
}

/// Interrupt handler of the demo SGI: the interrupt-to-task path.
pub fn demo_interrupt(k: &mut Kernel) {
    let _ = k.wakeup(PONG);
}

/// Interrupt handler of the RPC doorbell: wakes this core's server (a
/// wakeup while it works is queued, so it looks again before sleeping).
pub fn rpc_interrupt(k: &mut Kernel, core: usize) {
    if core < rpc::SERVERS {
        let _ = k.wakeup(TaskId(RPC_SERVER0.0 + core as u8));
    }
}

fn run_job() {
    let mut acc = 0u64;
    for i in 0..WORK_ITERATIONS {
        acc = core::hint::black_box(acc.wrapping_add(i));
    }
    core::hint::black_box(acc);
}

fn ping() {
    loop {
        let _ = syscall::delay(100 * PERIOD);
        let target = sched::with_kernel(|k| k.task_core(PONG)).unwrap_or(0);
        hw::send_demo_interrupt(target as usize);
        match syscall::wait(HANDOFF, 50 * PERIOD) {
            Ok(()) => stats::handoff(true),
            Err(_) => stats::handoff(false),
        }
    }
}

fn pong() {
    loop {
        if syscall::sleep(syscall::FOREVER).is_ok() {
            let _ = syscall::signal(HANDOFF);
        }
    }
}

fn status() {
    let core = sched::with_kernel(|k| k.task_core(STATUS)).unwrap_or(0) as usize;
    let mut seconds = 0;
    loop {
        let _ = syscall::delay(1000 * PERIOD);
        seconds += 1;
        stats::publish();
        stats::print_status(core, seconds);
    }
}

/// Deadline misses of the job released on core `c`: releases that found it
/// still busy, plus releases the timer skipped.
pub fn misses(c: usize) -> u64 {
    sched::with_kernel(|k| {
        let (task, cyclic) = if PERIODIC_STATE.on.load(Ordering::Acquire) {
            let Ok(core) = k.cyclic_core(PERIODIC_RELEASE) else {
                return 0;
            };
            if core as usize != c {
                return 0;
            }
            (PERIODIC, PERIODIC_RELEASE)
        } else if c < DEMO_CORES {
            (TaskId(c as u8), CyclicId(c as u8))
        } else {
            return 0;
        };
        let overruns = k.stats(task).map(|s| s.overruns).unwrap_or(0);
        overruns + k.cyclic_misses(cyclic).unwrap_or(0)
    })
}

/// Logs one line from `core` (for the status task).
pub fn say(core: usize, line: &str) {
    log!(core, "{line}");
}
