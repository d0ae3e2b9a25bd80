//! Applications as data: the one table through which workloads register
//! their tasks, cyclic handlers, synchronisation objects, interrupts and
//! parameters, and the parts of running them that follow from the table
//! alone. Like Hubris's task table: the firmware reads it, and never names
//! an application.
//!
//! - Each [`App`] numbers its own objects from 0; the [`Table`] lays the
//!   applications end to end, so an object's system-wide ID is its
//!   application's base ([`AppIds`]) plus its own index. Nobody numbers
//!   tasks by hand.
//! - An interrupt an application owns does not run the application: it sets
//!   a notification bit on the owning task ([`Notifications`]), and the
//!   firmware delivers the bits as wakeups under the kernel lock. An
//!   application may give an interrupt a `top` half that runs first, at
//!   interrupt level without the lock (the kernel's own interrupts may
//!   preempt it: [`NestedKernelInterrupts`]), and says whether the owner
//!   needs waking (the RPC server answers short calls there).
//! - A cyclic handler activates its task; an application may give it a
//!   `before` step that runs first, under the lock (the periodic task picks
//!   its core there).
//! - At boot each application's `start` step runs once with its parameters
//!   from the workload blob ([`tandem_abi::workload`]), checked against
//!   the [`Param`]s it declares.
//!
//! [`Table::check`] is a `const fn`: a firmware asserts it, so a table with
//! an error does not build.
//!
//! By concern: `table` holds what an application registers and the table's
//! numbering, `check` the build-time validation, `flatten` the kernel's
//! configuration from the table, `routing` interrupts to their owners, and
//! `start` the boot-time start step.

mod check;
mod flatten;
mod routing;
mod start;
mod table;

pub use check::TableError;
pub use flatten::KernelObjects;
pub use routing::{
    NestedKernelInterrupts, Notifications, OwnerOnCore, OwnersOnCore, PRIVATE_INTIDS, Routes,
};
pub use start::{Platform, Protection, Refusal, Start, StartError, StartFn, Started};
pub use table::{
    App, AppIds, Cyclic, Entry, Interrupt, MAX_APPS, MAX_PARAMS, MAX_SERVICES, MAX_SHARERS,
    MAX_USER_TASKS, Owner, Param, SERVICE_NAME_LEN, Service, Table, Task, TaskIdentity, User,
    UserTaskHooks,
};

#[cfg(test)]
mod tests;
