//! Translation tables for the three firmware images (the monitor at EL3,
//! the EL2 layer and its partitions' stage 2, the RTOS at S-EL1&0), free of
//! hardware, so a host test can build a map and walk it.
//!
//! All three use the 4 KiB granule and 32-bit input addresses (T0SZ = 32):
//! walks start at level 1, each level-1 entry covers 1 GiB, level-2 blocks
//! 2 MiB, level-3 pages 4 KiB. Tables live in memory the caller owns (a
//! firmware's `.bss`, a test's `Vec`): nothing here allocates.
//!
//! - [`descriptor`]: the bits of a descriptor, per translation regime.
//! - [`Pool`]: a builder that takes tables from caller-owned pages as
//!   regions need them, blocks where a region covers whole 2 MiB blocks,
//!   pages elsewhere; and pages mapped over a block, which it splits
//!   first (the RTOS's task pages in its kernel's RAM).
//! - [`walk`]: the one walker: what an input address translates to, with
//!   the leaf's attributes and its security state ([`Leaf::security`]), and
//!   [`check_security`], which refuses a map that puts an address in the
//!   wrong physical address space.

#![no_std]

#[cfg(test)]
extern crate std;

pub mod descriptor;
mod pool;
mod walk;

pub use pool::{MapError, Pool};
pub use walk::{
    Contiguous, Leaf, Regime, Security, SecurityMismatch, TableMemory, check_security, walk,
};

/// Entries in a translation table (4 KiB granule).
pub const ENTRIES: usize = 512;
/// Bytes of a level-3 page.
pub const PAGE: u64 = 1 << 12;
/// Bytes of a level-2 block.
pub const BLOCK: u64 = 2 << 20;
/// Bytes a level-1 entry covers.
pub const GIB: u64 = 1 << 30;
/// The input address space the tables cover (T0SZ = 32): 4 GiB.
pub const SPACE: u64 = 4 * GIB;

/// One translation table, 4 KiB aligned as TTBRn, VTTBR and table
/// descriptors require.
#[repr(C, align(4096))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table(pub [u64; ENTRIES]);

impl Table {
    /// No mapping.
    pub const EMPTY: Self = Self([0; ENTRIES]);
}
