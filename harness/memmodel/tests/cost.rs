//! Host cost per call: a micro benchmark (ignored by default; run with `cargo test --release -p tandem-memmodel --test cost -- --ignored --nocapture`).

mod common;

use std::time::Instant;

use common::{Sequence, enable_mmu, load_at, model};
use tandem_memmodel::{AccessKind, BlockFetch, ExceptionLevel};

#[test]
#[ignore = "a timing measurement of the host, not a check"]
fn host_nanoseconds_per_call() {
    // (profile, share of data accesses that go far, code footprint in blocks)
    for (name, far_per_mille, code_blocks) in [
        ("a53", 20, 128),
        ("arm11-003", 20, 128),
        ("a53", 100, 4096),
        ("arm11-003", 100, 4096),
    ] {
        let mut m = model(name, 4);
        for core in 0..4 {
            enable_mmu(
                &mut m,
                core,
                0x4100_0000 + core as u64 * 0x10_0000,
                core as u16 + 1,
            );
        }
        // Most accesses near the stack and hot data (L1 hits), the rest
        // over 8 MiB; a block fetch every 5 accesses, over the footprint.
        let mut sequence = Sequence::new(42);
        let calls = 20_000_000u64;
        let mut clocks = [0u64; 4];
        let start = Instant::now();
        // As per-core timing runs them: the lowest clock for a 1 µs quantum.
        let mut core = 0;
        let mut turn_end = 1_000;
        for i in 0..calls {
            if clocks[core] >= turn_end {
                core = (0..4).min_by_key(|&c| (clocks[c], c)).unwrap();
                turn_end = clocks[core] + 1_000;
            }
            let now = clocks[core];
            let stall = if i % 5 == 0 {
                let pc = 0x8_0000 + (sequence.below(code_blocks) * 64);
                m.instruction_fetch(
                    core,
                    now,
                    &BlockFetch {
                        virtual_address: pc,
                        physical_address: 0x4008_0000 + pc,
                        bytes: 48,
                        el: ExceptionLevel::El1,
                    },
                )
            } else {
                // Far data is shared by all cores; near data (a stack,
                // per-core variables) is each core's own.
                let offset = if sequence.below(1000) < far_per_mille {
                    sequence.below(8 << 20) & !7
                } else {
                    (16 << 20) + core as u64 * (1 << 20) + (sequence.below(16 << 10) & !7)
                };
                let mut access = load_at(0x20_0000 + offset, 0x5000_0000 + offset);
                if sequence.below(3) == 0 {
                    access.kind = AccessKind::Store;
                }
                m.data_access(core, now, &access)
            };
            clocks[core] += 2 + stall;
        }
        let elapsed = start.elapsed();
        println!(
            "{name}, {far_per_mille}/1000 far, {code_blocks} code blocks: {:.1} ns per call \
             over {calls} calls ({:.2} s)",
            elapsed.as_nanos() as f64 / calls as f64,
            elapsed.as_secs_f64()
        );
    }
}
