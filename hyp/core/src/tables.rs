//! Translation tables for the EL2 layer: its own identity map at NS-EL2
//! (stage 1) and each partition's stage-2 map (IPA = PA), both built by
//! `tandem-paging`'s [`Pool`] from pages the firmware owns (its `.bss`):
//! 2 MiB blocks where a region fills them, 4 KiB pages elsewhere, walks
//! from level 1 over 4 GiB (T0SZ = 32). What stays here is what the layer
//! maps things as ([`Kind`]) and the registers that turn the tables on.

use tandem_paging::descriptor::{AF, INNER_SHAREABLE, stage1, stage2};
pub use tandem_paging::{BLOCK, Leaf, MapError, PAGE, Pool, SPACE, Table as Page};

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
        use stage1::{AP_EL0_OR_RES1, READ_ONLY, XN, attr_index};
        use stage2::{DEVICE_NGNRE, EXECUTE_NEVER, NORMAL_WRITE_BACK, READ, WRITE};
        // Stage 1 at EL2 has one privilege level: AP[1] is RES1.
        let normal = attr_index(1) | AP_EL0_OR_RES1 | INNER_SHAREABLE | AF;
        let guest_normal = NORMAL_WRITE_BACK | INNER_SHAREABLE | AF;
        match self {
            Self::HypCode => normal | READ_ONLY,
            Self::HypData => normal | XN,
            Self::HypDevice => attr_index(0) | AP_EL0_OR_RES1 | XN | AF,
            Self::GuestRam => guest_normal | READ | WRITE,
            Self::GuestShared => guest_normal | READ | WRITE | EXECUTE_NEVER,
            Self::GuestSharedReadOnly => guest_normal | READ | EXECUTE_NEVER,
            Self::GuestDevice => DEVICE_NGNRE | READ | WRITE | EXECUTE_NEVER | AF,
        }
    }
}

impl From<Kind> for u64 {
    fn from(kind: Kind) -> u64 {
        kind.attributes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage1_and_stage2_fields_where_the_architecture_puts_them() {
        let code = Kind::HypCode.attributes();
        assert_eq!(code >> 2 & 7, 1, "AttrIndx 1: Normal write-back");
        assert_eq!(code >> 6 & 3, 0b11, "AP[1] RES1, AP[2] read-only");
        assert_eq!(Kind::HypDevice.attributes() >> 2 & 7, 0, "Device-nGnRnE");
        let ram = Kind::GuestRam.attributes();
        assert_eq!(ram >> 2 & 0xF, 0b1111, "MemAttr: Normal write-back");
        assert_eq!(ram >> 53 & 3, 0, "executable");
        let device = Kind::GuestDevice.attributes();
        assert_eq!(device >> 2 & 0xF, 0b0001, "MemAttr: Device-nGnRE");
        assert_eq!(device >> 53 & 3, 0b10, "never executed");
        assert_eq!(device >> 8 & 3, 0, "no shareability for Device memory");
    }
}
