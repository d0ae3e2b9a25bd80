//! Linux's images and Linux's restarts.
//!
//! At cold boot and before every restart the monitor copies Linux's kernel,
//! device tree and initramfs from secure flash (the board's `linux_images`,
//! written there by the harness) to normal RAM: Linux cannot write secure
//! flash, so every Linux starts from the images the machine started with,
//! whatever the last one did to its RAM. A restart (Linux's reboot or panic,
//! PSCI SYSTEM_RESET) stops Linux on every core while the RTOS runs on, then
//! starts it again on the boot core; Linux's SYSTEM_OFF stops it the same
//! way without the start, unless the boot configuration says it powers the
//! machine off. The trap code carries the steps out (`trap.rs`); this module
//! keeps the flags the cores share.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use spin::Once;
use tandem_abi::MAX_CORES;
use tandem_abi::image::{LinuxImages, LinuxImagesError, Span};
use tandem_board::BOARD;

/// Arm64 Image header magic ("ARM\x64") at offset 0x38.
const IMAGE_MAGIC: u32 = 0x644D_5241;
/// Flattened device tree magic (big-endian 0xd00dfeed).
const FDT_MAGIC_BE: u32 = 0xEDFE_0DD0;

/// Where Linux starts: its kernel's entry, with x0 = the device tree.
#[derive(Clone, Copy, Debug)]
pub struct Start {
    /// The kernel Image's load address, its entry.
    pub entry: u64,
    /// The device tree's load address.
    pub dtb: u64,
}

/// Why Linux's images cannot be used.
#[derive(Clone, Copy, Debug)]
pub enum LoadError {
    /// The header in flash is wrong (nothing was copied).
    Header(LinuxImagesError),
    /// What was copied as the kernel is no arm64 Image.
    NotAnImage,
    /// What was copied as the device tree is none.
    NotADeviceTree,
    /// A restart without Linux's images loaded at cold boot.
    NotLoaded,
}

impl core::fmt::Display for LoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Header(e) => write!(f, "header: {e:?}"),
            Self::NotAnImage => f.write_str("the kernel is no arm64 Image"),
            Self::NotADeviceTree => f.write_str("the device tree has no FDT magic"),
            Self::NotLoaded => f.write_str("no images were loaded at cold boot"),
        }
    }
}

fn read_u32(addr: u64) -> u32 {
    // SAFETY: only called on addresses `load` checked to lie in normal RAM
    // inside an image it just copied, 4-byte aligned.
    unsafe { (addr as *const u32).read_volatile() }
}

unsafe extern "C" {
    /// The stub's first and one-past-last byte (`entry.rs`).
    static linux_stub_start: u8;
    static linux_stub_end: u8;
}

/// Where Linux's cores start: the stub in the shared region.
pub fn stub() -> u64 {
    BOARD.shared.base + u64::from(tandem_abi::shm::LINUX_STUB_OFFSET)
}

/// Copies the stub into the shared region (cold boot, before Linux runs).
pub fn install_stub() {
    // SAFETY: the two symbols bracket the stub's bytes in the monitor's
    // image (entry.rs); the destination is the last page of the shared
    // region, reserved for it by the ABI, and the stub is a few words.
    unsafe {
        let from = &raw const linux_stub_start;
        let len = (&raw const linux_stub_end).offset_from(from) as usize;
        assert!(len <= 0x1000, "the stub fits its page");
        core::ptr::copy_nonoverlapping(from, stub() as *mut u8, len);
    }
    crate::mmu::clean_to_poc(stub(), 0x1000);
    crate::mmu::invalidate_instruction_caches();
}

/// The header as checked at cold boot: flash does not change while the
/// machine runs (Linux cannot write it, nor does the monitor), so every
/// restart copies by this header without reading or checking it again.
static IMAGES: Once<LinuxImages> = Once::new();

/// The header in flash, checked.
fn header() -> Result<LinuxImages, LoadError> {
    // SAFETY: the board places the header in secure flash, mapped readable
    // (`mmu.rs`) and 8-byte aligned; it is plain integers, checked before use.
    let header = unsafe { (BOARD.linux_images as *const LinuxImages).read_volatile() };
    let room = BOARD.secure_flash.end() - BOARD.linux_images;
    let ram = Span {
        base: BOARD.normal_ram.base,
        size: BOARD.normal_ram.size,
    };
    let shared = Span {
        base: BOARD.shared.base,
        size: BOARD.shared.size,
    };
    header
        .validate(room, ram, shared)
        .map_err(LoadError::Header)?;
    Ok(header)
}

/// Words compared, and written if any differs, at a time: a cache line.
const BLOCK_WORDS: usize = 8;

/// Copies `len` bytes at `at` of `part` (checked by `header`); `kernel`:
/// cleaned to the point of coherency too, as the arm64 boot protocol asks
/// of the kernel image, which Linux's boot core reads with its MMU off (the
/// device tree and initramfs it reads with its MMU on, as the monitor wrote
/// them: cached, non-secure).
///
/// Only the cache lines that differ from the image are written: after a
/// restart most of the kernel's code is still what the image holds, and
/// leaving it unwritten keeps an emulator's translations of it (QEMU drops
/// those of any code it sees written, so the next Linux's boot translated
/// the whole kernel again); the result is the same image either way. Words
/// are compared one by one: a slice comparison would be a bytewise memcmp.
fn copy(part: tandem_abi::image::Part, at: u64, len: u64, kernel: bool) {
    let (from, to) = (BOARD.linux_images + part.offset + at, part.load + at);
    let words = (len / 8) as usize;
    // SAFETY: `header` kept the source inside the flash after the header and
    // the destination inside normal RAM, clear of the shared region and of
    // the other images, both 8-byte aligned (as is `at`, a multiple of
    // `STEP`); `at + len` stays within the part (callers); no Linux runs to
    // see a half copy, nothing else holds these bytes.
    let (from_words, to_words, from_tail, to_tail) = unsafe {
        (
            core::slice::from_raw_parts(from as *const u64, words),
            core::slice::from_raw_parts_mut(to as *mut u64, words),
            core::slice::from_raw_parts((from + 8 * words as u64) as *const u8, len as usize % 8),
            core::slice::from_raw_parts_mut((to + 8 * words as u64) as *mut u8, len as usize % 8),
        )
    };
    for (from, to) in from_words
        .chunks(BLOCK_WORDS)
        .zip(to_words.chunks_mut(BLOCK_WORDS))
    {
        if from.iter().zip(to.iter()).any(|(a, b)| a != b) {
            to.copy_from_slice(from);
        }
    }
    to_tail.copy_from_slice(from_tail);
    if kernel {
        crate::mmu::clean_to_poc(part.load + at, len);
    }
}

/// After the copy: the images must be what they say.
fn check(header: &LinuxImages) -> Result<Start, LoadError> {
    if header.kernel.size < 0x40 || read_u32(header.kernel.load + 0x38) != IMAGE_MAGIC {
        return Err(LoadError::NotAnImage);
    }
    if read_u32(header.dtb.load) != FDT_MAGIC_BE {
        return Err(LoadError::NotADeviceTree);
    }
    // No core may run the last Linux's code from its instruction cache.
    crate::mmu::invalidate_instruction_caches();
    Ok(Start {
        entry: header.kernel.load,
        dtb: header.dtb.load,
    })
}

/// Bytes copied per step of a restart: the boot core copies in steps so
/// that the RTOS's interrupts there wait for one step at most (a few
/// thousand instructions), never for the whole copy.
const STEP: u64 = 32 * 1024;
/// A restart's copy so far: the image, and the bytes of it done.
static COPY_PART: AtomicUsize = AtomicUsize::new(0);
static COPY_DONE: AtomicU64 = AtomicU64::new(0);

/// One step of a restart's copy (boot core only): `None` while there is
/// more to copy, then the images checked.
pub fn copy_step() -> Option<Result<Start, LoadError>> {
    // Restarts follow a cold boot whose `load` succeeded, which kept the
    // header; without one Linux never ran and cannot ask to restart.
    let Some(header) = IMAGES.get() else {
        return Some(Err(LoadError::NotLoaded));
    };
    let parts = header.parts();
    let index = COPY_PART.load(Ordering::Relaxed);
    let Some((_, part)) = parts.get(index) else {
        COPY_PART.store(0, Ordering::Relaxed);
        return Some(check(header));
    };
    let done = COPY_DONE.load(Ordering::Relaxed);
    let len = STEP.min(part.size - done);
    copy(*part, done, len, part.load == header.kernel.load);
    if done + len == part.size {
        COPY_PART.store(index + 1, Ordering::Relaxed);
        COPY_DONE.store(0, Ordering::Relaxed);
    } else {
        COPY_DONE.store(done + len, Ordering::Relaxed);
    }
    None
}

/// Checks Linux's images in secure flash and copies them to normal RAM in
/// one go (cold boot: nothing else runs yet).
pub fn load() -> Result<Start, LoadError> {
    let header = IMAGES.try_call_once(header)?;
    for (_, part) in header.parts() {
        copy(part, 0, part.size, part.load == header.kernel.load);
    }
    check(header)
}

/// Per core: Linux must stop here (set by the core that asked, cleared by
/// the core once Linux is off there).
static STOP: [AtomicBool; MAX_CORES] = [const { AtomicBool::new(false) }; MAX_CORES];
/// A stop of Linux is under way or done (one at a time: a second reset
/// while Linux stops changes nothing).
static STOPPING: AtomicBool = AtomicBool::new(false);
/// Linux starts again once it is off everywhere.
static RESTART: AtomicBool = AtomicBool::new(false);
/// Which Linux runs (1 from cold boot).
static GENERATION: AtomicU32 = AtomicU32::new(1);
/// Linux's SYSTEM_OFF powers the machine off (boot configuration).
static OFF_STOPS_MACHINE: AtomicBool = AtomicBool::new(false);

/// The boot configuration's choice for Linux's SYSTEM_OFF.
pub fn set_off_stops_machine(on: bool) {
    OFF_STOPS_MACHINE.store(on, Ordering::Relaxed);
}

/// Whether Linux's SYSTEM_OFF powers the machine off.
pub fn off_stops_machine() -> bool {
    OFF_STOPS_MACHINE.load(Ordering::Relaxed)
}

/// Asks each core of `cores` (a bit mask) to stop Linux, and to start it
/// again afterwards if `restart`. False if a stop is already under way.
pub fn request_stop(cores: u64, restart: bool) -> bool {
    if STOPPING.swap(true, Ordering::AcqRel) {
        return false;
    }
    RESTART.store(restart, Ordering::Relaxed);
    for (core, stop) in STOP.iter().enumerate() {
        if cores >> core & 1 != 0 {
            stop.store(true, Ordering::Release);
        }
    }
    true
}

/// Whether Linux must stop on `core`.
#[inline(always)]
pub fn stop_requested(core: usize) -> bool {
    STOP[core].load(Ordering::Acquire)
}

/// Linux is off on `core` now.
pub fn stopped(core: usize) {
    STOP[core].store(false, Ordering::Release);
}

/// Whether `core`, the boot core, is to start Linux again: a restart was
/// asked for and Linux is off on every core.
pub fn restart_due(core: usize) -> bool {
    core == BOOT_CORE
        && RESTART.load(Ordering::Acquire)
        && STOP.iter().all(|s| !s.load(Ordering::Acquire))
}

/// Linux was started again (its images copied, the boot core pending):
/// the stop is over; returns the new generation.
pub fn restarted() -> u32 {
    RESTART.store(false, Ordering::Relaxed);
    STOPPING.store(false, Ordering::Release);
    GENERATION.fetch_add(1, Ordering::Relaxed) + 1
}

/// A restart cannot be made (the images are unusable): Linux stays off.
pub fn restart_refused() {
    RESTART.store(false, Ordering::Release);
}

/// The core Linux boots on, at cold boot and at every restart.
pub const BOOT_CORE: usize = 0;
