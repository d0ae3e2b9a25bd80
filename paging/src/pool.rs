//! A table builder over caller-owned pages: the first page is the level-1
//! table, the next ones become level-2 and level-3 tables in the order
//! regions need them. Regions are identity mapped (output = input), as
//! every map of the three images is.

use crate::descriptor;
use crate::walk::{Contiguous, Leaf, TableMemory, walk};
use crate::{BLOCK, ENTRIES, GIB, PAGE, SPACE, Table};

/// Why a map could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// A region is empty, not page aligned, or beyond the 4 GiB covered.
    Range(u64),
    /// The pool has no page left for another table.
    Pool,
    /// A page already mapped differently (two regions overlap).
    Overlap(u64),
    /// A page to map over that no mapping the caller accepts covers
    /// ([`Pool::map_pages_over`]).
    Uncovered(u64),
}

/// Pages for tables, and where they are: table descriptors hold physical
/// addresses, and the pool lives at `base` (identity mapped).
pub struct Pool<'a> {
    pages: &'a mut [Table],
    base: u64,
    used: usize,
}

impl<'a> Pool<'a> {
    /// A pool of `pages` at physical address `base`; the first page becomes
    /// the level-1 table, whose address goes into TTBR0 or VTTBR.
    pub fn new(pages: &'a mut [Table], base: u64) -> Result<Self, MapError> {
        let first = pages.first_mut().ok_or(MapError::Pool)?;
        *first = Table::EMPTY;
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
        if entry & descriptor::TYPE == descriptor::TABLE {
            return Ok(self.index_of(entry & descriptor::ADDRESS));
        }
        if entry & descriptor::VALID != 0 {
            // A block is there already: a region meets another.
            return Err(MapError::Overlap(index as u64));
        }
        let next = self.used;
        let slot = self.pages.get_mut(next).ok_or(MapError::Pool)?;
        *slot = Table::EMPTY;
        self.used += 1;
        self.pages[page].0[index] = (self.base + next as u64 * PAGE) | descriptor::TABLE;
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

    /// Maps `[base, base + size)` at the same addresses with the leaf
    /// `attributes` (all but the address and type bits): 2 MiB blocks where
    /// the region covers whole aligned blocks, pages elsewhere.
    pub fn map(
        &mut self,
        base: u64,
        size: u64,
        attributes: impl Into<u64>,
    ) -> Result<(), MapError> {
        let end = page_range(base, size)?;
        let attributes = attributes.into();
        let mut at = base;
        while at < end {
            let level2 = self.table(0, (at / GIB) as usize)?;
            let index2 = (at % GIB / BLOCK) as usize;
            if at.is_multiple_of(BLOCK) && end - at >= BLOCK {
                self.set(level2, index2, at | attributes | descriptor::BLOCK, at)?;
                at += BLOCK;
                continue;
            }
            let level3 = self.table(level2, index2)?;
            let index3 = (at % BLOCK / PAGE) as usize;
            self.set(level3, index3, at | attributes | descriptor::PAGE, at)?;
            at += PAGE;
        }
        Ok(())
    }

    /// Maps each page of `[base, base + size)` with the leaf `attributes`
    /// over a mapping already there that `over` accepts (it is given the
    /// leaf descriptor): a block is first split into a level-3 table of
    /// pages that keep its attributes, then the pages are replaced. A page
    /// whose descriptor `over` refuses (one mapped over already, if
    /// `attributes` are such that `over` refuses them) is an overlap; a
    /// page with no accepted mapping under it is [`MapError::Uncovered`].
    /// The RTOS maps a task's pages this way inside its kernel's blocks.
    pub fn map_pages_over(
        &mut self,
        base: u64,
        size: u64,
        attributes: impl Into<u64>,
        over: impl Fn(u64) -> bool,
    ) -> Result<(), MapError> {
        let end = page_range(base, size)?;
        let attributes = attributes.into();
        for at in (base..end).step_by(PAGE as usize) {
            let level1 = self.pages[0].0[(at / GIB) as usize];
            if level1 & descriptor::TYPE != descriptor::TABLE {
                return Err(MapError::Uncovered(at));
            }
            let level2 = self.index_of(level1 & descriptor::ADDRESS);
            let index2 = (at % GIB / BLOCK) as usize;
            let entry = self.pages[level2].0[index2];
            let level3 = if entry & descriptor::TYPE == descriptor::TABLE {
                self.index_of(entry & descriptor::ADDRESS)
            } else if entry & descriptor::VALID != 0 && over(entry) {
                self.split(level2, index2)?
            } else {
                return Err(MapError::Uncovered(at));
            };
            let page = &mut self.pages[level3].0[(at % BLOCK / PAGE) as usize];
            if *page & descriptor::VALID == 0 {
                return Err(MapError::Uncovered(at));
            }
            if !over(*page) {
                return Err(MapError::Overlap(at));
            }
            *page = at | attributes | descriptor::PAGE;
        }
        Ok(())
    }

    /// Replaces the block at `index` of the level-2 table `page` by a
    /// level-3 table of the same pages with the same attributes; returns
    /// the new table's page.
    fn split(&mut self, page: usize, index: usize) -> Result<usize, MapError> {
        let block = self.pages[page].0[index];
        let output = block & descriptor::ADDRESS;
        let attributes = block & !descriptor::ADDRESS & !descriptor::TYPE;
        let next = self.used;
        let table = self.pages.get_mut(next).ok_or(MapError::Pool)?;
        for (i, entry) in table.0.iter_mut().enumerate() {
            *entry = (output + i as u64 * PAGE) | attributes | descriptor::PAGE;
        }
        self.used += 1;
        self.pages[page].0[index] = (self.base + next as u64 * PAGE) | descriptor::TABLE;
        Ok(next)
    }

    /// Walks the tables for `address` as the hardware would ([`walk`]).
    pub fn translate(&self, address: u64) -> Option<Leaf> {
        walk(self, self.base, address)
    }
}

/// The end of `[base, base + size)`, a non-empty run of whole pages inside
/// the 4 GiB the tables cover.
fn page_range(base: u64, size: u64) -> Result<u64, MapError> {
    let end = base.checked_add(size).ok_or(MapError::Range(base))?;
    if size == 0 || !base.is_multiple_of(PAGE) || !size.is_multiple_of(PAGE) || end > SPACE {
        return Err(MapError::Range(base));
    }
    Ok(end)
}

impl TableMemory for Pool<'_> {
    fn table(&self, address: u64) -> Option<&[u64; ENTRIES]> {
        Contiguous {
            tables: &self.pages[..self.used],
            base: self.base,
        }
        .at(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    const BASE: u64 = 0x7FC4_0000;
    const RAM: u64 = descriptor::AF | 0b1111 << 2;
    const DEVICE: u64 = descriptor::AF | 0b0001 << 2;

    #[test]
    fn blocks_where_whole_pages_elsewhere() {
        let mut pages = vec![Table::EMPTY; 8];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, 0x40_0000, RAM).unwrap();
        pool.map(0x0900_0000, 0x1000, DEVICE).unwrap();
        // Level 1, level 2 for GiB 1, level 2 and 3 for GiB 0.
        assert_eq!(pool.used(), 4);
        let ram = pool.translate(0x4020_1234).unwrap();
        assert_eq!((ram.address, ram.level), (0x4020_1234, 2));
        assert_eq!(ram.attributes, RAM, "attributes exactly as asked");
        let uart = pool.translate(0x0900_0ABC).unwrap();
        assert_eq!((uart.address, uart.level), (0x0900_0ABC, 3));
        assert_eq!(uart.attributes, DEVICE);
        assert_eq!(pool.translate(0x0900_1000), None, "the next page");
        assert_eq!(pool.translate(0x4040_0000), None, "past the RAM");
        assert_eq!(pool.translate(0x8000_0000), None, "GiB 2 empty");
        assert_eq!(pool.translate(SPACE), None);
    }

    #[test]
    fn a_region_that_does_not_fill_blocks_uses_pages_at_both_ends() {
        let mut pages = vec![Table::EMPTY; 8];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x401F_F000, 0x20_2000, RAM).unwrap();
        assert_eq!(pool.translate(0x401F_F000).unwrap().level, 3);
        assert_eq!(pool.translate(0x4020_0000).unwrap().level, 2);
        assert_eq!(pool.translate(0x4040_0000).unwrap().level, 3);
        assert_eq!(pool.translate(0x4040_1000), None);
        assert_eq!(pool.translate(0x401F_E000), None);
    }

    #[test]
    fn refuses_overlaps_bad_ranges_and_a_full_pool() {
        let mut pages = vec![Table::EMPTY; 3];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, BLOCK, RAM).unwrap();
        assert_eq!(
            pool.map(0x4000_0000, PAGE, DEVICE),
            Err(MapError::Overlap(0)),
            "a page inside a block"
        );
        assert_eq!(
            pool.map(0x4000_0000, BLOCK, DEVICE),
            Err(MapError::Overlap(0x4000_0000)),
            "the same block as something else"
        );
        assert!(
            pool.map(0x4000_0000, BLOCK, RAM).is_ok(),
            "the same mapping again"
        );
        assert_eq!(pool.map(0x800, PAGE, RAM), Err(MapError::Range(0x800)));
        assert_eq!(
            pool.map(SPACE - PAGE, 2 * PAGE, RAM),
            Err(MapError::Range(SPACE - PAGE))
        );
        assert_eq!(pool.map(0, 0, RAM), Err(MapError::Range(0)));
        // GiB 0 needs a level 2 and a level 3 table: one page too few.
        assert_eq!(pool.map(0x0900_0000, PAGE, DEVICE), Err(MapError::Pool));
    }

    #[test]
    fn pages_mapped_over_a_block_split_it_and_keep_the_rest() {
        const TASK: u64 = descriptor::AF | 0b1111 << 2 | 1 << 11;
        let kernel_only = |d: u64| d & (1 << 11) == 0;
        let mut pages = vec![Table::EMPTY; 4];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, 2 * BLOCK, RAM).unwrap();
        pool.map_pages_over(0x401F_F000, 2 * PAGE, TASK, kernel_only)
            .unwrap();
        // Level 1, level 2, and a level 3 for each of the two blocks.
        assert_eq!(pool.used(), 4);
        for (address, attributes) in [
            (0x401F_F008, TASK),
            (0x4020_0FF8, TASK),
            (0x401F_E000, RAM),
            (0x4020_1000, RAM),
            (0x4000_0000, RAM),
            (0x403F_F000, RAM),
        ] {
            let leaf = pool.translate(address).unwrap();
            assert_eq!((leaf.address, leaf.level), (address, 3), "{address:#x}");
            assert_eq!(leaf.attributes, attributes, "{address:#x}");
        }
        assert_eq!(
            pool.map_pages_over(0x4020_0000, PAGE, TASK, kernel_only),
            Err(MapError::Overlap(0x4020_0000)),
            "a page mapped over already"
        );
        assert_eq!(
            pool.map_pages_over(0x4040_0000, PAGE, TASK, kernel_only),
            Err(MapError::Uncovered(0x4040_0000)),
            "past the blocks"
        );
        assert_eq!(
            pool.map_pages_over(0x0800_0000, PAGE, TASK, kernel_only),
            Err(MapError::Uncovered(0x0800_0000)),
            "a GiB with nothing mapped"
        );
    }

    #[test]
    fn a_block_the_caller_refuses_is_not_split() {
        let mut pages = vec![Table::EMPTY; 4];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, BLOCK, DEVICE).unwrap();
        let ram_only = |d: u64| d & 0b1111 << 2 == RAM & 0b1111 << 2;
        assert_eq!(
            pool.map_pages_over(0x4000_0000, PAGE, RAM, ram_only),
            Err(MapError::Uncovered(0x4000_0000))
        );
        assert_eq!(pool.used(), 2, "no table taken");
        let mut pages = vec![Table::EMPTY; 2];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, BLOCK, RAM).unwrap();
        assert_eq!(
            pool.map_pages_over(0x4000_0000, PAGE, DEVICE, ram_only),
            Err(MapError::Pool),
            "no page left to split the block into"
        );
    }

    #[test]
    fn table_descriptors_hold_physical_addresses() {
        let mut pages = vec![Table::EMPTY; 4];
        let mut pool = Pool::new(&mut pages, BASE).unwrap();
        pool.map(0x4000_0000, BLOCK, RAM).unwrap();
        assert_eq!(pool.root(), BASE);
        assert_eq!(pages[0].0[1], (BASE + PAGE) | 0b11);
        assert_eq!(pages[1].0[0], 0x4000_0000 | RAM | 1);
    }
}
