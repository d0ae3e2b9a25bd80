//! EL2: the EL2 layer (its own stage 1, no VHE).

use crate::Translation;

/// Turns this core's MMU and caches on at EL2 with `translation`,
/// invalidating EL2's TLB (`tlbi alle2`) first.
///
/// # Safety
///
/// The core runs at EL2, and the tables `translation` names are complete
/// and map the running code, its data, its stack and every device it
/// touches next at their own addresses.
pub unsafe fn enable_mmu(translation: &Translation) {
    crate::mmu::enable_at!(translation, "el2", "alle2");
}
