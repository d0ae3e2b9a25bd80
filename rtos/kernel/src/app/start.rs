//! The start step at boot: the workload blob's parameters checked against
//! what each application declares, then each application's `start` run
//! once under the kernel lock, and what they leave for the firmware.

use super::table::{App, AppIds, MAX_APPS, MAX_PARAMS, Table};
use crate::{Kernel, MAX_TASKS, Ticks};
use core::fmt;
use tandem_abi::workload::Entry as BlobEntry;

/// Why an application's start step refused its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The parameter at fault.
    pub param: &'static str,
    /// Its value.
    pub value: u64,
    /// What would have been accepted.
    pub want: &'static str,
}

/// An application's start step.
pub type StartFn = fn(&mut Start<'_>) -> Result<(), Refusal>;

/// What the platform tells the applications at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Platform {
    /// The cores running the RTOS (bit per core).
    pub cores: u64,
    /// The cores the monitor rings for Linux's RPC calls (boot
    /// configuration).
    pub rpc_cores: u8,
    /// Counter value at start.
    pub now: Ticks,
}

/// What an application asks of the memory protection at boot: S-EL0 tasks
/// in address spaces of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protection {
    /// Data pages each S-EL0 task gets after its stack page.
    pub pages: u32,
    /// One ASID for all, the TLB invalidated on every switch (else an ASID
    /// each).
    pub flush: bool,
}

/// What the applications' start steps left for the firmware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Started {
    /// Memory protection, if an application asked for it.
    pub protection: Option<Protection>,
    /// x2 and x3 of each S-EL0 task at its start, by task ID.
    pub user_args: [[u64; 2]; MAX_TASKS],
}

/// An application's start step's view of the system.
pub struct Start<'a> {
    /// The kernel, before any task has run.
    pub kernel: &'a mut Kernel,
    /// The application's objects.
    pub ids: AppIds,
    /// What the platform says.
    pub platform: Platform,
    app: &'static App,
    selected: bool,
    values: [u32; MAX_PARAMS],
    started: &'a mut Started,
}

impl Start<'_> {
    /// Whether the workload blob names this application.
    pub fn selected(&self) -> bool {
        self.selected
    }

    /// Parameter `name`: the blob's value (checked against its range) or
    /// its default.
    ///
    /// # Panics
    ///
    /// If the application does not declare `name`: a bug in it.
    pub fn param(&self, name: &str) -> u32 {
        match self.app.params.iter().position(|p| p.name == name) {
            Some(i) => self.values[i],
            None => panic!("application '{}' has no parameter '{name}'", self.app.name),
        }
    }

    /// Turns memory protection on for this boot.
    pub fn protect(&mut self, protection: Protection) {
        self.started.protection = Some(protection);
    }

    /// Sets x2 and x3 of the application's S-EL0 task `task` at its start.
    pub fn set_user_args(&mut self, task: u8, args: [u64; 2]) {
        let t = self.ids.task(task);
        self.started.user_args[t.0 as usize] = args;
    }
}

/// Why the applications did not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The workload blob names an application the table does not have.
    UnknownApp(BlobEntry),
    /// It names a parameter its application does not declare.
    UnknownParam(BlobEntry),
    /// It gives one parameter twice.
    Repeated(BlobEntry),
    /// A value outside the parameter's range.
    OutOfRange {
        /// The entry.
        entry: BlobEntry,
        /// Smallest accepted.
        min: u32,
        /// Largest accepted.
        max: u32,
    },
    /// An application's start step refused.
    Refused {
        /// The application.
        app: &'static str,
        /// Why.
        refusal: Refusal,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::UnknownApp(e) => write!(f, "no application '{}' in this RTOS", e.app()),
            StartError::UnknownParam(e) => {
                write!(
                    f,
                    "application '{}' has no parameter '{}'",
                    e.app(),
                    e.key()
                )
            }
            StartError::Repeated(e) => write!(f, "{}.{} given twice", e.app(), e.key()),
            StartError::OutOfRange { entry, min, max } => write!(
                f,
                "{}.{} = {}: must be {min}..={max}",
                entry.app(),
                entry.key(),
                entry.value
            ),
            StartError::Refused { app, refusal } => write!(
                f,
                "{app}.{} = {}: {}",
                refusal.param, refusal.value, refusal.want
            ),
        }
    }
}

impl Table {
    /// Checks the workload blob's entries against the parameters each
    /// application declares, then runs every application's start step in
    /// table order.
    pub fn start(
        &self,
        kernel: &mut Kernel,
        platform: Platform,
        blob: &[BlobEntry],
    ) -> Result<Started, StartError> {
        let mut values = [[0u32; MAX_PARAMS]; MAX_APPS];
        let mut given = [0u32; MAX_APPS];
        let mut selected = 0u32;
        for (a, app) in self.apps.iter().enumerate() {
            for (p, param) in app.params.iter().enumerate() {
                values[a][p] = param.default;
            }
        }
        for entry in blob {
            let a = self
                .apps
                .iter()
                .position(|app| app.name == entry.app())
                .ok_or(StartError::UnknownApp(*entry))?;
            selected |= 1 << a;
            if entry.key().is_empty() {
                continue;
            }
            let app = &self.apps[a];
            let p = app
                .params
                .iter()
                .position(|param| param.name == entry.key())
                .ok_or(StartError::UnknownParam(*entry))?;
            if given[a] & (1 << p) != 0 {
                return Err(StartError::Repeated(*entry));
            }
            given[a] |= 1 << p;
            let param = &app.params[p];
            values[a][p] = u32::try_from(entry.value)
                .ok()
                .filter(|v| (param.min..=param.max).contains(v))
                .ok_or(StartError::OutOfRange {
                    entry: *entry,
                    min: param.min,
                    max: param.max,
                })?;
        }
        let mut started = Started {
            protection: None,
            user_args: [[0; 2]; MAX_TASKS],
        };
        let mut ids = AppIds::default();
        for (a, app) in self.apps.iter().enumerate() {
            if let Some(start) = app.start {
                let mut s = Start {
                    kernel: &mut *kernel,
                    ids,
                    platform,
                    app,
                    selected: selected & (1 << a) != 0,
                    values: values[a],
                    started: &mut started,
                };
                start(&mut s).map_err(|refusal| StartError::Refused {
                    app: app.name,
                    refusal,
                })?;
            }
            ids = self.next(ids, app);
        }
        Ok(started)
    }
}
