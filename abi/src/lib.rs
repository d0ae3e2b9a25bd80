//! The Tandem ABI: SMC function IDs, return codes and the shared-memory layout
//! that the monitor, the RTOS and Linux agree on. One source; the C header for
//! Linux and the Python module for the harness are generated from it
//! (`tandem-abi-gen`, in `tools/abi-gen`).
#![no_std]

#[cfg(test)]
extern crate std;

pub mod boot;
mod exports;
pub mod image;
pub mod layout;
pub mod partition;
pub mod priority;
pub mod rpc;
pub mod rpmsg;
pub mod shm;
pub mod smc;
pub mod workload;

/// Most cores any part of Tandem describes: the boot configuration, the
/// shared region's per-core records, PSCI, the monitor's and the RTOS's
/// per-core state, the RTOS kernel (whose dispatch-request mask is a `u8`).
/// A board may have fewer (`boards/*.toml` `max_cores`), never more. The one
/// definition: everything else, in Rust, C and Python, is derived from it.
pub const MAX_CORES: usize = 8;

/// A named constant exported to the generated C header and Python module.
#[derive(Clone, Copy, Debug)]
pub struct CConstant {
    /// Name without the `TANDEM_` prefix.
    pub name: &'static str,
    /// Value; negative values are printed as such.
    pub value: i64,
}

pub use exports::c_constants;
