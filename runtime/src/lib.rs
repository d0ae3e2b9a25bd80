//! What the three firmware images (the monitor at EL3, the EL2 layer, the
//! RTOS at S-EL1) share below Rust, written once:
//!
//! - [`asm_macros!`]: the assembler macros their entry and vector code is
//!   made of: each core's stack, the first core's hand-shake, zeroing
//!   `.bss`, saving and restoring x2..x29, the image header, the fault
//!   entry and the parking loop; [`global_asm!`] puts them before an
//!   image's own assembly.
//! - [`Stacks`] (declared with [`per_core_stacks!`]): each core's stack.
//! - [`FirstCore`]: the state that hand-shake moves, declared by an image
//!   whose cores may arrive in any order (the EL2 layer, the RTOS).
//! - `link/tandem-runtime.ld`: the end of every image's linker script
//!   (`.bss`, `.stacks`, what is discarded), found by name on the link's
//!   search path (this crate's build script puts it there).
//! - `el1`, `el2`, `el3` (one cargo feature each, built for aarch64 only):
//!   turning the MMU on at that exception level.
//!
//! Why not Google's `aarch64-rt`: it owns the reset vector, the exception
//! vectors and their register saves, and calls Rust handlers through its
//! own frame. The monitor's vectors must save straight into the world's
//! context that SP_EL3 points at and take the RTOS's YIELD in fewer than
//! 110 instructions (docs/monitor.md), the EL2 layer and the RTOS carry an
//! image header the monitor checks and are entered with arguments at
//! their base, and the RTOS's IRQ entry reads the counter in its third
//! instruction. What the three share is the pieces, not one entry, so the
//! pieces are what this crate holds.

#![no_std]

#[cfg(test)]
extern crate std;

#[cfg(all(feature = "el1", target_arch = "aarch64"))]
pub mod el1;
#[cfg(all(feature = "el2", target_arch = "aarch64"))]
pub mod el2;
#[cfg(all(feature = "el3", target_arch = "aarch64"))]
pub mod el3;
mod mmu;

pub use mmu::Translation;

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, Ordering};

/// Bytes from a frame's (or a context's) base to where `asm_macros!`'s
/// save and restore macros keep register xN: `8 * N`, x0 to x30 in order.
/// An image asserts its frame's layout against this.
pub const fn gpr_offset(n: usize) -> usize {
    8 * n
}

/// Per-core stacks: `CORES` of `SIZE` bytes each, core n's top at
/// `(n + 1) * SIZE` from the base. An image declares one in the NOLOAD
/// `.stacks` section ([`per_core_stacks!`]), which the linker fragment
/// keeps and never zeroes, and names it to `core_stack`.
#[repr(C, align(16))]
pub struct Stacks<const SIZE: usize, const CORES: usize>(UnsafeCell<[[u8; SIZE]; CORES]>);

// SAFETY: each core uses only its own stack, through its stack pointer;
// Rust code takes no reference into them, only their addresses.
unsafe impl<const SIZE: usize, const CORES: usize> Sync for Stacks<SIZE, CORES> {}

impl<const SIZE: usize, const CORES: usize> Stacks<SIZE, CORES> {
    /// The stacks (in a NOLOAD section this value is never loaded).
    #[allow(clippy::new_without_default, reason = "a static's initialiser")]
    pub const fn new() -> Self {
        Self(UnsafeCell::new([[0; SIZE]; CORES]))
    }

    /// The address of the top of `core`'s stack (one past its last byte).
    pub fn top(&self, core: usize) -> u64 {
        assert!(core < CORES, "core {core} has no stack");
        self.0.get() as u64 + ((core + 1) * SIZE) as u64
    }
}

/// `core::arch::global_asm!` with [`asm_macros!`] first: an image's entry
/// and vectors, written with the macros (same template and operands).
#[macro_export]
macro_rules! global_asm {
    ($($template_and_operands:tt)*) => {
        core::arch::global_asm!($crate::asm_macros!(), $($template_and_operands)*);
    };
}

/// Declares `static $name: Stacks<$size, $cores>` in the `.stacks`
/// section, where the linker fragment keeps it unzeroed.
#[macro_export]
macro_rules! per_core_stacks {
    ($(#[$doc:meta])* $vis:vis static $name:ident: $size:expr, $cores:expr) => {
        $(#[$doc])*
        #[unsafe(link_section = ".stacks")]
        $vis static $name: $crate::Stacks<{ $size }, { $cores }> = $crate::Stacks::new();
    };
}

/// The first core's hand-shake, for an image whose cores may arrive in
/// any order: the one that moves it from [`FirstCore::UNTOUCHED`] to
/// [`FirstCore::INITIALISING`] (the `first_core_or_wait` macro) zeroes
/// `.bss` and sets the image up; it then stores [`FirstCore::READY`] or a
/// later state of its own (`release_waiting_cores`), which lets the others
/// on. It lives in `.data`, valid before `.bss` is zeroed, and is read and
/// written with the MMU off.
#[repr(transparent)]
pub struct FirstCore(AtomicU32);

impl FirstCore {
    /// No core has arrived.
    pub const UNTOUCHED: u32 = 1;
    /// The first core is setting the image up.
    pub const INITIALISING: u32 = 2;
    /// Set up: the waiting cores go on. States from here up are the
    /// image's own (e.g. "set up, but refused"); the others go on at any.
    pub const READY: u32 = 3;

    /// The state before any core arrives.
    pub const fn new() -> Self {
        Self(AtomicU32::new(Self::UNTOUCHED))
    }

    /// The state the first core left (acquire: what it wrote before is
    /// visible).
    pub fn state(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
}

impl Default for FirstCore {
    fn default() -> Self {
        Self::new()
    }
}

/// The assembler macros the images' entry and vector code is made of, as
/// a string literal to put first in a `global_asm!` (which
/// [`global_asm!`](crate::global_asm!) does). The text
/// defines them once per object however many blocks include it.
///
/// - `core_stack core, stacks, size, t0, t1`: sp = the top of core `core`'s
///   `size`-byte stack in the array at `stacks`.
/// - `install_vectors el, table`: VBAR_ELel = `table`.
/// - `first_core_or_wait state, first`: the [`FirstCore`] hand-shake on the
///   word at `state`: branches to `first` on the core that claims it; on
///   every other core, waits (WFE) until the state is READY or beyond,
///   then falls through. Uses x6..x9.
/// - `release_waiting_cores state, value`: the first core's last step:
///   stores the 32-bit register `value` (READY or beyond) with release and
///   wakes the waiting cores. Uses x6.
/// - `zero_bss a, b`: zeroes `[__bss_start, __bss_end)` (the linker
///   fragment's symbols), 8 bytes at a time, with scratch registers a, b.
/// - `save_x2_x17 base`, `save_x18_x29 base` and their `restore_`
///   counterparts: register pairs to and from [`gpr_offset`] of `base`;
///   `save_x2_x29 base` both saves, `restore_x0_x29 base` both restores
///   and x0, x1 last.
/// - `return_from_frame size`: x0..x30 from the `size`-byte frame at sp,
///   which it pops, then ERET.
/// - `image_start magic`: the header the monitor checks at the base of a
///   loaded image (`tandem_abi::image::RtosImageHeader`), in the section
///   the image's linker script puts first, and the image's `_start` right
///   after it, which the header's branch jumps to.
/// - `fault_entry el, handler`: calls `handler(ESR, ELR, FAR)` of level el.
/// - `park`: WFE forever.
#[macro_export]
macro_rules! asm_macros {
    () => {
        r#"
    .ifndef tandem_runtime_macros
    .set    tandem_runtime_macros, 1

    .macro  core_stack core, stacks, size, t0, t1
    ldr     \t0, =\stacks
    mov     \t1, #\size
    madd    \t1, \core, \t1, \t1
    add     \t1, \t1, \t0
    mov     sp, \t1
    .endm

    .macro  install_vectors el, table
    ldr     x5, =\table
    msr     vbar_el\el, x5
    isb
    .endm

    .macro  first_core_or_wait state, first
    ldr     x6, =\state
.Lclaim\@:
    ldaxr   w7, [x6]
    cmp     w7, #1                  /* FirstCore::UNTOUCHED */
    b.ne    .Lothers\@
    mov     w8, #2                  /* FirstCore::INITIALISING */
    stxr    w9, w8, [x6]
    cbnz    w9, .Lclaim\@
    b       \first
.Lothers\@:
    clrex
.Lpoll\@:
    ldar    w7, [x6]
    cmp     w7, #3                  /* FirstCore::READY */
    b.hs    .Lready\@
    wfe
    b       .Lpoll\@
.Lready\@:
    .endm

    .macro  release_waiting_cores state, value
    ldr     x6, =\state
    stlr    \value, [x6]
    dsb     sy
    sev
    .endm

    .macro  zero_bss a, b
    ldr     \a, =__bss_start
    ldr     \b, =__bss_end
.Lzero\@:
    cmp     \a, \b
    b.hs    .Lzeroed\@
    str     xzr, [\a], #8
    b       .Lzero\@
.Lzeroed\@:
    .endm

    .macro  save_x2_x17 base
    stp     x2, x3, [\base, #0x10]
    stp     x4, x5, [\base, #0x20]
    stp     x6, x7, [\base, #0x30]
    stp     x8, x9, [\base, #0x40]
    stp     x10, x11, [\base, #0x50]
    stp     x12, x13, [\base, #0x60]
    stp     x14, x15, [\base, #0x70]
    stp     x16, x17, [\base, #0x80]
    .endm

    .macro  save_x18_x29 base
    stp     x18, x19, [\base, #0x90]
    stp     x20, x21, [\base, #0xa0]
    stp     x22, x23, [\base, #0xb0]
    stp     x24, x25, [\base, #0xc0]
    stp     x26, x27, [\base, #0xd0]
    stp     x28, x29, [\base, #0xe0]
    .endm

    .macro  restore_x18_x29 base
    ldp     x28, x29, [\base, #0xe0]
    ldp     x26, x27, [\base, #0xd0]
    ldp     x24, x25, [\base, #0xc0]
    ldp     x22, x23, [\base, #0xb0]
    ldp     x20, x21, [\base, #0xa0]
    ldp     x18, x19, [\base, #0x90]
    .endm

    .macro  restore_x2_x17 base
    ldp     x16, x17, [\base, #0x80]
    ldp     x14, x15, [\base, #0x70]
    ldp     x12, x13, [\base, #0x60]
    ldp     x10, x11, [\base, #0x50]
    ldp     x8, x9, [\base, #0x40]
    ldp     x6, x7, [\base, #0x30]
    ldp     x4, x5, [\base, #0x20]
    ldp     x2, x3, [\base, #0x10]
    .endm

    .macro  save_x2_x29 base
    save_x2_x17 \base
    save_x18_x29 \base
    .endm

    .macro  restore_x0_x29 base
    restore_x18_x29 \base
    restore_x2_x17 \base
    ldp     x0, x1, [\base, #0x00]
    .endm

    .macro  return_from_frame size
    ldr     x30, [sp, #0xf0]
    restore_x0_x29 sp
    add     sp, sp, #\size
    eret
    .endm

    .macro  image_start magic
    .section .text.header, "ax"
    .global _start
    b       _start
    .word   0
    .quad   \magic
    .quad   __image_size
    .quad   __ram_size
_start:
    .endm

    .macro  fault_entry el, handler
    mrs     x0, esr_el\el
    mrs     x1, elr_el\el
    mrs     x2, far_el\el
    bl      \handler
    .endm

    .macro  park
.Lpark\@:
    wfe
    b       .Lpark\@
    .endm

    .endif
"#
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    /// The hand-shake's states as the macros spell them.
    #[test]
    fn the_macros_use_the_first_core_states() {
        let text = asm_macros!();
        assert!(text.contains(&format!(
            "#{}                  /* FirstCore::UNTOUCHED",
            FirstCore::UNTOUCHED
        )));
        assert!(text.contains(&format!(
            "#{}                  /* FirstCore::INITIALISING",
            FirstCore::INITIALISING
        )));
        assert!(text.contains(&format!(
            "#{}                  /* FirstCore::READY",
            FirstCore::READY
        )));
    }

    /// Every save has its restore at the same offsets.
    #[test]
    fn each_core_s_stack_top_is_one_stack_further() {
        let stacks = Stacks::<64, 3>::new();
        let base = stacks.0.get() as u64;
        assert_eq!(base % 16, 0);
        assert_eq!(stacks.top(0), base + 64);
        assert_eq!(stacks.top(2), base + 192);
    }

    #[test]
    #[should_panic(expected = "core 3 has no stack")]
    fn a_core_past_the_last_has_no_stack() {
        Stacks::<64, 3>::new().top(3);
    }

    #[test]
    fn saves_and_restores_use_the_same_slots() {
        let text = asm_macros!();
        for n in (2..30).step_by(2) {
            let slot = format!("x{}, x{}, [\\base, #{:#x}]", n, n + 1, gpr_offset(n));
            assert!(text.contains(&format!("stp     {slot}")), "no save of x{n}");
            assert!(
                text.contains(&format!("ldp     {slot}")),
                "no restore of x{n}"
            );
        }
    }
}
