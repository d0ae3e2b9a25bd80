//! Tandem's secure-world RTOS on QEMU virt. It runs first on every core it
//! owns: tasks and handlers run at S-EL1 under the scheduler of
//! `tandem-rtos-kernel`, and whenever a core has nothing to run its idle loop
//! yields the core to Linux through the monitor (SafeG's scheme).
#![no_std]
#![no_main]

mod app;
mod console;
mod entry;
mod hw;
mod protect;
mod rpc;
mod sched;
mod stats;
mod syscall;

use core::sync::atomic::{AtomicU32, Ordering};
use entry::Frame;
use tandem_abi::boot::{BootConfig, Workload};
use tandem_board::BOARD;

static GLOBAL_READY: AtomicU32 = AtomicU32::new(0);

pub(crate) fn core_index() -> usize {
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
        sched::init(hw::now());
        stats::set_cores(mask);
        let (workload, rpc_cores) = read_boot_config();
        rpc::init(rpc_cores);
        protect::init(workload);
        app::place(mask, workload, rpc_cores, hw::now());
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
    hw::init_core(core);
    // Run the scheduler once at start: autostart tasks, first timer.
    hw::send_reschedule(core);
    idle(core)
}

/// What the boot configuration asks the RTOS to run, and its RPC server
/// cores. Read before Linux starts (this runs first on the boot core), and
/// checked again although the monitor checked it: the RTOS trusts nothing in
/// normal RAM.
fn read_boot_config() -> (Workload, u8) {
    // SAFETY: the board reserves this page of normal RAM for the blob; Linux
    // has not run yet; any bit pattern is a valid BootConfig (plain integers).
    let blob = unsafe { (BOARD.boot_config as *const BootConfig).read_volatile() };
    let workload = match blob.validate().and_then(|p| blob.workload(&p)) {
        Ok(w) => w,
        Err(e) => panic!("boot configuration refused: {e:?}"),
    };
    let rpc_cores = blob.rpc_cores();
    if usize::from(rpc_cores) >> rpc::SERVERS != 0 {
        panic!(
            "boot configuration refused: RPC servers on cores {rpc_cores:#x}, this RTOS has them for cores 0..{}",
            rpc::SERVERS - 1
        );
    }
    (workload, rpc_cores)
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
/// the scheduler pick the frame to resume.
extern "C" fn irq_handler(frame: *mut Frame) -> *mut Frame {
    let core = core_index();
    let mut events = sched::Events::default();
    // Only the RPC doorbell, and its handler answered everything: nothing in
    // the kernel changed, so the interrupted frame resumes without a pass of
    // the scheduler.
    let (mut rpc_seen, mut other) = (false, false);
    while let Some(intid) = hw::acknowledge() {
        if intid.raw_value() >= 1020 {
            break;
        }
        if intid == hw::RPC {
            events.rpc |= rpc::interrupt(core);
            rpc_seen = true;
            hw::end(intid);
            continue;
        }
        other = true;
        if intid == hw::TIMER {
            // SAFETY: the vector code just saved this frame.
            let entered = unsafe { (*frame).entered };
            stats::latency(core, entered.saturating_sub(hw::timer_compare()));
            // Level-triggered: silence it before it ends; the scheduler
            // re-arms it for the next event.
            hw::set_timer(None);
            events.timer = true;
        } else if intid == hw::DEMO {
            events.demo = true;
        } else if intid == hw::RESCHEDULE {
            // SAFETY: the vector code just saved this frame.
            stats::reschedule_taken(core, unsafe { (*frame).entered });
        } else {
            log!(core, "unexpected interrupt {intid:?}");
        }
        hw::end(intid);
    }
    if rpc_seen && !other && !events.rpc {
        return frame;
    }
    sched::after_interrupt(core, frame, events)
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
