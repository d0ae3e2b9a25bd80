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
//! Tables: one level-1 table (T0SZ = 32, 4 GiB) and a level-2 table per
//! GiB that holds anything, of 2 MiB blocks; so every region the board
//! names must start and end on 2 MiB boundaries (devices are mapped by
//! the 2 MiB block around them).

use tandem_board::{Board, MemoryRange};

/// Bytes a level-2 block maps.
pub const BLOCK: u64 = 2 << 20;
/// Bytes a level-1 entry covers.
const GIB: u64 = 1 << 30;
/// GiBs the tables cover (T0SZ = 32).
pub const GIBS: usize = 4;
/// Entries in a translation table (4 KiB granule).
pub const ENTRIES: usize = 512;
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

/// Descriptor bits (VMSAv8-64, stage 1, 4 KiB granule).
mod bits {
    /// A level-1 or level-2 block.
    pub const BLOCK: u64 = 0b01;
    /// A next-level table.
    pub const TABLE: u64 = 0b11;
    /// AttrIndx = 1: MAIR attribute 1 (Normal write-back).
    pub const NORMAL: u64 = 1 << 2;
    /// AttrIndx = 0: MAIR attribute 0 (Device-nGnRnE).
    pub const DEVICE: u64 = 0;
    /// The output address is in the non-secure physical address space.
    pub const NS: u64 = 1 << 5;
    /// AP[1]: RES1 in a regime with one privilege level (EL3).
    pub const AP1: u64 = 1 << 6;
    /// AP[2]: read-only.
    pub const READ_ONLY: u64 = 1 << 7;
    /// SH = 3: inner shareable.
    pub const INNER_SHAREABLE: u64 = 3 << 8;
    /// AF: accessed (no access-flag fault on first use).
    pub const AF: u64 = 1 << 10;
    /// XN: never executed.
    pub const XN: u64 = 1 << 54;
    /// The output address of a 2 MiB block.
    pub const BLOCK_ADDRESS: u64 = 0x0000_FFFF_FFE0_0000;
}

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
    /// The block descriptor bits (all but the address) of this kind.
    pub const fn attributes(self) -> u64 {
        use bits::*;
        let normal = NORMAL | INNER_SHAREABLE | AF | AP1 | BLOCK;
        match self {
            Self::Code => normal | READ_ONLY,
            Self::SecureData => normal | XN,
            Self::NonSecureData => normal | XN | NS,
            Self::Device => DEVICE | AF | AP1 | XN | BLOCK,
            Self::NonSecureDevice => DEVICE | AF | AP1 | XN | BLOCK | NS,
        }
    }

    /// The kind a block descriptor's attributes say.
    pub fn of(descriptor: u64) -> Option<Self> {
        let attrs = descriptor & !bits::BLOCK_ADDRESS;
        [
            Self::Code,
            Self::SecureData,
            Self::NonSecureData,
            Self::Device,
            Self::NonSecureDevice,
        ]
        .into_iter()
        .find(|k| k.attributes() == attrs)
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

/// The monitor's translation tables: level 1, then a level-2 table for each
/// GiB (unused ones stay empty). Aligned so that each table is on its own
/// 4 KiB page, as TTBR0_EL3 and table descriptors require.
#[repr(C, align(4096))]
#[derive(Clone, Debug)]
pub struct Tables {
    /// Level 1: one entry per GiB.
    pub level1: [u64; ENTRIES],
    /// Level 2, per GiB: 2 MiB blocks.
    pub level2: [[u64; ENTRIES]; GIBS],
}

impl Tables {
    /// No mapping at all.
    pub const EMPTY: Self = Self {
        level1: [0; ENTRIES],
        level2: [[0; ENTRIES]; GIBS],
    };

    /// Fills the tables with the board's identity map; `at` is the physical
    /// address the tables themselves live at (table descriptors hold it).
    pub fn map_board(&mut self, board: &Board, at: u64) -> Result<(), MapError> {
        *self = Self::EMPTY;
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
            self.map(name, range, kind)?;
        }
        for (name, address) in devices {
            self.map(name, device(address), Kind::Device)?;
        }
        let virtio = board.virtio_mmio.range();
        if virtio.size != 0 {
            self.map(
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
        for (gib, level2) in self.level2.iter().enumerate() {
            if level2.iter().any(|&d| d != 0) {
                let table =
                    at + core::mem::offset_of!(Self, level2) as u64 + (gib * ENTRIES * 8) as u64;
                self.level1[gib] = table | bits::TABLE;
            }
        }
        Ok(())
    }

    /// Maps `range` as `kind`, block by block.
    fn map(&mut self, name: &'static str, range: MemoryRange, kind: Kind) -> Result<(), MapError> {
        if !range.base.is_multiple_of(BLOCK) || !range.size.is_multiple_of(BLOCK) || range.size == 0
        {
            return Err(MapError::Unaligned(name));
        }
        if range.end() > GIBS as u64 * GIB {
            return Err(MapError::OutOfRange(name));
        }
        let mut block = range.base;
        while block < range.end() {
            let slot = &mut self.level2[(block / GIB) as usize][(block % GIB / BLOCK) as usize];
            let descriptor = block | kind.attributes();
            if *slot != 0 && *slot != descriptor {
                return Err(MapError::Overlap(name));
            }
            *slot = descriptor;
            block += BLOCK;
        }
        Ok(())
    }

    /// What `address` is mapped as, if at all (a walk of the tables as the
    /// MMU does it, for tests and for checks before the MMU is on).
    pub fn kind_of(&self, address: u64) -> Option<Kind> {
        if address >= GIBS as u64 * GIB {
            return None;
        }
        let gib = (address / GIB) as usize;
        if self.level1[gib] & 0b11 != bits::TABLE {
            return None;
        }
        let descriptor = self.level2[gib][(address % GIB / BLOCK) as usize];
        if descriptor & 0b11 != bits::BLOCK
            || descriptor & bits::BLOCK_ADDRESS != address & !(BLOCK - 1)
        {
            return None;
        }
        Kind::of(descriptor)
    }
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

    const AT: u64 = 0x0E01_0000;

    fn board_tables() -> Box<Tables> {
        let mut t = Box::new(Tables::EMPTY);
        t.map_board(&BOARD, AT).expect("the board maps");
        t
    }

    #[test]
    fn the_shared_region_is_non_secure_normal_write_back_as_linux_maps_it() {
        let t = board_tables();
        for address in [BOARD.shared.base, BOARD.shared.end() - 1] {
            assert_eq!(t.kind_of(address), Some(Kind::NonSecureData));
        }
        let d = t.level2[1][((BOARD.shared.base % GIB) / BLOCK) as usize];
        assert_eq!(d >> 2 & 7, 1, "MAIR attribute 1");
        assert_eq!(
            MAIR >> 8 & 0xFF,
            0xFF,
            "attribute 1: Normal, inner and outer write-back RWA"
        );
        assert_eq!(d >> 8 & 3, 3, "inner shareable, as Linux's RAM");
        assert_ne!(d & bits::NS, 0, "the non-secure physical address space");
        assert_ne!(d & bits::XN, 0, "never executed by the monitor");
    }

    #[test]
    fn code_is_read_only_data_never_executed_devices_device_memory() {
        let t = board_tables();
        let flash = t.level2[0][0];
        assert_eq!(t.kind_of(BOARD.secure_flash.base), Some(Kind::Code));
        assert_ne!(flash & bits::READ_ONLY, 0);
        assert_eq!(flash & bits::XN, 0);
        assert_eq!(flash & bits::NS, 0, "secure flash is secure");
        for address in [BOARD.monitor_ram.base, BOARD.rtos_ram.end() - 8] {
            assert_eq!(t.kind_of(address), Some(Kind::SecureData));
        }
        for address in [
            BOARD.gicd,
            BOARD.gicr,
            BOARD.secure_uart,
            BOARD.normal_uart,
            BOARD.power.devices()[0],
            BOARD.power.devices()[1],
        ] {
            assert_eq!(t.kind_of(address), Some(Kind::Device), "{address:#x}");
            let d = t.level2[0][(address / BLOCK) as usize];
            assert_eq!(d >> 2 & 7, 0, "MAIR attribute 0");
            assert_eq!(MAIR & 0xFF, 0, "attribute 0: Device-nGnRnE");
        }
        let last_redistributor = BOARD.gicr + BOARD.max_cores as u64 * GICR_FRAMES_PER_CORE - 1;
        assert_eq!(t.kind_of(last_redistributor), Some(Kind::Device));
    }

    #[test]
    fn linuxs_virtio_transports_are_non_secure_device_memory() {
        let t = board_tables();
        let v = BOARD.virtio_mmio;
        assert!(v.count > 0, "QEMU virt has them");
        for address in [v.base, v.range().end() - 4] {
            assert_eq!(t.kind_of(address), Some(Kind::NonSecureDevice));
            let d = t.level2[0][(address / BLOCK) as usize];
            assert_eq!(d >> 2 & 7, 0, "MAIR attribute 0: Device-nGnRnE");
            assert_ne!(d & bits::NS, 0, "the non-secure physical address space");
            assert_ne!(d & bits::XN, 0);
        }
        let none = Board {
            virtio_mmio: tandem_board::VirtioMmio::NONE,
            ..BOARD
        };
        let mut t = Box::new(Tables::EMPTY);
        t.map_board(&none, AT).unwrap();
        assert_eq!(t.kind_of(v.base), None, "a board without them maps none");
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
            assert_eq!(t.kind_of(address), None, "{address:#x}");
        }
        assert_eq!(t.level1[2], 0);
        assert_eq!(t.level1[3], 0);
        assert_eq!(t.level1[0], (AT + 4096) | bits::TABLE);
        assert_eq!(t.level1[1], (AT + 2 * 4096) | bits::TABLE);
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
