//! EL3: the monitor at EL3.

use crate::Translation;

/// Turns this core's MMU and caches on at EL3 with `translation`,
/// invalidating EL3's TLB (`tlbi alle3`) first.
///
/// # Safety
///
/// The core runs at EL3, and the tables `translation` names are complete
/// and map the running code, its data, its stack and every device it
/// touches next at their own addresses.
pub unsafe fn enable_mmu(translation: &Translation) {
    crate::mmu::enable_at!(translation, "el3", "alle3");
}
