//! Each core's translation state, followed from the system-register writes the model observes, and the geometry of a stage 1 page walk.
//!
//! The model sees no register file: it learns a core's translation regime
//! from the writes a plugin decodes (TTBR0/1, TCR, SCTLR of each EL, SCR_EL3,
//! HCR_EL2, VTTBR_EL2). EL1's registers are not banked between the worlds:
//! the monitor rewrites them on every world switch, and the model sees
//! those writes like any other. From them it derives, per regime, whether
//! the MMU is on, which table base and granule cover a virtual address, the
//! ASID and VMID, and the security state (SCR_EL3.NS) that tags TLB entries.

use crate::tlb::{Space, SpaceId};

/// The exception level an access is made at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExceptionLevel {
    /// EL0 (user): translated in the EL1&0 regime.
    El0,
    /// EL1 (kernel, RTOS): the EL1&0 regime.
    El1,
    /// EL2 (Tandem's partitioning layer).
    El2,
    /// EL3 (the monitor).
    El3,
}

/// A system register whose writes change translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranslationRegister {
    /// SCTLR_EL1 (bit 0: the EL1&0 MMU).
    SctlrEl1,
    /// TTBR0_EL1.
    Ttbr0El1,
    /// TTBR1_EL1.
    Ttbr1El1,
    /// TCR_EL1.
    TcrEl1,
    /// CONTEXTIDR_EL1 (no effect on translation; counted as a context write).
    ContextidrEl1,
    /// SCTLR_EL2.
    SctlrEl2,
    /// TTBR0_EL2.
    Ttbr0El2,
    /// TCR_EL2.
    TcrEl2,
    /// HCR_EL2 (bit 0, VM: stage 2 on, so the VMID tags EL1&0 entries).
    HcrEl2,
    /// VTTBR_EL2 (its VMID).
    VttbrEl2,
    /// SCTLR_EL3.
    SctlrEl3,
    /// TTBR0_EL3.
    Ttbr0El3,
    /// TCR_EL3.
    TcrEl3,
    /// SCR_EL3 (bit 0, NS: the world EL1 and EL0 run in).
    ScrEl3,
}

/// Which regime an access translates in, as an index of [`Registers::regimes`].
fn regime_index(el: ExceptionLevel) -> usize {
    match el {
        ExceptionLevel::El0 | ExceptionLevel::El1 => 0,
        ExceptionLevel::El2 => 1,
        ExceptionLevel::El3 => 2,
    }
}

/// One half of a regime's address space (TTBR0's or TTBR1's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Half {
    /// Walks allowed (TCR.EPDn clear).
    pub enabled: bool,
    /// Physical address of the first-level table.
    pub table_base: u64,
    /// log2 of the granule: 12, 14 or 16.
    pub granule_shift: u8,
    /// Size of the half's address range in bits (64 - TnSZ).
    pub va_bits: u8,
    /// Its entries match every ASID when the walk cannot say (TTBR1's
    /// kernel half, and the EL2 and EL3 regimes, which have no ASIDs).
    pub global_by_default: bool,
}

impl Half {
    /// Bits of VA each table level resolves.
    pub fn bits_per_level(&self) -> u8 {
        self.granule_shift - 3
    }

    /// The first level a walk reads (0..=3).
    pub fn start_level(&self) -> u8 {
        let stride = self.bits_per_level();
        let levels = (self.va_bits - self.granule_shift).div_ceil(stride);
        4 - levels.clamp(1, 4)
    }

    /// log2 of the span one entry of `level` maps.
    pub fn level_shift(&self, level: u8) -> u8 {
        self.granule_shift + (3 - level) * self.bits_per_level()
    }

    /// The index of `va`'s entry in its table of `level`.
    pub fn index(&self, va: u64, level: u8) -> u64 {
        let shift = self.level_shift(level);
        let bits = if level == self.start_level() {
            self.va_bits - shift
        } else {
            self.bits_per_level()
        };
        (va >> shift) & ((1u64 << bits) - 1)
    }
}

/// A regime as the current register values make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regime {
    /// Its address space (regime, security state, VMID, current ASID).
    pub space: Space,
    /// TTBR0's half.
    pub lower: Half,
    /// TTBR1's half (EL1&0 only).
    pub upper: Option<Half>,
}

impl Regime {
    /// The half that translates `va`, or `None` if `va` lies outside both
    /// (the access would fault before reaching memory).
    pub fn half_for(&self, va: u64) -> Option<&Half> {
        let half = match &self.upper {
            Some(upper) if va >> 55 & 1 == 1 => upper,
            _ => &self.lower,
        };
        // Outside the half's range (upper bits not all equal to bit 55)
        // would fault: no translation to cache.
        let upper_bits = if half.va_bits >= 64 {
            0
        } else {
            va >> half.va_bits
        };
        let in_range = if std::ptr::eq(half, &self.lower) {
            upper_bits == 0
        } else {
            upper_bits == (u64::MAX >> half.va_bits)
        };
        (half.enabled && in_range).then_some(half)
    }
}

/// A core's translation registers and what they make of each regime.
#[derive(Debug, Clone)]
pub struct Registers {
    sctlr_el1: u64,
    ttbr0_el1: u64,
    ttbr1_el1: u64,
    tcr_el1: u64,
    sctlr_el2: u64,
    ttbr0_el2: u64,
    tcr_el2: u64,
    hcr_el2: u64,
    vttbr_el2: u64,
    sctlr_el3: u64,
    ttbr0_el3: u64,
    tcr_el3: u64,
    scr_el3: u64,
    /// EL1&0, EL2, EL3: `None` while that regime's MMU is off.
    regimes: [Option<Regime>; 3],
}

impl Default for Registers {
    fn default() -> Self {
        Self::new()
    }
}

/// Physical address bits of a TTBR or table descriptor (47:1; bit 0 is CnP).
const TABLE_ADDRESS_MASK: u64 = 0x0000_ffff_ffff_fffe;

impl Registers {
    /// Every register at its reset value: MMUs off, secure state.
    pub fn new() -> Self {
        Self {
            sctlr_el1: 0,
            ttbr0_el1: 0,
            ttbr1_el1: 0,
            tcr_el1: 0,
            sctlr_el2: 0,
            ttbr0_el2: 0,
            tcr_el2: 0,
            hcr_el2: 0,
            vttbr_el2: 0,
            sctlr_el3: 0,
            ttbr0_el3: 0,
            tcr_el3: 0,
            scr_el3: 0,
            regimes: [None; 3],
        }
    }

    /// Records a write and recomputes the regimes.
    pub fn write(&mut self, register: TranslationRegister, value: u64) {
        use TranslationRegister as R;
        let slot = match register {
            R::SctlrEl1 => &mut self.sctlr_el1,
            R::Ttbr0El1 => &mut self.ttbr0_el1,
            R::Ttbr1El1 => &mut self.ttbr1_el1,
            R::TcrEl1 => &mut self.tcr_el1,
            R::ContextidrEl1 => return,
            R::SctlrEl2 => &mut self.sctlr_el2,
            R::Ttbr0El2 => &mut self.ttbr0_el2,
            R::TcrEl2 => &mut self.tcr_el2,
            R::HcrEl2 => &mut self.hcr_el2,
            R::VttbrEl2 => &mut self.vttbr_el2,
            R::SctlrEl3 => &mut self.sctlr_el3,
            R::Ttbr0El3 => &mut self.ttbr0_el3,
            R::TcrEl3 => &mut self.tcr_el3,
            R::ScrEl3 => &mut self.scr_el3,
        };
        *slot = value;
        self.resolve();
    }

    /// Whether EL1 and EL0 run in the secure world (SCR_EL3.NS clear).
    pub fn el10_secure(&self) -> bool {
        self.scr_el3 & 1 == 0
    }

    /// The regime an access at `el` translates in, `None` if its MMU is off.
    pub fn regime(&self, el: ExceptionLevel) -> Option<&Regime> {
        self.regimes[regime_index(el)].as_ref()
    }

    /// The EL1&0 regime's space whatever its MMU (for TLB maintenance).
    pub fn el10_space(&self) -> Space {
        Space {
            id: SpaceId::compose(SpaceId::EL10, self.el10_secure(), self.current_vmid()),
            asid: self.el10_asid(),
        }
    }

    fn current_vmid(&self) -> u16 {
        // Stage 2 (and so the VMID) applies to the non-secure EL1&0 only.
        if !self.el10_secure() && self.hcr_el2 & 1 == 1 {
            ((self.vttbr_el2 >> 48) & 0xff) as u16
        } else {
            0
        }
    }

    fn el10_asid(&self) -> u16 {
        // TCR_EL1.A1 chooses the TTBR that holds the ASID.
        let ttbr = if self.tcr_el1 >> 22 & 1 == 1 {
            self.ttbr1_el1
        } else {
            self.ttbr0_el1
        };
        self.asid_of(ttbr)
    }

    /// The ASID in bits 63:48 of a TTBR or TLBI operand, cut to 8 bits
    /// unless TCR_EL1.AS selects 16-bit ASIDs.
    pub fn asid_of(&self, value: u64) -> u16 {
        let asid = (value >> 48) as u16;
        if self.tcr_el1 >> 36 & 1 == 1 {
            asid
        } else {
            asid & 0xff
        }
    }

    /// Puts EL1 and EL0 in the given world, as a write of SCR_EL3.NS would.
    pub fn set_world(&mut self, secure: bool) {
        self.scr_el3 = (self.scr_el3 & !1) | u64::from(!secure);
        self.resolve();
    }

    fn resolve(&mut self) {
        let el10 = (self.sctlr_el1 & 1 == 1).then(|| {
            let tcr = self.tcr_el1;
            Regime {
                space: self.el10_space(),
                lower: half(
                    self.ttbr0_el1,
                    tcr & 0x3f,
                    tcr >> 7 & 1 == 0,
                    lower_granule(tcr >> 14 & 0b11),
                    false,
                ),
                upper: Some(half(
                    self.ttbr1_el1,
                    tcr >> 16 & 0x3f,
                    tcr >> 23 & 1 == 0,
                    upper_granule(tcr >> 30 & 0b11),
                    true,
                )),
            }
        });
        let single = |sctlr: u64, ttbr: u64, tcr: u64, regime: u32, secure: bool| {
            (sctlr & 1 == 1).then(|| Regime {
                space: Space {
                    id: SpaceId::compose(regime, secure, 0),
                    asid: 0,
                },
                lower: half(
                    ttbr,
                    tcr & 0x3f,
                    true,
                    lower_granule(tcr >> 14 & 0b11),
                    true,
                ),
                upper: None,
            })
        };
        self.regimes = [
            el10,
            single(
                self.sctlr_el2,
                self.ttbr0_el2,
                self.tcr_el2,
                SpaceId::EL2,
                false,
            ),
            single(
                self.sctlr_el3,
                self.ttbr0_el3,
                self.tcr_el3,
                SpaceId::EL3,
                true,
            ),
        ];
    }
}

/// TCR.TG0's encoding: 0b00 4 KiB, 0b01 64 KiB, 0b10 16 KiB.
fn lower_granule(tg0: u64) -> u8 {
    match tg0 {
        0b01 => 16,
        0b10 => 14,
        _ => 12,
    }
}

/// TCR.TG1's encoding: 0b01 16 KiB, 0b10 4 KiB, 0b11 64 KiB.
fn upper_granule(tg1: u64) -> u8 {
    match tg1 {
        0b01 => 14,
        0b11 => 16,
        _ => 12,
    }
}

fn half(ttbr: u64, txsz: u64, enabled: bool, granule_shift: u8, global_by_default: bool) -> Half {
    // The A53 accepts TxSZ 16..=39 (48- to 25-bit ranges); others are
    // taken as the nearest (QEMU clamps likewise).
    let txsz = txsz.clamp(16, 39) as u8;
    Half {
        enabled,
        table_base: ttbr & TABLE_ADDRESS_MASK,
        granule_shift,
        va_bits: 64 - txsz,
        global_by_default,
    }
}

/// Reads guest memory for the walker: the 8-byte descriptor at a physical
/// address of the secure or the non-secure physical address space, or
/// `None` when it cannot be read (the walker then derives the rest of that
/// walk's addresses itself, see [`synthetic_table`], and counts the walk
/// as unreadable).
///
/// The space is the walk's: secure for the secure EL1&0 regime and EL3,
/// non-secure for the normal world's EL1&0 and EL2, and non-secure below a
/// secure table descriptor with NSTable set (the walker follows that).
pub trait TableReader {
    /// The descriptor at `physical_address`, little-endian, in the secure
    /// space if `secure`.
    fn read_descriptor(&mut self, physical_address: u64, secure: bool) -> Option<u64>;
}

/// A reader that reads nothing: every walk below its first level uses
/// derived table addresses (host tests of what does not depend on the
/// guest's tables; the plugin reads the guest's).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTables;

impl TableReader for NoTables {
    fn read_descriptor(&mut self, _physical_address: u64, _secure: bool) -> Option<u64> {
        None
    }
}

/// Derived table addresses live above any real physical address (the A53
/// has 40 bits), so they never alias guest data in the caches.
pub const SYNTHETIC_TABLE_BASE: u64 = 1 << 62;

/// The address of the table of `level` (1..=3) that the walk of `va` from
/// the root `root` reaches, when a descriptor cannot be read (the fallback:
/// such walks are counted, `CoreStats::walks_unreadable`): a fixed
/// function of the root and of the VA bits that choose that table, so
/// addresses that share a table share it here too, different processes'
/// tables differ, and a rerun gives the same addresses.
pub fn synthetic_table(half: &Half, root: u64, level: u8, va: u64) -> u64 {
    let selector = va >> half.level_shift(level - 1);
    let key = mix(root ^ mix(selector ^ (u64::from(level) << 58)));
    SYNTHETIC_TABLE_BASE | ((key & 0x00ff_ffff_ffff) << half.granule_shift)
}

/// A fixed 64-bit mixing function (the finaliser of the SplitMix64
/// generator): spreads nearby keys over the whole range.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TranslationRegister as R;

    /// TCR_EL1 as Linux sets it for 48-bit VAs and 4 KiB pages: T0SZ =
    /// T1SZ = 16, TG1 = 4 KiB, 16-bit ASIDs in TTBR0.
    const LINUX_TCR: u64 = 16 | (16 << 16) | (0b10 << 30) | (1 << 36);

    #[test]
    fn a_regime_exists_once_its_mmu_is_on() {
        let mut regs = Registers::new();
        regs.write(R::TcrEl1, LINUX_TCR);
        regs.write(R::Ttbr0El1, (5 << 48) | 0x4100_0000);
        assert!(regs.regime(ExceptionLevel::El0).is_none());
        regs.write(R::SctlrEl1, 1);
        let regime = *regs.regime(ExceptionLevel::El1).unwrap();
        assert_eq!(regime.space.asid, 5);
        assert_eq!(regime.lower.table_base, 0x4100_0000);
        assert_eq!(regime.lower.start_level(), 0);
        assert!(regs.regime(ExceptionLevel::El3).is_none());
    }

    #[test]
    fn the_half_follows_bit_55_and_out_of_range_addresses_have_none() {
        let mut regs = Registers::new();
        regs.write(R::TcrEl1, LINUX_TCR);
        regs.write(R::Ttbr1El1, 0x4200_0000);
        regs.write(R::SctlrEl1, 1);
        let regime = *regs.regime(ExceptionLevel::El1).unwrap();
        let upper = regime.half_for(0xffff_8000_0000_1000).unwrap();
        assert_eq!(upper.table_base, 0x4200_0000);
        assert!(upper.global_by_default);
        assert!(!regime.half_for(0x1000).unwrap().global_by_default);
        assert!(regime.half_for(0x0001_0000_0000_0000).is_none());
    }

    #[test]
    fn scr_ns_and_the_vmid_change_the_space() {
        let mut regs = Registers::new();
        let secure = regs.el10_space();
        regs.write(R::ScrEl3, 1);
        let normal = regs.el10_space();
        assert_ne!(secure.id, normal.id);
        regs.write(R::VttbrEl2, 3 << 48);
        assert_eq!(regs.el10_space(), normal, "the VMID needs HCR_EL2.VM");
        regs.write(R::HcrEl2, 1);
        assert_ne!(regs.el10_space(), normal);
    }

    #[test]
    fn walk_geometry_follows_the_granule_and_range() {
        let mut half = half(0, 25, true, 12, false); // 39-bit VA, 4 KiB
        assert_eq!(half.start_level(), 1);
        assert_eq!(half.level_shift(3), 12);
        assert_eq!(half.level_shift(1), 30);
        assert_eq!(half.index(0x40_0000_1000, 1), 0x100);
        assert_eq!(half.index(0x40_0000_1000, 3), 1);
        half.granule_shift = 16; // 64 KiB pages, 42-bit VA
        half.va_bits = 42;
        assert_eq!(half.start_level(), 2);
    }

    #[test]
    fn synthetic_tables_are_shared_by_neighbours_and_apart_from_guest_memory() {
        let half = half(0x4000_0000, 16, true, 12, false);
        let a = synthetic_table(&half, 0x4000_0000, 3, 0x1000);
        let b = synthetic_table(&half, 0x4000_0000, 3, 0x1f_f000);
        let c = synthetic_table(&half, 0x4000_0000, 3, 0x20_0000);
        let other_process = synthetic_table(&half, 0x4800_0000, 3, 0x1000);
        assert_eq!(a, b, "one last-level table maps 2 MiB");
        assert_ne!(a, c);
        assert_ne!(a, other_process);
        assert!(a >= SYNTHETIC_TABLE_BASE && a.is_multiple_of(4096));
    }
}
