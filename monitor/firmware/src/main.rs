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
mod linux;
mod mmu;
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

/// Reads and checks the boot configuration the harness wrote into secure
/// flash (where Linux can neither read nor change it): the policies, and the
/// blob for its feature bits and RPC server cores.
fn read_boot_config() -> Result<(Policies, BootConfig), BootConfigError> {
    // SAFETY: the board places the blob in secure flash, mapped readable
    // (`mmu.rs`) and aligned. Any bit pattern is a valid BootConfig (plain
    // integers), and it is checked before use.
    let blob = unsafe { (BOARD.boot_config as *const BootConfig).read_volatile() };
    let policies = blob.validate()?;
    Ok((policies, blob))
}

/// Copies the RTOS image from secure flash to its RAM, after checking it.
fn load_rtos() -> Result<(), ImageError> {
    // SAFETY: the board places the RTOS image in secure flash here, mapped
    // readable (`mmu.rs`); the header is plain integers, checked before use.
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
    // The RTOS starts with its MMU off.
    mmu::clean_to_poc(BOARD.rtos_ram.base, header.image_size);
    mmu::invalidate_instruction_caches();
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

fn check_in(core: usize, linux: Option<linux::Start>) {
    let policy = trap::POLICIES
        .get()
        .expect("set before secondaries run")
        .of(core);
    let role = if !policy.has_linux() {
        CheckIn::NotForLinux
    } else if let Some(start) = linux {
        CheckIn::BootCore {
            entry: start.entry,
            context_id: start.dtb,
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
    if let Err(e) = mmu::build() {
        refuse(format_args!("the board cannot be mapped at EL3: {e}"));
    }
    mmu::enable();
    log!(
        "Tandem monitor {} on {} (up to {} cores)",
        env!("CARGO_PKG_VERSION"),
        BOARD.name,
        BOARD.max_cores
    );
    log!(
        "EL3 MMU {}: the board's identity map, RAM write-back cached",
        if mmu::enabled() { "on" } else { "OFF" }
    );
    let (policies, blob) = match read_boot_config() {
        Ok(c) => c,
        Err(e) => refuse(format_args!(
            "no valid boot configuration at {:#x} ({e:?}); boot with ./tandem, which writes it",
            BOARD.boot_config
        )),
    };
    let steal_time = blob.steal_time();
    if !policies.of(linux::BOOT_CORE).has_linux() {
        refuse(format_args!(
            "core {} must run Linux (policy shared or linux), not {:?}",
            linux::BOOT_CORE,
            policies.of(linux::BOOT_CORE)
        ));
    }
    let start = match linux::load() {
        Ok(start) => start,
        Err(e) => refuse(format_args!(
            "Linux's images in secure flash at {:#x} unusable: {e}; boot with ./tandem, which writes them",
            BOARD.linux_images
        )),
    };
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
    trap::MONITOR.set_rpc_cores(blob.rpc_cores());
    linux::set_off_stops_machine(blob.linux_off_stops_machine());
    gic::init_distributor();
    gic::init_this_core(core);
    shm::init(policies.cores() as u32, &policies);
    linux::install_stub();
    check_in(core, Some(start));
    // Logged before the secondaries start: the RTOS prints on the same
    // secure UART from every core, and the two images share no lock.
    let each: [Policy; MAX_CORES] = core::array::from_fn(|c| policies.of(c));
    log!("core policies: {:?}", &each[..policies.cores()]);
    if steal_time {
        log!("PV time on: stolen time accounted, Linux's WFI trapped");
    }
    log!(
        "Linux at {:#x}, device tree at {:#x}; its SYSTEM_OFF {}",
        start.entry,
        start.dtb,
        if linux::off_stops_machine() {
            "powers the machine off"
        } else {
            "leaves the RTOS running"
        }
    );
    power::BOOT_READY.store(power::BOOT_READY_MAGIC, Ordering::SeqCst);
    // The others read it with their MMU off.
    mmu::clean_to_poc(power::BOOT_READY.as_ptr() as u64, 4);
    // SAFETY: barrier and event signal only; secondaries wait for BOOT_READY.
    unsafe { core::arch::asm!("dsb sy", "sev", options(nostack)) };

    console::init_normal_world_uart();
    trap::start_core(core)
}

/// Every other core, once the boot core has set up memory.
extern "C" fn secondary_main(core: usize) -> ! {
    mmu::enable();
    init_el3();
    gic::init_this_core(core);
    check_in(core, None);
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
