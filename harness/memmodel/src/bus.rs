//! Each core's lane at the shared bus (its busy periods and window counters), and the lanes' own round-robin rule: a request waits one turn per other lane at the bus, which the model no longer prices by (the weave's single-slot schedule does, `weave.rs`).
//!
//! The model books every transfer here as the weave granted it
//! ([`BusLanes::book`]): the lanes then hold each core's time at the bus
//! (waiting or served) for the window counters the fidelity checks read.
//! [`BusLanes::reserve`] is the rule the model priced by until issue 47's
//! capacity check: a lane per core, a read charged a turn for every other
//! lane at the bus when it competes, a write-back holding only its own
//! lane, and a turn taken ahead of a backlog not pushing it back; so the
//! lanes together could carry more than the bus (a copy on four `a53`
//! cores moved 2.1 times a third of it). It is kept as a standalone
//! arbiter with its own tests (`tests/bus_lanes.rs`); its description:
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
//! Whether another core has work at the bus at a time is known from its
//! lane's history of busy periods when its clock has passed that time.
//! The model's weave (`weave.rs`) presents requests only once every
//! running core has passed their time, so in the model no core is behind
//! and `unseen_ns` is 0; the lanes alone still take a wait owed to
//! requests not known yet (`unseen_ns`), which their host tests drive.
//!
//! Each lane also keeps its recent requests with the turn it was charged
//! for every other lane, and when a lane grows later (a core behind books
//! a request), the turns the grown lane now shows are recorded against the
//! requests that should have waited for them (`WindowCounters`'
//! `behind_settled_ns`): what the lanes later showed, next to what was
//! charged at pricing (with the weave, a request priced while another
//! core was more than the skew bound behind, taken as halted).
//!
//! Each lane remembers its last [`PERIODS`] busy periods; asking about a
//! time before the oldest of a full history answers "not at the bus" and is
//! counted in [`BusStats::beyond_history`] (0 while the periods a core has
//! in one quantum fit the history).

/// Busy periods each lane remembers.
pub const PERIODS: usize = 64;

/// Requests each lane remembers, to charge them turns shown later.
pub const REQUESTS: usize = 256;

/// Most cores a bus serves (each request keeps a turn per other core).
pub const MAX_CORES: usize = 16;

/// No demand read in a period.
const NO_DEMAND: u64 = u64::MAX;

/// What a request moves across the bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// A line read the core waits for (a data or instruction miss).
    Demand,
    /// A line read the prefetcher sent ahead (nobody waits for it yet).
    Prefetch,
    /// A translation table descriptor's line, for a walk the core waits for.
    Walk,
    /// A dirty line written back (nobody waits for it).
    WriteBack,
}

impl Transfer {
    /// Whether the core waits for the request (delaying it delays the core).
    pub fn stalls(self) -> bool {
        matches!(self, Self::Demand | Self::Walk)
    }
}

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

/// One core's use of the bus since a mark (`BusLanes::start_window`): all
/// integers, the same on every host. Lane time before the mark is not
/// counted; requests count if they arrive at or after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounters {
    /// The mark, in ns of the core's time.
    pub from_ns: u64,
    /// Time the lane had a request at the bus (waiting or served), in ns.
    pub lane_busy_ns: u64,
    /// ∫ min(lane's remaining time at the bus, service time) dt, in ns·ns:
    /// divided by the window's length, the wait another core's request
    /// arriving at a random moment owes this lane on average under the
    /// lanes' own rule (a turn per lane at the bus, `BusLanes::reserve`).
    pub lane_turn_area_ns2: u64,
    /// ∫ what the lane's request at the head of the bus's queue still
    /// holds dt, in ns·ns: a whole slot while it waits there (from when it
    /// arrived, or when the core's slot before it ended), what is left of
    /// its slot while it is served. Divided by the window's length, the
    /// wait another core's request arriving at a random moment owes this
    /// lane on average under the weave's single-slot schedule, first come
    /// first served among the lanes' heads (`Weave`). It differs from the
    /// turn area only while a served request has another of its lane
    /// behind it: that one joins the queue after the newcomer. Counted
    /// for requests granted after the mark.
    pub head_turn_area_ns2: u64,
    /// Time the lane had more than a service time of work left (a backlog
    /// behind the request at the head), in ns.
    pub lane_backlog_ns: u64,
    /// Lines read for the core (demand misses and prefetches).
    pub fills: u64,
    /// Dirty lines written back.
    pub write_backs: u64,
    /// Descriptor lines read from DRAM for walks.
    pub walk_reads: u64,
    /// Time the core's reads waited for the bus, in ns: at pricing, and
    /// charged later for turns other cores' lanes showed after.
    pub read_wait_ns: u64,
    /// Requests priced while another core that uses the bus was behind in
    /// time (its requests up to this one's arrival not known yet).
    pub behind_pricings: u64,
    /// Their waits as charged at pricing, in ns.
    pub behind_priced_ns: u64,
    /// Their waits as the lanes showed them once the cores behind had
    /// caught up, in ns (the booked part, plus every turn shown later).
    pub behind_settled_ns: u64,
}

/// `[from, to)`: the lane had a request at the bus throughout; and the
/// service start of its newest demand read, if it has one.
#[derive(Debug, Clone, Copy)]
struct Period {
    from: u64,
    to: u64,
    demand_start: u64,
}

/// A request the lane remembers: when it arrived and started competing,
/// what it is, and the turn charged for it to every other lane.
#[derive(Debug, Clone, Copy)]
struct Request {
    arrival: u64,
    competes: u64,
    kind: Transfer,
    /// Priced while another core that uses the bus was behind.
    behind: bool,
    charged: [u64; MAX_CORES],
}

/// One core's requests at the bus: its recent busy periods and requests,
/// oldest first, in rings.
#[derive(Debug, Clone)]
struct Lane {
    periods: [Period; PERIODS],
    newest: usize,
    kept: usize,
    requests: Box<[Request]>,
    newest_request: usize,
    requests_kept: usize,
    /// The core's clock is known to have reached this.
    clock: u64,
    window: WindowCounters,
    /// Twice `window.lane_turn_area_ns2` (exact in integers).
    turn_area_twice: u64,
    /// Twice `window.head_turn_area_ns2`.
    head_turn_twice: u64,
}

/// Twice the head-turn area from `clip` on of a request at the head of the
/// bus's queue from `queued`, served from `start` for `service`.
fn head_turn_twice(queued: u64, start: u64, service: u64, clip: u64) -> u64 {
    let waiting = start.saturating_sub(queued.max(clip));
    let served = (start + service).saturating_sub(start.max(clip));
    2 * waiting * service + served * served
}

/// What a period adds to the window's counters from `clip` on: busy time,
/// twice the turn area, backlog time.
fn measure(period: &Period, clip: u64, service: u64) -> (u64, u64, u64) {
    let low = period.from.max(clip);
    if period.to <= low {
        return (0, 0, 0);
    }
    let length = period.to - low;
    let twice_area = if length <= service {
        length * length
    } else {
        service * service + 2 * (length - service) * service
    };
    (length, twice_area, length.saturating_sub(service))
}

impl Lane {
    fn new() -> Self {
        Self {
            periods: [Period {
                from: 0,
                to: 0,
                demand_start: NO_DEMAND,
            }; PERIODS],
            newest: 0,
            kept: 0,
            requests: vec![
                Request {
                    arrival: 0,
                    competes: 0,
                    kind: Transfer::Demand,
                    behind: false,
                    charged: [0; MAX_CORES],
                };
                REQUESTS
            ]
            .into_boxed_slice(),
            newest_request: 0,
            requests_kept: 0,
            clock: 0,
            window: WindowCounters::default(),
            turn_area_twice: 0,
            head_turn_twice: 0,
        }
    }

    /// The ring slot of the `index`th kept period (0: the oldest).
    fn slot(&self, index: usize) -> usize {
        (self.newest + PERIODS - (self.kept - 1 - index)) % PERIODS
    }

    /// When the lane's booked requests are all served (0 if none yet).
    fn end(&self) -> u64 {
        if self.kept == 0 {
            0
        } else {
            self.periods[self.newest].to
        }
    }

    /// The index of the kept period holding `time`, `None` if none does;
    /// `Err` if `time` is older than a full history.
    fn holding(&self, time: u64) -> Result<Option<usize>, ()> {
        for index in (0..self.kept).rev() {
            let period = &self.periods[self.slot(index)];
            if period.to <= time {
                return Ok(None);
            }
            if period.from <= time {
                return Ok(Some(index));
            }
        }
        if self.kept == PERIODS {
            Err(())
        } else {
            Ok(None)
        }
    }

    /// How long after `time` the lane stays at the bus with requests that
    /// arrived by `seen_until`, if `time` is in a remembered busy period;
    /// `Err` if `time` is older than the history.
    fn remaining_at(&self, time: u64, seen_until: u64) -> Result<u64, ()> {
        Ok(match self.holding(time)? {
            Some(index) => {
                let period = &self.periods[self.slot(index)];
                if period.from <= seen_until {
                    period.to - time
                } else {
                    0
                }
            }
            None => 0,
        })
    }

    /// Adds to the window's counters what periods `first..` measure now,
    /// less `before` (what they measured before a change).
    fn count_change(&mut self, first: usize, before: (u64, u64, u64), service: u64) {
        let after = self.measure_from(first, service);
        self.window.lane_busy_ns += after.0.saturating_sub(before.0);
        self.turn_area_twice += after.1.saturating_sub(before.1);
        self.window.lane_backlog_ns += after.2.saturating_sub(before.2);
    }

    /// What periods `first..` add to the window's counters.
    fn measure_from(&self, first: usize, service: u64) -> (u64, u64, u64) {
        let mut sum = (0, 0, 0);
        for index in first..self.kept {
            let (busy, area, backlog) = measure(
                &self.periods[self.slot(index)],
                self.window.from_ns,
                service,
            );
            sum = (sum.0 + busy, sum.1 + area, sum.2 + backlog);
        }
        sum
    }

    /// Books `[from, to)`, merging with the newest period if it touches it;
    /// `demand_start` is the service start of a demand read (or `NO_DEMAND`).
    fn book(&mut self, from: u64, to: u64, demand_start: u64, service: u64) {
        if self.kept > 0 && self.periods[self.newest].to >= from {
            let index = self.kept - 1;
            let before = self.measure_from(index, service);
            let newest = &mut self.periods[self.newest];
            newest.to = newest.to.max(to);
            if demand_start != NO_DEMAND {
                newest.demand_start = demand_start;
            }
            self.count_change(index, before, service);
            return;
        }
        self.newest = (self.newest + 1) % PERIODS;
        self.periods[self.newest] = Period {
            from,
            to,
            demand_start,
        };
        self.kept = (self.kept + 1).min(PERIODS);
        self.count_change(self.kept - 1, (0, 0, 0), service);
    }

    /// Remembers a request (the oldest goes when the ring is full).
    fn remember(&mut self, request: Request) {
        self.newest_request = (self.newest_request + 1) % REQUESTS;
        self.requests[self.newest_request] = request;
        self.requests_kept = (self.requests_kept + 1).min(REQUESTS);
    }

    /// The ring slot of the `back`th newest request (0: the newest).
    fn request_slot(&self, back: usize) -> usize {
        (self.newest_request + REQUESTS - back) % REQUESTS
    }
}

/// One shared resource with a fixed service time per request, shared
/// round robin among `cores` lanes.
#[derive(Debug, Clone)]
pub struct BusLanes {
    lanes: Vec<Lane>,
    service_ns: u64,
    /// A core further behind than this is halted, not behind.
    max_skew_ns: u64,
    stats: BusStats,
    /// Lanes that grew, and the time in them where they did: requests of
    /// other cores competing there may owe more turns.
    grown: Vec<(usize, u64)>,
}

impl BusLanes {
    /// An idle bus of `cores` lanes (at most [`MAX_CORES`]) whose every
    /// request occupies it `service_ns` (at least 1); a core more than
    /// `max_skew_ns` behind another is taken as halted.
    pub fn new(cores: usize, service_ns: u64, max_skew_ns: u64) -> Self {
        assert!(cores <= MAX_CORES, "at most {MAX_CORES} cores share a bus");
        Self {
            lanes: vec![Lane::new(); cores.max(1)],
            service_ns: service_ns.max(1),
            max_skew_ns,
            stats: BusStats::default(),
            grown: Vec::with_capacity(4 * MAX_CORES),
        }
    }

    /// The service time per request, in ns.
    pub fn service_ns(&self) -> u64 {
        self.service_ns
    }

    /// `core`'s clock has reached `time` (its requests before it are known).
    pub fn reached(&mut self, core: usize, time: u64) {
        let lane = &mut self.lanes[core];
        lane.clock = lane.clock.max(time);
    }

    /// When `core`'s request arriving at `arrival` starts competing for
    /// the bus: once its own earlier requests are served.
    pub fn competes_from(&self, core: usize, arrival: u64) -> u64 {
        arrival.max(self.lanes[core].end())
    }

    /// Whether `core`'s known requests keep it at the bus at `time` (no
    /// counting: for deciding, not pricing).
    pub fn known_at_bus(&self, core: usize, time: u64) -> bool {
        self.lanes[core]
            .remaining_at(time, time)
            .is_ok_and(|r| r > 0)
    }

    /// How long `other` keeps requests that arrived by `seen_until` at the
    /// bus after `time` (0 beyond its history, counted).
    fn remaining(&mut self, other: usize, time: u64, seen_until: u64) -> u64 {
        match self.lanes[other].remaining_at(time, seen_until) {
            Ok(remaining) => remaining,
            Err(()) => {
                self.stats.beyond_history += 1;
                0
            }
        }
    }

    /// Whether another core that uses the bus is behind `time` (its
    /// requests up to `time` not known yet) but not halted.
    fn another_behind(&self, core: usize, time: u64) -> bool {
        self.lanes.iter().enumerate().any(|(index, lane)| {
            index != core
                && lane.requests_kept > 0
                && lane.clock < time
                && time - lane.clock <= self.max_skew_ns
        })
    }

    /// Books a request of `core` arriving at `arrival`, with `unseen_ns`
    /// of waiting owed to cores whose requests are not known yet. Reads
    /// wait a turn for every other core at the bus; a write-back only for
    /// its own core's earlier requests. Returns when its service starts
    /// (never before `arrival`); it ends a service time later.
    pub fn reserve(&mut self, core: usize, arrival: u64, kind: Transfer, unseen_ns: u64) -> u64 {
        let service = self.service_ns;
        self.reached(core, arrival);
        let competes = self.competes_from(core, arrival);
        let mut charged = [0; MAX_CORES];
        if kind != Transfer::WriteBack {
            let lanes = self.lanes.len();
            for (other, turn) in charged.iter_mut().enumerate().take(lanes) {
                if other != core {
                    // Its turn comes first (its requests booked later see
                    // this one at the bus and wait for it alike).
                    *turn = self.remaining(other, competes, u64::MAX).min(service);
                }
            }
        }
        let turns: u64 = charged.iter().sum();
        let start = competes + turns + unseen_ns;
        self.record(core, arrival, competes, start, kind, charged, unseen_ns);
        self.grown.push((core, competes));
        self.settle_grown();
        start
    }

    /// Books a request of `core` arriving at `arrival` whose service
    /// starts at `start`, as an arbiter outside the lanes decided (the
    /// weave's single-slot schedule): its lane and window count it as
    /// [`Self::reserve`]'s would. `start` must not be before `arrival`,
    /// nor before the end of `core`'s earlier requests; the request was at
    /// the head of the bus's queue from `queued` (at or after `arrival`).
    pub fn book(&mut self, core: usize, arrival: u64, queued: u64, start: u64, kind: Transfer) {
        self.reached(core, arrival);
        debug_assert!(start >= self.competes_from(core, arrival));
        debug_assert!((arrival..=start).contains(&queued));
        self.record(core, arrival, start, start, kind, [0; MAX_CORES], 0);
        let service = self.service_ns;
        let lane = &mut self.lanes[core];
        lane.head_turn_twice += head_turn_twice(queued, start, service, lane.window.from_ns);
    }

    /// Books a priced request into its lane, its window and the counters.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        core: usize,
        arrival: u64,
        competes: u64,
        start: u64,
        kind: Transfer,
        charged: [u64; MAX_CORES],
        unseen_ns: u64,
    ) {
        let service = self.service_ns;
        let behind = self.another_behind(core, arrival);
        let demand_start = if kind.stalls() { start } else { NO_DEMAND };
        let lane = &mut self.lanes[core];
        lane.book(arrival, start + service, demand_start, service);
        lane.remember(Request {
            arrival,
            competes,
            kind,
            behind,
            charged,
        });
        if arrival >= lane.window.from_ns {
            let window = &mut lane.window;
            match kind {
                Transfer::Demand | Transfer::Prefetch => window.fills += 1,
                Transfer::Walk => window.walk_reads += 1,
                Transfer::WriteBack => window.write_backs += 1,
            }
            if kind != Transfer::WriteBack {
                window.read_wait_ns += start - arrival;
            }
            if behind {
                window.behind_pricings += 1;
                window.behind_priced_ns += start - arrival;
                window.behind_settled_ns += start - arrival - unseen_ns;
            }
        }
        self.stats.requests += 1;
        if kind != Transfer::WriteBack {
            self.stats.wait_ns += start - arrival;
        }
    }

    /// For every lane that grew, the turns it now shows to other cores'
    /// requests competing in the grown period that were charged less.
    fn settle_grown(&mut self) {
        let service = self.service_ns;
        while let Some((grown, at)) = self.grown.pop() {
            let Ok(Some(index)) = self.lanes[grown].holding(at) else {
                continue;
            };
            let period = self.lanes[grown].periods[self.lanes[grown].slot(index)];
            for other in 0..self.lanes.len() {
                if other == grown {
                    continue;
                }
                let lane = &mut self.lanes[other];
                for back in 0..lane.requests_kept {
                    let slot = lane.request_slot(back);
                    let request = &mut lane.requests[slot];
                    if request.competes < period.from {
                        break;
                    }
                    if request.competes >= period.to
                        || request.arrival < period.from
                        || request.kind == Transfer::WriteBack
                    {
                        continue;
                    }
                    let shown = (period.to - request.competes).min(service);
                    let charged = &mut request.charged[grown];
                    if shown <= *charged {
                        continue;
                    }
                    let more = shown - *charged;
                    *charged = shown;
                    if request.behind && request.arrival >= lane.window.from_ns {
                        lane.window.behind_settled_ns += more;
                    }
                }
            }
        }
    }

    /// Books a write-back of `core` at `time`: it occupies `core`'s lane a
    /// service time, after its earlier requests, and stalls nobody.
    pub fn write(&mut self, core: usize, time: u64) {
        self.reserve(core, time, Transfer::WriteBack, 0);
    }

    /// Starts `core`'s window of counters at `from_ns` (its lane's time
    /// from then on counts).
    pub fn start_window(&mut self, core: usize, from_ns: u64) {
        let lane = &mut self.lanes[core];
        lane.window = WindowCounters {
            from_ns,
            ..WindowCounters::default()
        };
        lane.turn_area_twice = 0;
        lane.head_turn_twice = 0;
        // What the lane already holds past the mark counts.
        let (busy, area, backlog) = lane.measure_from(0, self.service_ns);
        lane.window.lane_busy_ns = busy;
        lane.turn_area_twice = area;
        lane.window.lane_backlog_ns = backlog;
    }

    /// `core`'s counters since its window started.
    pub fn window(&self, core: usize) -> WindowCounters {
        let lane = &self.lanes[core];
        WindowCounters {
            lane_turn_area_ns2: lane.turn_area_twice / 2,
            head_turn_area_ns2: lane.head_turn_twice / 2,
            ..lane.window
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> BusStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKEW: u64 = 4_000;

    fn read(bus: &mut BusLanes, core: usize, arrival: u64) -> u64 {
        bus.reserve(core, arrival, Transfer::Demand, 0)
    }

    #[test]
    fn a_lone_core_waits_only_for_its_own_requests() {
        let mut bus = BusLanes::new(4, 10, SKEW);
        assert_eq!(read(&mut bus, 0, 100), 100);
        assert_eq!(read(&mut bus, 0, 100), 110);
        assert_eq!(read(&mut bus, 0, 105), 120);
        assert_eq!(read(&mut bus, 0, 200), 200);
        assert_eq!(bus.stats().wait_ns, 10 + 15);
    }

    #[test]
    fn another_core_at_the_bus_costs_one_turn_not_its_backlog() {
        let mut bus = BusLanes::new(2, 10, SKEW);
        // Core 1 queues five requests at 100: at the bus until 150.
        for _ in 0..5 {
            read(&mut bus, 1, 100);
        }
        bus.reached(1, 150);
        // Core 0 at 105 waits a service time for core 1's turn, not for
        // its whole backlog...
        assert_eq!(read(&mut bus, 0, 105), 115);
        // ... its next request, after its own until 125, another turn of
        // core 1's...
        assert_eq!(read(&mut bus, 0, 120), 135);
        // ... and core 1's next, at 130 while core 0's is at the bus until
        // 145, after its own backlog (150): core 0 has left by then.
        assert_eq!(read(&mut bus, 1, 130), 150);
        assert_eq!(read(&mut bus, 1, 150), 160);
    }

    #[test]
    fn a_core_ahead_in_time_is_seen_only_where_it_was_at_the_bus() {
        let mut bus = BusLanes::new(2, 10, SKEW);
        // Core 1, ahead, was at the bus over [900, 910) only.
        read(&mut bus, 1, 900);
        // Core 0's request at 100 is heard of later: the bus was free then.
        assert_eq!(read(&mut bus, 0, 100), 100);
        assert_eq!(read(&mut bus, 0, 905), 910);
    }

    #[test]
    fn unseen_requests_delay_the_start() {
        let mut bus = BusLanes::new(2, 10, SKEW);
        assert_eq!(bus.reserve(0, 100, Transfer::Demand, 20), 120);
        assert_eq!(bus.stats().wait_ns, 20);
    }

    #[test]
    fn a_history_too_short_for_the_question_is_counted() {
        let mut bus = BusLanes::new(2, 10, SKEW);
        for i in 0..(PERIODS as u64 + 1) {
            read(&mut bus, 1, 1_000 + i * 100);
        }
        // Core 1's first period has been forgotten.
        assert_eq!(read(&mut bus, 0, 1_005), 1_005);
        assert_eq!(bus.stats().beyond_history, 1);
    }

    #[test]
    fn a_window_counts_busy_time_turn_area_and_backlog() {
        let mut bus = BusLanes::new(2, 10, SKEW);
        bus.start_window(1, 0);
        // Three requests at 100: busy [100, 130), a backlog over [100, 120).
        for _ in 0..3 {
            read(&mut bus, 1, 100);
        }
        let window = bus.window(1);
        assert_eq!(window.lane_busy_ns, 30);
        assert_eq!(window.lane_backlog_ns, 20);
        // min(remaining, 10) over 30 ns: 20 ns at 10, then 10·10/2.
        assert_eq!(window.lane_turn_area_ns2, 20 * 10 + 50);
        assert_eq!(window.fills, 3);
    }
}
