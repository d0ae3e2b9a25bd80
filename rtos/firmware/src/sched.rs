//! Where the pure kernel (`tandem-rtos-kernel`) meets registers and stacks.
//!
//! Every switch between tasks happens on the way out of an exception: the
//! vector code saves the interrupted context as a [`Frame`] on its own stack,
//! and [`switch`] returns the frame to resume, of a task or of the core's
//! idle loop. Tasks call the kernel with `svc` ([`crate::syscall`]); interrupt
//! handlers call it directly. One spin lock guards the kernel and the task
//! frames (FMP's giant lock); cross-core dispatch goes by an SGI.
//!
//! What the tasks are, which task a cyclic handler releases and the hooks
//! an application has on its S-EL0 tasks come from the applications table;
//! this module never names an application.

use crate::frame::Frame;
use crate::table::{apps, kernel_objects};
use crate::{hw, protect, stats, syscall};
use tandem_abi::MAX_CORES;
use tandem_board::BOARD;
use tandem_lock::SpinLock;
use tandem_rtos_kernel::app::{Entry, Notifications, Table, TaskIdentity, UserTaskHooks};
use tandem_rtos_kernel::{
    CyclicId, Done, Error, Kernel, MAX_CYCLICS, MAX_TASKS, TaskId, WaitResult,
};

/// Stack bytes per task.
pub const TASK_STACK: usize = 8 * 1024;

#[unsafe(link_section = ".stacks")]
static mut TASK_STACKS: [[u8; TASK_STACK]; MAX_TASKS] = [[0; TASK_STACK]; MAX_TASKS];

/// What the table says of one task, looked up once at start (the paths
/// that need it are hot: every switch): its code, what its body is given,
/// its address space (0: the kernel's) and its application's hooks.
#[derive(Clone, Copy)]
struct TaskInfo {
    entry: Entry,
    identity: TaskIdentity,
    space: usize,
    hooks: Option<&'static UserTaskHooks>,
}

/// Every task's [`TaskInfo`], by task ID (`None` past the last task).
static TASKS: spin::Once<[Option<TaskInfo>; MAX_TASKS]> = spin::Once::new();

fn info(task: usize) -> Option<&'static TaskInfo> {
    TASKS.get()?.get(task)?.as_ref()
}

/// PSTATE of a task: EL1h, IRQs on, FIQs (Linux's interrupts) and aborts masked.
const SPSR_TASK: u64 = 0x345;

struct Sched {
    kernel: Kernel,
    /// Saved frame of each task while it does not run.
    frames: [usize; MAX_TASKS],
    /// The task must start from its entry point when next dispatched.
    fresh: [bool; MAX_TASKS],
    /// The task blocked in a system call; its result is due when it resumes.
    awaiting: [bool; MAX_TASKS],
    /// Saved frame of each core's idle loop while a task runs there.
    idle_frames: [usize; MAX_CORES],
    /// What runs on each core.
    current: [Option<TaskId>; MAX_CORES],
    /// Each S-EL0 task's hooks (here, under the lock they are called under,
    /// for the system-call path).
    hooks: [Option<&'static UserTaskHooks>; MAX_TASKS],
}

static SCHED: SpinLock<Option<Sched>> = SpinLock::new(None);

/// Builds the kernel from the applications table, for every core the board
/// has. Once, by the first core in, before any core takes interrupts.
pub fn init(table: &Table, now: u64) {
    let kernel = Kernel::new(&kernel_objects().config(BOARD.max_cores), now)
        .expect("the table is checked at build time");
    let mut tasks = [None; MAX_TASKS];
    let mut user = 0;
    for (i, slot) in tasks.iter_mut().enumerate().take(table.task_count()) {
        let (_, task, identity) = table.task(TaskId(i as u8)).expect("a task of the table");
        let (space, hooks) = match task.entry {
            Entry::User(u) => {
                user += 1;
                (user, u.hooks)
            }
            Entry::Kernel(_) => (0, None),
        };
        *slot = Some(TaskInfo {
            entry: task.entry,
            identity,
            space,
            hooks,
        });
    }
    TASKS.call_once(|| tasks);
    let hooks = tasks.map(|t| t.and_then(|t| t.hooks));
    *SCHED.lock() = Some(Sched {
        kernel,
        frames: [0; MAX_TASKS],
        fresh: [true; MAX_TASKS],
        awaiting: [false; MAX_TASKS],
        idle_frames: [0; MAX_CORES],
        current: [None; MAX_CORES],
        hooks,
    });
}

/// Runs `f` on the kernel under the lock, IRQs masked (callable from tasks,
/// handlers and start-up alike).
pub fn with_kernel<R>(f: impl FnOnce(&mut Kernel) -> R) -> R {
    hw::without_interrupts(|| f(&mut SCHED.lock().as_mut().expect("scheduler initialised").kernel))
}

/// First instruction of every kernel task (protected tasks start at S-EL0,
/// see [`protect`]).
extern "C" fn task_entry(task: usize) -> ! {
    if let Some(TaskInfo {
        entry: Entry::Kernel(body),
        identity,
        ..
    }) = info(task)
    {
        body(*identity);
    }
    syscall::exit()
}

/// A frame that starts `task` from its entry point, at the top of its stack
/// (for a protected task, its kernel stack).
fn fresh_frame(task: usize) -> usize {
    // SAFETY: only the address of this task's stack is taken; the frame is
    // written below and the task does not run while we do it.
    let top = unsafe { core::ptr::addr_of_mut!(TASK_STACKS[task]) } as usize + TASK_STACK;
    if let Some(TaskInfo {
        entry: Entry::User(u),
        space,
        ..
    }) = info(task)
    {
        return protect::fresh_frame(task, *space, u.entry, top);
    }
    let frame = (top - core::mem::size_of::<Frame>()) as *mut Frame;
    let mut x = [0u64; 31];
    x[0] = task as u64;
    // SAFETY: the frame lies inside this task's own stack, which nothing uses
    // while the task is not running.
    unsafe {
        frame.write(Frame {
            x,
            entered: 0,
            elr: task_entry as *const () as u64,
            spsr: SPSR_TASK,
            sp_el0: 0,
            pad: 0,
        })
    };
    frame as usize
}

#[inline(always)]
fn encode(frame: *mut Frame, result: Result<WaitResult, Error>) {
    let (code, value) = match result {
        Ok(WaitResult::Ok) => (0, 0),
        Ok(WaitResult::Value(v)) => (0, v as u64),
        Ok(WaitResult::Flags(f)) => (0, u64::from(f)),
        Err(e) => (e.code() as i64 as u64, 0),
    };
    // SAFETY: `frame` is the saved frame of a task that is not running.
    unsafe {
        (*frame).x[0] = code;
        (*frame).x[1] = value;
    }
}

/// Saves `frame` as what was running on `core`, lets the kernel pick what
/// runs next, signals other cores with dispatch requests, re-arms this core's
/// timer, and returns the frame to resume.
fn switch(s: &mut Sched, core: usize, frame: *mut Frame) -> *mut Frame {
    match s.current[core] {
        Some(t) => s.frames[t.0 as usize] = frame as usize,
        None => s.idle_frames[core] = frame as usize,
    }
    let next = s.kernel.dispatch(core as u8);
    s.current[core] = next;
    let requests = s.kernel.take_dispatch_requests() & !(1 << core);
    for other in 0..MAX_CORES {
        if requests & (1 << other) != 0 {
            stats::reschedule_sent(other, hw::now());
            hw::send_reschedule(other);
        }
    }
    hw::set_timer(s.kernel.next_event(core as u8));
    let Some(t) = next else {
        return s.idle_frames[core] as *mut Frame;
    };
    let i = t.0 as usize;
    if s.fresh[i] {
        s.fresh[i] = false;
        s.frames[i] = fresh_frame(i);
    }
    if protect::on()
        && let Some(t) = info(i)
    {
        protect::enter(core, t.space);
    }
    let resumed = s.frames[i] as *mut Frame;
    if s.awaiting[i] {
        s.awaiting[i] = false;
        encode(resumed, s.kernel.take_wait_result(t));
    }
    resumed
}

/// End of every interrupt, in one pass under the lock: if the core's timer
/// fired, due timeouts expire and due cyclic handlers release their tasks;
/// the tasks interrupts notified are woken; then whatever should run now.
pub fn after_interrupt(
    core: usize,
    frame: *mut Frame,
    timer: bool,
    notify: Notifications,
) -> *mut Frame {
    let mut guard = SCHED.lock();
    let s = guard.as_mut().expect("scheduler initialised");
    if timer {
        let mut fired = [CyclicId(0); MAX_CYCLICS];
        let n = s.kernel.advance(core as u8, hw::now(), &mut fired);
        for &c in &fired[..n] {
            stats::released(core);
            apps().release(&mut s.kernel, c);
        }
    }
    notify.deliver(&mut s.kernel);
    switch(s, core, frame)
}

/// A system call from the task running on `core` (`svc #0`, number in x8).
pub fn system_call(core: usize, frame: *mut Frame) -> *mut Frame {
    let mut guard = SCHED.lock();
    let s = guard.as_mut().expect("scheduler initialised");
    let Some(caller) = s.current[core] else {
        panic!("system call from the idle loop on core {core}");
    };
    // SAFETY: the vector code just saved this frame on the caller's stack.
    let regs = unsafe { &mut *frame };
    let now = hw::now();
    let from_el0 = regs.spsr & 0xF == 0;
    let number = regs.x[8];
    let hooks = if from_el0 {
        s.hooks[caller.0 as usize]
    } else {
        None
    };
    let result = if from_el0 && !syscall::el0_allowed(number) {
        Err(Error::Parameter)
    } else if hooks.is_some_and(|w| !(w.allow)(number)) {
        Err(Error::Object)
    } else {
        syscall::serve(&mut s.kernel, caller, &regs.x, now)
    };
    if let Some(w) = hooks
        && result.is_ok()
    {
        (w.done)(number, now);
    }
    match &result {
        Ok(Done::Now(v)) => encode(frame, Ok(*v)),
        Ok(Done::Blocked) => s.awaiting[caller.0 as usize] = true,
        Err(e) => encode(frame, Err(*e)),
    }
    // After ext_tsk the task's context is dead, even if a queued activation
    // made it Ready again at once: it restarts from its entry point.
    if syscall::is_exit(&regs.x) && result.is_ok() {
        s.fresh[caller.0 as usize] = true;
    }
    switch(s, core, frame)
}

/// The protected task running on `core` faulted (`esr`, `far`): reports it,
/// stops it, and returns the frame to resume instead.
pub fn fault(
    core: usize,
    frame: *mut Frame,
    what: tandem_rtos_mm::Exception,
    esr: u64,
    far: u64,
) -> *mut Frame {
    let mut guard = SCHED.lock();
    let s = guard.as_mut().expect("scheduler initialised");
    let Some(t) = s.current[core] else {
        panic!("S-EL0 exception with no task on core {core}");
    };
    // SAFETY: the vector code just saved this frame.
    let elr = unsafe { (*frame).elr };
    if let Some(w) = s.hooks[t.0 as usize] {
        (w.fault)(t, esr, far);
    }
    protect::report_fault(core, t, what, esr, far, elr);
    s.kernel
        .terminate(t)
        .expect("the faulting task was running");
    s.fresh[t.0 as usize] = true;
    s.awaiting[t.0 as usize] = false;
    switch(s, core, frame)
}
