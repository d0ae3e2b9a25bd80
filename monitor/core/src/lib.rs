//! Tandem's EL3 monitor logic, kept free of hardware access so it is unit-tested
//! on the host: SMC function-ID decoding, the service table dispatched by owner
//! range, the PSCI per-core state machine, Linux's stop and restart protocol
//! (`lifecycle`), the world-switch state machine of each core, stolen-time
//! accounting, the exception made for a refused access (`inject`), the rings
//! of log lines kept for later (`logring`), the small interface a board
//! implements (`platform`), the monitor's own address space
//! (`memory_map`), and a restart's steps: devices quiesced, then the image
//! copy's decisions and cache maintenance (`restart`). `monitor/firmware` is the thin hardware layer
//! around it.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod inject;
pub mod lifecycle;
pub mod logring;
pub mod memory_map;
pub mod platform;
pub mod psci;
pub mod restart;
pub mod services;
pub mod smc;
pub mod steal;
pub mod switch;
