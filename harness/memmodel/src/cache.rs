//! A set-associative cache of line addresses with true LRU replacement and MOESI line states.
//!
//! The cache holds no data, only which lines it has and in what state: the
//! model needs hits, misses, victims and who owns a dirty line. Lines are
//! named by their line number (address >> log2(line size)); the set is the
//! line number's low bits (physically indexed, as the A53's caches behave),
//! the tag the whole line number.

use crate::profile::CacheGeometry;

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

/// Where a line sits: an index into the cache's arrays.
pub type Slot = usize;

const NO_LINE: u64 = u64::MAX;

/// The cache: `sets × ways` slots in flat arrays, each set's ways side by side.
#[derive(Debug, Clone)]
pub struct Cache {
    ways: usize,
    set_mask: u64,
    lines: Box<[u64]>,
    states: Box<[LineState]>,
    /// When each slot was last used, on the cache's own use counter: the
    /// smallest in a set is its least recently used way.
    last_used: Box<[u64]>,
    uses: u64,
}

impl Cache {
    /// An empty cache of the given shape.
    pub fn new(geometry: &CacheGeometry) -> Self {
        let slots = geometry.sets * geometry.ways;
        Self {
            ways: geometry.ways,
            set_mask: geometry.sets as u64 - 1,
            lines: vec![NO_LINE; slots].into_boxed_slice(),
            states: vec![LineState::Invalid; slots].into_boxed_slice(),
            last_used: vec![0; slots].into_boxed_slice(),
            uses: 0,
        }
    }

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
        let first = (line & self.set_mask) as usize * self.ways;
        let slot = first
            + self.lines[first..first + self.ways]
                .iter()
                .position(|&l| l == line)?;
        debug_assert_ne!(self.states[slot], LineState::Invalid);
        Some(slot)
    }

    /// The slot holding `line`, if present, made the most recently used.
    #[inline]
    pub fn lookup(&mut self, line: u64) -> Option<Slot> {
        let slot = self.probe(line)?;
        self.touch(slot);
        Some(slot)
    }

    #[inline]
    fn touch(&mut self, slot: Slot) {
        self.uses += 1;
        self.last_used[slot] = self.uses;
    }

    /// A line's state.
    #[inline]
    pub fn state(&self, slot: Slot) -> LineState {
        self.states[slot]
    }

    /// Sets a present line's state (`Invalid` drops it).
    pub fn set_state(&mut self, slot: Slot, state: LineState) {
        self.states[slot] = state;
        if state == LineState::Invalid {
            self.lines[slot] = NO_LINE;
        }
    }

    /// Puts `line` (not present) in `state`, as the most recently used,
    /// into an empty way of its set or else over the least recently used
    /// one, which it returns if that one held a line.
    pub fn insert(&mut self, line: u64, state: LineState) -> (Slot, Option<Victim>) {
        debug_assert_ne!(state, LineState::Invalid);
        let range = self.set_slots(line);
        let slot = range
            .clone()
            .find(|&slot| self.states[slot] == LineState::Invalid)
            .unwrap_or_else(|| {
                // Ties cannot happen (every use gets a new stamp); min_by_key
                // keeps the first way on equal keys anyway, so it is fixed.
                range
                    .min_by_key(|&slot| self.last_used[slot])
                    .expect("a set has at least one way")
            });
        let victim = (self.states[slot] != LineState::Invalid).then(|| Victim {
            line: self.lines[slot],
            dirty: self.states[slot].is_dirty(),
        });
        self.lines[slot] = line;
        self.states[slot] = state;
        self.touch(slot);
        (slot, victim)
    }

    /// Drops every line (dirty ones too: used where the architecture
    /// discards, and for resets).
    pub fn clear(&mut self) {
        self.lines.fill(NO_LINE);
        self.states.fill(LineState::Invalid);
    }

    /// How many lines are present.
    pub fn occupancy(&self) -> usize {
        self.states
            .iter()
            .filter(|&&s| s != LineState::Invalid)
            .count()
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
        }
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
