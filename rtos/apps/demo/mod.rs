//! The demo application, statically configured: on each of cores 0-3 a 1 ms
//! cyclic handler releasing a job that does a fixed amount of work; an
//! interrupt-to-task path (PING raises an SGI on PONG's core, which notifies
//! PONG); a cross-core semaphore hand-off (PONG signals, PING waits); and a
//! status task that prints one line per second and publishes per-core
//! statistics to the shared region. It offers Linux that status line as a
//! message service, `tandem-status` (registered in the table, served over
//! RPMsg by the `rpmsg` application): any message is answered with it.
//!
//! It always runs. With `jobs = 0` in the workload blob (another workload
//! owns the cores' time, e.g. `periodic`) the jobs' handlers stay stopped;
//! PING, PONG and STATUS still run.

mod params {
    include!(concat!(env!("OUT_DIR"), "/demo.rs"));
}

use core::fmt::Write;
use core::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use tandem_board::BOARD;
use tandem_rtos_firmware::{hw, log, status, syscall};
use tandem_rtos_kernel::app::{
    App, Cyclic, Entry, Interrupt, Owner, Refusal, Service, Start, Task, TaskIdentity,
};
use tandem_rtos_kernel::{CyclicConfig, SemaphoreConfig, TaskConfig};

/// Cores the demo spreads over.
const DEMO_CORES: usize = 4;
/// The period of every job: 1 ms.
const PERIOD: u64 = BOARD.counter_hz / 1000;
/// Iterations of the work loop per job: a few thousand instructions, a few
/// microseconds in virtual timing (about 5 % of a core with the job's own
/// overhead).
const WORK_ITERATIONS: u64 = 1_000;

/// The job of core `c` is task `c`; then these.
const PING: u8 = DEMO_CORES as u8;
/// Woken by PING's interrupt on its own core; hands the semaphore back.
const PONG: u8 = PING + 1;
/// Prints the status line.
const STATUS: u8 = PONG + 1;
/// PONG -> PING.
const HANDOFF: u8 = 0;

/// The application.
pub const APP: App = App {
    name: params::NAME,
    tasks: &[
        job(0),
        job(1),
        job(2),
        job(3),
        task("ping", 0, 8, ping),
        task("pong", 1, 2, pong),
        task("status", 0, 15, status),
    ],
    cyclics: &[release(0), release(1), release(2), release(3)],
    semaphores: &[SemaphoreConfig { initial: 0, max: 1 }],
    interrupts: &[Interrupt {
        intid: BOARD.sgi.demo,
        owner: Owner::Task(PONG),
        top: None,
        shared: false,
    }],
    params: params::PARAMS,
    services: &[Service {
        name: "tandem-status",
        serve: status_service,
    }],
    start: Some(start),
    ..App::EMPTY
};

const fn task(name: &'static str, core: u8, priority: u8, body: fn(TaskIdentity)) -> Task {
    Task {
        config: TaskConfig {
            name,
            core,
            priority,
            autostart: true,
        },
        entry: Entry::Kernel(body),
    }
}

const fn job(core: u8) -> Task {
    Task {
        config: TaskConfig {
            name: "job",
            core,
            priority: 4,
            autostart: false,
        },
        entry: Entry::Kernel(run_job),
    }
}

/// Each core's releases are offset by a quarter period from the previous
/// core's, so the cores do not all enter the kernel at the same instant.
const fn release(core: u8) -> Cyclic {
    let phase = PERIOD + core as u64 * PERIOD / DEMO_CORES as u64;
    Cyclic {
        config: CyclicConfig {
            name: "release",
            core,
            period: PERIOD,
            phase,
            start: true,
        },
        task: core,
        before: None,
    }
}

/// PONG's core, set at start (it never moves after).
static PONG_CORE: AtomicU8 = AtomicU8::new(0);
/// PING/PONG rounds that ended in time, and late.
static HANDOFFS: AtomicU64 = AtomicU64::new(0);
static HANDOFF_TIMEOUTS: AtomicU64 = AtomicU64::new(0);

/// Places the tasks on the cores the RTOS really has before any of them
/// runs: jobs stay with their core, PING and STATUS go to the first RTOS
/// core, PONG to the second (or the first, if it is alone). The jobs'
/// handlers of cores without the RTOS, or all of them with `jobs = 0`, stay
/// stopped.
fn start(s: &mut Start<'_>) -> Result<(), Refusal> {
    let mask = s.platform.cores;
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
    for (task, core) in [(PING, cores[0]), (STATUS, cores[0]), (PONG, cores[1])] {
        s.kernel
            .migrate(s.ids.task(task), core)
            .expect("tasks exist and cores are in range");
    }
    PONG_CORE.store(cores[1], Ordering::Relaxed);
    let jobs = s.param("jobs") != 0;
    for c in 0..DEMO_CORES {
        if !jobs || mask & (1 << c) == 0 {
            s.kernel
                .stop_cyclic(s.ids.cyclic(c as u8))
                .expect("cyclic exists");
        }
    }
    Ok(())
}

fn run_job(_: TaskIdentity) {
    let mut acc = 0u64;
    for i in 0..WORK_ITERATIONS {
        acc = core::hint::black_box(acc.wrapping_add(i));
    }
    core::hint::black_box(acc);
}

fn ping(me: TaskIdentity) {
    loop {
        let _ = syscall::delay(100 * PERIOD);
        hw::send_sgi(BOARD.sgi.demo, PONG_CORE.load(Ordering::Relaxed).into());
        let in_time = syscall::wait(me.ids.semaphore(HANDOFF), 50 * PERIOD).is_ok();
        if in_time {
            &HANDOFFS
        } else {
            &HANDOFF_TIMEOUTS
        }
        .fetch_add(1, Ordering::Relaxed);
    }
}

fn pong(me: TaskIdentity) {
    loop {
        if syscall::sleep(syscall::FOREVER).is_ok() {
            let _ = syscall::signal(me.ids.semaphore(HANDOFF));
        }
    }
}

/// Once a second: the statistics to the shared region, and the status line
/// (per core: releases, misses, load; then the hand-offs).
fn status(_: TaskIdentity) {
    let core = tandem_rtos_firmware::core_index();
    let mut seconds = 0;
    loop {
        let _ = syscall::delay(1000 * PERIOD);
        seconds += 1;
        status::publish();
        let mut line = status::Line::new();
        status::write(&mut line, seconds);
        let _ = write!(
            line,
            " | handoffs {} ({} late)",
            HANDOFFS.load(Ordering::Relaxed),
            HANDOFF_TIMEOUTS.load(Ordering::Relaxed)
        );
        log!(core, "{}", line.as_str());
    }
}

/// `tandem-status`: whatever it is sent, the status line as it stands now
/// (seconds since boot, then per core releases, misses and load; cut to
/// the reply's size).
fn status_service(_: u32, _: &[u8], reply: &mut [u8]) -> Option<usize> {
    let mut line = status::Line::new();
    status::write(&mut line, hw::now() / BOARD.counter_hz);
    let text = line.as_str().as_bytes();
    let n = text.len().min(reply.len());
    reply[..n].copy_from_slice(&text[..n]);
    Some(n)
}
