//! Test helpers: the standard configuration most tests run on, and small
//! functions to build a kernel and get a task running.

pub(crate) use crate::{
    Config, CyclicConfig, CyclicId, DataQueueConfig, DataQueueId, FlagConfig, FlagId, Kernel,
    MAX_CYCLICS, SemaphoreConfig, SemaphoreId, TaskConfig, TaskId, TaskStats, Ticks,
};
use std::vec::Vec;

/// A task that does not start by itself.
pub(crate) const fn task(name: &'static str, core: u8, priority: u8) -> TaskConfig {
    TaskConfig {
        name,
        core,
        priority,
        autostart: false,
    }
}

/// Core 0 gets A (2), B and C (5), D (9); core 1 E (2), F (9), G (5);
/// core 2 nothing.
pub(crate) const TASKS: [TaskConfig; 7] = [
    task("a", 0, 2),
    task("b", 0, 5),
    task("c", 0, 5),
    task("d", 0, 9),
    task("e", 1, 2),
    task("f", 1, 9),
    task("g", 1, 5),
];
pub(crate) const A: TaskId = TaskId(0);
pub(crate) const B: TaskId = TaskId(1);
pub(crate) const C: TaskId = TaskId(2);
pub(crate) const D: TaskId = TaskId(3);
pub(crate) const E: TaskId = TaskId(4);
pub(crate) const F: TaskId = TaskId(5);
pub(crate) const G: TaskId = TaskId(6);

/// S0: a binary semaphore, empty. S1: 2 of 3.
pub(crate) const SEMAPHORES: [SemaphoreConfig; 2] = [
    SemaphoreConfig { initial: 0, max: 1 },
    SemaphoreConfig { initial: 2, max: 3 },
];
pub(crate) const S0: SemaphoreId = SemaphoreId(0);
pub(crate) const S1: SemaphoreId = SemaphoreId(1);

/// F0, all clear.
pub(crate) const FLAGS: [FlagConfig; 1] = [FlagConfig { initial: 0 }];
pub(crate) const F0: FlagId = FlagId(0);

/// Q0, holding 2 values.
pub(crate) const DATAQUEUES: [DataQueueConfig; 1] = [DataQueueConfig { capacity: 2 }];
pub(crate) const Q0: DataQueueId = DataQueueId(0);

/// C0 on core 0 (period 100, phase 10), C1 on core 1 (period 7, phase 0);
/// neither started.
pub(crate) const CYCLICS: [CyclicConfig; 2] = [
    CyclicConfig {
        name: "c0",
        core: 0,
        period: 100,
        phase: 10,
        start: false,
    },
    CyclicConfig {
        name: "c1",
        core: 1,
        period: 7,
        phase: 0,
        start: false,
    },
];
pub(crate) const C0: CyclicId = CyclicId(0);
pub(crate) const C1: CyclicId = CyclicId(1);

/// Three cores with the objects above.
pub(crate) const CONFIG: Config<'static> = Config {
    cores: 3,
    tasks: &TASKS,
    cyclics: &CYCLICS,
    semaphores: &SEMAPHORES,
    flags: &FLAGS,
    dataqueues: &DATAQUEUES,
};

/// The kernel of [`CONFIG`] at time 0.
pub(crate) fn kernel() -> Kernel {
    kernel_with(&CONFIG)
}

/// The kernel of `config` at time 0.
pub(crate) fn kernel_with(config: &Config) -> Kernel {
    kernel_with_at(config, 0)
}

/// The kernel of `config` at time `now`.
pub(crate) fn kernel_with_at(config: &Config, now: Ticks) -> Kernel {
    let k = Kernel::new(config, now).expect("valid test configuration");
    k.check_invariants();
    k
}

/// Activates `t` and dispatches its core, where it must then run.
pub(crate) fn run(k: &mut Kernel, t: TaskId) {
    k.activate(t).unwrap();
    let core = k.task_core(t).unwrap();
    assert_eq!(k.dispatch(core), Some(t), "{t:?} should run");
}

/// `advance`, returning the cyclic handlers that fired.
pub(crate) fn advance(k: &mut Kernel, core: u8, now: Ticks) -> Vec<CyclicId> {
    let mut fired = [CyclicId(u8::MAX); MAX_CYCLICS];
    let n = k.advance(core, now, &mut fired);
    k.check_invariants();
    fired[..n].to_vec()
}

/// A [`TaskStats`] in one line.
pub(crate) fn stats(activations: u64, overruns: u64, rejected: u64) -> TaskStats {
    TaskStats {
        activations,
        overruns,
        rejected,
    }
}

/// xorshift64*: a tiny deterministic generator for randomised tests.
pub(crate) fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}
