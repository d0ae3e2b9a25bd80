//! Linux's virtio-mmio transports, reset before a restart copies its
//! images: a device the last Linux left running (a virtio-blk request in
//! flight) would otherwise write the next Linux's RAM when it completes,
//! after the copy. Writing 0 to a transport's Status register resets its
//! device (virtio 1.x, 4.2.2.1: the driver then waits for Status to read
//! 0); QEMU drains the device's block requests as it resets it, so each
//! one lands, if at all, before a byte is copied. The board lists the
//! transports (`[devices.virtio_mmio]`), the monitor's map makes them
//! non-secure Device memory; which of them a restarting Linux owns is its
//! instance's (`Instance::owns_device`: all without partitions, a
//! partition's own pages with them).

use tandem_board::BOARD;
use tandem_monitor_core::lifecycle::Instance;

/// MagicValue: "virt", little-endian.
const MAGIC_VALUE: usize = 0x000;
const MAGIC: u32 = 0x7472_6976;
/// DeviceID: 0 for a transport with no device behind it.
const DEVICE_ID: usize = 0x008;
/// Status: the driver's progress; 0 written resets the device.
const STATUS: usize = 0x070;
/// Reads of Status, after the reset, before the monitor gives up on a
/// device (QEMU reads 0 at once).
const RESET_POLLS: u32 = 1 << 20;

fn read(base: u64, offset: usize) -> u32 {
    // SAFETY: `base` is one of the board's virtio-mmio transports (from
    // `BOARD.virtio_mmio.transports()`), mapped as non-secure Device memory
    // (`memory_map`); the offsets are its 32-bit registers, and reading
    // MagicValue, DeviceID and Status has no side effects.
    unsafe { ((base as usize + offset) as *const u32).read_volatile() }
}

/// Resets every device behind a transport `instance` owns that its Linux
/// had set going (Status not 0); returns how many were reset, and how many
/// did not read back reset.
pub fn reset(instance: &Instance) -> (u32, u32) {
    let (mut reset, mut stuck) = (0, 0);
    let v = BOARD.virtio_mmio;
    for base in v.transports() {
        if !instance.owns_device(base, v.stride)
            || read(base, MAGIC_VALUE) != MAGIC
            || read(base, DEVICE_ID) == 0
            || read(base, STATUS) == 0
        {
            continue;
        }
        // SAFETY: as in `read`; Status is writable, and 0 resets the
        // device: no Linux of this instance runs (a restart's promise) and
        // no other instance owns it.
        unsafe { ((base as usize + STATUS) as *mut u32).write_volatile(0) };
        if (0..RESET_POLLS).any(|_| read(base, STATUS) == 0) {
            reset += 1;
        } else {
            stuck += 1;
        }
    }
    (reset, stuck)
}
