//! The boot configuration the harness hands the monitor: which world owns each
//! core (DESIGN.md "Per-core policy"). A small blob in normal RAM, read and
//! validated once at cold boot, before Linux can touch it.

/// `"TNDMBOOT"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TNDMBOOT");
/// Layout version of [`BootConfig`].
pub const VERSION: u32 = 1;
/// Most cores a configuration can describe.
pub const MAX_CORES: usize = 8;

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
}

/// Size of the blob in bytes.
pub const SIZE: usize = core::mem::size_of::<BootConfig>();
const _: () = assert!(SIZE == 24);

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
        Ok(out)
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
        c.version = 2;
        assert_eq!(c.validate(), Err(BootConfigError::Version(2)));
        c = good;
        c.cores = 9;
        assert_eq!(c.validate(), Err(BootConfigError::Cores(9)));
        c = good;
        c.policy[2] = 7;
        assert_eq!(
            c.validate(),
            Err(BootConfigError::Policy { core: 2, value: 7 })
        );
        let all_rtos = BootConfig::encode(&[Policy::Rtos; 2]);
        assert_eq!(all_rtos.validate(), Err(BootConfigError::NoLinuxCore));
    }
}
