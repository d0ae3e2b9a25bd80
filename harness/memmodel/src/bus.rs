//! The shared bus and DRAM as one resource shared round robin among the cores, each core's requests in a lane of its own so the skew between cores' clocks cannot reorder them.
//!
//! Per-core timing runs each vCPU up to a quantum Q ahead of the others, so
//! the model hears of a request at t = 100 ns from a core that is behind
//! after it has answered one at t = 900 ns from a core that is ahead. One
//! queue in the order the model hears of requests would make the early
//! request wait for the late one. But each core's own requests do reach
//! the model in that core's time order: a core's calls follow its clock.
//! So every core has a **lane**, the requests it has at the bus one after
//! another (its prefetches queue there behind each other), and the lanes
//! share the bus as round-robin arbitration among the cores does:
//!
//! - a request of core `c` arriving at `t` starts competing when `c`'s
//!   earlier requests are served (`max(t, lane end)`);
//! - it then waits one service time for every other core that has a
//!   request at the bus at that moment (or that core's remaining time at
//!   the bus, if shorter): the arbiter grants every waiting core a turn
//!   before this one's.
//!
//! So with `k` other cores always at the bus a request takes `k + 1`
//! service times, whatever their backlogs (first come, first served would
//! make it wait for all of them). Exact round robin would make a request
//! that arrives at a random moment wait about half a round on average and a
//! whole round at worst: the model charges the whole round, an upper
//! estimate. And a request that waits only a turn for a core with a
//! backlog does not push that backlog back (its requests were answered
//! already): until that core's next request, which sees this one at the
//! bus and waits for it, the bus serves up to one request per core more
//! than its bandwidth.
//!
//! Whether another core has work at the bus at a time is known from its
//! lane's history of busy periods when its clock has passed that time.
//! When it has not (the core is *behind*), its requests are not known yet:
//! the model prices them from that core's recent use of the bus
//! (`MemoryModel::unseen_shares`) and passes the wait in as `unseen_ns`.
//!
//! What the tests check: no request is served before it arrives; a core's
//! requests are served in its own order, a service time apart at least; a
//! core alone at the bus waits only for its own earlier requests; with `k`
//! other cores at the bus a request takes `k + 1` service times, not their
//! whole backlogs; the answer depends only on the sequence of calls.
//!
//! Each lane remembers its last [`PERIODS`] busy periods; asking about a
//! time before the oldest of a full history answers "not at the bus" and is
//! counted in [`BusStats::beyond_history`] (0 while the periods a core has
//! in one quantum fit the history).

/// Busy periods each lane remembers.
pub const PERIODS: usize = 64;

/// Counters of the bus's use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Requests served (reads and write-backs).
    pub requests: u64,
    /// Total time requests waited, in ns: for their own core's earlier
    /// requests, for other cores' turns, and for unseen requests.
    pub wait_ns: u64,
    /// Questions about a core's lane at a time older than its history
    /// (answered "not at the bus").
    pub beyond_history: u64,
}

/// One core's requests at the bus: its recent busy periods, oldest first,
/// in a ring.
#[derive(Debug, Clone)]
struct Lane {
    /// `[from, to)`: the lane had a request at the bus throughout.
    periods: [(u64, u64); PERIODS],
    /// Index of the newest period, and how many are kept.
    newest: usize,
    kept: usize,
}

impl Lane {
    fn new() -> Self {
        Self {
            periods: [(0, 0); PERIODS],
            newest: 0,
            kept: 0,
        }
    }

    /// When the lane's booked requests are all served (0 if none yet).
    fn end(&self) -> u64 {
        if self.kept == 0 {
            0
        } else {
            self.periods[self.newest].1
        }
    }

    /// How long after `time` the lane stays at the bus, if `time` is in a
    /// remembered busy period; `Err` if `time` is older than the history.
    fn remaining_at(&self, time: u64) -> Result<u64, ()> {
        let mut index = self.newest;
        for _ in 0..self.kept {
            let (from, to) = self.periods[index];
            if to <= time {
                return Ok(0);
            }
            if from <= time {
                return Ok(to - time);
            }
            index = (index + PERIODS - 1) % PERIODS;
        }
        if self.kept == PERIODS { Err(()) } else { Ok(0) }
    }

    /// Books `[from, to)`, merging with the newest period if it touches it.
    fn book(&mut self, from: u64, to: u64) {
        if self.kept > 0 && self.periods[self.newest].1 >= from {
            let newest = &mut self.periods[self.newest];
            newest.1 = newest.1.max(to);
            return;
        }
        self.newest = (self.newest + 1) % PERIODS;
        self.periods[self.newest] = (from, to);
        self.kept = (self.kept + 1).min(PERIODS);
    }
}

/// One shared resource with a fixed service time per request, shared
/// round robin among `cores` lanes.
#[derive(Debug, Clone)]
pub struct BusLanes {
    lanes: Vec<Lane>,
    service_ns: u64,
    stats: BusStats,
}

impl BusLanes {
    /// An idle bus of `cores` lanes whose every request occupies it
    /// `service_ns` (at least 1).
    pub fn new(cores: usize, service_ns: u64) -> Self {
        Self {
            lanes: vec![Lane::new(); cores.max(1)],
            service_ns: service_ns.max(1),
            stats: BusStats::default(),
        }
    }

    /// The service time per request, in ns.
    pub fn service_ns(&self) -> u64 {
        self.service_ns
    }

    /// When `core`'s request arriving at `arrival` starts competing for
    /// the bus: once its own earlier requests are served.
    pub fn competes_from(&self, core: usize, arrival: u64) -> u64 {
        arrival.max(self.lanes[core].end())
    }

    /// How long after `time` `core` keeps a request at the bus, as far as
    /// its known requests say (0 if it has none there then).
    pub fn at_bus_after(&mut self, core: usize, time: u64) -> u64 {
        match self.lanes[core].remaining_at(time) {
            Ok(remaining) => remaining,
            Err(()) => {
                self.stats.beyond_history += 1;
                0
            }
        }
    }

    /// Whether `core`'s known requests keep it at the bus at `time` (no
    /// counting: for deciding, not pricing).
    pub fn known_at_bus(&self, core: usize, time: u64) -> bool {
        self.lanes[core].remaining_at(time).is_ok_and(|r| r > 0)
    }

    /// Books a read of `core` arriving at `arrival`, with `unseen_ns` of
    /// waiting owed to cores whose requests are not known yet. Returns
    /// when its service starts (never before `arrival`); it ends a service
    /// time later.
    pub fn reserve(&mut self, core: usize, arrival: u64, unseen_ns: u64) -> u64 {
        let service = self.service_ns;
        let competes = self.competes_from(core, arrival);
        let mut turns = 0;
        for other in 0..self.lanes.len() {
            if other == core {
                continue;
            }
            // Its turn comes first (its requests booked later see this
            // one at the bus and wait for it alike).
            turns += self.at_bus_after(other, competes).min(service);
        }
        let start = competes + turns + unseen_ns;
        self.lanes[core].book(arrival, start + service);
        self.stats.requests += 1;
        self.stats.wait_ns += start - arrival;
        start
    }

    /// Books a write-back of `core` at `time`: it occupies `core`'s lane a
    /// service time, after its earlier requests, and stalls nobody.
    pub fn write(&mut self, core: usize, time: u64) {
        let start = self.competes_from(core, time);
        self.lanes[core].book(time, start + self.service_ns);
        self.stats.requests += 1;
    }

    /// The counters so far.
    pub fn stats(&self) -> BusStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_core_waits_only_for_its_own_requests() {
        let mut bus = BusLanes::new(4, 10);
        assert_eq!(bus.reserve(0, 100, 0), 100);
        assert_eq!(bus.reserve(0, 100, 0), 110);
        assert_eq!(bus.reserve(0, 105, 0), 120);
        assert_eq!(bus.reserve(0, 200, 0), 200);
        assert_eq!(bus.stats().wait_ns, 10 + 15);
    }

    #[test]
    fn another_core_at_the_bus_costs_one_turn_not_its_backlog() {
        let mut bus = BusLanes::new(2, 10);
        // Core 1 queues five requests at 100: at the bus until 150.
        for _ in 0..5 {
            bus.reserve(1, 100, 0);
        }
        // Core 0 at 105 waits a service time for core 1's turn, not for
        // its whole backlog...
        assert_eq!(bus.reserve(0, 105, 0), 115);
        // ... its next request, after its own until 125, another turn of
        // core 1's...
        assert_eq!(bus.reserve(0, 120, 0), 135);
        // ... and core 1's next, at 130 while core 0's is at the bus until
        // 145, after its own backlog (150): core 0 has left by then.
        assert_eq!(bus.reserve(1, 130, 0), 150);
        assert_eq!(bus.reserve(1, 150, 0), 160);
    }

    #[test]
    fn a_core_ahead_in_time_is_seen_only_where_it_was_at_the_bus() {
        let mut bus = BusLanes::new(2, 10);
        // Core 1, ahead, was at the bus over [900, 910) only.
        bus.reserve(1, 900, 0);
        // Core 0's request at 100 is heard of later: the bus was free then.
        assert_eq!(bus.reserve(0, 100, 0), 100);
        assert_eq!(bus.reserve(0, 905, 0), 910);
    }

    #[test]
    fn unseen_requests_delay_the_start() {
        let mut bus = BusLanes::new(2, 10);
        assert_eq!(bus.reserve(0, 100, 20), 120);
        assert_eq!(bus.stats().wait_ns, 20);
    }

    #[test]
    fn a_history_too_short_for_the_question_is_counted() {
        let mut bus = BusLanes::new(2, 10);
        for i in 0..(PERIODS as u64 + 1) {
            bus.reserve(1, 1_000 + i * 100, 0);
        }
        // Core 1's first period has been forgotten.
        assert_eq!(bus.reserve(0, 1_005, 0), 1_005);
        assert_eq!(bus.stats().beyond_history, 1);
    }
}
