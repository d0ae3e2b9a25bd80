//! Protected tasks (the `ctxsw` workload, paper 004 on Armv8): tasks that run
//! at S-EL0 in their own address space, enter the kernel by `svc`, hand a
//! value to each other with `sys_chg`, and are stopped, not the RTOS, when
//! they touch memory that is not theirs.
//!
//! Off unless the boot configuration asks for the workload: then every RTOS
//! core turns its S-EL1 MMU on with the kernel's identity map (tables built
//! by `tandem-rtos-mm`), and switching to a protected task writes TTBR0 with
//! its tables and ASID (mode `asid`), or with ASID 0 and a whole-TLB
//! invalidation (mode `flush`).

use crate::entry::{Frame, MAX_CORES};
use crate::{app, log};
use arm_sysregs::el1::accessors::{
    read_sctlr_el1, write_mair_el1, write_sctlr_el1, write_tcr_el1, write_ttbr0_el1,
};
use arm_sysregs::el1::registers::{MairEl1, SctlrEl1, TcrEl1, Ttbr0El1};
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use tandem_abi::boot::{CTXSW_ASID, CTXSW_FLUSH, TlbMode as BootTlbMode, Workload};
use tandem_abi::shm::{CTXSW_DONE, CTXSW_OFFSET, CTXSW_RUNNING, CtxswRecord};
use tandem_board::BOARD;
use tandem_rtos_kernel::TaskId;
use tandem_rtos_mm::{AddressSpace, BLOCK, Exception, Kind, Mapping, PAGE, TlbMode};

/// Protected tasks: the two that hand off, and the stray one.
pub const PROTECTED: usize = 3;
/// Most pages a task writes between hand-offs.
const MAX_PAGES: usize = tandem_abi::boot::MAX_PAGES as usize;
/// Hand-offs per timed batch (the best batch is one without interrupts).
const BATCH: u64 = 64;
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

static ON: AtomicBool = AtomicBool::new(false);
static FLUSH: AtomicBool = AtomicBool::new(false);
static PAGES: AtomicU32 = AtomicU32::new(0);
static SWITCHES: AtomicU64 = AtomicU64::new(0);
/// Address space index (0: kernel) each core runs with now.
static SPACE_OF_CORE: [AtomicU8; MAX_CORES] = [const { AtomicU8::new(0) }; MAX_CORES];

/// The hand-off measurement (kept under the kernel lock).
struct Measure {
    done: u64,
    first: u64,
    batch_start: u64,
    best_batch: u64,
}

static MEASURE: tandem_lock::SpinLock<Measure> = tandem_lock::SpinLock::new(Measure {
    done: 0,
    first: 0,
    batch_start: 0,
    best_batch: u64::MAX,
});

/// Whether protected tasks (and the MMU) are on.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The protected slot of task `t`, if it is one.
pub fn slot(t: usize) -> Option<usize> {
    app::PROTECTED_TASKS.iter().position(|p| p.0 as usize == t)
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

fn block_of(address: u64, kind: Kind) -> Mapping {
    Mapping {
        base: address & !(BLOCK - 1),
        size: BLOCK,
        kind,
    }
}

/// Builds every address space, once, by the first core, before any core
/// turns its MMU on. Does nothing unless the workload is `ctxsw`.
pub fn init(workload: Workload) {
    let Workload::Ctxsw {
        mode,
        pages,
        switches,
        ..
    } = workload
    else {
        clear_record(0, 0);
        return;
    };
    let ram_start = BOARD.rtos_ram.base & !(BLOCK - 1);
    let ram_end = BOARD.rtos_ram.end().next_multiple_of(BLOCK);
    let mut kernel = [
        Mapping {
            base: ram_start,
            size: ram_end - ram_start,
            kind: Kind::Kernel,
        },
        block_of(BOARD.gicd, Kind::Device),
        block_of(BOARD.gicr, Kind::Device),
        block_of(BOARD.secure_uart, Kind::Device),
        block_of(BOARD.secure_gpio, Kind::Device),
        Mapping {
            base: BOARD.shared.base,
            size: BOARD.shared.size,
            kind: Kind::Shared,
        },
    ];
    // Devices that share a block appear once.
    let mut n = kernel.len();
    let mut i = 0;
    while i < n {
        if kernel[..i].iter().any(|m| m.base == kernel[i].base) {
            kernel.copy_within(i + 1..n, i);
            n -= 1;
        } else {
            i += 1;
        }
    }
    let kernel = &kernel[..n];
    let (text, text_end) = (
        core::ptr::addr_of!(__user_text_start) as u64,
        core::ptr::addr_of!(__user_text_end) as u64,
    );
    let code = Mapping {
        base: text,
        size: text_end - text,
        kind: Kind::UserCode,
    };
    for space in 0..=PROTECTED {
        let pa = space_pa(space);
        let result = if space == 0 {
            // SAFETY: no core uses the tables yet (MMUs are off) and only
            // this core builds them.
            unsafe { (*space_ptr(0)).build(pa, kernel, &[]) }
        } else {
            let data = Mapping {
                base: area(space - 1),
                size: PAGE * (1 + pages as u64),
                kind: Kind::UserData,
            };
            // SAFETY: as above.
            unsafe { (*space_ptr(space)).build(pa, kernel, &[code, data]) }
        };
        if let Err(e) = result {
            panic!("address space {space}: {e:?}");
        }
    }
    FLUSH.store(mode == BootTlbMode::Flush, Ordering::Relaxed);
    PAGES.store(pages, Ordering::Relaxed);
    SWITCHES.store(u64::from(switches), Ordering::Relaxed);
    clear_record(
        match mode {
            BootTlbMode::Asid => CTXSW_ASID,
            BootTlbMode::Flush => CTXSW_FLUSH,
        },
        pages,
    );
    ON.store(true, Ordering::Release);
}

fn record() -> *mut CtxswRecord {
    (BOARD.shared.base + u64::from(CTXSW_OFFSET)) as *mut CtxswRecord
}

fn clear_record(mode: u32, pages: u32) {
    let r = CtxswRecord {
        mode,
        pages,
        batch: BATCH as u32,
        ..Default::default()
    };
    // SAFETY: the record lies in the shared region, which the RTOS may
    // write; Linux only reads it.
    unsafe { record().write_volatile(r) };
}

/// Turns this core's MMU on with the kernel's address space (ASID 0), if
/// the workload wants protected tasks.
pub fn enable_mmu() {
    if !on() {
        return;
    }
    let ttbr = tandem_rtos_mm::ttbr0(space_pa(0), 0);
    // SAFETY: the tables are complete (built before any core got here) and
    // the MMU is still off, so these registers take effect only below.
    unsafe {
        core::arch::asm!("dsb ish", options(nostack));
        write_mair_el1(MairEl1::from_bits_retain(tandem_rtos_mm::MAIR));
        write_tcr_el1(TcrEl1::from_bits_retain(tandem_rtos_mm::TCR));
        write_ttbr0_el1(Ttbr0El1::from_bits_retain(ttbr));
        core::arch::asm!("isb", "tlbi vmalle1", "dsb nsh", "isb", options(nostack));
    }
    let sctlr = read_sctlr_el1() | SctlrEl1::from_bits_retain(tandem_rtos_mm::SCTLR_ON);
    // SAFETY: the tables map everything the RTOS touches (its RAM, devices,
    // the shared region) at the same address, so execution continues
    // unchanged once translation is on; the TLB was invalidated above.
    unsafe {
        write_sctlr_el1(sctlr);
        core::arch::asm!("isb", options(nostack));
    }
}

/// Before resuming task `t` on `core`: its address space, if it is
/// protected. A kernel task runs in whatever space is current (the kernel's
/// part is the same, global, in all of them).
pub fn enter(core: usize, t: usize) {
    let Some(slot) = slot(t) else {
        return;
    };
    let space = slot + 1;
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

/// A fresh frame for the protected task in `slot`: it starts at its
/// S-EL0 entry point with its own stack page; `kernel_top` is the top of its
/// kernel stack, where the frame goes.
pub fn fresh_frame(slot: usize, kernel_top: usize) -> usize {
    let frame = (kernel_top - core::mem::size_of::<Frame>()) as *mut Frame;
    let base = area(slot);
    let mut x = [0u64; 31];
    let entry = if slot == app::STRAY_SLOT {
        // Reads the kernel's own memory: not its own.
        x[0] = BOARD.rtos_ram.base;
        stray_entry as *const () as u64
    } else {
        // The first of the pair waits; the second hands to it.
        x[0] = u64::from(app::PROTECTED_TASKS[1 - slot].0);
        x[1] = u64::from(PAGES.load(Ordering::Relaxed));
        x[2] = base + PAGE;
        x[3] = slot as u64;
        handoff_entry as *const () as u64
    };
    // SAFETY: the frame lies at the top of this task's kernel stack, which
    // nothing uses while the task does not run.
    unsafe {
        frame.write(Frame {
            x,
            entered: 0,
            elr: entry,
            spsr: SPSR_EL0,
            sp_el0: base + PAGE,
            pad: 0,
        })
    };
    frame as usize
}

/// Whether a successful hand-off may still happen; counts it and times it.
/// Called under the kernel lock for every `chg` a protected task makes.
pub fn hand_off_allowed() -> bool {
    MEASURE.lock().done < SWITCHES.load(Ordering::Relaxed)
}

/// A hand-off succeeded at counter value `now`.
pub fn handed_off(now: u64) {
    let mut m = MEASURE.lock();
    if m.done == 0 {
        m.first = now;
        m.batch_start = now;
        // SAFETY: the RTOS is the record's only writer.
        unsafe { addr_of_mut!((*record()).state).write_volatile(CTXSW_RUNNING) };
    }
    m.done += 1;
    if m.done % BATCH == 1 && m.done > 1 {
        m.best_batch = m.best_batch.min(now - m.batch_start);
        m.batch_start = now;
    }
    if m.done == SWITCHES.load(Ordering::Relaxed) {
        let r = record();
        // SAFETY: as above; the state goes last, so Linux never sees a
        // finished state with unfinished numbers.
        unsafe {
            addr_of_mut!((*r).switches).write_volatile(m.done);
            addr_of_mut!((*r).ticks).write_volatile(now - m.first);
            addr_of_mut!((*r).best_batch_ticks).write_volatile(if m.best_batch == u64::MAX {
                0
            } else {
                m.best_batch
            });
            core::sync::atomic::fence(Ordering::Release);
            addr_of_mut!((*r).state).write_volatile(CTXSW_DONE);
        }
        log!(
            crate::core_index(),
            "ctxsw: {} hand-offs in {} ticks (best {} per {BATCH})",
            m.done,
            now - m.first,
            m.best_batch
        );
    }
}

/// Protected task `t` made a stray access (or ran something it may not):
/// reports it; the caller stops the task.
pub fn report_fault(core: usize, t: TaskId, what: Exception, esr: u64, far: u64, elr: u64) {
    let r = record();
    // SAFETY: the RTOS is the record's only writer.
    unsafe {
        let faults = addr_of_mut!((*r).faults).read_volatile();
        addr_of_mut!((*r).fault_task).write_volatile(u32::from(t.0));
        addr_of_mut!((*r).fault_address).write_volatile(far);
        addr_of_mut!((*r).fault_esr).write_volatile(esr);
        addr_of_mut!((*r).faults).write_volatile(faults + 1);
    }
    log!(
        core,
        "protected task {} ({}) stopped: {} at {far:#x}, ESR {esr:#x} (class {:#x}), PC {elr:#x}",
        t.0,
        app::task_name(t),
        what.name(),
        esr >> 26
    );
}

// ----- Code that runs at S-EL0 (in its own pages, `.text.user`) -----

/// Entry of the hand-off pair. x0 = the peer, x1 = pages to write, x2 =
/// the first data page, x3 = 0 for the task that waits first.
#[unsafe(link_section = ".text.user")]
extern "C" fn handoff_entry(peer: u64, pages: u64, data: u64, first: u64) -> ! {
    let mut value = 0u64;
    if first == 0 {
        match crate::syscall::user_wait_hand_off() {
            Ok(v) => value = v,
            Err(_) => crate::syscall::user_exit(),
        }
    }
    loop {
        let mut p = 0;
        while p < pages {
            // SAFETY: the task's own data pages (mapped EL0 read/write).
            unsafe { ((data + p * PAGE) as *mut u64).write_volatile(value) };
            p += 1;
        }
        match crate::syscall::user_chg(peer, value.wrapping_add(1)) {
            Ok(v) => value = v,
            Err(_) => crate::syscall::user_exit(),
        }
    }
}

/// Entry of the stray task: reads `address`, which is not its own.
#[unsafe(link_section = ".text.user")]
extern "C" fn stray_entry(address: u64) -> ! {
    // SAFETY: deliberately not: this access faults and the kernel stops
    // the task; it never returns.
    let _ = unsafe { (address as *const u64).read_volatile() };
    crate::syscall::user_exit()
}
