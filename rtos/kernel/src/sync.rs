//! Synchronisation and communication objects: counting semaphores, event
//! flags and data queues, with FIFO wait queues (TA_TFIFO). Their services
//! are methods of [`Kernel`].

use crate::config::{DataQueueConfig, FlagConfig, SemaphoreConfig};
use crate::queue::Queue;
use crate::types::{Caller, Done, Error, FlagMode, TaskState, Timeout, WaitReason, WaitResult};
use crate::{
    DATAQUEUE_CAPACITY, DataQueueId, FlagId, Kernel, MAX_TASKS, SemaphoreId, TaskId, Ticks,
};

/// A counting semaphore. Tasks wait only while the count is 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Semaphore {
    pub(crate) count: u32,
    pub(crate) max: u32,
    pub(crate) waiters: Queue,
}

impl Semaphore {
    pub(crate) const EMPTY: Semaphore = Semaphore {
        count: 0,
        max: 0,
        waiters: Queue::EMPTY,
    };

    pub(crate) fn new(c: &SemaphoreConfig) -> Semaphore {
        Semaphore {
            count: c.initial,
            max: c.max,
            waiters: Queue::EMPTY,
        }
    }
}

/// An event flag. Tasks wait only while their condition does not hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flag {
    pub(crate) value: u32,
    pub(crate) waiters: Queue,
}

impl Flag {
    pub(crate) const EMPTY: Flag = Flag {
        value: 0,
        waiters: Queue::EMPTY,
    };

    pub(crate) fn new(c: &FlagConfig) -> Flag {
        Flag {
            value: c.initial,
            waiters: Queue::EMPTY,
        }
    }
}

/// A data queue: a ring of values. Senders wait only while it is full (their
/// value is kept in their wait reason), receivers only while it is empty.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DataQueue {
    pub(crate) buffer: [usize; DATAQUEUE_CAPACITY],
    pub(crate) head: usize,
    pub(crate) len: usize,
    pub(crate) capacity: usize,
    pub(crate) senders: Queue,
    pub(crate) receivers: Queue,
}

impl DataQueue {
    pub(crate) const EMPTY: DataQueue = DataQueue {
        buffer: [0; DATAQUEUE_CAPACITY],
        head: 0,
        len: 0,
        capacity: 0,
        senders: Queue::EMPTY,
        receivers: Queue::EMPTY,
    };

    pub(crate) fn new(c: &DataQueueConfig) -> DataQueue {
        DataQueue {
            capacity: c.capacity,
            ..DataQueue::EMPTY
        }
    }

    /// Appends `value`; false if full.
    fn push(&mut self, value: usize) -> bool {
        if self.len == self.capacity {
            return false;
        }
        self.buffer[(self.head + self.len) % self.capacity] = value;
        self.len += 1;
        true
    }

    /// Takes the oldest value.
    fn pop(&mut self) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let value = self.buffer[self.head];
        self.head = (self.head + 1) % self.capacity;
        self.len -= 1;
        Some(value)
    }
}

impl Kernel {
    fn semaphore(&self, s: SemaphoreId) -> Result<usize, Error> {
        let i = s.0 as usize;
        if i < self.semaphore_count {
            Ok(i)
        } else {
            Err(Error::Id)
        }
    }

    fn flag(&self, f: FlagId) -> Result<usize, Error> {
        let i = f.0 as usize;
        if i < self.flag_count {
            Ok(i)
        } else {
            Err(Error::Id)
        }
    }

    fn dataqueue(&self, q: DataQueueId) -> Result<usize, Error> {
        let i = q.0 as usize;
        if i < self.dataqueue_count {
            Ok(i)
        } else {
            Err(Error::Id)
        }
    }

    /// sig_sem: hands the resource to the first waiting task, or counts it;
    /// [`Error::QueueOverflow`] if the count is already at its maximum.
    pub fn signal_semaphore(&mut self, s: SemaphoreId) -> Result<(), Error> {
        let si = self.semaphore(s)?;
        if let Some(t) = self.semaphores[si].waiters.front() {
            self.release(t, Ok(WaitResult::Ok));
            return Ok(());
        }
        let sem = &mut self.semaphores[si];
        if sem.count >= sem.max {
            return Err(Error::QueueOverflow);
        }
        sem.count += 1;
        Ok(())
    }

    /// wai_sem / pol_sem / twai_sem: takes one resource, or waits for one
    /// (tasks wait in FIFO order).
    pub fn wait_semaphore(
        &mut self,
        caller: TaskId,
        s: SemaphoreId,
        timeout: Timeout,
        now: Ticks,
    ) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        let si = self.semaphore(s)?;
        if self.semaphores[si].count > 0 {
            self.semaphores[si].count -= 1;
            return Ok(Done::Now(WaitResult::Ok));
        }
        let deadline = timeout.deadline(now)?;
        Ok(self.block(i, WaitReason::Semaphore(s), deadline))
    }

    /// set_flg: ORs `pattern` into the flag and releases, in FIFO order,
    /// every waiting task whose condition now holds, each with
    /// `Flags(value)` (the flag's value at release time).
    pub fn set_flag(&mut self, f: FlagId, pattern: u32) -> Result<(), Error> {
        let fi = self.flag(f)?;
        self.flags[fi].value |= pattern;
        let value = self.flags[fi].value;
        // Collect first: releasing unlinks tasks from the queue we walk.
        let mut due = [0usize; MAX_TASKS];
        let mut n = 0;
        for t in self.flags[fi].waiters.iter(&self.links) {
            if let TaskState::Waiting(WaitReason::Flag { pattern, mode, .. }) = self.tasks[t].state
                && mode.holds(value, pattern)
            {
                due[n] = t;
                n += 1;
            }
        }
        for &t in &due[..n] {
            self.release(t, Ok(WaitResult::Flags(value)));
        }
        Ok(())
    }

    /// clr_flg: ANDs the flag with `keep`. Releases nobody.
    pub fn clear_flag(&mut self, f: FlagId, keep: u32) -> Result<(), Error> {
        let fi = self.flag(f)?;
        self.flags[fi].value &= keep;
        Ok(())
    }

    /// wai_flg / pol_flg / twai_flg: returns `Flags(value)` at once if the
    /// flag satisfies `pattern` in `mode`, else waits until a
    /// [`Kernel::set_flag`] makes it so. A `pattern` of 0 is
    /// [`Error::Parameter`].
    pub fn wait_flag(
        &mut self,
        caller: TaskId,
        f: FlagId,
        pattern: u32,
        mode: FlagMode,
        timeout: Timeout,
        now: Ticks,
    ) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        let fi = self.flag(f)?;
        if pattern == 0 {
            return Err(Error::Parameter);
        }
        let value = self.flags[fi].value;
        if mode.holds(value, pattern) {
            return Ok(Done::Now(WaitResult::Flags(value)));
        }
        let deadline = timeout.deadline(now)?;
        let reason = WaitReason::Flag {
            flag: f,
            pattern,
            mode,
        };
        Ok(self.block(i, reason, deadline))
    }

    /// snd_dtq / psnd_dtq / tsnd_dtq / ipsnd_dtq: gives `value` straight to
    /// the first waiting receiver, else appends it to the queue, else (full)
    /// waits for room. Handlers may only poll: a [`Caller::Handler`] with any
    /// other timeout is [`Error::Context`], with a core that does not exist
    /// [`Error::Parameter`].
    pub fn send_dataqueue(
        &mut self,
        caller: Caller,
        q: DataQueueId,
        value: usize,
        timeout: Timeout,
        now: Ticks,
    ) -> Result<Done, Error> {
        let task = match caller {
            Caller::Task(t) => Some(self.running_caller(t)?),
            Caller::Handler(core) => {
                if timeout.normalized() != Timeout::Poll {
                    return Err(Error::Context);
                }
                if core as usize >= self.cores {
                    return Err(Error::Parameter);
                }
                None
            }
        };
        let qi = self.dataqueue(q)?;
        if let Some(r) = self.dataqueues[qi].receivers.front() {
            self.release(r, Ok(WaitResult::Value(value)));
            return Ok(Done::Now(WaitResult::Ok));
        }
        if self.dataqueues[qi].push(value) {
            return Ok(Done::Now(WaitResult::Ok));
        }
        let deadline = timeout.deadline(now)?;
        match task {
            Some(i) => Ok(self.block(i, WaitReason::Send { queue: q, value }, deadline)),
            // Unreachable: a handler polls, so `deadline` already failed.
            None => Err(Error::Timeout),
        }
    }

    /// rcv_dtq / prcv_dtq / trcv_dtq: takes the oldest value, `Value(v)`,
    /// and lets the first blocked sender put its value in the room made; else
    /// (empty) waits for a sender.
    pub fn receive_dataqueue(
        &mut self,
        caller: TaskId,
        q: DataQueueId,
        timeout: Timeout,
        now: Ticks,
    ) -> Result<Done, Error> {
        let i = self.running_caller(caller)?;
        let qi = self.dataqueue(q)?;
        if let Some(value) = self.dataqueues[qi].pop() {
            if let Some(s) = self.dataqueues[qi].senders.front()
                && let TaskState::Waiting(WaitReason::Send { value: sent, .. }) =
                    self.tasks[s].state
            {
                self.dataqueues[qi].push(sent);
                self.release(s, Ok(WaitResult::Ok));
            }
            return Ok(Done::Now(WaitResult::Value(value)));
        }
        // Empty, so no sender waits (capacity is never 0): wait for one.
        let deadline = timeout.deadline(now)?;
        Ok(self.block(i, WaitReason::Receive(q), deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn wait_sem(k: &mut Kernel, t: TaskId, timeout: Timeout, now: Ticks) -> Result<Done, Error> {
        k.wait_semaphore(t, S0, timeout, now)
    }

    #[test]
    fn semaphore_counts_and_polls() {
        let mut k = kernel();
        run(&mut k, B);
        // S1 starts at 2 of 3.
        for _ in 0..2 {
            let r = k.wait_semaphore(B, S1, Timeout::Poll, 0);
            assert_eq!(r, Ok(Done::Now(WaitResult::Ok)));
        }
        assert_eq!(
            k.wait_semaphore(B, S1, Timeout::Poll, 0),
            Err(Error::Timeout)
        );
        assert_eq!(
            k.wait_semaphore(B, S1, Timeout::After(0), 0),
            Err(Error::Timeout)
        );
        for _ in 0..3 {
            k.signal_semaphore(S1).unwrap();
        }
        assert_eq!(k.signal_semaphore(S1), Err(Error::QueueOverflow));
        assert_eq!(k.semaphores[1].count, 3);
        assert_eq!(k.state(B), Ok(TaskState::Running));
        k.check_invariants();
    }

    #[test]
    fn semaphore_hands_off_in_fifo_order_not_priority_order() {
        let mut k = kernel();
        run(&mut k, D);
        assert_eq!(wait_sem(&mut k, D, Timeout::Forever, 0), Ok(Done::Blocked));
        run(&mut k, B);
        assert_eq!(wait_sem(&mut k, B, Timeout::Forever, 0), Ok(Done::Blocked));
        run(&mut k, E);
        assert_eq!(wait_sem(&mut k, E, Timeout::Forever, 0), Ok(Done::Blocked));
        k.take_dispatch_requests();
        // D waited first, though it has the lowest priority.
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.state(D), Ok(TaskState::Ready));
        assert_eq!(
            k.state(B),
            Ok(TaskState::Waiting(WaitReason::Semaphore(S0)))
        );
        assert_eq!(k.take_dispatch_requests(), 0b001);
        assert_eq!(k.semaphores[0].count, 0, "handed off, not counted");
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        // E waits on core 1: the hand-off asks core 1.
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b011);
        assert_eq!(k.dispatch(1), Some(E));
        assert_eq!(k.take_wait_result(E), Ok(WaitResult::Ok));
        // Nobody waits: count up to the maximum of 1.
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.signal_semaphore(S0), Err(Error::QueueOverflow));
        assert_eq!(
            wait_sem(&mut k, E, Timeout::Forever, 0),
            Ok(Done::Now(WaitResult::Ok))
        );
        k.check_invariants();
    }

    #[test]
    fn semaphore_wait_times_out_exactly_at_the_deadline() {
        let mut k = kernel();
        run(&mut k, B);
        assert_eq!(
            wait_sem(&mut k, B, Timeout::After(25), 10),
            Ok(Done::Blocked)
        );
        assert_eq!(k.next_event(0), Some(35));
        advance(&mut k, 0, 34);
        assert_eq!(
            k.state(B),
            Ok(TaskState::Waiting(WaitReason::Semaphore(S0)))
        );
        advance(&mut k, 0, 35);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
        // It left the queue: a signal now counts instead of reaching it.
        k.signal_semaphore(S0).unwrap();
        assert_eq!(k.semaphores[0].count, 1);
        assert_eq!(k.state(B), Ok(TaskState::Running));
        k.check_invariants();
    }

    #[test]
    fn flag_and_or_waits_complete_at_once_when_satisfied() {
        let mut k = kernel();
        run(&mut k, B);
        k.set_flag(F0, 0b0110).unwrap();
        let w = |k: &mut Kernel, p, m| k.wait_flag(B, F0, p, m, Timeout::Poll, 0);
        assert_eq!(
            w(&mut k, 0b0110, FlagMode::And),
            Ok(Done::Now(WaitResult::Flags(0b0110)))
        );
        assert_eq!(w(&mut k, 0b0111, FlagMode::And), Err(Error::Timeout));
        assert_eq!(
            w(&mut k, 0b1100, FlagMode::Or),
            Ok(Done::Now(WaitResult::Flags(0b0110)))
        );
        assert_eq!(w(&mut k, 0b1001, FlagMode::Or), Err(Error::Timeout));
        assert_eq!(w(&mut k, 0, FlagMode::Or), Err(Error::Parameter));
        assert_eq!(w(&mut k, 0, FlagMode::And), Err(Error::Parameter));
        // Waiting does not consume anything (no TA_CLR).
        assert_eq!(k.flags[0].value, 0b0110);
        k.clear_flag(F0, !0b0010).unwrap();
        assert_eq!(k.flags[0].value, 0b0100);
        assert_eq!(w(&mut k, 0b0010, FlagMode::Or), Err(Error::Timeout));
        k.check_invariants();
    }

    #[test]
    fn one_set_releases_every_satisfied_waiter_in_fifo_order() {
        let mut k = kernel();
        let forever = Timeout::Forever;
        run(&mut k, C);
        assert_eq!(
            k.wait_flag(C, F0, 0b11, FlagMode::And, forever, 0),
            Ok(Done::Blocked)
        );
        run(&mut k, B);
        assert_eq!(
            k.wait_flag(B, F0, 0b01, FlagMode::Or, forever, 0),
            Ok(Done::Blocked)
        );
        run(&mut k, D);
        assert_eq!(
            k.wait_flag(D, F0, 0b100, FlagMode::Or, forever, 0),
            Ok(Done::Blocked)
        );
        run(&mut k, G);
        assert_eq!(
            k.wait_flag(G, F0, 0b10, FlagMode::Or, forever, 0),
            Ok(Done::Blocked)
        );
        k.take_dispatch_requests();
        // Only B's condition holds.
        k.set_flag(F0, 0b01).unwrap();
        assert_eq!(k.state(B), Ok(TaskState::Ready));
        assert!(matches!(k.state(C), Ok(TaskState::Waiting(_))));
        assert_eq!(k.take_dispatch_requests(), 0b001);
        // Now C's and G's (on core 1); D's never does.
        k.set_flag(F0, 0b10).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b011);
        assert_eq!(k.state(C), Ok(TaskState::Ready));
        assert_eq!(k.state(G), Ok(TaskState::Ready));
        assert!(matches!(k.state(D), Ok(TaskState::Waiting(_))));
        // B and C share a priority; B was released first, so it runs first.
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Flags(0b01)));
        k.exit(B).unwrap();
        assert_eq!(k.dispatch(0), Some(C));
        assert_eq!(k.take_wait_result(C), Ok(WaitResult::Flags(0b11)));
        assert_eq!(k.take_wait_result(G), Ok(WaitResult::Flags(0b11)));
        // Clearing releases nobody; D is still released by its own bit.
        k.clear_flag(F0, 0).unwrap();
        assert!(matches!(k.state(D), Ok(TaskState::Waiting(_))));
        k.set_flag(F0, 0b100).unwrap();
        assert_eq!(k.take_wait_result(D), Ok(WaitResult::Flags(0b100)));
        k.check_invariants();
    }

    #[test]
    fn flag_wait_times_out_exactly_at_the_deadline() {
        let mut k = kernel();
        run(&mut k, B);
        let r = k.wait_flag(B, F0, 1, FlagMode::And, Timeout::After(7), 3);
        assert_eq!(r, Ok(Done::Blocked));
        advance(&mut k, 0, 9);
        assert!(matches!(k.state(B), Ok(TaskState::Waiting(_))));
        advance(&mut k, 0, 10);
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
        // Setting the flag afterwards does not find it.
        k.set_flag(F0, 1).unwrap();
        assert_eq!(k.take_wait_result(B), Err(Error::Object));
        k.check_invariants();
    }

    #[test]
    fn dataqueue_hands_a_value_straight_to_a_waiting_receiver() {
        let mut k = kernel();
        run(&mut k, E);
        assert_eq!(
            k.receive_dataqueue(E, Q0, Timeout::Forever, 0),
            Ok(Done::Blocked)
        );
        run(&mut k, B);
        k.take_dispatch_requests();
        let sent = k.send_dataqueue(Caller::Task(B), Q0, 42, Timeout::Forever, 0);
        assert_eq!(sent, Ok(Done::Now(WaitResult::Ok)));
        assert_eq!(k.take_dispatch_requests(), 0b010);
        assert_eq!(k.dataqueues[0].len, 0, "not through the queue");
        assert_eq!(k.dispatch(1), Some(E));
        assert_eq!(k.take_wait_result(E), Ok(WaitResult::Value(42)));
        k.check_invariants();
    }

    #[test]
    fn full_dataqueue_blocks_the_sender_until_a_receive() {
        let mut k = kernel();
        run(&mut k, C);
        let send =
            |k: &mut Kernel, t, v, timeout| k.send_dataqueue(Caller::Task(t), Q0, v, timeout, 0);
        // Capacity 2.
        assert_eq!(
            send(&mut k, C, 1, Timeout::Poll),
            Ok(Done::Now(WaitResult::Ok))
        );
        assert_eq!(
            send(&mut k, C, 2, Timeout::Forever),
            Ok(Done::Now(WaitResult::Ok))
        );
        assert_eq!(send(&mut k, C, 3, Timeout::Poll), Err(Error::Timeout));
        assert_eq!(send(&mut k, C, 3, Timeout::Forever), Ok(Done::Blocked));
        assert_eq!(
            k.state(C),
            Ok(TaskState::Waiting(WaitReason::Send {
                queue: Q0,
                value: 3
            }))
        );
        run(&mut k, D);
        assert_eq!(send(&mut k, D, 4, Timeout::Forever), Ok(Done::Blocked));
        run(&mut k, B);
        let recv = |k: &mut Kernel| k.receive_dataqueue(B, Q0, Timeout::Poll, 0);
        // Each receive makes room for the first blocked sender's value.
        assert_eq!(recv(&mut k), Ok(Done::Now(WaitResult::Value(1))));
        assert_eq!(k.state(C), Ok(TaskState::Ready));
        assert_eq!(k.take_wait_result(C), Ok(WaitResult::Ok));
        assert!(matches!(k.state(D), Ok(TaskState::Waiting(_))));
        assert_eq!(recv(&mut k), Ok(Done::Now(WaitResult::Value(2))));
        assert_eq!(k.state(D), Ok(TaskState::Ready));
        assert_eq!(recv(&mut k), Ok(Done::Now(WaitResult::Value(3))));
        assert_eq!(recv(&mut k), Ok(Done::Now(WaitResult::Value(4))));
        assert_eq!(recv(&mut k), Err(Error::Timeout));
        k.check_invariants();
    }

    #[test]
    fn dataqueue_waits_time_out_exactly_at_the_deadline() {
        let mut k = kernel();
        run(&mut k, B);
        let recv = k.receive_dataqueue(B, Q0, Timeout::After(100), 0);
        assert_eq!(recv, Ok(Done::Blocked));
        advance(&mut k, 0, 99);
        assert_eq!(k.state(B), Ok(TaskState::Waiting(WaitReason::Receive(Q0))));
        advance(&mut k, 0, 100);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
        for v in 0..2 {
            k.send_dataqueue(Caller::Task(B), Q0, v, Timeout::Poll, 0)
                .unwrap();
        }
        let send = k.send_dataqueue(Caller::Task(B), Q0, 9, Timeout::After(5), 200);
        assert_eq!(send, Ok(Done::Blocked));
        advance(&mut k, 0, 204);
        assert!(matches!(k.state(B), Ok(TaskState::Waiting(_))));
        advance(&mut k, 0, 205);
        assert_eq!(k.dispatch(0), Some(B));
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
        // The timed-out value never entered the queue.
        assert_eq!(
            k.receive_dataqueue(B, Q0, Timeout::Poll, 0),
            Ok(Done::Now(WaitResult::Value(0)))
        );
        assert_eq!(
            k.receive_dataqueue(B, Q0, Timeout::Poll, 0),
            Ok(Done::Now(WaitResult::Value(1)))
        );
        assert_eq!(
            k.receive_dataqueue(B, Q0, Timeout::Poll, 0),
            Err(Error::Timeout)
        );
        k.check_invariants();
    }

    #[test]
    fn handlers_send_by_polling_only() {
        let mut k = kernel();
        let h = |k: &mut Kernel, core, v, timeout| {
            k.send_dataqueue(Caller::Handler(core), Q0, v, timeout, 0)
        };
        assert_eq!(h(&mut k, 0, 1, Timeout::Forever), Err(Error::Context));
        assert_eq!(h(&mut k, 0, 1, Timeout::After(3)), Err(Error::Context));
        assert_eq!(h(&mut k, 3, 1, Timeout::Poll), Err(Error::Parameter));
        assert_eq!(
            h(&mut k, 0, 1, Timeout::Poll),
            Ok(Done::Now(WaitResult::Ok))
        );
        assert_eq!(
            h(&mut k, 1, 2, Timeout::After(0)),
            Ok(Done::Now(WaitResult::Ok))
        );
        assert_eq!(h(&mut k, 0, 3, Timeout::Poll), Err(Error::Timeout), "full");
        // Straight to a waiting receiver.
        run(&mut k, B);
        for v in [1, 2] {
            let r = k.receive_dataqueue(B, Q0, Timeout::Forever, 0);
            assert_eq!(r, Ok(Done::Now(WaitResult::Value(v))));
        }
        assert_eq!(
            k.receive_dataqueue(B, Q0, Timeout::Forever, 0),
            Ok(Done::Blocked)
        );
        assert_eq!(
            h(&mut k, 1, 7, Timeout::Poll),
            Ok(Done::Now(WaitResult::Ok))
        );
        assert_eq!(k.take_wait_result(B), Ok(WaitResult::Value(7)));
        k.check_invariants();
    }

    #[test]
    fn dataqueue_ring_wraps_around() {
        let mut q = DataQueue::new(&DataQueueConfig { capacity: 3 });
        let mut next_in = 0;
        let mut next_out = 0;
        for round in 0..50 {
            while q.push(next_in) {
                next_in += 1;
            }
            for _ in 0..(round % 3 + 1) {
                assert_eq!(q.pop(), Some(next_out));
                next_out += 1;
            }
        }
        while let Some(v) = q.pop() {
            assert_eq!(v, next_out);
            next_out += 1;
        }
        assert_eq!(next_in, next_out);
    }
}
