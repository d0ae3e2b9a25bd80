//! Bus contention under per-core timing: core 0's DRAM-miss latency while 0..3 other cores stream through memory, with requests reaching the model a quantum out of time order as QEMU's round robin makes them.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::{Step, load, model, run_per_core};
use tandem_memmodel::MemoryModel;

/// Instructions per chase step and per streamed line (a line's worth of
/// loads that hit, plus the loop).
const CHASE_INSTRUCTIONS: u64 = 3;
const STREAM_INSTRUCTIONS: u64 = 8;
/// Simulated time, and the start of the measurement (after the warm-up).
const UNTIL_NS: u64 = 2_000_000;
const MEASURE_FROM_NS: u64 = 100_000;

/// Core 0's mean stall per chase load while `streamers` other cores
/// stream, and how many questions fell out of the bus's history.
fn core0_latency(profile: &str, streamers: usize, quantum: u64) -> (f64, u64) {
    let (m, mean) = run(profile, streamers, quantum);
    (mean, m.bus_stats().beyond_history)
}

/// The model after the run, and core 0's mean stall per chase load.
fn run(profile: &str, streamers: usize, quantum: u64) -> (MemoryModel, f64) {
    let mut m = model(profile, 4);
    let line = m.profile().l1d.line_bytes;
    let samples: Rc<RefCell<Vec<u64>>> = Rc::default();
    let mut steps: Vec<Step<'_>> = Vec::new();
    {
        // Core 0: a chase over 8 MiB, past any L2: every load from DRAM,
        // 37 lines apart, a stride no prefetcher follows.
        let samples = samples.clone();
        let lines = (8 << 20) / line;
        let mut next = 0;
        steps.push(Box::new(move |m: &mut MemoryModel, core, now| {
            let stall = m.data_access(core, now, &load(0x4000_0000 + next * line));
            next = (next + 37) % lines;
            if now >= MEASURE_FROM_NS {
                samples.borrow_mut().push(stall);
            }
            CHASE_INSTRUCTIONS + stall
        }));
    }
    for core in 1..4 {
        if core <= streamers {
            // A stream over its own 16 MiB: one miss per line.
            let base = 0x5000_0000 + core as u64 * (16 << 20);
            let lines = (16 << 20) / line;
            let mut next = 0;
            steps.push(Box::new(move |m: &mut MemoryModel, core, now| {
                let stall = m.data_access(core, now, &load(base + next * line));
                next = (next + 1) % lines;
                STREAM_INSTRUCTIONS + stall
            }));
        } else {
            // Idle: instructions without memory.
            steps.push(Box::new(|_: &mut MemoryModel, _, _| 50));
        }
    }
    run_per_core(&mut m, &mut steps, quantum, UNTIL_NS);
    let mean = {
        let samples = samples.borrow();
        samples.iter().sum::<u64>() as f64 / samples.len() as f64
    };
    (m, mean)
}

#[test]
fn each_streaming_core_adds_a_bus_service_time_on_a_saturated_bus() {
    // arm11-003 holds the bus for a whole access: two cores saturate it.
    let service = model("arm11-003", 1).profile().bus_service_ns as f64;
    let (alone, _) = core0_latency("arm11-003", 0, 1000);
    assert_eq!(alone, 56.0);
    for streamers in 1..=3 {
        let (loaded, beyond_history) = core0_latency("arm11-003", streamers, 1000);
        let growth_per_core = (loaded - alone) / streamers as f64;
        println!(
            "arm11-003, {streamers} streaming: {loaded:.1} ns per miss, +{growth_per_core:.1} per core \
             (service {service})"
        );
        assert!(
            (growth_per_core - service).abs() <= 0.1 * service,
            "growth {growth_per_core} per core is not within 10 % of {service}"
        );
        assert_eq!(beyond_history, 0, "a request fell out of the bus's history");
    }
}

#[test]
fn a53_streaming_cores_add_at_most_a_service_time_each() {
    // a53: a streaming core keeps up to five prefetches in flight, about
    // half the bus's time alone (10 ns per line, five lines per ~100 ns):
    // each adds up to a service time, less while the bus is not saturated.
    let service = model("a53", 1).profile().bus_service_ns as f64;
    let (alone, _) = core0_latency("a53", 0, 1000);
    assert_eq!(alone, 100.0);
    let mut previous = alone;
    for streamers in 1..=3 {
        let (loaded, _) = core0_latency("a53", streamers, 1000);
        println!("a53, {streamers} streaming: {loaded:.2} ns per miss");
        assert!(loaded >= previous, "latency fell with more streaming cores");
        assert!(loaded - alone <= streamers as f64 * service);
        previous = loaded;
    }
    assert!(previous > alone, "three streaming cores cost nothing");
}

#[test]
fn quantum_skew_gives_the_time_ordered_latency() {
    // Quantum 0: one step per turn, the lowest clock first, so requests
    // reach the bus in time order (first come, first served exactly).
    // Quantum 1 µs: up to 1 µs out of order. The free-interval history
    // must give the same contention within 10 %.
    for profile in ["arm11-003", "a53"] {
        for streamers in 0..=3 {
            let (ordered, _) = core0_latency(profile, streamers, 0);
            let (skewed, beyond_history) = core0_latency(profile, streamers, 1000);
            println!(
                "{profile}, {streamers} streaming: time order {ordered:.1}, quantum {skewed:.1}"
            );
            assert!(
                (skewed - ordered).abs() <= 0.1 * ordered,
                "{profile} {streamers}: {skewed} vs {ordered}"
            );
            assert_eq!(beyond_history, 0);
        }
    }
}

#[test]
fn every_streaming_core_sees_the_same_contention() {
    // The round robin runs cores in a fixed order of clocks and indices;
    // a queue that favoured whoever books first would starve the last
    // (core 3, the RTOS's core in paper 003's HeteroOS).
    let (m, _) = run("arm11-003", 3, 1000);
    let per_miss: Vec<f64> = (0..4)
        .map(|core| {
            let stats = m.core_stats(core);
            stats.stall_ns as f64 / stats.memory_reads as f64
        })
        .collect();
    println!("arm11-003, 3 streaming, stall per miss by core: {per_miss:.1?}");
    let (low, high) = per_miss
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!(high <= 1.1 * low, "{per_miss:?}");
}

#[test]
fn the_same_calls_give_the_same_stalls() {
    let run = || {
        let (mean, _) = core0_latency("a53", 3, 1000);
        mean.to_bits()
    };
    assert_eq!(run(), run());
}
