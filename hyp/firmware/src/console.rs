//! The layer's few messages: on the console of the partition they concern
//! (its first device, a PL011), and, before any partition is known, on the
//! board's normal-world UART. The layer writes a line at a partition's
//! start and when it hands a partition a fault; it keeps no lock (a
//! partition stopped in the middle of a message must leave nothing held),
//! so a line may interleave with the partition's own output.

use arm_pl011_uart::{DataBits, LineConfig, PL011Registers, Parity, StopBits, Uart};
use core::fmt::{self, Write};
use core::ptr::NonNull;
use safe_mmio::UniqueMmioPointer;
use tandem_abi::partition::Partition;
use tandem_board::BOARD;

const LINE: LineConfig = LineConfig {
    data_bits: DataBits::Bits8,
    parity: Parity::None,
    stop_bits: StopBits::One,
};
const BAUD: u32 = 115_200;

/// The PL011 at `base`.
///
/// # Safety
///
/// A PL011 must be at `base`, mapped as Device memory (or the MMU off).
/// Others (the partition's Linux, another core of the layer) may use it at
/// the same time: each register access stands alone, so the worst outcome
/// is interleaved characters.
unsafe fn uart(base: u64) -> Uart<'static> {
    let regs = NonNull::new(base as *mut PL011Registers).expect("a device address");
    // SAFETY: the caller's promise.
    Uart::new(unsafe { UniqueMmioPointer::new(regs) })
}

/// Enables partition `p`'s console as a boot loader would (Linux's earlycon
/// writes to it before its driver runs; QEMU drops what a disabled PL011 is
/// given). Only at the partition's start, before its Linux runs.
pub fn enable(p: &Partition) {
    if let Some(console) = p.console() {
        // SAFETY: the partition table's console is a PL011 (the harness
        // gives only those), mapped by the layer's map; nothing of the
        // partition runs yet.
        let _ = unsafe { uart(console.base) }.enable(LINE, BAUD, BOARD.uart_clock_hz);
    }
}

struct Writer(Uart<'static>);

impl Write for Writer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}

impl Writer {
    fn put(&mut self, b: u8) {
        while self.0.is_tx_fifo_full() {
            core::hint::spin_loop();
        }
        self.0.write_word(b);
    }
}

fn line(base: u64, args: fmt::Arguments) {
    // SAFETY: `base` is a console the layer maps (a partition's, or the
    // board's normal-world UART); see `uart`.
    let mut w = Writer(unsafe { uart(base) });
    let _ = writeln!(w, "{args}");
}

/// A line on partition `p`'s console (nothing if it has none).
pub fn say(p: &Partition, args: fmt::Arguments) {
    if let Some(console) = p.console() {
        line(console.base, args);
    }
}

/// A line on the board's normal-world UART: the layer cannot go on, or does
/// not know whose console to use.
pub fn emergency(args: fmt::Arguments) {
    line(BOARD.normal_uart, args);
}
