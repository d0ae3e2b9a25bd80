//! EL1: the RTOS at S-EL1 (EL1&0 regime; the ASID in TTBR0).

use crate::Translation;

/// Turns this core's MMU and caches on at EL1 with `translation`,
/// invalidating EL1's TLB (`tlbi vmalle1`) first.
///
/// # Safety
///
/// The core runs at EL1, and the tables `translation` names are complete
/// and map the running code, its data, its stack and every device it
/// touches next at their own addresses.
pub unsafe fn enable_mmu(translation: &Translation) {
    crate::mmu::enable_at!(translation, "el1", "vmalle1");
}
