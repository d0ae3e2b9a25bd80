//! What the monitor does when a world traps to EL3: decode, hand SMCs to the
//! service table of `tandem-monitor-core`, carry out the outcome, and switch
//! worlds: a secure interrupt while Linux runs resumes the RTOS; the RTOS's
//! YIELD resumes Linux (or starts it, or idles the core until there is work).

use crate::context::{
    CORES, CoreState, El1Regs, SCR_NORMAL_WORLD, SCR_SECURE_WORLD, SCR_TWI, SPSR_EL1H_MASKED,
    WorldContext,
};
use crate::{console, entry, gic, log, power};
use arm_sysregs::el3::accessors::{read_esr_el3, write_scr_el3};
use arm_sysregs::el3::registers::ScrEl3;
use core::sync::atomic::{AtomicBool, Ordering};
use spin::Once;
use tandem_abi::boot::Policies;
use tandem_abi::shm::{TRACE_TO_IDLE, TRACE_TO_LINUX, TRACE_TO_RTOS};
use tandem_abi::smc::ret;
use tandem_board::BOARD;
use tandem_monitor_core::services::{self, Monitor};
use tandem_monitor_core::smc::{FunctionId, Outcome, SmcCall, World};

/// The monitor's shared state; PSCI's power states inside it have their own
/// lock, which only the calls that change them take.
pub static MONITOR: Monitor = Monitor::new(BOARD);

/// Per-core policies, from the boot configuration (set once by the boot core).
pub static POLICIES: Once<Policies> = Once::new();

/// Stolen-time accounting and PV time are on (boot configuration; set by the
/// boot core before the others run).
pub static STEAL_TIME: AtomicBool = AtomicBool::new(false);

/// ESR_EL3 exception class: SMC from AArch64.
const EC_SMC64: u64 = 0x17;
/// ESR_EL3 exception class: a trapped WFI or WFE (only WFI is trapped).
const EC_WFX: u64 = 0x01;

/// Generic counter now.
fn now() -> u64 {
    arm_sysregs::el0::accessors::read_cntpct_el0().bits()
}

fn world_of(ctx: &WorldContext) -> World {
    if ctx.scr_el3 & 1 != 0 {
        World::NonSecure
    } else {
        World::Secure
    }
}

fn has_rtos(core: usize) -> bool {
    POLICIES.get().is_some_and(|p| p.of(core).has_rtos())
}

fn this_core(core: usize) -> &'static mut CoreState {
    // SAFETY: `core` is the calling core (callers pass `console::core_index()`
    // or the index the reset code derived from MPIDR), and each trap handler
    // takes this reference once and drops it before the world resumes.
    unsafe { CORES.this_core(core) }
}

/// Synchronous exception from a lower EL: an SMC (anything else cannot be
/// routed here with our SCR_EL3 settings, and is logged and skipped).
pub extern "C" fn lower_sync(ctx: &mut WorldContext) -> *mut WorldContext {
    let esr = read_esr_el3().bits();
    let core = console::core_index();
    if esr >> 26 != EC_SMC64 {
        // Checked after the SMC test: the world switch's YIELD comes first.
        // ISS bit 0 (TI) tells WFE from WFI; only WFI is trapped (SCR_EL3.TWI).
        if esr >> 26 == EC_WFX && esr & 1 == 0 && world_of(ctx) == World::NonSecure {
            return linux_wfi(ctx, core);
        }
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
    let outcome = services::handle(&MONITOR, &call);
    match outcome {
        Outcome::Return(r) => ctx.x[..4].copy_from_slice(&r),
        Outcome::ReturnAndSignal(r, target) => {
            ctx.x[..4].copy_from_slice(&r);
            if target.is_rpc() {
                gic::ring_rpc(target.core());
            } else {
                // Linux-only cores park with WFE; cores with an RTOS idle
                // with WFI and need the doorbell.
                // SAFETY: barrier and event signal only.
                unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };
                gic::wake(target.core());
            }
        }
        Outcome::YieldToNormal => {
            // The RTOS sees its YIELD return when it is next resumed.
            ctx.x[..4].copy_from_slice(&[ret::SUCCESS as u64, 0, 0, 0]);
            let state = this_core(core);
            state.secure_el1.save();
            if state.steal_time && state.steal.rtos_leaves(now()) {
                crate::shm::publish_stolen(core, state.steal.stolen_ns(BOARD.counter_hz));
            }
            return next_normal(core, state);
        }
        Outcome::CpuOff => {
            log!("off");
            idle(core)
        }
        Outcome::SystemOff => power::system_off(),
        Outcome::SystemReset => power::system_reset(),
    }
    ctx
}

/// What runs after the RTOS yields: Linux as it was, Linux starting (a
/// pending CPU_ON, or the first boot), or nothing (idle until there is work).
fn next_normal(core: usize, state: &'static mut CoreState) -> *mut WorldContext {
    let (pending, linux_on) = {
        let mut monitor = MONITOR.psci.lock();
        let pending = monitor.take_pending(core);
        (
            pending,
            monitor.state(core) == tandem_monitor_core::psci::CoreState::On,
        )
    };
    if let Some((entry, arg)) = pending {
        state.switches.record(core, TRACE_TO_LINUX, now());
        return fresh_normal(core, state, entry, arg);
    }
    if linux_on {
        state.switches.record(core, TRACE_TO_LINUX, now());
        // SAFETY: Linux's own registers, saved when it last left.
        unsafe { state.normal_el1.restore() };
        return &mut state.normal;
    }
    idle(core)
}

/// IRQs stay with the lower ELs (SCR_EL3.IRQ = 0), so none should reach EL3.
pub extern "C" fn lower_irq(ctx: &mut WorldContext) -> *mut WorldContext {
    log!("unexpected IRQ at EL3");
    ctx
}

/// An FIQ while Linux runs: the monitor's doorbell (Group 0), or an RTOS
/// interrupt (Secure Group 1), which preempts Linux at once.
pub extern "C" fn lower_fiq(ctx: &mut WorldContext) -> *mut WorldContext {
    if gic::take_doorbell() {
        return ctx;
    }
    if world_of(ctx) != World::NonSecure {
        return ctx;
    }
    let core = console::core_index();
    let state = this_core(core);
    if !state.rtos {
        return &mut state.normal;
    }
    state.normal_el1.save();
    // SAFETY: the RTOS's registers, saved when it yielded.
    unsafe { state.secure_el1.restore() };
    let t = now();
    // Linux was running code, not waiting: with TWI set its WFI would have
    // trapped instead (see `linux_wfi`), so whatever the RTOS now takes is
    // Linux's time.
    if state.steal_time {
        state.steal.rtos_takes(t, true);
    }
    state.switches.record(core, TRACE_TO_RTOS, t);
    &mut state.secure
}

/// Linux executed WFI (trapped only with stolen-time accounting on): it has
/// nothing to run here. The monitor waits in its place, so that if an RTOS
/// interrupt ends the wait the RTOS runs with Linux known to be idle (no
/// stolen time); anything else (Linux's interrupt, the doorbell) resumes
/// Linux after its WFI, where a pending FIQ traps again as usual.
fn linux_wfi(ctx: &mut WorldContext, core: usize) -> *mut WorldContext {
    ctx.elr_el3 += 4;
    // SAFETY: waiting has no memory effects. Every GIC interrupt reaches EL3
    // as an FIQ, and SCR_EL3.FIQ (set for Linux) routes FIQs to EL3, so any
    // of them ends the wait although PSTATE masks it here.
    unsafe { core::arch::asm!("dsb sy", "wfi", options(nostack)) };
    let state = this_core(core);
    if !state.rtos {
        return &mut state.normal;
    }
    // Group 1 registers must show the secure group while we look.
    // SAFETY: EL3 runs the same with either SCR value; `resume_world`
    // writes the resumed world's SCR_EL3 back.
    unsafe { write_scr_el3(ScrEl3::from_bits_retain(SCR_SECURE_WORLD)) };
    if !gic::secure_interrupt_pending() {
        return &mut state.normal;
    }
    state.normal_el1.save();
    // SAFETY: the RTOS's registers, saved when it yielded.
    unsafe { state.secure_el1.restore() };
    let t = now();
    state.steal.rtos_takes(t, false);
    state.switches.record(core, TRACE_TO_RTOS, t);
    &mut state.secure
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

/// The core has nothing to run: Linux is off here (before its CPU_ON, after
/// CPU_OFF) and the RTOS, if any, is idle. Waits (WFI) for the doorbell (a
/// CPU_ON) or an RTOS interrupt, and runs what arrived.
pub fn idle(core: usize) -> ! {
    // Group 1 registers must show the secure group while we look.
    // SAFETY: EL3 runs the same with either SCR value; it is rewritten on
    // every return to a lower EL.
    unsafe { write_scr_el3(ScrEl3::from_bits_retain(SCR_SECURE_WORLD)) };
    let rtos = this_core(core).rtos;
    this_core(core).switches.record(core, TRACE_TO_IDLE, now());
    loop {
        gic::take_doorbell();
        let pending = MONITOR.psci.lock().take_pending(core);
        let state = this_core(core);
        if let Some((entry, arg)) = pending {
            state.switches.record(core, TRACE_TO_LINUX, now());
            // SAFETY: a fresh context for this core.
            unsafe { entry::resume_world(fresh_normal(core, state, entry, arg)) };
        }
        if rtos && gic::secure_interrupt_pending() {
            let t = now();
            // Linux is off here: nothing to steal from.
            state.steal.rtos_takes(t, false);
            state.switches.record(core, TRACE_TO_RTOS, t);
            // SAFETY: the RTOS's registers, saved when it yielded; its
            // context is the one it trapped from.
            unsafe {
                state.secure_el1.restore();
                entry::resume_world(&mut state.secure)
            };
        }
        // SAFETY: waiting for an interrupt has no memory effects; pending
        // interrupts wake WFI even while masked at EL3.
        unsafe { core::arch::asm!("dsb sy", "wfi", options(nostack)) };
    }
}

/// Linux's context for a fresh start on this core at NS-EL1 `entry` with
/// x0 = `arg0`, MMU off, interrupts masked, as the arm64 boot protocol asks.
fn fresh_normal(
    core: usize,
    state: &'static mut CoreState,
    entry: u64,
    arg0: u64,
) -> *mut WorldContext {
    let twi = if state.steal_time { SCR_TWI } else { 0 };
    state.normal = WorldContext {
        elr_el3: entry,
        spsr_el3: SPSR_EL1H_MASKED,
        scr_el3: SCR_NORMAL_WORLD | twi,
        monitor_sp: entry::stack_top(core),
        ..WorldContext::ZERO
    };
    state.normal.x[0] = arg0;
    state.normal_el1 = El1Regs::RESET;
    // SAFETY: reset values for an EL1 that starts from scratch.
    unsafe { state.normal_el1.restore() };
    &mut state.normal
}

/// The RTOS's context for its start on this core: entry at the base of its
/// RAM, x0 = core index, x1 = the shared region, x2 = the cores the RTOS runs
/// on (bit mask).
pub fn fresh_secure(core: usize) -> *mut WorldContext {
    let state = this_core(core);
    state.secure = WorldContext {
        elr_el3: BOARD.rtos_ram.base,
        spsr_el3: SPSR_EL1H_MASKED,
        scr_el3: SCR_SECURE_WORLD,
        monitor_sp: entry::stack_top(core),
        ..WorldContext::ZERO
    };
    state.secure.x[0] = core as u64;
    state.secure.x[1] = BOARD.shared.base;
    state.secure.x[2] = (0..BOARD.max_cores)
        .filter(|&c| has_rtos(c))
        .fold(0, |m, c| m | 1 << c);
    state.secure_el1 = El1Regs::RESET;
    // SAFETY: reset values for an EL1 that starts from scratch.
    unsafe { state.secure_el1.restore() };
    &mut state.secure
}

/// Starts this core's first world after cold boot: the RTOS if the core has
/// one (it always runs first), else Linux if it may start here, else idle.
pub fn start_core(core: usize) -> ! {
    this_core(core).rtos = has_rtos(core);
    this_core(core).steal_time = STEAL_TIME.load(Ordering::Relaxed);
    if this_core(core).rtos {
        let t = now();
        // Linux has not started here yet: nothing to steal from.
        this_core(core).steal.rtos_takes(t, false);
        this_core(core).switches.record(core, TRACE_TO_RTOS, t);
        // SAFETY: a fresh context for this core.
        unsafe { entry::resume_world(fresh_secure(core)) }
    }
    let state = this_core(core);
    let pending = MONITOR.psci.lock().take_pending(core);
    match pending {
        Some((entry, arg)) => {
            state.switches.record(core, TRACE_TO_LINUX, now());
            // SAFETY: a fresh context for this core.
            unsafe { entry::resume_world(fresh_normal(core, state, entry, arg)) }
        }
        None => idle(core),
    }
}
