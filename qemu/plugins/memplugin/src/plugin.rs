//! The plugin proper: QEMU's translation and execution callbacks, the memory model behind one lock, the stalls charged back.

use std::cell::UnsafeCell;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::plugin::{HasCallbacks, Register};
use qemu_plugin::sys::{
    qemu_plugin_cb_flags, qemu_plugin_get_hwaddr, qemu_plugin_hwaddr_is_io,
    qemu_plugin_hwaddr_phys_addr, qemu_plugin_insn, qemu_plugin_insn_data, qemu_plugin_insn_haddr,
    qemu_plugin_insn_size, qemu_plugin_insn_vaddr, qemu_plugin_mem_is_store, qemu_plugin_mem_rw,
    qemu_plugin_mem_size_shift, qemu_plugin_meminfo_t, qemu_plugin_register_vcpu_insn_exec_cb,
    qemu_plugin_register_vcpu_mem_cb, qemu_plugin_register_vcpu_tb_exec_cb,
    qemu_plugin_register_vcpu_tb_trans_cb, qemu_plugin_tb, qemu_plugin_tb_get_insn,
    qemu_plugin_tb_n_insns, qemu_plugin_tb_vaddr,
};
use qemu_plugin::{
    PluginId, RegisterDescriptor, qemu_plugin_get_registers, qemu_plugin_register_atexit_cb,
    register,
};
use tandem_memmodel::{
    AccessKind, BlockFetch, ExceptionLevel, MemoryModel, ModelOptions, Profile, RareInstruction,
    Resolution, TableReader, TranslationMismatch, VirtualAccess, WindowCounters, classify,
};

use crate::{
    Config, MemInfo, Mode, core_stats_json, exception_level, json_string, parse_args, profile_json,
    translation_context, window_json,
};

unsafe extern "C" {
    /// glibc's symbol lookup; with `RTLD_DEFAULT` it searches the process
    /// (QEMU exports its plugin API with `--dynamic-list`).
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    /// The calling thread's id (never 0 on glibc: a pointer to its
    /// descriptor), cheaper than a `thread_local!` in a shared object,
    /// which goes through `__tls_get_addr`.
    fn pthread_self() -> usize;
}

/// glibc's `RTLD_DEFAULT`: the global scope.
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

/// Tandem's QEMU patch 0006 entry points, found in QEMU at install (a
/// QEMU without them fails the install with a message, not a missing
/// symbol at load).
#[derive(Clone, Copy)]
struct Tandem {
    stall_ns: unsafe extern "C" fn(u64) -> bool,
    clock_ns: unsafe extern "C" fn() -> i64,
    mem_mmu_idx: unsafe extern "C" fn(qemu_plugin_meminfo_t) -> c_uint,
    fetch_mmu_idx: unsafe extern "C" fn() -> c_int,
    read_physical: ReadPhysical,
}

/// `qemu_plugin_tandem_read_physical(addr, secure, buf, len)` (patch 0006):
/// reads guest RAM at a physical address of the running vCPU's secure or
/// non-secure space.
type ReadPhysical = unsafe extern "C" fn(u64, bool, *mut c_void, usize) -> bool;

/// The guest's translation tables as the running vCPU sees them, for the
/// model's walks: each descriptor read from guest RAM through QEMU, in the
/// space the walk names. A descriptor outside RAM (or at a derived table's
/// address, above any real one) cannot be read: the model derives the rest
/// of that walk and counts it (`walks_unreadable`).
struct GuestTables {
    read_physical: ReadPhysical,
}

impl TableReader for GuestTables {
    fn read_descriptor(&mut self, physical_address: u64, secure: bool) -> Option<u64> {
        let mut bytes = [0u8; 8];
        // SAFETY: called from a vCPU callback (the model walks only inside
        // on_access and on_block), as the entry point requires; it writes
        // at most the 8 bytes asked for into `bytes`.
        let read =
            unsafe { (self.read_physical)(physical_address, secure, bytes.as_mut_ptr().cast(), 8) };
        // Little-endian: the guests Tandem runs walk with SCTLR.EE clear.
        read.then(|| u64::from_le_bytes(bytes))
    }
}

fn lookup(name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads
    // the process's symbol tables.
    let found = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if found.is_null() {
        Err(format!(
            "QEMU has no {} (needs Tandem's QEMU with qemu/patches/0006; run make build)",
            name.to_string_lossy()
        ))
    } else {
        Ok(found)
    }
}

impl Tandem {
    /// Checks [`MemInfo::decode`] against QEMU's own functions for every
    /// value a `qemu_plugin_meminfo_t` can take (12 bits of `MemOp`, 4 of
    /// MMU index, the three directions): the shell decodes in place of
    /// three calls per access, so a QEMU that packs it otherwise must fail
    /// here, not price accesses wrongly.
    fn check_meminfo(&self) -> Result<(), String> {
        for rw in 1u32..=3 {
            for oi in 0u32..1 << 16 {
                let info = oi | rw << 16;
                let decoded = MemInfo::decode(info);
                // SAFETY: these read only their argument (api.c and patch 0006).
                let qemu = unsafe {
                    MemInfo {
                        size_shift: qemu_plugin_mem_size_shift(info),
                        store: qemu_plugin_mem_is_store(info),
                        mmu_idx: (self.mem_mmu_idx)(info),
                    }
                };
                if decoded != qemu {
                    return Err(format!(
                        "this QEMU packs memory-access info {info:#x} as {qemu:?}, the plugin reads {decoded:?}"
                    ));
                }
            }
        }
        Ok(())
    }

    fn find() -> Result<Self, String> {
        let stall = lookup(c"qemu_plugin_tandem_stall_ns")?;
        let clock = lookup(c"qemu_plugin_tandem_clock_ns")?;
        let mem = lookup(c"qemu_plugin_tandem_mem_mmu_idx")?;
        let fetch = lookup(c"qemu_plugin_tandem_fetch_mmu_idx")?;
        let read = lookup(c"qemu_plugin_tandem_read_physical")?;
        // SAFETY: each symbol is the function patch 0006 declares in
        // include/qemu/qemu-plugin.h with exactly this C signature.
        unsafe {
            Ok(Self {
                stall_ns: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u64) -> bool>(
                    stall,
                ),
                clock_ns: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> i64>(clock),
                mem_mmu_idx: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(qemu_plugin_meminfo_t) -> c_uint,
                >(mem),
                fetch_mmu_idx: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(
                    fetch,
                ),
                read_physical: std::mem::transmute::<*mut c_void, ReadPhysical>(read),
            })
        }
    }
}

/// One block as translated: what its execution fetches.
///
/// Read by every execution of the block (`on_block`), and that read was
/// the shell's dearest host cache miss (half of `on_block`'s samples under
/// `perf`): each block was a box of its own, scattered among QEMU's
/// allocations. So a block is 32 bytes, aligned to never straddle a host
/// cache line, and blocks live side by side in [`BlockArena`]'s chunks, in
/// the order they were translated (a path's blocks are mostly translated
/// together and run together).
#[repr(C, align(32))]
struct Block {
    /// Its number among the blocks translated (from 1): an access
    /// callback names its block by it.
    serial: u64,
    virtual_address: u64,
    /// The host address of its first instruction (QEMU 10.0's plugin API
    /// gives no physical address for code): guest RAM is mapped 2 MiB
    /// aligned, so its low bits, which choose the cache set, are the
    /// physical address's, and each guest line has one host address.
    host_address: u64,
    /// Its bytes and instructions (QEMU's blocks hold at most 512
    /// instructions of at most 4 bytes: both fit 16 bits).
    bytes: u16,
    instructions: u16,
    el: ExceptionLevel,
}

/// Blocks per chunk of [`BlockArena`] (64 KiB of blocks).
const ARENA_CHUNK: usize = 2048;

/// Where translated blocks live: chunks filled in translation order, never
/// freed (QEMU may run a block's callback as long as the block exists, and
/// the shell is not told when it is dropped: a leaked box lived as long).
struct BlockArena {
    /// The chunk being filled; its capacity is never exceeded, so a push
    /// never moves the blocks already in it.
    chunk: Vec<Block>,
}

impl BlockArena {
    /// Keeps `block` for the rest of the process and returns where it is.
    fn keep(&mut self, block: Block) -> *const Block {
        if self.chunk.len() == self.chunk.capacity() {
            // The full chunk is leaked: its blocks stay where they are.
            std::mem::forget(std::mem::replace(
                &mut self.chunk,
                Vec::with_capacity(ARENA_CHUNK),
            ));
        }
        self.chunk.push(block);
        self.chunk.last().expect("just pushed")
    }
}

static ARENA: Mutex<BlockArena> = Mutex::new(BlockArena { chunk: Vec::new() });

/// A rare instruction found at translation.
struct Rare {
    instruction: RareInstruction,
    /// Its block's serial.
    serial: u64,
    /// Its index in its block (the clock at it).
    index: u64,
}

/// A window a guest marked on one core (`HINT #112` .. `HINT #113`).
pub struct Window {
    /// The core that marked it.
    pub core: usize,
    /// Its number among that core's windows, from 0.
    pub index: u64,
    /// Where it ended, in ns of the core's time.
    pub to_ns: u64,
    /// The core's counters over it (their `from_ns` is where it began).
    pub counters: WindowCounters,
}

/// Where each vCPU is in the block it runs.
#[derive(Clone, Copy, Default)]
struct CoreClock {
    /// The serial of the block whose callback ran last on this core.
    block: u64,
    /// The clock at the block's first instruction.
    block_start: u64,
    /// Stalls charged since then.
    charged: u64,
}

/// Blocks translated so far, plus one: the next block's serial.
static BLOCK_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Instructions in the block QEMU makes of an I/O instruction it runs
/// again (`cpu_io_recompile`: one on Arm, which has no delay slots).
const QEMU_IO_BLOCK_INSNS: u64 = 1;

/// An access callback's userdata: its block's serial and its
/// instruction's index in the block (QEMU's blocks hold at most 512).
fn access_userdata(serial: u64, index: u64) -> u64 {
    serial << 16 | index
}

/// The parts [`access_userdata`] packed.
fn access_userdata_parts(userdata: u64) -> (u64, u64) {
    (userdata >> 16, userdata & 0xffff)
}

/// The shell's own counters (the model keeps the rest).
#[derive(Default)]
struct Counters {
    blocks: u64,
    accesses: u64,
    /// Accesses QEMU made with a stage 2 or physical MMU index (skipped).
    other_accesses: u64,
    rare_events: u64,
    stalls: u64,
    stall_ns: u64,
    /// Per vCPU (probe=vcpu): blocks, and blocks whose callback's index
    /// was not the core VMPIDR_EL2 names.
    probe_blocks: Vec<u64>,
    probe_mismatched: Vec<u64>,
    probe_unreadable: u64,
}

struct Inner {
    model: Option<MemoryModel>,
    clocks: Vec<CoreClock>,
    counters: Counters,
    /// X0..X30's descriptors, looked up at the first rare instruction
    /// (registers can be listed only where a vCPU runs).
    x_registers: Option<Vec<RegisterDescriptor<'static>>>,
    affinity: Option<RegisterDescriptor<'static>>,
    /// Windows the guest closed, in the order it closed them.
    windows: Vec<Window>,
    /// Per core: windows closed so far, and whether one is open.
    window_state: Vec<(u64, bool)>,
    error: Option<String>,
}

/// The shell's state, used by one thread only: per-core timing runs every
/// vCPU on QEMU's one round-robin thread, the first block callback claims
/// it (a block callback from a second vCPU thread, as under
/// `thread=multi`, stops QEMU), and QEMU's exit handlers, which report,
/// run once every vCPU is paused. A lock would cost a sixth of the
/// plugin's time for nothing.
struct Exclusive {
    /// `pthread_self` of the claimant, 0 until a block callback claims.
    owner: AtomicUsize,
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` is reached only through `Exclusive::claim`, which lets
// one thread (the claimant) in, through `Exclusive::claimed`, called only
// from callbacks that follow a block callback on the same thread (see
// there), and through `Exclusive::at_exit`, called when no vCPU runs (see
// the type's comment).
unsafe impl Sync for Exclusive {}

impl Exclusive {
    /// The state, from a block callback: the first claims it for its
    /// thread, a later one from another thread stops QEMU.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn claim(&self) -> &mut Inner {
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { pthread_self() };
        if self.owner.load(Ordering::Acquire) != me
            && self
                .owner
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            die(
                "callbacks from two host threads: the model needs per-core timing's one vCPU thread",
            );
        }
        // SAFETY: only the claiming thread gets here (checked above), and
        // each callback holds the reference for its own duration only:
        // callbacks do not nest.
        unsafe { &mut *self.inner.get() }
    }

    /// The state, from an access or instruction callback, unchecked: QEMU
    /// calls a block's callback (`on_block`, registered on every block
    /// the model instruments) before any access or instruction callback of
    /// that block's execution, on the same thread, and that call checked
    /// the thread (and stopped QEMU if it was not the claimant's).
    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn claimed(&self) -> &mut Inner {
        // SAFETY: see above; callbacks do not nest, so no other reference
        // lives meanwhile.
        unsafe { &mut *self.inner.get() }
    }

    /// The state, when QEMU exits (every vCPU paused).
    fn at_exit(&self) -> &Inner {
        // SAFETY: QEMU runs its exit handlers after pausing the vCPUs (or
        // on the vCPU thread itself, when `die` exits from a callback), so
        // no callback holds a reference meanwhile.
        unsafe { &*self.inner.get() }
    }
}

struct Shell {
    config: Config,
    tandem: Option<Tandem>,
    cores: usize,
    inner: Exclusive,
}

static SHELL: OnceLock<Shell> = OnceLock::new();

fn shell() -> &'static Shell {
    SHELL.get().expect("callbacks run only after install")
}

impl Shell {
    /// The vCPU's clock (patch 0006); stops QEMU outside per-core timing.
    fn clock(&self, tandem: &Tandem) -> u64 {
        // SAFETY: called from a vCPU callback, as the entry point requires.
        let clock = unsafe { (tandem.clock_ns)() };
        if clock < 0 {
            die("needs per-core timing (-icount shift=0,sleep=off,quantum=N): no vCPU clock");
        }
        clock as u64
    }

    /// Charges `stall` to the running vCPU.
    #[inline]
    fn charge(&self, tandem: &Tandem, inner: &mut Inner, core: usize, stall: u64) {
        if stall == 0 {
            return;
        }
        inner.clocks[core].charged += stall;
        inner.counters.stalls += 1;
        inner.counters.stall_ns += stall;
        // SAFETY: called from a vCPU callback, as the entry point requires.
        if !unsafe { (tandem.stall_ns)(stall) } {
            die("QEMU refused a stall: not in per-core timing");
        }
    }
}

/// Ends QEMU from a callback: the model cannot go on, and a run that went
/// on without it would look like one with it.
fn die(why: &str) -> ! {
    eprintln!("tandem-memplugin: {why}");
    std::process::exit(1)
}

fn read_u64(register: &RegisterDescriptor<'static>) -> Option<u64> {
    let value = register.read().ok()?;
    let mut bytes = [0u8; 8];
    bytes.get_mut(..value.len())?.copy_from_slice(&value);
    Some(u64::from_le_bytes(bytes))
}

// --- execution callbacks -----------------------------------------------------

/// A block starts: its fetch through the L1 instruction cache.
unsafe extern "C" fn on_block(vcpu: c_uint, userdata: *mut c_void) {
    // SAFETY: userdata is the `Block` registered with this callback, kept
    // in `ARENA` for the rest of the process and never written again.
    let block = unsafe { &*(userdata as *const Block) };
    let shell = shell();
    let Some(tandem) = &shell.tandem else { return };
    let core = vcpu as usize;
    // QEMU counts a block's instructions as it starts.
    let start = shell
        .clock(tandem)
        .saturating_sub(u64::from(block.instructions));
    let inner = shell.inner.claim();
    inner.counters.blocks += 1;
    inner.clocks[core] = CoreClock {
        block: block.serial,
        block_start: start,
        charged: 0,
    };
    let Some(model) = inner.model.as_mut() else {
        return;
    };
    let stall = model.instruction_fetch_with(
        core,
        start,
        &BlockFetch {
            virtual_address: block.virtual_address,
            physical_address: block.host_address,
            bytes: u32::from(block.bytes),
            el: block.el,
        },
        &mut GuestTables {
            read_physical: tandem.read_physical,
        },
    );
    shell.charge(tandem, inner, core, stall);
}

/// A load or store of instruction number `userdata` of its block.
unsafe extern "C" fn on_access(
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    userdata: *mut c_void,
) {
    let (serial, index) = access_userdata_parts(userdata as u64);
    let shell = shell();
    let Some(tandem) = &shell.tandem else { return };
    let core = vcpu as usize;
    let decoded = MemInfo::decode(info);
    let inner = shell.inner.claimed();
    inner.counters.accesses += 1;
    let Some(el) = exception_level(decoded.mmu_idx) else {
        inner.counters.other_accesses += 1;
        return;
    };
    let clock = inner.clocks[core];
    let now = if clock.block == serial {
        clock.block_start + index + clock.charged
    } else {
        // A block without a block callback: QEMU runs an I/O instruction
        // met in a block's middle again as a block of its own with memory
        // callbacks only (cpu_io_recompile, CF_MEMI_ONLY). Its clock,
        // which counted its instructions as it started, says when.
        shell.clock(tandem).saturating_sub(QEMU_IO_BLOCK_INSNS) + index
    };
    let Some(model) = inner.model.as_mut() else {
        return;
    };
    let access = VirtualAccess {
        virtual_address: vaddr,
        size: 1u32 << decoded.size_shift,
        kind: if decoded.store {
            AccessKind::Store
        } else {
            AccessKind::Load
        },
        el,
        context: translation_context(decoded.mmu_idx),
    };
    let priced = model.access(
        core,
        now,
        &access,
        |vaddr| ask_hwaddr(info, vaddr),
        &mut GuestTables {
            read_physical: tandem.read_physical,
        },
    );
    let stall = priced.unwrap_or_else(|mismatch| {
        let TranslationMismatch {
            virtual_address,
            cached,
            resolved:
                Resolution {
                    physical_address,
                    io,
                },
        } = mismatch;
        die(&format!(
            "verify=hwaddr: the cached physical address of {virtual_address:#x} (core {core}, \
             info {info:#x}) is {cached:#x}, QEMU says {physical_address:#x} (io {io})"
        ))
    });
    shell.charge(tandem, inner, core, stall);
}

/// QEMU's physical address of an access and whether it is I/O (`None`:
/// QEMU cannot say).
#[inline(never)]
fn ask_hwaddr(info: qemu_plugin_meminfo_t, vaddr: u64) -> Option<Resolution> {
    // SAFETY: info and vaddr are the running access callback's arguments;
    // the hwaddr QEMU returns lives until the callback returns.
    unsafe {
        let hwaddr = qemu_plugin_get_hwaddr(info, vaddr);
        if hwaddr.is_null() {
            None
        } else {
            Some(Resolution {
                physical_address: qemu_plugin_hwaddr_phys_addr(hwaddr),
                io: qemu_plugin_hwaddr_is_io(hwaddr),
            })
        }
    }
}

/// A window marker on `core` at `now`: opening starts the model's window
/// of counters there (one open already is started again); closing one
/// that is open records it.
fn mark_window(inner: &mut Inner, core: usize, open: bool, now: u64) {
    let Some(model) = inner.model.as_mut() else {
        return;
    };
    let (closed, is_open) = &mut inner.window_state[core];
    if open {
        model.start_window(core, now);
        *is_open = true;
    } else if *is_open {
        inner.windows.push(Window {
            core,
            index: *closed,
            to_ns: now,
            counters: model.window_counters(core),
        });
        *closed += 1;
        *is_open = false;
    }
}

/// A write of a translation register or a TLBI: read its `Xt`, tell the model.
unsafe extern "C" fn on_rare(vcpu: c_uint, userdata: *mut c_void) {
    // SAFETY: userdata is the leaked `Rare` registered with this callback.
    let rare = unsafe { &*(userdata as *const Rare) };
    let shell = shell();
    let Some(tandem) = &shell.tandem else { return };
    let core = vcpu as usize;
    let inner = shell.inner.claimed();
    let value = match rare.instruction.source_register() {
        None => 0,
        Some(n) => {
            if inner.x_registers.is_none() {
                let found = qemu_plugin_get_registers().unwrap_or_default();
                let mut x = Vec::with_capacity(31);
                for i in 0..31 {
                    let name = format!("x{i}");
                    match found.iter().find(|r| r.name == name) {
                        Some(r) => x.push(r.clone()),
                        None => die(&format!("QEMU offers no register {name} to read")),
                    }
                }
                inner.x_registers = Some(x);
            }
            let registers = inner.x_registers.as_ref().expect("just filled");
            read_u64(&registers[usize::from(n)])
                .unwrap_or_else(|| die(&format!("cannot read x{n}")))
        }
    };
    inner.counters.rare_events += 1;
    if let RareInstruction::Window { open, every_core } = rare.instruction {
        let clock = inner.clocks[core];
        let now = if clock.block == rare.serial {
            clock.block_start + rare.index + clock.charged
        } else {
            shell.clock(tandem)
        };
        if every_core {
            // Every core's window at the marking core's time (the others'
            // clocks are within the quantum of it).
            for other in 0..inner.clocks.len() {
                mark_window(inner, other, open, now);
            }
        } else {
            mark_window(inner, core, open, now);
        }
        return;
    }
    // The model forgets the translations it may change (its filter and
    // page caches: `tandem_memmodel::pages`).
    let Some(model) = inner.model.as_mut() else {
        return;
    };
    let _ = rare.index; // the event takes no time argument
    let event = rare
        .instruction
        .event(value)
        .expect("a window marker returned above");
    let stall = model.system_event(core, &event);
    shell.charge(tandem, inner, core, stall);
}

/// probe=vcpu: which core really runs this block (VMPIDR_EL2's Aff0).
unsafe extern "C" fn on_probe_block(vcpu: c_uint, _userdata: *mut c_void) {
    let shell = shell();
    let inner = shell.inner.claim();
    if inner.affinity.is_none() {
        inner.affinity = qemu_plugin_get_registers()
            .ok()
            .and_then(|all| all.into_iter().find(|r| r.name == "VMPIDR_EL2"));
    }
    let core = inner
        .affinity
        .as_ref()
        .and_then(read_u64)
        .filter(|value| value & (1 << 31) != 0)
        .map(|value| (value & 0xff) as usize);
    let vcpu = vcpu as usize;
    let counters = &mut inner.counters;
    match core {
        Some(core) if vcpu < counters.probe_blocks.len() => {
            counters.probe_blocks[vcpu] += 1;
            if core != vcpu {
                counters.probe_mismatched[vcpu] += 1;
            }
        }
        _ => counters.probe_unreadable += 1,
    }
}

// --- translation ---------------------------------------------------------------

unsafe extern "C" fn on_translate(_id: PluginId, tb: *mut qemu_plugin_tb) {
    let shell = shell();
    if shell.tandem.is_none() {
        // SAFETY: tb is the block being translated, valid in this callback.
        unsafe {
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(on_probe_block),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_R_REGS,
                std::ptr::null_mut(),
            );
        }
        return;
    }
    let tandem = shell.tandem.expect("checked");
    // SAFETY: tb and its instructions are valid during this callback; the
    // userdata pointers handed to QEMU are leaked and so outlive the block.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        let serial = BLOCK_SERIAL.fetch_add(1, Ordering::Relaxed);
        let mut bytes = 0u32;
        let mut host_address = 0u64;
        for i in 0..n {
            let insn: *mut qemu_plugin_insn = qemu_plugin_tb_get_insn(tb, i);
            let size = qemu_plugin_insn_size(insn);
            bytes += size as u32;
            if i == 0 {
                host_address = qemu_plugin_insn_haddr(insn) as u64;
                if host_address == 0 {
                    host_address = qemu_plugin_insn_vaddr(insn);
                }
            }
            // Every instruction's data accesses, with its block and index.
            qemu_plugin_register_vcpu_mem_cb(
                insn,
                Some(on_access),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                access_userdata(serial, i as u64) as *mut c_void,
            );
            if size == 4 {
                let mut word = [0u8; 4];
                if qemu_plugin_insn_data(insn, word.as_mut_ptr().cast(), 4) == 4
                    && let Some(instruction) = classify(u32::from_le_bytes(word))
                {
                    let rare = Box::leak(Box::new(Rare {
                        instruction,
                        serial,
                        index: i as u64,
                    }));
                    qemu_plugin_register_vcpu_insn_exec_cb(
                        insn,
                        Some(on_rare),
                        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_R_REGS,
                        (rare as *mut Rare).cast(),
                    );
                }
            }
        }
        let el =
            exception_level((tandem.fetch_mmu_idx)().max(0) as u32).unwrap_or(ExceptionLevel::El3);
        let block = ARENA
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .keep(Block {
                serial,
                virtual_address: qemu_plugin_tb_vaddr(tb),
                host_address,
                bytes: u16::try_from(bytes).unwrap_or_else(|_| die("a block of over 64 KiB")),
                instructions: u16::try_from(n)
                    .unwrap_or_else(|_| die("a block of over 65535 instructions")),
                el,
            });
        qemu_plugin_register_vcpu_tb_exec_cb(
            tb,
            Some(on_block),
            qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
            block.cast_mut().cast(),
        );
    }
}

// --- install and exit ----------------------------------------------------------

fn report(shell: &Shell) -> Result<(), String> {
    let inner = shell.inner.at_exit();
    let mut text = String::from("{\n");
    match &shell.config.mode {
        Mode::VcpuProbe => {
            let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
            let c = &inner.counters;
            text += "  \"probe\": \"vcpu\",\n";
            text += &format!("  \"blocks\": [{}],\n", list(&c.probe_blocks));
            text += &format!("  \"mismatched\": [{}],\n", list(&c.probe_mismatched));
            text += &format!("  \"unreadable\": {}\n", c.probe_unreadable);
        }
        Mode::Model { quantum_ns, .. } => {
            let model = inner.model.as_ref().expect("model mode has a model");
            let c = &inner.counters;
            text += &format!("  \"profile\": {},\n", profile_json(model.profile()));
            text += &format!("  \"quantum_ns\": {quantum_ns},\n");
            let cores: Vec<String> = (0..model.cores())
                .map(|i| format!("    {}", core_stats_json(model.core_stats(i))))
                .collect();
            text += &format!("  \"cores\": [\n{}\n  ],\n", cores.join(",\n"));
            let windows: Vec<String> = inner
                .windows
                .iter()
                .map(|w| format!("    {}", window_json(w.core, w.index, w.to_ns, &w.counters)))
                .collect();
            text += &if windows.is_empty() {
                "  \"windows\": [],\n".to_owned()
            } else {
                format!("  \"windows\": [\n{}\n  ],\n", windows.join(",\n"))
            };
            let (walks_read, walks_unreadable) = (0..model.cores())
                .map(|i| model.core_stats(i))
                .fold((0, 0), |(read, unreadable), s| {
                    (read + s.walks_read, unreadable + s.walks_unreadable)
                });
            text += &format!(
                "  \"walks\": {{\"read\": {walks_read}, \"unreadable\": {walks_unreadable}}},\n"
            );
            let bus = model.bus_stats();
            text += &format!(
                "  \"bus\": {{\"requests\": {}, \"wait_ns\": {}, \"beyond_history\": {}}},\n",
                bus.requests, bus.wait_ns, bus.beyond_history
            );
            text += &format!(
                concat!(
                    "  \"shell\": {{\"blocks\": {}, \"accesses\": {}, \"other_accesses\": {}, ",
                    "\"rare_events\": {}, \"stalls\": {}, \"stall_ns\": {}, ",
                    "\"filtered_accesses\": {}}}\n"
                ),
                c.blocks,
                c.accesses,
                c.other_accesses,
                c.rare_events,
                c.stalls,
                c.stall_ns,
                (0..model.cores())
                    .map(|i| model.filtered_accesses(i))
                    .sum::<u64>()
            );
        }
    }
    if let Some(error) = &inner.error {
        text = text.trim_end().trim_end_matches('}').to_owned();
        text += &format!(",\n  \"error\": {}\n", json_string(error));
    }
    text += "}\n";
    let out = &shell.config.out;
    File::create(out)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", out.display()))
}

#[derive(Default)]
struct MemPlugin;

impl HasCallbacks for MemPlugin {}

impl Register for MemPlugin {
    /// Registers only what the shell uses (the crate's default would add a
    /// callback for every event, each taking a global lock).
    fn register_default(
        &mut self,
        id: PluginId,
        args: &Args,
        info: &Info,
    ) -> qemu_plugin::Result<()> {
        let fail = |message: String| {
            eprintln!("tandem-memplugin: {message}");
            qemu_plugin::Error::PluginInstanceSetError
        };
        let Some(system) = &info.system else {
            return Err(fail("needs system emulation".into()));
        };
        let cores = usize::try_from(system.max_vcpus)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| fail(format!("bad vCPU count {}", system.max_vcpus)))?;
        let config = parse_args(&args.raw).map_err(fail)?;
        let (tandem, model) = match &config.mode {
            Mode::VcpuProbe => (None, None),
            Mode::Model {
                profile,
                quantum_ns,
            } => {
                let tandem = Tandem::find().map_err(fail)?;
                tandem.check_meminfo().map_err(fail)?;
                let profile = Profile::named(profile).map_err(|e| fail(e.to_string()))?;
                let options = ModelOptions {
                    // The cores run up to a quantum (plus a block's
                    // stalls) apart.
                    max_skew_ns: 4 * quantum_ns,
                    // verify=hwaddr: QEMU is asked every time (on_access
                    // stops on a difference).
                    verify_translations: config.verify_hwaddr,
                    ..ModelOptions::default()
                };
                (
                    Some(tandem),
                    Some(MemoryModel::new(profile, cores, options)),
                )
            }
        };
        // Created now, so a bad path fails the boot at once.
        File::create(&config.out)
            .map_err(|e| fail(format!("cannot create {}: {e}", config.out.display())))?;
        if config.check {
            let what = match &model {
                Some(model) => format!(
                    "Tandem's entry points found, profile {} ({})",
                    model.profile().name,
                    model.profile().hash()
                ),
                None => "loaded".to_owned(),
            };
            eprintln!("tandem-memplugin: check: {what}");
            std::process::exit(0);
        }
        let installed = Shell {
            config,
            tandem,
            cores,
            inner: Exclusive {
                owner: AtomicUsize::new(0),
                inner: UnsafeCell::new(Inner {
                    model,
                    clocks: vec![CoreClock::default(); cores],
                    counters: Counters {
                        probe_blocks: vec![0; cores],
                        probe_mismatched: vec![0; cores],
                        ..Counters::default()
                    },
                    x_registers: None,
                    affinity: None,
                    windows: Vec::new(),
                    window_state: vec![(0, false); cores],
                    error: None,
                }),
            },
        };
        if SHELL.set(installed).is_err() {
            return Err(fail("installed twice".into()));
        }
        // SAFETY: registering a plain extern "C" callback for this plugin's id.
        unsafe { qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translate)) };
        qemu_plugin_register_atexit_cb(id, |_| {
            let shell = shell();
            debug_assert!(shell.cores > 0);
            if let Err(e) = report(shell) {
                eprintln!("tandem-memplugin: {e}");
            }
        })
    }
}

register!(MemPlugin);
