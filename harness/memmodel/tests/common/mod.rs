//! Helpers the integration tests share: building a model, making accesses, turning the MMU on, and a per-core scheduler like QEMU's.

#![allow(dead_code)]

use tandem_memmodel::{
    AccessKind, DataAccess, ExceptionLevel, MemoryModel, ModelOptions, Profile, SystemEvent,
    TranslationRegister,
};

/// A model of `cores` cores under the built-in profile `name`.
pub fn model(name: &str, cores: usize) -> MemoryModel {
    MemoryModel::new(
        Profile::builtin(name).expect("built-in profile"),
        cores,
        ModelOptions::default(),
    )
}

/// A load at EL1 whose virtual and physical addresses are `address`.
pub fn load(address: u64) -> DataAccess {
    load_at(address, address)
}

/// A load at EL1 of `va`, backed by `pa`.
pub fn load_at(va: u64, pa: u64) -> DataAccess {
    DataAccess {
        virtual_address: va,
        physical_address: pa,
        size: 8,
        kind: AccessKind::Load,
        el: ExceptionLevel::El1,
        io: false,
    }
}

/// A store at EL1 to `address`.
pub fn store(address: u64) -> DataAccess {
    DataAccess {
        kind: AccessKind::Store,
        ..load(address)
    }
}

/// TCR_EL1 as Linux sets it for 48-bit VAs, 4 KiB pages and 16-bit ASIDs.
pub const LINUX_TCR: u64 = 16 | (16 << 16) | (0b10 << 30) | (1 << 36);

/// Writes a register on `core` as a decoded MSR would.
pub fn write(model: &mut MemoryModel, core: usize, register: TranslationRegister, value: u64) {
    model.system_event(core, &SystemEvent::RegisterWrite { register, value });
}

/// Turns `core`'s EL1&0 MMU on in the normal world with TTBR0 = `root`
/// and ASID `asid`, TTBR1 at a fixed kernel root.
pub fn enable_mmu(model: &mut MemoryModel, core: usize, root: u64, asid: u16) {
    write(model, core, TranslationRegister::ScrEl3, 1);
    write(model, core, TranslationRegister::TcrEl1, LINUX_TCR);
    write(model, core, TranslationRegister::Ttbr1El1, 0x4000_0000);
    write(model, core, TranslationRegister::Ttbr0El1, ttbr(root, asid));
    write(model, core, TranslationRegister::SctlrEl1, 1);
}

/// A TTBR value: table base and ASID.
pub fn ttbr(root: u64, asid: u16) -> u64 {
    (u64::from(asid) << 48) | root
}

/// What a core does, one step at a time: given the model, its core and its
/// clock, make the step's accesses and return the time it took (its
/// instructions plus their stalls).
pub type Step<'a> = Box<dyn FnMut(&mut MemoryModel, usize, u64) -> u64 + 'a>;

/// Runs the cores as QEMU's per-core round robin does: the core with the
/// lowest clock (the lowest index on a tie) runs steps for up to `quantum`
/// ns of its own time, then the next; until every clock reaches `until`.
/// A quantum of 0 runs one step per turn, so requests reach the model in
/// time order. Returns the final clocks.
pub fn run_per_core(
    model: &mut MemoryModel,
    steps: &mut [Step<'_>],
    quantum: u64,
    until: u64,
) -> Vec<u64> {
    let mut clocks = vec![0u64; steps.len()];
    loop {
        let (core, &start) = clocks
            .iter()
            .enumerate()
            .min_by_key(|&(index, &clock)| (clock, index))
            .expect("at least one core");
        if start >= until {
            return clocks;
        }
        let end = start + quantum;
        loop {
            let now = clocks[core];
            clocks[core] = now + steps[core](model, core, now);
            if clocks[core] >= end {
                break;
            }
        }
    }
}

/// A small fixed generator (xorshift64*) for test inputs that must be the
/// same on every run.
pub struct Sequence(u64);

impl Sequence {
    /// Seeded with `seed` (not 0).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}
