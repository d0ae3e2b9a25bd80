//! The boot configuration the harness hands the monitor: which world owns each
//! core (docs/design.md, "Per-core policy"), what the RTOS runs (its workload),
//! which optional monitor features are on, and which cores serve RPC calls.
//! A small blob in normal RAM, read and validated at cold boot by the monitor
//! and by the RTOS, before Linux can touch it.

/// `"TNDMBOOT"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TNDMBOOT");
/// Layout version of [`BootConfig`].
pub const VERSION: u32 = 4;
use crate::MAX_CORES;

/// Who runs on a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    /// RTOS and Linux share the core, the RTOS always first (SafeG).
    Shared = 0,
    /// RTOS only; Linux never sees the core.
    Rtos = 1,
    /// Linux only; no RTOS here.
    Linux = 2,
}

impl Policy {
    /// Decodes a policy byte.
    pub const fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Policy::Shared),
            1 => Some(Policy::Rtos),
            2 => Some(Policy::Linux),
            _ => None,
        }
    }

    /// Whether the RTOS runs on a core with this policy.
    pub const fn has_rtos(self) -> bool {
        !matches!(self, Policy::Linux)
    }

    /// Whether Linux may run on a core with this policy.
    pub const fn has_linux(self) -> bool {
        !matches!(self, Policy::Rtos)
    }
}

/// The blob as it lies in memory (little endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootConfig {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`VERSION`].
    pub version: u32,
    /// Cores described (the rest of `policy` is ignored).
    pub cores: u32,
    /// One [`Policy`] byte per core.
    pub policy: [u8; MAX_CORES],
    /// What the RTOS runs.
    pub workload: WorkloadConfig,
    /// Optional monitor features ([`FEATURE_STEAL_TIME`]); other bits must be 0.
    pub features: u32,
    /// Cores that run an RPC server task (bit per core; each must run the
    /// RTOS). 0: no RPC service (`crate::rpc`).
    pub rpc_cores: u32,
}

/// Feature bit: the monitor offers Arm PV time and accounts stolen time (off:
/// PV time answers NOT_SUPPORTED, so Linux never turns steal accounting on,
/// and Linux's WFI is not trapped).
pub const FEATURE_STEAL_TIME: u32 = 1 << 0;
/// Every feature bit this layout defines.
pub const FEATURES_KNOWN: u32 = FEATURE_STEAL_TIME;

/// What the RTOS runs, as it lies in the blob. The fields are named after
/// the periodic workload; the context-switch workload gives them other
/// meanings (read them through [`Workload`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// [`WORKLOAD_DEMO`], [`WORKLOAD_PERIODIC`] or [`WORKLOAD_CTXSW`].
    pub kind: u32,
    /// Periodic: the core its cyclic handler runs on. Ctxsw: the core the
    /// protected tasks run on.
    pub core: u32,
    /// Periodic: release period, µs. Ctxsw: hand-offs to make
    /// ([`MIN_SWITCHES`]..=[`MAX_SWITCHES`]).
    pub period_us: u32,
    /// Periodic: busy work per job, µs of counter time. Ctxsw: pages each
    /// task writes between two hand-offs (0..=[`MAX_PAGES`]).
    pub work_us: u32,
    /// Periodic: [`DISPATCH_STATIC`] or [`DISPATCH_MIGRATE`]. Ctxsw:
    /// [`CTXSW_ASID`] or [`CTXSW_FLUSH`].
    pub dispatch: u32,
    /// Periodic: work per job in alternate phases, µs (a load that changes).
    /// Ctxsw: option bits ([`CTXSW_STRAY`]).
    pub alt_work_us: u32,
    /// Periodic: switch between `work_us` and `alt_work_us` every this many
    /// ms; 0: never (constant load). Ctxsw: zero.
    pub alt_every_ms: u32,
    /// Zero.
    pub reserved: u32,
}

/// The demo application (docs/rtos.md): a 1 ms job on every RTOS core,
/// interrupt-to-task and cross-core hand-off.
pub const WORKLOAD_DEMO: u32 = 0;
/// One periodic task (paper 000's dummy task): a cyclic handler on one core
/// releases a task that busy-loops for a set time.
pub const WORKLOAD_PERIODIC: u32 = 1;
/// Protected tasks at S-EL0 hand a value back and forth (paper 004's
/// `sys_chg`), each in its own address space; the demo runs beside them.
pub const WORKLOAD_CTXSW: u32 = 2;
/// Ctxsw: each protected task has its own ASID; a switch writes TTBR0 only.
pub const CTXSW_ASID: u32 = 0;
/// Ctxsw: one ASID for all, the TLB invalidated on every switch.
pub const CTXSW_FLUSH: u32 = 1;
/// Ctxsw option: a third protected task makes a stray access (the fault
/// path: it is reported and stopped, everything else runs on).
pub const CTXSW_STRAY: u32 = 1 << 0;
/// Fewest hand-offs accepted.
pub const MIN_SWITCHES: u32 = 2;
/// Most hand-offs accepted.
pub const MAX_SWITCHES: u32 = 100_000_000;
/// Most pages a protected task writes between hand-offs.
pub const MAX_PAGES: u32 = 256;
/// The periodic task always starts on its handler's core.
pub const DISPATCH_STATIC: u32 = 0;
/// The periodic task starts on a core where Linux holds no spin lock
/// (paper 000 §3): the last one if it is free, else the first free, else stay.
pub const DISPATCH_MIGRATE: u32 = 1;
/// Shortest period accepted, µs.
pub const MIN_PERIOD_US: u32 = 100;
/// Longest period accepted, µs.
pub const MAX_PERIOD_US: u32 = 1_000_000;

/// How a task is dispatched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// On its handler's core.
    Static,
    /// Around Linux's lock holders.
    Migrate,
}

/// How protected tasks' address spaces are told apart in the TLB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbMode {
    /// An ASID per task.
    Asid,
    /// One ASID, the TLB flushed on every switch.
    Flush,
}

/// A checked workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// The demo application.
    Demo,
    /// One periodic busy task.
    Periodic {
        /// Core of the cyclic handler (and the task's first core).
        core: usize,
        /// Release period, µs.
        period_us: u32,
        /// Work per job, µs.
        work_us: u32,
        /// How the task is dispatched.
        dispatch: Dispatch,
        /// Work per job in alternate phases, µs.
        alt_work_us: u32,
        /// Phase length, ms (0: constant load).
        alt_every_ms: u32,
    },
    /// Two protected tasks handing a value back and forth (and the demo).
    Ctxsw {
        /// The core the protected tasks run on.
        core: usize,
        /// How their address spaces are told apart.
        mode: TlbMode,
        /// Pages each writes between two hand-offs.
        pages: u32,
        /// Hand-offs to make.
        switches: u32,
        /// A third protected task makes a stray access.
        stray: bool,
    },
}

/// Size of the blob in bytes.
pub const SIZE: usize = core::mem::size_of::<BootConfig>();
const _: () = assert!(SIZE == 64);

/// Why a boot configuration was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootConfigError {
    /// No configuration there (wrong magic).
    Missing,
    /// Written for another layout.
    Version(u32),
    /// Core count 0 or above [`MAX_CORES`].
    Cores(u32),
    /// A policy byte that is not a policy.
    Policy {
        /// Core index.
        core: usize,
        /// The byte found.
        value: u8,
    },
    /// No core runs Linux.
    NoLinuxCore,
    /// A workload kind that does not exist.
    WorkloadKind(u32),
    /// The periodic task's core does not exist or runs no RTOS.
    WorkloadCore(u32),
    /// Period out of [`MIN_PERIOD_US`]..=[`MAX_PERIOD_US`], or work not
    /// shorter than the period.
    WorkloadTiming,
    /// A dispatch policy (or TLB mode) that does not exist.
    Dispatch(u32),
    /// Ctxsw: hand-offs or pages out of range, or unknown option bits.
    WorkloadSize,
    /// Feature bits this layout does not define.
    Features(u32),
    /// RPC server cores that do not exist or run no RTOS (the mask given).
    RpcCores(u32),
}

/// A checked configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policies {
    cores: usize,
    policy: [Policy; MAX_CORES],
}

impl Policies {
    /// Every core `policy`.
    pub const fn uniform(cores: usize, policy: Policy) -> Self {
        Self {
            cores,
            policy: [policy; MAX_CORES],
        }
    }

    /// The policy of `core`; cores beyond the configuration run nothing
    /// but are reported as Linux-only (no RTOS is started there).
    pub const fn of(&self, core: usize) -> Policy {
        if core < self.cores {
            self.policy[core]
        } else {
            Policy::Linux
        }
    }

    /// Cores the configuration describes (the machine's cores).
    pub const fn cores(&self) -> usize {
        self.cores
    }

    /// Whether any core runs the RTOS.
    pub fn any_rtos(&self) -> bool {
        self.policy[..self.cores].iter().any(|p| p.has_rtos())
    }
}

impl BootConfig {
    /// The blob for `policies` (used by tests; the harness writes the same
    /// bytes from Python).
    pub fn encode(policies: &[Policy]) -> Self {
        let mut policy = [Policy::Linux as u8; MAX_CORES];
        for (slot, p) in policy.iter_mut().zip(policies) {
            *slot = *p as u8;
        }
        Self {
            magic: MAGIC,
            version: VERSION,
            cores: policies.len() as u32,
            policy,
            workload: WorkloadConfig::default(),
            features: 0,
            rpc_cores: 0,
        }
    }

    /// Checks the blob, saying what is wrong.
    pub fn validate(&self) -> Result<Policies, BootConfigError> {
        if self.magic != MAGIC {
            return Err(BootConfigError::Missing);
        }
        if self.version != VERSION {
            return Err(BootConfigError::Version(self.version));
        }
        if self.cores == 0 || self.cores as usize > MAX_CORES {
            return Err(BootConfigError::Cores(self.cores));
        }
        let mut out = Policies::uniform(self.cores as usize, Policy::Linux);
        for core in 0..self.cores as usize {
            let value = self.policy[core];
            out.policy[core] =
                Policy::from_byte(value).ok_or(BootConfigError::Policy { core, value })?;
        }
        if !out.policy[..out.cores].iter().any(|p| p.has_linux()) {
            return Err(BootConfigError::NoLinuxCore);
        }
        if self.features & !FEATURES_KNOWN != 0 {
            return Err(BootConfigError::Features(self.features));
        }
        let rtos_cores = (0..out.cores)
            .filter(|&c| out.policy[c].has_rtos())
            .fold(0u32, |m, c| m | 1 << c);
        if self.rpc_cores & !rtos_cores != 0 {
            return Err(BootConfigError::RpcCores(self.rpc_cores));
        }
        Ok(out)
    }

    /// Whether the monitor offers PV time and accounts stolen time (only
    /// meaningful once [`BootConfig::validate`] accepted the blob).
    pub const fn steal_time(&self) -> bool {
        self.features & FEATURE_STEAL_TIME != 0
    }

    /// The RPC server cores (bit mask; only meaningful once
    /// [`BootConfig::validate`] accepted the blob, which keeps it to RTOS cores).
    pub const fn rpc_cores(&self) -> u8 {
        self.rpc_cores as u8
    }

    /// Checks the workload against the (already checked) policies.
    pub fn workload(&self, policies: &Policies) -> Result<Workload, BootConfigError> {
        let w = &self.workload;
        match w.kind {
            WORKLOAD_DEMO => Ok(Workload::Demo),
            WORKLOAD_PERIODIC => {
                let core = w.core as usize;
                if core >= policies.cores() || !policies.of(core).has_rtos() {
                    return Err(BootConfigError::WorkloadCore(w.core));
                }
                let period_ok = (MIN_PERIOD_US..=MAX_PERIOD_US).contains(&w.period_us);
                if !period_ok || w.work_us >= w.period_us || w.alt_work_us >= w.period_us {
                    return Err(BootConfigError::WorkloadTiming);
                }
                let dispatch = match w.dispatch {
                    DISPATCH_STATIC => Dispatch::Static,
                    DISPATCH_MIGRATE => Dispatch::Migrate,
                    other => return Err(BootConfigError::Dispatch(other)),
                };
                Ok(Workload::Periodic {
                    core,
                    period_us: w.period_us,
                    work_us: w.work_us,
                    dispatch,
                    alt_work_us: w.alt_work_us,
                    alt_every_ms: w.alt_every_ms,
                })
            }
            WORKLOAD_CTXSW => {
                let core = w.core as usize;
                if core >= policies.cores() || !policies.of(core).has_rtos() {
                    return Err(BootConfigError::WorkloadCore(w.core));
                }
                let mode = match w.dispatch {
                    CTXSW_ASID => TlbMode::Asid,
                    CTXSW_FLUSH => TlbMode::Flush,
                    other => return Err(BootConfigError::Dispatch(other)),
                };
                if !(MIN_SWITCHES..=MAX_SWITCHES).contains(&w.period_us)
                    || w.work_us > MAX_PAGES
                    || w.alt_work_us & !CTXSW_STRAY != 0
                    || w.alt_every_ms != 0
                {
                    return Err(BootConfigError::WorkloadSize);
                }
                Ok(Workload::Ctxsw {
                    core,
                    mode,
                    pages: w.work_us,
                    switches: w.period_us,
                    stray: w.alt_work_us & CTXSW_STRAY != 0,
                })
            }
            other => Err(BootConfigError::WorkloadKind(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let c = BootConfig::encode(&[Policy::Linux, Policy::Shared, Policy::Shared, Policy::Rtos]);
        let p = c.validate().unwrap();
        assert_eq!(p.of(0), Policy::Linux);
        assert_eq!(p.of(3), Policy::Rtos);
        assert_eq!(p.of(5), Policy::Linux, "beyond the configuration");
        assert!(p.any_rtos());
        assert!(
            !BootConfig::encode(&[Policy::Linux])
                .validate()
                .unwrap()
                .any_rtos()
        );
    }

    #[test]
    fn rejects_what_it_cannot_use() {
        let good = BootConfig::encode(&[Policy::Shared; 4]);
        let mut c = good;
        c.magic = 0;
        assert_eq!(c.validate(), Err(BootConfigError::Missing));
        c = good;
        c.version = 1;
        assert_eq!(c.validate(), Err(BootConfigError::Version(1)));
        c = good;
        c.cores = 9;
        assert_eq!(c.validate(), Err(BootConfigError::Cores(9)));
        c = good;
        c.policy[2] = 7;
        assert_eq!(
            c.validate(),
            Err(BootConfigError::Policy { core: 2, value: 7 })
        );
        c = good;
        c.features = 2;
        assert_eq!(c.validate(), Err(BootConfigError::Features(2)));
        c = good;
        c.rpc_cores = 0b0110;
        assert!(c.validate().is_ok());
        assert_eq!(c.rpc_cores(), 0b0110);
        c.rpc_cores = 0b1_0000;
        assert_eq!(c.validate(), Err(BootConfigError::RpcCores(0b1_0000)));
        c.rpc_cores = 1 << 31;
        assert_eq!(c.validate(), Err(BootConfigError::RpcCores(1 << 31)));
        c = good;
        c.features = FEATURE_STEAL_TIME;
        assert!(c.validate().is_ok() && c.steal_time());
        assert!(!good.steal_time());
        let all_rtos = BootConfig::encode(&[Policy::Rtos; 2]);
        assert_eq!(all_rtos.validate(), Err(BootConfigError::NoLinuxCore));
    }

    fn periodic(policies: &[Policy], w: WorkloadConfig) -> Result<Workload, BootConfigError> {
        let mut c = BootConfig::encode(policies);
        c.workload = w;
        c.workload(&c.validate().unwrap())
    }

    #[test]
    fn workloads_are_checked() {
        let shared = [Policy::Shared; 4];
        let good = WorkloadConfig {
            kind: WORKLOAD_PERIODIC,
            core: 1,
            period_us: 1000,
            work_us: 500,
            dispatch: DISPATCH_MIGRATE,
            ..Default::default()
        };
        assert_eq!(
            periodic(&shared, good),
            Ok(Workload::Periodic {
                core: 1,
                period_us: 1000,
                work_us: 500,
                dispatch: Dispatch::Migrate,
                alt_work_us: 0,
                alt_every_ms: 0,
            })
        );
        assert_eq!(
            periodic(&shared, WorkloadConfig::default()),
            Ok(Workload::Demo)
        );
        let bad = |f: fn(&mut WorkloadConfig)| {
            let mut w = good;
            f(&mut w);
            periodic(&shared, w)
        };
        assert_eq!(bad(|w| w.kind = 9), Err(BootConfigError::WorkloadKind(9)));
        assert_eq!(bad(|w| w.core = 4), Err(BootConfigError::WorkloadCore(4)));
        assert_eq!(
            bad(|w| w.work_us = 1000),
            Err(BootConfigError::WorkloadTiming)
        );
        assert_eq!(
            bad(|w| w.period_us = 99),
            Err(BootConfigError::WorkloadTiming)
        );
        assert_eq!(
            bad(|w| w.alt_work_us = 2000),
            Err(BootConfigError::WorkloadTiming)
        );
        assert_eq!(bad(|w| w.dispatch = 2), Err(BootConfigError::Dispatch(2)));
        let linux_on_1 = [
            Policy::Shared,
            Policy::Linux,
            Policy::Shared,
            Policy::Shared,
        ];
        assert_eq!(
            periodic(&linux_on_1, good),
            Err(BootConfigError::WorkloadCore(1))
        );
    }

    #[test]
    fn ctxsw_workload_is_checked() {
        let shared = [Policy::Shared; 2];
        let good = WorkloadConfig {
            kind: WORKLOAD_CTXSW,
            core: 1,
            period_us: 100_000,
            work_us: 64,
            dispatch: CTXSW_FLUSH,
            alt_work_us: CTXSW_STRAY,
            ..Default::default()
        };
        assert_eq!(
            periodic(&shared, good),
            Ok(Workload::Ctxsw {
                core: 1,
                mode: TlbMode::Flush,
                pages: 64,
                switches: 100_000,
                stray: true,
            })
        );
        let bad = |f: fn(&mut WorkloadConfig)| {
            let mut w = good;
            f(&mut w);
            periodic(&shared, w)
        };
        assert!(matches!(
            bad(|w| w.dispatch = CTXSW_ASID),
            Ok(Workload::Ctxsw {
                mode: TlbMode::Asid,
                ..
            })
        ));
        assert_eq!(bad(|w| w.core = 2), Err(BootConfigError::WorkloadCore(2)));
        assert_eq!(bad(|w| w.dispatch = 2), Err(BootConfigError::Dispatch(2)));
        for f in [
            (|w: &mut WorkloadConfig| w.period_us = 1) as fn(&mut WorkloadConfig),
            |w| w.period_us = MAX_SWITCHES + 1,
            |w| w.work_us = MAX_PAGES + 1,
            |w| w.alt_work_us = 2,
            |w| w.alt_every_ms = 1,
        ] {
            assert_eq!(bad(f), Err(BootConfigError::WorkloadSize));
        }
    }
}
