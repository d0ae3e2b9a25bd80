//! The bus priced in time order behind per-core timing's skew: requests wait in per-core queues until no core can still present an earlier one, then go to the lanes in time order, and each core's waits come back to it as a debt.
//!
//! Per-core timing runs one core up to a quantum ahead of the others, so a
//! request reaches the model before the requests of cores behind it that
//! came earlier. Pricing it on arrival needs a guess about those (the
//! estimates of the first designs); here it is priced only once no core
//! can present an earlier request: every core that is running has passed
//! its time (a core further behind than the skew bound is halted and does
//! not hold the others back). Requests then reach [`BusLanes`] in time
//! order, exactly as with a quantum of 0, and a core's wait is owed to it:
//! the model adds what a core owes to the stall of its next access (ZSim's bound and
//! weave, with the weave running continuously at the safe time).
//!
//! A request presented while the core still owed waits not yet priced
//! happened that much later in time order: when its turn comes, its time
//! is moved by the waits priced for the core's earlier requests that the
//! core had not been charged when it presented it.

use std::collections::VecDeque;

use crate::bus::{BusLanes, BusStats, Transfer, WindowCounters};

/// Dirty lines a core's eviction buffer holds until the bus takes them
/// (assumed: no source gives the A53's or the ARM11's). A write-back that
/// finds it full stalls its core until the oldest one starts: without that
/// a core that writes lines back faster than the bus carries them would
/// queue them without bound and never wait.
const EVICTION_BUFFER: usize = 1;

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

/// One core's side of the weave.
#[derive(Debug, Clone, Default)]
struct Queue {
    pending: VecDeque<Pending>,
    /// The core's clock is known to have reached this.
    clock: u64,
    /// Waits priced for the core's requests that stall it, in total.
    priced: u64,
    /// Of those, what the core has been charged.
    charged: u64,
    /// `charged` when the core's current call began (its requests all
    /// happen at the call's time, moved by what it owed then).
    charged_at_call: u64,
    /// When the core's last [`EVICTION_BUFFER`] write-backs started (the
    /// oldest next), each freeing its entry of the buffer.
    evictions: [u64; EVICTION_BUFFER],
    next_eviction: usize,
}

impl Queue {
    /// When its oldest pending request happened in time order.
    fn head_time(&self) -> Option<u64> {
        self.pending
            .front()
            .map(|p| p.arrival + (self.priced - p.charged_before.min(self.priced)))
    }
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
    /// The core granted last: the round robin starts after it.
    last_granted: usize,
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
            last_granted: cores.max(1) - 1,
        }
    }

    /// The service time per request, in ns.
    pub fn service_ns(&self) -> u64 {
        self.bus.service_ns()
    }

    /// Presents a request of `core` at `arrival` (its clock); it is priced
    /// when no core can present an earlier one. Returns its wait if that
    /// was at once (it is owed to the core either way: [`Self::take_debt`]).
    pub fn request(&mut self, core: usize, arrival: u64, kind: Transfer, line: u64) -> Option<u64> {
        let queue = &mut self.queues[core];
        queue.clock = queue.clock.max(arrival);
        // What the core had been charged when the call began: a wait it
        // pays within this call (a read's) still moves this request.
        let charged_before = queue.charged_at_call;
        queue.pending.push_back(Pending {
            arrival,
            kind,
            line,
            charged_before,
        });
        let before = queue.pending.len();
        let priced_before = queue.priced;
        self.release();
        let queue = &self.queues[core];
        // Priced at once: its queue emptied down past it.
        (queue.pending.len() < before && queue.pending.is_empty())
            .then(|| queue.priced - priced_before)
    }

    /// `core`'s clock has reached `time`.
    pub fn reached(&mut self, core: usize, time: u64) {
        let queue = &mut self.queues[core];
        // The call ends here: its stall holds everything charged so far.
        queue.charged_at_call = queue.charged;
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

    /// Takes the waits priced for `core` and not yet charged to it.
    pub fn take_debt(&mut self, core: usize) -> u64 {
        let queue = &mut self.queues[core];
        let owed = queue.priced - queue.charged;
        queue.charged = queue.priced;
        owed
    }

    /// Grants the bus slot by slot while the grant is known: at each slot
    /// boundary, round robin among the cores whose oldest pending request
    /// has arrived by then, once no running core can still present a
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
                    && q.clock + (q.priced - q.charged) <= boundary
                    && furthest - q.clock <= self.max_skew_ns
            });
            if let Some(blocker) = blocker {
                // Unblocked once its clock is past the boundary (or by a
                // request of its own).
                let owed = self.queues[blocker].priced - self.queues[blocker].charged;
                self.blocked_on = Some((blocker, (boundary + 1).saturating_sub(owed)));
                return;
            }
            self.blocked_on = None;
            // Round robin: the first core after the last one granted whose
            // head has arrived.
            let cores = self.queues.len();
            let (core, time) = (1..=cores)
                .map(|step| (self.last_granted + step) % cores)
                .find_map(|index| {
                    self.queues[index]
                        .head_time()
                        .filter(|&t| t <= boundary)
                        .map(|t| (index, t))
                })
                .expect("the earliest head has arrived by the boundary");
            let pending = self.queues[core].pending.pop_front().expect("a head");
            self.bus.book(core, time, boundary, pending.kind);
            self.free_at = boundary + service;
            self.last_granted = core;
            let wait = boundary - time;
            match pending.kind {
                Transfer::Demand | Transfer::Walk => self.queues[core].priced += wait,
                Transfer::WriteBack => {
                    // The core waited for the buffer entry the write-back
                    // takes: until the write-back that held it started.
                    let queue = &mut self.queues[core];
                    let freed = queue.evictions[queue.next_eviction];
                    queue.evictions[queue.next_eviction] = boundary;
                    queue.next_eviction = (queue.next_eviction + 1) % EVICTION_BUFFER;
                    queue.priced += freed.saturating_sub(time);
                }
                Transfer::Prefetch if wait > 0 => {
                    self.delayed_prefetches.push((core, pending.line, wait));
                }
                _ => {}
            }
        }
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
