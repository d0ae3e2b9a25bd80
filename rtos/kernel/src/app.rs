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
//!   preempt it: [`Nested`]), and says whether the owner needs waking (the
//!   RPC server answers short calls there).
//! - A cyclic handler activates its task; an application may give it a
//!   `before` step that runs first, under the lock (the periodic task picks
//!   its core there).
//! - At boot each application's `start` step runs once with its parameters
//!   from the workload blob ([`tandem_abi::workload`]), checked against
//!   the [`Param`]s it declares.
//!
//! [`Table::check`] is a `const fn`: a firmware asserts it, so a table with
//! an error does not build.

use crate::config::{
    Config, ConfigError, CyclicConfig, DataQueueConfig, FlagConfig, SemaphoreConfig, TaskConfig,
};
use crate::{
    CyclicId, DataQueueId, FlagId, Kernel, MAX_CYCLICS, MAX_DATAQUEUES, MAX_FLAGS, MAX_SEMAPHORES,
    MAX_TASKS, SemaphoreId, TaskId, Ticks,
};
use core::fmt;
use tandem_abi::workload::{Entry as BlobEntry, NAME_LEN};

/// Most applications in a table.
pub const MAX_APPS: usize = 16;
/// Most parameters one application declares.
pub const MAX_PARAMS: usize = 16;
/// Most tasks at S-EL0 (each has its own address space and ASID).
pub const MAX_USER_TASKS: usize = 3;

const _: () = assert!(MAX_TASKS <= 32, "notifications are a u32 of task bits");
const _: () = assert!(MAX_APPS <= 32, "selections are a u32 of application bits");

/// Where one application's objects start among the system's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppIds {
    tasks: u8,
    cyclics: u8,
    semaphores: u8,
    flags: u8,
    dataqueues: u8,
}

impl AppIds {
    /// The application's task `i`.
    pub const fn task(self, i: u8) -> TaskId {
        TaskId(self.tasks + i)
    }

    /// The application's cyclic handler `i`.
    pub const fn cyclic(self, i: u8) -> CyclicId {
        CyclicId(self.cyclics + i)
    }

    /// The application's semaphore `i`.
    pub const fn semaphore(self, i: u8) -> SemaphoreId {
        SemaphoreId(self.semaphores + i)
    }

    /// The application's event flag `i`.
    pub const fn flag(self, i: u8) -> FlagId {
        FlagId(self.flags + i)
    }

    /// The application's data queue `i`.
    pub const fn dataqueue(self, i: u8) -> DataQueueId {
        DataQueueId(self.dataqueues + i)
    }
}

/// What a task's body is given: who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Me {
    /// Its system-wide ID.
    pub id: TaskId,
    /// Its index among its application's tasks.
    pub index: u8,
    /// Its application's objects.
    pub ids: AppIds,
}

/// What runs when a task is activated.
#[derive(Clone, Copy, Debug)]
pub enum Entry {
    /// At S-EL1, in the kernel's address space; returning ends the task
    /// (ext_tsk).
    Kernel(fn(Me)),
    /// At S-EL0, in an address space of its own.
    User(User),
}

/// A task at S-EL0.
#[derive(Clone, Copy, Debug)]
pub struct User {
    /// Its first instruction, in the code S-EL0 may run (`.text.user`).
    /// It starts with x0 = its first data page, x1 = how many data pages it
    /// has, x2 and x3 = what its application's start step set
    /// ([`Start::set_user_args`]); SP is the top of its stack page.
    pub entry: extern "C" fn(u64, u64, u64, u64) -> !,
    /// What its application watches of it, if anything.
    pub watch: Option<&'static Watch>,
}

/// What an application watches of its S-EL0 tasks: their system calls (a
/// measurement, a quota) and their faults. Called under the kernel lock.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    /// Before system call `number`: whether it may go ahead (else it fails
    /// with E_OBJ and is not made).
    pub allow: fn(number: u64) -> bool,
    /// System call `number` succeeded, at counter value `now`.
    pub done: fn(number: u64, now: Ticks),
    /// The task touched `far` (syndrome `esr`) and was stopped.
    pub fault: fn(task: TaskId, esr: u64, far: u64),
}

/// One task: its kernel configuration and its code.
#[derive(Clone, Copy, Debug)]
pub struct Task {
    /// Core, priority, autostart.
    pub config: TaskConfig,
    /// Its code.
    pub entry: Entry,
}

/// One cyclic handler: at each release it activates one of its
/// application's tasks.
#[derive(Clone, Copy, Debug)]
pub struct Cyclic {
    /// Core, period, phase, started at start.
    pub config: CyclicConfig,
    /// The application's task it activates.
    pub task: u8,
    /// Runs first, under the kernel lock, with the task's ID (to move it,
    /// or to time its dispatch).
    pub before: Option<fn(&mut Kernel, TaskId)>,
}

/// Who an interrupt notifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The application's task with this index, whatever core takes it.
    Task(u8),
    /// One task per core: core `c` (below `count`) notifies the
    /// application's task `first + c`; other cores notify nobody.
    PerCore {
        /// The task of core 0.
        first: u8,
        /// How many cores have one.
        count: u8,
    },
}

/// One interrupt an application owns.
#[derive(Clone, Copy, Debug)]
pub struct Interrupt {
    /// Its GIC INTID (an SGI or PPI is owned on every core).
    pub intid: u32,
    /// The task it notifies.
    pub owner: Owner,
    /// Runs first, at interrupt level without the kernel lock, on the core
    /// that took it, preemptible by the kernel's own interrupts only
    /// ([`Nested`]): it must not take a lock they take (none but the
    /// console's, which is held with interrupts masked); `false`: nobody
    /// needs notifying this time.
    pub top: Option<fn(core: usize) -> bool>,
    /// Other applications may own it too (at most [`MAX_SHARERS`], each
    /// saying so, each with a top half): every owner's top half runs when
    /// it comes, and each looks at its own state, as a shared interrupt
    /// line's handlers do (the RPC doorbell: the RPC server's channels and
    /// RPMsg's rings, both rung by Linux through the monitor).
    pub shared: bool,
}

/// Most applications that may share one interrupt.
pub const MAX_SHARERS: usize = 2;

/// A named message service an application offers the normal world
/// (announced and served over RPMsg by the application that carries it;
/// the table only lists them, in order).
#[derive(Clone, Copy, Debug)]
pub struct Service {
    /// Its name, as announced (1..=31 printable ASCII characters, unique
    /// in the table).
    pub name: &'static str,
    /// Answers `request` from the sender's address into `reply` (at most
    /// the carrier's largest payload): how many bytes, or `None` for no
    /// answer. Runs in the carrier's task: it may block, but briefly.
    pub serve: fn(src: u32, request: &[u8], reply: &mut [u8]) -> Option<usize>,
}

/// Most services in a table.
pub const MAX_SERVICES: usize = 16;
/// Longest service name (RPMsg's 32 bytes, NUL included).
pub const SERVICE_NAME_LEN: usize = 31;

/// One parameter an application takes from the workload blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name in the blob (at most [`NAME_LEN`] ASCII characters).
    pub name: &'static str,
    /// Smallest value accepted.
    pub min: u32,
    /// Largest value accepted.
    pub max: u32,
    /// Its value when the blob does not give one.
    pub default: u32,
}

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

/// One application: everything it registers.
#[derive(Clone, Copy, Debug)]
pub struct App {
    /// Its name: in logs, and in the workload blob (at most [`NAME_LEN`]
    /// ASCII characters, unique in the table).
    pub name: &'static str,
    /// Its tasks.
    pub tasks: &'static [Task],
    /// Its cyclic handlers.
    pub cyclics: &'static [Cyclic],
    /// Its semaphores.
    pub semaphores: &'static [SemaphoreConfig],
    /// Its event flags.
    pub flags: &'static [FlagConfig],
    /// Its data queues.
    pub dataqueues: &'static [DataQueueConfig],
    /// The interrupts it owns (each INTID has one owner system-wide).
    pub interrupts: &'static [Interrupt],
    /// The parameters it takes from the workload blob.
    pub params: &'static [Param],
    /// The message services it offers the normal world.
    pub services: &'static [Service],
    /// Runs once at boot, before any task, under the kernel lock.
    pub start: Option<StartFn>,
}

impl App {
    /// An application with nothing in it, to fill in with `..App::EMPTY`.
    pub const EMPTY: App = App {
        name: "",
        tasks: &[],
        cyclics: &[],
        semaphores: &[],
        flags: &[],
        dataqueues: &[],
        interrupts: &[],
        params: &[],
        services: &[],
        start: None,
    };
}

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

const fn same(a: &str, b: &str) -> bool {
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

const NO_TASK: TaskConfig = TaskConfig {
    name: "",
    core: 0,
    priority: 0,
    autostart: false,
};
const NO_CYCLIC: CyclicConfig = CyclicConfig {
    name: "",
    core: 0,
    period: 1,
    phase: 0,
    start: false,
};

/// Every application's objects in one list per kind, as the kernel takes
/// them ([`Flat::config`]).
#[derive(Clone, Copy, Debug)]
pub struct Flat {
    tasks: [TaskConfig; MAX_TASKS],
    task_count: usize,
    cyclics: [CyclicConfig; MAX_CYCLICS],
    cyclic_count: usize,
    semaphores: [SemaphoreConfig; MAX_SEMAPHORES],
    semaphore_count: usize,
    flags: [FlagConfig; MAX_FLAGS],
    flag_count: usize,
    dataqueues: [DataQueueConfig; MAX_DATAQUEUES],
    dataqueue_count: usize,
}

impl Flat {
    /// The kernel configuration for `cores` cores.
    pub fn config(&self, cores: usize) -> Config<'_> {
        Config {
            cores,
            tasks: &self.tasks[..self.task_count],
            cyclics: &self.cyclics[..self.cyclic_count],
            semaphores: &self.semaphores[..self.semaphore_count],
            flags: &self.flags[..self.flag_count],
            dataqueues: &self.dataqueues[..self.dataqueue_count],
        }
    }
}

/// An interrupt's owner on one core, as the table says.
#[derive(Clone, Copy, Debug)]
pub struct Notice {
    /// The task to notify (`None`: a per-core owner with no task here).
    pub owner: Option<TaskId>,
    /// The owner application's top half.
    pub top: Option<fn(usize) -> bool>,
}

impl Notice {
    /// Runs the top half on `core`, then sets the owner's bit in `pending`
    /// unless the top half said nobody needs notifying. Returns whether a
    /// bit was set.
    pub fn take(self, core: usize, pending: &mut Notifications) -> bool {
        let wanted = match self.top {
            Some(top) => top(core),
            None => true,
        };
        match self.owner {
            Some(t) if wanted => {
                pending.0 |= 1 << t.0;
                true
            }
            _ => false,
        }
    }
}

/// Private interrupts (SGIs and PPIs, which every core has): the INTIDs
/// [`Routes`] covers.
pub const PRIVATE_INTIDS: usize = 32;

/// One owned interrupt, its owner numbered system-wide.
#[derive(Clone, Copy, Debug)]
struct Route {
    owner: Owner,
    top: Option<fn(usize) -> bool>,
}

impl Route {
    const fn new(irq: &Interrupt, ids: AppIds) -> Route {
        let owner = match irq.owner {
            Owner::Task(t) => Owner::Task(ids.tasks + t),
            Owner::PerCore { first, count } => Owner::PerCore {
                first: ids.tasks + first,
                count,
            },
        };
        Route {
            owner,
            top: irq.top,
        }
    }

    fn notice(&self, core: usize) -> Notice {
        let owner = match self.owner {
            Owner::Task(t) => Some(TaskId(t)),
            Owner::PerCore { first, count } => {
                (core < count as usize).then(|| TaskId(first + core as u8))
            }
        };
        Notice {
            owner,
            top: self.top,
        }
    }
}

/// The owners of the private interrupts, by INTID ([`Table::routes`]):
/// one, or up to [`MAX_SHARERS`] for a shared one.
#[derive(Clone, Copy, Debug)]
pub struct Routes([[Option<Route>; MAX_SHARERS]; PRIVATE_INTIDS]);

/// Every owner of one interrupt on one core, in table order.
#[derive(Clone, Copy, Debug)]
pub struct Notices([Option<Notice>; MAX_SHARERS]);

impl Notices {
    /// Whether any application owns it.
    pub fn is_owned(&self) -> bool {
        self.0[0].is_some()
    }

    /// The owners.
    pub fn iter(&self) -> impl Iterator<Item = Notice> + '_ {
        self.0.iter().flatten().copied()
    }
}

impl Routes {
    /// Who private interrupt `intid` notifies first on `core`, as
    /// [`Table::interrupt`] says, in one step; `None` if no application
    /// owns it (or it is not private).
    pub fn notice(&self, intid: u32, core: usize) -> Option<Notice> {
        Some(self.0.get(intid as usize)?[0].as_ref()?.notice(core))
    }

    /// Every owner of private interrupt `intid` on `core`, as
    /// [`Table::interrupt_owners`] says, in one step.
    pub fn notices(&self, intid: u32, core: usize) -> Notices {
        let mut out = [None; MAX_SHARERS];
        if let Some(slots) = self.0.get(intid as usize) {
            for (o, r) in out.iter_mut().zip(slots) {
                *o = r.as_ref().map(|r| r.notice(core));
            }
        }
        Notices(out)
    }
}

/// Tasks that interrupts have notified and that have not been woken yet,
/// a bit per task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Notifications(pub u32);

impl Notifications {
    /// Whether no task is owed a wakeup.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Wakes every notified task, in ID order. A notification to a task that
    /// is not sleeping is queued as one wakeup (and one already queued
    /// absorbs it), so the task looks again before it next sleeps; one to a
    /// Dormant task is dropped.
    pub fn deliver(self, k: &mut Kernel) {
        let mut bits = self.0;
        while bits != 0 {
            let t = bits.trailing_zeros() as u8;
            bits &= bits - 1;
            let _ = k.wakeup(TaskId(t));
        }
    }
}

/// The kernel's own interrupts (its timer, the reschedule SGI) taken on a
/// core while an application's top half ran there with them open: they
/// have the higher GIC priority, so they preempt a top half however long
/// Linux makes it (the RPC doorbell's), but the scheduler does not run
/// inside a top half. The nested handler only records them here; the
/// outer handler's one scheduling pass then does their work. One byte, so
/// that the firmware keeps a core's in an atomic its nested handler sets
/// bits of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nested(u8);

impl Nested {
    const TOP_HALF: u8 = 1;
    const TIMER: u8 = 2;
    const RESCHEDULE: u8 = 4;

    /// Nothing nested: no top half runs.
    pub const NONE: Nested = Nested(0);
    /// A top half runs, and no kernel interrupt came yet.
    pub const TOP_HALF_RUNS: Nested = Nested(Self::TOP_HALF);
    /// The bit a nested timer interrupt sets.
    pub const TIMER_TAKEN: Nested = Nested(Self::TIMER);
    /// The bit a nested reschedule SGI sets.
    pub const RESCHEDULE_TAKEN: Nested = Nested(Self::RESCHEDULE);

    /// As kept in the firmware's atomic.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// From the firmware's atomic.
    pub const fn from_bits(bits: u8) -> Nested {
        Nested(bits)
    }

    /// Whether an interrupt taken now is nested in a top half (and must
    /// leave the scheduler to the outer handler).
    pub const fn in_top_half(self) -> bool {
        self.0 & Self::TOP_HALF != 0
    }

    /// Whether the core's timer fired inside the top half: the outer pass
    /// must expire timeouts and release cyclic handlers.
    pub const fn timer(self) -> bool {
        self.0 & Self::TIMER != 0
    }

    /// Whether any kernel interrupt came: the outer pass must run the
    /// scheduler even if the top half answered everything.
    pub const fn kernel(self) -> bool {
        self.0 & (Self::TIMER | Self::RESCHEDULE) != 0
    }
}

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

/// The applications, end to end.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// In the order their objects are numbered and their start steps run.
    pub apps: &'static [App],
}

impl Table {
    /// Where application `app`'s objects start.
    pub const fn ids(&self, app: usize) -> AppIds {
        let mut ids = AppIds {
            tasks: 0,
            cyclics: 0,
            semaphores: 0,
            flags: 0,
            dataqueues: 0,
        };
        let mut i = 0;
        while i < app && i < self.apps.len() {
            let a = &self.apps[i];
            ids.tasks += a.tasks.len() as u8;
            ids.cyclics += a.cyclics.len() as u8;
            ids.semaphores += a.semaphores.len() as u8;
            ids.flags += a.flags.len() as u8;
            ids.dataqueues += a.dataqueues.len() as u8;
            i += 1;
        }
        ids
    }

    /// How many tasks all the applications have.
    pub const fn task_count(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < self.apps.len() {
            n += self.apps[i].tasks.len();
            i += 1;
        }
        n
    }

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

    /// Every object in one list per kind (the totals must fit: see
    /// [`Table::check`]).
    pub const fn flat(&self) -> Flat {
        let mut f = Flat {
            tasks: [NO_TASK; MAX_TASKS],
            task_count: 0,
            cyclics: [NO_CYCLIC; MAX_CYCLICS],
            cyclic_count: 0,
            semaphores: [SemaphoreConfig { initial: 0, max: 1 }; MAX_SEMAPHORES],
            semaphore_count: 0,
            flags: [FlagConfig { initial: 0 }; MAX_FLAGS],
            flag_count: 0,
            dataqueues: [DataQueueConfig { capacity: 1 }; MAX_DATAQUEUES],
            dataqueue_count: 0,
        };
        let mut a = 0;
        while a < self.apps.len() {
            let app = &self.apps[a];
            let mut i = 0;
            while i < app.tasks.len() {
                f.tasks[f.task_count] = app.tasks[i].config;
                f.task_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.cyclics.len() {
                f.cyclics[f.cyclic_count] = app.cyclics[i].config;
                f.cyclic_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.semaphores.len() {
                f.semaphores[f.semaphore_count] = app.semaphores[i];
                f.semaphore_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.flags.len() {
                f.flags[f.flag_count] = app.flags[i];
                f.flag_count += 1;
                i += 1;
            }
            i = 0;
            while i < app.dataqueues.len() {
                f.dataqueues[f.dataqueue_count] = app.dataqueues[i];
                f.dataqueue_count += 1;
                i += 1;
            }
            a += 1;
        }
        f
    }

    /// Task `t`: its application, its entry in it, and what its body is
    /// given.
    pub fn task(&self, t: TaskId) -> Option<(&'static App, &'static Task, Me)> {
        let mut ids = AppIds::default();
        for app in self.apps {
            let index = t.0.checked_sub(ids.tasks)?;
            if let Some(task) = app.tasks.get(index as usize) {
                return Some((app, task, Me { id: t, index, ids }));
            }
            ids = self.next(ids, app);
        }
        None
    }

    fn next(&self, ids: AppIds, app: &App) -> AppIds {
        AppIds {
            tasks: ids.tasks + app.tasks.len() as u8,
            cyclics: ids.cyclics + app.cyclics.len() as u8,
            semaphores: ids.semaphores + app.semaphores.len() as u8,
            flags: ids.flags + app.flags.len() as u8,
            dataqueues: ids.dataqueues + app.dataqueues.len() as u8,
        }
    }

    /// Cyclic handler `c` and the task it activates.
    pub fn cyclic(&self, c: CyclicId) -> Option<(&'static Cyclic, TaskId)> {
        let mut ids = AppIds::default();
        for app in self.apps {
            let index = c.0.checked_sub(ids.cyclics)?;
            if let Some(cyclic) = app.cyclics.get(index as usize) {
                return Some((cyclic, ids.task(cyclic.task)));
            }
            ids = self.next(ids, app);
        }
        None
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

    /// Every application's services, in table order: service `i` of
    /// this list is the table's service `i`.
    pub fn services(&self) -> impl Iterator<Item = &'static Service> + use<> {
        let apps: &'static [App] = self.apps;
        apps.iter().flat_map(|a| a.services.iter())
    }

    /// The table's service `i`.
    pub fn service(&self, i: usize) -> Option<&'static Service> {
        self.services().nth(i)
    }

    /// Who interrupt `intid` notifies on `core` first (its only owner,
    /// unless it is shared); `None` if no application owns it.
    pub fn interrupt(&self, intid: u32, core: usize) -> Option<Notice> {
        let mut ids = AppIds::default();
        for app in self.apps {
            if let Some(irq) = app.interrupts.iter().find(|i| i.intid == intid) {
                return Some(Route::new(irq, ids).notice(core));
            }
            ids = self.next(ids, app);
        }
        None
    }

    /// Every private interrupt's owner, by INTID, for an interrupt path
    /// that looks it up in one step ([`Routes::notice`]). A `const fn`, so
    /// a firmware can lay it out at build time.
    pub const fn routes(&self) -> Routes {
        let mut routes = [[None; MAX_SHARERS]; PRIVATE_INTIDS];
        let mut ids = AppIds {
            tasks: 0,
            cyclics: 0,
            semaphores: 0,
            flags: 0,
            dataqueues: 0,
        };
        let mut a = 0;
        while a < self.apps.len() {
            let app = &self.apps[a];
            let mut i = 0;
            while i < app.interrupts.len() {
                let irq = &app.interrupts[i];
                if (irq.intid as usize) < PRIVATE_INTIDS {
                    let slots = &mut routes[irq.intid as usize];
                    let mut k = 0;
                    while k < MAX_SHARERS && slots[k].is_some() {
                        k += 1;
                    }
                    if k < MAX_SHARERS {
                        slots[k] = Some(Route::new(irq, ids));
                    }
                }
                i += 1;
            }
            ids.tasks += app.tasks.len() as u8;
            a += 1;
        }
        Routes(routes)
    }

    /// Every owner of interrupt `intid` on `core`, in table order.
    pub fn interrupt_owners(&self, intid: u32, core: usize) -> Notices {
        let mut out = [None; MAX_SHARERS];
        let mut n = 0;
        let mut ids = AppIds::default();
        for app in self.apps {
            if let Some(irq) = app.interrupts.iter().find(|i| i.intid == intid)
                && n < MAX_SHARERS
            {
                out[n] = Some(Route::new(irq, ids).notice(core));
                n += 1;
            }
            ids = self.next(ids, app);
        }
        Notices(out)
    }

    /// Every INTID the applications own.
    pub fn intids(&self) -> impl Iterator<Item = u32> {
        self.apps
            .iter()
            .flat_map(|a| a.interrupts.iter().map(|i| i.intid))
    }

    /// Cyclic handler `c` was released: its `before` step, then its task is
    /// activated. An activation that finds the task still active is an
    /// overrun, which the kernel counts (and queues or refuses).
    pub fn release(&self, k: &mut Kernel, c: CyclicId) {
        let Some((cyclic, task)) = self.cyclic(c) else {
            return;
        };
        if let Some(before) = cyclic.before {
            before(k, task);
        }
        let _ = k.activate(task);
    }

    /// Deadline misses on `core`: of every cyclic handler that runs there,
    /// the releases its timer skipped plus the activations that found its
    /// task still active.
    pub fn misses(&self, k: &Kernel, core: u8) -> u64 {
        let mut total = 0;
        let mut ids = AppIds::default();
        for app in self.apps {
            for (i, cyclic) in app.cyclics.iter().enumerate() {
                let c = ids.cyclic(i as u8);
                if k.cyclic_core(c) != Ok(core) {
                    continue;
                }
                let overruns = k.stats(ids.task(cyclic.task)).map_or(0, |s| s.overruns);
                total += overruns + k.cyclic_misses(c).unwrap_or(0);
            }
            ids = self.next(ids, app);
        }
        total
    }

    /// The S-EL0 tasks, in table order: (slot, task ID, entry). A task's
    /// slot numbers its address space and ASID.
    pub fn user_tasks(&self) -> impl Iterator<Item = (usize, TaskId, User)> + '_ {
        (0..self.task_count())
            .filter_map(|i| {
                let t = TaskId(i as u8);
                match self.task(t)?.1.entry {
                    Entry::User(u) => Some((t, u)),
                    Entry::Kernel(_) => None,
                }
            })
            .enumerate()
            .map(|(slot, (t, u))| (slot, t, u))
    }

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

#[cfg(test)]
mod tests;
