//! What the monitor does when a world traps to EL3: decode the trap (an SMC
//! for the service table, a world-switch event for the core's state
//! machine), then carry out what `tandem-monitor-core` decided. No decision
//! is made here: which world runs next is `switch::CoreSwitch`'s, what a
//! call does is `services`'s; the board's part goes through [`Plat`].

use crate::context::{
    CORES, CoreState, SCR_NORMAL_WORLD, SCR_SECURE_WORLD, SCR_TWI, SPSR_EL1H_MASKED,
    SPSR_EL2H_MASKED, WorldContext, resume_world, resume_yielded, stack_top,
};
use crate::{console, linux, log, note, shm};
use arm_sysregs::el3::accessors::read_esr_el3;
use core::mem::offset_of;
use spin::Once;
use tandem_abi::boot::Policies;
use tandem_board::BOARD;
use tandem_monitor_core::inject;
use tandem_monitor_core::lifecycle::Instances;
use tandem_monitor_core::platform::Platform;
use tandem_monitor_core::services::{self, Monitor, Pending};
use tandem_monitor_core::smc::{Outcome, SmcCall, World};
use tandem_monitor_core::steal::ticks_to_ns;
use tandem_monitor_core::switch::{CoreSwitch, Event, LinuxEntry, Next, Step};

/// The board this firmware runs on.
pub type Plat = crate::plat::QemuVirt;

/// The monitor's shared state; PSCI's power states inside it have their own
/// lock, which only the calls that change them take.
pub static MONITOR: Monitor = Monitor::new(BOARD);

/// Per-core policies, from the boot configuration (set once by the boot core).
pub static POLICIES: Once<Policies> = Once::new();

/// Counter ticks a core takes to give itself to Linux and come back for the
/// RTOS's interrupt (the board's `rtos_leave_ns`): Linux does not start on a
/// core whose RTOS timer fires sooner, as the RTOS does not leave it then.
const RTOS_LEAVE_TICKS: u64 = BOARD.ns_to_ticks_up(BOARD.rtos_leave_ns);

/// ESR_EL3 exception class: SMC from AArch64.
const EC_SMC64: u64 = 0x17;
/// ESR_EL3 exception class: a trapped WFI or WFE (only WFI is trapped).
const EC_WFX: u64 = 0x01;
/// ESR_EL3 of `smc #0` from AArch64: its class, IL (a 32-bit instruction)
/// and an ISS of the immediate alone, the rest of it RES0.
const ESR_SMC64_IMM0: u64 = EC_SMC64 << 26 | 1 << 25;

/// The calling core's state.
#[inline(always)]
fn state(core: usize) -> &'static mut CoreState {
    // SAFETY: `core` is the calling core (from its context, which the
    // monitor wrote, or from the index the reset code derived from MPIDR
    // and checked), and every caller drops the reference, and any reference
    // to one of the core's contexts, before it takes another.
    unsafe { CORES.this_core(core) }
}

/// The context the vector code just saved, to read and write while the
/// handler decodes the trap. Handlers take it as a pointer and borrow it only
/// until they look at the core's state, which contains it.
///
/// # Safety
///
/// `ctx` must be what the vector code passed: the calling core's context of
/// the world that trapped.
#[inline(always)]
unsafe fn saved<'a>(ctx: *mut WorldContext) -> &'a mut WorldContext {
    // SAFETY: a valid, aligned context of this core's (the caller's
    // promise), which no other reference points at while the trap is decoded.
    unsafe { &mut *ctx }
}

/// The core's state that holds `ctx`, the context of `world` the vector
/// code passed: found from the context's own address, which spares the
/// world switch's paths the core's index and the multiplication.
///
/// # Safety
///
/// As [`saved`], with `world` the world that trapped; the caller holds no
/// other reference to the core's state or its contexts.
#[inline(always)]
unsafe fn state_holding<'a>(ctx: *mut WorldContext, world: World) -> &'a mut CoreState {
    let offset = match world {
        World::NonSecure => offset_of!(CoreState, normal),
        World::Secure => offset_of!(CoreState, secure),
    };
    // SAFETY: SP_EL3 only ever points at a context inside a `CoreState` of
    // `CORES` (`resume_world` and `resume_yielded` are given no other), the
    // one of the world that runs, so stepping back by that field's offset
    // reaches its `CoreState`, exclusively the caller's (its promise).
    unsafe { &mut *ctx.byte_sub(offset).cast::<CoreState>() }
}

/// A synchronous exception from Linux: an SMC, or its WFI (trapped only with
/// stolen-time accounting on). Any other access that traps to EL3 (the GIC's
/// Group 0 registers, while SCR_EL3.FIQ is set) is refused.
pub extern "C" fn normal_sync(ctx: *mut WorldContext) -> *mut WorldContext {
    let esr = read_esr_el3().bits();
    if esr >> 26 == EC_SMC64 {
        return smc(ctx, esr, World::NonSecure);
    }
    // SAFETY: the vector code's argument.
    let trapped = unsafe { saved(ctx) };
    // ISS bit 0 (TI) tells WFE from WFI.
    if esr >> 26 == EC_WFX && esr & 1 == 0 {
        trapped.elr_el3 += 4;
        let core = trapped.core as usize;
        let event = linux_waits(core);
        return resume(switch(core, Some(World::NonSecure), event), core);
    }
    refuse(trapped);
    ctx
}

/// Linux has nothing to run on `core` (its WFI, or CPU_SUSPEND to standby).
/// The monitor waits in its place, so that an RTOS interrupt ending the
/// wait finds Linux idle (no stolen time); anything else resumes Linux
/// after its WFI or its call, where a pending FIQ traps again as usual.
#[inline(always)]
fn linux_waits(core: usize) -> Event {
    Plat::wait_for_interrupt();
    let secure_pending = state(core).switch.rtos() && Plat::secure_interrupt_pending();
    Event::LinuxWfi { secure_pending }
}

/// Refuses the access `trapped` made: an Undefined Instruction exception at
/// the level that made it, as for an instruction the core does not have,
/// and a count in the core's record. Nothing is logged: Linux can do this
/// in a loop, and a line on the console would hold the core at EL3 for
/// milliseconds on hardware. Out of line, so Linux's SMC path keeps
/// nothing for it.
#[cold]
#[inline(never)]
fn refuse(trapped: &mut WorldContext) {
    state(trapped.core as usize).counts.refused_trap();
    let from_el = trapped.spsr_el3 >> 2 & 0b11;
    let sctlr = if from_el == 2 {
        arm_sysregs::el2::accessors::read_sctlr_el2().bits()
    } else {
        arm_sysregs::el1::accessors::read_sctlr_el1().bits()
    };
    let Ok(undefined) = inject::undefined(trapped.spsr_el3, sctlr) else {
        // Not from EL1 or EL2 (cannot trap here with our settings): skip it.
        trapped.elr_el3 += 4;
        return;
    };
    let vbar = if undefined.el == 2 {
        write_el2_exception(trapped);
        arm_sysregs::el2::accessors::read_vbar_el2().bits()
    } else {
        write_el1_exception(trapped);
        arm_sysregs::el1::accessors::read_vbar_el1().bits()
    };
    trapped.elr_el3 = vbar + undefined.vector_offset;
    trapped.spsr_el3 = undefined.spsr;
}

/// ESR, ELR and SPSR of EL1 as the core sets them taking an Undefined
/// Instruction exception for the access `trapped` made. Linux's EL1
/// registers are live while it traps (the monitor swaps them only on a
/// world switch).
fn write_el1_exception(trapped: &WorldContext) {
    use arm_sysregs::el1::accessors::{write_elr_el1, write_esr_el1, write_spsr_el1};
    use arm_sysregs::el1::registers::{ElrEl1, EsrEl1, SpsrEl1};
    write_esr_el1(EsrEl1::from_bits_retain(inject::ESR_UNDEFINED));
    // SAFETY: Linux's own exception registers, written as the core would on
    // taking the exception; the monitor's return to Linux uses ELR_EL3.
    unsafe {
        write_elr_el1(ElrEl1::from_bits_retain(trapped.elr_el3));
        write_spsr_el1(SpsrEl1::from_bits_retain(trapped.spsr_el3));
    }
}

/// As [`write_el1_exception`], for an access the normal world's EL2 layer
/// made.
fn write_el2_exception(trapped: &WorldContext) {
    use arm_sysregs::el2::accessors::{write_elr_el2, write_esr_el2, write_spsr_el2};
    use arm_sysregs::el2::registers::{ElrEl2, EsrEl2, SpsrEl2};
    write_esr_el2(EsrEl2::from_bits_retain(inject::ESR_UNDEFINED));
    // SAFETY: the layer's own exception registers, as the core would write
    // them; EL3 returns through ELR_EL3.
    unsafe {
        write_elr_el2(ElrEl2::from_bits_retain(trapped.elr_el3));
        write_spsr_el2(SpsrEl2::from_bits_retain(trapped.spsr_el3));
    }
}

/// A synchronous exception from the RTOS: an SMC, its only way here
/// (`entry.rs` saved what its calls preserve).
///
/// YIELD, which begins every switch to Linux, is recognised first, from
/// exactly what the dispatch table recognises it by (`services::
/// is_rtos_yield`: the secure world, which this vector is for, immediate 0,
/// w0 = YIELD), and goes straight to the state machine. Every other call,
/// and YIELD with any other ESR (a RES0 bit set), takes the general decode
/// with all of SMCCC's checks.
pub extern "C" fn secure_sync(ctx: *mut WorldContext) -> *mut WorldContext {
    let esr = read_esr_el3().bits();
    // SAFETY: the vector code's argument, borrowed only to read w0.
    let w0 = unsafe { saved(ctx) }.x[0] as u32;
    if esr == ESR_SMC64_IMM0 && services::is_rtos_yield(World::Secure, 0, w0) {
        // SAFETY: the vector code's argument, from the secure world; the
        // borrow above has ended.
        let state = unsafe { state_holding(ctx, World::Secure) };
        let core = state.secure.core as usize;
        return resume(
            switch_in(state, core, Some(World::Secure), Event::Yield),
            core,
        );
    }
    secure_call(ctx, esr)
}

/// Any other trap from the RTOS: one of its other calls, decoded and
/// dispatched with every check. Out of line, so YIELD's path keeps none of
/// its registers or stack.
#[inline(never)]
fn secure_call(ctx: *mut WorldContext, esr: u64) -> *mut WorldContext {
    if esr >> 26 == EC_SMC64 {
        return smc(ctx, esr, World::Secure);
    }
    // SAFETY: the vector code's argument.
    unexpected_secure_trap(esr, unsafe { saved(ctx) }.elr_el3)
}

/// Out of line, so the YIELD path keeps nothing for the message.
#[cold]
#[inline(never)]
fn unexpected_secure_trap(esr: u64, at: u64) -> ! {
    log!("unexpected trap from the RTOS: ESR {esr:#x} at {at:#x}");
    // Only part of its registers were saved: it cannot be resumed.
    Plat::system_off()
}

/// An SMC from `from`: the service table answers, the outcome is carried out.
#[inline(always)]
fn smc(ctx: *mut WorldContext, esr: u64, from: World) -> *mut WorldContext {
    // SAFETY: the vector code's argument, passed on.
    let caller = unsafe { saved(ctx) };
    let core = caller.core as usize;
    let outcome = {
        let regs = caller.x.first_chunk().expect("x0..x30");
        services::handle(&MONITOR, &SmcCall::new(regs, esr as u16, from, core))
    };
    let event = match outcome {
        Outcome::Return(r) => {
            caller.x[..4].copy_from_slice(&r);
            return ctx;
        }
        Outcome::ReturnAndSignal(r, target) => {
            caller.x[..4].copy_from_slice(&r);
            if target.is_rpc() {
                Plat::ring_rpc(target.core());
            } else {
                Plat::wake(target.core());
            }
            return ctx;
        }
        // PSCI CPU_SUSPEND to standby: SUCCESS once Linux has an interrupt.
        Outcome::Standby => {
            caller.x[..4].copy_from_slice(&[0; 4]);
            linux_waits(core)
        }
        // The RTOS keeps only x18-x29 across YIELD (`tos::YIELD`): no result
        // is written for it.
        Outcome::YieldToNormal => Event::Yield,
        // Issued again: back to the SMC instruction, its registers as they
        // were; an RTOS interrupt pending here is taken on the way.
        Outcome::Retry => {
            caller.elr_el3 -= 4;
            return ctx;
        }
        Outcome::CpuOff => {
            state(core).counts.cpu_off();
            // Linux's timers and interrupts no longer wake this core.
            Plat::linux_stopped_here();
            Event::CpuOff
        }
        Outcome::MachineOff => Plat::system_off(),
        Outcome::StopLinux { restart, wake } => stop_linux(core, restart, wake),
    };
    resume(switch(core, Some(from), event), core)
}

/// Linux on `core` asked to stop (SYSTEM_OFF) or to restart
/// (SYSTEM_RESET), and `services` made it so: its other cores in `wake` are
/// woken to stop it too, this one stops it now. Its boot core starts it
/// again once it is off everywhere; the RTOS and other partitions run on.
#[cold]
#[inline(never)]
fn stop_linux(core: usize, restart: bool, wake: u64) -> ! {
    if wake != 0 {
        let instance = MONITOR.lifecycle.instance_of(core).unwrap_or(0);
        note!(
            "Linux{} asked to {} (core {core}): stopping it on cores {:#x}",
            partition_name(instance),
            if restart { "restart" } else { "power off" },
            wake | 1 << core
        );
    }
    for c in (0..BOARD.max_cores).filter(|&c| wake >> c & 1 != 0) {
        Plat::wake(c);
    }
    stop_here(core, Some(World::NonSecure));
    look(core)
}

/// Linux stops on this core (it was asked to): its state is dropped, its
/// lock-state words cleared, and the boot core told, which may be waiting
/// for this to restart Linux.
#[cold]
#[inline(never)]
fn stop_here(core: usize, from: Option<World>) {
    let _ = switch(core, from, Event::StopLinux);
    Plat::linux_stopped_here();
    shm::linux_stopped(core);
    if let Some(boot_core) = MONITOR.linux_stopped(core) {
        Plat::wake(boot_core);
    }
}

/// This boot's Linux instances (configured at cold boot).
fn instances() -> &'static Instances {
    MONITOR
        .lifecycle
        .instances()
        .expect("configured at cold boot")
}

/// " (partition X)" for a partition's messages; nothing without partitions.
fn partition_name(instance: usize) -> PartitionName {
    PartitionName(instances().get(instance).name)
}

/// Formats as " (partition X)", or nothing for the one Linux.
struct PartitionName(u8);

impl core::fmt::Display for PartitionName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0 == 0 {
            Ok(())
        } else {
            write!(f, " (partition {})", self.0 as char)
        }
    }
}

/// On an instance's boot core, with its Linux off everywhere: one step of
/// its restart (first its devices reset, then its images copied from flash
/// again a piece at a time); after the last (and the stub written again),
/// it starts here as at cold boot. Between steps the look
/// loop lets the RTOS run.
#[cold]
#[inline(never)]
fn restart_linux(core: usize, instance: usize) {
    match linux::copy_step(instances(), instance) {
        Ok(linux::Restart::Copying) => {}
        Ok(linux::Restart::Quiesced(q)) => {
            note!(
                "Linux{}: reset {} virtio-mmio device(s) before copying its images",
                partition_name(instance),
                q.reset
            );
            if q.stuck != 0 {
                note!(
                    "Linux{}: {} virtio-mmio device(s) did not read back reset",
                    partition_name(instance),
                    q.stuck
                );
            }
        }
        Ok(linux::Restart::Ready(start)) => {
            let generation = MONITOR.restart_linux(instance, start.entry, start.dtb);
            // The shared region's count is the first instance's (the
            // one Linux, or partition A, which has Tandem's driver).
            if instance == 0 {
                shm::publish_linux_generation(generation);
            }
            if instances().hyp {
                note!(
                    "Linux{} restarts (generation {generation}); the RTOS and the other partitions ran on",
                    partition_name(instance)
                );
            } else {
                note!("Linux restarts (generation {generation}); the RTOS ran on (core {core})");
            }
        }
        Err(e) => {
            MONITOR.lifecycle.restart_refused(instance);
            note!(
                "Linux{} not restarted: its images in secure flash are unusable: {e}",
                partition_name(instance)
            );
        }
    }
}

/// IRQs stay with the lower ELs (SCR_EL3.IRQ = 0), so none should reach EL3.
pub extern "C" fn lower_irq(ctx: *mut WorldContext) -> *mut WorldContext {
    log!("unexpected IRQ at EL3");
    ctx
}

/// An FIQ while Linux runs (only Linux runs with SCR_EL3.FIQ set): the
/// monitor's doorbell (Group 0), or an RTOS interrupt (Secure Group 1),
/// which preempts Linux at once.
pub extern "C" fn lower_fiq(ctx: *mut WorldContext) -> *mut WorldContext {
    if Plat::take_doorbell() {
        return doorbell_while_linux_runs(ctx);
    }
    // SAFETY: the vector code's argument, from Linux (only it runs with
    // SCR_EL3.FIQ set).
    let state = unsafe { state_holding(ctx, World::NonSecure) };
    let core = state.normal.core as usize;
    resume(
        switch_in(
            state,
            core,
            Some(World::NonSecure),
            Event::Fiq { doorbell: false },
        ),
        core,
    )
}

/// The monitor's doorbell while Linux runs: a stop of Linux on this core,
/// or nothing for it (the idle loop's wake-up, rung before it reached this
/// core's look). Out of line, so an RTOS interrupt's path keeps nothing of
/// it.
#[cold]
#[inline(never)]
fn doorbell_while_linux_runs(ctx: *mut WorldContext) -> *mut WorldContext {
    // SAFETY: the vector code's argument, passed on.
    let core = unsafe { saved(ctx) }.core as usize;
    if MONITOR.stop_requested(core) {
        stop_here(core, Some(World::NonSecure));
        look(core);
    }
    resume(
        switch(core, Some(World::NonSecure), Event::Fiq { doorbell: true }),
        core,
    )
}

/// Where a step leaves the core.
enum Then {
    /// Resume this context.
    Resume(*mut WorldContext),
    /// Stay in the monitor and look for work.
    Look,
    /// Stay in the monitor and wait for the RTOS's interrupt alone.
    WaitForRtos,
}

/// A trap handler's return: the context to resume, or the monitor's loop.
#[inline(always)]
fn resume(then: Then, core: usize) -> *mut WorldContext {
    match then {
        Then::Resume(ctx) => ctx,
        Then::Look | Then::WaitForRtos => look(core),
    }
}

/// Feeds `event` to this core's state machine and carries out the step:
/// saves the EL1 state of the world that stops, publishes stolen time,
/// traces the switch, and says what runs next. `from` is the world that
/// trapped (`None`: the core was in the monitor), resumed if nothing
/// changes. A switch to the other world is made from here, without
/// returning.
#[inline(always)]
fn switch(core: usize, from: Option<World>, event: Event) -> Then {
    switch_in(state(core), core, from, event)
}

/// As [`switch`], with the core's state already found.
#[inline(always)]
fn switch_in(state: &mut CoreState, core: usize, from: Option<World>, event: Event) -> Then {
    let now = Plat::now();
    let step = state.switch.step(event, now);
    // Each arm carries out the whole step itself, so that on a world
    // switch's path the compiler knows the step and nothing is tested twice.
    match step.next {
        Next::Linux => {
            record(core, state, &step, now);
            // SAFETY: Linux's own registers, saved when it last left; the
            // RTOS's were saved at its YIELD. Its context is the one it
            // trapped from, saved whole.
            unsafe {
                state.linux_el1.restore();
                resume_world(&mut state.normal)
            }
        }
        Next::Rtos => {
            record(core, state, &step, now);
            // SAFETY: the RTOS's registers, saved at its YIELD (its
            // settings at a YIELD since its start: `saves_rtos_settings`),
            // after Linux's were saved (if it ran); its context is the one
            // it yielded from.
            unsafe {
                state.rtos_el1.restore();
                resume_yielded(&mut state.secure)
            }
        }
        Next::Same => {
            record(core, state, &step, now);
            from.map_or(Then::Look, |w| Then::Resume(state.context(w)))
        }
        Next::StartLinux => {
            record(core, state, &step, now);
            Then::Resume(fresh_normal(core, state))
        }
        Next::StartRtos => {
            record(core, state, &step, now);
            Then::Resume(fresh_secure(core, state))
        }
        Next::Look | Next::Wait => {
            record(core, state, &step, now);
            Then::Look
        }
        Next::WaitForRtos => {
            record(core, state, &step, now);
            Then::WaitForRtos
        }
    }
}

/// The part of a step every outcome shares: stolen time published, the EL1
/// state of the world that stops saved, the switch traced.
#[inline(always)]
fn record(core: usize, state: &mut CoreState, step: &Step, now: u64) {
    // Stolen time first: the compiler then tests it where the state machine
    // decided it, with nothing in between.
    if let Some(ticks) = step.stolen {
        shm::publish_stolen(core, ticks_to_ns(ticks, BOARD.counter_hz));
    }
    match step.save {
        Some(World::NonSecure) => state.linux_el1.save(),
        Some(World::Secure) => state.rtos_el1.save(),
        None => {}
    }
    // Known at compile time on both switch paths (the caller matched
    // `step.next`): false on the YIELD that resumes Linux.
    if step.saves_rtos_settings() {
        state.rtos_el1.save_settings();
    }
    if let Some(event) = step.trace {
        state.switches.record(event, now);
    }
}

/// The core is in the monitor with no world to resume: looks for work (a
/// pending CPU_ON, an RTOS interrupt) and waits for an interrupt (the
/// doorbell, or the RTOS's) until there is some. While it waits with
/// nothing to do, it writes out the lines kept for the console.
fn look(core: usize) -> ! {
    let rtos = state(core).switch.rtos();
    let mut woken = false;
    loop {
        // The RTOS first: its interrupt, and the moment before its timer
        // fires, which nothing the normal world asked for (a CPU_ON, a
        // restart's copy, a stop: each waits for the RTOS's turn) may take.
        let secure_pending = rtos && Plat::secure_interrupt_pending();
        let rtos_soon = !secure_pending
            && rtos
            && Plat::rtos_timer().is_some_and(|at| at <= Plat::now() + RTOS_LEAVE_TICKS);
        let (mut stopping, mut restarting, mut pending, mut busy) = (false, None, None, false);
        if !secure_pending && !rtos_soon {
            Plat::take_doorbell();
            stopping = MONITOR.stop_requested(core);
            if stopping {
                stop_here(core, None);
            }
            restarting = MONITOR.lifecycle.restart_due(core);
            if let Some(instance) = restarting {
                restart_linux(core, instance);
            }
            match MONITOR.take_pending(core) {
                Pending::Entry(entry, context_id) => {
                    pending = Some(LinuxEntry { entry, context_id });
                }
                Pending::Nothing => {}
                Pending::Busy => busy = true,
            }
        }
        let event = Event::Look {
            pending,
            secure_pending,
            rtos_soon,
        };
        let found_work = stopping || restarting.is_some() || pending.is_some() || secure_pending;
        match switch(core, None, event) {
            // SAFETY: a context of this core's, just made.
            Then::Resume(ctx) => unsafe { resume_world(ctx) },
            Then::WaitForRtos => {
                Plat::wait_for_rtos_interrupt();
                continue;
            }
            Then::Look => {}
        }
        if woken && !found_work {
            state(core).counts.idle_wakeup();
        }
        if busy {
            // An entry may wait behind the PSCI lock another core holds:
            // look again once it is free, or at once for the RTOS, in a loop
            // short enough that its interrupt waits for none of a pass.
            while MONITOR.psci_busy() && !(rtos && Plat::secure_interrupt_pending()) {
                core::hint::spin_loop();
            }
        }
        // While a restart's copy goes on, the next pass follows at once.
        woken = restarting.is_none() && !busy;
        if woken {
            console::drain();
            Plat::wait_for_interrupt();
        }
    }
}

/// Linux's context for a fresh start on this core at NS-EL1, at the entry
/// the state machine kept, with x0 = its context ID (set by the stub), MMU
/// off, interrupts masked, as the arm64 boot protocol asks. With partitions
/// the core starts in the EL2 layer (at NS-EL2, its image's base, with x0 =
/// the entry, x1 = the context ID, x2 = 1 if this starts the partition),
/// which sets the partition up on the core and enters Linux at EL1.
fn fresh_normal(core: usize, state: &mut CoreState) -> *mut WorldContext {
    let e = state.switch.linux_entry();
    let twi = if MONITOR.steal_time() { SCR_TWI } else { 0 };
    if instances().hyp {
        state.normal = WorldContext {
            elr_el3: BOARD.hyp_ram.base,
            spsr_el3: SPSR_EL2H_MASKED,
            scr_el3: SCR_NORMAL_WORLD | twi,
            monitor_sp: stack_top(core),
            core: core as u64,
            ..WorldContext::ZERO
        };
        state.normal.x[0] = e.entry;
        state.normal.x[1] = e.context_id;
        state.normal.x[2] = MONITOR.lifecycle.take_start(core).into();
        // SAFETY: reset values for an EL1 that starts from scratch.
        unsafe { state.linux_el1.reset() };
        return &mut state.normal;
    }
    // Through the stub (entry.rs), which ends what a stopped Linux left
    // active in the core's interrupt controller, then enters `e.entry`.
    state.normal = WorldContext {
        elr_el3: linux::stub(),
        spsr_el3: SPSR_EL1H_MASKED,
        scr_el3: SCR_NORMAL_WORLD | twi,
        monitor_sp: stack_top(core),
        core: core as u64,
        ..WorldContext::ZERO
    };
    state.normal.x[19] = e.entry;
    state.normal.x[20] = e.context_id;
    // SAFETY: reset values for an EL1 that starts from scratch.
    unsafe { state.linux_el1.reset() };
    &mut state.normal
}

/// The RTOS's context for its start on this core: entry at the base of its
/// RAM, x0 = core index, x1 = the shared region, x2 = the cores the RTOS runs
/// on (bit mask).
fn fresh_secure(core: usize, state: &mut CoreState) -> *mut WorldContext {
    state.secure = WorldContext {
        elr_el3: BOARD.rtos_ram.base,
        spsr_el3: SPSR_EL1H_MASKED,
        scr_el3: SCR_SECURE_WORLD,
        monitor_sp: stack_top(core),
        core: core as u64,
        ..WorldContext::ZERO
    };
    state.secure.x[0] = core as u64;
    state.secure.x[1] = BOARD.shared.base;
    state.secure.x[2] = (0..BOARD.max_cores)
        .filter(|&c| has_rtos(c))
        .fold(0, |m, c| m | 1 << c);
    // SAFETY: reset values for an EL1 that starts from scratch.
    unsafe { state.rtos_el1.reset() };
    &mut state.secure
}

fn has_rtos(core: usize) -> bool {
    POLICIES.get().is_some_and(|p| p.of(core).has_rtos())
}

/// Starts this core's first world after cold boot: the RTOS if the core has
/// one (it always runs first), else Linux if it may start here, else idle.
pub fn start_core(core: usize) -> ! {
    let state = state(core);
    state.switch = CoreSwitch::new(has_rtos(core), MONITOR.steal_time());
    state.switches = shm::SwitchLog::new(core);
    state.counts = shm::CoreCounts::new(core);
    match switch(core, None, Event::Reset) {
        // SAFETY: a fresh context for this core.
        Then::Resume(ctx) => unsafe { resume_world(ctx) },
        Then::Look | Then::WaitForRtos => look(core),
    }
}

/// SError from a lower EL (SCR_EL3.EA = 0 keeps these with EL1; defensive).
pub extern "C" fn lower_serror(ctx: *mut WorldContext) -> *mut WorldContext {
    // SAFETY: the vector code's argument.
    let trapped = unsafe { saved(ctx) };
    log!(
        "SError from {:?} at {:#x}",
        trapped.world(),
        trapped.elr_el3
    );
    ctx
}

/// A fault taken in the monitor itself.
pub extern "C" fn monitor_fault(esr: u64, elr: u64, far: u64) -> ! {
    panic!("monitor fault: ESR {esr:#x} ELR {elr:#x} FAR {far:#x}");
}
