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
mod plat;
mod power;
mod shm;
mod trap;

use arm_sysregs::el0::accessors::write_cntfrq_el0;
use arm_sysregs::el0::registers::CntfrqEl0;
use arm_sysregs::el3::accessors::{write_cptr_el3, write_mdcr_el3};
use arm_sysregs::el3::registers::{CptrEl3, MdcrEl3};
use core::sync::atomic::Ordering;
use tandem_abi::MAX_CORES;
use tandem_abi::boot::{BootConfig, BootConfigError, Policies, Policy};
use tandem_abi::image::{ImageError, RtosImageHeader};
use tandem_board::BOARD;
use tandem_monitor_core::psci::CheckIn;

/// Arm64 Image header magic ("ARM\x64") at offset 0x38.
const IMAGE_MAGIC: u32 = 0x644D_5241;
/// Flattened device tree magic (big-endian 0xd00dfeed).
const FDT_MAGIC_BE: u32 = 0xEDFE_0DD0;

/// Settings every core needs in EL3 before anything else runs.
fn init_el3() {
    // Lower ELs own FP/SIMD and the other traps: nothing is trapped to EL3.
    // SAFETY: clearing all trap bits cannot break EL3 itself.
    unsafe { write_cptr_el3(CptrEl3::empty()) };
    // Debug exceptions off in the secure world, debug traps off: MDSCR_EL1
    // is one register for both worlds and the monitor does not swap it
    // (context.rs), so Linux's debug settings must not reach the RTOS.
    write_mdcr_el3(MdcrEl3::SDD);
    write_cntfrq_el0(CntfrqEl0::from_bits_retain(BOARD.counter_hz));
}

fn read_u32(addr: u64) -> u32 {
    // SAFETY: only called on normal-world RAM addresses from the board
    // description, which are mapped and 4-byte aligned.
    unsafe { (addr as *const u32).read_volatile() }
}

/// Reads and checks the boot configuration the harness left in normal RAM:
/// the policies, whether stolen-time accounting is on, and the RPC server cores.
fn read_boot_config() -> Result<(Policies, bool, u8), BootConfigError> {
    // SAFETY: the board reserves this page of normal RAM for the blob; Linux
    // has not run yet, so nothing else touches it. Any bit pattern is a valid
    // BootConfig (plain integers), and it is checked before use.
    let blob = unsafe { (BOARD.boot_config as *const BootConfig).read_volatile() };
    let policies = blob.validate()?;
    Ok((policies, blob.steal_time(), blob.rpc_cores()))
}

/// Copies the RTOS image from secure flash to its RAM, after checking it.
fn load_rtos() -> Result<(), ImageError> {
    // SAFETY: the board places the RTOS image in secure flash here, readable
    // with the MMU off; the header is plain integers, checked before use.
    let header = unsafe { (BOARD.rtos_image as *const RtosImageHeader).read_volatile() };
    header.validate(BOARD.rtos_ram.size)?;
    // SAFETY: source and destination are distinct, the sizes were checked
    // against the board's RTOS RAM, and no core runs the RTOS yet.
    unsafe {
        core::ptr::copy_nonoverlapping(
            BOARD.rtos_image as *const u8,
            BOARD.rtos_ram.base as *mut u8,
            header.image_size as usize,
        )
    };
    log!(
        "RTOS image: {} bytes, {} KiB of RAM",
        header.image_size,
        header.ram_size / 1024
    );
    Ok(())
}

/// Stops this core with a message: the machine cannot run as configured.
/// Powers off rather than hang, so whoever started the machine sees it end
/// and finds the reason on the secure console.
fn refuse(why: core::fmt::Arguments) -> ! {
    log!("cannot start: {why}");
    power::system_off()
}

fn check_in(core: usize, is_boot_core: bool) {
    let policy = trap::POLICIES
        .get()
        .expect("set before secondaries run")
        .of(core);
    let role = if !policy.has_linux() {
        CheckIn::NotForLinux
    } else if is_boot_core {
        CheckIn::BootCore {
            entry: BOARD.kernel_entry,
            context_id: BOARD.dtb,
        }
    } else {
        CheckIn::Secondary
    };
    trap::MONITOR.psci.lock().check_in(core, role);
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
    let (policies, steal_time, rpc_cores) = match read_boot_config() {
        Ok(c) => c,
        Err(e) => refuse(format_args!(
            "no valid boot configuration at {:#x} ({e:?}); boot with ./tandem, which writes it",
            BOARD.boot_config
        )),
    };
    if policies.of(0) != Policy::Shared && policies.of(0) != Policy::Linux {
        refuse(format_args!(
            "core 0 must run Linux (policy shared or linux), not {:?}",
            policies.of(0)
        ));
    }
    if read_u32(BOARD.kernel_entry + 0x38) != IMAGE_MAGIC || read_u32(BOARD.dtb) != FDT_MAGIC_BE {
        refuse(format_args!(
            "no Linux Image at {:#x} or no device tree at {:#x} (load them with QEMU -device loader)",
            BOARD.kernel_entry, BOARD.dtb
        ));
    }
    if policies.any_rtos()
        && let Err(e) = load_rtos()
    {
        refuse(format_args!(
            "RTOS image at {:#x} unusable: {e:?}",
            BOARD.rtos_image
        ));
    }
    trap::POLICIES.call_once(|| policies);
    trap::MONITOR.set_steal_time(steal_time);
    trap::MONITOR.set_rpc_cores(rpc_cores);
    gic::init_distributor();
    gic::init_this_core(core);
    shm::init(policies.cores() as u32, &policies);
    check_in(core, true);
    // Logged before the secondaries start: the RTOS prints on the same
    // secure UART from every core, and the two images share no lock.
    let each: [Policy; MAX_CORES] = core::array::from_fn(|c| policies.of(c));
    log!("core policies: {:?}", &each[..policies.cores()]);
    if steal_time {
        log!("PV time on: stolen time accounted, Linux's WFI trapped");
    }
    log!(
        "Linux at {:#x}, device tree at {:#x}",
        BOARD.kernel_entry,
        BOARD.dtb
    );
    power::BOOT_READY.store(power::BOOT_READY_MAGIC, Ordering::SeqCst);
    // SAFETY: barrier and event signal only; secondaries wait for BOOT_READY.
    unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };

    console::init_normal_world_uart();
    trap::start_core(core)
}

/// Every other core, once the boot core has set up memory.
extern "C" fn secondary_main(core: usize) -> ! {
    init_el3();
    gic::init_this_core(core);
    check_in(core, false);
    trap::start_core(core)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::print_emergency(format_args!("PANIC: {info}"));
    loop {
        // SAFETY: waiting has no memory effects.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}
