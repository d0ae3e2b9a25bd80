//! Each core's page cache: the physical page the shell resolved for a virtual page (per translation context and direction), kept until a change of translation may make it wrong.
//!
//! The caches and devices are physically addressed, the shell sees virtual
//! addresses, and asking the emulator for a physical address costs a call
//! out of the model per access. A core's answers for a page change only
//! when the guest's translation changes, which the architecture lets a
//! guest rely on only after a TLB invalidation or a write of a translation
//! register (or a change of world, an SCR_EL3 write). The model hears of
//! each of those ([`crate::MemoryModel::system_event`]) and the page cache
//! forgets what it may change:
//!
//! - a TLBI, on any core and of any kind: every core's entries;
//! - a TTBR0_EL1 write: its core's lower half of the EL1&0 regime; a
//!   CONTEXTIDR_EL1 write the same (it translates nothing, but costs
//!   little);
//! - a TTBR1_EL1 write: its core's upper half, if the table's address
//!   changed (not for a new ASID alone: the same tables give the same
//!   answers);
//! - any other register (SCTLR, TCR, HCR, VTTBR, SCR and the EL2 and EL3
//!   registers), or a world switch: all its core's entries;
//! - a core entering or leaving EL3 (the monitor: power states, world
//!   switches), as its blocks' exception level says: all its core's
//!   entries.
//!
//! Loads and stores have their own entries (a ROM device's page is RAM to
//! one, I/O to the other), and an I/O page, or an address the shell could
//! not resolve, is never kept. The `verify` option of the model
//! ([`crate::ModelOptions::verify_translations`]) resolves every access and
//! checks the cache against the answer (a boot + hackbench ran through it
//! without a difference).

use crate::translation::{ExceptionLevel, TranslationRegister};

/// Bits of the page the cache keeps (`TARGET_PAGE_BITS` in QEMU: 12 for
/// every Armv7-A or later core; translations map 4 KiB or more).
pub const PAGE_SHIFT: u32 = 12;
/// Entries of each core's page cache (direct mapped by virtual page).
pub const PAGE_SLOTS: usize = 256;

/// Which translation of a virtual address an access goes through, as far
/// as the page cache needs to tell them apart: answers are kept per
/// context, and the EL1&0 regime's two halves are forgotten apart from
/// each other and from the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranslationContext {
    /// The shell's name for the context, below [`TranslationContext::IDS`]
    /// (the plugin gives QEMU's MMU index): accesses of different contexts
    /// never share an entry.
    pub id: u8,
    /// The context translates through the EL1&0 regime (TTBR0_EL1 and
    /// TTBR1_EL1); any other is forgotten only with everything.
    pub el10: bool,
}

impl TranslationContext {
    /// Contexts the page cache tells apart (ids 0 to 15).
    pub const IDS: u8 = 16;
}

/// A physical address the shell resolved for a virtual one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolution {
    /// The physical address (of the byte, not the page).
    pub physical_address: u64,
    /// The address is I/O, not RAM (never kept).
    pub io: bool,
}

/// Which translations a page's entry depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageClass {
    /// EL1&0's lower half (TTBR0_EL1: a process's).
    Lower = 0,
    /// EL1&0's upper half (TTBR1_EL1: the kernel's).
    Upper = 1,
    /// Every other regime (EL2, EL3, and EL2&0, EL3&0 if used).
    Other = 2,
}

impl PageClass {
    #[inline]
    fn of(virtual_address: u64, context: TranslationContext) -> Self {
        match context.el10 {
            true if virtual_address >> 55 & 1 == 0 => Self::Lower,
            true => Self::Upper,
            false => Self::Other,
        }
    }
}

/// One remembered answer: the physical page of a virtual page for one
/// context and direction, RAM only.
#[derive(Debug, Clone, Copy)]
struct PageEntry {
    /// `virtual page << 5 | context << 1 | store`.
    tag: u64,
    /// Its class's generation when it was kept (older: forgotten).
    generation: u64,
    /// The physical page's address.
    physical: u64,
}

/// One core's page cache (see the module's documentation).
#[derive(Debug, Clone)]
pub struct PageCache {
    entries: Box<[PageEntry]>,
    /// Per [`PageClass`]: entries of an older generation are forgotten.
    generations: [u64; 3],
    /// The core's last block ran at EL3.
    at_el3: bool,
    /// TTBR1_EL1's table address as last written (`None`: not yet).
    ttbr1_table: Option<u64>,
}

impl Default for PageCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PageCache {
    /// An empty cache, its core not at EL3.
    pub fn new() -> Self {
        Self {
            entries: vec![
                PageEntry {
                    tag: 0,
                    generation: 0,
                    physical: 0,
                };
                PAGE_SLOTS
            ]
            .into_boxed_slice(),
            generations: [1; 3],
            at_el3: false,
            ttbr1_table: None,
        }
    }

    #[inline]
    fn tag(virtual_address: u64, context: TranslationContext, store: bool) -> u64 {
        debug_assert!(context.id < TranslationContext::IDS);
        (virtual_address >> PAGE_SHIFT) << 5 | u64::from(context.id) << 1 | u64::from(store)
    }

    #[inline]
    fn slot(virtual_address: u64) -> usize {
        (virtual_address >> PAGE_SHIFT) as usize % PAGE_SLOTS
    }

    #[inline]
    fn generation(&self, virtual_address: u64, context: TranslationContext) -> u64 {
        self.generations[PageClass::of(virtual_address, context) as usize]
    }

    /// The physical address of `virtual_address` for a load or a store in
    /// `context`, if its page is remembered.
    #[inline]
    pub fn get(
        &self,
        virtual_address: u64,
        context: TranslationContext,
        store: bool,
    ) -> Option<u64> {
        let entry = &self.entries[Self::slot(virtual_address)];
        (entry.tag == Self::tag(virtual_address, context, store)
            && entry.generation == self.generation(virtual_address, context))
        .then_some(entry.physical | (virtual_address & ((1 << PAGE_SHIFT) - 1)))
    }

    /// Remembers that `virtual_address`, loaded or stored in `context`, is
    /// RAM at `physical_address` (its page replaces the slot's).
    pub fn put(
        &mut self,
        virtual_address: u64,
        context: TranslationContext,
        store: bool,
        physical_address: u64,
    ) {
        self.entries[Self::slot(virtual_address)] = PageEntry {
            tag: Self::tag(virtual_address, context, store),
            generation: self.generation(virtual_address, context),
            physical: physical_address & !((1 << PAGE_SHIFT) - 1),
        };
    }

    fn forget(&mut self, class: PageClass) {
        self.generations[class as usize] += 1;
    }

    /// Forgets every entry (a TLBI on any core, a world switch).
    pub fn forget_all(&mut self) {
        for generation in &mut self.generations {
            *generation += 1;
        }
    }

    /// Forgets what a write of `register` with `value` on this core may
    /// change.
    pub fn register_written(&mut self, register: TranslationRegister, value: u64) {
        match register {
            TranslationRegister::Ttbr0El1 | TranslationRegister::ContextidrEl1 => {
                self.forget(PageClass::Lower);
            }
            TranslationRegister::Ttbr1El1 => {
                // BADDR, bits 47:1 (63:48 are the ASID, 0 CnP).
                let table = value & 0x0000_ffff_ffff_fffe;
                if self.ttbr1_table != Some(table) {
                    self.ttbr1_table = Some(table);
                    self.forget(PageClass::Upper);
                }
            }
            _ => self.forget_all(),
        }
    }

    /// The core runs a block at `el`: entering or leaving EL3 forgets
    /// every entry.
    #[inline]
    pub fn block_at(&mut self, el: ExceptionLevel) {
        let at_el3 = el == ExceptionLevel::El3;
        if self.at_el3 != at_el3 {
            self.at_el3 = at_el3;
            self.forget_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: TranslationContext = TranslationContext { id: 2, el10: true };
    const USER: TranslationContext = TranslationContext { id: 0, el10: true };
    const EL2: TranslationContext = TranslationContext { id: 6, el10: false };
    const LOW: u64 = 0x0000_0000_0040_1234;
    const HIGH: u64 = 0xffff_0000_0080_2234;
    const EL2_VA: u64 = 0x0000_0000_4000_5678;

    /// A cache holding LOW and HIGH for KERNEL and EL2_VA for EL2 (loads).
    fn filled() -> PageCache {
        let mut pages = PageCache::new();
        pages.put(LOW, KERNEL, false, 0x8_0000_0000);
        pages.put(HIGH, KERNEL, false, 0x4_0000_0000);
        pages.put(EL2_VA, EL2, false, 0x4000_5000);
        pages
    }

    fn held(pages: &PageCache) -> [bool; 3] {
        [
            pages.get(LOW, KERNEL, false).is_some(),
            pages.get(HIGH, KERNEL, false).is_some(),
            pages.get(EL2_VA, EL2, false).is_some(),
        ]
    }

    #[test]
    fn answers_a_kept_page_with_the_byte_offset() {
        let pages = filled();
        assert_eq!(pages.get(LOW, KERNEL, false), Some(0x8_0000_0234));
        assert_eq!(pages.get(LOW + 0x10, KERNEL, false), Some(0x8_0000_0244));
        assert_eq!(pages.get(HIGH, KERNEL, false), Some(0x4_0000_0234));
        assert_eq!(pages.get(EL2_VA, EL2, false), Some(0x4000_5678));
        // The next page, another context, the other direction: not kept.
        assert_eq!(pages.get(LOW + 0x1000, KERNEL, false), None);
        assert_eq!(pages.get(LOW, USER, false), None);
        assert_eq!(pages.get(LOW, KERNEL, true), None);
    }

    #[test]
    fn a_page_replaces_the_one_in_its_slot() {
        let mut pages = filled();
        let same_slot = LOW + ((PAGE_SLOTS as u64) << PAGE_SHIFT);
        pages.put(same_slot, KERNEL, false, 0x9_0000_0000);
        assert_eq!(pages.get(same_slot, KERNEL, false), Some(0x9_0000_0234));
        assert_eq!(pages.get(LOW, KERNEL, false), None);
    }

    #[test]
    fn a_ttbr0_or_contextidr_write_forgets_the_lower_half_only() {
        for register in [
            TranslationRegister::Ttbr0El1,
            TranslationRegister::ContextidrEl1,
        ] {
            let mut pages = filled();
            pages.register_written(register, 0x1234_0000);
            assert_eq!(held(&pages), [false, true, true], "{register:?}");
        }
    }

    #[test]
    fn a_ttbr1_write_forgets_the_upper_half_when_its_table_moves() {
        let mut pages = filled();
        // The first write: the table was not known.
        pages.register_written(TranslationRegister::Ttbr1El1, 0x4_0010_0000);
        assert_eq!(held(&pages), [true, false, true]);
        pages.put(HIGH, KERNEL, false, 0x4_0000_0000);
        // A new ASID (63:48) or CnP (bit 0) alone: the same tables.
        pages.register_written(TranslationRegister::Ttbr1El1, 0x0005_0004_0010_0001);
        assert_eq!(held(&pages), [true, true, true]);
        // Another table.
        pages.register_written(TranslationRegister::Ttbr1El1, 0x4_0020_0000);
        assert_eq!(held(&pages), [true, false, true]);
    }

    #[test]
    fn any_other_register_forgets_everything() {
        for register in [
            TranslationRegister::SctlrEl1,
            TranslationRegister::TcrEl1,
            TranslationRegister::SctlrEl2,
            TranslationRegister::Ttbr0El2,
            TranslationRegister::TcrEl2,
            TranslationRegister::HcrEl2,
            TranslationRegister::VttbrEl2,
            TranslationRegister::SctlrEl3,
            TranslationRegister::Ttbr0El3,
            TranslationRegister::TcrEl3,
            TranslationRegister::ScrEl3,
        ] {
            let mut pages = filled();
            pages.register_written(register, 0);
            assert_eq!(held(&pages), [false, false, false], "{register:?}");
        }
    }

    #[test]
    fn entering_and_leaving_el3_forget_everything_other_levels_nothing() {
        let mut pages = filled();
        pages.block_at(ExceptionLevel::El1);
        pages.block_at(ExceptionLevel::El0);
        pages.block_at(ExceptionLevel::El2);
        assert_eq!(held(&pages), [true, true, true]);
        pages.block_at(ExceptionLevel::El3);
        assert_eq!(held(&pages), [false, false, false]);
        pages = PageCache {
            at_el3: true,
            ..filled()
        };
        pages.block_at(ExceptionLevel::El3);
        assert_eq!(held(&pages), [true, true, true]);
        pages.block_at(ExceptionLevel::El1);
        assert_eq!(held(&pages), [false, false, false]);
    }

    #[test]
    fn a_page_kept_after_forgetting_is_answered() {
        let mut pages = filled();
        pages.forget_all();
        assert_eq!(held(&pages), [false, false, false]);
        pages.put(LOW, KERNEL, false, 0x8_0000_0000);
        assert_eq!(pages.get(LOW, KERNEL, false), Some(0x8_0000_0234));
    }
}
