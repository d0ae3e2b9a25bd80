//! The monitor's log on the secure UART: one line per message, prefixed with the
//! time since reset (generic counter) and the core.

use arm_pl011_uart::{DataBits, LineConfig, PL011Registers, Parity, StopBits, Uart};
use arm_sysregs::el0::accessors::read_cntpct_el0;
use arm_sysregs::el1::accessors::read_mpidr_el1;
use core::fmt::{self, Write};
use core::ptr::NonNull;
use safe_mmio::UniqueMmioPointer;
use tandem_board::BOARD;
use tandem_lock::SpinLock;

use crate::log;

static CONSOLE: SpinLock<Option<Uart<'static>>> = SpinLock::new(None);

/// Linear index of the calling core (validated at reset, so it is in range).
pub fn core_index() -> usize {
    BOARD.core_index(read_mpidr_el1().bits()).unwrap_or(0)
}

const LINE: LineConfig = LineConfig {
    data_bits: DataBits::Bits8,
    parity: Parity::None,
    stop_bits: StopBits::One,
};
const BAUD: u32 = 115_200;

/// Sets up the secure UART. Called once, by the boot core.
pub fn init() {
    let regs = NonNull::new(BOARD.secure_uart as *mut PL011Registers).unwrap();
    // SAFETY: the board description says a PL011 lives here, it is reachable
    // at its own address (MMU off, or on with the 2 MiB around it mapped as
    // Device memory, `mmu.rs`), and this is the only pointer to it in the monitor.
    let mut uart = Uart::new(unsafe { UniqueMmioPointer::new(regs) });
    // A UART we cannot configure leaves us without a log, but the machine can
    // still boot: carry on silently rather than stop.
    if uart.enable(LINE, BAUD, BOARD.uart_clock_hz).is_ok() {
        *CONSOLE.lock() = Some(uart);
    }
}

/// Enables Linux's UART as a boot loader would: Linux's `earlycon` writes to
/// it before its own driver runs and expects it to be on already.
pub fn init_normal_world_uart() {
    let regs = NonNull::new(BOARD.normal_uart as *mut PL011Registers).unwrap();
    // SAFETY: the board places Linux's PL011 here; the monitor touches it only
    // now, before Linux runs, and drops the pointer straight after.
    let mut uart = Uart::new(unsafe { UniqueMmioPointer::new(regs) });
    if uart.enable(LINE, BAUD, BOARD.uart_clock_hz).is_err() {
        log!(
            "could not enable Linux's UART at {:#x}: early boot messages will be lost",
            BOARD.normal_uart
        );
    }
}

struct Line<'a>(&'a mut Uart<'static>);

impl Write for Line<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.0.write_str("\r")?;
            }
            self.0
                .write_str(core::str::from_utf8(&[b]).unwrap_or("?"))?;
        }
        Ok(())
    }
}

/// Writes one log line (used by [`crate::log!`]).
pub fn print(args: fmt::Arguments) {
    let us = BOARD.ticks_to_us(read_cntpct_el0().bits());
    let core = core_index();
    if let Some(uart) = CONSOLE.lock().as_mut() {
        let _ = writeln!(
            Line(uart),
            "[{:>6}.{:06}] monitor/{}: {}",
            us / 1_000_000,
            us % 1_000_000,
            core,
            args
        );
    }
}

/// Writes a line even if another core died holding the console lock (panics).
pub fn print_emergency(args: fmt::Arguments) {
    // SAFETY: used only on the way to parking the core forever; a garbled
    // line is better than a silent death.
    unsafe { CONSOLE.force_unlock() };
    print(args);
}

/// Logs a line to the secure console.
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}
