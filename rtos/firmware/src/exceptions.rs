//! What the vector code (`entry.rs`) calls: IRQs, synchronous exceptions
//! (system calls, protected tasks' faults) and exceptions the RTOS never
//! expects; and the panic handler.

use crate::frame::Frame;
use crate::hw::core_index;
use crate::table::routes;
use crate::{console, hw, log, sched, stats};
use core::sync::atomic::{AtomicU8, Ordering};
use tandem_abi::MAX_CORES;
use tandem_rtos_kernel::app::{NestedKernelInterrupts, Notifications};

/// Per core: whether an application's top half runs, and the kernel's
/// interrupts taken inside it ([`NestedKernelInterrupts`]). Only the core
/// itself touches its own, from its outer and its nested handler.
static NESTED: [AtomicU8; MAX_CORES] = [const { AtomicU8::new(0) }; MAX_CORES];

/// IRQ at S-EL1: RTOS interrupts only. Handles every pending one, then lets
/// the scheduler pick the frame to resume. The timer and reschedule SGI are
/// the kernel's; every other interrupt belongs to the application the table
/// names (or the applications, when they share it), and only sets its
/// owner's notification bit (after the application's top half, if it has
/// one). A top half runs with IRQs open:
/// while its interrupt is active the GIC lets only higher priorities in,
/// the kernel's (`hw::PRIORITY` over `hw::APP_PRIORITY`), which are then
/// taken at once ([`nested`]) and handled by this handler's pass.
pub(crate) extern "C" fn irq_handler(frame: *mut Frame) -> *mut Frame {
    let core = core_index();
    if NestedKernelInterrupts::from_bits(NESTED[core].load(Ordering::Relaxed)).in_top_half() {
        return nested(core, frame);
    }
    let routes = routes();
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
        let owners = routes.owners(intid.raw_value(), core);
        if owners.is_owned() {
            NESTED[core].store(
                NestedKernelInterrupts::TOP_HALF_RUNS.bits(),
                Ordering::Relaxed,
            );
            // Every owner's top half (a shared interrupt has several).
            hw::with_interrupts(|| {
                for owner in owners.iter() {
                    owner.take(core, &mut notify);
                }
            });
            let taken = NestedKernelInterrupts::from_bits(
                NESTED[core].swap(NestedKernelInterrupts::NONE.bits(), Ordering::Relaxed),
            );
            timer |= taken.timer();
            other |= taken.kernel();
            owned = true;
        } else if intid == hw::TIMER {
            timer_fired(core, frame);
            timer = true;
            other = true;
        } else if intid == hw::RESCHEDULE {
            // SAFETY: the vector code just saved this frame.
            stats::reschedule_taken(core, unsafe { (*frame).entered });
            other = true;
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

/// The timer's interrupt, acknowledged: its latency counted, the timer
/// silenced (level-triggered) until the scheduler re-arms it.
fn timer_fired(core: usize, frame: *mut Frame) {
    // SAFETY: the vector code just saved this frame.
    let entered = unsafe { (*frame).entered };
    let deadline = hw::timer_compare();
    // A timer that fired after this IRQ was entered (for another
    // interrupt, still being handled) is handled only now.
    let handled = if entered >= deadline {
        entered
    } else {
        hw::now()
    };
    stats::latency(core, handled.saturating_sub(deadline));
    hw::set_timer(None);
}

/// An IRQ inside an application's top half: only the kernel's interrupts
/// get past the GIC's running priority. Each is acknowledged and recorded
/// for the outer handler's pass; the top half then resumes.
fn nested(core: usize, frame: *mut Frame) -> *mut Frame {
    while let Some(intid) = hw::acknowledge() {
        if intid.raw_value() >= 1020 {
            break;
        }
        let taken = if intid == hw::TIMER {
            timer_fired(core, frame);
            NestedKernelInterrupts::TIMER_TAKEN
        } else if intid == hw::RESCHEDULE {
            // SAFETY: the vector code just saved this frame.
            stats::reschedule_taken(core, unsafe { (*frame).entered });
            NestedKernelInterrupts::RESCHEDULE_TAKEN
        } else {
            // Not of a higher priority than the top half's: the GIC should
            // not have let it in. Logging is safe here: a top half that
            // logs holds the console with IRQs masked.
            log!(core, "unexpected interrupt {intid:?} inside a top half");
            NestedKernelInterrupts::NONE
        };
        NESTED[core].fetch_or(taken.bits(), Ordering::Relaxed);
        hw::end(intid);
    }
    frame
}

/// Synchronous exception at S-EL1: a system call, a protected task's
/// fault, or a bug in the RTOS.
pub(crate) extern "C" fn sync_handler(frame: *mut Frame) -> *mut Frame {
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
pub(crate) extern "C" fn fault(esr: u64, elr: u64, far: u64) -> ! {
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
