//! The monitor's SMC services and their dispatch table: Arm architecture calls
//! (SMCCC 1.1), PSCI 1.1, Arm PV time (standard hypervisor service) and
//! Tandem's SiP calls.

use crate::psci::PsciState;
use crate::smc::{Outcome, Service, Signal, SmcCall, World, owner};
use tandem_abi::smc::*;
use tandem_board::Board;

/// State the services work on; the firmware keeps one behind a lock.
#[derive(Debug)]
pub struct Monitor {
    /// PSCI power states.
    pub psci: PsciState,
    /// The board we run on.
    pub board: Board,
    /// PV time is offered (boot configuration feature `FEATURE_STEAL_TIME`).
    pub steal_time: bool,
    /// Cores running an RPC server (boot configuration; 0: no RPC).
    pub rpc_cores: u8,
}

impl Monitor {
    /// Fresh state for `board`.
    pub const fn new(board: Board) -> Self {
        Self {
            psci: PsciState::new(board),
            board,
            steal_time: false,
            rpc_cores: 0,
        }
    }
}

/// The dispatch table (TF-A style: one service per owner range). Searched in
/// order: the RTOS's YIELD (trusted-OS), taken on every world switch, stays
/// near the front; PV time, called once per core at boot, goes last.
pub const SERVICES: &[Service<Monitor>] = &[
    Service {
        name: "arm-arch",
        owners: owner::ARCH..=owner::ARCH,
        callers: &[World::NonSecure, World::Secure],
        handle: arch,
    },
    Service {
        name: "psci",
        owners: owner::STANDARD..=owner::STANDARD,
        callers: &[World::NonSecure],
        handle: psci,
    },
    Service {
        name: "trusted-os",
        owners: owner::TRUSTED_OS,
        callers: &[World::Secure],
        handle: trusted_os,
    },
    Service {
        name: "tandem-sip",
        owners: owner::SIP..=owner::SIP,
        callers: &[World::NonSecure],
        handle: sip,
    },
    Service {
        name: "pv-time",
        owners: owner::STANDARD_HYP..=owner::STANDARD_HYP,
        callers: &[World::NonSecure],
        handle: pv_time,
    },
];

/// Handles one call with the full table.
pub fn handle(monitor: &mut Monitor, call: &SmcCall) -> Outcome {
    crate::smc::dispatch(SERVICES, monitor, call)
}

fn result(r: Result<i64, i64>) -> Outcome {
    Outcome::value(r.unwrap_or_else(|e| e))
}

fn arch(m: &mut Monitor, call: &SmcCall) -> Outcome {
    match call.fid.0 {
        SMCCC_VERSION => Outcome::value(SMCCC_VERSION_1_1.into()),
        SMCCC_ARCH_FEATURES => match call.arg(1) as u32 {
            SMCCC_VERSION | SMCCC_ARCH_FEATURES => Outcome::value(ret::SUCCESS),
            // Linux asks this before PV_TIME_FEATURES (arch/arm64/kernel/paravirt.c).
            pv_time::FEATURES | pv_time::ST if m.steal_time => Outcome::value(ret::SUCCESS),
            // No Spectre workarounds are offered: the supported cores
            // (Cortex-A53) are not affected.
            _ => Outcome::NOT_SUPPORTED,
        },
        _ => Outcome::NOT_SUPPORTED,
    }
}

/// PSCI functions PSCI_FEATURES reports as present.
const PSCI_IMPLEMENTED: &[u32] = &[
    PSCI_VERSION,
    PSCI_FEATURES,
    PSCI_CPU_ON_32,
    PSCI_CPU_ON_64,
    PSCI_CPU_OFF,
    PSCI_AFFINITY_INFO_32,
    PSCI_AFFINITY_INFO_64,
    PSCI_MIGRATE_INFO_TYPE,
    PSCI_SYSTEM_OFF,
    PSCI_SYSTEM_RESET,
    SMCCC_VERSION,
];

fn psci(m: &mut Monitor, call: &SmcCall) -> Outcome {
    match call.fid.0 {
        PSCI_VERSION => Outcome::value(PSCI_VERSION_1_1.into()),
        PSCI_FEATURES => {
            let queried = call.arg(1) as u32;
            if PSCI_IMPLEMENTED.contains(&queried) {
                Outcome::value(ret::SUCCESS)
            } else {
                Outcome::NOT_SUPPORTED
            }
        }
        PSCI_CPU_ON_32 | PSCI_CPU_ON_64 => {
            match m.psci.cpu_on(call.arg(1), call.arg(2), call.arg(3)) {
                Ok(()) => {
                    Outcome::ReturnAndSignal([0; 4], Signal::wake(call.arg(1) as usize & 0xFF))
                }
                Err(e) => Outcome::value(e),
            }
        }
        PSCI_CPU_OFF => match m.psci.cpu_off(call.core) {
            Ok(()) => Outcome::CpuOff,
            Err(e) => Outcome::value(e),
        },
        PSCI_AFFINITY_INFO_32 | PSCI_AFFINITY_INFO_64 => {
            result(m.psci.affinity_info(call.arg(1), call.arg(2)))
        }
        PSCI_MIGRATE_INFO_TYPE => Outcome::value(PSCI_MIGRATE_INFO_TYPE_NOT_PRESENT.into()),
        PSCI_SYSTEM_OFF => Outcome::SystemOff,
        PSCI_SYSTEM_RESET => Outcome::SystemReset,
        _ => Outcome::NOT_SUPPORTED,
    }
}

/// Arm PV time (DEN0057A). Off unless the boot configuration asks for it:
/// then every call answers NOT_SUPPORTED, which is how Linux learns there is
/// no stolen time to account.
fn pv_time(m: &mut Monitor, call: &SmcCall) -> Outcome {
    if !m.steal_time {
        return Outcome::NOT_SUPPORTED;
    }
    match call.fid.0 {
        pv_time::FEATURES => match call.arg(1) as u32 {
            pv_time::FEATURES | pv_time::ST => Outcome::value(ret::SUCCESS),
            _ => Outcome::NOT_SUPPORTED,
        },
        // The calling core's record; a core Linux does not run on has none
        // (not reachable from Linux today, but the answer must not point at
        // a record nobody keeps).
        pv_time::ST => match (call.core < m.board.max_cores).then(|| m.psci.state(call.core)) {
            Some(crate::psci::CoreState::On) => Outcome::Return([
                m.board.shared.base + tandem_abi::shm::steal_offset(call.core) as u64,
                0,
                0,
                0,
            ]),
            _ => Outcome::INVALID_PARAMETERS,
        },
        _ => Outcome::NOT_SUPPORTED,
    }
}

fn trusted_os(_: &mut Monitor, call: &SmcCall) -> Outcome {
    match call.fid.0 {
        tos::YIELD => Outcome::YieldToNormal,
        _ => Outcome::NOT_SUPPORTED,
    }
}

fn sip(m: &mut Monitor, call: &SmcCall) -> Outcome {
    match call.fid.0 {
        sip::VERSION => Outcome::value(ABI_VERSION.into()),
        sip::SHM_INFO => Outcome::Return([0, m.board.shared.base, m.board.shared.size, 0]),
        sip::RPC_NOTIFY if m.rpc_cores == 0 => Outcome::NOT_SUPPORTED,
        // The channel number is the whole of x1: junk above it is an error,
        // not a channel.
        sip::RPC_NOTIFY => match usize::try_from(call.arg(1))
            .ok()
            .and_then(|ch| tandem_abi::rpc::server_core(m.rpc_cores, ch))
        {
            Some(core) => Outcome::ReturnAndSignal([0; 4], Signal::rpc(core)),
            None => Outcome::INVALID_PARAMETERS,
        },
        _ => Outcome::NOT_SUPPORTED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psci::CheckIn;
    use crate::smc::FunctionId;
    use tandem_board::BOARD;

    fn booted() -> Monitor {
        let mut m = Monitor::new(BOARD);
        m.psci.check_in(
            0,
            CheckIn::BootCore {
                entry: 0x4020_0000,
                context_id: 0,
            },
        );
        m.psci.take_pending(0);
        for c in 1..4 {
            m.psci.check_in(c, CheckIn::Secondary);
        }
        m
    }

    #[test]
    fn only_the_rtos_may_yield_and_linux_may_not_pretend() {
        let mut m = booted();
        let mut call = SmcCall {
            fid: FunctionId(tos::YIELD),
            args: [0; 7],
            imm: 0,
            from: World::Secure,
            core: 1,
        };
        assert_eq!(handle(&mut m, &call), Outcome::YieldToNormal);
        call.from = World::NonSecure;
        assert_eq!(handle(&mut m, &call), Outcome::NOT_SUPPORTED);
        call.from = World::Secure;
        call.fid = FunctionId(tos::YIELD + 1);
        assert_eq!(handle(&mut m, &call), Outcome::NOT_SUPPORTED);
        call.fid = FunctionId(PSCI_CPU_OFF);
        assert_eq!(
            handle(&mut m, &call),
            Outcome::NOT_SUPPORTED,
            "PSCI is Linux's"
        );
    }

    fn smc(m: &mut Monitor, fid: u32, args: &[u64]) -> Outcome {
        let mut a = [0; 7];
        a[..args.len()].copy_from_slice(args);
        handle(
            m,
            &SmcCall {
                fid: FunctionId(fid),
                args: a,
                imm: 0,
                from: World::NonSecure,
                core: 0,
            },
        )
    }

    #[test]
    fn versions() {
        let mut m = booted();
        assert_eq!(smc(&mut m, PSCI_VERSION, &[]), Outcome::value(0x1_0001));
        assert_eq!(smc(&mut m, SMCCC_VERSION, &[]), Outcome::value(0x1_0001));
        assert_eq!(
            smc(&mut m, sip::VERSION, &[]),
            Outcome::value(ABI_VERSION.into())
        );
        assert_eq!(smc(&mut m, PSCI_MIGRATE_INFO_TYPE, &[]), Outcome::value(2));
    }

    #[test]
    fn features_discovery_as_linux_does_it() {
        let mut m = booted();
        // Linux asks PSCI_FEATURES(SMCCC_VERSION) before using SMCCC 1.1.
        assert_eq!(
            smc(&mut m, PSCI_FEATURES, &[SMCCC_VERSION.into()]),
            Outcome::value(0)
        );
        assert_eq!(
            smc(&mut m, PSCI_FEATURES, &[PSCI_CPU_SUSPEND_64.into()]),
            Outcome::NOT_SUPPORTED
        );
        // The queried ID is a 32-bit argument: junk above bit 31 is ignored.
        assert_eq!(
            smc(
                &mut m,
                PSCI_FEATURES,
                &[(1 << 40) | u64::from(PSCI_CPU_OFF)]
            ),
            Outcome::value(0)
        );
        assert_eq!(
            smc(
                &mut m,
                SMCCC_ARCH_FEATURES,
                &[SMCCC_ARCH_WORKAROUND_1.into()]
            ),
            Outcome::NOT_SUPPORTED
        );
    }

    #[test]
    fn cpu_on_wakes_and_off_parks() {
        let mut m = booted();
        assert_eq!(
            smc(&mut m, PSCI_CPU_ON_64, &[1, 0x4020_0000, 9]),
            Outcome::ReturnAndSignal([0; 4], Signal::wake(1))
        );
        assert_eq!(
            smc(&mut m, PSCI_CPU_ON_64, &[1, 0x4020_0000, 9]),
            Outcome::value(ret::ON_PENDING)
        );
        m.psci.take_pending(1);
        let off = handle(
            &mut m,
            &SmcCall {
                fid: FunctionId(PSCI_CPU_OFF),
                args: [0; 7],
                imm: 0,
                from: World::NonSecure,
                core: 1,
            },
        );
        assert_eq!(off, Outcome::CpuOff);
        assert_eq!(
            smc(&mut m, PSCI_AFFINITY_INFO_64, &[1, 0]),
            Outcome::value(1)
        );
    }

    #[test]
    fn system_calls() {
        let mut m = booted();
        assert_eq!(smc(&mut m, PSCI_SYSTEM_OFF, &[]), Outcome::SystemOff);
        assert_eq!(smc(&mut m, PSCI_SYSTEM_RESET, &[]), Outcome::SystemReset);
        assert_eq!(
            smc(&mut m, sip::SHM_INFO, &[]),
            Outcome::Return([0, BOARD.shared.base, BOARD.shared.size, 0])
        );
    }

    fn smc_on(m: &mut Monitor, core: usize, fid: u32, arg: u64) -> Outcome {
        handle(
            m,
            &SmcCall {
                fid: FunctionId(fid),
                args: [arg, 0, 0, 0, 0, 0, 0],
                imm: 0,
                from: World::NonSecure,
                core,
            },
        )
    }

    #[test]
    fn pv_time_is_discovered_as_linux_does_it_when_on() {
        use tandem_abi::shm::steal_offset;
        let mut m = booted();
        m.steal_time = true;
        // arch/arm64/kernel/paravirt.c: ARCH_FEATURES(PV_TIME_FEATURES), then
        // PV_TIME_FEATURES(PV_TIME_ST), then PV_TIME_ST on each core.
        let ok = Outcome::value(ret::SUCCESS);
        assert_eq!(
            smc_on(&mut m, 0, SMCCC_ARCH_FEATURES, pv_time::FEATURES.into()),
            ok
        );
        assert_eq!(smc_on(&mut m, 0, pv_time::FEATURES, pv_time::ST.into()), ok);
        assert_eq!(
            smc_on(&mut m, 0, pv_time::FEATURES, pv_time::FEATURES.into()),
            ok
        );
        assert_eq!(
            smc_on(&mut m, 0, pv_time::FEATURES, 0xC500_0022),
            Outcome::NOT_SUPPORTED
        );
        let record = |core: usize| BOARD.shared.base + steal_offset(core) as u64;
        assert_eq!(
            smc_on(&mut m, 0, pv_time::ST, 0),
            Outcome::Return([record(0), 0, 0, 0])
        );
        assert_eq!(
            smc(&mut m, PSCI_CPU_ON_64, &[2, 0x4020_0000, 0]),
            Outcome::ReturnAndSignal([0; 4], Signal::wake(2))
        );
        m.psci.take_pending(2);
        assert_eq!(
            smc_on(&mut m, 2, pv_time::ST, 0),
            Outcome::Return([record(2), 0, 0, 0])
        );
        // A core Linux does not run on (off, or beyond the board) has no record.
        assert_eq!(
            smc_on(&mut m, 1, pv_time::ST, 0),
            Outcome::INVALID_PARAMETERS
        );
        assert_eq!(
            smc_on(&mut m, 9, pv_time::ST, 0),
            Outcome::INVALID_PARAMETERS
        );
        // SMC32 forms and unknown numbers in the owner: not supported.
        assert_eq!(smc_on(&mut m, 0, 0x8500_0021, 0), Outcome::NOT_SUPPORTED);
        assert_eq!(smc_on(&mut m, 0, 0xC500_0000, 0), Outcome::NOT_SUPPORTED);
        // Only Linux may ask.
        let mut call = SmcCall {
            fid: FunctionId(pv_time::ST),
            args: [0; 7],
            imm: 0,
            from: World::Secure,
            core: 0,
        };
        assert_eq!(handle(&mut m, &call), Outcome::NOT_SUPPORTED);
        call.from = World::NonSecure;
        assert_eq!(handle(&mut m, &call), Outcome::Return([record(0), 0, 0, 0]));
    }

    #[test]
    fn rpc_notify_rings_the_channels_server() {
        let mut m = booted();
        assert_eq!(
            smc(&mut m, sip::RPC_NOTIFY, &[0]),
            Outcome::NOT_SUPPORTED,
            "no server configured"
        );
        m.rpc_cores = 0b1010;
        assert_eq!(
            smc(&mut m, sip::RPC_NOTIFY, &[0]),
            Outcome::ReturnAndSignal([0; 4], Signal::rpc(1))
        );
        assert_eq!(
            smc(&mut m, sip::RPC_NOTIFY, &[3]),
            Outcome::ReturnAndSignal([0; 4], Signal::rpc(3))
        );
        for bad in [4, u64::MAX, 1 << 32] {
            assert_eq!(
                smc(&mut m, sip::RPC_NOTIFY, &[bad]),
                Outcome::INVALID_PARAMETERS,
                "{bad:#x}"
            );
        }
        // SMC32 form: not ours.
        assert_eq!(
            smc(&mut m, sip::RPC_NOTIFY & !(1 << 30), &[0]),
            Outcome::NOT_SUPPORTED
        );
        // The RTOS may not ring itself through Linux's service.
        let call = SmcCall {
            fid: FunctionId(sip::RPC_NOTIFY),
            args: [0; 7],
            imm: 0,
            from: World::Secure,
            core: 1,
        };
        assert_eq!(handle(&mut m, &call), Outcome::NOT_SUPPORTED);
    }

    #[test]
    fn pv_time_is_absent_when_off() {
        let mut m = booted();
        for (fid, arg) in [
            (SMCCC_ARCH_FEATURES, pv_time::FEATURES),
            (pv_time::FEATURES, pv_time::ST),
            (pv_time::ST, 0),
        ] {
            assert_eq!(
                smc(&mut m, fid, &[arg.into()]),
                Outcome::NOT_SUPPORTED,
                "{fid:#x}"
            );
        }
    }

    /// xorshift64*: a tiny deterministic generator for the fuzz loop.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[test]
    fn random_calls_never_panic_and_unknown_ids_are_not_supported() {
        let known = IMPLEMENTED;
        let mut seed = 0x1234_5678_9ABC_DEF0u64;
        let mut m = booted();
        m.steal_time = true;
        m.rpc_cores = 0b0010;
        for i in 0..200_000 {
            // Half fully random IDs, half in the owner ranges we serve.
            let fid = if i % 2 == 0 {
                next(&mut seed) as u32
            } else {
                let owner = [0u32, 2, 4, 5][(next(&mut seed) % 4) as usize];
                0x8000_0000 | (owner << 24) | (next(&mut seed) as u32 & 0x4000_00FF)
            };
            let args: [u64; 7] = core::array::from_fn(|_| next(&mut seed));
            let imm = if next(&mut seed).is_multiple_of(16) {
                next(&mut seed) as u16
            } else {
                0
            };
            let call = SmcCall {
                fid: FunctionId(fid),
                args,
                imm,
                from: World::NonSecure,
                core: 0,
            };
            let out = handle(&mut m, &call);
            if !known.contains(&fid) || imm != 0 {
                assert_eq!(out, Outcome::NOT_SUPPORTED, "fid {fid:#x} imm {imm}");
            }
        }
    }
}
