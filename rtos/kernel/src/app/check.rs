//! The table's validation at build time: [`Table::check`] is a `const fn`
//! a firmware asserts, so a table the kernel or the firmware could not run
//! does not build; [`TableError`] names the object at fault.

use super::flatten::{NO_CYCLIC, NO_TASK};
use super::table::{
    App, Entry, MAX_APPS, MAX_PARAMS, MAX_SERVICES, MAX_SHARERS, MAX_USER_TASKS, Owner,
    SERVICE_NAME_LEN, Table,
};
use crate::config::{Config, ConfigError};
use crate::{MAX_CYCLICS, MAX_DATAQUEUES, MAX_FLAGS, MAX_SEMAPHORES, MAX_TASKS};
use core::fmt;
use tandem_abi::workload::NAME_LEN;

/// What is wrong with a table. Objects are named by application and by
/// their index within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// More applications than [`MAX_APPS`].
    TooManyApps,
    /// More objects of one kind than the kernel holds.
    TooMany {
        /// "tasks", "cyclic handlers", "semaphores", "event flags", "data
        /// queues" or "S-EL0 tasks".
        what: &'static str,
        /// How many the kernel holds.
        limit: usize,
    },
    /// An application's name is empty, longer than [`NAME_LEN`] or not
    /// printable ASCII.
    AppName {
        /// Index of the application in the table.
        app: usize,
    },
    /// Two applications have the same name.
    SameName {
        /// The name.
        app: &'static str,
    },
    /// An object the kernel would refuse (its index is the application's).
    Object {
        /// The application.
        app: &'static str,
        /// What the kernel says, with the application's index.
        error: ConfigError,
    },
    /// A cyclic handler activates a task its application does not have.
    CyclicTask {
        /// The application.
        app: &'static str,
        /// Index of the cyclic handler.
        cyclic: usize,
    },
    /// An interrupt's owner is not a task of its application (or a
    /// per-core owner covers no core).
    InterruptOwner {
        /// The application.
        app: &'static str,
        /// Index of the interrupt in the application.
        interrupt: usize,
    },
    /// An interrupt the kernel keeps for itself.
    InterruptReserved {
        /// The application.
        app: &'static str,
        /// The INTID.
        intid: u32,
    },
    /// Two owners for one interrupt.
    InterruptShared {
        /// The INTID.
        intid: u32,
        /// The application that claims it first.
        first: &'static str,
        /// The one that claims it again.
        second: &'static str,
    },
    /// More than [`MAX_SHARERS`] owners of one shared interrupt, or a
    /// shared claim without a top half.
    InterruptSharers {
        /// The INTID.
        intid: u32,
        /// The application whose claim is one too many, or has no top half.
        app: &'static str,
    },
    /// A service whose name is empty, longer than [`SERVICE_NAME_LEN`], not
    /// printable ASCII or another service's, or more than [`MAX_SERVICES`].
    Service {
        /// The application.
        app: &'static str,
        /// Index of the service in the application.
        service: usize,
    },
    /// A parameter whose name is empty, too long, not printable ASCII or
    /// repeated, or whose default is out of its range.
    Param {
        /// The application.
        app: &'static str,
        /// Index of the parameter.
        param: usize,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TableError::TooManyApps => write!(f, "more than {MAX_APPS} applications"),
            TableError::TooMany { what, limit } => {
                write!(f, "the applications have more than {limit} {what} together")
            }
            TableError::AppName { app } => write!(
                f,
                "application {app}: its name must be 1..={NAME_LEN} printable ASCII characters"
            ),
            TableError::SameName { app } => write!(f, "two applications are called '{app}'"),
            TableError::Object { app, error } => write!(f, "application '{app}': {error}"),
            TableError::CyclicTask { app, cyclic } => write!(
                f,
                "application '{app}': cyclic handler {cyclic} activates a task it does not have"
            ),
            TableError::InterruptOwner { app, interrupt } => write!(
                f,
                "application '{app}': interrupt {interrupt} is owned by a task it does not have"
            ),
            TableError::InterruptReserved { app, intid } => write!(
                f,
                "application '{app}': INTID {intid} is the kernel's own (timer or reschedule)"
            ),
            TableError::InterruptShared {
                intid,
                first,
                second,
            } => write!(
                f,
                "INTID {intid} is claimed by '{first}' and again by '{second}': an interrupt has one owner unless every claim says it is shared"
            ),
            TableError::InterruptSharers { intid, app } => write!(
                f,
                "application '{app}': INTID {intid} is shared by more than {MAX_SHARERS} applications, or its claim has no top half"
            ),
            TableError::Service { app, service } => write!(
                f,
                "application '{app}': service {service} needs a unique name of 1..={SERVICE_NAME_LEN} printable ASCII characters (at most {MAX_SERVICES} services)"
            ),
            TableError::Param { app, param } => write!(
                f,
                "application '{app}': parameter {param} needs a unique name of 1..={NAME_LEN} \
                 printable ASCII characters and min <= default <= max"
            ),
        }
    }
}

/// Whether `s` is a name the blob can carry.
const fn name_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > NAME_LEN {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_graphic() {
            return false;
        }
        i += 1;
    }
    true
}

pub(super) const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Table {
    /// Checks everything the kernel and the firmware rely on, for a kernel
    /// scheduling `cores` cores whose own interrupts are `reserved`.
    pub const fn check(&self, cores: usize, reserved: &[u32]) -> Result<(), TableError> {
        if self.apps.len() > MAX_APPS {
            return Err(TableError::TooManyApps);
        }
        let (mut tasks, mut cyclics, mut sems, mut flags, mut dtqs, mut users) = (0, 0, 0, 0, 0, 0);
        let mut a = 0;
        while a < self.apps.len() {
            let app = &self.apps[a];
            tasks += app.tasks.len();
            cyclics += app.cyclics.len();
            sems += app.semaphores.len();
            flags += app.flags.len();
            dtqs += app.dataqueues.len();
            let mut t = 0;
            while t < app.tasks.len() {
                if let Entry::User(_) = app.tasks[t].entry {
                    users += 1;
                }
                t += 1;
            }
            a += 1;
        }
        let limits = [
            (tasks, MAX_TASKS, "tasks"),
            (cyclics, MAX_CYCLICS, "cyclic handlers"),
            (sems, MAX_SEMAPHORES, "semaphores"),
            (flags, MAX_FLAGS, "event flags"),
            (dtqs, MAX_DATAQUEUES, "data queues"),
            (users, MAX_USER_TASKS, "S-EL0 tasks"),
        ];
        let mut l = 0;
        while l < limits.len() {
            let (n, limit, what) = limits[l];
            if n > limit {
                return Err(TableError::TooMany { what, limit });
            }
            l += 1;
        }
        a = 0;
        while a < self.apps.len() {
            if let Err(e) = self.check_app(a, cores, reserved) {
                return Err(e);
            }
            a += 1;
        }
        Ok(())
    }

    /// Application `a`'s own checks (the totals are checked already).
    const fn check_app(&self, a: usize, cores: usize, reserved: &[u32]) -> Result<(), TableError> {
        let app = &self.apps[a];
        if !name_ok(app.name) {
            return Err(TableError::AppName { app: a });
        }
        let mut b = 0;
        while b < a {
            if same(self.apps[b].name, app.name) {
                return Err(TableError::SameName { app: app.name });
            }
            b += 1;
        }
        if let Err(error) = Self::check_objects(app, cores) {
            return Err(TableError::Object {
                app: app.name,
                error,
            });
        }
        let mut c = 0;
        while c < app.cyclics.len() {
            if app.cyclics[c].task as usize >= app.tasks.len() {
                return Err(TableError::CyclicTask {
                    app: app.name,
                    cyclic: c,
                });
            }
            c += 1;
        }
        let mut i = 0;
        while i < app.interrupts.len() {
            let irq = &app.interrupts[i];
            let owner_ok = match irq.owner {
                Owner::Task(t) => (t as usize) < app.tasks.len(),
                Owner::PerCore { first, count } => {
                    count > 0 && first as usize + count as usize <= app.tasks.len()
                }
            };
            if !owner_ok {
                return Err(TableError::InterruptOwner {
                    app: app.name,
                    interrupt: i,
                });
            }
            let mut r = 0;
            while r < reserved.len() {
                if reserved[r] == irq.intid {
                    return Err(TableError::InterruptReserved {
                        app: app.name,
                        intid: irq.intid,
                    });
                }
                r += 1;
            }
            if irq.shared && irq.top.is_none() {
                return Err(TableError::InterruptSharers {
                    intid: irq.intid,
                    app: app.name,
                });
            }
            // Every earlier claim: in earlier applications, and earlier
            // in this one. Claims in other applications that all say
            // shared may stand side by side, up to MAX_SHARERS.
            let mut claims = 1;
            let mut b = 0;
            while b <= a {
                let other = &self.apps[b];
                let end = if b == a { i } else { other.interrupts.len() };
                let mut j = 0;
                while j < end {
                    let earlier = &other.interrupts[j];
                    if earlier.intid == irq.intid {
                        if b == a || !earlier.shared || !irq.shared {
                            return Err(TableError::InterruptShared {
                                intid: irq.intid,
                                first: other.name,
                                second: app.name,
                            });
                        }
                        claims += 1;
                    }
                    j += 1;
                }
                b += 1;
            }
            if claims > MAX_SHARERS {
                return Err(TableError::InterruptSharers {
                    intid: irq.intid,
                    app: app.name,
                });
            }
            i += 1;
        }
        let mut v = 0;
        while v < app.services.len() {
            if !self.service_ok(a, v) {
                return Err(TableError::Service {
                    app: app.name,
                    service: v,
                });
            }
            v += 1;
        }
        if app.params.len() > MAX_PARAMS {
            return Err(TableError::Param {
                app: app.name,
                param: MAX_PARAMS,
            });
        }
        let mut p = 0;
        while p < app.params.len() {
            let param = &app.params[p];
            let mut ok =
                name_ok(param.name) && param.min <= param.default && param.default <= param.max;
            let mut q = 0;
            while q < p {
                ok = ok && !same(app.params[q].name, param.name);
                q += 1;
            }
            if !ok {
                return Err(TableError::Param {
                    app: app.name,
                    param: p,
                });
            }
            p += 1;
        }
        Ok(())
    }

    /// The kernel's checks of one application's objects, on its own
    /// numbering.
    const fn check_objects(app: &App, cores: usize) -> Result<(), ConfigError> {
        let mut tasks = [NO_TASK; MAX_TASKS];
        let mut cyclics = [NO_CYCLIC; MAX_CYCLICS];
        let mut i = 0;
        while i < app.tasks.len() {
            tasks[i] = app.tasks[i].config;
            i += 1;
        }
        i = 0;
        while i < app.cyclics.len() {
            cyclics[i] = app.cyclics[i].config;
            i += 1;
        }
        let (tasks, _) = tasks.split_at(app.tasks.len());
        let (cyclics, _) = cyclics.split_at(app.cyclics.len());
        Config {
            cores,
            tasks,
            cyclics,
            semaphores: app.semaphores,
            flags: app.flags,
            dataqueues: app.dataqueues,
        }
        .check()
    }

    /// Whether service `v` of application `a` has a good name, no earlier
    /// service has it, and it is within [`MAX_SERVICES`].
    const fn service_ok(&self, a: usize, v: usize) -> bool {
        let name = self.apps[a].services[v].name.as_bytes();
        if name.is_empty() || name.len() > SERVICE_NAME_LEN {
            return false;
        }
        let mut k = 0;
        while k < name.len() {
            if !name[k].is_ascii_graphic() {
                return false;
            }
            k += 1;
        }
        let mut before = 0;
        let mut b = 0;
        while b <= a {
            let other = self.apps[b].services;
            let end = if b == a { v } else { other.len() };
            let mut j = 0;
            while j < end {
                if same(other[j].name, self.apps[a].services[v].name) {
                    return false;
                }
                j += 1;
            }
            before += end;
            b += 1;
        }
        before < MAX_SERVICES
    }
}
