//! The applications table the image crate hands over with
//! [`crate::image!`], and its build-time check for this firmware.

use crate::hw;
use tandem_board::BOARD;
use tandem_rtos_kernel::app::{KernelObjects, Routes, Table};

/// What the image crate hands over: its table, and, laid out at build
/// time, the table's objects as the kernel takes them and its interrupts'
/// owners by INTID.
pub struct Image {
    table: &'static Table,
    kernel_objects: KernelObjects,
    routes: Routes,
}

impl Image {
    /// The image of `table` (a `const fn`: [`crate::image!`] builds it into
    /// a static).
    pub const fn new(table: &'static Table) -> Image {
        Image {
            table,
            kernel_objects: table.kernel_objects(),
            routes: table.routes(),
        }
    }
}

/// The interrupts the firmware keeps for itself: no application may own
/// them.
pub const RESERVED_INTIDS: [u32; 2] = [hw::TIMER.raw_value(), hw::RESCHEDULE.raw_value()];

/// Checks `table` for this firmware: what the kernel checks, and interrupts
/// the firmware can give an owner on every core (SGIs and PPIs). A `const
/// fn` for [`crate::image!`]: a bad table does not build, and the message
/// says what kind of fault it is (`Table::check`'s error, which the host
/// tests of `tandem_rtos_kernel::app` show, names the object).
pub const fn check(table: &Table) {
    if table.check(BOARD.max_cores, &RESERVED_INTIDS).is_err() {
        panic!(
            "the applications table is invalid: tandem_rtos_kernel::app::Table::check names the fault"
        );
    }
    let mut a = 0;
    while a < table.apps.len() {
        let irqs = table.apps[a].interrupts;
        let mut i = 0;
        while i < irqs.len() {
            if irqs[i].intid >= 32 {
                panic!("an application owns an SPI: the firmware routes only SGIs and PPIs");
            }
            i += 1;
        }
        a += 1;
    }
}

unsafe extern "Rust" {
    /// Defined by [`crate::image!`] in the image crate.
    safe fn tandem_rtos_image() -> &'static Image;
}

/// The applications table.
pub(crate) fn apps() -> &'static Table {
    tandem_rtos_image().table
}

/// The table's objects, as the kernel takes them.
pub(crate) fn kernel_objects() -> &'static KernelObjects {
    &tandem_rtos_image().kernel_objects
}

/// The owners of the private interrupts, by INTID.
pub(crate) fn routes() -> &'static Routes {
    &tandem_rtos_image().routes
}
