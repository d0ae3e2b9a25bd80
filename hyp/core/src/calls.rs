//! Which of a partition's SMCs (trapped at EL2 with HCR_EL2.TSC) go on to
//! the monitor, and what the layer answers itself.
//!
//! PSCI reaches the monitor, which keeps each partition's cores apart too,
//! but a partition may only name its own cores: CPU_ON and AFFINITY_INFO of
//! another partition's core are invalid parameters here already.
//! SYSTEM_RESET and SYSTEM_OFF go on: the monitor stops (and restarts) the
//! calling partition alone. Tandem's own services (SiP calls, PV time) are
//! for the partition that has them (`tandem_abi::partition::FLAG_TANDEM`,
//! `FLAG_SHARED_REGION`); everything else the monitor would refuse anyway.

use tandem_abi::partition::Partition;
use tandem_abi::smc::{
    PSCI_AFFINITY_INFO_32, PSCI_AFFINITY_INFO_64, PSCI_CPU_ON_32, PSCI_CPU_ON_64, ret,
};
use tandem_board::Board;

/// What becomes of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The monitor answers: the layer makes the same call (x0..x7).
    Forward,
    /// The layer answers: x0 (x1..x3 zero).
    Answer(i64),
}

/// SMCCC owner numbers (function ID bits 29:24).
mod owner {
    pub const ARCH: u32 = 0;
    pub const SIP: u32 = 2;
    pub const STANDARD: u32 = 4;
    pub const STANDARD_HYP: u32 = 5;
}

/// Decides the SMC partition `p` made, with `imm16` in its instruction and
/// `x` its argument registers; `board` names the cores.
pub fn filter(p: &Partition, board: &Board, imm16: u16, x: &[u64; 8]) -> Verdict {
    // SMCCC: the immediate is zero; the monitor answers the same.
    if imm16 != 0 {
        return Verdict::Answer(ret::NOT_SUPPORTED);
    }
    let fid = x[0] as u32;
    let own_core = |mpidr: u64| board.core_index(mpidr).is_some_and(|c| p.has_core(c));
    match fid >> 24 & 0x3F {
        owner::ARCH => Verdict::Forward,
        owner::STANDARD => match fid {
            PSCI_CPU_ON_32 | PSCI_CPU_ON_64 | PSCI_AFFINITY_INFO_32 | PSCI_AFFINITY_INFO_64 => {
                // The monitor takes the 32-bit calls' arguments as 32 bits.
                let target = if fid & 1 << 30 == 0 {
                    x[1] & 0xFFFF_FFFF
                } else {
                    x[1]
                };
                if own_core(target) {
                    Verdict::Forward
                } else {
                    Verdict::Answer(ret::INVALID_PARAMETERS)
                }
            }
            _ => Verdict::Forward,
        },
        owner::SIP if p.tandem() => Verdict::Forward,
        owner::STANDARD_HYP if p.shared_region() => Verdict::Forward,
        _ => Verdict::Answer(ret::NOT_SUPPORTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_abi::partition::{FLAG_SHARED_REGION, FLAG_TANDEM};
    use tandem_abi::smc::{
        PSCI_CPU_OFF, PSCI_SYSTEM_OFF, PSCI_SYSTEM_RESET, PSCI_VERSION, SMCCC_VERSION, pv_time, sip,
    };
    use tandem_board::BOARD;

    fn call(p: &Partition, fid: u32, x1: u64) -> Verdict {
        filter(p, &BOARD, 0, &[fid.into(), x1, 0x6020_0000, 0, 0, 0, 0, 0])
    }

    fn b() -> Partition {
        Partition {
            name: b'B',
            cores: 0b1000,
            boot_core: 3,
            ..Partition::EMPTY
        }
    }

    #[test]
    fn psci_names_only_the_partitions_cores() {
        let b = b();
        assert_eq!(call(&b, PSCI_CPU_ON_64, 3), Verdict::Forward);
        assert_eq!(
            call(&b, PSCI_CPU_ON_64, 0),
            Verdict::Answer(ret::INVALID_PARAMETERS)
        );
        assert_eq!(
            call(&b, PSCI_CPU_ON_32, 1 << 32 | 3),
            Verdict::Forward,
            "32-bit: the upper half is not part of the argument"
        );
        assert_eq!(
            call(&b, PSCI_CPU_ON_64, 1 << 32 | 3),
            Verdict::Answer(ret::INVALID_PARAMETERS),
            "Aff3 = 1: no core of this machine"
        );
        assert_eq!(
            call(&b, PSCI_AFFINITY_INFO_64, 2),
            Verdict::Answer(ret::INVALID_PARAMETERS)
        );
        for fid in [
            PSCI_VERSION,
            PSCI_CPU_OFF,
            PSCI_SYSTEM_OFF,
            PSCI_SYSTEM_RESET,
        ] {
            assert_eq!(call(&b, fid, 0), Verdict::Forward);
        }
        assert_eq!(call(&b, SMCCC_VERSION, 0), Verdict::Forward);
    }

    #[test]
    fn tandems_services_only_where_the_partition_has_them() {
        let mut p = b();
        assert_eq!(
            call(&p, sip::RPC_NOTIFY, 0),
            Verdict::Answer(ret::NOT_SUPPORTED)
        );
        assert_eq!(
            call(&p, pv_time::ST, 0),
            Verdict::Answer(ret::NOT_SUPPORTED)
        );
        p.flags = FLAG_SHARED_REGION;
        assert_eq!(call(&p, pv_time::ST, 0), Verdict::Forward);
        assert_eq!(
            call(&p, sip::VERSION, 0),
            Verdict::Answer(ret::NOT_SUPPORTED)
        );
        p.flags |= FLAG_TANDEM;
        assert_eq!(call(&p, sip::VERSION, 0), Verdict::Forward);
        assert_eq!(
            call(&p, 0xF200_0000, 0),
            Verdict::Answer(ret::NOT_SUPPORTED),
            "the RTOS's calls"
        );
        assert_eq!(
            filter(&p, &BOARD, 1, &[sip::VERSION.into(), 0, 0, 0, 0, 0, 0, 0]),
            Verdict::Answer(ret::NOT_SUPPORTED),
            "imm16"
        );
    }
}
