//! Linux's images, and the stub its cores start through.
//!
//! At cold boot and before every restart the monitor copies Linux's kernel,
//! device tree and initramfs from secure flash (the board's `linux_images`,
//! written there by the harness) to normal RAM: Linux cannot write secure
//! flash, so every Linux starts from the images the machine started with,
//! whatever the last one did to its RAM. The stub, which lies in normal
//! memory Linux can write, is written again and checked before every
//! restart for the same reason. When a restart happens, and that no Linux
//! runs while it copies, is `tandem_monitor_core::lifecycle`'s protocol;
//! the trap code carries it out (`trap.rs`).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use spin::Once;
use tandem_abi::image::{LinuxImages, LinuxImagesError, Span};
use tandem_abi::partition::MAX_PARTITIONS;
use tandem_board::BOARD;
use tandem_monitor_core::lifecycle::{Instance, Instances};

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
    /// The stub Linux's cores start through reads back other than written.
    Stub,
}

impl core::fmt::Display for LoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Header(e) => write!(f, "header: {e:?}"),
            Self::NotAnImage => f.write_str("the kernel is no arm64 Image"),
            Self::NotADeviceTree => f.write_str("the device tree has no FDT magic"),
            Self::NotLoaded => f.write_str("no images were loaded at cold boot"),
            Self::Stub => f.write_str("the core-entry stub does not read back as written"),
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

/// Writes the stub into the shared region and checks it reads back as
/// written: at cold boot, and before every restart, when no Linux runs. The
/// region is normal memory, which the last Linux could have rewritten
/// (making the next Linux run its code first on every core); writing it
/// again from the monitor's image, which Linux cannot reach, undoes that.
pub fn install_stub() -> Result<(), LoadError> {
    // SAFETY: the two symbols bracket the stub's bytes in the monitor's
    // image (entry.rs); the destination is the last page of the shared
    // region, reserved for it by the ABI, and the stub is a few words; no
    // Linux runs (the caller's promise), so nothing else writes the page.
    let (ours, installed) = unsafe {
        let from = &raw const linux_stub_start;
        let len = (&raw const linux_stub_end).offset_from(from) as usize;
        assert!(len <= 0x1000, "the stub fits its page");
        let to = stub() as *mut u8;
        core::ptr::copy_nonoverlapping(from, to, len);
        (
            core::slice::from_raw_parts(from, len),
            core::slice::from_raw_parts(to.cast_const(), len),
        )
    };
    crate::mmu::clean_to_poc(stub(), 0x1000);
    crate::mmu::invalidate_instruction_caches();
    if ours == installed {
        Ok(())
    } else {
        Err(LoadError::Stub)
    }
}

/// Each instance's header as checked at cold boot: flash does not change
/// while the machine runs (Linux cannot write it, nor does the monitor), so
/// every restart copies by this header without reading or checking it again.
static IMAGES: [Once<LinuxImages>; MAX_PARTITIONS] = [const { Once::new() }; MAX_PARTITIONS];

/// Instance `instance`'s header in flash, checked: its images go into its
/// RAM.
fn header(instance: &Instance) -> Result<LinuxImages, LoadError> {
    let at = BOARD.linux_images + instance.images;
    if !instance.images.is_multiple_of(8) || at >= BOARD.secure_flash.end() {
        return Err(LoadError::Header(LinuxImagesError::BadMagic));
    }
    // SAFETY: inside secure flash (checked above), mapped readable
    // (`mmu.rs`) and 8-byte aligned; it is plain integers, checked before use.
    let header = unsafe { (at as *const LinuxImages).read_volatile() };
    let room = BOARD.secure_flash.end() - at;
    let ram = instance.ram;
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
fn copy(header_at: u64, part: tandem_abi::image::Part, at: u64, len: u64, kernel: bool) {
    let (from, to) = (header_at + part.offset + at, part.load + at);
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
/// Per instance, a restart's copy so far: the image, and the bytes of it
/// done.
static COPY_PART: [AtomicUsize; MAX_PARTITIONS] = [const { AtomicUsize::new(0) }; MAX_PARTITIONS];
static COPY_DONE: [AtomicU64; MAX_PARTITIONS] = [const { AtomicU64::new(0) }; MAX_PARTITIONS];

/// One step of instance `index`'s restart copy (its boot core only, with
/// that Linux off on every core): `None` while there is more to copy, then
/// the images and the stub checked.
pub fn copy_step(instances: &Instances, index: usize) -> Option<Result<Start, LoadError>> {
    // Restarts follow a cold boot whose `load` succeeded, which kept the
    // header; without one Linux never ran and cannot ask to restart.
    let Some(header) = IMAGES[index].get() else {
        return Some(Err(LoadError::NotLoaded));
    };
    let header_at = BOARD.linux_images + instances.get(index).images;
    let parts = header.parts();
    let part_index = COPY_PART[index].load(Ordering::Relaxed);
    let Some((_, part)) = parts.get(part_index) else {
        COPY_PART[index].store(0, Ordering::Relaxed);
        return Some(install_stub().and_then(|()| check(header)));
    };
    let done = COPY_DONE[index].load(Ordering::Relaxed);
    let len = STEP.min(part.size - done);
    copy(header_at, *part, done, len, part.load == header.kernel.load);
    if done + len == part.size {
        COPY_PART[index].store(part_index + 1, Ordering::Relaxed);
        COPY_DONE[index].store(0, Ordering::Relaxed);
    } else {
        COPY_DONE[index].store(done + len, Ordering::Relaxed);
    }
    None
}

/// Checks every instance's images in secure flash and copies them to its
/// RAM in one go (cold boot: nothing else runs yet); where each starts.
pub fn load(instances: &Instances) -> Result<[Option<Start>; MAX_PARTITIONS], (usize, LoadError)> {
    let mut starts = [None; MAX_PARTITIONS];
    for (index, instance) in instances.iter().enumerate() {
        let header = IMAGES[index]
            .try_call_once(|| header(instance))
            .map_err(|e| (index, e))?;
        let header_at = BOARD.linux_images + instance.images;
        for (_, part) in header.parts() {
            copy(
                header_at,
                part,
                0,
                part.size,
                part.load == header.kernel.load,
            );
        }
        starts[index] = Some(check(header).map_err(|e| (index, e))?);
    }
    Ok(starts)
}
