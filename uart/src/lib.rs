//! The UART kinds Tandem's boards have, behind one type: Arm's PL011 (QEMU
//! virt; the `arm-pl011-uart` crate) and NXP's i.MX UART (the i.MX 8M Plus;
//! [`imx`], a small driver, as no well-kept crate covers it). The board
//! description says which kind sits where (`tandem_board::UartKind`).
#![no_std]

pub mod imx;

use arm_pl011_uart::{DataBits, LineConfig, PL011Registers, Parity, StopBits, Uart as Pl011};
use core::fmt;
use core::ptr::NonNull;
use safe_mmio::UniqueMmioPointer;
use tandem_board::UartKind;

/// 8 data bits, no parity, one stop bit: every Tandem console.
const LINE: LineConfig = LineConfig {
    data_bits: DataBits::Bits8,
    parity: Parity::None,
    stop_bits: StopBits::One,
};

/// A UART of either kind.
pub enum Uart {
    /// Arm PL011.
    Pl011(Pl011<'static>),
    /// NXP i.MX UART.
    Imx(imx::ImxUart),
}

/// The UART could not be set up (a baud rate its clock cannot make).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnableError;

impl Uart {
    /// Wraps the UART of kind `kind` whose registers are at `base`.
    ///
    /// # Safety
    ///
    /// `base` must be the register block of a UART of that kind, mapped as
    /// Device memory (or the MMU off) for as long as the value lives, and no
    /// other pointer in this program may write its registers meanwhile.
    pub unsafe fn new(kind: UartKind, base: u64) -> Self {
        match kind {
            UartKind::Pl011 => {
                let regs = NonNull::new(base as *mut PL011Registers).expect("a device address");
                // SAFETY: the caller promises a PL011 at `base`, mapped, and
                // that this is the only pointer writing it.
                Self::Pl011(Pl011::new(unsafe { UniqueMmioPointer::new(regs) }))
            }
            // SAFETY: the caller's promise, passed on.
            UartKind::Imx => Self::Imx(unsafe { imx::ImxUart::new(base) }),
        }
    }

    /// Turns the UART on: 8N1 at `baud` from a reference clock of `clock_hz`.
    pub fn enable(&mut self, baud: u32, clock_hz: u32) -> Result<(), EnableError> {
        match self {
            Self::Pl011(u) => u.enable(LINE, baud, clock_hz).map_err(|_| EnableError),
            Self::Imx(u) => u.enable(baud, clock_hz),
        }
    }

    /// Whether the transmit FIFO has no room for another byte.
    pub fn is_tx_fifo_full(&self) -> bool {
        match self {
            Self::Pl011(u) => u.is_tx_fifo_full(),
            Self::Imx(u) => u.is_tx_fifo_full(),
        }
    }

    /// Puts one byte in the transmit FIFO without waiting for room (check
    /// [`Self::is_tx_fifo_full`] first, or use [`Self::write_byte`]).
    pub fn write_word(&mut self, byte: u8) {
        match self {
            Self::Pl011(u) => u.write_word(byte),
            Self::Imx(u) => u.write_word(byte),
        }
    }

    /// Writes one byte, waiting for room in the FIFO.
    pub fn write_byte(&mut self, byte: u8) {
        while self.is_tx_fifo_full() {
            core::hint::spin_loop();
        }
        self.write_word(byte);
    }
}

impl fmt::Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            self.write_byte(b);
        }
        Ok(())
    }
}
