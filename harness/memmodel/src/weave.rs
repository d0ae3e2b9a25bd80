//! The bus as one server priced in time order behind per-core timing's skew: requests wait in per-core queues, the bus is granted slot by slot, first come first served among the cores' oldest requests, once no core can still add a request by a slot's start, and each core's waits come back to it as a debt.
//!
//! The bus carries one line at a time, each for a service time: every
//! transfer (demand fill, prefetch, write-back, walk read) takes one slot
//! of its timeline. Each core's requests queue in its own lane, first in
//! first out (a core's calls follow its clock, so no skew reorders them).
//! When the bus is free, the next slot starts at the earliest time a
//! request is waiting; it goes to the core whose oldest request has
//! waited at the head of the bus's queue longest: since it arrived, or
//! since the core's slot before it ended if that was later (ties round
//! robin, from the core after the one granted last). A core's lane thus
//! holds one place in the queue at a time: a read waits for the slot under
//! way and one slot of each core queued before it, not for a streaming
//! core's whole backlog (that core's next request queues when its slot
//! ends, behind the read), and a read taken ahead of a backlog pushes
//! that backlog back a slot: the slots of all cores together never hold
//! more than the bus carries.
//!
//! Per-core timing runs one core up to a quantum ahead of the others, so a
//! request reaches the model before the requests of cores behind it that
//! came earlier, and a read's slot depends on requests of other cores that
//! arrive after it but before its slot starts (they may have queued
//! first). So a slot is granted only once every running core has
//! either passed its start or a request of its own already waiting (a core
//! further behind than the skew bound is halted and does not hold the
//! others back): exactly the grants a quantum of 0 makes. A read's wait to
//! its slot is owed to its core: the model adds what a core owes to the
//! stall of its next access (ZSim's bound and weave, with the weave
//! running continuously at the safe time). What is known when a read is
//! presented (the bus is granted until `free_at`, and the core's own
//! requests ahead of it each need a slot) is owed at once.
//!
//! A request presented while the core still owed waits not yet charged
//! happened that much later in time order: when its turn comes, its time
//! is moved by the waits priced for the core's earlier requests that the
//! core had not been charged when it presented it, or that a read of the
//! same call at the same time paid (the write-back of the line its fill
//! evicted, the prefetches the access sent).
//!
//! A core taken as halted holds no grant back, so slots are granted past
//! its time; when it wakes behind them, each of its requests (until it
//! catches the timeline up) is given at once the slot first come first
//! served gives it among the slots granted, and the slots it displaces
//! move (`Weave::displace`). A gap between a core's calls longer than
//! `IDLE_GAP_NS` is a halt, which absorbs what the core owed
//! (`Weave::resume`).
//!
//! A write-back stalls nobody while the core's eviction buffer has room;
//! one that finds it full stalls its core until the write-back holding it
//! has started, a wait owed like a read's.
//!
//! [`BusLanes`] keeps each lane's busy periods and window counters for the
//! requests as granted here (`BusLanes::book`).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::bus::{BusLanes, BusStats, MAX_CORES, Transfer, WindowCounters};

/// A request waiting for its turn in time order.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// Its time on the core's clock when presented.
    arrival: u64,
    kind: Transfer,
    /// The line it moves (a prefetch's wait delays its line).
    line: u64,
    /// The core's debt charged so far, when it was presented.
    charged_before: u64,
}

/// A hasher for line numbers: one multiplication by an odd constant,
/// which maps distinct lines (modulo any power of two) to distinct low
/// bits and spreads them into the high ones the table also uses.
#[derive(Default)]
struct LineHasher(u64);

impl Hasher for LineHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u64(&mut self, line: u64) {
        self.0 = line.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The lines of a queue's pending prefetches, each with how many are
/// pending: `Weave::may_delay`, asked after most accesses the filter does
/// not answer, scanned the whole queue (tens of requests under load) for
/// one, a sixth of the model's host instructions in a boot's replay.
#[derive(Debug, Clone, Default)]
struct PendingPrefetches(HashMap<u64, u32, BuildHasherDefault<LineHasher>>);

impl PendingPrefetches {
    fn add(&mut self, pending: &Pending) {
        if pending.kind == Transfer::Prefetch {
            *self.0.entry(pending.line).or_insert(0) += 1;
        }
    }

    fn remove(&mut self, pending: &Pending) {
        if pending.kind == Transfer::Prefetch
            && let Entry::Occupied(mut entry) = self.0.entry(pending.line)
        {
            *entry.get_mut() -= 1;
            if *entry.get() == 0 {
                entry.remove();
            }
        }
    }

    /// Whether a prefetch of `line` is pending.
    fn holds(&self, line: u64) -> bool {
        self.0.contains_key(&line)
    }
}

/// One core's side of the weave.
#[derive(Debug, Clone, Default)]
struct Queue {
    pending: VecDeque<Pending>,
    /// The prefetches among `pending` (kept with every push and pop).
    pending_prefetches: PendingPrefetches,
    /// The core's clock is known to have reached this.
    clock: u64,
    /// Waits priced for the core's requests that stall it, in total.
    priced: u64,
    /// What the core owes in total: `priced`, or more where it is known
    /// that `priced` will reach more once the pending requests are priced
    /// (a read cannot start before the bus is free and the core's own
    /// earlier requests have had their slots): the core is charged up to
    /// it at once.
    owed_total: u64,
    /// Of those, what the core has been charged.
    charged: u64,
    /// The last debt a read paid within a call, and the read's time: the
    /// call's requests presented at that time (the evicted line's
    /// write-back, the prefetches the access sent) happened that much
    /// later; those presented later in the call already count it.
    paid_at: u64,
    paid: u64,
    /// When the core's last write-back started, emptying its eviction
    /// buffer. The buffer holds one dirty line until the bus takes it
    /// (assumed: no source gives the A53's or the ARM11's depth); a
    /// write-back that finds it full stalls the core until then. Without
    /// that a core that writes lines back faster than the bus carries them
    /// would queue them without bound and never wait.
    eviction_started: u64,
    /// A slot was granted, while the core was taken as halted, that it
    /// would otherwise have held back: its requests may have happened
    /// before slots already granted, until one finds the bus's timeline
    /// less than a slot ahead (or one of its own waiting).
    behind: bool,
    /// When the core's last slot ended: its next request joins the bus's
    /// queue then at the earliest (it cannot be at the head of its lane
    /// while the one before it is on the bus).
    last_slot_end: u64,
}

impl Queue {
    /// What the core owes beyond what it has been charged.
    fn owed(&self) -> u64 {
        self.owed_total - self.charged
    }

    /// Adds a wait priced for one of the core's requests.
    fn price(&mut self, wait: u64) {
        self.priced += wait;
        self.owed_total = self.owed_total.max(self.priced);
    }

    /// When its oldest pending request happened in time order.
    fn head_time(&self) -> Option<u64> {
        self.pending
            .front()
            .map(|p| p.arrival + (self.priced - p.charged_before.min(self.priced)))
    }

    /// When its oldest pending request joined the bus's queue: when it
    /// happened, or when the core's slot before it ended.
    fn queued_since(&self) -> Option<u64> {
        self.head_time().map(|t| t.max(self.last_slot_end))
    }
}

/// The slots the weave keeps, the last granted: 4 096 of `a53`'s 10 ns
/// span 41 µs, more than a woken core can be behind the bus's timeline
/// (the skew bound, 4 µs, and the backlogs granted past it).
const RECENT_SLOTS: usize = 4_096;

/// A gap between a core's calls longer than this means it was halted: a
/// running core calls the model at least once per translation block, a
/// few hundred instructions at most.
pub const IDLE_GAP_NS: u64 = 1_000;

/// A slot granted: to which core and request, when that queued, when it
/// starts.
#[derive(Debug, Clone, Copy)]
struct Slot {
    core: usize,
    kind: Transfer,
    line: u64,
    queued: u64,
    start: u64,
}

/// The lanes fed in time order from per-core queues.
#[derive(Debug, Clone)]
pub struct Weave {
    bus: BusLanes,
    queues: Vec<Queue>,
    max_skew_ns: u64,
    /// The core whose clock held the last release back, and the time it
    /// has to reach: until then another core's clock moving frees nothing
    /// (only a request, or the waiting core's progress, can).
    blocked_on: Option<(usize, u64)>,
    /// Prefetches priced with a wait, `(core, line, wait)`: each line
    /// arrives that much later than its core was told when it sent it.
    delayed_prefetches: Vec<(usize, u64, u64)>,
    /// When the slot granted last ends (the bus is free from then on).
    free_at: u64,
    /// The slots granted last, `RECENT_SLOTS` of them, in the order
    /// granted: where a core woken behind the timeline finds its turn.
    recent: VecDeque<Slot>,
    /// The core granted last: ties go round robin from the core after it.
    last_granted: usize,
    /// Every grant, `(core, time in time order, start)`, for the tests.
    #[cfg(test)]
    granted: Vec<(usize, u64, u64)>,
}

impl Weave {
    /// An idle bus of `cores` lanes, `service_ns` per request; a core more
    /// than `max_skew_ns` behind the core furthest ahead is halted.
    pub fn new(cores: usize, service_ns: u64, max_skew_ns: u64) -> Self {
        Self {
            bus: BusLanes::new(cores, service_ns, max_skew_ns),
            queues: vec![Queue::default(); cores.max(1)],
            max_skew_ns,
            blocked_on: None,
            delayed_prefetches: Vec::new(),
            free_at: 0,
            recent: VecDeque::with_capacity(RECENT_SLOTS),
            last_granted: cores.max(1) - 1,
            #[cfg(test)]
            granted: Vec::new(),
        }
    }

    /// The service time per request, in ns.
    pub fn service_ns(&self) -> u64 {
        self.bus.service_ns()
    }

    /// Presents a request of `core` at `arrival` (its clock); it is priced
    /// when no core can present an earlier one. Returns what the core came
    /// to owe by it now: its wait if it was priced at once, else the part
    /// of it already known (all of it is owed to the core either way:
    /// [`Self::take_debt`]).
    pub fn request(&mut self, core: usize, arrival: u64, kind: Transfer, line: u64) -> u64 {
        let service = self.bus.service_ns();
        let free_at = self.free_at;
        let queue = &mut self.queues[core];
        queue.clock = queue.clock.max(arrival);
        // What the core had been charged before this request happened: a
        // debt a read of the same call and time paid still moves it.
        let charged_before = if arrival < queue.paid_at + queue.paid {
            queue.charged - queue.paid
        } else {
            queue.charged
        };
        let total_before = queue.owed_total;
        // A core taken as halted held no grant back: one that wakes behind
        // the bus's timeline (a whole slot or more before `free_at`, with
        // nothing of its own waiting) finds slots granted after its request
        // happened, and so do its later requests until it catches the
        // timeline up. In time order such a request queued before the
        // slots that had not started by its time: it is granted, at once,
        // the slot first come first served gives it among the slots
        // granted (`Self::slot_in_time_order`), and where that slot
        // overlaps one granted, the bus's timeline grows by a slot, so
        // that the slots still to be granted start one service later and
        // the bus carries no more.
        let happened = arrival + (queue.priced - charged_before.min(queue.priced));
        queue.behind &= queue.pending.is_empty() && happened + service < free_at;
        if queue.behind {
            let start = self.slot_in_time_order(core, happened);
            let pending = Pending {
                arrival,
                kind,
                line,
                charged_before,
            };
            self.grant(core, pending, happened, start);
            self.displace(core, start);
            self.release();
            return self.queues[core].owed_total - total_before;
        }
        if kind.stalls() {
            // Once this read is priced, `priced` is its start less its
            // arrival plus `charged_before` (its time is moved by the
            // waits before it): its start is at least the bus's next free
            // slot after the core's requests still waiting. A core that
            // runs ahead of the pricing is charged that much at once
            // instead of queueing reads it could not have made yet.
            let ahead = queue.pending.len() as u64;
            let start_at_least = free_at + ahead * service;
            queue.owed_total = queue
                .owed_total
                .max((start_at_least + charged_before).saturating_sub(arrival));
        }
        let pending = Pending {
            arrival,
            kind,
            line,
            charged_before,
        };
        queue.pending_prefetches.add(&pending);
        queue.pending.push_back(pending);
        self.release();
        let queue = &self.queues[core];
        queue.owed_total - total_before
    }

    /// `core`'s clock has reached `time`.
    pub fn reached(&mut self, core: usize, time: u64) {
        let queue = &mut self.queues[core];
        if time <= queue.clock {
            return;
        }
        queue.clock = time;
        // The lanes count a request priced while a core that uses the bus
        // was behind it: with the weave, only a core taken as halted.
        self.bus.reached(core, time);
        if let Some((blocker, until)) = self.blocked_on
            && blocker == core
            && time >= until
        {
            self.release();
        }
    }

    /// `core` makes a call at `now`: if it made none for longer than
    /// `IDLE_GAP_NS` since its clock was last known, it was halted (a
    /// running core calls at least once per block), and what it owed then
    /// delayed its halt, not its wake: an interrupt at a time of its own
    /// (a timer's deadline, a sender's clock) wakes it then, or, if the
    /// debt reaches past that, the core never halted and goes on when the
    /// debt is paid. So the debt is forgiven up to the gap's length, and
    /// returned. Without that, the waits priced after a core halted for
    /// its last reads were charged to its first access after it woke, in
    /// an interrupt's latency.
    #[inline]
    pub fn resume(&mut self, core: usize, now: u64) -> u64 {
        let queue = &mut self.queues[core];
        if now <= queue.clock + IDLE_GAP_NS || queue.owed() == 0 {
            return 0;
        }
        let forgiven = queue.owed().min(now - queue.clock);
        queue.charged += forgiven;
        forgiven
    }

    /// Takes the waits priced for `core` and not yet charged to it.
    #[inline]
    pub fn take_debt(&mut self, core: usize) -> u64 {
        let queue = &mut self.queues[core];
        let owed = queue.owed();
        // Every call ends here and almost always owes nothing: no write then.
        if owed != 0 {
            queue.charged += owed;
        }
        owed
    }

    /// Takes `core`'s debt as [`Self::take_debt`] does, paid by its read
    /// presented at `arrival` within a call: the call's other requests at
    /// that time are moved by it (see `Queue::paid`).
    pub fn take_debt_at(&mut self, core: usize, arrival: u64) -> u64 {
        let owed = self.take_debt(core);
        let queue = &mut self.queues[core];
        queue.paid_at = arrival;
        queue.paid = owed;
        owed
    }

    /// Grants the bus slot by slot while the grant is known: at each slot
    /// boundary, to the core whose oldest pending request, arrived by
    /// then, queued first, once no running core can still present a
    /// request arriving by then.
    fn release(&mut self) {
        let service = self.bus.service_ns();
        loop {
            let Some(earliest) = self.queues.iter().filter_map(Queue::head_time).min() else {
                self.blocked_on = None;
                return;
            };
            // The next slot starts when the bus is free and a request is there.
            let boundary = self.free_at.max(earliest);
            // A core with a pending request presents nothing before it (a
            // core's requests come in its time order), so only cores with
            // none can still add a contender: each must have passed the
            // boundary. What a core owes and has not paid moves its next
            // request that much later, so it counts as passed time.
            let furthest = self.queues.iter().map(|q| q.clock).max().unwrap_or(0);
            let blocker = self.queues.iter().position(|q| {
                q.pending.is_empty()
                    && q.clock + q.owed() <= boundary
                    && furthest - q.clock <= self.max_skew_ns
            });
            if let Some(blocker) = blocker {
                // Unblocked once its clock is past the boundary (or by a
                // request of its own).
                let owed = self.queues[blocker].owed();
                self.blocked_on = Some((blocker, (boundary + 1).saturating_sub(owed)));
                return;
            }
            self.blocked_on = None;
            // The cores that would have held this slot back but for being
            // taken as halted: it may start after a request they present
            // when they wake (`request`).
            for q in &mut self.queues {
                if q.pending.is_empty() && q.clock + q.owed() <= boundary {
                    q.behind = true;
                }
            }
            // First come, first served among the cores' oldest requests
            // that have arrived: the one queued longest, ties round robin
            // from the core after the one granted last.
            let cores = self.queues.len();
            let (core, time) = (1..=cores)
                .map(|step| (self.last_granted + step) % cores)
                .filter_map(|index| {
                    let queue = &self.queues[index];
                    let time = queue.head_time().filter(|&t| t <= boundary)?;
                    Some((queue.queued_since()?, index, time))
                })
                .min_by_key(|&(since, _, _)| since)
                .map(|(_, index, time)| (index, time))
                .expect("the earliest head has arrived by the boundary");
            let queue = &mut self.queues[core];
            let pending = queue.pending.pop_front().expect("a head");
            queue.pending_prefetches.remove(&pending);
            self.grant(core, pending, time, boundary);
            self.free_at = boundary + service;
        }
    }

    /// Gives `core`'s request, happened at `time` in time order, the slot
    /// starting at `boundary`, and prices its wait.
    fn grant(&mut self, core: usize, pending: Pending, time: u64, boundary: u64) {
        let queued = time.max(self.queues[core].last_slot_end).min(boundary);
        self.bus.book(core, time, queued, boundary, pending.kind);
        self.last_granted = core;
        if self.recent.len() == RECENT_SLOTS {
            self.recent.pop_front();
        }
        self.recent.push_back(Slot {
            core,
            kind: pending.kind,
            line: pending.line,
            queued,
            start: boundary,
        });
        self.queues[core].last_slot_end = boundary + self.bus.service_ns();
        #[cfg(test)]
        self.granted.push((core, time, boundary));
        let wait = boundary - time;
        match pending.kind {
            Transfer::Demand | Transfer::Walk => self.queues[core].price(wait),
            Transfer::WriteBack => {
                // The core waited for the buffer entry the write-back
                // takes: until the write-back that held it started.
                let queue = &mut self.queues[core];
                queue.price(queue.eviction_started.saturating_sub(time));
                queue.eviction_started = boundary;
            }
            Transfer::Prefetch if wait > 0 => {
                self.delayed_prefetches.push((core, pending.line, wait));
            }
            _ => {}
        }
    }

    /// The slot a request of `core` that happened at `time`, behind the
    /// slots granted, takes in time order: it joins the bus's queue at `time` (or when the core's own
    /// slot before it ends), and waits for the rest of the slot under way
    /// then and one slot of each other core whose head request had queued
    /// by then and not started (first come, first served among the heads:
    /// a core's next request queues when its slot ends, behind this one).
    fn slot_in_time_order(&self, core: usize, time: u64) -> u64 {
        let service = self.bus.service_ns();
        let queued = time.max(self.queues[core].last_slot_end);
        let mut in_service_until = queued;
        // Each other core's earliest slot starting after `queued` (its head
        // request then), and when that request queued.
        let mut heads: [Option<(u64, u64)>; MAX_CORES] = [None; MAX_CORES];
        for slot in self.recent.iter().filter(|slot| slot.core != core) {
            if slot.start <= queued {
                if queued < slot.start + service {
                    in_service_until = in_service_until.max(slot.start + service);
                }
            } else if heads[slot.core].is_none_or(|(start, _)| slot.start < start) {
                heads[slot.core] = Some((slot.start, slot.queued));
            }
        }
        let ahead = heads
            .iter()
            .flatten()
            .filter(|&&(_, head_queued)| head_queued <= queued)
            .count() as u64;
        in_service_until + ahead * service
    }

    /// A slot starting at `start` was given to `core` behind the slots
    /// granted: in time order the other cores' slots from `start` on move
    /// a slot later, each as far as the one before it pushes it, until an
    /// idle gap takes the push up. Each core so moved owes its first moved
    /// slot's delay (its reads come that much later, and so does all it
    /// does after; a prefetch's line arrives that much later; a write-back
    /// stalls no one); if the push reaches the last slot granted, the bus
    /// is free that much later.
    fn displace(&mut self, core: usize, start: u64) {
        let service = self.bus.service_ns();
        let mut moved: Vec<usize> = (0..self.recent.len())
            .filter(|&i| self.recent[i].core != core && self.recent[i].start >= start)
            .collect();
        moved.sort_unstable_by_key(|&i| self.recent[i].start);
        let mut end = start + service;
        // Each core's first moved slot's delay: the core, charged it, does
        // all it does after that much later, so its later requests queued
        // that much later too.
        let mut delayed: [Option<u64>; MAX_CORES] = [None; MAX_CORES];
        let mut reached_the_last = true;
        for i in moved {
            let slot = self.recent[i];
            if slot.start >= end {
                reached_the_last = false;
                break;
            }
            let delay = end - slot.start;
            self.recent[i].start = end;
            end += service;
            let queue = &mut self.queues[slot.core];
            queue.last_slot_end = queue.last_slot_end.max(end);
            if let Some(first_delay) = delayed[slot.core] {
                self.recent[i].queued = (slot.queued + first_delay).min(end - service);
                continue;
            }
            delayed[slot.core] = Some(delay);
            match slot.kind {
                Transfer::Demand | Transfer::Walk => queue.price(delay),
                Transfer::Prefetch => self.delayed_prefetches.push((slot.core, slot.line, delay)),
                Transfer::WriteBack => {}
            }
        }
        if reached_the_last {
            self.free_at = self.free_at.max(end);
        }
    }

    /// Whether a prefetch of `line` by `core` may still be delayed: it
    /// waits to be priced, or was priced with a wait not yet taken.
    pub fn may_delay(&self, core: usize, line: u64) -> bool {
        self.queues[core].pending_prefetches.holds(line)
            || self
                .delayed_prefetches
                .iter()
                .any(|&(c, l, _)| c == core && l == line)
    }

    /// Whether a prefetch was priced with a wait since last asked.
    pub fn has_delayed_prefetches(&self) -> bool {
        !self.delayed_prefetches.is_empty()
    }

    /// Takes the prefetches priced with a wait since last asked.
    pub fn take_delayed_prefetches(&mut self) -> Vec<(usize, u64, u64)> {
        std::mem::take(&mut self.delayed_prefetches)
    }

    /// Starts `core`'s window of counters at `from_ns`.
    pub fn start_window(&mut self, core: usize, from_ns: u64) {
        self.bus.start_window(core, from_ns);
    }

    /// `core`'s counters since its window started (requests priced so far).
    pub fn window(&self, core: usize) -> WindowCounters {
        self.bus.window(core)
    }

    /// The counters so far.
    pub fn stats(&self) -> BusStats {
        self.bus.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: u64 = 10;
    const SKEW: u64 = 4_000;

    #[test]
    fn a_core_alone_is_first_come_first_served() {
        let mut weave = Weave::new(1, SERVICE, SKEW);
        for arrival in [100, 100, 105, 200] {
            weave.request(0, arrival, Transfer::Prefetch, 0);
        }
        let starts: Vec<u64> = weave.granted.iter().map(|g| g.2).collect();
        assert_eq!(starts, [100, 110, 120, 200]);
    }

    #[test]
    fn no_slot_is_granted_before_every_running_core_has_passed_it() {
        let mut weave = Weave::new(2, SERVICE, SKEW);
        weave.request(0, 100, Transfer::Prefetch, 0);
        // Core 1 could still present a request at 100.
        assert!(weave.granted.is_empty());
        weave.reached(1, 100);
        assert!(weave.granted.is_empty());
        weave.reached(1, 101);
        assert_eq!(weave.granted, [(0, 100, 100)]);
    }

    #[test]
    fn a_read_waits_for_a_core_that_queued_first_though_it_arrives_later() {
        let mut weave = Weave::new(4, SERVICE, SKEW);
        weave.reached(2, 1_000);
        weave.reached(3, 1_000);
        // Core 0 takes the bus at 0; its read at 5 queues when that slot
        // ends, at 10, and core 1's read at 8 queued before it.
        weave.request(0, 0, Transfer::Prefetch, 0);
        weave.request(0, 5, Transfer::Demand, 0);
        // Its slot is not known yet (core 1 is at 0): what is known is owed
        // at once, its own prefetch's slot ahead of it.
        assert_eq!(weave.take_debt(0), 5);
        weave.request(1, 8, Transfer::Demand, 0);
        weave.reached(1, 1_000);
        weave.reached(0, 1_000);
        assert_eq!(weave.granted, [(0, 0, 0), (1, 8, 10), (0, 5, 20)]);
        assert_eq!(weave.take_debt(0), 10);
        assert_eq!(weave.take_debt(1), 2);
    }

    #[test]
    fn a_read_ahead_of_backlogs_pushes_them_back_and_the_bus_never_holds_two() {
        let mut weave = Weave::new(4, SERVICE, SKEW);
        // Cores 1..=3 queue 100 prefetches each at 0; core 0 reads at 505.
        for core in 1..4 {
            for _ in 0..100 {
                weave.request(core, 0, Transfer::Prefetch, 0);
            }
        }
        weave.request(0, 505, Transfer::Demand, 0);
        for core in 0..4 {
            weave.reached(core, 10_000);
        }
        let mut starts: Vec<u64> = weave.granted.iter().map(|g| g.2).collect();
        starts.sort_unstable();
        assert!(starts.windows(2).all(|w| w[1] >= w[0] + SERVICE));
        assert_eq!(*starts.last().unwrap(), 300 * SERVICE);
        // It waits the rest of the slot under way and one slot of each of
        // the two other cores: their slots before ended by 505, so their
        // next requests queued before it; the core being served queues
        // its next behind it.
        let wait = weave.take_debt(0);
        assert_eq!(wait, 5 + 2 * SERVICE);
    }

    #[test]
    fn a_full_eviction_buffer_stalls_the_core_until_it_empties() {
        let mut weave = Weave::new(2, SERVICE, SKEW);
        weave.reached(1, 1_000);
        // Core 1 has a backlog of five at 0: core 0's write-backs at 1
        // and 2 find the bus busy; the second waits for the first to start.
        for _ in 0..5 {
            weave.request(1, 0, Transfer::Prefetch, 0);
        }
        weave.request(0, 1, Transfer::WriteBack, 0);
        weave.request(0, 2, Transfer::WriteBack, 0);
        weave.reached(0, 1_000);
        weave.reached(1, 2_000);
        let core0: Vec<u64> = weave
            .granted
            .iter()
            .filter(|g| g.0 == 0)
            .map(|g| g.2)
            .collect();
        // Core 0's first at 10 (queued at 1, before core 1's next queued
        // at 10); its second queues when that slot ends, at 20, after core
        // 1's next, so at 30; the core stalled from 2 to 10.
        assert_eq!(core0, [10, 30]);
        assert_eq!(weave.take_debt(0), 8);
    }

    /// Core 1 streams a request every 10 ns up to 2 990 while core 0, more
    /// than the skew behind at 100, is taken as halted and holds nothing.
    fn halted_behind_a_stream() -> Weave {
        let mut weave = Weave::new(2, SERVICE, 1_000);
        weave.reached(0, 100);
        for i in 0..300 {
            weave.reached(1, i * SERVICE);
            weave.request(1, i * SERVICE, Transfer::Prefetch, 0);
        }
        weave.reached(1, 3_000);
        weave
    }

    #[test]
    fn a_core_that_wakes_behind_the_bus_takes_the_slot_its_time_gives_it() {
        let mut weave = halted_behind_a_stream();
        assert_eq!(weave.free_at, 3_000);
        // Core 0 wakes at 2 105 and reads: in time order the slot under
        // way ends at 2 110, not after core 1's slots to 3 000.
        weave.reached(0, 2_105);
        weave.request(0, 2_105, Transfer::Demand, 0);
        weave.reached(0, 5_000);
        weave.reached(1, 5_000);
        assert_eq!(weave.take_debt(0), 5);
        // The bus's timeline grew by that slot: the next grant starts later.
        assert_eq!(weave.free_at, 3_000 + SERVICE);
        weave.request(1, 3_000, Transfer::Prefetch, 0);
        weave.reached(1, 6_000);
        weave.reached(0, 6_000);
        assert_eq!(weave.granted.last(), Some(&(1, 3_000, 3_010)));
    }

    #[test]
    fn a_woken_core_behind_the_bus_never_waits_for_slots_granted_after_its_time() {
        // As above, but core 0 reads on at 2 300 and 2 600, still behind the
        // slots granted while it was halted: in time order each waits at
        // most the slot under way and one slot of core 1's (its stream had
        // no slack, so each read ahead of it left it a request queued
        // first), not for core 1's slots to 3 000.
        let mut weave = halted_behind_a_stream();
        for time in [2_105, 2_300, 2_600] {
            weave.reached(0, time);
            weave.request(0, time, Transfer::Demand, 0);
            weave.reached(1, 5_000);
            let debt = weave.take_debt(0);
            assert!(debt <= 2 * SERVICE, "a read at {time} owed {debt}");
        }
    }
}
