//! The pure logic of Tandem's SMP RTOS kernel, in the spirit of TOPPERS/FMP:
//! fixed-priority preemptive scheduling with one ready queue per core, task
//! migration, sleep/wakeup, delays, semaphores, event flags, data queues,
//! timeouts and cyclic handlers. It touches no hardware, so all of it is
//! unit-tested on the host (like Hubris's `kerncore`).
//!
//! # Contract with the firmware
//!
//! The firmware keeps the one [`Kernel`] behind a global spin lock and calls
//! its services from task system calls and interrupt handlers. The kernel
//! only keeps the books; the firmware does the rest:
//!
//! - **Dispatching.** After every call, [`Kernel::take_dispatch_requests`]
//!   names the cores whose running task may have to change (or whose next
//!   timer event may have moved earlier). The firmware calls
//!   [`Kernel::dispatch`] for its own core, switches register context if the
//!   answer differs from what it is running, reprograms its timer from
//!   [`Kernel::next_event`], and sends an inter-core interrupt to every other
//!   core named, which then does the same.
//! - **Blocking.** A blocking service returns [`Done::Blocked`]: the caller is
//!   now Waiting and no longer Running. When the task is dispatched again the
//!   firmware fetches what its system call returns with
//!   [`Kernel::take_wait_result`].
//! - **Time.** The timer interrupt of a core calls [`Kernel::advance`], which
//!   expires that core's timeouts and names the cyclic handlers to run.
//! - **Migration of a task running elsewhere.** [`Kernel::migrate`] may take a
//!   task that is still physically executing on another core; the books say
//!   it is Ready on its new core at once. The firmware must not resume it
//!   there before its old core has saved its registers.
//!
//! Priorities follow TOPPERS: 0 is the highest. Queues of waiting tasks are
//! FIFO (TA_TFIFO); activation and wakeup requests queue at most one
//! (TMAX_ACTCNT = TMAX_WUPCNT = 1).
#![no_std]

#[cfg(test)]
extern crate std;

pub mod app;
mod config;
mod handoff;
mod kernel;
pub mod placement;
mod queue;
mod sync;
#[cfg(test)]
mod testkit;
mod time;
mod types;

pub use config::{
    Config, ConfigError, CyclicConfig, DataQueueConfig, FlagConfig, SemaphoreConfig, TaskConfig,
};
pub use kernel::Kernel;
pub use time::may_leave;
pub use types::{
    Caller, Done, Error, FlagMode, TaskState, TaskStats, Timeout, WaitReason, WaitResult,
};

/// Absolute time in generic-counter ticks; durations are Ticks too.
pub type Ticks = u64;

/// Most cores the kernel schedules: Tandem's one limit (`tandem_abi`).
pub use tandem_abi::MAX_CORES;
const _: () = assert!(MAX_CORES <= 8, "dispatch requests are a u8 mask of cores");
/// Most tasks in a configuration.
pub const MAX_TASKS: usize = 32;
/// Number of task priorities; 0 is the highest, `PRIORITIES - 1` the lowest.
pub const PRIORITIES: usize = 16;
/// Most semaphores in a configuration.
pub const MAX_SEMAPHORES: usize = 16;
/// Most event flags in a configuration.
pub const MAX_FLAGS: usize = 16;
/// Most data queues in a configuration.
pub const MAX_DATAQUEUES: usize = 8;
/// Largest capacity of one data queue (storage is allocated statically).
pub const DATAQUEUE_CAPACITY: usize = 16;
/// Most cyclic handlers in a configuration.
pub const MAX_CYCLICS: usize = 16;

/// A task: index into [`Config::tasks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskId(pub u8);

/// A semaphore: index into [`Config::semaphores`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemaphoreId(pub u8);

/// An event flag: index into [`Config::flags`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagId(pub u8);

/// A data queue: index into [`Config::dataqueues`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataQueueId(pub u8);

/// A cyclic handler: index into [`Config::cyclics`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclicId(pub u8);
