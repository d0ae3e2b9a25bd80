//! What the monitor does when a world traps to EL3: decode, hand SMCs to the
//! service table of `tandem-monitor-core`, carry out the outcome.

use crate::context::{CORES, SCR_NORMAL_WORLD, SCTLR_EL1_RESET, SPSR_EL1H_MASKED, WorldContext};
use crate::{console, entry, log, power};
use arm_sysregs::el1::accessors::write_sctlr_el1;
use arm_sysregs::el1::registers::SctlrEl1;
use arm_sysregs::el3::accessors::read_esr_el3;
use spin::mutex::SpinMutex;
use tandem_board::BOARD;
use tandem_monitor_core::services::{self, Monitor};
use tandem_monitor_core::smc::{FunctionId, Outcome, SmcCall, World};

/// The monitor's shared state (PSCI power states), behind one lock; SMC
/// handling holds it for the length of one call.
pub static MONITOR: SpinMutex<Monitor> = SpinMutex::new(Monitor::new(BOARD));

/// ESR_EL3 exception class: SMC from AArch64.
const EC_SMC64: u64 = 0x17;

fn world_of(ctx: &WorldContext) -> World {
    if ctx.scr_el3 & 1 != 0 {
        World::NonSecure
    } else {
        World::Secure
    }
}

/// Synchronous exception from a lower EL: an SMC (anything else cannot be
/// routed here with our SCR_EL3 settings, and is logged and skipped).
pub extern "C" fn lower_sync(ctx: &mut WorldContext) -> *mut WorldContext {
    let esr = read_esr_el3().bits();
    let core = console::core_index();
    if esr >> 26 != EC_SMC64 {
        log!(
            "unexpected trap from {:?}: ESR {esr:#x} at {:#x}; skipped",
            world_of(ctx),
            ctx.elr_el3
        );
        ctx.elr_el3 += 4;
        return ctx;
    }
    let call = SmcCall {
        fid: FunctionId(ctx.x[0] as u32),
        args: [
            ctx.x[1], ctx.x[2], ctx.x[3], ctx.x[4], ctx.x[5], ctx.x[6], ctx.x[7],
        ],
        imm: esr as u16,
        from: world_of(ctx),
        core,
    };
    let outcome = services::handle(&mut MONITOR.lock(), &call);
    match outcome {
        Outcome::Return(r) => ctx.x[..4].copy_from_slice(&r),
        Outcome::ReturnAndWake(r) => {
            ctx.x[..4].copy_from_slice(&r);
            // SAFETY: barriers and an event signal have no memory effects
            // beyond ordering; parked cores re-check their PSCI state.
            unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };
        }
        Outcome::CpuOff => {
            log!("off");
            park(core)
        }
        Outcome::SystemOff => power::system_off(),
        Outcome::SystemReset => power::system_reset(),
    }
    ctx
}

/// IRQs stay with Linux (SCR_EL3.IRQ = 0), so none should reach EL3.
pub extern "C" fn lower_irq(ctx: &mut WorldContext) -> *mut WorldContext {
    log!("unexpected IRQ at EL3");
    ctx
}

/// Secure interrupts while Linux runs. No secure interrupt is enabled until the
/// RTOS exists, so one arriving is a configuration error: stop loudly.
pub extern "C" fn lower_fiq(ctx: &mut WorldContext) -> *mut WorldContext {
    panic!(
        "secure interrupt while no RTOS is configured (ELR {:#x})",
        ctx.elr_el3
    );
}

/// SError from a lower EL (SCR_EL3.EA = 0 keeps these with EL1; defensive).
pub extern "C" fn lower_serror(ctx: &mut WorldContext) -> *mut WorldContext {
    log!("SError from {:?} at {:#x}", world_of(ctx), ctx.elr_el3);
    ctx
}

/// A fault taken in the monitor itself.
pub extern "C" fn monitor_fault(esr: u64, elr: u64, far: u64) -> ! {
    panic!("monitor fault: ESR {esr:#x} ELR {elr:#x} FAR {far:#x}");
}

/// Waits, powered down in PSCI's eyes, until a CPU_ON names this core.
pub fn park(core: usize) -> ! {
    loop {
        let pending = MONITOR.lock().psci.take_pending(core);
        if let Some((entry, context_id)) = pending {
            enter_normal_world(core, entry, context_id);
        }
        // SAFETY: waiting for an event has no memory effects.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}

/// Enters Linux on this core at NS-EL1 `entry` with x0 = `arg0`, MMU off,
/// interrupts masked, as the arm64 boot protocol asks.
pub fn enter_normal_world(core: usize, entry: u64, arg0: u64) -> ! {
    // SAFETY: `core` is the calling core and no other reference to its state
    // is live (we are about to abandon this stack).
    let state = unsafe { CORES.this_core(core) };
    state.normal = WorldContext {
        elr_el3: entry,
        spsr_el3: SPSR_EL1H_MASKED,
        scr_el3: SCR_NORMAL_WORLD,
        monitor_sp: entry::stack_top(core),
        ..WorldContext::ZERO
    };
    state.normal.x[0] = arg0;
    // SAFETY: EL1 is not running; a reset SCTLR (MMU off) is what it expects.
    unsafe { write_sctlr_el1(SctlrEl1::from_bits_retain(SCTLR_EL1_RESET)) };
    // SAFETY: the context is this core's, freshly built, with its stack top.
    unsafe { entry::resume_world(&mut state.normal) }
}
