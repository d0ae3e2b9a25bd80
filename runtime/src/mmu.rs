//! Turning the MMU on: one sequence for the three exception levels, each
//! level's registers named by the `elN` module that uses it.

/// A translation regime's settings, from the image's page-table crate.
#[derive(Clone, Copy, Debug)]
pub struct Translation {
    /// MAIR_ELx: the memory attributes the descriptors index.
    pub mair: u64,
    /// TCR_ELx: sizes, granule, walk cacheability.
    pub tcr: u64,
    /// TTBR0_ELx: the root table (and ASID, at EL1).
    pub ttbr0: u64,
    /// SCTLR_ELx bits cleared before `sctlr_set` is applied: 0 keeps the
    /// reset value's other bits, `!0` writes `sctlr_set` whole.
    pub sctlr_clear: u64,
    /// SCTLR_ELx bits set: at least M (the MMU), usually C and I.
    pub sctlr_set: u64,
}

impl Translation {
    /// SCTLR_ELx once translation is on, from its value before.
    pub const fn sctlr(&self, before: u64) -> u64 {
        before & !self.sctlr_clear | self.sctlr_set
    }
}

/// Writes one level's MAIR, TCR and TTBR0, invalidates its TLB and sets
/// SCTLR: `$el` names the registers, `$tlbi` the invalidation.
#[cfg(all(
    any(feature = "el1", feature = "el2", feature = "el3"),
    target_arch = "aarch64"
))]
macro_rules! enable_at {
    ($translation:expr, $el:literal, $tlbi:literal) => {{
        let t: &$crate::Translation = $translation;
        let before: u64;
        // SAFETY: the caller's promise (`enable_mmu`'s `# Safety`): the
        // tables map the running code, its data and stack at their own
        // addresses, so execution goes on unchanged when translation
        // starts; the TLB is invalidated after the registers are written
        // and before SCTLR turns translation on.
        unsafe {
            core::arch::asm!(
                "dsb sy",
                concat!("msr mair_", $el, ", {mair}"),
                concat!("msr tcr_", $el, ", {tcr}"),
                concat!("msr ttbr0_", $el, ", {ttbr0}"),
                "isb",
                concat!("tlbi ", $tlbi),
                "dsb sy",
                "isb",
                concat!("mrs {before}, sctlr_", $el),
                mair = in(reg) t.mair,
                tcr = in(reg) t.tcr,
                ttbr0 = in(reg) t.ttbr0,
                before = out(reg) before,
                options(nostack),
            );
            core::arch::asm!(
                concat!("msr sctlr_", $el, ", {}"),
                "isb",
                in(reg) t.sctlr(before),
                options(nostack),
            );
        }
    }};
}
#[cfg(all(
    any(feature = "el1", feature = "el2", feature = "el3"),
    target_arch = "aarch64"
))]
pub(crate) use enable_at;

#[cfg(test)]
mod tests {
    use super::Translation;

    #[test]
    fn sctlr_keeps_or_replaces_the_bits_before() {
        let on = 1 | 1 << 2 | 1 << 12;
        let keep = Translation {
            mair: 0,
            tcr: 0,
            ttbr0: 0,
            sctlr_clear: 0,
            sctlr_set: on,
        };
        assert_eq!(keep.sctlr(0x30C5_0830), 0x30C5_0830 | on);
        let whole = Translation {
            sctlr_clear: !0,
            ..keep
        };
        assert_eq!(whole.sctlr(0xFFFF), on);
    }
}
