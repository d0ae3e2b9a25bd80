//! TLB structures tagged with translation regime, security state, VMID and ASID: a fully associative micro TLB and a set-associative main TLB (also used as the walk cache).
//!
//! An entry maps one page or block (`va >> shift`) in one address space.
//! It matches an access when the space's regime, security state and VMID
//! are the entry's, and the entry is global or has the access's ASID, as on
//! Armv8. Replacement is LRU in the main TLB and, as the profile says, LRU
//! or first in, first out in a micro TLB (the A53's TRM does not say which
//! policy it uses).

/// The address space an access translates in: `id` packs the regime, the
/// security state and the VMID (see [`SpaceId`]); `asid` is the current
/// ASID (0 in regimes without ASIDs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Regime, security state and VMID.
    pub id: u32,
    /// The current ASID.
    pub asid: u16,
}

/// Builds and reads [`Space::id`] values.
pub struct SpaceId;

impl SpaceId {
    /// The EL1&0 regime.
    pub const EL10: u32 = 0;
    /// The EL2 regime.
    pub const EL2: u32 = 1;
    /// The EL3 regime.
    pub const EL3: u32 = 2;
    /// Mask of the regime field.
    pub const REGIME_MASK: u32 = 0b11;
    /// The secure-state bit.
    pub const SECURE: u32 = 1 << 2;
    /// Mask of regime and security state (every VMID).
    pub const REGIME_AND_SECURITY: u32 = Self::REGIME_MASK | Self::SECURE;
    /// Mask of the whole id.
    pub const ALL: u32 = u32::MAX;

    /// The id of `regime` in the given security state with `vmid`.
    pub fn compose(regime: u32, secure: bool, vmid: u16) -> u32 {
        regime | if secure { Self::SECURE } else { 0 } | (u32::from(vmid) << 16)
    }
}

/// Which ASIDs an invalidation reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsidScope {
    /// Every entry, global or not.
    Any,
    /// Non-global entries of this ASID only (TLBI ASIDE1).
    NonGlobal(u16),
    /// Entries of this ASID and global entries (TLBI VAE1).
    ThisOrGlobal(u16),
}

/// What a TLB invalidation removes: entries whose space id masked by
/// `space_mask` equals `space_value`, of the ASIDs in `asid`, covering
/// `va` if given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalidation {
    /// Bits of the space id that must match.
    pub space_mask: u32,
    /// Their value.
    pub space_value: u32,
    /// The ASIDs reached.
    pub asid: AsidScope,
    /// Only entries mapping this virtual address, if given.
    pub va: Option<u64>,
}

/// A translation found: the page or block size and whether it is global.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// log2 of the page or block size.
    pub shift: u8,
    /// Global (matches every ASID).
    pub global: bool,
    /// What the structure keeps beside the translation: the walk cache
    /// keeps the last-level table's address; the TLBs keep 0.
    pub payload: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// `va >> shift`; meaningless when `shift == 0` (an empty entry).
    page: u64,
    shift: u8,
    global: bool,
    asid: u16,
    space: u32,
    payload: u64,
    last_used: u64,
}

const EMPTY: Entry = Entry {
    page: 0,
    shift: 0,
    global: false,
    asid: 0,
    space: 0,
    payload: 0,
    last_used: 0,
};

impl Entry {
    /// Whether the entry maps `va` in `space`: without branches (`&`, not
    /// `&&`), as the micro TLB's scan tests every entry.
    #[inline]
    fn matches(&self, va: u64, space: Space) -> bool {
        (self.shift != 0)
            & (self.space == space.id)
            & (self.global | (self.asid == space.asid))
            & (va >> (self.shift & 63) == self.page)
    }

    /// Whether some address and space could match both `self` and `other`:
    /// the same space id, ASIDs that can agree (either global, or equal),
    /// and ranges that meet (aligned power-of-two ranges meet when the
    /// larger holds the smaller).
    /// Without branches: a micro TLB's every insertion tests every entry.
    #[inline]
    fn overlaps(&self, other: &Entry) -> bool {
        let shift = u32::from(self.shift.max(other.shift) & 63);
        // `page << shift` is the range's first address (`page` is
        // `va >> shift`), and the larger range's first address holds both.
        let first = |e: &Entry| e.page.wrapping_shl(u32::from(e.shift)) >> shift;
        (self.shift != 0)
            & (other.shift != 0)
            & (self.space == other.space)
            & (self.global | other.global | (self.asid == other.asid))
            & (first(self) == first(other))
    }

    fn invalidated_by(&self, what: &Invalidation) -> bool {
        self.shift != 0
            && self.space & what.space_mask == what.space_value
            && match what.asid {
                AsidScope::Any => true,
                AsidScope::NonGlobal(asid) => !self.global && self.asid == asid,
                AsidScope::ThisOrGlobal(asid) => self.global || self.asid == asid,
            }
            && what.va.is_none_or(|va| va >> self.shift == self.page)
    }

    fn mapping(&self) -> Mapping {
        Mapping {
            shift: self.shift,
            global: self.global,
            payload: self.payload,
        }
    }

    fn new(va: u64, space: Space, mapping: Mapping, last_used: u64) -> Self {
        Self {
            page: va >> mapping.shift,
            shift: mapping.shift,
            global: mapping.global,
            asid: if mapping.global { 0 } else { space.asid },
            space: space.id,
            payload: mapping.payload,
            last_used,
        }
    }
}

/// Slots of [`MicroTlb`]'s hints.
const HINTS: usize = 16;

/// A small fully associative TLB (the micro TLBs).
#[derive(Debug, Clone)]
pub struct MicroTlb {
    entries: Box<[Entry]>,
    /// The entry that hit last: checked first, as most accesses stay on a page.
    last_hit: usize,
    uses: u64,
    /// Which entry last mapped an address whose 4 KiB page number has these
    /// low bits (any index: checked with `Entry::matches` before use).
    hints: [u8; HINTS],
    /// Two entries may both match some address (see [`Entry::overlaps`]):
    /// then a lookup must take the first in order, as a scan does, and the
    /// hints are not used. Set at an insertion, cleared with the TLB.
    maybe_duplicates: bool,
    /// Replaces first in, first out (`next` moves on at each replacement,
    /// an empty entry is taken first) instead of the least recently used:
    /// a hit then changes nothing, and an entry's stamp is its insertion's.
    fifo: bool,
    next: usize,
    /// Entries filled since the TLB was last empty: an entry is emptied
    /// only by `clear` and an insertion takes the first empty one, so the
    /// empty entries are exactly those from here on (an insertion finds
    /// one without a scan).
    filled: usize,
}

impl MicroTlb {
    /// An empty TLB of `entries` entries (at least 1), replacing the
    /// least recently used.
    pub fn new(entries: usize) -> Self {
        Self {
            entries: vec![EMPTY; entries.max(1)].into_boxed_slice(),
            last_hit: 0,
            uses: 0,
            hints: [0; HINTS],
            maybe_duplicates: false,
            fifo: false,
            next: 0,
            filled: 0,
        }
    }

    /// An empty TLB of `entries` entries (at least 1), replacing first
    /// in, first out.
    pub fn new_fifo(entries: usize) -> Self {
        Self {
            fifo: true,
            ..Self::new(entries)
        }
    }

    /// The entry that hit (or was inserted) last.
    #[inline]
    pub fn last_hit_index(&self) -> usize {
        self.last_hit
    }

    /// When entry `index` was inserted (first in, first out) or last used.
    #[inline]
    pub fn stamp(&self, index: usize) -> u64 {
        self.entries[index].last_used
    }

    /// Whether entry `index` still holds what it held at `stamp` (first
    /// in, first out: not replaced, invalidated or cleared since).
    #[inline]
    pub fn holds(&self, index: usize, stamp: u64) -> bool {
        self.entries
            .get(index)
            .is_some_and(|e| e.shift != 0 && e.last_used == stamp)
    }

    #[inline]
    fn hint_slot(va: u64) -> usize {
        (va >> 12) as usize % HINTS
    }

    /// Whether an entry maps `va` in `space` (made the most recently used).
    ///
    /// The entry used is the last hit if it maps `va`, else the first in
    /// order that does. While no two entries can match one address, the
    /// matching entry is unique, and the hint for `va`'s page finds it
    /// without the scan when it names it.
    #[inline]
    pub fn lookup(&mut self, va: u64, space: Space) -> bool {
        let index = if self.entries[self.last_hit].matches(va, space) {
            self.last_hit
        } else {
            let hint = usize::from(self.hints[Self::hint_slot(va)]);
            if !self.maybe_duplicates
                && let Some(entry) = self.entries.get(hint)
                && entry.matches(va, space)
            {
                hint
            } else {
                match self.entries.iter().position(|e| e.matches(va, space)) {
                    Some(index) => index,
                    None => return false,
                }
            }
        };
        if !self.fifo {
            self.uses += 1;
            self.entries[index].last_used = self.uses;
        }
        self.last_hit = index;
        self.hints[Self::hint_slot(va)] = index as u8;
        true
    }

    /// Whether an entry maps `va` in `space`, without using it.
    pub fn contains(&self, va: u64, space: Space) -> bool {
        self.entries.iter().any(|e| e.matches(va, space))
    }

    /// Whether the entry that hit last (or was inserted last) maps `va`.
    pub fn last_hit_maps(&self, va: u64, space: Space) -> bool {
        self.entries[self.last_hit].matches(va, space)
    }

    /// Adds a translation over an empty or the least recently used entry.
    pub fn insert(&mut self, va: u64, space: Space, mapping: Mapping) {
        // A mapping of shift 0 would read as an empty entry.
        debug_assert!(mapping.shift != 0);
        self.uses += 1;
        let index = if self.filled < self.entries.len() {
            // The first empty entry (see `filled`).
            self.filled += 1;
            self.filled - 1
        } else if self.fifo {
            let oldest = self.next;
            self.next = if oldest + 1 == self.entries.len() {
                0
            } else {
                oldest + 1
            };
            oldest
        } else {
            lru_or_empty(&self.entries)
        };
        let entry = Entry::new(va, space, mapping, self.uses);
        if !self.maybe_duplicates {
            self.maybe_duplicates = self
                .entries
                .iter()
                .enumerate()
                .any(|(i, other)| i != index && entry.overlaps(other));
        }
        self.entries[index] = entry;
        self.last_hit = index;
        // Truncated for a TLB of over 256 entries: a hint only saves a scan.
        self.hints[Self::hint_slot(va)] = index as u8;
    }

    /// Empties it.
    pub fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.maybe_duplicates = false;
        self.next = 0;
        self.filled = 0;
    }

    /// Entries in use.
    pub fn occupancy(&self) -> usize {
        self.entries.iter().filter(|e| e.shift != 0).count()
    }
}

/// An empty entry if there is one (the first), else the least recently used.
fn lru_or_empty(entries: &[Entry]) -> usize {
    entries
        .iter()
        .position(|e| e.shift == 0)
        .unwrap_or_else(|| {
            entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(index, _)| index)
                .expect("at least one entry")
        })
}

/// A set-associative TLB (the main TLB, and the walk cache) holding
/// entries of several page sizes: a lookup tries each size present, the
/// set chosen by that size's page number.
#[derive(Debug, Clone)]
pub struct SetTlb {
    ways: usize,
    set_mask: u64,
    entries: Box<[Entry]>,
    /// Bit `s` set: some entry may have shift `s`.
    shifts_present: u64,
    uses: u64,
}

impl SetTlb {
    /// An empty TLB of `entries` entries in `ways` ways; `entries / ways`
    /// must be a power of two (the profile checks it).
    pub fn new(entries: usize, ways: usize) -> Self {
        let ways = ways.max(1);
        let sets = (entries / ways).max(1);
        debug_assert!(sets.is_power_of_two());
        Self {
            ways,
            set_mask: sets as u64 - 1,
            entries: vec![EMPTY; sets * ways].into_boxed_slice(),
            shifts_present: 0,
            uses: 0,
        }
    }

    fn set(&self, va: u64, shift: u8) -> std::ops::Range<usize> {
        let first = ((va >> shift) & self.set_mask) as usize * self.ways;
        first..first + self.ways
    }

    /// The mapping of `va` in `space`, if an entry has it (made the most
    /// recently used).
    pub fn lookup(&mut self, va: u64, space: Space) -> Option<Mapping> {
        let mut shifts = self.shifts_present;
        while shifts != 0 {
            let shift = shifts.trailing_zeros() as u8;
            shifts &= shifts - 1;
            for index in self.set(va, shift) {
                if self.entries[index].shift == shift && self.entries[index].matches(va, space) {
                    self.uses += 1;
                    self.entries[index].last_used = self.uses;
                    return Some(self.entries[index].mapping());
                }
            }
        }
        None
    }

    /// Adds a translation over an empty or the least recently used way of its set.
    pub fn insert(&mut self, va: u64, space: Space, mapping: Mapping) {
        debug_assert!((1..64).contains(&mapping.shift));
        self.uses += 1;
        let range = self.set(va, mapping.shift);
        let index = range.start + lru_or_empty(&self.entries[range]);
        self.entries[index] = Entry::new(va, space, mapping, self.uses);
        self.shifts_present |= 1 << mapping.shift;
    }

    /// Removes what `what` names; returns how many entries went.
    pub fn invalidate(&mut self, what: &Invalidation) -> usize {
        let mut removed = 0;
        for entry in self.entries.iter_mut() {
            if entry.invalidated_by(what) {
                *entry = EMPTY;
                removed += 1;
            }
        }
        removed
    }

    /// Entries in use.
    pub fn occupancy(&self) -> usize {
        self.entries.iter().filter(|e| e.shift != 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: Mapping = Mapping {
        shift: 12,
        global: false,
        payload: 0,
    };

    fn space(asid: u16) -> Space {
        Space {
            id: SpaceId::compose(SpaceId::EL10, false, 0),
            asid,
        }
    }

    #[test]
    fn an_entry_matches_its_asid_or_any_when_global() {
        let mut tlb = SetTlb::new(16, 4);
        tlb.insert(0x1000, space(1), PAGE);
        tlb.insert(
            0xffff_0000_0000_2000,
            space(1),
            Mapping {
                global: true,
                ..PAGE
            },
        );
        assert!(tlb.lookup(0x1fff, space(1)).is_some());
        assert!(tlb.lookup(0x1000, space(2)).is_none());
        assert!(tlb.lookup(0xffff_0000_0000_2008, space(7)).is_some());
        // Another security state is another space.
        let secure = Space {
            id: SpaceId::compose(SpaceId::EL10, true, 0),
            asid: 1,
        };
        assert!(tlb.lookup(0x1000, secure).is_none());
    }

    #[test]
    fn blocks_and_pages_live_side_by_side() {
        let mut tlb = SetTlb::new(16, 4);
        tlb.insert(
            0x4020_0000,
            space(1),
            Mapping {
                shift: 21,
                global: true,
                payload: 0,
            },
        );
        tlb.insert(0x1000, space(1), PAGE);
        assert_eq!(tlb.lookup(0x403f_fff8, space(3)).map(|m| m.shift), Some(21));
        assert_eq!(tlb.lookup(0x1008, space(1)).map(|m| m.shift), Some(12));
        assert!(tlb.lookup(0x4040_0000, space(1)).is_none());
    }

    #[test]
    fn invalidation_by_asid_spares_global_entries_and_by_va_reaches_them() {
        let mut tlb = SetTlb::new(16, 4);
        let global = Mapping {
            global: true,
            ..PAGE
        };
        tlb.insert(0x1000, space(1), PAGE);
        tlb.insert(0x2000, space(1), global);
        tlb.insert(0x3000, space(2), PAGE);
        let all_el10 = SpaceId::compose(SpaceId::EL10, false, 0);
        let by_asid = Invalidation {
            space_mask: SpaceId::ALL,
            space_value: all_el10,
            asid: AsidScope::NonGlobal(1),
            va: None,
        };
        assert_eq!(tlb.invalidate(&by_asid), 1);
        assert!(tlb.lookup(0x2000, space(1)).is_some());
        assert!(tlb.lookup(0x3000, space(2)).is_some());
        let by_va = Invalidation {
            asid: AsidScope::ThisOrGlobal(5),
            va: Some(0x2abc),
            ..by_asid
        };
        assert_eq!(tlb.invalidate(&by_va), 1);
        assert_eq!(tlb.occupancy(), 1);
    }

    #[test]
    fn the_micro_tlb_takes_the_first_of_two_matching_entries_as_a_scan_does() {
        let mut tlb = MicroTlb::new(4);
        let global = Mapping {
            global: true,
            ..PAGE
        };
        // Entry 0: 0x1000 for ASID 1; entry 1: 0x5000; entry 2: 0x1000
        // global, inserted for ASID 2 (where entry 0 does not match).
        tlb.insert(0x1000, space(1), PAGE);
        assert!(!tlb.maybe_duplicates);
        tlb.insert(0x5000, space(1), PAGE);
        assert!(!tlb.lookup(0x1000, space(2)));
        tlb.insert(0x1000, space(2), global);
        assert!(tlb.maybe_duplicates);
        // In ASID 1 both entries 0 and 2 match: the scan's first, entry 0.
        assert!(tlb.lookup(0x5000, space(1)));
        assert!(tlb.lookup(0x1000, space(1)));
        assert_eq!(tlb.last_hit, 0);
        tlb.clear();
        assert!(!tlb.maybe_duplicates);
    }

    #[test]
    fn a_hint_finds_the_one_matching_entry() {
        let mut tlb = MicroTlb::new(10);
        for page in 0..10u64 {
            tlb.insert(page << 12, space(1), PAGE);
        }
        assert!(!tlb.maybe_duplicates);
        for page in (0..10u64).rev() {
            assert!(tlb.lookup((page << 12) + 8, space(1)));
            assert_eq!(tlb.last_hit, page as usize);
        }
        assert!(!tlb.lookup(0x10_0000, space(1)));
        assert!(!tlb.lookup(0x1000, space(2)));
    }

    #[test]
    fn entries_overlap_when_some_address_could_match_both() {
        let entry = |va: u64, asid: u16, mapping: Mapping| Entry::new(va, space(asid), mapping, 0);
        let block = Mapping {
            shift: 21,
            global: false,
            payload: 0,
        };
        let global = Mapping {
            global: true,
            ..PAGE
        };
        assert!(entry(0x20_1000, 1, PAGE).overlaps(&entry(0x20_0000, 1, block)));
        assert!(!entry(0x40_1000, 1, PAGE).overlaps(&entry(0x20_0000, 1, block)));
        assert!(!entry(0x1000, 1, PAGE).overlaps(&entry(0x1000, 2, PAGE)));
        assert!(entry(0x1000, 1, PAGE).overlaps(&entry(0x1000, 2, global)));
        assert!(!entry(0x1000, 1, PAGE).overlaps(&EMPTY));
    }

    #[test]
    fn the_micro_tlb_keeps_its_most_recently_used_entries() {
        let mut tlb = MicroTlb::new(2);
        tlb.insert(0x1000, space(1), PAGE);
        tlb.insert(0x2000, space(1), PAGE);
        assert!(tlb.lookup(0x1000, space(1)));
        tlb.insert(0x3000, space(1), PAGE);
        assert!(tlb.lookup(0x1000, space(1)));
        assert!(!tlb.lookup(0x2000, space(1)));
        assert_eq!(tlb.occupancy(), 2);
    }
}
