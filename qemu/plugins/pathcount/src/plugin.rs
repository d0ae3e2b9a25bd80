//! The plugin proper: a per-core count of firmware instructions and a log of marker hits.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::plugin::{HasCallbacks, Register};
use qemu_plugin::{
    CallbackFlags, PluginId, RegisterDescriptor, TranslationBlock, qemu_plugin_get_registers,
    qemu_plugin_register_atexit_cb, register,
};

use crate::{Config, parse_args};

/// The register that tells the cores apart. QEMU 10.0 does not offer
/// MPIDR_EL1 to plugins; VMPIDR_EL2 resets to MPIDR_EL1's value, and nothing
/// writes it here (Tandem has no EL2, and Linux runs at EL1).
const AFFINITY_REGISTER: &str = "VMPIDR_EL2";

/// PSTATE as the GDB stub names it; bits 3:2 are the exception level.
const PSTATE_REGISTER: &str = "cpsr";

/// What every callback shares.
struct State {
    config: Config,
    /// Each core's count of counted instructions so far.
    counts: Box<[AtomicU64]>,
    /// `AFFINITY_REGISTER`, read to learn which core runs a block.
    affinity: OnceLock<RegisterDescriptor<'static>>,
    /// `PSTATE_REGISTER`, read at marker hits.
    pstate: OnceLock<RegisterDescriptor<'static>>,
    log: Mutex<Log>,
}

/// The value of register `name` of the core running the current callback,
/// its descriptor looked up once into `cell`.
fn read(cell: &OnceLock<RegisterDescriptor<'static>>, name: &str) -> Option<u64> {
    let register = match cell.get() {
        Some(register) => register,
        // Registers can be listed only where a vCPU runs: here, not at vCPU
        // init (QEMU 10.0 lists none there).
        None => {
            let found = qemu_plugin_get_registers()
                .ok()?
                .into_iter()
                .find(|r| r.name == name)?;
            cell.get_or_init(|| found)
        }
    };
    let mut bytes = [0u8; 8];
    let value = register.read().ok()?;
    bytes.get_mut(..value.len())?.copy_from_slice(&value);
    Some(u64::from_le_bytes(bytes))
}

impl State {
    /// The core executing the current callback, from its affinity.
    ///
    /// Not the callback's `vcpu` argument: without CF_PARALLEL (so under
    /// `-icount`) QEMU compiles into each block the index of the vCPU that
    /// translated it, and all vCPUs share the blocks.
    fn core(&self) -> Option<usize> {
        let value = read(&self.affinity, AFFINITY_REGISTER)?;
        // Bit 31 is RES1 in the MPIDR format; Aff0 is the core on `virt`.
        let core = (value & 0xff) as usize;
        (value & (1 << 31) != 0 && core < self.counts.len()).then_some(core)
    }

    /// Whether the current callback runs at EL0, from PSTATE's mode bits.
    /// A marker hit at EL0 is a user program's code that happens to lie at
    /// a firmware address, never the firmware (whose markers run at S-EL1
    /// and EL3).
    fn at_el0(&self) -> Option<bool> {
        Some(read(&self.pstate, PSTATE_REGISTER)? & 0b1100 == 0)
    }

    fn counted(&self, address: u64) -> bool {
        self.config.counted.iter().any(|r| r.contains(&address))
    }

    fn fail(&self, why: String) {
        let mut log = self
            .log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        log.error.get_or_insert(why);
    }
}

/// Where hits go: the CSV, or the first error.
struct Log {
    out: BufWriter<File>,
    error: Option<String>,
}

impl Log {
    fn hit(&mut self, core: usize, marker: &str, instructions: u64) {
        if self.error.is_none()
            && let Err(e) = writeln!(self.out, "{core},{marker},{instructions}")
        {
            self.error = Some(format!("writing: {e}"));
        }
    }
}

#[derive(Default)]
struct PathCount {
    state: Option<Arc<State>>,
    markers: HashMap<u64, Arc<str>>,
}

impl Register for PathCount {
    fn register(&mut self, id: PluginId, args: &Args, info: &Info) -> qemu_plugin::Result<()> {
        let fail = |message: String| {
            eprintln!("tandem-pathcount: {message}");
            qemu_plugin::Error::PluginInstanceSetError
        };
        let Some(system) = &info.system else {
            return Err(fail("needs system emulation".into()));
        };
        let cores = usize::try_from(system.max_vcpus)
            .map_err(|_| fail(format!("bad vCPU count {}", system.max_vcpus)))?;
        let config = parse_args(&args.raw).map_err(fail)?;
        let file = File::create(&config.out)
            .map_err(|e| fail(format!("cannot create {}: {e}", config.out.display())))?;
        let mut out = BufWriter::new(file);
        writeln!(out, "core,marker,instructions")
            .map_err(|e| fail(format!("cannot write {}: {e}", config.out.display())))?;
        self.markers = config
            .markers
            .iter()
            .map(|m| (m.address, Arc::from(m.name.as_str())))
            .collect();
        let state = Arc::new(State {
            config,
            counts: (0..cores).map(|_| AtomicU64::new(0)).collect(),
            affinity: OnceLock::new(),
            pstate: OnceLock::new(),
            log: Mutex::new(Log { out, error: None }),
        });
        self.state = Some(state.clone());
        qemu_plugin_register_atexit_cb(id, move |_| {
            let path = state.config.out.display();
            let mut log = state
                .log
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if state.affinity.get().is_none() {
                log.error
                    .get_or_insert(format!("no vCPU offered {AFFINITY_REGISTER} to read"));
            }
            // QEMU is exiting and can no longer be told: say it on stderr;
            // the harness refuses a CSV that does not end in `end`.
            let result = match log.error.take() {
                Some(e) => Err(e),
                None => writeln!(log.out, "-1,end,0")
                    .and_then(|()| log.out.flush())
                    .map_err(|e| format!("writing: {e}")),
            };
            if let Err(e) = result {
                eprintln!("tandem-pathcount: {path}: {e}");
            }
        })
    }
}

impl HasCallbacks for PathCount {
    fn on_translation_block_translate(
        &mut self,
        _id: PluginId,
        tb: TranslationBlock,
    ) -> qemu_plugin::Result<()> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        // Only the firmware's code is counted: a path never leaves it, and
        // reading which core runs a block (a register read) is not cheap.
        if !state.counted(tb.vaddr()) {
            if let Some(marked) = tb
                .instructions()
                .find(|i| self.markers.contains_key(&i.vaddr()))
            {
                // Only if a block starts outside the counted code and runs
                // into a marker: its hits could not be counted.
                state.fail(format!(
                    "marker at {:#x} in an uncounted block",
                    marked.vaddr()
                ));
            }
            return Ok(());
        }
        let length = tb.size();
        for (index, insn) in tb.instructions().enumerate() {
            if let Some(name) = self.markers.get(&insn.vaddr()) {
                let (name, state) = (name.clone(), state.clone());
                // The block's whole length is already counted when its
                // marker runs; what follows the marker has not run yet.
                let not_yet = (length - index) as u64;
                insn.register_execute_callback_flags(
                    move |_| match (state.core(), state.at_el0()) {
                        (_, Some(true)) => {}
                        (Some(core), Some(false)) => {
                            let counted = state.counts[core].load(Ordering::Relaxed);
                            // QEMU runs a block's callbacks before those of
                            // its instructions; if ever not, say so.
                            let Some(count) = counted.checked_sub(not_yet) else {
                                return state.fail("a marker ran before its block counted".into());
                            };
                            state
                                .log
                                .lock()
                                .unwrap_or_else(|poisoned| poisoned.into_inner())
                                .hit(core, &name, count);
                        }
                        _ => {
                            state.fail("cannot tell which core hit a marker, or at which EL".into())
                        }
                    },
                    CallbackFlags::QEMU_PLUGIN_CB_R_REGS,
                );
            }
        }
        // Each executed block adds its length to its core's count as it
        // starts. (A callback, not an inline add: those index the count by
        // the translating vCPU, see `State::core`.)
        let state = state.clone();
        tb.register_execute_callback_flags(
            move |_| match state.core() {
                Some(core) => {
                    state.counts[core].fetch_add(length as u64, Ordering::Relaxed);
                }
                None => state.fail("cannot tell which core runs a block".into()),
            },
            CallbackFlags::QEMU_PLUGIN_CB_R_REGS,
        );
        Ok(())
    }
}

register!(PathCount::default());
