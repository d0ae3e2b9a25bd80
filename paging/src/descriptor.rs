//! The bits of a VMSAv8-64 descriptor (4 KiB granule), named once for the
//! three images: the type and address bits every regime shares, then the
//! stage-1 and the stage-2 attribute fields, which differ in meaning where
//! they share positions (bits 5:2 are AttrIndx and NS in stage 1,
//! MemAttr in stage 2).

/// Valid: clear, the entry faults.
pub const VALID: u64 = 1;
/// The type field, bits 1:0.
pub const TYPE: u64 = 0b11;
/// A block (levels 1 and 2).
pub const BLOCK: u64 = 0b01;
/// A next-level table (levels 1 and 2).
pub const TABLE: u64 = 0b11;
/// A page (level 3; 0b01 there is reserved and faults).
pub const PAGE: u64 = 0b11;
/// The output address bits (48-bit addresses, 4 KiB aligned); a block's
/// address is the part above its size.
pub const ADDRESS: u64 = 0x0000_FFFF_FFFF_F000;
/// SH = 3: inner shareable.
pub const INNER_SHAREABLE: u64 = 3 << 8;
/// AF: accessed (no access-flag fault on first use).
pub const AF: u64 = 1 << 10;
/// NSTable in a table descriptor of a Secure regime: every lookup below
/// it is in the Non-secure physical address space.
pub const NS_TABLE: u64 = 1 << 63;

/// Stage-1 leaf fields (EL3, S-EL1&0, NS-EL2).
pub mod stage1 {
    /// AttrIndx: the MAIR attribute `index` the leaf's memory type is.
    pub const fn attr_index(index: u64) -> u64 {
        index << 2
    }
    /// NS: the output address is in the Non-secure physical address space
    /// (Secure regimes only; ignored in a Non-secure one).
    pub const NS: u64 = 1 << 5;
    /// AP[1]: EL0 may access it (S-EL1&0); RES1 in a regime with one
    /// privilege level (EL3, EL2 without VHE).
    pub const AP_EL0_OR_RES1: u64 = 1 << 6;
    /// AP[2]: read-only.
    pub const READ_ONLY: u64 = 1 << 7;
    /// nG: not global, tagged with the ASID (S-EL1&0).
    pub const NOT_GLOBAL: u64 = 1 << 11;
    /// PXN: never executed at EL1 (S-EL1&0).
    pub const PXN: u64 = 1 << 53;
    /// UXN at S-EL1&0 (never executed at EL0); XN at EL3 and EL2 (never
    /// executed).
    pub const XN: u64 = 1 << 54;
}

/// Stage-2 leaf fields (a partition's IPA to PA map, NS-EL1&0).
pub mod stage2 {
    /// MemAttr = 0b1111: Normal, inner and outer write-back.
    pub const NORMAL_WRITE_BACK: u64 = 0b1111 << 2;
    /// MemAttr = 0b0001: Device-nGnRE.
    pub const DEVICE_NGNRE: u64 = 0b0001 << 2;
    /// S2AP[0]: the guest may read.
    pub const READ: u64 = 1 << 6;
    /// S2AP[1]: the guest may write.
    pub const WRITE: u64 = 1 << 7;
    /// XN[1:0] = 0b10: never executed, at EL1 nor EL0.
    pub const EXECUTE_NEVER: u64 = 0b10 << 53;
}
