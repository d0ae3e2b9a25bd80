//! The heartbeat application, the example of docs/rtos.md ("Adding an
//! application"): when the workload blob selects it, a cyclic handler on one
//! core releases BEAT every `period_ms`; BEAT logs the beat's number and how
//! late it started against the handler's schedule, and after `beats` beats
//! the handler stops. It uses only the application interface: its table
//! entry, its parameters and the firmware's console and clock.

mod params {
    include!(concat!(env!("OUT_DIR"), "/heartbeat.rs"));
}

use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use tandem_board::BOARD;
use tandem_rtos_firmware::{hw, log};
use tandem_rtos_kernel::app::{App, Cyclic, Entry, Refusal, Start, Task, TaskIdentity};
use tandem_rtos_kernel::{CyclicConfig, CyclicId, Kernel, TaskConfig, TaskId};

/// Counter ticks per ms.
const MS: u64 = BOARD.counter_hz / 1000;
/// Its only task and cyclic handler.
const BEAT: u8 = 0;
const TICK: u8 = 0;

/// The application.
pub const APP: App = App {
    name: params::NAME,
    tasks: &[Task {
        config: TaskConfig {
            name: "beat",
            core: 0,
            priority: 4,
            autostart: false,
        },
        entry: Entry::Kernel(beat),
    }],
    // Placed and started at start when the workload selects this application.
    cyclics: &[Cyclic {
        config: CyclicConfig {
            name: "heartbeat",
            core: 0,
            period: 100 * MS,
            phase: 100 * MS,
            start: false,
        },
        task: BEAT,
        before: Some(before_release),
    }],
    params: params::PARAMS,
    start: Some(start),
    ..App::EMPTY
};

/// What the handler and the task share once the workload is chosen.
struct Heartbeat {
    /// The handler's ID (known at start), so that it can stop itself.
    cyclic: AtomicU8,
    period: AtomicU64,
    /// Counter at the first release's due time.
    first_due: AtomicU64,
    beats: AtomicU32,
    /// Releases so far (the handler's count) and beats logged (the task's).
    released: AtomicU32,
    logged: AtomicU32,
}

static STATE: Heartbeat = Heartbeat {
    cyclic: AtomicU8::new(0),
    period: AtomicU64::new(0),
    first_due: AtomicU64::new(0),
    beats: AtomicU32::new(0),
    released: AtomicU32::new(0),
    logged: AtomicU32::new(0),
};

/// Checks the core, then places the handler and the task on it and starts
/// the handler.
fn start(s: &mut Start<'_>) -> Result<(), Refusal> {
    if !s.selected() {
        return Ok(());
    }
    let core = s.param("core");
    if s.platform.cores & (1 << core) == 0 {
        return Err(Refusal {
            param: "core",
            value: core.into(),
            want: "a core running the RTOS",
        });
    }
    let period = u64::from(s.param("period_ms")) * MS;
    let (task, tick, core) = (s.ids.task(BEAT), s.ids.cyclic(TICK), core as u8);
    let h = &STATE;
    h.cyclic.store(tick.0, Ordering::Relaxed);
    h.period.store(period, Ordering::Relaxed);
    h.first_due
        .store(s.platform.now + period, Ordering::Relaxed);
    h.beats.store(s.param("beats"), Ordering::Relaxed);
    // The core runs the RTOS (checked above): none of these can fail.
    let k = &mut *s.kernel;
    k.set_cyclic(tick, core, period, period)
        .expect("a stopped cyclic on an RTOS core");
    k.migrate(task, core).expect("an RTOS core");
    k.start_cyclic(tick, s.platform.now).expect("cyclic exists");
    Ok(())
}

/// Before each release (kernel locked): counts it, and stops the handler
/// at the last beat.
fn before_release(k: &mut Kernel, _: TaskId) {
    let h = &STATE;
    let released = h.released.fetch_add(1, Ordering::Relaxed) + 1;
    if released >= h.beats.load(Ordering::Relaxed) {
        let _ = k.stop_cyclic(CyclicId(h.cyclic.load(Ordering::Relaxed)));
    }
}

/// BEAT's body: one log line per beat, with how late the job started
/// against the handler's schedule (release time plus dispatch).
fn beat(_: TaskIdentity) {
    let now = hw::now();
    let h = &STATE;
    let n = h.logged.fetch_add(1, Ordering::Relaxed) + 1;
    let due =
        h.first_due.load(Ordering::Relaxed) + u64::from(n - 1) * h.period.load(Ordering::Relaxed);
    let late_us = now.saturating_sub(due) * 1_000_000 / BOARD.counter_hz;
    let core = tandem_rtos_firmware::core_index();
    let beats = h.beats.load(Ordering::Relaxed);
    log!(
        core,
        "heartbeat: beat {n} of {beats}, started {late_us} us after its time"
    );
}
