//! Linux's images, and the stub its cores start through.
//!
//! At cold boot and before every restart the monitor copies Linux's kernel,
//! device tree and initramfs from secure flash (the board's `linux_images`,
//! written there by the harness) to normal RAM: Linux cannot write secure
//! flash, so every Linux starts from the images the machine started with,
//! whatever the last one did to its RAM. The stub, which lies in normal
//! memory Linux can write, is written again and checked before every
//! restart for the same reason. Before a restart copies, the devices that
//! Linux owns are reset (`virtio.rs`), and the copy's decisions and cache
//! maintenance are `tandem_monitor_core::restart`'s. When a restart
//! happens, and that no Linux runs while it copies, is
//! `tandem_monitor_core::lifecycle`'s protocol; the trap code carries it
//! out (`trap.rs`).

use spin::{Mutex, Once};
use tandem_abi::image::{LinuxImages, LinuxImagesError, Span};
use tandem_abi::partition::MAX_PARTITIONS;
use tandem_board::BOARD;
use tandem_monitor_core::lifecycle::{Instance, Instances};
use tandem_monitor_core::restart::{self, Image, Machine, Piece, Progress, Quiesced, Stepped};

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

/// Linux's RAM and its images in flash as the monitor sees them (MMU and
/// caches on), the cache maintenance, and the devices of the instance
/// being restarted: the machine `restart` in `monitor/core` decides on.
struct Ram<'a> {
    /// Whose devices `quiesce` resets (none at cold boot).
    instance: Option<&'a Instance>,
}

impl Ram<'_> {
    /// # Safety
    ///
    /// Every address the copy is given must lie in an image in secure flash
    /// or in normal RAM where `header` let it go, and no Linux may run on
    /// that RAM meanwhile (cold boot, or a restart with that Linux off on
    /// all its cores).
    unsafe fn new(instance: Option<&Instance>) -> Ram<'_> {
        Ram { instance }
    }
}

impl Machine for Ram<'_> {
    fn quiesce(&mut self) -> Quiesced {
        let (reset, stuck) = self.instance.map_or((0, 0), crate::virtio::reset);
        Quiesced { reset, stuck }
    }

    #[inline(always)]
    fn read(&self, addr: u64) -> u64 {
        // SAFETY: `Ram::new`'s promise: inside an image in flash or in
        // normal RAM, mapped (`mmu.rs`), 8-byte aligned (`restart::copy`).
        unsafe { (addr as *const u64).read() }
    }

    #[inline(always)]
    fn write(&mut self, addr: u64, value: u64) {
        // SAFETY: `Ram::new`'s promise: normal RAM no Linux uses now,
        // mapped writable, 8-byte aligned.
        unsafe { (addr as *mut u64).write(value) }
    }

    fn read_byte(&self, addr: u64) -> u8 {
        // SAFETY: as in `read`.
        unsafe { (addr as *const u8).read() }
    }

    fn write_byte(&mut self, addr: u64, value: u8) {
        // SAFETY: as in `write`.
        unsafe { (addr as *mut u8).write(value) }
    }

    fn clean_invalidate(&mut self, addr: u64, len: u64) {
        crate::mmu::clean_invalidate_to_poc(addr, len);
    }

    fn clean(&mut self, addr: u64, len: u64) {
        crate::mmu::clean_to_poc(addr, len);
    }
}

/// Instance `header`'s images as `restart` copies them (checked by
/// `header`): from flash after the header at `header_at` to their load
/// addresses; the kernel cleaned to the point of coherency, as the arm64
/// boot protocol asks (Linux's boot core reads it with its MMU off; the
/// device tree and initramfs it reads with its MMU on, as the monitor
/// wrote them: cached, non-secure).
fn images(header_at: u64, header: &LinuxImages) -> [Image; 3] {
    header.parts().map(|(_, part)| Image {
        from: header_at + part.offset,
        to: part.load,
        size: part.size,
        kernel: part.load == header.kernel.load,
    })
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

/// Per instance, where its restart is (its boot core alone steps it).
static PROGRESS: [Mutex<Progress>; MAX_PARTITIONS] =
    [const { Mutex::new(Progress::Start) }; MAX_PARTITIONS];

/// What a step of a restart did.
pub enum Restart {
    /// The instance's devices were reset (its first step).
    Quiesced(Quiesced),
    /// Part of an image was copied: more to do.
    Copying,
    /// All copied, the images and the stub checked: Linux starts here.
    Ready(Start),
}

/// One step of instance `index`'s restart (its boot core only, with that
/// Linux off on every core): its devices reset, then its images copied
/// from flash `restart::STEP` bytes at a time, each destination cleaned
/// and invalidated before it is compared (`restart.rs` in `monitor/core`
/// says why), then the stub written and everything checked.
pub fn copy_step(instances: &Instances, index: usize) -> Result<Restart, LoadError> {
    // Restarts follow a cold boot whose `load` succeeded, which kept the
    // header; without one Linux never ran and cannot ask to restart.
    let Some(header) = IMAGES[index].get() else {
        return Err(LoadError::NotLoaded);
    };
    let instance = instances.get(index);
    let images = images(BOARD.linux_images + instance.images, header);
    // SAFETY: the images are the header's, checked at cold boot; no Linux
    // of this instance runs (the caller's promise).
    let mut ram = unsafe { Ram::new(Some(instance)) };
    match restart::step(&mut ram, &mut PROGRESS[index].lock(), &images) {
        Stepped::Quiesced(q) => Ok(Restart::Quiesced(q)),
        Stepped::Copied(_) => Ok(Restart::Copying),
        Stepped::Done => install_stub()
            .and_then(|()| check(header))
            .map(Restart::Ready),
    }
}

/// Checks every instance's images in secure flash and copies them to its
/// RAM in one go (cold boot: nothing else runs yet); where each starts.
pub fn load(instances: &Instances) -> Result<[Option<Start>; MAX_PARTITIONS], (usize, LoadError)> {
    let mut starts = [None; MAX_PARTITIONS];
    for (index, instance) in instances.iter().enumerate() {
        let header = IMAGES[index]
            .try_call_once(|| header(instance))
            .map_err(|e| (index, e))?;
        // SAFETY: the images are the header's, just checked; nothing runs
        // Linux yet. No device to quiesce: the machine was just reset.
        let mut ram = unsafe { Ram::new(None) };
        for image in images(BOARD.linux_images + instance.images, header) {
            restart::copy(
                &mut ram,
                Piece {
                    from: image.from,
                    to: image.to,
                    len: image.size,
                    kernel: image.kernel,
                },
            );
        }
        starts[index] = Some(check(header).map_err(|e| (index, e))?);
    }
    Ok(starts)
}
