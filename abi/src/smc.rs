//! SMC function IDs and return codes (SMCCC 1.1, SMC conduit).
//!
//! Standard (PSCI) and Arm-architecture IDs come from the `smccc` crate; this
//! module adds Tandem's own calls: SiP calls from Linux (0xC200_xxxx) and
//! Trusted-OS calls from the RTOS (owner 50..=63).

use crate::CConstant;

pub use smccc::arch::{
    SMCCC_ARCH_FEATURES, SMCCC_ARCH_SOC_ID, SMCCC_ARCH_WORKAROUND_1, SMCCC_ARCH_WORKAROUND_2,
    SMCCC_ARCH_WORKAROUND_3, SMCCC_VERSION,
};
pub use smccc::psci::{
    PSCI_AFFINITY_INFO_32, PSCI_AFFINITY_INFO_64, PSCI_CPU_OFF, PSCI_CPU_ON_32, PSCI_CPU_ON_64,
    PSCI_CPU_SUSPEND_32, PSCI_CPU_SUSPEND_64, PSCI_FEATURES, PSCI_MIGRATE_INFO_TYPE,
    PSCI_SYSTEM_OFF, PSCI_SYSTEM_RESET, PSCI_SYSTEM_RESET2_32, PSCI_SYSTEM_RESET2_64, PSCI_VERSION,
};

/// SMCCC version we implement: 1.1.
pub const SMCCC_VERSION_1_1: u32 = 0x0001_0001;
/// PSCI version we implement: 1.1.
pub const PSCI_VERSION_1_1: u32 = 0x0001_0001;
/// MIGRATE_INFO_TYPE answer: no Trusted OS that needs migration.
pub const PSCI_MIGRATE_INFO_TYPE_NOT_PRESENT: u32 = 2;

/// SMCCC / PSCI return codes (as i64 in x0).
pub mod ret {
    /// Success.
    pub const SUCCESS: i64 = 0;
    /// Unknown function, or not implemented.
    pub const NOT_SUPPORTED: i64 = -1;
    /// A parameter was out of range or malformed.
    pub const INVALID_PARAMETERS: i64 = -2;
    /// Not allowed in this state.
    pub const DENIED: i64 = -3;
    /// PSCI CPU_ON: the core is already on.
    pub const ALREADY_ON: i64 = -4;
    /// PSCI CPU_ON: the core is already being turned on.
    pub const ON_PENDING: i64 = -5;
    /// Something failed inside the firmware.
    pub const INTERNAL_FAILURE: i64 = -6;
    /// PSCI: entry point outside the caller's memory.
    pub const INVALID_ADDRESS: i64 = -9;
}

/// Tandem's SiP calls (fast, SMC64, owner 2), made by Linux.
pub mod sip {
    /// Returns the Tandem ABI version in x0 (`major << 16 | minor`).
    pub const VERSION: u32 = 0xC200_0000;
    /// Returns the shared region: x0 = SUCCESS, x1 = base, x2 = size.
    pub const SHM_INFO: u32 = 0xC200_0001;
    /// Rings RPC channel x1 (`crate::rpc`): the monitor raises the RPC SGI on
    /// the channel's server core and returns at once. x0 = SUCCESS,
    /// INVALID_PARAMETERS (no such channel) or NOT_SUPPORTED (no RPC server
    /// in this configuration).
    pub const RPC_NOTIFY: u32 = 0xC200_0002;
    /// Rings RPMsg (`crate::rpmsg`): x1 = what changed, a vring's notify
    /// ID (0, 1) or `rpmsg::NOTIFY_CONTROL` (the session). The monitor
    /// raises the RPC SGI on the RPMsg core and returns at once. x0 =
    /// SUCCESS, INVALID_PARAMETERS (any other x1) or NOT_SUPPORTED (no
    /// RPC server, so no RPMsg, in this configuration).
    pub const RPMSG_NOTIFY: u32 = 0xC200_0003;
    /// Highest SiP function number defined so far (for range checks and fuzzing).
    pub const LAST: u32 = RPMSG_NOTIFY;
}

/// SMCCC's general service queries, answered for the SiP range: SMCCC
/// (DEN0028, "General Service Queries") reserves function numbers
/// 0xFF00..=0xFFFF of every owner for them and defines them as SMC32 fast
/// calls, so for SiP they are 0x8200_FF00 (Call Count), 0x8200_FF01 (Call
/// UID) and 0x8200_FF03 (Revision; 0xFF02 is reserved). Their SMC64 forms
/// (0xC200_FF0x) are not defined and answer NOT_SUPPORTED like any unknown
/// ID. A caller learns from them which firmware it talks to (the UID),
/// which revision of its SiP calls (the ABI version) and how many calls
/// the range answers.
pub mod sip_query {
    /// Returns in w0 how many function IDs the SiP range answers (SMC32 and
    /// SMC64 forms counted apart; these queries included).
    pub const CALL_COUNT: u32 = 0x8200_FF00;
    /// Returns the implementer's UID in w0..w3 ([`super::uid_words`] of
    /// [`super::TANDEM_UID`]).
    pub const CALL_UID: u32 = 0x8200_FF01;
    /// Returns the revision of the SiP calls: w0 = major, w1 = minor (the
    /// Tandem ABI version, [`super::ABI_VERSION`]).
    pub const REVISION: u32 = 0x8200_FF03;
}

/// Tandem's UID, b647d0eb-4f38-4fec-8f69-906a453188d3 (a random version 4
/// UUID made once for Tandem and never changed), in RFC 4122 byte order:
/// what the SiP range's Call UID query identifies the firmware by.
pub const TANDEM_UID: [u8; 16] = [
    0xb6, 0x47, 0xd0, 0xeb, 0x4f, 0x38, 0x4f, 0xec, 0x8f, 0x69, 0x90, 0x6a, 0x45, 0x31, 0x88, 0xd3,
];

/// A UID as SMCCC returns it in w0..w3: bytes 0..3 of the UUID in w0, 4..7
/// in w1 and so on, each register's bytes little-endian (Linux's KVM UID,
/// `ARM_SMCCC_VENDOR_HYP_UID_KVM_REG_0` .. `_3`, reads the same way).
pub const fn uid_words(uid: [u8; 16]) -> [u32; 4] {
    let mut words = [0; 4];
    let mut i = 0;
    while i < 4 {
        words[i] = u32::from_le_bytes([uid[4 * i], uid[4 * i + 1], uid[4 * i + 2], uid[4 * i + 3]]);
        i += 1;
    }
    words
}

/// Arm PV time (DEN0057A), standard hypervisor service (fast, owner 5): the
/// monitor plays the hypervisor, so Linux learns how long the RTOS held each
/// of its cores while it had work there (stolen time).
pub mod pv_time {
    /// x1 = a PV time function ID: SUCCESS if it is implemented.
    pub const FEATURES: u32 = 0xC500_0020;
    /// Returns in x0 the address of the calling core's stolen-time record
    /// (`shm::StolenTime`), or an error.
    pub const ST: u32 = 0xC500_0021;
}

/// Trusted-OS calls (fast, SMC64, owner 50), made by the RTOS only. Which
/// functions the monitor implements is its dispatch table's to say
/// (`tandem_monitor_core::services::SERVICES`), not a list here.
///
/// Their convention is a function call's, not SMCCC's, so the monitor keeps
/// no more of the RTOS than a callee would (`monitor/firmware/src/entry.rs`,
/// `secure_sync`): arguments in x1..x3 (no more), results in x0..x3; x18..x29
/// and SP_EL1 preserved; every other general register, and SP_EL0, may hold
/// anything on return (`clobber_abi("C")` in the caller). The RTOS's EL1
/// exception registers (ELR, SPSR, ESR, FAR) are not preserved either: it
/// calls from outside any exception handler. The RTOS sets SCTLR_EL1 (its
/// MMU), VBAR_EL1, TCR_EL1 and MAIR_EL1 before its first YIELD on a core
/// and never changes them after: the monitor saves them only at a YIELD
/// that leaves the core to the monitor (its first on the core is one), not
/// at the YIELD that switches to Linux.
pub mod tos {
    /// The RTOS on this core is idle: run Linux until the next secure
    /// interrupt. Returns (in the RTOS) when one is pending, with nothing in
    /// x0..x3.
    pub const YIELD: u32 = 0xF200_0000;
    /// The RTOS cannot run as configured (it logged why on the secure
    /// console): power the machine off, so whoever started it sees it end.
    pub const STOP: u32 = 0xF200_0001;
}

/// The Tandem ABI version (`major << 16 | minor`): major changes break callers.
/// 1.1 added the Linux lock-state words and the spin-wait and dispatch
/// histograms; 1.2 the stolen-time records and PV time; 1.3 the RPC channels
/// and `sip::RPC_NOTIFY`; 1.4 the context-switch record; 1.5 the dispatch
/// hand-off counts in the core record; 1.6 the Linux generation in the
/// header; 1.7 the core record's second cache line, with the periodic
/// task's starts and what Linux held when they preempted it. 2.0: every
/// core's part of the shared region on pages of its own (records a page
/// apart, trace rings in whole pages, stolen-time records a page apart;
/// `crate::layout`), so a partition of the normal world maps only its
/// own; the RPC status `STATUS_DISABLED`. 2.1: RPMsg's part (resource
/// table, control words, vrings, buffer pool; `crate::rpmsg`) and
/// `sip::RPMSG_NOTIFY`.
pub const ABI_VERSION: u32 = 2 << 16 | 1;

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    CConstant {
        name: "ABI_VERSION",
        value: ABI_VERSION as i64,
    },
    CConstant {
        name: "SMC_VERSION",
        value: sip::VERSION as i64,
    },
    CConstant {
        name: "SMC_SHM_INFO",
        value: sip::SHM_INFO as i64,
    },
    CConstant {
        name: "SMC_RPC_NOTIFY",
        value: sip::RPC_NOTIFY as i64,
    },
    CConstant {
        name: "SMC_RPMSG_NOTIFY",
        value: sip::RPMSG_NOTIFY as i64,
    },
    CConstant {
        name: "SMC_PV_TIME_FEATURES",
        value: pv_time::FEATURES as i64,
    },
    CConstant {
        name: "SMC_PV_TIME_ST",
        value: pv_time::ST as i64,
    },
    CConstant {
        name: "SMC_SIP_CALL_COUNT",
        value: sip_query::CALL_COUNT as i64,
    },
    CConstant {
        name: "SMC_SIP_CALL_UID",
        value: sip_query::CALL_UID as i64,
    },
    CConstant {
        name: "SMC_SIP_REVISION",
        value: sip_query::REVISION as i64,
    },
    CConstant {
        name: "SIP_UID_0",
        value: uid_words(TANDEM_UID)[0] as i64,
    },
    CConstant {
        name: "SIP_UID_1",
        value: uid_words(TANDEM_UID)[1] as i64,
    },
    CConstant {
        name: "SIP_UID_2",
        value: uid_words(TANDEM_UID)[2] as i64,
    },
    CConstant {
        name: "SIP_UID_3",
        value: uid_words(TANDEM_UID)[3] as i64,
    },
    CConstant {
        name: "PSCI_CPU_ON_32",
        value: PSCI_CPU_ON_32 as i64,
    },
    CConstant {
        name: "PSCI_CPU_ON_64",
        value: PSCI_CPU_ON_64 as i64,
    },
    CConstant {
        name: "PSCI_CPU_OFF",
        value: PSCI_CPU_OFF as i64,
    },
    CConstant {
        name: "PSCI_SYSTEM_OFF",
        value: PSCI_SYSTEM_OFF as i64,
    },
    CConstant {
        name: "PSCI_SYSTEM_RESET",
        value: PSCI_SYSTEM_RESET as i64,
    },
    CConstant {
        name: "SMC_SUCCESS",
        value: ret::SUCCESS,
    },
    CConstant {
        name: "SMC_NOT_SUPPORTED",
        value: ret::NOT_SUPPORTED,
    },
    CConstant {
        name: "SMC_INVALID_PARAMETERS",
        value: ret::INVALID_PARAMETERS,
    },
    CConstant {
        name: "SMC_DENIED",
        value: ret::DENIED,
    },
    CConstant {
        name: "SMC_ALREADY_ON",
        value: ret::ALREADY_ON,
    },
    CConstant {
        name: "SMC_ON_PENDING",
        value: ret::ON_PENDING,
    },
    CConstant {
        name: "SMC_INTERNAL_FAILURE",
        value: ret::INTERNAL_FAILURE,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_words_pack_as_smccc_callers_read_them() {
        // Linux's KVM UID, 28b46fb6-2ec5-11e9-a9ca-4b564d003a74, and the
        // registers include/linux/arm-smccc.h expects for it.
        let kvm = [
            0x28, 0xb4, 0x6f, 0xb6, 0x2e, 0xc5, 0x11, 0xe9, 0xa9, 0xca, 0x4b, 0x56, 0x4d, 0x00,
            0x3a, 0x74,
        ];
        assert_eq!(
            uid_words(kvm),
            [0xb66f_b428, 0xe911_c52e, 0x564b_caa9, 0x743a_004d]
        );
        assert_eq!(uid_words(TANDEM_UID)[0], 0xebd0_47b6);
    }

    #[test]
    fn tandems_uid_is_a_random_rfc4122_uuid() {
        assert_eq!(TANDEM_UID[6] >> 4, 4, "version 4");
        assert_eq!(TANDEM_UID[8] >> 6, 0b10, "RFC 4122 variant");
    }

    #[test]
    fn the_queries_are_smc32_fast_calls_at_0xff0x_of_the_sip_owner() {
        for (id, number) in [
            (sip_query::CALL_COUNT, 0xFF00),
            (sip_query::CALL_UID, 0xFF01),
            (sip_query::REVISION, 0xFF03),
        ] {
            assert_eq!(id >> 31, 1, "fast");
            assert_eq!(id >> 30 & 1, 0, "SMC32");
            assert_eq!(id >> 24 & 0x3F, 2, "SiP");
            assert_eq!(id & 0xFFFF, number);
        }
    }
}
