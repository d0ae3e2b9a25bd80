//! Tandem's secure-world RTOS on QEMU virt, without its applications. It
//! runs first on every core it owns: tasks and handlers run at S-EL1 (or
//! S-EL0) under the scheduler of `tandem-rtos-kernel`, and whenever a core
//! has nothing to run its idle loop yields the core to Linux through the
//! monitor (SafeG's scheme).
//!
//! What runs is an image crate's business: it lists its applications in one
//! [`Table`] (`tandem_rtos_kernel::app`) and hands it over with
//! [`image!`]. This crate reads the table and never names an application;
//! applications use it through [`syscall`], [`hw`], [`stats`], [`status`],
//! [`with_kernel`] and [`log!`].
//!
//! Modules import each other in one direction only (lint checks it:
//! `scripts/check-module-cycles.py`): `entry` (the assembly) calls `start`
//! and `exceptions`, which call `sched`, which calls `protect`, `stats`,
//! `syscall` and `hw`; `table` and `frame` sit below everything.
#![no_std]

pub mod console;
mod entry;
mod exceptions;
mod frame;
pub mod hw;
mod protect;
mod sched;
mod start;
pub mod stats;
pub mod status;
pub mod syscall;
#[doc(hidden)]
pub mod table;

pub use hw::core_index;
pub use sched::with_kernel;
pub use tandem_rtos_kernel::app::Table;

/// Makes `$table` (a `static` [`Table`]) the RTOS's applications: checks
/// it at build time and defines the function through which the firmware
/// reads it. Once, in the image crate.
#[macro_export]
macro_rules! image {
    ($table:path) => {
        const _: () = $crate::table::check(&$table);

        /// The applications table, for the firmware (`tandem_rtos_firmware::image!`).
        #[unsafe(no_mangle)]
        fn tandem_rtos_image() -> &'static $crate::table::Image {
            static IMAGE: $crate::table::Image = $crate::table::Image::new(&$table);
            &IMAGE
        }
    };
}
