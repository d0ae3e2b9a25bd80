//! System calls: the task side (`svc #0`, number in x8, arguments in x0..x3,
//! error code back in x0 and a value in x1), which applications call, and
//! the kernel side that serves them. Timeouts travel as ticks: 0 = poll,
//! `u64::MAX` = forever. The kernel side serves every service; task-side
//! wrappers exist for those that applications use so far.

use tandem_rtos_kernel::{
    CyclicId, DataQueueId, Done, Error, FlagId, FlagMode, Kernel, SemaphoreId, TaskId, Ticks,
    Timeout, WaitResult,
};

const EXIT: u64 = 0;
const ACTIVATE: u64 = 1;
const SLEEP: u64 = 2;
const WAKEUP: u64 = 3;
const DELAY: u64 = 4;
const SIGNAL_SEMAPHORE: u64 = 5;
const WAIT_SEMAPHORE: u64 = 6;
const SET_FLAG: u64 = 7;
const CLEAR_FLAG: u64 = 8;
const WAIT_FLAG: u64 = 9;
const SEND: u64 = 10;
const RECEIVE: u64 = 11;
const MIGRATE: u64 = 12;
const START_CYCLIC: u64 = 13;
const STOP_CYCLIC: u64 = 14;
const YIELD: u64 = 15;
/// sys_chg(task, value): hand `value` to `task`, which waits in a hand-off,
/// and switch to it; returns the value handed back.
pub const CHG: u64 = 16;
/// Wait for a value from sys_chg (timeout in x0).
const WAIT_HAND_OFF: u64 = 17;

/// Whether a protected task (S-EL0) may make system call `number`: only
/// those that act on the caller itself or hand off to a peer.
pub(crate) fn el0_allowed(number: u64) -> bool {
    matches!(number, EXIT | SLEEP | DELAY | YIELD | CHG | WAIT_HAND_OFF)
}

/// Wait forever.
pub const FOREVER: Ticks = u64::MAX;

fn timeout(t: u64) -> Timeout {
    match t {
        0 => Timeout::Poll,
        FOREVER => Timeout::Forever,
        t => Timeout::After(t),
    }
}

fn id(x: u64) -> Result<u8, Error> {
    u8::try_from(x).map_err(|_| Error::Id)
}

fn done(r: Result<(), Error>) -> Result<Done, Error> {
    r.map(|()| Done::Now(WaitResult::Ok))
}

/// Whether the saved registers are an ext_tsk call.
pub(crate) fn is_exit(x: &[u64; 31]) -> bool {
    x[8] == EXIT
}

/// Serves system call `x[8]` of `caller` (kernel side, under the lock).
pub(crate) fn serve(
    k: &mut Kernel,
    caller: TaskId,
    x: &[u64; 31],
    now: Ticks,
) -> Result<Done, Error> {
    let [a0, a1, a2, a3] = [x[0], x[1], x[2], x[3]];
    match x[8] {
        EXIT => done(k.exit(caller)),
        ACTIVATE => done(k.activate(TaskId(id(a0)?))),
        SLEEP => k.sleep(caller, timeout(a0), now),
        WAKEUP => done(k.wakeup(TaskId(id(a0)?))),
        DELAY => k.delay(caller, a0, now),
        SIGNAL_SEMAPHORE => done(k.signal_semaphore(SemaphoreId(id(a0)?))),
        WAIT_SEMAPHORE => k.wait_semaphore(caller, SemaphoreId(id(a0)?), timeout(a1), now),
        SET_FLAG => done(k.set_flag(FlagId(id(a0)?), a1 as u32)),
        CLEAR_FLAG => done(k.clear_flag(FlagId(id(a0)?), a1 as u32)),
        WAIT_FLAG => {
            let mode = if a2 == 0 { FlagMode::And } else { FlagMode::Or };
            k.wait_flag(caller, FlagId(id(a0)?), a1 as u32, mode, timeout(a3), now)
        }
        SEND => k.send_dataqueue(
            tandem_rtos_kernel::Caller::Task(caller),
            DataQueueId(id(a0)?),
            a1 as usize,
            timeout(a2),
            now,
        ),
        RECEIVE => k.receive_dataqueue(caller, DataQueueId(id(a0)?), timeout(a1), now),
        MIGRATE => done(k.migrate(
            TaskId(id(a0)?),
            u8::try_from(a1).map_err(|_| Error::Parameter)?,
        )),
        START_CYCLIC => done(k.start_cyclic(CyclicId(id(a0)?), now)),
        STOP_CYCLIC => done(k.stop_cyclic(CyclicId(id(a0)?))),
        YIELD => done(k.yield_task(caller)),
        CHG => k.hand_off(caller, TaskId(id(a0)?), a1 as usize),
        WAIT_HAND_OFF => k.wait_hand_off(caller, timeout(a0), now),
        _ => Err(Error::Parameter),
    }
}

fn call(number: u64, a: [u64; 4]) -> Result<u64, i32> {
    let (code, value): (u64, u64);
    // SAFETY: the SVC handler saves and restores every register except x0
    // and x1, which carry the result; memory is changed only as the service
    // documents.
    unsafe {
        core::arch::asm!("svc #0",
            inout("x0") a[0] => code, inout("x1") a[1] => value,
            in("x2") a[2], in("x3") a[3], in("x8") number, options(nostack))
    };
    if code == 0 {
        Ok(value)
    } else {
        Err(code as i64 as i32)
    }
}

/// ext_tsk: ends the calling task.
pub fn exit() -> ! {
    let refused = call(EXIT, [0; 4]);
    panic!("ext_tsk refused: {refused:?}")
}

/// slp_tsk / tslp_tsk.
pub fn sleep(timeout: Ticks) -> Result<(), i32> {
    call(SLEEP, [timeout, 0, 0, 0]).map(drop)
}

/// dly_tsk.
pub fn delay(ticks: Ticks) -> Result<(), i32> {
    call(DELAY, [ticks, 0, 0, 0]).map(drop)
}

/// sig_sem.
pub fn signal(s: SemaphoreId) -> Result<(), i32> {
    call(SIGNAL_SEMAPHORE, [s.0.into(), 0, 0, 0]).map(drop)
}

/// wai_sem / twai_sem / pol_sem.
pub fn wait(s: SemaphoreId, timeout: Ticks) -> Result<(), i32> {
    call(WAIT_SEMAPHORE, [s.0.into(), timeout, 0, 0]).map(drop)
}

// ----- The task side for protected tasks: inlined into their S-EL0 code,
// which may call nothing in the kernel's pages. -----

#[inline(always)]
fn user_call(number: u64, a0: u64, a1: u64) -> Result<u64, u64> {
    let (code, value): (u64, u64);
    // SAFETY: as `call`: only x0 and x1 change.
    unsafe {
        core::arch::asm!("svc #0", inout("x0") a0 => code, inout("x1") a1 => value,
            in("x8") number, options(nostack))
    };
    if code == 0 { Ok(value) } else { Err(code) }
}

/// ext_tsk from S-EL0.
#[inline(always)]
pub fn user_exit() -> ! {
    let _ = user_call(EXIT, 0, 0);
    loop {
        core::hint::spin_loop();
    }
}

/// sys_chg from S-EL0: the value handed back, or the error code.
#[inline(always)]
pub fn user_chg(task: u64, value: u64) -> Result<u64, u64> {
    user_call(CHG, task, value)
}

/// Waits (forever) for a hand-off, from S-EL0.
#[inline(always)]
pub fn user_wait_hand_off() -> Result<u64, u64> {
    user_call(WAIT_HAND_OFF, FOREVER, 0)
}
