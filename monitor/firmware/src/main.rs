//! Tandem's EL3 monitor for QEMU virt: cold boot of every core, GICv3 set up
//! for two worlds, PSCI 1.1 / SMCCC 1.1 and Tandem's SiP calls, Linux entered
//! at NS-EL1. The logic lives in `tandem-monitor-core`; this crate is the thin
//! hardware layer.
#![no_std]
#![no_main]

mod console;
mod context;
mod entry;
mod gic;
mod power;
mod shm;
mod trap;

use arm_sysregs::el0::accessors::write_cntfrq_el0;
use arm_sysregs::el0::registers::CntfrqEl0;
use arm_sysregs::el3::accessors::write_cptr_el3;
use arm_sysregs::el3::registers::CptrEl3;
use core::sync::atomic::Ordering;
use tandem_board::BOARD;

/// Arm64 Image header magic ("ARM\x64") at offset 0x38.
const IMAGE_MAGIC: u32 = 0x644D_5241;
/// Flattened device tree magic (big-endian 0xd00dfeed).
const FDT_MAGIC_BE: u32 = 0xEDFE_0DD0;

/// Settings every core needs in EL3 before anything else runs.
fn init_el3() {
    // Lower ELs own FP/SIMD and the other traps: nothing is trapped to EL3.
    // SAFETY: clearing all trap bits cannot break EL3 itself.
    unsafe { write_cptr_el3(CptrEl3::empty()) };
    write_cntfrq_el0(CntfrqEl0::from_bits_retain(BOARD.counter_hz));
}

fn read_u32(addr: u64) -> u32 {
    // SAFETY: only called on normal-world RAM addresses from the board
    // description, which are mapped and 4-byte aligned.
    unsafe { (addr as *const u32).read_volatile() }
}

/// The boot core, after .bss and .data are set up.
extern "C" fn primary_main(core: usize) -> ! {
    console::init();
    init_el3();
    log!(
        "Tandem monitor {} on {} (up to {} cores)",
        env!("CARGO_PKG_VERSION"),
        BOARD.name,
        BOARD.max_cores
    );
    gic::init_distributor();
    gic::init_this_core(core);
    shm::init(BOARD.max_cores as u32);
    trap::MONITOR.lock().psci.check_in(core, true);
    entry::BOOT_READY.store(entry::BOOT_READY_MAGIC, Ordering::SeqCst);
    // SAFETY: barrier and event signal only; secondaries wait for BOOT_READY.
    unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };

    if read_u32(BOARD.kernel_entry + 0x38) != IMAGE_MAGIC || read_u32(BOARD.dtb) != FDT_MAGIC_BE {
        log!(
            "no Linux Image at {:#x} or no device tree at {:#x}: nothing to boot (load them with QEMU -device loader)",
            BOARD.kernel_entry,
            BOARD.dtb
        );
        trap::park(core);
    }
    console::init_normal_world_uart();
    log!(
        "entering Linux at {:#x}, device tree at {:#x}",
        BOARD.kernel_entry,
        BOARD.dtb
    );
    trap::enter_normal_world(core, BOARD.kernel_entry, BOARD.dtb)
}

/// Every other core, once the boot core has set up memory.
extern "C" fn secondary_main(core: usize) -> ! {
    init_el3();
    gic::init_this_core(core);
    trap::MONITOR.lock().psci.check_in(core, false);
    trap::park(core)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::print_emergency(format_args!("PANIC: {info}"));
    loop {
        // SAFETY: waiting has no memory effects.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}
