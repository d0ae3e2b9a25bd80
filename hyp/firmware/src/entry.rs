//! The EL2 layer's image header, entry, exception vectors and the way into
//! a partition's Linux: the only assembly in the layer.
//!
//! The monitor enters at the image's base at EL2 on every start of a core
//! in a partition (cold boot, a partition's restart, PSCI CPU_ON), MMU off,
//! with x0 = Linux's entry, x1 = Linux's x0 and x2 = 1 when this starts the
//! partition (its boot core at cold boot or a restart), else 0. The first
//! core ever to arrive zeroes .bss and builds every map (`crate::init`);
//! the others wait for it. A trap from a partition saves its x0-x30 in a
//! frame on the core's stack, which the Rust handler reads and writes; the
//! handler's return resumes the partition with the frame's registers.
//! Nothing uses this module back: the start-up state and `enter_el1` are
//! declared in the crate's root.

use crate::trap::Frame;
use tandem_abi::MAX_CORES;
use tandem_abi::image::HYP_MAGIC;
use tandem_board::MPIDR_AFFINITY_MASK;

/// Bytes of stack per core: a trap's frame and its handler.
pub const STACK_SIZE: usize = 16 * 1024;

tandem_runtime::per_core_stacks!(
    /// Per-core stacks: the layer's only memory before its MMU is on.
    static STACKS: STACK_SIZE, MAX_CORES
);

tandem_runtime::global_asm!(
    r#"
    /* The monitor checks the header (HYP_MAGIC), then enters at _start. */
    image_start {magic}
    mov     x19, x0
    mov     x20, x1
    mov     x22, x2
    mrs     x21, mpidr_el1
    ldr     x3, ={aff_mask}
    and     x21, x21, x3
    cmp     x21, #{max_cores}
    b.hs    park_forever            /* no core of this machine */
    core_stack x21, {stacks}, {stack_size}, x2, x4
    install_vectors 2, vectors

    /* The first core ever zeroes .bss and builds the maps; the others
     * wait for it (MMU off: the state is read and written uncached). */
    first_core_or_wait {init_state}, first_core
    b       run
first_core:
    zero_bss x10, x11
    mov     x0, x21
    bl      {init}
    release_waiting_cores {init_state}, w0
run:
    mov     x0, x21
    mov     x1, x19
    mov     x2, x20
    mov     x3, x22
    bl      {hyp_main}
park_forever:
    park

    /* Into a partition's Linux at EL1h, every exception masked, MMU off
     * (the monitor reset its EL1 registers): x0 = entry, x1 = its x0. */
    .global enter_el1
enter_el1:
    msr     elr_el2, x0
    mov     x2, #0x3c5
    msr     spsr_el2, x2
    mov     x0, x1
    mov     x1, xzr
    mov     x2, xzr
    mov     x3, xzr
    eret

    /* A trap from the partition: its x0-x30 into a frame on this core's
     * stack, the handler, then back with the frame's registers. */
guest_sync:
    sub     sp, sp, #{frame_size}
    stp     x0, x1, [sp, #0x00]
    save_x2_x29 sp
    str     x30, [sp, #0xf0]
    mov     x0, sp
    bl      {guest_trap}
    return_from_frame {frame_size}

    /* Anything else: a fault in the layer itself, or an exception the
     * layer's settings never route here. */
unexpected_entry:
    fault_entry 2, {unexpected}

    .section .text.vectors, "ax"
    .balign 0x800
vectors:
    .rept 8
    .balign 0x80
    b       unexpected_entry
    .endr
    .org    vectors + 0x400
    b       guest_sync
    .rept 7
    .balign 0x80
    b       unexpected_entry
    .endr
    .org    vectors + 0x800
"#,
    magic = const HYP_MAGIC,
    aff_mask = const MPIDR_AFFINITY_MASK,
    max_cores = const MAX_CORES,
    stacks = sym STACKS,
    stack_size = const STACK_SIZE,
    init_state = sym crate::INIT_STATE,
    init = sym crate::init,
    hyp_main = sym crate::hyp_main,
    guest_trap = sym crate::trap::guest_trap,
    unexpected = sym crate::trap::unexpected,
    frame_size = const core::mem::size_of::<Frame>(),
);
