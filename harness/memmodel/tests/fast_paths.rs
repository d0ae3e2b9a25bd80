//! The fast paths (a core's repeat of its last access or block fetch) answer exactly as the whole path does: the same stalls and counters over long mixed runs on both profiles.

mod common;

use common::{LINUX_TCR, Sequence, load_at, ttbr, write};
use tandem_memmodel::{
    AccessKind, BlockFetch, ExceptionLevel, MemoryModel, ModelOptions, Profile, SystemEvent, Tlbi,
    TlbiOperation, TranslationRegister,
};

fn pair(name: &str, cores: usize) -> (MemoryModel, MemoryModel) {
    let make = |fast_paths| {
        MemoryModel::new(
            Profile::builtin(name).unwrap(),
            cores,
            ModelOptions {
                fast_paths,
                ..ModelOptions::default()
            },
        )
    };
    (make(true), make(false))
}

/// One call of a mixed run: mostly repeats and near accesses (where the
/// fast paths answer), with streams of lines (the prefetcher), runs of
/// stores over whole lines (write streaming), misses, sharing between cores, stores to
/// shared lines, line-crossing and device accesses, faults (MMU on with an
/// unmapped upper half), and now and then a TTBR write, a world switch or a
/// TLBI, local or broadcast.
#[derive(Debug)]
enum Call {
    Data(tandem_memmodel::DataAccess),
    Fetch(BlockFetch),
    Event(SystemEvent),
}

fn next_call(
    seq: &mut Sequence,
    core: usize,
    last: &mut Option<tandem_memmodel::DataAccess>,
    store_run: &mut u64,
) -> Call {
    if *store_run > 0
        && let Some(previous) = *last
        && !previous.io
    {
        // The run goes on: the next 16 bytes.
        *store_run -= 1;
        let mut access = previous;
        access.virtual_address = (previous.virtual_address & !15) + 16;
        access.physical_address = (previous.physical_address & !15) + 16;
        access.size = 16;
        access.kind = AccessKind::Store;
        *last = Some(access);
        return Call::Data(access);
    }
    *store_run = 0;
    let roll = seq.below(1000);
    if roll < 5 {
        let register = if seq.below(2) == 0 {
            TranslationRegister::Ttbr0El1
        } else {
            TranslationRegister::SctlrEl1
        };
        let value = match register {
            TranslationRegister::SctlrEl1 => seq.below(2),
            _ => ttbr(
                0x4100_0000 + seq.below(4) * 0x1_0000,
                seq.below(3) as u16 + 1,
            ),
        };
        return Call::Event(SystemEvent::RegisterWrite { register, value });
    }
    if roll < 7 {
        return Call::Event(SystemEvent::WorldSwitch {
            secure: seq.below(2) == 0,
        });
    }
    if roll < 10 {
        let operation = [
            TlbiOperation::VmallE1,
            TlbiOperation::VaE1,
            TlbiOperation::AsidE1,
        ][seq.below(3) as usize];
        return Call::Event(SystemEvent::Tlbi {
            tlbi: Tlbi {
                operation,
                broadcast: seq.below(2) == 0,
            },
            operand: (seq.below(3) << 48) | ((0x20_0000 + seq.below(64) * 0x1000) >> 12),
        });
    }
    if roll < 250 {
        // A block: often the same again, else one of a few hundred.
        let pc = 0x8_0000 + seq.below(if roll < 150 { 2 } else { 400 }) * 44;
        return Call::Fetch(BlockFetch {
            virtual_address: pc,
            physical_address: 0x4008_0000 + pc,
            bytes: 4 * (1 + seq.below(16) as u32),
            el: if seq.below(8) == 0 {
                ExceptionLevel::El0
            } else {
                ExceptionLevel::El1
            },
        });
    }
    if roll < 600
        && let Some(previous) = *last
    {
        // A repeat: the same line, a load or a store, or another level.
        let mut access = previous;
        access.virtual_address = (previous.virtual_address & !63) + seq.below(8) * 8;
        access.physical_address = (previous.physical_address & !63) + (access.virtual_address & 63);
        access.kind = if seq.below(3) == 0 {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        if seq.below(20) == 0 {
            access.el = ExceptionLevel::El0;
        }
        *last = Some(access);
        return Call::Data(access);
    }
    if roll < 700
        && let Some(previous) = *last
    {
        // The next line: streams that start the prefetcher (a53).
        let mut access = previous;
        access.virtual_address = (previous.virtual_address & !63) + 64;
        access.physical_address = (previous.physical_address & !63) + 64;
        access.kind = AccessKind::Load;
        *last = Some(access);
        return Call::Data(access);
    }
    if roll < 720 {
        // A run of stores over whole lines (a53's write streaming), from
        // the start of the last access's line, 16 bytes at a time.
        *store_run = 4 * (4 + seq.below(12));
        if let Some(previous) = last.as_mut() {
            previous.virtual_address &= !63;
            previous.physical_address &= !63;
            previous.virtual_address -= 16;
            previous.physical_address -= 16;
        }
        return next_call(seq, core, last, store_run);
    }
    let offset = match seq.below(10) {
        // Shared by every core: snoops and upgrades.
        0..=1 => seq.below(64 << 10),
        // Far: misses to L2 and DRAM.
        2 => (1 << 20) + seq.below(8 << 20),
        // Near, this core's own.
        _ => (16 << 20) + core as u64 * (1 << 20) + seq.below(16 << 10),
    };
    let va = if seq.below(50) == 0 {
        // The upper half, unmapped here: the walk faults.
        0xffff_0000_0000_0000 | offset
    } else {
        0x20_0000 + offset
    };
    let mut access = load_at(va, 0x5000_0000 + offset);
    access.size = [1, 2, 4, 8, 16][seq.below(5) as usize];
    if seq.below(3) == 0 {
        access.kind = AccessKind::Store;
    }
    if seq.below(100) == 0 {
        // A device register (the GIC distributor in the profiles), at a
        // virtual page of its own: a virtual address keeps its physical
        // one until a translation changes, as on a real core.
        let register = seq.below(0x1000);
        access.virtual_address = 0x7000_0000 + register;
        access.physical_address = 0x0800_0000 + register;
        access.io = true;
    }
    *last = Some(access);
    Call::Data(access)
}

fn run_both(name: &str, seed: u64, calls: u64) {
    let cores = 4;
    let (mut fast, mut slow) = pair(name, cores);
    for core in 0..cores {
        for m in [&mut fast, &mut slow] {
            write(m, core, TranslationRegister::ScrEl3, 1);
            write(m, core, TranslationRegister::TcrEl1, LINUX_TCR);
            write(m, core, TranslationRegister::Ttbr1El1, 0x4000_0000);
            write(
                m,
                core,
                TranslationRegister::Ttbr0El1,
                ttbr(0x4100_0000, core as u16 + 1),
            );
            write(m, core, TranslationRegister::SctlrEl1, 1);
        }
    }
    let mut seq = Sequence::new(seed);
    let mut clocks = vec![0u64; cores];
    let mut last = vec![None; cores];
    let mut store_runs = vec![0u64; cores];
    let mut repeats_answered = 0u64;
    let (mut core, mut turn_end) = (0, 1_000);
    for i in 0..calls {
        if clocks[core] >= turn_end {
            core = (0..cores).min_by_key(|&c| (clocks[c], c)).unwrap();
            turn_end = clocks[core] + 1_000;
        }
        let now = clocks[core];
        let call = next_call(&mut seq, core, &mut last[core], &mut store_runs[core]);
        let before = fast.core_stats(core).l1d_hits + fast.core_stats(core).l1i_hits;
        let (a, b) = match &call {
            Call::Data(access) => (
                fast.data_access(core, now, access),
                slow.data_access(core, now, access),
            ),
            Call::Fetch(fetch) => (
                fast.instruction_fetch(core, now, fetch),
                slow.instruction_fetch(core, now, fetch),
            ),
            Call::Event(event) => (
                fast.system_event(core, event),
                slow.system_event(core, event),
            ),
        };
        assert_eq!(
            a, b,
            "{name} seed {seed}: call {i} on core {core} at {now} stalled differently: {call:?}"
        );
        if fast.core_stats(core).l1d_hits + fast.core_stats(core).l1i_hits > before {
            repeats_answered += 1;
        }
        clocks[core] += 1 + a;
    }
    for core in 0..cores {
        assert_eq!(
            fast.core_stats(core),
            slow.core_stats(core),
            "{name} seed {seed}: core {core}'s counters"
        );
    }
    assert_eq!(
        fast.bus_stats(),
        slow.bus_stats(),
        "{name} seed {seed}: the bus"
    );
    assert!(
        repeats_answered > calls / 4,
        "the run exercised hits: {repeats_answered}"
    );
    if fast.profile().write_streaming.is_some() {
        let streamed: u64 = (0..cores).map(|c| fast.core_stats(c).streamed_lines).sum();
        assert!(
            streamed > calls / 1000,
            "the run exercised write streaming: {streamed}"
        );
    }
    if fast.profile().prefetch.is_some() {
        let prefetches: u64 = (0..cores).map(|c| fast.core_stats(c).prefetches).sum();
        assert!(
            prefetches > calls / 100,
            "the run exercised the prefetcher: {prefetches}"
        );
    }
}

#[test]
fn repeats_answer_as_the_whole_path_does() {
    for seed in 1..=6 {
        run_both("a53", seed, 200_000);
        run_both("arm11-003", seed, 200_000);
    }
}
