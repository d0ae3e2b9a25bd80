//! Tandem's secure-world RTOS on QEMU virt. It runs first on every core it
//! owns: each core takes its interrupts at S-EL1 and, whenever it has nothing
//! to do, yields the core to Linux through the monitor (SafeG's scheme).
#![no_std]
#![no_main]

mod console;
mod entry;
mod hw;

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use entry::{Frame, MAX_CORES};
use tandem_board::BOARD;

/// Tick period: 1 ms.
const TICK: u64 = BOARD.counter_hz / 1000;

/// Per-core counters.
struct CoreStats {
    ticks: AtomicU64,
    busy: AtomicU64,
}

static STATS: [CoreStats; MAX_CORES] = [const {
    CoreStats {
        ticks: AtomicU64::new(0),
        busy: AtomicU64::new(0),
    }
}; MAX_CORES];
static NEXT_TICK: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
/// The core that prints the status line (the first RTOS core).
static REPORTER: AtomicUsize = AtomicUsize::new(usize::MAX);

fn core_index() -> usize {
    let mpidr: u64;
    // SAFETY: reading MPIDR has no side effects.
    unsafe { core::arch::asm!("mrs {}, mpidr_el1", out(reg) mpidr, options(nomem, nostack)) };
    (mpidr & 0xFF) as usize
}

/// Each core's start, from `_start`; `first` is true on the core that set
/// up memory.
extern "C" fn rtos_main(core: usize, _shared: u64, first: u64) -> ! {
    if first != 0 {
        console::init();
        hw::init_global();
        REPORTER.store(core, Ordering::SeqCst);
        log!(core, "Tandem RTOS {} up", env!("CARGO_PKG_VERSION"));
        GLOBAL_READY.store(1, Ordering::SeqCst);
    } else {
        while GLOBAL_READY.load(Ordering::SeqCst) == 0 {
            core::hint::spin_loop();
        }
    }
    hw::init_core(core);
    let first_tick = hw::now() + TICK;
    NEXT_TICK[core].store(first_tick, Ordering::Relaxed);
    hw::set_timer(first_tick);
    log!(
        core,
        "core ready, tick {} us",
        TICK * 1_000_000 / BOARD.counter_hz
    );
    idle(core)
}

static GLOBAL_READY: AtomicU64 = AtomicU64::new(0);

/// Nothing to run: give the core to Linux; when an interrupt brings it back,
/// take the interrupt, account the busy time, and give it back again.
fn idle(core: usize) -> ! {
    loop {
        hw::yield_to_linux();
        let back = hw::now();
        hw::take_interrupts();
        STATS[core]
            .busy
            .fetch_add(hw::now() - back, Ordering::Relaxed);
    }
}

/// IRQ at S-EL1: RTOS interrupts only.
extern "C" fn irq_handler(frame: *mut Frame) -> *mut Frame {
    let core = core_index();
    while let Some(intid) = hw::acknowledge() {
        if intid.raw_value() >= 1020 {
            break;
        }
        if intid == hw::TIMER {
            tick(core);
        } else {
            log!(core, "unexpected interrupt {intid:?}");
        }
        hw::end(intid);
    }
    frame
}

fn tick(core: usize) {
    let next = NEXT_TICK[core].load(Ordering::Relaxed) + TICK;
    NEXT_TICK[core].store(next, Ordering::Relaxed);
    hw::set_timer(next);
    let ticks = STATS[core].ticks.fetch_add(1, Ordering::Relaxed) + 1;
    if core == REPORTER.load(Ordering::Relaxed) && ticks.is_multiple_of(1000) {
        status(core, ticks / 1000);
    }
}

fn status(core: usize, seconds: u64) {
    let mut line = heapless_line::Line::new();
    for (c, s) in STATS.iter().enumerate().take(4) {
        let ticks = s.ticks.load(Ordering::Relaxed);
        if ticks == 0 {
            continue;
        }
        let busy_us = s.busy.load(Ordering::Relaxed) * 1_000_000 / BOARD.counter_hz;
        line.push(format_args!(" | core{c}: {ticks} ticks, busy {busy_us} us"));
    }
    log!(core, "{seconds} s{}", line.as_str());
}

mod heapless_line {
    //! A fixed-size line buffer for the status line.
    use core::fmt::{self, Write};

    pub struct Line {
        buf: [u8; 256],
        len: usize,
    }

    impl Line {
        pub const fn new() -> Self {
            Self {
                buf: [0; 256],
                len: 0,
            }
        }

        pub fn push(&mut self, args: fmt::Arguments) {
            let _ = self.write_fmt(args);
        }

        pub fn as_str(&self) -> &str {
            core::str::from_utf8(&self.buf[..self.len]).unwrap_or("?")
        }
    }

    impl Write for Line {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let n = s.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }
}

/// Synchronous exception at S-EL1: a bug in the RTOS.
extern "C" fn sync_handler(frame: *mut Frame) -> *mut Frame {
    let esr: u64;
    // SAFETY: reading ESR has no side effects.
    unsafe { core::arch::asm!("mrs {}, esr_el1", out(reg) esr, options(nomem, nostack)) };
    // SAFETY: the frame was just saved by the vector code on this stack.
    let elr = unsafe { (*frame).elr };
    panic!("synchronous exception ESR {esr:#x} at {elr:#x}");
}

/// An exception the RTOS never expects.
extern "C" fn fault(esr: u64, elr: u64, far: u64) -> ! {
    panic!("unexpected exception ESR {esr:#x} ELR {elr:#x} FAR {far:#x}");
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    log!(core_index(), "PANIC: {info}");
    loop {
        // SAFETY: waiting has no memory effects.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}
