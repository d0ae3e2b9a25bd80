//! Memory protection for the RTOS's protected tasks, free of hardware: the
//! S-EL1 stage-1 translation tables (an identity map of the kernel's memory,
//! devices and the shared region, plus each protected task's own S-EL0
//! pages), the register values that turn them on, ASIDs, and what an
//! exception taken from a task means. Host-tested; the firmware only writes
//! the values to registers.
#![no_std]

#[cfg(test)]
extern crate std;

mod fault;
mod kernel_map;
mod tables;

pub use fault::{Abort, Exception, classify};
pub use kernel_map::{KERNEL_RANGES, kernel_map};
pub use tables::{
    AddressSpace, Kind, MapError, Mapping, Security, SecurityMismatch, TABLES, Translation,
};

/// Bytes in a page (4 KiB granule).
pub const PAGE: u64 = 4096;
/// Bytes in a level-2 block.
pub const BLOCK: u64 = 2 << 20;
/// Addresses the tables cover (T0SZ = 32: 4 GiB, walks start at level 1).
pub const VA_BITS: u32 = 32;

/// MAIR_EL1: attribute 0 Device-nGnRnE, attribute 1 Normal write-back
/// read/write-allocate, inner and outer.
pub const MAIR: u64 = 0xFF << 8;
/// TCR_EL1: T0SZ = 32, table walks write-back cacheable inner shareable, 4 KiB
/// granule, no TTBR1 walks (EPD1), 32-bit physical addresses, 8-bit ASIDs
/// taken from TTBR0.
pub const TCR: u64 = (64 - VA_BITS as u64) | 1 << 8 | 1 << 10 | 3 << 12 | 1 << 23;
/// SCTLR_EL1 bits set to turn translation on: M (MMU), C (data cache), I
/// (instruction cache).
pub const SCTLR_ON: u64 = 1 | 1 << 2 | 1 << 12;

/// How protected tasks' address spaces are told apart in the TLB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbMode {
    /// Each protected task has its own ASID: switching writes TTBR0 only
    /// (Armv8's counterpart of ARM9's FCSE).
    Asid,
    /// Every task shares ASID 0 and the whole TLB is invalidated on every
    /// switch of address space (what an OS without tags must do).
    Flush,
}

/// Protected tasks a configuration can have (8-bit ASIDs, 0 kept for the
/// kernel and for [`TlbMode::Flush`]).
pub const MAX_ASIDS: usize = 255;

/// The ASID of protected task number `slot` (0-based) in `mode`; `None` if
/// there are more tasks than ASIDs.
pub const fn asid(mode: TlbMode, slot: usize) -> Option<u8> {
    match mode {
        TlbMode::Flush => Some(0),
        TlbMode::Asid if slot < MAX_ASIDS => Some(slot as u8 + 1),
        TlbMode::Asid => None,
    }
}

/// TTBR0_EL1 for tables at physical address `tables` and `asid`.
pub const fn ttbr0(tables: u64, asid: u8) -> u64 {
    tables | (asid as u64) << 48
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers() {
        assert_eq!(TCR & 0x3F, 32);
        assert_eq!(TCR >> 14 & 3, 0, "4 KiB granule");
        assert_eq!(TCR >> 23 & 1, 1, "no TTBR1 walks");
        assert_eq!(TCR >> 36 & 1, 0, "8-bit ASIDs");
        assert_eq!(TCR >> 22 & 1, 0, "ASID from TTBR0");
        assert_eq!(MAIR & 0xFF, 0, "attribute 0 is Device-nGnRnE");
        assert_eq!(MAIR >> 8 & 0xFF, 0xFF);
    }

    #[test]
    fn asids() {
        assert_eq!(asid(TlbMode::Asid, 0), Some(1));
        assert_eq!(asid(TlbMode::Asid, 254), Some(255));
        assert_eq!(asid(TlbMode::Asid, 255), None);
        assert_eq!(asid(TlbMode::Flush, 7), Some(0));
        assert_eq!(ttbr0(0x0E20_0000, 3), 0x0003_0000_0E20_0000);
    }
}
