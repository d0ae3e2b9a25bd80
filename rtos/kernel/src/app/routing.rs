//! Interrupts to their owners: which task an application's interrupt
//! notifies on a core (looked up in the table, or in one step in the
//! [`Routes`] a firmware lays out at build time), the notification bits
//! delivered as wakeups, and the kernel interrupts a top half defers.

use super::table::{AppIds, Interrupt, MAX_SHARERS, Owner, Table};
use crate::{Kernel, TaskId};

/// An interrupt's owner on one core, numbered system-wide, as the table
/// says.
#[derive(Clone, Copy, Debug)]
pub struct OwnerOnCore {
    /// The task to notify (`None`: a per-core owner with no task here).
    pub owner: Option<TaskId>,
    /// The owner application's top half.
    pub top: Option<fn(usize) -> bool>,
}

impl OwnerOnCore {
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

    fn on_core(&self, core: usize) -> OwnerOnCore {
        let owner = match self.owner {
            Owner::Task(t) => Some(TaskId(t)),
            Owner::PerCore { first, count } => {
                (core < count as usize).then(|| TaskId(first + core as u8))
            }
        };
        OwnerOnCore {
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
pub struct OwnersOnCore([Option<OwnerOnCore>; MAX_SHARERS]);

impl OwnersOnCore {
    /// Whether any application owns it.
    pub fn is_owned(&self) -> bool {
        self.0[0].is_some()
    }

    /// The owners.
    pub fn iter(&self) -> impl Iterator<Item = OwnerOnCore> + '_ {
        self.0.iter().flatten().copied()
    }
}

impl Routes {
    /// Who private interrupt `intid` notifies first on `core`, as
    /// [`Table::interrupt`] says, in one step; `None` if no application
    /// owns it (or it is not private).
    pub fn first_owner(&self, intid: u32, core: usize) -> Option<OwnerOnCore> {
        Some(self.0.get(intid as usize)?[0].as_ref()?.on_core(core))
    }

    /// Every owner of private interrupt `intid` on `core`, as
    /// [`Table::interrupt_owners`] says, in one step.
    pub fn owners(&self, intid: u32, core: usize) -> OwnersOnCore {
        let mut out = [None; MAX_SHARERS];
        if let Some(slots) = self.0.get(intid as usize) {
            for (o, r) in out.iter_mut().zip(slots) {
                *o = r.as_ref().map(|r| r.on_core(core));
            }
        }
        OwnersOnCore(out)
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
pub struct NestedKernelInterrupts(u8);

impl NestedKernelInterrupts {
    const TOP_HALF: u8 = 1;
    const TIMER: u8 = 2;
    const RESCHEDULE: u8 = 4;

    /// Nothing nested: no top half runs.
    pub const NONE: NestedKernelInterrupts = NestedKernelInterrupts(0);
    /// A top half runs, and no kernel interrupt came yet.
    pub const TOP_HALF_RUNS: NestedKernelInterrupts = NestedKernelInterrupts(Self::TOP_HALF);
    /// The bit a nested timer interrupt sets.
    pub const TIMER_TAKEN: NestedKernelInterrupts = NestedKernelInterrupts(Self::TIMER);
    /// The bit a nested reschedule SGI sets.
    pub const RESCHEDULE_TAKEN: NestedKernelInterrupts = NestedKernelInterrupts(Self::RESCHEDULE);

    /// As kept in the firmware's atomic.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// From the firmware's atomic.
    pub const fn from_bits(bits: u8) -> NestedKernelInterrupts {
        NestedKernelInterrupts(bits)
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

impl Table {
    /// Who interrupt `intid` notifies on `core` first (its only owner,
    /// unless it is shared); `None` if no application owns it.
    pub fn interrupt(&self, intid: u32, core: usize) -> Option<OwnerOnCore> {
        let mut ids = AppIds::default();
        for app in self.apps {
            if let Some(irq) = app.interrupts.iter().find(|i| i.intid == intid) {
                return Some(Route::new(irq, ids).on_core(core));
            }
            ids = self.next(ids, app);
        }
        None
    }

    /// Every private interrupt's owner, by INTID, for an interrupt path
    /// that looks it up in one step ([`Routes::first_owner`]). A `const
    /// fn`, so a firmware can lay it out at build time.
    pub const fn routes(&self) -> Routes {
        let mut routes = [[None; MAX_SHARERS]; PRIVATE_INTIDS];
        let mut ids = AppIds::FIRST;
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
    pub fn interrupt_owners(&self, intid: u32, core: usize) -> OwnersOnCore {
        let mut out = [None; MAX_SHARERS];
        let mut n = 0;
        let mut ids = AppIds::default();
        for app in self.apps {
            if let Some(irq) = app.interrupts.iter().find(|i| i.intid == intid)
                && n < MAX_SHARERS
            {
                out[n] = Some(Route::new(irq, ids).on_core(core));
                n += 1;
            }
            ids = self.next(ids, app);
        }
        OwnersOnCore(out)
    }
}
