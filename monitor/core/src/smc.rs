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

impl World {
    /// 0 for the normal world, 1 for the secure world (array index).
    pub const fn index(self) -> usize {
        match self {
            World::NonSecure => 0,
            World::Secure => 1,
        }
    }
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

/// What a function's handler sees of a call: the caller's x0..x7 (where the
/// trap code saved them: nothing is copied on the world switch's path) and
/// its core. How the call arrived ([`SmcCall`]) is the dispatcher's business.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    /// x0 (w0: the function ID), x1..x7 (the arguments).
    regs: &'a [u64; 8],
    /// Linear index of the calling core.
    pub core: usize,
}

/// One SMC as trapped: its registers and core, the SMC immediate and the
/// calling world.
#[derive(Clone, Copy, Debug)]
pub struct SmcCall<'a> {
    /// Registers and core, for the handler.
    pub args: Args<'a>,
    /// The `#imm16` of the SMC instruction (SMCCC requires 0).
    pub imm: u16,
    /// Who called.
    pub from: World,
}

impl<'a> SmcCall<'a> {
    /// A call with the caller's x0..x7.
    pub const fn new(regs: &'a [u64; 8], imm: u16, from: World, core: usize) -> Self {
        Self {
            args: Args { regs, core },
            imm,
            from,
        }
    }

    /// The function ID (w0).
    pub const fn fid(&self) -> FunctionId {
        self.args.fid()
    }
}

impl Args<'_> {
    /// The function ID (w0).
    pub const fn fid(&self) -> FunctionId {
        FunctionId(self.regs[0] as u32)
    }

    /// Argument `n` (1-based, like the register name), truncated to 32 bits for
    /// SMC32 calls as SMCCC requires.
    pub const fn arg(&self, n: usize) -> u64 {
        let v = self.regs[n];
        if self.fid().is_smc64() {
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
    /// Return SUCCESS to the caller once an interrupt is pending for the
    /// core (PSCI CPU_SUSPEND to a standby state): the caller has nothing to
    /// run until then, so the other world may.
    Standby,
    /// Power the calling core down; it never returns to the caller.
    CpuOff,
    /// Power the machine off (the RTOS's STOP; a Linux whose power-off the
    /// boot configuration says ends the machine).
    MachineOff,
    /// Stop the caller's Linux on this core at once, and on every core in
    /// `wake`, which must be woken to stop it (empty when a stop of it was
    /// under way already); start it again afterwards if `restart` (its
    /// reboot or panic: PSCI SYSTEM_RESET), or leave it off (SYSTEM_OFF).
    /// The RTOS and other Linux instances run on.
    StopLinux {
        /// Start this Linux again once it is off everywhere.
        restart: bool,
        /// Other cores to wake so that they stop it too (bit per core).
        wake: u64,
    },
    /// The call could not be served now without waiting at EL3 (a lock
    /// another core holds): the caller issues it again, the monitor
    /// returning to it first, so that an interrupt of the RTOS on its core
    /// is taken in between rather than after the wait.
    Retry,
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
pub struct Function<S: 'static> {
    /// The function ID (w0), SMC32 and SMC64 forms being two functions.
    pub id: u32,
    /// What the call does; it never sees hardware, only `S`.
    pub handle: fn(&S, &Args<'_>) -> Outcome,
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

/// Owner numbers (6 bits).
const OWNERS: usize = 64;

/// The dispatch table, with the functions for each calling world and owner
/// number looked up in one step (the RTOS's YIELD crosses it on every world
/// switch, so its cost is part of the switch).
pub struct Table<S: 'static> {
    services: &'static [Service<S>],
    /// `routes[world][owner]`: the functions of the service answering that
    /// owner number for callers in that world (see [`World::index`]); empty
    /// where none does.
    routes: [[&'static [Function<S>]; OWNERS]; 2],
}

impl<S: 'static> Table<S> {
    /// The table of `services`, whose owner ranges must not overlap (checked
    /// at build time: a table is a `const`).
    pub const fn new(services: &'static [Service<S>]) -> Self {
        let mut routes: [[&'static [Function<S>]; OWNERS]; 2] = [[&[]; OWNERS]; 2];
        let mut owned = [false; OWNERS];
        let mut i = 0;
        while i < services.len() {
            let s = &services[i];
            assert!(
                (*s.owners.end() as usize) < OWNERS,
                "owner numbers have 6 bits"
            );
            let mut owner = *s.owners.start() as usize;
            while owner <= *s.owners.end() as usize {
                assert!(!owned[owner], "two services share an owner");
                owned[owner] = true;
                let mut k = 0;
                while k < s.callers.len() {
                    routes[s.callers[k].index()][owner] = s.functions;
                    k += 1;
                }
                owner += 1;
            }
            i += 1;
        }
        Self { services, routes }
    }

    /// The services, in table order.
    pub const fn services(&self) -> &'static [Service<S>] {
        self.services
    }

    /// Routes a call to its function in the service owning its owner number.
    ///
    /// Calls that break SMCCC rules (non-zero immediate, yielding call,
    /// reserved bits set), calls nobody owns, callers a service does not
    /// serve and functions a service does not list answer NOT_SUPPORTED:
    /// never a hang, never a crash, whatever the registers hold.
    #[inline(always)]
    pub fn dispatch(&self, state: &S, call: &SmcCall<'_>) -> Outcome {
        let fid = call.fid();
        if call.imm != 0 || !fid.is_fast() || fid.reserved_bits() != 0 {
            return Outcome::NOT_SUPPORTED;
        }
        let functions = self.routes[call.from.index()][fid.owner() as usize];
        // The handler gets a copy of the arguments alone, so the rest of the
        // call never needs to be in memory.
        let args = call.args;
        for f in functions {
            if f.id == fid.0 {
                return (f.handle)(state, &args);
            }
        }
        Outcome::NOT_SUPPORTED
    }

    /// Every function ID the table answers for callers in `world`, in table
    /// order.
    pub fn implemented(&self, world: World) -> impl Iterator<Item = u32> + '_ {
        self.services
            .iter()
            .filter(move |s| s.callers.contains(&world))
            .flat_map(|s| s.functions.iter().map(|f| f.id))
    }
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

    fn regs(fid: u32) -> [u64; 8] {
        let mut r = [u64::MAX; 8];
        r[0] = fid.into();
        r
    }

    fn call(regs: &[u64; 8]) -> SmcCall<'_> {
        SmcCall::new(regs, 0, World::NonSecure, 0)
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
        let r = regs(0x8400_0003);
        assert_eq!(call(&r).args.arg(1), 0xFFFF_FFFF);
        let r = regs(0xC400_0003);
        assert_eq!(call(&r).args.arg(7), u64::MAX);
        assert_eq!(call(&r).fid(), FunctionId(0xC400_0003));
    }

    fn answer_7(_: &(), _: &Args<'_>) -> Outcome {
        Outcome::value(7)
    }

    fn answer_8(_: &(), _: &Args<'_>) -> Outcome {
        Outcome::value(8)
    }

    const TABLE: Table<()> = Table::new(&[
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
    ]);

    fn dispatch(fid: u32, from: World) -> Outcome {
        let r = regs(fid);
        TABLE.dispatch(&(), &SmcCall::new(&r, 0, from, 0))
    }

    #[test]
    fn routes_by_owner_function_and_world() {
        let ns = World::NonSecure;
        assert_eq!(dispatch(0x8200_0000, ns), Outcome::value(7));
        assert_eq!(dispatch(0xC300_FFFF, ns), Outcome::value(8));
        assert_eq!(
            dispatch(0x8200_0001, ns),
            Outcome::NOT_SUPPORTED,
            "a function the service does not list"
        );
        assert_eq!(dispatch(0x8400_0000, ns), Outcome::NOT_SUPPORTED);
        assert_eq!(dispatch(0x8200_0000, World::Secure), Outcome::NOT_SUPPORTED);
        assert_eq!(dispatch(0xF200_0000, World::Secure), Outcome::value(7));
        assert_eq!(dispatch(0xF200_0000, ns), Outcome::NOT_SUPPORTED);
        assert_eq!(dispatch(0xF100_0000, World::Secure), Outcome::NOT_SUPPORTED);
    }

    #[test]
    fn implemented_lists_the_table_per_world() {
        let mut ids = TABLE.implemented(World::NonSecure);
        assert_eq!(ids.next(), Some(0x8200_0000));
        assert_eq!(ids.next(), Some(0xC300_FFFF));
        assert_eq!(ids.next(), None);
        assert_eq!(TABLE.implemented(World::Secure).count(), 1);
        assert_eq!(TABLE.services().len(), 2);
    }

    #[test]
    fn malformed_calls_are_not_supported() {
        let r = regs(0x8200_0000);
        let c = SmcCall::new(&r, 1, World::NonSecure, 0);
        assert_eq!(
            TABLE.dispatch(&(), &c),
            Outcome::NOT_SUPPORTED,
            "imm16 != 0"
        );
        let ns = World::NonSecure;
        assert_eq!(
            dispatch(0x0200_0000, ns),
            Outcome::NOT_SUPPORTED,
            "yielding"
        );
        assert_eq!(
            dispatch(0x8201_0000, ns),
            Outcome::NOT_SUPPORTED,
            "reserved bits"
        );
    }
}
