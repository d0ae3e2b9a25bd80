//! Each core's way in, from the reset code: the first core builds the
//! kernel from the applications table, reads the boot configuration and the
//! workload blob and runs the applications' start steps; then every core
//! turns on what it needs and settles in its idle loop.

use crate::table::apps;
use crate::{console, hw, log, protect, sched, stats};
use core::sync::atomic::{AtomicU32, Ordering};
use tandem_abi::boot::BootConfig;
use tandem_abi::workload::Blob;
use tandem_board::BOARD;
use tandem_rtos_kernel::app::Platform;
use tandem_rtos_kernel::may_leave;

static GLOBAL_READY: AtomicU32 = AtomicU32::new(0);

/// Each core's start, from `_start`: x0 = core, x1 = shared region, x2 = the
/// cores running the RTOS, x3 = 1 on the core that set up memory.
pub(crate) extern "C" fn rtos_main(core: usize, _shared: u64, mask: u64, first: u64) -> ! {
    if first != 0 {
        console::init();
        hw::init_global();
        let table = apps();
        sched::init(table, hw::now());
        stats::set_cores(mask);
        let platform = Platform {
            cores: mask,
            rpc_cores: read_boot_config(core),
            now: hw::now(),
        };
        let blob = read_workload();
        let entries = blob
            .validate()
            .unwrap_or_else(|e| refuse(core, format_args!("workload refused: {e}")));
        let started = sched::with_kernel(|k| table.start(k, platform, entries))
            .unwrap_or_else(|e| refuse(core, format_args!("workload refused: {e}")));
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
/// sends RPC doorbells). Read from secure flash, where Linux can neither
/// read nor write it, and checked again although the monitor checked it.
fn read_boot_config(core: usize) -> u8 {
    // SAFETY: the board places the blob in secure flash, readable before the
    // RTOS's MMU is on; any bit pattern is a valid BootConfig (plain
    // integers).
    let blob = unsafe { (BOARD.boot_config as *const BootConfig).read_volatile() };
    if let Err(e) = blob.validate() {
        refuse(core, format_args!("boot configuration refused: {e:?}"));
    }
    blob.rpc_cores()
}

/// Says why the RTOS cannot run as configured, in the words the harness
/// looks for ("cannot start:", as the monitor's refusals), and powers the
/// machine off: whoever started it sees it end, not hang.
fn refuse(core: usize, why: core::fmt::Arguments) -> ! {
    log!(core, "cannot start: {why}");
    hw::stop()
}

/// The workload blob, copied from secure flash into RTOS memory before
/// anything reads it.
/// Word by word in a loop: a volatile read of the whole struct would copy
/// its name fields byte by byte, unrolled.
fn read_workload() -> Blob {
    const WORDS: usize = core::mem::size_of::<Blob>() / 8;
    const _: () = assert!(core::mem::size_of::<Blob>().is_multiple_of(8));
    let at = (BOARD.boot_config + tandem_abi::workload::OFFSET) as *const u64;
    let mut blob = core::mem::MaybeUninit::<Blob>::uninit();
    let to = blob.as_mut_ptr() as *mut u64;
    for i in 0..WORDS {
        // SAFETY: the blob lies in the same page of secure flash as the boot
        // configuration (`workload::OFFSET` + `SIZE` stay inside it, and it
        // is 8-byte aligned); `to` is a local Blob's storage, written once
        // per word.
        unsafe { to.add(i).write(at.add(i).read_volatile()) };
    }
    // SAFETY: every word was written above, and any bit pattern is a valid
    // Blob (integers and byte arrays), checked before use.
    unsafe { blob.assume_init() }
}

/// Counter ticks a core takes to give itself to the monitor and be called
/// back (the board's `rtos_leave_ns`, rounded up).
const LEAVE: u64 = BOARD.ns_to_ticks_up(BOARD.rtos_leave_ns);

/// This core's idle loop, and the frame it is resumed in when no task is
/// ready. Takes pending interrupts (running whatever they make ready), then
/// gives the core to Linux until the next RTOS interrupt; but if the core's
/// next timer event is nearer than leaving and coming back takes, waits for
/// it here instead (`may_leave`), interrupts open: its interrupt must not
/// find the core on its way to the monitor, interrupts masked, however
/// often Linux rings.
fn idle(core: usize) -> ! {
    loop {
        let back = hw::now();
        hw::take_interrupts();
        let now = hw::now();
        stats::busy(core, now - back);
        let next = hw::timer_deadline();
        match next {
            _ if may_leave(now, next, LEAVE) => hw::yield_to_linux(),
            Some(due) => hw::wait_until(due),
            // `may_leave` leaves when no timer is armed.
            None => {}
        }
    }
}
