//! Tandem's normal-world EL2 layer for QEMU virt: several Linux instances
//! (partitions) side by side, each on its own cores, its own RAM, devices
//! and interrupts (paper 003's DualUnix). It is a partitioning layer, not a
//! hypervisor that schedules: each core runs one partition's Linux at EL1,
//! and EL2 only confines it (stage-2 translation, the GIC distributor
//! emulated, SGIs and PSCI filtered). The logic lives in `tandem-hyp-core`;
//! this crate is the thin hardware layer. docs/hyp.md describes it.
#![no_std]
#![no_main]

mod console;
mod entry;
mod mmio;
mod regs;
mod trap;

use core::cell::UnsafeCell;
use tandem_abi::MAX_CORES;
use tandem_abi::image::Span;
use tandem_abi::partition::{self, MAX_PARTITIONS, Partition, PartitionTable, Partitions};
use tandem_board::BOARD;
use tandem_hyp_core::maps::{self, Image, Machine};
use tandem_hyp_core::tables::{self, Page, Pool};
use tandem_runtime::{FirstCore, Translation};

/// The first core's hand-shake (`entry.rs`), in .data so that it holds
/// before .bss is zeroed and survives every later entry (the monitor
/// copies the image once); the first core leaves it [`READY`] or
/// [`REFUSED`].
pub static INIT_STATE: FirstCore = FirstCore::new();

/// [`INIT_STATE`]: the maps are built.
pub const READY: u32 = FirstCore::READY;
/// [`INIT_STATE`]: the layer cannot run the partitions (the partition
/// table or the maps are unusable).
pub const REFUSED: u32 = FirstCore::READY + 1;

unsafe extern "C" {
    /// Enters the partition's Linux at EL1 at `entry` with x0 = `arg`
    /// (`entry.rs`).
    ///
    /// # Safety
    ///
    /// This core's EL2 state (stage 2, traps) must be set for its
    /// partition, and its EL1 registers fresh (the monitor resets them).
    fn enter_el1(entry: u64, arg: u64) -> !;
}

/// Pages for the layer's own tables.
const STAGE1_PAGES: usize = 8;
/// Pages for one partition's stage-2 tables.
const STAGE2_PAGES: usize = 16;

/// What the first core sets up for all: written once, while every other
/// core waits (`entry.rs`), read-only afterwards.
struct Global {
    partitions: Partitions,
    machine: Machine,
    /// Each partition's level-1 stage-2 table.
    stage2: [u64; MAX_PARTITIONS],
    /// The layer's own level-1 table.
    stage1: u64,
}

/// Written by the first core before any other reads it (`init`).
struct Shared<T>(UnsafeCell<T>);

// SAFETY: written only by `init`, on the first core, while every other core
// waits for INIT_STATE (`entry.rs`); read-only once it says READY.
unsafe impl<T> Sync for Shared<T> {}

static GLOBAL: Shared<Option<Global>> = Shared(UnsafeCell::new(None));
static STAGE1: Shared<[Page; STAGE1_PAGES]> = Shared(UnsafeCell::new([Page::EMPTY; STAGE1_PAGES]));
static STAGE2: Shared<[[Page; STAGE2_PAGES]; MAX_PARTITIONS]> = Shared(UnsafeCell::new(
    [[Page::EMPTY; STAGE2_PAGES]; MAX_PARTITIONS],
));

unsafe extern "C" {
    /// One past the layer's code (page aligned, `link.ld.in`).
    static __text_end: u8;
}

/// The set-up, once every core may read it.
fn global() -> &'static Global {
    // SAFETY: `hyp_main` runs only after INIT_STATE is READY, i.e. after
    // `init` wrote GLOBAL, which nothing writes again.
    unsafe { (*GLOBAL.0.get()).as_ref() }.expect("set up before any partition runs")
}

/// The table the monitor copied beside the layer, checked.
fn read_table(cores: usize) -> Result<Partitions, partition::PartitionError> {
    let hyp_ram = Span {
        base: BOARD.hyp_ram.base,
        size: BOARD.hyp_ram.size,
    };
    // SAFETY: the monitor copies the table to this page of the layer's RAM
    // before it starts any core here (`tandem_abi::partition::in_hyp_ram`);
    // it is plain integers, checked before use.
    let table =
        unsafe { (partition::in_hyp_ram(hyp_ram) as *const PartitionTable).read_volatile() };
    // The monitor checked the table against the policies (which cores run
    // Linux) before it started the layer; the layer checks the rest again,
    // taking the cores the table names as Linux's.
    let named = table.partitions[..(table.count as usize).min(partition::MAX_PARTITIONS)]
        .iter()
        .fold(0, |m, p| m | p.cores);
    let machine = partition::Machine {
        cores,
        linux_cores: named,
        normal_ram: Span {
            base: BOARD.normal_ram.base,
            size: BOARD.normal_ram.size,
        },
        shared: Span {
            base: BOARD.shared.base,
            size: BOARD.shared.size,
        },
        hyp_ram,
        reserved_mmio: [
            Span {
                base: BOARD.gicd,
                size: maps::GICD_SIZE,
            },
            Span {
                base: BOARD.gicr,
                size: BOARD.max_cores as u64 * maps::GICR_STRIDE,
            },
        ],
    };
    table.validate(&machine)
}

/// Cores of this machine: the redistributor frames that exist, counted up
/// to the one that says it is the last (MMU off: plain device reads).
fn machine_cores() -> usize {
    for core in 0..BOARD.max_cores {
        let typer = (BOARD.gicr + core as u64 * maps::GICR_STRIDE + 8) as *const u64;
        // SAFETY: the board places the redistributors here; GICR_TYPER is
        // a read-only register with no side effects.
        if unsafe { typer.read_volatile() } & tandem_hyp_core::gic::GICR_TYPER_LAST != 0 {
            return core + 1;
        }
    }
    BOARD.max_cores
}

/// The first core's set-up (`entry.rs`, MMU off, .bss zeroed): the
/// partition table read and checked, the layer's map and every partition's
/// stage 2 built. Returns the start-up state for every core.
extern "C" fn init(_core: usize) -> u32 {
    let cores = machine_cores();
    let partitions = match read_table(cores) {
        Ok(p) => p,
        Err(e) => {
            console::emergency(format_args!("hyp: partition table refused: {e}"));
            return REFUSED;
        }
    };
    let machine = Machine {
        cores,
        gicd: BOARD.gicd,
        gicr: BOARD.gicr,
        shared: Span {
            base: BOARD.shared.base,
            size: BOARD.shared.size,
        },
    };
    let image = Image {
        ram: Span {
            base: BOARD.hyp_ram.base,
            size: BOARD.hyp_ram.size,
        },
        text_end: &raw const __text_end as u64,
    };
    let mut stage2 = [0; MAX_PARTITIONS];
    // SAFETY: the first core alone runs here (every other waits for
    // INIT_STATE), so these are the only references to the pools.
    let (pool1, pools2) = unsafe { (&mut *STAGE1.0.get(), &mut *STAGE2.0.get()) };
    let built = (|| {
        let at = pool1.as_ptr() as u64;
        let mut pool = Pool::new(pool1, at)?;
        // The partitions' consoles, and the board's normal-world UART for
        // the layer's last words (`console::emergency`).
        let board_uart = Span {
            base: BOARD.normal_uart,
            size: tables::PAGE,
        };
        let consoles = partitions
            .iter()
            .filter_map(Partition::console)
            .chain(core::iter::once(board_uart));
        maps::stage1(&mut pool, &machine, &image, consoles)?;
        let stage1 = pool.root();
        for ((p, pages), root) in partitions.iter().zip(pools2.iter_mut()).zip(&mut stage2) {
            let at = pages.as_ptr() as u64;
            let mut pool = Pool::new(pages, at)?;
            maps::stage2(&mut pool, &machine, p)?;
            *root = pool.root();
        }
        Ok::<u64, tables::MapError>(stage1)
    })();
    let stage1 = match built {
        Ok(root) => root,
        Err(e) => {
            console::emergency(format_args!("hyp: cannot build the maps: {e:?}"));
            return REFUSED;
        }
    };
    // SAFETY: as above; nobody reads GLOBAL before READY.
    unsafe {
        *GLOBAL.0.get() = Some(Global {
            partitions,
            machine,
            stage2,
            stage1,
        })
    };
    READY
}

/// Turns this core's MMU and caches on at EL2 with the layer's map.
fn enable_mmu(root: u64) {
    let translation = Translation {
        mair: tables::MAIR,
        tcr: tables::TCR,
        ttbr0: root,
        sctlr_clear: !0,
        sctlr_set: tables::SCTLR_ON,
    };
    // SAFETY: this runs at EL2; the tables map the layer's code, data and
    // stacks at their own addresses.
    unsafe { tandem_runtime::el2::enable_mmu(&translation) };
}

/// Every core, on every start, once the maps are built: this core's EL2
/// state for its partition, then into Linux at EL1.
extern "C" fn hyp_main(core: usize, entry: u64, arg: u64, start: u64) -> ! {
    if INIT_STATE.state() != READY {
        park()
    }
    let g = global();
    enable_mmu(g.stage1);
    let Some(index) = g.partitions.of_core(core) else {
        console::emergency(format_args!("hyp: core {core} is in no partition"));
        park()
    };
    let p = g.partitions.get(index).expect("of_core names a partition");
    let vmid = (index as u64 + 1) << 48;
    // SAFETY: the partition's own stage 2 and traps, set before it runs
    // here; its EL1 registers were reset by the monitor.
    unsafe {
        regs::vtcr_el2::write(tables::VTCR);
        regs::vttbr_el2::write(g.stage2[index] | vmid);
        regs::hcr_el2::write(regs::HCR_PARTITION);
        regs::cnthctl_el2::write(regs::CNTHCTL_EL1_PHYSICAL);
        regs::cntvoff_el2::write(0);
        regs::vpidr_el2::write(regs::midr_el1::read());
        regs::vmpidr_el2::write(regs::mpidr_el1::read());
        regs::cptr_el2::write(regs::CPTR_NOTHING_TRAPPED);
        regs::hstr_el2::write(0);
        // HPMN: every PMU counter stays EL1's; no debug traps.
        regs::mdcr_el2::write(regs::pmcr_el0::read() >> 11 & 0x1F);
        regs::icc_sre_el2::write(regs::ICC_SRE_EL2_ON);
        core::arch::asm!("isb", options(nostack));
        regs::ich_hcr_el2::write(regs::ICH_HCR_TC);
        core::arch::asm!(
            "dsb sy",
            "tlbi vmalls12e1",
            "dsb sy",
            "isb",
            options(nostack)
        );
    }
    if start != 0 {
        console::enable(p);
        console::say(
            p,
            format_args!(
                "hyp: partition {} starts on core {core} (cores {:#x}, RAM {:#x}+{:#x}) at EL1",
                p.letter(),
                p.cores,
                p.ram.base,
                p.ram.size
            ),
        );
    }
    end_active_priorities();
    // SAFETY: this core's EL2 state is its partition's (above) and the
    // monitor reset its EL1 registers for a fresh start.
    unsafe { enter_el1(entry, arg) }
}

/// A Linux stopped in the middle of an interrupt (a partition's restart,
/// or the last Linux on this core) left its priority active in the core's
/// Group 1 CPU interface, and only a Non-secure end of interrupt drops it:
/// the layer, Non-secure, ends every active priority before Linux starts
/// (the monitor's stub does this where there is no layer).
fn end_active_priorities() {
    for _ in 0..32 {
        if regs::icc_ap1r0_el1::read() == 0 {
            break;
        }
        // SAFETY: an end of interrupt with INTID 0 drops the highest active
        // priority of this core's Non-secure Group 1; nothing of the
        // partition runs yet.
        unsafe {
            regs::icc_eoir1_el1::write(0);
            core::arch::asm!("isb", options(nostack));
        }
    }
}

/// Stops this core for good (the layer cannot run it).
fn park() -> ! {
    loop {
        // SAFETY: waiting has no memory effects.
        unsafe { core::arch::asm!("wfe", options(nomem, nostack)) };
    }
}

/// The partition running on this core.
fn this_partition(core: usize) -> (&'static Global, &'static Partition) {
    let g = global();
    let index = g.partitions.of_core(core).expect("checked at entry");
    (
        g,
        g.partitions.get(index).expect("of_core names a partition"),
    )
}

/// This core's index (checked at entry).
fn this_core() -> usize {
    (regs::mpidr_el1::read() & 0xFF) as usize
}

const _: () = assert!(MAX_CORES <= 256);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    console::emergency(format_args!("hyp: PANIC: {info}"));
    park()
}
