//! Recognises the rare instructions the model must hear of: MSR writes of translation registers, TLBI operations and the window-marker hints, from their AArch64 encodings.
//!
//! A plugin runs [`classify`] on each instruction when it translates a
//! block; for the few that match it registers a callback that reads the
//! source register `Xt` and passes [`RareInstruction::event`] to the model.
//! Everything else costs nothing at run time.

use crate::translation::TranslationRegister;

/// What a TLBI operation invalidates (the `L` "last level" variants
/// invalidate the same entries here: the model caches leaf entries only in
/// the TLBs and walk-cache entries are dropped with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlbiOperation {
    /// VMALLE1: the EL1&0 entries of the current VMID and security state.
    VmallE1,
    /// VAE1, VALE1: one VA, the operand's ASID or global.
    VaE1,
    /// ASIDE1: the operand's ASID, non-global entries.
    AsidE1,
    /// VAAE1, VAALE1: one VA, every ASID.
    VaaE1,
    /// ALLE1: every EL1&0 entry of the current security state, every VMID.
    AllE1,
    /// VMALLS12E1: as VMALLE1 (stage 2 entries are not modelled).
    VmallS12E1,
    /// IPAS2E1, IPAS2LE1: stage 2 by IPA; nothing here (no stage 2 entries).
    Ipas2E1,
    /// ALLE2: every EL2 entry.
    AllE2,
    /// VAE2, VALE2: one VA in EL2.
    VaE2,
    /// ALLE3: every EL3 entry.
    AllE3,
    /// VAE3, VALE3: one VA in EL3.
    VaE3,
}

/// A TLBI instruction: what it invalidates, and whether it is broadcast to
/// the inner-shareable domain (the `IS` and `OS` forms: every core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlbi {
    /// The operation.
    pub operation: TlbiOperation,
    /// Broadcast to every core (inner or outer shareable).
    pub broadcast: bool,
}

/// An instruction the model must hear of, and which general-purpose
/// register holds its operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RareInstruction {
    /// `MSR <register>, Xt`.
    RegisterWrite {
        /// The register written.
        register: TranslationRegister,
        /// `t` of `Xt` (31: XZR, the value 0).
        source: u8,
    },
    /// `TLBI <op>{, Xt}`.
    Tlbi {
        /// The operation.
        tlbi: Tlbi,
        /// `t` of `Xt` (31: XZR or no operand).
        source: u8,
    },
    /// A guest's window marker: `HINT #112` opens a window of counters on
    /// the core that runs it, `HINT #113` closes it ([`WINDOW_OPEN_HINT`]);
    /// `HINT #114` and `#115` do the same on every core at once
    /// ([`WINDOW_OPEN_ALL_HINT`]). All are no-ops to the architecture
    /// (unallocated hints).
    Window {
        /// `HINT #112` or `#114` (else `#113` or `#115`).
        open: bool,
        /// `HINT #114` or `#115`: every core's window, not only the
        /// marking core's.
        every_core: bool,
    },
}

/// The hint immediate that opens a window of the model's counters on the
/// core that executes it (`hint #112`; `WINDOW_OPEN_HINT + 1` closes it).
/// An unallocated hint, a no-op on hardware and in QEMU without the model.
pub const WINDOW_OPEN_HINT: u32 = 112;

/// The hint immediate that opens a window on every core at once, at the
/// marking core's time (`hint #114`; `WINDOW_OPEN_ALL_HINT + 1` closes
/// them): a program on one core brackets what the others do meanwhile,
/// as a benchmark's phase of load around a real-time core it cannot run
/// on.
pub const WINDOW_OPEN_ALL_HINT: u32 = 114;

impl RareInstruction {
    /// The general-purpose register to read before passing the event
    /// (`None`: XZR, whose value is 0).
    pub fn source_register(&self) -> Option<u8> {
        let source = match self {
            Self::RegisterWrite { source, .. } | Self::Tlbi { source, .. } => *source,
            Self::Window { .. } => 31,
        };
        (source != 31).then_some(source)
    }

    /// The model's event for this instruction, given `Xt`'s value (none
    /// for a window marker, which the shell handles: it takes no time).
    pub fn event(&self, value: u64) -> Option<crate::SystemEvent> {
        match *self {
            Self::RegisterWrite { register, .. } => {
                Some(crate::SystemEvent::RegisterWrite { register, value })
            }
            Self::Tlbi { tlbi, .. } => Some(crate::SystemEvent::Tlbi {
                tlbi,
                operand: value,
            }),
            Self::Window { .. } => None,
        }
    }
}

/// The rare instruction `instruction` is, if any.
pub fn classify(instruction: u32) -> Option<RareInstruction> {
    // System instructions: bits 31:22 = 0b1101010100, then L (21), op0
    // (20:19), op1 (18:16), CRn (15:12), CRm (11:8), op2 (7:5), Rt (4:0).
    if instruction >> 22 != 0b11_0101_0100 || instruction >> 21 & 1 != 0 {
        return None;
    }
    let field = |shift: u32, bits: u32| (instruction >> shift) & ((1 << bits) - 1);
    let (op0, op1, crn, crm, op2) = (
        field(19, 2),
        field(16, 3),
        field(12, 4),
        field(8, 4),
        field(5, 3),
    );
    let source = field(0, 5) as u8;
    // HINT #imm: op0 0, op1 3, CRn 2, CRm:op2 the immediate, Rt 31.
    let hint = (op0, op1, crn, source) == (0, 3, 2, 31);
    let immediate = crm << 3 | op2;
    if hint && (WINDOW_OPEN_HINT..=WINDOW_OPEN_ALL_HINT + 1).contains(&immediate) {
        return Some(RareInstruction::Window {
            open: immediate % 2 == 0,
            every_core: immediate >= WINDOW_OPEN_ALL_HINT,
        });
    }
    match op0 {
        3 => {
            let register = system_register(op1, crn, crm, op2)?;
            Some(RareInstruction::RegisterWrite { register, source })
        }
        1 if crn == 8 => {
            let tlbi = tlbi(op1, crm, op2)?;
            Some(RareInstruction::Tlbi { tlbi, source })
        }
        _ => None,
    }
}

fn system_register(op1: u32, crn: u32, crm: u32, op2: u32) -> Option<TranslationRegister> {
    use TranslationRegister as R;
    Some(match (op1, crn, crm, op2) {
        (0, 1, 0, 0) => R::SctlrEl1,
        (0, 2, 0, 0) => R::Ttbr0El1,
        (0, 2, 0, 1) => R::Ttbr1El1,
        (0, 2, 0, 2) => R::TcrEl1,
        (0, 13, 0, 1) => R::ContextidrEl1,
        (4, 1, 0, 0) => R::SctlrEl2,
        (4, 1, 1, 0) => R::HcrEl2,
        (4, 2, 0, 0) => R::Ttbr0El2,
        (4, 2, 0, 2) => R::TcrEl2,
        (4, 2, 1, 0) => R::VttbrEl2,
        (6, 1, 0, 0) => R::SctlrEl3,
        (6, 1, 1, 0) => R::ScrEl3,
        (6, 2, 0, 0) => R::Ttbr0El3,
        (6, 2, 0, 2) => R::TcrEl3,
        _ => return None,
    })
}

fn tlbi(op1: u32, crm: u32, op2: u32) -> Option<Tlbi> {
    use TlbiOperation as T;
    // CRm 3: inner shareable; 1: outer shareable (Armv8.4, also every
    // core here); 7: this core. For the stage 2 operations 0 and 4.
    let (broadcast, stage2) = match crm {
        1 | 3 => (true, false),
        7 => (false, false),
        0 => (true, true),
        4 => (false, true),
        _ => return None,
    };
    let operation = match (op1, stage2, op2) {
        (0, false, 0) => T::VmallE1,
        (0, false, 1 | 5) => T::VaE1,
        (0, false, 2) => T::AsidE1,
        (0, false, 3 | 7) => T::VaaE1,
        (4, true, 1 | 5) => T::Ipas2E1,
        (4, false, 0) => T::AllE2,
        (4, false, 1 | 5) => T::VaE2,
        (4, false, 4) => T::AllE1,
        (4, false, 6) => T::VmallS12E1,
        (6, false, 0) => T::AllE3,
        (6, false, 1 | 5) => T::VaE3,
        _ => return None,
    };
    Some(Tlbi {
        operation,
        broadcast,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use TranslationRegister as R;

    fn write(register: R, source: u8) -> Option<RareInstruction> {
        Some(RareInstruction::RegisterWrite { register, source })
    }

    fn tlbi(operation: TlbiOperation, broadcast: bool, source: u8) -> Option<RareInstruction> {
        Some(RareInstruction::Tlbi {
            tlbi: Tlbi {
                operation,
                broadcast,
            },
            source,
        })
    }

    #[test]
    fn translation_register_writes_are_recognised() {
        // Encodings as an assembler writes them.
        assert_eq!(classify(0xd518_2000), write(R::Ttbr0El1, 0)); // msr ttbr0_el1, x0
        assert_eq!(classify(0xd518_2023), write(R::Ttbr1El1, 3)); // msr ttbr1_el1, x3
        assert_eq!(classify(0xd518_2041), write(R::TcrEl1, 1)); // msr tcr_el1, x1
        assert_eq!(classify(0xd518_1000), write(R::SctlrEl1, 0)); // msr sctlr_el1, x0
        assert_eq!(classify(0xd51e_1100), write(R::ScrEl3, 0)); // msr scr_el3, x0
        assert_eq!(classify(0xd51c_2100), write(R::VttbrEl2, 0)); // msr vttbr_el2, x0
        assert_eq!(classify(0xd51e_2000), write(R::Ttbr0El3, 0)); // msr ttbr0_el3, x0
    }

    #[test]
    fn reads_and_other_registers_are_not() {
        assert_eq!(classify(0xd538_2000), None); // mrs x0, ttbr0_el1
        assert_eq!(classify(0xd518_c000), None); // msr vbar_el1, x0
        assert_eq!(classify(0xd503_201f), None); // nop
        assert_eq!(classify(0xd503_3f9f), None); // dsb sy
        assert_eq!(classify(0xf940_0000), None); // ldr x0, [x0]
        assert_eq!(classify(0xd50b_7520), None); // ic ivau, x0
    }

    #[test]
    fn the_window_hints_are_recognised_and_no_other_hint() {
        // hint #112 .. hint #115, as an assembler writes them.
        let window = |open, every_core| Some(RareInstruction::Window { open, every_core });
        assert_eq!(classify(0xd503_2e1f), window(true, false));
        assert_eq!(classify(0xd503_2e3f), window(false, false));
        assert_eq!(classify(0xd503_2e5f), window(true, true));
        assert_eq!(classify(0xd503_2e7f), window(false, true));
        let window = classify(0xd503_2e1f).unwrap();
        assert_eq!((window.source_register(), window.event(7)), (None, None));
        for other in [
            0xd503_2dff, // hint #111
            0xd503_2e9f, // hint #116
            0xd503_203f, // yield
            0xd503_207f, // wfi
            0xd503_233f, // paciasp
        ] {
            assert_eq!(classify(other), None, "{other:#x}");
        }
    }

    #[test]
    fn tlbi_operations_are_recognised_with_their_scope() {
        use TlbiOperation as T;
        assert_eq!(classify(0xd508_831f), tlbi(T::VmallE1, true, 31)); // tlbi vmalle1is
        assert_eq!(classify(0xd508_871f), tlbi(T::VmallE1, false, 31)); // tlbi vmalle1
        assert_eq!(classify(0xd508_8320), tlbi(T::VaE1, true, 0)); // tlbi vae1is, x0
        assert_eq!(classify(0xd508_87a2), tlbi(T::VaE1, false, 2)); // tlbi vale1, x2
        assert_eq!(classify(0xd508_8740), tlbi(T::AsidE1, false, 0)); // tlbi aside1, x0
        assert_eq!(classify(0xd508_8361), tlbi(T::VaaE1, true, 1)); // tlbi vaae1is, x1
        assert_eq!(classify(0xd50c_839f), tlbi(T::AllE1, true, 31)); // tlbi alle1is
        assert_eq!(classify(0xd50c_8024), tlbi(T::Ipas2E1, true, 4)); // tlbi ipas2e1is, x4
        assert_eq!(classify(0xd50e_871f), tlbi(T::AllE3, false, 31)); // tlbi alle3
        assert_eq!(
            classify(0xd508_831f).and_then(|i| i.source_register()),
            None
        );
    }
}
