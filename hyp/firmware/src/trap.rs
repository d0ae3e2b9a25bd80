//! A partition's traps to EL2, decoded by `tandem_hyp_core::fault` and
//! carried out: its distributor accesses emulated, its last redistributor
//! frame's, its SMCs filtered and made for it, its SGIs cut to its cores,
//! and an access outside it handed back as an external abort.

use crate::{console, mmio, regs, this_core, this_partition};
use tandem_abi::smc::ret;
use tandem_board::BOARD;
use tandem_hyp_core::calls::{self, Verdict};
use tandem_hyp_core::fault::{self, IccRegister, ec};
use tandem_hyp_core::gic::{self, Access};
use tandem_hyp_core::maps::GICD_SIZE;

/// A partition's general registers, saved on a trap (`entry.rs`).
#[repr(C)]
pub struct Frame {
    /// x0..x30.
    pub x: [u64; 31],
    /// Keeps the frame 16-byte aligned.
    _pad: u64,
}

impl Frame {
    /// Register `r` (31 reads as zero).
    fn get(&self, r: u8) -> u64 {
        self.x.get(r as usize).copied().unwrap_or(0)
    }

    /// Sets register `r` (31 discards).
    fn set(&mut self, r: u8, v: u64) {
        if let Some(x) = self.x.get_mut(r as usize) {
            *x = v;
        }
    }
}

/// Past the trapping instruction: an SMC or a system register access
/// returns to the next one (an HVC's return address is already there).
fn skip() {
    // SAFETY: the partition resumes at its next instruction.
    unsafe { regs::elr_el2::write(regs::elr_el2::read() + 4) };
}

/// A synchronous exception from the partition on this core.
pub extern "C" fn guest_trap(frame: &mut Frame) {
    let esr = regs::esr_el2::read();
    match fault::class(esr) {
        ec::DABT_LOWER => data_abort(frame, esr),
        ec::SMC64 => {
            smc(frame, esr as u16);
            skip();
        }
        ec::HVC64 => {
            // No hypervisor calls: SMCCC's answer for an unknown function.
            frame.x[0] = ret::NOT_SUPPORTED as u64;
        }
        ec::SYSREG => {
            if gic_register(frame, esr) {
                skip();
            } else {
                hand_back(esr, "an unexpected system register access");
            }
        }
        ec::IABT_LOWER => {
            let core = this_core();
            let (_, p) = this_partition(core);
            console::say(
                p,
                format_args!(
                    "hyp: partition {} core {core}: instruction fetch from {:#x} outside the partition: external abort",
                    p.letter(),
                    fault::fault_ipa(regs::hpfar_el2::read(), regs::far_el2::read())
                ),
            );
            hand_back(esr, "");
        }
        _ => hand_back(esr, "an unexpected exception"),
    }
}

/// An access stage 2 did not let through: the distributor or one of the
/// partition's cores' RD_base frames (emulated), or not its own (handed
/// back as an external abort).
fn data_abort(frame: &mut Frame, esr: u64) {
    let ipa = fault::fault_ipa(regs::hpfar_el2::read(), regs::far_el2::read());
    let core = this_core();
    let (g, p) = this_partition(core);
    let in_gicd = (g.machine.gicd..g.machine.gicd + GICD_SIZE).contains(&ipa);
    let rd_frame = g.machine.rd_frame(p, ipa);
    let (Some(access), true) = (fault::data_access(esr), in_gicd || rd_frame.is_some()) else {
        let what = if fault::permission_fault(esr) {
            "a write to a read-only page"
        } else {
            "outside the partition (or no single load or store)"
        };
        console::say(
            p,
            format_args!(
                "hyp: partition {} core {core}: access to {ipa:#x} {what}: external abort",
                p.letter()
            ),
        );
        hand_back(esr, "");
        return;
    };
    let a = Access {
        offset: 0,
        size: access.size,
        write: access
            .write
            .then(|| access.stored(frame.get(access.register))),
    };
    let (base, action) = match rd_frame {
        Some((frame_base, last)) => (
            frame_base,
            gic::gicr_access(
                Access {
                    offset: ipa - frame_base,
                    ..a
                },
                last,
            ),
        ),
        None => (
            g.machine.gicd,
            gic::gicd_access(
                p,
                Access {
                    offset: ipa - g.machine.gicd,
                    ..a
                },
            ),
        ),
    };
    // SAFETY: `base` is the distributor or one of the partition's cores'
    // RD_base frames, all in the layer's map, and the action was decided
    // for it.
    let value = unsafe { mmio::carry_out(base, action) };
    if !access.write {
        frame.set(access.register, access.loaded(value));
    }
    skip();
}

/// The partition's SMC: filtered, then made for it at EL2 (the monitor
/// sees the layer's call, from this core) or answered here.
fn smc(frame: &mut Frame, imm16: u16) {
    let (_, p) = this_partition(this_core());
    let x: [u64; 8] = frame.x[..8].try_into().expect("eight registers");
    match calls::filter(p, &BOARD, imm16, &x) {
        Verdict::Answer(v) => frame.x[..4].copy_from_slice(&[v as u64, 0, 0, 0]),
        Verdict::Forward => {
            let mut r = [x[0], x[1], x[2], x[3]];
            // SAFETY: an SMC to the monitor with the partition's arguments;
            // the monitor preserves every register but the results (and
            // keeps nothing of the layer's), and never returns from the
            // calls that stop this core (CPU_OFF, the partition's reset).
            unsafe {
                core::arch::asm!(
                    "smc #0",
                    inout("x0") r[0], inout("x1") r[1], inout("x2") r[2], inout("x3") r[3],
                    in("x4") x[4], in("x5") x[5], in("x6") x[6], in("x7") x[7],
                    clobber_abi("C"),
                    options(nostack)
                )
            };
            frame.x[..4].copy_from_slice(&r);
        }
    }
}

/// A trapped access to the GIC's common system registers (ICH_HCR_EL2.TC):
/// SGIs cut to the partition's cores; the rest, this core's own CPU
/// interface, done as asked. False for anything else.
fn gic_register(frame: &mut Frame, esr: u64) -> bool {
    let access = fault::sysreg_access(esr);
    let Some(register) = access.register else {
        return false;
    };
    let value = frame.get(access.rt);
    if access.read {
        let read = match register {
            IccRegister::Pmr => regs::icc_pmr_el1::read,
            IccRegister::Ctlr => regs::icc_ctlr_el1::read,
            IccRegister::Rpr => regs::icc_rpr_el1::read,
            // The others are write-only: a read is undefined.
            _ => return false,
        };
        frame.set(access.rt, read());
        return true;
    }
    let (write, value): (unsafe fn(u64), u64) = match register {
        IccRegister::Sgi1r | IccRegister::Asgi1r | IccRegister::Sgi0r => {
            let core = this_core();
            let (_, p) = this_partition(core);
            let Some(v) = gic::filter_sgi(p, core, value) else {
                // No target left in the partition: nothing to send.
                return true;
            };
            let write = match register {
                IccRegister::Sgi1r => regs::icc_sgi1r_el1::write,
                IccRegister::Asgi1r => regs::icc_asgi1r_el1::write,
                _ => regs::icc_sgi0r_el1::write,
            };
            (write, v)
        }
        IccRegister::Pmr => (regs::icc_pmr_el1::write, value),
        IccRegister::Ctlr => (regs::icc_ctlr_el1::write, value),
        IccRegister::Dir => (regs::icc_dir_el1::write, value),
        // Read-only.
        IccRegister::Rpr => return false,
    };
    // SAFETY: this core's CPU interface in the Non-secure state, the
    // partition's own; an SGI only to the partition's cores (filtered).
    unsafe { write(value) };
    true
}

/// Hands the trap back to the partition's Linux as the exception it would
/// have taken without the layer: an external abort for an access that
/// reached nothing, an undefined instruction otherwise (`what` says which,
/// on the partition's console; empty: already said).
fn hand_back(esr: u64, what: &str) {
    if !what.is_empty() {
        let core = this_core();
        let (_, p) = this_partition(core);
        console::say(
            p,
            format_args!(
                "hyp: partition {} core {core}: {what} (ESR {esr:#x} at {:#x}): undefined instruction",
                p.letter(),
                regs::elr_el2::read()
            ),
        );
    }
    let i = fault::inject(regs::spsr_el2::read(), regs::vbar_el1::read(), esr);
    // SAFETY: the exception Linux takes at EL1 as the hardware would make
    // it: its syndrome, the faulting address and where it was, then its
    // vector with every exception masked.
    unsafe {
        regs::esr_el1::write(i.esr);
        regs::far_el1::write(regs::far_el2::read());
        regs::elr_el1::write(regs::elr_el2::read());
        regs::spsr_el1::write(regs::spsr_el2::read());
        regs::elr_el2::write(i.elr);
        regs::spsr_el2::write(i.spsr);
    }
}

/// An exception the layer's settings never route to EL2, or a fault in the
/// layer itself: said on the board's console, and this core stops.
pub extern "C" fn unexpected(esr: u64, elr: u64, far: u64) -> ! {
    console::emergency(format_args!(
        "hyp: core {}: unexpected exception ESR {esr:#x} ELR {elr:#x} FAR {far:#x}",
        this_core()
    ));
    crate::park()
}
