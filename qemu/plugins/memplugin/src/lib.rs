//! QEMU TCG plugin: Tandem's memory model (`tandem-memmodel`) priced into each vCPU's own clock in per-core timing.
//!
//! A thin shell: everything that decides a stall lives in
//! `harness/memmodel`, which knows nothing of QEMU. The shell
//!
//! - at translation, registers a callback for each executed block (its
//!   instruction fetch through the L1 instruction cache and the micro
//!   TLB), one for each instruction's memory accesses, and one for each
//!   instruction [`tandem_memmodel::classify`] recognises (a write of a
//!   translation register, a TLBI), which reads its `Xt` when it runs;
//! - feeds each to the one `MemoryModel` of the machine, with the vCPU's
//!   clock at that instruction (the block's start, from
//!   `qemu_plugin_tandem_clock_ns`, plus the instruction's index in the
//!   block and the stalls already charged in it); a data access goes to
//!   `MemoryModel::access` by virtual address, with a closure around
//!   `qemu_plugin_get_hwaddr` that the model calls only when its own
//!   caches cannot give the physical address;
//! - gives the model the guest's translation tables to walk: each
//!   descriptor read from guest RAM at its physical address with
//!   `qemu_plugin_tandem_read_physical` (patch 0006), in the secure or
//!   non-secure space the walk names; a descriptor outside RAM cannot be
//!   read (the model derives the rest of that walk and counts it);
//! - charges the stall the model returns to the vCPU with
//!   `qemu_plugin_tandem_stall_ns` (Tandem's QEMU patch 0006): the vCPU's
//!   clock moves on, its instruction count does not, and the stall uses up
//!   its turn as instructions do;
//! - writes the model's counters to `out` when QEMU exits (per core, with
//!   `walks_read` and `walks_unreadable`, and `walks` in total).
//!
//! It needs Tandem's QEMU in per-core timing (`-icount ...,quantum=N`):
//! patch 0006's entry points are looked up when the plugin is installed,
//! and the first callback outside per-core timing stops QEMU with a
//! message. The callbacks' `vcpu_index` names the core: patch 0006 fixes
//! QEMU 10.0's compiling of the translating vCPU's index into blocks that
//! every vCPU shares (`probe=vcpu` checks it against VMPIDR_EL2).
//!
//! Arguments (`-plugin libtandem_memplugin.so,profile=NAME,out=PATH`):
//! `check=on` installs, says so and ends QEMU (`./tandem check-setup`).
//! `profile` is a built-in profile (`a53`, `arm11-003`, `a9-rcar-h1`,
//! `arm11-ne1`) or a path to a profile TOML; `out` the JSON file of
//! counters; `quantum_ns` the run's quantum (sets the model's skew bound;
//! default 1000). `probe=vcpu` instead runs no model and only counts the
//! blocks whose callback's `vcpu_index` differs from the core VMPIDR_EL2
//! names (any QEMU).

use std::path::PathBuf;

use tandem_memmodel::{ExceptionLevel, TranslationContext};

pub mod json;
pub use json::{core_stats_json, json_string, profile_json, window_json};

// The plugin proper calls into QEMU, whose symbols exist only inside QEMU:
// the unit tests (which cannot link them) cover the rest.
#[cfg(not(test))]
mod plugin;

/// What the plugin does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Run the memory model with this profile (a built-in name or a path).
    Model {
        /// `--memmodel`'s word: a built-in profile or a TOML file.
        profile: String,
        /// The run's quantum in ns (the model's bound on clock skew).
        quantum_ns: u64,
    },
    /// Count blocks whose callback's vCPU index is not the core running them.
    VcpuProbe,
}

/// The plugin's arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// What to do.
    pub mode: Mode,
    /// Where the JSON of counters goes when QEMU exits.
    pub out: PathBuf,
    /// `check=on`: install (find patch 0006's entry points, read the
    /// profile), say so and end QEMU (`./tandem check-setup`).
    pub check: bool,
    /// `verify=hwaddr`: ask QEMU for every access's physical address the
    /// model's filter does not answer, as well as answering from the
    /// model's page cache (`ModelOptions::verify_translations`), and stop
    /// QEMU if the two ever differ (slower; checks the cache's assumption).
    pub verify_hwaddr: bool,
}

/// Parses the plugin's `key=value` arguments.
pub fn parse_args<S: AsRef<str>>(raw: &[S]) -> Result<Config, String> {
    let (mut out, mut profile, mut quantum, mut probe, mut check, mut verify) =
        (None, None, None, None, None, None);
    for argument in raw {
        let argument = argument.as_ref();
        let (key, value) = argument
            .split_once('=')
            .ok_or_else(|| format!("argument {argument:?} is not key=value"))?;
        let slot = match key {
            "out" => &mut out,
            "profile" => &mut profile,
            "quantum_ns" => &mut quantum,
            "probe" => &mut probe,
            "check" => &mut check,
            "verify" => &mut verify,
            other => {
                return Err(format!(
                    "unknown argument {other:?} (expected out, profile, quantum_ns, probe, check or verify)"
                ));
            }
        };
        if slot.is_some() {
            return Err(format!("{key} given twice"));
        }
        if value.is_empty() {
            return Err(format!("{key} is empty"));
        }
        *slot = Some(value.to_owned());
    }
    let out = PathBuf::from(out.ok_or("missing out=PATH")?);
    let mode = match (profile, probe.as_deref()) {
        (Some(_), Some(_)) => return Err("profile and probe exclude each other".into()),
        (None, Some("vcpu")) => {
            if quantum.is_some() {
                return Err("quantum_ns needs profile".into());
            }
            Mode::VcpuProbe
        }
        (None, Some(other)) => return Err(format!("unknown probe {other:?} (expected vcpu)")),
        (None, None) => return Err("missing profile=NAME (or probe=vcpu)".into()),
        (Some(profile), None) => {
            let quantum_ns = match quantum {
                None => 1000,
                Some(text) => text
                    .parse::<u64>()
                    .ok()
                    .filter(|q| (1..=1_000_000).contains(q))
                    .ok_or_else(|| format!("quantum_ns {text:?} is not 1..=1000000"))?,
            };
            Mode::Model {
                profile,
                quantum_ns,
            }
        }
    };
    let check = match check.as_deref() {
        None | Some("off") => false,
        Some("on") => true,
        Some(other) => return Err(format!("check {other:?} is not on or off")),
    };
    let verify_hwaddr = match verify.as_deref() {
        None | Some("off") => false,
        Some("hwaddr") => true,
        Some(other) => return Err(format!("verify {other:?} is not hwaddr or off")),
    };
    Ok(Config {
        mode,
        out,
        check,
        verify_hwaddr,
    })
}

/// A memory access's size, direction and MMU index, decoded from QEMU
/// 10.0's `qemu_plugin_meminfo_t` in the shell itself rather than by three
/// calls into QEMU per access: `make_plugin_meminfo` (include/qemu/plugin.h)
/// packs `MemOpIdx | rw << 16`, a `MemOpIdx` is `MemOp << 4 | mmu_idx`
/// (include/exec/memopidx.h), the size's log2 is `MemOp & MO_SIZE` (7) and
/// a store has `QEMU_PLUGIN_MEM_W` (2) in `rw`. The plugin checks this
/// against QEMU's own functions for every value at install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemInfo {
    /// log2 of the bytes accessed (`qemu_plugin_mem_size_shift`).
    pub size_shift: u32,
    /// A store (`qemu_plugin_mem_is_store`).
    pub store: bool,
    /// QEMU's MMU index (`qemu_plugin_tandem_mem_mmu_idx`).
    pub mmu_idx: u32,
}

impl MemInfo {
    /// Decodes `info`.
    #[inline]
    pub fn decode(info: u32) -> Self {
        Self {
            size_shift: (info >> 4) & 7,
            store: (info >> 16) & 2 != 0,
            mmu_idx: info & 15,
        }
    }
}

/// The exception level an access or block runs at, from QEMU 10.0's Arm
/// core MMU index (`ARMMMUIdx` in target/arm/cpu.h, without the
/// `ARM_MMU_IDX_A` bit): 0 E10_0, 1 E20_0, 2 E10_1, 3 E20_2, 4 E10_1_PAN,
/// 5 E20_2_PAN, 6 E2, 7 E3, 8 E30_0, 9 E30_3_PAN; 10 and up are stage 2
/// and physical accesses, which QEMU makes for itself, never for a guest
/// load or store (`None`).
pub fn exception_level(mmu_idx: u32) -> Option<ExceptionLevel> {
    Some(match mmu_idx {
        0 | 1 | 8 => ExceptionLevel::El0,
        2 | 4 => ExceptionLevel::El1,
        3 | 5 | 6 => ExceptionLevel::El2,
        7 | 9 => ExceptionLevel::El3,
        _ => return None,
    })
}

/// The translation an access of QEMU MMU index `mmu_idx` goes through,
/// for the model's page cache: the index itself (answers are kept per
/// index), in the EL1&0 regime for E10_0, E10_1 and E10_1_PAN (see
/// [`exception_level`]).
pub fn translation_context(mmu_idx: u32) -> TranslationContext {
    TranslationContext {
        id: (mmu_idx % u32::from(TranslationContext::IDS)) as u8,
        el10: matches!(mmu_idx, 0 | 2 | 4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_memmodel::CoreStats;

    #[test]
    fn parses_a_model_run() {
        let config = parse_args(&["profile=a53", "out=/tmp/m.json", "quantum_ns=2000"]).unwrap();
        assert_eq!(config.out, PathBuf::from("/tmp/m.json"));
        assert!(!config.check);
        assert!(
            parse_args(&["profile=a53", "out=x", "check=on"])
                .unwrap()
                .check
        );
        assert_eq!(
            config.mode,
            Mode::Model {
                profile: "a53".into(),
                quantum_ns: 2000
            }
        );
        let config = parse_args(&["out=x", "profile=/p/arm11.toml"]).unwrap();
        assert_eq!(
            config.mode,
            Mode::Model {
                profile: "/p/arm11.toml".into(),
                quantum_ns: 1000
            }
        );
        assert_eq!(
            parse_args(&["probe=vcpu", "out=x"]).unwrap().mode,
            Mode::VcpuProbe
        );
    }

    #[test]
    fn verify_hwaddr_is_off_unless_asked() {
        assert!(!parse_args(&["profile=a53", "out=x"]).unwrap().verify_hwaddr);
        assert!(
            parse_args(&["profile=a53", "out=x", "verify=hwaddr"])
                .unwrap()
                .verify_hwaddr
        );
    }

    #[test]
    fn meminfo_decodes_as_qemu_packs_it() {
        // A 4-byte (MO_32 = 2) store (rw = W = 2) at MMU index 4 (E10_1_PAN),
        // with MO_SIGN (8) and an alignment bit (MO_ALIGN_4 = 2 << 5) set.
        let memop = 2 | 8 | (2 << 5);
        let info = (memop << 4) | 4 | (2 << 16);
        assert_eq!(
            MemInfo::decode(info),
            MemInfo {
                size_shift: 2,
                store: true,
                mmu_idx: 4
            }
        );
        // A load (rw = R = 1) of 16 bytes (MO_128 = 4) at E3 (7).
        let info = (4 << 4) | 7 | (1 << 16);
        assert!(!MemInfo::decode(info).store);
        assert_eq!(MemInfo::decode(info).size_shift, 4);
        assert_eq!(MemInfo::decode(info).mmu_idx, 7);
    }

    #[test]
    fn refuses_bad_arguments() {
        for (args, why) in [
            (&["profile=a53"][..], "missing out"),
            (&["out=x"][..], "missing profile"),
            (&["out=x", "out=y", "profile=a53"][..], "given twice"),
            (&["out=", "profile=a53"][..], "out is empty"),
            (&["out=x", "profile=a53", "verbose"][..], "not key=value"),
            (&["out=x", "profile=a53", "speed=1"][..], "unknown argument"),
            (
                &["out=x", "profile=a53", "quantum_ns=0"][..],
                "not 1..=1000000",
            ),
            (
                &["out=x", "profile=a53", "quantum_ns=1us"][..],
                "not 1..=1000000",
            ),
            (
                &["out=x", "profile=a53", "probe=vcpu"][..],
                "exclude each other",
            ),
            (&["out=x", "probe=tlb"][..], "unknown probe"),
            (
                &["out=x", "probe=vcpu", "quantum_ns=5"][..],
                "needs profile",
            ),
            (
                &["out=x", "profile=a53", "verify=all"][..],
                "not hwaddr or off",
            ),
        ] {
            let err = parse_args(args).unwrap_err();
            assert!(err.contains(why), "{args:?}: {err}");
        }
    }

    #[test]
    fn el10_indexes_share_the_el10_regime_and_every_index_has_its_context() {
        let el10: Vec<u32> = (0..16).filter(|&i| translation_context(i).el10).collect();
        assert_eq!(el10, [0, 2, 4]);
        for i in 0..16 {
            assert_eq!(u32::from(translation_context(i).id), i);
        }
    }

    #[test]
    fn mmu_indexes_map_to_their_exception_level() {
        use ExceptionLevel::*;
        let levels: Vec<_> = (0..16).map(exception_level).collect();
        assert_eq!(
            levels,
            vec![
                Some(El0),
                Some(El0),
                Some(El1),
                Some(El2),
                Some(El1),
                Some(El2),
                Some(El2),
                Some(El3),
                Some(El0),
                Some(El3),
                None,
                None,
                None,
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn json_is_escaped_and_complete() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        let profile = tandem_memmodel::Profile::builtin("arm11-003").unwrap();
        let json = profile_json(&profile);
        assert!(json.starts_with("{\"name\": \"arm11-003\", \"hash\": \"fnv1a64:"));
        assert!(json.contains("\"l2\": null"));
        assert!(json.contains("\"memory_latency_ns\": 56, \"bus_service_ns\": 56"));
        assert!(json.ends_with("\"write_streaming\": null}"));
        let a53 = profile_json(&tandem_memmodel::Profile::builtin("a53").unwrap());
        assert!(a53.ends_with(
            "\"write_streaming\": {\"l1_no_allocate_line\": 4, \"l2_no_allocate_line\": 128}}"
        ));
        let stats = CoreStats {
            loads: 3,
            stall_ns: 10,
            translation_stall_ns: 5,
            ..CoreStats::default()
        };
        let json = core_stats_json(&stats);
        assert!(json.starts_with("{\"loads\": 3, \"stores\": 0"));
        assert!(json.ends_with("\"translation_stall_share_permille\": 500}"));
    }
}
