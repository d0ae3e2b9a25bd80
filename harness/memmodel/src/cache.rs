//! A set-associative cache of line addresses with true LRU or pseudo-random replacement and MOESI line states.
//!
//! The cache holds no data, only which lines it has and in what state: the
//! model needs hits, misses, victims and who owns a dirty line. Lines are
//! named by their line number (address >> log2(line size)); the set is the
//! line number's low bits (physically indexed, as the A53's caches behave),
//! the tag the whole line number.

use crate::profile::{CacheGeometry, Replacement};

/// A line's coherence state (MOESI; an L1 instruction cache or the L2 use
/// only `Shared` for clean and `Modified` for dirty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineState {
    /// Not present.
    Invalid,
    /// Clean; other caches may hold it too.
    Shared,
    /// Clean; no other L1 holds it.
    Exclusive,
    /// Dirty and shared: this cache must write it back, others read it.
    Owned,
    /// Dirty; no other L1 holds it.
    Modified,
}

impl LineState {
    /// Whether evicting the line must write it back.
    pub fn is_dirty(self) -> bool {
        matches!(self, Self::Owned | Self::Modified)
    }
}

/// A line pushed out to make room, and whether it must be written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    /// Its line number.
    pub line: u64,
    /// Dirty: the next level (or memory) must take it.
    pub dirty: bool,
}

/// Where a line sits: an index into the cache's slots.
pub type Slot = usize;

const NO_LINE: u64 = u64::MAX;

/// Bits of [`Way::meta`] that hold the state.
const STATE_BITS: u32 = 3;
const STATE_MASK: u64 = (1 << STATE_BITS) - 1;

impl LineState {
    #[inline]
    fn code(self) -> u64 {
        match self {
            Self::Invalid => 0,
            Self::Shared => 1,
            Self::Exclusive => 2,
            Self::Owned => 3,
            Self::Modified => 4,
        }
    }

    #[inline]
    fn from_code(code: u64) -> Self {
        match code {
            1 => Self::Shared,
            2 => Self::Exclusive,
            3 => Self::Owned,
            4 => Self::Modified,
            _ => Self::Invalid,
        }
    }
}

/// One slot: its line and, packed in one word, when it was last used and
/// its state, so that a set's ways lie side by side in one or two host
/// cache lines.
#[derive(Debug, Clone, Copy)]
struct Way {
    /// The line number, `NO_LINE` exactly when the state is `Invalid`.
    line: u64,
    /// `last_used << STATE_BITS | state code`: when the slot was last used,
    /// on the cache's own use counter (the smallest in a set is its least
    /// recently used way; the state bits below cannot change the order of
    /// two different stamps), and its `LineState`. Under random
    /// replacement a hit does not count as a use: the stamp is the fill's.
    meta: u64,
}

impl Way {
    #[inline]
    fn state(&self) -> LineState {
        LineState::from_code(self.meta & STATE_MASK)
    }

    #[inline]
    fn last_used(&self) -> u64 {
        self.meta >> STATE_BITS
    }
}

/// The cache: `sets × ways` slots, each set's ways side by side.
#[derive(Debug, Clone)]
pub struct Cache {
    ways: usize,
    set_mask: u64,
    slots: Box<[Way]>,
    uses: u64,
    replacement: Replacement,
    /// The pseudo-random generator's state (xorshift64, a fixed seed).
    random: u64,
}

/// The generator's seed: any nonzero value, the same in every run.
const RANDOM_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl Cache {
    /// An empty cache of the given shape.
    pub fn new(geometry: &CacheGeometry) -> Self {
        let slots = geometry.sets * geometry.ways;
        Self {
            ways: geometry.ways,
            set_mask: geometry.sets as u64 - 1,
            slots: vec![
                Way {
                    line: NO_LINE,
                    meta: LineState::Invalid.code(),
                };
                slots
            ]
            .into_boxed_slice(),
            uses: 0,
            replacement: geometry.replacement,
            random: RANDOM_SEED,
        }
    }

    #[inline]
    fn set_slots(&self, line: u64) -> std::ops::Range<Slot> {
        let first = (line & self.set_mask) as usize * self.ways;
        first..first + self.ways
    }

    /// The slot holding `line`, if present, without touching the LRU
    /// order (a snoop from another core is not a use).
    #[inline]
    pub fn probe(&self, line: u64) -> Option<Slot> {
        // A slot holds a line number exactly when its state is not
        // `Invalid` (`insert`, `set_state` and `clear` keep the two
        // together, and no line is numbered `NO_LINE`), so the tags alone
        // answer.
        debug_assert_ne!(line, NO_LINE);
        let range = self.set_slots(line);
        let first = range.start;
        let slot = first + self.slots[range].iter().position(|w| w.line == line)?;
        debug_assert_ne!(self.slots[slot].state(), LineState::Invalid);
        Some(slot)
    }

    /// The slot holding `line`, if present, made the most recently used
    /// (under random replacement a hit changes nothing).
    #[inline]
    pub fn lookup(&mut self, line: u64) -> Option<Slot> {
        let slot = self.probe(line)?;
        if self.replacement == Replacement::Lru {
            self.touch(slot);
        }
        Some(slot)
    }

    /// When `slot` was filled (under random replacement; under LRU, last
    /// used): a slot that holds the same line with the same stamp has not
    /// been refilled since.
    #[inline]
    pub fn stamp(&self, slot: Slot) -> u64 {
        self.slots[slot].last_used()
    }

    /// `line`'s state if `slot` still holds it, filled at `stamp`.
    #[inline]
    pub fn holds(&self, slot: Slot, line: u64, stamp: u64) -> Option<LineState> {
        let way = self.slots.get(slot)?;
        (way.line == line && way.last_used() == stamp).then(|| way.state())
    }

    #[inline]
    fn touch(&mut self, slot: Slot) {
        self.uses += 1;
        debug_assert!(self.uses < 1 << (64 - STATE_BITS));
        let way = &mut self.slots[slot];
        way.meta = self.uses << STATE_BITS | (way.meta & STATE_MASK);
    }

    /// A line's state.
    #[inline]
    pub fn state(&self, slot: Slot) -> LineState {
        self.slots[slot].state()
    }

    /// Sets a present line's state (`Invalid` drops it).
    pub fn set_state(&mut self, slot: Slot, state: LineState) {
        let way = &mut self.slots[slot];
        way.meta = (way.meta & !STATE_MASK) | state.code();
        if state == LineState::Invalid {
            way.line = NO_LINE;
        }
    }

    /// Puts `line` (not present) in `state`, as the most recently used,
    /// into an empty way of its set or else over the least recently used
    /// one, which it returns if that one held a line.
    pub fn insert(&mut self, line: u64, state: LineState) -> (Slot, Option<Victim>) {
        debug_assert_ne!(state, LineState::Invalid);
        let range = self.set_slots(line);
        let first = range.start;
        let set = &self.slots[range];
        let empty = set.iter().position(|w| w.line == NO_LINE);
        let way = match (empty, self.replacement) {
            (Some(way), _) => way,
            // Ties cannot happen (every use gets a new stamp); min_by_key
            // keeps the first way on equal keys anyway, so it is fixed.
            (None, Replacement::Lru) => set
                .iter()
                .enumerate()
                .min_by_key(|(_, w)| w.last_used())
                .map(|(way, _)| way)
                .expect("a set has at least one way"),
            (None, Replacement::Random) => {
                // xorshift64 (Marsaglia): one step per replacement.
                let mut x = self.random;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.random = x;
                (x % self.ways as u64) as usize
            }
        };
        let slot = first + way;
        let old = self.slots[slot];
        let victim = (old.line != NO_LINE).then(|| Victim {
            line: old.line,
            dirty: old.state().is_dirty(),
        });
        self.slots[slot] = Way {
            line,
            meta: (old.meta & !STATE_MASK) | state.code(),
        };
        self.touch(slot);
        (slot, victim)
    }

    /// Drops every line (dirty ones too: used where the architecture
    /// discards, and for resets).
    pub fn clear(&mut self) {
        for way in self.slots.iter_mut() {
            way.line = NO_LINE;
            way.meta &= !STATE_MASK;
        }
    }

    /// How many lines are present.
    pub fn occupancy(&self) -> usize {
        self.slots.iter().filter(|w| w.line != NO_LINE).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(sets: usize, ways: usize) -> CacheGeometry {
        CacheGeometry {
            size_bytes: (sets * ways * 64) as u64,
            ways,
            sets,
            line_bytes: 64,
            hit_ns: 0,
            replacement: Replacement::Lru,
        }
    }

    fn random(sets: usize, ways: usize) -> CacheGeometry {
        CacheGeometry {
            replacement: Replacement::Random,
            ..geometry(sets, ways)
        }
    }

    #[test]
    fn random_replacement_fills_empty_ways_first_and_hits_change_nothing() {
        let mut cache = Cache::new(&random(4, 4));
        for line in [0, 4, 8, 12] {
            assert_eq!(cache.insert(line, LineState::Exclusive).1, None);
        }
        let stamps: Vec<u64> = [0, 4, 8, 12]
            .iter()
            .map(|&l| cache.stamp(cache.probe(l).unwrap()))
            .collect();
        for _ in 0..3 {
            assert!(cache.lookup(4).is_some());
        }
        let after: Vec<u64> = [0, 4, 8, 12]
            .iter()
            .map(|&l| cache.stamp(cache.probe(l).unwrap()))
            .collect();
        assert_eq!(stamps, after, "a hit is not a use");
        let slot = cache.probe(8).unwrap();
        assert_eq!(cache.holds(slot, 8, after[2]), Some(LineState::Exclusive));
        assert_eq!(cache.holds(slot, 12, after[2]), None);
    }

    #[test]
    fn random_replacement_is_the_same_every_run_and_spreads_over_the_ways() {
        let victims = || {
            let mut cache = Cache::new(&random(1, 4));
            let mut out = Vec::new();
            for line in 0..400 {
                if let (_, Some(victim)) = cache.insert(line, LineState::Shared) {
                    out.push(line - victim.line);
                }
            }
            out
        };
        let (a, b) = (victims(), victims());
        assert_eq!(a, b, "deterministic");
        // Every way gets replaced, and a line does not always survive the
        // same number of fills (as it would under LRU: always 4).
        let mut ages: Vec<u64> = a.clone();
        ages.sort_unstable();
        ages.dedup();
        assert!(ages.len() > 4, "ages of victims: {ages:?}");
        let mut slots = [0u32; 4];
        let mut cache = Cache::new(&random(1, 4));
        for line in 0..400 {
            let (slot, _) = cache.insert(line, LineState::Shared);
            slots[slot] += 1;
        }
        assert!(slots.iter().all(|&n| n > 60), "fills per way: {slots:?}");
    }

    #[test]
    fn a_set_keeps_its_most_recently_used_lines() {
        let mut cache = Cache::new(&geometry(4, 2));
        // Lines 0, 4 and 8 all map to set 0 of a 2-way cache.
        assert_eq!(cache.insert(0, LineState::Exclusive).1, None);
        assert_eq!(cache.insert(4, LineState::Modified).1, None);
        assert!(cache.lookup(0).is_some());
        // 4 is now the least recently used: 8 pushes it out, dirty.
        let (_, victim) = cache.insert(8, LineState::Shared);
        assert_eq!(
            victim,
            Some(Victim {
                line: 4,
                dirty: true
            })
        );
        assert!(cache.probe(4).is_none());
        assert!(cache.probe(0).is_some() && cache.probe(8).is_some());
        // Other sets are untouched.
        assert_eq!(cache.occupancy(), 2);
    }

    #[test]
    fn a_probe_does_not_change_the_replacement_order() {
        let mut cache = Cache::new(&geometry(1, 2));
        cache.insert(1, LineState::Shared);
        cache.insert(2, LineState::Shared);
        // A snoop of line 1 must not save it: it is still the oldest.
        assert!(cache.probe(1).is_some());
        let (_, victim) = cache.insert(3, LineState::Shared);
        assert_eq!(victim.map(|v| v.line), Some(1));
    }

    #[test]
    fn an_invalidated_line_frees_its_way() {
        let mut cache = Cache::new(&geometry(1, 2));
        let (slot, _) = cache.insert(1, LineState::Modified);
        cache.insert(2, LineState::Shared);
        cache.set_state(slot, LineState::Invalid);
        assert!(cache.probe(1).is_none());
        // The freed way is taken before any line is evicted.
        assert_eq!(cache.insert(3, LineState::Shared).1, None);
        assert!(cache.probe(2).is_some());
    }
}
