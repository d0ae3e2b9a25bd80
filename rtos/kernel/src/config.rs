//! Static configuration as data: the tasks, cyclic handlers and
//! synchronisation objects a system is built with, and the `const fn` check
//! that rejects a bad configuration at build time.

use crate::{
    DATAQUEUE_CAPACITY, MAX_CORES, MAX_CYCLICS, MAX_DATAQUEUES, MAX_FLAGS, MAX_SEMAPHORES,
    MAX_TASKS, PRIORITIES, Ticks,
};

/// One task (TOPPERS CRE_TSK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskConfig {
    /// For logs and debugging only.
    pub name: &'static str,
    /// The core the task starts assigned to (migration may change it).
    pub core: u8,
    /// Base priority, 0 the highest.
    pub priority: u8,
    /// Ready at start (TA_ACT).
    pub autostart: bool,
}

/// One cyclic handler (TOPPERS CRE_CYC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclicConfig {
    /// For logs and debugging only.
    pub name: &'static str,
    /// The core whose timer releases it and runs its handler.
    pub core: u8,
    /// Ticks between releases; never 0.
    pub period: Ticks,
    /// Ticks from start to the first release.
    pub phase: Ticks,
    /// Started at kernel start (TA_STA).
    pub start: bool,
}

/// One counting semaphore (TOPPERS CRE_SEM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemaphoreConfig {
    /// Resources available at start.
    pub initial: u32,
    /// Most resources it can count; signalling beyond is an overflow.
    pub max: u32,
}

/// One event flag (TOPPERS CRE_FLG, waiters allowed in numbers: TA_WMUL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagConfig {
    /// Bit pattern at start.
    pub initial: u32,
}

/// One data queue of `usize` values (TOPPERS CRE_DTQ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataQueueConfig {
    /// Values it holds before senders block, 1..=[`DATAQUEUE_CAPACITY`].
    pub capacity: usize,
}

/// The whole static configuration. Object IDs are indexes into these slices.
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    /// Number of cores scheduled, 1..=[`MAX_CORES`].
    pub cores: usize,
    /// Tasks, indexed by [`crate::TaskId`].
    pub tasks: &'a [TaskConfig],
    /// Cyclic handlers, indexed by [`crate::CyclicId`].
    pub cyclics: &'a [CyclicConfig],
    /// Semaphores, indexed by [`crate::SemaphoreId`].
    pub semaphores: &'a [SemaphoreConfig],
    /// Event flags, indexed by [`crate::FlagId`].
    pub flags: &'a [FlagConfig],
    /// Data queues, indexed by [`crate::DataQueueId`].
    pub dataqueues: &'a [DataQueueConfig],
}

/// What is wrong with a configuration, naming the offending object's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `cores` is 0 or more than [`MAX_CORES`].
    Cores,
    /// More than [`MAX_TASKS`] tasks.
    TooManyTasks,
    /// More than [`MAX_CYCLICS`] cyclic handlers.
    TooManyCyclics,
    /// More than [`MAX_SEMAPHORES`] semaphores.
    TooManySemaphores,
    /// More than [`MAX_FLAGS`] event flags.
    TooManyFlags,
    /// More than [`MAX_DATAQUEUES`] data queues.
    TooManyDataQueues,
    /// A task is assigned to a core that does not exist.
    TaskCore {
        /// Index of the task.
        task: usize,
    },
    /// A task's priority is not below [`PRIORITIES`].
    TaskPriority {
        /// Index of the task.
        task: usize,
    },
    /// A cyclic handler is assigned to a core that does not exist.
    CyclicCore {
        /// Index of the cyclic handler.
        cyclic: usize,
    },
    /// A cyclic handler has a period of 0.
    CyclicPeriod {
        /// Index of the cyclic handler.
        cyclic: usize,
    },
    /// A semaphore's maximum count is 0.
    SemaphoreMax {
        /// Index of the semaphore.
        semaphore: usize,
    },
    /// A semaphore's initial count exceeds its maximum.
    SemaphoreInitial {
        /// Index of the semaphore.
        semaphore: usize,
    },
    /// A data queue's capacity is 0 or more than [`DATAQUEUE_CAPACITY`].
    DataQueueCapacity {
        /// Index of the data queue.
        dataqueue: usize,
    },
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            ConfigError::Cores => write!(f, "a core count of 0 or above the maximum"),
            ConfigError::TooManyTasks => write!(f, "too many tasks"),
            ConfigError::TooManyCyclics => write!(f, "too many cyclic handlers"),
            ConfigError::TooManySemaphores => write!(f, "too many semaphores"),
            ConfigError::TooManyFlags => write!(f, "too many event flags"),
            ConfigError::TooManyDataQueues => write!(f, "too many data queues"),
            ConfigError::TaskCore { task } => {
                write!(f, "task {task} is on a core the kernel does not schedule")
            }
            ConfigError::TaskPriority { task } => write!(f, "task {task} has no such priority"),
            ConfigError::CyclicCore { cyclic } => write!(
                f,
                "cyclic handler {cyclic} is on a core the kernel does not schedule"
            ),
            ConfigError::CyclicPeriod { cyclic } => {
                write!(f, "cyclic handler {cyclic} has a period of 0")
            }
            ConfigError::SemaphoreMax { semaphore } => {
                write!(f, "semaphore {semaphore} has a maximum of 0")
            }
            ConfigError::SemaphoreInitial { semaphore } => {
                write!(f, "semaphore {semaphore} starts above its maximum")
            }
            ConfigError::DataQueueCapacity { dataqueue } => {
                write!(f, "data queue {dataqueue} has no allowed capacity")
            }
        }
    }
}

impl Config<'_> {
    /// Checks everything the kernel relies on. A `const fn`, so a firmware
    /// can refuse to build with a bad configuration:
    /// `const _: () = assert!(CONFIG.check().is_ok());`
    pub const fn check(&self) -> Result<(), ConfigError> {
        if self.cores == 0 || self.cores > MAX_CORES {
            return Err(ConfigError::Cores);
        }
        if self.tasks.len() > MAX_TASKS {
            return Err(ConfigError::TooManyTasks);
        }
        if self.cyclics.len() > MAX_CYCLICS {
            return Err(ConfigError::TooManyCyclics);
        }
        if self.semaphores.len() > MAX_SEMAPHORES {
            return Err(ConfigError::TooManySemaphores);
        }
        if self.flags.len() > MAX_FLAGS {
            return Err(ConfigError::TooManyFlags);
        }
        if self.dataqueues.len() > MAX_DATAQUEUES {
            return Err(ConfigError::TooManyDataQueues);
        }
        let mut i = 0;
        while i < self.tasks.len() {
            let t = &self.tasks[i];
            if t.core as usize >= self.cores {
                return Err(ConfigError::TaskCore { task: i });
            }
            if t.priority as usize >= PRIORITIES {
                return Err(ConfigError::TaskPriority { task: i });
            }
            i += 1;
        }
        i = 0;
        while i < self.cyclics.len() {
            let c = &self.cyclics[i];
            if c.core as usize >= self.cores {
                return Err(ConfigError::CyclicCore { cyclic: i });
            }
            if c.period == 0 {
                return Err(ConfigError::CyclicPeriod { cyclic: i });
            }
            i += 1;
        }
        i = 0;
        while i < self.semaphores.len() {
            let s = &self.semaphores[i];
            if s.max == 0 {
                return Err(ConfigError::SemaphoreMax { semaphore: i });
            }
            if s.initial > s.max {
                return Err(ConfigError::SemaphoreInitial { semaphore: i });
            }
            i += 1;
        }
        i = 0;
        while i < self.dataqueues.len() {
            let capacity = self.dataqueues[i].capacity;
            if capacity == 0 || capacity > DATAQUEUE_CAPACITY {
                return Err(ConfigError::DataQueueCapacity { dataqueue: i });
            }
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;
    use crate::testkit::CONFIG;

    const TASK: TaskConfig = TaskConfig {
        name: "t",
        core: 0,
        priority: 0,
        autostart: false,
    };
    const CYCLIC: CyclicConfig = CyclicConfig {
        name: "c",
        core: 0,
        period: 1,
        phase: 0,
        start: false,
    };
    const SEM: SemaphoreConfig = SemaphoreConfig { initial: 0, max: 1 };
    const FLAG: FlagConfig = FlagConfig { initial: 0 };
    const DTQ: DataQueueConfig = DataQueueConfig { capacity: 1 };

    /// A configuration with every limit exactly reached.
    const FULL: Config<'static> = Config {
        cores: MAX_CORES,
        tasks: &[TaskConfig {
            core: MAX_CORES as u8 - 1,
            priority: PRIORITIES as u8 - 1,
            ..TASK
        }; MAX_TASKS],
        cyclics: &[CYCLIC; MAX_CYCLICS],
        semaphores: &[SemaphoreConfig {
            initial: u32::MAX,
            max: u32::MAX,
        }; MAX_SEMAPHORES],
        flags: &[FLAG; MAX_FLAGS],
        dataqueues: &[DataQueueConfig {
            capacity: DATAQUEUE_CAPACITY,
        }; MAX_DATAQUEUES],
    };

    const ONE_CORE: Config<'static> = Config {
        cores: 1,
        tasks: &[],
        cyclics: &[],
        semaphores: &[],
        flags: &[],
        dataqueues: &[],
    };

    // The point of a const fn check: the build fails on a bad configuration.
    const _: () = assert!(FULL.check().is_ok());
    const _: () = assert!(CONFIG.check().is_ok());
    const REJECTED: Result<(), ConfigError> = Config {
        cores: 0,
        ..ONE_CORE
    }
    .check();

    #[test]
    fn good_configs_are_accepted() {
        assert_eq!(FULL.check(), Ok(()));
        assert_eq!(ONE_CORE.check(), Ok(()));
        assert_eq!(CONFIG.check(), Ok(()));
        assert!(Kernel::new(&FULL, 0).is_ok());
        assert_eq!(REJECTED, Err(ConfigError::Cores));
    }

    #[test]
    fn bad_core_counts_are_rejected() {
        for cores in [0, MAX_CORES + 1, usize::MAX] {
            let c = Config { cores, ..ONE_CORE };
            assert_eq!(c.check(), Err(ConfigError::Cores), "{cores} cores");
        }
    }

    #[test]
    fn too_many_objects_are_rejected() {
        let tasks = [TASK; MAX_TASKS + 1];
        let cyclics = [CYCLIC; MAX_CYCLICS + 1];
        let sems = [SEM; MAX_SEMAPHORES + 1];
        let flags = [FLAG; MAX_FLAGS + 1];
        let dtqs = [DTQ; MAX_DATAQUEUES + 1];
        let cases = [
            (
                Config {
                    tasks: &tasks,
                    ..ONE_CORE
                },
                ConfigError::TooManyTasks,
            ),
            (
                Config {
                    cyclics: &cyclics,
                    ..ONE_CORE
                },
                ConfigError::TooManyCyclics,
            ),
            (
                Config {
                    semaphores: &sems,
                    ..ONE_CORE
                },
                ConfigError::TooManySemaphores,
            ),
            (
                Config {
                    flags: &flags,
                    ..ONE_CORE
                },
                ConfigError::TooManyFlags,
            ),
            (
                Config {
                    dataqueues: &dtqs,
                    ..ONE_CORE
                },
                ConfigError::TooManyDataQueues,
            ),
        ];
        for (config, error) in cases {
            assert_eq!(config.check(), Err(error));
            assert_eq!(Kernel::new(&config, 0).err(), Some(error));
        }
    }

    #[test]
    fn bad_tasks_are_rejected_by_index() {
        let bad_core = [TASK, TaskConfig { core: 2, ..TASK }];
        let c = Config {
            cores: 2,
            tasks: &bad_core,
            ..ONE_CORE
        };
        assert_eq!(c.check(), Err(ConfigError::TaskCore { task: 1 }));
        let bad_priority = [
            TaskConfig {
                priority: PRIORITIES as u8,
                ..TASK
            },
            TASK,
        ];
        let c = Config {
            tasks: &bad_priority,
            ..ONE_CORE
        };
        assert_eq!(c.check(), Err(ConfigError::TaskPriority { task: 0 }));
    }

    #[test]
    fn bad_cyclics_are_rejected_by_index() {
        let bad_core = [CYCLIC, CYCLIC, CyclicConfig { core: 1, ..CYCLIC }];
        let c = Config {
            cyclics: &bad_core,
            ..ONE_CORE
        };
        assert_eq!(c.check(), Err(ConfigError::CyclicCore { cyclic: 2 }));
        let bad_period = [
            CYCLIC,
            CyclicConfig {
                period: 0,
                ..CYCLIC
            },
        ];
        let c = Config {
            cyclics: &bad_period,
            ..ONE_CORE
        };
        assert_eq!(c.check(), Err(ConfigError::CyclicPeriod { cyclic: 1 }));
    }

    #[test]
    fn bad_semaphores_are_rejected_by_index() {
        let zero_max = [SEM, SemaphoreConfig { initial: 0, max: 0 }];
        let c = Config {
            semaphores: &zero_max,
            ..ONE_CORE
        };
        assert_eq!(c.check(), Err(ConfigError::SemaphoreMax { semaphore: 1 }));
        let over = [SemaphoreConfig { initial: 4, max: 3 }];
        let c = Config {
            semaphores: &over,
            ..ONE_CORE
        };
        assert_eq!(
            c.check(),
            Err(ConfigError::SemaphoreInitial { semaphore: 0 })
        );
    }

    #[test]
    fn bad_dataqueues_are_rejected_by_index() {
        for capacity in [0, DATAQUEUE_CAPACITY + 1] {
            let dtqs = [DTQ, DTQ, DataQueueConfig { capacity }];
            let c = Config {
                dataqueues: &dtqs,
                ..ONE_CORE
            };
            assert_eq!(
                c.check(),
                Err(ConfigError::DataQueueCapacity { dataqueue: 2 }),
                "capacity {capacity}"
            );
        }
    }
}
