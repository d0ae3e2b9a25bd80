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
mod virtio;

use arm_sysregs::el0::accessors::write_cntfrq_el0;
use arm_sysregs::el0::registers::CntfrqEl0;
use arm_sysregs::el3::accessors::{write_cptr_el3, write_mdcr_el3};
use arm_sysregs::el3::registers::{CptrEl3, MdcrEl3};
use core::sync::atomic::Ordering;
use tandem_abi::MAX_CORES;
use tandem_abi::boot::{BootConfig, BootConfigError, Policies, Policy};
use tandem_abi::image::{HYP_MAGIC, ImageError, RtosImageHeader, Span};
use tandem_abi::partition::{self, PartitionError, PartitionTable, Partitions};
use tandem_board::BOARD;
use tandem_monitor_core::lifecycle::{BOOT_CORE, Instances};
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

/// The partition table beside the boot configuration, checked against the
/// policies and the board; `None` without one (no partitions: one Linux).
fn read_partitions(policies: &Policies) -> Result<Option<Partitions>, PartitionError> {
    // SAFETY: the board's boot configuration page and the next one are in
    // secure flash (boards/src/lib.rs checks it), mapped readable
    // (`mmu.rs`), 8-byte aligned; the table is plain integers, checked
    // before use.
    let table = unsafe {
        ((BOARD.boot_config + partition::OFFSET) as *const PartitionTable).read_volatile()
    };
    if !table.present() {
        return Ok(None);
    }
    let linux_cores = (0..policies.cores())
        .filter(|&c| policies.of(c).has_linux())
        .fold(0u32, |m, c| m | 1 << c);
    let span = |r: tandem_board::MemoryRange| Span {
        base: r.base,
        size: r.size,
    };
    let machine = partition::Machine {
        cores: policies.cores(),
        linux_cores,
        normal_ram: span(BOARD.normal_ram),
        shared: span(BOARD.shared),
        hyp_ram: span(BOARD.hyp_ram),
        reserved_mmio: [
            Span {
                base: BOARD.gicd,
                size: 0x1_0000,
            },
            Span {
                base: BOARD.gicr,
                size: BOARD.max_cores as u64 * 0x2_0000,
            },
        ],
    };
    table.validate(&machine).map(Some)
}

/// Whether this core has EL2 (ID_AA64PFR0_EL1.EL2).
fn has_el2() -> bool {
    let pfr0: u64;
    // SAFETY: reading an ID register has no side effects.
    unsafe { core::arch::asm!("mrs {}, id_aa64pfr0_el1", out(reg) pfr0, options(nomem, nostack)) };
    pfr0 >> 8 & 0xF != 0
}

/// Copies the EL2 layer's image from secure flash to its RAM, after
/// checking it, and the partition table to the page the layer reads it
/// from (`partition::in_hyp_ram`).
fn load_hyp() -> Result<(), ImageError> {
    // SAFETY: the board places the layer's image in secure flash here,
    // mapped readable (`mmu.rs`); the header is plain integers, checked
    // before use.
    let header = unsafe { (BOARD.hyp_image as *const RtosImageHeader).read_volatile() };
    // Its RAM less the last page, the table's.
    header.validate_as(HYP_MAGIC, BOARD.hyp_ram.size - 0x1000)?;
    let table = partition::in_hyp_ram(Span {
        base: BOARD.hyp_ram.base,
        size: BOARD.hyp_ram.size,
    });
    // SAFETY: source and destination are distinct (flash and normal RAM,
    // mapped read/write by the monitor), the sizes were checked against
    // the layer's RAM, and no core runs the normal world yet.
    unsafe {
        core::ptr::copy_nonoverlapping(
            BOARD.hyp_image as *const u8,
            BOARD.hyp_ram.base as *mut u8,
            header.image_size as usize,
        );
        core::ptr::copy_nonoverlapping(
            (BOARD.boot_config + partition::OFFSET) as *const u8,
            table as *mut u8,
            partition::TABLE_SIZE,
        );
    }
    // The layer starts with its MMU off.
    mmu::clean_to_poc(BOARD.hyp_ram.base, header.image_size);
    mmu::clean_to_poc(table, partition::TABLE_SIZE as u64);
    mmu::invalidate_instruction_caches();
    log!(
        "EL2 layer: {} bytes at {:#x}, {} KiB of RAM",
        header.image_size,
        BOARD.hyp_ram.base,
        header.ram_size / 1024
    );
    Ok(())
}

/// What the normal world's EL2 is set to where no layer runs there but the
/// core has EL2 (QEMU's virtualization=on without partitions): out of
/// Linux's way, as on a core without EL2. EL1 is AArch64 (HCR_EL2.RW; its
/// reset value would make it AArch32), no trap, no stage 2, the physical
/// counter and timer EL1's, EL1 sees the core's own IDs.
fn el2_out_of_the_way() {
    let midr: u64;
    let mpidr: u64;
    let pmcr: u64;
    // SAFETY: reads of ID registers and of PMCR_EL0 have no side effects;
    // the writes set EL2's controls for a Linux entered at EL1, and EL2's
    // registers do not affect EL3 or the secure world (no Secure EL2).
    unsafe {
        core::arch::asm!(
            "mrs {midr}, midr_el1",
            "mrs {mpidr}, mpidr_el1",
            "mrs {pmcr}, pmcr_el0",
            midr = out(reg) midr,
            mpidr = out(reg) mpidr,
            pmcr = out(reg) pmcr,
            options(nomem, nostack)
        );
        core::arch::asm!(
            "msr hcr_el2, {hcr}",
            "msr cnthctl_el2, {cnthctl}",
            "msr cntvoff_el2, xzr",
            "msr vttbr_el2, xzr",
            "msr vpidr_el2, {midr}",
            "msr vmpidr_el2, {mpidr}",
            "msr cptr_el2, {cptr}",
            "msr hstr_el2, xzr",
            "msr mdcr_el2, {mdcr}",
            "isb",
            hcr = in(reg) 1u64 << 31,
            cnthctl = in(reg) 0b11u64,
            midr = in(reg) midr,
            mpidr = in(reg) mpidr,
            cptr = in(reg) 0x33FFu64,
            mdcr = in(reg) pmcr >> 11 & 0x1F,
            options(nostack)
        );
    }
}

/// Stops this core with a message: the machine cannot run as configured.
/// Powers off rather than hang, so whoever started the machine sees it end
/// and finds the reason on the secure console.
fn refuse(why: core::fmt::Arguments) -> ! {
    log!("cannot start: {why}");
    power::system_off()
}

/// Where each instance starts (set by the boot core at cold boot).
static STARTS: spin::Once<[Option<linux::Start>; partition::MAX_PARTITIONS]> = spin::Once::new();

/// The Linux instances, configured at cold boot.
fn instances() -> &'static Instances {
    trap::MONITOR
        .lifecycle
        .instances()
        .expect("configured at cold boot")
}

fn check_in(core: usize) {
    let instances = instances();
    let role = match instances.of_core(core) {
        None => CheckIn::NotForLinux,
        Some(i) if instances.get(i).boot_core == core => {
            let start = STARTS
                .get()
                .and_then(|s| s[i])
                .expect("loaded at cold boot");
            CheckIn::BootCore {
                entry: start.entry,
                context_id: start.dtb,
            }
        }
        Some(_) => CheckIn::Secondary,
    };
    if !instances.hyp && has_el2() {
        el2_out_of_the_way();
    }
    trap::MONITOR.check_in(core, role);
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
    if !policies.of(BOOT_CORE).has_linux() {
        refuse(format_args!(
            "core {} must run Linux (policy shared or linux), not {:?}",
            BOOT_CORE,
            policies.of(BOOT_CORE)
        ));
    }
    let partitions = match read_partitions(&policies) {
        Ok(p) => p,
        Err(e) => refuse(format_args!(
            "partition table at {:#x} refused: {e}",
            BOARD.boot_config + partition::OFFSET
        )),
    };
    if let Some(parts) = &partitions
        && let Err(e) = parts.check_rpc_cores(u32::from(blob.rpc_cores()))
    {
        refuse(format_args!("boot configuration refused: {e}"));
    }
    if partitions.is_some() {
        if !has_el2() {
            refuse(format_args!(
                "partitions need EL2 (QEMU's virtualization=on: the board's [qemu] machine_el2)"
            ));
        }
        if let Err(e) = load_hyp() {
            refuse(format_args!(
                "EL2 layer's image at {:#x} unusable: {e:?}",
                BOARD.hyp_image
            ));
        }
    }
    let normal_ram = Span {
        base: BOARD.normal_ram.base,
        size: BOARD.normal_ram.size,
    };
    trap::MONITOR.configure_linux(
        Instances::new(
            &policies,
            partitions.as_ref(),
            normal_ram,
            blob.linux_off_stops_machine(),
        ),
        policies.cores(),
    );
    let starts = match linux::load(instances()) {
        Ok(starts) => starts,
        Err((i, e)) => refuse(format_args!(
            "Linux's images (instance {i}) in secure flash at {:#x} unusable: {e}; boot with ./tandem, which writes them",
            BOARD.linux_images + instances().get(i).images
        )),
    };
    STARTS.call_once(|| starts);
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
    gic::init_distributor();
    gic::init_this_core(core, policies.of(core).has_linux());
    shm::init(policies.cores() as u32, &policies);
    if let Err(e) = linux::install_stub() {
        refuse(format_args!("{e}"));
    }
    check_in(core);
    // Logged before the secondaries start: the RTOS prints on the same
    // secure UART from every core, and the two images share no lock.
    let each: [Policy; MAX_CORES] = core::array::from_fn(|c| policies.of(c));
    log!("core policies: {:?}", &each[..policies.cores()]);
    if steal_time {
        log!("PV time on: stolen time accounted, Linux's WFI trapped");
    }
    for (instance, start) in instances().iter().zip(starts.iter().flatten()) {
        let off = if instance.off_stops_machine {
            "powers the machine off"
        } else if instance.name != 0 {
            "stops it alone"
        } else {
            "leaves the RTOS running"
        };
        if instance.name == 0 {
            log!(
                "Linux at {:#x}, device tree at {:#x}; its SYSTEM_OFF {off}",
                start.entry,
                start.dtb
            );
        } else {
            log!(
                "partition {}: Linux on cores {:#x} at {:#x}, device tree at {:#x}, RAM {:#x}+{:#x}, under the EL2 layer; its SYSTEM_OFF {off}",
                instance.name as char,
                instance.cores,
                start.entry,
                start.dtb,
                instance.ram.base,
                instance.ram.size
            );
        }
    }
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
    let linux_here = trap::POLICIES.get().is_some_and(|p| p.of(core).has_linux());
    gic::init_this_core(core, linux_here);
    check_in(core);
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
