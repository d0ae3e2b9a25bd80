//! Partitions of the normal world (paper 003's DualUnix): several Linux
//! instances side by side, each on its own cores with its own RAM, devices
//! and interrupts, kept apart by Tandem's small layer at EL2 (`hyp/`).
//!
//! The harness writes the table from the platform configuration
//! (`configs/*.toml`, `[partitions.X]`) into secure flash, one page after
//! the boot configuration; the monitor reads it at cold boot (which cores
//! start whose Linux, whose images to copy, what a partition's reset
//! stops), copies it beside the EL2 layer in normal RAM, and the layer
//! builds each partition's stage-2 translation and interrupt filters from
//! it. A configuration without partitions has no table (no magic): one
//! Linux, entered at EL1 as ever. Both readers validate it the same way
//! ([`PartitionTable::validate`]) before using any of it.

use crate::CConstant;
use crate::MAX_CORES;
use crate::image::Span;

/// `"TNDMPART"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TNDMPART");
/// Layout version of [`PartitionTable`].
pub const VERSION: u32 = 1;
/// Most partitions a table describes.
pub const MAX_PARTITIONS: usize = 4;
/// Most device ranges one partition is given.
pub const MAX_DEVICES: usize = 4;
/// Where the table lies: this many bytes after the board's boot
/// configuration (`[boot] config`), in the same secure flash.
pub const OFFSET: u64 = 0x1000;
/// Interrupt IDs the SPI bitmap covers (SPIs are INTIDs 32..=1019).
pub const INTIDS: usize = 1024;
/// First SPI's INTID.
pub const FIRST_SPI: u32 = 32;
/// One past the last SPI's INTID.
pub const END_SPI: u32 = 1020;
/// INTIDs per GICD_ICFGR register (two bits each): the one distributor
/// register whose emulation must read, modify and write the hardware's,
/// so no two partitions may own interrupts in the same one (the layer
/// then needs no lock a stopped partition could leave held).
pub const ICFGR_INTIDS: u32 = 16;
/// No console (`Partition::console`).
pub const NO_CONSOLE: u8 = 0xFF;

/// Where the monitor copies the table for the EL2 layer: the last page of
/// the layer's RAM, which the layer's image must leave free.
pub const fn in_hyp_ram(hyp_ram: Span) -> u64 {
    hyp_ram.base + hyp_ram.size - PAGE
}

/// Flag: this partition's power-off (PSCI SYSTEM_OFF) powers the machine
/// off; without it the partition alone stops and the others run on.
pub const FLAG_OFF_STOPS_MACHINE: u32 = 1 << 0;
/// Flag: the shared region is mapped into this partition.
pub const FLAG_SHARED_REGION: u32 = 1 << 1;
/// Flag: this partition uses Tandem's services (its driver: the doorbell
/// SPI, the SiP calls, PV time); at most one partition does.
pub const FLAG_TANDEM: u32 = 1 << 2;
/// Every flag this layout defines.
pub const FLAGS_KNOWN: u32 = FLAG_OFF_STOPS_MACHINE | FLAG_SHARED_REGION | FLAG_TANDEM;

/// One partition as the harness writes it (little endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Its name, an ASCII capital letter ('A', 'B', ...).
    pub name: u8,
    /// The core its Linux boots on (cold boot and every restart).
    pub boot_core: u8,
    /// Index in `devices` of its console (the layer's messages about this
    /// partition go there), or [`NO_CONSOLE`].
    pub console: u8,
    /// Entries of `devices` in use.
    pub device_count: u8,
    /// Its cores, a bit per core: contiguous (its redistributor frames are
    /// one range in its device tree).
    pub cores: u32,
    /// [`FLAG_OFF_STOPS_MACHINE`], [`FLAG_SHARED_REGION`], [`FLAG_TANDEM`].
    pub flags: u32,
    /// Zero.
    pub reserved: u32,
    /// Its RAM (2 MiB aligned): mapped at the same addresses (IPA = PA).
    pub ram: Span,
    /// Its Linux images' header ([`crate::image::LinuxImages`]): bytes from
    /// the board's `linux_images`.
    pub images: u64,
    /// Zero.
    pub reserved2: u64,
    /// MMIO ranges of its devices (4 KiB aligned), mapped as they are.
    pub devices: [Span; MAX_DEVICES],
    /// The SPIs it owns, a bit per INTID (bit `i % 32` of word `i / 32`).
    pub spis: [u32; INTIDS / 32],
}

/// The table: a header, then `count` partitions.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionTable {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`VERSION`].
    pub version: u32,
    /// Partitions described (1..=[`MAX_PARTITIONS`]).
    pub count: u32,
    /// The partitions; entries past `count` are ignored.
    pub partitions: [Partition; MAX_PARTITIONS],
}

/// Bytes of one [`Partition`].
pub const PARTITION_SIZE: usize = core::mem::size_of::<Partition>();
/// Bytes of the table.
pub const TABLE_SIZE: usize = core::mem::size_of::<PartitionTable>();
const _: () = assert!(PARTITION_SIZE == 240 && TABLE_SIZE == 16 + 4 * 240);

/// What the table is checked against: the machine as the board and the
/// boot configuration describe it.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// Cores the machine has (the boot configuration's count).
    pub cores: usize,
    /// Cores whose policy lets Linux run (bit per core).
    pub linux_cores: u32,
    /// All of the normal world's RAM.
    pub normal_ram: Span,
    /// The shared region.
    pub shared: Span,
    /// The EL2 layer's own RAM: in no partition.
    pub hyp_ram: Span,
    /// MMIO no partition may be given: the GIC distributor and
    /// redistributors, which the layer emulates or hands out per core.
    pub reserved_mmio: [Span; 2],
}

/// Why a partition table was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionError {
    /// No table there (no magic).
    Missing,
    /// Written for another layout.
    Version(u32),
    /// No partition, or more than [`MAX_PARTITIONS`].
    Count(u32),
    /// Partition `index` has a bad name (not a capital letter, or taken).
    Name(usize),
    /// Partition `index`'s cores: none, not contiguous, beyond the machine,
    /// on a core without Linux, or shared with another partition.
    Cores(usize),
    /// Partition `index`'s boot core is not one of its cores.
    BootCore(usize),
    /// A Linux core in no partition (bit mask of them).
    Unassigned(u32),
    /// Partition `index`'s RAM: empty, not 2 MiB aligned, outside normal
    /// RAM, or meeting the shared region, the layer's RAM or another
    /// partition's RAM.
    Ram(usize),
    /// Partition `index`'s device `device`: empty, not 4 KiB aligned, in
    /// RAM, in the GIC, or given to another partition too.
    Device(usize, usize),
    /// Partition `index`'s console names no device of its.
    Console(usize),
    /// Partition `index` owns an INTID that is no SPI, or one another
    /// partition owns, or shares a GICD_ICFGR register with another
    /// partition's SPIs.
    Spis(usize),
    /// Partition `index` has unknown flags, or Tandem's services without
    /// the shared region, or a second partition has them.
    Flags(usize),
    /// Partition `index`'s images header is not 8-byte aligned.
    Images(usize),
    /// RPC servers (the boot configuration's `rpc_cores`, this mask) on a
    /// core outside the partition with Tandem's services: every call and
    /// doorbell of that partition would take another partition's core.
    RpcCores(u32),
}

impl core::fmt::Display for PartitionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Self::Missing => f.write_str("no partition table"),
            Self::Version(v) => write!(f, "layout version {v}, want {VERSION}"),
            Self::Count(n) => write!(f, "{n} partitions, want 1..={MAX_PARTITIONS}"),
            Self::Name(i) => write!(f, "partition {i}: name not a capital letter of its own"),
            Self::Cores(i) => write!(
                f,
                "partition {i}: cores empty, not contiguous, without Linux or shared"
            ),
            Self::BootCore(i) => write!(f, "partition {i}: boot core not one of its cores"),
            Self::Unassigned(m) => write!(f, "Linux cores {m:#x} in no partition"),
            Self::Ram(i) => write!(
                f,
                "partition {i}: RAM empty, not 2 MiB aligned, outside normal RAM or overlapping"
            ),
            Self::Device(i, d) => write!(
                f,
                "partition {i}: device {d} empty, unaligned, in RAM or the GIC, or shared"
            ),
            Self::Console(i) => write!(f, "partition {i}: console names none of its devices"),
            Self::Spis(i) => write!(
                f,
                "partition {i}: an INTID that is no SPI, or another partition's, or in a GICD_ICFGR register with another's"
            ),
            Self::Flags(i) => write!(f, "partition {i}: bad flags"),
            Self::Images(i) => write!(f, "partition {i}: images header unaligned"),
            Self::RpcCores(m) => write!(
                f,
                "RPC server cores {m:#x} outside the partition with Tandem's services"
            ),
        }
    }
}

/// Bytes of a 2 MiB block.
const BLOCK: u64 = 2 << 20;
/// Bytes of a page.
const PAGE: u64 = 4 << 10;

fn meets(a: Span, b: Span) -> bool {
    a.meets(b.base, b.size)
}

impl Partition {
    /// A partition with nothing in it (the harness fills one in; tests).
    pub const EMPTY: Self = Self {
        name: 0,
        boot_core: 0,
        console: NO_CONSOLE,
        device_count: 0,
        cores: 0,
        flags: 0,
        reserved: 0,
        ram: Span { base: 0, size: 0 },
        images: 0,
        reserved2: 0,
        devices: [Span { base: 0, size: 0 }; MAX_DEVICES],
        spis: [0; INTIDS / 32],
    };

    /// Its name as a character.
    pub const fn letter(&self) -> char {
        self.name as char
    }

    /// Whether `core` is one of its cores.
    pub const fn has_core(&self, core: usize) -> bool {
        core < 32 && self.cores >> core & 1 != 0
    }

    /// Its first core and how many it has (they are contiguous).
    pub const fn core_range(&self) -> (usize, usize) {
        (
            self.cores.trailing_zeros() as usize,
            self.cores.count_ones() as usize,
        )
    }

    /// Whether it owns interrupt `intid` (an SPI).
    pub const fn owns(&self, intid: u32) -> bool {
        (intid as usize) < INTIDS && self.spis[intid as usize / 32] >> (intid % 32) & 1 != 0
    }

    /// The devices in use.
    pub fn devices(&self) -> &[Span] {
        &self.devices[..(self.device_count as usize).min(MAX_DEVICES)]
    }

    /// Its console's MMIO range, if it has one.
    pub fn console(&self) -> Option<Span> {
        self.devices().get(self.console as usize).copied()
    }

    /// Whether the shared region is mapped into it.
    pub const fn shared_region(&self) -> bool {
        self.flags & FLAG_SHARED_REGION != 0
    }

    /// Whether it uses Tandem's services (SiP calls, PV time, the doorbell).
    pub const fn tandem(&self) -> bool {
        self.flags & FLAG_TANDEM != 0
    }

    /// Whether its power-off powers the machine off.
    pub const fn off_stops_machine(&self) -> bool {
        self.flags & FLAG_OFF_STOPS_MACHINE != 0
    }

    /// Whether it owns any INTID in the GICD_ICFGR register holding `intid`.
    fn owns_in_icfgr(&self, intid: u32) -> bool {
        let first = intid - intid % ICFGR_INTIDS;
        (first..first + ICFGR_INTIDS).any(|i| self.owns(i))
    }
}

/// A table that passed [`PartitionTable::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitions {
    count: usize,
    parts: [Partition; MAX_PARTITIONS],
    of_core: [u8; MAX_CORES],
}

/// `Partitions::of_core`'s "none".
const NO_PARTITION: u8 = 0xFF;

impl Partitions {
    /// How many partitions there are.
    pub const fn count(&self) -> usize {
        self.count
    }

    /// Partition `index`.
    pub fn get(&self, index: usize) -> Option<&Partition> {
        self.parts[..self.count].get(index)
    }

    /// Every partition, in the table's order.
    pub fn iter(&self) -> impl Iterator<Item = &Partition> {
        self.parts[..self.count].iter()
    }

    /// The index of the partition `core` belongs to.
    pub fn of_core(&self, core: usize) -> Option<usize> {
        match self.of_core.get(core) {
            Some(&p) if p != NO_PARTITION => Some(p as usize),
            _ => None,
        }
    }

    /// Checks the RPC and RPMsg servers' cores (`rpc_cores`, a mask): all
    /// of them in the partition with Tandem's services. Only that partition
    /// can call or ring them, and the RTOS runs first where they serve, so
    /// a server on another partition's core would let one partition take
    /// the other's core at the cost of an SMC (issue 46, hole 3).
    pub fn check_rpc_cores(&self, rpc_cores: u32) -> Result<(), PartitionError> {
        let tandem = self.iter().position(Partition::tandem);
        let outside = (0..32)
            .filter(|&c| rpc_cores & 1 << c != 0)
            .any(|c| tandem.is_none() || self.of_core(c) != tandem);
        if outside {
            return Err(PartitionError::RpcCores(rpc_cores));
        }
        Ok(())
    }
}

impl PartitionTable {
    /// A table of `parts` (tests; the harness writes the same bytes).
    pub fn new(parts: &[Partition]) -> Self {
        let mut partitions = [Partition::EMPTY; MAX_PARTITIONS];
        for (slot, p) in partitions.iter_mut().zip(parts) {
            *slot = *p;
        }
        Self {
            magic: MAGIC,
            version: VERSION,
            count: parts.len() as u32,
            partitions,
        }
    }

    /// Whether there is a table at all (a configuration without partitions
    /// has none).
    pub const fn present(&self) -> bool {
        self.magic == MAGIC
    }

    /// Checks the table against `machine`, saying what is wrong.
    pub fn validate(&self, machine: &Machine) -> Result<Partitions, PartitionError> {
        if !self.present() {
            return Err(PartitionError::Missing);
        }
        if self.version != VERSION {
            return Err(PartitionError::Version(self.version));
        }
        let count = self.count as usize;
        if count == 0 || count > MAX_PARTITIONS {
            return Err(PartitionError::Count(self.count));
        }
        let parts = &self.partitions[..count];
        let machine_cores = if machine.cores >= 32 {
            u32::MAX
        } else {
            (1u32 << machine.cores) - 1
        };
        let mut of_core = [NO_PARTITION; MAX_CORES];
        let mut assigned = 0u32;
        let mut tandem = false;
        for (i, p) in parts.iter().enumerate() {
            if !p.name.is_ascii_uppercase() || parts[..i].iter().any(|q| q.name == p.name) {
                return Err(PartitionError::Name(i));
            }
            // Cores: some, contiguous, on the machine, running Linux, free.
            let (first, n) = p.core_range();
            let contiguous = p.cores != 0 && p.cores >> first == (1u32 << n).wrapping_sub(1);
            let n_ok = n < 32 || p.cores == u32::MAX;
            if !contiguous
                || !n_ok
                || p.cores & !machine_cores != 0
                || p.cores & !machine.linux_cores != 0
                || p.cores & assigned != 0
            {
                return Err(PartitionError::Cores(i));
            }
            assigned |= p.cores;
            if !p.has_core(p.boot_core as usize) {
                return Err(PartitionError::BootCore(i));
            }
            for (core, slot) in of_core.iter_mut().enumerate() {
                if p.has_core(core) {
                    *slot = i as u8;
                }
            }
            // RAM: its own 2 MiB blocks of normal RAM.
            let ram = p.ram;
            let ram_ok = ram.size != 0
                && ram.base.is_multiple_of(BLOCK)
                && ram.size.is_multiple_of(BLOCK)
                && machine.normal_ram.holds(ram.base, ram.size)
                && !meets(ram, machine.shared)
                && !meets(ram, machine.hyp_ram)
                && !parts[..i].iter().any(|q| meets(q.ram, ram));
            if !ram_ok {
                return Err(PartitionError::Ram(i));
            }
            // Devices: whole pages of MMIO nobody else has.
            if p.device_count as usize > MAX_DEVICES {
                return Err(PartitionError::Device(i, p.device_count as usize));
            }
            for (d, dev) in p.devices().iter().enumerate() {
                let ok = dev.size != 0
                    && dev.base.is_multiple_of(PAGE)
                    && dev.size.is_multiple_of(PAGE)
                    && dev.base.checked_add(dev.size).is_some()
                    && !meets(*dev, machine.normal_ram)
                    && !machine.reserved_mmio.iter().any(|r| meets(*r, *dev))
                    && !p.devices()[..d].iter().any(|o| meets(*o, *dev))
                    && !parts[..i]
                        .iter()
                        .any(|q| q.devices().iter().any(|o| meets(*o, *dev)));
                if !ok {
                    return Err(PartitionError::Device(i, d));
                }
            }
            if p.console != NO_CONSOLE && p.console >= p.device_count {
                return Err(PartitionError::Console(i));
            }
            // SPIs: real ones, nobody else's, not even in the same ICFGR
            // (checked against the earlier partitions: a pair is always
            // caught at the later of the two).
            for intid in 0..INTIDS as u32 {
                if !p.owns(intid) {
                    continue;
                }
                let spi = (FIRST_SPI..END_SPI).contains(&intid);
                if !spi || parts[..i].iter().any(|q| q.owns_in_icfgr(intid)) {
                    return Err(PartitionError::Spis(i));
                }
            }
            // Flags.
            let flags_ok = p.flags & !FLAGS_KNOWN == 0
                && (!p.tandem() || p.shared_region())
                && !(p.tandem() && tandem)
                && p.reserved == 0
                && p.reserved2 == 0;
            if !flags_ok {
                return Err(PartitionError::Flags(i));
            }
            tandem |= p.tandem();
            if !p.images.is_multiple_of(8) {
                return Err(PartitionError::Images(i));
            }
        }
        let unassigned = machine.linux_cores & machine_cores & !assigned;
        if unassigned != 0 {
            return Err(PartitionError::Unassigned(unassigned));
        }
        let mut out = Partitions {
            count,
            parts: [Partition::EMPTY; MAX_PARTITIONS],
            of_core,
        };
        out.parts[..count].copy_from_slice(parts);
        Ok(out)
    }
}

macro_rules! partition_offset {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: core::mem::offset_of!(Partition, $field) as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    CConstant {
        name: "PARTITIONS_MAGIC",
        value: MAGIC as i64,
    },
    CConstant {
        name: "PARTITIONS_VERSION",
        value: VERSION as i64,
    },
    CConstant {
        name: "PARTITIONS_OFFSET",
        value: OFFSET as i64,
    },
    CConstant {
        name: "PARTITIONS_MAX",
        value: MAX_PARTITIONS as i64,
    },
    CConstant {
        name: "PARTITION_MAX_DEVICES",
        value: MAX_DEVICES as i64,
    },
    CConstant {
        name: "PARTITION_SIZE",
        value: PARTITION_SIZE as i64,
    },
    CConstant {
        name: "PARTITIONS_HEADER_SIZE",
        value: core::mem::offset_of!(PartitionTable, partitions) as i64,
    },
    CConstant {
        name: "PARTITION_FLAG_OFF_STOPS_MACHINE",
        value: FLAG_OFF_STOPS_MACHINE as i64,
    },
    CConstant {
        name: "PARTITION_FLAG_SHARED_REGION",
        value: FLAG_SHARED_REGION as i64,
    },
    CConstant {
        name: "PARTITION_FLAG_TANDEM",
        value: FLAG_TANDEM as i64,
    },
    CConstant {
        name: "PARTITION_NO_CONSOLE",
        value: NO_CONSOLE as i64,
    },
    partition_offset!("PARTITION_OFF_CORES", cores),
    partition_offset!("PARTITION_OFF_RAM", ram),
    partition_offset!("PARTITION_OFF_IMAGES", images),
    partition_offset!("PARTITION_OFF_DEVICES", devices),
    partition_offset!("PARTITION_OFF_SPIS", spis),
];

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: Machine = Machine {
        cores: 4,
        linux_cores: 0b1111,
        normal_ram: Span {
            base: 0x4000_0000,
            size: 0x4000_0000,
        },
        shared: Span {
            base: 0x7FE0_0000,
            size: 0x20_0000,
        },
        hyp_ram: Span {
            base: 0x7FC0_0000,
            size: 0x20_0000,
        },
        reserved_mmio: [
            Span {
                base: 0x0800_0000,
                size: 0x1_0000,
            },
            Span {
                base: 0x080A_0000,
                size: 0x10_0000,
            },
        ],
    };

    fn part(name: u8, cores: u32, ram: (u64, u64), device: u64, spi: u32) -> Partition {
        let mut p = Partition {
            name,
            boot_core: cores.trailing_zeros() as u8,
            console: 0,
            device_count: 1,
            cores,
            ram: Span {
                base: ram.0,
                size: ram.1,
            },
            ..Partition::EMPTY
        };
        p.devices[0] = Span {
            base: device,
            size: 0x1000,
        };
        p.spis[spi as usize / 32] |= 1 << (spi % 32);
        p
    }

    fn dualunix() -> [Partition; 2] {
        let mut a = part(b'A', 0b0111, (0x4000_0000, 0x2000_0000), 0x0900_0000, 33);
        a.flags = FLAG_SHARED_REGION | FLAG_TANDEM;
        a.spis[142 / 32] |= 1 << (142 % 32);
        let b = part(b'B', 0b1000, (0x6000_0000, 0x1FC0_0000), 0x090C_0000, 80);
        [a, b]
    }

    #[test]
    fn a_good_table_maps_cores_to_partitions() {
        let t = PartitionTable::new(&dualunix());
        let p = t.validate(&MACHINE).unwrap();
        assert_eq!(p.count(), 2);
        assert_eq!(
            (0..5).map(|c| p.of_core(c)).collect::<std::vec::Vec<_>>(),
            [Some(0), Some(0), Some(0), Some(1), None]
        );
        let a = p.get(0).unwrap();
        assert_eq!(a.core_range(), (0, 3));
        assert!(a.owns(33) && a.owns(142) && !a.owns(80));
        assert_eq!(a.console().unwrap().base, 0x0900_0000);
        assert_eq!(p.get(1).unwrap().letter(), 'B');
        assert!(!PartitionTable { magic: 0, ..t }.present());
    }

    #[test]
    fn rpc_servers_belong_to_the_partition_with_tandems_services() {
        let p = PartitionTable::new(&dualunix()).validate(&MACHINE).unwrap();
        assert_eq!(p.check_rpc_cores(0), Ok(()));
        assert_eq!(p.check_rpc_cores(0b0100), Ok(()));
        assert_eq!(p.check_rpc_cores(0b0111), Ok(()));
        // Core 3 is B's: A's calls would take B's only core.
        assert_eq!(
            p.check_rpc_cores(0b1000),
            Err(PartitionError::RpcCores(0b1000))
        );
        assert_eq!(
            p.check_rpc_cores(0b1100),
            Err(PartitionError::RpcCores(0b1100))
        );
        assert_eq!(
            p.check_rpc_cores(1 << 31),
            Err(PartitionError::RpcCores(1 << 31))
        );
        let mut none = dualunix();
        none[0].flags = FLAG_SHARED_REGION;
        let p = PartitionTable::new(&none).validate(&MACHINE).unwrap();
        assert_eq!(p.check_rpc_cores(0b0001), Err(PartitionError::RpcCores(1)));
        assert_eq!(p.check_rpc_cores(0), Ok(()));
    }

    /// The table with `f` applied to it, validated.
    fn with(f: impl Fn(&mut [Partition; 2])) -> Result<Partitions, PartitionError> {
        let mut parts = dualunix();
        f(&mut parts);
        PartitionTable::new(&parts).validate(&MACHINE)
    }

    #[test]
    fn refuses_what_would_let_one_partition_reach_another() {
        use PartitionError::*;
        assert_eq!(with(|p| p[1].cores = 0b1100), Err(Cores(1)), "core 2 twice");
        assert_eq!(
            with(|p| p[0].cores = 0b0101),
            Err(Cores(0)),
            "not contiguous"
        );
        assert_eq!(with(|p| p[1].cores = 0b1_1000), Err(Cores(1)), "core 4");
        assert_eq!(with(|p| p[1].cores = 0), Err(Cores(1)));
        assert_eq!(with(|p| p[1].boot_core = 2), Err(BootCore(1)));
        assert_eq!(
            with(|p| {
                p[0].cores = 0b0011;
                p[0].boot_core = 0;
            }),
            Err(Unassigned(0b0100))
        );
        assert_eq!(
            with(|p| p[1].ram.base = 0x5FE0_0000),
            Err(Ram(1)),
            "overlaps A"
        );
        assert_eq!(
            with(|p| p[1].ram.size = 0x2000_0000),
            Err(Ram(1)),
            "the layer's RAM and the shared region"
        );
        assert_eq!(with(|p| p[1].ram.base = 0x6010_0000), Err(Ram(1)));
        assert_eq!(
            with(|p| p[1].devices[0].base = 0x0900_0000),
            Err(Device(1, 0)),
            "A's UART"
        );
        assert_eq!(
            with(|p| p[1].devices[0].base = 0x080C_0000),
            Err(Device(1, 0)),
            "a redistributor"
        );
        assert_eq!(
            with(|p| p[1].devices[0].base = 0x4000_0000),
            Err(Device(1, 0)),
            "RAM"
        );
        assert_eq!(with(|p| p[1].devices[0].size = 0x800), Err(Device(1, 0)));
        assert_eq!(with(|p| p[1].console = 1), Err(Console(1)));
        assert_eq!(with(|p| p[1].spis[1] |= 1 << 1), Err(Spis(1)), "A's 33");
        assert_eq!(
            with(|p| p[1].spis[1] |= 1 << 10),
            Err(Spis(1)),
            "42 shares ICFGR 32-47 with A's 33"
        );
        assert_eq!(
            with(|p| p[0].spis[2] |= 1 << 31),
            Err(Spis(1)),
            "A's 95 shares ICFGR 80-95 with B's 80: said at B"
        );
        assert_eq!(with(|p| p[1].spis[0] |= 1 << 27), Err(Spis(1)), "a PPI");
        assert_eq!(with(|p| p[1].spis[31] |= 1 << 31), Err(Spis(1)), "1023");
        assert_eq!(with(|p| p[1].flags = FLAG_TANDEM), Err(Flags(1)));
        assert_eq!(
            with(|p| p[1].flags = FLAG_TANDEM | FLAG_SHARED_REGION),
            Err(Flags(1)),
            "two partitions with the doorbell"
        );
        assert_eq!(with(|p| p[1].flags = 1 << 7), Err(Flags(1)));
        assert_eq!(with(|p| p[1].name = b'A'), Err(Name(1)));
        assert_eq!(with(|p| p[1].name = b'b'), Err(Name(1)));
        assert_eq!(with(|p| p[1].images = 4), Err(Images(1)));
        let mut t = PartitionTable::new(&dualunix());
        t.count = 0;
        assert_eq!(t.validate(&MACHINE), Err(Count(0)));
        t.count = 5;
        assert_eq!(t.validate(&MACHINE), Err(Count(5)));
        t.count = 2;
        t.version = 9;
        assert_eq!(t.validate(&MACHINE), Err(Version(9)));
        t.magic = 0;
        assert_eq!(t.validate(&MACHINE), Err(Missing));
    }

    #[test]
    fn cores_without_linux_are_no_partitions_and_need_none() {
        let machine = Machine {
            linux_cores: 0b0111,
            ..MACHINE
        };
        assert_eq!(
            with(|_| {}).and_then(|_| PartitionTable::new(&dualunix()).validate(&machine)),
            Err(PartitionError::Cores(1)),
            "B on the RTOS's core"
        );
        let a = dualunix()[0];
        assert!(PartitionTable::new(&[a]).validate(&machine).is_ok());
    }
}
