//! The one walker: translates an input address through tables as the MMU
//! does (levels 1 to 3, 4 KiB granule, 4 GiB input), for host tests and for
//! checks before an MMU is on, and the security check built on it.

use crate::descriptor::{self, stage1};
use crate::{ENTRIES, PAGE, SPACE, Table};

/// Where a walk finds a table from the address a TTBR or table descriptor
/// holds (the tables' physical address, identity mapped in every image).
pub trait TableMemory {
    /// The table at physical address `address`, if these tables hold one
    /// there.
    fn table(&self, address: u64) -> Option<&[u64; ENTRIES]>;
}

/// Tables laid out one after another from physical address `base`, as
/// every image places them.
#[derive(Clone, Copy, Debug)]
pub struct Contiguous<'a> {
    /// The tables.
    pub tables: &'a [Table],
    /// The first one's physical address.
    pub base: u64,
}

impl<'a> Contiguous<'a> {
    /// The table at physical address `address`, for as long as the tables
    /// are borrowed.
    pub fn at(self, address: u64) -> Option<&'a [u64; ENTRIES]> {
        let offset = address.checked_sub(self.base)?;
        if !offset.is_multiple_of(PAGE) {
            return None;
        }
        self.tables.get((offset / PAGE) as usize).map(|t| &t.0)
    }
}

impl TableMemory for Contiguous<'_> {
    fn table(&self, address: u64) -> Option<&[u64; ENTRIES]> {
        self.at(address)
    }
}

/// The translation regime a table is walked in: it decides what the NS
/// bit means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// The monitor's stage 1 at EL3 (Secure: NS picks the address space).
    El3,
    /// The RTOS's stage 1 at S-EL1&0 (Secure: NS picks the address space).
    SecureEl1And0,
    /// The EL2 layer's own stage 1 at NS-EL2: always Non-secure.
    NonSecureEl2,
    /// A partition's stage 2 (NS-EL1&0): always Non-secure, and bits 5:2
    /// are MemAttr, not AttrIndx and NS.
    NonSecureStage2,
}

/// The physical address space an access goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Security {
    /// The Secure physical address space.
    Secure,
    /// The Non-secure physical address space.
    NonSecure,
}

/// What a walk finds at an input address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The output address.
    pub address: u64,
    /// The leaf descriptor's bits other than its address and type.
    pub attributes: u64,
    /// The level the walk ended at (1, 2: block; 3: page).
    pub level: u8,
    /// Whether a table descriptor on the way had NSTable set.
    pub ns_table: bool,
}

impl Leaf {
    /// The physical address space the output address is in, in `regime`.
    pub const fn security(&self, regime: Regime) -> Security {
        match regime {
            Regime::El3 | Regime::SecureEl1And0 => {
                if self.ns_table || self.attributes & stage1::NS != 0 {
                    Security::NonSecure
                } else {
                    Security::Secure
                }
            }
            Regime::NonSecureEl2 | Regime::NonSecureStage2 => Security::NonSecure,
        }
    }
}

/// Walks the tables whose level-1 table is at `root` for `input`, as the
/// hardware would: `None` where the access would take a translation fault.
pub fn walk(memory: &impl TableMemory, root: u64, input: u64) -> Option<Leaf> {
    if input >= SPACE {
        return None;
    }
    let mut table = memory.table(root)?;
    let mut ns_table = false;
    for level in 1..=3u8 {
        let shift = 12 + 9 * (3 - level as u32);
        let span = 1u64 << shift;
        let entry = table[(input >> shift) as usize % ENTRIES];
        let kind = entry & descriptor::TYPE;
        if entry & descriptor::VALID == 0 || (level == 3 && kind != descriptor::PAGE) {
            return None;
        }
        if level == 3 || kind == descriptor::BLOCK {
            return Some(Leaf {
                address: (entry & descriptor::ADDRESS & !(span - 1)) | (input & (span - 1)),
                attributes: entry & !descriptor::ADDRESS & !descriptor::TYPE,
                level,
                ns_table,
            });
        }
        ns_table |= entry & descriptor::NS_TABLE != 0;
        table = memory.table(entry & descriptor::ADDRESS)?;
    }
    None
}

/// A mapped address in the wrong physical address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecurityMismatch {
    /// The input address.
    pub address: u64,
    /// The space the tables send it to.
    pub mapped: Security,
}

/// Checks that every mapped page of `[base, base + size)` goes to the
/// `expected` physical address space in `regime` (unmapped pages pass: a
/// fault reaches nothing). A secure page mapped Non-secure would let the
/// image read and write normal-world memory it believes secure.
pub fn check_security(
    memory: &impl TableMemory,
    root: u64,
    regime: Regime,
    base: u64,
    size: u64,
    expected: Security,
) -> Result<(), SecurityMismatch> {
    let mut address = base & !(PAGE - 1);
    while address < base.saturating_add(size) {
        if let Some(leaf) = walk(memory, root, address) {
            let mapped = leaf.security(regime);
            if mapped != expected {
                return Err(SecurityMismatch { address, mapped });
            }
        }
        address += PAGE;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::{AF, BLOCK, NS_TABLE, PAGE as PAGE_TYPE, TABLE};
    use std::vec;

    const BASE: u64 = 0x1000_0000;

    /// Level 1 at BASE, level 2 for GiB 0 at BASE + 4 KiB, level 3 for its
    /// block 3 at BASE + 8 KiB.
    fn three_levels() -> vec::Vec<Table> {
        let mut t = vec![Table::EMPTY; 3];
        t[0].0[0] = (BASE + PAGE) | TABLE;
        t[1].0[1] = 0x0020_0000 | AF | BLOCK;
        t[1].0[3] = (BASE + 2 * PAGE) | TABLE;
        t[2].0[5] = 0x0060_5000 | AF | stage1::NS | PAGE_TYPE;
        t
    }

    #[test]
    fn blocks_and_pages_translate_with_their_attributes() {
        let t = three_levels();
        let m = Contiguous {
            tables: &t,
            base: BASE,
        };
        let block = walk(&m, BASE, 0x0021_2345).unwrap();
        assert_eq!(
            (block.address, block.level, block.attributes),
            (0x0021_2345, 2, AF)
        );
        assert_eq!(block.security(Regime::El3), Security::Secure);
        let page = walk(&m, BASE, 0x0060_5ABC).unwrap();
        assert_eq!((page.address, page.level), (0x0060_5ABC, 3));
        assert_eq!(page.security(Regime::SecureEl1And0), Security::NonSecure);
        assert_eq!(page.security(Regime::NonSecureStage2), Security::NonSecure);
        for unmapped in [0x0, 0x0060_4000, 0x0060_6000, 0x4000_0000, SPACE] {
            assert_eq!(walk(&m, BASE, unmapped), None, "{unmapped:#x}");
        }
    }

    #[test]
    fn a_reserved_level3_entry_and_a_stray_table_address_fault() {
        let mut t = three_levels();
        t[2].0[5] = 0x0060_5000 | AF | BLOCK;
        t[1].0[1] = (BASE + 7 * PAGE) | TABLE;
        let m = Contiguous {
            tables: &t,
            base: BASE,
        };
        assert_eq!(walk(&m, BASE, 0x0060_5000), None);
        assert_eq!(walk(&m, BASE, 0x0020_0000), None);
    }

    #[test]
    fn ns_table_makes_everything_below_non_secure() {
        let mut t = three_levels();
        t[0].0[0] |= NS_TABLE;
        let m = Contiguous {
            tables: &t,
            base: BASE,
        };
        let block = walk(&m, BASE, 0x0020_0000).unwrap();
        assert_eq!(block.security(Regime::El3), Security::NonSecure);
    }

    #[test]
    fn the_check_finds_the_one_page_in_the_wrong_space() {
        let t = three_levels();
        let m = Contiguous {
            tables: &t,
            base: BASE,
        };
        let region = (0x0060_0000, 0x20_0000);
        assert_eq!(
            check_security(&m, BASE, Regime::El3, region.0, region.1, Security::Secure),
            Err(SecurityMismatch {
                address: 0x0060_5000,
                mapped: Security::NonSecure
            })
        );
        assert_eq!(
            check_security(
                &m,
                BASE,
                Regime::El3,
                0x0020_0000,
                0x20_0000,
                Security::Secure
            ),
            Ok(())
        );
    }
}
