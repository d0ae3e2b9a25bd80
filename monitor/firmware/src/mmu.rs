//! The monitor's MMU and caches: the identity map of `memory_map` (built
//! from the board by the boot core, before anything else runs) turned on at
//! EL3 on every core, and the cache maintenance that code and data the
//! monitor writes for observers with their MMU off need.
//!
//! Those observers: Linux's cores enter the stub and the kernel with their
//! MMU off (the arm64 boot protocol asks for the kernel image cleaned to
//! the point of coherency and no stale instruction-cache lines); the RTOS
//! starts from the image the monitor copied, MMU off; the other cores read
//! the boot flag before turning theirs on.

use arm_sysregs::el3::accessors::read_sctlr_el3;
use arm_sysregs::el3::registers::SctlrEl3;
use core::cell::UnsafeCell;
use tandem_board::BOARD;
use tandem_monitor_core::memory_map::{MAIR, MapError, SCTLR_ON, TCR, Tables};
use tandem_runtime::Translation;

/// The tables, in .bss: written once by the boot core with every MMU off,
/// read only by the table walkers afterwards.
struct Shared(UnsafeCell<Tables>);

// SAFETY: written by the boot core alone before any other core runs Rust
// (`build`), never written again.
unsafe impl Sync for Shared {}

static TABLES: Shared = Shared(UnsafeCell::new(Tables::EMPTY));

/// Builds the tables from the board (boot core, first thing, MMU off).
pub fn build() -> Result<(), MapError> {
    let at = TABLES.0.get();
    // SAFETY: the boot core runs alone (the others wait for the boot flag)
    // and no MMU uses the tables yet.
    unsafe { (*at).map_board(&BOARD, at as u64) }
}

/// Turns this core's MMU and caches on with the tables `build` made.
pub fn enable() {
    let translation = Translation {
        mair: MAIR,
        tcr: TCR,
        ttbr0: TABLES.0.get() as u64,
        sctlr_clear: 0,
        sctlr_set: SCTLR_ON,
    };
    // SAFETY: this runs at EL3; the tables are complete (`build` ran on
    // the boot core before this core was let go) and map the monitor's
    // code, data, stacks and devices at their own addresses.
    unsafe { tandem_runtime::el3::enable_mmu(&translation) };
}

/// Whether this core's MMU is on.
pub fn enabled() -> bool {
    read_sctlr_el3().contains(SctlrEl3::M)
}

/// Bytes in the smallest data cache line (CTR_EL0.DminLine).
fn data_line() -> u64 {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effects.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    4 << (ctr >> 16 & 0xF)
}

/// Cleans `[base, base + len)` to the point of coherency, so an observer
/// with its MMU off (uncached) reads what the monitor wrote.
pub fn clean_to_poc(base: u64, len: u64) {
    let line = data_line();
    let mut at = base & !(line - 1);
    while at < base + len {
        // SAFETY: cleaning a line writes back data, it changes no value;
        // the address is mapped (callers pass memory they just wrote).
        unsafe { core::arch::asm!("dc cvac, {}", in(reg) at, options(nostack)) };
        at += line;
    }
    // SAFETY: a barrier only.
    unsafe { core::arch::asm!("dsb sy", options(nostack)) };
}

/// Cleans and invalidates `[base, base + len)` to the point of coherency:
/// dirty lines are written back and every line is dropped, so that what
/// the monitor reads next comes from memory, as an observer with its MMU
/// off sees it (a restart's copy, before it compares: `restart.rs` in
/// `monitor/core`).
pub fn clean_invalidate_to_poc(base: u64, len: u64) {
    let line = data_line();
    let mut at = base & !(line - 1);
    while at < base + len {
        // SAFETY: `dc civac` writes a dirty line back before dropping it,
        // so no value changes, whatever else the line holds; the address
        // is mapped (callers pass normal RAM they are about to compare).
        unsafe { core::arch::asm!("dc civac, {}", in(reg) at, options(nostack)) };
        at += line;
    }
    // SAFETY: a barrier only.
    unsafe { core::arch::asm!("dsb sy", options(nostack)) };
}

/// Invalidates every core's instruction cache: code the monitor just wrote
/// (a Linux image over the last one's, the stub, the RTOS) must not be
/// fetched from stale lines.
pub fn invalidate_instruction_caches() {
    // SAFETY: invalidating instruction caches changes no data.
    unsafe { core::arch::asm!("ic ialluis", "dsb ish", "isb", options(nostack)) };
}
