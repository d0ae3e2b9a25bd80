//! The RTOS's log lines on the secure UART (set up by the monitor, shared with
//! it), prefixed with the time and the core.

use core::fmt::{self, Write};
use tandem_board::BOARD;
use tandem_lock::SpinLock;
use tandem_uart::Uart;

static CONSOLE: SpinLock<Option<Uart>> = SpinLock::new(None);

/// Takes the secure UART as the monitor left it (enabled). Once, by the first
/// core in.
pub fn init() {
    // SAFETY: the board places the secure UART here; within the RTOS this is
    // the only pointer to it (the monitor writes to it only between lines,
    // from EL3, which at worst interleaves characters).
    *CONSOLE.lock() = Some(unsafe { Uart::new(BOARD.uart, BOARD.secure_uart) });
}

struct Line<'a>(&'a mut Uart);

impl Write for Line<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.0.write_word(b'\r');
            }
            self.0.write_word(b);
        }
        Ok(())
    }
}

/// Writes one log line (used by [`crate::log!`]).
pub fn print(core: usize, args: fmt::Arguments) {
    let us = BOARD.ticks_to_us(crate::hw::now());
    crate::hw::without_interrupts(|| {
        if let Some(uart) = CONSOLE.lock().as_mut() {
            let _ = writeln!(
                Line(uart),
                "[{:>6}.{:06}] rtos/{}: {}",
                us / 1_000_000,
                us % 1_000_000,
                core,
                args
            );
        }
    });
}

/// Writes a line whatever state the console is in (for panics): takes the
/// UART even if nobody set it up yet or a dead core holds the lock.
pub fn print_emergency(core: usize, args: fmt::Arguments) {
    // SAFETY: used only on the way to parking the core forever; a garbled
    // line is better than a silent death.
    unsafe { CONSOLE.force_unlock() };
    if CONSOLE.lock().is_none() {
        init();
    }
    print(core, args);
}

/// Logs a line from `core` to the secure console.
#[macro_export]
macro_rules! log {
    ($core:expr, $($arg:tt)*) => { $crate::console::print($core, format_args!($($arg)*)) };
}
