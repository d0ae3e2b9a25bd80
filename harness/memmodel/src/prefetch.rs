//! The L1 data prefetcher of one core: stream detection on linefills, the lines to fetch ahead, and the prefetches still in flight.
//!
//! As the Cortex-A53's TRM describes its prefetcher: it watches the core's
//! data linefills (demand misses) for lines a fixed stride apart, at most
//! `max_stride_lines` either way; `consecutive_trigger` linefills to
//! consecutive lines, or `strided_trigger` at a larger stride, start a
//! stream. A started stream fetches up to `outstanding` lines ahead of the
//! latest demand access on it, with at most `outstanding` prefetches in
//! flight per core, and never past the `page_bytes` boundary of that
//! access. Demand accesses that hit lines the stream covers (they hit:
//! the prefetch filled them) move it on, so a stream keeps running without
//! further misses. Loads and stores that hit elsewhere do not disturb it.
//!
//! The prefetcher only decides; the model fills the lines (through the L2
//! and the bus, as any linefill) and tells it when each will arrive. A
//! demand access that finds its line still in flight waits for it.

use crate::profile::PrefetchProfile;

/// One tracked stream of linefills.
#[derive(Debug, Clone, Copy, Default)]
struct Stream {
    valid: bool,
    /// The latest line of the stream the core asked for (missed or hit).
    last: u64,
    /// Lines from one element to the next (0: only one linefill seen).
    stride: i64,
    /// Linefills seen at this stride, the first included.
    count: u32,
    /// Fetching ahead.
    active: bool,
    /// The next line to prefetch.
    next: u64,
    /// When it was last used, for replacing the least recently used.
    used: u64,
}

/// One core's prefetcher.
#[derive(Debug, Clone)]
pub struct Prefetcher {
    profile: PrefetchProfile,
    streams: Vec<Stream>,
    /// `(line, arrives_at)` of prefetches issued and not yet known to have
    /// arrived.
    in_flight: Vec<(u64, u64)>,
    /// The earliest and latest arrival in `in_flight`.
    earliest_arrival: u64,
    latest_arrival: u64,
    /// No stream can fetch until one changes (each is as far ahead as it
    /// may go, or at its page's end): `next_line` answers at once.
    blocked: bool,
    line_shift: u32,
    tick: u64,
}

impl Prefetcher {
    /// An idle prefetcher for lines of `line_bytes`.
    pub fn new(profile: PrefetchProfile, line_bytes: u64) -> Self {
        Self {
            profile,
            streams: vec![Stream::default(); profile.streams],
            in_flight: Vec::with_capacity(profile.outstanding),
            earliest_arrival: 0,
            latest_arrival: 0,
            blocked: true,
            line_shift: line_bytes.trailing_zeros(),
            tick: 0,
        }
    }

    /// Whether any prefetch may still be in flight at `now` (a demand hit
    /// must then ask [`Self::arrival_wait`]).
    pub fn has_in_flight(&mut self, now: u64) -> bool {
        if self.in_flight.is_empty() {
            return false;
        }
        if now >= self.latest_arrival {
            // All arrived.
            self.in_flight.clear();
            return false;
        }
        true
    }

    /// A demand access at `now` hit `line` in the L1: how long it still
    /// waits for that line's prefetch (0 if none is in flight). The
    /// prefetch stays counted as in flight until it arrives.
    pub fn arrival_wait(&mut self, line: u64, now: u64) -> u64 {
        let Some(&(_, arrives)) = self.in_flight.iter().find(|&&(l, _)| l == line) else {
            return 0;
        };
        arrives.saturating_sub(now)
    }

    /// Whether a demand hit on `line` would change nothing here: no
    /// stream can fetch whatever the time (so the hit sends nothing), and
    /// no active stream covers `line` (so none moves on). Its use count
    /// moves on, which keeps the streams' order.
    #[inline]
    pub fn hit_changes_nothing(&self, line: u64) -> bool {
        self.blocked
            && !self
                .streams
                .iter()
                .any(|s| s.valid && s.active && covers(s, line))
    }

    /// A demand access hit `line`: a stream that fetched it moves on.
    pub fn on_hit(&mut self, line: u64) {
        self.tick += 1;
        for stream in self.streams.iter_mut().filter(|s| s.valid && s.active) {
            if covers(stream, line) {
                stream.last = line;
                stream.used = self.tick;
                self.blocked = false;
                return;
            }
        }
    }

    /// A demand linefill of `line`: trains the streams.
    pub fn on_miss(&mut self, line: u64) {
        self.tick += 1;
        self.blocked = false;
        let max_stride = self.profile.max_stride_lines as i64;
        // A stream expecting this line, or covering it (a prefetched line
        // that left the L1 before its use).
        if let Some(stream) = self.streams.iter_mut().find(|s| {
            s.valid
                && s.stride != 0
                && (line == step(s.last, s.stride) || (s.active && covers(s, line)))
        }) {
            if line == step(stream.last, stream.stride) {
                stream.count += 1;
            }
            stream.last = line;
            stream.used = self.tick;
            if !stream.active && stream.count >= trigger(&self.profile, stream.stride) {
                stream.active = true;
                stream.next = step(line, stream.stride);
            }
            if stream.active && !ahead_of(stream.stride, stream.next, line) {
                stream.next = step(line, stream.stride);
            }
            return;
        }
        // A stream near it: a new stride.
        if let Some(stream) = self.streams.iter_mut().find(|s| {
            let distance = line as i64 - s.last as i64;
            s.valid && distance != 0 && distance.abs() <= max_stride
        }) {
            stream.stride = line as i64 - stream.last as i64;
            stream.count = 2;
            stream.last = line;
            stream.used = self.tick;
            stream.active = stream.count >= trigger(&self.profile, stream.stride);
            stream.next = step(line, stream.stride);
            return;
        }
        // Else the least recently used stream starts over here.
        let oldest = self
            .streams
            .iter_mut()
            .min_by_key(|s| (s.valid, s.used))
            .expect("at least one stream");
        *oldest = Stream {
            valid: true,
            last: line,
            stride: 0,
            count: 1,
            active: false,
            next: line,
            used: self.tick,
        };
    }

    /// Whether [`Self::next_line`] could give a line at `now` (a quick
    /// test, so callers skip it when it could not).
    #[inline]
    pub fn may_fetch(&self, now: u64) -> bool {
        !self.blocked
            && (self.in_flight.len() < self.profile.outstanding || now >= self.earliest_arrival)
    }

    /// The next line to fetch ahead at `now`, if a stream has one and
    /// fewer than `outstanding` prefetches are in flight. The caller
    /// fetches it (or finds it cached) and reports with [`Self::issued`].
    pub fn next_line(&mut self, now: u64) -> Option<u64> {
        // Fewer entries than the limit: fewer in flight too, whichever
        // have arrived. Only at the limit do the arrived ones matter.
        if self.in_flight.len() >= self.profile.outstanding {
            if now < self.earliest_arrival {
                return None;
            }
            self.in_flight.retain(|&(_, arrives)| arrives > now);
            self.earliest_arrival = self.in_flight.iter().map(|&(_, a)| a).min().unwrap_or(0);
            if self.in_flight.len() >= self.profile.outstanding {
                return None;
            }
        }
        if self.blocked {
            return None;
        }
        let page_lines_shift = self.profile.page_bytes.trailing_zeros() - self.line_shift;
        let distance = self.profile.outstanding as i64;
        let mut best: Option<&mut Stream> = None;
        for stream in self.streams.iter_mut() {
            if !stream.valid || !stream.active {
                continue;
            }
            let ahead = (stream.next as i64 - stream.last as i64) / stream.stride;
            let same_page = stream.next >> page_lines_shift == stream.last >> page_lines_shift;
            if ahead > distance || !same_page {
                continue;
            }
            if best.as_ref().is_none_or(|b| stream.used > b.used) {
                best = Some(stream);
            }
        }
        let Some(stream) = best else {
            self.blocked = true;
            return None;
        };
        let line = stream.next;
        stream.next = step(line, stream.stride);
        Some(line)
    }

    /// The prefetch of `line` in flight arrives `by` ns later than it was
    /// told (its wait for the bus, priced after it was sent); nothing if it
    /// is no longer in flight.
    pub fn delay(&mut self, line: u64, by: u64) {
        if let Some(entry) = self.in_flight.iter_mut().find(|(l, _)| *l == line) {
            entry.1 += by;
            self.latest_arrival = self.latest_arrival.max(entry.1);
            self.earliest_arrival = self.in_flight.iter().map(|&(_, a)| a).min().unwrap_or(0);
        }
    }

    /// The line [`Self::next_line`] gave was fetched and arrives at
    /// `arrives_at` (`None`: it was already in the L1).
    pub fn issued(&mut self, line: u64, arrives_at: Option<u64>) {
        if let Some(arrives) = arrives_at {
            if self.in_flight.is_empty() {
                self.earliest_arrival = arrives;
                self.latest_arrival = arrives;
            } else {
                self.earliest_arrival = self.earliest_arrival.min(arrives);
                self.latest_arrival = self.latest_arrival.max(arrives);
            }
            self.in_flight.push((line, arrives));
        }
    }
}

/// `line` plus one `stride`.
fn step(line: u64, stride: i64) -> u64 {
    line.wrapping_add_signed(stride)
}

/// Whether `line` lies strictly past `from` in the stride's direction.
fn ahead_of(stride: i64, line: u64, from: u64) -> bool {
    let distance = line as i64 - from as i64;
    distance != 0 && distance.signum() == stride.signum()
}

/// Whether an active stream has fetched `line` ahead of its last demand:
/// a whole number of strides past `last`, before `next`.
fn covers(stream: &Stream, line: u64) -> bool {
    let (line, last, next, stride) = (
        line as i64,
        stream.last as i64,
        stream.next as i64,
        stream.stride,
    );
    // `next` is a whole number of strides from `last`: strictly between
    // the two and on the stride is covered.
    let between = if stride > 0 {
        last < line && line < next
    } else {
        next < line && line < last
    };
    stride != 0 && between && (stride.abs() == 1 || (line - last) % stride == 0)
}

/// Linefills at `stride` that start a stream.
fn trigger(profile: &PrefetchProfile, stride: i64) -> u32 {
    if stride.abs() == 1 {
        profile.consecutive_trigger
    } else {
        profile.strided_trigger
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a53() -> Prefetcher {
        Prefetcher::new(
            PrefetchProfile {
                streams: 2,
                outstanding: 5,
                consecutive_trigger: 2,
                strided_trigger: 3,
                max_stride_lines: 4,
                page_bytes: 4096,
            },
            64,
        )
    }

    /// Lines `next_line` gives at `now`, each reported in flight until `until`.
    fn drain(p: &mut Prefetcher, now: u64, until: u64) -> Vec<u64> {
        let mut lines = Vec::new();
        while let Some(line) = p.next_line(now) {
            p.issued(line, Some(until));
            lines.push(line);
        }
        lines
    }

    #[test]
    fn two_consecutive_linefills_start_a_stream_five_ahead() {
        let mut p = a53();
        p.on_miss(1000);
        assert_eq!(drain(&mut p, 0, 100), Vec::<u64>::new());
        p.on_miss(1001);
        assert_eq!(drain(&mut p, 0, 100), vec![1002, 1003, 1004, 1005, 1006]);
    }

    #[test]
    fn a_larger_stride_needs_three_and_a_descending_one_works() {
        let mut p = a53();
        p.on_miss(1000);
        p.on_miss(997);
        assert!(drain(&mut p, 0, 100).is_empty());
        p.on_miss(994);
        assert_eq!(drain(&mut p, 0, 100), vec![991, 988, 985, 982, 979]);
    }

    #[test]
    fn a_stride_beyond_four_lines_is_not_a_stream() {
        let mut p = a53();
        for i in 0..10 {
            p.on_miss(1000 + 5 * i);
        }
        assert!(drain(&mut p, 0, 100).is_empty());
    }

    #[test]
    fn hits_move_the_stream_on_within_the_outstanding_limit() {
        let mut p = a53();
        p.on_miss(1000);
        p.on_miss(1001);
        assert_eq!(drain(&mut p, 0, 100).len(), 5);
        // In flight until 100: the demand hit waits, and no sixth goes out
        // before one arrives.
        assert_eq!(p.arrival_wait(1002, 40), 60);
        p.on_hit(1002);
        assert!(drain(&mut p, 40, 200).is_empty());
        // At 100 all five have arrived: the stream is 5 ahead of 1002.
        assert_eq!(drain(&mut p, 100, 200), vec![1007]);
        assert_eq!(p.arrival_wait(1003, 150), 0);
    }

    #[test]
    fn streams_stop_at_the_page() {
        let mut p = a53();
        // Lines 62 and 63 of a 64-line page.
        p.on_miss(64 * 7 + 62);
        p.on_miss(64 * 7 + 63);
        assert!(drain(&mut p, 0, 100).is_empty());
    }

    #[test]
    fn a_third_stream_replaces_the_least_recently_used() {
        let mut p = a53();
        p.on_miss(1000);
        p.on_miss(1001);
        drain(&mut p, 0, 1);
        p.on_miss(5000);
        p.on_miss(9000);
        // The stream at 1000 was older than 5000's: replaced by 9000's.
        p.on_hit(1003);
        assert!(drain(&mut p, 10, 20).is_empty());
    }

    #[test]
    fn a_delayed_prefetch_arrives_later_and_holds_its_slot() {
        let mut p = a53();
        p.on_miss(1000);
        p.on_miss(1001);
        assert_eq!(drain(&mut p, 0, 100).len(), 5);
        // 1002's request waited 30 ns for the bus after it was sent.
        p.delay(1002, 30);
        assert_eq!(p.arrival_wait(1002, 40), 90);
        assert_eq!(p.arrival_wait(1003, 40), 60);
        p.on_hit(1006);
        // At 100 the other four have arrived but 1002 is in flight until
        // 130: it holds one of the five slots.
        assert_eq!(drain(&mut p, 100, 200).len(), 4);
        // A line no longer in flight is not moved.
        p.delay(4242, 30);
        assert_eq!(p.arrival_wait(4242, 0), 0);
    }
}
