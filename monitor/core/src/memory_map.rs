//! The monitor's own address space at EL3: an identity map built from the
//! board's description, with each region's memory type, access and security
//! state, and the register values that turn it on.
//!
//! With its MMU off the monitor would see every data address as Device
//! memory: its spin locks' exclusives would be architecturally undefined,
//! its view of the shared region and of Linux's RAM would disagree with
//! Linux's (Normal write-back, non-secure), and QEMU checks the alignment
//! of every Device access on its slow path (a restart's copy of Linux's
//! images ran at about 70 MB/s). Mapped here: secure flash as read-only
//! executable Normal memory (the monitor runs from it), secure RAM as
//! read/write Normal memory, never executed, the devices as Device-nGnRnE,
//! and Linux's RAM (with the shared region in it) as non-secure Normal
//! write-back, never executed, the attributes Linux maps it with; and
//! Linux's virtio-mmio transports as non-secure Device-nGnRnE, which the
//! monitor only resets before a restart copies Linux's images. Nothing
//! else is mapped: a stray access faults instead of reaching a device.
//!
//! Tables: built by `tandem-paging`'s [`Pool`] in five pages, one level-1
//! table (T0SZ = 32, 4 GiB) and a level-2 table for each GiB that holds
//! anything, of 2 MiB blocks only; so every region the board names must
//! start and end on 2 MiB boundaries (devices are mapped by the 2 MiB
//! block around them).

use tandem_board::{Board, MemoryRange};
use tandem_paging::descriptor::{AF, INNER_SHAREABLE, stage1};
pub use tandem_paging::{BLOCK, ENTRIES, Leaf, Regime, Security, SecurityMismatch};
use tandem_paging::{Contiguous, GIB, Pool, Table, check_security, walk};

/// GiBs the tables cover (T0SZ = 32).
pub const GIBS: usize = 4;
/// Bytes of the generic interrupt controller's redistributor frames per core
/// (RD_base and SGI_base, 64 KiB each).
const GICR_FRAMES_PER_CORE: u64 = 0x2_0000;

/// MAIR_EL3: attribute 0 Device-nGnRnE, attribute 1 Normal write-back
/// read/write-allocate, inner and outer (the attributes Linux uses for RAM).
pub const MAIR: u64 = 0xFF << 8;
/// TCR_EL3: T0SZ = 32 (4 GiB, walks start at level 1), table walks
/// write-back cacheable (IRGN0 = ORGN0 = 1) inner shareable (SH0 = 3), 4 KiB
/// granule (TG0 = 0), 32-bit physical addresses (PS = 0), and the RES1
/// bits 23 and 31.
pub const TCR: u64 = 32 | 1 << 8 | 1 << 10 | 3 << 12 | 1 << 23 | 1 << 31;
/// SCTLR_EL3 bits that turn translation and the caches on: M, C, I.
pub const SCTLR_ON: u64 = 1 | 1 << 2 | 1 << 12;

/// What a mapped address is, as the monitor sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Secure flash: the monitor's code and read-only data, the images.
    Code,
    /// Secure RAM: the monitor's data and stacks, the RTOS's RAM.
    SecureData,
    /// Linux's RAM and the shared region: non-secure, as Linux maps it.
    NonSecureData,
    /// Device registers.
    Device,
    /// A normal-world device's registers (Linux's virtio-mmio transports):
    /// non-secure, as Linux reaches them.
    NonSecureDevice,
}

impl Kind {
    /// The block descriptor bits (all but the address and the type) of
    /// this kind: MAIR attribute 1 for Normal memory, 0 for Device; AP[1]
    /// is RES1 at EL3, which has one privilege level.
    pub const fn attributes(self) -> u64 {
        use stage1::{AP_EL0_OR_RES1, NS, READ_ONLY, XN, attr_index};
        let normal = attr_index(1) | INNER_SHAREABLE | AF | AP_EL0_OR_RES1;
        let device = attr_index(0) | AF | AP_EL0_OR_RES1 | XN;
        match self {
            Self::Code => normal | READ_ONLY,
            Self::SecureData => normal | XN,
            Self::NonSecureData => normal | XN | NS,
            Self::Device => device,
            Self::NonSecureDevice => device | NS,
        }
    }

    /// The kind a leaf's attributes ([`Leaf::attributes`]) say.
    pub fn of(attributes: u64) -> Option<Self> {
        [
            Self::Code,
            Self::SecureData,
            Self::NonSecureData,
            Self::Device,
            Self::NonSecureDevice,
        ]
        .into_iter()
        .find(|k| k.attributes() == attributes)
    }
}

/// Why a board cannot be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// A region does not start and end on 2 MiB boundaries.
    Unaligned(&'static str),
    /// A region lies beyond the 4 GiB the tables cover.
    OutOfRange(&'static str),
    /// Two regions share a 2 MiB block with different kinds.
    Overlap(&'static str),
}

impl core::fmt::Display for MapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Unaligned(what) => write!(f, "{what} does not start and end on 2 MiB"),
            Self::OutOfRange(what) => write!(f, "{what} lies beyond 4 GiB"),
            Self::Overlap(what) => write!(f, "{what} shares a 2 MiB block with other memory"),
        }
    }
}

/// The monitor's translation tables: pages for a level-1 table and a
/// level-2 table per GiB (unused ones stay empty), each 4 KiB aligned as
/// TTBR0_EL3 and table descriptors require.
#[repr(C)]
#[derive(Clone, Debug)]
pub struct Tables {
    pages: [Table; 1 + GIBS],
}

impl Tables {
    /// No mapping at all.
    pub const EMPTY: Self = Self {
        pages: [Table::EMPTY; 1 + GIBS],
    };

    /// Fills the tables with the board's identity map; `at` is the physical
    /// address the tables themselves live at (table descriptors hold it).
    pub fn map_board(&mut self, board: &Board, at: u64) -> Result<(), MapError> {
        *self = Self::EMPTY;
        let mut pool = Pool::new(&mut self.pages, at).expect("the tables have pages");
        let gicr = MemoryRange {
            base: board.gicr,
            size: board.max_cores as u64 * GICR_FRAMES_PER_CORE,
        };
        let regions: [(&'static str, MemoryRange, Kind); 5] = [
            ("secure flash", board.secure_flash, Kind::Code),
            ("secure RAM", board.secure_ram, Kind::SecureData),
            ("normal RAM", board.normal_ram, Kind::NonSecureData),
            ("GIC distributor", device(board.gicd), Kind::Device),
            ("GIC redistributors", around(gicr), Kind::Device),
        ];
        let [power_a, power_b] = board.power.devices();
        let devices = [
            ("normal UART", board.normal_uart),
            ("secure UART", board.secure_uart),
            ("power device", power_a),
            ("power device", power_b),
        ];
        for (name, range, kind) in regions {
            map(&mut pool, name, range, kind)?;
        }
        for (name, address) in devices {
            map(&mut pool, name, device(address), Kind::Device)?;
        }
        let virtio = board.virtio_mmio.range();
        if virtio.size != 0 {
            map(
                &mut pool,
                "virtio-mmio transports",
                around(virtio),
                Kind::NonSecureDevice,
            )?;
        }
        if !board
            .normal_ram
            .contains(board.shared.base, board.shared.size)
        {
            // The shared region is mapped as part of Linux's RAM; elsewhere it
            // would need its own entry.
            return Err(MapError::OutOfRange("shared region outside normal RAM"));
        }
        Ok(())
    }

    /// What the MMU finds for `address` in these tables, placed at
    /// physical address `at` (the walk of `tandem-paging` the three images
    /// share).
    pub fn walk(&self, at: u64, address: u64) -> Option<Leaf> {
        walk(&self.placed(at), at, address)
    }

    /// What `address` is mapped as, if at all (identity mapped only: an
    /// entry with another output address is no mapping of the board's).
    pub fn kind_of(&self, at: u64, address: u64) -> Option<Kind> {
        self.walk(at, address)
            .filter(|leaf| leaf.address == address)
            .and_then(|leaf| Kind::of(leaf.attributes))
    }

    /// Checks, by walking the tables at `at`, that the board's secure flash
    /// and secure RAM reach the Secure physical address space and Linux's
    /// RAM (with the shared region) the Non-secure one: a secure page
    /// mapped Non-secure would hand the monitor normal-world memory where
    /// it keeps its own state.
    pub fn check_security(&self, board: &Board, at: u64) -> Result<(), SecurityMismatch> {
        let placed = self.placed(at);
        let regions = [
            (board.secure_flash, Security::Secure),
            (board.secure_ram, Security::Secure),
            (board.normal_ram, Security::NonSecure),
        ];
        for (range, expected) in regions {
            check_security(&placed, at, Regime::El3, range.base, range.size, expected)?;
        }
        Ok(())
    }

    /// The tables at their physical address, as the walker reads them.
    fn placed(&self, at: u64) -> Contiguous<'_> {
        Contiguous {
            tables: &self.pages,
            base: at,
        }
    }
}

/// Maps `range` as `kind` in 2 MiB blocks: the board's regions and the
/// blocks around its devices, nothing finer.
fn map(
    pool: &mut Pool<'_>,
    name: &'static str,
    range: MemoryRange,
    kind: Kind,
) -> Result<(), MapError> {
    if !range.base.is_multiple_of(BLOCK) || !range.size.is_multiple_of(BLOCK) || range.size == 0 {
        return Err(MapError::Unaligned(name));
    }
    if range.end() > GIBS as u64 * GIB {
        return Err(MapError::OutOfRange(name));
    }
    pool.map(range.base, range.size, kind.attributes())
        .map_err(|e| match e {
            tandem_paging::MapError::Overlap(_) => MapError::Overlap(name),
            // Aligned ranges below 4 GiB take blocks only, at most one
            // level-2 table per GiB, for which the pool has a page; only
            // `map_pages_over` finds a page uncovered.
            _ => MapError::OutOfRange(name),
        })
}

/// The 2 MiB block around one device's registers.
const fn device(address: u64) -> MemoryRange {
    MemoryRange {
        base: address & !(BLOCK - 1),
        size: BLOCK,
    }
}

/// The 2 MiB blocks around `range`.
const fn around(range: MemoryRange) -> MemoryRange {
    let base = range.base & !(BLOCK - 1);
    let end = (range.end() + BLOCK - 1) & !(BLOCK - 1);
    MemoryRange {
        base,
        size: end - base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;
    use tandem_board::BOARD;
    use tandem_paging::descriptor;

    const AT: u64 = 0x0E01_0000;

    fn board_tables() -> Box<Tables> {
        let mut t = Box::new(Tables::EMPTY);
        t.map_board(&BOARD, AT).expect("the board maps");
        t
    }

    /// The block descriptor that maps `address` (tables at `AT`).
    fn block(t: &mut Tables, address: u64) -> &mut u64 {
        let level1 = t.pages[0].0[(address / GIB) as usize];
        assert_eq!(level1 & descriptor::TYPE, descriptor::TABLE);
        let page = ((level1 & descriptor::ADDRESS) - AT) / 4096;
        &mut t.pages[page as usize].0[(address % GIB / BLOCK) as usize]
    }

    #[test]
    fn the_shared_region_is_non_secure_normal_write_back_as_linux_maps_it() {
        let mut t = board_tables();
        for address in [BOARD.shared.base, BOARD.shared.end() - 1] {
            assert_eq!(t.kind_of(AT, address), Some(Kind::NonSecureData));
        }
        let d = *block(&mut t, BOARD.shared.base);
        assert_eq!(d >> 2 & 7, 1, "MAIR attribute 1");
        assert_eq!(
            MAIR >> 8 & 0xFF,
            0xFF,
            "attribute 1: Normal, inner and outer write-back RWA"
        );
        assert_eq!(d >> 8 & 3, 3, "inner shareable, as Linux's RAM");
        assert_ne!(d & stage1::NS, 0, "the non-secure physical address space");
        assert_ne!(d & stage1::XN, 0, "never executed by the monitor");
    }

    #[test]
    fn secure_memory_is_secure_and_linuxs_ram_non_secure_by_the_walk() {
        let t = board_tables();
        assert_eq!(t.check_security(&BOARD, AT), Ok(()));
        let rtos = t
            .walk(AT, BOARD.rtos_ram.base)
            .expect("the RTOS's RAM is mapped");
        assert_eq!(rtos.security(Regime::El3), Security::Secure);
    }

    #[test]
    fn a_secure_page_mapped_non_secure_fails_the_check() {
        let mut t = board_tables();
        let rtos = BOARD.rtos_ram.base & !(BLOCK - 1);
        *block(&mut t, rtos) |= stage1::NS;
        assert_eq!(
            t.check_security(&BOARD, AT),
            Err(SecurityMismatch {
                address: rtos,
                mapped: Security::NonSecure
            })
        );
        assert_eq!(t.kind_of(AT, rtos), Some(Kind::NonSecureData));
    }

    #[test]
    fn code_is_read_only_data_never_executed_devices_device_memory() {
        let mut t = board_tables();
        let flash = *block(&mut t, BOARD.secure_flash.base);
        assert_eq!(t.kind_of(AT, BOARD.secure_flash.base), Some(Kind::Code));
        assert_ne!(flash & stage1::READ_ONLY, 0);
        assert_eq!(flash & stage1::XN, 0);
        assert_eq!(flash & stage1::NS, 0, "secure flash is secure");
        for address in [BOARD.monitor_ram.base, BOARD.rtos_ram.end() - 8] {
            assert_eq!(t.kind_of(AT, address), Some(Kind::SecureData));
        }
        for address in [
            BOARD.gicd,
            BOARD.gicr,
            BOARD.secure_uart,
            BOARD.normal_uart,
            BOARD.power.devices()[0],
            BOARD.power.devices()[1],
        ] {
            assert_eq!(t.kind_of(AT, address), Some(Kind::Device), "{address:#x}");
            let d = *block(&mut t, address);
            assert_eq!(d >> 2 & 7, 0, "MAIR attribute 0");
            assert_eq!(MAIR & 0xFF, 0, "attribute 0: Device-nGnRnE");
        }
        let last_redistributor = BOARD.gicr + BOARD.max_cores as u64 * GICR_FRAMES_PER_CORE - 1;
        assert_eq!(t.kind_of(AT, last_redistributor), Some(Kind::Device));
    }

    #[test]
    fn linuxs_virtio_transports_are_non_secure_device_memory() {
        let mut t = board_tables();
        let v = BOARD.virtio_mmio;
        assert!(v.count > 0, "QEMU virt has them");
        for address in [v.base, v.range().end() - 4] {
            assert_eq!(t.kind_of(AT, address), Some(Kind::NonSecureDevice));
            let d = *block(&mut t, address);
            assert_eq!(d >> 2 & 7, 0, "MAIR attribute 0: Device-nGnRnE");
            assert_ne!(d & stage1::NS, 0, "the non-secure physical address space");
            assert_ne!(d & stage1::XN, 0);
        }
        let none = Board {
            virtio_mmio: tandem_board::VirtioMmio::NONE,
            ..BOARD
        };
        let mut t = Box::new(Tables::EMPTY);
        t.map_board(&none, AT).unwrap();
        assert_eq!(
            t.kind_of(AT, v.base),
            None,
            "a board without them maps none"
        );
    }

    #[test]
    fn nothing_else_is_mapped() {
        let t = board_tables();
        // Between secure RAM and Linux's RAM (PCIe, virtio-mmio), and above it.
        for address in [
            BOARD.secure_ram.end(),
            0x1000_0000,
            0x3FFF_FFFF,
            BOARD.normal_ram.end(),
        ] {
            assert_eq!(t.kind_of(AT, address), None, "{address:#x}");
        }
        let level1 = &t.pages[0].0;
        assert_eq!(level1[2], 0);
        assert_eq!(level1[3], 0);
        assert_eq!(level1[0], (AT + 4096) | descriptor::TABLE);
        assert_eq!(level1[1], (AT + 2 * 4096) | descriptor::TABLE);
    }

    #[test]
    fn registers() {
        assert_eq!(TCR & 0x3F, 32, "T0SZ: 4 GiB");
        assert_eq!(TCR >> 14 & 3, 0, "4 KiB granule");
        assert_eq!(TCR >> 16 & 7, 0, "32-bit physical addresses");
        assert_eq!(TCR & (1 << 23 | 1 << 31), 1 << 23 | 1 << 31, "RES1");
        assert_eq!(core::mem::align_of::<Tables>(), 4096);
        assert_eq!(core::mem::size_of::<Tables>(), (1 + GIBS) * 4096);
    }

    #[test]
    fn a_board_that_cannot_be_mapped_is_refused() {
        let mut t = Box::new(Tables::EMPTY);
        let unaligned = Board {
            secure_ram: MemoryRange {
                base: 0x0E00_1000,
                size: BLOCK,
            },
            ..BOARD
        };
        assert_eq!(
            t.map_board(&unaligned, AT),
            Err(MapError::Unaligned("secure RAM"))
        );
        let device_in_ram = Board {
            secure_uart: BOARD.secure_ram.base + 0x1000,
            ..BOARD
        };
        assert_eq!(
            t.map_board(&device_in_ram, AT),
            Err(MapError::Overlap("secure UART"))
        );
        let high = Board {
            normal_ram: MemoryRange {
                base: 0x1_0000_0000,
                size: GIB,
            },
            ..BOARD
        };
        assert_eq!(
            t.map_board(&high, AT),
            Err(MapError::OutOfRange("normal RAM"))
        );
    }
}
