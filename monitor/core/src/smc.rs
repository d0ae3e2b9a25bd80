//! SMC calls as the monitor receives them: function-ID decoding (SMCCC 1.1) and
//! dispatch through a table of services, each owning a range of owner numbers.

use core::ops::RangeInclusive;
use tandem_abi::smc::ret;

/// Which world made a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum World {
    /// Linux (NS-EL1).
    NonSecure,
    /// The RTOS (S-EL1).
    Secure,
}

/// A 32-bit SMCCC function identifier (w0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionId(pub u32);

impl FunctionId {
    /// Fast call (bit 31); yielding calls are not implemented.
    pub const fn is_fast(self) -> bool {
        self.0 & (1 << 31) != 0
    }

    /// SMC64 calling convention (bit 30); otherwise SMC32.
    pub const fn is_smc64(self) -> bool {
        self.0 & (1 << 30) != 0
    }

    /// Owning entity number (bits 29:24).
    pub const fn owner(self) -> u8 {
        ((self.0 >> 24) & 0x3F) as u8
    }

    /// Bits 23:16, which must be zero in SMCCC 1.1.
    pub const fn reserved_bits(self) -> u32 {
        (self.0 >> 16) & 0xFF
    }

    /// Function number within the owner (bits 15:0).
    pub const fn number(self) -> u16 {
        self.0 as u16
    }
}

/// Owner numbers (SMCCC table 6-2).
pub mod owner {
    /// Arm architecture calls.
    pub const ARCH: u8 = 0;
    /// Silicon-partner (SiP) calls: Tandem's calls from Linux.
    pub const SIP: u8 = 2;
    /// Standard secure services (PSCI).
    pub const STANDARD: u8 = 4;
    /// Standard hypervisor services (PV time).
    pub const STANDARD_HYP: u8 = 5;
    /// Trusted OS calls: the RTOS's calls to the monitor.
    pub const TRUSTED_OS: core::ops::RangeInclusive<u8> = 50..=63;
}

/// One SMC as trapped: function ID, arguments x1..x7, the SMC immediate and
/// the calling world.
#[derive(Clone, Copy, Debug)]
pub struct SmcCall {
    /// w0.
    pub fid: FunctionId,
    /// x1..=x7.
    pub args: [u64; 7],
    /// The `#imm16` of the SMC instruction (SMCCC requires 0).
    pub imm: u16,
    /// Who called.
    pub from: World,
    /// Linear index of the calling core.
    pub core: usize,
}

impl SmcCall {
    /// Argument `n` (1-based, like the register name), truncated to 32 bits for
    /// SMC32 calls as SMCCC requires.
    pub const fn arg(&self, n: usize) -> u64 {
        let v = self.args[n - 1];
        if self.fid.is_smc64() {
            v
        } else {
            v & 0xFFFF_FFFF
        }
    }
}

/// A core to signal after a call returns: wake it for a CPU_ON, or raise its
/// RPC doorbell. One plain word (no niche), so `Outcome` keeps the layout and
/// variants it had before RPC, and the RTOS's YIELD path its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signal(usize);

impl Signal {
    const RPC: usize = 1 << (usize::BITS - 1);

    /// Wake `core` (CPU_ON).
    pub const fn wake(core: usize) -> Self {
        Self(core & !Self::RPC)
    }

    /// Ring `core`'s RPC doorbell.
    pub const fn rpc(core: usize) -> Self {
        Self(core | Self::RPC)
    }

    /// The core to signal.
    pub const fn core(self) -> usize {
        self.0 & !Self::RPC
    }

    /// Whether it is the RPC doorbell (else a wake-up).
    pub const fn is_rpc(self) -> bool {
        self.0 & Self::RPC != 0
    }
}

/// What the monitor must do after a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Return x0..x3 to the caller.
    Return([u64; 4]),
    /// Return x0..x3, then signal another core: wake it (a CPU_ON was
    /// accepted) or ring its RPC doorbell (a call waits for its server).
    ReturnAndSignal([u64; 4], Signal),
    /// The secure world is idle on this core: run the normal world.
    YieldToNormal,
    /// Power the calling core down; it never returns to the caller.
    CpuOff,
    /// Power the machine off.
    SystemOff,
    /// Reset the machine.
    SystemReset,
}

impl Outcome {
    /// Return one value in x0 (x1..x3 zeroed so nothing leaks).
    pub const fn value(x0: i64) -> Self {
        Outcome::Return([x0 as u64, 0, 0, 0])
    }

    /// The answer to any call the monitor does not implement.
    pub const NOT_SUPPORTED: Outcome = Outcome::value(ret::NOT_SUPPORTED);
    /// The answer to a recognised call with bad arguments.
    pub const INVALID_PARAMETERS: Outcome = Outcome::value(ret::INVALID_PARAMETERS);
}

/// One function of a service: its full function ID and its handler.
pub struct Function<S> {
    /// The function ID (w0), SMC32 and SMC64 forms being two functions.
    pub id: u32,
    /// What the call does; it never sees hardware, only `S`.
    pub handle: fn(&S, &SmcCall) -> Outcome,
}

/// A service in the dispatch table: it owns `owners` and answers the
/// functions it lists for the worlds allowed to call it. The table is the
/// one list of what the monitor implements: PSCI_FEATURES, the fuzz test and
/// the generated C header all read it.
pub struct Service<S: 'static> {
    /// For logs and docs.
    pub name: &'static str,
    /// Owner numbers routed here.
    pub owners: RangeInclusive<u8>,
    /// Worlds allowed to call.
    pub callers: &'static [World],
    /// Its functions; any other ID in its owner range answers NOT_SUPPORTED.
    pub functions: &'static [Function<S>],
}

impl<S: 'static> Service<S> {
    /// The function `id` of this service, if it has one.
    pub fn function(&self, id: u32) -> Option<&Function<S>> {
        self.functions.iter().find(|f| f.id == id)
    }
}

/// Routes a call to its function in the service owning its owner number.
///
/// Calls that break SMCCC rules (non-zero immediate, yielding call, reserved
/// bits set), calls nobody owns and functions a service does not list answer
/// NOT_SUPPORTED: never a hang, never a crash, whatever the registers hold.
pub fn dispatch<S: 'static>(table: &[Service<S>], state: &S, call: &SmcCall) -> Outcome {
    let fid = call.fid;
    if call.imm != 0 || !fid.is_fast() || fid.reserved_bits() != 0 {
        return Outcome::NOT_SUPPORTED;
    }
    table
        .iter()
        .find(|s| s.owners.contains(&fid.owner()) && s.callers.contains(&call.from))
        .and_then(|s| s.function(fid.0))
        .map_or(Outcome::NOT_SUPPORTED, |f| (f.handle)(state, call))
}

/// Every function ID `table` answers for callers in `world`, in table order.
pub fn implemented<S: 'static>(
    table: &[Service<S>],
    world: World,
) -> impl Iterator<Item = u32> + '_ {
    table
        .iter()
        .filter(move |s| s.callers.contains(&world))
        .flat_map(|s| s.functions.iter().map(|f| f.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_keep_core_and_kind_apart() {
        for core in [0, 3, 7, 255] {
            assert_eq!(Signal::wake(core).core(), core);
            assert!(!Signal::wake(core).is_rpc());
            assert_eq!(Signal::rpc(core).core(), core);
            assert!(Signal::rpc(core).is_rpc());
        }
        assert_ne!(Signal::wake(1), Signal::rpc(1));
    }

    fn call(fid: u32) -> SmcCall {
        SmcCall {
            fid: FunctionId(fid),
            args: [u64::MAX; 7],
            imm: 0,
            from: World::NonSecure,
            core: 0,
        }
    }

    #[test]
    fn decodes_fields() {
        let f = FunctionId(0xC400_0003);
        assert!(f.is_fast() && f.is_smc64());
        assert_eq!((f.owner(), f.number(), f.reserved_bits()), (4, 3, 0));
        let f = FunctionId(0x8200_0001);
        assert!(f.is_fast() && !f.is_smc64());
        assert_eq!(f.owner(), 2);
        assert_eq!(FunctionId(0x3F00_0000).owner(), 63);
        assert_eq!(FunctionId(0x8001_0000).reserved_bits(), 1);
    }

    #[test]
    fn smc32_arguments_are_truncated() {
        let c = call(0x8400_0003);
        assert_eq!(c.arg(1), 0xFFFF_FFFF);
        assert_eq!(call(0xC400_0003).arg(7), u64::MAX);
    }

    fn answer_7(_: &(), _: &SmcCall) -> Outcome {
        Outcome::value(7)
    }

    fn answer_8(_: &(), _: &SmcCall) -> Outcome {
        Outcome::value(8)
    }

    const TABLE: &[Service<()>] = &[
        Service {
            name: "test",
            owners: 2..=3,
            callers: &[World::NonSecure],
            functions: &[
                Function {
                    id: 0x8200_0000,
                    handle: answer_7,
                },
                Function {
                    id: 0xC300_FFFF,
                    handle: answer_8,
                },
            ],
        },
        Service {
            name: "secure",
            owners: 50..=63,
            callers: &[World::Secure],
            functions: &[Function {
                id: 0xF200_0000,
                handle: answer_7,
            }],
        },
    ];

    #[test]
    fn routes_by_owner_function_and_world() {
        assert_eq!(dispatch(TABLE, &(), &call(0x8200_0000)), Outcome::value(7));
        assert_eq!(dispatch(TABLE, &(), &call(0xC300_FFFF)), Outcome::value(8));
        assert_eq!(
            dispatch(TABLE, &(), &call(0x8200_0001)),
            Outcome::NOT_SUPPORTED,
            "a function the service does not list"
        );
        assert_eq!(
            dispatch(TABLE, &(), &call(0x8400_0000)),
            Outcome::NOT_SUPPORTED
        );
        let mut secure = call(0x8200_0000);
        secure.from = World::Secure;
        assert_eq!(dispatch(TABLE, &(), &secure), Outcome::NOT_SUPPORTED);
        secure.fid = FunctionId(0xF200_0000);
        assert_eq!(dispatch(TABLE, &(), &secure), Outcome::value(7));
    }

    #[test]
    fn implemented_lists_the_table_per_world() {
        let normal: [u32; 2] = core::array::from_fn({
            let mut ids = implemented(TABLE, World::NonSecure);
            move |_| ids.next().unwrap()
        });
        assert_eq!(normal, [0x8200_0000, 0xC300_FFFF]);
        assert_eq!(implemented(TABLE, World::NonSecure).count(), 2);
        assert_eq!(implemented(TABLE, World::Secure).count(), 1);
    }

    #[test]
    fn malformed_calls_are_not_supported() {
        let mut c = call(0x8200_0000);
        c.imm = 1;
        assert_eq!(
            dispatch(TABLE, &(), &c),
            Outcome::NOT_SUPPORTED,
            "imm16 != 0"
        );
        assert_eq!(
            dispatch(TABLE, &(), &call(0x0200_0000)),
            Outcome::NOT_SUPPORTED,
            "yielding"
        );
        assert_eq!(
            dispatch(TABLE, &(), &call(0x8201_0000)),
            Outcome::NOT_SUPPORTED,
            "reserved bits"
        );
    }
}
