//! The GIC as each partition sees it, decided without touching hardware:
//! which distributor accesses reach the real distributor and how
//! ([`gicd_access`]), what its cores' emulated RD_base frames answer
//! ([`gicr_access`]), and which cores an SGI may reach ([`filter_sgi`]).
//!
//! A partition sees a GIC without LPIs. A redistributor that has them
//! reads and writes its LPI tables at the physical addresses
//! GICR_PROPBASER and GICR_PENDBASER name, past any stage 2 (QEMU's virt
//! machine gives them even with its=off: GICR_TYPER.PLPIS): a partition
//! could point its pending table at another partition's RAM or the layer's
//! own, and each LPI it acknowledged would clear a bit there. So the
//! RD_base frames are never mapped; GICR_TYPER and GICD_TYPER read without
//! LPIs, GICR_CTLR's EnableLPIs stays 0, and the LPI registers are RAZ/WI.
//!
//! The distributor is shared by every partition (and the secure world), so
//! each access is cut down to the partition's own SPIs: registers with a
//! bit, two bits or a byte per interrupt read as zero and ignore writes for
//! the interrupts of others; routing (GICD_IROUTER) may only name the
//! partition's own cores; the control register (GICD_CTLR) is read-only,
//! so a Linux resetting "its" distributor cannot turn the others'
//! interrupts off. Only GICD_ICFGR needs the hardware's value merged with
//! the write, and no two partitions own interrupts in one ICFGR register
//! (`tandem_abi::partition`), so nothing here needs a lock: a partition
//! stopped in the middle of an access leaves nothing held.

use tandem_abi::partition::Partition;

/// One trapped MMIO access, as the fault syndrome describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Bytes from the start of the device's registers.
    pub offset: u64,
    /// Bytes accessed: 1, 2, 4 or 8.
    pub size: u8,
    /// The value written, or `None` for a read.
    pub write: Option<u64>,
}

/// What to do for an access: the firmware carries it out on the real
/// device (same base) and, for a read, gives the result to the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read `size` bytes at `offset`, keep the bits of `mask`, set those of
    /// `set`.
    Read {
        /// Register offset.
        offset: u64,
        /// Access size in bytes.
        size: u8,
        /// Bits of the hardware's value the partition may see.
        mask: u64,
        /// Bits reported set whatever the hardware says.
        set: u64,
    },
    /// A read answered without the hardware.
    Value(u64),
    /// Write `value` (`size` bytes) at `offset`.
    Write {
        /// Register offset.
        offset: u64,
        /// Access size in bytes.
        size: u8,
        /// What to write.
        value: u64,
    },
    /// Write, one byte at a time, the bytes of the 4-byte `value` whose bit
    /// is set in `bytes`, at `offset` + their index (byte-accessible
    /// registers: the others' bytes are never written).
    WriteBytes {
        /// Register offset of byte 0.
        offset: u64,
        /// The value, byte 0 lowest.
        value: u64,
        /// Which bytes to write (bit per byte).
        bytes: u8,
    },
    /// Read the 4-byte register at `offset`, replace the bits of `mask` with
    /// `value`'s, write it back.
    Merge {
        /// Register offset.
        offset: u64,
        /// Bits taken from `value`.
        mask: u32,
        /// The guest's value.
        value: u32,
    },
    /// A write that does nothing.
    Ignore,
}

/// Distributor register offsets (GICv3).
mod gicd {
    pub const CTLR: u64 = 0x0000;
    pub const TYPER: u64 = 0x0004;
    pub const IIDR: u64 = 0x0008;
    pub const TYPER2: u64 = 0x000C;
    pub const SETSPI_NSR: u64 = 0x0040;
    pub const CLRSPI_NSR: u64 = 0x0048;
    pub const ISENABLER: u64 = 0x0100;
    pub const ICACTIVER_END: u64 = 0x0400;
    pub const IPRIORITYR: u64 = 0x0400;
    pub const IPRIORITYR_END: u64 = 0x0800;
    pub const ICFGR: u64 = 0x0C00;
    pub const ICFGR_END: u64 = 0x0D00;
    pub const IROUTER: u64 = 0x6000;
    pub const IROUTER_END: u64 = 0x8000;
    pub const ID: u64 = 0xFFD0;
    pub const END: u64 = 0x1_0000;
}

/// GICD_IROUTER: Interrupt_Routing_Mode (1 of N) and the affinity fields.
const IROUTER_IRM: u64 = 1 << 31;
const IROUTER_AFF_HIGH: u64 = 0xFF << 32;

/// Whether partition `p` routes an SPI to the core GICD_IROUTER `value`
/// names: one of its own cores, never "any core" (1 of N).
fn routes_to_own_core(p: &Partition, value: u64) -> bool {
    let aff = value & 0xFF_FF_FF;
    value & (IROUTER_IRM | IROUTER_AFF_HIGH) == 0 && aff >> 8 == 0 && p.has_core(aff as usize)
}

/// The owned-interrupt mask of a register with `width` bits per interrupt,
/// for a `size`-byte access at byte `at` of the register block whose first
/// interrupt is INTID 0.
fn owned_mask(p: &Partition, at: u64, size: u8, width: u32) -> u64 {
    let first = (at * 8 / u64::from(width)) as u32;
    let fields = u32::from(size) * 8 / width;
    let field_mask = if width == 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    };
    (0..fields)
        .filter(|&i| p.owns(first + i))
        .fold(0, |m, i| m | field_mask << (i * width))
}

/// Decides one trapped access to the distributor by partition `p`.
pub fn gicd_access(p: &Partition, a: Access) -> Action {
    use gicd::*;
    let Access {
        offset,
        size,
        write,
    } = a;
    let read_only = |mask: u64| match write {
        None => Action::Read {
            offset,
            size,
            mask,
            set: 0,
        },
        Some(_) => Action::Ignore,
    };
    let raz_wi = match write {
        None => Action::Value(0),
        Some(_) => Action::Ignore,
    };
    let word = size == 4 && offset.is_multiple_of(4);
    match offset {
        // The control register is the machine's: Linux's reset of "its"
        // distributor (disable, then enable its group) must not stop the
        // other partitions' interrupts, nor can it touch the secure groups.
        // No LPIs (the module's comment): GICD_TYPER.LPIS reads 0.
        TYPER if word => read_only(u64::from(u32::MAX) & !GICD_TYPER_LPIS),
        CTLR | IIDR | TYPER2 if word => read_only(u64::from(u32::MAX)),
        // Pending an SPI by number: only one's own.
        SETSPI_NSR | CLRSPI_NSR if word => match write {
            Some(v) if p.owns((v & 0x3FF) as u32) => Action::Write {
                offset,
                size,
                value: v & 0x3FF,
            },
            _ => raz_wi,
        },
        // A bit per interrupt, written as 1 to act (set or clear enable,
        // pending, active): the others' bits are dropped.
        ISENABLER..ICACTIVER_END if word => {
            let mask = owned_mask(p, offset % 0x80, size, 1);
            match write {
                None => read_only(mask),
                Some(v) if v & mask != 0 => Action::Write {
                    offset,
                    size,
                    value: v & mask,
                },
                Some(_) => Action::Ignore,
            }
        }
        // A byte per interrupt: only its own bytes are written.
        IPRIORITYR..IPRIORITYR_END if size == 1 || word => {
            let mask = owned_mask(p, offset - IPRIORITYR, size, 8);
            match write {
                None => read_only(mask),
                Some(_) if mask == 0 => Action::Ignore,
                Some(v) if size == 1 => Action::Write {
                    offset,
                    size,
                    value: v & 0xFF,
                },
                Some(v) => Action::WriteBytes {
                    offset,
                    value: v & 0xFFFF_FFFF,
                    bytes: (0..4)
                        .filter(|i| mask >> (i * 8) & 0xFF != 0)
                        .fold(0, |b, i| b | 1 << i),
                },
            }
        }
        // Two bits per interrupt, one 4-byte register for 16 interrupts:
        // merged with the hardware's value (no other partition owns any of
        // these 16, `tandem_abi::partition`).
        ICFGR..ICFGR_END if word => {
            let mask = owned_mask(p, offset - ICFGR, size, 2);
            match write {
                None => read_only(mask),
                Some(_) if mask == 0 => Action::Ignore,
                Some(v) => Action::Merge {
                    offset,
                    mask: mask as u32,
                    value: v as u32,
                },
            }
        }
        // Routing, 8 bytes per interrupt (or 4-byte halves): only one's own
        // interrupts, only to one's own cores.
        IROUTER..IROUTER_END if (size == 8 && offset.is_multiple_of(8)) || word => {
            let intid = ((offset - IROUTER) / 8) as u32;
            if !p.owns(intid) {
                return raz_wi;
            }
            let high_half = size == 4 && offset % 8 == 4;
            match write {
                None => read_only(if size == 8 {
                    u64::MAX
                } else {
                    u64::from(u32::MAX)
                }),
                // Aff3, the upper half, is 0 on every core of this machine.
                Some(v) if high_half && v == 0 => Action::Write {
                    offset,
                    size,
                    value: 0,
                },
                Some(v) if !high_half && routes_to_own_core(p, v) => Action::Write {
                    offset,
                    size,
                    value: v,
                },
                Some(_) => Action::Ignore,
            }
        }
        // Identification registers: as they are.
        ID..END if word => read_only(u64::from(u32::MAX)),
        // Everything else: the secure side's (groups, group modifiers,
        // non-secure access control are RAZ/WI for Non-secure accesses
        // anyway), unused with affinity routing (targets, SGI registers),
        // reserved, or an access size the GIC does not allow.
        _ => raz_wi,
    }
}

/// GICD_TYPER.LPIS: the GIC has LPIs.
const GICD_TYPER_LPIS: u64 = 1 << 17;
/// GICR_TYPER.Last: this is the last redistributor of the range.
pub const GICR_TYPER_LAST: u64 = 1 << 4;
/// GICR_TYPER's LPI bits: PLPIS (physical LPIs), VLPIS (virtual LPIs),
/// DirectLPI (GICR_SETLPIR and friends).
pub const GICR_TYPER_LPIS: u64 = 1 << 0 | 1 << 1 | 1 << 3;
/// GICR_CTLR.EnableLPIs.
pub const GICR_CTLR_ENABLE_LPIS: u64 = 1 << 0;

/// RD_base register offsets (GICv3).
mod gicr {
    pub const CTLR: u64 = 0x0000;
    pub const IIDR: u64 = 0x0004;
    pub const TYPER: u64 = 0x0008;
    pub const STATUSR: u64 = 0x0010;
    pub const WAKER: u64 = 0x0014;
    pub const ID: u64 = 0xFFD0;
    pub const END: u64 = 0x1_0000;
}

/// Decides an access to the RD_base frame of one of a partition's cores
/// (never mapped in its stage 2; the module's comment says why). `last`:
/// the frame of a partition's last core when another core's frame follows
/// it (`crate::maps::Machine::boundary_frame`), whose GICR_TYPER reads with
/// Last set, so Linux ends its walk there. What Linux uses reaches the
/// frame as it is (it is the partition's own core's), without LPIs:
/// GICR_TYPER without PLPIS, VLPIS and DirectLPI, GICR_CTLR's EnableLPIs
/// 0 and never written; the wake-up, status and identification registers
/// as they are; everything else (GICR_PROPBASER, GICR_PENDBASER,
/// GICR_SETLPIR, GICR_CLRLPIR, GICR_INVLPIR, GICR_INVALLR, GICR_SYNCR,
/// reserved) RAZ/WI.
pub fn gicr_access(a: Access, last: bool) -> Action {
    use gicr::*;
    let Access {
        offset,
        size,
        write,
    } = a;
    let raz_wi = match write {
        None => Action::Value(0),
        Some(_) => Action::Ignore,
    };
    let aligned = (size == 4 || size == 8) && offset.is_multiple_of(u64::from(size));
    if !aligned {
        return raz_wi;
    }
    let width = if size == 8 {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    };
    let read = |mask: u64, set: u64| Action::Read {
        offset,
        size,
        mask: mask & width,
        set: set & width,
    };
    let last = if last { GICR_TYPER_LAST } else { 0 };
    match (offset, write) {
        (CTLR, None) if size == 4 => read(!GICR_CTLR_ENABLE_LPIS, 0),
        (CTLR, Some(value)) if size == 4 => Action::Write {
            offset,
            size,
            value: value & !GICR_CTLR_ENABLE_LPIS,
        },
        // TYPER is 64 bits, read whole or as two words.
        (TYPER, None) => read(!GICR_TYPER_LPIS, last),
        (o, None) if o == TYPER + 4 && size == 4 => read(u64::MAX, 0),
        (IIDR, None) if size == 4 => read(u64::MAX, 0),
        (STATUSR | WAKER, None) if size == 4 => read(u64::MAX, 0),
        (STATUSR | WAKER, Some(value)) if size == 4 => Action::Write {
            offset,
            size,
            value,
        },
        (ID..END, None) if size == 4 => read(u64::MAX, 0),
        _ => raz_wi,
    }
}

/// ICC_SGI1R_EL1 (and ICC_SGI0R_EL1, ICC_ASGI1R_EL1) fields.
mod sgir {
    pub const TARGET_LIST: u64 = 0xFFFF;
    pub const AFF1: u64 = 0xFF << 16;
    pub const AFF2: u64 = 0xFF << 32;
    pub const IRM: u64 = 1 << 40;
    pub const RS_SHIFT: u32 = 44;
    pub const RS: u64 = 0xF << RS_SHIFT;
    pub const AFF3: u64 = 0xFF << 48;
}

/// An SGI Linux on `core` of partition `p` asked for (an ICC_SGI*R_EL1
/// write, trapped with ICH_HCR_EL2.TC), cut down to the partition's cores:
/// the value to write to the real register, or `None` if no target is
/// left. "Every core but this one" (IRM) becomes the list of the
/// partition's other cores. This machine's cores have Aff3..Aff1 = 0.
pub fn filter_sgi(p: &Partition, core: usize, value: u64) -> Option<u64> {
    use sgir::*;
    let kept = value & !(TARGET_LIST | AFF1 | AFF2 | IRM | RS | AFF3);
    let (range, list) = if value & IRM != 0 {
        (0u64, u64::from(p.cores) & !(1 << core))
    } else {
        if value & (AFF1 | AFF2 | AFF3) != 0 {
            return None;
        }
        let range = (value & RS) >> RS_SHIFT;
        let shift = range * 16;
        let own = if shift < 32 {
            u64::from(p.cores) >> shift
        } else {
            0
        };
        (range, value & TARGET_LIST & own)
    };
    if list & TARGET_LIST == 0 {
        return None;
    }
    Some(kept | range << RS_SHIFT | (list & TARGET_LIST))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A: cores 0-2, SPIs 33 (its UART) and 142 (the doorbell); B: core 3,
    /// SPI 80.
    fn a() -> Partition {
        let mut p = Partition {
            name: b'A',
            cores: 0b0111,
            ..Partition::EMPTY
        };
        p.spis[1] = 1 << 1;
        p.spis[4] = 1 << 14;
        p
    }

    fn b() -> Partition {
        let mut p = Partition {
            name: b'B',
            cores: 0b1000,
            boot_core: 3,
            ..Partition::EMPTY
        };
        p.spis[2] = 1 << 16;
        p
    }

    fn read(offset: u64, size: u8) -> Access {
        Access {
            offset,
            size,
            write: None,
        }
    }

    fn write(offset: u64, size: u8, v: u64) -> Access {
        Access {
            offset,
            size,
            write: Some(v),
        }
    }

    #[test]
    fn linux_resetting_the_distributor_touches_only_its_own_interrupts() {
        // gic_dist_init: disable the distributor, groups, then every SPI
        // disabled, inactive, level, default priority, routed to the boot CPU.
        assert_eq!(gicd_access(&a(), write(0, 4, 0)), Action::Ignore);
        assert_eq!(gicd_access(&a(), write(0, 4, 0x13)), Action::Ignore);
        assert_eq!(
            gicd_access(&b(), write(0x84, 4, u32::MAX.into())),
            Action::Ignore,
            "IGROUPR: the secure side's"
        );
        // ICENABLER1 (INTIDs 32-63): A owns 33 only.
        assert_eq!(
            gicd_access(&a(), write(0x184, 4, u32::MAX.into())),
            Action::Write {
                offset: 0x184,
                size: 4,
                value: 1 << 1
            }
        );
        assert_eq!(
            gicd_access(&b(), write(0x184, 4, u32::MAX.into())),
            Action::Ignore
        );
        // ICENABLER2 (64-95): B owns 80.
        assert_eq!(
            gicd_access(&b(), write(0x188, 4, u32::MAX.into())),
            Action::Write {
                offset: 0x188,
                size: 4,
                value: 1 << 16
            }
        );
        // ICACTIVER4 (128-159): A's 142.
        assert_eq!(
            gicd_access(&a(), write(0x390, 4, u32::MAX.into())),
            Action::Write {
                offset: 0x390,
                size: 4,
                value: 1 << 14
            }
        );
        // IPRIORITYR for 32-35, 4 bytes: A's byte 1 only.
        assert_eq!(
            gicd_access(&a(), write(0x420, 4, 0xA0A0_A0A0)),
            Action::WriteBytes {
                offset: 0x420,
                value: 0xA0A0_A0A0,
                bytes: 0b0010
            }
        );
        assert_eq!(
            gicd_access(&b(), write(0x420, 4, 0xA0A0_A0A0)),
            Action::Ignore
        );
        assert_eq!(
            gicd_access(&b(), write(0x450, 1, 0x80)),
            Action::Write {
                offset: 0x450,
                size: 1,
                value: 0x80
            }
        );
        assert_eq!(gicd_access(&a(), write(0x450, 1, 0x80)), Action::Ignore);
        // ICFGR2 (INTIDs 32-47): A's 33, bits 3:2.
        assert_eq!(
            gicd_access(&a(), write(0xC08, 4, 0)),
            Action::Merge {
                offset: 0xC08,
                mask: 0b1100,
                value: 0
            }
        );
        assert_eq!(gicd_access(&b(), write(0xC08, 4, 0)), Action::Ignore);
        // IROUTER of 33 (0x6108): to core 0 yes, to B's core 3 or "any" no.
        assert_eq!(
            gicd_access(&a(), write(0x6108, 8, 0)),
            Action::Write {
                offset: 0x6108,
                size: 8,
                value: 0
            }
        );
        assert_eq!(gicd_access(&a(), write(0x6108, 8, 3)), Action::Ignore);
        assert_eq!(gicd_access(&a(), write(0x6108, 8, 1 << 31)), Action::Ignore);
        assert_eq!(gicd_access(&a(), write(0x6108, 8, 1 << 32)), Action::Ignore);
        assert_eq!(gicd_access(&a(), write(0x6108, 8, 0x100)), Action::Ignore);
        assert_eq!(
            gicd_access(&b(), write(0x6108, 8, 3)),
            Action::Ignore,
            "B cannot route A's interrupt, not even to itself"
        );
        assert_eq!(
            gicd_access(&b(), write(0x6280, 4, 3)),
            Action::Write {
                offset: 0x6280,
                size: 4,
                value: 3
            },
            "B's 80, lower half, to core 3"
        );
        assert_eq!(
            gicd_access(&b(), write(0x6284, 4, 0)),
            Action::Write {
                offset: 0x6284,
                size: 4,
                value: 0
            }
        );
        assert_eq!(gicd_access(&b(), write(0x6284, 4, 1)), Action::Ignore);
    }

    #[test]
    fn reads_show_only_ones_own_interrupts() {
        assert_eq!(
            gicd_access(&a(), read(0x104, 4)),
            Action::Read {
                offset: 0x104,
                size: 4,
                mask: 1 << 1,
                set: 0
            }
        );
        assert_eq!(
            gicd_access(&b(), read(0x104, 4)),
            Action::Read {
                offset: 0x104,
                size: 4,
                mask: 0,
                set: 0
            }
        );
        assert_eq!(
            gicd_access(&a(), read(0x420, 4)),
            Action::Read {
                offset: 0x420,
                size: 4,
                mask: 0xFF00,
                set: 0
            }
        );
        assert_eq!(
            gicd_access(&a(), read(0xC08, 4)),
            Action::Read {
                offset: 0xC08,
                size: 4,
                mask: 0b1100,
                set: 0
            }
        );
        assert_eq!(gicd_access(&b(), read(0x6108, 8)), Action::Value(0));
        assert_eq!(
            gicd_access(&a(), read(0x6108, 8)),
            Action::Read {
                offset: 0x6108,
                size: 8,
                mask: u64::MAX,
                set: 0
            }
        );
        for id in [0, 8, 0xFFE8] {
            assert!(matches!(
                gicd_access(&b(), read(id, 4)),
                Action::Read {
                    mask: 0xFFFF_FFFF,
                    ..
                }
            ));
        }
        assert_eq!(gicd_access(&a(), read(0x84, 4)), Action::Value(0));
        assert_eq!(gicd_access(&a(), read(0xF00, 4)), Action::Value(0));
        assert_eq!(gicd_access(&a(), read(0x2, 2)), Action::Value(0), "size");
        assert_eq!(gicd_access(&a(), read(0x101, 4)), Action::Value(0), "align");
    }

    #[test]
    fn setspi_pends_only_ones_own() {
        assert_eq!(
            gicd_access(&b(), write(0x40, 4, 80)),
            Action::Write {
                offset: 0x40,
                size: 4,
                value: 80
            }
        );
        assert_eq!(gicd_access(&b(), write(0x40, 4, 33)), Action::Ignore);
        assert_eq!(gicd_access(&a(), write(0x48, 4, 80)), Action::Ignore);
    }

    #[test]
    fn the_boundary_frame_says_it_is_the_last() {
        assert_eq!(
            gicr_access(read(8, 8), true),
            Action::Read {
                offset: 8,
                size: 8,
                mask: !GICR_TYPER_LPIS,
                set: GICR_TYPER_LAST
            }
        );
        assert_eq!(
            gicr_access(read(8, 8), false),
            Action::Read {
                offset: 8,
                size: 8,
                mask: !GICR_TYPER_LPIS,
                set: 0
            },
            "not the boundary: the hardware's Last"
        );
        assert_eq!(
            gicr_access(read(0xC, 4), true),
            Action::Read {
                offset: 0xC,
                size: 4,
                mask: 0xFFFF_FFFF,
                set: 0
            }
        );
        assert_eq!(
            gicr_access(write(0x14, 4, 0), false),
            Action::Write {
                offset: 0x14,
                size: 4,
                value: 0
            }
        );
        assert_eq!(gicr_access(read(0x9, 4), true), Action::Value(0));
        assert_eq!(
            gicr_access(read(0xFFE8, 4), false),
            Action::Read {
                offset: 0xFFE8,
                size: 4,
                mask: 0xFFFF_FFFF,
                set: 0
            },
            "GICR_PIDR2, which Linux checks"
        );
    }

    #[test]
    fn a_partition_sees_no_lpis_and_cannot_turn_them_on() {
        // GICR_TYPER without PLPIS, VLPIS, DirectLPI, read whole or the
        // low word.
        for size in [4, 8] {
            let Action::Read { mask, .. } = gicr_access(read(8, size), false) else {
                panic!("GICR_TYPER reads the hardware's")
            };
            assert_eq!(mask & 0b1011, 0);
        }
        // GICR_CTLR: EnableLPIs never reads 1 nor is written 1.
        assert_eq!(
            gicr_access(read(0, 4), false),
            Action::Read {
                offset: 0,
                size: 4,
                mask: 0xFFFF_FFFE,
                set: 0
            }
        );
        assert_eq!(
            gicr_access(write(0, 4, 0b11), false),
            Action::Write {
                offset: 0,
                size: 4,
                value: 0b10
            }
        );
        // The LPI registers: PROPBASER, PENDBASER, SETLPIR, CLRLPIR,
        // INVLPIR, INVALLR, SYNCR; RAZ/WI.
        for offset in [0x70, 0x78, 0x40, 0x48, 0xA0, 0xB0, 0xC0] {
            assert_eq!(gicr_access(read(offset, 8), false), Action::Value(0));
            assert_eq!(
                gicr_access(write(offset, 8, 0x4800_0000), false),
                Action::Ignore
            );
        }
        // The distributor says the same.
        let Action::Read { mask, .. } = gicd_access(&a(), read(4, 4)) else {
            panic!("GICD_TYPER reads the hardware's")
        };
        assert_eq!(mask & GICD_TYPER_LPIS, 0);
        assert_eq!(gicd_access(&a(), write(4, 4, 0)), Action::Ignore);
    }

    #[test]
    fn sgis_reach_only_the_partitions_cores() {
        // INTID 1 (bits 27:24) to cores 0 and 3 from A's core 1: core 0 only.
        let v = 1 << 24 | 0b1001;
        assert_eq!(filter_sgi(&a(), 1, v), Some(1 << 24 | 0b0001));
        assert_eq!(filter_sgi(&a(), 1, 1 << 24 | 0b1000), None);
        assert_eq!(
            filter_sgi(&b(), 3, 1 << 24 | 0b1000),
            Some(1 << 24 | 0b1000)
        );
        // Everyone but me.
        assert_eq!(
            filter_sgi(&a(), 1, 2 << 24 | 1 << 40),
            Some(2 << 24 | 0b101)
        );
        assert_eq!(filter_sgi(&b(), 3, 2 << 24 | 1 << 40), None);
        // Other affinities or ranges name no core here.
        assert_eq!(filter_sgi(&a(), 0, 1 << 16 | 1), None);
        assert_eq!(filter_sgi(&a(), 0, 1 << 32 | 1), None);
        assert_eq!(filter_sgi(&a(), 0, 1 << 48 | 1), None);
        assert_eq!(filter_sgi(&a(), 0, 1 << 44 | 1), None);
    }
}
