//! Memory protection for S-EL0 tasks (paper 004 on Armv8): tasks that run
//! at S-EL0 in their own address space, enter the kernel by `svc`, and are
//! stopped, not the RTOS, when they touch memory that is not theirs. What
//! they do, and what is measured of them, is their application's.
//!
//! Every RTOS core runs with its S-EL1 MMU on, with the kernel's identity
//! map (tables built by `tandem-rtos-mm`: its RAM Normal write-back, the
//! shared region Normal write-back and non-secure as Linux and the monitor
//! map it, its devices Device memory), so that its exclusives and its view
//! of the shared region are architecturally defined. Protected tasks are
//! off unless an application's start step asks for them
//! (`tandem_rtos_kernel::app::Start::protect`): then switching to an S-EL0
//! task writes TTBR0 with its tables and ASID, or with ASID 0 and a
//! whole-TLB invalidation (`flush`).

use crate::frame::Frame;
use crate::log;
use crate::table::apps;
use arm_sysregs::el1::accessors::write_ttbr0_el1;
use arm_sysregs::el1::registers::Ttbr0El1;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};
use tandem_abi::MAX_CORES;
use tandem_board::BOARD;
use tandem_rtos_kernel::app::{MAX_USER_TASKS, Started};
use tandem_rtos_kernel::{MAX_TASKS, TaskId};
use tandem_rtos_mm::{AddressSpace, Exception, Kind, Mapping, PAGE, TlbMode, kernel_map};
use tandem_runtime::Translation;

/// Address spaces of S-EL0 tasks.
const PROTECTED: usize = MAX_USER_TASKS;
/// Most data pages an S-EL0 task has after its stack page.
pub const MAX_PAGES: usize = 256;
/// PSTATE of a protected task: EL0t, IRQs on, FIQs (Linux's) and aborts
/// masked.
const SPSR_EL0: u64 = 0x340;

/// One protected task's memory: its stack page and the pages it writes.
#[repr(C, align(4096))]
struct UserArea {
    stack: [u8; PAGE as usize],
    data: [[u8; PAGE as usize]; MAX_PAGES],
}

#[unsafe(link_section = ".stacks")]
static mut USER: [UserArea; PROTECTED] = [const {
    UserArea {
        stack: [0; PAGE as usize],
        data: [[0; PAGE as usize]; MAX_PAGES],
    }
}; PROTECTED];

/// Address space 0 is the kernel's alone; 1.. are the protected tasks'.
static mut SPACES: [AddressSpace; PROTECTED + 1] = [AddressSpace::EMPTY; PROTECTED + 1];

unsafe extern "C" {
    static __user_text_start: u8;
    static __user_text_end: u8;
}

/// The kernel's address space is built: every core turns its MMU on.
static MMU: AtomicBool = AtomicBool::new(false);
/// Protected tasks are on.
static ON: AtomicBool = AtomicBool::new(false);
static FLUSH: AtomicBool = AtomicBool::new(false);
static PAGES: AtomicU32 = AtomicU32::new(0);
/// x2 and x3 of each S-EL0 task at its start, by task ID.
static ARGS: spin::Once<[[u64; 2]; MAX_TASKS]> = spin::Once::new();
/// Address space index (0: kernel) each core runs with now.
static SPACE_OF_CORE: [AtomicU8; MAX_CORES] = [const { AtomicU8::new(0) }; MAX_CORES];

/// Whether protected tasks are on.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

fn space_ptr(space: usize) -> *mut AddressSpace {
    // SAFETY: only the address is taken.
    unsafe { addr_of_mut!(SPACES[space]) }
}

fn space_pa(space: usize) -> u64 {
    space_ptr(space) as u64
}

fn area(slot: usize) -> u64 {
    // SAFETY: only the address is taken.
    (unsafe { addr_of_mut!(USER[slot]) }) as u64
}

/// Builds the kernel's address space, and the protected tasks' if an
/// application asked for protection: once, by the first core, before any
/// core turns its MMU on.
pub fn init(started: &Started) {
    ARGS.call_once(|| started.user_args);
    let (kernel, n) = kernel_map(&BOARD);
    let kernel = &kernel[..n];
    // SAFETY: no core uses the tables yet (MMUs are off) and only this core
    // builds them.
    if let Err(e) = unsafe { (*space_ptr(0)).build(space_pa(0), kernel, &[]) } {
        panic!("the kernel's address space: {e:?}");
    }
    MMU.store(true, Ordering::Release);
    let Some(protection) = started.protection else {
        return;
    };
    let pages = protection.pages.min(MAX_PAGES as u32);
    let (text, text_end) = (
        core::ptr::addr_of!(__user_text_start) as u64,
        core::ptr::addr_of!(__user_text_end) as u64,
    );
    let code = Mapping {
        base: text,
        size: text_end - text,
        kind: Kind::UserCode,
    };
    for space in 1..=PROTECTED {
        let pa = space_pa(space);
        let data = Mapping {
            base: area(space - 1),
            size: PAGE * (1 + pages as u64),
            kind: Kind::UserData,
        };
        // SAFETY: no core uses these tables yet (MMUs are off) and only this
        // core builds them.
        let result = unsafe { (*space_ptr(space)).build(pa, kernel, &[code, data]) };
        if let Err(e) = result {
            panic!("address space {space}: {e:?}");
        }
    }
    FLUSH.store(protection.flush, Ordering::Relaxed);
    PAGES.store(pages, Ordering::Relaxed);
    ON.store(true, Ordering::Release);
}

/// Turns this core's MMU on with the kernel's address space (ASID 0).
pub fn enable_mmu() {
    if !MMU.load(Ordering::Acquire) {
        return;
    }
    let translation = Translation {
        mair: tandem_rtos_mm::MAIR,
        tcr: tandem_rtos_mm::TCR,
        ttbr0: tandem_rtos_mm::ttbr0(space_pa(0), 0),
        sctlr_clear: 0,
        sctlr_set: tandem_rtos_mm::SCTLR_ON,
    };
    // SAFETY: this runs at S-EL1; the tables are complete (built before
    // any core got here) and map everything the RTOS touches (its RAM,
    // devices, the shared region) at the same address.
    unsafe { tandem_runtime::el1::enable_mmu(&translation) };
}

/// Before resuming a task on `core`: its address space `space` (0: it is
/// a kernel task, which runs in whatever space is current: the kernel's
/// part is the same, global, in all of them).
pub fn enter(core: usize, space: usize) {
    let Some(slot) = space.checked_sub(1) else {
        return;
    };
    if SPACE_OF_CORE[core].load(Ordering::Relaxed) as usize == space {
        return;
    }
    SPACE_OF_CORE[core].store(space as u8, Ordering::Relaxed);
    let flush = FLUSH.load(Ordering::Relaxed);
    let mode = if flush { TlbMode::Flush } else { TlbMode::Asid };
    let asid = tandem_rtos_mm::asid(mode, slot).expect("few protected tasks");
    let ttbr = tandem_rtos_mm::ttbr0(space_pa(space), asid);
    // SAFETY: the new tables map the kernel exactly as the old ones did, so
    // the kernel runs on unchanged; only the task pages differ.
    unsafe {
        write_ttbr0_el1(Ttbr0El1::from_bits_retain(ttbr));
        core::arch::asm!("isb", options(nostack));
    }
    if flush {
        // SAFETY: invalidating the whole TLB (all ASIDs, global entries
        // too) only costs walks; entries of other ASIDs stay in `asid` mode
        // but cannot match.
        unsafe { core::arch::asm!("tlbi vmalle1", "dsb nsh", "isb", options(nostack)) };
    }
}

/// A fresh frame for S-EL0 task `task` in address space `space`: it
/// starts at `entry` with its own stack page, x0 = its first data page, x1
/// = how many it has, x2 and x3 = what its application set; `kernel_top` is
/// the top of its kernel stack, where the frame goes.
pub fn fresh_frame(
    task: usize,
    space: usize,
    entry: extern "C" fn(u64, u64, u64, u64) -> !,
    kernel_top: usize,
) -> usize {
    let frame = (kernel_top - core::mem::size_of::<Frame>()) as *mut Frame;
    let base = area(space - 1);
    let args = ARGS.get().map_or([0; 2], |a| a[task]);
    let mut x = [0u64; 31];
    x[0] = base + PAGE;
    x[1] = u64::from(PAGES.load(Ordering::Relaxed));
    x[2] = args[0];
    x[3] = args[1];
    // SAFETY: the frame lies at the top of this task's kernel stack, which
    // nothing uses while the task does not run.
    unsafe {
        frame.write(Frame {
            x,
            entered: 0,
            elr: entry as *const () as u64,
            spsr: SPSR_EL0,
            sp_el0: base + PAGE,
            pad: 0,
        })
    };
    frame as usize
}

/// Protected task `t` made a stray access (or ran something it may not):
/// reports it; the caller stops the task.
pub fn report_fault(core: usize, t: TaskId, what: Exception, esr: u64, far: u64, elr: u64) {
    let name = apps().task(t).map_or("?", |(_, task, _)| task.config.name);
    log!(
        core,
        "protected task {} ({name}) stopped: {} at {far:#x}, ESR {esr:#x} (class {:#x}), PC {elr:#x}",
        t.0,
        what.name(),
        esr >> 26
    );
}
