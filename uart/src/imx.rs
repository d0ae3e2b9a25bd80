//! The NXP i.MX UART (i.MX 6/7/8M; the i.MX 8M Plus Reference Manual's
//! "UART" chapter): the few registers a console needs. Transmit only, no
//! interrupts, no DMA; the receiver is turned on so the line is complete,
//! but nothing reads it here (the secure console is output only).

use crate::EnableError;

/// Register offsets (bytes from the block's base).
mod reg {
    /// Transmitter register.
    pub const UTXD: usize = 0x40;
    /// Control register 1.
    pub const UCR1: usize = 0x80;
    /// Control register 2.
    pub const UCR2: usize = 0x84;
    /// Control register 3.
    pub const UCR3: usize = 0x88;
    /// FIFO control register.
    pub const UFCR: usize = 0x90;
    /// Baud rate increment register.
    pub const UBIR: usize = 0xA4;
    /// Baud rate modulator register.
    pub const UBMR: usize = 0xA8;
    /// Test register (FIFO states).
    pub const UTS: usize = 0xB4;
}

/// UCR1.UARTEN: the UART on.
const UCR1_UARTEN: u32 = 1 << 0;
/// UCR2: SRST (no reset; active low), RXEN, TXEN, WS (8 bits), IRTS (ignore RTS).
const UCR2_8N1: u32 = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 5 | 1 << 14;
/// UCR3.RXDMUXSEL: must be set on the i.MX 6 and later.
const UCR3_RXDMUXSEL: u32 = 1 << 2;
/// UFCR: receiver trigger 1, reference clock divider 1 (RFDIV = 0b101),
/// transmitter trigger 2.
const UFCR_DIV1: u32 = 1 | 0b101 << 7 | 2 << 10;
/// UTS.TXFULL: the transmit FIFO is full.
const UTS_TXFULL: u32 = 1 << 4;

/// One i.MX UART.
pub struct ImxUart {
    base: usize,
}

impl ImxUart {
    /// Wraps the UART whose registers are at `base`.
    ///
    /// # Safety
    ///
    /// `base` must be an i.MX UART's register block, mapped as Device memory
    /// (or the MMU off) while the value lives, and written by nothing else.
    pub const unsafe fn new(base: u64) -> Self {
        Self {
            base: base as usize,
        }
    }

    fn read(&self, offset: usize) -> u32 {
        // SAFETY: `new`'s caller promised the register block at `base`;
        // `offset` is one of `reg`'s, inside it and 4-byte aligned.
        unsafe { ((self.base + offset) as *const u32).read_volatile() }
    }

    fn write(&mut self, offset: usize, value: u32) {
        // SAFETY: as in `read`; only this value writes the block.
        unsafe { ((self.base + offset) as *mut u32).write_volatile(value) }
    }

    /// 8N1 at `baud` from a reference clock of `clock_hz` (see [`ubmr`]).
    pub fn enable(&mut self, baud: u32, clock_hz: u32) -> Result<(), EnableError> {
        let ubmr = ubmr(baud, clock_hz).ok_or(EnableError)?;
        self.write(reg::UCR1, 0);
        self.write(reg::UCR2, UCR2_8N1);
        self.write(reg::UCR3, UCR3_RXDMUXSEL);
        self.write(reg::UFCR, UFCR_DIV1);
        // UBIR before UBMR: writing UBMR loads the pair.
        self.write(reg::UBIR, 15);
        self.write(reg::UBMR, ubmr);
        self.write(reg::UCR1, UCR1_UARTEN);
        Ok(())
    }

    /// Whether the transmit FIFO is full.
    pub fn is_tx_fifo_full(&self) -> bool {
        self.read(reg::UTS) & UTS_TXFULL != 0
    }

    /// Puts one byte in the transmit FIFO.
    pub fn write_word(&mut self, byte: u8) {
        self.write(reg::UTXD, u32::from(byte));
    }
}

/// UBMR for `baud` with UBIR = 15: baud = clock / (16 × (UBMR + 1) /
/// (UBIR + 1)) = clock / (UBMR + 1); None if the register cannot hold it.
pub const fn ubmr(baud: u32, clock_hz: u32) -> Option<u32> {
    if baud == 0 || clock_hz < baud {
        return None;
    }
    let v = clock_hz / baud - 1;
    if v > 0xFFFF { None } else { Some(v) }
}

#[cfg(test)]
mod tests {
    use super::ubmr;

    #[test]
    fn divisors() {
        // 24 MHz / 208 = 115 385 Bd: 0.16 % off 115 200.
        assert_eq!(ubmr(115_200, 24_000_000), Some(207));
        assert_eq!(ubmr(1_500_000, 24_000_000), Some(15));
        assert_eq!(ubmr(0, 24_000_000), None);
        assert_eq!(ubmr(115_200, 100_000), None);
        assert_eq!(ubmr(1, 24_000_000), None, "UBMR is 16 bits");
    }
}
