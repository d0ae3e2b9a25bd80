//! The shared bus and DRAM as one resource: a queue kept as a history of free intervals, correct when requests arrive out of time order.
//!
//! Per-core timing runs each vCPU up to a quantum Q ahead of the others, so
//! the model hears of a request at t = 100 ns from a core that is behind
//! after it has answered one at t = 900 ns from a core that is ahead. A
//! queue that only remembers "busy until" would make the early request wait
//! for the late one. Instead, as in Graphite's history-list queue model,
//! the bus keeps the intervals in which it is still free; a request is
//! served in the first free interval that holds its whole service time at
//! or after its arrival, and that time is taken out of the interval. What
//! follows, and what the tests check:
//!
//! - no request is served before it arrives, and no two at once;
//! - requests presented in time order are served first come, first served;
//! - a request that arrives in a stretch the bus is free for a whole
//!   service time is served at once, whatever was presented before it, so
//!   requests that do not overlap get the same answers in any order;
//! - an early request presented after later ones cannot push them back
//!   (they have been answered): it takes the first gap after its arrival
//!   that fits, so it may wait where first come, first served would have
//!   made a later one wait instead, and the bus may stay idle for less than
//!   one service time before a booked slot;
//! - the answer depends only on the sequence of calls (deterministic).
//!
//! The history is bounded: free intervals that end more than `history_ns`
//! before the latest arrival seen, and the oldest ones beyond
//! `max_intervals`, are forgotten, that is taken as busy. A request that
//! arrives before the forgotten horizon is still never served before its
//! arrival; it is counted in [`BusStats::before_history`] (0 when
//! `history_ns` exceeds the cores' skew: the quantum plus the longest stall
//! a block can charge).

use std::collections::VecDeque;

/// Counters of the bus's use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Requests served.
    pub requests: u64,
    /// Total time requests waited for the bus, in ns.
    pub wait_ns: u64,
    /// Requests that arrived before the history's horizon (served no
    /// earlier than the first remembered free interval).
    pub before_history: u64,
}

/// One shared resource with a fixed service time per request.
#[derive(Debug, Clone)]
pub struct BusQueue {
    /// Free intervals `[start, end)`, sorted and disjoint; the last one
    /// never ends (`end == u64::MAX`). Gaps shorter than a service time
    /// can never be used and are not kept.
    free: VecDeque<(u64, u64)>,
    service_ns: u64,
    history_ns: u64,
    max_intervals: usize,
    /// Arrivals before this time found their history forgotten.
    horizon: u64,
    latest_arrival: u64,
    stats: BusStats,
}

impl BusQueue {
    /// An idle bus whose every request occupies it `service_ns` (at least 1).
    /// It remembers free time back to `history_ns` before the latest
    /// arrival, in at most `max_intervals` intervals (at least 2).
    pub fn new(service_ns: u64, history_ns: u64, max_intervals: usize) -> Self {
        let max_intervals = max_intervals.max(2);
        let mut free = VecDeque::with_capacity(max_intervals + 2);
        free.push_back((0, u64::MAX));
        Self {
            free,
            service_ns: service_ns.max(1),
            history_ns,
            max_intervals,
            horizon: 0,
            latest_arrival: 0,
            stats: BusStats::default(),
        }
    }

    /// The service time per request, in ns.
    pub fn service_ns(&self) -> u64 {
        self.service_ns
    }

    /// Books the bus for a request arriving at `arrival` and returns when
    /// its service starts (never before `arrival`); it ends a service time
    /// later.
    pub fn reserve(&mut self, arrival: u64) -> u64 {
        if arrival < self.horizon {
            self.stats.before_history += 1;
        }
        self.latest_arrival = self.latest_arrival.max(arrival);
        let service = self.service_ns;
        // The first interval that ends after the arrival; the last never ends.
        let mut index = self.free.partition_point(|&(_, end)| end <= arrival);
        let start = loop {
            let (from, to) = self.free[index];
            let start = from.max(arrival);
            if to - start >= service {
                break start;
            }
            index += 1;
        };
        self.take(index, start);
        self.forget_old();
        self.stats.requests += 1;
        self.stats.wait_ns += start - arrival;
        start
    }

    /// Takes `[start, start + service)` out of free interval `index`.
    fn take(&mut self, index: usize, start: u64) {
        let (from, to) = self.free[index];
        let end = start + self.service_ns;
        let before = (start - from >= self.service_ns).then_some((from, start));
        let after = (to == u64::MAX || to - end >= self.service_ns).then_some((end, to));
        match (before, after) {
            (Some(before), Some(after)) => {
                self.free[index] = before;
                self.free.insert(index + 1, after);
            }
            (Some(kept), None) | (None, Some(kept)) => self.free[index] = kept,
            (None, None) => {
                self.free.remove(index);
            }
        }
    }

    fn forget_old(&mut self) {
        let oldest_useful = self.latest_arrival.saturating_sub(self.history_ns);
        while self.free.len() > 1
            && (self.free[0].1 <= oldest_useful || self.free.len() > self.max_intervals)
        {
            if let Some((_, end)) = self.free.pop_front() {
                self.horizon = self.horizon.max(end);
            }
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> BusStats {
        self.stats
    }

    /// How many free intervals are remembered (for tests and reports).
    pub fn intervals(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_bus_serves_at_once_and_a_busy_one_queues() {
        let mut bus = BusQueue::new(10, 1_000, 64);
        assert_eq!(bus.reserve(100), 100);
        assert_eq!(bus.reserve(105), 110);
        assert_eq!(bus.reserve(105), 120);
        assert_eq!(bus.reserve(200), 200);
        assert_eq!(bus.stats().wait_ns, 5 + 15);
    }

    #[test]
    fn a_late_presented_early_request_fills_a_gap_before_booked_ones() {
        let mut bus = BusQueue::new(10, 1_000, 64);
        assert_eq!(bus.reserve(900), 900);
        // Arrives earlier, heard of later: the bus was free then.
        assert_eq!(bus.reserve(100), 100);
        // Fits the free [885, 900) before 900's slot...
        assert_eq!(bus.reserve(885), 885);
        // ... but a gap of 5 cannot hold one: served after 900's slot.
        assert_eq!(bus.reserve(895), 910);
        assert_eq!(bus.stats().before_history, 0);
    }

    #[test]
    fn forgotten_history_is_taken_as_busy_and_counted() {
        let mut bus = BusQueue::new(10, 100, 64);
        bus.reserve(0);
        bus.reserve(500);
        bus.reserve(1_000);
        // The free stretch [10, 500) ended before 1000 - 100: forgotten.
        let start = bus.reserve(50);
        assert_eq!(
            start, 510,
            "served inside forgotten time, or not in the next gap"
        );
        assert_eq!(bus.stats().before_history, 1);
    }

    #[test]
    fn the_history_stays_within_its_bound() {
        let mut bus = BusQueue::new(10, u64::MAX, 8);
        for i in 0..100 {
            bus.reserve(i * 100);
            assert!(bus.intervals() <= 8);
        }
    }
}
