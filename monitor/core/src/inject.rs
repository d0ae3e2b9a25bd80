//! An Undefined Instruction exception made at EL3 for the normal world, as
//! the core would have taken it: the monitor's answer to any access of
//! Linux's that traps to EL3 and that it does not serve (the GIC's Group 0
//! registers, which trap while SCR_EL3.FIQ is set). The answer is the
//! architecture's for an access the implementation does not offer, it costs
//! the monitor a few register writes, and it is counted, never logged: a
//! loop of such accesses must not hold a core at EL3 (docs/security.md).
//!
//! Pure logic: where the exception goes and with what PSTATE. The firmware
//! reads and writes the registers.

/// ESR_ELx.EC for an exception of unknown reason (how an UNDEFINED
/// instruction is reported), with IL set (a 32-bit instruction).
pub const ESR_UNDEFINED: u64 = 1 << 25;

/// SPSR.M\[3:0\] and the bits around it that matter here.
mod spsr {
    /// M\[4\]: the exception came from AArch32.
    pub const AARCH32: u64 = 1 << 4;
    /// M\[0\]: SPx (the handler's stack), not SP_EL0.
    pub const SP_ELX: u64 = 1;
    /// D, A, I, F: every exception masked on entry.
    pub const DAIF: u64 = 0b1111 << 6;
    /// PSTATE.PAN.
    pub const PAN: u64 = 1 << 22;
    /// PSTATE.UAO, PSTATE.SS, PSTATE.IL, PSTATE.BTYPE: cleared on entry.
    pub const CLEARED_ON_ENTRY: u64 = 1 << 23 | 1 << 21 | 1 << 20 | 0b11 << 10;
    /// PSTATE.SSBS.
    pub const SSBS: u64 = 1 << 12;
}

/// SCTLR_ELx bits consulted on exception entry.
pub mod sctlr {
    /// SPAN: 0 means PSTATE.PAN is set on taking an exception to EL1.
    pub const SPAN: u64 = 1 << 23;
    /// DSSBS: PSTATE.SSBS's value on taking an exception.
    pub const DSSBS: u64 = 1 << 44;
}

/// Where and how the undefined-instruction exception is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undefined {
    /// The exception level it is taken to (1 or 2): the one the access was
    /// made at, as the architecture takes an UNDEFINED instruction.
    pub el: u8,
    /// Offset of its vector from VBAR_ELx.
    pub vector_offset: u64,
    /// PSTATE the handler starts with (what SPSR_EL3 must hold for ERET).
    pub spsr: u64,
}

/// Why no exception can be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectError {
    /// The access was made from AArch32 or at EL0 or EL3, which cannot
    /// trap this way to EL3 with Tandem's settings.
    NotFromEl1OrEl2,
}

/// The exception for an access trapped from the normal world with
/// `spsr_el3` (the trapped PSTATE), given SCTLR_ELx of the level it is
/// taken to. Its ESR is [`ESR_UNDEFINED`], its ELR the access's address,
/// its SPSR `spsr_el3`: the firmware writes those.
pub fn undefined(spsr_el3: u64, sctlr: u64) -> Result<Undefined, InjectError> {
    let el = (spsr_el3 >> 2 & 0b11) as u8;
    if spsr_el3 & spsr::AARCH32 != 0 || !(1..=2).contains(&el) {
        return Err(InjectError::NotFromEl1OrEl2);
    }
    // Taken to the same level: "current EL with SPx" if it ran on its own
    // stack, "current EL with SP0" if on SP_EL0.
    let vector_offset = if spsr_el3 & spsr::SP_ELX != 0 {
        0x200
    } else {
        0x000
    };
    let mut spsr = spsr_el3 & !(0b1111 | spsr::CLEARED_ON_ENTRY | spsr::SSBS);
    spsr |= u64::from(el) << 2 | spsr::SP_ELX | spsr::DAIF;
    if el == 1 && sctlr & sctlr::SPAN == 0 {
        spsr |= spsr::PAN;
    }
    if sctlr & sctlr::DSSBS != 0 {
        spsr |= spsr::SSBS;
    }
    Ok(Undefined {
        el,
        vector_offset,
        spsr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EL1H: u64 = 0b0101;
    const EL1T: u64 = 0b0100;
    const EL2H: u64 = 0b1001;

    #[test]
    fn an_access_at_el1h_goes_to_el1s_current_el_spx_vector_masked() {
        // Linux in a kernel thread: EL1h, interrupts on, flags set.
        let from = EL1H | 0xF << 28;
        let u = undefined(from, sctlr::SPAN).unwrap();
        assert_eq!((u.el, u.vector_offset), (1, 0x200));
        assert_eq!(u.spsr & 0xF, EL1H);
        assert_eq!(u.spsr & spsr::DAIF, spsr::DAIF, "every exception masked");
        assert_eq!(u.spsr >> 28, 0xF, "NZCV as they were");
        assert_eq!(u.spsr & spsr::PAN, 0, "SPAN set: PAN unchanged");
    }

    #[test]
    fn pan_is_set_unless_span_and_ssbs_follows_dssbs() {
        let u = undefined(EL1H | spsr::SSBS, 0).unwrap();
        assert_ne!(u.spsr & spsr::PAN, 0);
        assert_eq!(u.spsr & spsr::SSBS, 0, "DSSBS 0");
        let u = undefined(EL1H, sctlr::DSSBS | sctlr::SPAN).unwrap();
        assert_ne!(u.spsr & spsr::SSBS, 0);
    }

    #[test]
    fn single_step_il_and_btype_are_cleared() {
        let from = EL1H | spsr::CLEARED_ON_ENTRY;
        let u = undefined(from, sctlr::SPAN).unwrap();
        assert_eq!(u.spsr & spsr::CLEARED_ON_ENTRY, 0);
    }

    #[test]
    fn sp0_el2_and_impossible_sources() {
        assert_eq!(undefined(EL1T, 0).unwrap().vector_offset, 0);
        let u = undefined(EL2H, 0).unwrap();
        assert_eq!((u.el, u.vector_offset, u.spsr & 0xF), (2, 0x200, EL2H));
        assert_eq!(u.spsr & spsr::PAN, 0, "PAN is EL1's (no VHE)");
        for from in [0b0000, 0b1101, spsr::AARCH32 | 0b0011, spsr::AARCH32] {
            assert_eq!(
                undefined(from, 0),
                Err(InjectError::NotFromEl1OrEl2),
                "{from:#x}"
            );
        }
    }
}
