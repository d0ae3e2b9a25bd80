//! The RTOS's per-core statistics: busy time (measured by the idle loop),
//! releases of cyclic handlers, interrupt and dispatch latencies, and what
//! Linux publishes of its spin locks. [`crate::status`] adds the deadline
//! misses and publishes them to the shared region.
use core::fmt::Write;
use core::mem::offset_of;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use tandem_abi::MAX_CORES;
use tandem_abi::shm::{
    CoreRecord, DISPATCH_BUCKETS, LATENCY_BUCKETS, core_record_offset, dispatch_offset,
    latency_offset,
};
use tandem_board::BOARD;
use tandem_rtos_kernel::placement;

static BUSY: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static RELEASES: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static MASK: AtomicU64 = AtomicU64::new(0);
/// Per core: when another core last sent it a reschedule SGI.
static RESCHEDULE_SENT: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
/// Per core: when it last entered the RTOS for a reschedule SGI.
static RESCHEDULE_TAKEN: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static DISPATCH_HANDOFFS: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];
static HANDOFF_WAIT_MAX: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];
static HANDOFF_WAIT_SUM: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];

/// Remembers which cores run the RTOS.
pub(crate) fn set_cores(mask: u64) {
    MASK.store(mask, Ordering::Relaxed);
}

/// Adds counter ticks the RTOS kept `core` busy.
pub(crate) fn busy(core: usize, ticks: u64) {
    BUSY[core].fetch_add(ticks, Ordering::Relaxed);
}

/// A cyclic handler released its task on `core`.
pub(crate) fn released(core: usize) {
    RELEASES[core].fetch_add(1, Ordering::Relaxed);
}

fn cores() -> impl Iterator<Item = usize> {
    let mask = MASK.load(Ordering::Relaxed);
    (0..MAX_CORES).filter(move |c| mask & (1 << c) != 0)
}

/// Counts one timer-interrupt latency of `ticks` counter ticks on `core`, in
/// the core's histogram in the shared region (written by this core only).
pub(crate) fn latency(core: usize, ticks: u64) {
    let bucket = ticks.min(u64::from(LATENCY_BUCKETS) - 1) as usize;
    let counter = (BOARD.shared.base as usize + latency_offset(core) + bucket * 4) as *mut u32;
    // SAFETY: the offset comes from the ABI's constants for a core the board
    // has and a bucket below LATENCY_BUCKETS, inside the reserved region;
    // only this core writes its histogram. A value Linux scribbled there
    // only spoils the statistic.
    unsafe { counter.write_volatile(counter.read_volatile().wrapping_add(1)) };
}

/// Counts one dispatch latency (activation request to the task's first
/// instruction, less any hand-off wait: the RTOS's own path) of `ticks` on
/// `core`, the core the task started on.
pub fn dispatch(core: usize, ticks: u64) {
    if core >= MAX_CORES {
        return;
    }
    let bucket = ticks.min(u64::from(DISPATCH_BUCKETS) - 1) as usize;
    let counter = (BOARD.shared.base as usize + dispatch_offset(core) + bucket * 4) as *mut u32;
    // SAFETY: as in `latency`: ABI offsets for a core below MAX_CORES and a
    // bucket below DISPATCH_BUCKETS, inside the reserved region. Two cores
    // never count for the same core at once: the task runs on one core.
    unsafe { counter.write_volatile(counter.read_volatile().wrapping_add(1)) };
}

/// A reschedule SGI is about to be sent to `core`, at counter `now`. Never
/// inlined: its first instruction is the `sent` marker of E3's per-core
/// instruction count (harness `tandem/pathcount.py`).
#[inline(never)]
pub(crate) fn reschedule_sent(core: usize, now: u64) {
    if let Some(sent) = RESCHEDULE_SENT.get(core) {
        sent.store(now, Ordering::Release);
    }
}

/// `core` entered the RTOS at counter `entered` for a reschedule SGI.
pub(crate) fn reschedule_taken(core: usize, entered: u64) {
    if let Some(taken) = RESCHEDULE_TAKEN.get(core) {
        taken.store(entered, Ordering::Relaxed);
    }
}

/// How long of a dispatch requested at `requested` and started at `start`
/// on `core` was spent waiting for another core's reschedule SGI to reach
/// this one: from its sending to this core's RTOS entry, if one was sent
/// and taken in between (else 0, and the dispatch stayed on its core).
/// That wait is the interconnect's and, under QEMU, the wait for this
/// vCPU's turn; it is counted here, in the core's record, apart from the
/// RTOS's own path. Call once per timed dispatch.
pub fn handoff_wait(core: usize, requested: u64, start: u64) -> u64 {
    let (Some(sent), Some(taken)) = (RESCHEDULE_SENT.get(core), RESCHEDULE_TAKEN.get(core)) else {
        return 0;
    };
    let (sent, taken) = (sent.load(Ordering::Acquire), taken.load(Ordering::Relaxed));
    let Some(wait) = placement::handoff_wait(requested, sent, taken, start) else {
        return 0;
    };
    let ticks = u32::try_from(wait).unwrap_or(u32::MAX);
    DISPATCH_HANDOFFS[core].fetch_add(1, Ordering::Relaxed);
    HANDOFF_WAIT_MAX[core].fetch_max(ticks, Ordering::Relaxed);
    HANDOFF_WAIT_SUM[core].fetch_add(ticks, Ordering::Relaxed);
    wait
}

/// What Linux on a core had published of its spin locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinuxLocks {
    /// It holds at least one (whether or not it also spins for another).
    Holding,
    /// It holds none but spins for one.
    Waiting,
    /// Neither.
    Free,
}

/// What Linux on `core` last published of its spin locks. Linux is not
/// trusted: each word is read once, any value but 0 counts, so the worst a
/// scribbled word can do is keep a task off that core; a core outside the
/// board counts as holding.
pub fn linux_locks(core: usize) -> LinuxLocks {
    if core >= MAX_CORES {
        return LinuxLocks::Holding;
    }
    let record = (BOARD.shared.base as usize + core_record_offset(core)) as *const CoreRecord;
    // SAFETY: the record lies inside the reserved shared region at an ABI
    // offset for a core below MAX_CORES; the fields are aligned u32s that
    // any bit pattern is valid for.
    let (held, waiting) = unsafe {
        (
            core::ptr::addr_of!((*record).linux_lock_held).read_volatile(),
            core::ptr::addr_of!((*record).linux_lock_waiting).read_volatile(),
        )
    };
    match (held, waiting) {
        (0, 0) => LinuxLocks::Free,
        (0, _) => LinuxLocks::Waiting,
        _ => LinuxLocks::Holding,
    }
}

/// A job of the measured periodic task started on `core`, the core this
/// runs on, which Linux had left in state `linux` when the RTOS took it
/// (Linux does not run here while the job does, so its words still say what
/// it was doing). Counted straight into the core's record, so that Linux
/// can read the counts around a run without waiting for [`publish`]; only
/// this core's job writes them, and the RTOS never reads them back.
pub fn started(core: usize, linux: LinuxLocks) {
    if core >= MAX_CORES {
        return;
    }
    let record = BOARD.shared.base as usize + core_record_offset(core);
    let count = |offset: usize| {
        let field = (record + offset) as *mut u32;
        // SAFETY: `field` is an aligned u32 field of this core's record,
        // inside the reserved shared region (ABI offset for a core below
        // MAX_CORES); a value Linux scribbled there only spoils the count.
        unsafe { field.write_volatile(field.read_volatile().wrapping_add(1)) }
    };
    count(offset_of!(CoreRecord, dispatch_starts));
    match linux {
        LinuxLocks::Holding => count(offset_of!(CoreRecord, dispatch_preempted_holding)),
        LinuxLocks::Waiting => count(offset_of!(CoreRecord, dispatch_preempted_waiting)),
        LinuxLocks::Free => {}
    }
}

/// Writes every RTOS core's record in the shared region, with `misses(c)`
/// deadline misses on core `c`. Only the RTOS writes these fields; it never
/// reads them back.
pub(crate) fn publish(misses: impl Fn(usize) -> u64) {
    let base = BOARD.shared.base as usize;
    for c in cores() {
        let misses = misses(c);
        let record = (base + core_record_offset(c)) as *mut CoreRecord;
        // SAFETY: the offset comes from the ABI's constants for a core the
        // board has, inside the reserved shared region; the fields are
        // naturally aligned u64s.
        unsafe {
            addr_of_mut!((*record).rtos_busy).write_volatile(BUSY[c].load(Ordering::Relaxed));
            addr_of_mut!((*record).rtos_releases)
                .write_volatile(RELEASES[c].load(Ordering::Relaxed));
            addr_of_mut!((*record).deadline_misses).write_volatile(misses);
        }
        // SAFETY: as above; the fields are naturally aligned u32s.
        unsafe {
            addr_of_mut!((*record).dispatch_handoffs)
                .write_volatile(DISPATCH_HANDOFFS[c].load(Ordering::Relaxed));
            addr_of_mut!((*record).dispatch_handoff_wait_max)
                .write_volatile(HANDOFF_WAIT_MAX[c].load(Ordering::Relaxed));
            addr_of_mut!((*record).dispatch_handoff_wait_sum)
                .write_volatile(HANDOFF_WAIT_SUM[c].load(Ordering::Relaxed));
        }
    }
}

/// Per RTOS core, after `seconds`: releases, `misses(c)` deadline misses,
/// RTOS load.
pub(crate) fn write_cores(w: &mut impl Write, seconds: u64, misses: impl Fn(usize) -> u64) {
    let _ = write!(w, "{seconds} s");
    for c in cores() {
        let misses = misses(c);
        let busy_us = BUSY[c].load(Ordering::Relaxed) * 1_000_000 / BOARD.counter_hz;
        let _ = write!(
            w,
            " | core{c}: {} jobs, {misses} missed, busy {busy_us} us",
            RELEASES[c].load(Ordering::Relaxed)
        );
    }
}
