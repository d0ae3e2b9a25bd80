//! Pointer-chase latency plateaus: a chase whose working set fits the L1, the L2 or only DRAM stalls each load by the profile's latency for that level (exactly, or within 2 % where the A53's pseudo-random L1 keeps a few lines of a set four times its size).

mod common;

use common::{enable_mmu, load, load_at, model};
use tandem_memmodel::{BlockFetch, ExceptionLevel, MemoryModel};

/// Instructions of one chase step (`ldr x0, [x0]; subs; b.ne`).
const STEP_INSTRUCTIONS: u64 = 3;

/// How far apart a chase's consecutive loads are, in lines: odd, so over
/// a power-of-two number of lines it visits each once, and beyond the four
/// lines an A53's prefetcher recognises.
const CHASE_STRIDE_LINES: u64 = 37;

/// The mean stall per load of a chase over `working_set` bytes from
/// `base`, one load per line, after one round to warm the caches.
fn chase(model: &mut MemoryModel, base: u64, working_set: u64, translate_at: Option<u64>) -> f64 {
    let line = model.profile().l1d.line_bytes;
    let lines = working_set / line;
    let mut now = 0;
    let mut measured = 0;
    for round in 0..3 {
        for i in 0..lines {
            // 37 lines apart (modulo the set): every line once a round, and
            // never a stride the prefetcher follows.
            let offset = (i * CHASE_STRIDE_LINES % lines) * line;
            let pa = base + offset;
            let access = match translate_at {
                Some(va_base) => load_at(va_base + offset, pa),
                None => load(pa),
            };
            let stall = model.data_access(0, now, &access);
            now += STEP_INSTRUCTIONS + stall;
            if round > 0 {
                measured += stall;
            }
        }
    }
    measured as f64 / (2 * lines) as f64
}

#[test]
fn a53_plateaus_are_the_configured_latencies() {
    let profile = model("a53", 1).profile().clone();
    let l2 = profile.l2.expect("a53 has an L2");
    // Pseudo-random replacement (the TRM's) keeps a line of a chase four
    // times the L1's size now and then: about 2 % of the loads hit.
    for (working_set, expected, level, within) in [
        (16 << 10, profile.l1d.hit_ns, "L1", 0.0),
        (128 << 10, l2.hit_ns, "L2", 0.02),
        (4 << 20, profile.memory_latency_ns, "DRAM", 0.0),
    ] {
        let mean = chase(&mut model("a53", 1), 0x4000_0000, working_set, None);
        println!("a53 {level}: {working_set} B -> {mean:.2} ns per load (configured {expected})");
        let expected = expected as f64;
        assert!(
            mean <= expected && mean >= expected * (1.0 - within),
            "{level} plateau: {mean} against {expected}"
        );
    }
    assert_eq!((l2.hit_ns, profile.memory_latency_ns), (13, 100));
}

#[test]
fn arm11_has_no_l2_plateau_and_keeps_the_210_to_30_ratio() {
    let profile = model("arm11-003", 1).profile().clone();
    assert!(profile.l2.is_none());
    // 8 bus cycles at 30 MHz against a 210 MHz core: 56 core cycles.
    assert_eq!(profile.memory_latency_ns, 8 * 210 / 30);
    for (working_set, expected) in [(16 << 10, 0), (64 << 10, 56), (4 << 20, 56)] {
        let mean = chase(&mut model("arm11-003", 1), 0x4000_0000, working_set, None);
        println!("arm11-003: {working_set} B -> {mean:.2} ns per load");
        assert_eq!(mean, expected as f64);
    }
}

#[test]
fn the_chase_sweep_steps_up_at_the_cache_sizes() {
    let mut previous = -1.0;
    let mut table = Vec::new();
    for kib in [4, 8, 16, 32, 48, 64, 128, 256, 512, 768, 1024, 2048, 4096] {
        let mean = chase(&mut model("a53", 1), 0x4000_0000, kib << 10, None);
        table.push((kib, mean));
        assert!(
            mean >= previous,
            "the latency fell from {previous} to {mean} at {kib} KiB"
        );
        previous = mean;
    }
    println!("a53 chase: {table:?}");
    // Up to the L1's size all hits; past it the pseudo-random L1 keeps
    // fewer and fewer lines (a gradual step: LRU's would be sharp), all L2
    // by eight times its size; beyond the L2 (LRU) DRAM at once.
    let at = |kib| table.iter().find(|(k, _)| *k == kib).unwrap().1;
    assert_eq!(at(32), 0.0);
    assert!(at(48) > 0.0 && at(48) < at(64) && at(64) < 13.0);
    assert!(at(128) > 0.98 * 13.0);
    assert_eq!(at(512), 13.0);
    assert_eq!(at(1024), 100.0);
}

#[test]
fn with_the_mmu_on_the_plateaus_stay_within_ten_percent() {
    // One load per line: a 4 KiB page's 64 lines share one micro TLB miss.
    for (working_set, expected) in [(128u64 << 10, 13.0), (4 << 20, 100.0)] {
        let mut m = model("a53", 1);
        enable_mmu(&mut m, 0, 0x4100_0000, 1);
        let mean = chase(&mut m, 0x4800_0000, working_set, Some(0x10_0000));
        println!("a53 with MMU: {working_set} B -> {mean:.2} ns per load");
        assert!(
            (mean - expected).abs() <= 0.1 * expected,
            "{mean} not within 10 % of {expected}"
        );
    }
}

#[test]
fn instruction_fetch_plateaus_per_block() {
    // A loop over `footprint` bytes of code in 64-byte blocks.
    let fetch_mean = |footprint: u64| {
        let mut m = model("a53", 1);
        let blocks = footprint / 64;
        let mut stall_sum = 0;
        let mut now = 0;
        for round in 0..3 {
            for i in 0..blocks {
                let fetch = BlockFetch {
                    virtual_address: 0x8_0000 + i * 64,
                    physical_address: 0x4008_0000 + i * 64,
                    bytes: 64,
                    el: ExceptionLevel::El1,
                };
                let stall = m.instruction_fetch(0, now, &fetch);
                // The block's 16 instructions run after its fetch.
                now += stall + 16;
                if round > 0 {
                    stall_sum += stall;
                }
            }
        }
        stall_sum as f64 / (2 * blocks) as f64
    };
    assert_eq!(fetch_mean(16 << 10), 0.0);
    // The L1I is pseudo-random too: at four times its size a few lines stay.
    let l2 = fetch_mean(128 << 10);
    assert!((0.98 * 13.0..=13.0).contains(&l2), "{l2}");
    assert_eq!(fetch_mean(2 << 20), 100.0);
}
