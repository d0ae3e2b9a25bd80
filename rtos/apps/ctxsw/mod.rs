//! The context-switch workload (paper 004 on Armv8): when the workload blob
//! selects it, two tasks at S-EL0, each in its own address space, hand a
//! value to each other with `sys_chg` `switches` times, each writing
//! `pages` pages of its own between hand-offs; with `stray`, a third one
//! reads the kernel's memory and must be stopped, not the RTOS.
//!
//! The firmware's memory protection does the address spaces (`mode` asid:
//! a tag per task; flush: the TLB invalidated on every switch). This
//! application watches its tasks' system calls to time the hand-offs, and
//! leaves what it measured in the shared region's context-switch record
//! (`tandem_abi::shm::CtxswRecord`), which Linux reads.

mod params {
    include!(concat!(env!("OUT_DIR"), "/ctxsw.rs"));
}

use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicU64, Ordering};
use tandem_abi::shm::{
    CTXSW_ASID, CTXSW_DONE, CTXSW_FLUSH, CTXSW_OFFSET, CTXSW_RUNNING, CtxswRecord,
};
use tandem_board::BOARD;
use tandem_rtos_firmware::{log, syscall};
use tandem_rtos_kernel::app::{App, Entry, Protection, Refusal, Start, Task, User, UserTaskHooks};
use tandem_rtos_kernel::{TaskConfig, TaskId, Ticks};

/// Hand-offs per timed batch (the best batch is one without interrupts).
const BATCH: u64 = 64;
/// The pair (the first waits first), then the stray one.
const PAIR: [u8; 2] = [0, 1];
const STRAY: u8 = 2;
/// Its page size (`tandem_rtos_mm::PAGE`).
const PAGE: u64 = 4096;
/// A cache line, and the lines in a page.
const LINE: u64 = 64;
const LINES_PER_PAGE: u64 = PAGE / LINE;

/// The application.
pub const APP: App = App {
    name: params::NAME,
    tasks: &[
        protected("chg_a", handoff_entry),
        protected("chg_b", handoff_entry),
        protected("stray", stray_entry),
    ],
    params: params::PARAMS,
    start: Some(start),
    ..App::EMPTY
};

const fn protected(name: &'static str, entry: extern "C" fn(u64, u64, u64, u64) -> !) -> Task {
    Task {
        config: TaskConfig {
            name,
            core: 0,
            priority: 12,
            autostart: false,
        },
        entry: Entry::User(User {
            entry,
            hooks: Some(&HOOKS),
        }),
    }
}

static HOOKS: UserTaskHooks = UserTaskHooks { allow, done, fault };

/// Hand-offs to make (0 until the workload selects this application).
static SWITCHES: AtomicU64 = AtomicU64::new(0);

/// The hand-off measurement. Only the hooks change it, and the firmware
/// calls them under the kernel lock, so its fields need no lock of
/// their own: atomics, relaxed, only because they are shared statics (a
/// lock here would cost every hand-off its instructions, which are what is
/// measured).
struct Measure {
    done: AtomicU64,
    first: AtomicU64,
    batch_start: AtomicU64,
    best_batch: AtomicU64,
}

static MEASURE: Measure = Measure {
    done: AtomicU64::new(0),
    first: AtomicU64::new(0),
    batch_start: AtomicU64::new(0),
    best_batch: AtomicU64::new(u64::MAX),
};

/// Clears the record (whether selected or not: Linux may read it), and when
/// selected asks for memory protection and starts the tasks on their core.
fn start(s: &mut Start<'_>) -> Result<(), Refusal> {
    if !s.selected() {
        clear_record(0, 0);
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
    let (pages, flush) = (s.param("pages"), s.param("mode") == params::MODE_FLUSH);
    SWITCHES.store(u64::from(s.param("switches")), Ordering::Relaxed);
    clear_record(if flush { CTXSW_FLUSH } else { CTXSW_ASID }, pages);
    s.protect(Protection { pages, flush });
    // The first of the pair waits; the second hands to it.
    let [a, b] = PAIR.map(|t| u64::from(s.ids.task(t).0));
    s.set_user_args(PAIR[0], [b, 0]);
    s.set_user_args(PAIR[1], [a, 1]);
    // Reads the kernel's own memory: not its own.
    s.set_user_args(STRAY, [BOARD.rtos_ram.base, 0]);
    let tasks: &[u8] = if s.param("stray") != 0 {
        &[PAIR[0], PAIR[1], STRAY]
    } else {
        &PAIR
    };
    for &t in tasks {
        let t = s.ids.task(t);
        s.kernel.migrate(t, core as u8).expect("an RTOS core");
        s.kernel.activate(t).expect("a dormant task");
    }
    Ok(())
}

fn record() -> *mut CtxswRecord {
    (BOARD.shared.base + u64::from(CTXSW_OFFSET)) as *mut CtxswRecord
}

fn clear_record(mode: u32, pages: u32) {
    let r = CtxswRecord {
        mode,
        pages,
        batch: BATCH as u32,
        ..Default::default()
    };
    // SAFETY: the record lies in the shared region, which the RTOS may
    // write; Linux only reads it.
    unsafe { record().write_volatile(r) };
}

/// Whether system call `number` may go ahead: a hand-off only while
/// hand-offs remain (then the pair stops).
fn allow(number: u64) -> bool {
    number != syscall::CHG
        || MEASURE.done.load(Ordering::Relaxed) < SWITCHES.load(Ordering::Relaxed)
}

/// System call `number` succeeded at counter value `now`: counts and times
/// a hand-off; after the last, writes the record.
fn done(number: u64, now: Ticks) {
    if number != syscall::CHG {
        return;
    }
    let m = &MEASURE;
    let done = m.done.load(Ordering::Relaxed) + 1;
    m.done.store(done, Ordering::Relaxed);
    if done == 1 {
        m.first.store(now, Ordering::Relaxed);
        m.batch_start.store(now, Ordering::Relaxed);
        // SAFETY: the RTOS is the record's only writer.
        unsafe { addr_of_mut!((*record()).state).write_volatile(CTXSW_RUNNING) };
    }
    if done % BATCH == 1 && done > 1 {
        let batch = now - m.batch_start.load(Ordering::Relaxed);
        m.best_batch.fetch_min(batch, Ordering::Relaxed);
        m.batch_start.store(now, Ordering::Relaxed);
    }
    if done == SWITCHES.load(Ordering::Relaxed) {
        let (first, best) = (
            m.first.load(Ordering::Relaxed),
            m.best_batch.load(Ordering::Relaxed),
        );
        let r = record();
        // SAFETY: as above; the state goes last, so Linux never sees a
        // finished state with unfinished numbers.
        unsafe {
            addr_of_mut!((*r).switches).write_volatile(done);
            addr_of_mut!((*r).ticks).write_volatile(now - first);
            addr_of_mut!((*r).best_batch_ticks).write_volatile(if best == u64::MAX {
                0
            } else {
                best
            });
            core::sync::atomic::fence(Ordering::Release);
            addr_of_mut!((*r).state).write_volatile(CTXSW_DONE);
        }
        log!(
            tandem_rtos_firmware::core_index(),
            "ctxsw: {done} hand-offs in {} ticks (best {best} per {BATCH})",
            now - first
        );
    }
}

/// Task `t` touched `far` and was stopped: counted in the record.
fn fault(t: TaskId, esr: u64, far: u64) {
    let r = record();
    // SAFETY: the RTOS is the record's only writer.
    unsafe {
        let faults = addr_of_mut!((*r).faults).read_volatile();
        addr_of_mut!((*r).fault_task).write_volatile(u32::from(t.0));
        addr_of_mut!((*r).fault_address).write_volatile(far);
        addr_of_mut!((*r).fault_esr).write_volatile(esr);
        addr_of_mut!((*r).faults).write_volatile(faults + 1);
    }
}

// ----- Code that runs at S-EL0 (in its own pages, `.text.user`) -----

/// Entry of the hand-off pair. x0 = the first data page, x1 = pages to
/// write, x2 = the peer, x3 = 0 for the task that waits first.
#[unsafe(link_section = ".text.user")]
extern "C" fn handoff_entry(data: u64, pages: u64, peer: u64, first: u64) -> ! {
    let mut value = 0u64;
    if first == 0 {
        match syscall::user_wait_hand_off() {
            Ok(v) => value = v,
            Err(_) => syscall::user_exit(),
        }
    }
    loop {
        let mut p = 0;
        while p < pages {
            let word = data + p * PAGE + (p % LINES_PER_PAGE) * LINE;
            // Page p's word sits p cache lines into it, round the page's
            // 64 lines. At one offset in every page the pair's lines would
            // fall into 2 of a 32 KiB 4-way L1's 128 sets and evict each
            // other on every hand-off: a cache conflict measured on top of
            // the TLB's cost. (Beyond 64 pages the lines repeat: 256 pages
            // a task are 512 lines, a whole L1, and conflict anyway.)
            // SAFETY: the task's own data pages (mapped EL0 read/write,
            // app.toml's `pages` at most their 256); the offset stays
            // inside page p.
            unsafe { (word as *mut u64).write_volatile(value) };
            p += 1;
        }
        match syscall::user_chg(peer, value.wrapping_add(1)) {
            Ok(v) => value = v,
            Err(_) => syscall::user_exit(),
        }
    }
}

/// Entry of the stray task: reads `address` (x2), which is not its own.
#[unsafe(link_section = ".text.user")]
extern "C" fn stray_entry(_data: u64, _pages: u64, address: u64, _: u64) -> ! {
    // SAFETY: deliberately not: this access faults and the kernel stops
    // the task; it never returns.
    let _ = unsafe { (address as *const u64).read_volatile() };
    syscall::user_exit()
}
