//! The boot configuration the harness hands the monitor: which world owns each
//! core (docs/design.md, "Per-core policy"), which optional monitor features are
//! on, and which cores the monitor sends RPC doorbells to. A small blob in
//! secure flash (the harness writes it there), read and validated at cold
//! boot by the monitor and by the RTOS; Linux can neither read nor change it. It is the platform's: what the RTOS's
//! applications do is in the workload blob beside it ([`crate::workload`]).

/// `"TNDMBOOT"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TNDMBOOT");
/// Layout version of [`BootConfig`].
pub const VERSION: u32 = 5;
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
    /// Optional monitor features ([`FEATURE_STEAL_TIME`]); other bits must be 0.
    pub features: u32,
    /// Cores the monitor rings for Linux's RPC calls, each serving its
    /// share of the channels (bit per core; each must run the RTOS). 0: no
    /// RPC service (`crate::rpc`).
    pub rpc_cores: u32,
}

/// Feature bit: the monitor offers Arm PV time and accounts stolen time (off:
/// PV time answers NOT_SUPPORTED, so Linux never turns steal accounting on,
/// and Linux's WFI is not trapped).
pub const FEATURE_STEAL_TIME: u32 = 1 << 0;
/// Feature bit: Linux's PSCI SYSTEM_OFF powers the whole machine off (off:
/// Linux's cores go idle and the RTOS runs on, what a product wants).
pub const FEATURE_LINUX_OFF_STOPS_MACHINE: u32 = 1 << 1;
/// Every feature bit this layout defines.
pub const FEATURES_KNOWN: u32 = FEATURE_STEAL_TIME | FEATURE_LINUX_OFF_STOPS_MACHINE;

/// Size of the blob in bytes.
pub const SIZE: usize = core::mem::size_of::<BootConfig>();
const _: () = assert!(SIZE == 32);

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

    /// Whether Linux's SYSTEM_OFF powers the machine off (only meaningful
    /// once [`BootConfig::validate`] accepted the blob).
    pub const fn linux_off_stops_machine(&self) -> bool {
        self.features & FEATURE_LINUX_OFF_STOPS_MACHINE != 0
    }

    /// The RPC server cores (bit mask; only meaningful once
    /// [`BootConfig::validate`] accepted the blob, which keeps it to RTOS cores).
    pub const fn rpc_cores(&self) -> u8 {
        self.rpc_cores as u8
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
        c.features = 4;
        assert_eq!(c.validate(), Err(BootConfigError::Features(4)));
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
}
