//! The table flattened into the kernel's configuration: every
//! application's objects in one list per kind, numbered system-wide.

use super::table::Table;
use crate::config::{
    Config, CyclicConfig, DataQueueConfig, FlagConfig, SemaphoreConfig, TaskConfig,
};
use crate::{MAX_CYCLICS, MAX_DATAQUEUES, MAX_FLAGS, MAX_SEMAPHORES, MAX_TASKS};

pub(super) const NO_TASK: TaskConfig = TaskConfig {
    name: "",
    core: 0,
    priority: 0,
    autostart: false,
};
pub(super) const NO_CYCLIC: CyclicConfig = CyclicConfig {
    name: "",
    core: 0,
    period: 1,
    phase: 0,
    start: false,
};

/// Every application's objects in one list per kind, as the kernel takes
/// them ([`KernelObjects::config`]).
#[derive(Clone, Copy, Debug)]
pub struct KernelObjects {
    tasks: [TaskConfig; MAX_TASKS],
    task_count: usize,
    cyclics: [CyclicConfig; MAX_CYCLICS],
    cyclic_count: usize,
    semaphores: [SemaphoreConfig; MAX_SEMAPHORES],
    semaphore_count: usize,
    flags: [FlagConfig; MAX_FLAGS],
    flag_count: usize,
    dataqueues: [DataQueueConfig; MAX_DATAQUEUES],
    dataqueue_count: usize,
}

impl KernelObjects {
    /// The kernel configuration for `cores` cores.
    pub fn config(&self, cores: usize) -> Config<'_> {
        Config {
            cores,
            tasks: &self.tasks[..self.task_count],
            cyclics: &self.cyclics[..self.cyclic_count],
            semaphores: &self.semaphores[..self.semaphore_count],
            flags: &self.flags[..self.flag_count],
            dataqueues: &self.dataqueues[..self.dataqueue_count],
        }
    }
}

impl Table {
    /// Every object in one list per kind (the totals must fit: see
    /// [`Table::check`]).
    pub const fn kernel_objects(&self) -> KernelObjects {
        let mut f = KernelObjects {
            tasks: [NO_TASK; MAX_TASKS],
            task_count: 0,
            cyclics: [NO_CYCLIC; MAX_CYCLICS],
            cyclic_count: 0,
            semaphores: [SemaphoreConfig { initial: 0, max: 1 }; MAX_SEMAPHORES],
            semaphore_count: 0,
            flags: [FlagConfig { initial: 0 }; MAX_FLAGS],
            flag_count: 0,
            dataqueues: [DataQueueConfig { capacity: 1 }; MAX_DATAQUEUES],
            dataqueue_count: 0,
        };
        let mut a = 0;
        while a < self.apps.len() {
            let app = &self.apps[a];
            let mut i = 0;
            while i < app.tasks.len() {
                f.tasks[f.task_count] = app.tasks[i].config;
                f.task_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.cyclics.len() {
                f.cyclics[f.cyclic_count] = app.cyclics[i].config;
                f.cyclic_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.semaphores.len() {
                f.semaphores[f.semaphore_count] = app.semaphores[i];
                f.semaphore_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.flags.len() {
                f.flags[f.flag_count] = app.flags[i];
                f.flag_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.dataqueues.len() {
                f.dataqueues[f.dataqueue_count] = app.dataqueues[i];
                f.dataqueue_count += 1;
                i += 1;
            }
            a += 1;
        }
        f
    }
}
