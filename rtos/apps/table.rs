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
mod heartbeat;
mod periodic;
mod rpc_server;
mod rpmsg;

use tandem_rtos_firmware::Table;

/// The applications, in the order their objects are numbered and their
/// start steps run.
static APPS: Table = Table {
    apps: &[
        demo::APP,       // always: jobs, interrupt-to-task, hand-off, status
        periodic::APP,   // when selected: paper 000's dummy task
        rpc_server::APP, // on the RPC cores: paper 002's server side
        ctxsw::APP,      // when selected: paper 004's hand-off at S-EL0
        heartbeat::APP,  // when selected: the example of docs/rtos.md
        rpmsg::APP,      // on the lowest RPC core: RPMsg with Linux, the services
    ],
};

tandem_rtos_firmware::image!(APPS);
