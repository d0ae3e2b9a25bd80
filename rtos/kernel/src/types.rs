//! The vocabulary of the kernel's services: errors, callers, timeouts, what a
//! blocking call returns, and task states.

use crate::{DataQueueId, FlagId, SemaphoreId, Ticks};

/// Why a service refused, with the TOPPERS/µITRON name of each case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// E_ID: no such object (an ID past the end of its configuration slice).
    Id,
    /// E_PAR: a bad parameter, e.g. a core that does not exist or a flag
    /// pattern of 0.
    Parameter,
    /// E_CTX: a blocking call from a handler, or a call that needs a task
    /// made by a task that is not the one running on its core.
    Context,
    /// E_OBJ: the object is in the wrong state, e.g. waking up a Dormant task
    /// or releasing a task that is not waiting.
    Object,
    /// E_QOVR: a queued request count (activation, wakeup, semaphore) is
    /// already at its maximum.
    QueueOverflow,
    /// E_TMOUT: the timeout expired, or a polling call would have blocked.
    Timeout,
    /// E_RLWAI: the wait was ended by [`crate::Kernel::release_wait`].
    Released,
}

impl Error {
    /// The µITRON 4.0 / TOPPERS error code, for a firmware that returns
    /// TOPPERS-compatible codes to its tasks.
    pub const fn code(self) -> i32 {
        match self {
            Error::Parameter => -17,
            Error::Id => -18,
            Error::Context => -25,
            Error::Object => -41,
            Error::QueueOverflow => -43,
            Error::Released => -49,
            Error::Timeout => -50,
        }
    }
}

/// Who makes a call that both tasks and handlers may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A task, which must be the one running on its core.
    Task(crate::TaskId),
    /// An interrupt or cyclic handler running on this core; it may not block.
    Handler(u8),
}

/// How long a blocking service may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// Never wait: fail with [`Error::Timeout`] instead (TMO_POL).
    Poll,
    /// Wait until released (TMO_FEVR).
    Forever,
    /// Wait this many ticks at most. `After(0)` is `Poll`, as TMO_POL is 0
    /// in TOPPERS.
    After(Ticks),
}

impl Timeout {
    /// `After(0)` is polling.
    pub(crate) fn normalized(self) -> Timeout {
        match self {
            Timeout::After(0) => Timeout::Poll,
            t => t,
        }
    }

    /// The deadline of a wait starting at `now`: `None` for Forever, and
    /// `Err(Timeout)` when the call must not block at all.
    pub(crate) fn deadline(self, now: Ticks) -> Result<Option<Ticks>, Error> {
        match self.normalized() {
            Timeout::Poll => Err(Error::Timeout),
            Timeout::Forever => Ok(None),
            Timeout::After(d) => Ok(Some(now.saturating_add(d))),
        }
    }
}

/// What a blocking service did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// The call completed at once with this result.
    Now(WaitResult),
    /// The caller is now Waiting and no longer Running: the firmware must
    /// dispatch another task, and later fetch the call's outcome with
    /// [`crate::Kernel::take_wait_result`].
    Blocked,
}

/// The successful outcome of a (possibly blocking) call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// Done, nothing to return.
    Ok,
    /// The value received from a data queue.
    Value(usize),
    /// The flag pattern that satisfied the wait, as it was at release time.
    Flags(u32),
}

/// How a flag wait's pattern is matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagMode {
    /// Every bit of the pattern set (TWF_ANDW).
    And,
    /// Any bit of the pattern set (TWF_ORW).
    Or,
}

impl FlagMode {
    /// Does `value` satisfy a wait for `pattern`?
    pub(crate) fn holds(self, value: u32, pattern: u32) -> bool {
        match self {
            FlagMode::And => value & pattern == pattern,
            FlagMode::Or => value & pattern != 0,
        }
    }
}

/// What a Waiting task waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// A wakeup (slp_tsk / tslp_tsk).
    Sleep,
    /// The end of a delay (dly_tsk).
    Delay,
    /// A semaphore resource.
    Semaphore(SemaphoreId),
    /// An event flag condition.
    Flag {
        /// The flag.
        flag: FlagId,
        /// The bits waited for, never 0.
        pattern: u32,
        /// All of them or any of them.
        mode: FlagMode,
    },
    /// A value from a data queue.
    Receive(DataQueueId),
    /// A value handed over by [`crate::Kernel::hand_off`] (sys_chg).
    HandOff,
    /// Room in a full data queue.
    Send {
        /// The queue.
        queue: DataQueueId,
        /// The value that will be sent.
        value: usize,
    },
}

/// A task's state (TOPPERS: the suspended states are not supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Not started, or exited.
    Dormant,
    /// In its core's ready queue.
    Ready,
    /// Running on its core.
    Running,
    /// Blocked in a service.
    Waiting(WaitReason),
}

/// Per-task counters, for overrun monitoring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// Activation requests accepted (the task started, or one was queued).
    pub activations: u64,
    /// `activate` calls while the task was not Dormant: the previous job had
    /// not finished. Includes the rejected ones.
    pub overruns: u64,
    /// `activate` calls refused with [`Error::QueueOverflow`] because one
    /// activation was already queued: those jobs are lost.
    pub rejected: u64,
}
