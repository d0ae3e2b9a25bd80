//! Tandem's EL3 monitor logic, kept free of hardware access so it is unit-tested
//! on the host: SMC function-ID decoding, the service table dispatched by owner
//! range, the PSCI per-core state machine, and stolen-time accounting. `monitor/firmware` is the thin
//! hardware layer around it.
#![no_std]

pub mod psci;
pub mod services;
pub mod smc;
pub mod steal;
