//! The application table's types: what an application registers (tasks,
//! cyclic handlers, interrupts, services, parameters), the table that lays
//! the applications end to end, and the look-ups and cyclic releases that
//! follow from that numbering.

use super::start::StartFn;
use crate::config::{CyclicConfig, DataQueueConfig, FlagConfig, SemaphoreConfig, TaskConfig};
use crate::{CyclicId, DataQueueId, FlagId, Kernel, MAX_TASKS, SemaphoreId, TaskId, Ticks};

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
    pub(super) tasks: u8,
    pub(super) cyclics: u8,
    pub(super) semaphores: u8,
    pub(super) flags: u8,
    pub(super) dataqueues: u8,
}

impl AppIds {
    /// Where the first application's objects start: at 0 of each kind.
    pub(super) const FIRST: AppIds = AppIds {
        tasks: 0,
        cyclics: 0,
        semaphores: 0,
        flags: 0,
        dataqueues: 0,
    };

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
pub struct TaskIdentity {
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
    Kernel(fn(TaskIdentity)),
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
    ///
    /// [`Start::set_user_args`]: super::Start::set_user_args
    pub entry: extern "C" fn(u64, u64, u64, u64) -> !,
    /// Its application's hooks on its system calls and faults, if any.
    pub hooks: Option<&'static UserTaskHooks>,
}

/// An application's hooks on its S-EL0 tasks: it watches their system
/// calls (a measurement, a quota) and their faults. Called under the
/// kernel lock.
#[derive(Clone, Copy, Debug)]
pub struct UserTaskHooks {
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
    /// ([`NestedKernelInterrupts`]): it must not take a lock they take
    /// (none but the console's, which is held with interrupts masked);
    /// `false`: nobody needs notifying this time.
    ///
    /// [`NestedKernelInterrupts`]: super::NestedKernelInterrupts
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
    ///
    /// [`NAME_LEN`]: tandem_abi::workload::NAME_LEN
    pub name: &'static str,
    /// Smallest value accepted.
    pub min: u32,
    /// Largest value accepted.
    pub max: u32,
    /// Its value when the blob does not give one.
    pub default: u32,
}

/// One application: everything it registers.
#[derive(Clone, Copy, Debug)]
pub struct App {
    /// Its name: in logs, and in the workload blob (at most [`NAME_LEN`]
    /// ASCII characters, unique in the table).
    ///
    /// [`NAME_LEN`]: tandem_abi::workload::NAME_LEN
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

/// The applications, end to end.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    /// In the order their objects are numbered and their start steps run.
    pub apps: &'static [App],
}

impl Table {
    /// Where application `app`'s objects start.
    pub const fn ids(&self, app: usize) -> AppIds {
        let mut ids = AppIds::FIRST;
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

    /// Task `t`: its application, its entry in it, and what its body is
    /// given.
    pub fn task(&self, t: TaskId) -> Option<(&'static App, &'static Task, TaskIdentity)> {
        let mut ids = AppIds::default();
        for app in self.apps {
            let index = t.0.checked_sub(ids.tasks)?;
            if let Some(task) = app.tasks.get(index as usize) {
                return Some((app, task, TaskIdentity { id: t, index, ids }));
            }
            ids = self.next(ids, app);
        }
        None
    }

    pub(super) fn next(&self, ids: AppIds, app: &App) -> AppIds {
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
}
