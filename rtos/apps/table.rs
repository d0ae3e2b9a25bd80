//! Tandem's RTOS image: the firmware (`tandem-rtos-firmware`) with the
//! applications of the papers' workloads. This table is the one place that
//! lists them; each lives in its own folder with the parameters it takes
//! from the workload blob (`<folder>/app.toml`, read by the harness too).
//! The firmware reads the table and never names an application.
//!
//! A new application: a folder with `mod.rs` (an `App`) and `app.toml`, a
//! `mod` line and an entry below. Its objects are numbered after those of
//! the applications before it.
#![no_std]
#![no_main]

mod ctxsw;
mod demo;
mod periodic;
mod rpc_server;

use tandem_rtos_firmware::Table;

/// The applications, in the order their objects are numbered and their
/// start steps run.
static APPS: Table = Table {
    apps: &[demo::APP, periodic::APP, rpc_server::APP, ctxsw::APP],
};

tandem_rtos_firmware::image!(APPS);
