//! Exceptions a partition takes to EL2, decoded from ESR_EL2, and the
//! exception the layer hands back to the partition's Linux when an access
//! reaches nothing of its own.
//!
//! The traps: a data abort at stage 2 (the distributor, the emulated
//! redistributor frame, or an address outside the partition), an SMC
//! (HCR_EL2.TSC), an HVC, and the GIC's common system registers
//! (ICH_HCR_EL2.TC: SGIs, priority mask, control). Anything else cannot
//! happen with the layer's settings and becomes an undefined instruction.

/// Exception classes (ESR_ELx.EC) the layer handles.
pub mod ec {
    /// Unknown reason (an undefined instruction).
    pub const UNKNOWN: u64 = 0x00;
    /// HVC from AArch64.
    pub const HVC64: u64 = 0x16;
    /// SMC from AArch64 (trapped by HCR_EL2.TSC).
    pub const SMC64: u64 = 0x17;
    /// MSR, MRS or system instruction from AArch64.
    pub const SYSREG: u64 = 0x18;
    /// Instruction abort from a lower exception level.
    pub const IABT_LOWER: u64 = 0x20;
    /// Instruction abort at the same exception level.
    pub const IABT_SAME: u64 = 0x21;
    /// Data abort from a lower exception level.
    pub const DABT_LOWER: u64 = 0x24;
    /// Data abort at the same exception level.
    pub const DABT_SAME: u64 = 0x25;
}

/// ESR_ELx.IL: a 32-bit instruction.
const IL: u64 = 1 << 25;

/// The exception class of a syndrome.
pub const fn class(esr: u64) -> u64 {
    esr >> 26 & 0x3F
}

/// A data access the hardware described fully (ISV set): which register,
/// how wide, which way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataAccess {
    /// Bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// The general register (31: the zero register).
    pub register: u8,
    /// A write.
    pub write: bool,
    /// A load that sign-extends (SSE).
    pub sign_extend: bool,
    /// The register is 64 bits wide (SF).
    pub wide: bool,
}

/// The access a stage-2 data abort's syndrome describes, if the layer can
/// emulate it: a plain load or store of one register (no pair, no
/// writeback, no exclusive, no cache maintenance), which is what Linux's
/// MMIO accessors compile to.
pub fn data_access(esr: u64) -> Option<DataAccess> {
    const ISV: u64 = 1 << 24;
    const CM: u64 = 1 << 8;
    const S1PTW: u64 = 1 << 7;
    const WNR: u64 = 1 << 6;
    if class(esr) != ec::DABT_LOWER || esr & ISV == 0 || esr & (CM | S1PTW) != 0 {
        return None;
    }
    Some(DataAccess {
        size: 1 << (esr >> 22 & 3),
        register: (esr >> 16 & 0x1F) as u8,
        write: esr & WNR != 0,
        sign_extend: esr >> 21 & 1 != 0,
        wide: esr >> 15 & 1 != 0,
    })
}

impl DataAccess {
    /// The value a load puts in its register, from the `size` bytes read.
    pub const fn loaded(&self, raw: u64) -> u64 {
        let bits = self.size as u32 * 8;
        let value = if bits == 64 {
            raw
        } else {
            raw & ((1 << bits) - 1)
        };
        let value = if self.sign_extend && bits < 64 {
            let shift = 64 - bits;
            ((value << shift) as i64 >> shift) as u64
        } else {
            value
        };
        if self.wide {
            value
        } else {
            value & 0xFFFF_FFFF
        }
    }

    /// The bytes a store writes, from its register's value.
    pub const fn stored(&self, register: u64) -> u64 {
        if self.size == 8 {
            register
        } else {
            register & ((1 << (self.size as u32 * 8)) - 1)
        }
    }
}

/// Whether a data or instruction abort's syndrome says permission fault
/// (DFSC / IFSC 0b0011xx): a mapping that does not allow the access (a
/// write to a read-only page), not a missing one.
pub const fn permission_fault(esr: u64) -> bool {
    esr & 0x3C == 0x0C
}

/// The faulting intermediate physical address of a stage-2 abort:
/// HPFAR_EL2 gives the page, FAR_EL2 the offset in it.
pub const fn fault_ipa(hpfar: u64, far: u64) -> u64 {
    (hpfar >> 4 & 0xFF_FFFF_FFFF) << 12 | far & 0xFFF
}

/// The GIC system registers ICH_HCR_EL2.TC traps, as encoded in an
/// EC 0x18 syndrome (Op0, Op1, CRn, CRm, Op2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IccRegister {
    /// ICC_SGI1R_EL1: a Group 1 SGI.
    Sgi1r,
    /// ICC_ASGI1R_EL1: an SGI for the other Group 1.
    Asgi1r,
    /// ICC_SGI0R_EL1: a Group 0 SGI.
    Sgi0r,
    /// ICC_PMR_EL1.
    Pmr,
    /// ICC_CTLR_EL1.
    Ctlr,
    /// ICC_DIR_EL1.
    Dir,
    /// ICC_RPR_EL1.
    Rpr,
}

/// A trapped system register access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysregAccess {
    /// Which register, if it is one the layer handles.
    pub register: Option<IccRegister>,
    /// The general register (31: the zero register).
    pub rt: u8,
    /// A read (MRS).
    pub read: bool,
}

/// Decodes an EC 0x18 syndrome.
pub fn sysreg_access(esr: u64) -> SysregAccess {
    let op0 = esr >> 20 & 3;
    let op2 = esr >> 17 & 7;
    let op1 = esr >> 14 & 7;
    let crn = esr >> 10 & 0xF;
    let crm = esr >> 1 & 0xF;
    let register = match (op0, op1, crn, crm, op2) {
        (3, 0, 12, 11, 5) => Some(IccRegister::Sgi1r),
        (3, 0, 12, 11, 6) => Some(IccRegister::Asgi1r),
        (3, 0, 12, 11, 7) => Some(IccRegister::Sgi0r),
        (3, 0, 4, 6, 0) => Some(IccRegister::Pmr),
        (3, 0, 12, 12, 4) => Some(IccRegister::Ctlr),
        (3, 0, 12, 11, 1) => Some(IccRegister::Dir),
        (3, 0, 12, 11, 3) => Some(IccRegister::Rpr),
        _ => None,
    };
    SysregAccess {
        register,
        rt: (esr >> 5 & 0x1F) as u8,
        read: esr & 1 != 0,
    }
}

/// An exception the layer makes Linux take at EL1, as the hardware would
/// have had the access reached nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Injection {
    /// ESR_EL1.
    pub esr: u64,
    /// Where Linux resumes: its vector.
    pub elr: u64,
    /// PSTATE at its vector: EL1h, every exception masked.
    pub spsr: u64,
}

/// SPSR.M values (AArch64; M[4] set means the guest was in AArch32, which
/// with HCR_EL2.RW = 1 can only be its user space).
const M_EL0T: u64 = 0b0000;
const M_EL1T: u64 = 0b0100;
const M_AARCH32: u64 = 0b1_0000;
/// EL1h with D, A, I and F masked: how an exception enters EL1.
pub const SPSR_EL1H_MASKED: u64 = 0x3C5;

/// What the layer hands back for a trap from a guest in PSTATE `spsr`
/// (SPSR_EL2) whose vectors are at `vbar` (VBAR_EL1), with syndrome `esr`
/// (ESR_EL2): an abort stays an abort (a synchronous external abort, DFSC
/// / IFSC 0x10, write-not-read kept), from EL0 or EL1 as it came; anything
/// else becomes an undefined instruction. An AArch32 user task's exception
/// goes to the lower-EL AArch32 vector, as the hardware would take it
/// (its syndrome's classes are the same: EC 0x24 / 0x20 / 0, IL set).
/// ELR_EL1, SPSR_EL1 and FAR_EL1 take the guest's ELR_EL2, SPSR_EL2 and
/// FAR_EL2.
pub fn inject(spsr: u64, vbar: u64, esr: u64) -> Injection {
    const EXTERNAL_ABORT: u64 = 0x10;
    const WNR: u64 = 1 << 6;
    let aarch32 = spsr & M_AARCH32 != 0;
    let from_el0 = aarch32 || spsr & 0xF == M_EL0T;
    let class_now = class(esr);
    let (class, iss) = match class_now {
        ec::DABT_LOWER => (
            if from_el0 {
                ec::DABT_LOWER
            } else {
                ec::DABT_SAME
            },
            EXTERNAL_ABORT | (esr & WNR),
        ),
        ec::IABT_LOWER => (
            if from_el0 {
                ec::IABT_LOWER
            } else {
                ec::IABT_SAME
            },
            EXTERNAL_ABORT,
        ),
        _ => (ec::UNKNOWN, 0),
    };
    // Vector offsets: current EL with SP_EL0 0x000, with SP_ELx 0x200,
    // lower EL using AArch64 0x400, lower EL using AArch32 0x600;
    // synchronous exceptions at +0.
    let offset = match spsr & 0x1F {
        _ if aarch32 => 0x600,
        M_EL0T => 0x400,
        M_EL1T => 0x000,
        _ => 0x200,
    };
    Injection {
        esr: class << 26 | IL | iss,
        elr: vbar + offset,
        spsr: SPSR_EL1H_MASKED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linuxs_mmio_accessors_decode() {
        // str w1, [x0] (writel): ISV, SAS = 2, SRT = 1, WnR, EC 0x24.
        let esr = ec::DABT_LOWER << 26 | IL | 1 << 24 | 2 << 22 | 1 << 16 | 1 << 6 | 0x07;
        assert_eq!(
            data_access(esr),
            Some(DataAccess {
                size: 4,
                register: 1,
                write: true,
                sign_extend: false,
                wide: false
            })
        );
        // ldr x2, [x0] (readq): SAS = 3, SF.
        let esr = ec::DABT_LOWER << 26 | IL | 1 << 24 | 3 << 22 | 2 << 16 | 1 << 15;
        let a = data_access(esr).unwrap();
        assert_eq!((a.size, a.register, a.write, a.wide), (8, 2, false, true));
        // ldp (no ISV), a cache maintenance operation, an abort at EL2.
        assert_eq!(data_access(ec::DABT_LOWER << 26 | IL), None);
        assert_eq!(
            data_access(ec::DABT_LOWER << 26 | 1 << 24 | 1 << 8 | 1 << 6),
            None
        );
        assert_eq!(data_access(ec::DABT_SAME << 26 | 1 << 24), None);
    }

    #[test]
    fn loads_extend_as_the_instruction_says() {
        let byte = |sse, wide| DataAccess {
            size: 1,
            register: 0,
            write: false,
            sign_extend: sse,
            wide,
        };
        assert_eq!(byte(false, false).loaded(0x1FF), 0xFF);
        assert_eq!(byte(true, true).loaded(0x80), 0xFFFF_FFFF_FFFF_FF80);
        assert_eq!(byte(true, false).loaded(0x80), 0xFFFF_FF80);
        assert_eq!(byte(false, false).stored(0x1234), 0x34);
        let dword = DataAccess {
            size: 8,
            ..byte(false, true)
        };
        assert_eq!(dword.loaded(u64::MAX), u64::MAX);
        assert_eq!(dword.stored(u64::MAX), u64::MAX);
    }

    #[test]
    fn permission_faults_are_told_from_translation_faults() {
        // DFSC 0b001111: permission fault, level 3; 0b000111: translation.
        assert!(permission_fault(ec::DABT_LOWER << 26 | IL | 1 << 6 | 0x0F));
        assert!(!permission_fault(ec::DABT_LOWER << 26 | IL | 1 << 6 | 0x07));
        assert!(!permission_fault(ec::DABT_LOWER << 26 | IL | 0x10));
    }

    #[test]
    fn the_faulting_address_is_page_and_offset() {
        assert_eq!(fault_ipa(0x60000 << 4, 0xFFFF_8000_1234_5678), 0x6000_0678);
    }

    #[test]
    fn gic_registers_by_encoding() {
        // msr icc_sgi1r_el1, x3: Op0 3, Op2 5, Op1 0, CRn 12, Rt 3, CRm 11, write.
        let esr = ec::SYSREG << 26 | 3 << 20 | 5 << 17 | 12 << 10 | 3 << 5 | 11 << 1;
        assert_eq!(
            sysreg_access(esr),
            SysregAccess {
                register: Some(IccRegister::Sgi1r),
                rt: 3,
                read: false
            }
        );
        // mrs x0, icc_pmr_el1.
        let esr = ec::SYSREG << 26 | 3 << 20 | 4 << 10 | 6 << 1 | 1;
        assert_eq!(sysreg_access(esr).register, Some(IccRegister::Pmr));
        assert!(sysreg_access(esr).read);
        // msr icc_ctlr_el1 / mrs icc_rpr_el1 / msr icc_dir_el1.
        assert_eq!(
            sysreg_access(3 << 20 | 4 << 17 | 12 << 10 | 12 << 1).register,
            Some(IccRegister::Ctlr)
        );
        assert_eq!(
            sysreg_access(3 << 20 | 3 << 17 | 12 << 10 | 11 << 1).register,
            Some(IccRegister::Rpr)
        );
        assert_eq!(
            sysreg_access(3 << 20 | 1 << 17 | 12 << 10 | 11 << 1).register,
            Some(IccRegister::Dir)
        );
        assert_eq!(sysreg_access(3 << 20 | 1 << 10).register, None);
    }

    #[test]
    fn aborts_reach_linux_as_external_aborts_at_the_right_vector() {
        let vbar = 0xFFFF_8000_1001_0000;
        let dabt_write = ec::DABT_LOWER << 26 | IL | 1 << 24 | 1 << 6 | 0x07;
        // From user space (EL0t): lower-EL vector, EC 0x24.
        let i = inject(0, vbar, dabt_write);
        assert_eq!(i.elr, vbar + 0x400);
        assert_eq!(i.esr, ec::DABT_LOWER << 26 | IL | 0x10 | 1 << 6);
        assert_eq!(i.spsr, 0x3C5);
        // From the kernel (EL1h): current-EL SP_ELx vector, EC 0x25.
        let i = inject(0x3C5, vbar, dabt_write);
        assert_eq!(i.elr, vbar + 0x200);
        assert_eq!(i.esr >> 26, ec::DABT_SAME);
        // An instruction abort from EL1t; anything else: undefined.
        let i = inject(0x4, vbar, ec::IABT_LOWER << 26 | IL);
        assert_eq!((i.elr, i.esr), (vbar, ec::IABT_SAME << 26 | IL | 0x10));
        let i = inject(0x3C5, vbar, 0x3F << 26 | IL);
        assert_eq!(i.esr, IL, "EC 0: undefined");
    }

    #[test]
    fn an_abort_from_aarch32_user_space_goes_to_the_aarch32_lower_el_vector() {
        let vbar = 0xFFFF_8000_1001_0000;
        // SPSR_EL2.M = 0b10000: AArch32 User mode (M[4] says AArch32).
        let usr32 = 0b1_0000;
        let dabt_read = ec::DABT_LOWER << 26 | IL | 0x07;
        let i = inject(usr32, vbar, dabt_read);
        assert_eq!(i.elr, vbar + 0x600, "lower EL using AArch32");
        assert_eq!(i.esr, ec::DABT_LOWER << 26 | IL | 0x10);
        assert_eq!(i.spsr, SPSR_EL1H_MASKED);
        // With the T bit (Thumb) and flags set: still user space.
        let i = inject(usr32 | 1 << 5 | 0xF << 28, vbar, ec::IABT_LOWER << 26 | IL);
        assert_eq!(
            (i.elr, i.esr),
            (vbar + 0x600, ec::IABT_LOWER << 26 | IL | 0x10)
        );
        let i = inject(usr32, vbar, 0x3F << 26 | IL);
        assert_eq!((i.elr, i.esr), (vbar + 0x600, IL), "undefined");
    }
}
