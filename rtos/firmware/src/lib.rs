//! Tandem's secure-world RTOS on QEMU virt, without its applications. It
//! runs first on every core it owns: tasks and handlers run at S-EL1 (or
//! S-EL0) under the scheduler of `tandem-rtos-kernel`, and whenever a core
//! has nothing to run its idle loop yields the core to Linux through the
//! monitor (SafeG's scheme).
//!
//! What runs is an image crate's business: it lists its applications in one
//! [`Table`] (`tandem_rtos_kernel::app`) and hands it over with
//! [`image!`]. This crate reads the table and never names an application;
//! applications use it through [`syscall`], [`hw`], [`stats`],
//! [`with_kernel`] and [`log!`].
#![no_std]

pub mod console;
mod entry;
pub mod hw;
mod protect;
mod sched;
pub mod stats;
pub mod syscall;

use core::sync::atomic::{AtomicU32, Ordering};
use entry::Frame;
use tandem_abi::boot::BootConfig;
use tandem_abi::workload::Blob;
use tandem_board::BOARD;
pub use tandem_rtos_kernel::app::Table;
use tandem_rtos_kernel::app::{Notifications, Platform};

pub use entry::MAX_CORES;
pub use sched::with_kernel;

static GLOBAL_READY: AtomicU32 = AtomicU32::new(0);

/// The interrupts the firmware keeps for itself: no application may own
/// them.
pub const RESERVED_INTIDS: [u32; 2] = [hw::TIMER.raw_value(), hw::RESCHEDULE.raw_value()];

/// Checks `table` for this firmware: what the kernel checks, and interrupts
/// the firmware can give an owner on every core (SGIs and PPIs). A `const
/// fn` for [`image!`]: a bad table does not build, and the message says
/// what kind of fault it is (the host tests of `tandem_rtos_kernel::app`
/// and the boot log name the object).
pub const fn check_table(table: &Table) {
    if table.check(BOARD.max_cores, &RESERVED_INTIDS).is_err() {
        panic!(
            "the applications table is invalid: see tandem_rtos_kernel::app::Table::check, which names the fault"
        );
    }
    let mut a = 0;
    while a < table.apps.len() {
        let irqs = table.apps[a].interrupts;
        let mut i = 0;
        while i < irqs.len() {
            if irqs[i].intid >= 32 {
                panic!("an application owns an SPI: the firmware routes only SGIs and PPIs");
            }
            i += 1;
        }
        a += 1;
    }
}

/// Makes `$table` (a `static` [`Table`]) the RTOS's applications: checks
/// it at build time and defines the function through which the firmware
/// reads it. Once, in the image crate.
#[macro_export]
macro_rules! image {
    ($table:path) => {
        const _: () = $crate::check_table(&$table);

        /// The applications table, for the firmware (`tandem_rtos_firmware::image!`).
        #[unsafe(no_mangle)]
        fn tandem_rtos_table() -> &'static $crate::Table {
            &$table
        }
    };
}

unsafe extern "Rust" {
    /// Defined by [`image!`] in the image crate.
    safe fn tandem_rtos_table() -> &'static Table;
}

/// The applications table.
pub(crate) fn apps() -> &'static Table {
    tandem_rtos_table()
}

/// The core this runs on.
pub fn core_index() -> usize {
    let mpidr: u64;
    // SAFETY: reading MPIDR has no side effects.
    unsafe { core::arch::asm!("mrs {}, mpidr_el1", out(reg) mpidr, options(nomem, nostack)) };
    (mpidr & 0xFF) as usize
}

/// Each core's start, from `_start`: x0 = core, x1 = shared region, x2 = the
/// cores running the RTOS, x3 = 1 on the core that set up memory.
extern "C" fn rtos_main(core: usize, _shared: u64, mask: u64, first: u64) -> ! {
    if first != 0 {
        console::init();
        hw::init_global();
        let table = apps();
        sched::init(table, hw::now());
        stats::set_cores(mask);
        let platform = Platform {
            cores: mask,
            rpc_cores: read_boot_config(),
            now: hw::now(),
        };
        let blob = read_workload();
        let entries = blob
            .validate()
            .unwrap_or_else(|e| panic!("workload refused: {e}"));
        let started = with_kernel(|k| table.start(k, platform, entries))
            .unwrap_or_else(|e| panic!("workload refused: {e}"));
        protect::init(&started);
        log!(
            core,
            "Tandem RTOS {} up on cores {mask:#x}",
            env!("CARGO_PKG_VERSION")
        );
        GLOBAL_READY.store(1, Ordering::Release);
    } else {
        while GLOBAL_READY.load(Ordering::Acquire) == 0 {
            core::hint::spin_loop();
        }
    }
    protect::enable_mmu();
    hw::init_core(core, apps().intids());
    // Run the scheduler once at start: autostart tasks, first timer.
    hw::send_reschedule(core);
    idle(core)
}

/// The RPC server cores the boot configuration names (where the monitor
/// sends RPC doorbells). Read before Linux starts (this runs first on the
/// boot core), and checked again although the monitor checked it: the RTOS
/// trusts nothing in normal RAM.
fn read_boot_config() -> u8 {
    // SAFETY: the board reserves this page of normal RAM for the blob; Linux
    // has not run yet; any bit pattern is a valid BootConfig (plain integers).
    let blob = unsafe { (BOARD.boot_config as *const BootConfig).read_volatile() };
    if let Err(e) = blob.validate() {
        panic!("boot configuration refused: {e:?}");
    }
    blob.rpc_cores()
}

/// The workload blob, copied into RTOS memory before anything reads it
/// (Linux has not run yet, and a copy cannot change under the checks).
fn read_workload() -> Blob {
    let at = BOARD.boot_config + tandem_abi::workload::OFFSET;
    // SAFETY: the blob lies in the same reserved page as the boot
    // configuration (`workload::OFFSET` + `SIZE` stay inside it); any bit
    // pattern is a valid Blob (integers and byte arrays), checked before use.
    unsafe { (at as *const Blob).read_volatile() }
}

/// This core's idle loop, and the frame it is resumed in when no task is
/// ready. Takes pending interrupts (running whatever they make ready), then
/// gives the core to Linux until the next RTOS interrupt.
fn idle(core: usize) -> ! {
    loop {
        let back = hw::now();
        hw::take_interrupts();
        stats::busy(core, hw::now() - back);
        hw::yield_to_linux();
    }
}

/// IRQ at S-EL1: RTOS interrupts only. Handles every pending one, then lets
/// the scheduler pick the frame to resume. The timer and reschedule SGI are
/// the kernel's; every other interrupt belongs to the application the table
/// names, and only sets its owner's notification bit (after the
/// application's top half, if it has one).
extern "C" fn irq_handler(frame: *mut Frame) -> *mut Frame {
    let core = core_index();
    let table = apps();
    let mut timer = false;
    let mut notify = Notifications::default();
    // Only application interrupts, and their top halves answered
    // everything: nothing in the kernel changed, so the interrupted frame
    // resumes without a pass of the scheduler.
    let (mut owned, mut other) = (false, false);
    while let Some(intid) = hw::acknowledge() {
        if intid.raw_value() >= 1020 {
            break;
        }
        if intid == hw::TIMER {
            // SAFETY: the vector code just saved this frame.
            let entered = unsafe { (*frame).entered };
            stats::latency(core, entered.saturating_sub(hw::timer_compare()));
            // Level-triggered: silence it before it ends; the scheduler
            // re-arms it for the next event.
            hw::set_timer(None);
            timer = true;
            other = true;
        } else if intid == hw::RESCHEDULE {
            // SAFETY: the vector code just saved this frame.
            stats::reschedule_taken(core, unsafe { (*frame).entered });
            other = true;
        } else if let Some(notice) = table.interrupt(intid.raw_value(), core) {
            notice.take(core, &mut notify);
            owned = true;
        } else {
            log!(core, "unexpected interrupt {intid:?}");
            other = true;
        }
        hw::end(intid);
    }
    if owned && !other && notify.is_empty() {
        return frame;
    }
    sched::after_interrupt(core, frame, timer, notify)
}

/// Synchronous exception at S-EL1: a system call, a protected task's
/// fault, or a bug in the RTOS.
extern "C" fn sync_handler(frame: *mut Frame) -> *mut Frame {
    let (esr, far): (u64, u64);
    // SAFETY: reading ESR and FAR has no side effects.
    unsafe {
        core::arch::asm!("mrs {}, esr_el1", "mrs {}, far_el1", out(reg) esr, out(reg) far,
            options(nomem, nostack))
    };
    let what = tandem_rtos_mm::classify(esr);
    if !what.is_fault() {
        return sched::system_call(core_index(), frame);
    }
    // SAFETY: the frame was just saved by the vector code on this stack.
    if unsafe { (*frame).spsr } & 0xF == 0 {
        // From S-EL0: a protected task touched what is not its own.
        return sched::fault(core_index(), frame, what, esr, far);
    }
    // SAFETY: the frame was just saved by the vector code on this stack.
    let elr = unsafe { (*frame).elr };
    panic!("synchronous exception ESR {esr:#x} at {elr:#x}");
}

/// An exception the RTOS never expects.
extern "C" fn fault(esr: u64, elr: u64, far: u64) -> ! {
    panic!("unexpected exception ESR {esr:#x} ELR {elr:#x} FAR {far:#x}");
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::print_emergency(core_index(), format_args!("PANIC: {info}"));
    loop {
        // SAFETY: waiting has no memory effects.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}
