//! One address space: stage-1 tables for the S-EL1&0 regime, 4 KiB granule,
//! 32-bit addresses, identity-mapped. The kernel's part (its RAM, devices, the
//! shared region) is 2 MiB blocks, global, EL1 only; a task's own pages are
//! 4 KiB pages, not global (tagged with the ASID), EL0 accessible, in level-3
//! tables that split the kernel block they lie in.

use crate::{BLOCK, PAGE};
use tandem_paging::descriptor::{AF, INNER_SHAREABLE, stage1};
use tandem_paging::{Contiguous, Pool, Regime, Table, walk};
pub use tandem_paging::{Security, SecurityMismatch};

/// Tables in one address space, built by `tandem-paging`'s [`Pool`]: one
/// level 1, a level 2 for each GiB the kernel's part reaches (two on both
/// boards), the rest level 3 for the blocks tasks' pages split.
pub const TABLES: usize = 7;

/// What a range of memory is, and so how it is mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Device-nGnRnE, EL1 read/write, never executable.
    Device,
    /// The kernel's RAM: Normal, EL1 read/write/execute, no EL0 access.
    Kernel,
    /// Normal-world memory (the shared region): Normal, Non-secure, EL1
    /// read/write, never executable.
    Shared,
    /// A task's data and stack: EL0 and EL1 read/write, never executable.
    UserData,
    /// Code for tasks: EL0 and EL1 read-only, executable at EL0 only.
    UserCode,
}

impl Kind {
    const fn attributes(self) -> u64 {
        use stage1::{AP_EL0_OR_RES1 as AP_EL0, NOT_GLOBAL as NG, NS, PXN, READ_ONLY as AP_RO};
        use stage1::{XN as UXN, attr_index};
        let normal = attr_index(1) | INNER_SHAREABLE;
        AF | match self {
            Kind::Device => attr_index(0) | PXN | UXN,
            Kind::Kernel => normal | UXN,
            Kind::Shared => normal | NS | PXN | UXN,
            Kind::UserData => normal | NG | AP_EL0 | PXN | UXN,
            Kind::UserCode => normal | NG | AP_EL0 | AP_RO | PXN,
        }
    }

    const fn user(self) -> bool {
        matches!(self, Kind::UserData | Kind::UserCode)
    }
}

/// A range to map, identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
    /// How.
    pub kind: Kind,
}

/// Why tables could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// A kernel range not 2 MiB aligned, or a task range not 4 KiB aligned,
    /// or a user kind in the kernel part (or the reverse).
    Unaligned(u64),
    /// A range beyond the 4 GiB the tables cover.
    OutOfRange(u64),
    /// Two ranges map the same address.
    Overlap(u64),
    /// A task page outside the kernel's RAM (the kernel must reach it).
    NotKernelMemory(u64),
    /// Task pages spread over more 2 MiB blocks than there are level-3
    /// tables (or the kernel's part over more GiBs than level-2 tables).
    TooManyBlocks(u64),
}

/// The tables of one address space, laid out at a known physical address
/// (the firmware's static, identity-mapped).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AddressSpace {
    tables: [Table; TABLES],
}

/// What an address translates to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Output address.
    pub pa: u64,
    /// The descriptor's kind.
    pub kind: Kind,
    /// Tagged with the ASID (nG).
    pub not_global: bool,
    /// Mapped by a level-3 page (else a 2 MiB block).
    pub page: bool,
    /// The physical address space it reaches.
    pub security: Security,
}

impl Translation {
    /// Whether EL0 may read it.
    pub const fn el0_read(&self) -> bool {
        self.kind.user()
    }
    /// Whether EL0 may write it.
    pub const fn el0_write(&self) -> bool {
        matches!(self.kind, Kind::UserData)
    }
    /// Whether EL0 may execute it.
    pub const fn el0_exec(&self) -> bool {
        matches!(self.kind, Kind::UserCode)
    }
}

impl AddressSpace {
    /// No mappings at all.
    pub const EMPTY: AddressSpace = AddressSpace {
        tables: [Table::EMPTY; TABLES],
    };

    /// Builds the tables, which lie at physical address `pa`: `kernel`
    /// ranges as 2 MiB blocks, then `user` ranges as pages inside them.
    pub fn build(&mut self, pa: u64, kernel: &[Mapping], user: &[Mapping]) -> Result<(), MapError> {
        *self = Self::EMPTY;
        let mut pool = Pool::new(&mut self.tables, pa).expect("an address space has tables");
        for m in kernel {
            if m.base % BLOCK != 0 || m.size % BLOCK != 0 || m.kind.user() {
                return Err(MapError::Unaligned(m.base));
            }
            // Two kernel ranges never share a block, even mapped alike.
            let mut blocks = (m.base..m.base.saturating_add(m.size)).step_by(BLOCK as usize);
            if let Some(mapped) = blocks.find(|&b| pool.translate(b).is_some()) {
                return Err(MapError::Overlap(mapped));
            }
            pool.map(m.base, m.size, m.kind.attributes())
                .map_err(|e| match e {
                    tandem_paging::MapError::Overlap(_) => MapError::Overlap(m.base),
                    tandem_paging::MapError::Pool => MapError::TooManyBlocks(m.base),
                    _ => MapError::OutOfRange(m.base),
                })?;
        }
        for m in user {
            if m.base % PAGE != 0 || m.size % PAGE != 0 || !m.kind.user() {
                return Err(MapError::Unaligned(m.base));
            }
            pool.map_pages_over(m.base, m.size, m.kind.attributes(), is_kernel_ram)
                .map_err(|e| match e {
                    tandem_paging::MapError::Overlap(at) => MapError::Overlap(at),
                    tandem_paging::MapError::Pool => MapError::TooManyBlocks(m.base),
                    tandem_paging::MapError::Uncovered(at) => MapError::NotKernelMemory(at),
                    tandem_paging::MapError::Range(at) => MapError::NotKernelMemory(at),
                })?;
        }
        Ok(())
    }

    /// Walks the tables (at physical address `pa`) as the MMU would
    /// (`tandem-paging`'s walker, which the other images' tests use too).
    pub fn translate(&self, pa: u64, va: u64) -> Option<Translation> {
        let leaf = walk(&self.placed(pa), pa, va)?;
        Some(Translation {
            pa: leaf.address,
            kind: kind_of(leaf.attributes)?,
            not_global: leaf.attributes & stage1::NOT_GLOBAL != 0,
            page: leaf.level == 3,
            security: leaf.security(Regime::SecureEl1And0),
        })
    }

    /// Checks, by walking the tables at `pa`, that every mapped page of
    /// `[base, base + size)` reaches the `expected` physical address space.
    pub fn check_security(
        &self,
        pa: u64,
        base: u64,
        size: u64,
        expected: Security,
    ) -> Result<(), SecurityMismatch> {
        let placed = self.placed(pa);
        tandem_paging::check_security(&placed, pa, Regime::SecureEl1And0, base, size, expected)
    }

    fn placed(&self, pa: u64) -> Contiguous<'_> {
        Contiguous {
            tables: &self.tables,
            base: pa,
        }
    }
}

/// Whether a leaf is the kernel's RAM (Normal, Secure, global), which a
/// task's pages may be mapped over: once, since they are not global.
fn is_kernel_ram(descriptor: u64) -> bool {
    descriptor & stage1::attr_index(1) != 0 && descriptor & (stage1::NS | stage1::NOT_GLOBAL) == 0
}

/// The kind a leaf's attributes (all but address and type) say.
fn kind_of(attributes: u64) -> Option<Kind> {
    [
        Kind::Device,
        Kind::Kernel,
        Kind::Shared,
        Kind::UserData,
        Kind::UserCode,
    ]
    .into_iter()
    .find(|k| k.attributes() == attributes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;

    const PA: u64 = 0x0E40_0000;
    const RAM: Mapping = Mapping {
        base: 0x0E00_0000,
        size: 16 << 20,
        kind: Kind::Kernel,
    };
    const GIC: Mapping = Mapping {
        base: 0x0800_0000,
        size: BLOCK,
        kind: Kind::Device,
    };
    const SHARED: Mapping = Mapping {
        base: 0x7FE0_0000,
        size: BLOCK,
        kind: Kind::Shared,
    };

    fn space(user: &[Mapping]) -> Result<Box<AddressSpace>, MapError> {
        let mut s = Box::new(AddressSpace::EMPTY);
        s.build(PA, &[RAM, GIC, SHARED], user)?;
        Ok(s)
    }

    #[test]
    fn kernel_part_is_an_identity_map_of_blocks() {
        let s = space(&[]).unwrap();
        let t = s.translate(PA, 0x0E12_3458).unwrap();
        assert_eq!(t.pa, 0x0E12_3458);
        assert_eq!(t.kind, Kind::Kernel);
        assert!(!t.page && !t.not_global && !t.el0_read());
        assert_eq!(s.translate(PA, 0x0800_1000).unwrap().kind, Kind::Device);
        let shared = s.translate(PA, 0x7FF0_0010).unwrap();
        assert_eq!((shared.kind, shared.pa), (Kind::Shared, 0x7FF0_0010));
        // Nothing else: Linux's RAM, flash, above 2 GiB, above 4 GiB.
        for va in [0x4000_0000, 0x0, 0x0F00_0000, 0x9000_0000, 1 << 32] {
            assert_eq!(s.translate(PA, va), None, "{va:#x}");
        }
    }

    #[test]
    fn task_pages_split_their_block() {
        let user = [
            Mapping {
                base: 0x0E30_0000,
                size: PAGE,
                kind: Kind::UserCode,
            },
            Mapping {
                base: 0x0E31_0000,
                size: 3 * PAGE,
                kind: Kind::UserData,
            },
            // Across a block boundary.
            Mapping {
                base: 0x0E3F_F000,
                size: 2 * PAGE,
                kind: Kind::UserData,
            },
        ];
        let s = space(&user).unwrap();
        let code = s.translate(PA, 0x0E30_0004).unwrap();
        assert!(code.el0_exec() && !code.el0_write() && code.not_global && code.page);
        for va in [0x0E31_0000, 0x0E31_2FF8, 0x0E3F_F000, 0x0E40_0FFF] {
            let t = s.translate(PA, va).unwrap();
            assert!(t.el0_write() && !t.el0_exec() && t.not_global, "{va:#x}");
            assert_eq!(t.pa, va);
        }
        // The rest of the split blocks is still the kernel's, EL1 only.
        for va in [
            0x0E30_1000,
            0x0E31_3000,
            0x0E20_0000,
            0x0E3F_E000,
            0x0E40_1000,
        ] {
            let t = s.translate(PA, va).unwrap();
            assert_eq!(t.kind, Kind::Kernel, "{va:#x}");
            assert!(!t.el0_read() && !t.not_global);
        }
    }

    #[test]
    fn bad_layouts_are_refused() {
        let page = |base, kind| Mapping {
            base,
            size: PAGE,
            kind,
        };
        let mut s = Box::new(AddressSpace::EMPTY);
        let odd = Mapping {
            base: 0x0E01_0000,
            ..RAM
        };
        assert_eq!(
            s.build(PA, &[odd], &[]),
            Err(MapError::Unaligned(0x0E01_0000))
        );
        let high = Mapping {
            base: 1 << 32,
            ..GIC
        };
        assert_eq!(
            s.build(PA, &[high], &[]),
            Err(MapError::OutOfRange(1 << 32))
        );
        assert_eq!(
            s.build(PA, &[RAM, RAM], &[]),
            Err(MapError::Overlap(0x0E00_0000))
        );
        assert!(matches!(
            space(&[page(0x0E10_0800, Kind::UserData)]),
            Err(MapError::Unaligned(_))
        ));
        assert!(matches!(
            space(&[page(0x4000_0000, Kind::UserData)]),
            Err(MapError::NotKernelMemory(_))
        ));
        assert!(matches!(
            space(&[page(0x0800_0000, Kind::UserData)]),
            Err(MapError::NotKernelMemory(_))
        ));
        assert!(matches!(
            space(&[page(0x7FE0_0000, Kind::UserData)]),
            Err(MapError::NotKernelMemory(_))
        ));
        assert!(matches!(
            space(&[
                page(0x0E10_0000, Kind::UserData),
                page(0x0E10_0000, Kind::UserCode)
            ]),
            Err(MapError::Overlap(0x0E10_0000))
        ));
        let spread: std::vec::Vec<Mapping> = (0..5)
            .map(|i| page(0x0E00_0000 + i * BLOCK, Kind::UserData))
            .collect();
        assert!(matches!(space(&spread), Err(MapError::TooManyBlocks(_))));
        assert!(space(&spread[..4]).is_ok());
    }

    #[test]
    fn two_tasks_do_not_see_each_other() {
        let a = Mapping {
            base: 0x0E50_0000,
            size: 4 * PAGE,
            kind: Kind::UserData,
        };
        let b = Mapping {
            base: 0x0E50_4000,
            size: 4 * PAGE,
            kind: Kind::UserData,
        };
        let sa = space(&[a]).unwrap();
        let sb = space(&[b]).unwrap();
        assert!(sa.translate(PA, 0x0E50_0000).unwrap().el0_write());
        assert!(!sa.translate(PA, 0x0E50_4000).unwrap().el0_read());
        assert!(sb.translate(PA, 0x0E50_4000).unwrap().el0_write());
        assert!(!sb.translate(PA, 0x0E50_0000).unwrap().el0_read());
    }
}
