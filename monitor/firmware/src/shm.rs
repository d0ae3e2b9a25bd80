//! Writes the header of the region shared with Linux at boot, so the driver
//! can check it maps the right thing. Linux may scribble over it later; the
//! secure side never trusts what it reads back.

use tandem_abi::shm::Header;
use tandem_board::BOARD;

/// Writes a fresh header; the boot count survives a reset if the old header
/// still validates.
pub fn init(core_count: u32) {
    let size = BOARD.shared.size as u32;
    let ptr = BOARD.shared.base as *mut Header;
    // SAFETY: the shared region is normal-world RAM reserved for us (no-map in
    // Linux's device tree); it is aligned, large enough for a header, and Linux
    // is not running yet, so nothing else touches it.
    let old = unsafe { ptr.read_volatile() };
    let boot_count = if old.validate(size).is_ok() {
        old.boot_count.wrapping_add(1)
    } else {
        1
    };
    // SAFETY: as above.
    unsafe { ptr.write_volatile(Header::new(size, core_count, boot_count)) };
}
