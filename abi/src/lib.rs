//! The Tandem ABI: SMC function IDs, return codes and the shared-memory layout
//! that the monitor, the RTOS and Linux agree on. One source; the C header for
//! Linux is generated from it (`tandem-abi-header`).
#![no_std]

pub mod boot;
pub mod image;
pub mod rpc;
pub mod shm;
pub mod smc;

/// A named constant exported to the generated C header.
#[derive(Clone, Copy, Debug)]
pub struct CConstant {
    /// Name without the `TANDEM_` prefix.
    pub name: &'static str,
    /// Value; negative values are printed as such.
    pub value: i64,
}

/// Every constant the C side needs, in header order.
pub fn c_constants() -> impl Iterator<Item = CConstant> {
    smc::C_CONSTANTS
        .iter()
        .chain(shm::C_CONSTANTS.iter())
        .chain(rpc::C_CONSTANTS.iter())
        .copied()
}
