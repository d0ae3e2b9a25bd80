//! Translation tables for the EL2 layer: its own identity map at EL2
//! (stage 1) and each partition's stage-2 map (IPA = PA), both with the
//! 4 KiB granule and walks that start at level 1 over 4 GiB (T0SZ = 32):
//! 1 GiB per level-1 entry, 2 MiB blocks at level 2, 4 KiB pages at level
//! 3, where a region does not fill a whole block.
//!
//! Tables come from a pool of pages the caller owns (the firmware's
//! `.bss`), so building needs no allocator and a host test can read what
//! was built by walking it like the hardware would ([`Pool::translate`]).

/// Entries in a table.
pub const ENTRIES: usize = 512;
/// Bytes of a page.
pub const PAGE: u64 = 1 << 12;
/// Bytes of a level-2 block.
pub const BLOCK: u64 = 2 << 20;
/// Bytes of a level-1 entry.
const GIB: u64 = 1 << 30;
/// The address space the tables cover (T0SZ = 32): 4 GiB.
pub const SPACE: u64 = 4 * GIB;

/// One translation table, 4 KiB aligned as table descriptors require.
#[repr(C, align(4096))]
#[derive(Clone, Copy, Debug)]
pub struct Page(pub [u64; ENTRIES]);

impl Page {
    /// No mapping.
    pub const EMPTY: Self = Self([0; ENTRIES]);
}

/// Descriptor bits common to both stages.
mod bits {
    /// Valid.
    pub const VALID: u64 = 1;
    /// A next-level table (levels 1, 2) or a page (level 3).
    pub const TABLE_OR_PAGE: u64 = 0b11;
    /// A block (levels 1, 2).
    pub const BLOCK: u64 = 0b01;
    /// SH = 3: inner shareable.
    pub const INNER_SHAREABLE: u64 = 3 << 8;
    /// AF: accessed.
    pub const AF: u64 = 1 << 10;
    /// The output address bits of a descriptor (48-bit addresses).
    pub const ADDRESS: u64 = 0x0000_FFFF_FFFF_F000;
}

/// What a mapping is: memory type, access and execution, per stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Stage 1 (EL2's own map): the layer's code, read-only, executable.
    HypCode,
    /// Stage 1: the layer's data, read/write, never executed.
    HypData,
    /// Stage 1: device registers (GIC, consoles), never executed.
    HypDevice,
    /// Stage 2: a partition's RAM, Normal write-back, read/write, executable.
    GuestRam,
    /// Stage 2: a region shared with others (the shared region), Normal
    /// write-back, read/write, never executed.
    GuestShared,
    /// Stage 2: as [`Kind::GuestShared`], read-only (the shared region's
    /// header, which only the secure side writes).
    GuestSharedReadOnly,
    /// Stage 2: a partition's device, Device-nGnRE, never executed.
    GuestDevice,
}

/// MAIR_EL2: attribute 0 Device-nGnRnE, attribute 1 Normal write-back
/// read/write-allocate (the monitor's and Linux's attributes for RAM).
pub const MAIR: u64 = 0xFF << 8;
/// TCR_EL2 (no VHE): T0SZ = 32, walks write-back cacheable inner shareable,
/// 4 KiB granule, 32-bit physical addresses, RES1 bits 23 and 31.
pub const TCR: u64 = 32 | 1 << 8 | 1 << 10 | 3 << 12 | 1 << 23 | 1 << 31;
/// VTCR_EL2: T0SZ = 32, walks start at level 1 (SL0 = 1), write-back
/// cacheable inner shareable walks, 4 KiB granule, 32-bit physical
/// addresses (PS = 0), 8-bit VMIDs, RES1 bit 31.
pub const VTCR: u64 = 32 | 1 << 6 | 1 << 8 | 1 << 10 | 3 << 12 | 1 << 31;
/// SCTLR_EL2 (no VHE): the RES1 bits (4, 5, 11, 16, 18, 22, 23, 28, 29),
/// MMU (M), data and instruction caches (C, I) on; little endian, no
/// alignment checks.
pub const SCTLR_ON: u64 = 0x30C5_0830 | 1 | 1 << 2 | 1 << 12;

impl Kind {
    /// The leaf descriptor bits (all but the address and the type bits).
    pub const fn attributes(self) -> u64 {
        use bits::*;
        // Stage 1: AttrIndx[4:2], AP[7:6] (AP[1] RES1 at EL2, AP[2] read
        // only), XN bit 54. Stage 2: MemAttr[5:2], S2AP[7:6] (bit 6 read,
        // bit 7 write), XN[1:0] in bits 54:53 (0b10: never executed).
        const S1_NORMAL: u64 = 1 << 2;
        const S1_DEVICE: u64 = 0;
        const S1_AP1: u64 = 1 << 6;
        const S1_RO: u64 = 1 << 7;
        const S1_XN: u64 = 1 << 54;
        const S2_NORMAL_WB: u64 = 0b1111 << 2;
        const S2_DEVICE_NGNRE: u64 = 0b0001 << 2;
        const S2_RW: u64 = 0b11 << 6;
        const S2_RO: u64 = 0b01 << 6;
        const S2_XN: u64 = 0b10 << 53;
        match self {
            Self::HypCode => S1_NORMAL | S1_AP1 | S1_RO | INNER_SHAREABLE | AF,
            Self::HypData => S1_NORMAL | S1_AP1 | S1_XN | INNER_SHAREABLE | AF,
            Self::HypDevice => S1_DEVICE | S1_AP1 | S1_XN | AF,
            Self::GuestRam => S2_NORMAL_WB | S2_RW | INNER_SHAREABLE | AF,
            Self::GuestShared => S2_NORMAL_WB | S2_RW | S2_XN | INNER_SHAREABLE | AF,
            Self::GuestSharedReadOnly => S2_NORMAL_WB | S2_RO | S2_XN | INNER_SHAREABLE | AF,
            Self::GuestDevice => S2_DEVICE_NGNRE | S2_RW | S2_XN | AF,
        }
    }
}

/// Why a map could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// A region is empty, not page aligned, or beyond the 4 GiB covered.
    Range(u64),
    /// The pool has no page left for another table.
    Pool,
    /// A page already mapped differently (two regions overlap).
    Overlap(u64),
}

/// Pages for tables, and where they are: table descriptors hold physical
/// addresses, and the pool lives at `base` (identity mapped).
pub struct Pool<'a> {
    pages: &'a mut [Page],
    base: u64,
    used: usize,
}

/// What [`Pool::translate`] finds at an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The output address.
    pub address: u64,
    /// The descriptor's attribute bits (as [`Kind::attributes`]).
    pub attributes: u64,
    /// The level the walk ended at (2: block, 3: page).
    pub level: u8,
}

impl<'a> Pool<'a> {
    /// A pool of `pages` at physical address `base`; the first page becomes
    /// the level-1 table, whose address goes into TTBR0_EL2 or VTTBR_EL2.
    pub fn new(pages: &'a mut [Page], base: u64) -> Result<Self, MapError> {
        let first = pages.first_mut().ok_or(MapError::Pool)?;
        *first = Page::EMPTY;
        Ok(Self {
            pages,
            base,
            used: 1,
        })
    }

    /// The level-1 table's physical address.
    pub const fn root(&self) -> u64 {
        self.base
    }

    /// Pages used so far.
    pub const fn used(&self) -> usize {
        self.used
    }

    fn index_of(&self, address: u64) -> usize {
        ((address - self.base) / PAGE) as usize
    }

    /// The next-level table an entry points at, made if there is none.
    fn table(&mut self, page: usize, index: usize) -> Result<usize, MapError> {
        let entry = self.pages[page].0[index];
        if entry & bits::TABLE_OR_PAGE == bits::TABLE_OR_PAGE {
            return Ok(self.index_of(entry & bits::ADDRESS));
        }
        if entry & bits::VALID != 0 {
            // A block is there already: a region meets another.
            return Err(MapError::Overlap(index as u64));
        }
        let next = self.used;
        let slot = self.pages.get_mut(next).ok_or(MapError::Pool)?;
        *slot = Page::EMPTY;
        self.used += 1;
        self.pages[page].0[index] = (self.base + next as u64 * PAGE) | bits::TABLE_OR_PAGE;
        Ok(next)
    }

    fn set(&mut self, page: usize, index: usize, descriptor: u64, at: u64) -> Result<(), MapError> {
        let entry = &mut self.pages[page].0[index];
        if *entry != 0 && *entry != descriptor {
            return Err(MapError::Overlap(at));
        }
        *entry = descriptor;
        Ok(())
    }

    /// Maps `[base, base + size)` at the same addresses as `kind`: 2 MiB
    /// blocks where the region covers whole aligned blocks, pages elsewhere.
    pub fn map(&mut self, base: u64, size: u64, kind: Kind) -> Result<(), MapError> {
        let end = base.checked_add(size).ok_or(MapError::Range(base))?;
        if size == 0 || !base.is_multiple_of(PAGE) || !size.is_multiple_of(PAGE) || end > SPACE {
            return Err(MapError::Range(base));
        }
        let attributes = kind.attributes();
        let mut at = base;
        while at < end {
            let level2 = self.table(0, (at / GIB) as usize)?;
            let index2 = (at % GIB / BLOCK) as usize;
            if at.is_multiple_of(BLOCK) && end - at >= BLOCK {
                self.set(level2, index2, at | attributes | bits::BLOCK, at)?;
                at += BLOCK;
                continue;
            }
            let level3 = self.table(level2, index2)?;
            let index3 = (at % BLOCK / PAGE) as usize;
            self.set(level3, index3, at | attributes | bits::TABLE_OR_PAGE, at)?;
            at += PAGE;
        }
        Ok(())
    }

    /// Walks the tables for `address` as the hardware would.
    pub fn translate(&self, address: u64) -> Option<Leaf> {
        if address >= SPACE {
            return None;
        }
        let entry1 = self.pages[0].0[(address / GIB) as usize];
        if entry1 & bits::TABLE_OR_PAGE != bits::TABLE_OR_PAGE {
            return None;
        }
        let level2 = &self.pages[self.index_of(entry1 & bits::ADDRESS)];
        let entry2 = level2.0[(address % GIB / BLOCK) as usize];
        let leaf = |entry: u64, level: u8, span: u64| Leaf {
            address: (entry & bits::ADDRESS & !(span - 1)) | (address % span),
            attributes: entry & !bits::ADDRESS & !bits::TABLE_OR_PAGE,
            level,
        };
        match entry2 & bits::TABLE_OR_PAGE {
            0b01 => Some(leaf(entry2, 2, BLOCK)),
            0b11 => {
                let level3 = &self.pages[self.index_of(entry2 & bits::ADDRESS)];
                let entry3 = level3.0[(address % BLOCK / PAGE) as usize];
                (entry3 & bits::TABLE_OR_PAGE == bits::TABLE_OR_PAGE).then(|| leaf(entry3, 3, PAGE))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    const BASE: u64 = 0x7FC4_0000;

    #[test]
    fn blocks_where_whole_pages_elsewhere() {
        let mut pages = vec![Page::EMPTY; 8];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, 0x40_0000, Kind::GuestRam).unwrap();
        pool.map(0x0900_0000, 0x1000, Kind::GuestDevice).unwrap();
        // Level 1, level 2 for GiB 1, level 2 and 3 for GiB 0.
        assert_eq!(pool.used(), 4);
        let ram = pool.translate(0x4020_1234).unwrap();
        assert_eq!((ram.address, ram.level), (0x4020_1234, 2));
        assert_eq!(
            ram.attributes,
            Kind::GuestRam.attributes(),
            "attributes exactly as asked"
        );
        let uart = pool.translate(0x0900_0ABC).unwrap();
        assert_eq!((uart.address, uart.level), (0x0900_0ABC, 3));
        assert_eq!(uart.attributes, Kind::GuestDevice.attributes());
        assert_eq!(pool.translate(0x0900_1000), None, "the next page");
        assert_eq!(pool.translate(0x4040_0000), None, "past the RAM");
        assert_eq!(pool.translate(0x8000_0000), None, "GiB 2 empty");
        assert_eq!(pool.translate(SPACE), None);
    }

    #[test]
    fn a_region_that_does_not_fill_blocks_uses_pages_at_both_ends() {
        let mut pages = vec![Page::EMPTY; 8];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x401F_F000, 0x20_2000, Kind::GuestShared).unwrap();
        assert_eq!(pool.translate(0x401F_F000).unwrap().level, 3);
        assert_eq!(pool.translate(0x4020_0000).unwrap().level, 2);
        assert_eq!(pool.translate(0x4040_0000).unwrap().level, 3);
        assert_eq!(pool.translate(0x4040_1000), None);
        assert_eq!(pool.translate(0x401F_E000), None);
    }

    #[test]
    fn refuses_overlaps_bad_ranges_and_a_full_pool() {
        let mut pages = vec![Page::EMPTY; 3];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, BLOCK, Kind::GuestRam).unwrap();
        assert_eq!(
            pool.map(0x4000_0000, PAGE, Kind::GuestDevice),
            Err(MapError::Overlap(0)),
            "a page inside a block"
        );
        assert_eq!(
            pool.map(0x4000_0000, BLOCK, Kind::GuestShared),
            Err(MapError::Overlap(0x4000_0000)),
            "the same block as something else"
        );
        assert!(
            pool.map(0x4000_0000, BLOCK, Kind::GuestRam).is_ok(),
            "the same mapping again"
        );
        assert_eq!(
            pool.map(0x800, PAGE, Kind::GuestRam),
            Err(MapError::Range(0x800))
        );
        assert_eq!(
            pool.map(SPACE - PAGE, 2 * PAGE, Kind::GuestRam),
            Err(MapError::Range(SPACE - PAGE))
        );
        assert_eq!(pool.map(0, 0, Kind::GuestRam), Err(MapError::Range(0)));
        // GiB 0 needs a level 2 and a level 3 table: one page too few.
        assert_eq!(
            pool.map(0x0900_0000, PAGE, Kind::GuestDevice),
            Err(MapError::Pool)
        );
    }

    #[test]
    fn table_descriptors_hold_physical_addresses() {
        let mut pages = vec![Page::EMPTY; 4];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, BLOCK, Kind::HypData).unwrap();
        assert_eq!(pool.root(), BASE);
        assert_eq!(pages[0].0[1], (BASE + PAGE) | 0b11);
        assert_eq!(pages[1].0[0], 0x4000_0000 | Kind::HypData.attributes() | 1);
    }
}
