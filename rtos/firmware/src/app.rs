//! The demo application, statically configured: on each of 4 cores a 1 ms
//! cyclic handler releasing a job that does a fixed amount of work; an
//! interrupt-to-task path (PING raises an SGI on PONG's core, whose handler
//! wakes PONG); a cross-core semaphore hand-off (PONG signals, PING waits);
//! and a status task that prints one line per second and publishes per-core
//! statistics to the shared region.

use crate::{hw, log, sched, stats, syscall};
use tandem_board::BOARD;
use tandem_rtos_kernel::{
    Config, CyclicConfig, CyclicId, Kernel, SemaphoreConfig, SemaphoreId, TaskConfig, TaskId,
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
/// PONG -> PING.
pub const HANDOFF: SemaphoreId = SemaphoreId(0);

/// A task's code.
pub struct TaskDef {
    /// Runs when the task is activated; returning ends the task (ext_tsk).
    pub body: fn(),
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

const TASK_CONFIG: [TaskConfig; 7] = [
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
];

/// Task bodies, in `TASK_CONFIG` order.
pub const TASKS: [TaskDef; 7] = [
    TaskDef { body: run_job },
    TaskDef { body: run_job },
    TaskDef { body: run_job },
    TaskDef { body: run_job },
    TaskDef { body: ping },
    TaskDef { body: pong },
    TaskDef { body: status },
];

const CYCLICS: [CyclicConfig; DEMO_CORES] = [release(0), release(1), release(2), release(3)];
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

/// Places the tasks on the cores the RTOS really has (`mask`) before any of
/// them runs: jobs stay with their core, PING and STATUS go to the first
/// RTOS core, PONG to the second (or the first, if it is alone).
pub fn place(mask: u64) {
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
        for c in 0..DEMO_CORES {
            if mask & (1 << c) == 0 {
                k.stop_cyclic(CyclicId(c as u8)).expect("cyclic exists");
            }
        }
    });
}

/// A cyclic handler fired on `core` (interrupt context, kernel locked).
pub fn cyclic(k: &mut Kernel, core: usize, c: CyclicId) {
    stats::released(core);
    // A job still running at its next release is a deadline miss; the
    // kernel counts it (overrun) and the request queues or is refused.
    let _ = k.activate(TaskId(c.0));
}

/// Interrupt handler of the demo SGI: the interrupt-to-task path.
pub fn demo_interrupt(k: &mut Kernel) {
    let _ = k.wakeup(PONG);
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

/// Deadline misses of core `c`'s job: releases that found it still busy,
/// plus releases the timer skipped.
pub fn misses(c: usize) -> u64 {
    sched::with_kernel(|k| {
        let overruns = k.stats(TaskId(c as u8)).map(|s| s.overruns).unwrap_or(0);
        overruns + k.cyclic_misses(CyclicId(c as u8)).unwrap_or(0)
    })
}

/// Logs one line from `core` (for the status task).
pub fn say(core: usize, line: &str) {
    log!(core, "{line}");
}
