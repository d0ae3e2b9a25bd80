//! The monitor's log on the secure UART: one line per message, prefixed with the
//! time since reset (generic counter) and the core.
//!
//! Two ways in. [`crate::log!`] writes the line at once: cold boot, and the
//! ends of the machine (a refusal to start, a panic). [`crate::note!`] keeps
//! it in the core's ring (`tandem_monitor_core::logring`) for an idle
//! core's look loop to write out later, without waiting for the UART
//! ([`drain`]): everything Linux can make the monitor do, it can make it do
//! in a loop, so those paths never wait for the console.

use arm_sysregs::el0::accessors::read_cntpct_el0;
use arm_sysregs::el1::accessors::read_mpidr_el1;
use core::fmt::{self, Write};
use tandem_abi::MAX_CORES;
use tandem_board::BOARD;
use tandem_lock::SpinLock;
use tandem_monitor_core::logring::LogRing;
use tandem_uart::Uart;

use crate::log;

static CONSOLE: SpinLock<Option<Uart>> = SpinLock::new(None);

/// Linear index of the calling core (validated at reset, so it is in range).
pub fn core_index() -> usize {
    BOARD.core_index(read_mpidr_el1().bits()).unwrap_or(0)
}

const BAUD: u32 = 115_200;

/// Sets up the secure UART. Called once, by the boot core.
pub fn init() {
    // SAFETY: the board description says a UART of this kind lives here, it
    // is reachable at its own address (MMU off, or on with the 2 MiB around it
    // mapped as Device memory, `mmu.rs`), and this is the only pointer to it
    // in the monitor.
    let mut uart = unsafe { Uart::new(BOARD.uart, BOARD.secure_uart) };
    // A UART we cannot configure leaves us without a log, but the machine can
    // still boot: carry on silently rather than stop.
    if uart.enable(BAUD, BOARD.uart_clock_hz).is_ok() {
        *CONSOLE.lock() = Some(uart);
    }
}

/// Enables Linux's UART as a boot loader would: Linux's `earlycon` writes to
/// it before its own driver runs and expects it to be on already.
pub fn init_normal_world_uart() {
    // SAFETY: the board places Linux's UART here; the monitor touches it only
    // now, before Linux runs, and drops the pointer straight after.
    let mut uart = unsafe { Uart::new(BOARD.uart, BOARD.normal_uart) };
    if uart.enable(BAUD, BOARD.uart_clock_hz).is_err() {
        log!(
            "could not enable Linux's UART at {:#x}: early boot messages will be lost",
            BOARD.normal_uart
        );
    }
}

struct Line<'a>(&'a mut Uart);

impl Write for Line<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.0.write_byte(b'\r');
            }
            self.0.write_byte(b);
        }
        Ok(())
    }
}

/// A line's prefix: the time since reset and the core.
struct Prefix {
    us: u64,
    core: usize,
}

impl Prefix {
    fn now() -> Self {
        Self {
            us: BOARD.ticks_to_us(read_cntpct_el0().bits()),
            core: core_index(),
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:>6}.{:06}] monitor/{}",
            self.us / 1_000_000,
            self.us % 1_000_000,
            self.core
        )
    }
}

/// Writes one log line now (used by [`crate::log!`]).
pub fn print(args: fmt::Arguments) {
    let prefix = Prefix::now();
    if let Some(uart) = CONSOLE.lock().as_mut() {
        let _ = writeln!(Line(uart), "{prefix}: {args}");
    }
}

/// Bytes of each core's ring of lines kept for later: a few dozen lines.
const RING_BYTES: usize = 4096;

/// Each core's lines kept for later; only that core writes its ring.
static NOTES: [LogRing<RING_BYTES>; MAX_CORES] = [const { LogRing::new() }; MAX_CORES];

/// Keeps one log line for later (used by [`crate::note!`]): formatted now,
/// with the time it happened, written out by [`drain`]. Never waits.
pub fn keep(args: fmt::Arguments) {
    let prefix = Prefix::now();
    if let Some(ring) = NOTES.get(prefix.core) {
        ring.push_fmt(format_args!("{prefix}: {args}"));
    }
}

/// Writes out kept lines, as many as the UART takes without waiting, if no
/// other core is writing the console. Called by idle cores only.
pub fn drain() {
    if NOTES.iter().all(LogRing::is_empty) {
        return;
    }
    let Some(mut console) = CONSOLE.try_lock() else {
        return;
    };
    let Some(uart) = console.as_mut() else {
        return;
    };
    for ring in &NOTES {
        let dropped = ring.take_dropped();
        if dropped != 0 {
            let _ = writeln!(Line(uart), "{}: {dropped} lines dropped", Prefix::now());
        }
        ring.drain(|b| {
            if uart.is_tx_fifo_full() {
                return false;
            }
            if b == b'\n' {
                uart.write_word(b'\r');
            }
            uart.write_word(b);
            true
        });
    }
}

/// Writes a line even if another core died holding the console lock (panics).
pub fn print_emergency(args: fmt::Arguments) {
    // SAFETY: used only on the way to parking the core forever; a garbled
    // line is better than a silent death.
    unsafe { CONSOLE.force_unlock() };
    print(args);
}

/// Logs a line to the secure console now: cold boot and the machine's end
/// only, never on a path Linux can trigger (use [`note!`] there).
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// Keeps a line for the secure console, written out when a core is idle:
/// for every path Linux can trigger.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => { $crate::console::keep(format_args!($($arg)*)) };
}
