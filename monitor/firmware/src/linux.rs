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
use tandem_abi::boot::Policies;
use tandem_abi::image::{LinuxImages, LinuxImagesError, Span};
use tandem_abi::partition::{MAX_PARTITIONS, Partitions};
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

/// One Linux the monitor starts, stops and restarts.
#[derive(Clone, Copy, Debug)]
pub struct Instance {
    /// Its partition's name ('A', ...), or 0 without partitions.
    pub name: u8,
    /// Its cores (bit per core).
    pub cores: u64,
    /// The core it boots on, at cold boot and at every restart.
    pub boot_core: usize,
    /// Its RAM: its images go there, its cores start there.
    pub ram: Span,
    /// Its images' header: bytes after the board's `linux_images`.
    pub images: u64,
    /// Its power-off powers the machine off.
    pub off_stops_machine: bool,
}

/// Every Linux of this boot.
#[derive(Clone, Copy, Debug)]
pub struct Instances {
    count: usize,
    list: [Instance; MAX_PARTITIONS],
    of_core: [Option<u8>; MAX_CORES],
    /// The normal world runs under the EL2 layer (there are partitions).
    pub hyp: bool,
}

impl Instances {
    /// One Linux on every core `policies` give it, or one per partition.
    pub fn new(policies: &Policies, partitions: Option<&Partitions>, off_stops: bool) -> Self {
        let none = Instance {
            name: 0,
            cores: 0,
            boot_core: BOOT_CORE,
            ram: Span {
                base: BOARD.normal_ram.base,
                size: BOARD.normal_ram.size,
            },
            images: 0,
            off_stops_machine: off_stops,
        };
        let mut out = Self {
            count: 1,
            list: [none; MAX_PARTITIONS],
            of_core: [None; MAX_CORES],
            hyp: partitions.is_some(),
        };
        match partitions {
            None => {
                for core in (0..policies.cores()).filter(|&c| policies.of(c).has_linux()) {
                    out.list[0].cores |= 1 << core;
                    out.of_core[core] = Some(0);
                }
            }
            Some(parts) => {
                out.count = parts.count();
                for (i, p) in parts.iter().enumerate() {
                    out.list[i] = Instance {
                        name: p.name,
                        cores: p.cores.into(),
                        boot_core: p.boot_core.into(),
                        ram: p.ram,
                        images: p.images,
                        off_stops_machine: p.off_stops_machine(),
                    };
                }
                for (core, slot) in out.of_core.iter_mut().enumerate() {
                    *slot = parts.of_core(core).map(|i| i as u8);
                }
            }
        }
        out
    }

    /// The instances.
    pub fn iter(&self) -> impl Iterator<Item = &Instance> {
        self.list[..self.count].iter()
    }

    /// Instance `index`.
    pub fn get(&self, index: usize) -> &Instance {
        &self.list[index]
    }

    /// The instance `core` belongs to, if any.
    pub fn of_core(&self, core: usize) -> Option<usize> {
        self.of_core.get(core).copied().flatten().map(usize::from)
    }
}

/// This boot's Linux instances (set once by the boot core at cold boot).
static INSTANCES: Once<Instances> = Once::new();

/// Sets this boot's instances (cold boot, before any core runs Linux).
pub fn configure(instances: Instances) {
    INSTANCES.call_once(|| instances);
}

/// This boot's instances.
pub fn instances() -> &'static Instances {
    INSTANCES.get().expect("configured at cold boot")
}

/// The instance `core` belongs to, if any.
pub fn instance_of(core: usize) -> Option<usize> {
    INSTANCES.get().and_then(|i| i.of_core(core))
}

/// Whether the normal world runs under the EL2 layer.
pub fn uses_hyp() -> bool {
    INSTANCES.get().is_some_and(|i| i.hyp)
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

/// One step of instance `index`'s restart copy (its boot core only): `None`
/// while there is more to copy, then the images checked.
pub fn copy_step(index: usize) -> Option<Result<Start, LoadError>> {
    // Restarts follow a cold boot whose `load` succeeded, which kept the
    // header; without one Linux never ran and cannot ask to restart.
    let Some(header) = IMAGES[index].get() else {
        return Some(Err(LoadError::NotLoaded));
    };
    let header_at = BOARD.linux_images + instances().get(index).images;
    let parts = header.parts();
    let part_index = COPY_PART[index].load(Ordering::Relaxed);
    let Some((_, part)) = parts.get(part_index) else {
        COPY_PART[index].store(0, Ordering::Relaxed);
        return Some(check(header));
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
pub fn load() -> Result<[Option<Start>; MAX_PARTITIONS], (usize, LoadError)> {
    let mut starts = [None; MAX_PARTITIONS];
    for (index, instance) in instances().iter().enumerate() {
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

/// Per core: Linux must stop here (set by the core that asked, cleared by
/// the core once Linux is off there).
static STOP: [AtomicBool; MAX_CORES] = [const { AtomicBool::new(false) }; MAX_CORES];
/// Per instance: a stop of it is under way or done (one at a time: a second
/// reset while it stops changes nothing).
static STOPPING: [AtomicBool; MAX_PARTITIONS] = [const { AtomicBool::new(false) }; MAX_PARTITIONS];
/// Per instance: it starts again once it is off on all its cores.
static RESTART: [AtomicBool; MAX_PARTITIONS] = [const { AtomicBool::new(false) }; MAX_PARTITIONS];
/// Per instance: which of its Linux runs (1 from cold boot).
static GENERATION: [AtomicU32; MAX_PARTITIONS] = [const { AtomicU32::new(1) }; MAX_PARTITIONS];
/// Per instance: its boot core is to start it afresh (cold boot, restart),
/// rather than a core it turns on with CPU_ON (the EL2 layer says so).
static STARTING: [AtomicBool; MAX_PARTITIONS] = [const { AtomicBool::new(true) }; MAX_PARTITIONS];

/// Whether the SYSTEM_OFF of the Linux on `core` powers the machine off.
pub fn off_stops_machine(core: usize) -> bool {
    instance_of(core).is_some_and(|i| instances().get(i).off_stops_machine)
}

/// Asks every core of instance `index` to stop its Linux, and to start it
/// again afterwards if `restart`. False if a stop is already under way.
pub fn request_stop(index: usize, restart: bool) -> bool {
    if STOPPING[index].swap(true, Ordering::AcqRel) {
        return false;
    }
    RESTART[index].store(restart, Ordering::Relaxed);
    let cores = instances().get(index).cores;
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

/// The instance `core` is to start again, if it is that instance's boot
/// core, a restart was asked for and its Linux is off on all its cores.
pub fn restart_due(core: usize) -> Option<usize> {
    let index = instance_of(core)?;
    let instance = instances().get(index);
    // The look loop asks on every pass: no restart asked, no more work.
    if core != instance.boot_core || !RESTART[index].load(Ordering::Acquire) {
        return None;
    }
    STOP.iter()
        .enumerate()
        .all(|(c, s)| instance.cores >> c & 1 == 0 || !s.load(Ordering::Acquire))
        .then_some(index)
}

/// Instance `index` was started again (its images copied, its boot core
/// pending): the stop is over; returns its new generation.
pub fn restarted(index: usize) -> u32 {
    RESTART[index].store(false, Ordering::Relaxed);
    STARTING[index].store(true, Ordering::Relaxed);
    STOPPING[index].store(false, Ordering::Release);
    GENERATION[index].fetch_add(1, Ordering::Relaxed) + 1
}

/// A restart cannot be made (the images are unusable): the instance stays
/// off.
pub fn restart_refused(index: usize) {
    RESTART[index].store(false, Ordering::Release);
}

/// Whether Linux starting on `core` now starts its instance (its boot core,
/// at cold boot or after a restart) rather than being one of its cores
/// turned on; true once per start.
pub fn take_start(core: usize) -> bool {
    instance_of(core).is_some_and(|i| {
        core == instances().get(i).boot_core && STARTING[i].swap(false, Ordering::AcqRel)
    })
}

/// The boot core of the instance `core` belongs to.
pub fn boot_core_of(core: usize) -> usize {
    instance_of(core).map_or(BOOT_CORE, |i| instances().get(i).boot_core)
}

/// The core Linux boots on without partitions, at cold boot and at every
/// restart.
pub const BOOT_CORE: usize = 0;
