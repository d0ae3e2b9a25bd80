//! The EL2 and EL1 system registers the layer reads and writes, and the GIC
//! CPU interface registers it accesses on a partition's behalf, as small
//! functions over `mrs` / `msr` (the `arm-sysregs` crate lacks some of
//! them, e.g. VTTBR_EL2 and VBAR_EL2; one way for all keeps it plain).

/// Declares `read_NAME()` and `unsafe fn write_NAME(v)` for system registers.
macro_rules! sysregs {
    ($($name:ident: $register:literal,)*) => {
        $(
            pub mod $name {
                //! One system register.

                /// Reads it.
                #[inline(always)]
                #[allow(dead_code, reason = "not every register is read")]
                pub fn read() -> u64 {
                    let v: u64;
                    // SAFETY: reading a system register at EL2 has no side
                    // effects the layer relies on not happening.
                    unsafe {
                        core::arch::asm!(concat!("mrs {}, ", $register), out(reg) v,
                            options(nomem, nostack, preserves_flags))
                    };
                    v
                }

                /// Writes it.
                ///
                /// # Safety
                ///
                /// The value must suit what runs next on this core (the
                /// layer at EL2, or the partition at EL1).
                #[inline(always)]
                #[allow(dead_code, reason = "not every register is written")]
                pub unsafe fn write(v: u64) {
                    // SAFETY: the caller's promise.
                    unsafe {
                        core::arch::asm!(concat!("msr ", $register, ", {}"), in(reg) v,
                            options(nostack, preserves_flags))
                    };
                }
            }
        )*
    };
}

sysregs! {
    hcr_el2: "hcr_el2",
    vtcr_el2: "vtcr_el2",
    vttbr_el2: "vttbr_el2",
    mair_el2: "mair_el2",
    tcr_el2: "tcr_el2",
    ttbr0_el2: "ttbr0_el2",
    sctlr_el2: "sctlr_el2",
    cnthctl_el2: "cnthctl_el2",
    cntvoff_el2: "cntvoff_el2",
    vpidr_el2: "vpidr_el2",
    vmpidr_el2: "vmpidr_el2",
    cptr_el2: "cptr_el2",
    hstr_el2: "hstr_el2",
    mdcr_el2: "mdcr_el2",
    ich_hcr_el2: "S3_4_C12_C11_0",
    icc_sre_el2: "S3_4_C12_C9_5",
    esr_el2: "esr_el2",
    elr_el2: "elr_el2",
    spsr_el2: "spsr_el2",
    far_el2: "far_el2",
    hpfar_el2: "hpfar_el2",
    midr_el1: "midr_el1",
    mpidr_el1: "mpidr_el1",
    pmcr_el0: "pmcr_el0",
    vbar_el1: "vbar_el1",
    esr_el1: "esr_el1",
    elr_el1: "elr_el1",
    spsr_el1: "spsr_el1",
    far_el1: "far_el1",
    icc_sgi1r_el1: "S3_0_C12_C11_5",
    icc_asgi1r_el1: "S3_0_C12_C11_6",
    icc_sgi0r_el1: "S3_0_C12_C11_7",
    icc_pmr_el1: "S3_0_C4_C6_0",
    icc_ctlr_el1: "S3_0_C12_C12_4",
    icc_dir_el1: "S3_0_C12_C11_1",
    icc_rpr_el1: "S3_0_C12_C11_3",
    icc_ap1r0_el1: "S3_0_C12_C9_0",
    icc_eoir1_el1: "S3_0_C12_C12_1",
}

/// HCR_EL2 for a partition: VM (stage 2 on), TSC (its SMCs trap here, so
/// PSCI is filtered), RW (EL1 is AArch64). IMO, FMO and AMO stay 0: the
/// partition takes its interrupts itself, on the physical CPU interface,
/// and the secure world's FIQs keep going to EL3 (SCR_EL3.FIQ).
pub const HCR_PARTITION: u64 = 1 | 1 << 19 | 1 << 31;
/// ICH_HCR_EL2.TC: EL1's accesses to the GIC's common registers (SGIs,
/// priority mask, control, deactivation, running priority) trap here,
/// with or without IMO/FMO (QEMU: `gicv3_irqfiq_access`); En stays 0, no
/// virtual interface.
pub const ICH_HCR_TC: u64 = 1 << 10;
/// ICC_SRE_EL2: system registers at EL2 (SRE), FIQ and IRQ bypass off
/// (DFB, DIB), EL1 may use its own (Enable).
pub const ICC_SRE_EL2_ON: u64 = 0xF;
/// CNTHCTL_EL2 (no VHE): EL1PCTEN and EL1PCEN, EL1 reads the physical
/// counter and uses the physical timer, as without EL2.
pub const CNTHCTL_EL1_PHYSICAL: u64 = 0b11;
/// CPTR_EL2 (no VHE): its RES1 bits only; FP/SIMD not trapped.
pub const CPTR_NOTHING_TRAPPED: u64 = 0x33FF;
