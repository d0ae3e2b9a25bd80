//! Machine power-off and reset through the board's secure devices: the
//! PL061 GPIO that QEMU's virt board wires to its power controller, or the
//! i.MX SNVS (power-off) and watchdog (reset). No crate covers these; a
//! register or two each do not justify one.

use core::sync::atomic::{AtomicU32, Ordering};
use tandem_board::{BOARD, Power};

/// Set to [`BOOT_READY_MAGIC`] by the boot core once .data and .bss are set
/// up (`main.rs`); the other cores wait for it (`entry.rs`) before running
/// any Rust. Kept here because a reset must clear it: RAM survives one.
pub static BOOT_READY: AtomicU32 = AtomicU32::new(0);
/// See [`BOOT_READY`].
pub const BOOT_READY_MAGIC: u32 = 0x7A4D_0001;

const GPIODIR: usize = 0x400;
/// SNVS_LPCR (from SNVS_HP's base): DP_EN and TOP together turn the
/// power off (i.MX 8M Plus Reference Manual, SNVS).
const SNVS_LPCR: usize = 0x38;
const SNVS_LPCR_DP_EN: u32 = 1 << 5;
const SNVS_LPCR_TOP: u32 = 1 << 6;
/// WDOG_WCR, a 16-bit register: WDE alone (SRS and WDA clear) asserts the
/// software reset and WDOG_B at once.
const WDOG_WCR: usize = 0x0;
const WDOG_WCR_WDE: u16 = 1 << 2;

fn pl061_pulse(base: u64, line: u8) {
    let base = base as usize;
    let bit = 1u32 << line;
    // SAFETY: the board description places a secure PL061 at `base`; GPIODIR
    // and the masked GPIODATA word for `line` are device registers there, and
    // only this function touches them, on the way to the machine stopping.
    unsafe {
        let dir = (base + GPIODIR) as *mut u32;
        dir.write_volatile(dir.read_volatile() | bit);
        // GPIODATA is addressed through a mask in address bits 9:2.
        let data = (base + ((bit as usize) << 2)) as *mut u32;
        data.write_volatile(bit);
    }
}

/// What the machine does: power off or reset.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Off,
    Reset,
}

fn stop(how: Stop) -> ! {
    match BOARD.power {
        Power::Pl061 {
            base,
            poweroff_line,
            reset_line,
        } => pl061_pulse(
            base,
            if how == Stop::Off {
                poweroff_line
            } else {
                reset_line
            },
        ),
        // SAFETY: the board places the secure SNVS at `snvs`; LPCR is one of
        // its 32-bit registers, written only here, on the way to power-off.
        Power::ImxSnvsWdog { snvs, .. } if how == Stop::Off => unsafe {
            let lpcr = (snvs as usize + SNVS_LPCR) as *mut u32;
            lpcr.write_volatile(lpcr.read_volatile() | SNVS_LPCR_DP_EN | SNVS_LPCR_TOP);
        },
        // SAFETY: the board places a secure watchdog at `wdog`; WCR is its
        // first 16-bit register, written only here, on the way to reset.
        Power::ImxSnvsWdog { wdog, .. } => unsafe {
            ((wdog as usize + WDOG_WCR) as *mut u16).write_volatile(WDOG_WCR_WDE);
        },
    }
    loop {
        aarch64_wfi();
    }
}

fn aarch64_wfi() {
    // SAFETY: waiting for an interrupt has no memory effects.
    unsafe { core::arch::asm!("wfi", options(nomem, nostack)) };
}

/// Powers the machine off (QEMU exits with status 0).
pub fn system_off() -> ! {
    crate::log!("system off");
    stop(Stop::Off)
}

/// Resets the machine; every core restarts at the reset vector.
pub fn system_reset() -> ! {
    crate::log!("system reset");
    // RAM survives a reset: make the other cores wait for the boot core again.
    BOOT_READY.store(0, Ordering::SeqCst);
    crate::mmu::clean_to_poc(BOOT_READY.as_ptr() as u64, 4);
    stop(Stop::Reset)
}
