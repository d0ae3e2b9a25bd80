//! The kernel object: task control blocks, per-core ready queues and the
//! dispatcher, and the task-management services (activate, exit, sleep and
//! wakeup, delay, release, migrate, yield). Semaphores, event flags and data
//! queues are in `sync.rs`; cyclic handlers and the passing of time in
//! `time.rs`.

use crate::config::{Config, ConfigError};
use crate::queue::{Links, NO_LINKS, Queue};
use crate::sync::{DataQueue, Flag, Semaphore};
use crate::time::Cyclic;
use crate::types::{Done, Error, TaskState, TaskStats, Timeout, WaitReason, WaitResult};
use crate::{
    MAX_CORES, MAX_CYCLICS, MAX_DATAQUEUES, MAX_FLAGS, MAX_SEMAPHORES, MAX_TASKS, PRIORITIES,
    TaskId, Ticks,
};

/// Activation requests a task can have queued (TOPPERS TMAX_ACTCNT).
const TMAX_ACTCNT: u8 = 1;
/// Wakeup requests a task can have queued (TOPPERS TMAX_WUPCNT).
const TMAX_WUPCNT: u8 = 1;

/// A task control block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tcb {
    pub(crate) state: TaskState,
    /// The core it is assigned to: where it is queued, runs, and where its
    /// timeout is counted.
    pub(crate) core: u8,
    /// Base priority (there is no chg_pri, so also the current one).
    pub(crate) priority: u8,
    /// Queued activation requests, at most [`TMAX_ACTCNT`].
    pub(crate) activations: u8,
    /// Queued wakeup requests, at most [`TMAX_WUPCNT`].
    pub(crate) wakeups: u8,
    /// When a Waiting task times out (`None`: not Waiting, or forever).
    pub(crate) deadline: Option<Ticks>,
    /// Outcome of the last blocking call, set when the task is released and
    /// taken by the firmware when the task resumes.
    pub(crate) result: Option<Result<WaitResult, Error>>,
    pub(crate) stats: TaskStats,
}

impl Tcb {
    const DORMANT: Tcb = Tcb {
        state: TaskState::Dormant,
        core: 0,
        priority: 0,
        activations: 0,
        wakeups: 0,
        deadline: None,
        result: None,
        stats: TaskStats {
            activations: 0,
            overruns: 0,
            rejected: 0,
        },
    };
}

/// The whole kernel state. The firmware keeps one behind a global lock.
///
/// Invariants (checked by the tests after every random call):
/// `running[c] == Some(t)` exactly when `t` is Running and assigned to `c`;
/// a Ready task is in the ready queue of its core and priority, and the
/// core's bitmap has that priority's bit set exactly when the queue is not
/// empty; a task waiting on an object is in that object's wait queue; only
/// Waiting tasks have a deadline.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub(crate) cores: usize,
    pub(crate) task_count: usize,
    pub(crate) tasks: [Tcb; MAX_TASKS],
    /// Queue links of all tasks, shared by ready and wait queues.
    pub(crate) links: Links,
    pub(crate) ready: [[Queue; PRIORITIES]; MAX_CORES],
    /// Per core, bit `p` set when priority `p`'s ready queue is not empty.
    pub(crate) ready_map: [u16; MAX_CORES],
    pub(crate) running: [Option<TaskId>; MAX_CORES],
    /// Dispatch requests since the last `take_dispatch_requests`, bit per core.
    pub(crate) requests: u8,
    pub(crate) semaphore_count: usize,
    pub(crate) semaphores: [Semaphore; MAX_SEMAPHORES],
    pub(crate) flag_count: usize,
    pub(crate) flags: [Flag; MAX_FLAGS],
    pub(crate) dataqueue_count: usize,
    pub(crate) dataqueues: [DataQueue; MAX_DATAQUEUES],
    pub(crate) cyclic_count: usize,
    pub(crate) cyclics: [Cyclic; MAX_CYCLICS],
}

impl Kernel {
    /// Builds the kernel for `config` at time `now`: autostart tasks are Ready
    /// (queued in configuration order, with a dispatch request for their
    /// cores), started cyclic handlers are first due at `now + phase`.
    pub fn new(config: &Config, now: Ticks) -> Result<Kernel, ConfigError> {
        config.check()?;
        let mut k = Kernel {
            cores: config.cores,
            task_count: config.tasks.len(),
            tasks: [Tcb::DORMANT; MAX_TASKS],
            links: NO_LINKS,
            ready: [[Queue::EMPTY; PRIORITIES]; MAX_CORES],
            ready_map: [0; MAX_CORES],
            running: [None; MAX_CORES],
            requests: 0,
            semaphore_count: config.semaphores.len(),
            semaphores: [Semaphore::EMPTY; MAX_SEMAPHORES],
            flag_count: config.flags.len(),
            flags: [Flag::EMPTY; MAX_FLAGS],
            dataqueue_count: config.dataqueues.len(),
            dataqueues: [DataQueue::EMPTY; MAX_DATAQUEUES],
            cyclic_count: config.cyclics.len(),
            cyclics: [Cyclic::EMPTY; MAX_CYCLICS],
        };
        for (tcb, c) in k.tasks.iter_mut().zip(config.tasks) {
            tcb.core = c.core;
            tcb.priority = c.priority;
        }
        for (s, c) in k.semaphores.iter_mut().zip(config.semaphores) {
            *s = Semaphore::new(c);
        }
        for (f, c) in k.flags.iter_mut().zip(config.flags) {
            *f = Flag::new(c);
        }
        for (q, c) in k.dataqueues.iter_mut().zip(config.dataqueues) {
            *q = DataQueue::new(c);
        }
        for (y, c) in k.cyclics.iter_mut().zip(config.cyclics) {
            *y = Cyclic::new(c, now);
        }
        for (i, c) in config.tasks.iter().enumerate() {
            if c.autostart {
                k.start(i);
                k.tasks[i].stats.activations += 1;
            }
        }
        Ok(k)
    }

    // ----- Queries -----

    /// The core `t` is assigned to.
    pub fn task_core(&self, t: TaskId) -> Result<u8, Error> {
        Ok(self.tasks[self.task(t)?].core)
    }

    /// The state of `t`.
    pub fn state(&self, t: TaskId) -> Result<TaskState, Error> {
        Ok(self.tasks[self.task(t)?].state)
    }

    /// The task Running on `core`; `None` when idle or no such core.
    pub fn running(&self, core: u8) -> Option<TaskId> {
        self.running.get(core as usize).copied().flatten()
    }

    /// Activation counters of `t`.
    pub fn stats(&self, t: TaskId) -> Result<TaskStats, Error> {
        Ok(self.tasks[self.task(t)?].stats)
    }

    /// The outcome of the blocking call `t` made when it returned
    /// [`Done::Blocked`], once `t` has been released; the firmware returns it
    /// to the task when the task runs again. Taken once: [`Error::Object`] if
    /// there is none (the task was not released from a wait since).
    pub fn take_wait_result(&mut self, t: TaskId) -> Result<WaitResult, Error> {
        let i = self.task(t)?;
        self.tasks[i].result.take().ok_or(Error::Object)?
    }

    // ----- Scheduling -----

    /// Makes the highest-priority Ready task of `core` Running if it strictly
    /// outranks the one running there; a preempted task goes back to the
    /// head of its priority's queue (it keeps its turn, as in TOPPERS).
    /// Returns the task now Running on `core` (`None`: idle, or no such core).
    pub fn dispatch(&mut self, core: u8) -> Option<TaskId> {
        let c = core as usize;
        if c >= self.cores || self.ready_map[c] == 0 {
            return self.running(core);
        }
        let top = self.ready_map[c].trailing_zeros() as usize;
        if let Some(r) = self.running[c]
            && top >= self.tasks[r.0 as usize].priority as usize
        {
            return self.running(core);
        }
        let Some(t) = self.ready[c][top].pop_front(&mut self.links) else {
            // Unreachable: the bitmap only names non-empty queues.
            return self.running(core);
        };
        if self.ready[c][top].is_empty() {
            self.ready_map[c] &= !(1 << top);
        }
        if let Some(r) = self.running[c] {
            let (r, priority) = (r.0 as usize, self.tasks[r.0 as usize].priority as usize);
            self.tasks[r].state = TaskState::Ready;
            self.ready[c][priority].push_front(&mut self.links, r);
            self.ready_map[c] |= 1 << priority;
        }
        self.tasks[t].state = TaskState::Running;
        self.running[c] = Some(TaskId(t as u8));
        self.running[c]
    }

    /// Gives up the processor (like rot_rdq on the caller's own priority):
    /// the running `caller` goes to the tail of its priority's ready queue
    /// and [`Kernel::dispatch`] picks the next task, possibly `caller` again.
    pub fn yield_task(&mut self, caller: TaskId) -> Result<(), Error> {
        let i = self.running_caller(caller)?;
        self.stop_running(i);
        self.make_ready(i);
        Ok(())
    }

    /// Bitmask of the cores whose running task may have to change, or whose
    /// next timer event may have moved earlier, since the last call: the
    /// firmware dispatches on its own core and interrupts the others. Set by
    /// every service that readies, blocks, migrates or exits a task on a
    /// core, or starts a cyclic handler there.
    pub fn take_dispatch_requests(&mut self) -> u8 {
        core::mem::take(&mut self.requests)
    }

    // ----- Task services -----

    /// act_tsk: a Dormant task becomes Ready on its core; otherwise one
    /// activation is queued and counted as an overrun, and with one already
    /// queued the request is refused with [`Error::QueueOverflow`].
    pub fn activate(&mut self, t: TaskId) -> Result<(), Error> {
        let i = self.task(t)?;
        let tcb = &mut self.tasks[i];
        if tcb.state == TaskState::Dormant {
            tcb.stats.activations += 1;
            self.start(i);
            return Ok(());
        }
        tcb.stats.overruns += 1;
        if tcb.activations >= TMAX_ACTCNT {
            tcb.stats.rejected += 1;
            return Err(Error::QueueOverflow);
        }
        tcb.activations += 1;
        tcb.stats.activations += 1;
        Ok(())
    }

    /// ext_tsk: the running `caller` ends. With an activation queued it is
    /// restarted at once (Ready, tail of its priority's queue), else it is
    /// Dormant. Either way its wakeup requests are cleared, as TOPPERS does
    /// when a task starts.
    pub fn exit(&mut self, caller: TaskId) -> Result<(), Error> {
        let i = self.running_caller(caller)?;
        self.stop_running(i);
        self.tasks[i].state = TaskState::Dormant;
        self.tasks[i].wakeups = 0;
        if self.tasks[i].activations > 0 {
            self.tasks[i].activations -= 1;
            self.start(i);
        }
        Ok(())
    }

    /// slp_tsk / tslp_tsk: consumes a queued wakeup if there is one
    /// (`Now(Ok)`), else waits for [`Kernel::wakeup`].
    pub fn sleep(&mut self, caller: TaskId, timeout: Timeout, now: Ticks) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        if self.tasks[i].wakeups > 0 {
            self.tasks[i].wakeups -= 1;
            return Ok(Done::Now(WaitResult::Ok));
        }
        let deadline = timeout.deadline(now)?;
        Ok(self.block(i, WaitReason::Sleep, deadline))
    }

    /// wup_tsk: releases `t` if it sleeps, else queues one wakeup
    /// ([`Error::QueueOverflow`] if one is queued already). A Dormant task
    /// cannot be woken ([`Error::Object`]).
    pub fn wakeup(&mut self, t: TaskId) -> Result<(), Error> {
        let i = self.task(t)?;
        match self.tasks[i].state {
            TaskState::Dormant => Err(Error::Object),
            TaskState::Waiting(WaitReason::Sleep) => {
                self.release(i, Ok(WaitResult::Ok));
                Ok(())
            }
            _ if self.tasks[i].wakeups >= TMAX_WUPCNT => Err(Error::QueueOverflow),
            _ => {
                self.tasks[i].wakeups += 1;
                Ok(())
            }
        }
    }

    /// dly_tsk: the running `caller` waits `duration` ticks and is released
    /// with `Ok` by the first [`Kernel::advance`] at or after
    /// `now + duration`. Always blocks, even for 0.
    pub fn delay(&mut self, caller: TaskId, duration: Ticks, now: Ticks) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        let deadline = now.saturating_add(duration);
        Ok(self.block(i, WaitReason::Delay, Some(deadline)))
    }

    /// rel_wai: forces a Waiting task out of its wait, which then fails with
    /// [`Error::Released`]. [`Error::Object`] if `t` is not waiting.
    pub fn release_wait(&mut self, t: TaskId) -> Result<(), Error> {
        let i = self.task(t)?;
        if !matches!(self.tasks[i].state, TaskState::Waiting(_)) {
            return Err(Error::Object);
        }
        self.release(i, Err(Error::Released));
        Ok(())
    }

    /// mig_tsk: assigns `t` to `core`. A Ready task moves to the tail of its
    /// priority's queue there; a Running task (itself, or one running on any
    /// core) stops running and becomes Ready there; a Waiting or Dormant task
    /// just changes core and will be readied there (its timeout moves with
    /// it). Migrating to the current core changes nothing.
    pub fn migrate(&mut self, t: TaskId, core: u8) -> Result<(), Error> {
        let i = self.task(t)?;
        if core as usize >= self.cores {
            return Err(Error::Parameter);
        }
        if self.tasks[i].core == core {
            return Ok(());
        }
        match self.tasks[i].state {
            TaskState::Ready => {
                self.unready(i);
                self.tasks[i].core = core;
                self.make_ready(i);
            }
            TaskState::Running => {
                self.stop_running(i);
                self.tasks[i].core = core;
                self.make_ready(i);
            }
            TaskState::Waiting(_) => {
                self.tasks[i].core = core;
                if self.tasks[i].deadline.is_some() {
                    // Its timeout is now counted by that core's timer.
                    self.request(core);
                }
            }
            TaskState::Dormant => self.tasks[i].core = core,
        }
        Ok(())
    }

    // ----- Helpers shared with sync.rs and time.rs -----

    /// The index of `t`, or [`Error::Id`].
    pub(crate) fn task(&self, t: TaskId) -> Result<usize, Error> {
        let i = t.0 as usize;
        if i < self.task_count {
            Ok(i)
        } else {
            Err(Error::Id)
        }
    }

    /// The index of `t`, which must be the task Running on its core: only
    /// that task can be making a system call.
    pub(crate) fn running_caller(&self, t: TaskId) -> Result<usize, Error> {
        let i = self.task(t)?;
        if self.tasks[i].state == TaskState::Running {
            Ok(i)
        } else {
            Err(Error::Context)
        }
    }

    /// Asks for a dispatch (and timer update) on `core`.
    pub(crate) fn request(&mut self, core: u8) {
        self.requests |= 1 << core;
    }

    /// Starts a Dormant task (TOPPERS make_active): fresh counters, Ready.
    fn start(&mut self, i: usize) {
        let tcb = &mut self.tasks[i];
        tcb.wakeups = 0;
        tcb.deadline = None;
        tcb.result = None;
        self.make_ready(i);
    }

    /// Puts `i` at the tail of its core's ready queue for its priority.
    fn make_ready(&mut self, i: usize) {
        let (c, p) = (self.tasks[i].core, self.tasks[i].priority as usize);
        self.tasks[i].state = TaskState::Ready;
        self.ready[c as usize][p].push_back(&mut self.links, i);
        self.ready_map[c as usize] |= 1 << p;
        self.request(c);
    }

    /// Takes the Ready task `i` out of its ready queue.
    pub(crate) fn unready(&mut self, i: usize) {
        let (c, p) = (self.tasks[i].core as usize, self.tasks[i].priority as usize);
        self.ready[c][p].remove(&mut self.links, i);
        if self.ready[c][p].is_empty() {
            self.ready_map[c] &= !(1 << p);
        }
    }

    /// The Running task `i` leaves its core, which has to dispatch.
    pub(crate) fn stop_running(&mut self, i: usize) {
        let c = self.tasks[i].core;
        self.running[c as usize] = None;
        self.request(c);
    }

    /// The Running task `i` starts waiting for `reason`, until `deadline` if
    /// any, and joins the wait queue of the object it waits on.
    pub(crate) fn block(&mut self, i: usize, reason: WaitReason, deadline: Option<Ticks>) -> Done {
        self.stop_running(i);
        let tcb = &mut self.tasks[i];
        tcb.state = TaskState::Waiting(reason);
        tcb.deadline = deadline;
        tcb.result = None;
        self.with_wait_queue(reason, |q, links| q.push_back(links, i));
        Done::Blocked
    }

    /// Ends the wait of Waiting task `i` with `result`: out of its wait queue,
    /// timeout cancelled, Ready at the tail of its priority on its core.
    pub(crate) fn release(&mut self, i: usize, result: Result<WaitResult, Error>) {
        let TaskState::Waiting(reason) = self.tasks[i].state else {
            return;
        };
        self.with_wait_queue(reason, |q, links| {
            q.remove(links, i);
        });
        self.tasks[i].deadline = None;
        self.tasks[i].result = Some(result);
        self.make_ready(i);
    }

    /// Runs `f` on the wait queue of the object a wait for `reason` is on,
    /// if there is one.
    fn with_wait_queue(&mut self, reason: WaitReason, f: impl FnOnce(&mut Queue, &mut Links)) {
        let q = match reason {
            WaitReason::Sleep | WaitReason::Delay | WaitReason::HandOff => return,
            WaitReason::Semaphore(s) => &mut self.semaphores[s.0 as usize].waiters,
            WaitReason::Flag { flag, .. } => &mut self.flags[flag.0 as usize].waiters,
            WaitReason::Receive(q) => &mut self.dataqueues[q.0 as usize].receivers,
            WaitReason::Send { queue, .. } => &mut self.dataqueues[queue.0 as usize].senders,
        };
        f(q, &mut self.links);
    }
}

#[cfg(test)]
impl Kernel {
    /// Panics unless every invariant documented on [`Kernel`] holds.
    pub(crate) fn check_invariants(&self) {
        let n = self.task_count;
        let mut queued = [0u32; MAX_TASKS];
        for c in 0..MAX_CORES {
            if c >= self.cores {
                assert_eq!(self.running[c], None);
                assert_eq!(self.ready_map[c], 0);
            }
            if let Some(t) = self.running[c] {
                let tcb = &self.tasks[t.0 as usize];
                assert_eq!(tcb.state, TaskState::Running, "{t:?}");
                assert_eq!(tcb.core as usize, c, "{t:?}");
            }
            for p in 0..PRIORITIES {
                let q = &self.ready[c][p];
                assert_eq!(self.ready_map[c] & (1 << p) != 0, !q.is_empty());
                for t in q.iter(&self.links) {
                    assert!(t < n);
                    assert_eq!(self.tasks[t].state, TaskState::Ready, "task {t}");
                    assert_eq!(self.tasks[t].core as usize, c);
                    assert_eq!(self.tasks[t].priority as usize, p);
                    queued[t] += 1;
                }
            }
        }
        for s in &self.semaphores[..self.semaphore_count] {
            assert!(s.count <= s.max);
            assert!(s.waiters.is_empty() || s.count == 0);
            for t in s.waiters.iter(&self.links) {
                assert!(matches!(
                    self.tasks[t].state,
                    TaskState::Waiting(WaitReason::Semaphore(_))
                ));
                queued[t] += 1;
            }
        }
        for (fi, f) in self.flags[..self.flag_count].iter().enumerate() {
            for t in f.waiters.iter(&self.links) {
                let TaskState::Waiting(WaitReason::Flag {
                    flag,
                    pattern,
                    mode,
                }) = self.tasks[t].state
                else {
                    panic!("task {t} on a flag queue is {:?}", self.tasks[t].state);
                };
                assert_eq!(flag.0 as usize, fi);
                assert!(!mode.holds(f.value, pattern), "task {t} should be released");
                queued[t] += 1;
            }
        }
        for (qi, q) in self.dataqueues[..self.dataqueue_count].iter().enumerate() {
            assert!(q.senders.is_empty() || q.len == q.capacity);
            assert!(q.receivers.is_empty() || q.len == 0);
            for t in q.senders.iter(&self.links) {
                assert!(matches!(
                    self.tasks[t].state,
                    TaskState::Waiting(WaitReason::Send { queue, .. }) if queue.0 as usize == qi
                ));
                queued[t] += 1;
            }
            for t in q.receivers.iter(&self.links) {
                assert_eq!(
                    self.tasks[t].state,
                    TaskState::Waiting(WaitReason::Receive(crate::DataQueueId(qi as u8)))
                );
                queued[t] += 1;
            }
        }
        for (i, tcb) in self.tasks[..n].iter().enumerate() {
            let in_queue = match tcb.state {
                TaskState::Ready => true,
                TaskState::Waiting(WaitReason::Sleep | WaitReason::Delay | WaitReason::HandOff) => {
                    false
                }
                TaskState::Waiting(_) => true,
                TaskState::Dormant => false,
                TaskState::Running => {
                    assert_eq!(self.running[tcb.core as usize], Some(TaskId(i as u8)));
                    false
                }
            };
            assert_eq!(
                queued[i],
                u32::from(in_queue),
                "task {i} is {:?}",
                tcb.state
            );
            if tcb.deadline.is_some() {
                assert!(matches!(tcb.state, TaskState::Waiting(_)), "task {i}");
            }
            if matches!(tcb.state, TaskState::Waiting(WaitReason::Delay)) {
                assert!(tcb.deadline.is_some());
            }
            assert!(tcb.activations <= TMAX_ACTCNT && tcb.wakeups <= TMAX_WUPCNT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use crate::{Caller, FlagMode};

    #[test]
    fn new_readies_autostart_tasks_in_config_order() {
        let tasks = [
            TaskConfig {
                autostart: true,
                ..task("late", 0, 3)
            },
            task("off", 0, 3),
            TaskConfig {
                autostart: true,
                ..task("first", 0, 3)
            },
            TaskConfig {
                autostart: true,
                ..task("other", 1, 3)
            },
        ];
        let mut k = kernel_with(&Config {
            tasks: &tasks,
            ..CONFIG
        });
        assert_eq!(k.state(TaskId(1)), Ok(TaskState::Dormant));
        assert_eq!(k.take_dispatch_requests(), 0b11);
        assert_eq!(k.dispatch(0), Some(TaskId(0)));
        k.exit(TaskId(0)).unwrap();
        assert_eq!(k.dispatch(0), Some(TaskId(2)));
        assert_eq!(k.dispatch(1), Some(TaskId(3)));
        assert_eq!(k.stats(TaskId(0)).unwrap().activations, 1);
    }

    #[test]
    fn nothing_runs_until_dispatch() {
        let mut k = kernel();
        assert_eq!(k.take_dispatch_requests(), 0);
        assert_eq!(k.dispatch(0), None);
        k.activate(B).unwrap();
        assert_eq!(k.running(0), None);
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.state(B), Ok(TaskState::Running));
        assert_eq!(k.running(0), Some(B));
        assert_eq!(k.running(1), None);
        // No such core: idle, and harmless.
        assert_eq!(k.running(7), None);
        assert_eq!(k.dispatch(3), None);
        assert_eq!(k.dispatch(200), None);
        k.check_invariants();
    }

    #[test]
    fn highest_priority_ready_task_runs_first() {
        let mut k = kernel();
        for t in [D, B, A] {
            k.activate(t).unwrap();
        }
        assert_eq!(k.dispatch(0), Some(A));
        k.exit(A).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        k.exit(B).unwrap();
        assert_eq!(k.dispatch(0), Some(D));
        k.exit(D).unwrap();
        assert_eq!(k.dispatch(0), None);
        k.check_invariants();
    }

    #[test]
    fn fifo_within_a_priority() {
        let mut k = kernel();
        k.activate(C).unwrap();
        k.activate(B).unwrap();
        assert_eq!(k.dispatch(0), Some(C));
        // Same priority readied while C runs: no preemption.
        k.exit(C).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        k.activate(C).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
    }

    #[test]
    fn preemption_returns_the_preempted_task_to_the_head() {
        let mut k = kernel();
        run(&mut k, B);
        k.activate(C).unwrap(); // same priority as B, queued behind it
        k.take_dispatch_requests();
        k.activate(A).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b001);
        assert_eq!(k.running(0), Some(B), "only dispatch switches");
        assert_eq!(k.dispatch(0), Some(A));
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        k.exit(A).unwrap();
        // B was preempted, so it keeps its turn ahead of C.
        assert_eq!(k.dispatch(0), Some(B));
        k.exit(B).unwrap();
        assert_eq!(k.dispatch(0), Some(C));
        k.check_invariants();
    }

    #[test]
    fn yield_rotates_within_a_priority() {
        let mut k = kernel();
        run(&mut k, B);
        k.activate(C).unwrap();
        k.activate(D).unwrap();
        k.take_dispatch_requests();
        k.yield_task(B).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b001);
        assert_eq!(k.running(0), None);
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.dispatch(0), Some(C));
        k.yield_task(C).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        k.exit(B).unwrap();
        assert_eq!(k.dispatch(0), Some(C));
        k.exit(C).unwrap();
        // Alone at its priority: yielding gets it straight back.
        assert_eq!(k.dispatch(0), Some(D));
        k.yield_task(D).unwrap();
        assert_eq!(k.dispatch(0), Some(D));
        // Only the running task can yield.
        k.activate(B).unwrap();
        assert_eq!(k.yield_task(B), Err(Error::Context));
        assert_eq!(k.yield_task(A), Err(Error::Context));
        k.check_invariants();
    }

    #[test]
    fn dispatch_requests_name_exactly_the_right_cores() {
        let mut k = kernel();
        assert_eq!(k.take_dispatch_requests(), 0);
        // Cross-core: activating a task of core 1 asks core 1 only.
        k.activate(E).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b010);
        assert_eq!(k.take_dispatch_requests(), 0, "cleared by the call");
        k.activate(A).unwrap();
        k.activate(F).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b011);
        assert_eq!(k.dispatch(0), Some(A));
        assert_eq!(k.dispatch(1), Some(E));
        // Dispatching itself does not ask anything.
        assert_eq!(k.take_dispatch_requests(), 0);
        // A queued activation readies nothing.
        k.activate(A).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0);
        // Blocking on core 1.
        assert_eq!(k.sleep(E, Timeout::Forever, 0), Ok(Done::Blocked));
        assert_eq!(k.take_dispatch_requests(), 0b010);
        // Waking a core-1 task from core 0.
        k.wakeup(E).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b010);
        // A queued wakeup readies nothing.
        k.wakeup(A).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0);
        // Exiting (and restarting from the queued activation) on core 0.
        k.exit(A).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b001);
        // A semaphore hand-off readies the waiter's core only.
        assert_eq!(k.dispatch(1), Some(E));
        assert_eq!(
            k.wait_semaphore(E, S0, Timeout::Forever, 0),
            Ok(Done::Blocked)
        );
        assert_eq!(k.take_dispatch_requests(), 0b010);
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b010);
        // Counting up readies nothing.
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0);
        // Migrating a running task: both cores.
        assert_eq!(k.dispatch(1), Some(E));
        k.migrate(E, 2).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b110);
        // Migrating a Ready task: the target only.
        k.migrate(E, 0).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b001);
        // Migrating a Dormant task, or to the same core: nobody.
        k.migrate(D, 2).unwrap();
        k.migrate(E, 0).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0);
        // Errors ask nothing.
        assert!(k.activate(TaskId(99)).is_err());
        assert!(k.wakeup(D).is_err());
        assert_eq!(k.take_dispatch_requests(), 0);
        k.check_invariants();
    }

    #[test]
    fn activations_queue_once_and_count_overruns() {
        let mut k = kernel();
        run(&mut k, B);
        assert_eq!(k.stats(B).unwrap(), stats(1, 0, 0));
        assert_eq!(k.activate(B), Ok(()));
        assert_eq!(k.stats(B).unwrap(), stats(2, 1, 0));
        assert_eq!(k.activate(B), Err(Error::QueueOverflow));
        assert_eq!(k.activate(B), Err(Error::QueueOverflow));
        assert_eq!(k.stats(B).unwrap(), stats(2, 3, 2));
        // The queued activation restarts B straight away, behind C.
        k.activate(C).unwrap();
        k.exit(B).unwrap();
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.dispatch(0), Some(C));
        k.exit(C).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        // Nothing queued any more: the next exit is final.
        k.exit(B).unwrap();
        assert_eq!(k.state(B), Ok(TaskState::Dormant));
        assert_eq!(k.dispatch(0), None);
        // A Waiting task can queue an activation too.
        run(&mut k, B);
        k.sleep(B, Timeout::Forever, 0).unwrap();
        assert_eq!(k.activate(B), Ok(()));
        assert_eq!(k.stats(B).unwrap(), stats(4, 4, 2));
        k.check_invariants();
    }

    #[test]
    fn exit_clears_queued_wakeups() {
        let mut k = kernel();
        run(&mut k, B);
        k.wakeup(B).unwrap();
        k.activate(B).unwrap();
        k.exit(B).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.sleep(B, Timeout::Poll, 0), Err(Error::Timeout));
        // Exiting needs the task to be running.
        k.activate(C).unwrap();
        assert_eq!(k.exit(C), Err(Error::Context));
        assert_eq!(k.exit(D), Err(Error::Context));
    }

    #[test]
    fn sleep_and_wakeup() {
        let mut k = kernel();
        assert_eq!(k.wakeup(B), Err(Error::Object), "Dormant");
        run(&mut k, B);
        // A queued wakeup is consumed at once.
        assert_eq!(k.wakeup(B), Ok(()));
        assert_eq!(k.wakeup(B), Err(Error::QueueOverflow));
        assert_eq!(
            k.sleep(B, Timeout::Forever, 0),
            Ok(Done::Now(WaitResult::Ok))
        );
        // Now it really sleeps.
        assert_eq!(k.sleep(B, Timeout::Forever, 0), Ok(Done::Blocked));
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Sleep)));
        assert_eq!(k.running(0), None);
        assert_eq!(k.take_wait_result(B), Err(Error::Object), "not released");
        assert_eq!(k.wakeup(B), Ok(()));
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Ok));
        assert_eq!(k.take_wait_result(B), Err(Error::Object), "taken once");
        // Waiting for something else: a wakeup is queued, not delivered.
        assert_eq!(
            k.wait_semaphore(B, S0, Timeout::Forever, 0),
            Ok(Done::Blocked)
        );
        assert_eq!(k.wakeup(B), Ok(()));
        assert_eq!(
            k.state(B),
            Ok(TaskState::Waiting(WaitReason::Semaphore(S0)))
        );
        k.check_invariants();
    }

    #[test]
    fn sleep_with_poll_forever_and_after() {
        let mut k = kernel();
        run(&mut k, B);
        assert_eq!(k.sleep(B, Timeout::Poll, 0), Err(Error::Timeout));
        assert_eq!(k.sleep(B, Timeout::After(0), 0), Err(Error::Timeout));
        assert_eq!(k.state(B), Ok(TaskState::Running));
        // After: times out at exactly now + 50.
        assert_eq!(k.sleep(B, Timeout::After(50), 100), Ok(Done::Blocked));
        assert_eq!(k.next_event(0), Some(150));
        advance(&mut k, 0, 149);
        assert!(matches!(k.state(B), Ok(TaskState::Waiting(_))));
        advance(&mut k, 0, 150);
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.next_event(0), None);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
        // Woken before the deadline: the timeout is cancelled.
        assert_eq!(k.sleep(B, Timeout::After(10), 200), Ok(Done::Blocked));
        k.wakeup(B).unwrap();
        assert_eq!(k.next_event(0), None);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Ok));
        // Forever: time never releases it.
        assert_eq!(k.sleep(B, Timeout::Forever, 300), Ok(Done::Blocked));
        assert_eq!(k.next_event(0), None);
        advance(&mut k, 0, u64::MAX);
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Sleep)));
        k.check_invariants();
    }

    #[test]
    fn delay_is_released_by_advance_at_its_deadline() {
        let mut k = kernel();
        run(&mut k, B);
        assert_eq!(k.delay(B, 30, 1000), Ok(Done::Blocked));
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Delay)));
        assert_eq!(k.next_event(0), Some(1030));
        assert_eq!(k.next_event(1), None);
        // Another core's advance does not touch it.
        advance(&mut k, 1, 5000);
        advance(&mut k, 0, 1029);
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Delay)));
        k.take_dispatch_requests();
        advance(&mut k, 0, 1030);
        assert_eq!(k.take_dispatch_requests(), 0b001);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Ok));
        // A delay of 0 still blocks, until the next advance.
        assert_eq!(k.delay(B, 0, 2000), Ok(Done::Blocked));
        assert_eq!(k.next_event(0), Some(2000));
        advance(&mut k, 0, 2000);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Ok));
        // Wakeups do not end a delay; release_wait does.
        k.delay(B, 10, 3000).unwrap();
        k.wakeup(B).unwrap();
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Delay)));
        k.release_wait(B).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Released));
        assert_eq!(k.next_event(0), None);
        assert_eq!(k.delay(D, 1, 0), Err(Error::Context));
        k.check_invariants();
    }

    #[test]
    fn timeouts_expire_in_deadline_order() {
        let mut k = kernel();
        run(&mut k, D);
        k.sleep(D, Timeout::After(20), 0).unwrap();
        run(&mut k, C);
        k.sleep(C, Timeout::After(10), 5).unwrap();
        run(&mut k, B);
        k.sleep(B, Timeout::After(20), 0).unwrap();
        assert_eq!(k.next_event(0), Some(15));
        advance(&mut k, 0, 100);
        // B and C have the same priority: C timed out first, so it is first.
        assert_eq!(k.dispatch(0), Some(C));
        k.exit(C).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        k.check_invariants();
    }

    #[test]
    fn release_wait_ends_any_wait() {
        let mut k = kernel();
        run(&mut k, B);
        assert_eq!(k.release_wait(B), Err(Error::Object), "Running");
        assert_eq!(k.release_wait(C), Err(Error::Object), "Dormant");
        k.activate(C).unwrap();
        assert_eq!(k.release_wait(C), Err(Error::Object), "Ready");
        k.wait_semaphore(B, S0, Timeout::After(5), 0).unwrap();
        assert_eq!(k.dispatch(0), Some(C));
        k.wait_semaphore(C, S0, Timeout::Forever, 0).unwrap();
        k.release_wait(B).unwrap();
        assert_eq!(k.next_event(0), None, "timeout cancelled");
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Released));
        // B left the semaphore's queue: the next signal goes to C.
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.state(C), Ok(TaskState::Ready));
        let flag_wait = k.wait_flag(B, F0, 1, FlagMode::Or, Timeout::Forever, 0);
        assert_eq!(flag_wait, Ok(Done::Blocked));
        k.release_wait(B).unwrap();
        assert_eq!(k.take_wait_result(B), Err(Error::Released));
        k.check_invariants();
    }

    #[test]
    fn migrate_a_ready_task() {
        let mut k = kernel();
        run(&mut k, E);
        k.activate(G).unwrap();
        k.activate(F).unwrap();
        k.activate(B).unwrap();
        k.take_dispatch_requests();
        // B is Ready on core 0 and moves to core 1, behind G of its priority.
        k.migrate(B, 1).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b010);
        assert_eq!(k.task_core(B), Ok(1));
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.dispatch(0), None);
        assert_eq!(k.dispatch(1), Some(E));
        k.exit(E).unwrap();
        assert_eq!(k.dispatch(1), Some(G));
        k.exit(G).unwrap();
        assert_eq!(k.dispatch(1), Some(B));
        k.exit(B).unwrap();
        assert_eq!(k.dispatch(1), Some(F));
        k.check_invariants();
    }

    #[test]
    fn migrate_itself_while_running() {
        let mut k = kernel();
        run(&mut k, B);
        run(&mut k, F);
        k.activate(D).unwrap();
        k.take_dispatch_requests();
        k.migrate(B, 1).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b011);
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert_eq!(k.running(0), None);
        assert_eq!(k.dispatch(0), Some(D));
        // B outranks F there.
        assert_eq!(k.dispatch(1), Some(B));
        assert_eq!(k.state(F), Ok(TaskState::Ready));
        k.check_invariants();
    }

    #[test]
    fn migrate_a_task_running_on_another_core() {
        let mut k = kernel();
        run(&mut k, A);
        run(&mut k, E);
        k.take_dispatch_requests();
        // Called from core 0 about E running on core 1.
        k.migrate(E, 0).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b011);
        assert_eq!(k.running(1), None);
        assert_eq!(k.dispatch(1), None);
        // Same priority as A, which keeps running.
        assert_eq!(k.dispatch(0), Some(A));
        k.exit(A).unwrap();
        assert_eq!(k.dispatch(0), Some(E));
        k.check_invariants();
    }

    #[test]
    fn migrate_a_waiting_task() {
        let mut k = kernel();
        run(&mut k, B);
        k.sleep(B, Timeout::After(40), 0).unwrap();
        k.take_dispatch_requests();
        k.migrate(B, 1).unwrap();
        // Its timeout is now core 1's to count.
        assert_eq!(k.take_dispatch_requests(), 0b010);
        assert_eq!(k.next_event(0), None);
        assert_eq!(k.next_event(1), Some(40));
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Sleep)));
        assert_eq!(k.running(0), None);
        k.wakeup(B).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b010);
        assert_eq!(k.dispatch(0), None);
        assert_eq!(k.dispatch(1), Some(B));
        // Without a timeout there is nothing for the new core to do yet.
        k.sleep(B, Timeout::Forever, 0).unwrap();
        k.take_dispatch_requests();
        k.migrate(B, 2).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0);
        k.wakeup(B).unwrap();
        assert_eq!(k.dispatch(2), Some(B));
        k.check_invariants();
    }

    #[test]
    fn migrate_a_dormant_task_and_bad_cores() {
        let mut k = kernel();
        k.migrate(D, 2).unwrap();
        assert_eq!(k.state(D), Ok(TaskState::Dormant));
        assert_eq!(k.task_core(D), Ok(2));
        assert_eq!(k.take_dispatch_requests(), 0);
        k.activate(D).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b100);
        assert_eq!(k.dispatch(2), Some(D));
        assert_eq!(k.migrate(D, 3), Err(Error::Parameter));
        assert_eq!(k.migrate(D, 255), Err(Error::Parameter));
        let bad = TaskId(CONFIG.tasks.len() as u8);
        assert_eq!(k.migrate(bad, 3), Err(Error::Id), "Id first");
        assert_eq!(k.task_core(D), Ok(2));
        k.check_invariants();
    }

    #[test]
    fn services_need_the_caller_to_be_running() {
        let mut k = kernel();
        k.activate(B).unwrap(); // Ready, not Running
        let t = Timeout::Forever;
        assert_eq!(k.sleep(B, t, 0), Err(Error::Context));
        assert_eq!(k.delay(B, 1, 0), Err(Error::Context));
        assert_eq!(k.wait_semaphore(B, S0, t, 0), Err(Error::Context));
        let flag = k.wait_flag(B, F0, 1, FlagMode::And, t, 0);
        assert_eq!(flag, Err(Error::Context));
        let send = k.send_dataqueue(Caller::Task(B), Q0, 1, t, 0);
        assert_eq!(send, Err(Error::Context));
        assert_eq!(k.receive_dataqueue(B, Q0, t, 0), Err(Error::Context));
        assert_eq!(k.yield_task(B), Err(Error::Context));
        assert_eq!(k.exit(B), Err(Error::Context));
        assert_eq!(k.take_dispatch_requests(), 0b001);
        k.check_invariants();
    }

    #[test]
    fn out_of_range_ids_are_refused_by_every_service() {
        let mut k = kernel();
        run(&mut k, B);
        k.take_dispatch_requests();
        let bad_t = TaskId(CONFIG.tasks.len() as u8);
        let bad_s = SemaphoreId(CONFIG.semaphores.len() as u8);
        let bad_f = FlagId(CONFIG.flags.len() as u8);
        let bad_q = DataQueueId(CONFIG.dataqueues.len() as u8);
        let bad_c = CyclicId(CONFIG.cyclics.len() as u8);
        let t = Timeout::Forever;
        assert_eq!(k.activate(bad_t), Err(Error::Id));
        assert_eq!(k.exit(bad_t), Err(Error::Id));
        assert_eq!(k.sleep(bad_t, t, 0), Err(Error::Id));
        assert_eq!(k.wakeup(bad_t), Err(Error::Id));
        assert_eq!(k.delay(bad_t, 1, 0), Err(Error::Id));
        assert_eq!(k.release_wait(bad_t), Err(Error::Id));
        assert_eq!(k.migrate(bad_t, 0), Err(Error::Id));
        assert_eq!(k.yield_task(bad_t), Err(Error::Id));
        assert_eq!(k.task_core(bad_t), Err(Error::Id));
        assert_eq!(k.state(bad_t), Err(Error::Id));
        assert_eq!(k.stats(bad_t), Err(Error::Id));
        assert_eq!(k.take_wait_result(bad_t), Err(Error::Id));
        assert_eq!(k.signal_semaphore(bad_s), Err(Error::Id));
        assert_eq!(k.wait_semaphore(B, bad_s, t, 0), Err(Error::Id));
        assert_eq!(k.wait_semaphore(bad_t, S0, t, 0), Err(Error::Id));
        assert_eq!(k.set_flag(bad_f, 1), Err(Error::Id));
        assert_eq!(k.clear_flag(bad_f, 0), Err(Error::Id));
        assert_eq!(k.wait_flag(B, bad_f, 1, FlagMode::Or, t, 0), Err(Error::Id));
        assert_eq!(
            k.wait_flag(bad_t, F0, 1, FlagMode::Or, t, 0),
            Err(Error::Id)
        );
        assert_eq!(
            k.send_dataqueue(Caller::Task(B), bad_q, 1, t, 0),
            Err(Error::Id)
        );
        let poll = Timeout::Poll;
        assert_eq!(
            k.send_dataqueue(Caller::Handler(0), bad_q, 1, poll, 0),
            Err(Error::Id)
        );
        assert_eq!(
            k.send_dataqueue(Caller::Task(bad_t), Q0, 1, t, 0),
            Err(Error::Id)
        );
        assert_eq!(k.receive_dataqueue(B, bad_q, t, 0), Err(Error::Id));
        assert_eq!(k.receive_dataqueue(bad_t, Q0, t, 0), Err(Error::Id));
        assert_eq!(k.start_cyclic(bad_c, 0), Err(Error::Id));
        assert_eq!(k.stop_cyclic(bad_c), Err(Error::Id));
        assert_eq!(k.cyclic_misses(bad_c), Err(Error::Id));
        assert_eq!(k.take_dispatch_requests(), 0);
        assert_eq!(k.state(B), Ok(TaskState::Running));
        k.check_invariants();
    }

    #[test]
    fn error_codes_are_toppers() {
        assert_eq!(Error::Parameter.code(), -17);
        assert_eq!(Error::Id.code(), -18);
        assert_eq!(Error::Context.code(), -25);
        assert_eq!(Error::Object.code(), -41);
        assert_eq!(Error::QueueOverflow.code(), -43);
        assert_eq!(Error::Released.code(), -49);
        assert_eq!(Error::Timeout.code(), -50);
    }

    /// Random calls, valid or not, from random callers on random cores never
    /// panic and never break an invariant; after dispatching every core, no
    /// Ready task outranks a core's running task.
    #[test]
    fn random_calls_keep_the_invariants() {
        let mut seed = 0x0123_4567_89AB_CDEFu64;
        let mut k = kernel();
        let mut now: Ticks = 0;
        let mut fired = [CyclicId(0); crate::MAX_CYCLICS];
        let n = CONFIG.tasks.len() as u64 + 1; // one past the end, sometimes
        let (mut blocked, mut completed, mut errors) = (0, 0, [0u32; 64]);
        let mut handed = 0;
        for step in 0..200_000 {
            let r = |s: &mut u64, m: u64| xorshift(s) % m;
            let t = TaskId(r(&mut seed, n) as u8);
            let timeout = match r(&mut seed, 4) {
                0 => Timeout::Poll,
                1 => Timeout::Forever,
                _ => Timeout::After(r(&mut seed, 50)),
            };
            let sem = SemaphoreId(r(&mut seed, 3) as u8);
            let flag = FlagId(r(&mut seed, 2) as u8);
            let queue = DataQueueId(r(&mut seed, 2) as u8);
            let bits = 1 << r(&mut seed, 4);
            let mode = if r(&mut seed, 2) == 0 {
                FlagMode::And
            } else {
                FlagMode::Or
            };
            // Mostly calls from a running task, as in real life.
            let running: std::vec::Vec<TaskId> = (0..3).filter_map(|c| k.running(c)).collect();
            let caller = if !running.is_empty() && r(&mut seed, 8) != 0 {
                running[r(&mut seed, running.len() as u64) as usize]
            } else {
                t
            };
            let core = r(&mut seed, 4) as u8;
            // `Some` for what a blocking service did, `None` for the others.
            let op = r(&mut seed, 25);
            let outcome: Result<Option<Done>, Error> = match op {
                0 | 1 => k.activate(t).map(|_| None),
                2 => k.exit(caller).map(|_| None),
                3 => k.sleep(caller, timeout, now).map(Some),
                4 => k.wakeup(t).map(|_| None),
                5 => k.delay(caller, r(&mut seed, 30), now).map(Some),
                6 => k.release_wait(t).map(|_| None),
                7 => k.migrate(t, core).map(|_| None),
                8 => k.yield_task(caller).map(|_| None),
                9 => k.signal_semaphore(sem).map(|_| None),
                10 => k.wait_semaphore(caller, sem, timeout, now).map(Some),
                11 => k.set_flag(flag, bits).map(|_| None),
                12 => k.clear_flag(flag, !bits).map(|_| None),
                13 => k
                    .wait_flag(caller, flag, bits | (bits << 1), mode, timeout, now)
                    .map(Some),
                14 => k
                    .send_dataqueue(Caller::Task(caller), queue, step, timeout, now)
                    .map(Some),
                15 => k
                    .send_dataqueue(Caller::Handler(core), queue, step, timeout, now)
                    .map(Some),
                16 => k.receive_dataqueue(caller, queue, timeout, now).map(Some),
                17 => k.take_wait_result(t).map(|w| Some(Done::Now(w))),
                22 => k.wait_hand_off(caller, timeout, now).map(Some),
                23 => k.hand_off(caller, t, step).map(Some),
                24 => k.terminate(t).map(|_| None),
                18 => k
                    .start_cyclic(CyclicId(r(&mut seed, 3) as u8), now)
                    .map(|_| None),
                19 => k.stop_cyclic(CyclicId(r(&mut seed, 3) as u8)).map(|_| None),
                _ => {
                    now += r(&mut seed, 20);
                    let count = k.advance(core, now, &mut fired);
                    assert!(count <= 2);
                    Ok(None)
                }
            };
            if op == 23 && outcome.is_ok() {
                handed += 1;
            }
            match outcome {
                Ok(Some(Done::Blocked)) => blocked += 1,
                Ok(Some(Done::Now(_))) => completed += 1,
                Ok(None) => {}
                Err(e) => errors[e.code().unsigned_abs() as usize] += 1,
            }
            k.check_invariants();
            if r(&mut seed, 3) == 0 {
                for c in 0..3u8 {
                    k.dispatch(c);
                    if let Some(run) = k.running(c) {
                        let p = k.tasks[run.0 as usize].priority as u32;
                        assert!(k.ready_map[c as usize].trailing_zeros() >= p);
                    }
                }
                k.check_invariants();
            }
        }
        // The walk really went through the interesting paths.
        assert!(handed > 100, "{handed} hand-offs");
        assert!(
            blocked > 5_000 && completed > 5_000,
            "{blocked} {completed}"
        );
        for e in [
            Error::Id,
            Error::Parameter,
            Error::Context,
            Error::Object,
            Error::QueueOverflow,
            Error::Timeout,
            Error::Released,
        ] {
            let seen = errors[e.code().unsigned_abs() as usize];
            assert!(seen > 100, "{e:?} seen {seen} times");
        }
    }
}
