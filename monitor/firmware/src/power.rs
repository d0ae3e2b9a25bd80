//! Machine power-off and reset through the secure PL061 GPIO that QEMU's virt
//! board wires to its power controller. No crate covers the PL061; two
//! registers do not justify one.

use core::sync::atomic::{AtomicU32, Ordering};
use tandem_board::BOARD;

/// Set to [`BOOT_READY_MAGIC`] by the boot core once .data and .bss are set
/// up (`main.rs`); the other cores wait for it (`entry.rs`) before running
/// any Rust. Kept here because a reset must clear it: RAM survives one.
pub static BOOT_READY: AtomicU32 = AtomicU32::new(0);
/// See [`BOOT_READY`].
pub const BOOT_READY_MAGIC: u32 = 0x7A4D_0001;

const GPIODIR: usize = 0x400;

fn pulse(line: u8) -> ! {
    let base = BOARD.secure_gpio as usize;
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
    pulse(BOARD.poweroff_gpio_line)
}

/// Resets the machine; every core restarts at the reset vector.
pub fn system_reset() -> ! {
    crate::log!("system reset");
    // RAM survives a reset: make the other cores wait for the boot core again.
    BOOT_READY.store(0, Ordering::SeqCst);
    crate::mmu::clean_to_poc(BOOT_READY.as_ptr() as u64, 4);
    pulse(BOARD.reset_gpio_line)
}
