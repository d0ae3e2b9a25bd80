//! Directed hand-off (paper 004's `sys_chg(pid, value)`) and forced
//! termination: a task gives a value to a task that waits for one and that
//! task runs next on its core, ahead of the others of its priority; a task
//! that broke its protection is stopped wherever it is.

use crate::types::{Done, Error, TaskState, Timeout, WaitReason, WaitResult};
use crate::{Kernel, TaskId, Ticks};

impl Kernel {
    /// Waits for a value from [`Kernel::hand_off`] (the first half of a
    /// hand-off pair: the task that is handed to must be waiting).
    pub fn wait_hand_off(
        &mut self,
        caller: TaskId,
        timeout: Timeout,
        now: Ticks,
    ) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        let deadline = timeout.deadline(now)?;
        Ok(self.block(i, WaitReason::HandOff, deadline))
    }

    /// sys_chg: the running `caller` hands `value` to `target` and waits for
    /// a value in turn (forever). `target` must be waiting in a hand-off
    /// ([`Error::Object`] otherwise, and the caller goes on running) and on
    /// the caller's core ([`Error::Parameter`]: a direct switch cannot cross
    /// cores). `target` is released with `Value(value)` at the head of its
    /// priority's ready queue, so it runs next on the core unless a task of
    /// higher priority is ready.
    pub fn hand_off(
        &mut self,
        caller: TaskId,
        target: TaskId,
        value: usize,
    ) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        let t = self.task(target)?;
        if t == i || self.tasks[t].core != self.tasks[i].core {
            return Err(Error::Parameter);
        }
        if self.tasks[t].state != TaskState::Waiting(WaitReason::HandOff) {
            return Err(Error::Object);
        }
        let done = self.block(i, WaitReason::HandOff, None);
        let (c, p) = (self.tasks[t].core, self.tasks[t].priority as usize);
        let tcb = &mut self.tasks[t];
        tcb.deadline = None;
        tcb.result = Some(Ok(WaitResult::Value(value)));
        tcb.state = TaskState::Ready;
        self.ready[c as usize][p].push_front(&mut self.links, t);
        self.ready_map[c as usize] |= 1 << p;
        self.request(c);
        Ok(done)
    }

    /// ter_tsk, also for a Running task (the firmware stops a task that
    /// faulted): `t` leaves whatever queue it is in and becomes Dormant with
    /// no queued activation or wakeup. [`Error::Object`] if it is Dormant.
    pub fn terminate(&mut self, t: TaskId) -> Result<(), Error> {
        let i = self.task(t)?;
        match self.tasks[i].state {
            TaskState::Dormant => return Err(Error::Object),
            TaskState::Running => self.stop_running(i),
            TaskState::Ready => {
                self.unready(i);
                let core = self.tasks[i].core;
                self.request(core);
            }
            TaskState::Waiting(_) => {
                // Out of its wait queue, as a release does; the result is
                // dropped below.
                self.release(i, Err(Error::Released));
                self.unready(i);
            }
        }
        let tcb = &mut self.tasks[i];
        tcb.state = TaskState::Dormant;
        tcb.activations = 0;
        tcb.wakeups = 0;
        tcb.deadline = None;
        tcb.result = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use crate::types::{Done, Error, TaskState, Timeout, WaitReason, WaitResult};
    use std::vec;

    #[test]
    fn hand_off_runs_the_target_next_with_the_value() {
        let mut k = kernel();
        // B and C share priority 5 on core 0; D (9) is ready behind them.
        run(&mut k, C);
        assert_eq!(k.wait_hand_off(C, Timeout::Forever, 0), Ok(Done::Blocked));
        k.activate(D).unwrap();
        assert_eq!(k.dispatch(0), Some(D));
        k.activate(B).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        k.check_invariants();
        assert_eq!(k.hand_off(B, C, 42), Ok(Done::Blocked));
        k.check_invariants();
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::HandOff)));
        assert_eq!(k.dispatch(0), Some(C));
        assert_eq!(k.take_wait_result(C), Ok(WaitResult::Value(42)));
        // And back: C hands to B, which runs next.
        assert_eq!(k.hand_off(C, B, 43), Ok(Done::Blocked));
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Value(43)));
        k.check_invariants();
    }

    #[test]
    fn hand_off_goes_ahead_of_equal_priority_but_not_higher() {
        let mut k = kernel();
        run(&mut k, C);
        k.wait_hand_off(C, Timeout::Forever, 0).unwrap();
        run(&mut k, B);
        // A (2) outranks C (5): A runs first, C next, ahead of D (9).
        k.activate(A).unwrap();
        k.activate(D).unwrap();
        assert_eq!(k.dispatch(0), Some(A));
        k.exit(A).unwrap();
        assert_eq!(k.dispatch(0), Some(B));
        k.hand_off(B, C, 1).unwrap();
        assert_eq!(k.dispatch(0), Some(C));
        k.check_invariants();
    }

    #[test]
    fn hand_off_refuses_what_it_cannot_do() {
        let mut k = kernel();
        run(&mut k, B);
        // C is Dormant: not waiting for a value; B runs on.
        assert_eq!(k.hand_off(B, C, 1), Err(Error::Object));
        assert_eq!(k.state(B), Ok(TaskState::Running));
        assert_eq!(k.hand_off(B, B, 1), Err(Error::Parameter));
        // G waits on core 1: no direct switch across cores.
        run(&mut k, G);
        k.wait_hand_off(G, Timeout::Forever, 0).unwrap();
        assert_eq!(k.hand_off(B, G, 1), Err(Error::Parameter));
        assert_eq!(k.hand_off(B, TaskId(99), 1), Err(Error::Id));
        // Not running: no hand-off.
        assert_eq!(k.hand_off(D, B, 1), Err(Error::Context));
        k.check_invariants();
    }

    #[test]
    fn a_hand_off_wait_times_out() {
        let mut k = kernel();
        run(&mut k, B);
        k.wait_hand_off(B, Timeout::After(10), 100).unwrap();
        assert_eq!(advance(&mut k, 0, 110), vec![]);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
    }

    #[test]
    fn terminate_stops_a_task_in_any_state() {
        let mut k = kernel();
        // Running, with an activation queued: it does not restart.
        run(&mut k, B);
        k.activate(B).unwrap();
        k.terminate(B).unwrap();
        k.check_invariants();
        assert_eq!(k.state(B), Ok(TaskState::Dormant));
        assert_eq!(k.running(0), None);
        assert_eq!(k.dispatch(0), None);
        // Ready.
        k.activate(C).unwrap();
        k.terminate(C).unwrap();
        assert_eq!(k.dispatch(0), None);
        // Waiting on a semaphore, with a timeout.
        run(&mut k, D);
        k.wait_semaphore(D, S0, Timeout::After(5), 0).unwrap();
        k.terminate(D).unwrap();
        k.check_invariants();
        k.signal_semaphore(S0).unwrap();
        assert_eq!(advance(&mut k, 0, 100), vec![]);
        assert_eq!(k.state(D), Ok(TaskState::Dormant));
        // Waiting for a hand-off: no longer handed to.
        run(&mut k, B);
        k.wait_hand_off(B, Timeout::Forever, 0).unwrap();
        k.terminate(B).unwrap();
        run(&mut k, C);
        assert_eq!(k.hand_off(C, B, 1), Err(Error::Object));
        assert_eq!(k.terminate(B), Err(Error::Object));
        // And it can be started again.
        k.activate(B).unwrap();
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        k.check_invariants();
    }
}
