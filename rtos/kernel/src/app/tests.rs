//! Tests of the applications table: numbering, checks with the offending
//! object named, interrupts to their owners' notification bits, cyclic
//! releases, parameters from the workload blob and start steps.

use super::*;
use crate::config::{ConfigError, CyclicConfig, SemaphoreConfig};
use crate::testkit::task;
use crate::{CyclicId, Kernel, MAX_TASKS, SemaphoreId, TaskId};
use crate::{TaskState, WaitResult};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::format;
use std::string::ToString;
use tandem_abi::workload::Entry as E;

const CORES: usize = 4;
/// INTIDs the firmware keeps (a timer PPI and a reschedule SGI).
const RESERVED: &[u32] = &[29, 8];
const SGI_A: u32 = 9;
const SGI_B: u32 = 10;

fn body(_: TaskIdentity) {}

extern "C" fn user_body(_: u64, _: u64, _: u64, _: u64) -> ! {
    unreachable!("never run on the host")
}

const fn kernel_task(name: &'static str, core: u8, priority: u8) -> Task {
    Task {
        config: task(name, core, priority),
        entry: Entry::Kernel(body),
    }
}

const CYCLIC: CyclicConfig = CyclicConfig {
    name: "tick",
    core: 1,
    period: 100,
    phase: 10,
    start: true,
};

/// The top half of `SERVER`'s interrupt: wakes the owner when told to.
static WAKE: AtomicBool = AtomicBool::new(true);
fn top(_core: usize) -> bool {
    WAKE.load(Ordering::Relaxed)
}

/// Counts the `before` steps of `CLOCKED`'s cyclic handler, and moves the
/// task to core 2.
static BEFORE: AtomicU32 = AtomicU32::new(0);
fn before(k: &mut Kernel, t: TaskId) {
    BEFORE.fetch_add(1, Ordering::Relaxed);
    k.migrate(t, 2).unwrap();
}

/// Two tasks, a cyclic handler releasing the second, an interrupt owned by
/// the first, a semaphore.
const FIRST: App = App {
    name: "first",
    tasks: &[kernel_task("a0", 0, 5), kernel_task("a1", 1, 4)],
    cyclics: &[Cyclic {
        config: CYCLIC,
        task: 1,
        before: None,
    }],
    semaphores: &[SemaphoreConfig { initial: 0, max: 1 }],
    interrupts: &[Interrupt {
        intid: SGI_A,
        owner: Owner::Task(0),
        top: None,
        shared: false,
    }],
    params: &[
        Param {
            name: "period_us",
            min: 100,
            max: 1000,
            default: 500,
        },
        Param {
            name: "mode",
            min: 0,
            max: 1,
            default: 0,
        },
    ],
    start: Some(start_first),
    ..App::EMPTY
};

/// One server task per core on cores 0..3 (the interrupt's per-core
/// owners), a cyclic handler with a `before` step, an S-EL0 task.
const SECOND: App = App {
    name: "second",
    tasks: &[
        kernel_task("s0", 0, 9),
        kernel_task("s1", 1, 9),
        kernel_task("s2", 2, 9),
        kernel_task("clocked", 0, 3),
        Task {
            config: task("user", 0, 12),
            entry: Entry::User(User {
                entry: user_body,
                hooks: None,
            }),
        },
    ],
    cyclics: &[Cyclic {
        config: CyclicConfig { core: 0, ..CYCLIC },
        task: 3,
        before: Some(before),
    }],
    semaphores: &[SemaphoreConfig { initial: 1, max: 1 }],
    interrupts: &[Interrupt {
        intid: SGI_B,
        owner: Owner::PerCore { first: 0, count: 3 },
        top: Some(top),
        shared: false,
    }],
    start: Some(start_second),
    ..App::EMPTY
};

const TABLE: Table = Table {
    apps: &[FIRST, SECOND],
};
const _: () = assert!(TABLE.check(CORES, RESERVED).is_ok());

/// What `start_first` saw.
static FIRST_SAW: AtomicU32 = AtomicU32::new(0);

fn start_first(s: &mut Start<'_>) -> Result<(), Refusal> {
    let period = s.param("period_us");
    FIRST_SAW.store(period | u32::from(s.selected()) << 31, Ordering::Relaxed);
    if s.param("mode") == 1 && period > 900 {
        return Err(Refusal {
            param: "period_us",
            value: period.into(),
            want: "at most 900 in mode 1",
        });
    }
    // Its own task 1, whatever its number system-wide.
    s.kernel.activate(s.ids.task(1)).unwrap();
    Ok(())
}

fn start_second(s: &mut Start<'_>) -> Result<(), Refusal> {
    if s.selected() {
        s.protect(Protection {
            pages: 2,
            flush: true,
        });
        s.set_user_args(4, [7, 8]);
    }
    Ok(())
}

fn kernel(table: &Table) -> Kernel {
    let objects = table.kernel_objects();
    Kernel::new(&objects.config(CORES), 0).expect("a checked table")
}

#[test]
fn objects_are_numbered_application_after_application() {
    assert_eq!(TABLE.task_count(), 7);
    let ids = TABLE.ids(1);
    assert_eq!(ids.task(0), TaskId(2));
    assert_eq!(ids.cyclic(0), CyclicId(1));
    assert_eq!(ids.semaphore(0), SemaphoreId(1));
    let (app, task, me) = TABLE.task(TaskId(5)).unwrap();
    assert_eq!((app.name, task.config.name), ("second", "clocked"));
    assert_eq!(
        me,
        TaskIdentity {
            id: TaskId(5),
            index: 3,
            ids
        }
    );
    assert!(TABLE.task(TaskId(7)).is_none());
    let (cyclic, t) = TABLE.cyclic(CyclicId(1)).unwrap();
    assert_eq!((cyclic.config.core, t), (0, TaskId(5)));
    assert!(TABLE.cyclic(CyclicId(2)).is_none());
    // The kernel's view: the same objects in the same order.
    let k = kernel(&TABLE);
    assert_eq!(k.task_core(TaskId(1)), Ok(1));
    assert_eq!(k.task_core(TaskId(4)), Ok(2));
    assert_eq!(k.cyclic_core(CyclicId(1)), Ok(0));
    let users: std::vec::Vec<_> = TABLE.user_tasks().map(|(s, t, _)| (s, t)).collect();
    assert_eq!(users, [(0, TaskId(6))]);
}

#[test]
fn an_interrupt_notifies_the_task_that_owns_it() {
    let mut k = kernel(&TABLE);
    // a0 (task 0) runs and sleeps.
    k.activate(TaskId(0)).unwrap();
    assert_eq!(k.dispatch(0), Some(TaskId(0)));
    k.sleep(TaskId(0), crate::Timeout::Forever, 0).unwrap();
    assert_eq!(k.dispatch(0), None);

    let mut pending = Notifications::default();
    let notice = TABLE.interrupt(SGI_A, 3).expect("owned by first");
    assert_eq!(notice.owner, Some(TaskId(0)), "the same owner on any core");
    assert!(notice.take(3, &mut pending));
    assert_eq!(pending, Notifications(1 << 0));
    pending.deliver(&mut k);
    assert_eq!(k.dispatch(0), Some(TaskId(0)));
    assert_eq!(k.take_wait_result(TaskId(0)), Ok(WaitResult::Ok));

    // Unowned interrupts are not the table's.
    assert!(TABLE.interrupt(29, 0).is_none());
    assert!(TABLE.interrupt(11, 0).is_none());
}

#[test]
fn routes_say_what_the_table_says_in_one_step() {
    const ROUTES: Routes = TABLE.routes();
    for intid in 0..PRIVATE_INTIDS as u32 + 3 {
        for core in 0..CORES {
            let a = TABLE
                .interrupt(intid, core)
                .map(|n| (n.owner, n.top.is_some()));
            let b = ROUTES
                .first_owner(intid, core)
                .map(|n| (n.owner, n.top.is_some()));
            assert_eq!(a, b, "INTID {intid} on core {core}");
        }
    }
    assert!(
        ROUTES
            .first_owner(SGI_B, 2)
            .is_some_and(|n| n.owner == Some(TaskId(4)))
    );
}

#[test]
fn a_per_core_interrupt_notifies_that_cores_task_and_its_top_half_decides() {
    let mut k = kernel(&TABLE);
    for t in 2..5 {
        k.activate(TaskId(t)).unwrap();
    }
    for core in 0..CORES {
        let notice = TABLE.interrupt(SGI_B, core).unwrap();
        let want = (core < 3).then(|| TaskId(2 + core as u8));
        assert_eq!(notice.owner, want, "core {core}");
    }
    let mut pending = Notifications::default();
    WAKE.store(false, Ordering::Relaxed);
    assert!(!TABLE.interrupt(SGI_B, 1).unwrap().take(1, &mut pending));
    assert!(pending.is_empty(), "the top half answered: nobody to wake");
    WAKE.store(true, Ordering::Relaxed);
    assert!(TABLE.interrupt(SGI_B, 1).unwrap().take(1, &mut pending));
    assert!(!TABLE.interrupt(SGI_B, 3).unwrap().take(3, &mut pending));
    assert!(TABLE.interrupt(SGI_A, 1).unwrap().take(1, &mut pending));
    assert_eq!(pending, Notifications(1 << 3 | 1 << 0));
    // s1 (task 3) is Ready, not sleeping: the notification is queued as a
    // wakeup, so its next sleep returns at once. a0 is Dormant: dropped.
    pending.deliver(&mut k);
    assert_eq!(k.state(TaskId(0)), Ok(TaskState::Dormant));
    assert_eq!(k.dispatch(1), Some(TaskId(3)));
    assert_eq!(
        k.sleep(TaskId(3), crate::Timeout::Forever, 0),
        Ok(crate::Done::Now(WaitResult::Ok))
    );
}

#[test]
fn a_release_runs_the_before_step_then_activates_the_task() {
    let mut k = kernel(&TABLE);
    BEFORE.store(0, Ordering::Relaxed);
    TABLE.release(&mut k, CyclicId(0));
    assert_eq!(BEFORE.load(Ordering::Relaxed), 0);
    assert_eq!(k.state(TaskId(1)), Ok(TaskState::Ready));
    TABLE.release(&mut k, CyclicId(1));
    assert_eq!(BEFORE.load(Ordering::Relaxed), 1);
    assert_eq!(
        k.task_core(TaskId(5)),
        Ok(2),
        "moved before it was activated"
    );
    assert_eq!(k.dispatch(2), Some(TaskId(5)));
    // Released again while it runs: an overrun, a deadline miss on the
    // handler's core (0), not the task's.
    TABLE.release(&mut k, CyclicId(1));
    assert_eq!(TABLE.misses(&k, 0), 1);
    assert_eq!(TABLE.misses(&k, 2), 0);
    assert_eq!(TABLE.misses(&k, 1), 0);
    TABLE.release(&mut k, CyclicId(9));
}

#[test]
fn parameters_come_from_the_blob_or_their_defaults() {
    let mut k = kernel(&TABLE);
    let platform = Platform {
        cores: 0b11,
        rpc_cores: 0,
        now: 0,
    };
    let started = TABLE.start(&mut k, platform, &[]).unwrap();
    assert_eq!(
        FIRST_SAW.load(Ordering::Relaxed),
        500,
        "default, not selected"
    );
    assert_eq!(started.protection, None);
    assert_eq!(k.state(TaskId(1)), Ok(TaskState::Ready), "its own task 1");

    let mut k = kernel(&TABLE);
    let blob = [E::new("first", "period_us", 800), E::new("second", "", 0)];
    let started = TABLE.start(&mut k, platform, &blob).unwrap();
    assert_eq!(FIRST_SAW.load(Ordering::Relaxed), 800 | 1 << 31);
    assert_eq!(
        started.protection,
        Some(Protection {
            pages: 2,
            flush: true
        })
    );
    assert_eq!(started.user_args[6], [7, 8]);
}

#[test]
fn bad_parameters_are_refused_naming_the_entry() {
    let platform = Platform {
        cores: 1,
        rpc_cores: 0,
        now: 0,
    };
    let cases: [(&[E], &str); 5] = [
        (
            &[E::new("third", "", 0)],
            "no application 'third' in this RTOS",
        ),
        (
            &[E::new("first", "period", 1)],
            "application 'first' has no parameter 'period'",
        ),
        (
            &[E::new("first", "period_us", 99)],
            "first.period_us = 99: must be 100..=1000",
        ),
        (
            &[
                E::new("first", "mode", 1),
                E::new("first", "period_us", 950),
            ],
            "first.period_us = 950: at most 900 in mode 1",
        ),
        (
            &[E::new("first", "mode", 1), E::new("first", "mode", 0)],
            "first.mode given twice",
        ),
    ];
    for (blob, message) in cases {
        let mut k = kernel(&TABLE);
        let e = TABLE.start(&mut k, platform, blob).unwrap_err();
        assert_eq!(e.to_string(), message);
    }
    let mut k = kernel(&TABLE);
    let huge = [E::new("first", "period_us", 1 << 40)];
    assert!(matches!(
        TABLE.start(&mut k, platform, &huge),
        Err(StartError::OutOfRange { .. })
    ));
}

fn error(apps: &'static [App]) -> TableError {
    Table { apps }.check(CORES, RESERVED).unwrap_err()
}

#[test]
fn tables_are_checked_naming_the_application_and_object() {
    const TWO_A: &[App] = &[
        FIRST,
        App {
            name: "other",
            interrupts: &[Interrupt {
                intid: SGI_A,
                owner: Owner::Task(0),
                top: None,
                shared: false,
            }],
            tasks: &[kernel_task("x", 0, 1)],
            ..App::EMPTY
        },
    ];
    let e = error(TWO_A);
    assert_eq!(
        e,
        TableError::InterruptShared {
            intid: SGI_A,
            first: "first",
            second: "other"
        }
    );
    assert_eq!(
        e.to_string(),
        "INTID 9 is claimed by 'first' and again by 'other': an interrupt has one owner unless every claim says it is shared"
    );

    const CASES: [(&[App], TableError, &str); 9] = [
        (
            &[FIRST, FIRST],
            TableError::SameName { app: "first" },
            "two applications are called 'first'",
        ),
        (
            &[App {
                name: "a name far too long",
                ..App::EMPTY
            }],
            TableError::AppName { app: 0 },
            "application 0: its name must be 1..=16 printable ASCII characters",
        ),
        (
            &[App {
                name: "lonely",
                interrupts: &[Interrupt {
                    intid: SGI_B,
                    owner: Owner::Task(0),
                    top: None,
                    shared: false,
                }],
                ..App::EMPTY
            }],
            TableError::InterruptOwner {
                app: "lonely",
                interrupt: 0,
            },
            "application 'lonely': interrupt 0 is owned by a task it does not have",
        ),
        (
            &[App {
                name: "wide",
                tasks: &[kernel_task("x", 0, 1), kernel_task("y", 1, 1)],
                interrupts: &[Interrupt {
                    intid: SGI_B,
                    owner: Owner::PerCore { first: 1, count: 2 },
                    top: None,
                    shared: false,
                }],
                ..App::EMPTY
            }],
            TableError::InterruptOwner {
                app: "wide",
                interrupt: 0,
            },
            "application 'wide': interrupt 0 is owned by a task it does not have",
        ),
        (
            &[App {
                name: "greedy",
                tasks: &[kernel_task("x", 0, 1)],
                interrupts: &[Interrupt {
                    intid: 29,
                    owner: Owner::Task(0),
                    top: None,
                    shared: false,
                }],
                ..App::EMPTY
            }],
            TableError::InterruptReserved {
                app: "greedy",
                intid: 29,
            },
            "application 'greedy': INTID 29 is the kernel's own (timer or reschedule)",
        ),
        (
            &[App {
                name: "far",
                tasks: &[kernel_task("x", 0, 1), kernel_task("y", 4, 1)],
                ..App::EMPTY
            }],
            TableError::Object {
                app: "far",
                error: ConfigError::TaskCore { task: 1 },
            },
            "application 'far': task 1 is on a core the kernel does not schedule",
        ),
        (
            &[App {
                name: "idle",
                cyclics: &[Cyclic {
                    config: CYCLIC,
                    task: 0,
                    before: None,
                }],
                ..App::EMPTY
            }],
            TableError::CyclicTask {
                app: "idle",
                cyclic: 0,
            },
            "application 'idle': cyclic handler 0 activates a task it does not have",
        ),
        (
            &[App {
                name: "odd",
                params: &[Param {
                    name: "x",
                    min: 1,
                    max: 2,
                    default: 0,
                }],
                ..App::EMPTY
            }],
            TableError::Param {
                app: "odd",
                param: 0,
            },
            "application 'odd': parameter 0 needs a unique name of 1..=16 printable ASCII \
             characters and min <= default <= max",
        ),
        (
            &[App {
                name: "twice",
                params: &[
                    Param {
                        name: "x",
                        min: 0,
                        max: 2,
                        default: 0,
                    },
                    Param {
                        name: "x",
                        min: 0,
                        max: 2,
                        default: 0,
                    },
                ],
                ..App::EMPTY
            }],
            TableError::Param {
                app: "twice",
                param: 1,
            },
            "application 'twice': parameter 1 needs a unique name of 1..=16 printable ASCII \
             characters and min <= default <= max",
        ),
    ];
    for (apps, want, message) in CASES {
        let e = error(apps);
        assert_eq!(e, want);
        assert_eq!(e.to_string(), message);
    }
}

#[test]
fn totals_are_checked_across_applications() {
    const MANY: App = App {
        name: "many",
        tasks: &[kernel_task("t", 0, 1); 20],
        ..App::EMPTY
    };
    const MORE: App = App {
        name: "more",
        ..MANY
    };
    const TOO_MANY: &[App] = &[MANY, MORE];
    let e = error(TOO_MANY);
    assert_eq!(
        e,
        TableError::TooMany {
            what: "tasks",
            limit: MAX_TASKS
        }
    );
    assert_eq!(
        e.to_string(),
        format!("the applications have more than {MAX_TASKS} tasks together")
    );
    const USER: Task = Task {
        config: task("u", 0, 1),
        entry: Entry::User(User {
            entry: user_body,
            hooks: None,
        }),
    };
    const USERS: &[App] = &[App {
        name: "users",
        tasks: &[USER; MAX_USER_TASKS + 1],
        ..App::EMPTY
    }];
    let e = error(USERS);
    assert_eq!(
        e,
        TableError::TooMany {
            what: "S-EL0 tasks",
            limit: MAX_USER_TASKS
        }
    );
    assert_eq!(
        Table {
            apps: &[App::EMPTY; MAX_APPS + 1]
        }
        .check(CORES, RESERVED),
        Err(TableError::TooManyApps)
    );
}

#[test]
fn kernel_interrupts_nested_in_a_top_half_are_left_to_the_outer_pass() {
    // The firmware's sequence: mark the top half, let the nested handler
    // OR in what it took, then take the whole byte back for the pass.
    let mut core = NestedKernelInterrupts::TOP_HALF_RUNS.bits();
    assert!(NestedKernelInterrupts::from_bits(core).in_top_half());
    assert!(
        !NestedKernelInterrupts::from_bits(core).kernel(),
        "nothing came yet"
    );
    core |= NestedKernelInterrupts::TIMER_TAKEN.bits();
    core |= NestedKernelInterrupts::RESCHEDULE_TAKEN.bits();
    core |= NestedKernelInterrupts::TIMER_TAKEN.bits(); // a second one changes nothing
    let taken = NestedKernelInterrupts::from_bits(core);
    assert!(taken.in_top_half() && taken.timer() && taken.kernel());
    // A reschedule alone: the scheduler runs, no timer work.
    let resched = NestedKernelInterrupts::from_bits(
        NestedKernelInterrupts::TOP_HALF_RUNS.bits()
            | NestedKernelInterrupts::RESCHEDULE_TAKEN.bits(),
    );
    assert!(resched.kernel() && !resched.timer());
    // Outside a top half an interrupt is not nested.
    assert!(!NestedKernelInterrupts::NONE.in_top_half());
    assert!(!NestedKernelInterrupts::default().kernel());
}

/// The top half of `SHARER`'s claim of SGI_B: wakes its owner when told to.
static SHARER_WAKE: AtomicBool = AtomicBool::new(false);
fn sharer_top(_core: usize) -> bool {
    SHARER_WAKE.load(Ordering::Relaxed)
}

fn echo(_: u32, request: &[u8], reply: &mut [u8]) -> Option<usize> {
    reply[..request.len()].copy_from_slice(request);
    Some(request.len())
}

/// `SECOND` with its interrupt shared, and an application sharing it
/// (one task, its top half) and offering two services.
const SECOND_SHARED: App = App {
    interrupts: &[Interrupt {
        shared: true,
        ..SECOND.interrupts[0]
    }],
    ..SECOND
};
const SHARER: App = App {
    name: "sharer",
    tasks: &[kernel_task("carrier", 3, 11)],
    interrupts: &[Interrupt {
        intid: SGI_B,
        owner: Owner::Task(0),
        top: Some(sharer_top),
        shared: true,
    }],
    services: &[
        Service {
            name: "tandem-echo",
            serve: echo,
        },
        Service {
            name: "rpmsg-client-sample",
            serve: echo,
        },
    ],
    ..App::EMPTY
};
const SHARED: Table = Table {
    apps: &[FIRST, SECOND_SHARED, SHARER],
};
const _: () = assert!(SHARED.check(CORES, RESERVED).is_ok());

#[test]
fn a_shared_interrupt_runs_every_owners_top_half() {
    const ROUTES: Routes = SHARED.routes();
    let mut k = kernel(&SHARED);
    for t in [2, 3, 4, 7] {
        k.activate(TaskId(t)).unwrap();
    }
    for core in 0..CORES {
        let owners: std::vec::Vec<_> = ROUTES.owners(SGI_B, core).iter().map(|n| n.owner).collect();
        let want = [(core < 3).then(|| TaskId(2 + core as u8)), Some(TaskId(7))];
        assert_eq!(
            owners, want,
            "core {core}: the per-core owner, then the sharer's task"
        );
        let table: std::vec::Vec<_> = SHARED
            .interrupt_owners(SGI_B, core)
            .iter()
            .map(|n| n.owner)
            .collect();
        assert_eq!(owners, table, "routes say what the table says");
    }
    // Each top half decides for its own owner.
    let mut pending = Notifications::default();
    WAKE.store(false, Ordering::Relaxed);
    SHARER_WAKE.store(true, Ordering::Relaxed);
    for n in ROUTES.owners(SGI_B, 1).iter() {
        n.take(1, &mut pending);
    }
    assert_eq!(pending, Notifications(1 << 7), "only the sharer's task");
    WAKE.store(true, Ordering::Relaxed);
    SHARER_WAKE.store(false, Ordering::Relaxed);
    let mut pending = Notifications::default();
    for n in ROUTES.owners(SGI_B, 1).iter() {
        n.take(1, &mut pending);
    }
    assert_eq!(pending, Notifications(1 << 3), "only the server of core 1");
    assert!(!ROUTES.owners(SGI_A + 2, 0).is_owned());
    assert!(ROUTES.owners(SGI_A, 0).is_owned());
    assert_eq!(ROUTES.owners(SGI_A, 0).iter().count(), 1);
}

#[test]
fn sharing_needs_every_claim_to_say_so_and_a_top_half_each() {
    const NOT_SAID: &[App] = &[FIRST, SECOND, SHARER];
    assert_eq!(
        error(NOT_SAID),
        TableError::InterruptShared {
            intid: SGI_B,
            first: "second",
            second: "sharer"
        }
    );
    const NO_TOP: &[App] = &[
        FIRST,
        SECOND_SHARED,
        App {
            interrupts: &[Interrupt {
                top: None,
                ..SHARER.interrupts[0]
            }],
            ..SHARER
        },
    ];
    assert_eq!(
        error(NO_TOP),
        TableError::InterruptSharers {
            intid: SGI_B,
            app: "sharer"
        }
    );
    const THREE: &[App] = &[
        FIRST,
        SECOND_SHARED,
        SHARER,
        App {
            name: "third",
            services: &[],
            ..SHARER
        },
    ];
    assert_eq!(
        error(THREE),
        TableError::InterruptSharers {
            intid: SGI_B,
            app: "third"
        }
    );
    const TWICE_IN_ONE: &[App] = &[App {
        interrupts: &[SHARER.interrupts[0], SHARER.interrupts[0]],
        ..SHARER
    }];
    assert!(matches!(
        error(TWICE_IN_ONE),
        TableError::InterruptShared { .. }
    ));
}

#[test]
fn services_are_listed_in_table_order_and_checked() {
    let names: std::vec::Vec<_> = SHARED.services().map(|s| s.name).collect();
    assert_eq!(names, ["tandem-echo", "rpmsg-client-sample"]);
    assert_eq!(SHARED.service(1).unwrap().name, "rpmsg-client-sample");
    assert!(SHARED.service(2).is_none());
    let mut reply = [0; 8];
    assert_eq!(
        (SHARED.service(0).unwrap().serve)(1, b"hi", &mut reply),
        Some(2)
    );
    assert_eq!(&reply[..2], b"hi");

    const fn with(services: &'static [Service]) -> App {
        App {
            name: "svc",
            services,
            ..App::EMPTY
        }
    }
    const S: Service = SHARER.services[0];
    for (apps, app, service) in [
        (&[with(&[Service { name: "", ..S }])][..], "svc", 0),
        (&[with(&[Service { name: "a b", ..S }])][..], "svc", 0),
        (
            &[with(&[Service {
                name: "x23456789012345678901234567890123",
                ..S
            }])][..],
            "svc",
            0,
        ),
        (&[with(&[S, S])][..], "svc", 1),
        (
            &[
                FIRST,
                SECOND_SHARED,
                SHARER,
                App {
                    name: "again",
                    interrupts: &[],
                    ..SHARER
                },
            ][..],
            "again",
            0,
        ),
    ] {
        let apps: &'static [App] = std::boxed::Box::leak(apps.to_vec().into_boxed_slice());
        assert_eq!(
            error(apps),
            TableError::Service { app, service },
            "{app} {service}"
        );
    }
    const MANY: [Service; 17] = {
        const NAMES: [&str; 17] = [
            "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13",
            "s14", "s15", "s16",
        ];
        let mut out = [S; 17];
        let mut i = 0;
        while i < 17 {
            out[i] = Service {
                name: NAMES[i],
                ..S
            };
            i += 1;
        }
        out
    };
    const TOO_MANY: &[App] = &[with(&MANY)];
    assert_eq!(
        error(TOO_MANY),
        TableError::Service {
            app: "svc",
            service: 16
        }
    );
    assert!(error(TOO_MANY).to_string().contains("at most 16 services"));
}
